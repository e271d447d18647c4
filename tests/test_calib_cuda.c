/* Calibration on the GPU (calib/observe_cuda.h, kernels/cuda_hist.h) against the CPU
 * (calib/observe.c, calib/hist.c): the same statistics, byte for byte.
 *
 * t_hist_exact: the same floats through yq_cuda_hist_add and yq_hist_add give the same
 *   histogram bit for bit (counts, range, n, NaN/Inf counts, min, max), the same
 *   per-channel max and the same per-channel mean sums (both in yq_calib_plane_sum's
 *   order; NaN and Inf sums compared as such).  Batches grow the range (bin merges on the
 *   device), hold NaN, Inf, zeros, denormals and huge values, span several chunks of a
 *   plane and end mid-chunk, and are misaligned for the vector path.
 * t_observe_exact: every shared model with weights over all of the calibration images
 *   (coco-mini/val2017_unlabelled), the CPU engine against the GPU at batch 7 (full batches
 *   and a partial one); then equalization and the second pass, as yquant quantize does;
 *   yolov4 (mish) and yolov4-tiny with synthetic weights at 160 x 160 over 8 images.  The
 *   statistics must be equal byte for byte (yq_calib_stats_cmp) at both passes, and the
 *   int8 graphs the default qconfig makes from them (keep_float aside: it is chosen on the
 *   CPU from these statistics) equal in every conv's int8 weights, bias, scales and
 *   requantize multipliers: what --calib-device cpu and cuda write into a package.
 * t_no_gpu: without a GPU (or cuDNN) the GPU observer says so with YQ_ERR_UNSUPPORTED.
 * Tests that need a GPU are skipped without one. */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "calib/observe.h"
#include "calib/observe_cuda.h"
#include "kernels/cuda.h"
#include "kernels/cuda_hist.h"
#include "kernels/cudnn_fp.h"
#include "ir/requant.h"
#include "quant/equalize.h"
#include "tests/test_rewrite.h"
#include "tests/test.h"

static yq_error err;
#define OK(call) do { yq_status st_ = (call); CHECKF(st_ == YQ_OK, "%s: %.300s", #call, err.msg); } while (0)

static void need_gpu(void)
{
    char why[128];
    if (!yq_calib_cuda_available(why, sizeof why)) TEST_SKIP("%s", why);
}

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}
static float rnd_u(void) { return (float)(rnd32() >> 8) / 16777216.f; }   /* [0, 1) */

/* The CPU side of one add, as calib/observe.c's hook does it. */
static void cpu_add(yq_hist *h, double *mean, float *mx, const float *x, int batch, int c, long hw)
{
    yq_hist_add(h, x, (long)batch * c * hw);
    for (int b = 0; b < batch; b++)
        for (int k = 0; k < c; k++) {
            const float *p = x + ((long)b * c + k) * hw;
            float m = mx[k];
            for (long i = 0; i < hw; i++) m = fmaxf(m, fabsf(p[i]));
            mean[k] += yq_calib_plane_sum(p, hw) / (double)hw;
            mx[k] = m;
        }
}

typedef struct hcase { int batch, c; long hw; float scale; int special, misalign; } hcase;

static void t_hist_exact(void)
{
    need_gpu();
    /* tensor 0 sees growing ranges and many zeros; tensor 1 starts with all-zero and
     * all-NaN batches, then NaN and Inf; tensor 2 takes denormals and tiny values, then
     * huge ones (a merge past every bin), then NaN and Inf */
    static const hcase cs0[] = { { 2, 3, 5000, 0.01f, 0, 0 }, { 2, 3, 5000, 1.f, 4, 1 }, { 1, 3, 5000, 300.f, 0, 0 },
                                 { 2, 3, 5000, 0.5f, 4, 0 } };
    static const hcase cs1[] = { { 3, 17, 169, 0.f, 0, 0 }, { 3, 17, 169, 0.f, 2, 0 }, { 2, 17, 169, 4.f, 1, 1 },
                                 { 3, 17, 169, 7.9f, 0, 0 } };
    static const hcase cs2[] = { { 1, 5, 2049, 1e-30f, 3, 0 }, { 1, 5, 6150, 1e30f, 0, 1 }, { 2, 5, 2049, 2.f, 1, 0 } };
    static const struct { const hcase *c; int n; } all[] = { { cs0, 4 }, { cs1, 4 }, { cs2, 3 } };
    int ch[3] = { 3, 17, 5 };
    yq_cuda_hist *gh = NULL;
    yq_hist ref[3];
    double mean[3][17];
    float mx[3][17];
    memset(ref, 0, sizeof ref);
    memset(mean, 0, sizeof mean);
    memset(mx, 0, sizeof mx);
    float *d = NULL;
    long cap = 0;
    for (int t = 0; t < 3; t++)
        for (int k = 0; k < all[t].n; k++) {
            long sz = (long)all[t].c[k].batch * all[t].c[k].c * all[t].c[k].hw + 4;
            if (sz > cap) cap = sz;
        }
    float *x = malloc(sizeof *x * (size_t)cap);
    CHECK(x);
    OK(yq_cuda_malloc((void **)&d, sizeof *d * (size_t)cap, &err));
    OK(yq_cuda_hist_new(3, ch, YQ_CALIB_BINS, NULL, &gh, &err));
    for (int t = 0; t < 3; t++) OK(yq_hist_init(&ref[t], YQ_CALIB_BINS, &err));
    for (int t = 0; t < 3; t++)
        for (int k = 0; k < all[t].n; k++) OK(yq_cuda_hist_reserve(gh, all[t].c[k].batch, all[t].c[k].c, all[t].c[k].hw, &err));
    /* interleaved, as nodes are */
    for (int k = 0; k < 4; k++)
        for (int t = 0; t < 3; t++) {
            if (k >= all[t].n) continue;
            const hcase *hc = &all[t].c[k];
            long n = (long)hc->batch * hc->c * hc->hw;
            for (long i = 0; i < n; i++) {
                float v = (2 * rnd_u() - 1) * hc->scale;
                if (hc->special == 1) {
                    uint32_t r = rnd32() % 1000;
                    if (r == 0) v = NAN;
                    else if (r == 1) v = INFINITY;
                    else if (r == 2) v = -INFINITY;
                    else if (r < 200) v = 0.f;
                    else if (r < 210) v = -0.f;
                } else if (hc->special == 4) {
                    uint32_t r = rnd32() % 4;
                    if (r == 0) v = 0.f;
                    else if (r == 1) v = -0.f;
                } else if (hc->special == 2) {
                    v = NAN;
                } else if (hc->special == 3 && i % 7 == 0) {
                    v = 1e-40f * (float)(i % 5);                 /* denormals */
                }
                x[i] = v;
            }
            const float *src = x;
            float *dst = d + (hc->misalign ? 1 : 0);
            OK(yq_cuda_h2d(dst, src, sizeof *x * (size_t)n, &err));
            OK(yq_cuda_hist_add(gh, t, dst, hc->batch, hc->c, hc->hw, &err));
            OK(yq_cuda_sync(NULL, &err));        /* x is reused */
            cpu_add(&ref[t], mean[t], mx[t], x, hc->batch, hc->c, hc->hw);
        }
    OK(yq_cuda_hist_download(gh, &err));
    for (int t = 0; t < 3; t++) {
        yq_cuda_hist_sum s;
        yq_cuda_hist_summary(gh, t, &s);
        const uint64_t *c = yq_cuda_hist_counts(gh, t);
        CHECKF(s.range == ref[t].range, "tensor %d: range %g, CPU %g", t, s.range, ref[t].range);
        CHECKF(s.n == ref[t].n && s.n_nan == ref[t].n_nan && s.n_inf == ref[t].n_inf,
               "tensor %d: n %g/%g/%g, CPU %g/%g/%g", t, s.n, s.n_nan, s.n_inf, ref[t].n, ref[t].n_nan, ref[t].n_inf);
        CHECKF(s.min == ref[t].min && s.max == ref[t].max, "tensor %d: min/max %g %g, CPU %g %g", t, (double)s.min,
               (double)s.max, (double)ref[t].min, (double)ref[t].max);
        for (int k = 0; k < YQ_CALIB_BINS; k++)
            CHECKF((double)c[k] == ref[t].counts[k], "tensor %d bin %d: %llu, CPU %g", t, k, (unsigned long long)c[k],
                   ref[t].counts[k]);
        const double *gm = yq_cuda_hist_ch_mean_sum(gh, t);
        const float *gx = yq_cuda_hist_ch_max(gh, t);
        for (int k = 0; k < ch[t]; k++) {
            CHECKF(gx[k] == mx[t][k], "tensor %d channel %d: max %g, CPU %g", t, k, (double)gx[k], (double)mx[t][k]);
            CHECKF(gm[k] == mean[t][k] || (isnan(gm[k]) && isnan(mean[t][k])),
                   "tensor %d channel %d: mean sum %.17g, CPU %.17g", t, k, gm[k], mean[t][k]);
        }
    }
    printf("#   GPU statistics == CPU statistics bit for bit on 3 tensors, 11 batches (range growth, NaN/Inf, zeros, denormals)\n");
    yq_cuda_hist_free(gh);
    yq_cuda_free(d);
    for (int t = 0; t < 3; t++) yq_hist_free(&ref[t]);
    free(x);
}

/* The first n *.jpg of dir, sorted (the .rgb sidecars of the GPU build stay out). */
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static int list_jpg(const char *dir, char **out, int n)
{
    DIR *dd = opendir(dir);
    if (!dd) return 0;
    char *all[1024];
    int m = 0;
    struct dirent *e;
    while ((e = readdir(dd)) && m < 1024) {
        size_t l = strlen(e->d_name);
        if (l > 4 && !strcmp(e->d_name + l - 4, ".jpg")) {
            size_t sz = strlen(dir) + l + 2;
            all[m] = malloc(sz);
            if (all[m]) snprintf(all[m++], sz, "%s/%s", dir, e->d_name);
        }
    }
    closedir(dd);
    qsort(all, (size_t)m, sizeof *all, cmp_str);
    int k = 0;
    for (int i = 0; i < m; i++) {
        if (k < n) out[k++] = all[i];
        else free(all[i]);
    }
    return k;
}

/* Every conv's int8 side equal in a and b (graphs quantized from the two engines'
 * statistics); 1 if so, else 0 with the first difference reported. */
static int same_bytes(const void *a, const void *b, size_t n) { return n == 0 || (a && b && !memcmp(a, b, n)); }

static int same_int8(const yq_graph *a, const yq_graph *b, const char *model)
{
    for (int i = 0; i < a->n_nodes; i++) {
        const yq_node *n = &a->nodes[i];
        const yq_qnode *x = &a->q[i], *y = &b->q[i];
        const char *what = NULL;
        if (x->dtype != y->dtype || x->float_op != y->float_op || !same_bytes(&x->scale, &y->scale, sizeof x->scale) ||
            !same_bytes(&x->thresh, &y->thresh, sizeof x->thresh) || x->qmin != y->qmin || x->qmax != y->qmax)
            what = "type, scale or threshold";
        else if (!same_bytes(&x->sa, &y->sa, sizeof x->sa) || !same_bytes(&x->sb, &y->sb, sizeof x->sb) ||
                 !same_bytes(&x->sneg, &y->sneg, sizeof x->sneg))
            what = "shortcut scales";
        else if (n->op == YQ_OP_CONV && !x->float_op) {
            size_t F = (size_t)n->p.conv.filters;
            if (!same_bytes(x->wq, y->wq, (size_t)n->n_w) || !same_bytes(x->bq, y->bq, 4 * F)) what = "int8 weights or bias";
            else if (!same_bytes(x->w_scale, y->w_scale, 4 * F)) what = "weight scales";
            else if (!same_bytes(x->rq_pos, y->rq_pos, 4 * F) || !same_bytes(x->rq_neg, y->rq_neg, 4 * F) ||
                     (x->deq && !same_bytes(x->deq, y->deq, 4 * F)))
                what = "requantize multipliers";
            else if ((x->lut != NULL) != (y->lut != NULL) || (x->lut && !same_bytes(x->lut, y->lut, YQ_LUT_N)))
                what = "activation table";
        }
        if (what) {
            CHECKF(0, "%s node %d (%s): %s differ", model, i, n->name, what);
            return 0;
        }
    }
    return 1;
}

typedef struct cmodel { const char *dir, *cfg, *weights; int synthetic, size, images; } cmodel;

static void t_observe_exact(void)
{
    need_gpu();
    static const cmodel models[] = {
        { "yolo-fastest-1.0", "yolo-fastest", "yolo-fastest", 0, 0, 1024 },
        { "yolo-fastest-1.1", "yolo-fastest-1.1", "yolo-fastest-1.1", 0, 0, 1024 },
        { "yolo-fastest-1.1-xl", "yolo-fastest-1.1-xl", "yolo-fastest-1.1-xl", 0, 0, 1024 },
        { "yolo-fastest-xl-1.0", "yolo-fastest-xl", "yolo-fastest-xl", 0, 0, 1024 },
        { "yolo-lite-coco-trial6", "trial6", "trial6_653550", 0, 0, 1024 },
        { "cfg-only", "yolov4", NULL, 1, 160, 8 },
        { "cfg-only", "yolov4-tiny", NULL, 1, 160, 8 },
    };
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/datasets/coco-mini/val2017_unlabelled/images", test_data_dir());
    char *paths[1024];
    int n_all = list_jpg(dir, paths, 1024);
    if (n_all < 8) {
        for (int i = 0; i < n_all; i++) free(paths[i]);
        TEST_SKIP("%d images in %s (YQ_DATA)", n_all, dir);
    }
    int done = 0;
    for (size_t m = 0; m < sizeof models / sizeof *models; m++) {
        const cmodel *md = &models[m];
        char cfg[1024], w[1024];
        snprintf(cfg, sizeof cfg, "%s/models/%s/%s.cfg", test_data_dir(), md->dir, md->cfg);
        snprintf(w, sizeof w, "%s/models/%s/%s.weights", test_data_dir(), md->dir, md->synthetic ? "" : md->weights);
        FILE *f = fopen(md->synthetic ? cfg : w, "rb");
        if (!f) {
            printf("#   %s: not in YQ_DATA, skipped\n", md->cfg);
            continue;
        }
        fclose(f);
        int n = md->images < n_all ? md->images : n_all;
        yq_import_opt io = { 0 };
        io.width = io.height = md->size;
        io.synthetic = md->synthetic;
        io.seed = 1;
        yq_graph *g[2] = { NULL, NULL };     /* [0] calibrated on the CPU, [1] on the GPU */
        yq_calib_stats *cs[2] = { NULL, NULL };
        int ok = 1;
        for (int d = 0; d < 2 && ok; d++) {
            yq_status st = yq_darknet_load(cfg, md->synthetic ? NULL : w, &io, &g[d], &err);
            CHECKF(st == YQ_OK, "%s: %s", md->cfg, err.msg);
            ok = st == YQ_OK;
        }
        yq_calib_cuda_opt o = yq_calib_cuda_defaults();
        o.batch = 7;
        int pairs = 0;
        for (int stage = 0; stage < 2 && ok; stage++) {
            yq_status st = yq_calib_observe(g[0], paths, n, g[0]->letter_box, NULL, NULL, NULL, NULL, &cs[0], &err);
            if (st == YQ_OK) st = yq_calib_observe_cuda(g[1], paths, n, g[1]->letter_box, &o, NULL, NULL, &cs[1], &err);
            CHECKF(st == YQ_OK, "%s pass %d: %s", md->cfg, stage, err.msg);
            if (st != YQ_OK) { ok = 0; break; }
            char why[256];
            int diff = yq_calib_stats_cmp(cs[0], cs[1], g[0], why, sizeof why);
            CHECKF(!diff, "%s, %d images, pass %d: CPU and GPU statistics differ: %s", md->cfg, n, stage, why);
            ok = !diff;
            if (ok && stage == 0) {         /* equalize both (on the CPU), then observe again */
                int p2 = 0;
                yq_graph *e0 = NULL, *e1 = NULL;
                st = yq_equalize(g[0], cs[0], &e0, &pairs, &err);
                if (st == YQ_OK) st = yq_equalize(g[1], cs[1], &e1, &p2, &err);
                CHECKF(st == YQ_OK && pairs == p2, "%s: equalize: %s", md->cfg, err.msg);
                ok = st == YQ_OK;
                if (ok) {                   /* the equalized copies from here on */
                    yq_graph_free(g[0]);
                    yq_graph_free(g[1]);
                    g[0] = e0;
                    g[1] = e1;
                } else {
                    yq_graph_free(e0);
                    yq_graph_free(e1);
                }
                for (int d = 0; d < 2; d++) { yq_calib_stats_free(cs[d]); cs[d] = NULL; }
            }
        }
        if (ok) {
            yq_qconfig qc;
            yq_qconfig_defaults(&qc);
            qc.keep_float = 0;
            yq_status st = test_rewrite(&g[0], cs[0], &qc, &err);
            if (st == YQ_OK) st = test_rewrite(&g[1], cs[1], &qc, &err);
            CHECKF(st == YQ_OK, "%s: quantize: %s", md->cfg, err.msg);
            if (st == YQ_OK && same_int8(g[0], g[1], md->cfg)) {
                done++;
                printf("#   %-22s %3d images, %3d nodes: CPU and GPU statistics identical at both passes (%d pairs "
                       "equalized); int8 weights, scales and multipliers identical\n", md->cfg, n, g[0]->n_nodes, pairs);
            }
        }
        for (int d = 0; d < 2; d++) {
            yq_calib_stats_free(cs[d]);
            yq_graph_free(g[d]);
        }
    }
    CHECKF(done > 0, "no model calibrated (YQ_DATA: %s)", test_data_dir());
    for (int i = 0; i < n_all; i++) free(paths[i]);
}

static void t_no_gpu(void)
{
    if (yq_calib_cuda_available(NULL, 0)) TEST_SKIP("a GPU with cuDNN is present (the other tests cover it)");
    char *paths[1] = { "none.jpg" };
    yq_calib_stats *cs = (yq_calib_stats *)&err;        /* must stay untouched */
    yq_graph g;
    memset(&g, 0, sizeof g);
    yq_status st = yq_calib_observe_cuda(&g, paths, 1, 0, NULL, NULL, NULL, &cs, &err);
    CHECKF(st == YQ_ERR_UNSUPPORTED, "status %d: %s", (int)st, err.msg);
    CHECK(cs == (yq_calib_stats *)&err);
    CHECKF(strstr(err.msg, "GPU") != NULL, "message: %s", err.msg);
}

int main(void)
{
    TEST(t_no_gpu);
    TEST(t_hist_exact);
    TEST(t_observe_exact);
    return test_done();
}
