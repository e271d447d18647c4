/* The measured choices (quant/select.h) and what they stand on:
 *  - the head error (calib/compare.h): zero for equal tensors; a class logit or a box
 *    term moved by a known amount gives the noise the formula says, and a box under an
 *    objectness near 0 counts for nothing;
 *  - the simulated int8 (calib/simulate.h): with nothing rounded and float weights it
 *    reproduces FP32 exactly; with every rounding its error at the heads is within 0.5 dB
 *    of the exact int8 engine's; a float graph or no image is an error;
 *  - layer.N.thresh and thresh_search in the qconfig: parsed, checked, printed and read
 *    back to the same float; a threshold set on one member of a scale class sets the
 *    class's;
 *  - keep_float's choice: a tensor spoiled on purpose (its threshold cut to 1/64) has
 *    the largest error alone and is kept float with its producer and consumer convs, within
 *    the budget; the error at the heads falls;
 *  - thresh_search: a threshold cut to 1/4 is moved up, and the error falls. */
#include <math.h>
#include <unistd.h>
#include "tests/test.h"
#include "calib/compare.h"
#include "calib/observe.h"
#include "calib/simulate.h"
#include "kernels/cpu_ref.h"
#include "tests/test_rewrite.h"
#include "quant/select.h"
#include "runtime/plan.h"

/* node k is darknet layer k - 1 */
static const char *net_cfg =
    "[net]\nwidth=24\nheight=16\nchannels=3\n"
    "[convolutional]\nbatch_normalize=1\nfilters=8\nsize=3\nstride=1\npad=1\nactivation=leaky\n"           /* 0 */
    "[convolutional]\nbatch_normalize=1\nfilters=8\nsize=1\nstride=1\npad=0\nactivation=leaky\n"           /* 1 */
    "[convolutional]\nbatch_normalize=1\nfilters=8\nsize=3\nstride=1\npad=1\ngroups=8\nactivation=leaky\n" /* 2 dw */
    "[convolutional]\nbatch_normalize=1\nfilters=8\nsize=1\nstride=1\npad=0\nactivation=linear\n"          /* 3 */
    "[shortcut]\nfrom=-3\nactivation=linear\n"                                                             /* 4 */
    "[maxpool]\nsize=2\nstride=2\n"                                                                        /* 5 */
    "[convolutional]\nbatch_normalize=1\nfilters=16\nsize=3\nstride=1\npad=1\nactivation=leaky\n"          /* 6 */
    "[convolutional]\nsize=1\nstride=1\npad=0\nfilters=21\nactivation=linear\n"                            /* 7 */
    "[yolo]\nmask=0,1,2\nanchors=10,13,16,30,33,23\nclasses=2\nnum=3\n";                                 /* 8 */

static yq_graph *small_graph(uint32_t seed)
{
    char path[] = "/tmp/yq_select_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(write(fd, net_cfg, strlen(net_cfg)) == (ssize_t)strlen(net_cfg));
    close(fd);
    yq_import_opt o = { .synthetic = 1, .seed = seed };
    yq_graph *g;
    yq_error err;
    yq_status st = yq_darknet_load(path, NULL, &o, &g, &err);
    unlink(path);
    CHECKF(st == YQ_OK, "%s", err.msg);
    CHECK(g->n_nodes == 10 && g->nodes[9].op == YQ_OP_YOLO);
    return g;
}

/* Smooth random images: neighbouring pixels close, as in a photograph. */
static float *make_inputs(const yq_graph *g, int n, uint32_t seed)
{
    yq_shape s = g->nodes[0].out;
    long sz = yq_shape_size(s);
    float *x = malloc(sizeof(float) * (size_t)(sz * n));
    uint64_t r = seed;
    for (int b = 0; b < n; b++)
        for (int c = 0; c < s.c; c++) {
            double a[4];
            for (int k = 0; k < 4; k++) {
                r = r * 6364136223846793005ull + 1442695040888963407ull;
                a[k] = (double)((r >> 33) % 1000) / 999.0;
            }
            for (int y = 0; y < s.h; y++)
                for (int xx = 0; xx < s.w; xx++) {
                    double v = 0.5 + 0.3 * sin(a[0] * 6 + xx * a[1] * 0.8) * cos(a[2] * 6 + y * a[3] * 0.8);
                    x[b * sz + ((long)c * s.h + y) * s.w + xx] = (float)(round(v * 255) / 255);
                }
        }
    return x;
}

typedef struct obs { yq_calib_stats *cs; } obs;
static void observe_hook(void *ctx, const yq_graph *g, int id, const void *data, int batch)
{
    obs *o = ctx;
    const yq_node *n = &g->nodes[id];
    long sz = yq_shape_size(n->out), plane = (long)n->out.h * n->out.w;
    const float *x = data;
    yq_hist_add(&o->cs->hist[id], x, sz * batch);
    for (int b = 0; b < batch; b++)
        for (int c = 0; c < n->out.c; c++) {
            double s = 0;
            for (long i = 0; i < plane; i++) {
                s += (double)x[b * sz + c * plane + i];
                o->cs->ch_max[id][c] = fmaxf(o->cs->ch_max[id][c], fabsf(x[b * sz + c * plane + i]));
            }
            o->cs->ch_mean[id][c] += s / plane / batch;
        }
}

static yq_calib_stats *calibrate(yq_graph *g, const float *in, int batch)
{
    yq_error err;
    yq_calib_stats *cs;
    CHECK(yq_calib_stats_new(g->n_nodes, g, &cs, &err) == YQ_OK);
    yq_plan *p;
    CHECK(yq_plan_new(g, batch, 0, &p, &err) == YQ_OK);
    obs o = { cs };
    CHECKF(yq_exec_fp32(p, in, observe_hook, &o, &err) == YQ_OK, "%s", err.msg);
    yq_plan_free(p);
    return cs;
}

/* *g (FP32, or a rewrite that owns its FP32 graph) rewritten with qc: a new rewrite that
 * owns the FP32 graph, the one before freed; s (when not NULL) simulates the new one. */
static void requantize(yq_graph **g, yq_sim *s, const yq_calib_stats *cs, const yq_qconfig *qc)
{
    yq_error err;
    yq_graph *old = (*g)->q ? *g : NULL, *fp = old ? old->owned_base : *g, *n;
    CHECKF(yq_rewrite(fp, cs, qc, &n, &err) == YQ_OK, "%s", err.msg);
    if (s) CHECKF(yq_sim_sync(s, n, &err) == YQ_OK, "%s", err.msg);
    n->owned_base = fp;
    if (old) {
        old->owned_base = NULL;
        yq_graph_free(old);
    }
    *g = n;
}

static double sim_nsr(yq_sim *s)
{
    yq_error err;
    yq_head_err e;
    CHECKF(yq_sim_run(s, &e, &err) == YQ_OK, "%s", err.msg);
    return yq_head_err_nsr(&e);
}

/* ---- the head error --------------------------------------------------------- */

static double sg(double v) { return 1 / (1 + exp(-v)); }

static void t_head_err(void)
{
    yq_graph *g = small_graph(3);
    const yq_node *hc = &g->nodes[8];            /* 21 channels: 3 anchors x (4 + 1 + 2) */
    long P = (long)hc->out.h * hc->out.w, sz = yq_shape_size(hc->out);
    float *ref = malloc(sizeof(float) * (size_t)sz), *x = malloc(sizeof(float) * (size_t)sz);
    for (long k = 0; k < sz; k++) ref[k] = (float)(3 * sin(0.37 * k));
    memcpy(x, ref, sizeof(float) * (size_t)sz);
    yq_head_err e = { 0 };
    yq_head_err_add(g, 9, ref, x, 1, &e);
    CHECK(e.conf_sig > 0 && e.box_sig > 0 && e.conf_noise == 0 && e.box_noise == 0);
    CHECK(yq_head_err_nsr(&e) == 0 && yq_head_err_db(&e) == 200);
    /* anchor 1, cell 5: objectness ~1; class 1's logit and the box's w move */
    long base = 1 * 7 * P, p = 5;
    ref[base + 4 * P + p] = x[base + 4 * P + p] = 30;
    x[base + 6 * P + p] = ref[base + 6 * P + p] + 1.5f;
    x[base + 2 * P + p] = ref[base + 2 * P + p] + 0.5f;
    /* anchor 2, cell 7: objectness ~0; its box moves a lot and must not count */
    long b2 = 2 * 7 * P, p2 = 7;
    ref[b2 + 4 * P + p2] = x[b2 + 4 * P + p2] = -40;
    x[b2 + 0 * P + p2] = ref[b2 + 0 * P + p2] + 5;
    x[b2 + 3 * P + p2] = ref[b2 + 3 * P + p2] + 5;
    memset(&e, 0, sizeof e);
    yq_head_err_add(g, 9, ref, x, 1, &e);
    double o = sg(30), dc = o * sg(ref[base + 6 * P + p]) - o * sg(x[base + 6 * P + p]);
    CHECKF(fabs(e.conf_noise - dc * dc) < 1e-9 * (dc * dc), "conf noise %g, want %g", e.conf_noise, dc * dc);
    double want_box = o * 0.25 + sg(-40) * (pow(sg((double)ref[b2 + p2] + 5.0) - sg(ref[b2 + p2]), 2) + 25);
    CHECKF(fabs(e.box_noise - want_box) < 1e-6, "box noise %g, want %g", e.box_noise, want_box);
    /* a second image adds up */
    yq_head_err e2 = e;
    float *two_r = malloc(sizeof(float) * 2 * (size_t)sz), *two_x = malloc(sizeof(float) * 2 * (size_t)sz);
    memcpy(two_r, ref, sizeof(float) * (size_t)sz);
    memcpy(two_r + sz, ref, sizeof(float) * (size_t)sz);
    memcpy(two_x, x, sizeof(float) * (size_t)sz);
    memcpy(two_x + sz, x, sizeof(float) * (size_t)sz);
    memset(&e2, 0, sizeof e2);
    yq_head_err_add(g, 9, two_r, two_x, 2, &e2);
    CHECK(fabs(e2.conf_noise - 2 * e.conf_noise) <= 1e-12 * e.conf_noise && fabs(e2.box_sig - 2 * e.box_sig) <= 1e-9 * e.box_sig);
    CHECK(fabs(yq_head_err_nsr(&e2) - yq_head_err_nsr(&e)) < 1e-12);
    free(two_r);
    free(two_x);
    free(ref);
    free(x);
    yq_graph_free(g);
}

/* ---- the simulation ---------------------------------------------------------- */

static void t_sim_vs_exact(void)
{
    yq_graph *g = small_graph(11);
    int n = 6;
    float *in = make_inputs(g, n, 5);
    yq_calib_stats *cs = calibrate(g, in, n);
    yq_qconfig qc;
    yq_qconfig_defaults(&qc);
    qc.keep_float = 0;
    requantize(&g, NULL, cs, &qc);
    yq_error err;
    yq_sim *s = NULL;
    CHECK(yq_sim_new(g, in, 0, &s, &err) == YQ_ERR_INVALID_ARG && !s);
    yq_qnode *q = g->q;
    g->q = NULL;
    CHECK(yq_sim_new(g, in, n, &s, &err) == YQ_ERR_INVALID_ARG && !s);
    g->q = q;
    CHECKF(yq_sim_new(g, in, n, &s, &err) == YQ_OK, "%s", err.msg);
    /* nothing rounded, float weights: FP32 itself */
    for (int i = 0; i < g->n_nodes; i++) yq_sim_round(s, i, 0);
    yq_sim_weights(s, 0);
    yq_head_err e;
    CHECK(yq_sim_run(s, &e, &err) == YQ_OK);
    CHECKF(e.conf_noise == 0 && e.box_noise == 0 && e.conf_sig > 0, "FP32 against itself: noise %g %g", e.conf_noise, e.box_noise);
    CHECK(yq_sim_sync(s, g, &err) == YQ_OK);
    yq_sim_weights(s, 1);
    int rounded = 0;
    for (int i = 0; i < g->n_nodes; i++) rounded += yq_sim_rounds(s, i);
    CHECKF(rounded >= 7, "%d tensors rounded", rounded);
    double sim = sim_nsr(s);
    /* the exact engine's error at the head, the same images */
    yq_plan *pf, *pq;
    CHECK(yq_plan_new(g, n, YQ_PLAN_KEEP_HEADS | YQ_PLAN_FLOAT, &pf, &err) == YQ_OK);
    CHECK(yq_plan_new(g, n, YQ_PLAN_KEEP_HEADS, &pq, &err) == YQ_OK);
    CHECK(yq_exec_fp32(pf, in, NULL, NULL, &err) == YQ_OK);
    CHECK(yq_exec_int8(pq, in, NULL, NULL, &err) == YQ_OK);
    CHECK(g->q[8].dtype == YQ_F32);                 /* the head conv: float (head = float) */
    yq_head_err ex = { 0 };
    yq_head_err_add(g, 9, yq_plan_tensor(pf, 8), yq_plan_data(pq, 8), n, &ex);
    double exact = yq_head_err_nsr(&ex);
    CHECKF(sim > 0 && exact > 0 && fabs(10 * log10(sim / exact)) < 0.5,
           "simulated %.3g vs exact %.3g (%.2f dB apart)", sim, exact, 10 * log10(sim / exact));
    yq_plan_free(pf);
    yq_plan_free(pq);
    yq_sim_free(s);
    yq_calib_stats_free(cs);
    free(in);
    yq_graph_free(g);
}

/* ---- the qconfig keys ---------------------------------------------------------- */

static void t_qconfig_thresh(void)
{
    yq_qconfig qc;
    yq_qconfig_defaults(&qc);
    yq_error err;
    const char *bad[] = { "0", "-1", "abc", "inf", "nan", "1e39", "" };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++)
        CHECKF(yq_qconfig_set(&qc, "layer.3.thresh", bad[k], "t", &err) == YQ_ERR_INVALID_ARG, "accepted '%s'", bad[k]);
    CHECK(yq_qconfig_set(&qc, "thresh_search", "257", "t", &err) == YQ_ERR_INVALID_ARG);
    CHECK(yq_qconfig_set(&qc, "thresh_search", "-1", "t", &err) == YQ_ERR_INVALID_ARG);
    CHECK(yq_qconfig_set(&qc, "thresh_search", "12", "t", &err) == YQ_OK && qc.thresh_search == 12);
    CHECK(yq_qconfig_set(&qc, "layer.3.thresh", "0.123456789", "t", &err) == YQ_OK);
    CHECK(yq_qc_thresh(&qc, 3) == 0.123456789f && yq_qc_thresh(&qc, 2) == 0 && yq_qc_thresh(&qc, 400) == 0);
    char text[4096];
    yq_qconfig_str(&qc, text, sizeof text);
    CHECK(strstr(text, "thresh_search = 12\n") && strstr(text, "layer.3.thresh = "));
    char path[] = "/tmp/yq_qc_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    yq_qconfig back;
    yq_qconfig_defaults(&back);
    yq_status st = yq_qconfig_load(&back, path, &err);
    unlink(path);
    CHECKF(st == YQ_OK, "%s", err.msg);
    CHECK(back.thresh_search == 12 && yq_qc_thresh(&back, 3) == yq_qc_thresh(&qc, 3));
    /* a model with 9 layers: layer 9 does not exist */
    yq_graph *g = small_graph(2);
    yq_qconfig q2;
    yq_qconfig_defaults(&q2);
    CHECK(yq_qconfig_set(&q2, "layer.9.thresh", "1", "t", &err) == YQ_OK);
    CHECK(yq_qconfig_validate(&q2, g, &err) == YQ_ERR_INVALID_ARG);
    yq_graph_free(g);
}

static void t_thresh_sets_class(void)
{
    yq_graph *g = small_graph(4);
    int n = 4;
    float *in = make_inputs(g, n, 9);
    yq_calib_stats *cs = calibrate(g, in, n);
    yq_qconfig qc;
    yq_qconfig_defaults(&qc);
    qc.keep_float = 0;
    requantize(&g, NULL, cs, &qc);
    /* the maxpool (layer 5, node 6) shares the shortcut's (layer 4, node 5) scale */
    CHECK(g->q[6].scale == g->q[5].scale);
    float t = 0.5f * g->q[5].thresh;
    char v[32];
    snprintf(v, sizeof v, "%.9g", (double)t);
    yq_error err;
    CHECK(yq_qconfig_set(&qc, "layer.5.thresh", v, "t", &err) == YQ_OK);
    requantize(&g, NULL, cs, &qc);
    CHECKF(g->q[5].thresh == t && g->q[6].thresh == t, "class threshold %g %g, set %g", (double)g->q[5].thresh,
           (double)g->q[6].thresh, (double)t);
    CHECK(g->q[5].scale == t / 127 && g->q[6].scale == g->q[5].scale);
    yq_calib_stats_free(cs);
    free(in);
    yq_graph_free(g);
}

/* ---- keep_float and thresh_search ------------------------------------------------ */

static void t_select_float(void)
{
    yq_graph *g = small_graph(21);
    int n = 6;
    float *in = make_inputs(g, n, 13);
    yq_calib_stats *cs = calibrate(g, in, n);
    yq_qconfig qc;
    yq_qconfig_defaults(&qc);
    qc.keep_float = 0;
    requantize(&g, NULL, cs, &qc);
    /* Candidates: one conv's output read only by convs and heads: layers 0, 2 and 6 (the
     * shortcut reads layers 1 and 3). */
    uint8_t want[16];
    yq_float_candidates(g, want);
    for (int i = 0; i < g->n_nodes; i++) CHECKF(want[i] == (i == 1 || i == 3 || i == 7), "node %d: candidate %d", i, want[i]);
    /* Spoil layer 2's output (node 3): its threshold cut to 1/64. */
    char v[32];
    snprintf(v, sizeof v, "%.9g", (double)g->q[3].thresh / 64);
    yq_error err;
    CHECK(yq_qconfig_set(&qc, "layer.2.thresh", v, "t", &err) == YQ_OK);
    requantize(&g, NULL, cs, &qc);
    yq_sim *s;
    CHECKF(yq_sim_new(g, in, n, &s, &err) == YQ_OK, "%s", err.msg);
    double before = sim_nsr(s);
    double e[16];
    CHECKF(yq_class_errors(s, g, NULL, e, &err) == YQ_OK, "%s", err.msg);
    /* (all classes in one yq_sim_run_many, each from the FP32 prefix's activations: the
     * same numbers, bit for bit, as one whole yq_sim_run per class) */
    {
        int root[16], N = g->n_nodes, n_cmp = 0;
        uint8_t saved[16];
        yq_scale_classes(g, root);
        for (int i = 0; i < N; i++) saved[i] = (uint8_t)yq_sim_rounds(s, i);
        yq_sim_weights(s, 0);
        for (int r = 0; r < N; r++) {
            int any = 0;
            for (int i = 0; i < N; i++) {
                any |= saved[i] && root[i] == r;
                yq_sim_round(s, i, saved[i] && root[i] == r);
            }
            if (!any) continue;
            yq_head_err h;
            CHECK(yq_sim_run(s, &h, &err) == YQ_OK);
            CHECKF(yq_head_err_nsr(&h) == e[r], "class %d: %.17g whole, %.17g from the prefix", r, yq_head_err_nsr(&h), e[r]);
            n_cmp++;
        }
        for (int i = 0; i < N; i++) yq_sim_round(s, i, saved[i]);
        yq_sim_weights(s, 1);
        CHECKF(n_cmp >= 5, "%d classes compared", n_cmp);
    }
    int worst = 1;
    for (int r = 1; r < g->n_nodes; r++) if (e[r] > e[worst]) worst = r;
    CHECKF(worst == 3, "largest error alone at node %d (%g), not the spoiled node 3 (%g)", worst, e[worst], e[3]);
    CHECK(e[0] >= 0 && e[1] > 0 && e[2] > 0 && e[4] > 0 && e[5] > 0 && e[7] > 0 && isfinite(e[3]));
    CHECK(e[6] == 0 && e[8] == 0 && e[9] == 0);                  /* not class roots / not rounded */
    CHECK(yq_sim_rounds(s, 3) && yq_sim_rounds(s, 5));          /* the roundings are back */
    /* Budget 1: the spoiled tensor needs layers 2 and 3; layer 6 (read by the float head
     * conv) is the one that fits. */
    yq_qconfig q1 = qc;
    int chosen = -1;
    CHECK(yq_select_float(g, e, 1, &q1, &chosen, &err) == YQ_OK);
    for (int L = 0; L < 9; L++) CHECKF(yq_qc_skip(&q1, L) == (L == 6), "budget 1: layer %d skip %d", L, yq_qc_skip(&q1, L));
    CHECK(chosen == 1);
    /* Budget 2: layers 2 and 3, nothing else. */
    yq_qconfig q2 = qc;
    CHECK(yq_select_float(g, e, 2, &q2, &chosen, &err) == YQ_OK);
    CHECK(chosen == 2);
    for (int L = 0; L < 9; L++) CHECKF(yq_qc_skip(&q2, L) == (L == 2 || L == 3), "layer %d skip %d", L, yq_qc_skip(&q2, L));
    requantize(&g, s, cs, &q2);
    CHECK(g->q[3].float_op && g->q[4].float_op && !g->q[5].float_op);
    CHECK(yq_sim_sync(s, g, &err) == YQ_OK);
    CHECK(!yq_sim_rounds(s, 3) && yq_sim_rounds(s, 4));          /* float to float; float read by int8 */
    double after = sim_nsr(s);
    CHECKF(after < 0.5 * before, "head error %g with the spoiled tensor float, %g before", after, before);
    yq_sim_free(s);
    yq_calib_stats_free(cs);
    free(in);
    yq_graph_free(g);
}

static void t_search_thresholds(void)
{
    yq_graph *g = small_graph(21);
    int n = 6;
    float *in = make_inputs(g, n, 13);
    yq_calib_stats *cs = calibrate(g, in, n);
    yq_qconfig qc;
    yq_qconfig_defaults(&qc);
    qc.keep_float = 0;
    requantize(&g, NULL, cs, &qc);
    float t_cal = g->q[3].thresh, t_bad = t_cal / 4;
    char v[32];
    snprintf(v, sizeof v, "%.9g", (double)t_bad);
    yq_error err;
    CHECK(yq_qconfig_set(&qc, "layer.2.thresh", v, "t", &err) == YQ_OK);
    requantize(&g, NULL, cs, &qc);
    CHECK(g->q[3].thresh == t_bad);
    yq_sim *s;
    CHECKF(yq_sim_new(g, in, n, &s, &err) == YQ_OK, "%s", err.msg);
    double before = sim_nsr(s), e[16];
    CHECK(yq_class_errors(s, g, NULL, e, &err) == YQ_OK);
    int changed = -1;
    CHECKF(yq_search_thresholds(s, g, cs, e, 1, &qc, &changed, &err) == YQ_OK, "%s", err.msg);
    float t_new = yq_qc_thresh(&qc, 2);
    CHECKF(changed == 1 && t_new > t_bad, "changed %d, threshold %g (was %g, calibrated %g)", changed, (double)t_new,
           (double)t_bad, (double)t_cal);
    for (int L = 0; L < 9; L++) if (L != 2) CHECK(yq_qc_thresh(&qc, L) == 0);
    requantize(&g, s, cs, &qc);
    CHECK(g->q[3].thresh == t_new);
    CHECK(yq_sim_sync(s, g, &err) == YQ_OK);
    double after = sim_nsr(s);
    CHECKF(after < before, "head error %g after the search, %g before", after, before);
    yq_sim_free(s);
    yq_calib_stats_free(cs);
    free(in);
    yq_graph_free(g);
}

int main(void)
{
    TEST(t_head_err);
    TEST(t_sim_vs_exact);
    TEST(t_qconfig_thresh);
    TEST(t_thresh_sets_class);
    TEST(t_select_float);
    TEST(t_search_thresholds);
    return test_done();
}
