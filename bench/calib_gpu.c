/* calib_gpu: calibration time, CPU engine against the GPU (exact FP32 kernels + device histograms),
 * on the same model and images in one process.
 *
 *   calib_gpu MODEL [--weights FILE|synthetic[:SEED]] [--size N] --calib DIR [--images N]
 *             [--batch N] [--threads N] [--cpu-images N] [--warm N] [--cpu-only]
 *   calib_gpu --write-raw IMAGE...      IMAGE.rgb sidecars for a build without OpenCV
 *
 * MODEL as yquant takes it.  The first --images (default 64) *.jpg of DIR, sorted; when DIR
 * has fewer, the list repeats (said in the output).  Timed, wall clock:
 *   GPU cold   the first yq_calib_observe_cuda of the process: CUDA context, cuDNN's
 *              libraries, the plan, the images, the runs, the download: what `yquant
 *              quantize` pays;
 *   GPU warm   --warm further calls (default 2; median): the context already made;
 *   CPU        yq_calib_observe (the CPU engine: the exact FP32 chains, on the host's cores) on
 *              --cpu-images images (default all of them; fewer is extrapolated linearly and
 *              said so).  --cpu-only: the CPU alone (a machine without a GPU).
 * Then the ratios CPU / GPU, and whether the GPU's statistics equal the CPU's byte for byte
 * (if not: the first difference, and the worst relative threshold difference per method).  The last line is
 * machine-readable: RESULT cpu_s=... gpu_cold_s=... gpu_warm_s=... ratio_cold=... ratio_warm=...
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "calib/observe.h"
#include "calib/observe_cuda.h"
#include "datasets/image.h"
#include "kernels/cuda.h"
#include "kernels/cudnn_fp.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int usage(void)
{
    fprintf(stderr, "usage: calib_gpu MODEL [--weights FILE|synthetic[:SEED]] [--size N] --calib DIR [--images N]\n"
                    "                 [--batch N] [--threads N] [--cpu-images N] [--warm N] [--cpu-only]\n"
                    "       calib_gpu --write-raw IMAGE...\n");
    return 2;
}

static int write_raw(int n, char **paths)
{
    int bad = 0;
    for (int i = 0; i < n; i++) {
        yq_error err;
        if (yq_image_write_raw(paths[i], &err) != YQ_OK) {
            fprintf(stderr, "%s\n", err.msg);
            bad++;
        }
    }
    return bad ? 1 : 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The *.jpg of dir, sorted; *n of them. */
static char **list_jpg(const char *dir, int *n)
{
    DIR *d = opendir(dir);
    if (!d) return NULL;
    char **v = NULL;
    int m = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l <= 4 || strcmp(e->d_name + l - 4, ".jpg")) continue;
        if (m == cap) {
            cap = cap ? 2 * cap : 64;
            char **nv = realloc(v, sizeof *v * (size_t)cap);
            if (!nv) break;
            v = nv;
        }
        size_t sz = strlen(dir) + l + 2;
        if (!(v[m] = malloc(sz))) break;
        snprintf(v[m++], sz, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (v) qsort(v, (size_t)m, sizeof *v, cmp_str);
    *n = m;
    return v;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double rel(double a, double b)
{
    double m = fmax(fabs(a), fabs(b));
    return m > 0 ? fabs(a - b) / m : 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--write-raw")) return write_raw(argc - 2, argv + 2);
    const char *model = NULL, *weights = NULL, *dir = NULL;
    int size = 0, n_img = 64, batch = 0, threads = 0, cpu_n = -1, warm = 2, cpu_only = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--cpu-only")) cpu_only = 1;
        else if (!v && a[0] == '-') return usage();
        else if (!strcmp(a, "--weights")) weights = argv[++i];
        else if (!strcmp(a, "--size")) size = atoi(argv[++i]);
        else if (!strcmp(a, "--calib")) dir = argv[++i];
        else if (!strcmp(a, "--images")) n_img = atoi(argv[++i]);
        else if (!strcmp(a, "--batch")) batch = atoi(argv[++i]);
        else if (!strcmp(a, "--threads")) threads = atoi(argv[++i]);
        else if (!strcmp(a, "--cpu-images")) cpu_n = atoi(argv[++i]);
        else if (!strcmp(a, "--warm")) warm = atoi(argv[++i]);
        else if (a[0] == '-' || model) return usage();
        else model = a;
    }
    if (!model || !dir || n_img < 1 || warm < 0 || warm > 20) return usage();
    if (cpu_n < 0 || cpu_n > n_img) cpu_n = n_img;

    yq_error err;
    yq_model_paths mp;
    yq_graph *g = NULL;
    yq_import_opt io = { 0 };
    io.width = io.height = size;
    if (yq_model_resolve(model, weights, &mp, &err) != YQ_OK) goto fail;
    io.synthetic = mp.synthetic;
    io.seed = mp.seed;
    if (yq_darknet_load(mp.cfg, mp.synthetic ? NULL : mp.weights, &io, &g, &err) != YQ_OK) goto fail;

    int have = 0;
    char **found = list_jpg(dir, &have);
    if (!found || have == 0) {
        fprintf(stderr, "calib_gpu: no *.jpg in %s\n", dir);
        return 1;
    }
    char **paths = malloc(sizeof *paths * (size_t)n_img);
    if (!paths) return 1;
    for (int i = 0; i < n_img; i++) paths[i] = found[i % have];
    double gflop = 0;
    for (int i = 0; i < g->n_nodes; i++) gflop += yq_node_flops(g, &g->nodes[i]) * 1e-9;
    long vals = 0;
    for (int i = 0; i < g->n_nodes; i++) vals += yq_shape_size(g->nodes[i].out);
    printf("model: %s (%s), input %dx%d, %d nodes, %.1f GFLOP and %.1f M activation values per image\n", mp.cfg,
           mp.synthetic ? "synthetic weights" : mp.weights, g->nodes[0].out.w, g->nodes[0].out.h, g->n_nodes, gflop,
           (double)vals * 1e-6);
    printf("images: %d from %s (%d distinct%s)\n", n_img, dir, have < n_img ? have : n_img,
           have < n_img ? ", the list repeats" : "");

    yq_calib_stats *gs = NULL, *cs = NULL;
    double t0;
    if (cpu_only) {
        printf("CPU: the exact FP32 chains (kernels/cpu_fp32.h yq_f32_conv_exact)\n");
        t0 = now_s();
        if (yq_calib_observe(g, paths, cpu_n, g->letter_box, NULL, NULL, NULL, NULL, &cs, &err) != YQ_OK) goto fail;
        double cpu = now_s() - t0;
        printf("CPU:      %8.3f s  (%d images, %.3f s per image)\n", cpu, cpu_n, cpu / cpu_n);
        yq_calib_stats_free(cs);
        return 0;
    }
    char why[128];
    if (!yq_calib_cuda_available(why, sizeof why)) {
        fprintf(stderr, "calib_gpu: %s\n", why);
        return 1;
    }
    yq_calib_cuda_times t;
    yq_calib_cuda_opt o = yq_calib_cuda_defaults();
    o.batch = batch;
    o.threads = threads;
    o.times = &t;
    t0 = now_s();
    if (yq_calib_observe_cuda(g, paths, n_img, g->letter_box, &o, NULL, NULL, &gs, &err) != YQ_OK) goto fail;
    double cold = now_s() - t0;
    char dev[128] = "?", ver[128];
    yq_cuda_device_name(dev, sizeof dev, &err);
    yq_cudnn_version(ver, sizeof ver);
    printf("gpu: %s, %s; batch %d, %d decoding threads\n", dev, ver, t.batch, t.threads);
    printf("GPU cold: %8.3f s  (set-up+plan %.3f s, images on the host %.3f s: the first batch before the GPU "
           "starts, the rest while it runs; waiting for the GPU %.3f s)\n", cold, t.plan_ms * 1e-3, t.load_ms * 1e-3,
           t.wait_ms * 1e-3);
    double wt[20], wmed = cold;
    yq_calib_cuda_times tw = t;
    for (int k = 0; k < warm; k++) {
        yq_calib_stats *x = NULL;
        o.times = &tw;
        t0 = now_s();
        if (yq_calib_observe_cuda(g, paths, n_img, g->letter_box, &o, NULL, NULL, &x, &err) != YQ_OK) goto fail;
        wt[k] = now_s() - t0;
        yq_calib_stats_free(x);
        printf("GPU warm: %8.3f s  (plan %.3f s, images on the host %.3f s, waiting for the GPU %.3f s)\n", wt[k],
               tw.plan_ms * 1e-3, tw.load_ms * 1e-3, tw.wait_ms * 1e-3);
    }
    if (warm > 0) {
        qsort(wt, (size_t)warm, sizeof *wt, cmp_double);
        wmed = warm % 2 ? wt[warm / 2] : 0.5 * (wt[warm / 2 - 1] + wt[warm / 2]);
    }
    printf("CPU: the exact FP32 chains (kernels/cpu_fp32.h yq_f32_conv_exact)\n");
    t0 = now_s();
    if (yq_calib_observe(g, paths, cpu_n, g->letter_box, NULL, NULL, NULL, NULL, &cs, &err) != YQ_OK) goto fail;
    double cpu = now_s() - t0, cpu_all = cpu * n_img / cpu_n;
    printf("CPU:      %8.3f s  (%d images, %.3f s per image%s)\n", cpu, cpu_n, cpu / cpu_n,
           cpu_n < n_img ? "; extrapolated to all images below" : "");

    /* The two engines' statistics, when they saw the same images: equal byte for byte
     * (calib/observe.h), or the first difference and the worst threshold moves. */
    if (cpu_n == n_img) {
        char diff[256];
        int d = yq_calib_stats_cmp(gs, cs, g, diff, sizeof diff);
        printf("GPU vs CPU statistics: %s\n", d ? diff : "identical, byte for byte");
        static const char *const mn[4] = { "max", "percentile:99.99", "mse", "kl" };
        for (int k = 0; d && k < 4; k++) {
            yq_calib_method m;
            if (yq_calib_method_parse(mn[k], &m, &err) != YQ_OK) goto fail;
            double w = 0;
            int wn = 0;
            for (int i = 0; i < g->n_nodes; i++) {
                if (cs->hist[i].n == 0) continue;
                double r = rel(yq_thresh(&gs->hist[i], &m, 8), yq_thresh(&cs->hist[i], &m, 8));
                if (r > w) { w = r; wn = i; }
            }
            printf("GPU vs CPU thresholds, %-16s: worst relative difference %.3g (node %d)\n", mn[k], w, wn);
        }
    }
    printf("\n| engine | images | wall s | s per image | CPU / this |\n|---|---:|---:|---:|---:|\n");
    printf("| CPU (yq_calib_observe)%s | %d | %.3f | %.4f | 1.0 |\n", cpu_n < n_img ? ", extrapolated" : "", n_img,
           cpu_all, cpu_all / n_img);
    printf("| GPU cold (first call: CUDA + cuDNN start) | %d | %.3f | %.4f | %.1f |\n", n_img, cold, cold / n_img,
           cpu_all / cold);
    if (warm > 0)
        printf("| GPU warm (median of %d) | %d | %.3f | %.4f | %.1f |\n", warm, n_img, wmed, wmed / n_img, cpu_all / wmed);
    printf("\nRESULT images=%d cpu_s=%.3f gpu_cold_s=%.3f gpu_warm_s=%.3f ratio_cold=%.1f ratio_warm=%.1f\n", n_img,
           cpu_all, cold, wmed, cpu_all / cold, cpu_all / wmed);
    yq_calib_stats_free(gs);
    yq_calib_stats_free(cs);
    yq_graph_free(g);
    free(paths);
    for (int i = 0; i < have; i++) free(found[i]);
    free(found);
    return 0;
fail:
    fprintf(stderr, "calib_gpu: %s\n", err.msg);
    return 1;
}
