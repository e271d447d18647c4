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

/* Error at the detection outputs: what a head decodes rather than its raw logits (whose
 * large negative class logits dominate a plain SQNR and move no detection).  Per anchor
 * and cell of a [yolo]/[region] head:
 *   conf: the scores s_k = sigmoid(obj) * p_k for every class k (p_k: sigmoid, or the
 *         softmax over classes for a region head with softmax);
 *   box:  (sigmoid(x), sigmoid(y), w, h), each squared error weighted by the reference's
 *         sigmoid(obj), so only boxes that may become detections count.
 * (A head conv with a logistic activation already outputs probabilities: no sigmoid.)
 * Sums of squares of the reference (sig) and of the difference (noise), added over
 * heads, images and calls.  A head whose channels do not split into anchors counts
 * its raw values as conf. */
typedef struct yq_head_err { double conf_sig, conf_noise, box_sig, box_noise; } yq_head_err;
/* head: a [yolo]/[region] node; ref, x: batch x the head input's shape, floats. */
void yq_head_err_add(const yq_graph *g, int head, const float *ref, const float *x, int batch, yq_head_err *e);
/* conf noise/signal + box noise/signal (each 0 without signal): lower is better. */
double yq_head_err_nsr(const yq_head_err *e);
/* the same in dB of signal to noise (10 log10 (1 / nsr); 200 when nsr is 0) */
double yq_head_err_db(const yq_head_err *e);

#endif
