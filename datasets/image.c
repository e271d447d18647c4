/* Images: container checks before decoding, darknet's resize/letterbox in plain C, folders.
 *
 * The resize arithmetic is darknet's (src/image.c, resize_image) expression for expression,
 * all in float: with -std=c11 GCC does not contract a*b+c into an FMA, and no -ffast-math,
 * so the results are bit-identical to libdarknet's (tests/test_image.c checks max |diff| 0).
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "datasets/fileio.h"
#include "datasets/image.h"
#include "datasets/image_jpeg.h"
#include "datasets/image_png.h"
#include "ir/ir.h"

#define MAX_PIXELS (1L << 28)  /* 268 Mpx: far beyond any photo; bounds w*h*c*4 bytes */

/* Images larger than this are refused from their header, before any decoding (a few hundred
 * bytes can declare a 180-megapixel JPEG: a decompression bomb). */
static long max_pixels = YQ_IMAGE_MAX_PIXELS_DEFAULT;

void yq_image_set_max_pixels(long px) { max_pixels = px > 0 && px <= MAX_PIXELS ? px : YQ_IMAGE_MAX_PIXELS_DEFAULT; }
long yq_image_max_pixels(void) { return max_pixels; }
#define MAX_SIDE   (1 << 15)  /* resize/letterbox targets: network input sizes */

enum { FMT_JPEG = 1, FMT_PNG = 2 };

static unsigned be16(const unsigned char *p) { return (unsigned)p[0] << 8 | p[1]; }
static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Walks the JPEG markers from SOI to EOI.  libjpeg decodes a truncated file partially
 * (grey bottom rows, one warning on stderr), so a missing EOI must be caught here.  The
 * segment walk, rather than a search for FF D9, is needed because an EXIF thumbnail
 * carries its own EOI.  Bytes after EOI are allowed (some cameras append data). */
static yq_status jpeg_check(const unsigned char *b, size_t n, const char *path,
                            int *w, int *h, yq_error *err)
{
    size_t p = 2;
    int got_sof = 0;
    for (;;) {
        if (p >= n) goto truncated;
        if (b[p] != 0xFF)
            return yq_fail(err, YQ_ERR_FORMAT, "%s: corrupt JPEG: no marker at byte %zu", path, p);
        while (p < n && b[p] == 0xFF) p++;           /* fill bytes */
        if (p >= n) goto truncated;
        unsigned m = b[p++];
        if (m == 0xD9) {
            if (!got_sof) return yq_fail(err, YQ_ERR_FORMAT, "%s: JPEG without a frame header", path);
            return YQ_OK;
        }
        if (m == 0x01 || (m >= 0xD0 && m <= 0xD7)) continue;   /* markers without a length */
        if (m == 0x00 || m == 0xD8)
            return yq_fail(err, YQ_ERR_FORMAT, "%s: corrupt JPEG: marker FF%02X at byte %zu",
                           path, m, p - 2);
        if (p + 2 > n) goto truncated;
        size_t len = be16(b + p);
        if (len < 2)
            return yq_fail(err, YQ_ERR_FORMAT, "%s: corrupt JPEG: segment length %zu at byte %zu",
                           path, len, p);
        if (p + len > n) goto truncated;
        /* SOF0..SOF15 except DHT (C4), JPG (C8), DAC (CC): P, Y (height), X (width) */
        if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC && !got_sof) {
            if (len < 8)
                return yq_fail(err, YQ_ERR_FORMAT, "%s: corrupt JPEG: short frame header", path);
            *h = (int)be16(b + p + 3);
            *w = (int)be16(b + p + 5);
            if (*w == 0 || *h == 0)   /* height 0 means "given later by DNL": never seen in practice */
                return yq_fail(err, YQ_ERR_UNSUPPORTED, "%s: JPEG frame size %dx%d", path, *w, *h);
            got_sof = 1;
        }
        p += len;
        if (m == 0xDA) {   /* SOS: entropy-coded data runs to the next marker */
            if (!got_sof)
                return yq_fail(err, YQ_ERR_FORMAT, "%s: corrupt JPEG: scan before frame header", path);
            for (;;) {
                if (p + 1 >= n) goto truncated;
                if (b[p] != 0xFF) { p++; continue; }
                unsigned q = b[p + 1];
                if (q == 0x00 || (q >= 0xD0 && q <= 0xD7)) p += 2;   /* stuffed byte, restart */
                else if (q == 0xFF) p++;                             /* fill byte */
                else break;                                          /* next segment */
            }
        }
    }
truncated:
    return yq_fail(err, YQ_ERR_FORMAT, "%s: truncated JPEG: %zu bytes, no EOI marker", path, n);
}

/* Walks the PNG chunks to IEND: a truncated PNG may also decode partially. */
static yq_status png_check(const unsigned char *b, size_t n, const char *path,
                           int *w, int *h, yq_error *err)
{
    if (n < 8 + 12 + 13 || be32(b + 8) != 13 || memcmp(b + 12, "IHDR", 4) != 0)
        return yq_fail(err, YQ_ERR_FORMAT, "%s: PNG without an IHDR chunk", path);
    uint32_t pw = be32(b + 16), ph = be32(b + 20);
    if (pw == 0 || ph == 0 || pw > INT32_MAX || ph > INT32_MAX)
        return yq_fail(err, YQ_ERR_FORMAT, "%s: PNG size %ux%u", path, (unsigned)pw, (unsigned)ph);
    *w = (int)pw;
    *h = (int)ph;
    size_t p = 8;
    for (;;) {
        if (p + 12 > n) break;
        uint32_t len = be32(b + p);
        if (len > INT32_MAX)
            return yq_fail(err, YQ_ERR_FORMAT, "%s: corrupt PNG: chunk length %u at byte %zu",
                           path, (unsigned)len, p);
        if (p + 12 + len > n) break;
        if (memcmp(b + p + 4, "IEND", 4) == 0) return YQ_OK;
        p += 12 + (size_t)len;
    }
    return yq_fail(err, YQ_ERR_FORMAT, "%s: truncated PNG: %zu bytes, no IEND chunk", path, n);
}

/* Reads path and checks its container; the caller frees *buf. */
static yq_status read_checked(const char *path, unsigned char **buf, size_t *n,
                              int *w, int *h, yq_error *err)
{
    static const unsigned char png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    yq_status st = yq_ds_read_file(path, buf, n, err);
    if (st != YQ_OK) return st;
    const unsigned char *b = *buf;
    if (*n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF)
        st = jpeg_check(b, *n, path, w, h, err);
    else if (*n >= 8 && memcmp(b, png_sig, 8) == 0)
        st = png_check(b, *n, path, w, h, err);
    else if (*n == 0)
        st = yq_fail(err, YQ_ERR_FORMAT, "%s: empty file", path);
    else
        st = yq_fail(err, YQ_ERR_FORMAT, "%s: not a JPEG or PNG file", path);
    if (st == YQ_OK && (long)*w * *h > max_pixels)
        st = yq_fail(err, YQ_ERR_UNSUPPORTED, "%s: %dx%d is %.1f megapixels, over the limit of %.1f (--max-pixels)",
                     path, *w, *h, (double)*w * *h / 1e6, (double)max_pixels / 1e6);
    if (st != YQ_OK) {
        free(*buf);
        *buf = NULL;
    }
    return st;
}

yq_status yq_image_size(const char *path, int *w, int *h, yq_error *err)
{
    unsigned char *buf;
    size_t n;
    yq_status st = read_checked(path, &buf, &n, w, h, err);
    free(buf);
    return st;
}

yq_status yq_image_load(const char *path, yq_image *out, yq_error *err)
{
    unsigned char *buf;
    size_t n;
    int w = 0, h = 0;
    yq_status st = read_checked(path, &buf, &n, &w, &h, err);
    if (st != YQ_OK) return st;
    /* libjpeg and libpng themselves: damaged data is an error, and nothing is printed */
    if (buf[0] == 0xFF) st = yq_jpeg_decode(buf, n, path, w, h, out, err);
    else st = yq_png_decode(buf, n, path, w, h, out, err);
    free(buf);
    return st;
}

yq_status yq_image_from_frame(const yq_frame *f, yq_image *out, yq_error *err)
{
    if (!f || !f->data) return yq_fail(err, YQ_ERR_INVALID_ARG, "frame: no pixel data");
    if ((unsigned)f->format > YQ_PIX_BGRA8) return yq_fail(err, YQ_ERR_INVALID_ARG, "frame: unknown pixel format %d", (int)f->format);
    if (f->width < 1 || f->height < 1 || (long)f->width * f->height > max_pixels)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "frame: %dx%d pixels (1 to %.1f megapixels)", f->width, f->height,
                       (double)max_pixels / 1e6);
    const int bpp = f->format == YQ_PIX_RGB8 || f->format == YQ_PIX_BGR8 ? 3 : 4;
    const long row = (long)f->width * bpp, stride = f->stride ? f->stride : row;
    if (stride < row) return yq_fail(err, YQ_ERR_INVALID_ARG, "frame: stride %ld bytes under a row of %ld", stride, row);
    yq_status st = yq_image_make(f->width, f->height, 3, out, err);
    if (st != YQ_OK) return st;
    const int bgr = f->format == YQ_PIX_BGR8 || f->format == YQ_PIX_BGRA8;
    const size_t plane = (size_t)f->width * f->height;
    for (int y = 0; y < f->height; y++) {
        const uint8_t *p = f->data + (size_t)y * (size_t)stride;
        float *r = out->data + (size_t)y * f->width, *g = r + plane, *b = g + plane;
        for (int x = 0; x < f->width; x++, p += bpp) {
            r[x] = (float)p[bgr ? 2 : 0] / 255.f;
            g[x] = (float)p[1] / 255.f;
            b[x] = (float)p[bgr ? 0 : 2] / 255.f;
        }
    }
    return YQ_OK;
}

yq_status yq_image_make(int w, int h, int c, yq_image *out, yq_error *err)
{
    if (w < 1 || h < 1 || c < 1 || (long)w * h > MAX_PIXELS || c > 64)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "image size %dx%dx%d out of range", w, h, c);
    float *d = calloc((size_t)w * h * c, sizeof *d);
    if (!d) return yq_fail(err, YQ_ERR_NOMEM, "out of memory for a %dx%dx%d image", w, h, c);
    out->w = w;
    out->h = h;
    out->c = c;
    out->data = d;
    return YQ_OK;
}

void yq_image_free(yq_image *im)
{
    if (!im) return;
    free(im->data);
    memset(im, 0, sizeof *im);
}

yq_status yq_image_write_raw(const char *path, yq_error *err)
{
    yq_image im;
    yq_status st = yq_image_load(path, &im, err);
    if (st != YQ_OK) return st;
    size_t plane = (size_t)im.w * im.h;
    unsigned char *px = malloc(3 * plane);
    char out[4200];
    snprintf(out, sizeof out, "%s.rgb", path);
    FILE *f = px ? fopen(out, "wb") : NULL;
    for (size_t k = 0; px && k < plane; k++)
        for (int c = 0; c < 3; c++) px[3 * k + c] = (unsigned char)lrintf(im.data[c * plane + k] * 255.f);
    if (!px) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    else if (!f || fwrite(px, 1, 3 * plane, f) != 3 * plane) st = yq_fail(err, YQ_ERR_IO, "%s: cannot write", out);
    if (f && fclose(f) != 0 && st == YQ_OK) st = yq_fail(err, YQ_ERR_IO, "%s: cannot write", out);
    free(px);
    yq_image_free(&im);
    return st;
}

/* darknet's resize_image into out (w*h*c), part (w*im->h*c) as its scratch.  The last
 * column/row copies the source edge rather than interpolating, as darknet does. */
static void resize_into(const yq_image *im, int w, int h, float *part, float *out)
{
    const int iw = im->w, ih = im->h;
    /* darknet divides by w-1 (h-1) even when it is 0; a 1-wide target only reads the
     * edge column, and a 1-high target (where darknet computes 0*inf) reads row 0. */
    const float w_scale = w > 1 ? (float)(iw - 1) / (w - 1) : 0.f;
    const float h_scale = h > 1 ? (float)(ih - 1) / (h - 1) : 0.f;
    for (int k = 0; k < im->c; k++) {
        for (int r = 0; r < ih; r++) {
            const float *src = im->data + ((size_t)k * ih + r) * iw;
            float *dst = part + ((size_t)k * ih + r) * w;
            for (int c = 0; c < w; c++) {
                float val;
                if (c == w - 1 || iw == 1) {
                    val = src[iw - 1];
                } else {
                    float sx = c * w_scale;
                    int ix = (int)sx;
                    float dx = sx - ix;
                    val = (1 - dx) * src[ix] + dx * src[ix + 1];
                }
                dst[c] = val;
            }
        }
    }
    for (int k = 0; k < im->c; k++) {
        for (int r = 0; r < h; r++) {
            float sy = r * h_scale;
            int iy = (int)sy;
            float dy = sy - iy;
            const float *p0 = part + ((size_t)k * ih + iy) * w;
            float *dst = out + ((size_t)k * h + r) * w;
            for (int c = 0; c < w; c++) dst[c] = (1 - dy) * p0[c];
            if (r == h - 1 || ih == 1) continue;
            const float *p1 = p0 + w;
            /* a separate pass with a rounded product, as darknet's add_pixel */
            for (int c = 0; c < w; c++) {
                float val = dy * p1[c];
                dst[c] += val;
            }
        }
    }
}

static yq_status check_resize_args(const yq_image *im, int w, int h, yq_error *err)
{
    if (!im || !im->data || im->w < 1 || im->h < 1 || im->c < 1)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "resize: empty source image");
    if (w < 1 || h < 1 || w > MAX_SIDE || h > MAX_SIDE)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "resize: target size %dx%d out of range 1..%d",
                       w, h, MAX_SIDE);
    return YQ_OK;
}

yq_status yq_image_resize(const yq_image *im, int w, int h, yq_image *out, yq_error *err)
{
    yq_status st = check_resize_args(im, w, h, err);
    if (st != YQ_OK) return st;
    yq_image res = {0};
    float *part = malloc((size_t)w * im->h * im->c * sizeof *part);
    if (!part) return yq_fail(err, YQ_ERR_NOMEM, "resize: out of memory");
    st = yq_image_make(w, h, im->c, &res, err);
    if (st == YQ_OK) {
        resize_into(im, w, h, part, res.data);
        *out = res;
    }
    free(part);
    return st;
}

void yq_letterbox_size(int im_w, int im_h, int w, int h, int *new_w, int *new_h)
{
    /* darknet compares the two scales in float, then divides in int; the products are
     * widened only so that huge images cannot overflow (same result otherwise). */
    if ((float)w / im_w < (float)h / im_h) {
        *new_w = w;
        *new_h = (int)((long long)im_h * w / im_w);
    } else {
        *new_h = h;
        *new_w = (int)((long long)im_w * h / im_h);
    }
}

/* A letterbox's w x h canvas of im's channels, every value grey. */
static yq_status grey_canvas(const yq_image *im, int w, int h, float grey, yq_image *box, yq_error *err)
{
    yq_status st = yq_image_make(w, h, im->c, box, err);
    if (st != YQ_OK) return st;
    size_t n = (size_t)w * h * im->c;
    for (size_t i = 0; i < n; i++) box->data[i] = grey;
    return YQ_OK;
}

yq_status yq_image_letterbox(const yq_image *im, int w, int h, yq_image *out, yq_error *err)
{
    yq_status st = check_resize_args(im, w, h, err);
    if (st != YQ_OK) return st;
    int nw, nh;
    yq_letterbox_size(im->w, im->h, w, h, &nw, &nh);
    yq_image box = {0};
    if ((st = grey_canvas(im, w, h, .5f, &box, err)) != YQ_OK) return st;
    /* An extreme aspect ratio can round a side to 0: darknet then embeds nothing. */
    if (nw > 0 && nh > 0) {
        float *part = malloc((size_t)nw * im->h * im->c * sizeof *part);
        float *res = malloc((size_t)nw * nh * im->c * sizeof *res);
        if (!part || !res) {
            free(part);
            free(res);
            yq_image_free(&box);
            return yq_fail(err, YQ_ERR_NOMEM, "letterbox: out of memory");
        }
        resize_into(im, nw, nh, part, res);
        /* embed_image: darknet's set_pixel drops pixels outside the box */
        int dx = (w - nw) / 2, dy = (h - nh) / 2;
        for (int k = 0; k < im->c; k++)
            for (int y = 0; y < nh; y++) {
                if (y + dy < 0 || y + dy >= h) continue;
                for (int x = 0; x < nw; x++) {
                    if (x + dx < 0 || x + dx >= w) continue;
                    box.data[((size_t)k * h + y + dy) * w + x + dx] = res[((size_t)k * nh + y) * nw + x];
                }
            }
        free(part);
        free(res);
    }
    *out = box;
    return YQ_OK;
}

void yq_letterbox_size_ultra(int im_w, int im_h, int w, int h, int *new_w, int *new_h)
{
    float r = fminf((float)w / (float)im_w, (float)h / (float)im_h);
    long nw = lrintf((float)im_w * r), nh = lrintf((float)im_h * r);   /* (the current rounding mode: to even) */
    *new_w = (int)(nw < 1 ? 1 : nw > w ? w : nw);
    *new_h = (int)(nh < 1 ? 1 : nh > h ? h : nh);
}

/* OpenCV's INTER_LINEAR source position of destination index x: its centre mapped back,
 * clamped to the edges (the weight of the second tap in *a). */
static int lin_tap(int x, float scale, int n, float *a)
{
    float f = ((float)x + 0.5f) * scale - 0.5f;
    int i = (int)floorf(f);
    *a = f - (float)i;
    if (i < 0) { i = 0; *a = 0; }
    if (i >= n - 1) { i = n - 1; *a = 0; }
    return i;
}

yq_status yq_image_letterbox_ultra(const yq_image *im, int w, int h, yq_image *out, yq_error *err)
{
    yq_status st = check_resize_args(im, w, h, err);
    if (st != YQ_OK) return st;
    int nw, nh;
    yq_letterbox_size_ultra(im->w, im->h, w, h, &nw, &nh);
    yq_image box = {0};
    if ((st = grey_canvas(im, w, h, 114.f / 255.f, &box, err)) != YQ_OK) return st;
    int *x0 = malloc(sizeof *x0 * (size_t)nw);
    float *ax = malloc(sizeof *ax * (size_t)nw);
    if (!x0 || !ax) {
        free(x0);
        free(ax);
        yq_image_free(&box);
        return yq_fail(err, YQ_ERR_NOMEM, "letterbox: out of memory");
    }
    const float sx = (float)im->w / (float)nw, sy = (float)im->h / (float)nh;
    for (int x = 0; x < nw; x++) x0[x] = lin_tap(x, sx, im->w, &ax[x]);
    const int dx = (w - nw) / 2, dy = (h - nh) / 2;
    for (int k = 0; k < im->c; k++)
        for (int y = 0; y < nh; y++) {
            float ay;
            int y0 = lin_tap(y, sy, im->h, &ay);
            const float *r0 = im->data + ((size_t)k * im->h + y0) * im->w;
            const float *r1 = y0 + 1 < im->h ? r0 + im->w : r0;
            float *dst = box.data + ((size_t)k * h + y + dy) * w + dx;
            for (int x = 0; x < nw; x++) {
                int i0 = x0[x], i1 = i0 + 1 < im->w ? i0 + 1 : i0;
                float top = (1 - ax[x]) * r0[i0] + ax[x] * r0[i1];
                float bot = (1 - ax[x]) * r1[i0] + ax[x] * r1[i1];
                float v = ((1 - ay) * top + ay * bot) * 255.f;
                dst[x] = (float)lrintf(v < 0 ? 0 : v > 255 ? 255 : v) / 255.f;
            }
        }
    free(x0);
    free(ax);
    *out = box;
    return YQ_OK;
}

static int is_image_name(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot && (!strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg") || !strcasecmp(dot, ".png"));
}

/* IMAGE.rgb beside IMAGE: its raw pixels (yq_image_write_raw), never an image of its own */
static int is_raw_sidecar(const char *name)
{
    size_t n = strlen(name);
    char stem[256];
    if (n <= 4 || n - 4 >= sizeof stem || strcmp(name + n - 4, ".rgb")) return 0;
    memcpy(stem, name, n - 4);
    stem[n - 4] = 0;
    return is_image_name(stem);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void yq_list_images_free(char **paths, int n)
{
    if (!paths) return;
    for (int i = 0; i < n; i++) free(paths[i]);
    free(paths);
}

yq_status yq_list_images(const char *dir, char ***paths, int *n, int *n_skipped, yq_warn_fn warn, void *wctx,
                         yq_error *err)
{
    *paths = NULL;
    *n = 0;
    if (n_skipped) *n_skipped = 0;
    DIR *d = opendir(dir);
    if (!d) return yq_fail(err, YQ_ERR_IO, "%s: %s", dir, strerror(errno));
    char **v = NULL;
    int cnt = 0, cap = 0, skipped = 0;
    yq_status st = YQ_OK;
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(d);
        if (!e) {
            if (errno) st = yq_fail(err, YQ_ERR_IO, "%s: %s", dir, strerror(errno));
            break;
        }
        if (e->d_name[0] == '.') continue;
        char *full = yq_ds_path_join(dir, e->d_name);
        if (!full) { st = yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory", dir); break; }
        struct stat sb;
        if (stat(full, &sb) != 0 || S_ISDIR(sb.st_mode)) { free(full); continue; }
        if (!is_image_name(e->d_name)) {
            if (!is_raw_sidecar(e->d_name) && warn) {
                char msg[1024];
                snprintf(msg, sizeof msg, "%s: not an image, skipped", full);
                warn(wctx, msg);
            }
            skipped++;
            free(full);
            continue;
        }
        if (cnt == cap) {
            int nc = cap ? 2 * cap : 64;
            char **nv = realloc(v, (size_t)nc * sizeof *nv);
            if (!nv) { free(full); st = yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory", dir); break; }
            v = nv;
            cap = nc;
        }
        v[cnt++] = full;
    }
    closedir(d);
    if (st == YQ_OK && cnt == 0) st = yq_fail(err, YQ_ERR_IO, "%s: no images", dir);
    if (st != YQ_OK) {
        yq_list_images_free(v, cnt);
        return st;
    }
    /* same directory prefix on every path, so this is the order of the names */
    qsort(v, (size_t)cnt, sizeof *v, cmp_str);
    *paths = v;
    *n = cnt;
    if (n_skipped) *n_skipped = skipped;
    return YQ_OK;
}
