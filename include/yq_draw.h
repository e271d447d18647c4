/* yquant: pictures.  Boxes and labels on an RGB8 canvas, the charts of yquant's reports
 * (a Pareto scatter, horizontal bars), written out as PNG with libpng.  Text, lines and
 * discs are anti-aliased, drawn by cairo (text in DejaVu Sans, found through fontconfig).
 *
 *     yq_canvas cv;
 *     yq_error err;
 *     if (yq_canvas_from_chw(im.data, im.c, im.w, im.h, &cv, &err) != YQ_OK) ...  // a yq_image
 *     uint8_t col[3];
 *     yq_class_color(d->cls, col);
 *     yq_draw_box(&cv, d->x, d->y, d->w, d->h, 2, col[0], col[1], col[2]);
 *     yq_draw_label(&cv, (int)d->x, (int)d->y, "dog 94%", 2, col[0], col[1], col[2]);
 *     if (yq_png_write("out.png", &cv, &err) != YQ_OK) fprintf(stderr, "%s\n", err.msg);
 *     yq_canvas_free(&cv);
 *
 *     yq_chart_point p[3] = { { .x = 41.2, .y = 21.0, .label = "8b-kl" }, ... };
 *     yq_pareto_front(p, 3);                          // marks p[i].front
 *     yq_scatter_opt o = { .title = "mAP vs latency", .xlabel = "ms/img", .ylabel = "mAP" };
 *     if (yq_chart_scatter(p, 3, &o, 1100, 700, &cv, &err) == YQ_OK) ...
 *
 * The canvas is plain interleaved RGB8: any CHW float buffer (an image, a letterboxed
 * network input) can be drawn on.  Drawing calls never fail and never write outside the
 * canvas, whatever the coordinates (negative, huge, NaN, infinite): what falls outside is
 * clipped.  Points with a non-finite x or y are left out of a chart.
 */
#ifndef YQ_DRAW_H
#define YQ_DRAW_H

#include <stdint.h>
#include "yq.h"

#ifdef __cplusplus
extern "C" {
#endif

/* rgb[(y*w + x)*3 + k], k = 0 R, 1 G, 2 B.  Owns rgb (malloc) when made by
 * yq_canvas_from_chw; a caller may also point rgb at its own buffer and never free it. */
typedef struct yq_canvas { int w, h; uint8_t *rgb; } yq_canvas;

/* Converts CHW planar floats (c = 1 grey or 3 RGB, values in [0,1]) to a new canvas:
 * each value clamped to [0,1] (NaN as 0), times 255, rounded to nearest.
 * *out is set only on YQ_OK. */
yq_status yq_canvas_from_chw(const float *chw, int c, int w, int h, yq_canvas *out, yq_error *err);

/* Frees rgb and zeroes *c; NULL or an empty canvas is a no-op. */
void yq_canvas_free(yq_canvas *c);

/* A rectangle outline, top-left (x, y), size w x h in pixels: columns round(x) ..
 * round(x + w) - 1, rows likewise; thickness (at least 1) grows inward.  A negative
 * w or h extends the box the other way; a NaN anywhere draws nothing. */
void yq_draw_box(yq_canvas *c, float x, float y, float w, float h, int thickness,
                 uint8_t r, uint8_t g, uint8_t b);

/* Text on a filled rectangle of colour (r, g, b), in white or black, whichever contrasts
 * (anti-aliased: edge pixels blend the two).  (x, y) is the top-left corner of the box
 * being labelled: the label sits just above it, or just inside when there is no room
 * above, and is shifted left to stay on the canvas.  text is UTF-8; control bytes and
 * bytes that are not UTF-8 draw as '?'.  scale (1..64): the font is 6 + 6 x scale pixels
 * to the em (12 at 1, 24 at 3), with scale pixels of fill round the text; every label of
 * one scale is equally tall. */
void yq_draw_label(yq_canvas *c, int x, int y, const char *text, int scale,
                   uint8_t r, uint8_t g, uint8_t b);

/* Label size in pixels at this scale, as yq_draw_label draws it (before clipping). */
void yq_label_size(const char *text, int scale, int *w, int *h);

/* The same label with its top-left corner exactly at (left, top), clipped to the canvas
 * (yq_label_place chose the spot). */
void yq_draw_label_at(yq_canvas *c, int left, int top, const char *text, int scale, uint8_t r, uint8_t g, uint8_t b);

/* Places n labels of sizes lw[i] x lh[i] for the boxes (x, y, w, h)[i] on a cw x ch canvas so
 * that they do not cover each other: label i, in order (give the best detection first), at
 * the first free spot of: just above its box at its left edge, just inside its top, just
 * below it, above at its right edge, inside its bottom; then the nearest free row above or
 * below the first spot; kept on the canvas (a label wider or taller than the canvas at 0).
 * Only where no spot is free does a label cover another (at the first spot).  Top-left
 * corners into left[i], top[i]; the number of labels that had to cover another returned. */
int yq_label_place(const float *box_xywh, const int *lw, const int *lh, int n, int cw, int ch, int *left, int *top);

/* The label scale and box thickness that read well on a w x h picture: one scale step
 * per 300 pixels of the shorter side (24-pixel text on a 900-pixel one), boxes scale
 * pixels thick (at least 2). */
void yq_label_style(int w, int h, int *scale, int *thickness);

/* A colour for class cls: hues spread by the golden ratio, so neighbouring classes
 * differ strongly; deterministic, any int (negative too) is fine. */
void yq_class_color(int cls, uint8_t rgb[3]);

/* Writes the canvas as an 8-bit RGB PNG.  Writes "<path>.tmp" and renames it to path
 * when complete; on failure the temp file is removed and path is left as it was.
 * Errors (YQ_ERR_IO, YQ_ERR_INVALID_ARG) name the path. */
yq_status yq_png_write(const char *path, const yq_canvas *c, yq_error *err);

/* ---- charts ---- */

/* A w x h canvas filled with (r, g, b); *out set only on YQ_OK (free with yq_canvas_free). */
yq_status yq_canvas_new(int w, int h, uint8_t r, uint8_t g, uint8_t b, yq_canvas *out, yq_error *err);

/* A straight anti-aliased line of the given thickness (1..64) between two points (pixel
 * centres, both covered whole); dash > 0 draws dash pixels on, dash pixels off. */
void yq_draw_line(yq_canvas *c, double x0, double y0, double x1, double y1, int thickness, int dash,
                  uint8_t r, uint8_t g, uint8_t b);
/* A filled anti-aliased disc, or (ring > 0) a ring ring pixels wide, centred on (cx, cy). */
void yq_draw_disc(yq_canvas *c, double cx, double cy, double radius, int ring, uint8_t r, uint8_t g, uint8_t b);
/* A filled rectangle, top-left (x, y). */
void yq_fill_rect(yq_canvas *c, double x, double y, double w, double h, uint8_t r, uint8_t g, uint8_t b);
/* Text in (r, g, b) with no background, anti-aliased over what is there; (x, y) is the
 * top-left corner of yq_label_size's box (so the glyphs start scale pixels in).  vertical: turned 90 degrees counter-clockwise,
 * reading upwards, (x, y) then the top-left of the turned box. */
void yq_draw_text(yq_canvas *c, int x, int y, const char *text, int scale, int vertical,
                  uint8_t r, uint8_t g, uint8_t b);

/* "Nice" axis ticks over [lo, hi]: a step of 1, 2 or 5 x 10^k giving about `want` ticks;
 * *first is the first multiple of the step >= lo.  lo < hi required (else step 1). */
double yq_nice_step(double lo, double hi, int want, double *first);

/* ---- the Pareto chart ---- */
typedef struct yq_chart_point {
    double x, y;              /* lower x and higher y are better (latency, accuracy) */
    const char *label;        /* short name drawn beside the point; NULL: none */
    int front;                /* on the Pareto front (yq_pareto_front sets it) */
    int chosen;               /* ringed */
} yq_chart_point;

/* Marks the points no other point dominates (x <= and y >=, one strictly); returns
 * how many.  Equal points are all on the front.  Non-finite points never are. */
int yq_pareto_front(yq_chart_point *p, int n);

typedef struct yq_scatter_opt {
    const char *title, *xlabel, *ylabel;
    int has_ref;              /* a dashed horizontal reference line at ref_y (FP32) */
    double ref_y;
    const char *ref_label;
    double min_xspan;         /* the x axis spans at least this much (so that noise-sized
                                 differences in latency do not fill the chart); 0: none */
} yq_scatter_opt;

/* The colours, for tests that look for them in a screenshot. */
#define YQ_CHART_FRONT_RGB 214, 39, 40     /* front points and the line joining them */
#define YQ_CHART_OTHER_RGB 31, 119, 180    /* points off the front */
#define YQ_CHART_CHOSEN_RGB 44, 160, 44    /* the ring around the chosen point */

/* The points (x across, y up), the front joined in x order, labels placed where they
 * overlap neither another label nor a point (a number and a key at the side where no
 * place is free), ticks, grid, axis titles, a legend.  w >= 320, h >= 240. */
yq_status yq_chart_scatter(const yq_chart_point *p, int n, const yq_scatter_opt *o, int w, int h,
                           yq_canvas *out, yq_error *err);

/* ---- horizontal bar charts: one row per item, up to 4 series per row ---- */
#define YQ_BARS_MAX_SERIES 4
typedef struct yq_bar_panel {
    const char *title, *xlabel;
    int n_series;
    const char *series[YQ_BARS_MAX_SERIES];      /* legend names */
    const double *values[YQ_BARS_MAX_SERIES];    /* n_rows values each; NaN: no bar */
    int first_color;                             /* series j takes palette colour first_color + j
                                                    (orange, blue, green, purple, cycling) */
} yq_bar_panel;

/* Rows labelled row_label[i], top to bottom; one panel per entry of panels, side by
 * side, each with its own x axis (including 0).  The height follows the rows. */
yq_status yq_chart_bars(const char *const *row_label, int n_rows, const yq_bar_panel *panels, int n_panels,
                        int w, yq_canvas *out, yq_error *err);

#ifdef __cplusplus
}
#endif
#endif
