/* Buffer planning by liveness, and the FP32 executor. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/cpu_fp32.h"
#include "kernels/cpu_ref.h"
#include "ir/pack.h"
#include "runtime/plan.h"

struct yq_plan {
    const yq_graph *g;
    int batch, flags;
    int *owner;          /* node whose buffer this node uses (itself, or an alias's source) */
    int *last_use;       /* of each owner: the last node that reads it */
    size_t *off;         /* bytes, per owner */
    unsigned char *arena;
    size_t arena_bytes;
    float *work;
    float *input;        /* the float batch as given (an int8 graph quantizes it into node 0) */
    int quant;           /* buffers are typed by g->q */
    int threads;         /* CPU: threads of every kernel a run calls (<= 0: every core) */
    yq_cpu8 *cpu8;       /* CPU int8: the fast engine's packed weights, made at the first run */
};

/* Dropout and the heads pass their input on; in an int8 graph a head whose input
 * is int8 dequantizes it, and then needs a buffer of its own. */
static yq_dtype dtype(const yq_plan *p, int id)
{
    return p->flags & YQ_PLAN_FLOAT ? YQ_F32 : yq_node_dtype(p->g, id);
}

static int is_alias(const yq_plan *p, int id)
{
    yq_op op = p->g->nodes[id].op;
    return (op == YQ_OP_DROPOUT || yq_op_is_head(op)) &&
           dtype(p, id) == dtype(p, p->g->nodes[id].src[0]);
}

void *yq_plan_buf(const yq_plan *p, int id) { return p->arena + p->off[p->owner[id]]; }
static float *buf(const yq_plan *p, int id) { return yq_plan_buf(p, id); }


yq_status yq_plan_new(const yq_graph *g, int batch, int flags, yq_plan **out, yq_error *err)
{
    if (batch < 1) return yq_fail(err, YQ_ERR_INVALID_ARG, "batch %d must be >= 1", batch);
    int n = g->n_nodes;
    if (n < 1) return yq_fail(err, YQ_ERR_INVALID_ARG, "empty graph");
    yq_plan *p = calloc(1, sizeof *p);
    yq_buf *items = calloc((size_t)n, sizeof *items);
    if (!p || !items) goto nomem;
    p->g = g;
    p->batch = batch;
    p->flags = flags;
    p->owner = malloc((size_t)n * sizeof *p->owner);
    p->last_use = malloc((size_t)n * sizeof *p->last_use);
    p->off = malloc((size_t)n * sizeof *p->off);
    if (!p->owner || !p->last_use || !p->off) goto nomem;

    for (int i = 0; i < n; i++) p->owner[i] = i > 0 && is_alias(p, i) ? p->owner[g->nodes[i].src[0]] : i;
    yq_buffer_lifetimes(g, p->owner, flags, p->last_use);

    /* Greedy by size: each buffer goes at the lowest offset that does not collide
     * with a placed buffer whose lifetime overlaps. */
    int m = 0;
    long work = 0;
    for (int i = 0; i < n; i++) {
        if (p->owner[i] == i) {
            size_t bytes = (size_t)yq_shape_size(g->nodes[i].out) * batch * yq_dtype_size(dtype(p, i));
            items[m++] = (yq_buf){ i, (bytes + 63) & ~(size_t)63 };
        }
        long w = flags & YQ_PLAN_EXACT ? yq_f32_conv_exact_work(g, &g->nodes[i]) : yq_f32_conv_work(g, &g->nodes[i]);
        if (g->q && !(flags & YQ_PLAN_FLOAT)) {   /* in floats, rounded up */
            long wr = (long)((yq_blas_conv_work(g, &g->nodes[i]) + sizeof(float) - 1) / sizeof(float));
            if (wr > w) w = wr;
            if (g->q[i].float_op && (wr = yq_f32_conv_exact_work(g, &g->nodes[i])) > w) w = wr;
        }
        if (w > work) work = w;
    }
    size_t total = yq_pack_buffers(items, m, p->last_use, p->off);
    p->arena_bytes = total;
    p->arena = aligned_alloc(64, total ? total : 64);
    p->work = malloc((size_t)(work ? work : 1) * sizeof(float));
    p->quant = g->q && !(flags & YQ_PLAN_FLOAT);
    p->input = p->quant ? malloc(sizeof(float) * (size_t)yq_shape_size(g->nodes[0].out) * batch) : buf(p, 0);
    if (!p->arena || !p->work || !p->input) goto nomem;
    free(items);
    *out = p;
    return YQ_OK;
nomem:
    free(items);
    yq_plan_free(p);
    return yq_fail(err, YQ_ERR_NOMEM, "out of memory planning %d nodes at batch %d", n, batch);
}

void yq_plan_free(yq_plan *p)
{
    if (!p) return;
    free(p->owner);
    free(p->last_use);
    free(p->off);
    if (p->input && p->quant) free(p->input);
    free(p->arena);
    free(p->work);
    yq_cpu8_free(p->cpu8);
    free(p);
}

void yq_plan_set_threads(yq_plan *p, int threads)
{
    if (p->threads == threads) return;
    p->threads = threads;
    yq_cpu8_free(p->cpu8);      /* made again at the next run, with the new count */
    p->cpu8 = NULL;
}

int yq_plan_omp_enter(const yq_plan *p)
{
    int saved = omp_get_max_threads();
    if (p->threads > 0) omp_set_num_threads(p->threads);
    return saved;
}

void yq_plan_omp_leave(int saved) { omp_set_num_threads(saved); }

yq_status yq_plan_cpu8(yq_plan *p, yq_cpu8 **e, yq_error *err)
{
    *e = NULL;
    if (!p->quant || p->flags & (YQ_PLAN_REFERENCE | YQ_PLAN_INT8_BLAS)) return YQ_OK;
    if (!p->cpu8) {
        yq_isa isa = p->flags & YQ_PLAN_CPU_AVX2 ? YQ_ISA_AVX2 : YQ_ISA_AVX512;
        yq_status st = yq_cpu8_new(p->g, isa, p->threads, &p->cpu8, err);
        if (st) return st;
    }
    if (yq_cpu8_isa(p->cpu8) != YQ_ISA_REF) *e = p->cpu8;
    return YQ_OK;
}

int yq_plan_batch(const yq_plan *p) { return p->batch; }
void *yq_plan_arena(const yq_plan *p) { return p->arena; }

size_t yq_plan_bytes(const yq_plan *p) { return p->arena_bytes; }


const void *yq_plan_data(const yq_plan *p, int id)
{
    if (id < 0 || id >= p->g->n_nodes) return NULL;
    return p->last_use[p->owner[id]] == p->g->n_nodes ? yq_plan_buf(p, id) : NULL;
}

const float *yq_plan_tensor(const yq_plan *p, int id)
{
    return dtype(p, id) == YQ_F32 ? yq_plan_data(p, id) : NULL;
}

float *yq_plan_input(yq_plan *p) { return p->input; }
const yq_graph *yq_plan_graph(const yq_plan *p) { return p->g; }
int yq_plan_quantized(const yq_plan *p) { return p->quant; }

yq_status yq_plan_rebind(yq_plan *p, const yq_graph *g, yq_error *err)
{
    if (!(p->flags & YQ_PLAN_FLOAT) || !g->base || g->base != p->g->base || g->n_nodes != p->g->n_nodes)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "a plan moves only between float plans of rewrites of one FP32 graph");
    p->g = g;
    return YQ_OK;
}
int yq_plan_flags(const yq_plan *p) { return p->flags; }
float *yq_plan_work(const yq_plan *p) { return p->work; }

yq_status yq_exec_fp32(yq_plan *p, const float *input, yq_node_hook hook, void *ctx, yq_error *err)
{
    return yq_exec_fp32_range(p, input, 0, p->g->n_nodes, hook, ctx, err);
}

static yq_status exec_fp32_range(yq_plan *p, const float *input, int from, int to, yq_node_hook hook, void *ctx,
                                 yq_error *err);

yq_status yq_exec_fp32_range(yq_plan *p, const float *input, int from, int to, yq_node_hook hook, void *ctx,
                             yq_error *err)
{
    int saved = yq_plan_omp_enter(p);
    yq_status st = exec_fp32_range(p, input, from, to, hook, ctx, err);
    yq_plan_omp_leave(saved);
    return st;
}

static yq_status exec_fp32_range(yq_plan *p, const float *input, int from, int to, yq_node_hook hook, void *ctx,
                                 yq_error *err)
{
    const yq_graph *g = p->g;
    int B = p->batch;
    if (p->quant) return yq_fail(err, YQ_ERR_INVALID_ARG, "an int8 graph runs through yq_exec_int8 (or plan it with YQ_PLAN_FLOAT)");
    if (from < 0 || to > g->n_nodes || from > to)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "nodes [%d, %d) outside the graph's %d", from, to, g->n_nodes);
    if (from == 0 && to > 0) {
        if (input) memcpy(buf(p, 0), input, sizeof(float) * yq_shape_size(g->nodes[0].out) * B);
        if (hook) hook(ctx, g, 0, buf(p, 0), B);
    }
    for (int i = from > 1 ? from : 1; i < to; i++) {
        const yq_node *n = &g->nodes[i];
        float *y = buf(p, i);
        const float *x = buf(p, n->src[0]);
        yq_shape is = yq_node_in_shape(g, n);
        switch (n->op) {
        case YQ_OP_CONV:
            if (!n->w) return yq_fail(err, YQ_ERR_INVALID_ARG, "layer %d: conv has no weights", n->layer);
            if (p->flags & YQ_PLAN_EXACT) yq_f32_conv_exact(g, n, NULL, x, y, p->work, B);
            else yq_f32_conv(g, n, NULL, x, y, p->work, B);
            break;
        case YQ_OP_SHORTCUT:
            if (p->flags & YQ_PLAN_EXACT) {   /* the add, then the exact activation */
                yq_f32_shortcut(yq_shape_size(n->out), x, buf(p, n->src[1]), YQ_ACT_LINEAR, y, B);
                yq_f32_activate_exact(y, yq_shape_size(n->out) * B, n->act);
            } else {
                yq_f32_shortcut(yq_shape_size(n->out), x, buf(p, n->src[1]), n->act, y, B);
            }
            break;
        case YQ_OP_ROUTE: {
            int c_off = 0;
            for (int k = 0; k < n->n_src; k++) {
                yq_shape ss = g->nodes[n->src[k]].out;
                yq_f32_route_copy(ss, &n->p.route, buf(p, n->src[k]), n->out, c_off, y, B);
                c_off += ss.c / n->p.route.groups;
            }
            break;
        }
        case YQ_OP_UPSAMPLE: yq_f32_upsample(is, n->p.up.stride, x, y, B); break;
        case YQ_OP_MAXPOOL: yq_f32_maxpool(is, &n->p.pool, n->out, x, y, B); break;
        case YQ_OP_DROPOUT: case YQ_OP_YOLO: case YQ_OP_REGION: case YQ_OP_DETECT: break;   /* aliases */
        case YQ_OP_INPUT: case YQ_OP_COUNT:
            return yq_fail(err, YQ_ERR_UNSUPPORTED, "layer %d: %s cannot be executed", n->layer, yq_op_name(n->op));
        }
        if (hook) hook(ctx, g, i, y, B);
    }
    return YQ_OK;
}

/* How many times node id is read. */
static int n_uses(const yq_graph *g, int id)
{
    int uses = 0;
    for (int m = 1; m < g->n_nodes; m++)
        for (int q = 0; q < g->nodes[m].n_src; q++) uses += g->nodes[m].src[q] == id;
    return uses;
}

/* A [dropout] of an int8 graph: the identity at inference, its source's bytes. */
static int passes_on(const yq_graph *g, int id)
{
    return g->nodes[id].op == YQ_OP_DROPOUT && g->nodes[id].n_src == 1 &&
           yq_node_dtype(g, id) == yq_node_dtype(g, g->nodes[id].src[0]);
}

int yq_plan_pass_source(const yq_graph *g, int id)
{
    while (id > 0 && id < g->n_nodes && passes_on(g, id)) id = g->nodes[id].src[0];
    return id;
}

/* The conv behind source k of shortcut j (through dropouts read nowhere else), if its add
 * can run in the conv's epilogue; else -1. */
static int fusable_source(const yq_graph *g, int j, int k)
{
    const yq_node *s = &g->nodes[j];
    int i = s->src[k], other = s->src[1 - k];
    while (passes_on(g, i) && n_uses(g, i) == 1) i = g->nodes[i].src[0];
    const yq_node *c = &g->nodes[i];
    if (c->op != YQ_OP_CONV || g->q[i].float_op || yq_node_dtype(g, i) != YQ_S8 || other >= i ||
        yq_node_dtype(g, other) != YQ_S8 || n_uses(g, i) != 1)
        return -1;
    return i;
}

int yq_plan_fused_shortcut(const yq_graph *g, int id, int *res_first)
{
    if (!g || !g->q || id < 1 || id >= g->n_nodes || g->nodes[id].op != YQ_OP_CONV) return -1;
    /* the conv's one consumer, past any dropouts (yolo-fastest puts one before each add) */
    int j = id;
    do {
        int next = -1;
        for (int m = j + 1; m < g->n_nodes; m++)
            for (int q = 0; q < g->nodes[m].n_src; q++)
                if (g->nodes[m].src[q] == j) {
                    if (next >= 0) return -1;
                    next = m;
                }
        if (next < 0) return -1;
        j = next;
    } while (passes_on(g, j));
    const yq_node *s = &g->nodes[j];
    if (s->op != YQ_OP_SHORTCUT || s->n_src != 2 || g->q[j].float_op || yq_node_dtype(g, j) != YQ_S8) return -1;
    for (int k = 0; k < 2; k++) {
        int c = fusable_source(g, j, k);
        if (c < 0) continue;
        if (c != id) return -1;                   /* the shortcut fuses its other source */
        if (res_first) *res_first = k == 1;
        return j;
    }
    return -1;
}
