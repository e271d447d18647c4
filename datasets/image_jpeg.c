/* JPEG decoding through libjpeg(-turbo) itself, with its messages caught: a warning that
 * libjpeg raises on damaged data ("Corrupt JPEG data: N extraneous bytes", "Premature end
 * of JPEG file") makes the image an error here, where OpenCV would print it to stderr and
 * return the damaged pixels.  The decoding options are OpenCV's (libjpeg's defaults: islow
 * DCT, fancy upsampling; CMYK converted as OpenCV converts it), so the pixels are the ones
 * OpenCV gave before: tests/test_harden.c compares every shared image with OpenCV's. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>

#include "datasets/image_jpeg.h"
#include "ir/ir.h"

typedef struct jerr {
    struct jpeg_error_mgr pub;
    jmp_buf jmp;
    char msg[JMSG_LENGTH_MAX];
    int warned;
} jerr;

static void on_error(j_common_ptr ci)
{
    jerr *e = (jerr *)ci->err;
    (*ci->err->format_message)(ci, e->msg);
    longjmp(e->jmp, 1);
}

/* level -1: a warning (corrupt data); >= 0: trace messages, ignored.  Nothing is printed. */
static void on_message(j_common_ptr ci, int level)
{
    jerr *e = (jerr *)ci->err;
    if (level < 0 && !e->warned) {
        (*ci->err->format_message)(ci, e->msg);
        e->warned = 1;
    }
}

static void on_output(j_common_ptr ci) { (void)ci; }

yq_status yq_jpeg_decode(const unsigned char *buf, size_t n, const char *name, int want_w, int want_h,
                         yq_image *out, yq_error *err)
{
    struct jpeg_decompress_struct ci;
    jerr je;
    memset(&je, 0, sizeof je);
    ci.err = jpeg_std_error(&je.pub);
    je.pub.error_exit = on_error;
    je.pub.emit_message = on_message;
    je.pub.output_message = on_output;
    /* volatile: set after setjmp and needed after the longjmp (else their values are lost) */
    unsigned char *volatile row = NULL;
    float *volatile data = NULL;
    volatile int created = 0;
    if (setjmp(je.jmp)) {
        if (created) jpeg_destroy_decompress(&ci);
        free(row);
        free(data);
        return yq_fail(err, YQ_ERR_FORMAT, "%s: corrupt JPEG: %s", name, je.msg);
    }
    jpeg_create_decompress(&ci);
    created = 1;
    jpeg_mem_src(&ci, buf, (unsigned long)n);
    jpeg_read_header(&ci, TRUE);
    int cmyk = ci.jpeg_color_space == JCS_CMYK || ci.jpeg_color_space == JCS_YCCK;
    ci.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
    jpeg_start_decompress(&ci);
    const int w = (int)ci.output_width, h = (int)ci.output_height, nc = ci.output_components;
    if (w != want_w || h != want_h || (nc != 3 && nc != 4)) {
        jpeg_destroy_decompress(&ci);
        return yq_fail(err, YQ_ERR_FORMAT, "%s: decoded size %dx%d (%d channels) differs from header size %dx%d",
                       name, w, h, nc, want_w, want_h);
    }
    const size_t plane = (size_t)w * h;
    row = malloc((size_t)w * (size_t)nc);
    data = malloc(3 * plane * sizeof *data);
    if (!row || !data) {
        jpeg_destroy_decompress(&ci);
        free(row);
        free(data);
        return yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory for the decoded image", name);
    }
    while (ci.output_scanline < ci.output_height) {
        const size_t y = ci.output_scanline;
        JSAMPROW rp = (JSAMPROW)row;
        jpeg_read_scanlines(&ci, &rp, 1);
        for (size_t x = 0; x < (size_t)w; x++) {
            unsigned r, g, b;
            if (nc == 3) {
                r = row[3 * x], g = row[3 * x + 1], b = row[3 * x + 2];
            } else {
                /* OpenCV's CMYK -> BGR (icvCvt_CMYK2BGR_8u_C4C3), on Adobe's inverted CMYK
                 * as libjpeg returns it: each of c, m, y times k / 255 */
                unsigned c = row[4 * x], m = row[4 * x + 1], yy = row[4 * x + 2], k = row[4 * x + 3];
                b = k - ((255 - yy) * k >> 8);
                g = k - ((255 - m) * k >> 8);
                r = k - ((255 - c) * k >> 8);
            }
            /* x / 255.f equals darknet's (float)(x / 255.) for all 256 values */
            data[0 * plane + y * (size_t)w + x] = (float)r / 255.f;
            data[1 * plane + y * (size_t)w + x] = (float)g / 255.f;
            data[2 * plane + y * (size_t)w + x] = (float)b / 255.f;
        }
    }
    jpeg_finish_decompress(&ci);
    jpeg_destroy_decompress(&ci);
    free(row);
    if (je.warned) {
        free(data);
        return yq_fail(err, YQ_ERR_FORMAT, "%s: corrupt JPEG data: %s", name, je.msg);
    }
    out->w = w;
    out->h = h;
    out->c = 3;
    out->data = data;
    return YQ_OK;
}
