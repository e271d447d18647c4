/* Internal to kernels/cuda_conv.cu and kernels/cuda_mma.cu: the launch arguments of
 * every int8 conv kernel and the two epilogues (ir/requant.h, and the dequantizing one). */
#ifndef YQ_CUDA_CONV_CUH
#define YQ_CUDA_CONV_CUH

#include "kernels/cuda_common.cuh"

struct ConvK {
    const void *in;
    void *out;
    int IH, IW, C, C4w, OH, OW, F, F4, k, s, pad, groups, M, K4;
    int IPW, OPW;                 /* int8 pixel strides in 32-bit words: C4w and F4 / 4 when dense,
                                     more for a view into a wider tensor (a slice of a concat) */
    const int *w32;
    const int8_t *wq;
    const int32_t *bq;
    const float *pos, *neg;       /* the FP32 requantize scales (ir/requant.h) */
    const int8_t *lut;            /* a table activation's YQ_LUT_N outputs (yq_requant_out), or NULL */
    const float *deq;
    const float *wf, *bf;
    const void *wh;               /* F16 variant: the weights as FP16, [F][c][k][k] */
    const struct yq_const_w *cw;  /* dp4a_const: the host copy of its parameters */
    const unsigned *wdw;          /* depthwise: the weights as [tap][c4 / 4] words (4 channels each) */
    const unsigned *wdt;          /* depthwise on dp4a: [tap group][c4] words, taps 4g..4g+3 of a channel */
    const float *wdf;             /* float depthwise: FP32 weights as [tap][F] */
    int qmin, qmax, act, u8, fout;
    int small;                    /* |accumulator + bias| < 2^22 for every input (rq_pair_small) */
    yq_dtensor tin;               /* F32 variant: the input, read through yq_ld_f */
    /* A [shortcut] fused into the epilogue (int8 output only): out = the shortcut's
     * output, yq_add_requant(conv, res) (res_first: res is the shortcut's first source). */
    const int8_t *res;
    int res_first;
    float ssa, ssb, ssneg;
    int32_t sqmin, sqmax;
};

__device__ __forceinline__ int8_t rq_out(int32_t acc, int o, const ConvK &a)
{
    return (int8_t)yq_requant_out(acc, a.pos[o], a.neg[o], a.qmin, a.qmax, a.lut);
}

/* The epilogue's requantize with the table decided at compile time (LUT: a.lut is set).
 * The heavy families instantiate both: a run-time test of a.lut per output, even a
 * uniform one, measured 10% slower on YOLOv3 at batch 32 (H200), the epilogue being about
 * as long as the main loop on short K. */
template <bool LUT>
__device__ __forceinline__ int32_t rq_out_t(int32_t acc, float pos, float neg, const ConvK &a)
{
    /* yq_requant_out without its test of the table pointer */
    return LUT ? __ldg(a.lut + yq_lut_index(acc, pos, neg)) : yq_requant_act(acc, pos, neg, a.qmin, a.qmax);
}

/* Two outputs (accumulators a0, a1 with their scales) requantized into the low 16 bits
 * of a word, first in the low byte: rq_out_t's values, packed without branches or sign
 * extensions (yq_requant_act_lo8) where there is no table. */
template <bool LUT>
__device__ __forceinline__ unsigned rq_pair(int32_t a0, float p0, float n0, int32_t a1, float p1, float n1, const ConvK &a)
{
    if (LUT) return (unsigned)(uint8_t)rq_out_t<true>(a0, p0, n0, a) | (unsigned)(uint8_t)rq_out_t<true>(a1, p1, n1, a) << 8;
    return __byte_perm(yq_requant_act_lo8(a0, p0, n0, a.qmin, a.qmax), yq_requant_act_lo8(a1, p1, n1, a.qmin, a.qmax), 0x0040);
}

/* rq_pair<false> for accumulators given as magic words: v = acc + bias + 0x4B400000 with
 * |acc + bias| < 2^22 (a.small), whose bits are the float 1.5 * 2^23 + (acc + bias) exactly;
 * less 1.5 * 2^23 (exact) they are the float of acc + bias that __int2float_rn would give.
 * An integer add and a float add in place of the conversion (a quarter-rate instruction, one
 * per output in the epilogue). */
__device__ __forceinline__ unsigned rq_pair_small(int32_t v0, float p0, float n0, int32_t v1, float p1, float n1,
                                                  const ConvK &a)
{
    const float f0 = __fsub_rn(__int_as_float(v0), 12582912.0f), f1 = __fsub_rn(__int_as_float(v1), 12582912.0f);
    return __byte_perm(yq_rne_sat_lo8(__fmul_rn(f0, f0 >= 0.0f ? p0 : n0), a.qmin, a.qmax),
                       yq_rne_sat_lo8(__fmul_rn(f1, f1 >= 0.0f ? p1 : n1), a.qmin, a.qmax), 0x0040);
}

__device__ __forceinline__ float deq_out(int32_t acc, int o, const ConvK &a)
{
    return yq_act_f(__fmul_rn((float)acc, a.deq[o]), a.act);
}

/* The fused shortcut on a word of 4 int8 outputs (channels o0..o0+3): each channel < F
 * is added to the residual as yq_ref_shortcut adds them; padding channels stay 0.  All
 * four computed and the padding masked after (a test per byte made nvcc branch per byte).
 *
 * yq_add_requant(conv, res) with the shortcut's scales ordered for the conv's side: IEEE
 * addition commutes, so a shortcut whose first source is the residual gives the same bits
 * with its scales swapped (no second copy of the code for res_first).  The arithmetic is
 * yq_add_f's, in fewer instructions (the epilogue of a 3x3 with its shortcut runs on the
 * ALUs while no tensor-core work overlaps it):
 * - an int8 byte b becomes the float b in a permute and a subtraction: with the word's
 *   bytes offset by 128 (one xor for four), the permute writes b + 128 into the low byte
 *   of 1.5 * 2^23's bits, the float 1.5 * 2^23 + b + 128 exactly, less 1.5 * 2^23 + 128
 *   exactly b (yq_i2f_small's trick without its sign extension and integer add);
 * - sneg == 1 (a linear shortcut) multiplies negative sums by 1: the same bits, skipped. */
template <bool NEG>
__device__ __forceinline__ unsigned res_apply_t(unsigned word, unsigned r, int o0, const ConvK &a, float sc, float sr)
{
    const unsigned wx = word ^ 0x80808080u, rx = r ^ 0x80808080u;
    unsigned s[4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const float x = __fsub_rn(__uint_as_float(__byte_perm(wx, 0x4B400000u, 0x7650 + j)), 12583040.0f);
        const float y = __fsub_rn(__uint_as_float(__byte_perm(rx, 0x4B400000u, 0x7650 + j)), 12583040.0f);
        float v = __fadd_rn(__fmul_rn(x, sc), __fmul_rn(y, sr));
        if (NEG) v = v < 0 ? __fmul_rn(v, a.ssneg) : v;
        s[j] = yq_rne_sat_lo8(v, a.sqmin, a.sqmax);
    }
    unsigned y = __byte_perm(__byte_perm(s[0], s[1], 0x0040), __byte_perm(s[2], s[3], 0x0040), 0x5410);
    int left = a.F - o0;          /* channels of the word that exist */
    return left >= 4 ? y : left <= 0 ? 0u : y & ((1u << (8 * left)) - 1u);
}

__device__ __forceinline__ unsigned res_apply(unsigned word, unsigned r, int o0, const ConvK &a)
{
    const float sc = a.res_first ? a.ssb : a.ssa, sr = a.res_first ? a.ssa : a.ssb;
    return a.ssneg == 1.0f ? res_apply_t<false>(word, r, o0, a, sc, sr) : res_apply_t<true>(word, r, o0, a, sc, sr);
}

/* ---- the int8 epilogues' stores, one definition for every family ----------------------
 * Output pixel p's word of channels o..o+3 (st_word) or 16-byte piece of o..o+15
 * (st_piece: o a multiple of 16, the tensors 16-byte aligned), a fused shortcut's
 * residual of the same channels added on the way (res_apply): st_word loads it itself
 * (RES: compiled in; else where a.res is set), st_piece takes the piece from a kernel
 * that loads it early (res_piece) to overlap the loads with its requantize.  A fused
 * conv's tensors are dense (yq_cuda_conv_run_add): the residual's pixel stride is F4. */
__device__ __forceinline__ uint4 res_piece(const ConvK &a, long p, int o)
{
    return __ldg((const uint4 *)(a.res + p * a.F4 + o));
}

template <bool RES>
__device__ __forceinline__ void st_piece(const ConvK &a, long p, int o, uint4 v, uint4 rv)
{
    if (RES)
        v = make_uint4(res_apply(v.x, rv.x, o, a), res_apply(v.y, rv.y, o + 4, a), res_apply(v.z, rv.z, o + 8, a),
                       res_apply(v.w, rv.w, o + 12, a));
    *(uint4 *)((int8_t *)a.out + p * a.OPW * 4 + o) = v;
}

template <bool RES>
__device__ __forceinline__ void st_word_t(const ConvK &a, long p, int o, unsigned w)
{
    if (RES) w = res_apply(w, __ldg((const unsigned *)(a.res + p * a.F4 + o)), o, a);
    ((unsigned *)a.out)[p * a.OPW + (o >> 2)] = w;
}

__device__ __forceinline__ void st_word(const ConvK &a, long p, int o, unsigned w)
{
    if (a.res) st_word_t<true>(a, p, o, w);
    else st_word_t<false>(a, p, o, w);
}

/* Output pixel p (< a.M) of the batch: its image b and the input coordinates (py, px) of
 * its window's top-left tap (padding included: may be negative). */
__device__ __forceinline__ void yq_pixel_origin(const ConvK &a, int p, int *b, int *py, int *px)
{
    int ohw = a.OH * a.OW;
    *b = p / ohw;
    int rem = p - *b * ohw, oy = rem / a.OW;
    *py = oy * a.s - a.pad;
    *px = (rem - oy * a.OW) * a.s - a.pad;
}

/* Split-K: the K range of split z of n, in multiples of `step` (the kernel's K chunk). */
__host__ __device__ __forceinline__ void yq_split_range(int K, int step, int n, int z, int *k0, int *k1)
{
    int chunks = (K + step - 1) / step, per = (chunks + n - 1) / n;
    *k0 = z * per * step;
    *k1 = (z + 1) * per * step < K ? (z + 1) * per * step : K;
}

/* The small convs' kernel (dp4a_const: the image's 3x3 over at most 4 channels, and 1x1
 * convs over 4, 8 or 16 channels; at most 64 filters; int8 output): its weights and
 * epilogue parameters travel in the kernel's parameter space (constant memory, read as
 * instruction operands). */
#define YQ_CONST_MAXF 64
#define YQ_CONST_MAXW (YQ_CONST_MAXF * 9)
struct yq_const_w {
    int w[YQ_CONST_MAXW];         /* [filter][k * k * c4 / 4] words, zero past F */
    int bq[YQ_CONST_MAXF];
    float pos[YQ_CONST_MAXF], neg[YQ_CONST_MAXF];
};

/* The epilogue, a template parameter: each run-time test in the unrolled epilogue made
 * nvcc emit it once more (CUTLASS's family measured 1.7x slower for it). */
enum { EP_S8 = 0,     /* int8 output */
       EP_RES = 1,    /* int8 output plus a fused [shortcut]'s residual */
       EP_WIDE = 2 }; /* int32 partial sums of a K split (ws), or a float output: tested at run time */

/* Tile counts of the families without a tile table, and the K splits every splittable
 * family offers (kernels/cuda_conv_names.cu names them all). */
#define YQ_DP4A_TILES 5        /* dp4a_64x64, _128x128, _32x32ks, _px, _const */
#define YQ_DW_TILES 4          /* dw (conv_dw_k, conv_dw), dw_dp4a, dw_tile, dw_col */
#define YQ_F32_TILES 4         /* f32, f32_128, f32_px, f32_dw */
#define YQ_SPLIT_OPTS 8
extern const int yq_split_opts[YQ_SPLIT_OPTS];

/* The tensor-core family (kernels/cuda_mma.cu). */
#define YQ_MMA_TILES 8
struct yq_mma_tile { int bm, bn, bk, wm, wn, stages; };
extern const yq_mma_tile yq_mma_tiles[YQ_MMA_TILES];
/* Launches tile t with split_k parts (ws: int32 scratch of split_k x M x F4 words when > 1). */
/* Raises the shared-memory limit of every tile's kernel on the current device (once). */
yq_status yq_mma_prepare(yq_error *err);
yq_status yq_mma_launch(const ConvK &a, int tile, int split_k, int32_t *ws, cudaStream_t s, yq_error *err);
/* Finishes a K split of any int32 family: ws[z][M][F4]'s split sums added (integers: the
 * order does not matter), then the conv's epilogue (requantize, residual, or float out). */
yq_status yq_mma_reduce(const ConvK &a, const int32_t *ws, int split, cudaStream_t s, yq_error *err);

/* The CUTLASS family (kernels/cuda_cutlass.cu): CUTLASS's sm80 main loop, our epilogue. */
#define YQ_CUT_TILES 7
extern const yq_mma_tile yq_cut_tiles[YQ_CUT_TILES];   /* { BM, BN, BK, WM, WN, STAGES } */
/* Whether this build has the family's code for the current device (sm_80 and newer). */
int yq_cut_built(void);
/* Whether tile t runs this conv (groups 1, channels and filters multiples of 16, int8 in
 * and out, 16-byte aligned strides and starts). */
int yq_cut_ok(const ConvK &a, int tile);
/* Raises the shared-memory limit of every tile's kernel on the current device (once). */
yq_status yq_cut_prepare(yq_error *err);
yq_status yq_cut_launch(const ConvK &a, int tile, cudaStream_t s, yq_error *err);

/* The halo family (kernels/cuda_halo.cu): 3x3 convs over 16, 32 or 64 channel bytes, the
 * input window staged once per output tile of TH x TW pixels, BN filters per block. */
#define YQ_HALO_TILES 3
struct yq_halo_tile { int th, tw, bn; };
extern const yq_halo_tile yq_halo_tiles[YQ_HALO_TILES];
/* Whether this build has the family's code for the current device (sm_80 and newer). */
int yq_halo_built(void);
/* Whether tile t has code for this shape (c4: input channel bytes per pixel) and its
 * shared memory fits the current device. */
int yq_halo_shape_ok(int tile, int c4, int k, int s, int groups, int F);
/* ... and these tensors (int8 in and out, 16-byte aligned input pixels). */
int yq_halo_ok(const ConvK &a, int tile);
/* Raises the shared-memory limit of every instantiation on the current device (once). */
yq_status yq_halo_prepare(yq_error *err);
yq_status yq_halo_launch(const ConvK &a, int tile, int sms, cudaStream_t s, yq_error *err);

/* The image's conv on int8 tensor cores (kernels/cuda_img.cu): 3x3, stride 1 or 2, 3
 * channels of uint8, at most 64 filters, int8 output; one configuration ("img_mma"). */
int yq_img_built(void);
int yq_img_shape_ok(int cin, int k, int s, int groups, int F);
int yq_img_ok(const ConvK &a);                   /* ... and these tensors: the uint8 image */
yq_status yq_img_launch(const ConvK &a, int sms, cudaStream_t s, yq_error *err);

/* The wgmma family (kernels/cuda_wgmma.cu): sm_90's warpgroup tensor cores, operands in
 * swizzled shared memory, BM / 64 warpgroups of BN filters, K steps of BK bytes. */
#define YQ_WG_TILES 8
extern const yq_mma_tile yq_wg_tiles[YQ_WG_TILES];    /* { BM, BN, BK, 64, BN, STAGES } */
/* Whether this build has the family's code for the current device (sm_90a code, sm_90). */
int yq_wg_built(void);
/* Whether tile t runs this conv (groups 1, channels a multiple of its BK, filters of 16,
 * int8 in and out, 16-byte aligned strides and starts). */
int yq_wg_ok(const ConvK &a, int tile);
/* Raises the shared-memory limit of every tile's kernel on the current device (once). */
yq_status yq_wg_prepare(yq_error *err);
/* The wgmma halo family (kernels/cuda_wgmma.cu): stride-1 3x3 convs (pad 1, channels a
 * multiple of 128, filters of 16, int8 in and out, sm_90), each 128-channel chunk of a
 * tile's padded input window staged once, a descriptor per tap into it; BM rows, 128
 * filters, STAGES-deep ring of filter tiles. */
#define YQ_WGH_TILES 4
struct yq_wgh_tile { int bm, stages, minb; };   /* minb: blocks a multiprocessor (registers capped) */
extern const yq_wgh_tile yq_wgh_tiles[YQ_WGH_TILES];
/* Whether tile t can run the shape (its shared memory grows with the width W). */
int yq_wgh_shape_ok(int tile, int cin, int k, int stride, int pad, int groups, int F, int W);
int yq_wgh_ok(const ConvK &a, int tile);         /* ... and these tensors (16-byte aligned) */
yq_status yq_wgh_prepare(yq_error *err);
yq_status yq_wgh_launch(const ConvK &a, int tile, cudaStream_t s, yq_error *err);
/* The streaming 1x1 family (kernels/cuda_wgmma.cu): stride-1 1x1 convs (channels a
 * multiple of BK, int8 in, sm_90; int8 out over filters a multiple of 16, or a head's
 * float out over any), a block's BN filters resident in shared memory, its 128-pixel
 * tiles walked with the loads running across tiles. */
#define YQ_WG1_TILES 6
struct yq_wg1_tile { int bn, bk, stages, minb; };
extern const yq_wg1_tile yq_wg1_tiles[YQ_WG1_TILES];
int yq_wg1_shape_ok(int tile, int cin, int k, int stride, int pad, int groups, int F, int fout);
int yq_wg1_ok(const ConvK &a, int tile);         /* ... and these tensors (16-byte aligned) */
yq_status yq_wg1_prepare(yq_error *err);
yq_status yq_wg1_launch(const ConvK &a, int tile, int sms, cudaStream_t s, yq_error *err);
/* Whether tile t has a K split of `split` parts (tiles of 128 filters; 1: every tile). */
int yq_wg_can_split(int tile, int split);
/* Launches tile t with split_k parts (ws: int32 scratch of split_k x M x F4 words when > 1). */
yq_status yq_wg_launch(const ConvK &a, int tile, int split_k, int32_t *ws, cudaStream_t s, yq_error *err);

/* Float layers on FP16 tensor cores (kernels/cuda_f16.cu): 64 x 64 tiles, K chunks of
 * YQ_F16_K; ws: FP32 scratch of split_k x M x F when split_k > 1 (then f32_reduce). */
#define YQ_F16_TILE 64
#define YQ_F16_K 32
void yq_f16_launch(const ConvK &a, int split_k, float *ws, cudaStream_t s);

#endif
