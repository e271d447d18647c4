/* Tests over quant/rewrite.h that keep one graph variable: test_rewrite replaces an FP32
 * graph by its int8 rewrite, which takes the FP32 graph over (freeing the rewrite frees
 * both); test_unrewrite gives the FP32 graph back and frees the rewrite.
 *
 *     yq_graph *g = ...;                        // FP32
 *     CHECK(test_rewrite(&g, cs, &qc, &err) == YQ_OK);   // g: int8 (g->base: the FP32 one)
 *     test_unrewrite(&g);                       // g: FP32 again, as it was
 */
#ifndef YQ_TEST_REWRITE_H
#define YQ_TEST_REWRITE_H

#include "quant/rewrite.h"

static inline yq_status test_rewrite(yq_graph **g, const yq_calib_stats *cs, const yq_qconfig *qc, yq_error *err)
{
    yq_graph *q;
    yq_status st = yq_rewrite(*g, cs, qc, &q, err);
    if (st == YQ_OK) {
        q->owned_base = *g;
        *g = q;
    }
    return st;
}

static inline void test_unrewrite(yq_graph **g)
{
    yq_graph *q = *g;
    if (!q->q) return;                        /* FP32 already */
    *g = q->owned_base;
    q->owned_base = NULL;
    yq_graph_free(q);
}

#endif
