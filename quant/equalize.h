/* Cross-layer equalization (after Nagel et al., "Data-Free Quantization", 2019),
 * driven by calibrated activation ranges.
 *
 * For a conv P whose output feeds only conv C, channel i of P's output can be
 * divided by s_i > 0 and C's weights reading it multiplied by s_i without
 * changing the network's function (P's activation is linear, leaky or ReLU,
 * all positively homogeneous).  Depthwise+BN folding leaves channels whose
 * ranges differ by 100x inside one per-tensor activation scale; equalizing them
 * is what makes those tensors quantizable:
 *   - C depthwise: s_i = r_i / max_j r_j, every channel then spans the range;
 *   - C dense:     s_i = sqrt(r_i / w_i) with w_i = max |C[:, i]|, balancing the
 *                  activation range against the weight range (DFQ's rule).
 * The network changes only by float rounding; the calibration must be run again on
 * the equalized graph (the ranges moved). */
#ifndef YQ_EQUALIZE_H
#define YQ_EQUALIZE_H

#include "calib/observe.h"

/* A new graph (*out, yq_graph_free; memory of its own, yq_graph_clone) with g's conv
 * pairs equalized by cs's ranges; g is not changed.  *pairs: the pairs equalized. */
yq_status yq_equalize(const yq_graph *g, const yq_calib_stats *cs, yq_graph **out, int *pairs, yq_error *err);

#endif
