/* The fast int8 CPU engine: AVX-512 VNNI and AVX2 kernels that reproduce the reference
 * (kernels/cpu_ref.h) byte for byte, on every thread of the machine (OpenMP).
 *
 * Exactness: every conv accumulates the same int32 sums as the reference (integer
 * arithmetic is exact whatever the order) and requantizes them with the reference's
 * IEEE operations (ir/requant.h) in vector form: int32 -> float conversion, one multiply,
 * a clamp, the round-to-nearest-even add of 1.5 * 2^23; no contraction, the default
 * rounding mode, the same as the scalar SSE code the reference compiles to.
 *
 * NCHW int8 tensors, as the reference.  The CPU's instructions are detected at run time
 * (yq_cpu_isa); a caller may cap them (tests run the AVX2 path on an AVX-512 machine).
 * Every function takes the ISA to use and the number of threads (<= 0: OpenMP's default,
 * every core). */
#ifndef YQ_CPU_INT8_H
#define YQ_CPU_INT8_H

#include "ir/ir.h"

typedef enum {
    YQ_ISA_REF = 0,      /* none of the below: the reference (or the exact dgemm path) */
    YQ_ISA_AVX2 = 1,     /* AVX2 + FMA-free integer code: vpmaddwd on int16, no saturation */
    YQ_ISA_AVX512 = 2    /* AVX-512 F/BW/VL + VNNI: vpdpbusd (u8 x s8, the +128 offset) */
} yq_isa;

yq_isa      yq_cpu_isa(void);              /* the best this CPU runs */
const char *yq_isa_name(yq_isa isa);       /* "reference", "avx2", "avx512-vnni" */

/* Per-conv state prepared once per graph (packed weights, corrected biases); opaque. */
typedef struct yq_cpu8 yq_cpu8;
yq_status yq_cpu8_new(const yq_graph *g, yq_isa isa, int threads, yq_cpu8 **out, yq_error *err);
void      yq_cpu8_free(yq_cpu8 *e);
const yq_graph *yq_cpu8_graph(const yq_cpu8 *e);
yq_isa    yq_cpu8_isa(const yq_cpu8 *e);
int       yq_cpu8_threads(const yq_cpu8 *e);

/* The conv of node id (any int8 conv the reference runs: groups, depthwise, strides, uint8
 * or int8 input, int8 or float output), byte-identical to yq_ref_conv. */
yq_status yq_cpu8_conv(yq_cpu8 *e, int id, const void *in, yq_dtype in_t, void *out, int batch, yq_error *err);

/* ---- kernels shared by the engine's files (kernels/cpu_int8*.c) ---- */

/* One output channel's row of cnt int32 accumulators (bias included) -> int8 (requantize
 * with the node's activation or table) or float (dequantize, the activation): exactly
 * yq_ref_epilogue's values for channel o. */
void yq_cpu8_epilogue_row(yq_isa isa, const yq_node *n, const yq_qnode *q, int o, const int32_t *acc, long cnt,
                          void *out);

/* Depthwise conv (yq_conv_is_depthwise), byte-identical to yq_ref_conv on it. */
void yq_cpu8_dwconv(yq_isa isa, int threads, const yq_graph *g, const yq_node *n, const yq_qnode *q,
                    const void *in, yq_dtype in_t, void *out, int batch);
/* The other int8 ops, byte-identical to their yq_ref_* namesakes. */
void yq_cpu8_maxpool(yq_isa isa, int threads, yq_shape is, const yq_pool_p *p, yq_shape os, const int8_t *in,
                     int8_t *out, int batch);
void yq_cpu8_upsample(yq_isa isa, int threads, yq_shape is, int stride, const int8_t *in, int8_t *out, int batch);
void yq_cpu8_shortcut(yq_isa isa, int threads, long n_per_image, const int8_t *a, const int8_t *b, const yq_qnode *q,
                      int8_t *out, int batch);
void yq_cpu8_quantize(yq_isa isa, int threads, const float *x, long n, float scale, int32_t qmin, int32_t qmax,
                      int8_t *q);
void yq_cpu8_quantize_u8(yq_isa isa, int threads, const float *x, long n, float scale, uint8_t *q);
/* yq_dequantize (int8 or uint8 t) on isa's vectors and threads: the same floats. */
void yq_cpu8_dequantize(yq_isa isa, int threads, const void *q, yq_dtype t, long n, float scale, float *x);

#endif
