/* yquant bench MODEL|PKG: latency and throughput of yquant's engines on one model.
 *
 * GPU: FP32 and FP16 through cuDNN (kernels/cudnn_fp.h), int8 through our own
 * kernels (runtime/exec_cuda.h).  Each configuration is planned once, warmed up,
 * then timed run by run between two CUDA events (each run waited for before the
 * next): latency is the median of those runs, as launched eagerly and as replayed
 * from a captured CUDA graph; throughput is batch / the better median.  The input
 * is on the device already (the host-to-device copy is not timed); the float
 * batch's conversion to the engine's type and layout is.
 * CPU: the FP32 engine (OpenBLAS) and the int8 reference engine, timed with the
 * monotonic clock.
 *
 * --profile adds a per-layer table ranked by time.  FP32/FP16: events recorded
 * between nodes during real runs.  int8: each node's kernels timed alone on the
 * node's shapes and types (median of runs), because the int8 executor runs a whole
 * graph per call; the table says so and gives their sum beside the end-to-end time.
 *
 * --tune (cuda, int8) first tunes every int8 conv per layer in process (runtime/
 * tune.h; --log F reuses and extends a tuning log), then adds rows for the tuned
 * network beside the untuned default: the fastest kernel of any family per layer,
 * and the fastest within dp4a and within mma alone (what tuning gains per family),
 * plus the tuning time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cjson/cJSON.h>
#include "cli/internal.h"
#include "kernels/cuda.h"
#include "kernels/cuda_bench.h"
#include "kernels/cudnn_fp.h"
#include "quant/rewrite.h"
#include "runtime/exec_cuda.h"
#include "runtime/package.h"
#include "runtime/plan.h"
#include "runtime/tune.h"

static const char *help =
    "usage: yquant bench MODEL|PKG [--batch 1,32] [--device cuda|cpu] [--precision fp32,fp16,int8]\n"
    "                    [--runs N] [--warmup N] [--json FILE] [--profile] [--no-graph] [--no-views]\n"
    "                    [--gpu-float fp32|fp16]\n"
    "                    [--head int8|float] [--layout nchw|nhwc] [--heuristic] [--legacy] [--fuse]\n"
    "                    [--tune [--log FILE] [--tuner T] [--budget S] [--trials N]]\n"
    "                    [--weights FILE|synthetic[:SEED]] [--size N|WxH]\n"
    "\n"
    "Latency and throughput of yquant's engines on MODEL (a Darknet model, as for the\n"
    "other commands) or PKG (an int8 .yqp package: int8 only).\n"
    "  --batch LIST      batch sizes (default 1)\n"
    "  --device D        cuda (default when a GPU is present) or cpu\n"
    "  --precision LIST  fp32, fp16 (cuda: cuDNN), int8 (our kernels: dp4a on the GPU, the\n"
    "                    reference engine on the CPU); default all that the device runs\n"
    "  --runs N          timed runs per configuration (default 100 on cuda, 10 on cpu);\n"
    "                    latency is their median\n"
    "  --warmup N        untimed runs first (default 10 on cuda, 2 on cpu)\n"
    "  --no-graph        cuda: time eager launches only (default: also CUDA-graph replays)\n"
    "  --no-views        cuda int8: every route copies its sources (default: concats as views\n"
    "                    where the layout allows; for measuring what the views save)\n"
    "  --profile         per-layer table ranked by time (us, %%, op, shape)\n"
    "  --head H          int8 of a plain model: quantize the head convs too (int8) or keep\n"
    "                    them in float (float, the qconfig default)\n"
    "  --layout L        cuDNN layout (default: NHWC for fp16, NCHW for fp32)\n"
    "  --heuristic       cuDNN legacy API: the heuristic's algorithm instead of timing them\n"
    "  --legacy          cuDNN legacy API only (no graph-API engines)\n"
    "  --fuse            cuDNN graph API: fuse bias + relu/leaky into the conv (runtime-\n"
    "                    compiled engines: planning takes much longer)\n"
    "  --json FILE       also write every figure as JSON ('-': stdout)\n"
    "  --tune            cuda int8: tune the kernel of every conv first (as `yquant tune`),\n"
    "                    then time the tuned network too: any family, dp4a only, mma only\n"
    "  --log FILE        --tune: the tuning log to reuse and extend (default: none)\n"
    "  --tuner T, --budget S, --trials N   --tune: as for `yquant tune` (model, 300 s, 32)\n"
    "  --gpu-float P     cuda int8: the layers kept in float (--head float, a package's float\n"
    "                    layers) in fp32 (default: their exact FP32, the CPU reference's bytes,\n"
    "                    as every other command and the packages run them) or fp16 (FP16 tensor\n"
    "                    cores, sm_80 and newer: faster on wide layers, not the validated\n"
    "                    numerics; for comparison)\n"
    "A plain model is quantized for int8 without calibration (thresholds do not change\n"
    "the speed).  The last lines are machine-readable: RESULT key=value ...\n";

enum { P_FP32 = 1, P_FP16 = 2, P_INT8 = 4 };
enum { PROF_EVENTS = 0, PROF_ISOLATED, PROF_CLOCK };

typedef struct bopt {
    int batches[16], n_batch;
    int cuda, runs, warmup, profile, graph, head_int8, heuristic, legacy, fuse, no_views, gpu_f16;
    int prec;
    yq_cudnn_layout layout;
    const char *json;
    int tune;
    yq_tune_opt topt;
} bopt;

/* Kernel choices for the tuned int8 rows: any family, dp4a only, mma only. */
enum { TUNED_ALL, TUNED_DP4A, TUNED_MMA, TUNED_KINDS };
static const char *const kind_name[TUNED_KINDS] = { "tuned", "tuned:dp4a", "tuned:mma" };
typedef struct tuned_set {
    int sm;
    yq_tuned_kernel *k[TUNED_KINDS];
    int n[TUNED_KINDS];
    yq_tune_summary sum;
    double seconds;               /* wall-clock of the tuning, conv uploads included */
} tuned_set;

/* One node's profile entry. */
typedef struct prow { int id; double us; } prow;

typedef struct result {
    const char *precision;
    char backend[96];
    int batch;
    double med, mean, min, p90;          /* eager (or CPU), ms per batch */
    double g_med, g_min;                 /* graph replays; < 0 when none */
    double img_s;
    double plan_s;                       /* planning (algorithm choice, uploads) */
    size_t mem;
    prow *prof;                          /* per node, n_nodes entries (us); NULL without --profile */
    char (*algo)[48];                    /* cuDNN: per node, what ran it */
    int prof_kind;                       /* PROF_EVENTS, PROF_ISOLATED, PROF_CLOCK */
    double prof_sum_us;
    char note[160];
    const char *kernels;                 /* int8 on cuda: "default", "tuned", "tuned:dp4a", "tuned:mma" */
} result;

/* ---- small helpers ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void stats(const double *v, int n, double *med, double *mean, double *mn, double *p90)
{
    double *s = malloc(sizeof *s * (size_t)n);
    if (!s || n < 1) {
        free(s);
        *med = *mean = *mn = *p90 = NAN;
        return;
    }
    memcpy(s, v, sizeof *s * (size_t)n);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += s[i];
    *med = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    *mean = sum / n;
    *mn = s[0];
    *p90 = s[(int)floor(0.9 * (n - 1))];
    free(s);
}

static double fmedian(const float *v, int n)
{
    double *d = malloc(sizeof *d * (size_t)(n > 0 ? n : 1)), m, a, b, c;
    if (!d) return NAN;
    for (int i = 0; i < n; i++) d[i] = v[i];
    stats(d, n, &m, &a, &b, &c);
    free(d);
    return m;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* The deterministic input of bench/bench_cpu.c: a smooth pattern in [0,1]. */
static void fill_input(float *x, int c, int h, int w, int batch)
{
    for (int b = 0; b < batch; b++)
        for (int k = 0; k < c; k++)
            for (int y = 0; y < h; y++)
                for (int i = 0; i < w; i++)
                    x[(((long)b * c + k) * h + y) * w + i] = (float)((i * 7 + y * 13 + k * 29 + b * 31) % 256) / 255.f;
}

static void shape_str(const yq_graph *g, const yq_node *n, char *buf, size_t cap)
{
    yq_shape o = n->out;
    if (n->op == YQ_OP_INPUT) {
        snprintf(buf, cap, "%dx%dx%d", o.c, o.h, o.w);
        return;
    }
    yq_shape i = yq_node_in_shape(g, n);
    int k = snprintf(buf, cap, "%dx%dx%d -> %dx%dx%d", i.c, i.h, i.w, o.c, o.h, o.w);
    if (k < 0 || (size_t)k >= cap) return;
    if (n->op == YQ_OP_CONV)
        snprintf(buf + k, cap - (size_t)k, " %dx%d/%d%s", n->p.conv.size, n->p.conv.size, n->p.conv.stride,
                 n->p.conv.groups > 1 ? (n->p.conv.groups == i.c ? " dw" : " grouped") : "");
    else if (n->op == YQ_OP_MAXPOOL)
        snprintf(buf + k, cap - (size_t)k, " %dx%d/%d", n->p.pool.size, n->p.pool.size, n->p.pool.stride);
}

static int parse_prec(const char *s)
{
    int m = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        if (!strcmp(t, "fp32")) m |= P_FP32;
        else if (!strcmp(t, "fp16")) m |= P_FP16;
        else if (!strcmp(t, "int8")) m |= P_INT8;
        else return -1;
    }
    return m;
}

/* ---- GPU: the cuDNN float engine ---- */

typedef struct prof_ctx { yq_gpu_marks *marks; } prof_ctx;
static void mark_node(void *ctx, int id, void *stream)
{
    prof_ctx *pc = ctx;
    yq_gpu_marks_record(pc->marks, id + 1, stream);
}

static yq_status cudnn_enqueue(void *ctx, yq_error *err) { return yq_cudnn_enqueue(ctx, err); }

/* Per node: median over runs of the time between the previous node's event and its own. */
static yq_status profile_marks(const yq_graph *g, void *stream, yq_status (*enq)(void *, yq_error *), void *ctx,
                               yq_gpu_marks *marks, int runs, prow *rows, yq_error *err)
{
    int n = g->n_nodes;
    float *t = malloc(sizeof *t * (size_t)n * (size_t)runs);
    if (!t) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    yq_status st = YQ_OK;
    for (int r = 0; r < runs && !st; r++) {
        yq_gpu_marks_record(marks, 0, stream);
        if ((st = enq(ctx, err)) || (st = yq_gpu_stream_sync(stream, err))) break;
        for (int i = 0; i < n && !st; i++) st = yq_gpu_marks_ms(marks, i, i + 1, &t[(size_t)i * runs + r], err);
    }
    for (int i = 0; i < n && !st; i++) rows[i] = (prow){ i, 1e3 * fmedian(&t[(size_t)i * runs], runs) };
    free(t);
    return st;
}

/* Eager and (unless --no-graph) graph timings of one enqueue function. */
static yq_status time_gpu(const bopt *o, void *stream, yq_gpu_enqueue_fn fn, void *ctx, result *r, yq_error *err)
{
    float *ms = malloc(sizeof *ms * (size_t)o->runs);
    double *d = malloc(sizeof *d * (size_t)o->runs);
    yq_status st = ms && d ? YQ_OK : yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    if (!st) st = yq_gpu_time(stream, fn, ctx, NULL, o->warmup, o->runs, ms, err);
    if (!st) {
        for (int i = 0; i < o->runs; i++) d[i] = ms[i];
        stats(d, o->runs, &r->med, &r->mean, &r->min, &r->p90);
    }
    r->g_med = r->g_min = -1;
    if (!st && o->graph) {
        void *graph = NULL;
        yq_error ge;
        if (yq_gpu_graph_capture(stream, fn, ctx, &graph, &ge) != YQ_OK) {
            snprintf(r->note, sizeof r->note, "no CUDA graph: %.120s", ge.msg);
        } else {
            st = yq_gpu_time(stream, NULL, NULL, graph, o->warmup, o->runs, ms, err);
            if (!st) {
                double a, c;
                for (int i = 0; i < o->runs; i++) d[i] = ms[i];
                stats(d, o->runs, &r->g_med, &a, &r->g_min, &c);
            }
            yq_gpu_graph_free(graph);
        }
    }
    double best = r->g_med > 0 && r->g_med < r->med ? r->g_med : r->med;
    r->img_s = r->batch / (best * 1e-3);
    free(ms);
    free(d);
    return st;
}

static yq_status bench_cudnn(const bopt *o, const yq_graph *g, int batch, int fp16, const float *x, result *r,
                             yq_error *err)
{
    yq_cudnn_opt co = yq_cudnn_defaults(fp16 ? YQ_CUDNN_FP16 : YQ_CUDNN_FP32);
    co.layout = o->layout;
    co.heuristic = o->heuristic;
    co.legacy = o->legacy;
    co.fuse = o->fuse;
    yq_cudnn_plan *p;
    double t0 = now_ms();
    yq_status st = yq_cudnn_plan_new(g, batch, &co, &p, err);
    if (st) return st;
    r->plan_s = (now_ms() - t0) * 1e-3;
    snprintf(r->backend, sizeof r->backend, "cuDNN %s", yq_cudnn_plan_desc(p));
    r->mem = yq_cudnn_plan_bytes(p);
    if (!(st = yq_cudnn_upload(p, x, err))) st = time_gpu(o, yq_cudnn_stream(p), cudnn_enqueue, p, r, err);
    if (!st && o->profile) {
        yq_gpu_marks *m = NULL;
        r->prof = calloc((size_t)g->n_nodes, sizeof *r->prof);
        if (!r->prof) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
        if (!st) st = yq_gpu_marks_new(g->n_nodes + 1, &m, err);
        if (!st) {
            prof_ctx pc = { m };
            yq_cudnn_set_hook(p, mark_node, &pc);
            int pr = o->runs < 20 ? o->runs : 20;
            st = profile_marks(g, yq_cudnn_stream(p), cudnn_enqueue, p, m, pr, r->prof, err);
            yq_cudnn_set_hook(p, NULL, NULL);
        }
        r->algo = st ? NULL : calloc((size_t)g->n_nodes, sizeof *r->algo);
        for (int i = 0; r->algo && i < g->n_nodes; i++) yq_cudnn_node_desc(p, i, r->algo[i], sizeof r->algo[i]);
        yq_gpu_marks_free(m);
    }
    yq_cudnn_plan_free(p);
    return st;
}

/* ---- GPU: the int8 engine ---- */

typedef struct int8_ctx { yq_cuda_plan *p; int batch; void *stream; } int8_ctx;
static yq_status int8_enqueue(void *ctx, yq_error *err)
{
    int8_ctx *c = ctx;
    return yq_cuda_enqueue(c->p, c->batch, c->stream, err);
}

/* Isolated timing of one node's kernels (see the file comment). */
typedef struct node_ctx {
    const yq_graph *g;
    const yq_node *n;
    const yq_qnode *q;
    yq_cuda_conv *conv;
    yq_dtensor in[YQ_MAX_SRC], out;
    int batch;
    void *stream;
    /* a conv the plan fuses with its shortcut: the residual, the shortcut's parameters */
    yq_dtensor res;
    const yq_qnode *sq;
    int res_first, fused;
} node_ctx;

static yq_status node_enqueue(void *ctx, yq_error *err)
{
    node_ctx *c = ctx;
    const yq_node *n = c->n;
    switch (n->op) {
    case YQ_OP_CONV:
        if (c->fused)
            return yq_cuda_conv_run_add(c->conv, &c->in[0], &c->res, c->sq, c->res_first, &c->out, c->batch, c->stream, err);
        return yq_cuda_conv_run(c->conv, &c->in[0], &c->out, c->batch, c->stream, err);
    case YQ_OP_SHORTCUT: return yq_cuda_shortcut(&c->in[0], &c->in[1], c->q, n->act, &c->out, c->batch, c->stream, err);
    case YQ_OP_ROUTE: return yq_cuda_route(c->in, n->n_src, &n->p.route, &c->out, c->batch, c->stream, err);
    case YQ_OP_UPSAMPLE: return yq_cuda_upsample(&c->in[0], n->p.up.stride, &c->out, c->batch, c->stream, err);
    case YQ_OP_MAXPOOL: return yq_cuda_maxpool(&c->in[0], &n->p.pool, &c->out, c->batch, c->stream, err);
    default: return yq_cuda_convert(&c->in[0], &c->out, c->batch, c->stream, err);
    }
}

static yq_status profile_int8_isolated(const bopt *o, const yq_graph *g, yq_cuda_plan *plan, int batch,
                                       void *stream, prow *rows, yq_error *err)
{
    size_t maxb = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        yq_shape s = g->nodes[i].out;
        size_t b = yq_dlayout_bytes(YQ_F32, s.c, s.h, s.w) * (size_t)batch;   /* F32 is the largest layout */
        if (b > maxb) maxb = b;
    }
    void *din = NULL, *din2 = NULL, *dout = NULL;
    unsigned char *h = malloc(maxb);
    yq_status st = h ? YQ_OK : yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    /* Bytes in 0x20..0x3f: positive int8 values, and small normal floats where read as F32. */
    uint32_t s = 12345;
    for (size_t i = 0; h && i < maxb; i++) {
        s ^= s << 13; s ^= s >> 17; s ^= s << 5;
        h[i] = (unsigned char)(0x20 + (s & 0x1f));
    }
    if (!st) st = yq_cuda_malloc(&din, maxb, err);
    if (!st) st = yq_cuda_malloc(&din2, maxb, err);
    if (!st) st = yq_cuda_malloc(&dout, maxb, err);
    if (!st) st = yq_cuda_h2d(din, h, maxb, err);
    if (!st) st = yq_cuda_h2d(din2, h, maxb, err);
    free(h);
    int pr = o->runs < 20 ? o->runs : 20;
    for (int i = 0; i < g->n_nodes && !st; i++) {
        const yq_node *n = &g->nodes[i];
        rows[i] = (prow){ i, 0 };
        if (i == 0 || n->op == YQ_OP_DROPOUT || yq_op_is_head(n->op)) continue;
        if (!yq_cuda_plan_runs(plan, i)) continue;   /* a route the plan makes a view: nothing runs */
        node_ctx c;
        memset(&c, 0, sizeof c);
        c.g = g; c.n = n; c.q = &g->q[i]; c.batch = batch; c.stream = stream;
        for (int k = 0; k < n->n_src; k++) {
            const yq_node *sn = &g->nodes[n->src[k]];
            yq_dtype t = yq_node_dtype(g, n->src[k]);
            /* what the op reads: int8 ops read S8 (the engine converts float sources first) */
            if (!g->q[i].float_op && t == YQ_F32) t = YQ_S8;
            if (!g->q[i].float_op && n->op != YQ_OP_CONV && t == YQ_U8) t = YQ_S8;
            c.in[k] = (yq_dtensor){ k == 1 && n->op == YQ_OP_SHORTCUT ? din2 : din, t, sn->out.c, sn->out.h, sn->out.w,
                                    g->q[n->src[k]].scale, g->q[n->src[k]].qmin, g->q[n->src[k]].qmax, 0 };
        }
        c.out = (yq_dtensor){ dout, yq_node_dtype(g, i), n->out.c, n->out.h, n->out.w, g->q[i].scale, g->q[i].qmin,
                              g->q[i].qmax, 0 };
        /* a conv: the plan's own (its kernel configuration, tuned or not, and its float
         * precision), with the add of a shortcut the plan fuses into it */
        if (n->op == YQ_OP_CONV) {
            c.conv = yq_cuda_plan_conv(plan, i);
            int j = yq_cuda_plan_fused(plan, i);
            if (!c.conv) {
                st = yq_fail(err, YQ_ERR_INVALID_ARG, "%s: the plan has no conv", n->name);
                break;
            }
            if (j >= 0) {
                int other = yq_plan_pass_source(g, g->nodes[j].src[0]) == i ? g->nodes[j].src[1] : g->nodes[j].src[0];
                const yq_node *on = &g->nodes[other];
                c.fused = 1;
                c.sq = &g->q[j];
                c.res_first = g->nodes[j].src[0] == other;
                c.res = (yq_dtensor){ din2, YQ_S8, on->out.c, on->out.h, on->out.w, g->q[other].scale, g->q[other].qmin,
                                      g->q[other].qmax, 0 };
                c.out.scale = g->q[j].scale;
                c.out.qmin = g->q[j].qmin;
                c.out.qmax = g->q[j].qmax;
            }
        }
        float med = 0;
        st = yq_gpu_median_ms(stream, node_enqueue, &c, 2, pr, &med, err);
        rows[i].us = 1e3 * (double)med;
    }
    yq_cuda_free(din);
    yq_cuda_free(din2);
    yq_cuda_free(dout);
    return st;
}

static yq_status bench_int8_gpu(const bopt *o, const yq_graph *g, int batch, const float *x, const tuned_set *ts,
                                int kind, result *r, yq_error *err)
{
    yq_cuda_plan *p = NULL;
    void *stream = NULL;
    double t0 = now_ms();
    const int flags = YQ_PLAN_KEEP_HEADS | (o->no_views ? YQ_PLAN_NO_VIEWS : 0) | (o->gpu_f16 ? YQ_PLAN_GPU_F16 : 0);
    yq_status st = yq_cuda_plan_new_flags(g, batch, 0, flags, &p, err);
    if (st) return st;
    static const char *const kind_label[TUNED_KINDS] = { "yquant int8 tuned", "yquant int8 tuned, dp4a only",
                                                         "yquant int8 tuned, mma only" };
    int applied = 0;
    if (ts && (st = yq_tune_apply(p, g, batch, ts->sm, ts->k[kind], ts->n[kind], &applied, err))) {
        yq_cuda_plan_free(p);
        return st;
    }
    r->plan_s = (now_ms() - t0) * 1e-3;
    r->kernels = ts ? kind_name[kind] : o->tune ? "default" : NULL;
    if (ts) {
        snprintf(r->backend, sizeof r->backend, "%s%s", kind_label[kind],
                 o->head_int8 ? "" : o->gpu_f16 ? " (float heads, fp16)" : " (float heads)");
        snprintf(r->note, sizeof r->note, "%d convs run their tuned kernel", applied);
    } else {
        snprintf(r->backend, sizeof r->backend, "yquant int8, untuned%s",
                 o->head_int8 ? "" : o->gpu_f16 ? " (float heads, fp16)" : " (float heads)");
    }
    r->mem = yq_cuda_plan_bytes(p);
    yq_shape is = g->nodes[0].out;
    if (!(st = yq_cuda_stream_new(&stream, err)) &&
        !(st = yq_cuda_h2d(yq_cuda_plan_input(p), x, sizeof(float) * (size_t)yq_shape_size(is) * batch, err))) {
        int8_ctx c = { p, batch, stream };
        st = time_gpu(o, stream, int8_enqueue, &c, r, err);
    }
    if (!st && o->profile && (!ts || kind == TUNED_ALL)) {   /* each node alone, on the plan's (tuned) convs */
        r->prof = calloc((size_t)g->n_nodes, sizeof *r->prof);
        r->prof_kind = PROF_ISOLATED;
        st = r->prof ? profile_int8_isolated(o, g, p, batch, stream, r->prof, err) : yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    }
    yq_cuda_plan_free(p);
    yq_cuda_stream_free(stream);
    return st;
}

/* ---- CPU ---- */

typedef struct cpu_prof { double last; double *node_ms; } cpu_prof;
static void cpu_hook(void *ctx, const yq_graph *g, int id, const void *data, int batch)
{
    (void)g; (void)data; (void)batch;
    cpu_prof *c = ctx;
    double t = now_ms();
    c->node_ms[id] += t - c->last;
    c->last = t;
}

static yq_status bench_cpu(const bopt *o, const yq_graph *g, int batch, int int8, const float *x, result *r, yq_error *err)
{
    yq_plan *p;
    yq_status st = yq_plan_new(g, batch, int8 ? 0 : (g->q ? YQ_PLAN_FLOAT : 0), &p, err);
    if (st) return st;
    snprintf(r->backend, sizeof r->backend, int8 ? "yquant CPU int8 (exact dgemm)" : "yquant CPU FP32 (OpenBLAS)");
    r->mem = yq_plan_bytes(p);
    double *d = malloc(sizeof *d * (size_t)o->runs);
    if (!d) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    for (int i = 0; i < o->warmup + o->runs && !st; i++) {
        double t0 = now_ms();
        st = int8 ? yq_exec_int8(p, x, NULL, NULL, err) : yq_exec_fp32(p, x, NULL, NULL, err);
        if (i >= o->warmup) d[i - o->warmup] = now_ms() - t0;
    }
    if (!st) {
        stats(d, o->runs, &r->med, &r->mean, &r->min, &r->p90);
        r->g_med = r->g_min = -1;
        r->img_s = batch / (r->med * 1e-3);
    }
    if (!st && o->profile) {
        int pr = o->runs < 5 ? o->runs : 5;
        double *acc = calloc((size_t)g->n_nodes, sizeof *acc);
        r->prof = calloc((size_t)g->n_nodes, sizeof *r->prof);
        if (!acc || !r->prof) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
        for (int k = 0; k < pr && !st; k++) {
            cpu_prof c = { now_ms(), acc };
            st = int8 ? yq_exec_int8(p, x, cpu_hook, &c, err) : yq_exec_fp32(p, x, cpu_hook, &c, err);
        }
        for (int i = 0; i < g->n_nodes && !st; i++) r->prof[i] = (prow){ i, 1e3 * acc[i] / pr };
        r->prof_kind = PROF_CLOCK;
        free(acc);
    }
    free(d);
    yq_plan_free(p);
    return st;
}

/* ---- output ---- */

static int by_us_desc(const void *a, const void *b)
{
    const prow *x = a, *y = b;
    return (x->us < y->us) - (x->us > y->us);
}

static void print_profile(const yq_graph *g, const result *r, int top)
{
    int n = g->n_nodes;
    prow *s = malloc(sizeof *s * (size_t)n);
    if (!s) return;
    memcpy(s, r->prof, sizeof *s * (size_t)n);
    double total = 0;
    for (int i = 0; i < n; i++) total += s[i].us;
    qsort(s, (size_t)n, sizeof *s, by_us_desc);
    double e2e = (r->g_med > 0 && r->g_med < r->med ? r->g_med : r->med) * 1e3;
    static const char *how[3] = { "events between nodes, median of runs", "each node's kernels timed alone, median",
                                  "clock between nodes, mean of runs" };
    printf("\nprofile: %s %s, batch %d (%s): layers sum to %.1f us, end to end %.1f us\n", r->precision, r->backend,
           r->batch, how[r->prof_kind], total, e2e);
    printf("%5s  %-9s %10s %7s %8s  %-44s %s\n", "layer", "op", "us", "%", "TOP/s", "shape", r->algo ? "cuDNN" : "");
    for (int k = 0; k < n && k < top; k++) {
        const yq_node *nd = &g->nodes[s[k].id];
        if (s[k].us <= 0) break;
        char sh[96], tops[16] = "";
        shape_str(g, nd, sh, sizeof sh);
        if (nd->op == YQ_OP_CONV)
            snprintf(tops, sizeof tops, "%.2f", yq_node_flops(g, nd) * r->batch / (s[k].us * 1e-6) / 1e12);
        printf("%5d  %-9s %10.1f %6.1f%% %8s  %-44s %s\n", nd->layer, yq_op_name(nd->op), s[k].us,
               total > 0 ? 100 * s[k].us / total : 0, tops, sh, r->algo ? r->algo[s[k].id] : "");
    }
    /* by op type */
    double by[YQ_OP_COUNT] = { 0 };
    int cnt[YQ_OP_COUNT] = { 0 };
    for (int i = 0; i < n; i++) {
        by[g->nodes[i].op] += r->prof[i].us;
        cnt[g->nodes[i].op]++;
    }
    printf("  by op:");
    for (int k = 0; k < YQ_OP_COUNT; k++)
        if (by[k] > 0) printf("  %s %.1f us (%d, %.1f%%)", yq_op_name((yq_op)k), by[k], cnt[k], total > 0 ? 100 * by[k] / total : 0);
    printf("\n");
    free(s);
}

static cJSON *result_json(const yq_graph *g, const result *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "precision", r->precision);
    cJSON_AddStringToObject(o, "backend", r->backend);
    cJSON_AddNumberToObject(o, "batch", r->batch);
    cJSON_AddNumberToObject(o, "median_ms", r->med);
    cJSON_AddNumberToObject(o, "mean_ms", r->mean);
    cJSON_AddNumberToObject(o, "min_ms", r->min);
    cJSON_AddNumberToObject(o, "p90_ms", r->p90);
    if (r->g_med > 0) {
        cJSON_AddNumberToObject(o, "graph_median_ms", r->g_med);
        cJSON_AddNumberToObject(o, "graph_min_ms", r->g_min);
    }
    cJSON_AddNumberToObject(o, "img_s", r->img_s);
    cJSON_AddNumberToObject(o, "device_bytes", (double)r->mem);
    cJSON_AddNumberToObject(o, "plan_s", r->plan_s);
    if (r->note[0]) cJSON_AddStringToObject(o, "note", r->note);
    if (r->kernels) cJSON_AddStringToObject(o, "kernels", r->kernels);
    if (r->prof) {
        static const char *kind[3] = { "events", "isolated", "clock" };
        cJSON_AddStringToObject(o, "profile_kind", kind[r->prof_kind]);
        cJSON *a = cJSON_AddArrayToObject(o, "profile");
        for (int i = 0; i < g->n_nodes; i++) {
            const yq_node *nd = &g->nodes[i];
            if (r->prof[i].us <= 0) continue;
            char sh[96];
            shape_str(g, nd, sh, sizeof sh);
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "layer", nd->layer);
            cJSON_AddStringToObject(e, "op", yq_op_name(nd->op));
            cJSON_AddStringToObject(e, "shape", sh);
            cJSON_AddNumberToObject(e, "us", r->prof[i].us);
            if (r->algo && r->algo[i][0]) cJSON_AddStringToObject(e, "cudnn", r->algo[i]);
            if (nd->op == YQ_OP_CONV) {
                cJSON_AddNumberToObject(e, "gflop", yq_node_flops(g, nd) * r->batch * 1e-9);
                cJSON_AddNumberToObject(e, "tops", yq_node_flops(g, nd) * r->batch / (r->prof[i].us * 1e-6) / 1e12);
            }
            cJSON_AddItemToArray(a, e);
        }
    }
    return o;
}

/* --tune: every int8 conv of g at every batch, on the current device. */
static yq_status tune_all(const bopt *o, const yq_graph *g, tuned_set *ts, yq_error *err)
{
    memset(ts, 0, sizeof *ts);
    yq_tune_task *t = NULL;
    int n = 0;
    double t0 = now_ms();
    yq_status st = yq_tune_tasks(g, o->batches, o->n_batch, &t, &n, err);
    if (!st) st = yq_tune_gpu(g, t, n, &o->topt, &ts->sum, err);
    ts->sm = yq_cuda_arch();
    static const int fam[TUNED_KINDS] = { -1, YQ_CONV_DP4A, YQ_CONV_MMA };
    for (int k = 0; k < TUNED_KINDS && !st; k++) st = yq_tune_choices(g, t, n, ts->sm, fam[k], &ts->k[k], &ts->n[k], err);
    ts->seconds = (now_ms() - t0) * 1e-3;
    if (!st) {
        printf("tuning: %.1f s (%d shapes x batches: %d tuned, %d from the log%s%s, %d cut by the budget, %d skipped; "
               "%d trials, %d measured, %d failed)\n", ts->seconds, ts->sum.tasks, ts->sum.searched, ts->sum.logged,
               o->topt.log_path ? " " : "", o->topt.log_path ? o->topt.log_path : "", ts->sum.partial, ts->sum.skipped,
               ts->sum.trials, ts->sum.measured, ts->sum.failed);
        for (int b = 0; b < o->n_batch; b++) {
            double d = 0, fd = 0, fm = 0, tu = 0;
            for (int i = 0; i < n; i++) {
                const yq_tune_task *x = &t[i];
                if (x->batch != o->batches[b] || x->default_us <= 0) continue;
                d += x->n_nodes * x->default_us;
                fd += x->n_nodes * (x->family_us[YQ_CONV_DP4A] > 0 ? x->family_us[YQ_CONV_DP4A] : x->default_us);
                fm += x->n_nodes * (x->family_us[YQ_CONV_MMA] > 0 ? x->family_us[YQ_CONV_MMA] : x->default_us);
                tu += x->n_nodes * (x->best_us > 0 ? x->best_us : x->default_us);
            }
            if (d > 0)
                printf("tuning, batch %d, convs timed alone: default %.1f us, dp4a tuned %.1f us (%.2fx), mma tuned %.1f us "
                       "(%.2fx), tuned %.1f us (%.2fx)\n", o->batches[b], d, fd, d / fd, fm, d / fm, tu, d / tu);
        }
    }
    yq_tune_tasks_free(t);
    return st;
}

static void tuned_free(tuned_set *ts)
{
    for (int k = 0; k < TUNED_KINDS; k++) free(ts->k[k]);
}

int cmd_bench(int argc, char **argv)
{
    cli_model_opt mo = { 0 };
    bopt o;
    memset(&o, 0, sizeof o);
    o.batches[0] = 1;
    o.n_batch = 1;
    o.cuda = -1;
    o.runs = o.warmup = -1;
    o.graph = 1;
    o.topt = yq_tune_defaults();
    for (int i = 0; i < argc; i++) {
        int r = cli_model_arg(&mo, argc, argv, &i);
        if (r < 0) return 2;
        if (r) continue;
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(help, stdout); return 0; }
        else if (!strcmp(a, "--profile")) o.profile = 1;
        else if (!strcmp(a, "--no-graph")) o.graph = 0;
        else if (!strcmp(a, "--heuristic")) o.heuristic = 1;
        else if (!strcmp(a, "--legacy")) o.legacy = 1;
        else if (!strcmp(a, "--fuse")) o.fuse = 1;
        else if (!strcmp(a, "--no-views")) o.no_views = 1;
        else if (!strcmp(a, "--gpu-float") && has) {
            const char *v = argv[++i];
            if (!strcmp(v, "fp16")) o.gpu_f16 = 1;
            else if (!strcmp(v, "fp32")) o.gpu_f16 = 0;
            else return cli_usage_error("--gpu-float %s: expected fp32 or fp16", v);
        }
        else if (!strcmp(a, "--batch") && has) {
            if ((o.n_batch = cli_parse_batches(argv[++i], o.batches, 16)) < 1) return cli_usage_error("--batch %s: expected N[,N...] in 1..4096", argv[i]);
        } else if (!strcmp(a, "--device") && has) {
            const char *v = argv[++i];
            if (!strcmp(v, "cuda") || !strcmp(v, "gpu")) o.cuda = 1;
            else if (!strcmp(v, "cpu")) o.cuda = 0;
            else return cli_usage_error("--device %s: expected cuda or cpu", v);
        } else if (!strcmp(a, "--precision") && has) {
            if ((o.prec = parse_prec(argv[++i])) <= 0) return cli_usage_error("--precision %s: expected a list of fp32, fp16, int8", argv[i]);
        } else if ((!strcmp(a, "--runs") || !strcmp(a, "--warmup")) && has) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < (a[2] == 'r' ? 1 : 0) || v > 1000000) return cli_usage_error("%s %s: expected a count", a, argv[i]);
            if (a[2] == 'r') o.runs = (int)v;
            else o.warmup = (int)v;
        } else if (!strcmp(a, "--head") && has) {
            const char *v = argv[++i];
            if (!strcmp(v, "int8")) o.head_int8 = 1;
            else if (!strcmp(v, "float")) o.head_int8 = 0;
            else return cli_usage_error("--head %s: expected int8 or float", v);
        } else if (!strcmp(a, "--layout") && has) {
            const char *v = argv[++i];
            if (!strcmp(v, "nchw")) o.layout = YQ_CUDNN_NCHW;
            else if (!strcmp(v, "nhwc")) o.layout = YQ_CUDNN_NHWC;
            else return cli_usage_error("--layout %s: expected nchw or nhwc", v);
        } else if (!strcmp(a, "--json") && has) o.json = argv[++i];
        else if (!strcmp(a, "--tune")) o.tune = 1;
        else if (!strcmp(a, "--log") && has) o.topt.log_path = argv[++i];
        else if (!strcmp(a, "--tuner") && has) {
            if (yq_tuner_parse(argv[++i], &o.topt.tuner)) return cli_usage_error("--tuner %s: expected grid, random, ga or model", argv[i]);
        } else if (!strcmp(a, "--budget") && has) {
            char *end;
            double b = strtod(argv[++i], &end);
            if (end == argv[i] || *end || !(b >= 0) || b > 1e7) return cli_usage_error("--budget %s: expected seconds >= 0", argv[i]);
            o.topt.budget_s = b;
        } else if (!strcmp(a, "--trials") && has) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || v < 0 || v > 100000) return cli_usage_error("--trials %s: expected a count >= 0", argv[i]);
            o.topt.trials = (int)v;
        }
        else if (a[0] == '-') return cli_usage_error("bench: unknown option %s (or a missing value)", a);
        else if (!mo.model) mo.model = a;
        else return cli_usage_error("bench: one MODEL only");
    }
    if (!mo.model) return cli_usage_error("bench: which MODEL?");
    {
        const char *ins[] = { mo.model, mo.weights };
        if (cli_check_outputs(ins, 2, "--json", o.json, "--log", o.topt.log_path)) return 1;
    }
    int ngpu = yq_cuda_device_count();
    if (o.cuda < 0) o.cuda = ngpu > 0;
    if (o.cuda && ngpu == 0) {
        fprintf(stderr, "yquant: bench --device cuda: no CUDA device\n");
        return 1;
    }
    if (!o.prec) o.prec = o.cuda ? P_FP32 | P_FP16 | P_INT8 : P_FP32 | P_INT8;
    if (o.runs < 0) o.runs = o.cuda ? 100 : 10;
    if (o.warmup < 0) o.warmup = o.cuda ? 10 : 2;
    if (o.cuda && o.runs < 100) fprintf(stderr, "yquant: note: %d runs (the latency figures want >= 100)\n", o.runs);
    if (o.tune && (!o.cuda || !(o.prec & P_INT8)))
        return cli_usage_error("bench --tune: tuning is for int8 on cuda (--device cuda --precision ...,int8)");

    yq_error err;
    yq_graph *g = NULL;
    int is_pkg = yq_package_is(mo.model);
    if (is_pkg) {
        if (yq_package_load(mo.model, &g, NULL, &err) != YQ_OK) return cli_error(&err);
    } else if (cli_load_model(&mo, &g, &err) != YQ_OK) {
        return cli_error(&err);
    }
    if ((o.prec & P_INT8) && !g->q) {
        yq_qconfig *qc = malloc(sizeof *qc);
        if (!qc) { yq_graph_free(g); fprintf(stderr, "yquant: out of memory\n"); return 1; }
        yq_qconfig_defaults(qc);
        qc->head_float = !o.head_int8;
        yq_status st = yq_quantize_graph(g, NULL, qc, &err);
        free(qc);
        if (st) { yq_graph_free(g); return cli_error(&err); }
    }
    yq_shape is = g->nodes[0].out;
    char dev[256] = "CPU", dnn[128] = "";
    if (o.cuda) {
        yq_error e2;
        if (yq_cuda_set_device(0, &e2) || yq_cuda_device_name(dev, sizeof dev, &e2)) snprintf(dev, sizeof dev, "CUDA device 0");
        yq_cudnn_version(dnn, sizeof dnn);
    }
    double gflop = 0;
    for (int i = 1; i < g->n_nodes; i++) gflop += yq_node_flops(g, &g->nodes[i]) * 1e-9;
    printf("model:  %s (%s)\ninput:  %dx%dx%d, %.2f GFLOP per image\ndevice: %s%s%s\nruns:   %d timed after %d warm-up, median%s\n",
           g->cfg_path, is_pkg ? mo.model : g->weights_path, is.c, is.h, is.w, gflop, dev, dnn[0] ? ", " : "", dnn,
           o.runs, o.warmup, o.cuda ? (o.graph ? "; eager launches and CUDA-graph replays" : "; eager launches") : "");

    int maxb = 0;
    for (int k = 0; k < o.n_batch; k++) if (o.batches[k] > maxb) maxb = o.batches[k];
    float *x = malloc(sizeof *x * (size_t)yq_shape_size(is) * maxb);
    result *res = calloc((size_t)o.n_batch * (3 + TUNED_KINDS), sizeof *res);
    if (!x || !res) { free(x); free(res); yq_graph_free(g); fprintf(stderr, "yquant: out of memory\n"); return 1; }
    fill_input(x, is.c, is.h, is.w, maxb);
    int nres = 0, failed = 0, tuned_ok = 0;
    tuned_set ts;
    memset(&ts, 0, sizeof ts);
    if (o.tune) {
        if (tune_all(&o, g, &ts, &err)) {
            fprintf(stderr, "yquant: bench --tune: %s\n", err.msg);
            failed++;
        } else {
            tuned_ok = 1;
        }
        fflush(stdout);
    }
    static const char *pname[3] = { "fp32", "fp16", "int8" };
    for (int bi = 0; bi < o.n_batch; bi++) {
        int B = o.batches[bi];
        for (int k = 0; k < 3; k++) {
            if (!(o.prec & (1 << k))) continue;
            result *r = &res[nres];
            memset(r, 0, sizeof *r);
            r->precision = pname[k];
            r->batch = B;
            yq_status st;
            if (k < 2 && is_pkg) st = yq_fail(&err, YQ_ERR_UNSUPPORTED, "a package holds int8 weights only");
            else if (o.cuda) st = k < 2 ? bench_cudnn(&o, g, B, k == 1, x, r, &err) : bench_int8_gpu(&o, g, B, x, NULL, 0, r, &err);
            else st = k == 1 ? yq_fail(&err, YQ_ERR_UNSUPPORTED, "no FP16 engine on the CPU")
                             : bench_cpu(&o, g, B, k == 2, x, r, &err);
            if (st) {
                fprintf(stderr, "yquant: bench %s batch %d: %s\n", pname[k], B, err.msg);
                free(r->prof);
                free(r->algo);
                failed += st != YQ_ERR_UNSUPPORTED;
                continue;
            }
            nres++;
            fflush(stdout);
        }
        for (int kind = 0; tuned_ok && kind < TUNED_KINDS; kind++) {
            if (kind > TUNED_ALL && !ts.n[kind]) continue;   /* no conv of this family on this GPU */
            result *r = &res[nres];
            memset(r, 0, sizeof *r);
            r->precision = pname[2];
            r->batch = B;
            yq_status st = bench_int8_gpu(&o, g, B, x, &ts, kind, r, &err);
            if (st) {
                fprintf(stderr, "yquant: bench int8 %s batch %d: %s\n", r->kernels ? r->kernels : "tuned", B, err.msg);
                free(r->prof);
                failed++;
                continue;
            }
            nres++;
            fflush(stdout);
        }
    }

    printf("\n%-44s %-5s %5s %10s %10s %10s %10s %10s %9s %7s\n", "engine", "prec", "batch", o.cuda ? "eager ms" : "ms",
           "min ms", "p90 ms", o.cuda ? "graph ms" : "", "img/s", "MB", "plan s");
    for (int i = 0; i < nres; i++) {
        const result *r = &res[i];
        char gm[16] = "-";
        if (r->g_med > 0) snprintf(gm, sizeof gm, "%.3f", r->g_med);
        printf("%-44s %-5s %5d %10.3f %10.3f %10.3f %10s %10.1f %9.1f %7.1f\n", r->backend, r->precision, r->batch, r->med,
               r->min, r->p90, o.cuda ? gm : "", r->img_s, r->mem / 1e6, r->plan_s);
        if (r->note[0]) printf("    note: %s\n", r->note);
    }
    if (o.profile)
        for (int i = 0; i < nres; i++)
            if (res[i].prof) print_profile(g, &res[i], 30);
    printf("\n");
    for (int i = 0; i < nres; i++) {
        const result *r = &res[i];
        printf("RESULT engine=yquant precision=%s batch=%d device=%s median_ms=%.4f min_ms=%.4f graph_median_ms=%.4f "
               "img_s=%.2f%s%s\n", r->precision, r->batch, o.cuda ? "cuda" : "cpu", r->med, r->min, r->g_med, r->img_s,
               r->kernels ? " kernels=" : "", r->kernels ? r->kernels : "");
    }
    if (tuned_ok) {
        /* what tuning gained, end to end, per batch */
        for (int bi = 0; bi < o.n_batch; bi++) {
            const result *d = NULL, *t[TUNED_KINDS] = { NULL, NULL, NULL };
            for (int i = 0; i < nres; i++) {
                const result *r = &res[i];
                if (r->batch != o.batches[bi] || !r->kernels) continue;
                if (!strcmp(r->kernels, "default")) d = r;
                for (int k = 0; k < TUNED_KINDS; k++)
                    if (!strcmp(r->kernels, kind_name[k])) t[k] = r;
            }
            if (!d) continue;
            double db = d->g_med > 0 && d->g_med < d->med ? d->g_med : d->med;
            printf("tuning gain, batch %d (end to end, the better of eager and graph):  default %.3f ms", o.batches[bi], db);
            static const char *const lab[TUNED_KINDS] = { "tuned", "dp4a only", "mma only" };
            for (int k = 0; k < TUNED_KINDS; k++) {
                if (!t[k]) continue;
                double tb = t[k]->g_med > 0 && t[k]->g_med < t[k]->med ? t[k]->g_med : t[k]->med;
                printf(",  %s %.3f ms (%.2fx)", lab[k], tb, db / tb);
            }
            printf("\n");
        }
        printf("tuning time: %.1f s (%d trials measured; RESULT tuning_s below)\n\n", ts.seconds, ts.sum.measured);
        printf("RESULT engine=yquant tuning_s=%.2f tasks=%d from_log=%d trials=%d measured=%d failed=%d\n", ts.seconds,
               ts.sum.tasks, ts.sum.logged, ts.sum.trials, ts.sum.measured, ts.sum.failed);
    }
    int rc = failed || nres == 0 ? 1 : 0;
    if (o.json) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "model", g->cfg_path);
        cJSON_AddStringToObject(root, "weights", is_pkg ? mo.model : g->weights_path);
        cJSON *in = cJSON_AddArrayToObject(root, "input");
        cJSON_AddItemToArray(in, cJSON_CreateNumber(is.c));
        cJSON_AddItemToArray(in, cJSON_CreateNumber(is.h));
        cJSON_AddItemToArray(in, cJSON_CreateNumber(is.w));
        cJSON_AddNumberToObject(root, "gflop_per_image", gflop);
        cJSON_AddStringToObject(root, "device", dev);
        if (dnn[0]) cJSON_AddStringToObject(root, "cudnn", dnn);
        cJSON_AddNumberToObject(root, "runs", o.runs);
        cJSON_AddNumberToObject(root, "warmup", o.warmup);
        if (tuned_ok) {
            cJSON *tj = cJSON_AddObjectToObject(root, "tuning");
            cJSON_AddNumberToObject(tj, "seconds", ts.seconds);
            cJSON_AddStringToObject(tj, "tuner", yq_tuner_name(o.topt.tuner));
            if (o.topt.log_path) cJSON_AddStringToObject(tj, "log", o.topt.log_path);
            cJSON_AddNumberToObject(tj, "sm", ts.sm);
            cJSON_AddNumberToObject(tj, "tasks", ts.sum.tasks);
            cJSON_AddNumberToObject(tj, "tasks_from_log", ts.sum.logged);
            cJSON_AddNumberToObject(tj, "trials", ts.sum.trials);
            cJSON_AddNumberToObject(tj, "measured", ts.sum.measured);
            cJSON_AddNumberToObject(tj, "failed", ts.sum.failed);
        }
        cJSON *a = cJSON_AddArrayToObject(root, "results");
        for (int i = 0; i < nres; i++) cJSON_AddItemToArray(a, result_json(g, &res[i]));
        if (cli_write_json(o.json, root)) rc = 1;
        cJSON_Delete(root);
    }
    for (int i = 0; i < nres; i++) {
        free(res[i].prof);
        free(res[i].algo);
    }
    free(res);
    free(x);
    tuned_free(&ts);
    yq_graph_free(g);
    return rc;
}
