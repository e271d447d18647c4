/* GPU executor: planning (liveness, as runtime/plan.c) and the node loop.
 *
 * Each node runs in its own domain, as in runtime/exec_int8.c: an int8 op whose
 * source is float (or, for ops other than conv, the uint8 image) reads it
 * converted at the source's scale into scratch memory; a float op reads any
 * source directly (int8 dequantized on the fly).  Heads whose input is int8
 * dequantize it into a buffer of their own; otherwise they alias it.
 *
 * Routes without copies.  Tensors live in buffers; a tensor is a view of its buffer
 * (a channel offset and the buffer's pixel stride, yq_dtensor.ps).  An int8 concat
 * [route] owns one buffer whose slices are its sources: each source's producer writes
 * straight into its slice and every reader of that source reads the slice (YOLOv3's
 * conv 61 output feeds both conv 62 and, later, route 86).  A route of one source's
 * channel group (yolov4-tiny's `groups=2 group_id=1`) is a view of that source.  Both
 * need nothing run.  The conditions (find_views) keep every view's pixels in whole
 * 16-byte chunks, so every kernel, the tensor-core ones included, reads it as it reads
 * a dense tensor; anything else is copied by the route kernel as before. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/cuda.h"
#include "runtime/exec_cuda.h"
#include "ir/pack.h"
#include "runtime/plan.h"

#define ALIGN 256

struct yq_cuda_plan {
    const yq_graph *g;
    int batch, flags, device;
    int *owner, *last_use;     /* owner: the node whose buffer holds node i (the buffer's first writer) */
    int *choff, *bufps;        /* node i at byte choff[i] of each pixel; bufps[owner]: the buffer's pixel bytes */
    size_t *bufbytes;          /* per owner: the buffer's size at the plan's batch */
    unsigned char *noop;       /* per node: nothing to run (an alias or a view) */
    int n_views;               /* routes that are views (no copy) */
    size_t *off;
    size_t arena_bytes, scratch_bytes;
    unsigned char *arena;      /* device: node outputs */
    unsigned char *scratch;    /* device: converted inputs of the node being run */
    float *input;              /* device: the float batch as given */
    yq_cuda_conv **conv;       /* per node */
    int *fuse;                 /* per node: conv (and any dropout between) -> the shortcut fused into it,
                                  shortcut -> its conv; else -1 */
    void *stream;
};

static size_t up(size_t n) { return (n + ALIGN - 1) & ~(size_t)(ALIGN - 1); }

/* Nodes whose output is their source's bytes: dropout and the heads, and a [route] of
 * one whole source (YOLOv3's `layers = -4`): no copy, the same memory. */
static int is_alias(const yq_graph *g, int id)
{
    const yq_node *n = &g->nodes[id];
    int whole_route = n->op == YQ_OP_ROUTE && n->n_src == 1 && n->p.route.groups <= 1 && !g->q[id].float_op;
    return (n->op == YQ_OP_DROPOUT || yq_op_is_head(n->op) || whole_route) &&
           yq_node_dtype(g, id) == yq_node_dtype(g, n->src[0]);
}

static size_t node_bytes(const yq_graph *g, int id, int batch)
{
    yq_shape s = g->nodes[id].out;
    return yq_dlayout_bytes(yq_node_dtype(g, id), s.c, s.h, s.w) * (size_t)batch;
}

/* Whether source k of node id must be converted to S8 first. */
static int needs_s8(const yq_graph *g, int id, int k)
{
    const yq_node *n = &g->nodes[id];
    if (g->q[id].float_op) return 0;
    yq_dtype t = yq_node_dtype(g, n->src[k]);
    switch (n->op) {
    case YQ_OP_CONV: return t == YQ_F32;
    case YQ_OP_SHORTCUT: case YQ_OP_ROUTE: case YQ_OP_UPSAMPLE: case YQ_OP_MAXPOOL: return t != YQ_S8;
    default: return 0;
    }
}

static int c4_of(const yq_graph *g, int id) { return (g->nodes[id].out.c + 3) & ~3; }

static yq_dtensor dt(const yq_cuda_plan *p, int id)
{
    const yq_graph *g = p->g;
    const yq_node *n = &g->nodes[id];
    const yq_qnode *q = &g->q[id];
    int o = p->owner[id];
    yq_dtype t = yq_node_dtype(g, id);
    yq_dtensor d = { p->arena + p->off[o] + p->choff[id], t, n->out.c, n->out.h, n->out.w, q->scale, q->qmin, q->qmax,
                     t == YQ_F32 ? 0 : p->bufps[o] };
    return d;
}

static int is_view(const yq_cuda_plan *p, int id)
{
    return yq_node_dtype(p->g, id) != YQ_F32 && (p->choff[id] || p->bufps[p->owner[id]] != c4_of(p->g, id));
}

/* Whether a route reads int8 sources at its own scale as bytes (no conversion). */
static int route_bytes(const yq_graph *g, int id)
{
    const yq_node *n = &g->nodes[id];
    if (n->op != YQ_OP_ROUTE || g->q[id].float_op || yq_node_dtype(g, id) != YQ_S8) return 0;
    for (int k = 0; k < n->n_src; k++) {
        int s = n->src[k];
        if (yq_node_dtype(g, s) != YQ_S8 || g->q[s].scale != g->q[id].scale || g->q[s].qmin != g->q[id].qmin ||
            g->q[s].qmax != g->q[id].qmax)
            return 0;
    }
    return 1;
}

/* Nodes written by a kernel that writes at any pixel stride (not a fused conv or its
 * shortcut, not the input). */
static int strided_writer(const yq_cuda_plan *p, int m)
{
    const yq_graph *g = p->g;
    switch (g->nodes[m].op) {
    case YQ_OP_CONV: case YQ_OP_SHORTCUT: return p->fuse[m] < 0;
    case YQ_OP_UPSAMPLE: case YQ_OP_MAXPOOL: case YQ_OP_ROUTE: case YQ_OP_DROPOUT: case YQ_OP_YOLO: case YQ_OP_REGION: case YQ_OP_DETECT:
        return 1;
    default: return 0;
    }
}

/* Routes as views (see the top of the file), in node order; sets owner, choff, bufps,
 * bufbytes and noop for them and for the sources they take in. */
static void find_views(yq_cuda_plan *p, int i)
{
    const yq_graph *g = p->g;
    const yq_node *n = &g->nodes[i];
    if (!route_bytes(g, i)) return;
    if (n->n_src == 1 && n->p.route.groups > 1) {       /* one channel group of one source */
        int s = n->src[0], part = n->out.c, off = n->p.route.group_id * part;
        if (part % 16 || g->nodes[s].out.c % 16) return;
        /* not the residual of a fused conv + shortcut (that epilogue reads dense tensors: a
         * YOLOv8 C2f bottleneck adds its Split half) */
        for (int j = i + 1; j < g->n_nodes; j++)
            if (g->nodes[j].op == YQ_OP_SHORTCUT && p->fuse[j] >= 0)
                for (int q = 0; q < g->nodes[j].n_src; q++) {
                    int r = yq_plan_pass_source(g, g->nodes[j].src[q]);
                    if (r != p->fuse[j] && r == i) return;
                }
        p->owner[i] = p->owner[s];
        p->choff[i] = p->choff[s] + off;
        p->noop[i] = 1;
        p->n_views++;
        return;
    }
    if (n->n_src < 2 || n->p.route.groups > 1) return;
    /* every source must fill a buffer of its own (no other slices around it), of whole
     * 16-byte chunks, written only by kernels that take a pixel stride */
    int first = i;
    for (int k = 0; k < n->n_src; k++) {
        int s = n->src[k], b = p->owner[s];
        if (s == 0 || b == 0 || g->nodes[s].out.c % 16 || p->choff[s] || p->bufps[b] != c4_of(g, s)) return;
        for (int j = 0; j < k; j++)
            if (p->owner[n->src[j]] == b) return;
        for (int m = b; m < i; m++)
            if (p->owner[m] == b && !p->noop[m] && !strided_writer(p, m)) return;
        /* nor the residual of a fused conv + shortcut (that epilogue reads dense tensors) */
        for (int j = 1; j < g->n_nodes; j++)
            if (g->nodes[j].op == YQ_OP_SHORTCUT && p->fuse[j] >= 0)
                for (int q = 0; q < g->nodes[j].n_src; q++)
                    if (yq_plan_pass_source(g, g->nodes[j].src[q]) != p->fuse[j] && p->owner[g->nodes[j].src[q]] == b)
                        return;
        if (b < first) first = b;
    }
    /* each source's buffer moves into the route's, at the source's channel offset (each
     * node's owner is read before it is changed, so a buffer moved in is not moved twice) */
    int buf[YQ_MAX_SRC], off[YQ_MAX_SRC], c = 0;
    for (int k = 0; k < n->n_src; k++) {
        buf[k] = p->owner[n->src[k]];
        off[k] = c;
        c += g->nodes[n->src[k]].out.c;
    }
    for (int m = first; m < i; m++)
        for (int k = 0; k < n->n_src; k++)
            if (p->owner[m] == buf[k]) {
                p->owner[m] = first;
                p->choff[m] += off[k];
                break;
            }
    p->owner[i] = first;
    p->choff[i] = 0;
    p->bufps[first] = c4_of(g, i);
    p->bufbytes[first] = p->bufbytes[i];
    p->noop[i] = 1;
    p->n_views++;
}

/* Convs whose only consumer (past dropouts) is an int8 [shortcut] whose other source is
 * int8 and computed earlier: the add can run in the conv's epilogue (yq_cuda_conv_run_add)
 * and the conv's own output is then never written. */
static void find_fusions(const yq_graph *g, int on, int *fuse)
{
    int n = g->n_nodes;
    for (int i = 0; i < n; i++) fuse[i] = -1;
    /* On by default since the FP32 requantize (ir/requant.h): measured on the H200
     * (YOLOv3-416, batch 32, tuned), 9.92 ms with separate adds, 8.94 ms fused.  Off with
     * YQ_PLAN_NO_FUSE (a fused conv's own output is never written). */
    if (!on) return;
    for (int i = 1; i < n; i++) {
        int rf = 0, j = yq_plan_fused_shortcut(g, i, &rf);   /* the rule (runtime/plan.c), shared with the tuner */
        if (j < 0) continue;
        fuse[j] = i;
        /* the conv and any dropouts between it and the shortcut: none of their bytes is kept */
        for (int m = g->nodes[j].src[rf ? 1 : 0];; m = g->nodes[m].src[0]) {
            fuse[m] = j;
            if (m == i) break;
        }
    }
}

void yq_cuda_plan_free(yq_cuda_plan *p)
{
    if (!p) return;
    if (p->conv)
        for (int i = 0; i < p->g->n_nodes; i++) yq_cuda_conv_free(p->conv[i]);
    free(p->conv);
    free(p->fuse);
    free(p->choff);
    free(p->bufps);
    free(p->bufbytes);
    free(p->noop);
    yq_cuda_free(p->arena);
    yq_cuda_free(p->scratch);
    yq_cuda_free(p->input);
    yq_cuda_stream_free(p->stream);
    free(p->owner);
    free(p->last_use);
    free(p->off);
    free(p);
}

yq_status yq_cuda_plan_new(const yq_graph *g, int batch, int device, yq_cuda_plan **out, yq_error *err)
{
    return yq_cuda_plan_new_flags(g, batch, device, YQ_PLAN_KEEP_HEADS, out, err);
}

yq_status yq_cuda_plan_new_flags(const yq_graph *g, int batch, int device, int flags, yq_cuda_plan **out,
                                 yq_error *err)
{
    if (!g->q) return yq_fail(err, YQ_ERR_INVALID_ARG, "the GPU executor runs int8 graphs (quantize the graph first)");
    if (batch < 1) return yq_fail(err, YQ_ERR_INVALID_ARG, "batch %d must be >= 1", batch);
    int n = g->n_nodes;
    if (n < 1) return yq_fail(err, YQ_ERR_INVALID_ARG, "empty graph");
    yq_status st = yq_cuda_set_device(device, err);
    if (st) return st;
    yq_cuda_plan *p = calloc(1, sizeof *p);
    yq_buf *items = calloc((size_t)n, sizeof *items);
    if (!p || !items) goto nomem;
    p->g = g;
    p->batch = batch;
    p->flags = flags;
    p->device = device;
    p->owner = malloc((size_t)n * sizeof *p->owner);
    p->last_use = malloc((size_t)n * sizeof *p->last_use);
    p->off = calloc((size_t)n, sizeof *p->off);
    p->conv = calloc((size_t)n, sizeof *p->conv);
    p->fuse = malloc((size_t)n * sizeof *p->fuse);
    p->choff = calloc((size_t)n, sizeof *p->choff);
    p->bufps = calloc((size_t)n, sizeof *p->bufps);
    p->bufbytes = calloc((size_t)n, sizeof *p->bufbytes);
    p->noop = calloc((size_t)n, 1);
    if (!p->owner || !p->last_use || !p->off || !p->conv || !p->fuse || !p->choff || !p->bufps || !p->bufbytes || !p->noop)
        goto nomem;
    find_fusions(g, !(flags & YQ_PLAN_NO_FUSE), p->fuse);
    int views = !(flags & YQ_PLAN_NO_VIEWS);
    /* YQ_PLAN_GPU_F16: float convs on FP16 tensor cores (their default: the exact FP32
     * numerics every engine computes) */
    int f16 = (flags & YQ_PLAN_GPU_F16) != 0;

    for (int i = 0; i < n; i++) {
        const yq_node *nd = &g->nodes[i];
        if (i > 0 && (nd->op == YQ_OP_INPUT || nd->op >= YQ_OP_COUNT)) {
            st = yq_fail(err, YQ_ERR_UNSUPPORTED, "layer %d: %s cannot be executed", nd->layer, yq_op_name(nd->op));
            goto fail;
        }
        p->owner[i] = i;
        p->bufps[i] = c4_of(g, i);
        p->bufbytes[i] = node_bytes(g, i, batch);
        if (i > 0 && is_alias(g, i)) {
            p->owner[i] = p->owner[nd->src[0]];
            p->choff[i] = p->choff[nd->src[0]];
            p->noop[i] = 1;
        }
        /* a fused shortcut's output lives in its conv's buffer, from the conv's time on */
        if (nd->op == YQ_OP_SHORTCUT && p->fuse[i] >= 0) p->owner[i] = p->owner[p->fuse[i]];
        if (views) find_views(p, i);
    }
    yq_buffer_lifetimes(g, p->owner, flags, p->last_use);
    size_t scratch = 0;
    for (int i = 0; i < n; i++) {
        const yq_node *nd = &g->nodes[i];
        size_t need = 0;
        for (int k = 0; k < nd->n_src; k++)
            if (needs_s8(g, i, k)) {
                yq_shape s = g->nodes[nd->src[k]].out;
                need += up(yq_dlayout_bytes(YQ_S8, s.c, s.h, s.w) * (size_t)batch);
            }
        if (need > scratch) scratch = need;
    }

    int m = 0;
    for (int i = 0; i < n; i++)
        if (p->owner[i] == i) items[m++] = (yq_buf){ i, up(p->bufbytes[i]) };
    size_t total = yq_pack_buffers(items, m, p->last_use, p->off);
    p->arena_bytes = total;
    p->scratch_bytes = scratch;
    void *d;
    if ((st = yq_cuda_malloc(&d, total, err))) goto fail;
    p->arena = d;
    if ((st = yq_cuda_malloc(&d, scratch, err))) goto fail;
    p->scratch = d;
    yq_shape is = g->nodes[0].out;
    if ((st = yq_cuda_malloc(&d, sizeof(float) * (size_t)yq_shape_size(is) * batch, err))) goto fail;
    p->input = d;
    if ((st = yq_cuda_stream_new(&p->stream, err))) goto fail;
    /* each conv on the built-in heuristic's configuration for this batch (a tuned
     * choice replaces it through yq_cuda_plan_conv) */
    for (int i = 1; i < n; i++)
        if (g->nodes[i].op == YQ_OP_CONV &&
            ((st = yq_cuda_conv_new(g, &g->nodes[i], &g->q[i], &p->conv[i], err)) ||
             /* float convs run their exact FP32 definition (the CPU's); FP16 tensor cores
              * only when asked for, where they can */
             (f16 && g->q[i].float_op && g->nodes[i].p.conv.groups == 1 && yq_cuda_arch() >= 80 &&
              (st = yq_cuda_conv_set_variant(p->conv[i], YQ_CONV_F16, err))) ||
             (st = yq_cuda_conv_set_cfg(p->conv[i], yq_cuda_conv_default_cfg(p->conv[i], batch), batch, err))))
            goto fail;
    free(items);
    *out = p;
    return YQ_OK;
nomem:
    st = yq_fail(err, YQ_ERR_NOMEM, "out of memory planning %d nodes at batch %d", n, batch);
fail:
    free(items);
    yq_cuda_plan_free(p);
    return st;
}

const char *yq_cuda_float_precision(int flags)
{
    return (flags & YQ_PLAN_GPU_F16) && yq_cuda_arch() >= 80 ? "fp16" : "fp32";
}

size_t yq_cuda_plan_bytes(const yq_cuda_plan *p) { return p->arena_bytes; }

/* Source k of node id as the op reads it: converted to S8 in scratch when needed. */
static yq_status source(yq_cuda_plan *p, int id, int k, int batch, void *stream, size_t *scratch_off, yq_dtensor *t,
                        yq_error *err)
{
    const yq_graph *g = p->g;
    int s = g->nodes[id].src[k];
    *t = dt(p, s);
    if (!needs_s8(g, id, k)) return YQ_OK;
    yq_dtensor c = *t;                 /* quantized at the source's own scale and range */
    c.p = p->scratch + *scratch_off;
    c.dtype = YQ_S8;
    c.ps = 0;                          /* dense in scratch */
    *scratch_off += up(yq_dlayout_bytes(YQ_S8, c.c, c.h, c.w) * (size_t)p->batch);
    yq_status st = yq_cuda_convert(t, &c, batch, stream, err);
    *t = c;
    return st;
}

yq_status yq_cuda_run(yq_cuda_plan *p, const float *host_input, yq_error *err)
{
    yq_shape is = p->g->nodes[0].out;
    yq_status st = yq_cuda_set_device(p->device, err);
    if (st) return st;
    if ((st = yq_cuda_h2d(p->input, host_input, sizeof(float) * (size_t)yq_shape_size(is) * p->batch, err))) return st;
    if ((st = yq_cuda_enqueue(p, p->batch, p->stream, err))) return st;
    return yq_cuda_sync(p->stream, err);
}

float *yq_cuda_plan_input(yq_cuda_plan *p) { return p->input; }

int yq_cuda_plan_views(const yq_cuda_plan *p) { return p->n_views; }

int yq_cuda_plan_runs(const yq_cuda_plan *p, int id)
{
    return id > 0 && id < p->g->n_nodes && !p->noop[id] &&
           !(p->g->nodes[id].op == YQ_OP_SHORTCUT && p->fuse[id] >= 0);
}

int yq_cuda_plan_fused(const yq_cuda_plan *p, int id)
{
    return id >= 0 && id < p->g->n_nodes ? p->fuse[id] : -1;
}

struct yq_cuda_conv *yq_cuda_plan_conv(yq_cuda_plan *p, int id)
{
    return id > 0 && id < p->g->n_nodes ? p->conv[id] : NULL;
}

const void *yq_cuda_plan_node(const yq_cuda_plan *p, int id)
{
    if (id < 0 || id >= p->g->n_nodes || p->last_use[p->owner[id]] != p->g->n_nodes ||
        (p->g->nodes[id].op != YQ_OP_SHORTCUT && p->fuse[id] >= 0) || is_view(p, id))
        return NULL;
    return p->arena + p->off[p->owner[id]];
}

/* Launches only: no copy, no sync, no allocation, so a CUDA graph can capture it. */
yq_status yq_cuda_enqueue(yq_cuda_plan *p, int batch, void *stream, yq_error *err)
{
    const yq_graph *g = p->g;
    int B = batch;
    if (B < 1 || B > p->batch) return yq_fail(err, YQ_ERR_INVALID_ARG, "batch %d outside the plan's 1..%d", B, p->batch);
    yq_shape is = g->nodes[0].out;
    yq_status st;
    yq_dtensor x0 = { p->input, YQ_F32, is.c, is.h, is.w, g->q[0].scale, g->q[0].qmin, g->q[0].qmax, 0 };
    yq_dtensor n0 = dt(p, 0);
    if ((st = yq_cuda_convert(&x0, &n0, B, stream, err))) return st;

    for (int i = 1; i < g->n_nodes && st == YQ_OK; i++) {
        const yq_node *n = &g->nodes[i];
        const yq_qnode *q = &g->q[i];
        yq_dtensor y = dt(p, i), a, b, srcs[YQ_MAX_SRC];
        size_t so = 0;
        switch (n->op) {
        case YQ_OP_CONV:
            if ((st = source(p, i, 0, B, stream, &so, &a, err))) break;
            if (p->fuse[i] >= 0) {
                int j = p->fuse[i], first = yq_plan_pass_source(g, g->nodes[j].src[0]) != i;
                b = dt(p, g->nodes[j].src[first ? 0 : 1]);
                y = dt(p, j);
                st = yq_cuda_conv_run_add(p->conv[i], &a, &b, &g->q[j], first, &y, B, stream, err);
            } else {
                st = yq_cuda_conv_run(p->conv[i], &a, &y, B, stream, err);
            }
            break;
        case YQ_OP_SHORTCUT:
            if (p->fuse[i] >= 0) break;           /* done in its conv's epilogue */
            if (!(st = source(p, i, 0, B, stream, &so, &a, err)) && !(st = source(p, i, 1, B, stream, &so, &b, err)))
                st = yq_cuda_shortcut(&a, &b, q, n->act, &y, B, stream, err);
            break;
        case YQ_OP_ROUTE:
            if (p->noop[i]) break;                /* a view: its sources wrote it (or are it) */
            for (int k = 0; k < n->n_src && !st; k++) st = source(p, i, k, B, stream, &so, &srcs[k], err);
            if (!st) st = yq_cuda_route(srcs, n->n_src, &n->p.route, &y, B, stream, err);
            break;
        case YQ_OP_UPSAMPLE:
            if (!(st = source(p, i, 0, B, stream, &so, &a, err))) st = yq_cuda_upsample(&a, n->p.up.stride, &y, B, stream, err);
            break;
        case YQ_OP_MAXPOOL:
            if (!(st = source(p, i, 0, B, stream, &so, &a, err))) st = yq_cuda_maxpool(&a, &n->p.pool, &y, B, stream, err);
            break;
        case YQ_OP_DROPOUT: case YQ_OP_YOLO: case YQ_OP_REGION: case YQ_OP_DETECT:
            if (!p->noop[i]) {
                a = dt(p, n->src[0]);
                if (y.dtype != YQ_F32) {
                    a.scale = y.scale = g->q[n->src[0]].scale;   /* quantized at the source's scale */
                    y.qmin = g->q[n->src[0]].qmin;
                    y.qmax = g->q[n->src[0]].qmax;
                }
                st = yq_cuda_convert(&a, &y, B, stream, err);
            }
            break;
        case YQ_OP_INPUT: case YQ_OP_COUNT:
            st = yq_fail(err, YQ_ERR_UNSUPPORTED, "layer %d: %s cannot be executed", n->layer, yq_op_name(n->op));
            break;
        }
        if (st && err) {
            char why[sizeof err->msg];
            snprintf(why, sizeof why, "%s", err->msg);
            return yq_fail(err, st, "%s (layer %d): %s", n->name, n->layer, why);
        }
    }
    return st;
}

yq_status yq_cuda_download(const yq_cuda_plan *p, int id, void *host, yq_error *err)
{
    const yq_graph *g = p->g;
    if (id < 0 || id >= g->n_nodes) return yq_fail(err, YQ_ERR_INVALID_ARG, "node %d out of range", id);
    if (p->last_use[p->owner[id]] != g->n_nodes)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "node %d (%s): its memory was reused (plan with YQ_PLAN_KEEP_ALL)",
                       id, g->nodes[id].name);
    if (g->nodes[id].op != YQ_OP_SHORTCUT && p->fuse[id] >= 0)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "node %d (%s): fused with the shortcut %s, its output is not kept", id,
                       g->nodes[id].name, g->nodes[p->fuse[id]].name);
    yq_dtensor t = dt(p, id);
    size_t bytes = node_bytes(g, id, p->batch);
    yq_status st = yq_cuda_sync(p->stream, err);
    if (st) return st;
    if (t.dtype == YQ_F32) return yq_cuda_d2h(host, t.p, bytes, err);
    /* a view: its buffer's pixels, then its slice of each */
    int o = p->owner[id], ps = p->bufps[o];
    size_t whole = is_view(p, id) ? p->bufbytes[o] : bytes, pixels = (size_t)t.h * t.w * p->batch;
    unsigned char *tmp = malloc(whole ? whole : 1), *dense = is_view(p, id) ? malloc(bytes ? bytes : 1) : tmp;
    if (!tmp || !dense) {
        free(tmp);
        if (dense != tmp) free(dense);
        return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    }
    st = yq_cuda_d2h(tmp, p->arena + p->off[o], whole, err);
    if (dense != tmp)
        for (size_t i = 0; i < pixels; i++) memcpy(dense + i * (size_t)c4_of(g, id), tmp + i * (size_t)ps + p->choff[id], (size_t)c4_of(g, id));
    if (!st) yq_nhwc4_to_nchw(dense, t.c, t.h, t.w, p->batch, host);
    if (dense != tmp) free(dense);
    free(tmp);
    return st;
}
