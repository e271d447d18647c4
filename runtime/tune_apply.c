/* Stored kernel choices applied to a GPU plan (runtime/tune.h).  Apart from
 * runtime/tune.c so that the session (and the static GPU test builds that link it)
 * need neither the tuner nor cJSON. */
#include <math.h>
#include <stdlib.h>
#include "runtime/tune.h"

/* Distance of a tuned batch from the plan's: by ratio, a larger batch first on a tie. */
static double batch_dist(int b, int want)
{
    return fabs(log((double)b / want)) - (b > want ? 1e-6 : 0);
}

yq_status yq_tune_apply(yq_cuda_plan *p, const yq_graph *g, int max_batch, int sm, const yq_tuned_kernel *k, int n,
                        int *applied, yq_error *err)
{
    if (applied) *applied = 0;
    if (!p || !g || max_batch < 1 || (n > 0 && !k))
        return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_tune_apply: bad arguments");
    int *rows = n > 0 ? malloc(sizeof *rows * (size_t)n) : NULL;
    if (n > 0 && !rows) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    yq_status st = YQ_OK;
    int count = 0;
    for (int id = 1; id < g->n_nodes && st == YQ_OK; id++) {
        yq_cuda_conv *c = yq_cuda_plan_conv(p, id);
        if (!c) continue;
        int m = 0;
        for (int i = 0; i < n; i++)
            if (k[i].node == id && k[i].sm == sm) rows[m++] = i;
        /* nearest batch first (insertion sort: a handful of rows) */
        for (int i = 1; i < m; i++)
            for (int j = i; j > 0 && batch_dist(k[rows[j]].batch, max_batch) < batch_dist(k[rows[j - 1]].batch, max_batch); j--) {
                int t = rows[j];
                rows[j] = rows[j - 1];
                rows[j - 1] = t;
            }
        for (int i = 0; i < m; i++) {
            yq_conv_cfg cfg;
            if (yq_conv_cfg_parse(k[rows[i]].cfg, &cfg) != 0) continue;   /* the loader refuses these already */
            yq_error e2;
            yq_status s2 = yq_cuda_conv_set_cfg(c, cfg, max_batch, &e2);
            if (s2 == YQ_OK) {
                count++;
                break;
            }
            if (s2 != YQ_ERR_UNSUPPORTED) {   /* out of memory for split-K scratch, a device error */
                st = yq_fail(err, s2, "node %d (%s): kernel %s: %s", id, g->nodes[id].name, k[rows[i]].cfg, e2.msg);
                break;
            }
        }
    }
    free(rows);
    if (applied) *applied = count;
    return st;
}
