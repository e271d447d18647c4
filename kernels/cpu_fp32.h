/* FP32 CPU kernels: one function per op, NCHW float, a batch at a time.
 * The arithmetic follows darknet's (activations, pooling windows) so that our
 * tensors match a darknet peer to float rounding. */
#ifndef YQ_CPU_FP32_H
#define YQ_CPU_FP32_H

#include "ir/ir.h"

/* Floats of scratch a conv node needs (im2col buffer); 0 when none. */
long yq_f32_conv_work(const yq_graph *g, const yq_node *n);

/* out[b] = act(conv(in[b], n->w) + n->b), b < batch.  work: yq_f32_conv_work floats. */
/* w: the weights, [filters][in_c/groups][k][k] (NULL: n->w; yq_conv_weights for int8 graphs) */
void yq_f32_conv(const yq_graph *g, const yq_node *n, const float *w, const float *in, float *out, float *work, int batch);
/* The float convs of int8 graphs, defined to the bit (one fmaf chain per output over
 * (ci, ky, kx) from +0, + bias, yq_f32_act_exact), as the GPU computes them: slower than
 * yq_f32_conv, the same bytes on every engine.  work: yq_f32_conv_exact_work floats. */
long yq_f32_conv_exact_work(const yq_graph *g, const yq_node *n);
void yq_f32_conv_exact(const yq_graph *g, const yq_node *n, const float *w, const float *in, float *out, float *work,
                       int batch);
/* yq_f32_conv_exact on an input held quantized, in[i] * scale (int8, or uint8 when dt is
 * YQ_U8: yq_dequantize's values), the same bytes without a float copy of the whole input:
 * each channel is dequantized as its turn comes.  Only for the convs
 * yq_f32_conv_exact_takes_q accepts (depthwise ones whose channel fits the scratch). */
int  yq_f32_conv_exact_takes_q(const yq_graph *g, const yq_node *n);
void yq_f32_conv_exact_q(const yq_graph *g, const yq_node *n, const float *w, const void *in, yq_dtype dt, float scale,
                         float *out, float *work, int batch);
/* For the tests: the exact convs' instructions at most isa (2 AVX-512, 1 AVX2 + FMA, 0
 * scalar fmaf; -1 the best this CPU has, the default).  Every one gives the same bytes. */
void yq_f32_exact_force(int isa);
/* Darknet's activations in double, rounded once: the float layers of int8 graphs. */
float yq_f32_act_exact(float x, yq_act act);
void yq_f32_activate_exact(float *x, long n, yq_act act);
void yq_f32_maxpool(yq_shape is, const yq_pool_p *p, yq_shape os, const float *in, float *out, int batch);
void yq_f32_upsample(yq_shape is, int stride, const float *in, float *out, int batch);
/* out = act(a + b); out may alias a. */
void yq_f32_shortcut(long n_per_image, const float *a, const float *b, yq_act act, float *out, int batch);
/* Copies channels [group_id*c/groups, (group_id+1)*c/groups) of src into dst at channel offset c_off. */
void yq_f32_route_copy(yq_shape ss, const yq_route_p *r, const float *src, yq_shape ds, int c_off, float *dst, int batch);
void yq_f32_activate(float *x, long n, yq_act act);
float yq_f32_act1(float x, yq_act act);

#endif
