/* include/yq_bench.h: yquant's engines timed on one model (what `yquant bench` prints).
 *
 * --profile's per-layer times: FP32/FP16 (cuDNN): events recorded between nodes during real
 * runs.  int8 on the GPU: each node's kernels timed alone on the node's shapes and types,
 * because the int8 executor runs a whole graph per call: ISOLATED_PER launches back to back
 * between two events (the GPU's queue kept full, as the tuner times, so the host's launch
 * latency is not in a layer's time), the median of runs of them.  CPU: the clock between
 * nodes, mean of runs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cblas.h>
#include "yq_bench.h"
#include "kernels/cuda.h"
#include "kernels/cuda_bench.h"
#include "kernels/cudnn_fp.h"
#include "ir/stats.h"
#include "quant/rewrite.h"
#include "runtime/engine.h"
#include "runtime/exec_cuda.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "runtime/tune.h"
#include "runtime/tuning.h"

enum { PROF_EVENTS = 0, PROF_ISOLATED, PROF_CLOCK };

/* launches of a node in one isolated timing */
enum { ISOLATED_PER = 10 };

/* Kernel choices for the tuned int8 rows: any family, dp4a only, mma only. */
enum { TUNED_ALL, TUNED_DP4A, TUNED_MMA, TUNED_KINDS };
static const char *const kind_name[TUNED_KINDS] = { "tuned", "tuned:dp4a", "tuned:mma" };

struct yq_bench {
    const yq_model *m;
    const yq_graph *g;            /* m's graph, or own: an FP32 model with its int8 side */
    yq_graph *own;
    int head_int8, is_pkg;
    int tuned;                    /* yq_bench_tune ran */
    int sm;
    yq_tuned_kernel *k[TUNED_KINDS];
    int n[TUNED_KINDS];
};

/* One run's options, checked. */
typedef struct bopt {
    int cuda, runs, warmup, profile, graph, head_int8, heuristic, legacy, fuse, no_views, gpu_f16;
    yq_cudnn_layout layout;
    int tuned;                    /* the bench has choices */
    int threads, cpu_flags;       /* cpu: threads (0: every core), the int8 plan's engine flags */
} bopt;

/* One node's profile entry. */
typedef struct prow { int id; double us, bytes; } prow;   /* bytes: a profiled int8 conv's tensors */

typedef struct result {
    const char *precision;
    char backend[96];
    int batch;
    double med, mean, min, p90;          /* eager (or CPU), ms per batch */
    double g_med, g_min;                 /* graph replays; < 0 when none */
    double img_s;
    double plan_s;                       /* planning (algorithm choice, uploads) */
    size_t mem;
    prow *prof;                          /* per node, n_nodes entries (us); NULL without profile */
    char (*algo)[48];                    /* cuDNN: per node, what ran it */
    int prof_kind;                       /* PROF_EVENTS, PROF_ISOLATED, PROF_CLOCK */
    char note[160];
    const char *kernels;                 /* int8 on cuda: "default", "tuned", "tuned:dp4a", "tuned:mma" */
} result;

/* ---- small helpers ---- */

/* A timing's figures; n 0 (no memory for the copy) is an error. */
static yq_status put_stats(yq_stats s, double *med, double *mean, double *mn, double *p90, yq_error *err)
{
    if (s.n < 1) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    *med = s.median, *mean = s.mean, *mn = s.min, *p90 = s.p90;
    return YQ_OK;
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

/* ---- GPU: the cuDNN float engine ---- */

typedef struct prof_ctx { yq_gpu_marks *marks; } prof_ctx;
static void mark_node(void *ctx, int id, const void *data, int n, void *stream)
{
    (void)data;
    (void)n;
    prof_ctx *pc = ctx;
    yq_gpu_marks_record(pc->marks, id + 1, stream);
}

static yq_status engine_enqueue(void *ctx, yq_error *err)
{
    yq_engine *e = ctx;
    return yq_engine_enqueue(e, yq_engine_batch(e), err);
}

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
    for (int i = 0; i < n && !st; i++) rows[i] = (prow){ i, 1e3 * yq_stats_of_f(&t[(size_t)i * runs], runs).median, 0 };
    free(t);
    return st;
}

/* Eager and (unless --no-graph) graph timings of one enqueue function. */
static yq_status time_gpu(const bopt *o, void *stream, yq_gpu_enqueue_fn fn, void *ctx, result *r, yq_error *err)
{
    float *ms = malloc(sizeof *ms * (size_t)o->runs);
    yq_status st = ms ? YQ_OK : yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    if (!st) st = yq_gpu_time(stream, fn, ctx, NULL, o->warmup, o->runs, ms, err);
    if (!st) st = put_stats(yq_stats_of_f(ms, o->runs), &r->med, &r->mean, &r->min, &r->p90, err);
    r->g_med = r->g_min = -1;
    if (!st && o->graph) {
        void *graph = NULL;
        yq_error ge;
        if (yq_gpu_graph_capture(stream, fn, ctx, &graph, &ge) != YQ_OK) {
            snprintf(r->note, sizeof r->note, "no CUDA graph: %.120s", ge.msg);
        } else {
            st = yq_gpu_time(stream, NULL, NULL, graph, o->warmup, o->runs, ms, err);
            double a, c;
            if (!st) st = put_stats(yq_stats_of_f(ms, o->runs), &r->g_med, &a, &r->g_min, &c, err);
            yq_gpu_graph_free(graph);
        }
    }
    double best = r->g_med > 0 && r->g_med < r->med ? r->g_med : r->med;
    r->img_s = r->batch / (best * 1e-3);
    free(ms);
    return st;
}

static yq_status bench_cudnn(const bopt *o, const yq_graph *g, int batch, int fp16, const float *x, result *r,
                             yq_error *err)
{
    yq_engine_opt eo = yq_engine_defaults(YQ_ENGINE_CUDNN);
    eo.cudnn = yq_cudnn_defaults(fp16 ? YQ_CUDNN_FP16 : YQ_CUDNN_FP32);
    eo.cudnn.layout = o->layout;
    eo.cudnn.heuristic = o->heuristic;
    eo.cudnn.legacy = o->legacy;
    eo.cudnn.fuse = o->fuse;
    eo.flags = eo.cudnn.flags;
    yq_engine *e;
    double t0 = now_ms();
    yq_status st = yq_engine_new(g, batch, &eo, &e, err);
    if (st) return st;
    yq_cudnn_plan *p = yq_engine_cudnn_plan(e);
    r->plan_s = (now_ms() - t0) * 1e-3;
    snprintf(r->backend, sizeof r->backend, "cuDNN %s", yq_cudnn_plan_desc(p));
    r->mem = yq_cudnn_plan_bytes(p);
    if (!(st = yq_engine_upload(e, x, batch, err))) st = time_gpu(o, yq_engine_stream(e), engine_enqueue, e, r, err);
    if (!st && o->profile) {
        yq_gpu_marks *m = NULL;
        r->prof = calloc((size_t)g->n_nodes, sizeof *r->prof);
        if (!r->prof) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
        if (!st) st = yq_gpu_marks_new(g->n_nodes + 1, &m, err);
        if (!st) {
            prof_ctx pc = { m };
            int pr = o->runs < 20 ? o->runs : 20;
            if (!(st = yq_engine_set_hook(e, mark_node, &pc, err)))
                st = profile_marks(g, yq_engine_stream(e), engine_enqueue, e, m, pr, r->prof, err);
            yq_engine_set_hook(e, NULL, NULL, NULL);
        }
        r->algo = st ? NULL : calloc((size_t)g->n_nodes, sizeof *r->algo);
        for (int i = 0; r->algo && i < g->n_nodes; i++) yq_cudnn_node_desc(p, i, r->algo[i], sizeof r->algo[i]);
        yq_gpu_marks_free(m);
    }
    yq_engine_free(e);
    return st;
}

/* ---- GPU: the int8 engine ---- */

typedef struct int8_ctx { yq_engine *e; int batch; } int8_ctx;
static yq_status int8_enqueue(void *ctx, yq_error *err)
{
    int8_ctx *c = ctx;
    return yq_engine_enqueue(c->e, c->batch, err);
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
        rows[i] = (prow){ i, 0, 0 };
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
        if (n->op == YQ_OP_CONV) {
            /* what the conv's kernels must move at least: its input, output (a head's in
             * float) and a fused shortcut's residual at their types, the weights once */
            const yq_node *sn = &g->nodes[n->src[0]];
            rows[i].bytes = (double)batch * ((double)yq_shape_size(sn->out) * yq_dtype_size(c.in[0].dtype) +
                                             (double)yq_shape_size(n->out) * yq_dtype_size(c.out.dtype) +
                                             (c.fused ? (double)yq_shape_size(n->out) : 0)) +
                            (double)n->n_w * (g->q[i].float_op ? 4 : 1);
        }
        float med = 0;
        st = yq_gpu_median_ms(stream, node_enqueue, &c, 2, pr, ISOLATED_PER, &med, err);
        rows[i].us = 1e3 * (double)med;
    }
    yq_cuda_free(din);
    yq_cuda_free(din2);
    yq_cuda_free(dout);
    return st;
}

static yq_status bench_int8_gpu(const bopt *o, const yq_graph *g, int batch, const float *x, const yq_bench *ts,
                                int kind, result *r, yq_error *err)
{
    yq_engine *e = NULL;
    double t0 = now_ms();
    yq_engine_opt eo = yq_engine_defaults(YQ_ENGINE_CUDA);
    eo.flags = YQ_PLAN_KEEP_HEADS | (o->no_views ? YQ_PLAN_NO_VIEWS : 0) | (o->gpu_f16 ? YQ_PLAN_GPU_F16 : 0);
    yq_status st = yq_engine_new(g, batch, &eo, &e, err);
    if (st) return st;
    yq_cuda_plan *p = yq_engine_cuda_plan(e);
    void *stream = yq_engine_stream(e);
    static const char *const kind_label[TUNED_KINDS] = { "yquant int8 tuned", "yquant int8 tuned, dp4a only",
                                                         "yquant int8 tuned, mma only" };
    int applied = 0;
    if (ts && (st = yq_tune_apply(p, g, batch, ts->sm, ts->k[kind], ts->n[kind], &applied, err))) {
        yq_engine_free(e);
        return st;
    }
    r->plan_s = (now_ms() - t0) * 1e-3;
    r->kernels = ts ? kind_name[kind] : o->tuned ? "default" : NULL;
    if (ts) {
        snprintf(r->backend, sizeof r->backend, "%s%s", kind_label[kind],
                 o->head_int8 ? "" : o->gpu_f16 ? " (float heads, fp16)" : " (float heads)");
        snprintf(r->note, sizeof r->note, "%d convs run their tuned kernel", applied);
    } else {
        snprintf(r->backend, sizeof r->backend, "yquant int8, untuned%s",
                 o->head_int8 ? "" : o->gpu_f16 ? " (float heads, fp16)" : " (float heads)");
    }
    r->mem = yq_engine_bytes(e);
    if (!(st = yq_engine_upload(e, x, batch, err)) && !(st = yq_engine_sync(e, err))) {
        int8_ctx c = { e, batch };
        st = time_gpu(o, stream, int8_enqueue, &c, r, err);
    }
    if (!st && o->profile && (!ts || kind == TUNED_ALL)) {   /* each node alone, on the plan's (tuned) convs */
        r->prof = calloc((size_t)g->n_nodes, sizeof *r->prof);
        r->prof_kind = PROF_ISOLATED;
        st = r->prof ? profile_int8_isolated(o, g, p, batch, stream, r->prof, err) : yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    }
    yq_engine_free(e);
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
    yq_status st = yq_plan_new(g, batch, int8 ? o->cpu_flags : (g->q ? YQ_PLAN_FLOAT : 0), &p, err);
    if (st) return st;
    int blas_threads = openblas_get_num_threads(), nt = o->threads;
    if (int8) {
        yq_cpu8 *e;
        yq_plan_set_threads(p, nt);
        if ((st = yq_plan_cpu8(p, &e, err))) {
            yq_plan_free(p);
            return st;
        }
        const char *how = e ? yq_isa_name(yq_cpu8_isa(e)) : o->cpu_flags & YQ_PLAN_REFERENCE ? "reference" : "exact dgemm";
        if (e) nt = yq_cpu8_threads(e);
        if (e || nt > 0) snprintf(r->backend, sizeof r->backend, "yquant CPU int8 (%s, %d thread%s)", how, nt, nt == 1 ? "" : "s");
        else snprintf(r->backend, sizeof r->backend, "yquant CPU int8 (%s)", how);
    } else {
        yq_plan_set_threads(p, nt);   /* its OpenMP loops (OpenBLAS below) */
        if (nt > 0) openblas_set_num_threads(nt);
        nt = openblas_get_num_threads();
        snprintf(r->backend, sizeof r->backend, "yquant CPU FP32 (OpenBLAS, %d thread%s)", nt, nt == 1 ? "" : "s");
    }
    r->mem = yq_plan_bytes(p);
    double *d = malloc(sizeof *d * (size_t)o->runs);
    if (!d) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    for (int i = 0; i < o->warmup + o->runs && !st; i++) {
        double t0 = now_ms();
        st = int8 ? yq_exec_int8(p, x, NULL, NULL, err) : yq_exec_fp32(p, x, NULL, NULL, err);
        if (i >= o->warmup) d[i - o->warmup] = now_ms() - t0;
    }
    if (!st) {
        yq_stats sd = yq_stats_of(d, o->runs);
        r->med = sd.median, r->mean = sd.mean, r->min = sd.min, r->p90 = sd.p90;
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
        for (int i = 0; i < g->n_nodes && !st; i++) r->prof[i] = (prow){ i, 1e3 * acc[i] / pr, 0 };
        r->prof_kind = PROF_CLOCK;
        free(acc);
    }
    free(d);
    yq_plan_free(p);
    openblas_set_num_threads(blas_threads);
    return st;
}


/* ---- the public API ---- */

yq_status yq_bench_new(const yq_model *m, int head_int8, yq_bench **out, yq_error *err)
{
    if (!out) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_bench_new: NULL output");
    *out = NULL;
    if (!m) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_bench_new: no model");
    const yq_graph *g = yq_model_graph(m);
    if (!yq_model_has_weights(m))
        return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: a cfg without weights cannot be timed", g->cfg_path);
    yq_bench *b = calloc(1, sizeof *b);
    if (!b) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    b->m = m;
    b->head_int8 = head_int8 != 0;
    b->is_pkg = yq_model_info(m) != NULL;
    yq_status st = YQ_OK;
    if (!g->q) {
        /* an FP32 model: its int8 side without calibration (the speed does not depend on the
         * thresholds); the FP32 engines read the float weights, which stay */
        st = yq_quantize_uncalibrated(g, head_int8, &b->own, err);
        g = b->own;
    }
    b->g = g;
    if (st != YQ_OK) {
        yq_bench_free(b);
        return st;
    }
    *out = b;
    return YQ_OK;
}

void yq_bench_free(yq_bench *b)
{
    if (!b) return;
    for (int k = 0; k < TUNED_KINDS; k++) free(b->k[k]);
    yq_graph_free(b->own);
    free(b);
}

void yq_bench_describe(const yq_bench *b, yq_bench_info *out)
{
    if (!b || !out) return;
    memset(out, 0, sizeof *out);
    const yq_graph *g = b->g;
    out->cfg = g->cfg_path;
    out->weights = g->weights_path;
    out->is_package = b->is_pkg;
    yq_shape is = g->nodes[0].out;
    out->c = is.c;
    out->h = is.h;
    out->w = is.w;
    for (int i = 1; i < g->n_nodes; i++) out->gflop += yq_node_flops(g, &g->nodes[i]) * 1e-9;
    yq_cudnn_version(out->cudnn, sizeof out->cudnn);
}

yq_bench_opt yq_bench_defaults(void)
{
    yq_bench_opt o;
    memset(&o, 0, sizeof o);
    o.device = "cuda";
    o.precision = "int8";
    o.batch = 1;
    o.runs = 100;
    o.warmup = 10;
    o.graph = 1;
    return o;
}

void yq_bench_result_free(yq_bench_result *r)
{
    if (!r) return;
    free(r->layers);
    r->layers = NULL;
    r->n_layers = 0;
}

/* The internal result as the public one (the profile: every node, in order). */
static yq_status publish(const yq_graph *g, const result *r, yq_bench_result *out, yq_error *err)
{
    static const char *kind[3] = { "events", "isolated", "clock" };
    snprintf(out->precision, sizeof out->precision, "%s", r->precision);
    snprintf(out->backend, sizeof out->backend, "%s", r->backend);
    snprintf(out->note, sizeof out->note, "%s", r->note);
    out->batch = r->batch;
    out->median_ms = r->med;
    out->mean_ms = r->mean;
    out->min_ms = r->min;
    out->p90_ms = r->p90;
    out->graph_median_ms = r->g_med;
    out->graph_min_ms = r->g_min;
    out->img_s = r->img_s;
    out->plan_s = r->plan_s;
    out->device_bytes = r->mem;
    out->kernels = r->kernels;
    if (!r->prof) return YQ_OK;
    out->profile_kind = kind[r->prof_kind];
    if (!(out->layers = calloc((size_t)g->n_nodes, sizeof *out->layers))) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    for (int i = 0; i < g->n_nodes; i++) {
        const yq_node *nd = &g->nodes[i];
        yq_bench_layer *l = &out->layers[out->n_layers++];
        l->layer = nd->layer;
        l->op = yq_op_name(nd->op);
        shape_str(g, nd, l->shape, sizeof l->shape);
        l->us = r->prof[i].us;
        l->bytes = r->prof[i].bytes;
        if (nd->op == YQ_OP_CONV) l->gflop = yq_node_flops(g, nd) * r->batch * 1e-9;
        if (r->algo) snprintf(l->cudnn, sizeof l->cudnn, "%s", r->algo[i]);
    }
    return YQ_OK;
}

yq_status yq_bench_run(yq_bench *b, const yq_bench_opt *uo, yq_bench_result *out, yq_error *err)
{
    if (!out) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_bench_run: NULL output");
    memset(out, 0, sizeof *out);
    if (!b || !uo || !uo->precision) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_bench_run: NULL argument");
    bopt o;
    memset(&o, 0, sizeof o);
    int prec = !strcmp(uo->precision, "fp32") ? 0 : !strcmp(uo->precision, "fp16") ? 1 : !strcmp(uo->precision, "int8") ? 2 : -1;
    if (prec < 0) return yq_fail(err, YQ_ERR_INVALID_ARG, "precision \"%s\": expected fp32, fp16 or int8", uo->precision);
    if (!uo->device || (strcmp(uo->device, "cuda") && strcmp(uo->device, "cpu")))
        return yq_fail(err, YQ_ERR_INVALID_ARG, "device \"%s\": expected cuda or cpu", uo->device ? uo->device : "(none)");
    if (uo->batch < 1 || uo->batch > 4096) return yq_fail(err, YQ_ERR_INVALID_ARG, "batch %d: expected 1..4096", uo->batch);
    if (uo->runs < 1 || uo->warmup < 0) return yq_fail(err, YQ_ERR_INVALID_ARG, "%d runs, %d warm-up: expected >= 1, >= 0",
                                                       uo->runs, uo->warmup);
    o.cuda = !strcmp(uo->device, "cuda");
    o.runs = uo->runs;
    o.warmup = uo->warmup;
    o.profile = uo->profile;
    o.graph = uo->graph;
    o.head_int8 = b->head_int8;
    o.heuristic = uo->heuristic;
    o.legacy = uo->legacy;
    o.fuse = uo->fuse;
    o.no_views = uo->no_views;
    o.gpu_f16 = uo->gpu_f16;
    o.tuned = b->tuned;
    o.threads = uo->threads;
    if (uo->threads < 0 || uo->threads > 1024) return yq_fail(err, YQ_ERR_INVALID_ARG, "%d threads: expected 0..1024", uo->threads);
    o.cpu_flags = !uo->cpu_engine || !strcmp(uo->cpu_engine, "fast") ? 0 : !strcmp(uo->cpu_engine, "avx2") ? YQ_PLAN_CPU_AVX2
                : !strcmp(uo->cpu_engine, "dgemm") ? YQ_PLAN_INT8_BLAS : !strcmp(uo->cpu_engine, "reference") ? YQ_PLAN_REFERENCE : -1;
    if (o.cpu_flags < 0)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "cpu engine \"%s\": expected fast, avx2, dgemm or reference", uo->cpu_engine);
    o.layout = !uo->layout ? YQ_CUDNN_LAYOUT_AUTO : !strcmp(uo->layout, "nchw") ? YQ_CUDNN_NCHW
             : !strcmp(uo->layout, "nhwc") ? YQ_CUDNN_NHWC : (yq_cudnn_layout)-1;
    if ((int)o.layout < 0) return yq_fail(err, YQ_ERR_INVALID_ARG, "layout \"%s\": expected nchw or nhwc", uo->layout);
    int kind = -1;
    for (int k = 0; uo->kernels && k < TUNED_KINDS; k++) if (!strcmp(uo->kernels, kind_name[k])) kind = k;
    if (uo->kernels && kind < 0)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "kernels \"%s\": expected tuned, tuned:dp4a or tuned:mma", uo->kernels);
    if (kind >= 0 && (!o.cuda || prec != 2))
        return yq_fail(err, YQ_ERR_UNSUPPORTED, "tuned kernels are for int8 on cuda");
    if (kind >= 0 && !b->tuned) return yq_fail(err, YQ_ERR_UNSUPPORTED, "no tuned kernels: yq_bench_tune first");
    if (o.cuda && yq_cuda_device_count() == 0) return yq_fail(err, YQ_ERR_UNSUPPORTED, "no CUDA device");
    if (prec < 2 && b->is_pkg) return yq_fail(err, YQ_ERR_UNSUPPORTED, "a package holds int8 weights only");
    if (!o.cuda && prec == 1) return yq_fail(err, YQ_ERR_UNSUPPORTED, "no FP16 engine on the CPU");
    if (o.cuda) {
        yq_status st = yq_cuda_set_device(0, err);
        if (st) return st;
    }

    const yq_graph *g = b->g;
    yq_shape is = g->nodes[0].out;
    float *x = malloc(sizeof *x * (size_t)yq_shape_size(is) * (size_t)uo->batch);
    if (!x) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    fill_input(x, is.c, is.h, is.w, uo->batch);
    static const char *pname[3] = { "fp32", "fp16", "int8" };
    result r;
    memset(&r, 0, sizeof r);
    r.precision = pname[prec];
    r.batch = uo->batch;
    yq_status st;
    if (kind >= 0) st = bench_int8_gpu(&o, g, uo->batch, x, b, kind, &r, err);
    else if (o.cuda) st = prec < 2 ? bench_cudnn(&o, g, uo->batch, prec == 1, x, &r, err)
                                   : bench_int8_gpu(&o, g, uo->batch, x, NULL, 0, &r, err);
    else st = bench_cpu(&o, g, uo->batch, prec == 2, x, &r, err);
    if (st == YQ_OK) st = publish(g, &r, out, err);
    if (st != YQ_OK) yq_bench_result_free(out);
    free(r.prof);
    free(r.algo);
    free(x);
    return st;
}

yq_status yq_bench_tune(yq_bench *b, const int *batches, int n_batches, const yq_tuning_opt *uo, yq_bench_tuning *out,
                        yq_error *err)
{
    if (!b || !batches || !uo || !out) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_bench_tune: NULL argument");
    memset(out, 0, sizeof *out);
    if (n_batches < 1 || n_batches > 16) return yq_fail(err, YQ_ERR_INVALID_ARG, "%d batch sizes: expected 1..16", n_batches);
    yq_tuning_opt uo1 = *uo;
    uo1.batches[0] = 1;              /* (checked here: the batches are the caller's) */
    uo1.n_batches = 1;
    yq_tune_opt to;
    int dev;
    yq_status st = yq_tuning_options(&uo1, &to, &dev, err);
    if (st) return st;
    if (yq_cuda_device_count() == 0) return yq_fail(err, YQ_ERR_UNSUPPORTED, "no CUDA device");
    if ((st = yq_cuda_set_device(dev, err))) return st;
    for (int k = 0; k < TUNED_KINDS; k++) {
        free(b->k[k]);
        b->k[k] = NULL;
        b->n[k] = 0;
    }
    b->tuned = 0;
    const yq_graph *g = b->g;
    yq_tune_task *t = NULL;
    int n = 0;
    double t0 = now_ms();
    st = yq_tune_tasks(g, batches, n_batches, &t, &n, err);
    if (!st) st = yq_tune_gpu(g, t, n, &to, &out->sum, err);
    b->sm = out->sm = yq_cuda_arch();
    static const int fam[TUNED_KINDS] = { -1, YQ_CONV_DP4A, YQ_CONV_MMA };
    for (int k = 0; k < TUNED_KINDS && !st; k++) st = yq_tune_choices(g, t, n, b->sm, fam[k], &b->k[k], &b->n[k], err);
    out->seconds = (now_ms() - t0) * 1e-3;
    if (!st) {
        b->tuned = 1;
        for (int k = 0; k < TUNED_KINDS; k++) out->choices[k] = b->n[k];
        for (int bi = 0; bi < n_batches; bi++) out->sums[bi] = yq_tune_batch_sums(t, n, batches[bi]);
    }
    yq_tune_tasks_free(t);
    return st;
}
