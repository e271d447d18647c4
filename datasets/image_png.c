/* PNG decoding through libpng itself, with its messages caught: an error (a bad CRC,
 * damaged compressed data, too little image data) is one line here, where OpenCV let
 * libpng print "libpng error: ..." to stderr.  The transformations are OpenCV's for a
 * 3-channel 8-bit image (imread's IMREAD_COLOR): 16-bit samples stripped to their high
 * byte, palettes and low-bit grey expanded, grey replicated, alpha dropped, interlacing
 * undone; tests/test_harden.c compares the pixels with OpenCV's. */
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/image_png.h"
#include "ir/ir.h"

typedef struct pngsrc {
    const unsigned char *b;
    size_t n, at;
    char msg[200];
} pngsrc;

static void on_error(png_structp p, png_const_charp msg)
{
    pngsrc *s = png_get_error_ptr(p);
    snprintf(s->msg, sizeof s->msg, "%s", msg ? msg : "libpng error");
    png_longjmp(p, 1);
}

/* Warnings (an unknown ancillary chunk, a bad sRGB profile) are not damage to the pixels:
 * ignored, and never printed. */
static void on_warning(png_structp p, png_const_charp msg) { (void)p, (void)msg; }

static void on_read(png_structp p, png_bytep out, png_size_t len)
{
    pngsrc *s = png_get_io_ptr(p);
    if (len > s->n - s->at) png_error(p, "truncated PNG data");
    memcpy(out, s->b + s->at, len);
    s->at += len;
}

yq_status yq_png_decode(const unsigned char *buf, size_t n, const char *name, int want_w, int want_h,
                        yq_image *out, yq_error *err)
{
    pngsrc src = { buf, n, 0, "" };
    png_structp p = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, on_error, on_warning);
    png_infop info = p ? png_create_info_struct(p) : NULL;
    if (!p || !info) {
        png_destroy_read_struct(&p, NULL, NULL);
        return yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory", name);
    }
    /* volatile: set after setjmp and needed after the longjmp */
    unsigned char *volatile rows = NULL;
    float *volatile data = NULL;
    png_bytep *volatile rp = NULL;
    if (setjmp(png_jmpbuf(p))) {
        png_destroy_read_struct(&p, &info, NULL);
        free(rp);
        free(rows);
        free(data);
        return yq_fail(err, YQ_ERR_FORMAT, "%s: corrupt PNG: %s", name, src.msg);
    }
    png_set_read_fn(p, &src, on_read);
    png_read_info(p, info);
    const png_uint_32 w = png_get_image_width(p, info), h = png_get_image_height(p, info);
    const int depth = png_get_bit_depth(p, info), color = png_get_color_type(p, info);
    if ((long)w != want_w || (long)h != want_h) {
        png_destroy_read_struct(&p, &info, NULL);
        return yq_fail(err, YQ_ERR_FORMAT, "%s: decoded size %ux%u differs from header size %dx%d", name, (unsigned)w,
                       (unsigned)h, want_w, want_h);
    }
    if (depth > 8) png_set_strip_16(p);
    png_set_strip_alpha(p);
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(p);
    if (!(color & PNG_COLOR_MASK_COLOR) && depth < 8) png_set_expand_gray_1_2_4_to_8(p);
    if (!(color & PNG_COLOR_MASK_COLOR)) png_set_gray_to_rgb(p);
    png_set_interlace_handling(p);
    png_read_update_info(p, info);
    const size_t rb = png_get_rowbytes(p, info);
    if (png_get_channels(p, info) != 3 || png_get_bit_depth(p, info) != 8 || rb != (size_t)w * 3)
        png_error(p, "unexpected pixel layout after conversion");
    const size_t plane = (size_t)w * h;
    rows = malloc(rb * h);
    data = malloc(3 * plane * sizeof *data);
    if (!rows || !data) png_error(p, "out of memory for the decoded image");
    rp = malloc(sizeof *rp * h);
    if (!rp) png_error(p, "out of memory for the decoded image");
    for (png_uint_32 y = 0; y < h; y++) rp[y] = rows + (size_t)y * rb;
    png_read_image(p, (png_bytepp)rp);
    png_read_end(p, NULL);
    free(rp);
    rp = NULL;
    png_destroy_read_struct(&p, &info, NULL);
    for (size_t k = 0; k < plane; k++)
        for (int c = 0; c < 3; c++) data[(size_t)c * plane + k] = (float)rows[3 * k + (size_t)c] / 255.f;
    free(rows);
    out->w = (int)w;
    out->h = (int)h;
    out->c = 3;
    out->data = data;
    return YQ_OK;
}
