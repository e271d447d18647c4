/* Per-layer error of an int8 graph against its float original: both run on the
 * same images, every node's int8 output is dequantized and compared with the
 * FP32 tensor.  SQNR = 10 log10(sum f^2 / sum (f - q)^2), in dB; higher is better.
 *
 *     yq_layer_err *e;
 *     yq_compare_layers(g, inputs, n_images, &e, &err);   // g->q set
 *     ... e[id].sqnr_db ...
 *     free(e);
 */
#ifndef YQ_CALIB_COMPARE_H
#define YQ_CALIB_COMPARE_H

#include "ir/ir.h"

typedef struct yq_layer_err {
    double sig, noise;      /* sums over every value of every image */
    double sqnr_db;         /* 10 log10(sig / noise); 200 when noise is 0 */
    double max_abs;         /* max |f - q| */
} yq_layer_err;

/* inputs: n_images network inputs (C x H x W floats each, contiguous). */
yq_status yq_compare_layers(const yq_graph *g, const float *inputs, int n_images, yq_layer_err **out, yq_error *err);

#endif
