/* bench_cpu: FP32 CPU throughput of yquant's executor on one model.
 *
 *   bench_cpu [MODEL] [--batch N] [--runs N] [--warmup N] [--threads N] [--json FILE]
 *
 * MODEL is a folder with one .cfg and one .weights, a .cfg beside its .weights, or the
 * name of a model under $YQ_DATA/models (YQ_DATA defaults to ../shared); the default is
 * yolo-fastest-1.1-xl.  The graph is planned at --batch (default 1) at the cfg's input size,
 * fed a fixed deterministic input (a smooth pattern in [0,1], the same one
 * bench/darknet_peer/bench_darknet.c uses), run --warmup times (default 3) and then --runs
 * times (default 50) under a monotonic clock.  --threads sets OpenBLAS's thread count
 * (openblas_set_num_threads; default: what OpenBLAS picked from OPENBLAS_NUM_THREADS or the
 * core count), which is what sgemm (dense and 1x1 conv) runs on; yquant's own kernels
 * (depthwise conv, pooling, shortcut, route, upsample) run on the calling thread.  The
 * process's CPU time over wall time during the timed runs is printed as CPU/wall.
 *
 * Printed: median and mean ms per batch, ms per image and images/s; then a profile from
 * max(5, runs/5) further runs with a yq_node_hook that reads the clock after every node (the
 * hook runs after each node, so the time since the previous hook is that node's time):
 * time per op type (conv split into dense kxk, pointwise 1x1 and depthwise) and the top 10
 * layers.  The last line is machine-readable:
 *   RESULT engine=yquant model=... batch=B threads=T median_ms=... img_s=...
 * --json FILE also writes the figures as one JSON object.  Exit status 1 on any failure
 * (2 on a usage error).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <cblas.h>
#include "ir/ir.h"
#include "runtime/plan.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The deterministic input, per image c x h x w: a smooth pattern in [0,1] (image-like, no
 * denormals), identical in bench_darknet.c. */
static void fill_input(float *x, int c, int h, int w)
{
    for (int k = 0; k < c; k++)
        for (int y = 0; y < h; y++)
            for (int i = 0; i < w; i++)
                x[((long)k * h + y) * w + i] = (float)((i * 7 + y * 13 + k * 29) % 256) / 255.f;
}

/* ---- the profiling hook ---- */

enum { K_CONV, K_CONV1, K_DW, K_SHORTCUT, K_ROUTE, K_UPSAMPLE, K_MAXPOOL, K_OTHER, K_COUNT };
static const char *kind_name[K_COUNT] = { "conv kxk (im2col+sgemm)", "conv 1x1 (sgemm)", "conv depthwise",
                                          "shortcut", "route", "upsample", "maxpool", "other" };

typedef struct prof {
    int n;
    double *node_ms;   /* summed over the profiled runs */
    double last;
} prof;

static void hook(void *ctx, const yq_graph *g, int id, const void *data, int batch)
{
    (void)g; (void)data; (void)batch;
    prof *p = ctx;
    double t = now_ms();
    if (id > 0) p->node_ms[id] += t - p->last;
    p->last = t;
}

static int is_dw(const yq_graph *g, const yq_node *n)
{
    yq_shape is = yq_node_in_shape(g, n);
    return n->op == YQ_OP_CONV && n->p.conv.groups == is.c && n->p.conv.filters == is.c && is.c > 1;
}

static int node_kind(const yq_graph *g, const yq_node *n)
{
    switch (n->op) {
    case YQ_OP_CONV:
        if (is_dw(g, n)) return K_DW;
        return n->p.conv.size == 1 && n->p.conv.stride == 1 && n->p.conv.pad == 0 ? K_CONV1 : K_CONV;
    case YQ_OP_SHORTCUT: return K_SHORTCUT;
    case YQ_OP_ROUTE: return K_ROUTE;
    case YQ_OP_UPSAMPLE: return K_UPSAMPLE;
    case YQ_OP_MAXPOOL: return K_MAXPOOL;
    default: return K_OTHER;
    }
}

static void describe(const yq_graph *g, const yq_node *n, char *s, size_t len)
{
    yq_shape is = yq_node_in_shape(g, n), os = n->out;
    if (n->op == YQ_OP_CONV)
        snprintf(s, len, "%dx%dx%d -> %dx%dx%d %dx%d/%d%s %s", is.c, is.h, is.w, os.c, os.h, os.w,
                 n->p.conv.size, n->p.conv.size, n->p.conv.stride, is_dw(g, n) ? " dw" : "",
                 yq_act_name(n->act));
    else
        snprintf(s, len, "%dx%dx%d -> %dx%dx%d", is.c, is.h, is.w, os.c, os.h, os.w);
}

static const double *g_sort_ms;   /* qsort has no context argument in C11 */
static int cmp_node_ms(const void *a, const void *b)
{
    double x = g_sort_ms[*(const int *)a], y = g_sort_ms[*(const int *)b];
    if (x != y) return x < y ? 1 : -1;
    return *(const int *)a - *(const int *)b;
}

/* ---- main ---- */

static void usage(void)
{
    fprintf(stderr, "usage: bench_cpu [MODEL] [--batch N] [--runs N] [--warmup N] [--threads N] [--json FILE]\n");
    exit(2);
}

static int int_arg(const char *opt, const char *v, int lo, int hi)
{
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || *end || end == v || x < lo || x > hi) {
        fprintf(stderr, "bench_cpu: %s: expected an integer in [%d, %d], got '%s'\n", opt, lo, hi, v ? v : "");
        exit(2);
    }
    return (int)x;
}

static int die_err(const yq_error *err)
{
    fprintf(stderr, "bench_cpu: %s\n", err->msg);
    return 1;
}

int main(int argc, char **argv)
{
    const char *model = "yolo-fastest-1.1-xl", *json = NULL;
    int batch = 1, runs = 50, warmup = 3, threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--batch")) batch = int_arg(a, i + 1 < argc ? argv[++i] : NULL, 1, 4096);
        else if (!strcmp(a, "--runs")) runs = int_arg(a, i + 1 < argc ? argv[++i] : NULL, 1, 1000000);
        else if (!strcmp(a, "--warmup")) warmup = int_arg(a, i + 1 < argc ? argv[++i] : NULL, 0, 1000000);
        else if (!strcmp(a, "--threads")) threads = int_arg(a, i + 1 < argc ? argv[++i] : NULL, 1, 1024);
        else if (!strcmp(a, "--json")) { if (++i >= argc) usage(); json = argv[i]; }
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) usage();
        else if (a[0] == '-') usage();
        else model = a;
    }

    /* MODEL: a path, or a name under $YQ_DATA/models. */
    char path[1024];
    struct stat sb;
    snprintf(path, sizeof path, "%s", model);
    if (stat(path, &sb) != 0) {
        const char *d = getenv("YQ_DATA");
        snprintf(path, sizeof path, "%s/models/%s", d && *d ? d : "../shared", model);
    }
    yq_error err;
    yq_model_paths mp;
    if (yq_model_resolve(path, NULL, &mp, &err) != YQ_OK) return die_err(&err);
    yq_import_opt opt = { 0 };
    opt.synthetic = mp.synthetic;
    opt.seed = mp.seed;
    yq_graph *g;
    if (yq_darknet_load(mp.cfg, mp.synthetic ? NULL : mp.weights, &opt, &g, &err) != YQ_OK) return die_err(&err);
    yq_plan *p;
    if (yq_plan_new(g, batch, 0, &p, &err) != YQ_OK) return die_err(&err);

    if (threads) openblas_set_num_threads(threads);
    int blas_threads = openblas_get_num_threads();

    yq_shape in = g->nodes[0].out;
    long in_sz = yq_shape_size(in);
    float *x = yq_plan_input(p);
    for (int b = 0; b < batch; b++) fill_input(x + b * in_sz, in.c, in.h, in.w);
    float *input = malloc(sizeof(float) * (size_t)(in_sz * batch));
    if (!input) { fprintf(stderr, "bench_cpu: out of memory\n"); return 1; }
    memcpy(input, x, sizeof(float) * (size_t)(in_sz * batch));

    double gflop = 0;
    for (int i = 1; i < g->n_nodes; i++) gflop += yq_node_flops(g, &g->nodes[i]) * 1e-9;

    printf("model:   %s (%s)\n", model, mp.cfg);
    printf("input:   %dx%dx%d, batch %d, %.3f GFLOP/image, activations %.1f MiB\n", in.c, in.h, in.w,
           batch, gflop, (double)yq_plan_bytes(p) / (1 << 20));
    printf("threads: %d for OpenBLAS sgemm, 1 for yquant's own kernels; %s\n", blas_threads, openblas_get_config());

    for (int r = 0; r < warmup; r++)
        if (yq_exec_fp32(p, input, NULL, NULL, &err) != YQ_OK) return die_err(&err);

    double *t = malloc(sizeof(double) * (size_t)runs);
    if (!t) { fprintf(stderr, "bench_cpu: out of memory\n"); return 1; }
    double sum = 0, c0 = cpu_ms(), w0 = now_ms();
    for (int r = 0; r < runs; r++) {
        double t0 = now_ms();
        if (yq_exec_fp32(p, input, NULL, NULL, &err) != YQ_OK) return die_err(&err);
        t[r] = now_ms() - t0;
        sum += t[r];
    }
    double cpu_total = cpu_ms() - c0, cpu_util = cpu_total / (now_ms() - w0);
    double cpu_per_img = cpu_total / ((double)runs * batch);
    double mean = sum / runs, med = median(t, runs), tmin = t[0], tmax = t[runs - 1];
    double img_s = batch * 1e3 / med;
    printf("timed:   %d runs after %d warm-up: median %.3f ms/batch, mean %.3f, min %.3f, max %.3f\n",
           runs, warmup, med, mean, tmin, tmax);
    printf("         %.3f ms/image, %.1f images/s, %.2f GFLOP/s, CPU/wall %.2f, CPU %.3f ms/image\n", med / batch,
           img_s, gflop * img_s, cpu_util, cpu_per_img);

    /* Profile: per-node time from the hook. */
    prof pr = { g->n_nodes, calloc((size_t)g->n_nodes, sizeof(double)), 0 };
    int *order = malloc(sizeof(int) * (size_t)g->n_nodes);
    if (!pr.node_ms || !order) { fprintf(stderr, "bench_cpu: out of memory\n"); return 1; }
    int pruns = runs / 5 > 5 ? runs / 5 : 5;
    double ptot = 0;
    for (int r = 0; r < pruns; r++) {
        double t0 = now_ms();
        if (yq_exec_fp32(p, input, hook, &pr, &err) != YQ_OK) return die_err(&err);
        ptot += now_ms() - t0;
    }
    double kind_ms[K_COUNT] = { 0 }, kind_fl[K_COUNT] = { 0 };
    int kind_n[K_COUNT] = { 0 };
    double node_sum = 0;
    for (int i = 1; i < g->n_nodes; i++) {
        pr.node_ms[i] /= pruns;
        int k = node_kind(g, &g->nodes[i]);
        if (g->nodes[i].op == YQ_OP_DROPOUT || yq_op_is_head(g->nodes[i].op))
            k = K_OTHER;
        kind_ms[k] += pr.node_ms[i];
        kind_fl[k] += yq_node_flops(g, &g->nodes[i]) * batch;
        kind_n[k]++;
        node_sum += pr.node_ms[i];
    }
    printf("\nprofile: %d runs with a per-node clock hook, %.3f ms/batch (nodes sum to %.3f)\n", pruns,
           ptot / pruns, node_sum);
    printf("  %-26s %6s %10s %7s %9s\n", "op type", "nodes", "ms/batch", "%", "GFLOP/s");
    for (int k = 0; k < K_COUNT; k++) {
        if (!kind_n[k]) continue;
        printf("  %-26s %6d %10.3f %6.1f%% %9.2f\n", kind_name[k], kind_n[k], kind_ms[k],
               100 * kind_ms[k] / node_sum, kind_ms[k] > 0 ? kind_fl[k] * 1e-6 / kind_ms[k] : 0.0);
    }
    for (int i = 0; i < g->n_nodes; i++) order[i] = i;
    g_sort_ms = pr.node_ms;
    qsort(order + 1, (size_t)(g->n_nodes - 1), sizeof(int), cmp_node_ms);
    printf("\n  top 10 layers by time:\n  %5s  %-9s %-42s %9s %7s %9s\n", "layer", "op", "shape", "ms/batch",
           "%", "GFLOP/s");
    for (int j = 1; j <= 10 && j < g->n_nodes; j++) {
        const yq_node *n = &g->nodes[order[j]];
        char s[128];
        describe(g, n, s, sizeof s);
        double ms = pr.node_ms[order[j]];
        printf("  %5d  %-9s %-42s %9.3f %6.1f%% %9.2f\n", n->layer, yq_op_name(n->op), s, ms, 100 * ms / node_sum,
               ms > 0 ? yq_node_flops(g, n) * batch * 1e-6 / ms : 0.0);
    }

    printf("\nRESULT engine=yquant model=%s batch=%d threads=%d median_ms=%.3f mean_ms=%.3f min_ms=%.3f ms_per_img=%.3f "
           "min_ms_per_img=%.3f cpu_ms_per_img=%.3f img_s=%.2f cpu_util=%.2f\n",
           model, batch, blas_threads, med, mean, tmin, med / batch, tmin / batch, cpu_per_img, img_s, cpu_util);

    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) { fprintf(stderr, "bench_cpu: %s: %s\n", json, strerror(errno)); return 1; }
        fprintf(f, "{\"engine\":\"yquant\",\"model\":\"%s\",\"cfg\":\"%s\",\"batch\":%d,\"threads\":%d,"
                   "\"runs\":%d,\"warmup\":%d,\"median_ms\":%.4f,\"mean_ms\":%.4f,\"min_ms\":%.4f,\"max_ms\":%.4f,"
                   "\"ms_per_img\":%.4f,\"cpu_ms_per_img\":%.4f,\"img_s\":%.3f,\"gflop_per_img\":%.5f,\"cpu_util\":%.3f,\"op_types\":[",
                model, mp.cfg, batch, blas_threads, runs, warmup, med, mean, tmin, tmax, med / batch, cpu_per_img, img_s, gflop,
                cpu_util);
        int first = 1;
        for (int k = 0; k < K_COUNT; k++) {
            if (!kind_n[k]) continue;
            fprintf(f, "%s{\"type\":\"%s\",\"nodes\":%d,\"ms\":%.4f}", first ? "" : ",", kind_name[k], kind_n[k],
                    kind_ms[k]);
            first = 0;
        }
        fprintf(f, "],\"top_layers\":[");
        for (int j = 1; j <= 10 && j < g->n_nodes; j++) {
            const yq_node *n = &g->nodes[order[j]];
            char s[128];
            describe(g, n, s, sizeof s);
            fprintf(f, "%s{\"layer\":%d,\"op\":\"%s\",\"shape\":\"%s\",\"ms\":%.4f}", j > 1 ? "," : "", n->layer,
                    yq_op_name(n->op), s, pr.node_ms[order[j]]);
        }
        fprintf(f, "]}\n");
        if (fclose(f) != 0) { fprintf(stderr, "bench_cpu: %s: write failed\n", json); return 1; }
    }

    free(order);
    free(pr.node_ms);
    free(t);
    free(input);
    yq_plan_free(p);
    yq_graph_free(g);
    return 0;
}
