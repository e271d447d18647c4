#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "calib/simulate.h"
#include "runtime/plan.h"

/* Activation memory a run may take: the images go through in batches below it. */
#define SIM_MAX_BYTES ((size_t)256 << 20)

struct yq_sim {
    yq_graph *g;
    int n_nodes;               /* g's (the per-node arrays' length: yq_sim_free reads no graph) */
    const float *inputs;
    int n, batch;
    yq_plan *p;
    float *pad;                /* batch inputs, for a last batch that is not full */
    float **ref;               /* per node: the FP32 head inputs of the n images (NULL elsewhere) */
    uint8_t *can, *on;         /* the int8 graph rounds node i's output; the simulation does */
    float *scale;
    int32_t *qmin, *qmax;
    float **w, **b;            /* the int8 convs' dequantized weights and biases */
    float **w_keep, **b_keep;  /* g's own, while a run has them swapped */
    int weights;
};

static int is_head(yq_op op) { return yq_op_is_head(op); }

void yq_sim_free(yq_sim *s)
{
    if (!s) return;
    int N = s->n_nodes;
    for (int i = 0; i < N; i++) {
        if (s->ref) free(s->ref[i]);
        if (s->w) free(s->w[i]);
        if (s->b) free(s->b[i]);
    }
    free(s->ref);
    free(s->w);
    free(s->b);
    free(s->w_keep);
    free(s->b_keep);
    free(s->can);
    free(s->on);
    free(s->scale);
    free(s->qmin);
    free(s->qmax);
    free(s->pad);
    yq_plan_free(s->p);
    free(s);
}

yq_status yq_sim_sync(yq_sim *s, yq_graph *g, yq_error *err)
{
    if (!g->q) return yq_fail(err, YQ_ERR_INVALID_ARG, "simulation: not an int8 graph");
    if (g != s->g) {
        yq_status st = yq_plan_rebind(s->p, g, err);
        if (st != YQ_OK) return st;
        s->g = g;
    }
    int N = g->n_nodes;
    int *readers = calloc((size_t)N, sizeof *readers), *int8_readers = calloc((size_t)N, sizeof *int8_readers);
    if (!readers || !int8_readers) {
        free(readers);
        free(int8_readers);
        return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    }
    for (int i = 1; i < N; i++)
        for (int k = 0; k < g->nodes[i].n_src; k++) {
            int src = g->nodes[i].src[k];
            readers[src]++;
            if (!g->q[i].float_op && !is_head(g->nodes[i].op)) int8_readers[src]++;
        }
    yq_status st = YQ_OK;
    for (int i = 0; i < N && st == YQ_OK; i++) {
        const yq_node *n = &g->nodes[i];
        const yq_qnode *q = &g->q[i];
        int r = 0;
        if (n->op == YQ_OP_DROPOUT || is_head(n->op)) r = 0;                 /* aliases */
        else if (q->dtype == YQ_S8 || q->dtype == YQ_U8) r = 1;
        else if (readers[i] > 0 && int8_readers[i] == readers[i]) r = 1;     /* float, read only by int8 ops */
        s->can[i] = s->on[i] = (uint8_t)r;
        s->scale[i] = q->scale > 0 && isfinite(q->scale) ? q->scale : 1.f;
        s->qmin[i] = q->qmin;
        s->qmax[i] = q->qmax;
        free(s->w[i]);
        free(s->b[i]);
        s->w[i] = s->b[i] = NULL;
        if (n->op != YQ_OP_CONV || q->float_op || !q->wq) continue;
        int F = n->p.conv.filters;
        long per = n->n_w / F;
        s->w[i] = malloc(sizeof(float) * (size_t)n->n_w);
        s->b[i] = malloc(sizeof(float) * (size_t)F);
        if (!s->w[i] || !s->b[i]) { st = yq_fail(err, YQ_ERR_NOMEM, "out of memory"); break; }
        for (int o = 0; o < F; o++) {
            for (long k = 0; k < per; k++) s->w[i][o * per + k] = (float)q->wq[o * per + k] * q->w_scale[o];
            s->b[i][o] = (float)((double)q->bq[o] * (double)q->deq[o]);
        }
    }
    free(readers);
    free(int8_readers);
    return st;
}

static void round_hook(void *ctx, const yq_graph *g, int id, const void *data, int batch)
{
    yq_sim *s = ctx;
    (void)data;                            /* the same buffer, read-only: round it in place */
    if (!s->on[id]) return;
    float *x = yq_plan_buf(s->p, id);
    long n = yq_shape_size(g->nodes[id].out) * batch;
    float sc = s->scale[id], inv = 1.f / sc, lo = (float)s->qmin[id], hi = (float)s->qmax[id];
    for (long k = 0; k < n; k++) {
        float v = roundf(x[k] * inv);      /* ties away from zero, as yq_quantize */
        x[k] = (v < lo ? lo : v > hi ? hi : v) * sc;
    }
}

/* The input of the batch [start, start + cnt): a last batch that is not full is padded
 * with copies of its first image. */
static const float *batch_input(yq_sim *s, int start, int cnt)
{
    long in_sz = yq_shape_size(s->g->nodes[0].out);
    const float *in = s->inputs + (long)start * in_sz;
    if (cnt < s->batch) {
        memcpy(s->pad, in, sizeof(float) * (size_t)(in_sz * cnt));
        for (int b = cnt; b < s->batch; b++) memcpy(s->pad + b * in_sz, in, sizeof(float) * (size_t)in_sz);
        in = s->pad;
    }
    return in;
}

/* One batch of images [start, start + cnt) through the plan; rounding when sim. */
static yq_status run_batch(yq_sim *s, int start, int cnt, int sim, yq_error *err)
{
    yq_graph *g = s->g;
    const float *in = batch_input(s, start, cnt);
    int swap = sim && s->weights;
    if (swap)
        for (int i = 1; i < g->n_nodes; i++)
            if (s->w[i]) {
                s->w_keep[i] = g->nodes[i].w;
                s->b_keep[i] = g->nodes[i].b;
                g->nodes[i].w = s->w[i];
                g->nodes[i].b = s->b[i];
            }
    yq_status st = yq_exec_fp32(s->p, in, sim ? round_hook : NULL, s, err);
    if (swap)
        for (int i = 1; i < g->n_nodes; i++)
            if (s->w[i]) {
                g->nodes[i].w = s->w_keep[i];
                g->nodes[i].b = s->b_keep[i];
            }
    return st;
}

yq_status yq_sim_new(yq_graph *g, const float *inputs, int n, yq_sim **out, yq_error *err)
{
    *out = NULL;
    if (!g->q) return yq_fail(err, YQ_ERR_INVALID_ARG, "simulation: not an int8 graph");
    if (n < 1 || !inputs) return yq_fail(err, YQ_ERR_INVALID_ARG, "simulation: no input images");
    int N = g->n_nodes;
    yq_sim *s = calloc(1, sizeof *s);
    if (!s) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    s->g = g;
    s->n_nodes = N;
    s->inputs = inputs;
    s->n = n;
    s->weights = 1;
    s->ref = calloc((size_t)N, sizeof *s->ref);
    s->w = calloc((size_t)N, sizeof *s->w);
    s->b = calloc((size_t)N, sizeof *s->b);
    s->w_keep = calloc((size_t)N, sizeof *s->w_keep);
    s->b_keep = calloc((size_t)N, sizeof *s->b_keep);
    s->can = calloc((size_t)N, 1);
    s->on = calloc((size_t)N, 1);
    s->scale = calloc((size_t)N, sizeof *s->scale);
    s->qmin = calloc((size_t)N, sizeof *s->qmin);
    s->qmax = calloc((size_t)N, sizeof *s->qmax);
    yq_status st = YQ_OK;
    if (!s->ref || !s->w || !s->b || !s->w_keep || !s->b_keep || !s->can || !s->on || !s->scale || !s->qmin || !s->qmax)
        st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    /* As many images per run as fit in SIM_MAX_BYTES. */
    const int flags = YQ_PLAN_FLOAT | YQ_PLAN_KEEP_HEADS;
    if (st == YQ_OK) st = yq_plan_new(g, 1, flags, &s->p, err);
    if (st == YQ_OK) {
        size_t per = yq_plan_bytes(s->p) + 1;
        s->batch = (int)(SIM_MAX_BYTES / per);
        if (s->batch > n) s->batch = n;
        if (s->batch < 1) s->batch = 1;
        if (s->batch > 1) {
            yq_plan_free(s->p);
            s->p = NULL;
            st = yq_plan_new(g, s->batch, flags, &s->p, err);
        }
    }
    long in_sz = yq_shape_size(g->nodes[0].out);
    if (st == YQ_OK && !(s->pad = malloc(sizeof(float) * (size_t)(in_sz * s->batch))))
        st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    for (int i = 1; i < N && st == YQ_OK; i++) {
        if (!is_head(g->nodes[i].op)) continue;
        int src = g->nodes[i].src[0];
        if (s->ref[src]) continue;
        s->ref[src] = malloc(sizeof(float) * (size_t)(yq_shape_size(g->nodes[src].out) * n));
        if (!s->ref[src]) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    }
    /* The FP32 references: g's own weights, nothing rounded. */
    for (int start = 0; start < n && st == YQ_OK; start += s->batch) {
        int cnt = n - start < s->batch ? n - start : s->batch;
        st = run_batch(s, start, cnt, 0, err);
        for (int i = 0; i < N && st == YQ_OK; i++) {
            if (!s->ref[i]) continue;
            const float *h = yq_plan_tensor(s->p, i);
            long sz = yq_shape_size(g->nodes[i].out);
            if (!h) st = yq_fail(err, YQ_ERR_INVALID_ARG, "simulation: the input of a head (node %d) was not kept", i);
            else memcpy(s->ref[i] + start * sz, h, sizeof(float) * (size_t)(sz * cnt));
        }
    }
    if (st == YQ_OK) st = yq_sim_sync(s, g, err);
    if (st != YQ_OK) {
        yq_sim_free(s);
        return st;
    }
    *out = s;
    return YQ_OK;
}

int yq_sim_rounds(const yq_sim *s, int id) { return id >= 0 && id < s->g->n_nodes && s->on[id]; }

void yq_sim_round(yq_sim *s, int id, int on)
{
    if (id >= 0 && id < s->g->n_nodes) s->on[id] = (uint8_t)(on && s->can[id]);
}

float yq_sim_scale(const yq_sim *s, int id) { return id >= 0 && id < s->g->n_nodes ? s->scale[id] : 0.f; }

void yq_sim_set_scale(yq_sim *s, int id, float scale)
{
    if (id >= 0 && id < s->g->n_nodes && scale > 0 && isfinite(scale)) s->scale[id] = scale;
}

void yq_sim_weights(yq_sim *s, int on) { s->weights = on != 0; }

/* The heads of the batch at start (cnt images) against the FP32 references, into *e. */
static yq_status add_heads(yq_sim *s, int start, int cnt, yq_head_err *e, yq_error *err)
{
    yq_graph *g = s->g;
    for (int i = 1; i < g->n_nodes; i++) {
        if (!is_head(g->nodes[i].op)) continue;
        int src = g->nodes[i].src[0];
        const float *x = yq_plan_tensor(s->p, src);
        if (!x) return yq_fail(err, YQ_ERR_INVALID_ARG, "simulation: the input of a head (node %d) was not kept", src);
        yq_head_err_add(g, i, s->ref[src] + start * yq_shape_size(g->nodes[src].out), x, cnt, e);
    }
    return YQ_OK;
}

yq_status yq_sim_run(yq_sim *s, yq_head_err *e, yq_error *err)
{
    memset(e, 0, sizeof *e);
    yq_status st = YQ_OK;
    for (int start = 0; start < s->n && st == YQ_OK; start += s->batch) {
        int cnt = s->n - start < s->batch ? s->n - start : s->batch;
        st = run_batch(s, start, cnt, 1, err);
        if (st == YQ_OK) st = add_heads(s, start, cnt, e, err);
    }
    return st;
}

typedef struct variant { int j, first; } variant;
static int by_first(const void *a, const void *b)
{
    const variant *x = a, *y = b;
    return x->first != y->first ? x->first - y->first : x->j - y->j;
}

yq_status yq_sim_run_many(yq_sim *s, int m, void (*set)(void *ctx, int j), void *ctx, yq_head_err *e, yq_error *err)
{
    yq_graph *g = s->g;
    int N = g->n_nodes;
    yq_status st = YQ_OK;
    if (s->weights) {                   /* quantized weights: every prefix differs from FP32 */
        for (int j = 0; j < m && st == YQ_OK; j++) {
            set(ctx, j);
            st = yq_sim_run(s, &e[j], err);
        }
        return st;
    }
    variant *v = malloc(sizeof *v * (size_t)(m > 0 ? m : 1));
    size_t bytes = yq_plan_bytes(s->p);
    unsigned char *snap = malloc(bytes ? bytes : 1), *arena = yq_plan_arena(s->p);
    if (!v || !snap) {
        free(v);
        free(snap);
        return yq_fail(err, YQ_ERR_NOMEM, "out of memory (%zu bytes of activations to keep)", bytes);
    }
    for (int j = 0; j < m; j++) {
        set(ctx, j);
        int f = 0;
        while (f < N && !s->on[f]) f++;
        v[j] = (variant){ j, f };
        memset(&e[j], 0, sizeof e[j]);
    }
    qsort(v, (size_t)m, sizeof *v, by_first);
    for (int start = 0; start < s->n && st == YQ_OK; start += s->batch) {
        int cnt = s->n - start < s->batch ? s->n - start : s->batch;
        const float *in = batch_input(s, start, cnt);
        int done = 0;                   /* nodes [0, done) hold the FP32 run's values */
        for (int a = 0; a < m && st == YQ_OK; a++) {
            int k = v[a].first;
            if (k > done) st = yq_exec_fp32_range(s->p, in, done, k, NULL, NULL, err);
            if (st != YQ_OK) break;
            done = k;                   /* (k == 0: node 0 itself is rounded, nothing is kept) */
            memcpy(snap, arena, bytes);
            set(ctx, v[a].j);
            st = yq_exec_fp32_range(s->p, in, k, N, round_hook, s, err);
            if (st == YQ_OK) st = add_heads(s, start, cnt, &e[v[a].j], err);
            memcpy(arena, snap, bytes);
        }
    }
    free(v);
    free(snap);
    return st;
}
