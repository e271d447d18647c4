/* Anti-aliased lines, discs and text on an RGB8 canvas through cairo masks (paint.h). */
#include <cairo.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/paint.h"

#define FONT_FAMILY "DejaVu Sans"
#define PI 3.14159265358979323846
#define BAND_PIXELS (1L << 22)   /* the largest mask drawn at once (bytes); taller shapes go in bands */

static int canvas_ok(const yq_canvas *c) { return c && c->rgb && c->w > 0 && c->h > 0; }

/* Blends mask m (w x h coverage bytes, row stride) into the canvas at (x0, y0), in colour
 * (r, g, b): each pixel moves from its colour towards (r, g, b) by coverage / 255.  The
 * caller clipped the rectangle to the canvas. */
static void blend(yq_canvas *c, int x0, int y0, const uint8_t *m, int stride, int w, int h, uint8_t r, uint8_t g,
                  uint8_t b)
{
    const unsigned col[3] = { r, g, b };
    for (int y = 0; y < h; y++) {
        uint8_t *p = c->rgb + ((size_t)(y0 + y) * (size_t)c->w + (size_t)x0) * 3;
        const uint8_t *a = m + (size_t)y * (size_t)stride;
        for (int x = 0; x < w; x++, p += 3) {
            unsigned k = a[x];
            if (!k) continue;
            for (int i = 0; i < 3; i++) p[i] = (uint8_t)((p[i] * (255 - k) + col[i] * k + 127) / 255);
        }
    }
}

/* Draws a shape (draw(cr, ctx) builds and fills or strokes it in canvas coordinates)
 * within the canvas pixels [x0, x1) x [y0, y1), clipped to the canvas, in bands of at most
 * BAND_PIXELS, and blends it in (r, g, b). */
typedef void (*shape_fn)(cairo_t *cr, const void *ctx);
static void paint_shape(yq_canvas *c, double x0, double y0, double x1, double y1, shape_fn draw, const void *ctx,
                        uint8_t r, uint8_t g, uint8_t b)
{
    if (!(x0 < x1 && y0 < y1)) return;     /* NaN too */
    int ix0 = (int)fmax(floor(x0), 0), iy0 = (int)fmax(floor(y0), 0);
    int ix1 = (int)fmin(ceil(x1), c->w), iy1 = (int)fmin(ceil(y1), c->h);
    if (ix0 >= ix1 || iy0 >= iy1) return;
    int w = ix1 - ix0, band = (int)fmax(1, fmin(iy1 - iy0, (double)BAND_PIXELS / w));
    for (int by = iy0; by < iy1; by += band) {
        int bh = by + band < iy1 ? band : iy1 - by;
        cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_A8, w, bh);
        cairo_t *cr = cairo_create(s);
        cairo_translate(cr, -ix0, -by);
        draw(cr, ctx);
        cairo_surface_flush(s);
        if (cairo_status(cr) == CAIRO_STATUS_SUCCESS)
            blend(c, ix0, by, cairo_image_surface_get_data(s), cairo_image_surface_get_stride(s), w, bh, r, g, b);
        cairo_destroy(cr);
        cairo_surface_destroy(s);
    }
}

/* --- lines --------------------------------------------------------------- */

int yq_clip_segment(double *x0, double *y0, double *x1, double *y1, double xlo, double xhi, double ylo, double yhi)
{
    double dx = *x1 - *x0, dy = *y1 - *y0, t0 = 0, t1 = 1;
    double p[4] = { -dx, dx, -dy, dy }, q[4] = { *x0 - xlo, xhi - *x0, *y0 - ylo, yhi - *y0 };
    for (int k = 0; k < 4; k++) {
        if (p[k] == 0) {
            if (q[k] < 0) return 0;
            continue;
        }
        double t = q[k] / p[k];
        if (p[k] < 0) { if (t > t1) return 0; if (t > t0) t0 = t; }
        else { if (t < t0) return 0; if (t < t1) t1 = t; }
    }
    double ax = *x0 + t0 * dx, ay = *y0 + t0 * dy;
    *x1 = *x0 + t1 * dx;
    *y1 = *y0 + t1 * dy;
    *x0 = ax;
    *y0 = ay;
    return 1;
}

typedef struct { double x0, y0, x1, y1, t, dash, phase; } line_ctx;

static void line_shape(cairo_t *cr, const void *ctx)
{
    const line_ctx *l = ctx;
    cairo_set_line_width(cr, l->t);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
    if (l->dash > 0) cairo_set_dash(cr, &l->dash, 1, l->phase);
    cairo_move_to(cr, l->x0, l->y0);
    cairo_line_to(cr, l->x1, l->y1);
    cairo_stroke(cr);
}

void yq_paint_line(yq_canvas *c, double x0, double y0, double x1, double y1, int t, int dash, uint8_t r, uint8_t g,
                   uint8_t b)
{
    if (!canvas_ok(c) || !isfinite(x0) || !isfinite(y0) || !isfinite(x1) || !isfinite(y1)) return;
    t = t < 1 ? 1 : t > 64 ? 64 : t;
    double sx = x0, sy = y0, m = t + 2.0;
    if (!yq_clip_segment(&x0, &y0, &x1, &y1, -m, c->w + m, -m, c->h + m)) return;
    /* t whole pixels from pixel p - (t - 1) / 2 on: their middle is this far past p; and
     * the ends half a pixel further out, so that the end pixels are covered whole (and a
     * dash starts at a pixel's edge) */
    double mid = t / 2.0 - (t - 1) / 2, len = hypot(x1 - x0, y1 - y0);
    double ex = len > 0 ? 0.5 * (x1 - x0) / len : 0.5, ey = len > 0 ? 0.5 * (y1 - y0) / len : 0;
    line_ctx l = { x0 + mid - ex, y0 + mid - ey, x1 + mid + ex, y1 + mid + ey, t, dash, hypot(x0 - sx, y0 - sy) };
    double pad = t / 2.0 + 1;
    paint_shape(c, fmin(l.x0, l.x1) - pad, fmin(l.y0, l.y1) - pad, fmax(l.x0, l.x1) + pad, fmax(l.y0, l.y1) + pad,
                line_shape, &l, r, g, b);
}

/* --- discs --------------------------------------------------------------- */

typedef struct { double cx, cy, radius, ring; } disc_ctx;

static void disc_shape(cairo_t *cr, const void *ctx)
{
    const disc_ctx *d = ctx;
    if (d->ring > 0 && d->ring < d->radius) {
        cairo_set_line_width(cr, d->ring);
        cairo_arc(cr, d->cx, d->cy, d->radius - d->ring / 2, 0, 2 * PI);
        cairo_stroke(cr);
    } else {
        cairo_arc(cr, d->cx, d->cy, d->radius, 0, 2 * PI);
        cairo_fill(cr);
    }
}

void yq_paint_disc(yq_canvas *c, double cx, double cy, double radius, int ring, uint8_t r, uint8_t g, uint8_t b)
{
    if (!canvas_ok(c) || !isfinite(cx) || !isfinite(cy) || !(radius > 0)) return;
    if (radius > 4096) radius = 4096;
    if (fabs(cx) > 1e7 || fabs(cy) > 1e7) return;        /* far off any canvas */
    disc_ctx d = { cx + 0.5, cy + 0.5, radius, ring };
    paint_shape(c, d.cx - radius - 1, d.cy - radius - 1, d.cx + radius + 1, d.cy + radius + 1, disc_shape, &d, r, g,
                b);
}

/* --- text ---------------------------------------------------------------- */

/* The length of the UTF-8 sequence at s (2..4) if it is a valid one, else 0. */
static int utf8_len(const unsigned char *s)
{
    int n = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 && s[0] < 0xE0 ? 2 : 0;
    if (s[0] >= 0xF5) return 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if (n == 3 && ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0))) return 0;   /* overlong, surrogate */
    if (n == 4 && ((s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))) return 0;   /* overlong, > U+10FFFF */
    return n;
}

/* text with control bytes and bytes that are not valid UTF-8 as '?' (cairo refuses
 * invalid UTF-8); malloc'd, NULL when out of memory */
static char *clean_text(const char *text)
{
    size_t n = strlen(text);
    char *out = malloc(n + 1);
    if (!out) return NULL;
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    while (i < n) {
        if (s[i] >= 32 && s[i] < 127) { out[i] = (char)s[i]; i++; continue; }
        int k = s[i] >= 0x80 ? utf8_len(s + i) : 0;
        if (k) { memcpy(out + i, s + i, (size_t)k); i += (size_t)k; }
        else out[i++] = '?';
    }
    out[n] = 0;
    return out;
}

static void set_font(cairo_t *cr, double px)
{
    cairo_select_font_face(cr, FONT_FAMILY, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, px);
    cairo_font_options_t *fo = cairo_font_options_create();
    cairo_font_options_set_antialias(fo, CAIRO_ANTIALIAS_GRAY);
    cairo_font_options_set_hint_style(fo, CAIRO_HINT_STYLE_SLIGHT);
    cairo_font_options_set_hint_metrics(fo, CAIRO_HINT_METRICS_ON);
    cairo_set_font_options(cr, fo);
    cairo_font_options_destroy(fo);
}

static double clamp_px(double px) { return px >= 1 ? (px <= 1024 ? px : 1024) : 1; }

/* the box of clean text s (text_box's values) */
static void box_of(const char *s, double px, long long *w, int *h, int *base)
{
    cairo_surface_t *sf = cairo_image_surface_create(CAIRO_FORMAT_A8, 1, 1);
    cairo_t *cr = cairo_create(sf);
    set_font(cr, clamp_px(px));
    cairo_font_extents_t fe;
    cairo_text_extents_t te;
    cairo_font_extents(cr, &fe);
    cairo_text_extents(cr, s, &te);
    int ok = cairo_status(cr) == CAIRO_STATUS_SUCCESS;
    double adv = ok && te.x_advance > 0 ? te.x_advance : 0;
    *w = *s && ok ? (long long)ceil(fmin(adv, 1e15)) : 0;
    *base = ok ? (int)ceil(fe.ascent) : 0;
    *h = ok ? *base + (int)ceil(fe.descent) : 0;
    cairo_destroy(cr);
    cairo_surface_destroy(sf);
}

void yq_text_box(const char *text, double px, long long *w, int *h, int *baseline)
{
    long long tw = 0;
    int th = 0, tb = 0;
    char *s = text && *text ? clean_text(text) : NULL;
    if (s) box_of(s, px, &tw, &th, &tb);
    free(s);
    if (w) *w = tw;
    if (h) *h = th;
    if (baseline) *baseline = tb;
}

void yq_paint_text(yq_canvas *c, long long x, long long y, const char *text, double px, int vertical, uint8_t r,
                   uint8_t g, uint8_t b)
{
    if (!canvas_ok(c) || !text || !*text) return;
    char *s = clean_text(text);
    if (!s) return;
    long long w;
    int h, base;
    box_of(s, px, &w, &h, &base);
    /* The window [tx0, tx1) x [ty0, ty1) of the horizontal text that lands on the canvas;
     * turned, its pixel (tx, ty) goes to (x + ty, y + w - 1 - tx). */
    long long tx0, tx1, ty0, ty1;
    if (!vertical) {
        tx0 = x < 0 ? -x : 0, tx1 = c->w - x < w ? c->w - x : w;
        ty0 = y < 0 ? -y : 0, ty1 = c->h - y < h ? c->h - y : h;
    } else {
        ty0 = x < 0 ? -x : 0, ty1 = c->w - x < h ? c->w - x : h;
        long long r0 = y < 0 ? 0 : y, r1 = y + w < c->h ? y + w : c->h;   /* canvas rows */
        tx0 = y + w - r1, tx1 = y + w - r0;
    }
    if (w <= 0 || h <= 0 || tx0 >= tx1 || ty0 >= ty1) { free(s); return; }
    int mw = (int)(tx1 - tx0), mh = (int)(ty1 - ty0);
    cairo_surface_t *sf = cairo_image_surface_create(CAIRO_FORMAT_A8, mw, mh);
    cairo_t *cr = cairo_create(sf);
    set_font(cr, clamp_px(px));
    /* the window's origin at the text's (tx0, ty0): glyphs outside it are clipped */
    cairo_move_to(cr, -(double)tx0, (double)(base - ty0));
    cairo_show_text(cr, s);
    cairo_surface_flush(sf);
    if (cairo_status(cr) == CAIRO_STATUS_SUCCESS) {
        const uint8_t *m = cairo_image_surface_get_data(sf);
        int stride = cairo_image_surface_get_stride(sf);
        if (!vertical) {
            blend(c, (int)(x + tx0), (int)(y + ty0), m, stride, mw, mh, r, g, b);
        } else {
            /* turned: mask column tx becomes canvas row y + w - 1 - tx, mask row ty canvas column x + ty */
            uint8_t *t = malloc((size_t)mw * (size_t)mh);
            if (t) {
                for (int ty = 0; ty < mh; ty++)
                    for (int tx = 0; tx < mw; tx++) t[(size_t)(mw - 1 - tx) * (size_t)mh + (size_t)ty] = m[(size_t)ty * (size_t)stride + (size_t)tx];
                blend(c, (int)(x + ty0), (int)(y + w - tx1), t, mh, mh, mw, r, g, b);
                free(t);
            }
        }
    }
    cairo_destroy(cr);
    cairo_surface_destroy(sf);
    free(s);
}
