/* datasets/draw: boxes and labels on an RGB8 canvas, written out as PNG.
 *
 *     yq_canvas cv;
 *     yq_error err;
 *     if (yq_canvas_from_chw(im.data, im.c, im.w, im.h, &cv, &err) != YQ_OK) ...
 *     uint8_t col[3];
 *     yq_class_color(d->cls, col);
 *     yq_draw_box(&cv, d->x, d->y, d->w, d->h, 2, col[0], col[1], col[2]);
 *     yq_draw_label(&cv, (int)d->x, (int)d->y, "dog 94%", 2, col[0], col[1], col[2]);
 *     if (yq_png_write("out.png", &cv, &err) != YQ_OK) fprintf(stderr, "%s\n", err.msg);
 *     yq_canvas_free(&cv);
 *
 * The canvas is plain interleaved RGB8 so this module needs nothing from datasets/image:
 * any CHW float buffer (an image, a letterboxed network input) can be drawn on.
 * Drawing calls never fail and never write outside the canvas, whatever the
 * coordinates (negative, huge, NaN, infinite): what falls outside is clipped.
 */
#ifndef YQ_DATASETS_DRAW_H
#define YQ_DATASETS_DRAW_H

#include <stdint.h>
#include "include/yq.h"

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

/* Text on a filled rectangle of colour (r, g, b), in white or black, whichever contrasts.
 * (x, y) is the top-left corner of the box being labelled: the label sits just above it,
 * or just inside when there is no room above, and is shifted left to stay on the canvas.
 * A 5x8 bitmap font covers printable ASCII (32..126); other bytes draw as '?'.
 * scale (1..64) magnifies each font pixel to scale x scale. */
void yq_draw_label(yq_canvas *c, int x, int y, const char *text, int scale,
                   uint8_t r, uint8_t g, uint8_t b);

/* Label size in pixels at this scale, as yq_draw_label draws it (before clipping). */
void yq_label_size(const char *text, int scale, int *w, int *h);

/* A colour for class cls: hues spread by the golden ratio, so neighbouring classes
 * differ strongly; deterministic, any int (negative too) is fine. */
void yq_class_color(int cls, uint8_t rgb[3]);

/* Writes the canvas as an 8-bit RGB PNG.  Writes "<path>.tmp" and renames it to path
 * when complete; on failure the temp file is removed and path is left as it was.
 * Errors (YQ_ERR_IO, YQ_ERR_INVALID_ARG) name the path. */
yq_status yq_png_write(const char *path, const yq_canvas *c, yq_error *err);

#ifdef __cplusplus
}
#endif
#endif
