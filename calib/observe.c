#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <openssl/evp.h>
#include "calib/observe.h"
#include "kernels/cuda_hist.h"
#include "runtime/detector.h"
#include "runtime/engine.h"

yq_status yq_calib_stats_new(int n_nodes, const yq_graph *g, yq_calib_stats **out, yq_error *err)
{
    yq_calib_stats *cs = calloc(1, sizeof *cs);
    if (!cs) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    cs->n_nodes = n_nodes;
    cs->hist = calloc((size_t)n_nodes, sizeof *cs->hist);
    cs->ch_mean = calloc((size_t)n_nodes, sizeof *cs->ch_mean);
    cs->ch_max = calloc((size_t)n_nodes, sizeof *cs->ch_max);
    if (!cs->hist || !cs->ch_mean || !cs->ch_max) { yq_calib_stats_free(cs); return yq_fail(err, YQ_ERR_NOMEM, "out of memory"); }
    for (int i = 0; i < n_nodes; i++) {
        yq_status st = yq_hist_init(&cs->hist[i], YQ_CALIB_BINS, err);
        cs->ch_mean[i] = calloc((size_t)g->nodes[i].out.c, sizeof(double));
        cs->ch_max[i] = calloc((size_t)g->nodes[i].out.c, sizeof(float));
        if (st != YQ_OK || !cs->ch_mean[i] || !cs->ch_max[i]) { yq_calib_stats_free(cs); return yq_fail(err, YQ_ERR_NOMEM, "out of memory"); }
    }
    *out = cs;
    return YQ_OK;
}

void yq_calib_stats_free(yq_calib_stats *cs)
{
    if (!cs) return;
    for (int i = 0; i < cs->n_nodes; i++) {
        if (cs->hist) yq_hist_free(&cs->hist[i]);
        if (cs->ch_mean) free(cs->ch_mean[i]);
        if (cs->ch_max) free(cs->ch_max[i]);
    }
    free(cs->ch_max);
    free(cs->hist);
    free(cs->ch_mean);
    free(cs);
}

void yq_calib_list_hash(char *const *paths, int n, uint8_t out[32])
{
    EVP_MD_CTX *mc = EVP_MD_CTX_new();
    unsigned int len = 0;
    memset(out, 0, 32);
    if (!mc || !EVP_DigestInit_ex(mc, EVP_sha256(), NULL)) { EVP_MD_CTX_free(mc); return; }
    for (int i = 0; i < n; i++) {
        const char *b = strrchr(paths[i], '/');
        b = b ? b + 1 : paths[i];
        struct stat sb;
        long long size = stat(paths[i], &sb) == 0 ? (long long)sb.st_size : -1;
        char rec[64];
        int k = snprintf(rec, sizeof rec, "\t%lld\n", size);
        EVP_DigestUpdate(mc, b, strlen(b));
        EVP_DigestUpdate(mc, rec, (size_t)k);
    }
    EVP_DigestFinal_ex(mc, out, &len);
    EVP_MD_CTX_free(mc);
}

double yq_calib_plane_sum(const float *x, long n)
{
    double total = 0;
    for (long i0 = 0; i0 < n; i0 += YQ_HIST_CHUNK) {
        long i1 = i0 + YQ_HIST_CHUNK < n ? i0 + YQ_HIST_CHUNK : n, i = i0;
        double lane[32] = { 0 };
        for (; i + 32 <= i1; i += 32)
            for (int l = 0; l < 32; l++) lane[l] += (double)x[i + l];
        for (int l = 0; i < i1; i++, l++) lane[l] += (double)x[i];
        for (int o = 16; o > 0; o >>= 1)
            for (int l = 0; l < o; l++) lane[l] += lane[l + o];
        total += lane[0];
    }
    return total;
}

static int same_bytes(const void *a, const void *b, size_t n) { return memcmp(a, b, n) == 0; }

int yq_calib_stats_cmp(const yq_calib_stats *a, const yq_calib_stats *b, const yq_graph *g, char *why, size_t cap)
{
    if (a->n_nodes != b->n_nodes || a->n_nodes != g->n_nodes) {
        snprintf(why, cap, "%d and %d nodes (the graph has %d)", a->n_nodes, b->n_nodes, g->n_nodes);
        return 1;
    }
    if (a->images != b->images || a->skipped != b->skipped) {
        snprintf(why, cap, "%d and %d images observed", a->images, b->images);
        return 1;
    }
    for (int i = 0; i < a->n_nodes; i++) {
        const yq_hist *x = &a->hist[i], *y = &b->hist[i];
        const char *what = NULL;
        int C = g->nodes[i].out.c;
        if (x->nbins != y->nbins || !same_bytes(x->counts, y->counts, sizeof *x->counts * (size_t)x->nbins)) what = "histogram counts";
        else if (!same_bytes(&x->range, &y->range, sizeof x->range)) what = "histogram range";
        else if (!same_bytes(&x->n, &y->n, sizeof x->n) || !same_bytes(&x->n_nan, &y->n_nan, sizeof x->n_nan) ||
                 !same_bytes(&x->n_inf, &y->n_inf, sizeof x->n_inf)) what = "value counts";
        else if (!same_bytes(&x->min, &y->min, sizeof x->min) || !same_bytes(&x->max, &y->max, sizeof x->max) ||
                 !same_bytes(&x->absmax, &y->absmax, sizeof x->absmax)) what = "min / max";
        else if (!same_bytes(a->ch_max[i], b->ch_max[i], sizeof(float) * (size_t)C)) what = "per-channel max |x|";
        if (!what && !same_bytes(a->ch_mean[i], b->ch_mean[i], sizeof(double) * (size_t)C)) {
            int c = 0;
            while (c < C && same_bytes(&a->ch_mean[i][c], &b->ch_mean[i][c], sizeof(double))) c++;
            snprintf(why, cap, "node %d (%s): channel %d mean %.17g and %.17g", i, g->nodes[i].name, c, a->ch_mean[i][c],
                     b->ch_mean[i][c]);
            return 1;
        }
        if (what) {
            snprintf(why, cap, "node %d (%s): %s differ (max |x| %.9g and %.9g, %.0f and %.0f values)", i,
                     g->nodes[i].name, what, (double)x->absmax, (double)y->absmax, x->n, y->n);
            return 1;
        }
    }
    if (cap) why[0] = 0;
    return 0;
}

typedef struct obs { yq_calib_stats *cs; const yq_graph *g; } obs;

static void hook(void *ctx, int id, const void *data, int batch, void *stream)
{
    (void)stream;
    obs *o = ctx;
    const yq_node *n = &o->g->nodes[id];
    if (n->op == YQ_OP_DROPOUT || yq_op_is_head(n->op)) return;  /* aliases */
    const float *x = data;
    long sz = yq_shape_size(n->out);
    yq_hist_add(&o->cs->hist[id], x, sz * batch);
    long plane = (long)n->out.h * n->out.w;
    for (int b = 0; b < batch; b++)
        for (int c = 0; c < n->out.c; c++) {
            const float *p = x + b * sz + c * plane;
            float m = o->cs->ch_max[id][c];
            for (long i = 0; i < plane; i++) {   /* fmaxf(m, |x|) (NaN ignored), inline */
                float a = fabsf(p[i]);
                m = a > m ? a : m;
            }
            o->cs->ch_mean[id][c] += yq_calib_plane_sum(p, plane) / (double)plane;
            o->cs->ch_max[id][c] = m;
        }
}

yq_status yq_calib_observe(const yq_graph *g, char *const *paths, int n, int letterbox,
                           yq_progress_fn progress, void *pctx, yq_warn_fn warn, void *wctx,
                           yq_calib_stats **out, yq_error *err)
{
    if (n < 1) return yq_fail(err, YQ_ERR_INVALID_ARG, "no calibration images");
    yq_calib_stats *cs;
    yq_status st = yq_calib_stats_new(g->n_nodes, g, &cs, err);
    if (st != YQ_OK) return st;
    yq_engine *p = NULL;
    yq_engine_opt eo = yq_engine_defaults(YQ_ENGINE_CPU);
    eo.flags = YQ_PLAN_EXACT;
    st = yq_engine_new(g, 1, &eo, &p, err);
    float *in = st == YQ_OK ? yq_engine_host_input(p) : NULL;
    obs o = { cs, g };
    if (st == YQ_OK) st = yq_engine_set_hook(p, hook, &o, err);
    for (int i = 0; i < n && st == YQ_OK; i++) {
        yq_image im;
        yq_error e2;
        if (yq_image_load(paths[i], &im, &e2) != YQ_OK) {
            yq_warn_skipped(warn, wctx, e2.msg);
            cs->skipped++;
            if (cs->skipped * 2 > n)
                st = yq_fail(err, YQ_ERR_IO, "%d of %d calibration images could not be read (last: %s)", cs->skipped, n, e2.msg);
            continue;
        }
        st = yq_preprocess(g, &im, letterbox, in, err);
        yq_image_free(&im);
        if (st == YQ_OK && (st = yq_engine_upload(p, in, 1, err)) == YQ_OK) st = yq_engine_enqueue(p, 1, err);
        if (st == YQ_OK) cs->images++;
        if (progress) progress(pctx, i + 1, n);
    }
    yq_engine_free(p);
    if (st == YQ_OK && cs->images == 0) st = yq_fail(err, YQ_ERR_IO, "none of the %d calibration images could be read", n);
    if (st != YQ_OK) { yq_calib_stats_free(cs); return st; }
    for (int i = 0; i < g->n_nodes; i++)
        for (int c = 0; c < g->nodes[i].out.c; c++) cs->ch_mean[i][c] /= cs->images;
    yq_calib_list_hash(paths, n, cs->images_sha256);
    *out = cs;
    return YQ_OK;
}
