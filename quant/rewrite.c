/* FP32 graph -> int8 graph.  See ../shared/DESIGN.md "Numerics": symmetric
 * int8 with zero point 0, per-channel weights, int32 bias, a requantize with the
 * activation fused after every conv, shared scales across route/maxpool/upsample
 * so that those ops are copies, a rescaling add for shortcuts, dequantization in
 * the epilogue of the convs that feed the heads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ir/half.h"
#include "quant/rewrite.h"

static float qround(float v, int even) { return even ? rintf(v) : roundf(v); }

static double quant_err(const float *w, long n, float scale, int qmax, int even)
{
    double e = 0;
    for (long i = 0; i < n; i++) {
        float q = qround(w[i] / scale, even);
        if (q > qmax) q = (float)qmax;
        if (q < -qmax) q = (float)-qmax;
        double d = (double)w[i] - (double)(q * scale);
        e += d * d;
    }
    return e;
}

float yq_quant_weights(const float *w, long n, int qmax, yq_wscale mode, int round_even, int8_t *q)
{
    float amax = 0;
    for (long i = 0; i < n; i++) amax = fmaxf(amax, fabsf(w[i]));
    float scale = amax > 0 ? amax / qmax : 1.f;   /* an all-zero channel: any scale, all zeros */
    if (amax > 0 && mode == YQ_WSCALE_POWER2) {
        scale = exp2f(ceilf(log2f(scale)));
    } else if (amax > 0 && mode == YQ_WSCALE_MSE) {
        double best = quant_err(w, n, scale, qmax, round_even);
        float best_s = scale;
        for (int k = 1; k < 60; k++) {           /* clip at 100% .. 41% of the max */
            float s = scale * (1.f - 0.01f * k);
            double e = quant_err(w, n, s, qmax, round_even);
            if (e < best) { best = e; best_s = s; }
        }
        scale = best_s;
    }
    for (long i = 0; i < n; i++) {
        float v = qround(w[i] / scale, round_even);
        q[i] = (int8_t)(v > qmax ? qmax : v < -qmax ? -qmax : (int)v);
    }
    return scale;
}

/* ---- scale classes: nodes whose outputs must share one scale ---------------- */

static int find(int *par, int x)
{
    while (par[x] != x) x = par[x] = par[par[x]];
    return x;
}
static void unite(int *par, int a, int b)
{
    a = find(par, a);
    b = find(par, b);
    if (a != b) par[a < b ? b : a] = a < b ? a : b;
}

static int is_head(yq_op op) { return yq_op_is_head(op); }

/* Route, maxpool, upsample, dropout and the heads take their sources' scale. */
static void unite_classes(const yq_graph *g, int *par)
{
    for (int i = 0; i < g->n_nodes; i++) par[i] = i;
    for (int i = 1; i < g->n_nodes; i++) {
        const yq_node *n = &g->nodes[i];
        switch (n->op) {
        case YQ_OP_ROUTE:
            for (int k = 0; k < n->n_src; k++) if (n->src[k] > 0) unite(par, i, n->src[k]);
            break;
        case YQ_OP_MAXPOOL: case YQ_OP_UPSAMPLE: case YQ_OP_DROPOUT: case YQ_OP_YOLO: case YQ_OP_REGION:
            if (n->src[0] > 0) unite(par, i, n->src[0]);
            break;
        default: break;
        }
    }
}

void yq_scale_classes(const yq_graph *g, int *root)
{
    unite_classes(g, root);
    for (int i = 0; i < g->n_nodes; i++) root[i] = find(root, i);
}

static int int8_act(yq_act a) { return a == YQ_ACT_LINEAR || a == YQ_ACT_LEAKY || a == YQ_ACT_RELU; }
/* A conv's activation the rewrite can run in int8: fused into the requantize, or a table. */
static int int8_conv_act(yq_act a, const yq_qconfig *qc) { return int8_act(a) || (qc->act_table && yq_act_is_table(a)); }

static float neg_rq(yq_act a, double m)
{
    if (a == YQ_ACT_LEAKY) return yq_rq_encode(0.1 * m);
    if (a == YQ_ACT_RELU) return yq_rq_encode(0);
    return yq_rq_encode(m);
}

static yq_status rewrite_into(yq_graph *g, const yq_calib_stats *cs, const yq_qconfig *qc, yq_error *err);

yq_status yq_rewrite(const yq_graph *g, const yq_calib_stats *cs, const yq_qconfig *qc, yq_graph **out, yq_error *err)
{
    *out = NULL;
    yq_graph *v;
    yq_status st = yq_graph_view(g, &v, err);
    if (st == YQ_OK && (st = rewrite_into(v, cs, qc, err)) != YQ_OK) yq_graph_free(v);
    if (st == YQ_OK) *out = v;
    return st;
}

yq_status yq_quantize_uncalibrated(const yq_graph *g, int head_int8, yq_graph **out, yq_error *err)
{
    *out = NULL;
    yq_qconfig *qc = malloc(sizeof *qc);          /* (large: not on the stack) */
    yq_graph *c = NULL, *v = NULL;
    yq_status st = qc ? yq_graph_clone(g, &c, err) : yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    if (st == YQ_OK) {
        yq_qconfig_defaults(qc);
        qc->head_float = !head_int8;
        st = yq_rewrite(c, NULL, qc, &v, err);
    }
    free(qc);
    if (st == YQ_OK) {
        v->owned_base = c;         /* the copy lives as long as its rewrite */
        *out = v;
    } else {
        yq_graph_free(c);
    }
    return st;
}

static yq_status quant_conv(yq_graph *g, int id, const yq_calib_stats *cs, const yq_qconfig *qc, yq_error *err)
{
    yq_node *n = &g->nodes[id];
    yq_qnode *q = &g->q[id];
    int src = n->src[0];
    int F = n->p.conv.filters, L = n->layer;
    long per = n->n_w / F;
    int qmax_w = (1 << (yq_qc_bits(qc, L) - 1)) - 1;
    float s_in = g->q[src].scale;
    q->wq = yq_arena_alloc(g, (size_t)n->n_w);
    q->bq = yq_arena_alloc(g, sizeof(int32_t) * (size_t)F);
    q->w_scale = yq_arena_alloc(g, sizeof(float) * (size_t)F);
    q->rq_pos = yq_arena_alloc(g, sizeof(float) * (size_t)F);
    q->rq_neg = yq_arena_alloc(g, sizeof(float) * (size_t)F);
    q->deq = yq_arena_alloc(g, sizeof(float) * (size_t)F);
    if (!q->wq || !q->bq || !q->w_scale || !q->rq_pos || !q->rq_neg || !q->deq)
        return yq_fail(err, YQ_ERR_NOMEM, "out of memory quantizing layer %d", L);
    /* An int8 output with a table activation: the requantize lands on the table's grid. */
    double step_pos = 0, step_neg = 0;
    q->lut = NULL;
    if (q->dtype == YQ_S8 && yq_act_is_table(n->act)) {
        if (!(q->lut = yq_arena_alloc(g, YQ_LUT_N))) return yq_fail(err, YQ_ERR_NOMEM, "out of memory quantizing layer %d", L);
        yq_status st = yq_act_table(n->act, q->scale, q->qmin, q->qmax, q->lut, &step_pos, &step_neg, err);
        if (st != YQ_OK) return st;
    }
    yq_wscale mode = yq_qc_wscale(qc, L);
    if (yq_qc_per_channel(qc, L)) {
        for (int o = 0; o < F; o++)
            q->w_scale[o] = yq_quant_weights(n->w + o * per, per, qmax_w, mode, qc->round_even, q->wq + o * per);
    } else {
        float s = yq_quant_weights(n->w, n->n_w, qmax_w, mode, qc->round_even, q->wq);
        for (int o = 0; o < F; o++) q->w_scale[o] = s;
    }
    /* Bias correction: the rounding of the weights shifts each output's mean by
     * sum (wq*s - w) * E[x]; fold the opposite into the bias (E[x] per input
     * channel from calibration; padding ignored). */
    yq_shape is = g->nodes[src].out;
    int cin = is.c / n->p.conv.groups, kk = n->p.conv.size * n->p.conv.size;
    int per_group = F / n->p.conv.groups;
    for (int o = 0; o < F; o++) {
        double b = n->b[o];
        if (qc->bias_correction && cs) {
            const double *mean = cs->ch_mean[src];
            int c0 = (o / per_group) * cin;
            double d = 0;
            for (int ci = 0; ci < cin; ci++) {
                double e = 0;
                for (int k = 0; k < kk; k++) {
                    long wi = o * per + (long)ci * kk + k;
                    e += (double)q->wq[wi] * (double)q->w_scale[o] - (double)n->w[wi];
                }
                d += e * mean[c0 + ci];
            }
            b -= d;
        }
        double acc_scale = (double)s_in * (double)q->w_scale[o];
        double bq = llround(b / acc_scale);
        q->bq[o] = (int32_t)(bq > 2147483647.0 ? 2147483647.0 : bq < -2147483647.0 ? -2147483647.0 : bq);
        q->deq[o] = (float)acc_scale;
        if (q->lut) {
            q->rq_pos[o] = yq_rq_encode(acc_scale / step_pos);
            q->rq_neg[o] = yq_rq_encode(acc_scale / step_neg);
            continue;
        }
        double m = acc_scale / (double)q->scale;
        q->rq_pos[o] = yq_rq_encode(m);
        q->rq_neg[o] = neg_rq(n->act, m);
    }
    return YQ_OK;
}

/* fp16w: a copy of the weights rounded to FP16 (the FP32 model's own stay as they are).
 * A conv whose weights do not fit FP16 (|w| > 65504) stays FP32, as do grouped convs, which
 * the GPU runs on its FP32 kernels; the package records which. */
static yq_status float_conv_weights(yq_graph *g, int i, const yq_qconfig *qc, yq_error *err)
{
    yq_node *n = &g->nodes[i];
    yq_qnode *q = &g->q[i];
    q->fp16w = 0;
    q->wf = NULL;
    if (!qc->float_fp16w || n->p.conv.groups != 1) return YQ_OK;
    for (long k = 0; k < n->n_w; k++)
        if (!(fabsf(n->w[k]) <= 65504.f)) return YQ_OK;
    float *w = yq_arena_alloc(g, sizeof *w * (size_t)(n->n_w ? n->n_w : 1));
    if (!w) return yq_fail(err, YQ_ERR_NOMEM, "layer %d: out of memory", n->layer);
    for (long k = 0; k < n->n_w; k++) w[k] = yq_round_fp16(n->w[k]);
    q->wf = w;
    q->fp16w = 1;
    return YQ_OK;
}

void yq_float_reasons(const yq_graph *g, const yq_qconfig *qc, uint8_t *why)
{
    int N = g->n_nodes, first_conv = -1;
    for (int i = 1; i < N; i++)
        if (g->nodes[i].op == YQ_OP_CONV) { first_conv = i; break; }
    why[0] = YQ_WHY_INT8;
    for (int i = 1; i < N; i++) {
        const yq_node *n = &g->nodes[i];
        yq_float_why w = YQ_WHY_INT8;
        if (yq_qc_skip(qc, n->layer)) w = YQ_WHY_SKIP;
        else if (n->op == YQ_OP_CONV && i == first_conv && qc->first_float) w = YQ_WHY_FIRST;
        else if (n->op == YQ_OP_CONV && !int8_conv_act(n->act, qc)) w = YQ_WHY_ACT;   /* act_table off */
        else if (n->op == YQ_OP_SHORTCUT && !int8_act(n->act)) w = YQ_WHY_ACT;
        why[i] = (uint8_t)w;
    }
    /* head = float: the convs feeding a head (a reason before first's and the activation's) */
    for (int i = 1; i < N && qc->head_float; i++) {
        int s = g->nodes[i].src[0];
        if (!is_head(g->nodes[i].op) || s <= 0) continue;
        if (g->nodes[s].op == YQ_OP_CONV && why[s] != YQ_WHY_SKIP) why[s] = YQ_WHY_HEAD;
        /* an anchor-free head reads the concat of its box and class convs */
        if (g->nodes[s].op == YQ_OP_ROUTE && g->nodes[s].p.route.groups == 1)
            for (int k = 0; k < g->nodes[s].n_src; k++) {
                int c = g->nodes[s].src[k];
                if (c > 0 && g->nodes[c].op == YQ_OP_CONV && why[c] != YQ_WHY_SKIP) why[c] = YQ_WHY_HEAD;
            }
    }
    /* A node whose inputs all come from float ops stays in float too when it is a
     * pure data-movement op (maxpool/upsample/route/dropout): converting there gains nothing. */
    for (int i = 1; i < N; i++) {
        const yq_node *n = &g->nodes[i];
        if (why[i] == YQ_WHY_INT8 && (n->op == YQ_OP_MAXPOOL || n->op == YQ_OP_UPSAMPLE || n->op == YQ_OP_ROUTE ||
                                      n->op == YQ_OP_DROPOUT || is_head(n->op))) {
            int all_f = 1;
            for (int k = 0; k < n->n_src; k++) all_f &= n->src[k] > 0 && why[n->src[k]] != YQ_WHY_INT8;
            if (all_f) why[i] = YQ_WHY_INPUTS;
        }
    }
}

const char *yq_float_why_name(yq_float_why w)
{
    static const char *names[] = { "int8", "skip", "head", "first", "activation", "inputs" };
    return (unsigned)w < sizeof names / sizeof *names ? names[w] : "?";
}

static yq_status rewrite_into(yq_graph *g, const yq_calib_stats *cs, const yq_qconfig *qc, yq_error *err)
{
    int N = g->n_nodes;
    if (cs && cs->n_nodes != N) return yq_fail(err, YQ_ERR_INVALID_ARG, "calibration statistics are for another graph");
    yq_status st = yq_qconfig_validate(qc, g, err);
    if (st != YQ_OK) return st;
    yq_qnode *q = yq_arena_alloc(g, sizeof *q * (size_t)N);
    int *par = malloc(sizeof *par * (size_t)N);
    int *consumers_int8 = calloc((size_t)N, sizeof *consumers_int8);
    int *consumers = calloc((size_t)N, sizeof *consumers);
    int *head_feed = calloc((size_t)N, sizeof *head_feed);
    float *cls_t = calloc((size_t)N, sizeof *cls_t), *cls_set = calloc((size_t)N, sizeof *cls_set);
    if (!q || !par || !consumers_int8 || !consumers || !head_feed || !cls_t || !cls_set) {
        st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
        goto done;
    }

    /* 1. Which nodes run in float. */
    uint8_t *why = malloc((size_t)N);
    if (!why) { st = yq_fail(err, YQ_ERR_NOMEM, "out of memory"); goto done; }
    for (int i = 1; i < N; i++)
        if (g->nodes[i].op == YQ_OP_CONV && !g->nodes[i].w) {
            free(why);
            st = yq_fail(err, YQ_ERR_INVALID_ARG, "layer %d: conv without weights", g->nodes[i].layer);
            goto done;
        }
    yq_float_reasons(g, qc, why);
    for (int i = 1; i < N; i++) q[i].float_op = why[i] != YQ_WHY_INT8;
    free(why);
    for (int i = 1; i < N; i++)
        if (is_head(g->nodes[i].op)) head_feed[g->nodes[i].src[0]] = 1;
    for (int i = 1; i < N; i++)
        for (int k = 0; k < g->nodes[i].n_src; k++) {
            consumers[g->nodes[i].src[k]]++;
            if (!q[i].float_op && !is_head(g->nodes[i].op)) consumers_int8[g->nodes[i].src[k]]++;
        }

    /* 2. Thresholds, then shared-scale classes.  A class takes the largest threshold of its
     * members; thresholds set in the qconfig (layer.N.thresh) replace the calibrated ones,
     * and a class with any of them set takes the largest of those. */
    unite_classes(g, par);
    for (int i = 1; i < N; i++) {
        yq_node *n = &g->nodes[i];
        int L = n->layer;
        int bits = yq_qc_bits(qc, L);
        q[i].qmax = (1 << (bits - 1)) - 1;
        q[i].qmin = -q[i].qmax;
        float set = yq_qc_thresh(qc, L);
        int r = find(par, i);
        if (set > 0) {
            if (set > cls_set[r]) cls_set[r] = set;
            q[i].thresh = set;
            continue;
        }
        yq_calib_method m = yq_qc_calib(qc, L);
        q[i].thresh = cs ? yq_thresh(&cs->hist[i], &m, bits) : 1.f;
        if (n->op == YQ_OP_DROPOUT || is_head(n->op)) continue;   /* aliases: no data of their own */
        if (q[i].thresh > cls_t[r]) cls_t[r] = q[i].thresh;
    }
    for (int i = 1; i < N; i++) {
        int r = find(par, i);
        if (cls_set[r] > 0) cls_t[r] = cls_set[r];
    }
    /* The input: the uint8 image (scale 1/255) when an int8 op reads it. */
    q[0].dtype = consumers_int8[0] ? YQ_U8 : YQ_F32;
    q[0].scale = 1.f / 255.f;
    q[0].thresh = 1.f;
    q[0].qmin = 0;
    q[0].qmax = 255;
    for (int i = 1; i < N; i++) {
        int r = find(par, i);
        float t = cls_t[r] > 0 ? cls_t[r] : q[i].thresh;
        if (!(t > 0) || !isfinite(t)) t = 1e-6f;
        q[i].thresh = t;
        q[i].scale = t / q[i].qmax;
    }

    /* 3. Output types. */
    for (int i = 1; i < N; i++) {
        yq_node *n = &g->nodes[i];
        if (q[i].float_op) q[i].dtype = YQ_F32;
        else if (is_head(n->op)) q[i].dtype = YQ_F32;                   /* heads decode floats */
        else if (n->op == YQ_OP_CONV && head_feed[i] && consumers_int8[i] == 0)
            q[i].dtype = YQ_F32;                                        /* dequantizing epilogue */
        else q[i].dtype = YQ_S8;
    }
    /* Dropout keeps its source's type (it is an alias). */
    for (int i = 1; i < N; i++)
        if (g->nodes[i].op == YQ_OP_DROPOUT) q[i] = q[g->nodes[i].src[0]];

    g->q = q;
    /* 4. Per-op integer parameters; the float convs' weights at their precision. */
    for (int i = 1; i < N && st == YQ_OK; i++) {
        yq_node *n = &g->nodes[i];
        if (q[i].float_op && n->op == YQ_OP_CONV) {
            st = float_conv_weights(g, i, qc, err);
            continue;
        }
        if (q[i].float_op) continue;
        if (n->op == YQ_OP_CONV) {
            st = quant_conv(g, i, cs, qc, err);
        } else if (n->op == YQ_OP_SHORTCUT) {
            q[i].sa = yq_rq_encode((double)q[n->src[0]].scale / (double)q[i].scale);
            q[i].sb = yq_rq_encode((double)q[n->src[1]].scale / (double)q[i].scale);
            q[i].sneg = n->act == YQ_ACT_LEAKY ? 0.1f : n->act == YQ_ACT_RELU ? 0.0f : 1.0f;
        }
    }
    if (st != YQ_OK) g->q = NULL;
done:
    free(par);
    free(consumers_int8);
    free(consumers);
    free(head_feed);
    free(cls_t);
    free(cls_set);
    return st;
}
