/* The int8 CPU reference: the specification every other int8 kernel must
 * reproduce byte for byte.  Plain C, exact integer arithmetic (ir/requant.h),
 * NCHW, a batch at a time. */
#ifndef YQ_CPU_REF_H
#define YQ_CPU_REF_H

#include "ir/ir.h"

/* Conv of an int8 (or, for the first layer, uint8) input with the node's int8
 * weights: int32 accumulators plus the int32 bias, then either requantize with
 * the fused activation into int8 (q->dtype S8) or dequantize into float (F32,
 * the head convs: y = act(acc * deq[o])).  work: yq_ref_conv_work bytes. */
size_t yq_ref_conv_work(const yq_graph *g, const yq_node *n);
void yq_ref_conv(const yq_graph *g, const yq_node *n, const yq_qnode *q, const void *in, yq_dtype in_t,
                 void *out, void *work, int batch);
/* Pieces shared with the BLAS path (kernels/cpu_int8_blas.c). */
int  yq_conv_is_depthwise(const yq_graph *g, const yq_node *n);
void yq_im2col16(const void *in, yq_dtype t, long base, int ch, int h, int w, int k, int stride, int pad,
                 int oh, int ow, int16_t *col);
/* acc: filters x out_h*out_w int32 accumulators (bias included) -> int8 or float output. */
void yq_ref_epilogue(const yq_node *n, const yq_qnode *q, const int32_t *acc, void *out, long base);

/* The same conv, exact, through double-precision GEMM (kernels/cpu_int8_blas.c): every
 * product and partial sum is an integer below 2^53, so the result is the exact int32
 * accumulator whatever the summation order.  Byte-identical to yq_ref_conv (tested);
 * several times faster.  Depthwise convs go through yq_ref_conv. */
size_t yq_blas_conv_work(const yq_graph *g, const yq_node *n);
void yq_blas_conv(const yq_graph *g, const yq_node *n, const yq_qnode *q, const void *in, yq_dtype in_t,
                  void *out, void *work, int batch);

void yq_ref_maxpool(yq_shape is, const yq_pool_p *p, yq_shape os, const int8_t *in, int8_t *out, int batch);
void yq_ref_upsample(yq_shape is, int stride, const int8_t *in, int8_t *out, int batch);
void yq_ref_shortcut(long n_per_image, const int8_t *a, const int8_t *b, const yq_qnode *q, int8_t *out, int batch);
/* Same-scale channel copy (route: producers already write at the route's scale). */
void yq_ref_route_copy(yq_shape ss, const yq_route_p *r, const int8_t *src, yq_shape ds, int c_off, int8_t *dst, int batch);

/* float <-> int8 at a scale: q = sat(round(x / scale)), ties away from zero. */
void yq_quantize(const float *x, long n, float scale, int32_t qmin, int32_t qmax, int8_t *q);
void yq_quantize_u8(const float *x, long n, float scale, uint8_t *q);
void yq_dequantize(const void *q, yq_dtype t, long n, float scale, float *x);

#endif
