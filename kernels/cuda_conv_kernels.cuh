/* The convolution kernels of kernels/cuda_conv.cu (device code only: the conv object,
 * its launchers and configurations are there), bit-exact with yq_ref_conv
 * (kernels/cpu_ref.c).  Included by kernels/cuda_conv.cu alone.
 *
 * DP4A: implicit GEMM.  M = batch x out pixels, N = filters, K = k x k x c4/4
 *   32-bit words (4 channels each) of the NHWC4 input; weights are repacked at
 *   upload to [filters][ky][kx][c4] so that a filter's K words line up with the
 *   gathered input words.  Three kernels, picked by shape (dp4a_tile): 64 x 64
 *   tiles (each thread 4 pixels x 4 consecutive filters, K chunks of 8 words in
 *   shared memory); 128 x 128 tiles double-buffered, for large layers; 32 x 32
 *   tiles with K split over the block's 8 warps, for small outputs.  The first conv
 *   reads the uint8 image: dp4a.u32.s32 (unsigned bytes of the image times signed
 *   weight bytes, signed sum).
 * DW: depthwise: byte products 4 or 16 channels a thread (dw), four taps transposed
 *   into dp4a operands (dw_dp4a), the same on a staged output tile (dw_tile), or (3x3)
 *   down a column with the window sliding in registers (dw_col).
 * DIRECT: one thread per output value, any groups (grouped convs are rare).
 * F32: the layers the qconfig keeps in float, reading any input type (int8
 *   dequantized as yq_dequantize does), in their exact FP32 definition: one fmaf
 *   chain per output in the CPU's order (yq_f32_conv_exact), never split, so every
 *   tile (f32, f32_128, f32_px, f32_dw) gives the CPU's bytes.
 * F16 (kernels/cuda_f16.cu): the same layers on FP16 tensor cores with FP32 sums,
 *   only when asked (yq_cuda_conv_set_variant): not the validated numerics.
 *
 * Integer sums are exact (int32, wrapping like the CPU's), so any order gives the
 * CPU's accumulator; the epilogue is ir/requant.h itself, or for float outputs
 * act((float)acc * deq[o]) with the multiply written __fmul_rn (never an FMA). */
#ifndef YQ_CUDA_CONV_KERNELS_CUH
#define YQ_CUDA_CONV_KERNELS_CUH

#include <cuda_fp16.h>
#include "kernels/cuda_conv.cuh"

template <bool LUT>
__device__ __forceinline__ int8_t rq_out_l(int32_t acc, int o, const ConvK &a)
{
    return (int8_t)rq_out_t<LUT>(acc, a.pos[o], a.neg[o], a);
}

template <bool U8>
__device__ __forceinline__ int dot4(int x, int w, int c)
{
    if (U8) {
        int d;
        asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(x), "r"(w), "r"(c));
        return d;
    }
    return __dp4a(x, w, c);
}

#define BM 64
#define BN 64
#define BK 8

template <bool U8, bool FOUT, bool LUT = false>
__global__ void __launch_bounds__(256) conv_dp4a(ConvK a)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    __shared__ __align__(16) int As[BK][BM + 4];
    __shared__ __align__(16) int Bs[BK][BN + 4];
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
    const int *in = (const int *)a.in;
    const int lk = tid & 7, lp = tid >> 3;
    const int ohw = a.OH * a.OW;
    int pb[2], py[2], px[2];
    bool pv[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        int p = m0 + lp + 32 * r;
        pv[r] = p < a.M;
        int b = p / ohw, rem = p - b * ohw, oy = rem / a.OW, ox = rem - oy * a.OW;
        pb[r] = b;
        py[r] = oy * a.s - a.pad;
        px[r] = ox * a.s - a.pad;
    }
    int acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = 0;

    for (int k0 = 0; k0 < a.K4; k0 += BK) {
        int kg = k0 + lk;
        int tap = kg / a.C4w, c4 = kg - tap * a.C4w, ky = tap / a.k, kx = tap - ky * a.k;
#pragma unroll
        for (int r = 0; r < 2; r++) {
            int v = 0, y = py[r] + ky, x = px[r] + kx;
            if (pv[r] && kg < a.K4 && y >= 0 && y < a.IH && x >= 0 && x < a.IW)
                v = __ldg(in + (((long)pb[r] * a.IH + y) * a.IW + x) * a.IPW + c4);
            As[lk][lp + 32 * r] = v;
            int f = n0 + lp + 32 * r;
            Bs[lk][lp + 32 * r] = f < a.F && kg < a.K4 ? __ldg(a.w32 + (long)f * a.K4 + kg) : 0;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            int4 av = *(const int4 *)&As[kk][ty * 4];
            int4 bv = *(const int4 *)&Bs[kk][tx * 4];
            int xa[4] = { av.x, av.y, av.z, av.w }, wb[4] = { bv.x, bv.y, bv.z, bv.w };
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[i][j] = dot4<U8>(xa[i], wb[j], acc[i][j]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < 4; i++) {
        int p = m0 + ty * 4 + i;
        if (p >= a.M) continue;
        int o0 = n0 + tx * 4;
        if (FOUT) {
            int b = p / ohw, pix = p - b * ohw;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                int o = o0 + j;
                if (o < a.F) ((float *)a.out)[((long)b * a.F + o) * ohw + pix] = deq_out(acc[i][j] + a.bq[o], o, a);
            }
        } else if (o0 < a.F4) {
            unsigned word = 0;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                int o = o0 + j;
                int8_t v = o < a.F ? rq_out_l<LUT>(acc[i][j] + a.bq[o], o, a) : 0;
                word |= (unsigned)(uint8_t)v << (8 * j);
            }
            st_word(a, p, o0, word);
        }
    }
}

/* The large tile: 128 pixels x 128 filters per 256-thread block, each thread 8 x 8
 * outputs (two 4 x 4 quadrants, 64 apart in each direction, so that its shared-memory
 * reads are 16-byte vectors), K in chunks of 16 words double-buffered through
 * registers: the next chunk's global loads are in flight while the current one is
 * multiplied.  VEC (c4 words per pixel a multiple of 4): every 4-word group of a chunk
 * lies in one tap and is 16-byte aligned, so A and B are read as int4; otherwise word
 * by word.  Same sums as conv_dp4a (exact int32), same epilogue. */
#define TM 128
#define TN 128
#define TK 16
#define TPAD 4

template <bool U8, bool FOUT, bool VEC, bool LUT = false>
__global__ void __launch_bounds__(256, 2) conv_dp4a_128(ConvK a)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    __shared__ __align__(16) int As[2][TK][TM + TPAD];
    __shared__ __align__(16) int Bs[2][TK][TN + TPAD];
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int m0 = blockIdx.x * TM, n0 = blockIdx.y * TN;
    const int *in = (const int *)a.in;
    const int ohw = a.OH * a.OW;
    /* loader: row lr (a pixel of A, a filter of B), word groups lq and lq + 2 */
    const int lr = tid & 127, lq = tid >> 7;
    const int p = m0 + lr;
    const bool pv = p < a.M;
    int pb, py, px;
    {
        int b = pv ? p / ohw : 0, rem = p - b * ohw, oy = rem / a.OW, ox = rem - oy * a.OW;
        pb = b;
        py = oy * a.s - a.pad;
        px = ox * a.s - a.pad;
    }
    const long in_img = (long)pb * a.IH;
    const int f = n0 + lr;
    const bool fv = f < a.F;
    const int *wrow = a.w32 + (long)(fv ? f : 0) * a.K4;

    int4 ra[2], rb[2];
    auto load = [&](int k0) {
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int kg = k0 + (lq + 2 * h) * 4;
            if (VEC) {
                int4 va = make_int4(0, 0, 0, 0), vb = make_int4(0, 0, 0, 0);
                if (kg < a.K4) {
                    int tap = kg / a.C4w, c4 = kg - tap * a.C4w, ky = tap / a.k, kx = tap - ky * a.k;
                    int y = py + ky, x = px + kx;
                    if (pv && y >= 0 && y < a.IH && x >= 0 && x < a.IW)
                        va = __ldg((const int4 *)(in + ((in_img + y) * a.IW + x) * a.IPW + c4));
                    if (fv) vb = __ldg((const int4 *)(wrow + kg));
                }
                ra[h] = va;
                rb[h] = vb;
            } else {
                int va[4], vb[4];
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    int kw = kg + j, v = 0, w = 0;
                    if (kw < a.K4) {
                        int tap = kw / a.C4w, c4 = kw - tap * a.C4w, ky = tap / a.k, kx = tap - ky * a.k;
                        int y = py + ky, x = px + kx;
                        if (pv && y >= 0 && y < a.IH && x >= 0 && x < a.IW)
                            v = __ldg(in + ((in_img + y) * a.IW + x) * a.IPW + c4);
                        if (fv) w = __ldg(wrow + kw);
                    }
                    va[j] = v;
                    vb[j] = w;
                }
                ra[h] = make_int4(va[0], va[1], va[2], va[3]);
                rb[h] = make_int4(vb[0], vb[1], vb[2], vb[3]);
            }
        }
    };
    auto store = [&](int buf) {
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int r = (lq + 2 * h) * 4;
            As[buf][r + 0][lr] = ra[h].x; As[buf][r + 1][lr] = ra[h].y;
            As[buf][r + 2][lr] = ra[h].z; As[buf][r + 3][lr] = ra[h].w;
            Bs[buf][r + 0][lr] = rb[h].x; Bs[buf][r + 1][lr] = rb[h].y;
            Bs[buf][r + 2][lr] = rb[h].z; Bs[buf][r + 3][lr] = rb[h].w;
        }
    };

    int acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = 0;

    load(0);
    store(0);
    __syncthreads();
    int cur = 0;
    for (int k0 = 0; k0 < a.K4; k0 += TK) {
        const bool next = k0 + TK < a.K4;
        if (next) load(k0 + TK);
#pragma unroll
        for (int kk = 0; kk < TK; kk++) {
            int4 a0 = *(const int4 *)&As[cur][kk][ty * 4], a1 = *(const int4 *)&As[cur][kk][64 + ty * 4];
            int4 b0 = *(const int4 *)&Bs[cur][kk][tx * 4], b1 = *(const int4 *)&Bs[cur][kk][64 + tx * 4];
            int xa[8] = { a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w };
            int wb[8] = { b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w };
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) acc[i][j] = dot4<U8>(xa[i], wb[j], acc[i][j]);
        }
        if (next) store(cur ^ 1);
        __syncthreads();
        cur ^= 1;
    }

#pragma unroll
    for (int i = 0; i < 8; i++) {
        int pp = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
        if (pp >= a.M) continue;
#pragma unroll
        for (int hj = 0; hj < 2; hj++) {
            int o0 = n0 + hj * 64 + tx * 4;
            if (FOUT) {
                int b = pp / ohw, pix = pp - b * ohw;
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    int o = o0 + j;
                    if (o < a.F)
                        ((float *)a.out)[((long)b * a.F + o) * ohw + pix] = deq_out(acc[i][hj * 4 + j] + a.bq[o], o, a);
                }
            } else if (o0 < a.F4) {
                unsigned word = 0;
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    int o = o0 + j;
                    int8_t v = o < a.F ? rq_out_l<LUT>(acc[i][hj * 4 + j] + a.bq[o], o, a) : 0;
                    word |= (unsigned)(uint8_t)v << (8 * j);
                }
                st_word(a, pp, o0, word);
            }
        }
    }
}

/* Small outputs (13x13, 26x26 at batch 1): too few 64 x 64 tiles to fill the chip, so
 * a 32-pixel x 32-filter tile per block whose 8 warps each take every 8th chunk of
 * 8 K words (staged in the warp's own shared memory), then add their 8 partial tiles
 * in shared memory.  Integer sums: any split and order give the same int32. */
#define KS_T 32
#define KS_KC 8
#define KS_W 8

template <bool U8, bool FOUT, bool VEC, bool LUT = false>
__global__ void __launch_bounds__(256) conv_dp4a_ks(ConvK a)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    __shared__ __align__(16) int sm[KS_W * KS_T * KS_T];   /* staging (16 KB), then the partial tiles (32 KB) */
    const int tid = threadIdx.x, lane = tid & 31, wp = tid >> 5;
    const int m0 = blockIdx.x * KS_T, n0 = blockIdx.y * KS_T;
    int *As = sm + wp * (2 * KS_KC * 32), *Bs = As + KS_KC * 32;   /* [KS_KC][32] each */
    const int *in = (const int *)a.in;
    const int ohw = a.OH * a.OW;
    const int p = m0 + lane;
    const bool pv = p < a.M;
    int pb = 0, py = 0, px = 0;
    if (pv) yq_pixel_origin(a, p, &pb, &py, &px);
    const long in_img = (long)pb * a.IH;
    const int f = n0 + lane;
    const bool fv = f < a.F;
    const int *wrow = a.w32 + (long)(fv ? f : 0) * a.K4;
    const int pi = lane & 7, fi = lane >> 3;   /* compute: pixels pi*4..+3, filters fi*8..+7 */
    int acc[4][8];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = 0;
    for (int k0 = wp * KS_KC; k0 < a.K4; k0 += KS_W * KS_KC) {
        int va[KS_KC], vb[KS_KC];
#pragma unroll
        for (int h = 0; h < KS_KC / 4; h++) {
            int kg = k0 + 4 * h;
            if (VEC) {
                int4 A = make_int4(0, 0, 0, 0), W = make_int4(0, 0, 0, 0);
                if (kg < a.K4) {
                    int tap = kg / a.C4w, c4 = kg - tap * a.C4w, ky = tap / a.k, kx = tap - ky * a.k;
                    int y = py + ky, x = px + kx;
                    if (pv && y >= 0 && y < a.IH && x >= 0 && x < a.IW)
                        A = __ldg((const int4 *)(in + ((in_img + y) * a.IW + x) * a.IPW + c4));
                    if (fv) W = __ldg((const int4 *)(wrow + kg));
                }
                va[4 * h] = A.x; va[4 * h + 1] = A.y; va[4 * h + 2] = A.z; va[4 * h + 3] = A.w;
                vb[4 * h] = W.x; vb[4 * h + 1] = W.y; vb[4 * h + 2] = W.z; vb[4 * h + 3] = W.w;
            } else {
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    int kw = kg + j, v = 0, w = 0;
                    if (kw < a.K4) {
                        int tap = kw / a.C4w, c4 = kw - tap * a.C4w, ky = tap / a.k, kx = tap - ky * a.k;
                        int y = py + ky, x = px + kx;
                        if (pv && y >= 0 && y < a.IH && x >= 0 && x < a.IW)
                            v = __ldg(in + ((in_img + y) * a.IW + x) * a.IPW + c4);
                        if (fv) w = __ldg(wrow + kw);
                    }
                    va[4 * h + j] = v;
                    vb[4 * h + j] = w;
                }
            }
        }
        __syncwarp();   /* the previous chunk has been read */
#pragma unroll
        for (int j = 0; j < KS_KC; j++) {
            As[j * 32 + lane] = va[j];
            Bs[j * 32 + lane] = vb[j];
        }
        __syncwarp();
#pragma unroll
        for (int kk = 0; kk < KS_KC; kk++) {
            int4 av = *(const int4 *)&As[kk * 32 + pi * 4];
            int4 b0 = *(const int4 *)&Bs[kk * 32 + fi * 8], b1 = *(const int4 *)&Bs[kk * 32 + fi * 8 + 4];
            int xa[4] = { av.x, av.y, av.z, av.w };
            int wb[8] = { b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w };
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) acc[i][j] = dot4<U8>(xa[i], wb[j], acc[i][j]);
        }
    }
    __syncthreads();   /* every warp is done with its staging area */
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) sm[wp * KS_T * KS_T + (pi * 4 + i) * KS_T + fi * 8 + j] = acc[i][j];
    __syncthreads();
    const int rp = tid >> 3, rf = (tid & 7) * 4;   /* this thread's 4 outputs: pixel rp, filters rf..rf+3 */
    int sum[4] = { 0, 0, 0, 0 };
#pragma unroll
    for (int w = 0; w < KS_W; w++)
#pragma unroll
        for (int j = 0; j < 4; j++) sum[j] += sm[w * KS_T * KS_T + rp * KS_T + rf + j];
    const int pp = m0 + rp, o0 = n0 + rf;
    if (pp >= a.M) return;
    if (FOUT) {
        int b = pp / ohw, pix = pp - b * ohw;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            int o = o0 + j;
            if (o < a.F) ((float *)a.out)[((long)b * a.F + o) * ohw + pix] = deq_out(sum[j] + a.bq[o], o, a);
        }
    } else if (o0 < a.F4) {
        unsigned word = 0;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            int o = o0 + j;
            int8_t v = o < a.F ? rq_out_l<LUT>(sum[j] + a.bq[o], o, a) : 0;
            word |= (unsigned)(uint8_t)v << (8 * j);
        }
        st_word(a, pp, o0, word);
    }
}

/* Depthwise: thread = (pixel, 4 channels). */
/* Depthwise k x k (3 or 5), stride 1 or 2, unrolled: a thread computes 4 channels (one
 * word) of one output pixel; consecutive threads take consecutive words of a pixel, so
 * every input and weight load of a warp is one contiguous run of words. */
template <int K, int S, bool U8, bool LUT = false>
__global__ void __launch_bounds__(256) conv_dw_k(ConvK a)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    const long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    const int cw = a.F4 >> 2;
    if (t >= (long)a.M * cw) return;
    const int p = (int)(t / cw), w4 = (int)(t - (long)p * cw), c0 = w4 * 4;
    const int ohw = a.OH * a.OW, b = p / ohw, rem = p - b * ohw, oy = rem / a.OW, ox = rem - oy * a.OW;
    const unsigned *in = (const unsigned *)a.in + (long)b * a.IH * a.IW * a.IPW + w4;
    int s[4] = { 0, 0, 0, 0 };
#pragma unroll
    for (int ky = 0; ky < K; ky++) {
        const int y = oy * S - a.pad + ky;
        const bool yok = (unsigned)y < (unsigned)a.IH;
#pragma unroll
        for (int kx = 0; kx < K; kx++) {
            const int x = ox * S - a.pad + kx;
            unsigned v = yok && (unsigned)x < (unsigned)a.IW ? __ldg(in + ((long)y * a.IW + x) * a.IPW) : 0u;
            unsigned w = __ldg(a.wdw + (ky * K + kx) * cw + w4);
#pragma unroll
            for (int j = 0; j < 4; j++) {
                int xv = U8 ? (int)(uint8_t)(v >> (8 * j)) : (int)(int8_t)(v >> (8 * j));
                s[j] += (int)(int8_t)(w >> (8 * j)) * xv;
            }
        }
    }
    unsigned word = 0;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const int c = c0 + j;
        int8_t v = c < a.F ? rq_out_l<LUT>(s[j] + a.bq[c], c, a) : 0;
        word |= (unsigned)(uint8_t)v << (8 * j);
    }
    st_word(a, p, c0, word);
}

/* The same on 16 channels a thread, every load and store 16 bytes (channels a multiple of
 * 16; pixel strides and starts 16-byte aligned): a quarter of the instructions per byte. */
template <int K, int S, bool U8, bool LUT = false>
__global__ void __launch_bounds__(256) conv_dw_k16(ConvK a)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    const long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    const int cq = a.F4 >> 4;                    /* 16-channel groups */
    if (t >= (long)a.M * cq) return;
    const int p = (int)(t / cq), gq = (int)(t - (long)p * cq), c0 = gq * 16;
    const int ohw = a.OH * a.OW, b = p / ohw, rem = p - b * ohw, oy = rem / a.OW, ox = rem - oy * a.OW;
    const int ipq = a.IPW >> 2;                  /* the input pixel stride in 16-byte units */
    const uint4 *in = (const uint4 *)a.in + (long)b * a.IH * a.IW * ipq + gq;
    const uint4 *wt = (const uint4 *)a.wdw + gq;
    int s[16];
#pragma unroll
    for (int j = 0; j < 16; j++) s[j] = 0;
#pragma unroll
    for (int ky = 0; ky < K; ky++) {
        const int y = oy * S - a.pad + ky;
        const bool yok = (unsigned)y < (unsigned)a.IH;
#pragma unroll
        for (int kx = 0; kx < K; kx++) {
            const int x = ox * S - a.pad + kx;
            uint4 v = make_uint4(0, 0, 0, 0);
            if (yok && (unsigned)x < (unsigned)a.IW) v = __ldg(in + ((long)y * a.IW + x) * ipq);
            const uint4 w = __ldg(wt + (ky * K + kx) * cq);
            const unsigned vw[4] = { v.x, v.y, v.z, v.w }, ww[4] = { w.x, w.y, w.z, w.w };
#pragma unroll
            for (int q = 0; q < 4; q++)
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    int xv = U8 ? (int)(uint8_t)(vw[q] >> (8 * j)) : (int)(int8_t)(vw[q] >> (8 * j));
                    s[q * 4 + j] += (int)(int8_t)(ww[q] >> (8 * j)) * xv;
                }
        }
    }
    unsigned words[4];
#pragma unroll
    for (int q = 0; q < 4; q++) {
        const int4 bq = __ldg(reinterpret_cast<const int4 *>(a.bq + c0) + q);
        const float4 sp = __ldg(reinterpret_cast<const float4 *>(a.pos + c0) + q);
        const float4 sn = __ldg(reinterpret_cast<const float4 *>(a.neg + c0) + q);
        const int bb[4] = { bq.x, bq.y, bq.z, bq.w };
        const float pp[4] = { sp.x, sp.y, sp.z, sp.w }, nn[4] = { sn.x, sn.y, sn.z, sn.w };
        unsigned word = 0;
#pragma unroll
        for (int j = 0; j < 4; j++)
            word |= (unsigned)(uint8_t)rq_out_t<LUT>(s[q * 4 + j] + bb[j], pp[j], nn[j], a) << (8 * j);
        words[q] = word;
    }
    const uint4 v = make_uint4(words[0], words[1], words[2], words[3]);
    if (a.res) st_piece<true>(a, p, c0, v, res_piece(a, p, c0));
    else st_piece<false>(a, p, c0, v, v);
}

/* Depthwise on dp4a (dw tile 1, "dw_dp4a"): a channel's K x K products are a dot product
 * over taps, so four taps' words (4 channels each) are transposed by byte permutes into
 * four words of one channel's four taps, each then one dp4a against that channel's four
 * tap weights (a.wdt: [tap group][c4] words, taps 4g..4g+3, zero past K x K).  A group of
 * four taps and four channels costs 8 permutes and 4 dp4a where byte extraction and
 * multiply-adds took 48 instructions (conv_dw_k: 4.8 int8 TOP/s on the H200, far from the
 * memory bound).  K x K is odd, so the last group holds one tap: a permute and a dp4a
 * per channel.  NW words (1 or 4: 16-byte loads) of one output pixel a thread. */
template <bool U8>
__device__ __forceinline__ void dw_taps4(unsigned v0, unsigned v1, unsigned v2, unsigned v3, const uint4 &w, int *s)
{
    const unsigned lo01 = __byte_perm(v0, v1, 0x5140), hi01 = __byte_perm(v0, v1, 0x7362);
    const unsigned lo23 = __byte_perm(v2, v3, 0x5140), hi23 = __byte_perm(v2, v3, 0x7362);
    s[0] = dot4<U8>((int)__byte_perm(lo01, lo23, 0x5410), (int)w.x, s[0]);
    s[1] = dot4<U8>((int)__byte_perm(lo01, lo23, 0x7632), (int)w.y, s[1]);
    s[2] = dot4<U8>((int)__byte_perm(hi01, hi23, 0x5410), (int)w.z, s[2]);
    s[3] = dot4<U8>((int)__byte_perm(hi01, hi23, 0x7632), (int)w.w, s[3]);
}

template <bool U8>
__device__ __forceinline__ void dw_tap1(unsigned v, const uint4 &w, int *s)
{
    s[0] = dot4<U8>((int)__byte_perm(v, 0u, 0x4440), (int)w.x, s[0]);
    s[1] = dot4<U8>((int)__byte_perm(v, 0u, 0x4441), (int)w.y, s[1]);
    s[2] = dot4<U8>((int)__byte_perm(v, 0u, 0x4442), (int)w.z, s[2]);
    s[3] = dot4<U8>((int)__byte_perm(v, 0u, 0x4443), (int)w.w, s[3]);
}

template <int K, int S, int NW, bool U8, bool LUT>
__global__ void __launch_bounds__(256) conv_dw_dp4a(ConvK a)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    constexpr int T = K * K, G = (T + 3) / 4;
    static_assert(T % 4 == 1, "an odd window: the last group holds one tap");
    const long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    const int cw = a.F4 >> 2, per = cw / NW;     /* words a pixel; threads a pixel */
    if (t >= (long)a.M * per) return;
    const int p = (int)(t / per), w0 = (int)(t - (long)p * per) * NW, c0 = w0 * 4;
    const int ohw = a.OH * a.OW, b = p / ohw, rem = p - b * ohw, oy = rem / a.OW, ox = rem - oy * a.OW;
    /* the window's rows and columns, once: offsets (words, within the image) clamped into
     * it, and whether each is inside.  Every tap is loaded from a valid address and
     * zeroed after, without a branch: a load under a branch is its own basic block, and
     * nvcc issued the nine one after another's wait. */
    const int rs = a.IW * a.IPW, y0 = oy * S - a.pad, x0 = ox * S - a.pad;
    const unsigned *in = (const unsigned *)a.in + (long)b * a.IH * rs + w0;
    int roff[K], coff[K];
    bool rok[K], cok[K];
#pragma unroll
    for (int i = 0; i < K; i++) {
        roff[i] = min(max(y0 + i, 0), a.IH - 1) * rs;
        coff[i] = min(max(x0 + i, 0), a.IW - 1) * a.IPW;
        rok[i] = (unsigned)(y0 + i) < (unsigned)a.IH;
        cok[i] = (unsigned)(x0 + i) < (unsigned)a.IW;
    }
    const uint4 *wt = (const uint4 *)a.wdt + w0;  /* [g][cw] words: uint4 = 4 channels */
    int s[4 * NW];
#pragma unroll
    for (int j = 0; j < 4 * NW; j++) s[j] = 0;
#pragma unroll
    for (int g = 0; g < G; g++) {
        unsigned v[4][NW];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int tap = 4 * g + i, ky = tap / K, kx = tap % K;
            if (tap >= T) {
#pragma unroll
                for (int q = 0; q < NW; q++) v[i][q] = 0;
                continue;
            }
            const bool ok = rok[ky] && cok[kx];
            const unsigned *px = in + (roff[ky] + coff[kx]);
            if constexpr (NW == 4) {
                const uint4 q = __ldg(reinterpret_cast<const uint4 *>(px));
                v[i][0] = ok ? q.x : 0u, v[i][1] = ok ? q.y : 0u, v[i][2] = ok ? q.z : 0u, v[i][3] = ok ? q.w : 0u;
            } else {
                const unsigned q = __ldg(px);
                v[i][0] = ok ? q : 0u;
            }
        }
#pragma unroll
        for (int q = 0; q < NW; q++) {
            const uint4 w = __ldg(wt + g * cw + q);
            if (4 * g + 4 <= T) dw_taps4<U8>(v[0][q], v[1][q], v[2][q], v[3][q], w, s + 4 * q);
            else dw_tap1<U8>(v[0][q], w, s + 4 * q);
        }
    }
    /* the parameters as vectors (padded with zeros to 16 channels: past F the result is
     * zero without a test) */
    unsigned words[NW];
#pragma unroll
    for (int q = 0; q < NW; q++) {
        const int c = c0 + 4 * q;
        const int4 bq = __ldg(reinterpret_cast<const int4 *>(a.bq + c));
        const float4 sp = __ldg(reinterpret_cast<const float4 *>(a.pos + c));
        const float4 sn = __ldg(reinterpret_cast<const float4 *>(a.neg + c));
        /* (rq_pair's two outputs are its low 16 bits; the high ones are not zero) */
        const unsigned word = __byte_perm(rq_pair<LUT>(s[4 * q] + bq.x, sp.x, sn.x, s[4 * q + 1] + bq.y, sp.y, sn.y, a),
                                          rq_pair<LUT>(s[4 * q + 2] + bq.z, sp.z, sn.z, s[4 * q + 3] + bq.w, sp.w, sn.w, a),
                                          0x5410);
        words[q] = word;
    }
    if constexpr (NW == 4) {
        const uint4 v = make_uint4(words[0], words[1], words[2], words[3]);
        if (a.res) st_piece<true>(a, p, c0, v, res_piece(a, p, c0));
        else st_piece<false>(a, p, c0, v, v);
    } else {
        st_word(a, p, c0, words[0]);
    }
}

/* Depthwise on a staged tile ("dw_tile"): a block takes TH x TW output pixels of one image
 * and a slab of up to 16 channel words (64 channels), stages their input window, halo
 * included, in shared memory once (16-byte loads, zeros outside the image: the padding),
 * and each thread computes DWT_R outputs down one column for one word (4 channels).  Its
 * weights (dw_dp4a's [tap group][c4] words) and per-channel parameters are loaded once for
 * the DWT_R outputs, and the (DWT_R - 1) x S + K input rows of its column are read from
 * shared memory once and shared between the outputs whose windows overlap.  dw_dp4a reads
 * each input pixel K x K times and the weights and parameters for every output from the
 * cache: on yolo-fastest-1.1-xl's 192 x 40 x 40 layers at batch 32 that was three times the
 * bytes of its input and output.  The arithmetic is dw_dp4a's (dw_taps4, rq_pair, st_word),
 * so the bytes are the same.  Channels a multiple of 16 (cfg_ok), the input's pixels 16-byte
 * aligned and the grid within CUDA's limits (dw_tile_fits). */
#define DWT_R 4                           /* output rows a thread */
#define DWT_T 256

template <int K, int S, bool LUT>
__global__ void __launch_bounds__(DWT_T) conv_dw_tile(ConvK a, int cbw, int tw, int th)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    extern __shared__ __align__(16) unsigned dwsm[];      /* [ih][iw][cbw] words */
    constexpr int T = K * K, G = (T + 3) / 4, NR = (DWT_R - 1) * S + K;
    const int cw = a.F4 >> 2, slabs = (cw + cbw - 1) / cbw;
    const int b = blockIdx.z / slabs, w0 = (blockIdx.z - b * slabs) * cbw, nw = min(cbw, cw - w0);
    const int oy0 = blockIdx.y * th, ox0 = blockIdx.x * tw;
    const int ih = (th - 1) * S + K, iw = (tw - 1) * S + K, iy0 = oy0 * S - a.pad, ix0 = ox0 * S - a.pad;
    /* the window: ih x iw pixels of nw words, 4 words (16 bytes) a load */
    {
        const int cq = nw >> 2, n = ih * iw * cq;
        const uint4 *in = reinterpret_cast<const uint4 *>((const unsigned *)a.in + (long)b * a.IH * a.IW * a.IPW + w0);
        const int ipq = a.IPW >> 2;
        for (int i = threadIdx.x; i < n; i += DWT_T) {
            const int px = i / cq, q = i - px * cq, r = px / iw, col = px - r * iw;
            const int y = iy0 + r, x = ix0 + col;
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if ((unsigned)y < (unsigned)a.IH && (unsigned)x < (unsigned)a.IW) v = __ldg(in + ((long)y * a.IW + x) * ipq + q);
            reinterpret_cast<uint4 *>(dwsm + px * cbw)[q] = v;
        }
    }
    __syncthreads();
    const int wl = threadIdx.x % cbw, rest = threadIdx.x / cbw, col = rest % tw, rg = rest / tw;
    const int ox = ox0 + col, oyb = oy0 + rg * DWT_R;
    if (wl >= nw || rest >= tw * (th / DWT_R) || ox >= a.OW || oyb >= a.OH) return;
    const int w = w0 + wl, c0 = w * 4;
    /* this word's taps of the rows its DWT_R outputs read */
    unsigned v[NR][K];
#pragma unroll
    for (int j = 0; j < NR; j++)
#pragma unroll
        for (int kx = 0; kx < K; kx++) v[j][kx] = dwsm[((rg * DWT_R * S + j) * iw + col * S + kx) * cbw + wl];
    uint4 wt[G];
#pragma unroll
    for (int g = 0; g < G; g++) wt[g] = __ldg(reinterpret_cast<const uint4 *>(a.wdt) + g * cw + w);
    const int4 bq = __ldg(reinterpret_cast<const int4 *>(a.bq + c0));
    const float4 sp = __ldg(reinterpret_cast<const float4 *>(a.pos + c0));
    const float4 sn = __ldg(reinterpret_cast<const float4 *>(a.neg + c0));
#pragma unroll
    for (int r = 0; r < DWT_R; r++) {
        const int oy = oyb + r;
        if (oy >= a.OH) break;
        int s[4] = { 0, 0, 0, 0 };
#pragma unroll
        for (int g = 0; g < G; g++) {
            unsigned t4[4];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int tap = 4 * g + i;
                t4[i] = tap < T ? v[r * S + tap / K][tap % K] : 0u;
            }
            if (4 * g + 4 <= T) dw_taps4<false>(t4[0], t4[1], t4[2], t4[3], wt[g], s);
            else dw_tap1<false>(t4[0], wt[g], s);
        }
        const long p = ((long)b * a.OH + oy) * a.OW + ox;
        const unsigned word = __byte_perm(rq_pair<LUT>(s[0] + bq.x, sp.x, sn.x, s[1] + bq.y, sp.y, sn.y, a),
                                          rq_pair<LUT>(s[2] + bq.z, sp.z, sn.z, s[3] + bq.w, sp.w, sn.w, a), 0x5410);
        st_word(a, p, c0, word);
    }
}

/* Depthwise 3x3 down a column ("dw_col", DW tile 3): a thread takes one word (4 channels)
 * of one output column over DWC_R rows, its window sliding down: each output row loads
 * only the S new input rows' three words (issued before the current row is computed).
 * Each input row is transposed once, when it enters the window, into four words of one
 * channel's three taps (6 byte permutes), and an output is then three dp4a a channel
 * against that channel's three weights of a row, the bias the chain's starting value:
 * dw_dp4a transposes the whole window again for every output (20 permutes a word), and
 * the window's arithmetic had left this kernel bound by the integer ALU, not by memory
 * (H200, Nsight Compute: 77% ALU, 19% of DRAM bandwidth on 64 x 80 x 80 at batch 128).
 * Consecutive threads take consecutive words of a pixel and then the next column, so a
 * warp's loads and stores are contiguous.  Integer sums are exact in any order, and the
 * epilogue is dw_dp4a's (rq_pair, st_word): the same bytes.  int8 input and output, 3x3,
 * stride 1 or 2, an image's input at most 2^31 words (dw_col_fits). */
#define DWC_R 8

/* Three words (taps kx = 0, 1, 2 of 4 channels) into four words of one channel's three
 * taps (byte 3 is not zero: the weights' is). */
__device__ __forceinline__ void dw_row_t(unsigned a, unsigned b, unsigned c, unsigned *t)
{
    const unsigned lo = __byte_perm(a, b, 0x5140), hi = __byte_perm(a, b, 0x7362);   /* a0 b0 a1 b1, a2 b2 a3 b3 */
    t[0] = __byte_perm(lo, c, 0x0410);
    t[1] = __byte_perm(lo, c, 0x0532);
    t[2] = __byte_perm(hi, c, 0x0610);
    t[3] = __byte_perm(hi, c, 0x0732);
}

template <int S, bool LUT>
__global__ void __launch_bounds__(256, 3) conv_dw_col(ConvK a, int nseg)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    /* grid: x over (column, word) of an output row, y over (image, segment of DWC_R rows) */
    const int cw = a.F4 >> 2, t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= a.OW * cw) return;
    const int ox = t / cw, w = t - ox * cw;
    const int b = blockIdx.y / nseg, oy0 = (blockIdx.y - b * nseg) * DWC_R, c0 = 4 * w, rs = a.IW * a.IPW;
    const int x0 = ox * S - a.pad;
    /* the window's three columns, each a pointer (clamped into the image) */
    const unsigned *img = (const unsigned *)a.in + (long)b * a.IH * rs + w;
    const unsigned *colp[3];
    bool cok[3];
#pragma unroll
    for (int kx = 0; kx < 3; kx++) {
        colp[kx] = img + min(max(x0 + kx, 0), a.IW - 1) * a.IPW;
        cok[kx] = (unsigned)(x0 + kx) < (unsigned)a.IW;
    }
    /* input row iy's three words, zero outside the image (loaded from a valid address) */
    auto load = [&](int iy, unsigned *v) {
        const bool rok = (unsigned)iy < (unsigned)a.IH;
        const int ro = min(max(iy, 0), a.IH - 1) * rs;
#pragma unroll
        for (int kx = 0; kx < 3; kx++) {
            const unsigned q = __ldg(colp[kx] + ro);
            v[kx] = rok && cok[kx] ? q : 0u;
        }
    };
    /* the weights of each row of taps, per channel: [tap group][c4] words hold taps
     * 4g..4g+3, so row ky's taps 3ky..3ky+2 come from one or two groups; byte 3 zero */
    const uint4 *wtp = reinterpret_cast<const uint4 *>(a.wdt) + w;
    const uint4 g0 = __ldg(wtp), g1 = __ldg(wtp + cw), g2 = __ldg(wtp + 2 * cw);
    const unsigned G0[4] = { g0.x, g0.y, g0.z, g0.w }, G1[4] = { g1.x, g1.y, g1.z, g1.w },
                   G2[4] = { g2.x, g2.y, g2.z, g2.w };
    unsigned wr[3][4];
#pragma unroll
    for (int c = 0; c < 4; c++) {
        wr[0][c] = G0[c] & 0x00FFFFFFu;
        wr[1][c] = __byte_perm(G0[c], G1[c], 0x7543) & 0x00FFFFFFu;
        wr[2][c] = __byte_perm(G1[c], G2[c], 0x7432) & 0x00FFFFFFu;
    }
    const int4 bq = __ldg(reinterpret_cast<const int4 *>(a.bq + c0));
    const float4 sp = __ldg(reinterpret_cast<const float4 *>(a.pos + c0));
    const float4 sn = __ldg(reinterpret_cast<const float4 *>(a.neg + c0));
    const int bqa[4] = { bq.x, bq.y, bq.z, bq.w };
    const int iy0 = oy0 * S - a.pad;
    unsigned tw[3][4];                    /* [ky][channel]: the window, transposed */
    {
        unsigned v[3][3];
        load(iy0, v[0]);
        load(iy0 + 1, v[1]);
        load(iy0 + 2, v[2]);
#pragma unroll
        for (int ky = 0; ky < 3; ky++) dw_row_t(v[ky][0], v[ky][1], v[ky][2], tw[ky]);
    }
    /* Every thread runs all DWC_R rows (a segment cut by the map's last row loads zeros
     * there and stores nothing), so the window slides by renaming registers in the
     * unrolled loop, not by moves under a test of each row. */
    const int rows = a.OH - oy0;
    long p = ((long)b * a.OH + oy0) * a.OW + ox;
#pragma unroll
    for (int r = 0; r < DWC_R; r++) {
        unsigned n0[3], n1[3];            /* the next output row's new input rows, loaded now */
        if (r + 1 < DWC_R) {
            load(iy0 + S * (r + 1) + 3 - S, n0);
            if (S == 2) load(iy0 + 2 * r + 4, n1);
        }
        int s4[4];
#pragma unroll
        for (int c = 0; c < 4; c++) {
            int acc = dot4<false>((int)tw[0][c], (int)wr[0][c], bqa[c]);
            acc = dot4<false>((int)tw[1][c], (int)wr[1][c], acc);
            s4[c] = dot4<false>((int)tw[2][c], (int)wr[2][c], acc);
        }
        if (r < rows) {
            const unsigned word = __byte_perm(rq_pair<LUT>(s4[0], sp.x, sn.x, s4[1], sp.y, sn.y, a),
                                              rq_pair<LUT>(s4[2], sp.z, sn.z, s4[3], sp.w, sn.w, a), 0x5410);
            st_word(a, p, c0, word);
        }
        p += a.OW;
        if (r + 1 < DWC_R) {
#pragma unroll
            for (int c = 0; c < 4; c++) {
                if (S == 1) {
                    tw[0][c] = tw[1][c];
                    tw[1][c] = tw[2][c];
                } else {
                    tw[0][c] = tw[2][c];
                }
            }
            if (S == 1) {
                dw_row_t(n0[0], n0[1], n0[2], tw[2]);
            } else {
                dw_row_t(n0[0], n0[1], n0[2], tw[1]);
                dw_row_t(n1[0], n1[1], n1[2], tw[2]);
            }
        }
    }
}

/* Depthwise, any k and stride, and the float-output case. */
__global__ void conv_dw(ConvK a)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    int cw = a.F4 >> 2;
    if (t >= (long)a.M * cw) return;
    int p = (int)(t / cw), c0 = (int)(t - (long)p * cw) * 4;
    int ohw = a.OH * a.OW, b = p / ohw, rem = p - b * ohw, oy = rem / a.OW, ox = rem - oy * a.OW;
    int s[4] = { 0, 0, 0, 0 };
    const unsigned *in = (const unsigned *)a.in;
    int kk = a.k * a.k;
    for (int ky = 0; ky < a.k; ky++) {
        int y = oy * a.s + ky - a.pad;
        if (y < 0 || y >= a.IH) continue;
        for (int kx = 0; kx < a.k; kx++) {
            int x = ox * a.s + kx - a.pad;
            if (x < 0 || x >= a.IW) continue;
            unsigned v = in[(((long)b * a.IH + y) * a.IW + x) * a.IPW + (c0 >> 2)];
#pragma unroll
            for (int j = 0; j < 4; j++) {
                int c = c0 + j;
                if (c >= a.F) break;
                int xv = a.u8 ? (int)(uint8_t)(v >> (8 * j)) : (int)(int8_t)(v >> (8 * j));
                s[j] += a.wq[(long)c * kk + ky * a.k + kx] * xv;
            }
        }
    }
    if (a.fout) {
        for (int j = 0; j < 4; j++) {
            int c = c0 + j;
            if (c < a.F) ((float *)a.out)[((long)b * a.F + c) * ohw + rem] = deq_out(s[j] + a.bq[c], c, a);
        }
    } else {
        unsigned word = 0;
        for (int j = 0; j < 4; j++) {
            int c = c0 + j;
            int8_t v = c < a.F ? rq_out(s[j] + a.bq[c], c, a) : 0;
            word |= (unsigned)(uint8_t)v << (8 * j);
        }
        st_word(a, p, c0, word);
    }
}

/* Any groups: thread = one output value (pixel, filter); filters padded to F4 for int8 outputs. */
__global__ void conv_direct(ConvK a)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    int nf = a.fout ? a.F : a.F4;
    if (t >= (long)a.M * nf) return;
    int p = (int)(t / nf), o = (int)(t - (long)p * nf);
    int ohw = a.OH * a.OW, b = p / ohw, rem = p - b * ohw, oy = rem / a.OW, ox = rem - oy * a.OW;
    if (o >= a.F) {                /* padding channel of an int8 output */
        ((int8_t *)a.out)[(long)p * a.OPW * 4 + o] = 0;
        return;
    }
    int cg = a.C / a.groups, g = o / (a.F / a.groups);
    int32_t s = 0;
    const int8_t *w = a.wq + (long)o * cg * a.k * a.k;
    for (int ci = 0; ci < cg; ci++)
        for (int ky = 0; ky < a.k; ky++) {
            int y = oy * a.s + ky - a.pad;
            if (y < 0 || y >= a.IH) continue;
            for (int kx = 0; kx < a.k; kx++) {
                int x = ox * a.s + kx - a.pad;
                if (x < 0 || x >= a.IW) continue;
                long i = (((long)b * a.IH + y) * a.IW + x) * a.IPW * 4 + g * cg + ci;
                int xv = a.u8 ? (int)((const uint8_t *)a.in)[i] : (int)((const int8_t *)a.in)[i];
                s += w[(ci * a.k + ky) * a.k + kx] * xv;
            }
        }
    if (a.fout) ((float *)a.out)[((long)b * a.F + o) * ohw + rem] = deq_out(s + a.bq[o], o, a);
    else {
        int v = rq_out(s + a.bq[o], o, a);
        if (a.res) {
            int rv = a.res[(long)p * a.F4 + o];
            v = a.res_first ? yq_add_requant(rv, v, a.ssa, a.ssb, a.ssneg, a.sqmin, a.sqmax)
                            : yq_add_requant(v, rv, a.ssa, a.ssb, a.ssneg, a.sqmin, a.sqmax);
        }
        ((int8_t *)a.out)[(long)p * a.OPW * 4 + o] = (int8_t)v;
    }
}

/* FP32 direct conv (float_op layers): out NCHW float, input of any type.  The float
 * layers' exact numerics (kernels/cpu_fp32.c yq_f32_conv_exact): one fmaf chain per output
 * over (ci, ky, kx) from +0, + bias, yq_act_x; so is conv_f32_tiled. */
__global__ void conv_f32(ConvK a)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    int ohw = a.OH * a.OW;
    if (t >= (long)a.M * a.F) return;
    int pix = (int)(t % ohw);
    long bo = t / ohw;
    int o = (int)(bo % a.F), b = (int)(bo / a.F);
    int oy = pix / a.OW, ox = pix - oy * a.OW;
    int cg = a.C / a.groups, g = o / (a.F / a.groups);
    const float *w = a.wf + (long)o * cg * a.k * a.k;
    float s = 0.f;
    for (int ci = 0; ci < cg; ci++)
        for (int ky = 0; ky < a.k; ky++) {
            int y = oy * a.s + ky - a.pad;
            if (y < 0 || y >= a.IH) continue;
            for (int kx = 0; kx < a.k; kx++) {
                int x = ox * a.s + kx - a.pad;
                if (x < 0 || x >= a.IW) continue;
                s = fmaf(w[(ci * a.k + ky) * a.k + kx], yq_ld_f(a.tin, b, g * cg + ci, y, x), s);
            }
        }
    ((float *)a.out)[t] = yq_act_x(__fadd_rn(s, a.bf[o]), a.act);
}

/* FP32 conv, groups == 1, as an implicit GEMM: a 64-pixel x 64-filter tile per
 * 256-thread block, 4 x 4 outputs per thread, K (= c x k x k, in the weights' order)
 * in chunks of 16 staged in shared memory.  Each output is one fmaf chain over K in
 * increasing order, as conv_f32 (padding positions add fmaf(0, w, s) = s); the head
 * convs a qconfig keeps in float run here, 20-50x faster than one thread per output. */
#define FT 64
#define FK 16

__global__ void __launch_bounds__(256) conv_f32_tiled(ConvK a)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    __shared__ float As[FK][FT + 1];
    __shared__ float Bs[FK][FT + 1];
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int m0 = blockIdx.x * FT, n0 = blockIdx.y * FT;
    const int ohw = a.OH * a.OW, kk2 = a.k * a.k, K = a.C * kk2;
    /* loader: pixel / filter lr, K rows lk + 4 r */
    const int lr = tid & 63, lk = tid >> 6;
    const int p = m0 + lr;
    const bool pv = p < a.M;
    int pb = 0, py = 0, px = 0;
    if (pv) yq_pixel_origin(a, p, &pb, &py, &px);
    const int f = n0 + lr;
    const bool fv = f < a.F;
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = 0.f;
    for (int k0 = 0; k0 < K; k0 += FK) {  /* never split: the chain runs over all of K */
#pragma unroll
        for (int r = 0; r < 4; r++) {
            int kr = lk + 4 * r, kg = k0 + kr;
            float v = 0.f, w = 0.f;
            if (kg < K) {
                int ci = kg / kk2, t = kg - ci * kk2, ky = t / a.k, kx = t - ky * a.k;
                int y = py + ky, x = px + kx;
                if (pv && y >= 0 && y < a.IH && x >= 0 && x < a.IW) v = yq_ld_f(a.tin, pb, ci, y, x);
                if (fv) w = __ldg(a.wf + (long)f * K + kg);
            }
            As[kr][lr] = v;
            Bs[kr][lr] = w;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < FK; kk++) {
            float av[4], bv[4];
#pragma unroll
            for (int i = 0; i < 4; i++) av[i] = As[kk][tx + 16 * i];
#pragma unroll
            for (int j = 0; j < 4; j++) bv[j] = Bs[kk][ty + 16 * j];
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[i][j] = fmaf(bv[j], av[i], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        int pp = m0 + tx + 16 * i;
        if (pp >= a.M) continue;
        int b = pp / ohw, pix = pp - b * ohw;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            int o = n0 + ty + 16 * j;
            if (o >= a.F) continue;
            long idx = ((long)b * a.F + o) * ohw + pix;
            ((float *)a.out)[idx] = yq_act_x(__fadd_rn(acc[i][j], a.bf[o]), a.act);
        }
    }
}

/* The same chains on a 128-pixel x 128-filter tile (groups == 1): 256 threads, 8 x 8
 * outputs each (pixels tx*4 + {0..3} and 64 + tx*4 + {0..3}, filters likewise by ty), K in
 * chunks of 8 through shared memory, the next chunk fetched into registers while this one
 * is used.  Each output is still one fmaf chain over K in increasing order: the bytes of
 * conv_f32_tiled and of the CPU, at the FP32 rate of a register-blocked GEMM on wide
 * layers (the head convs of YOLOv3). */
#define FB 128
#define FBK 8

__global__ void __launch_bounds__(256) conv_f32_big(ConvK a)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    __shared__ __align__(16) float As[2][FBK][FB];
    __shared__ __align__(16) float Bs[2][FBK][FB];
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int m0 = blockIdx.x * FB, n0 = blockIdx.y * FB;
    const int kk2 = a.k * a.k, K = a.C * kk2;
    /* loaders: A, pixel lp of the tile and K rows lka + 2 r; B, filter lf and K rows lkb + r (r < 4) */
    const int lp = tid & 127, lka = tid >> 7;          /* K rows lka, lka + 2, +4, +6 */
    const int p = m0 + lp;
    const bool pv = p < a.M;
    int pb = 0, py = 0, px = 0;
    if (pv) yq_pixel_origin(a, p, &pb, &py, &px);
    const int lf = tid >> 1, lkb = (tid & 1) * 4;      /* filter lf, K rows lkb .. lkb + 3 */
    const int f = n0 + lf;
    const bool fv = f < a.F;
    const float *wrow = a.wf + (long)(fv ? f : 0) * K;
    float ra[4], rb[4];
    auto fetch = [&](int k0) {
#pragma unroll
        for (int r = 0; r < 4; r++) {
            int kg = k0 + lka + 2 * r;
            float v = 0.f;
            if (pv && kg < K) {
                int ci = kg / kk2, t = kg - ci * kk2, ky = t / a.k, kx = t - ky * a.k;
                int y = py + ky, x = px + kx;
                if (y >= 0 && y < a.IH && x >= 0 && x < a.IW) v = yq_ld_f(a.tin, pb, ci, y, x);
            }
            ra[r] = v;
            int kb = k0 + lkb + r;
            rb[r] = fv && kb < K ? __ldg(wrow + kb) : 0.f;
        }
    };
    auto stash = [&](int buf) {
#pragma unroll
        for (int r = 0; r < 4; r++) {
            As[buf][lka + 2 * r][lp] = ra[r];
            Bs[buf][lkb + r][lf] = rb[r];
        }
    };
    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = 0.f;
    fetch(0);
    stash(0);
    __syncthreads();
    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += FBK) {
        const bool more = k0 + FBK < K;
        if (more) fetch(k0 + FBK);
#pragma unroll
        for (int kk = 0; kk < FBK; kk++) {
            float av[8], bv[8];
            float4 a0 = *(const float4 *)&As[buf][kk][tx * 4], a1 = *(const float4 *)&As[buf][kk][64 + tx * 4];
            float4 b0 = *(const float4 *)&Bs[buf][kk][ty * 4], b1 = *(const float4 *)&Bs[buf][kk][64 + ty * 4];
            av[0] = a0.x; av[1] = a0.y; av[2] = a0.z; av[3] = a0.w; av[4] = a1.x; av[5] = a1.y; av[6] = a1.z; av[7] = a1.w;
            bv[0] = b0.x; bv[1] = b0.y; bv[2] = b0.z; bv[3] = b0.w; bv[4] = b1.x; bv[5] = b1.y; bv[6] = b1.z; bv[7] = b1.w;
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) acc[i][j] = fmaf(bv[j], av[i], acc[i][j]);
        }
        if (more) {
            stash(buf ^ 1);        /* the other buffer: last read before the previous barrier */
            __syncthreads();
            buf ^= 1;
        }
    }
    const int ohw = a.OH * a.OW;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        int pp = m0 + (i < 4 ? tx * 4 + i : 64 + tx * 4 + i - 4);
        if (pp >= a.M) continue;
        int b = pp / ohw, pix = pp - b * ohw;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            int o = n0 + (j < 4 ? ty * 4 + j : 64 + ty * 4 + j - 4);
            if (o >= a.F) continue;
            ((float *)a.out)[((long)b * a.F + o) * ohw + pix] = yq_act_x(__fadd_rn(acc[i][j], a.bf[o]), a.act);
        }
    }
}

/* Element loads of the exact FP32 kernels below, the input's type a template parameter
 * (yq_ld_f without its run-time test): IT 0, FP32 NCHW; 1, int8 NHWC; 2, uint8 NHWC, the
 * int8 types dequantized as yq_dequantize does (one float multiply). */
#define F32_IN_F 0
#define F32_IN_S8 1
#define F32_IN_U8 2

template <int IT>
__device__ __forceinline__ float f32_in(const yq_dtensor &t, long i)
{
    if (IT == F32_IN_F) return __ldg((const float *)t.p + i);
    const int q = IT == F32_IN_U8 ? (int)__ldg((const uint8_t *)t.p + i) : (int)__ldg((const int8_t *)t.p + i);
    return __fmul_rn((float)q, t.scale);
}

/* FP32 conv, groups == 1, one output pixel a thread and 16 filters at a time ("f32_px"):
 * the narrow float layers (yolo-fastest's 3 -> 16 image conv and its 16 -> 16 1x1s at
 * 160 x 160), on which a 64- or 128-filter tile computes 4-8x more than it keeps.  The
 * block stages a 16-filter slice of the weights in shared memory as [K][16] (every thread
 * reads the same 64 bytes: a broadcast) and each thread runs its 16 chains over K in
 * increasing order (ci, ky, kx), a padding tap an fmaf with 0 as the CPU's im2col writes
 * it, + bias, yq_act_x: the CPU's bytes. */
#define PXF_T 128
#define PXF_FC 16
#define PXF_KMAX 512                     /* K x 16 floats of shared memory: 32 KB at most */

/* One step of f32_px's chains: the 16 outputs' fmaf with input value v and the weights of
 * K index kq (Ws: [K][16]). */
__device__ __forceinline__ void pxf_step(float *acc, const float *Ws, int kq, float v)
{
    const float4 *w4 = reinterpret_cast<const float4 *>(Ws + kq * PXF_FC);
#pragma unroll
    for (int q = 0; q < PXF_FC / 4; q++) {
        const float4 w = w4[q];
        acc[4 * q + 0] = fmaf(w.x, v, acc[4 * q + 0]);
        acc[4 * q + 1] = fmaf(w.y, v, acc[4 * q + 1]);
        acc[4 * q + 2] = fmaf(w.z, v, acc[4 * q + 2]);
        acc[4 * q + 3] = fmaf(w.w, v, acc[4 * q + 3]);
    }
}

/* KS: the window, 1 or 3 (its taps unrolled: a channel's k x k loads issued together, then
 * its steps), or 0 (any k, one tap at a time).  The weights' slice is dynamic shared
 * memory of K x 16 floats, so that small K leaves room for many blocks. */
template <int IT, int KS>
__global__ void __launch_bounds__(PXF_T) conv_f32_px(ConvK a)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    extern __shared__ __align__(16) float Ws[];   /* [K][16] */
    const int k = KS ? KS : a.k, kk2 = k * k, K = a.C * kk2, ohw = a.OH * a.OW;
    const int p = blockIdx.x * PXF_T + threadIdx.x;
    const bool live = p < a.M;
    int b = 0, py = 0, px = 0;
    if (live) yq_pixel_origin(a, p, &b, &py, &px);
    const int pix = p - b * ohw;
    const long ps = IT == F32_IN_F ? 0 : yq_ps(a.tin);
    /* element (ci, y, x) of this pixel's image, or the CPU's zero outside it */
    auto ld = [&](int ci, int y, int x) -> float {
        const bool ok = live && (unsigned)y < (unsigned)a.IH && (unsigned)x < (unsigned)a.IW;
        const long i = IT == F32_IN_F ? (((long)b * a.C + ci) * a.IH + y) * a.IW + x : (((long)b * a.IH + y) * a.IW + x) * ps + ci;
        return ok ? f32_in<IT>(a.tin, i) : 0.f;
    };
    for (int f0 = 0; f0 < a.F; f0 += PXF_FC) {
        __syncthreads();                 /* the previous slice's readers are done */
        for (int i = threadIdx.x; i < K * PXF_FC; i += PXF_T) {
            const int kq = i / PXF_FC, j = i - kq * PXF_FC, f = f0 + j;
            Ws[i] = f < a.F ? __ldg(a.wf + (long)f * K + kq) : 0.f;
        }
        __syncthreads();
        float acc[PXF_FC];
#pragma unroll
        for (int j = 0; j < PXF_FC; j++) acc[j] = 0.f;
        /* the chains over K = (ci, ky, kx) in increasing order, as the CPU's */
        if (KS == 1) {
            int ci = 0;
            for (; ci + 8 <= a.C; ci += 8) {
                float v[8];
#pragma unroll
                for (int u = 0; u < 8; u++) v[u] = ld(ci + u, py, px);
#pragma unroll
                for (int u = 0; u < 8; u++) pxf_step(acc, Ws, ci + u, v[u]);
            }
            for (; ci < a.C; ci++) pxf_step(acc, Ws, ci, ld(ci, py, px));
        } else if (KS == 3) {
            for (int ci = 0; ci < a.C; ci++) {
                float v[9];
#pragma unroll
                for (int t = 0; t < 9; t++) v[t] = ld(ci, py + t / 3, px + t % 3);
#pragma unroll
                for (int t = 0; t < 9; t++) pxf_step(acc, Ws, ci * 9 + t, v[t]);
            }
        } else {
            for (int ci = 0; ci < a.C; ci++)
                for (int ky = 0; ky < k; ky++)
                    for (int kx = 0; kx < k; kx++) pxf_step(acc, Ws, (ci * k + ky) * k + kx, ld(ci, py + ky, px + kx));
        }
        if (live) {
            float *o = (float *)a.out + ((long)b * a.F + f0) * ohw + pix;
#pragma unroll
            for (int j = 0; j < PXF_FC; j++)
                if (f0 + j < a.F) o[(long)j * ohw] = yq_act_x(__fadd_rn(acc[j], __ldg(a.bf + f0 + j)), a.act);
        }
    }
}

/* FP32 depthwise conv (groups == channels == filters), k x k of 3 or 5, stride 1 or 2
 * ("f32_dw"): DWF_NX outputs along a row a thread, each a chain over the k x k taps in order
 * (ky, kx), a padding tap an fmaf with 0, + bias, yq_act_x: the CPU's bytes.  An FP32 (NCHW) input is read a plane at a time
 * (consecutive threads, consecutive pixels of one channel); an int8 (NHWC) one a pixel at a
 * time (consecutive threads, consecutive channels of one pixel: each tap of a warp one
 * 32-byte run), with the weights transposed to [tap][F] (a.wdf) so that their loads are
 * contiguous too. */
#define DWF_NX 4                          /* f32_dw: outputs a thread, along a row */

template <int K, int S, int IT>
__global__ void __launch_bounds__(256) conv_f32_dw(ConvK a)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    /* 32-bit indices (f32_dw_fits: every index below 2^31); DWF_NX outputs along x a
     * thread, sharing the loads of their overlapping windows */
    constexpr int NC = (DWF_NX - 1) * S + K;   /* input columns of the thread's windows */
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int xq = (a.OW + DWF_NX - 1) / DWF_NX;
    if (t >= a.M / a.OW * xq * a.F) return;
    int c, q, oy, b;
    if (IT == F32_IN_F) {                /* t = (b, c, oy, q): a warp along one channel's rows */
        q = t % xq;
        const int r = t / xq;
        oy = r % a.OH;
        const int bc = r / a.OH;
        c = bc % a.F;
        b = bc / a.F;
    } else {                             /* t = (b, oy, q, c): a warp across a pixel's channels */
        c = t % a.F;
        const int r = t / a.F;
        q = r % xq;
        const int r2 = r / xq;
        oy = r2 % a.OH;
        b = r2 / a.OH;
    }
    const int ox0 = q * DWF_NX, y0 = oy * S - a.pad, x0 = ox0 * S - a.pad;
    const int ps = IT == F32_IN_F ? 0 : (int)yq_ps(a.tin);
    const int base = IT == F32_IN_F ? (b * a.F + c) * a.IH * a.IW : b * a.IH * a.IW * ps + c;
    float s[DWF_NX];
#pragma unroll
    for (int i = 0; i < DWF_NX; i++) s[i] = 0.f;
#pragma unroll
    for (int ky = 0; ky < K; ky++) {
        const int y = y0 + ky;
        const bool yok = (unsigned)y < (unsigned)a.IH;
        float v[NC];
#pragma unroll
        for (int j = 0; j < NC; j++) {
            const int x = x0 + j;
            const bool ok = yok && (unsigned)x < (unsigned)a.IW;
            const int i = base + (IT == F32_IN_F ? y * a.IW + x : (y * a.IW + x) * ps);
            v[j] = ok ? f32_in<IT>(a.tin, i) : 0.f;   /* a padding tap: the CPU's zero */
        }
#pragma unroll
        for (int kx = 0; kx < K; kx++) {
            const int tap = ky * K + kx;
            const float w = IT == F32_IN_F ? __ldg(a.wf + c * (K * K) + tap) : __ldg(a.wdf + tap * a.F + c);
#pragma unroll
            for (int i = 0; i < DWF_NX; i++) s[i] = fmaf(w, v[i * S + kx], s[i]);   /* taps in (ky, kx) order */
        }
    }
    const float bias = __ldg(a.bf + c);
    float *o = (float *)a.out + ((long)(b * a.F + c) * a.OH + oy) * a.OW + ox0;
#pragma unroll
    for (int i = 0; i < DWF_NX; i++)
        if (ox0 + i < a.OW) o[i] = yq_act_x(__fadd_rn(s[i], bias), a.act);
}

/* Split K of the FP16 family (kernels/cuda_f16.cu): the parts added in split order
 * (deterministic), then the bias and the activation. */
__global__ void f32_reduce(ConvK a, const float *ws, int n_split)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x, n = (long)a.M * a.F;
    if (t >= n) return;
    int o = (int)(t / (a.OH * a.OW) % a.F);
    float s = ws[t];
    for (int z = 1; z < n_split; z++) s = __fadd_rn(s, ws[(long)z * n + t]);
    ((float *)a.out)[t] = yq_act_f(__fadd_rn(s, a.bf[o]), a.act);
}


/* Small K (the first conv: 3 channels x 3 x 3 = 9 words): one thread per output pixel
 * computes every filter.  Its K input words are gathered once into registers; the
 * weights, [F][K4] words, sit in shared memory and are read by all threads at the
 * same address (broadcast).  Filters in groups of 4: one output word per group. */
#define PX_KMAX 36
#define PX_SROW 17                        /* a staged pixel: 16 output words and one of padding */
#define PX_STAGE_BYTES (PX_T * PX_SROW * 4)
#define PX_T 128

template <bool U8, bool LUT = false>
__global__ void __launch_bounds__(PX_T) conv_dp4a_px(ConvK a)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    extern __shared__ int wsm[];                 /* [F][K4] weights, then the staged outputs */
    const int nw = a.F * a.K4;
    for (int i = threadIdx.x; i < nw; i += PX_T) wsm[i] = a.w32[i];
    unsigned *staged = (unsigned *)wsm + nw;     /* [PX_T][PX_SROW] words */
    __syncthreads();
    const int p0 = blockIdx.x * PX_T, p = p0 + threadIdx.x, npx = min(PX_T, a.M - p0);
    const bool live = p < a.M;
    const int ohw = a.OH * a.OW, b = p / ohw, pix = p - b * ohw, oy = pix / a.OW, ox = pix - oy * a.OW;
    const int *in = (const int *)a.in;
    int xw[PX_KMAX];
#pragma unroll
    for (int w = 0; w < PX_KMAX; w++) {
        xw[w] = 0;
        if (live && w < a.K4) {
            int tap = w / a.C4w, c4 = w - tap * a.C4w, ky = tap / a.k, kx = tap - ky * a.k;
            int y = oy * a.s - a.pad + ky, x = ox * a.s - a.pad + kx;
            if ((unsigned)y < (unsigned)a.IH && (unsigned)x < (unsigned)a.IW)
                xw[w] = __ldg(in + (((long)b * a.IH + y) * a.IW + x) * a.IPW + c4);
        }
    }
    /* int8 outputs 64 filters at a time: staged, then the block's pixels stored together
     * (a pixel a thread strided every word store by the output pixel's bytes) */
    for (int c0 = 0; c0 < a.F4; c0 += 4 * (PX_SROW - 1)) {
        const int cw = min(PX_SROW - 1, (a.F4 - c0) >> 2);
        for (int k = 0; k < cw && live; k++) {
            const int o0 = c0 + 4 * k;
            int acc[4] = { 0, 0, 0, 0 };
#pragma unroll
            for (int j = 0; j < 4; j++) {
                if (o0 + j >= a.F) break;
                const int *wr = wsm + (o0 + j) * a.K4;
#pragma unroll
                for (int w = 0; w < PX_KMAX; w++)
                    if (w < a.K4) acc[j] = dot4<U8>(xw[w], wr[w], acc[j]);
            }
            if (a.fout) {
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    int o = o0 + j;
                    if (o < a.F) ((float *)a.out)[((long)b * a.F + o) * ohw + pix] = deq_out(acc[j] + a.bq[o], o, a);
                }
            } else {
                unsigned word = 0;
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    int o = o0 + j;
                    int8_t v = o < a.F ? rq_out_l<LUT>(acc[j] + a.bq[o], o, a) : 0;
                    word |= (unsigned)(uint8_t)v << (8 * j);
                }
                staged[threadIdx.x * PX_SROW + k] = word;
            }
        }
        if (a.fout) continue;                    /* (uniform: float outputs are NCHW, already coalesced) */
        __syncthreads();
        for (int u = threadIdx.x; u < npx * cw; u += PX_T) {
            const int px = u / cw, k = u - px * cw;
            st_word(a, p0 + px, c0 + 4 * k, staged[px * PX_SROW + k]);
        }
        __syncthreads();
    }
}

/* Small convs (dp4a_const): the image's 3x3 (at most 4 channels: one word per pixel) and
 * 1x1 convs over C4W = 1, 2 or 4 words (4, 8 or 16 channels); NF >= F4 filters, at most
 * YQ_CONST_MAXF; int8 output.  One thread per output pixel, its K x K x C4W input words
 * in registers, every weight and epilogue parameter a constant-memory operand (the
 * kernel's parameter fw), fully unrolled; the block's outputs staged in shared memory and
 * stored together, as 16-byte vectors where the tensor allows.  These convs move far more
 * bytes than they compute. */
template <bool U8, int K, int C4W, int NF>
__global__ void __launch_bounds__(128) conv_const(ConvK a, const yq_const_w fw)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    constexpr int KW = K * K * C4W, NW = NF / 4, SROW = NW + 1;   /* a staged pixel: odd words */
    __shared__ unsigned staged[128 * SROW];
    const int p0 = blockIdx.x * 128, p = p0 + threadIdx.x;
    if (p < a.M) {
        const int ohw = a.OH * a.OW, b = p / ohw, pix = p - b * ohw, oy = pix / a.OW, ox = pix - oy * a.OW;
        const int *in = (const int *)a.in;
        int xw[KW];
#pragma unroll
        for (int t = 0; t < K * K; t++) {
            int y = oy * a.s - a.pad + t / K, x = ox * a.s - a.pad + t % K;
            bool ok = (unsigned)y < (unsigned)a.IH && (unsigned)x < (unsigned)a.IW;
            const int *px = in + (((long)b * a.IH + y) * a.IW + x) * a.IPW;
            if (C4W == 4 && ok && !(a.IPW & 3) && !((uintptr_t)a.in & 15)) {
                int4 v = __ldg(reinterpret_cast<const int4 *>(px));
                xw[t * C4W] = v.x; xw[t * C4W + 1] = v.y; xw[t * C4W + 2] = v.z; xw[t * C4W + 3] = v.w;
            } else {
#pragma unroll
                for (int c = 0; c < C4W; c++) xw[t * C4W + c] = ok ? __ldg(px + c) : 0;
            }
        }
        /* every filter slot computed: past F the weights, bias and scales are zero, and
         * so is the result (no per-output branch) */
#pragma unroll
        for (int o4 = 0; o4 < NW; o4++) {
            unsigned word = 0;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int o = o4 * 4 + j;
                int acc = 0;
#pragma unroll
                for (int t = 0; t < KW; t++) acc = dot4<U8>(xw[t], fw.w[o * KW + t], acc);
                word |= (yq_requant_act_lo8(acc + fw.bq[o], fw.pos[o], fw.neg[o], a.qmin, a.qmax) & 0xffu) << (8 * j);
            }
            staged[threadIdx.x * SROW + o4] = word;
        }
    }
    __syncthreads();
    /* the block's pixels leave together: consecutive threads, consecutive output bytes
     * (one pixel a thread strided the stores by the pixel's bytes: 48 bytes apart for 48
     * filters, eight times the sectors) */
    const int npx = min(128, a.M - p0), fw4 = a.F4 >> 2;
    if (a.F4 % 16 == 0 && a.OPW % 4 == 0 && !((uintptr_t)a.out & 15) && (!a.res || !((uintptr_t)a.res & 15))) {
        const int per = fw4 >> 2;                  /* 16-byte units a pixel */
        for (int u = threadIdx.x; u < npx * per; u += 128) {
            const int px = u / per, q = u - px * per;
            const unsigned *w = staged + px * SROW + 4 * q;
            const uint4 v = make_uint4(w[0], w[1], w[2], w[3]);
            if (a.res) st_piece<true>(a, p0 + px, 16 * q, v, res_piece(a, p0 + px, 16 * q));
            else st_piece<false>(a, p0 + px, 16 * q, v, v);
        }
    } else {
        for (int u = threadIdx.x; u < npx * fw4; u += 128) {
            const int px = u / fw4, o4 = u - px * fw4;
            st_word(a, p0 + px, o4 * 4, staged[px * SROW + o4]);
        }
    }
}

#endif
