/* The rewrite: an FP32 graph plus calibration statistics plus a qconfig become a new
 * int8 graph (a view of the FP32 one, ir.h yq_graph_view: its own nodes and int8 side,
 * q set; the FP32 weights borrowed, for the layers kept in float and per-layer reports).
 * The FP32 graph is never modified: rewrite it as often as wanted, each result freed by
 * its owner.
 *
 *     yq_graph *q;
 *     yq_rewrite(g, stats, &qc, &q, &err);
 *     yq_plan_new(q, 1, 0, &p, &err);  yq_exec_int8(p, input, ...);
 *     ...
 *     yq_plan_free(p);  yq_graph_free(q);      // g as it was
 */
#ifndef YQ_REWRITE_H
#define YQ_REWRITE_H

#include "calib/observe.h"
#include "quant/qconfig.h"

/* *out: FP32 graph g (not quantized) rewritten as qc directs with cs's thresholds (cs NULL:
 * every threshold 1, for tests and timing), a new graph that borrows g's weights (g must
 * outlive it); yq_graph_free.  Set only on YQ_OK. */
yq_status yq_rewrite(const yq_graph *g, const yq_calib_stats *cs, const yq_qconfig *qc, yq_graph **out, yq_error *err);
/* A copy of FP32 graph g (yq_graph_clone) rewritten into int8 without calibration, the
 * default qconfig with the head convs int8 or float: for timing and tuning, whose kernels'
 * speed does not depend on the thresholds.  *out owns the copy (independent of g);
 * yq_graph_free; set only on YQ_OK. */
yq_status yq_quantize_uncalibrated(const yq_graph *g, int head_int8, yq_graph **out, yq_error *err);

/* Why each node runs in float under qc, or YQ_WHY_INT8 (why[0], the input, too): the
 * rewrite's own decision (yq_rewrite sets float_op from it).  A node listed in
 * skip_layers is YQ_WHY_SKIP whatever else holds; a data-movement op or head whose inputs
 * are all float is YQ_WHY_INPUTS.  why: g->n_nodes entries. */
typedef enum yq_float_why {
    YQ_WHY_INT8 = 0,
    YQ_WHY_SKIP,              /* skip_layers / layer.N.skip (asked, or keep_float's choice) */
    YQ_WHY_HEAD,              /* head = float: a conv feeding a head */
    YQ_WHY_FIRST,             /* first = float: the first conv */
    YQ_WHY_ACT,               /* an activation with no int8 path (act_table off, or a shortcut's) */
    YQ_WHY_INPUTS,            /* route/maxpool/upsample/dropout/head whose inputs are all float */
} yq_float_why;
void yq_float_reasons(const yq_graph *g, const yq_qconfig *qc, uint8_t *why);
const char *yq_float_why_name(yq_float_why w);   /* "int8", "skip", "head", "first", "activation", "inputs" */

/* The scale classes: nodes whose outputs share one scale (route, maxpool, upsample,
 * dropout and the heads take their sources').  root[i] (g->n_nodes entries) receives the
 * smallest node id of i's class. */
void yq_scale_classes(const yq_graph *g, int *root);

/* Symmetric weight quantization of one output channel (exposed for tests):
 * returns the scale; q receives n values in [-qmax, qmax]. */
float yq_quant_weights(const float *w, long n, int qmax, yq_wscale mode, int round_even, int8_t *q);

/* Activation tables (quant/table.c): mish, swish and logistic run in int8 through a
 * YQ_LUT_N-entry table (ir/requant.h, yq_requant_out).  yq_act_table fills lut for an output
 * of scale s_out and range [qmin, qmax] and gives the pre-activation grid's step on each
 * side (a conv's scales are then acc_scale / step). */
double yq_act_ref(yq_act a, double x);      /* the activation in double precision */
yq_status yq_act_table(yq_act a, float s_out, int32_t qmin, int32_t qmax, int8_t *lut, double *step_pos,
                       double *step_neg, yq_error *err);

#endif
