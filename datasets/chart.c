/* datasets/chart: ticks and the two report charts (scatter with its Pareto front;
 * horizontal bars), drawn with anti-aliased lines, discs and text (datasets/paint.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "datasets/chart.h"
#include "datasets/paint.h"
#include "ir/ir.h"

static int canvas_ok(const yq_canvas *c)
{
    return c && c->rgb && c->w > 0 && c->h > 0;
}

static void put(yq_canvas *c, long x, long y, uint8_t r, uint8_t g, uint8_t b)
{
    if (x < 0 || y < 0 || x >= c->w || y >= c->h) return;
    uint8_t *p = c->rgb + ((size_t)y * (size_t)c->w + (size_t)x) * 3;
    p[0] = r;
    p[1] = g;
    p[2] = b;
}

yq_status yq_canvas_new(int w, int h, uint8_t r, uint8_t g, uint8_t b, yq_canvas *out, yq_error *err)
{
    if (w <= 0 || h <= 0 || w > 16384 || h > 65536)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "canvas %dx%d: sides must be in 1..16384 x 1..65536", w, h);
    uint8_t *p = malloc((size_t)w * (size_t)h * 3);
    if (!p) return yq_fail(err, YQ_ERR_NOMEM, "out of memory for a %dx%d canvas", w, h);
    for (size_t i = 0; i < (size_t)w * (size_t)h; i++) {
        p[3 * i] = r;
        p[3 * i + 1] = g;
        p[3 * i + 2] = b;
    }
    out->w = w;
    out->h = h;
    out->rgb = p;
    return YQ_OK;
}

void yq_fill_rect(yq_canvas *c, double x, double y, double w, double h, uint8_t r, uint8_t g, uint8_t b)
{
    if (!canvas_ok(c) || !isfinite(x) || !isfinite(y) || !isfinite(w) || !isfinite(h)) return;
    if (w < 0) { x += w; w = -w; }
    if (h < 0) { y += h; h = -h; }
    /* Clamped before any conversion to an integer (out-of-range conversions are undefined). */
    double x0 = fmin(fmax(floor(x + 0.5), 0), c->w), y0 = fmin(fmax(floor(y + 0.5), 0), c->h);
    double x1 = fmin(fmax(floor(x + w + 0.5), 0), c->w), y1 = fmin(fmax(floor(y + h + 0.5), 0), c->h);  /* exclusive */
    for (long yy = (long)y0; yy < (long)y1; yy++)
        for (long xx = (long)x0; xx < (long)x1; xx++) put(c, xx, yy, r, g, b);
}

void yq_draw_line(yq_canvas *c, double x0, double y0, double x1, double y1, int thickness, int dash,
                  uint8_t r, uint8_t g, uint8_t b)
{
    yq_paint_line(c, x0, y0, x1, y1, thickness, dash, r, g, b);
}

void yq_draw_disc(yq_canvas *c, double cx, double cy, double radius, int ring, uint8_t r, uint8_t g, uint8_t b)
{
    yq_paint_disc(c, cx, cy, radius, ring, r, g, b);
}

double yq_nice_step(double lo, double hi, int want, double *first)
{
    if (!(hi > lo) || !isfinite(hi - lo) || want < 1) {
        if (first) *first = isfinite(lo) ? lo : 0;
        return 1;
    }
    double raw = (hi - lo) / want, mag = pow(10, floor(log10(raw))), n = raw / mag;
    double step = (n < 1.5 ? 1 : n < 3 ? 2 : n < 7 ? 5 : 10) * mag;
    if (first) *first = ceil(lo / step - 1e-9) * step;
    return step;
}

/* Tick text with as many decimals as the step needs. */
static void tick_text(double v, double step, char *buf, size_t cap)
{
    int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    if (dec > 6) dec = 6;
    if (fabs(v) < step * 1e-6) v = 0;             /* no "-0.0" */
    snprintf(buf, cap, "%.*f", dec, v);
}

int yq_pareto_front(yq_chart_point *p, int n)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        p[i].front = 0;
        if (!isfinite(p[i].x) || !isfinite(p[i].y)) continue;
        int dominated = 0;
        for (int j = 0; j < n && !dominated; j++) {
            if (j == i || !isfinite(p[j].x) || !isfinite(p[j].y)) continue;
            dominated = p[j].x <= p[i].x && p[j].y >= p[i].y && (p[j].x < p[i].x || p[j].y > p[i].y);
        }
        if (!dominated) { p[i].front = 1; m++; }
    }
    return m;
}

/* ---- the scatter chart ---- */

typedef struct rect { double x0, y0, x1, y1; } rect;

static double overlap(rect a, rect b)
{
    double w = fmin(a.x1, b.x1) - fmax(a.x0, b.x0), h = fmin(a.y1, b.y1) - fmax(a.y0, b.y0);
    return w > 0 && h > 0 ? w * h : 0;
}

typedef struct layout {
    int w, h, px0, px1, py0, py1;
    double xlo, xhi, ylo, yhi;
} layout;

static double X(const layout *L, double x) { return L->px0 + (x - L->xlo) / (L->xhi - L->xlo) * (L->px1 - L->px0); }
static double Y(const layout *L, double y) { return L->py1 - (y - L->ylo) / (L->yhi - L->ylo) * (L->py1 - L->py0); }

static int by_x(const void *a, const void *b)
{
    const yq_chart_point *p = *(const yq_chart_point *const *)a, *q = *(const yq_chart_point *const *)b;
    return p->x < q->x ? -1 : p->x > q->x ? 1 : p->y < q->y ? -1 : p->y > q->y;
}

/* Where each point's label goes: a spot around it that is free (inside the plot, over
 * no point and no other label), nearest first; else the point gets a number and the
 * key.  Returns how many went to the key. */
typedef struct placed { rect r; int keyed, leader; } placed;

static int crosses(rect r, const double *seg, int n_seg)
{
    for (int k = 0; k < n_seg; k++) {
        double x0 = seg[4 * k], y0 = seg[4 * k + 1], x1 = seg[4 * k + 2], y1 = seg[4 * k + 3];
        if (yq_clip_segment(&x0, &y0, &x1, &y1, r.x0 - 2, r.x1 + 2, r.y0 - 2, r.y1 + 2)) return 1;
    }
    return 0;
}

/* seg: n_seg segments (x0, y0, x1, y1) in pixels that labels must not cross (the front). */
static int place_labels(const yq_chart_point *p, int n, const layout *L, int s, rect *busy, int n_busy,
                        const double *seg, int n_seg, placed *out, int *key_no)
{
    int keyed = 0;
    rect *taken = malloc(sizeof *taken * (size_t)(n + n_busy + 1));
    if (!taken) return 0;
    memcpy(taken, busy, sizeof *busy * (size_t)n_busy);
    int nt = n_busy;
    /* Front points first (their names matter most), then the rest, best y first. */
    int *order = malloc(sizeof *order * (size_t)(n ? n : 1));
    if (!order) { free(taken); return 0; }
    int m = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++)
            if (!!p[i].front == !pass) order[m++] = i;
    for (int k = 0; k < m; k++) {
        int i = order[k];
        out[i].keyed = out[i].leader = 0;
        out[i].r = (rect){ 0, 0, 0, 0 };
        key_no[i] = 0;
        if (!p[i].label || !*p[i].label || !isfinite(p[i].x) || !isfinite(p[i].y)) continue;
        double cx = X(L, p[i].x), cy = Y(L, p[i].y);
        int found = 0;
        for (int attempt = 0; attempt < 2 && !found; attempt++) {
            char num[16];
            const char *text = p[i].label;
            if (attempt == 1) { snprintf(num, sizeof num, "%d", keyed + 1); text = num; }
            int tw, th;
            yq_label_size(text, s, &tw, &th);
            static const double dirs[8][2] = { { 1, 0 }, { -1, 0 }, { 0, -1 }, { 0, 1 },
                                               { 1, -1 }, { 1, 1 }, { -1, -1 }, { -1, 1 } };
            for (int ring = 1; ring <= 4 && !found; ring++)
                for (int d = 0; d < 8 && !found; d++) {
                    double gap = 9.0 + (ring - 1) * 14.0;
                    double lx = cx + dirs[d][0] * gap - (dirs[d][0] < 0 ? tw : dirs[d][0] == 0 ? tw / 2.0 : 0);
                    double ly = cy + dirs[d][1] * gap - (dirs[d][1] < 0 ? th : dirs[d][1] == 0 ? th / 2.0 : 0);
                    rect r = { lx, ly, lx + tw, ly + th };
                    if (r.x0 < L->px0 + 2 || r.x1 > L->px1 - 2 || r.y0 < L->py0 + 2 || r.y1 > L->py1 - 2) continue;
                    int clash = 0;
                    for (int t = 0; t < nt && !clash; t++) clash = overlap(r, taken[t]) > 0;
                    if (clash || crosses(r, seg, n_seg)) continue;
                    found = 1;
                    out[i].r = r;
                    out[i].leader = ring > 1;
                    if (attempt == 1) { out[i].keyed = 1; key_no[i] = ++keyed; }
                }
        }
        if (!found) {                          /* nowhere free: the number, right of the point */
            char num[16];
            snprintf(num, sizeof num, "%d", keyed + 1);
            int tw, th;
            yq_label_size(num, s, &tw, &th);
            out[i].r = (rect){ cx + 9, cy - th / 2.0, cx + 9 + tw, cy + th / 2.0 };
            out[i].keyed = 1;
            key_no[i] = ++keyed;
        }
        taken[nt++] = out[i].r;
    }
    free(order);
    free(taken);
    return keyed;
}

#define GRID 228, 228, 228
#define AXIS 40, 40, 40
#define INK 30, 30, 30

yq_status yq_chart_scatter(const yq_chart_point *p, int n, const yq_scatter_opt *o, int w, int h,
                           yq_canvas *out, yq_error *err)
{
    if (w < 320 || h < 240) return yq_fail(err, YQ_ERR_INVALID_ARG, "chart %dx%d: at least 320x240", w, h);
    if (n < 0 || (n && !p)) return yq_fail(err, YQ_ERR_INVALID_ARG, "chart: no points array");
    yq_scatter_opt def = { 0 };
    if (!o) o = &def;
    const int ts = w >= 900 ? 2 : 1;               /* title and tick text scale */
    const int ls = 1;                              /* point labels */
    int cw, ch;
    yq_label_size("0", ts, &cw, &ch);

    /* Data ranges. */
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    int finite = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(p[i].x) || !isfinite(p[i].y)) continue;
        finite++;
        xmin = fmin(xmin, p[i].x);
        xmax = fmax(xmax, p[i].x);
        ymin = fmin(ymin, p[i].y);
        ymax = fmax(ymax, p[i].y);
    }
    if (o->has_ref && isfinite(o->ref_y)) { ymin = fmin(ymin, o->ref_y); ymax = fmax(ymax, o->ref_y); }
    if (!finite) { xmin = 0; xmax = 1; }
    if (!(ymax >= ymin)) { ymin = 0; ymax = 1; }
    double span = xmax - xmin, want = fmax(o->min_xspan, 0);
    if (span < want) { double c = (xmin + xmax) / 2; xmin = c - want / 2; xmax = c + want / 2; }
    if (!(xmax > xmin)) { double d = fmax(fabs(xmin) * 0.05, 1e-3); xmin -= d; xmax += d; }
    span = xmax - xmin;
    xmin -= 0.08 * span;
    xmax += 0.08 * span;
    if (xmin < 0 && finite && xmin + 0.08 * span >= 0) xmin = 0;   /* latency is never negative */
    if (ymin > 0 && ymin < 0.4 * ymax) ymin = 0;
    if (!(ymax > ymin)) { double d = fmax(fabs(ymax) * 0.1, 1e-3); ymin -= d; ymax += d; }
    double yspan = ymax - ymin;
    ymax += 0.08 * yspan;
    if (ymin != 0) ymin -= 0.05 * yspan;

    layout L = { .w = w, .h = h, .xlo = xmin, .xhi = xmax, .ylo = ymin, .yhi = ymax };
    double ystep0, yfirst;
    ystep0 = yq_nice_step(ymin, ymax, 8, &yfirst);
    int ytw = 0;
    for (double v = yfirst; v <= ymax + ystep0 * 1e-9; v += ystep0) {
        char t[32];
        int tw;
        tick_text(v, ystep0, t, sizeof t);
        yq_label_size(t, ts, &tw, NULL);
        if (tw > ytw) ytw = tw;
    }
    L.px0 = 12 + ch + 10 + ytw + 8;
    L.py0 = 12 + 2 * ch + 16;
    L.py1 = h - (12 + 2 * ch + 14);
    int key_w = 0;
    placed *pl = calloc((size_t)(n ? n : 1), sizeof *pl);
    int *key_no = calloc((size_t)(n ? n : 1), sizeof *key_no);
    rect *busy = malloc(sizeof *busy * (size_t)(n + 4));
    double *seg = malloc(sizeof *seg * 4 * (size_t)(n ? n : 1));
    int *fidx = malloc(sizeof *fidx * (size_t)(n ? n : 1));
    if (!pl || !key_no || !busy || !seg || !fidx) {
        free(pl); free(key_no); free(busy); free(seg); free(fidx);
        return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    }
    int keyed = 0;
    double ref_x = 0;
    for (int pass = 0; pass < 2; pass++) {
        L.px1 = w - 24 - key_w;
        if (L.px1 - L.px0 < 100 || L.py1 - L.py0 < 60) {
            free(pl); free(key_no); free(busy); free(seg); free(fidx);
            return yq_fail(err, YQ_ERR_INVALID_ARG, "chart %dx%d: too small for its axes", w, h);
        }
        int nb = 0;
        for (int i = 0; i < n; i++) {
            if (!isfinite(p[i].x) || !isfinite(p[i].y)) continue;
            double cx = X(&L, p[i].x), cy = Y(&L, p[i].y), rr = p[i].chosen ? 12 : 8;
            busy[nb++] = (rect){ cx - rr, cy - rr, cx + rr, cy + rr };
        }
        if (o->has_ref && isfinite(o->ref_y) && o->ref_label) {
            /* The reference's label: at the right end of its line, or the left when a point sits there. */
            int tw, th;
            yq_label_size(o->ref_label, ls, &tw, &th);
            double y = Y(&L, o->ref_y);
            rect r = { L.px1 - tw - 4, y - th - 2, L.px1, y + 2 };
            int hit = 0;
            for (int b = 0; b < nb && !hit; b++) hit = overlap(r, busy[b]) > 0;
            ref_x = hit ? L.px0 + 6 : L.px1 - tw - 4;
            busy[nb++] = (rect){ ref_x, y - th - 2, ref_x + tw + 4, y + 2 };
        }
        /* The front's segments, in pixels: labels keep off them. */
        int ns = 0;
        for (int i = 0; seg && i < n; i++)
            if (p[i].front && isfinite(p[i].x) && isfinite(p[i].y)) fidx[ns++] = i;
        for (int a = 1; a < ns; a++)               /* by x, then y */
            for (int b = a; b > 0 && (p[fidx[b]].x < p[fidx[b - 1]].x ||
                                      (p[fidx[b]].x == p[fidx[b - 1]].x && p[fidx[b]].y < p[fidx[b - 1]].y)); b--) {
                int t = fidx[b]; fidx[b] = fidx[b - 1]; fidx[b - 1] = t;
            }
        for (int k = 1; k < ns; k++) {
            seg[4 * (k - 1)] = X(&L, p[fidx[k - 1]].x);
            seg[4 * (k - 1) + 1] = Y(&L, p[fidx[k - 1]].y);
            seg[4 * (k - 1) + 2] = X(&L, p[fidx[k]].x);
            seg[4 * (k - 1) + 3] = Y(&L, p[fidx[k]].y);
        }
        int nseg = ns > 1 ? ns - 1 : 0;
        if (o->has_ref && isfinite(o->ref_y)) {     /* and off the reference line */
            double y = Y(&L, o->ref_y);
            seg[4 * nseg] = L.px0;
            seg[4 * nseg + 1] = y;
            seg[4 * nseg + 2] = L.px1;
            seg[4 * nseg + 3] = y;
            nseg++;
        }
        keyed = place_labels(p, n, &L, ls, busy, nb, seg, nseg, pl, key_no);
        if (!keyed || pass == 1) break;
        /* Room at the right for the key: "N  label" for the longest label. */
        for (int i = 0; i < n; i++) {
            if (!p[i].label) continue;
            char t[160];
            snprintf(t, sizeof t, "%d %s", n, p[i].label);
            int tw;
            yq_label_size(t, ls, &tw, NULL);
            if (tw + 20 > key_w) key_w = tw + 20;
        }
        if (key_w > w / 3) key_w = w / 3;
    }

    yq_status st = yq_canvas_new(w, h, 255, 255, 255, out, err);
    free(seg);
    free(fidx);
    if (st != YQ_OK) { free(pl); free(key_no); free(busy); return st; }
    yq_canvas *c = out;

    /* Grid and ticks. */
    double xfirst, xstep = yq_nice_step(L.xlo, L.xhi, 8, &xfirst);
    for (double v = xfirst; v <= L.xhi + xstep * 1e-9; v += xstep) {
        double x = X(&L, v);
        char t[32];
        int tw;
        yq_draw_line(c, x, L.py0, x, L.py1, 1, 0, GRID);
        yq_draw_line(c, x, L.py1, x, L.py1 + 5, 1, 0, AXIS);
        tick_text(v, xstep, t, sizeof t);
        yq_label_size(t, ts, &tw, NULL);
        yq_draw_text(c, (int)(x - tw / 2.0), L.py1 + 7, t, ts, 0, INK);
    }
    for (double v = yfirst; v <= L.yhi + ystep0 * 1e-9; v += ystep0) {
        double y = Y(&L, v);
        char t[32];
        int tw;
        yq_draw_line(c, L.px0, y, L.px1, y, 1, 0, GRID);
        yq_draw_line(c, L.px0 - 5, y, L.px0, y, 1, 0, AXIS);
        tick_text(v, ystep0, t, sizeof t);
        yq_label_size(t, ts, &tw, NULL);
        yq_draw_text(c, L.px0 - 8 - tw, (int)(y - ch / 2.0), t, ts, 0, INK);
    }
    yq_draw_line(c, L.px0, L.py1, L.px1, L.py1, 2, 0, AXIS);
    yq_draw_line(c, L.px0, L.py0, L.px0, L.py1, 2, 0, AXIS);
    if (o->xlabel) {
        int tw;
        yq_label_size(o->xlabel, ts, &tw, NULL);
        yq_draw_text(c, (L.px0 + L.px1 - tw) / 2, L.py1 + 7 + ch + 6, o->xlabel, ts, 0, INK);
    }
    if (o->ylabel) {
        int tw;
        yq_label_size(o->ylabel, ts, &tw, NULL);
        yq_draw_text(c, 12, (L.py0 + L.py1 - tw) / 2, o->ylabel, ts, 1, INK);
    }
    if (o->title) yq_draw_text(c, L.px0, 10, o->title, ts, 0, INK);

    /* Legend, one line under the title. */
    {
        int lx = L.px0, ly = 12 + ch + 6, lw, lh;
        yq_label_size("x", ls, &lw, &lh);
        int cy = ly + lh / 2;
        yq_draw_disc(c, lx + 6, cy, 6, 0, YQ_CHART_FRONT_RGB);
        yq_draw_line(c, lx - 2, cy, lx + 14, cy, 2, 0, YQ_CHART_FRONT_RGB);
        yq_draw_text(c, lx + 18, ly, "Pareto front", ls, 0, INK);
        lx += 18 + 13 * 6 + 16;
        yq_draw_disc(c, lx + 6, cy, 5, 0, YQ_CHART_OTHER_RGB);
        yq_draw_text(c, lx + 16, ly, "other points", ls, 0, INK);
        lx += 16 + 13 * 6 + 16;
        yq_draw_disc(c, lx + 8, cy, 9, 3, YQ_CHART_CHOSEN_RGB);
        yq_draw_text(c, lx + 22, ly, "chosen (best mAP on the front)", ls, 0, INK);
        lx += 22 + 31 * 6 + 16;
        if (o->has_ref) {
            yq_draw_line(c, lx, cy, lx + 22, cy, 1, 4, 90, 90, 90);
            yq_draw_text(c, lx + 28, ly, o->ref_label ? o->ref_label : "reference", ls, 0, INK);
        }
    }

    /* The reference line. */
    if (o->has_ref && isfinite(o->ref_y)) {
        double y = Y(&L, o->ref_y);
        yq_draw_line(c, L.px0, y, L.px1, y, 1, 5, 90, 90, 90);
        if (o->ref_label) {
            int tw, th;
            yq_label_size(o->ref_label, ls, &tw, &th);
            yq_draw_text(c, (int)ref_x, (int)(y - th - 1), o->ref_label, ls, 0, 90, 90, 90);
        }
    }

    /* The front, joined left to right. */
    const yq_chart_point **fr = malloc(sizeof *fr * (size_t)(n ? n : 1));
    int nf = 0;
    for (int i = 0; fr && i < n; i++)
        if (p[i].front && isfinite(p[i].x) && isfinite(p[i].y)) fr[nf++] = &p[i];
    if (fr) {
        qsort(fr, (size_t)nf, sizeof *fr, by_x);
        for (int k = 1; k < nf; k++)
            yq_draw_line(c, X(&L, fr[k - 1]->x), Y(&L, fr[k - 1]->y), X(&L, fr[k]->x), Y(&L, fr[k]->y), 2, 0,
                         YQ_CHART_FRONT_RGB);
    }
    free(fr);

    /* Labels (under the points), then the points. */
    for (int i = 0; i < n; i++) {
        if (!p[i].label || !*p[i].label || !isfinite(p[i].x) || !isfinite(p[i].y)) continue;
        char num[16];
        const char *text = p[i].label;
        if (pl[i].keyed) { snprintf(num, sizeof num, "%d", key_no[i]); text = num; }
        double cx = X(&L, p[i].x), cy = Y(&L, p[i].y);
        if (pl[i].leader) {
            double tx = fmin(fmax(cx, pl[i].r.x0), pl[i].r.x1), ty = fmin(fmax(cy, pl[i].r.y0), pl[i].r.y1);
            yq_draw_line(c, cx, cy, tx, ty, 1, 0, 150, 150, 150);
        }
        if (p[i].front) yq_draw_text(c, (int)pl[i].r.x0, (int)pl[i].r.y0, text, ls, 0, 150, 20, 20);
        else yq_draw_text(c, (int)pl[i].r.x0, (int)pl[i].r.y0, text, ls, 0, INK);
    }
    for (int pass = 0; pass < 2; pass++)            /* front points on top */
        for (int i = 0; i < n; i++) {
            if (!!p[i].front != pass || !isfinite(p[i].x) || !isfinite(p[i].y)) continue;
            double cx = X(&L, p[i].x), cy = Y(&L, p[i].y);
            if (p[i].front) {
                yq_draw_disc(c, cx, cy, 7, 0, YQ_CHART_FRONT_RGB);
            } else {
                yq_draw_disc(c, cx, cy, 6, 0, 255, 255, 255);
                yq_draw_disc(c, cx, cy, 5, 0, YQ_CHART_OTHER_RGB);
            }
            if (p[i].chosen) yq_draw_disc(c, cx, cy, 12, 3, YQ_CHART_CHOSEN_RGB);
        }

    /* The key, for points whose names found no free spot. */
    if (keyed) {
        int kx = L.px1 + 14, ky = L.py0, lh;
        yq_label_size("x", ls, NULL, &lh);
        yq_draw_text(c, kx, ky, "key:", ls, 0, INK);
        ky += lh + 2;
        for (int k = 1; k <= keyed; k++)
            for (int i = 0; i < n; i++)
                if (pl[i].keyed && key_no[i] == k) {
                    char t[200];
                    snprintf(t, sizeof t, "%d %s", k, p[i].label);
                    yq_draw_text(c, kx, ky, t, ls, 0, p[i].front ? 150 : 30, p[i].front ? 20 : 30, p[i].front ? 20 : 30);
                    ky += lh + 1;
                }
    }
    free(pl);
    free(key_no);
    free(busy);
    return YQ_OK;
}

/* ---- bar charts ---- */

static const uint8_t series_rgb[YQ_BARS_MAX_SERIES][3] = {
    { 255, 127, 14 }, { 31, 119, 180 }, { 44, 160, 44 }, { 148, 103, 189 },
};

yq_status yq_chart_bars(const char *const *row_label, int n_rows, const yq_bar_panel *panels, int n_panels,
                        int w, yq_canvas *out, yq_error *err)
{
    if (n_rows < 0 || n_rows > 4096 || n_panels < 1 || n_panels > 4 || !panels)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "bar chart: %d rows, %d panels (1..4096 rows, 1..4 panels)", n_rows, n_panels);
    for (int k = 0; k < n_panels; k++)
        if (panels[k].n_series < 1 || panels[k].n_series > YQ_BARS_MAX_SERIES || panels[k].first_color < 0)
            return yq_fail(err, YQ_ERR_INVALID_ARG, "bar chart: panel %d has %d series (1..%d) or a negative colour", k, panels[k].n_series,
                           YQ_BARS_MAX_SERIES);
    const int s = 1;
    int lw, lh;
    yq_label_size("x", s, &lw, &lh);
    int label_w = 0;
    for (int i = 0; i < n_rows; i++) {
        int tw;
        yq_label_size(row_label ? row_label[i] : "", s, &tw, NULL);
        if (tw > label_w) label_w = tw;
    }
    int max_series = 1;
    for (int k = 0; k < n_panels; k++) if (panels[k].n_series > max_series) max_series = panels[k].n_series;
    const int bar_h = 6, row_h = max_series * (bar_h + 1) + 5 > lh + 3 ? max_series * (bar_h + 1) + 5 : lh + 3;
    const int x0 = 10 + label_w + 10, gap = 30;
    int pw = (w - x0 - 20 - (n_panels - 1) * gap) / n_panels;
    if (pw < 120) return yq_fail(err, YQ_ERR_INVALID_ARG, "bar chart: %d px wide is too narrow for %d panels", w, n_panels);
    /* Legend entries wrap within their panel: count the lines first. */
    int legend_lines = 1;
    for (int k = 0; k < n_panels; k++) {
        int lines = 1, lx = 0;
        for (int j = 0; j < panels[k].n_series; j++) {
            int tw;
            yq_label_size(panels[k].series[j] ? panels[k].series[j] : "", s, &tw, NULL);
            if (lx > 0 && lx + 16 + tw > pw) { lines++; lx = 0; }
            lx += 16 + tw + 14;
        }
        if (lines > legend_lines) legend_lines = lines;
    }
    const int top = 12 + (1 + legend_lines) * (lh + 6) + 8, bottom = 2 * (lh + 4) + 16;
    int h = top + n_rows * row_h + bottom;
    yq_status st = yq_canvas_new(w, h, 255, 255, 255, out, err);
    if (st != YQ_OK) return st;
    yq_canvas *c = out;
    for (int i = 0; i < n_rows; i++) {
        int y = top + i * row_h;
        if (i % 2) yq_fill_rect(c, 4, y, w - 8, row_h, 246, 246, 246);
        if (row_label && row_label[i]) yq_draw_text(c, 10, y + (row_h - lh) / 2, row_label[i], s, 0, INK);
    }
    for (int k = 0; k < n_panels; k++) {
        const yq_bar_panel *P = &panels[k];
        int px0 = x0 + k * (pw + gap), px1 = px0 + pw, py0 = top, py1 = top + n_rows * row_h;
        double lo = 0, hi = 0;
        for (int j = 0; j < P->n_series; j++)
            for (int i = 0; P->values[j] && i < n_rows; i++) {
                double v = P->values[j][i];
                if (!isfinite(v)) continue;
                lo = fmin(lo, v);
                hi = fmax(hi, v);
            }
        if (!(hi > lo)) hi = lo + 1;
        double sp = hi - lo;
        if (lo < 0) lo -= 0.04 * sp;
        hi += 0.04 * sp;
        double first, step = yq_nice_step(lo, hi, 6, &first);
        layout L = { .px0 = px0, .px1 = px1, .xlo = lo, .xhi = hi };
        for (double v = first; v <= hi + step * 1e-9; v += step) {
            double x = X(&L, v);
            char t[32];
            int tw;
            yq_draw_line(c, x, py0, x, py1, 1, 0, GRID);
            yq_draw_line(c, x, py1, x, py1 + 4, 1, 0, AXIS);
            tick_text(v, step, t, sizeof t);
            yq_label_size(t, s, &tw, NULL);
            yq_draw_text(c, (int)(x - tw / 2.0), py1 + 6, t, s, 0, INK);
        }
        double zx = X(&L, 0);
        for (int i = 0; i < n_rows; i++) {
            int y = top + i * row_h + (row_h - P->n_series * (bar_h + 1)) / 2;
            for (int j = 0; j < P->n_series; j++) {
                double v = P->values[j] ? P->values[j][i] : (double)NAN;
                if (!isfinite(v)) continue;
                double x = X(&L, v);
                if (fabs(x - zx) < 1) x = zx + (v < 0 ? -1 : 1);   /* a zero still shows a sliver */
                const uint8_t *col = series_rgb[(P->first_color + j) % YQ_BARS_MAX_SERIES];
                yq_fill_rect(c, fmin(zx, x), y + j * (bar_h + 1), fabs(x - zx), bar_h, col[0], col[1], col[2]);
            }
        }
        yq_draw_line(c, zx, py0, zx, py1, 1, 0, AXIS);
        yq_draw_line(c, px0, py1, px1, py1, 1, 0, AXIS);
        if (P->title) yq_draw_text(c, px0, 10, P->title, s, 0, INK);
        int lx = px0, ly = 12 + lh + 6;
        for (int j = 0; j < P->n_series; j++) {
            const char *nm = P->series[j] ? P->series[j] : "";
            int tw;
            yq_label_size(nm, s, &tw, NULL);
            if (lx > px0 && lx + 16 + tw > px1) { lx = px0; ly += lh + 6; }
            const uint8_t *col = series_rgb[(P->first_color + j) % YQ_BARS_MAX_SERIES];
            yq_fill_rect(c, lx, ly + 1, 12, lh - 2, col[0], col[1], col[2]);
            yq_draw_text(c, lx + 16, ly, nm, s, 0, INK);
            lx += 16 + tw + 14;
        }
        if (P->xlabel) {
            int tw;
            yq_label_size(P->xlabel, s, &tw, NULL);
            yq_draw_text(c, (px0 + px1 - tw) / 2, py1 + 6 + lh + 6, P->xlabel, s, 0, INK);
        }
    }
    return YQ_OK;
}
