/* Boxes, labels and PNG output on an RGB8 canvas (see draw.h). */
#include <errno.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/fsio.h"
#include "datasets/draw.h"
#include "datasets/paint.h"
#include "ir/ir.h"

/* Labels: text in the painter's font (datasets/paint.c) at 6 + 6 x scale pixels to the em
 * (12 px at scale 1, 24 at 3), on a filled box with LABEL_PAD pixels per scale step round it. */
#define LABEL_PX(s)     (6.0 + 6.0 * (s))
#define LABEL_PAD       1
#define LABEL_SCALE_MAX 64

/* --- canvas --------------------------------------------------------------- */

yq_status yq_canvas_from_chw(const float *chw, int c, int w, int h, yq_canvas *out, yq_error *err)
{
    if (!chw || !out)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "canvas: NULL %s", chw ? "output" : "input");
    if (c != 1 && c != 3)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "canvas: %d channels (1 or 3 expected)", c);
    if (w <= 0 || h <= 0)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "canvas: bad size %dx%d", w, h);
    size_t plane = (size_t)w * (size_t)h;
    if (plane > SIZE_MAX / 3 / sizeof(float))
        return yq_fail(err, YQ_ERR_INVALID_ARG, "canvas: %dx%d is too large", w, h);
    uint8_t *rgb = malloc(plane * 3);
    if (!rgb)
        return yq_fail(err, YQ_ERR_NOMEM, "canvas: out of memory for %dx%d", w, h);
    for (size_t i = 0; i < plane; i++) {
        for (int k = 0; k < 3; k++) {
            float v = chw[(c == 3 ? (size_t)k * plane : 0) + i];
            if (!(v > 0.0f)) v = 0.0f;            /* NaN too */
            if (v > 1.0f) v = 1.0f;
            rgb[i * 3 + (size_t)k] = (uint8_t)(v * 255.0f + 0.5f);
        }
    }
    out->w = w;
    out->h = h;
    out->rgb = rgb;
    return YQ_OK;
}

void yq_canvas_free(yq_canvas *c)
{
    if (!c) return;
    free(c->rgb);
    c->rgb = NULL;
    c->w = c->h = 0;
}

static int canvas_ok(const yq_canvas *c)
{
    return c && c->rgb && c->w > 0 && c->h > 0;
}

/* Columns x0..x1 (inclusive) of row y; the caller clips (0 <= x0, x1 < w, 0 <= y < h). */
static void span(yq_canvas *c, int y, int x0, int x1, uint8_t r, uint8_t g, uint8_t b)
{
    uint8_t *p = c->rgb + ((size_t)y * (size_t)c->w + (size_t)x0) * 3;
    for (int x = x0; x <= x1; x++, p += 3) {
        p[0] = r;
        p[1] = g;
        p[2] = b;
    }
}

/* A filled rectangle; 64-bit coordinates so callers may pass sums of huge ints. */
static void fill_rect(yq_canvas *c, long long x, long long y, long long w, long long h,
                      uint8_t r, uint8_t g, uint8_t b)
{
    long long x0 = x < 0 ? 0 : x, y0 = y < 0 ? 0 : y;
    long long x1 = x + w > c->w ? c->w : x + w;   /* exclusive */
    long long y1 = y + h > c->h ? c->h : y + h;
    for (long long yy = y0; yy < y1; yy++)
        if (x0 < x1) span(c, (int)yy, (int)x0, (int)(x1 - 1), r, g, b);
}

/* --- boxes ---------------------------------------------------------------- */

/* NaN goes to lo: callers reject NaN first, but an int conversion of NaN is undefined. */
static double clampd(double v, double lo, double hi)
{
    return v >= lo ? (v <= hi ? v : hi) : lo;
}

static int mini(int a, int b) { return a < b ? a : b; }
static int maxi(int a, int b) { return a > b ? a : b; }

void yq_draw_box(yq_canvas *c, float x, float y, float w, float h, int thickness,
                 uint8_t r, uint8_t g, uint8_t b)
{
    if (!canvas_ok(c)) return;
    /* Doubles: x + w cannot overflow for any pair of finite floats. */
    double l = x, rt = (double)x + (double)w, t = y, bt = (double)y + (double)h;
    if (isnan(l) || isnan(rt) || isnan(t) || isnan(bt)) return;
    if (rt < l) { double s = l; l = rt; rt = s; }
    if (bt < t) { double s = t; t = bt; bt = s; }
    /* Inclusive pixel bounds; a box thinner than a pixel is still a 1-pixel line. */
    l = floor(l + 0.5);
    rt = floor(rt + 0.5) - 1.0;
    t = floor(t + 0.5);
    bt = floor(bt + 0.5) - 1.0;
    if (rt < l) rt = l;
    if (bt < t) bt = t;
    double tk = thickness < 1 ? 1.0 : (double)thickness;
    /* The outline is the outer rectangle minus the inner one (inclusive bounds below).
     * Clamping every bound to [-1, size] keeps which in-canvas pixels lie inside each,
     * and makes the int conversions safe whatever the input. */
    double W = c->w, H = c->h;
    int L = (int)clampd(l, -1, W), R = (int)clampd(rt, -1, W);
    int T = (int)clampd(t, -1, H), B = (int)clampd(bt, -1, H);
    int IL = (int)clampd(l + tk, -1, W), IR = (int)clampd(rt - tk, -1, W);
    int IT = (int)clampd(t + tk, -1, H), IB = (int)clampd(bt - tk, -1, H);
    int x0 = maxi(L, 0), x1 = mini(R, c->w - 1);
    if (x0 > x1) return;
    for (int yy = maxi(T, 0); yy <= mini(B, c->h - 1); yy++) {
        if (yy >= IT && yy <= IB && IL <= IR) {
            int a = mini(x1, IL - 1), s = maxi(x0, IR + 1);
            if (x0 <= a) span(c, yy, x0, a, r, g, b);
            if (s <= x1) span(c, yy, s, x1, r, g, b);
        } else {
            span(c, yy, x0, x1, r, g, b);
        }
    }
}

/* --- labels --------------------------------------------------------------- */

static int label_scale(int scale)
{
    return scale < 1 ? 1 : scale > LABEL_SCALE_MAX ? LABEL_SCALE_MAX : scale;
}

/* The label's box (0 x 0 for no text) and its text's baseline from the box's top. */
static void label_dims(const char *text, int s, long long *w, long long *h, int *base)
{
    long long tw = 0;
    int th = 0, tb = 0;
    if (text && *text) yq_text_box(text, LABEL_PX(s), &tw, &th, &tb);
    if (tw <= 0 || th <= 0) { *w = *h = 0; *base = 0; return; }
    *w = tw + 2LL * LABEL_PAD * s;
    *h = th + 2LL * LABEL_PAD * s;
    *base = tb + LABEL_PAD * s;
}

void yq_label_size(const char *text, int scale, int *w, int *h)
{
    long long lw, lh;
    int base;
    label_dims(text, label_scale(scale), &lw, &lh, &base);
    if (w) *w = lw > INT32_MAX ? INT32_MAX : (int)lw;
    if (h) *h = (int)lh;
}

void yq_draw_label(yq_canvas *c, int x, int y, const char *text, int scale,
                   uint8_t r, uint8_t g, uint8_t b)
{
    if (!canvas_ok(c) || !text || !*text) return;
    long long lw, lh;
    int base;
    label_dims(text, label_scale(scale), &lw, &lh, &base);
    long long left = x, top = (long long)y - lh;
    if (top < 0) top = y;                          /* no room above: inside the box */
    if (left + lw > c->w) left = (long long)c->w - lw;
    if (left < 0) left = 0;
    yq_draw_label_at(c, (int)left, (int)top, text, scale, r, g, b);
}

void yq_draw_label_at(yq_canvas *c, int left, int top, const char *text, int scale, uint8_t r, uint8_t g, uint8_t b)
{
    if (!canvas_ok(c) || !text || !*text) return;
    int s = label_scale(scale);
    long long lw, lh;
    int base;
    label_dims(text, s, &lw, &lh, &base);
    if (lw <= 0) return;
    fill_rect(c, left, top, lw, lh, r, g, b);
    /* Rec. 601 luma: dark text on light boxes, white on dark. */
    uint8_t fg = (299 * r + 587 * g + 114 * b) / 1000 >= 128 ? 0 : 255;
    yq_paint_text(c, (long long)left + (long long)LABEL_PAD * s, (long long)top + (long long)LABEL_PAD * s, text,
                  LABEL_PX(s), 0, fg, fg, fg);
}

void yq_draw_text(yq_canvas *c, int x, int y, const char *text, int scale, int vertical,
                  uint8_t r, uint8_t g, uint8_t b)
{
    if (!canvas_ok(c) || !text || !*text) return;
    int s = label_scale(scale);
    yq_paint_text(c, (long long)x + (long long)LABEL_PAD * s, (long long)y + (long long)LABEL_PAD * s, text,
                  LABEL_PX(s), vertical, r, g, b);
}

/* --- label placement ------------------------------------------------------ */

typedef struct { long long x, y, w, h; } rect;

static int overlaps(rect a, rect b) { return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h; }

/* r moved onto a cw x ch canvas (to 0 where it is larger) */
static rect onto(rect r, int cw, int ch)
{
    if (r.x + r.w > cw) r.x = cw - r.w;
    if (r.y + r.h > ch) r.y = ch - r.h;
    if (r.x < 0) r.x = 0;
    if (r.y < 0) r.y = 0;
    return r;
}

static int is_free(rect r, const rect *placed, int n)
{
    for (int k = 0; k < n; k++)
        if (overlaps(r, placed[k])) return 0;
    return 1;
}

static long long round_ll(float v) { return isfinite(v) ? (long long)lrintf(fmaxf(fminf(v, 1e9f), -1e9f)) : 0; }

int yq_label_place(const float *box, const int *lw, const int *lh, int n, int cw, int ch, int *left, int *top)
{
    rect *placed = n > 0 ? malloc(sizeof *placed * (size_t)n) : NULL;
    int covered = 0;
    for (int i = 0; i < n; i++) {
        long long x = round_ll(box[4 * i]), y = round_ll(box[4 * i + 1]);
        long long w = round_ll(box[4 * i + 2]), h = round_ll(box[4 * i + 3]);
        long long W = lw[i] > 0 ? lw[i] : 0, H = lh[i] > 0 ? lh[i] : 0;
        const rect cand[5] = { { x, y - H, W, H }, { x, y, W, H }, { x, y + h, W, H }, { x + w - W, y - H, W, H },
                               { x, y + h - H, W, H } };
        rect r = onto(cand[0], cw, ch);
        int found = 0;
        for (int k = 0; k < 5 && !found && placed; k++) {
            rect t = onto(cand[k], cw, ch);
            if (is_free(t, placed, i)) r = t, found = 1;
        }
        /* the nearest free row above or below the first spot */
        for (long long d = H > 0 ? H : 1; !found && placed && H > 0 && d <= ch; d += H > 0 ? (H + 1) / 2 : 1)
            for (int sgn = -1; sgn <= 1 && !found; sgn += 2) {
                rect t = onto(cand[0], cw, ch);
                t.y += sgn * d;
                if (t.y < 0 || t.y + t.h > ch) continue;
                if (is_free(t, placed, i)) r = t, found = 1;
            }
        if (!found && placed) {
            r = onto(cand[0], cw, ch);
            covered += i > 0 && !is_free(r, placed, i);
        }
        if (placed) placed[i] = r;
        left[i] = (int)r.x;
        top[i] = (int)r.y;
    }
    free(placed);
    return covered;
}

void yq_label_style(int w, int h, int *scale, int *thickness)
{
    int m = w < h ? w : h;
    int s = (m + 150) / 300;
    s = s < 1 ? 1 : s > LABEL_SCALE_MAX ? LABEL_SCALE_MAX : s;
    if (scale) *scale = s;
    if (thickness) *thickness = s < 2 ? 2 : s;
}

/* --- class colours -------------------------------------------------------- */

void yq_class_color(int cls, uint8_t rgb[3])
{
    /* Golden-ratio steps around the hue circle: any run of consecutive classes is
     * spread evenly, unlike darknet's 6-colour table which needs the class count. */
    double hue = fmod((double)(unsigned)cls * 0.618033988749895, 1.0) * 6.0;
    const double sat = 0.8, val = 0.95;
    int sector = (int)hue;
    double f = hue - sector;
    double p = val * (1 - sat), q = val * (1 - sat * f), t = val * (1 - sat * (1 - f));
    double rr, gg, bb;
    switch (sector) {
    case 0:  rr = val; gg = t;   bb = p;   break;
    case 1:  rr = q;   gg = val; bb = p;   break;
    case 2:  rr = p;   gg = val; bb = t;   break;
    case 3:  rr = p;   gg = q;   bb = val; break;
    case 4:  rr = t;   gg = p;   bb = val; break;
    default: rr = val; gg = p;   bb = q;   break;
    }
    rgb[0] = (uint8_t)(rr * 255 + 0.5);
    rgb[1] = (uint8_t)(gg * 255 + 0.5);
    rgb[2] = (uint8_t)(bb * 255 + 0.5);
}

/* --- PNG ------------------------------------------------------------------ */

typedef struct png_ctx { char msg[200]; } png_ctx;

static void png_on_error(png_structp png, png_const_charp msg)
{
    png_ctx *ctx = png_get_error_ptr(png);
    snprintf(ctx->msg, sizeof ctx->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;   /* warnings do not stop the write; the library prints nothing */
}

/* Everything libpng touches between setjmp and a longjmp is set up before setjmp
 * and not modified after, so no local needs to be volatile. */
static int png_encode(FILE *f, const yq_canvas *c, png_ctx *ctx)
{
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, ctx, png_on_error,
                                              png_on_warning);
    if (!png) {
        snprintf(ctx->msg, sizeof ctx->msg, "libpng: out of memory");
        return -1;
    }
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        snprintf(ctx->msg, sizeof ctx->msg, "libpng: out of memory");
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return -1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)c->w, (png_uint_32)c->h, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < c->h; y++)
        png_write_row(png, c->rgb + (size_t)y * (size_t)c->w * 3);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    return 0;
}

yq_status yq_png_write(const char *path, const yq_canvas *c, yq_error *err)
{
    if (!path || !*path)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "png: no output path");
    if (!canvas_ok(c))
        return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: empty canvas", path);
    yq_outfile o;
    yq_status st = yq_out_begin(&o, path, YQ_OUT_STREAM, err);
    if (st != YQ_OK) return st;
    png_ctx ctx = { { 0 } };
    if (png_encode(o.f, c, &ctx)) {
        yq_out_abort(&o);
        return yq_fail(err, YQ_ERR_IO, "%s: %s", path, ctx.msg[0] ? ctx.msg : "libpng error");
    }
    /* the commit flushes: a full disk shows up there, not in png_write_row */
    return yq_out_commit(&o, err);
}
