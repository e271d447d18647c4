/* Runs an int8 graph on the CPU: through the fast engine (kernels/cpu_int8.h) where the
 * CPU has AVX2 or AVX-512 VNNI, else (or as the plan's flags ask) through the exact dgemm
 * path or the plain-C reference; the same bytes on every path.
 *
 * Each node runs in its own domain: int8 ops read int8 inputs (quantizing a
 * float producer at that producer's scale), float ops (layers the qconfig keeps
 * in float) read float inputs (dequantizing int8 producers).  The conversions at
 * those boundaries use temporaries; in an all-int8 graph there are none.  The float ops
 * compute their exact definition (yq_f32_conv_exact, yq_f32_act_exact), which the GPU
 * engine computes too: the two agree byte for byte on every node. */
#include <stdlib.h>
#include <string.h>
#include "kernels/cpu_fp32.h"
#include "kernels/cpu_ref.h"
#include "runtime/plan.h"

typedef struct tmp { void *p[YQ_MAX_SRC]; int n; } tmp;

static void *tmp_alloc(tmp *t, size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (p) t->p[t->n++] = p;
    return p;
}
static void tmp_free(tmp *t)
{
    for (int i = 0; i < t->n; i++) free(t->p[i]);
    t->n = 0;
}

/* Source k of node id as want (F32 or S8); U8 passes through when allow_u8.  The conversion
 * to int8 on the fast engine's instructions (isa, nt threads): the reference's bytes. */
static const void *input_as(yq_plan *p, yq_isa isa, int nt, int id, int k, yq_dtype want, int allow_u8, yq_dtype *got,
                            tmp *t)
{
    const yq_graph *g = yq_plan_graph(p);
    int s = g->nodes[id].src[k];
    yq_dtype have = yq_node_dtype(g, s);
    const void *data = yq_plan_buf(p, s);
    long n = yq_shape_size(g->nodes[s].out) * yq_plan_batch(p);
    *got = have;
    if (have == want || (have == YQ_U8 && allow_u8)) return data;
    const yq_qnode *qs = &g->q[s];
    if (want == YQ_F32) {
        float *f = tmp_alloc(t, (size_t)n * sizeof(float));
        if (f) yq_cpu8_dequantize(isa, nt, data, have, n, qs->scale, f);
        *got = YQ_F32;
        return f;
    }
    const float *f = data;
    if (have == YQ_U8) {
        float *ff = tmp_alloc(t, (size_t)n * sizeof(float));
        if (!ff) return NULL;
        yq_cpu8_dequantize(isa, nt, data, have, n, qs->scale, ff);
        f = ff;
    }
    int8_t *q = tmp_alloc(t, (size_t)n);
    if (q) yq_cpu8_quantize(isa, nt, f, n, qs->scale, qs->qmin, qs->qmax, q);
    *got = YQ_S8;
    return q;
}

static yq_status exec_int8(yq_plan *p, const float *input, yq_node_hook hook, void *ctx, yq_error *err);

yq_status yq_exec_int8(yq_plan *p, const float *input, yq_node_hook hook, void *ctx, yq_error *err)
{
    /* the float layers' exact FP32 convs and the conversions run on the plan's threads too */
    int saved = yq_plan_omp_enter(p);
    yq_status st = exec_int8(p, input, hook, ctx, err);
    yq_plan_omp_leave(saved);
    return st;
}

static yq_status exec_int8(yq_plan *p, const float *input, yq_node_hook hook, void *ctx, yq_error *err)
{
    const yq_graph *g = yq_plan_graph(p);
    if (!g->q || !yq_plan_quantized(p)) return yq_fail(err, YQ_ERR_INVALID_ARG, "not an int8 plan");
    int B = yq_plan_batch(p);
    long in_n = yq_shape_size(g->nodes[0].out) * B;
    const float *x0 = input ? input : yq_plan_input(p);
    yq_cpu8 *e;
    yq_status st = yq_plan_cpu8(p, &e, err);
    if (st) return st;
    yq_isa isa = e ? yq_cpu8_isa(e) : YQ_ISA_REF;
    int nt = e ? yq_cpu8_threads(e) : 1;
    if (g->q[0].dtype == YQ_U8) yq_cpu8_quantize_u8(isa, nt, x0, in_n, g->q[0].scale, yq_plan_buf(p, 0));
    else if (g->q[0].dtype == YQ_S8)
        yq_cpu8_quantize(isa, nt, x0, in_n, g->q[0].scale, g->q[0].qmin, g->q[0].qmax, yq_plan_buf(p, 0));
    else memcpy(yq_plan_buf(p, 0), x0, sizeof(float) * (size_t)in_n);
    if (hook) hook(ctx, g, 0, yq_plan_buf(p, 0), B);

    tmp t = { { 0 }, 0 };
    for (int i = 1; i < g->n_nodes; i++) {
        const yq_node *n = &g->nodes[i];
        const yq_qnode *q = &g->q[i];
        void *y = yq_plan_buf(p, i);
        yq_shape is = yq_node_in_shape(g, n);
        yq_dtype got;
        int fl = q->float_op;
        const void *x;
        switch (n->op) {
        case YQ_OP_CONV:
            if (fl && yq_node_dtype(g, n->src[0]) != YQ_F32 && yq_f32_conv_exact_takes_q(g, n)) {
                /* a float depthwise conv on an int8 tensor: dequantized a channel at a time */
                yq_f32_conv_exact_q(g, n, yq_conv_weights(n, q), yq_plan_buf(p, n->src[0]), yq_node_dtype(g, n->src[0]),
                                    g->q[n->src[0]].scale, y, yq_plan_work(p), B);
                break;
            }
            x = input_as(p, isa, nt, i, 0, fl ? YQ_F32 : YQ_S8, !fl, &got, &t);
            if (!x) goto nomem;
            if (fl) yq_f32_conv_exact(g, n, yq_conv_weights(n, q), x, y, yq_plan_work(p), B);
            else if (e) {
                if ((st = yq_cpu8_conv(e, i, x, got, y, B, err))) {
                    tmp_free(&t);
                    return st;
                }
            }
            else if (yq_plan_flags(p) & YQ_PLAN_REFERENCE) yq_ref_conv(g, n, q, x, got, y, yq_plan_work(p), B);
            else yq_blas_conv(g, n, q, x, got, y, yq_plan_work(p), B);
            break;
        case YQ_OP_SHORTCUT: {
            const void *b;
            yq_dtype got_b;
            x = input_as(p, isa, nt, i, 0, fl ? YQ_F32 : YQ_S8, 0, &got, &t);
            b = input_as(p, isa, nt, i, 1, fl ? YQ_F32 : YQ_S8, 0, &got_b, &t);
            if (!x || !b) goto nomem;
            if (fl) {
                yq_f32_shortcut(yq_shape_size(n->out), x, b, YQ_ACT_LINEAR, y, B);
                yq_f32_activate_exact(y, yq_shape_size(n->out) * B, n->act);
            }
            else yq_cpu8_shortcut(isa, nt, yq_shape_size(n->out), x, b, q, y, B);
            break;
        }
        case YQ_OP_ROUTE: {
            int c_off = 0;
            for (int k = 0; k < n->n_src; k++) {
                yq_shape ss = g->nodes[n->src[k]].out;
                x = input_as(p, isa, nt, i, k, fl ? YQ_F32 : YQ_S8, 0, &got, &t);
                if (!x) goto nomem;
                if (fl) yq_f32_route_copy(ss, &n->p.route, x, n->out, c_off, y, B);
                else yq_ref_route_copy(ss, &n->p.route, x, n->out, c_off, y, B);
                c_off += ss.c / n->p.route.groups;
            }
            break;
        }
        case YQ_OP_UPSAMPLE:
            x = input_as(p, isa, nt, i, 0, fl ? YQ_F32 : YQ_S8, 0, &got, &t);
            if (!x) goto nomem;
            if (fl) yq_f32_upsample(is, n->p.up.stride, x, y, B);
            else yq_cpu8_upsample(isa, nt, is, n->p.up.stride, x, y, B);
            break;
        case YQ_OP_MAXPOOL:
            x = input_as(p, isa, nt, i, 0, fl ? YQ_F32 : YQ_S8, 0, &got, &t);
            if (!x) goto nomem;
            if (fl) yq_f32_maxpool(is, &n->p.pool, n->out, x, y, B);
            else yq_cpu8_maxpool(isa, nt, is, &n->p.pool, n->out, x, y, B);
            break;
        case YQ_OP_DROPOUT: case YQ_OP_YOLO: case YQ_OP_REGION: case YQ_OP_DETECT:
            /* An alias unless the dtype changes: then the head dequantizes its input. */
            if (yq_node_dtype(g, i) != yq_node_dtype(g, n->src[0])) {
                x = input_as(p, isa, nt, i, 0, q->dtype, 0, &got, &t);
                if (!x) goto nomem;
                memcpy(y, x, (size_t)yq_shape_size(n->out) * B * yq_dtype_size(q->dtype));
            }
            break;
        case YQ_OP_INPUT: case YQ_OP_COUNT:
            tmp_free(&t);
            return yq_fail(err, YQ_ERR_UNSUPPORTED, "layer %d: %s cannot be executed", n->layer, yq_op_name(n->op));
        }
        tmp_free(&t);
        if (hook) hook(ctx, g, i, y, B);
    }
    return YQ_OK;
nomem:
    tmp_free(&t);
    return yq_fail(err, YQ_ERR_NOMEM, "out of memory converting inputs");
}
