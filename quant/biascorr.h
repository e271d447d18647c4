/* Empirical bias correction: after the rewrite, run the float graph and the int8
 * graph on a few calibration images and move each int8 conv's bias by the mean
 * per-channel shift of its pre-activation output (int8 minus float).  This
 * catches what the analytic correction (weights' rounding times E[x], in
 * quant/rewrite.c) cannot: clipping and rounding of the activations upstream.
 * The layers are corrected in order within one int8 pass, each for the inputs
 * its corrected producers give it.
 *
 *     yq_bias_correct_data(g, inputs, n_images, &err);   // g->q set
 */
#ifndef YQ_BIASCORR_H
#define YQ_BIASCORR_H

#include "ir/ir.h"

/* inputs: n network inputs (C x H x W floats each).  Convs with ReLU are left alone
 * (their pre-activation cannot be recovered from the output). */
yq_status yq_bias_correct_data(yq_graph *g, const float *inputs, int n, yq_error *err);

#endif
