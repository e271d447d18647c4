/* datasets/chart: the Pareto front, axis ticks, drawing that never writes outside the
 * canvas, and the two report charts (points in their colours, labels, bars). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/test.h"
#include "datasets/chart.h"

#define GUARD 512
#define GUARD_BYTE 0x5A

typedef struct guarded { yq_canvas cv; uint8_t *mem; size_t n; } guarded;

static guarded guarded_make(int w, int h)
{
    guarded g;
    g.n = (size_t)w * (size_t)h * 3;
    g.mem = malloc(g.n + 2 * GUARD);
    if (!g.mem) abort();
    memset(g.mem, GUARD_BYTE, g.n + 2 * GUARD);
    memset(g.mem + GUARD, 255, g.n);
    g.cv = (yq_canvas){ w, h, g.mem + GUARD };
    return g;
}

static int guards_intact(const guarded *g)
{
    for (size_t i = 0; i < GUARD; i++)
        if (g->mem[i] != GUARD_BYTE || g->mem[GUARD + g->n + i] != GUARD_BYTE) return 0;
    return 1;
}

static long count_rgb(const yq_canvas *c, int r, int g, int b)
{
    long n = 0;
    for (size_t i = 0; i < (size_t)c->w * (size_t)c->h; i++)
        n += c->rgb[3 * i] == r && c->rgb[3 * i + 1] == g && c->rgb[3 * i + 2] == b;
    return n;
}

static long count_not_white(const yq_canvas *c, int x0, int y0, int x1, int y1)
{
    long n = 0;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) {
            const uint8_t *p = c->rgb + ((size_t)y * (size_t)c->w + (size_t)x) * 3;
            n += p[0] != 255 || p[1] != 255 || p[2] != 255;
        }
    return n;
}

static void t_pareto_front(void)
{
    /* x = latency (lower better), y = accuracy (higher better). */
    yq_chart_point p[] = {
        { .x = 10, .y = 5 },   /* front: fastest */
        { .x = 20, .y = 9 },   /* front */
        { .x = 20, .y = 8 },   /* dominated by 1 (same x, lower y) */
        { .x = 30, .y = 9 },   /* dominated by 1 (same y, slower) */
        { .x = 40, .y = 12 },  /* front: most accurate */
        { .x = 15, .y = 4 },   /* dominated by 0 */
        { .x = 40, .y = 12 },  /* equal to 4: both on the front */
        { .x = NAN, .y = 99 }, /* never on the front, and dominates nothing */
        { .x = 5, .y = INFINITY },
    };
    int n = (int)(sizeof p / sizeof *p);
    int m = yq_pareto_front(p, n);
    int want[] = { 1, 1, 0, 0, 1, 0, 1, 0, 0 };
    for (int i = 0; i < n; i++) CHECKF(p[i].front == want[i], "point %d: front %d, want %d", i, p[i].front, want[i]);
    CHECK(m == 4);
    CHECK(yq_pareto_front(p, 0) == 0);
    yq_chart_point one = { .x = 1, .y = 1, .front = 0 };
    CHECK(yq_pareto_front(&one, 1) == 1 && one.front);
}

static void t_nice_step(void)
{
    double first;
    CHECK(yq_nice_step(0, 10, 5, &first) == 2 && first == 0);
    CHECK(fabs(yq_nice_step(160, 213, 8, &first) - 5) < 1e-12 && first == 160);
    CHECK(fabs(yq_nice_step(0.013, 0.071, 6, &first) - 0.01) < 1e-12 && fabs(first - 0.02) < 1e-12);
    CHECK(yq_nice_step(-3.2, 7.9, 5, &first) == 2 && first == -2);
    /* Degenerate ranges answer a step of 1, never 0 or NaN (the chart loops on it). */
    CHECK(yq_nice_step(5, 5, 5, &first) == 1);
    CHECK(yq_nice_step(NAN, 1, 5, &first) == 1);
    CHECK(yq_nice_step(0, INFINITY, 5, &first) == 1);
}

static void t_draw_clipped(void)
{
    guarded g = guarded_make(37, 23);
    static const double bad[] = { -1e300, -1e9, -5, 0, 11.5, 36.9, 40, 1e9, 1e300, NAN, INFINITY, -INFINITY };
    int nb = (int)(sizeof bad / sizeof *bad);
    for (int a = 0; a < nb; a++)
        for (int b = 0; b < nb; b++) {
            yq_draw_line(&g.cv, bad[a], bad[b], bad[b], bad[a], 3, 0, 1, 2, 3);
            yq_draw_line(&g.cv, bad[a], 4, bad[b], 30, 2, 4, 1, 2, 3);
            yq_draw_disc(&g.cv, bad[a], bad[b], 9, 0, 4, 5, 6);
            yq_draw_disc(&g.cv, bad[a], bad[b], bad[a], 2, 4, 5, 6);
            yq_fill_rect(&g.cv, bad[a], bad[b], bad[b], bad[a], 7, 8, 9);
        }
    yq_draw_text(&g.cv, -100, -100, "clipped", 3, 0, 1, 1, 1);
    yq_draw_text(&g.cv, 30, 20, "clipped", 2, 1, 1, 1, 1);
    yq_draw_text(&g.cv, 2000000000, -2000000000, "far", 64, 1, 1, 1, 1);
    CHECK(guards_intact(&g));
    /* A NULL or empty canvas is a no-op. */
    yq_canvas empty = { 0, 0, NULL };
    yq_draw_line(&empty, 0, 0, 5, 5, 1, 0, 0, 0, 0);
    yq_draw_disc(NULL, 0, 0, 5, 0, 0, 0, 0);
    free(g.mem);
}

static void t_draw_shapes(void)
{
    guarded g = guarded_make(40, 40);
    yq_draw_line(&g.cv, 2, 5, 30, 5, 1, 0, 0, 0, 0);
    for (int x = 2; x <= 30; x++) CHECKF(g.cv.rgb[(5 * 40 + x) * 3] == 0, "solid line misses x=%d", x);
    yq_draw_line(&g.cv, 2, 10, 33, 10, 1, 4, 0, 0, 0);
    int on = 0;
    for (int x = 2; x <= 33; x++) on += g.cv.rgb[(10 * 40 + x) * 3] == 0;
    CHECKF(on >= 12 && on <= 20, "dashed line: %d of 32 pixels on", on);
    yq_draw_disc(&g.cv, 20, 25, 5, 0, 10, 20, 30);
    long disc = count_rgb(&g.cv, 10, 20, 30);
    CHECKF(disc > 60 && disc < 100, "disc r=5 covers %ld pixels (pi r^2 = 78.5)", disc);
    yq_draw_disc(&g.cv, 20, 25, 5, 1, 1, 2, 3);            /* a ring leaves the middle */
    CHECK(g.cv.rgb[(25 * 40 + 20) * 3] == 10);
    CHECK(guards_intact(&g));
    free(g.mem);

    /* Vertical text turns the horizontal glyphs: the same number of ink pixels, the box transposed. */
    guarded h = guarded_make(80, 80), v = guarded_make(80, 80);
    int tw, th;
    yq_label_size("mAP", 1, &tw, &th);
    yq_draw_text(&h.cv, 5, 5, "mAP", 1, 0, 0, 0, 0);
    yq_draw_text(&v.cv, 5, 5, "mAP", 1, 1, 0, 0, 0);
    /* anti-aliased: ink is every pixel not white; pixel (x, y) of the label's box is pixel
     * (y, tw - 1 - x) of the turned one */
    long nh = count_not_white(&h.cv, 0, 0, 80, 80), nv = count_not_white(&v.cv, 0, 0, 80, 80);
    CHECKF(nh > 20 && nh == nv, "ink: %ld across, %ld turned", nh, nv);
    CHECK(count_not_white(&h.cv, 5, 5, 5 + tw, 5 + th) == nh);
    CHECK(count_not_white(&v.cv, 5, 5, 5 + th, 5 + tw) == nv);
    int turned = 1;
    for (int y = 0; y < th; y++)
        for (int x = 0; x < tw; x++)
            turned &= memcmp(h.cv.rgb + ((size_t)(5 + y) * 80 + (size_t)(5 + x)) * 3,
                             v.cv.rgb + ((size_t)(5 + tw - 1 - x) * 80 + (size_t)(5 + y)) * 3, 3) == 0;
    CHECK(turned);
    free(h.mem);
    free(v.mem);
}

static void t_scatter_chart(void)
{
    yq_chart_point p[16];
    char names[16][32];
    for (int i = 0; i < 16; i++) {
        snprintf(names[i], sizeof names[i], "pt%d", i);
        /* 0..4 trade latency for accuracy (the front); the others are slower and worse */
        p[i] = i < 5 ? (yq_chart_point){ .x = 100 + 10 * i, .y = 20 + i, .label = names[i] }
                     : (yq_chart_point){ .x = 105 + 10 * (i % 5), .y = 10 + i % 5 - i / 5, .label = names[i] };
    }
    p[7].x = NAN;                                  /* left out, not a crash */
    CHECK(yq_pareto_front(p, 16) == 5);
    p[4].chosen = 1;
    CHECK(p[0].front && p[4].front && !p[5].front && !p[7].front);
    yq_scatter_opt o = { .title = "t", .xlabel = "ms", .ylabel = "mAP", .has_ref = 1, .ref_y = 22, .ref_label = "FP32 22",
                         .min_xspan = 50 };
    yq_canvas cv;
    yq_error err;
    CHECK(yq_chart_scatter(p, 16, &o, 900, 600, &cv, &err) == YQ_OK);
    CHECK(cv.w == 900 && cv.h == 600);
    /* Front points in red, the others in blue, the chosen one ringed in green. */
    CHECKF(count_rgb(&cv, YQ_CHART_FRONT_RGB) > 4 * 120, "front pixels %ld", count_rgb(&cv, YQ_CHART_FRONT_RGB));
    CHECKF(count_rgb(&cv, YQ_CHART_OTHER_RGB) > 5 * 60, "other pixels %ld", count_rgb(&cv, YQ_CHART_OTHER_RGB));
    CHECK(count_rgb(&cv, YQ_CHART_CHOSEN_RGB) > 100);
    yq_canvas_free(&cv);
    /* Every point at one spot: labels cannot all sit beside it, and the key takes them. */
    for (int i = 0; i < 16; i++) p[i].x = 50, p[i].y = 10;
    yq_pareto_front(p, 16);
    CHECK(yq_chart_scatter(p, 16, &o, 900, 600, &cv, &err) == YQ_OK);
    yq_canvas_free(&cv);
    CHECK(yq_chart_scatter(p, 0, &o, 900, 600, &cv, &err) == YQ_OK);   /* axes only */
    yq_canvas_free(&cv);
    CHECK(yq_chart_scatter(p, 16, NULL, 320, 240, &cv, &err) == YQ_OK);
    yq_canvas_free(&cv);
    CHECK(yq_chart_scatter(p, 16, &o, 100, 100, &cv, &err) == YQ_ERR_INVALID_ARG && strstr(err.msg, "100x100"));
}

static void t_bar_chart(void)
{
    const char *rows[3] = { "layer 1", "layer 22", "layer 105" };
    double a[3] = { 1.5, -0.5, NAN }, b[3] = { 0, 2, 3 };
    yq_bar_panel P[2] = { { .title = "mAP", .n_series = 2, .series = { "a", "b" }, .values = { a, b } },
                          { .title = "dB", .n_series = 1, .series = { "a" }, .values = { b } } };
    yq_canvas cv;
    yq_error err;
    CHECK(yq_chart_bars(rows, 3, P, 2, 800, &cv, &err) == YQ_OK);
    CHECK(cv.w == 800 && cv.h > 3 * 8);
    CHECK(count_rgb(&cv, 255, 127, 14) > 50 && count_rgb(&cv, 31, 119, 180) > 50);
    yq_canvas_free(&cv);
    CHECK(yq_chart_bars(rows, 0, P, 1, 800, &cv, &err) == YQ_OK);     /* no rows: axes only */
    yq_canvas_free(&cv);
    P[0].n_series = 0;
    CHECK(yq_chart_bars(rows, 3, P, 1, 800, &cv, &err) == YQ_ERR_INVALID_ARG);
    P[0].n_series = 2;
    CHECK(yq_chart_bars(rows, 3, P, 2, 200, &cv, &err) == YQ_ERR_INVALID_ARG && strstr(err.msg, "narrow"));
    CHECK(yq_canvas_new(0, 5, 0, 0, 0, &cv, &err) == YQ_ERR_INVALID_ARG);
}

int main(void)
{
    TEST(t_pareto_front);
    TEST(t_nice_step);
    TEST(t_draw_clipped);
    TEST(t_draw_shapes);
    TEST(t_scatter_chart);
    TEST(t_bar_chart);
    return test_done();
}
