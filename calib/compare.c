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
