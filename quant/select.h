/* Measured choices, made on calibration images through simulated int8 (calib/simulate.h)
 * and judged by the error at the heads (calib/compare.h, yq_head_err):
 *
 *   - which tensors stay in float (qconfig keep_float).  Keeping a conv in float removes
 *     only its weights' rounding unless the tensors around it stay float too: an int8
 *     reader rounds a float tensor all the same.  So the unit of choice is the tensor:
 *     each scale class is rounded alone (every other tensor float, float weights) and the
 *     tensors whose rounding alone adds the most error are kept float, each with its
 *     producer conv and its consumer convs, until keep_float convs are float;
 *   - the thresholds of the scale classes that add the most error (qconfig
 *     thresh_search): for each, thresholds from 0.35x to 1.7x the calibrated one are tried
 *     with that class alone rounded, and the one with the lowest error at the heads is kept.
 *
 * Both write their decision into the qconfig (layer.N.skip, layer.N.thresh), so the
 * package records it and a rewrite with that qconfig reproduces it.
 *
 *     yq_rewrite(fp, cs, &qc, &g, &err);
 *     yq_sim_new(g, inputs, 16, &sim, &err);
 *     double *e = malloc(...);                        // g->n_nodes
 *     yq_class_errors(sim, g, NULL, e, &err);          // every class
 *     yq_select_float(g, e, qc.keep_float, &qc, &n, &err);
 *     yq_rewrite(fp, cs, &qc, &g2, &err); yq_sim_sync(sim, g2, &err); yq_graph_free(g);
 *     yq_search_thresholds(sim, g2, cs, e, qc.thresh_search, &qc, &n, &err);
 */
#ifndef YQ_QUANT_SELECT_H
#define YQ_QUANT_SELECT_H

#include "calib/observe.h"
#include "calib/simulate.h"
#include "quant/qconfig.h"

/* e[root] (g->n_nodes entries, root as yq_scale_classes gives it): the error at the heads
 * (yq_head_err_nsr) with only that class's tensors rounded, every other tensor float and
 * every conv with its float weights; 0 for classes the int8 graph does not round.  want
 * (may be NULL: every class) limits the runs to the roots with want[root] set; the others
 * get 0.  The simulation's roundings and weights are restored afterwards. */
yq_status yq_class_errors(yq_sim *s, const yq_graph *g, const uint8_t *want, double *e, yq_error *err);

/* Candidates for keep_float: the scale classes that are one int8 conv's output read only
 * by convs and heads (want[root] = 1).  want: g->n_nodes entries. */
void yq_float_candidates(const yq_graph *g, uint8_t *want);

/* The float choice: candidates in order of e (largest first), each adding its conv and
 * the int8 convs reading it, while the total stays within budget convs.  Sets
 * layer.N.skip = on in qc for the chosen convs; *n_chosen receives their number. */
yq_status yq_select_float(const yq_graph *g, const double *e, int budget, yq_qconfig *qc, int *n_chosen, yq_error *err);

/* The threshold search over the n_classes classes with the largest e that the int8
 * graph (as g->q has it now, synced into s) still rounds.  cs (may be NULL) caps the
 * candidates at the class's largest |x| seen in calibration.  Sets layer.R.thresh in qc
 * (R: the class's first layer) where a threshold other than the current one lowers the
 * error; *n_changed receives how many. */
yq_status yq_search_thresholds(yq_sim *s, const yq_graph *g, const yq_calib_stats *cs, const double *e, int n_classes,
                               yq_qconfig *qc, int *n_changed, yq_error *err);

#endif
