#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "calib/compare.h"
#include "kernels/cpu_ref.h"
#include "runtime/plan.h"

yq_status yq_compare_layers(const yq_graph *g, const float *inputs, int n_images, yq_layer_err **out, yq_error *err)
{
    if (!g->q) return yq_fail(err, YQ_ERR_INVALID_ARG, "not an int8 graph");
    yq_plan *pf = NULL, *pq = NULL;
    yq_layer_err *e = calloc((size_t)g->n_nodes, sizeof *e);
    float *tmp = NULL;
    long maxsz = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (yq_shape_size(g->nodes[i].out) > maxsz) maxsz = yq_shape_size(g->nodes[i].out);
    tmp = malloc(sizeof(float) * (size_t)maxsz);
    if (!e || !tmp) { free(e); free(tmp); return yq_fail(err, YQ_ERR_NOMEM, "out of memory"); }
    yq_status st = yq_plan_new(g, 1, YQ_PLAN_KEEP_ALL | YQ_PLAN_FLOAT, &pf, err);
    if (st == YQ_OK) st = yq_plan_new(g, 1, YQ_PLAN_KEEP_ALL, &pq, err);
    long in_sz = yq_shape_size(g->nodes[0].out);
    for (int im = 0; im < n_images && st == YQ_OK; im++) {
        st = yq_exec_fp32(pf, inputs + im * in_sz, NULL, NULL, err);
        if (st == YQ_OK) st = yq_exec_int8(pq, inputs + im * in_sz, NULL, NULL, err);
        for (int i = 0; i < g->n_nodes && st == YQ_OK; i++) {
            const float *f = yq_plan_data(pf, i);
            const void *q = yq_plan_data(pq, i);
            long n = yq_shape_size(g->nodes[i].out);
            yq_dtype t = g->q[i].dtype;
            const float *d = q;
            if (t != YQ_F32) {
                yq_dequantize(q, t, n, g->q[i].scale, tmp);
                d = tmp;
            }
            for (long k = 0; k < n; k++) {
                double a = f[k], b = a - (double)d[k];
                e[i].sig += a * a;
                e[i].noise += b * b;
                if (fabs(b) > e[i].max_abs) e[i].max_abs = fabs(b);
            }
        }
    }
    yq_plan_free(pf);
    yq_plan_free(pq);
    free(tmp);
    if (st != YQ_OK) { free(e); return st; }
    for (int i = 0; i < g->n_nodes; i++)
        e[i].sqnr_db = e[i].noise > 0 ? 10 * log10((e[i].sig > 0 ? e[i].sig : 1e-30) / e[i].noise) : 200;
    *out = e;
    return YQ_OK;
}

static double sigm(double v) { return 1 / (1 + exp(-v)); }

void yq_head_err_add(const yq_graph *g, int head, const float *ref, const float *x, int batch, yq_head_err *e)
{
    const yq_node *h = &g->nodes[head];
    const yq_node *src = &g->nodes[h->src[0]];
    const yq_head_p *hp = &h->p.head;
    long P = (long)src->out.h * src->out.w, sz = yq_shape_size(src->out);
    int coords = hp->coords > 0 ? hp->coords : 4, C = hp->classes;
    int per = coords + 1 + C, na = h->op == YQ_OP_YOLO ? hp->n_mask : hp->num;
    int prob = src->op == YQ_OP_CONV && src->act == YQ_ACT_LOGISTIC;   /* already probabilities */
    int soft = h->op == YQ_OP_REGION && hp->softmax;
    if (C < 1 || coords < 4 || na < 1 || (long)na * per != src->out.c) {
        for (long k = 0; k < sz * batch; k++) {
            double a = ref[k], d = a - (double)x[k];
            e->conf_sig += a * a;
            e->conf_noise += d * d;
        }
        return;
    }
    for (int b = 0; b < batch; b++)
        for (int a = 0; a < na; a++) {
            const float *r = ref + b * sz + (long)a * per * P, *y = x + b * sz + (long)a * per * P;
            const float *rc = r + (long)(coords + 1) * P, *yc = y + (long)(coords + 1) * P;
            for (long p = 0; p < P; p++) {
                double or_ = prob ? (double)r[coords * P + p] : sigm(r[coords * P + p]);
                double ox = prob ? (double)y[coords * P + p] : sigm(y[coords * P + p]);
                double mr = 0, mx = 0, sr = 1, sx = 1;      /* softmax: max and sum of exp */
                if (soft) {
                    mr = mx = -INFINITY;
                    sr = sx = 0;
                    for (int k = 0; k < C; k++) {
                        mr = fmax(mr, rc[k * P + p]);
                        mx = fmax(mx, yc[k * P + p]);
                    }
                    for (int k = 0; k < C; k++) {
                        sr += exp((double)rc[k * P + p] - mr);
                        sx += exp((double)yc[k * P + p] - mx);
                    }
                }
                for (int k = 0; k < C; k++) {
                    double vr = rc[k * P + p], vx = yc[k * P + p], pr, px;
                    if (soft) { pr = exp(vr - mr) / sr; px = exp(vx - mx) / sx; }
                    else if (prob) { pr = vr; px = vx; }
                    else { pr = sigm(vr); px = sigm(vx); }
                    double sa = or_ * pr, d = sa - ox * px;
                    e->conf_sig += sa * sa;
                    e->conf_noise += d * d;
                }
                for (int j = 0; j < 4; j++) {
                    double vr = r[j * P + p], vx = y[j * P + p];
                    if (j < 2 && !prob) { vr = sigm(vr); vx = sigm(vx); }
                    e->box_sig += or_ * vr * vr;
                    e->box_noise += or_ * (vr - vx) * (vr - vx);
                }
            }
        }
}

double yq_head_err_nsr(const yq_head_err *e)
{
    return (e->conf_sig > 0 ? e->conf_noise / e->conf_sig : 0) + (e->box_sig > 0 ? e->box_noise / e->box_sig : 0);
}

double yq_head_err_db(const yq_head_err *e)
{
    double r = yq_head_err_nsr(e);
    return r > 0 ? -10 * log10(r) : 200;
}
