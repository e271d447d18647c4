/* datasets/draw: box clipping without stray writes, labels, class colours, PNG output. */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <png.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/test.h"
#include "datasets/draw.h"

/* A canvas whose pixels sit between two guard zones, so any write outside w*h*3 shows. */
#define GUARD 256
#define GUARD_BYTE 0xA5
#define BG 0x10

typedef struct guarded { yq_canvas cv; uint8_t *mem; size_t n; } guarded;

static guarded guarded_make(int w, int h)
{
    guarded g;
    g.n = (size_t)w * (size_t)h * 3;
    g.mem = malloc(g.n + 2 * GUARD);
    if (!g.mem) abort();
    memset(g.mem, GUARD_BYTE, g.n + 2 * GUARD);
    memset(g.mem + GUARD, BG, g.n);
    g.cv.w = w;
    g.cv.h = h;
    g.cv.rgb = g.mem + GUARD;
    return g;
}

static int guards_intact(const guarded *g)
{
    for (size_t i = 0; i < GUARD; i++)
        if (g->mem[i] != GUARD_BYTE || g->mem[GUARD + g->n + i] != GUARD_BYTE) return 0;
    return 1;
}

static void guarded_free(guarded *g) { free(g->mem); g->mem = NULL; }

static const uint8_t *px(const yq_canvas *c, int x, int y)
{
    return c->rgb + ((size_t)y * (size_t)c->w + (size_t)x) * 3;
}

static int is_rgb(const yq_canvas *c, int x, int y, uint8_t r, uint8_t g, uint8_t b)
{
    const uint8_t *p = px(c, x, y);
    return p[0] == r && p[1] == g && p[2] == b;
}

static int is_bg(const yq_canvas *c, int x, int y) { return is_rgb(c, x, y, BG, BG, BG); }

static int count_painted(const yq_canvas *c)
{
    int n = 0;
    for (int y = 0; y < c->h; y++)
        for (int x = 0; x < c->w; x++) n += !is_bg(c, x, y);
    return n;
}

/* The expected outline, computed the slow way: inside the outer rectangle and not
 * strictly inside the inner one.  Bounds are inclusive pixel indices. */
static int in_outline(int x, int y, int l, int t, int r, int b, int tk)
{
    if (x < l || x > r || y < t || y > b) return 0;
    return x < l + tk || x > r - tk || y < t + tk || y > b - tk;
}

static void check_outline(const yq_canvas *c, int l, int t, int r, int b, int tk)
{
    for (int y = 0; y < c->h; y++)
        for (int x = 0; x < c->w; x++) {
            int want = in_outline(x, y, l, t, r, b, tk);
            CHECKF(want == !is_bg(c, x, y), "pixel (%d,%d): want %s, box [%d,%d]-[%d,%d] t%d",
                   x, y, want ? "drawn" : "background", l, t, r, b, tk);
        }
}

static void t_canvas_from_chw(void)
{
    /* 2x1 RGB: R plane, G plane, B plane. */
    float chw[6] = { 0.0f, 1.0f,  0.5f, -3.0f,  NAN, 7.0f };
    yq_canvas cv;
    yq_error err;
    CHECK(yq_canvas_from_chw(chw, 3, 2, 1, &cv, &err) == YQ_OK);
    CHECK(cv.w == 2 && cv.h == 1);
    CHECK(cv.rgb[0] == 0 && cv.rgb[1] == 128 && cv.rgb[2] == 0);     /* 0.5*255 rounds up */
    CHECK(cv.rgb[3] == 255 && cv.rgb[4] == 0 && cv.rgb[5] == 255);   /* clamped */
    yq_canvas_free(&cv);
    CHECK(cv.rgb == NULL && cv.w == 0);
    yq_canvas_free(&cv);                                              /* twice is fine */
    yq_canvas_free(NULL);

    float grey[2] = { 0.2f, 0.9f };
    CHECK(yq_canvas_from_chw(grey, 1, 1, 2, &cv, &err) == YQ_OK);
    CHECK(cv.rgb[0] == 51 && cv.rgb[1] == 51 && cv.rgb[2] == 51);
    CHECK(cv.rgb[3] == 230 && cv.rgb[4] == 230 && cv.rgb[5] == 230);
    yq_canvas_free(&cv);

    yq_canvas untouched = { 7, 7, NULL };
    CHECK(yq_canvas_from_chw(chw, 2, 1, 1, &untouched, &err) == YQ_ERR_INVALID_ARG);
    CHECK(strstr(err.msg, "2 channels"));
    CHECK(yq_canvas_from_chw(chw, 3, 0, 1, &untouched, &err) == YQ_ERR_INVALID_ARG);
    CHECK(yq_canvas_from_chw(NULL, 3, 1, 1, &untouched, &err) == YQ_ERR_INVALID_ARG);
    CHECK(untouched.w == 7 && untouched.rgb == NULL);
}

static void t_box_inside(void)
{
    guarded g = guarded_make(20, 16);
    yq_draw_box(&g.cv, 3.0f, 2.0f, 10.0f, 8.0f, 1, 200, 10, 20);
    check_outline(&g.cv, 3, 2, 12, 9, 1);
    CHECK(is_rgb(&g.cv, 3, 2, 200, 10, 20));
    memset(g.cv.rgb, BG, g.n);
    yq_draw_box(&g.cv, 3.4f, 1.6f, 10.0f, 8.0f, 3, 1, 2, 3);   /* rounds to the same box */
    check_outline(&g.cv, 3, 2, 12, 9, 3);
    memset(g.cv.rgb, BG, g.n);
    yq_draw_box(&g.cv, 13.0f, 10.0f, -10.0f, -8.0f, 2, 1, 2, 3); /* negative size: same box */
    check_outline(&g.cv, 3, 2, 12, 9, 2);
    memset(g.cv.rgb, BG, g.n);
    yq_draw_box(&g.cv, 4.0f, 4.0f, 0.0f, 5.0f, 1, 1, 2, 3);    /* zero width: a line */
    check_outline(&g.cv, 4, 4, 4, 8, 1);
    CHECK(guards_intact(&g));
    guarded_free(&g);
}

/* A box hanging over each edge in turn: the parts inside are drawn, the edges outside
 * are not drawn on the border row or column. */
static void t_box_clip_edges(void)
{
    const int W = 17, H = 13;
    struct { float x, y, w, h; int l, t, r, b; } cases[] = {
        { -5.0f,  3.0f, 10.0f,  6.0f,  -5,  3,  4,  8 },   /* left */
        { 10.0f,  3.0f, 20.0f,  6.0f,  10,  3, 29,  8 },   /* right */
        {  4.0f, -4.0f,  6.0f,  8.0f,   4, -4,  9,  3 },   /* top */
        {  4.0f,  9.0f,  6.0f, 10.0f,   4,  9,  9, 18 },   /* bottom */
        { -3.0f, -3.0f, 30.0f, 30.0f,  -3, -3, 26, 26 },   /* all sides: nothing visible */
        { -1.0f, -1.0f, 19.0f, 15.0f,  -1, -1, 17, 13 },   /* one pixel out each side */
        {  0.0f,  0.0f, 17.0f, 13.0f,   0,  0, 16, 12 },   /* exactly the canvas */
        { -9.0f,  2.0f,  4.0f,  4.0f,  -9,  2, -6,  5 },   /* wholly outside */
        {  2.0f, 20.0f,  4.0f,  4.0f,   2, 20,  5, 23 },
        /* only the far edge lands on the border pixel */
        { -9.0f,  2.0f, 10.0f,  4.0f,  -9,  2,  0,  5 },   /* right edge on column 0 */
        { 16.0f,  2.0f,  9.0f,  4.0f,  16,  2, 24,  5 },   /* left edge on column W-1 */
        {  2.0f, -9.0f,  4.0f, 10.0f,   2, -9,  5,  0 },   /* bottom edge on row 0 */
        {  2.0f, 12.0f,  4.0f,  9.0f,   2, 12,  5, 20 },   /* top edge on row H-1 */
    };
    for (int tk = 1; tk <= 4; tk++) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            guarded g = guarded_make(W, H);
            yq_draw_box(&g.cv, cases[i].x, cases[i].y, cases[i].w, cases[i].h, tk, 9, 99, 199);
            check_outline(&g.cv, cases[i].l, cases[i].t, cases[i].r, cases[i].b, tk);
            CHECKF(guards_intact(&g), "case %zu thickness %d wrote outside", i, tk);
            guarded_free(&g);
        }
    }
    /* The box fully outside on the left edge leaves column 0 alone. */
    guarded g = guarded_make(W, H);
    yq_draw_box(&g.cv, -30.0f, 2.0f, 25.0f, 5.0f, 3, 9, 99, 199);
    CHECK(count_painted(&g.cv) == 0);
    guarded_free(&g);
}

static void t_box_absurd(void)
{
    const float v[] = { 0.0f, 1.0f, -1.0f, 0.5f, 16.0f, 17.0f, -1e30f, 1e30f, FLT_MAX, -FLT_MAX,
                        INFINITY, -INFINITY, NAN, 2147483648.0f, -2147483904.0f, 1e-40f };
    const int tks[] = { 0, 1, 2, -5, 1000, INT_MAX, INT_MIN };
    const int n = (int)(sizeof v / sizeof v[0]);
    int sizes[][2] = { { 16, 12 }, { 1, 1 }, { 1, 9 }, { 9, 1 } };
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        guarded g = guarded_make(sizes[si][0], sizes[si][1]);
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++)
                for (size_t t = 0; t < sizeof tks / sizeof tks[0]; t++) {
                    /* every value in each position, others varied with it */
                    yq_draw_box(&g.cv, v[a], v[b], v[(a + b) % n], v[(a * 7 + b) % n], tks[t], 1, 2, 3);
                    yq_draw_box(&g.cv, v[(a * 3 + b) % n], v[(a + 5 * b) % n], v[a], v[b], tks[t], 4, 5, 6);
                }
        CHECKF(guards_intact(&g), "canvas %dx%d: a write outside the pixels", sizes[si][0], sizes[si][1]);
        guarded_free(&g);
    }

    /* NaN anywhere draws nothing; infinite extents draw the visible edges only. */
    guarded g = guarded_make(16, 12);
    yq_draw_box(&g.cv, NAN, 1, 5, 5, 1, 1, 2, 3);
    yq_draw_box(&g.cv, 1, 1, 5, NAN, 1, 1, 2, 3);
    yq_draw_box(&g.cv, INFINITY, 1, -INFINITY, 5, 1, 1, 2, 3);   /* inf - inf */
    CHECK(count_painted(&g.cv) == 0);
    yq_draw_box(&g.cv, 2, 3, INFINITY, 4, 1, 1, 2, 3);           /* open to the right */
    check_outline(&g.cv, 2, 3, 1000, 6, 1);
    memset(g.cv.rgb, BG, g.n);
    yq_draw_box(&g.cv, -FLT_MAX, -FLT_MAX, FLT_MAX, FLT_MAX, INT_MAX, 1, 2, 3);
    CHECK(count_painted(&g.cv) == 0);                            /* ends at 0,0 exclusive */
    yq_draw_box(&g.cv, 2, 2, 6, 6, INT_MAX, 1, 2, 3);            /* thicker than the box: filled */
    check_outline(&g.cv, 2, 2, 7, 7, 100);
    CHECK(guards_intact(&g));
    guarded_free(&g);

    /* Degenerate canvases are ignored, not dereferenced. */
    yq_canvas empty = { 0, 0, NULL };
    yq_draw_box(&empty, 0, 0, 5, 5, 1, 1, 2, 3);
    yq_draw_box(NULL, 0, 0, 5, 5, 1, 1, 2, 3);
    yq_draw_label(&empty, 0, 0, "x", 1, 1, 2, 3);
    yq_draw_label(NULL, 0, 0, "x", 1, 1, 2, 3);
}

/* Finds the label's rectangle: the bounding box of pixels that are not background. */
static void painted_bounds(const yq_canvas *c, int *x0, int *y0, int *x1, int *y1)
{
    *x0 = c->w; *y0 = c->h; *x1 = -1; *y1 = -1;
    for (int y = 0; y < c->h; y++)
        for (int x = 0; x < c->w; x++)
            if (!is_bg(c, x, y)) {
                if (x < *x0) *x0 = x;
                if (y < *y0) *y0 = y;
                if (x > *x1) *x1 = x;
                if (y > *y1) *y1 = y;
            }
}

static void t_label_renders(void)
{
    int lw, lh;
    yq_label_size("dog 94%", 2, &lw, &lh);
    CHECK(lw > 0 && lh > 0);
    guarded g = guarded_make(200, 100);

    /* Above the box's corner (30, 50), dark colour: white text. */
    yq_draw_label(&g.cv, 30, 50, "dog 94%", 2, 20, 40, 160);
    int x0, y0, x1, y1;
    painted_bounds(&g.cv, &x0, &y0, &x1, &y1);
    CHECKF(x0 == 30 && y1 == 49 && x1 - x0 + 1 == lw && y1 - y0 + 1 == lh,
           "label at [%d,%d]-[%d,%d], size %dx%d", x0, y0, x1, y1, lw, lh);
    /* Anti-aliased text: every pixel is the fill colour, the text colour (white here) or a
     * blend of the two, each channel between them. */
    int fill = 0, text = 0, blended = 0, other = 0;
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++) {
            const uint8_t *p = g.cv.rgb + ((size_t)y * 200 + (size_t)x) * 3;
            if (is_rgb(&g.cv, x, y, 20, 40, 160)) fill++;
            else if (is_rgb(&g.cv, x, y, 255, 255, 255)) text++;
            else if (p[0] >= 20 && p[1] >= 40 && p[2] >= 160) blended++;
            else other++;
        }
    CHECKF(text > 30 && blended > 0 && fill > text + blended && other == 0, "fill %d text %d blended %d other %d",
           fill, text, blended, other);
    CHECK(count_painted(&g.cv) == lw * lh);           /* nothing outside its rectangle */
    /* A margin of fill colour above and below the text. */
    for (int x = x0; x <= x1; x++)
        CHECK(is_rgb(&g.cv, x, y0, 20, 40, 160) && is_rgb(&g.cv, x, y1, 20, 40, 160));

    /* Light colour: dark text, no white. */
    memset(g.cv.rgb, BG, g.n);
    yq_draw_label(&g.cv, 30, 50, "A", 1, 250, 230, 40);
    int dark = 0, white = 0;
    for (int y = 0; y < g.cv.h; y++)
        for (int x = 0; x < g.cv.w; x++) {
            const uint8_t *p = g.cv.rgb + ((size_t)y * 200 + (size_t)x) * 3;
            dark += !is_bg(&g.cv, x, y) && p[0] < 128 && p[1] < 128 && p[2] < 128;
            white += is_rgb(&g.cv, x, y, 255, 255, 255);
        }
    CHECKF(dark > 5 && white == 0, "dark %d white %d", dark, white);

    /* The size follows the scale: twice the scale, about twice the text. */
    int w1, h1, w3, h3;
    yq_label_size("person 88%", 1, &w1, &h1);
    yq_label_size("person 88%", 3, &w3, &h3);
    CHECKF(w3 > 2 * w1 && w3 < 4 * w1 && h3 > 2 * h1 && h3 < 4 * h1, "scale 1: %dx%d, scale 3: %dx%d", w1, h1, w3, h3);
    /* Every label of one scale is as tall, whatever its letters. */
    int wa, ha, wb, hb;
    yq_label_size("aaa", 2, &wa, &ha);
    yq_label_size("Tg|", 2, &wb, &hb);
    CHECK(ha == hb && wa > 0 && wb > 0);

    /* No room above (box at the top edge): the label goes inside, below y. */
    memset(g.cv.rgb, BG, g.n);
    yq_draw_label(&g.cv, 10, 3, "bicycle 86%", 1, 200, 0, 0);
    painted_bounds(&g.cv, &x0, &y0, &x1, &y1);
    yq_label_size("bicycle 86%", 1, &lw, &lh);
    CHECK(x0 == 10 && y0 == 3 && y1 == 3 + lh - 1);

    /* Near the right edge: shifted left to stay whole. */
    memset(g.cv.rgb, BG, g.n);
    yq_draw_label(&g.cv, 195, 40, "person", 1, 0, 128, 0);
    painted_bounds(&g.cv, &x0, &y0, &x1, &y1);
    yq_label_size("person", 1, &lw, &lh);
    CHECK(x1 == 199 && x0 == 200 - lw);

    /* Control bytes and bytes that are not UTF-8 draw as '?', like '?' itself. */
    memset(g.cv.rgb, BG, g.n);
    yq_draw_label(&g.cv, 10, 40, "?", 1, 0, 0, 0);
    uint8_t *copy = malloc(g.n);
    memcpy(copy, g.cv.rgb, g.n);
    memset(g.cv.rgb, BG, g.n);
    yq_draw_label(&g.cv, 10, 40, "\x01", 1, 0, 0, 0);
    CHECK(memcmp(copy, g.cv.rgb, g.n) == 0);
    memset(g.cv.rgb, BG, g.n);
    yq_draw_label(&g.cv, 10, 40, "\xe9", 1, 0, 0, 0);      /* not UTF-8 */
    CHECK(memcmp(copy, g.cv.rgb, g.n) == 0);
    /* UTF-8 is text: U+00E9 draws as itself, not as '?' */
    memset(g.cv.rgb, BG, g.n);
    yq_draw_label(&g.cv, 10, 40, "\xc3\xa9", 1, 0, 0, 0);
    CHECK(memcmp(copy, g.cv.rgb, g.n) != 0);
    free(copy);
    CHECK(guards_intact(&g));
    guarded_free(&g);
}

static void t_label_absurd(void)
{
    static char longtext[5000];
    memset(longtext, 'W', sizeof longtext - 1);
    const int xs[] = { INT_MIN, -100000, -5, 0, 3, 30, 31, 32, 100000, INT_MAX };
    const int scales[] = { INT_MIN, -1, 0, 1, 3, 64, 65, INT_MAX };
    const char *texts[] = { "", "a", "dog 94%", longtext };
    int sizes[][2] = { { 32, 24 }, { 1, 1 }, { 3, 40 } };
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        guarded g = guarded_make(sizes[si][0], sizes[si][1]);
        for (size_t a = 0; a < sizeof xs / sizeof xs[0]; a++)
            for (size_t b = 0; b < sizeof xs / sizeof xs[0]; b++)
                for (size_t s = 0; s < sizeof scales / sizeof scales[0]; s++)
                    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++)
                        yq_draw_label(&g.cv, xs[a], xs[b], texts[t], scales[s], 1, 2, 3);
        yq_draw_label(&g.cv, 0, 0, NULL, 1, 1, 2, 3);
        CHECKF(guards_intact(&g), "canvas %dx%d: a write outside the pixels", sizes[si][0], sizes[si][1]);
        guarded_free(&g);
    }
    guarded g = guarded_make(32, 24);
    yq_draw_label(&g.cv, 5, 5, "", 2, 1, 2, 3);
    CHECK(count_painted(&g.cv) == 0);
    guarded_free(&g);
}

/* Label placement: crowded boxes get labels that cover none of the others, every one on
 * the canvas; the first goes just above its box; a label with no room left covers one
 * and is counted; absurd boxes and oversized labels stay on the canvas. */
static void check_placed(const int *lx, const int *ly, const int *lw, const int *lh, int n, int cw, int ch, int *overlap)
{
    *overlap = 0;
    for (int i = 0; i < n; i++) {
        CHECKF(lx[i] >= 0 && ly[i] >= 0 && (lw[i] > cw || lx[i] + lw[i] <= cw) && (lh[i] > ch || ly[i] + lh[i] <= ch),
               "label %d at (%d, %d) size %dx%d off a %dx%d canvas", i, lx[i], ly[i], lw[i], lh[i], cw, ch);
        for (int k = 0; k < i; k++)
            *overlap += lx[i] < lx[k] + lw[k] && lx[k] < lx[i] + lw[i] && ly[i] < ly[k] + lh[k] && ly[k] < ly[i] + lh[i];
    }
}

static void t_label_place(void)
{
    enum { N = 6 };
    float box[4 * N];
    int lw[N], lh[N], lx[N], ly[N], ov;
    for (int i = 0; i < N; i++) {            /* six boxes nearly on top of each other */
        box[4 * i] = 50 + (float)i, box[4 * i + 1] = 40, box[4 * i + 2] = 60, box[4 * i + 3] = 40;
        yq_label_size("person 99%", 1, &lw[i], &lh[i]);
    }
    int covered = yq_label_place(box, lw, lh, N, 300, 200, lx, ly);
    check_placed(lx, ly, lw, lh, N, 300, 200, &ov);
    CHECKF(covered == 0 && ov == 0, "%d covered, %d overlapping pairs", covered, ov);
    CHECKF(lx[0] == 50 && ly[0] == 40 - lh[0], "first label at (%d, %d)", lx[0], ly[0]);
    CHECK(ly[1] == 40);                      /* the second just inside its box's top */

    enum { M = 40 };                         /* more labels than a 60 x 30 canvas holds */
    float b2[4 * M];
    int w2[M], h2[M], x2[M], y2[M];
    for (int i = 0; i < M; i++) {
        b2[4 * i] = (float)(i % 7) * 8, b2[4 * i + 1] = (float)(i % 5) * 6, b2[4 * i + 2] = 10, b2[4 * i + 3] = 8;
        yq_label_size("dog 50%", 1, &w2[i], &h2[i]);
    }
    covered = yq_label_place(b2, w2, h2, M, 60, 30, x2, y2);
    check_placed(x2, y2, w2, h2, M, 60, 30, &ov);
    CHECKF(covered > 0 && ov > 0, "%d covered, %d overlaps: a full canvas must overlap", covered, ov);

    /* NaN and huge boxes, a label wider than the canvas */
    float b3[8] = { NAN, 1e30f, -INFINITY, 5, 1e9f, -1e9f, 3, 3 };
    int w3[2] = { 500, 20 }, h3[2] = { 10, 10 }, x3[2], y3[2];
    yq_label_place(b3, w3, h3, 2, 100, 50, x3, y3);
    check_placed(x3, y3, w3, h3, 2, 100, 50, &ov);
    CHECK(x3[0] == 0);
    int s, t;
    yq_label_style(768, 576, &s, &t);
    CHECK(s == 2 && t == 2);
    yq_label_style(4000, 3000, &s, &t);
    CHECK(s == 10 && t == 10);
    yq_label_style(100, 80, &s, &t);
    CHECK(s == 1 && t == 2);
}

static void t_class_color(void)
{
    uint8_t c[80][3];
    for (int i = 0; i < 80; i++) {
        yq_class_color(i, c[i]);
        uint8_t again[3];
        yq_class_color(i, again);
        CHECK(memcmp(c[i], again, 3) == 0);
    }
    for (int i = 0; i < 80; i++)
        for (int j = i + 1; j < 80; j++) {
            int d = abs(c[i][0] - c[j][0]) + abs(c[i][1] - c[j][1]) + abs(c[i][2] - c[j][2]);
            CHECKF(d >= 6, "classes %d and %d: %d,%d,%d vs %d,%d,%d", i, j,
                   c[i][0], c[i][1], c[i][2], c[j][0], c[j][1], c[j][2]);
        }
    /* Neighbours are far apart, so adjacent classes in one image are easy to tell. */
    for (int i = 0; i + 1 < 80; i++) {
        int d = abs(c[i][0] - c[i + 1][0]) + abs(c[i][1] - c[i + 1][1]) + abs(c[i][2] - c[i + 1][2]);
        CHECKF(d >= 100, "classes %d and %d too alike (%d)", i, i + 1, d);
    }
    uint8_t neg[3];
    yq_class_color(-1, neg);
    yq_class_color(INT_MIN, neg);
}

/* --- PNG -------------------------------------------------------------------- */

static char tmpdir_[64];

static const char *scratch_dir(void)
{
    if (!tmpdir_[0]) {
        snprintf(tmpdir_, sizeof tmpdir_, "/tmp/yq_test_draw_XXXXXX");
        if (!mkdtemp(tmpdir_)) abort();
    }
    return tmpdir_;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Reads an 8-bit RGB PNG with libpng; returns 0 on success, fills w, h, a malloc'd rgb. */
static int png_read_rgb(const char *path, int *w, int *h, uint8_t **rgb)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    uint8_t *volatile buf = NULL;
    if (!png || !info || setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        fclose(f);
        free(buf);
        return -1;
    }
    png_init_io(png, f);
    png_read_info(png, info);
    if (png_get_bit_depth(png, info) != 8 || png_get_color_type(png, info) != PNG_COLOR_TYPE_RGB)
        png_error(png, "not 8-bit RGB");
    int pw = (int)png_get_image_width(png, info), ph = (int)png_get_image_height(png, info);
    buf = malloc((size_t)pw * (size_t)ph * 3);
    if (!buf) png_error(png, "out of memory");
    for (int y = 0; y < ph; y++) png_read_row(png, buf + (size_t)y * (size_t)pw * 3, NULL);
    png_read_end(png, NULL);
    png_destroy_read_struct(&png, &info, NULL);
    fclose(f);
    *w = pw;
    *h = ph;
    *rgb = buf;
    return 0;
}

static void t_png_roundtrip(void)
{
    const int W = 37, H = 23;
    yq_canvas cv = { W, H, malloc((size_t)W * H * 3) };
    CHECK(cv.rgb);
    uint32_t s = 12345;   /* every byte value, in no pattern a filter would hide */
    for (int i = 0; i < W * H * 3; i++) {
        s = s * 1664525u + 1013904223u;
        cv.rgb[i] = (uint8_t)(s >> 24);
    }
    cv.rgb[0] = 0;
    cv.rgb[1] = 255;
    yq_draw_box(&cv, 2, 2, 20, 10, 2, 255, 0, 0);
    yq_draw_label(&cv, 2, 2, "ok", 1, 0, 0, 255);

    char path[128], tmp[160];
    snprintf(path, sizeof path, "%s/out.png", scratch_dir());
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    yq_error err;
    CHECKF(yq_png_write(path, &cv, &err) == YQ_OK, "%s", err.msg);
    CHECK(exists(path) && !exists(tmp));
    int w = 0, h = 0;
    uint8_t *back = NULL;
    CHECK(png_read_rgb(path, &w, &h, &back) == 0);
    CHECK(w == W && h == H);
    CHECK(memcmp(back, cv.rgb, (size_t)W * H * 3) == 0);
    free(back);

    /* Overwriting an existing file works (rename replaces it). */
    cv.rgb[5] ^= 0xff;
    CHECKF(yq_png_write(path, &cv, &err) == YQ_OK, "%s", err.msg);
    CHECK(png_read_rgb(path, &w, &h, &back) == 0);
    CHECK(memcmp(back, cv.rgb, (size_t)W * H * 3) == 0);
    free(back);
    free(cv.rgb);
    remove(path);
}

static void t_png_errors(void)
{
    uint8_t pix[3 * 4] = { 0 };
    yq_canvas cv = { 2, 2, pix };
    char path[160], tmp[192];
    snprintf(path, sizeof path, "%s/no/such/dir/out.png", scratch_dir());
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    yq_error err = { YQ_OK, "" };
    CHECK(yq_png_write(path, &cv, &err) == YQ_ERR_IO);
    CHECK(err.code == YQ_ERR_IO);
    CHECKF(strstr(err.msg, path) != NULL, "message does not name the path: %s", err.msg);
    CHECK(!exists(path) && !exists(tmp));

    /* The output is a directory: the temp file is written, the rename fails and is cleaned up. */
    char dir[160], dirtmp[192];
    snprintf(dir, sizeof dir, "%s/adir", scratch_dir());
    snprintf(dirtmp, sizeof dirtmp, "%s.tmp", dir);
    CHECK(mkdir(dir, 0700) == 0);
    CHECK(yq_png_write(dir, &cv, &err) == YQ_ERR_IO);
    CHECK(strstr(err.msg, dir) != NULL);
    CHECK(!exists(dirtmp));
    rmdir(dir);

    yq_canvas empty = { 0, 0, NULL };
    snprintf(path, sizeof path, "%s/empty.png", scratch_dir());
    CHECK(yq_png_write(path, &empty, &err) == YQ_ERR_INVALID_ARG);
    CHECK(strstr(err.msg, path) != NULL);
    CHECK(!exists(path));
    CHECK(yq_png_write(NULL, &cv, &err) == YQ_ERR_INVALID_ARG);
}

int main(void)
{
    TEST(t_canvas_from_chw);
    TEST(t_box_inside);
    TEST(t_box_clip_edges);
    TEST(t_box_absurd);
    TEST(t_label_renders);
    TEST(t_label_absurd);
    TEST(t_label_place);
    TEST(t_class_color);
    TEST(t_png_roundtrip);
    TEST(t_png_errors);
    if (tmpdir_[0]) rmdir(tmpdir_);
    return test_done();
}
