/* Float layers on FP16 tensor cores (sm_80 and newer): the convs a qconfig keeps in
 * float (q->float_op), groups == 1.
 *
 * Implicit GEMM as conv_f32_tiled (kernels/cuda_conv_kernels.cuh): M = batch x output pixels,
 * N = filters, K = c x k x k in the weights' order.  A block computes a 64 x 64 tile,
 * its 8 warps 16 pixels x 32 filters each; K advances in chunks of 32 staged in shared
 * memory as FP16 (rows padded by 16 bytes: the fragment loads are conflict-free), and
 * mma.sync.m16n8k16.f32.f16.f16.f32 accumulates in FP32.
 *
 * Numerics: the weights are rounded to FP16 once, at upload; nothing else is rounded
 * below FP32.  An int8 or uint8 input goes in as its integer codes (exact in FP16) and
 * the input scale multiplies the FP32 sum in the epilogue.  An FP32 input (a float layer
 * fed by another) is staged as two FP16 parts, hi + lo (about 22 bits), each multiplied
 * by the weights (two mma per step instead of one); values past FP16's range (65504)
 * would become infinities, which YOLO activations do not reach.  Bias and activation are
 * the FP32 path's (yq_act_f).  Not bit-exact with the CPU's FP32 conv: tests compare by
 * relative error (tests/test_cuda.c, F16_BOUND).
 *
 * Split-K (split_k > 1): each split writes its scaled FP32 partial sums to scratch and
 * the FP32 path's reduce adds them in split order, then bias and activation. */
#include <cuda_fp16.h>
#include "kernels/cuda_conv.cuh"

#define HM YQ_F16_TILE
#define HN YQ_F16_TILE
#define HK YQ_F16_K
#define HKP (HK + 8)

/* Input element (b, c, y, x): FP32 NCHW (IN 0), or the int8 (1) / uint8 (2) code of an
 * NHWC4 tensor with a pixel stride of IPW words. */
template <int IN>
__device__ __forceinline__ float ld_in(const ConvK &a, int b, int c, int y, int x)
{
    if (IN == 0) return __ldg((const float *)a.in + (((long)b * a.C + c) * a.IH + y) * a.IW + x);
    long i = (((long)b * a.IH + y) * a.IW + x) * (long)a.IPW * 4 + c;
    return IN == 1 ? (float)__ldg((const signed char *)a.in + i) : (float)__ldg((const unsigned char *)a.in + i);
}

__device__ __forceinline__ void mma_f16(float *c, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0,
                                        unsigned b1)
{
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
    __trap();   /* code for an older GPU run on a newer one: fail, never a silent zero */
#endif
}

/* An input value as FP16: an int8 or uint8 code is exact (lo unused); an FP32 value is
 * hi + lo, hi its FP16 rounding and lo that of the rest, about 22 bits together. */
template <int IN>
__device__ __forceinline__ void split(float v, __half *hi, __half *lo)
{
    *hi = __float2half_rn(v);
    if (IN == 0) *lo = __float2half_rn(v - __half2float(*hi));
}

/* K1: a 1 x 1 conv (K is the channels: no tap arithmetic). */
template <int IN, bool K1>
__global__ void __launch_bounds__(256) conv_f16(ConvK a, float *ws, int n_split)
{
    __shared__ __align__(16) __half As[HM][HKP];
    __shared__ __align__(16) __half Al[IN == 0 ? HM : 1][HKP];   /* an FP32 input's low parts */
    __shared__ __align__(16) __half Bs[HN][HKP];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, gid = lane >> 2, t4 = lane & 3;
    const int wm = (warp & 3) * 16, wn = (warp >> 2) * 32;
    const int m0 = blockIdx.x * HM, n0 = blockIdx.y * HN;
    const int ohw = a.OH * a.OW, kk2 = a.k * a.k, K = a.C * kk2;
    /* loader: row lr (a pixel of A, a filter of B), 8 consecutive K from kq */
    const int lr = tid >> 2, kq = (tid & 3) * 8;
    const int p = m0 + lr;
    const bool pv = p < a.M;
    int pb = 0, py = 0, px = 0;
    if (pv) yq_pixel_origin(a, p, &pb, &py, &px);
    const int f = n0 + lr;
    const bool fv = f < a.F;
    const __half *wrow = (const __half *)a.wh + (long)(fv ? f : 0) * K;
    const bool wvec = (K & 7) == 0;     /* every row 16-byte aligned */
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = 0.f;
    int kb, ke;
    yq_split_range(K, HK, n_split, blockIdx.z, &kb, &ke);
    for (int k0 = kb; k0 < ke; k0 += HK) {
        __align__(16) __half av[8], al[8], bv[8];
        const int kg0 = k0 + kq;
        if (K1) {
            const bool in = pv && (unsigned)py < (unsigned)a.IH && (unsigned)px < (unsigned)a.IW;
#pragma unroll
            for (int j = 0; j < 8; j++) split<IN>(in && kg0 + j < ke ? ld_in<IN>(a, pb, kg0 + j, py, px) : 0.f, &av[j], &al[j]);
        } else {
            int ci = kg0 / kk2, t = kg0 - ci * kk2, ky = t / a.k, kx = t - ky * a.k;
#pragma unroll
            for (int j = 0; j < 8; j++) {
                float v = 0.f;
                int y = py + ky, x = px + kx;
                if (pv && kg0 + j < ke && (unsigned)y < (unsigned)a.IH && (unsigned)x < (unsigned)a.IW)
                    v = ld_in<IN>(a, pb, ci, y, x);
                split<IN>(v, &av[j], &al[j]);
                if (++kx == a.k) {
                    kx = 0;
                    if (++ky == a.k) { ky = 0; ci++; }
                }
            }
        }
        if (fv && wvec && kg0 + 8 <= ke) {
            *(uint4 *)bv = __ldg((const uint4 *)(wrow + kg0));
        } else {
#pragma unroll
            for (int j = 0; j < 8; j++) bv[j] = fv && kg0 + j < ke ? wrow[kg0 + j] : __float2half_rn(0.f);
        }
        *(uint4 *)&As[lr][kq] = *(const uint4 *)av;
        if (IN == 0) *(uint4 *)&Al[lr][kq] = *(const uint4 *)al;
        *(uint4 *)&Bs[lr][kq] = *(const uint4 *)bv;
        __syncthreads();
#pragma unroll
        for (int ks = 0; ks < HK; ks += 16) {
            const int c0 = ks + t4 * 2;
            unsigned a0 = *(const unsigned *)&As[wm + gid][c0], a1 = *(const unsigned *)&As[wm + gid + 8][c0];
            unsigned a2 = *(const unsigned *)&As[wm + gid][c0 + 8], a3 = *(const unsigned *)&As[wm + gid + 8][c0 + 8];
            unsigned l0 = 0, l1 = 0, l2 = 0, l3 = 0;
            if (IN == 0) {
                l0 = *(const unsigned *)&Al[wm + gid][c0], l1 = *(const unsigned *)&Al[wm + gid + 8][c0];
                l2 = *(const unsigned *)&Al[wm + gid][c0 + 8], l3 = *(const unsigned *)&Al[wm + gid + 8][c0 + 8];
            }
#pragma unroll
            for (int nt = 0; nt < 4; nt++) {
                const __half *br = Bs[wn + nt * 8 + gid];
                unsigned b0 = *(const unsigned *)&br[c0], b1 = *(const unsigned *)&br[c0 + 8];
                if (IN == 0) mma_f16(acc[nt], l0, l1, l2, l3, b0, b1);   /* the small parts first */
                mma_f16(acc[nt], a0, a1, a2, a3, b0, b1);
            }
        }
        __syncthreads();
    }
    /* acc[nt][r]: pixel wm + gid (+8 for r >= 2), filter wn + 8 nt + 2 t4 (+1 for odd r) */
    const float sc = a.tin.scale;
#pragma unroll
    for (int nt = 0; nt < 4; nt++)
#pragma unroll
        for (int r = 0; r < 4; r++) {
            int pp = m0 + wm + gid + (r >= 2 ? 8 : 0), o = n0 + wn + nt * 8 + t4 * 2 + (r & 1);
            if (pp >= a.M || o >= a.F) continue;
            int b = pp / ohw, pix = pp - b * ohw;
            long idx = ((long)b * a.F + o) * ohw + pix;
            float s = IN == 0 ? acc[nt][r] : __fmul_rn(acc[nt][r], sc);
            if (ws) ws[(long)blockIdx.z * a.M * a.F + idx] = s;
            else ((float *)a.out)[idx] = yq_act_f(__fadd_rn(s, a.bf[o]), a.act);
        }
}

template <int IN>
static void launch_in(const ConvK &a, dim3 g, float *ws, int ns, cudaStream_t s)
{
    if (a.k == 1) conv_f16<IN, true><<<g, 256, 0, s>>>(a, ws, ns);
    else conv_f16<IN, false><<<g, 256, 0, s>>>(a, ws, ns);
}

void yq_f16_launch(const ConvK &a, int split_k, float *ws, cudaStream_t s)
{
    dim3 g(yq_blocks(a.M, HM), yq_blocks(a.F, HN), split_k);
    float *w = split_k > 1 ? ws : NULL;
    if (a.tin.dtype == YQ_F32) launch_in<0>(a, g, w, split_k, s);
    else if (a.tin.dtype == YQ_U8) launch_in<2>(a, g, w, split_k, s);
    else launch_in<1>(a, g, w, split_k, s);
}
