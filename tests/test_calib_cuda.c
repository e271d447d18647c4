/* Calibration on the GPU (calib/observe_cuda.h, kernels/cuda_hist.h) against the CPU
 * (calib/observe.c, calib/hist.c).
 *
 * t_hist_exact: the same floats through yq_cuda_hist_add and yq_hist_add give the same
 *   histogram bit for bit (counts, range, n, NaN/Inf counts, min, max) and the same
 *   per-channel max; per-channel means agree to 1e-12 relative (double sums in another
 *   order).  Batches grow the range (bin merges on the device), hold NaN, Inf, zeros,
 *   denormals and huge values, and are misaligned for the vector path.
 * t_observe_vs_cpu: yolo-fastest-1.1-xl over 8 COCO images, CPU engine against cuDNN at
 *   batch 3 (two full batches and a partial one).  The float values differ by summation
 *   order, so per node: equal value counts; thresholds within a relative bound (max
 *   1e-4, percentile:99.99 1e-3, mse 2e-2: mse is an argmin over bin edges, so a few
 *   values changing bin can move it by a bin); per-channel max |x| within 1e-4 of the
 *   node's max |x|, per-channel means within 1e-4 of it.  KL is printed, not bounded
 *   (an argmin over candidate widths that can jump).  The worst figures are printed.
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
#include "tests/test.h"

#define B_MAX  1e-4
#define B_PCT  1e-3
#define B_MSE  2e-2
#define B_CH   1e-4
#define N_IMG  8

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
            double s = 0;
            float m = mx[k];
            for (long i = 0; i < hw; i++) {
                s += (double)p[i];
                m = fmaxf(m, fabsf(p[i]));
            }
            mean[k] += s / hw;
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
    static const hcase cs2[] = { { 1, 5, 2049, 1e-30f, 3, 0 }, { 1, 5, 2049, 1e30f, 0, 1 }, { 2, 5, 2049, 2.f, 1, 0 } };
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
            double dm = fabs(gm[k] - mean[t][k]);
            CHECKF(dm <= 1e-12 * fabs(mean[t][k]) || (isnan(gm[k]) && isnan(mean[t][k])) ||
                       (isinf(gm[k]) && gm[k] == mean[t][k]),
                   "tensor %d channel %d: mean sum %.17g, CPU %.17g", t, k, gm[k], mean[t][k]);
        }
    }
    printf("#   GPU histogram == CPU histogram bit for bit on 3 tensors, 11 batches (range growth, NaN/Inf, zeros, denormals)\n");
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

static double rel(double a, double b)
{
    double m = fmax(fabs(a), fabs(b));
    return m > 0 ? fabs(a - b) / m : 0;
}

static void t_observe_vs_cpu(void)
{
    need_gpu();
    char cfg[1024], w[1024], dir[1024];
    snprintf(cfg, sizeof cfg, "%s/models/yolo-fastest-1.1-xl/yolo-fastest-1.1-xl.cfg", test_data_dir());
    snprintf(w, sizeof w, "%s/models/yolo-fastest-1.1-xl/yolo-fastest-1.1-xl.weights", test_data_dir());
    snprintf(dir, sizeof dir, "%s/datasets/coco-mini/val2017_unlabelled/images", test_data_dir());
    char *paths[N_IMG];
    int n = list_jpg(dir, paths, N_IMG);
    if (n < N_IMG) {
        for (int i = 0; i < n; i++) free(paths[i]);
        TEST_SKIP("%d images in %s (YQ_DATA)", n, dir);
    }
    yq_import_opt io = { 0 };
    yq_graph *g = NULL;
    yq_calib_stats *cpu = NULL, *gpu = NULL;
    OK(yq_darknet_load(cfg, w, &io, &g, &err));
    OK(yq_calib_observe(g, paths, n, g->letter_box, NULL, NULL, NULL, NULL, &cpu, &err));
    yq_calib_cuda_opt o = yq_calib_cuda_defaults();
    o.batch = 3;
    OK(yq_calib_observe_cuda(g, paths, n, g->letter_box, &o, NULL, NULL, &gpu, &err));
    CHECK(gpu->images == cpu->images && gpu->skipped == cpu->skipped && gpu->n_nodes == cpu->n_nodes);
    CHECK(!memcmp(gpu->images_sha256, cpu->images_sha256, 32));
    static const char *const mnames[4] = { "max", "percentile:99.99", "mse", "kl" };
    static const double bounds[4] = { B_MAX, B_PCT, B_MSE, INFINITY };
    yq_calib_method meth[4];
    for (int k = 0; k < 4; k++) OK(yq_calib_method_parse(mnames[k], &meth[k], &err));
    double worst[4] = { 0 }, wch_max = 0, wch_mean = 0, moved = 0;
    int wnode[4] = { 0 }, nodes = 0, same_range = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const yq_node *nd = &g->nodes[i];
        const yq_hist *hc = &cpu->hist[i], *hg = &gpu->hist[i];
        CHECKF(hc->n == hg->n && hc->n_nan == hg->n_nan && hc->n_inf == hg->n_inf, "node %d (%s): n %g, CPU %g", i,
               nd->name, hg->n, hc->n);
        if (hc->n == 0) continue;
        nodes++;
        same_range += hc->range == hg->range;
        for (int k = 0; k < 4; k++) {
            double r = rel(yq_thresh(hg, &meth[k], 8), yq_thresh(hc, &meth[k], 8));
            if (r > worst[k]) { worst[k] = r; wnode[k] = i; }
            CHECKF(r <= bounds[k], "node %d (%s): %s threshold %g, CPU %g (relative %.3g > %.3g)", i, nd->name, mnames[k],
                   (double)yq_thresh(hg, &meth[k], 8), (double)yq_thresh(hc, &meth[k], 8), r, bounds[k]);
        }
        if (hc->range == hg->range) {
            double dsum = 0;
            for (int k = 0; k < hc->nbins; k++) dsum += fabs(hc->counts[k] - hg->counts[k]);
            if (dsum / (2 * hc->n) > moved) moved = dsum / (2 * hc->n);
        }
        double am = hc->absmax > 0 ? hc->absmax : 1;
        for (int c = 0; c < nd->out.c; c++) {
            double dx = fabs((double)gpu->ch_max[i][c] - (double)cpu->ch_max[i][c]) / am;
            double dm = fabs(gpu->ch_mean[i][c] - cpu->ch_mean[i][c]) / am;
            if (dx > wch_max) wch_max = dx;
            if (dm > wch_mean) wch_mean = dm;
            CHECKF(dx <= B_CH && dm <= B_CH, "node %d (%s) channel %d: max %g / mean %g, CPU %g / %g", i, nd->name, c,
                   (double)gpu->ch_max[i][c], gpu->ch_mean[i][c], (double)cpu->ch_max[i][c], cpu->ch_mean[i][c]);
        }
    }
    printf("#   yolo-fastest-1.1-xl, %d images, %d nodes (GPU batch 3): same histogram range on %d nodes\n", n, nodes,
           same_range);
    for (int k = 0; k < 4; k++)
        printf("#   %-17s threshold: worst relative difference %.3g (node %d %s), bound %.3g\n", mnames[k], worst[k],
               wnode[k], g->nodes[wnode[k]].name, bounds[k]);
    printf("#   per-channel max |x|: worst |diff| / node max %.3g; mean: %.3g (bound %.3g); values in another bin: "
           "at most %.3g of a tensor\n", wch_max, wch_mean, B_CH, moved);
    yq_calib_stats_free(cpu);
    yq_calib_stats_free(gpu);
    yq_graph_free(g);
    for (int i = 0; i < n; i++) free(paths[i]);
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
    TEST(t_observe_vs_cpu);
    return test_done();
}
