/* datasets/paint: anti-aliased lines, discs and text on a yq_canvas, drawn by cairo.
 *
 * The canvas stays plain RGB8 (cairo has no 24-bit format): each shape is drawn by cairo
 * as a coverage mask (an A8 surface the size of the shape's box, clipped to the canvas,
 * in bands when large) and blended into the canvas in the shape's colour.  Text is set in
 * a real font (DejaVu Sans through fontconfig; whatever it substitutes where that is not
 * installed), grey-scale anti-aliased, with hinted metrics so that sizes are whole pixels.
 * Coordinates follow include/yq_draw.h: (x, y) names the pixel whose centre is at
 * x + 0.5, y + 0.5.  Nothing here fails or writes outside the canvas, whatever the input
 * (non-finite or huge coordinates draw nothing or are clipped). */
#ifndef YQ_DATASETS_PAINT_H
#define YQ_DATASETS_PAINT_H

#include "include/yq_draw.h"

/* A line between pixel centres, thickness t (1..64) covering the same rows or columns
 * as t whole pixels would; dash > 0: dash pixels on, dash off, phase from (x0, y0). */
void yq_paint_line(yq_canvas *c, double x0, double y0, double x1, double y1, int t, int dash,
                   uint8_t r, uint8_t g, uint8_t b);

/* Liang-Barsky: clips the segment to [xlo, xhi] x [ylo, yhi]; 0 when nothing is left. */
int yq_clip_segment(double *x0, double *y0, double *x1, double *y1, double xlo, double xhi, double ylo, double yhi);

/* A disc of the given radius centred on pixel (cx, cy), or a ring ring pixels wide. */
void yq_paint_disc(yq_canvas *c, double cx, double cy, double radius, int ring, uint8_t r, uint8_t g, uint8_t b);

/* Text at pixel size px (the font's em): its box w x h (the advance, and the font's
 * ascent + descent, rounded up: the same height for every text of that size) and the
 * baseline's offset from the box's top. */
void yq_text_box(const char *text, double px, long long *w, int *h, int *baseline);

/* The text with its box's top-left corner at (x, y); vertical: turned 90 degrees
 * counter-clockwise (reading upwards), the turned box's top-left at (x, y). */
void yq_paint_text(yq_canvas *c, long long x, long long y, const char *text, double px, int vertical,
                   uint8_t r, uint8_t g, uint8_t b);

#endif
