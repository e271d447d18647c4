#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "kernels/cpu_ref.h"
#include "quant/biascorr.h"
#include "runtime/plan.h"

/* The pre-activation value behind an output (leaky is invertible; linear is itself). */
static inline double pre_act(double y, yq_act a) { return a == YQ_ACT_LEAKY && y < 0 ? y * 10.0 : y; }

static int correctable(const yq_graph *g, int i)
{
    const yq_node *n = &g->nodes[i];
    return n->op == YQ_OP_CONV && !g->q[i].float_op && (n->act == YQ_ACT_LINEAR || n->act == YQ_ACT_LEAKY);
}

/* Sequential correction in one int8 pass over the whole batch: when a conv has
 * run, its bias moves by the measured shift and the conv runs again, before any
 * consumer reads it, so each layer is corrected for what its inputs really are.
 * The shift is measured against the float outputs at the same positions, only
 * where the int8 output is not saturated: clipping is the threshold's choice,
 * not an error the bias should chase. */
typedef struct seq { yq_graph *g; yq_plan *p, *pf; } seq;

static void correct_hook(void *ctx, const yq_graph *cg, int i, const void *data, int batch)
{
    seq *s = ctx;
    yq_graph *g = s->g;
    (void)cg;
    if (!correctable(g, i)) return;
    const yq_node *nd = &g->nodes[i];
    int src = nd->src[0];
    yq_dtype in_t = g->q[src].dtype;
    if (in_t == YQ_F32) return;                  /* its input was converted on the fly: not here */
    yq_qnode *q = &g->q[i];
    const float *f = yq_plan_data(s->pf, i);
    long plane = (long)nd->out.h * nd->out.w, sz = yq_shape_size(nd->out);
    float s_in = g->q[src].scale;
    for (int c = 0; c < nd->out.c; c++) {
        double m = 0;
        long cnt = 0;
        for (int b = 0; b < batch; b++)
            for (long k = 0; k < plane; k++) {
                long j = b * sz + c * plane + k;
                double y;
                if (q->dtype == YQ_F32) y = ((const float *)data)[j];
                else {
                    int v = ((const int8_t *)data)[j];
                    if (v >= q->qmax || v <= q->qmin) continue;
                    y = v * (double)q->scale;
                }
                m += pre_act(y, nd->act) - pre_act(f[j], nd->act);
                cnt++;
            }
        if (cnt < 16) continue;
        m /= (double)cnt;
        double nb = (double)q->bq[c] - m / ((double)s_in * (double)q->w_scale[c]);
        q->bq[c] = (int32_t)llround(fmin(fmax(nb, -2147483647.0), 2147483647.0));
    }
    yq_blas_conv(g, nd, q, yq_plan_data(s->p, src), in_t, (void *)data, yq_plan_work(s->p), batch);
}

yq_status yq_bias_correct_data(yq_graph *g, const float *inputs, int n, yq_error *err)
{
    if (!g->q) return yq_fail(err, YQ_ERR_INVALID_ARG, "bias correction needs an int8 graph");
    if (n < 1) return YQ_OK;
    yq_plan *p = NULL, *pf = NULL;
    yq_status st = yq_plan_new(g, n, YQ_PLAN_KEEP_ALL | YQ_PLAN_FLOAT, &pf, err);
    if (st == YQ_OK) st = yq_exec_fp32(pf, inputs, NULL, NULL, err);
    if (st == YQ_OK) st = yq_plan_new(g, n, YQ_PLAN_KEEP_ALL, &p, err);
    if (st == YQ_OK) {
        seq s = { g, p, pf };
        st = yq_exec_int8(p, inputs, correct_hook, &s, err);
    }
    yq_plan_free(p);
    yq_plan_free(pf);
    return st;
}
