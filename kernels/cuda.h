/* CUDA kernels for int8 graphs, behind a C interface (no CUDA types here).
 *
 *     if (yq_cuda_device_count() == 0) ...          // no driver or no GPU: 0, never a crash
 *     yq_cuda_conv *c;
 *     yq_cuda_conv_new(g, n, &g->q[id], &c, &err);  // weights uploaded (int8 repacked) once
 *     yq_dtensor in = { d_in, YQ_S8, is.c, is.h, is.w, scale_in, -127, 127 };
 *     yq_dtensor out = { d_out, YQ_S8, ... };
 *     yq_cuda_conv_run(c, &in, &out, batch, NULL, &err);
 *     yq_cuda_sync(NULL, &err);
 *     yq_cuda_conv_free(c);
 *
 * Device layout.  int8/uint8 tensors are NHWC4: per image [h][w][c4] bytes with
 * c4 = c rounded up to a multiple of 4 and the padding channels zero (every kernel
 * writes them as zero), so a pixel's channels are whole 32-bit words for __dp4a.
 * Float tensors are NCHW, as on the CPU.  Results are bit-exact with the int8 CPU
 * reference (kernels/cpu_ref.c): integer sums are exact, requantization is the
 * shared ir/requant.h, the float steps (quantize x/scale, dequantize q*scale,
 * the dequantizing epilogue acc*deq) use the same single IEEE operations, and
 * float_op layers (kept in float by the qconfig) run their exact FP32 definition
 * (yq_f32_conv_exact's chains), unless the FP16 family is asked for.
 *
 * A stream is passed as void * (a cudaStream_t; NULL for the default stream).
 */
#ifndef YQ_KERNELS_CUDA_H
#define YQ_KERNELS_CUDA_H

#include "ir/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A tensor in device memory, batch images of c x h x w. */
typedef struct yq_dtensor {
    void *p;                 /* device pointer; borrowed */
    yq_dtype dtype;          /* S8/U8: NHWC4; F32: NCHW */
    int c, h, w;
    float scale;             /* real = q * scale (int8 types); for F32: the scale to quantize at */
    int32_t qmin, qmax;      /* range when quantizing into this tensor's type */
    int ps;                  /* S8/U8: bytes from one pixel to the next; 0 = dense ((c + 3) & ~3).
                                More for a view into a wider tensor: p then points at the view's
                                first channel (a source's slice of a concat, a route's group) */
} yq_dtensor;

/* The pixel stride of a 1-byte tensor in bytes. */
static inline int yq_dt_ps(const yq_dtensor *t) { return t->ps ? t->ps : (t->c + 3) & ~3; }

/* Devices usable by this process; 0 when there is no driver or no GPU. */
int       yq_cuda_device_count(void);
/* Programmatic dependent launch of the wgmma conv families (sm_90): on (1) by default; 0
 * launches them plainly, for measuring what it brings (yqgpu --no-pdl). */
void      yq_cuda_pdl_enable(int on);
yq_status yq_cuda_set_device(int device, yq_error *err);
/* Device name and compute capability of the current device (for logs). */
yq_status yq_cuda_device_name(char *buf, size_t cap, yq_error *err);

/* Thin, checked wrappers over the runtime so that C code needs no CUDA headers. */
yq_status yq_cuda_malloc(void **p, size_t bytes, yq_error *err);
void      yq_cuda_free(void *p);                      /* NULL is a no-op */
yq_status yq_cuda_h2d(void *dst, const void *src, size_t bytes, yq_error *err);
yq_status yq_cuda_d2h(void *dst, const void *src, size_t bytes, yq_error *err);
yq_status yq_cuda_memset(void *p, int byte, size_t bytes, yq_error *err);
yq_status yq_cuda_stream_new(void **stream, yq_error *err);
void      yq_cuda_stream_free(void *stream);
/* Waits for the stream and reports any pending error (a failed launch, a fault). */
yq_status yq_cuda_sync(void *stream, yq_error *err);
/* Event timing: milliseconds of fn(ctx) enqueued on stream, averaged over reps. */
yq_status yq_cuda_time(void *stream, int reps, yq_status (*fn)(void *ctx), void *ctx, float *ms, yq_error *err);

/* Bytes of one image of a tensor in the device layout. */
static inline size_t yq_dlayout_bytes(yq_dtype t, int c, int h, int w)
{
    return t == YQ_F32 ? (size_t)c * h * w * sizeof(float) : (size_t)h * w * (size_t)((c + 3) & ~3);
}
/* Host-side layout changes for 1-byte types (upload/download): NCHW <-> NHWC4. */
void yq_nchw_to_nhwc4(const void *src, int c, int h, int w, int batch, void *dst);
void yq_nhwc4_to_nchw(const void *src, int c, int h, int w, int batch, void *dst);

/* --- conv ----------------------------------------------------------------- */
typedef struct yq_cuda_conv yq_cuda_conv;

typedef enum yq_conv_variant {
    YQ_CONV_AUTO = 0,
    YQ_CONV_DP4A,      /* implicit GEMM, __dp4a over NHWC4 words: groups == 1 */
    YQ_CONV_DW,        /* depthwise: groups == c_in == filters */
    YQ_CONV_DIRECT,    /* one thread per output, any groups (the fallback) */
    YQ_CONV_F32,       /* float_op layers in their exact FP32 numerics (one fmaf chain per
                          output, as the CPU's yq_f32_conv_exact); any groups, never split */
    YQ_CONV_MMA,       /* implicit GEMM on int8 tensor cores (mma.sync m16n8k32, sm_80+):
                          groups == 1, input channels a multiple of 16 */
    YQ_CONV_F16,       /* float_op layers on FP16 tensor cores, FP32 sums (sm_80+, groups
                          == 1): faster, not the exact numerics; only when set explicitly
                          (yq_cuda_conv_set_variant; a plan's YQ_PLAN_GPU_F16) */
    YQ_CONV_CUTLASS    /* implicit GEMM on CUTLASS's sm_80 main loop (kernels/cuda_cutlass.cu)
                          with our epilogue: groups == 1, channels and filters multiples of 16,
                          int8 output; tensors it cannot take (unaligned views) run the
                          MMA family's default instead (the same bytes) */,
    YQ_CONV_HALO,      /* 3x3 convs over 16, 32 or 64 channel bytes on int8 tensor cores
                          (kernels/cuda_halo.cu): persistent blocks, each tile's input window
                          staged once in shared memory; groups == 1, int8 in and out, sm_80+ */
    YQ_CONV_IMG,       /* the 3-channel uint8 image's 3x3 conv on int8 tensor cores
                          (kernels/cuda_img.cu): its 27 window bytes one mma K step; at most
                          64 filters, int8 output, sm_80+ */
    YQ_CONV_WGMMA      /* implicit GEMM on sm_90's warpgroup tensor cores (wgmma, operands in
                          swizzled shared memory; kernels/cuda_wgmma.cu): groups == 1, channels
                          a multiple of 64, int8 in and out, sm_90 only */,
    YQ_CONV_WGH        /* stride-1 3x3 convs on wgmma with each channel chunk of a tile's
                          padded input window staged once (kernels/cuda_wgmma.cu): pad 1,
                          channels a multiple of 128, int8 in and out, sm_90 only */,
    YQ_CONV_WG1        /* stride-1 1x1 convs on wgmma, a block's filters resident in shared
                          memory and its pixel tiles streamed through one ring
                          (kernels/cuda_wgmma.cu): int8 in and out, sm_90 only */
} yq_conv_variant;
#define YQ_CONV_LAST YQ_CONV_WG1

/* Uploads a conv node's parameters: int8 weights repacked to [filters][k][k][c4]
 * (zero padded), bias and requantize tables; float weights when q is NULL or
 * q->float_op (FP32 for the YQ_CONV_F32 family, which such a conv runs: the exact
 * numerics; and FP16 for YQ_CONV_F16, which runs only after yq_cuda_conv_set_variant).
 * *out set only on YQ_OK. */
yq_status yq_cuda_conv_new(const yq_graph *g, const yq_node *n, const yq_qnode *q, yq_cuda_conv **out, yq_error *err);
void      yq_cuda_conv_free(yq_cuda_conv *c);
/* Forces a kernel variant (tests, tuning); YQ_ERR_UNSUPPORTED if it cannot run this conv.
 * For a float conv this is its precision (F16 or F32): configurations and tuning stay
 * within it, as they change speed only. */
yq_status yq_cuda_conv_set_variant(yq_cuda_conv *c, yq_conv_variant v, yq_error *err);
yq_conv_variant yq_cuda_conv_variant(const yq_cuda_conv *c);
/* 1 when every |accumulator + bias| of this int8 conv is below 2^22 whatever its int8 input
 * (128 sum |w| + |b| per filter): the streaming 1x1 family then requantizes without an
 * int-to-float conversion (the same bytes); for the tests. */
int yq_cuda_conv_small(const yq_cuda_conv *c);
/* --- per-layer kernel choice (tuning) ---------------------------------------
 * A conv runs one kernel configuration: a family (yq_conv_variant), a tile of that
 * family and a K split.  Every configuration computes the same exact int32 sums and
 * the same epilogue, so all give the same bytes; they differ only in speed (a float
 * layer's configurations keep its precision; their FP32 sums differ in order only).  The
 * names ("dp4a_128x128", "mma_128x128x64_s3", "mma_64x64x64_s4_k4", "dw", "direct",
 * "f32", "f16_k2", "cutlass_128x128x64_s3", "halo_8x16x64") are stable: tuning logs and packages store them.
 *
 *     yq_conv_cfg cand[YQ_CONV_MAX_CFGS];
 *     int n = yq_cuda_conv_candidates(c, batch, cand, YQ_CONV_MAX_CFGS);
 *     yq_cuda_conv_set_cfg(c, cand[i], batch, &err);   // split-K scratch sized for batch
 *     ... yq_cuda_conv_run(c, ...) ...                   // batch <= the one given above
 */
typedef struct yq_conv_cfg {
    uint8_t family;    /* yq_conv_variant; YQ_CONV_AUTO: the built-in heuristic per run */
    uint8_t tile;      /* index in the family's tile table */
    uint8_t split_k;   /* 1: no split; else K is cut in split_k parts summed exactly */
    uint8_t reserved;
} yq_conv_cfg;

#define YQ_CONV_MAX_CFGS 128

/* Every configuration that can run this conv at this batch on the current device
 * (tensor-core ones only on sm_80 and newer); returns how many (at most cap written). */
int         yq_cuda_conv_candidates(const yq_cuda_conv *c, int batch, yq_conv_cfg *out, int cap);
/* What the built-in heuristic runs at this batch (the untuned default). */
yq_conv_cfg yq_cuda_conv_default_cfg(const yq_cuda_conv *c, int batch);
/* Fixes the configuration for runs of up to max_batch images (allocating split-K
 * scratch); YQ_ERR_UNSUPPORTED if it cannot run this conv here.  {YQ_CONV_AUTO}
 * returns to the heuristic. */
yq_status   yq_cuda_conv_set_cfg(yq_cuda_conv *c, yq_conv_cfg cfg, int max_batch, yq_error *err);
yq_conv_cfg yq_cuda_conv_get_cfg(const yq_cuda_conv *c);
/* "mma_128x128x64_s3_k2" and back; parse returns 0, or -1 for a name no build knows. */
void        yq_conv_cfg_name(yq_conv_cfg cfg, char *buf, size_t cap);
int         yq_conv_cfg_parse(const char *name, yq_conv_cfg *cfg);
/* The conv's shape as a tuning key: "c256x52x52-f512-k3s2p1-g1-s8s8-b32" (input
 * channels x h x w, filters, kernel/stride/pad, groups, input and output types, then "t"
 * for a table activation and "r" when it runs with a fused shortcut (fused), batch). */
void        yq_cuda_conv_key(const yq_cuda_conv *c, yq_dtype in_dtype, int fused, int batch, char *buf, size_t cap);
/* Integer operations of one run at this batch (2 x MACs, padding channels excluded). */
double      yq_cuda_conv_ops(const yq_cuda_conv *c, int batch);
/* The current device's compute capability as major*10+minor (90 for sm_90), 0 if none. */
int         yq_cuda_arch(void);

/* in: S8 or U8 (NHWC4) for an int8 conv, any type for a float one (int8 is
 * dequantized at in->scale); out: S8 (requantized) or F32 (dequantized, or float_op). */
yq_status yq_cuda_conv_run(const yq_cuda_conv *c, const yq_dtensor *in, const yq_dtensor *out, int batch,
                           void *stream, yq_error *err);

/* The conv and the [shortcut] that is its only consumer in one pass: out (the
 * shortcut's S8 tensor) = yq_add_requant(conv output, res) with the shortcut's
 * parameters sq, as yq_ref_shortcut computes it (res_first: res is the shortcut's
 * first source, the conv its second).  The conv's own output is not written. */
yq_status yq_cuda_conv_run_add(const yq_cuda_conv *c, const yq_dtensor *in, const yq_dtensor *res,
                               const yq_qnode *sq, int res_first, const yq_dtensor *out, int batch,
                               void *stream, yq_error *err);

/* --- other ops (int8 when out is S8; float when out is F32, reading any type) -- */
yq_status yq_cuda_maxpool(const yq_dtensor *in, const yq_pool_p *p, const yq_dtensor *out, int batch,
                          void *stream, yq_error *err);
yq_status yq_cuda_upsample(const yq_dtensor *in, int stride, const yq_dtensor *out, int batch,
                           void *stream, yq_error *err);
/* S8: y = yq_add_requant(a, b, q->sa, q->sb, q->sneg, ...) ; F32: y = act(a + b). */
yq_status yq_cuda_shortcut(const yq_dtensor *a, const yq_dtensor *b, const yq_qnode *q, yq_act act,
                           const yq_dtensor *out, int batch, void *stream, yq_error *err);
/* Concat of channel groups [group_id*c/groups, (group_id+1)*c/groups) of each source. */
yq_status yq_cuda_route(const yq_dtensor *src, int n_src, const yq_route_p *r, const yq_dtensor *out,
                        int batch, void *stream, yq_error *err);
/* Type conversion, as the CPU executor does at float boundaries:
 *   F32 -> S8:  q = sat(roundf(x / out->scale), out->qmin, out->qmax)   (yq_quantize)
 *   F32 -> U8:  q = sat(roundf(x / out->scale), 0, 255)                 (yq_quantize_u8)
 *   U8  -> S8:  the dequantized value (q * in->scale) quantized as F32 -> S8
 *   S8/U8 -> F32: x = q * in->scale                                      (yq_dequantize) */
yq_status yq_cuda_convert(const yq_dtensor *in, const yq_dtensor *out, int batch, void *stream, yq_error *err);

#ifdef __cplusplus
}
#endif
#endif
