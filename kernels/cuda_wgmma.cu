/* Int8 convolution on sm_90's warpgroup tensor cores (wgmma), bit-exact with yq_ref_conv.
 *
 * Implicit GEMM as the MMA family (kernels/cuda_mma.cu): M = batch x output pixels, N =
 * filters, K = k x k x channels, the weights the dp4a upload ([filters][ky][kx][c], a
 * filter's K row lines up with the gathered input row).  The difference is the main loop:
 * wgmma.mma_async (m64nNk32, s8 x s8 -> s32) reads both operands from shared memory
 * through matrix descriptors, so no thread loads fragments and four warps (a warpgroup)
 * drive the tensor cores at sm_90's rate (about 1.5x mma.sync's, measured 1300 TOPS for
 * mma.sync on the H200 against 1979 by spec for wgmma).
 *
 * A block of BM / 64 warpgroups computes BM x BN outputs; warpgroup g the rows 64g..64g+63,
 * one m64nBNk32 wgmma per 32 bytes of K.  K advances BK bytes (64 or 128, one tap's
 * channels: C must be a multiple of BK) a step through a STAGES-deep ring filled by
 * cp.async (16 bytes a copy, zero-fill for padding pixels and filters past F).  Each row
 * of a stage is BK bytes, its 16-byte chunks placed by the hardware's swizzle (BK 128: the
 * 128-byte mode, chunk ^= row % 8; BK 64: the 64-byte mode, chunk ^= (row / 2) % 4), so
 * the tensor cores read without bank conflicts and no row padding is needed.  The loads of
 * step t + STAGES - 2 are issued while step t is multiplied and step t - 1's wgmmas may
 * still run (wgmma.wait_group 1).
 *
 * Epilogue: the thread's accumulators (rows 16w + lane / 4 and + 8 of its warp's slab,
 * columns 8j + 2 (lane % 4) and + 1: the mma.sync C layout repeated over N / 8) get the
 * bias and ir/requant.h's requantize (rq_pair: the CPU reference's functions), with the
 * block's per-channel parameters staged in shared memory before the main loop; the int8
 * outputs are staged in shared memory and leave as 16-byte rows, a fused [shortcut]'s
 * residual added on the way (res_apply).  The int32 sums are exact (|sum| < 2^31 for
 * every K here), so the bytes are the CPU reference's whatever the order of summation.
 *
 * Constraints: groups == 1, channels a multiple of BK, filters a multiple of 16, int8 in
 * and out, 16-byte aligned pixels and starts.  Built for sm_90a only (the Makefile):
 * yq_wg_built() says whether the running device has code here. */
#include "kernels/cuda_conv.cuh"
#include "kernels/cuda_ptx.cuh"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define YQ_WG_ARCH 1
#else
#define YQ_WG_ARCH 0
#endif

/* { BM, BN, BK, 64 (a warpgroup's rows), BN, STAGES } */
const yq_mma_tile yq_wg_tiles[YQ_WG_TILES] = {
    { 128, 128, 128, 64, 128, 4 },
    { 128, 128, 128, 64, 128, 6 },
    { 128, 256, 128, 64, 256, 4 },
    { 128, 128, 64, 64, 128, 6 },
    { 128, 256, 64, 64, 256, 6 },
    { 256, 128, 128, 64, 128, 4 },
    { 64, 128, 128, 64, 128, 4 },
    { 64, 128, 64, 64, 128, 6 },
};

/* ---- the sm_90a instructions ---------------------------------------------------- */

/* A K-major operand in shared memory: rows of bk bytes, swizzled (bk 128: the 128-byte
 * mode, 1; bk 64: the 64-byte mode, 2), 8-row groups 8 x bk bytes apart (the stride
 * dimension byte offset); the leading dimension offset is unused for these layouts. */
__device__ __forceinline__ uint64_t wg_desc(unsigned addr, int bk)
{
    return (uint64_t)((addr & 0x3FFFFu) >> 4) | (uint64_t)1 << 16 | (uint64_t)((bk * 8) >> 4) << 32 |
           (uint64_t)(bk == 128 ? 1 : 2) << 62;
}

__device__ __forceinline__ void wg_fence()
{
#if YQ_WG_ARCH
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void wg_commit()
{
#if YQ_WG_ARCH
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}

template <int N>
__device__ __forceinline__ void wg_wait()
{
#if YQ_WG_ARCH
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}

/* cp.async wrote the stage through the generic proxy; wgmma reads it through the async one */
__device__ __forceinline__ void fence_proxy_async()
{
#if YQ_WG_ARCH
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

/* The accumulators stay where the wgmmas wrote them until wait_group says they are done:
 * no read of them may move above this. */
template <int R>
__device__ __forceinline__ void wg_hold(int *d)
{
#pragma unroll
    for (int i = 0; i < R; i++) asm volatile("" : "+r"(d[i])::"memory");
}

/* d (N / 2 int32 per thread) = A (64 x 32 bytes at da) x B (N x 32 bytes at db)^T, plus d
 * where acc is set (scale-d: the one-tile kernels zero d before their main loop and always
 * add; the streaming 1x1 starts each tile with acc 0 instead, see conv_wg1).  One
 * specialization per width: wgmma names every accumulator register as its own operand. */
template <int N>
__device__ __forceinline__ void wgmma_s8(int *d, uint64_t da, uint64_t db, int acc = 1);

template <> __device__ __forceinline__ void wgmma_s8<32>(int *d, uint64_t da, uint64_t db, int acc)
{
#if YQ_WG_ARCH
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k32.s32.s8.s8 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15 "
        "}, %16, %17, p;\n}\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
          "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
        : "l"(da), "l"(db), "r"(acc));
#endif
}

template <> __device__ __forceinline__ void wgmma_s8<64>(int *d, uint64_t da, uint64_t db, int acc)
{
#if YQ_WG_ARCH
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31 "
        "}, %32, %33, p;\n}\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
          "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]),
          "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
          "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
        : "l"(da), "l"(db), "r"(acc));
#endif
}

template <> __device__ __forceinline__ void wgmma_s8<128>(int *d, uint64_t da, uint64_t db, int acc)
{
#if YQ_WG_ARCH
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63 "
        "}, %64, %65, p;\n}\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
          "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]),
          "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
          "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]),
          "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]),
          "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]),
          "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]),
          "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])
        : "l"(da), "l"(db), "r"(acc));
#endif
}

template <> __device__ __forceinline__ void wgmma_s8<256>(int *d, uint64_t da, uint64_t db, int acc)
{
#if YQ_WG_ARCH
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127 "
        "}, %128, %129, p;\n}\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
          "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]),
          "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
          "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]),
          "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]),
          "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]),
          "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]),
          "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63]),
          "+r"(d[64]), "+r"(d[65]), "+r"(d[66]), "+r"(d[67]), "+r"(d[68]), "+r"(d[69]), "+r"(d[70]), "+r"(d[71]),
          "+r"(d[72]), "+r"(d[73]), "+r"(d[74]), "+r"(d[75]), "+r"(d[76]), "+r"(d[77]), "+r"(d[78]), "+r"(d[79]),
          "+r"(d[80]), "+r"(d[81]), "+r"(d[82]), "+r"(d[83]), "+r"(d[84]), "+r"(d[85]), "+r"(d[86]), "+r"(d[87]),
          "+r"(d[88]), "+r"(d[89]), "+r"(d[90]), "+r"(d[91]), "+r"(d[92]), "+r"(d[93]), "+r"(d[94]), "+r"(d[95]),
          "+r"(d[96]), "+r"(d[97]), "+r"(d[98]), "+r"(d[99]), "+r"(d[100]), "+r"(d[101]), "+r"(d[102]), "+r"(d[103]),
          "+r"(d[104]), "+r"(d[105]), "+r"(d[106]), "+r"(d[107]), "+r"(d[108]), "+r"(d[109]), "+r"(d[110]), "+r"(d[111]),
          "+r"(d[112]), "+r"(d[113]), "+r"(d[114]), "+r"(d[115]), "+r"(d[116]), "+r"(d[117]), "+r"(d[118]), "+r"(d[119]),
          "+r"(d[120]), "+r"(d[121]), "+r"(d[122]), "+r"(d[123]), "+r"(d[124]), "+r"(d[125]), "+r"(d[126]), "+r"(d[127])
        : "l"(da), "l"(db), "r"(acc));
#endif
}

/* ---- the kernel ------------------------------------------------------------------ */

template <int BM, int BN, int BK, int STAGES>
struct WgCfg {
    static constexpr int THREADS = BM / 64 * 128;           /* a warpgroup per 64 rows */
    static constexpr int CPR = BK / 16;                     /* 16-byte chunks per row */
    static constexpr int RSTEP = THREADS / CPR;             /* rows apart of a thread's chunks */
    static constexpr int A_IT = BM / RSTEP, B_IT = BN / RSTEP;
    static constexpr int A_BYTES = BM * BK, STAGE = (BM + BN) * BK;
    static constexpr int PITCH = BN + 16;                   /* output staging row (bank spread) */
    static constexpr int SMEM = 1024 + STAGES * STAGE + BN * 12;   /* 1024: the ring's alignment */
    /* two blocks a multiprocessor where registers (64 accumulators, at most two warpgroups)
     * and shared memory allow */
    static constexpr int MIN_BLOCKS = BN <= 128 && THREADS <= 256 && 2 * SMEM <= 227 * 1024 ? 2 : 1;
    static_assert(BK == 64 || BK == 128, "the 64- or 128-byte swizzle");
    static_assert(BN == 128 || BN == 256, "wgmma_s8's widths");
    static_assert(RSTEP % 8 == 0 && A_IT >= 1 && B_IT >= 1, "loader shape");
    static_assert(BM * PITCH <= STAGES * STAGE, "the output staging fits in the ring");
    static_assert(STAGES >= 4, "two steps in flight besides the one multiplied");
};

/* The int8 epilogue of a BM x BN tile (the ring free, every thread past a barrier): the
 * accumulators (rows 16w + lane / 4 and + 8 of warp w's slab, columns 8j + 2 (lane % 4)
 * and + 1: the mma.sync C layout repeated over BN / 8) get the bias and ir/requant.h's
 * requantize (rq_pair: the CPU reference's functions), are staged in shared memory as
 * rows of PITCH bytes and leave as 16-byte pieces, a fused [shortcut]'s residual added on
 * the way (res_apply).  pixel(r): the output pixel of tile row r, or -1 for none. */
template <int BM, int BN, int THREADS, int PITCH, bool LUT, bool RES, class Pixel, bool SMALL = false>
__device__ __forceinline__ void wg_epilogue(const int *d, unsigned char *stg, const int32_t *pb, const float *pp,
                                            const float *pn, const ConvK &a, Pixel pixel, int n0)
{
    const int tid = threadIdx.x, wg = tid >> 7, warp = (tid >> 5) & 3, lane = tid & 31;
    constexpr int CH = BN / 16;       /* 16-byte pieces of a staged row */
    constexpr int PER = BM * CH / THREADS;   /* pieces a thread stores (BN / 32) */
    static_assert(BM * CH % THREADS == 0, "whole pieces per thread");
    /* a fused shortcut: every residual piece this thread will add, loaded before the
     * requantize so that the loads overlap it and each other (loaded one per piece in the
     * store loop, each waited for in turn, they made YOLOv3's 52x52 3x3 with its shortcut
     * 1.3x the time without: 104 against 80 us at batch 32) */
    uint4 rv[RES ? PER : 1];
    int px[PER];
#pragma unroll
    for (int k = 0; k < PER; k++) {
        const int i = tid + k * THREADS, r = i / CH, o = n0 + (i - r * CH) * 16;
        px[k] = o < a.F ? pixel(r) : -1;
        if (RES) rv[k] = px[k] >= 0 ? res_piece(a, px[k], o) : make_uint4(0, 0, 0, 0);
    }
    const int gid = lane >> 2, tq = lane & 3, r0 = wg * 64 + warp * 16 + gid;
#pragma unroll
    for (int j = 0; j < BN / 8; j++) {
        const int cl = j * 8 + tq * 2;
        const int32_t b0 = pb[cl], b1 = pb[cl + 1];
        const float p0 = pp[cl], p1 = pp[cl + 1], q0 = pn[cl], q1 = pn[cl + 1];
        /* SMALL: pb holds bias + 0x4B400000, so the sums are rq_pair_small's magic words */
        unsigned lo = SMALL ? rq_pair_small(d[4 * j] + b0, p0, q0, d[4 * j + 1] + b1, p1, q1, a)
                            : rq_pair<LUT>(d[4 * j] + b0, p0, q0, d[4 * j + 1] + b1, p1, q1, a);
        unsigned hi = SMALL ? rq_pair_small(d[4 * j + 2] + b0, p0, q0, d[4 * j + 3] + b1, p1, q1, a)
                            : rq_pair<LUT>(d[4 * j + 2] + b0, p0, q0, d[4 * j + 3] + b1, p1, q1, a);
        *(uint16_t *)(stg + r0 * PITCH + cl) = (uint16_t)lo;
        *(uint16_t *)(stg + (r0 + 8) * PITCH + cl) = (uint16_t)hi;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < PER; k++) {
        const int i = tid + k * THREADS, r = i / CH, cc = i - r * CH, o = n0 + cc * 16;
        if (px[k] < 0) continue;
        st_piece<RES>(a, px[k], o, *(const uint4 *)(stg + r * PITCH + cc * 16), rv[RES ? k : 0]);
    }
}

/* The float epilogue of a BM x BN tile (a head's dequantized output, NCHW float as the
 * F32 outputs of every family): act((float)(acc + bias) * deq[o]) (deq_out's arithmetic,
 * the multiply __fmul_rn), stored from the accumulators.  A store instruction's 32 values
 * are 4 channels' runs of 8 consecutive pixels (gid): 4 whole 32-byte sectors, so no
 * staging is needed.  pd: the block's deq factors (0 past F).  m0: the tile's first pixel. */
template <int BM, int BN>
__device__ __forceinline__ void wg_epilogue_f32(const int *d, const int32_t *pb, const float *pd, const ConvK &a,
                                                int m0, int n0)
{
    const int tid = threadIdx.x, wg = tid >> 7, warp = (tid >> 5) & 3, lane = tid & 31;
    const int gid = lane >> 2, tq = lane & 3, r0 = wg * 64 + warp * 16 + gid, ohw = a.OH * a.OW;
    float *out = (float *)a.out;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int p = m0 + r0 + h * 8;
        if (p >= a.M) continue;
        const int b = p / ohw, pix = p - b * ohw;
        float *o_p = out + (long)b * a.F * ohw + pix;
#pragma unroll
        for (int j = 0; j < BN / 8; j++) {
            const int cl = j * 8 + tq * 2, o = n0 + cl;
            const float v0 = yq_act_f(__fmul_rn((float)(d[4 * j + 2 * h] + pb[cl]), pd[cl]), a.act);
            const float v1 = yq_act_f(__fmul_rn((float)(d[4 * j + 2 * h + 1] + pb[cl + 1]), pd[cl + 1]), a.act);
            if (o < a.F) o_p[(long)o * ohw] = v0;
            if (o + 1 < a.F) o_p[(long)(o + 1) * ohw] = v1;
        }
    }
}

/* SPLIT: blockIdx.z is split z of n_split over K (yq_split_range, whole BK steps): the
 * int32 sums go to ws[z][M][F4] and yq_mma_reduce adds them and requantizes (LUT and RES
 * are then false: the reduction does both). */
template <int BM, int BN, int BK, int STAGES, bool LUT, bool RES, bool SPLIT>
__global__ void __launch_bounds__(WgCfg<BM, BN, BK, STAGES>::THREADS, WgCfg<BM, BN, BK, STAGES>::MIN_BLOCKS)
conv_wg(ConvK a, int32_t *ws, int n_split)
{
#if YQ_WG_ARCH
    typedef WgCfg<BM, BN, BK, STAGES> C;
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    /* the swizzle is a function of the address: the ring starts 1024-byte aligned */
    unsigned char *smem = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
    int32_t *pb = (int32_t *)(smem + STAGES * C::STAGE);
    float *pp = (float *)(pb + BN), *pn = pp + BN;
    const int tid = threadIdx.x, wg = tid >> 7, warp = (tid >> 5) & 3, lane = tid & 31;
    const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
    auto pixel = [&](int r) { return m0 + r < a.M ? m0 + r : -1; };
    const int Cb = a.C4w * 4, Ktot = a.K4 * 4, ohw = a.OH * a.OW;
    int kbeg = 0, kend = Ktot;        /* Ktot is k x k x Cb: whole BK steps */
    if (SPLIT) yq_split_range(Ktot, BK, n_split, blockIdx.z, &kbeg, &kend);
    const int KT = kend > kbeg ? (kend - kbeg) / BK : 0;

    for (int i = tid; i < BN; i += C::THREADS) {
        int o = n0 + i;
        bool ok = o < a.F;
        pb[i] = ok ? __ldg(a.bq + o) : 0;
        pp[i] = ok ? __ldg(a.pos + o) : 0.0f;
        pn[i] = ok ? __ldg(a.neg + o) : 0.0f;
    }

    pdl_wait();                       /* constants above, activations below */
    pdl_trigger();
    /* loader: thread = chunk column col of rows row0 + i x RSTEP (the same swizzle for all) */
    const int col = tid % C::CPR, row0 = tid / C::CPR;
    const int sw = BK == 128 ? (row0 & 7) : ((row0 >> 1) & 3);
    const unsigned soff = (unsigned)(row0 * BK + ((col ^ sw) << 4));
    const int8_t *in = (const int8_t *)a.in;
    const int8_t *w = (const int8_t *)a.w32;
    long abase[C::A_IT];
    int ay[C::A_IT], ax[C::A_IT];
#pragma unroll
    for (int i = 0; i < C::A_IT; i++) {
        int p = m0 + row0 + i * C::RSTEP;
        if (p < a.M) {
            int b = p / ohw, rem = p - b * ohw, oy = rem / a.OW, ox = rem - oy * a.OW;
            ay[i] = oy * a.s - a.pad;
            ax[i] = ox * a.s - a.pad;
            abase[i] = (long)b * a.IH;
        } else {
            ay[i] = -(1 << 28);       /* never inside the image */
            ax[i] = 0;
            abase[i] = 0;
        }
    }
    /* the chunk's tap (ky, kx) and channel byte c, and its K offset kb (C is a multiple of
     * BK: a step never leaves its tap) */
    const int tap0 = kbeg / Cb;
    int kb = kbeg + col * 16, c = kbeg - tap0 * Cb + col * 16, ky = tap0 / a.k, kx = tap0 - ky * a.k;
    const unsigned ring = smem_addr(smem);
    auto load = [&](int slot) {
        unsigned sa = ring + slot * C::STAGE + soff, sb = sa + C::A_BYTES;
#pragma unroll
        for (int i = 0; i < C::A_IT; i++) {
            int y = ay[i] + ky, x = ax[i] + kx;
            bool v = (unsigned)y < (unsigned)a.IH && (unsigned)x < (unsigned)a.IW;
            const int8_t *src = v ? in + ((abase[i] + y) * a.IW + x) * (a.IPW * 4) + c : in;
            cp16(sa + i * C::RSTEP * BK, src, v);
        }
#pragma unroll
        for (int i = 0; i < C::B_IT; i++) {
            int f = n0 + row0 + i * C::RSTEP;
            bool v = f < a.F;
            const int8_t *src = v ? w + (long)f * Ktot + kb : w;
            cp16(sb + i * C::RSTEP * BK, src, v);
        }
        kb += BK;
        c += BK;
        if (c >= Cb) {
            c -= Cb;
            if (++kx == a.k) { kx = 0; ky++; }
        }
    };

    int d[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; i++) d[i] = 0;
#pragma unroll
    for (int s = 0; s < STAGES - 2; s++) {
        if (s < KT) load(s);
        cp_commit();
    }
    const unsigned a_at = ring + wg * 64 * BK, b_at = ring + C::A_BYTES;
    for (int kt = 0; kt < KT; kt++) {
        cp_wait<STAGES - 3>();        /* this thread's copies of step kt are in */
        fence_proxy_async();
        __syncthreads();              /* everyone's; and step kt - 2's wgmmas are done everywhere */
        int nk = kt + STAGES - 2;     /* into step kt - 2's slot */
        if (nk < KT) load(nk % STAGES);
        cp_commit();
        const unsigned so = (unsigned)(kt % STAGES) * C::STAGE;
        const uint64_t da = wg_desc(a_at + so, BK), db = wg_desc(b_at + so, BK);
        wg_fence();
#pragma unroll
        for (int ks = 0; ks < BK / 32; ks++) wgmma_s8<BN>(d, da + 2 * ks, db + 2 * ks);   /* +32 bytes */
        wg_commit();
        wg_wait<1>();
    }
    wg_wait<0>();
    wg_hold<BN / 2>(d);
    cp_wait<0>();
    if (SPLIT) {                      /* the partial sums, as they lie in the accumulators */
        const int r0 = m0 + wg * 64 + warp * 16 + (lane >> 2);
        int32_t *wz = ws + (long)blockIdx.z * a.M * a.F4;
#pragma unroll
        for (int j = 0; j < BN / 8; j++) {
            const int o = n0 + j * 8 + (lane & 3) * 2;
            if (o >= a.F) continue;
            if (r0 < a.M) *(int2 *)(wz + (long)r0 * a.F4 + o) = make_int2(d[4 * j], d[4 * j + 1]);
            if (r0 + 8 < a.M) *(int2 *)(wz + (long)(r0 + 8) * a.F4 + o) = make_int2(d[4 * j + 2], d[4 * j + 3]);
        }
        return;
    }
    __syncthreads();                  /* the ring is free: it stages the outputs */
    wg_epilogue<BM, BN, C::THREADS, C::PITCH, LUT, RES>(d, smem, pb, pp, pn, a, pixel, n0);
#else
    __trap();   /* not sm_90a code: fail, never a silent wrong answer */
#endif
}


/* ---- the halo kernel: stride-1 3x3 convs, each input window staged once ----------- *
 *
 * conv_wg gathers a tile's A rows anew for each of the 9 taps: 9 x BM rows of BK bytes a
 * channel chunk, most of them the same pixels.  Here the tile's M is counted over the
 * zero-padded image, Wp = W + 2 pixels a row (the two last columns of each row computed
 * and dropped), so that the A rows of tap (ky, kx) are the padded pixels of its rows
 * shifted by ky x Wp + kx: one contiguous run of rows.  A block stages that run once a
 * 128-channel chunk (BM + 2 Wp + 2 rows, the "halo"; zeros where the padding is) and
 * gives the wgmmas of each tap a descriptor into it, BM x 128 bytes starting at the
 * tap's shift; only the filters (B) are loaded per tap.  For YOLOv3's 52x52 layers at BM
 * 256 that is 366 + 9 x 128 rows a chunk instead of 9 x (256 + 128).
 *
 * The halo lives in two slots (chunk j in slot j % 2; loaded with the B tile of its first
 * tap, STAGES - 2 steps ahead, while chunk j - 1 is multiplied: safe while STAGES <= 10).
 * Its rows are written in the 128-byte swizzle of their own addresses (the slot is
 * 1024-byte aligned, so row h's chunks are XORed by h % 8), and a tap's descriptor starts
 * at a 128-byte row boundary that is generally not a multiple of 1024, its base offset
 * field 0: the H200 unswizzles by the address bits of each row it reads, as it does for
 * the +32-byte K steps inside a row (measured: every wgh configuration of test_cuda
 * bit-exact this way, and wrong from the first output with the field set to
 * (address >> 7) % 8).
 *
 * A tile never spans two images (grid.x = images x tiles an image); tile rows past the
 * image, and the two padding columns of each row, are computed and not stored. */
template <int BM, int STAGES, int MINB>
struct WghCfg {
    static constexpr int BN = 128, BK = 128;
    static constexpr int THREADS = BM / 64 * 128;
    static constexpr int RSTEP = THREADS / 8;               /* rows a pass of the loaders */
    static constexpr int B_BYTES = BN * BK;
    static constexpr int PITCH = BN + 16;
    static constexpr int FIXED = 1024 + STAGES * B_BYTES + BN * 12;   /* + 2 halo slots */
    static constexpr int MAX_SMEM = 227 * 1024;
    static_assert(BM * PITCH <= STAGES * B_BYTES, "the output staging fits in the ring");
    static_assert(STAGES >= 4 && STAGES <= 10, "the halo's two slots");
    static_assert(BN % RSTEP == 0, "loader shape");
    /* halo rows and the bytes of one slot (whole 1024-byte units: the next slot stays aligned) */
    static __host__ __device__ int rows(int W) { return BM + 2 * (W + 2) + 2; }
    static __host__ __device__ int slot(int W) { return (rows(W) * BK + 1023) & ~1023; }
    /* slots: two where there are several channel chunks, one for a single chunk */
    static __host__ __device__ int slots(int nc) { return nc > 1 ? 2 : 1; }
    /* bytes for W-wide images of nc chunks */
    static int smem(int W, int nc) { return FIXED + slots(nc) * slot(W); }
    /* MINB 2: only where two blocks fit a multiprocessor (228 KB, 1 KB reserved a block) */
    static bool fits(int W, int nc)
    {
        const int b = smem(W, nc);
        return MINB == 1 ? b <= MAX_SMEM : 2 * (b + 1024) <= 228 * 1024;
    }
};

template <int BM, int STAGES, int MINB, bool LUT, bool RES>
__global__ void __launch_bounds__(WghCfg<BM, STAGES, MINB>::THREADS, MINB)
conv_wgh(ConvK a, int tiles)
{
#if YQ_WG_ARCH
    typedef WghCfg<BM, STAGES, MINB> C;
    constexpr int BN = C::BN, BK = C::BK;
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char *smem = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
    const int Wp = a.OW + 2, HR = C::rows(a.OW), HS = C::slot(a.OW);
    const int Cb = a.C4w * 4, Ktot = a.K4 * 4, NC = Cb / BK, T = 9 * NC;
    unsigned char *halo = smem + STAGES * C::B_BYTES;
    int32_t *pb = (int32_t *)(halo + C::slots(NC) * HS);
    float *pp = (float *)(pb + BN), *pn = pp + BN;
    const int tid = threadIdx.x, wg = tid >> 7;
    const int img = blockIdx.x / tiles, m0 = (blockIdx.x - img * tiles) * BM, n0 = blockIdx.y * BN;
    const int ohw = a.OH * a.OW, mi = a.OH * Wp;
    auto pixel = [&](int r) {
        int q = m0 + r, oy = q / Wp, ox = q - oy * Wp;
        return q < mi && ox < a.OW ? img * ohw + oy * a.OW + ox : -1;
    };

    for (int i = tid; i < BN; i += C::THREADS) {
        int o = n0 + i;
        bool ok = o < a.F;
        pb[i] = ok ? __ldg(a.bq + o) : 0;
        pp[i] = ok ? __ldg(a.pos + o) : 0.0f;
        pn[i] = ok ? __ldg(a.neg + o) : 0.0f;
    }

    /* loaders: thread = 16-byte chunk col of rows row0 + i x RSTEP (swizzle: row % 8, the
     * same for all of them as RSTEP is a multiple of 8) */
    const int col = tid & 7, row0 = tid >> 3;
    const unsigned sw = (unsigned)(((col ^ (row0 & 7)) << 4) + row0 * BK);
    const int8_t *in = (const int8_t *)a.in + (long)img * a.IH * a.IW * (a.IPW * 4) + col * 16;
    const int8_t *w = (const int8_t *)a.w32 + col * 16;
    const unsigned ring = smem_addr(smem), hring = smem_addr(halo);
    auto load = [&](int t) {
        const int j = t / 9, tap = t - 9 * j;
        const unsigned sb = ring + (t % STAGES) * C::B_BYTES + sw;
#pragma unroll
        for (int i = 0; i < BN / C::RSTEP; i++) {
            int f = n0 + row0 + i * C::RSTEP;
            bool v = f < a.F;
            cp16(sb + i * C::RSTEP * BK, v ? w + (long)f * Ktot + tap * Cb + j * BK : w, v);
        }
        if (tap == 0) {               /* the chunk's halo: padded pixels m0 .. m0 + HR - 1 */
            const unsigned sh = hring + (j & 1) * HS + sw;
            for (int h = row0; h < HR; h += C::RSTEP) {
                int q = m0 + h, py = q / Wp, px = q - py * Wp;
                bool v = py >= 1 && py <= a.IH && px >= 1 && px <= a.IW;
                const int8_t *src = v ? in + ((long)(py - 1) * a.IW + px - 1) * (a.IPW * 4) + j * BK : in;
                cp16(sh + (h - row0) * BK, src, v);
            }
        }
    };

    pdl_wait();                       /* constants above, activations below */
    pdl_trigger();
    int d[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; i++) d[i] = 0;
#pragma unroll
    for (int s = 0; s < STAGES - 2; s++) {
        if (s < T) load(s);
        cp_commit();
    }
    for (int t = 0; t < T; t++) {
        cp_wait<STAGES - 3>();
        fence_proxy_async();
        __syncthreads();
        if (t + STAGES - 2 < T) load(t + STAGES - 2);
        cp_commit();
        const int j = t / 9, tap = t - 9 * j, ky = tap / 3, kx = tap - 3 * ky;
        const unsigned aa = hring + (j & 1) * HS + (unsigned)(ky * Wp + kx + wg * 64) * BK;
        const uint64_t da = wg_desc(aa, BK);
        const uint64_t db = wg_desc(ring + (t % STAGES) * C::B_BYTES, BK);
        wg_fence();
#pragma unroll
        for (int ks = 0; ks < BK / 32; ks++) wgmma_s8<BN>(d, da + 2 * ks, db + 2 * ks);
        wg_commit();
        wg_wait<1>();
    }
    wg_wait<0>();
    wg_hold<BN / 2>(d);
    cp_wait<0>();
    __syncthreads();
    wg_epilogue<BM, BN, C::THREADS, C::PITCH, LUT, RES>(d, smem, pb, pp, pn, a, pixel, n0);
#else
    __trap();   /* not sm_90a code: fail, never a silent wrong answer */
#endif
}

/* ---- the streaming 1x1 family (wg1): memory-bound 1x1 convs ----------------------- *
 *
 * A stride-1 1x1 conv is a plain GEMM over the pixels (an A row is an input pixel) and,
 * on YOLO's short K (64 -> 32 at 208x208 ... 384 -> 128 at 52x52), one bound by memory.
 * In conv_wg a block's loads, wgmmas and stores follow each other and the next tile's
 * loads wait for a new block.  Here a block keeps its BN filters' whole K (BN x C bytes,
 * loaded once) resident in shared memory and walks the M tiles blockIdx.x, + gridDim.x,
 * ..., its ring of A stages running across tile boundaries: the next tile's rows are in
 * flight while this tile's epilogue requantizes and stores (from a staging area of its
 * own, not the ring).  Rows of BK bytes, swizzled as in conv_wg (B slot kt: the BN x BK
 * filter bytes of K step kt).  Two warpgroups, 128 rows a tile.
 *
 * The steps g = 0, 1, ... of a block are (tile g / KT, K step g % KT); step g's loads go
 * into slot (g + STAGES - 2) % STAGES as in conv_wg, whose wgmmas (step g - 2's) are
 * done by then (wait_group 1 after each step; 0 after a tile's last). */
template <int BN, int BK, int STAGES, int MINB>
struct Wg1Cfg {
    static constexpr int BM = 128, THREADS = 256;
    static constexpr int CPR = BK / 16;                     /* 16-byte chunks per row */
    static constexpr int RSTEP = THREADS / CPR, A_IT = BM / RSTEP;
    static constexpr int A_BYTES = BM * BK, B_SLOT = BN * BK;
    static constexpr int PITCH = BN + 16;
    static constexpr int MAX_SMEM = 227 * 1024;
    static constexpr int FIXED = 1024 + STAGES * A_BYTES + BM * PITCH + BN * 12;
    static_assert(BK == 64 || BK == 128, "the 64- or 128-byte swizzle");
    static_assert(B_SLOT % 1024 == 0, "every slot on the swizzle period");
    static_assert(STAGES >= 4, "two steps in flight besides the one multiplied");
    /* bytes for C channels: the resident filters first (1024-aligned), then the ring */
    static int smem(int C) { return FIXED + BN * C; }
    static bool fits(int C) { return smem(C) <= MAX_SMEM; }
    /* blocks a multiprocessor (228 KB, 1 KB reserved a block; at most MINB: registers) */
    static int per_sm(int C)
    {
        int n = 228 * 1024 / (smem(C) + 1024);
        return n < 1 ? 1 : n > MINB ? MINB : n;
    }
};

/* SMALL (a.small, no table, int8 out): the requantize without an int-to-float conversion
 * (rq_pair_small), the bias loaded with the magic 0x4B400000 added */
template <int BN, int BK, int STAGES, int MINB, bool LUT, bool RES, bool FOUT, bool SMALL = false>
__global__ void __launch_bounds__(256, MINB)
conv_wg1(ConvK a, int tiles)
{
#if YQ_WG_ARCH
    typedef Wg1Cfg<BN, BK, STAGES, MINB> C;
    constexpr int BM = C::BM;
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char *smem = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
    const int Cb = a.C4w * 4, KT = Cb / BK, Ktot = a.K4 * 4;   /* 1x1: Ktot is Cb */
    unsigned char *ringp = smem + BN * Cb;
    unsigned char *stg = ringp + STAGES * C::A_BYTES;
    int32_t *pb = (int32_t *)(stg + BM * C::PITCH);
    float *pp = (float *)(pb + BN), *pn = pp + BN;
    const int tid = threadIdx.x, wg = tid >> 7;
    const int n0 = blockIdx.y * BN;
    const int mine = (int)blockIdx.x < tiles ? (tiles - 1 - (int)blockIdx.x) / (int)gridDim.x + 1 : 0;
    const int G = mine * KT;

    for (int i = tid; i < BN; i += C::THREADS) {
        int o = n0 + i;
        bool ok = o < a.F;
        pb[i] = (ok ? __ldg(a.bq + o) : 0) + (SMALL ? 0x4B400000 : 0);
        pp[i] = ok ? __ldg(FOUT ? a.deq + o : a.pos + o) : 0.0f;   /* FOUT: the dequantize factors */
        pn[i] = ok && !FOUT ? __ldg(a.neg + o) : 0.0f;
    }

    const int col = tid % C::CPR, row0 = tid / C::CPR;
    auto swz = [](int r) { return BK == 128 ? (r & 7) : ((r >> 1) & 3); };
    const unsigned bres = smem_addr(smem), ring = smem_addr(ringp);
    const int8_t *in = (const int8_t *)a.in + col * 16;
    const int8_t *w = (const int8_t *)a.w32;
    /* the filters, every K step, once (in the first group) */
    for (int i = tid; i < BN * Cb / 16; i += C::THREADS) {
        const int kt = i / (BN * C::CPR), rem = i - kt * (BN * C::CPR), r = rem / C::CPR, c = rem - r * C::CPR;
        const int f = n0 + r;
        const bool v = f < a.F;
        cp16(bres + kt * C::B_SLOT + r * BK + ((c ^ swz(r)) << 4), v ? w + (long)f * Ktot + kt * BK + c * 16 : w, v);
    }
    pdl_wait();                       /* the filters above, activations below */
    pdl_trigger();
    const unsigned soff = (unsigned)(row0 * BK + ((col ^ swz(row0)) << 4));
    auto load = [&](int g) {
        const int q = (int)blockIdx.x + (g / KT) * (int)gridDim.x, kt = g - (g / KT) * KT;
        const unsigned sa = ring + (g % STAGES) * C::A_BYTES + soff;
#pragma unroll
        for (int i = 0; i < C::A_IT; i++) {
            const int p = q * BM + row0 + i * C::RSTEP;
            const bool v = p < a.M;
            cp16(sa + i * C::RSTEP * BK, v ? in + (long)p * (a.IPW * 4) + kt * BK : in, v);
        }
    };
    /* each tile's first wgmma overwrites d (scale-d 0: kt | ks is 0): no zeroing between tiles */
    int d[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; i++) d[i] = 0;
#pragma unroll
    for (int s = 0; s < STAGES - 2; s++) {
        if (s < G) load(s);
        cp_commit();
    }
    int m0 = (int)blockIdx.x * BM;
    auto pixel = [&](int r) { return m0 + r < a.M ? m0 + r : -1; };
    /* A loop over the block's tiles around one over a tile's K steps, every way out of the
     * inner one through wait_group 0.  One loop over all the steps made ptxas inject a
     * wait for every wgmma at its back edge (C7517; WARPGROUP.DEPBAR.LE gsb0, 0x0 after
     * each step, so no step's wgmmas overlapped the next step's barrier and loads): 15%
     * of the warps' stall samples were at barriers on YOLOv3's 256x52x52 -> 128 at batch
     * 32, 7% without it, the kernel 17.3 -> 16.2 us (ncu and the tuner, H100, 2026-12-06). */
    for (int t = 0, g = 0; t < mine; t++) {
        for (int kt = 0; kt < KT; kt++, g++) {
            cp_wait<STAGES - 3>();
            fence_proxy_async();
            __syncthreads();
            if (g + STAGES - 2 < G) load(g + STAGES - 2);
            cp_commit();
            const uint64_t da = wg_desc(ring + (g % STAGES) * C::A_BYTES + wg * 64 * BK, BK);
            const uint64_t db = wg_desc(bres + kt * C::B_SLOT, BK);
            wg_fence();
#pragma unroll
            for (int ks = 0; ks < BK / 32; ks++) wgmma_s8<BN>(d, da + 2 * ks, db + 2 * ks, kt | ks);
            wg_commit();
            wg_wait<1>();
        }
        wg_wait<0>();                 /* the tile's epilogue; the next tile's loads run on */
        wg_hold<BN / 2>(d);
        if (FOUT) wg_epilogue_f32<BM, BN>(d, pb, pp, a, m0, n0);
        else wg_epilogue<BM, BN, C::THREADS, C::PITCH, LUT, RES, decltype(pixel), SMALL>(d, stg, pb, pp, pn, a, pixel, n0);
        m0 += (int)gridDim.x * BM;
    }
    cp_wait<0>();
#else
    __trap();   /* not sm_90a code: fail, never a silent wrong answer */
#endif
}

/* ---- host side ------------------------------------------------------------------- */

namespace {

template <int BM, int BN, int BK, int STAGES>
struct WgTile {
    typedef WgCfg<BM, BN, BK, STAGES> C;
    static bool can(const ConvK &a) { return (a.C4w * 4) % BK == 0; }
    /* a K split only where BN is 128 (the splits serve small grids; fewer instantiations) */
    static constexpr bool SPLITS = BN == 128;
    static bool can_split(int split) { return split == 1 || SPLITS; }
    template <bool L, bool R, bool S>
    static yq_status attr(yq_error *err)
    {
        YQ_CUDA_TRY(cudaFuncSetAttribute(conv_wg<BM, BN, BK, STAGES, L, R, S>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM));
        return YQ_OK;
    }
    static yq_status prepare(yq_error *err)
    {
        yq_status st;
        if ((st = attr<false, false, false>(err)) || (st = attr<true, false, false>(err)) ||
            (st = attr<false, true, false>(err)) || (st = attr<true, true, false>(err)))
            return st;
        if constexpr (SPLITS) return attr<false, false, true>(err);
        return YQ_OK;
    }
    static yq_status launch(const ConvK &a, int split, int32_t *ws, cudaStream_t s, yq_error *err)
    {
        if (split > 1) {
            if constexpr (SPLITS) {
                dim3 grid(yq_blocks(a.M, BM), yq_blocks(a.F, BN), split);
                YQ_CUDA_TRY(yq_launch_pdl(conv_wg<BM, BN, BK, STAGES, false, false, true>, grid, C::THREADS, C::SMEM, s, a,
                                          ws, split));
                return yq_mma_reduce(a, ws, split, s, err);
            }
            return yq_fail(err, YQ_ERR_UNSUPPORTED, "wgmma conv: no K split of a %d-filter tile", BN);
        }
        dim3 grid(yq_blocks(a.M, BM), yq_blocks(a.F, BN));
        auto kern = a.res ? (a.lut ? conv_wg<BM, BN, BK, STAGES, true, true, false> : conv_wg<BM, BN, BK, STAGES, false, true, false>)
                          : (a.lut ? conv_wg<BM, BN, BK, STAGES, true, false, false> : conv_wg<BM, BN, BK, STAGES, false, false, false>);
        YQ_CUDA_TRY(yq_launch_pdl(kern, grid, C::THREADS, C::SMEM, s, a, (int32_t *)NULL, 1));
        return YQ_OK;
    }
};

typedef WgTile<128, 128, 128, 4> W0;
typedef WgTile<128, 128, 128, 6> W1;
typedef WgTile<128, 256, 128, 4> W2;
typedef WgTile<128, 128, 64, 6> W3;
typedef WgTile<128, 256, 64, 6> W4;
typedef WgTile<256, 128, 128, 4> W5;   /* four warpgroups */
typedef WgTile<64, 128, 128, 4> W6;    /* one: small batches (more blocks) */
typedef WgTile<64, 128, 64, 6> W7;

template <class F>
static auto dispatch(int tile, F f) -> decltype(f(W0()))
{
    switch (tile) {
    case 0: return f(W0());
    case 1: return f(W1());
    case 2: return f(W2());
    case 3: return f(W3());
    case 4: return f(W4());
    case 5: return f(W5());
    case 6: return f(W6());
    default: return f(W7());
    }
}

} // namespace

int yq_wg_built(void)
{
#ifdef YQ_WG_SM90A
    cudaFuncAttributes fa;
    int ok = cudaFuncGetAttributes(&fa, conv_wg<128, 128, 128, 4, false, false, false>) == cudaSuccess && fa.binaryVersion == 90;
    (void)cudaGetLastError();
    return ok;
#else
    return 0;                         /* this build has no sm_90a code */
#endif
}

/* Every pixel row and tensor start on 16 bytes: the three families' loads and stores are
 * 16-byte vectors (cp.async, the staged output pieces, the residual's). */
static bool rows16(const ConvK &a)
{
    return (a.IPW * 4) % 16 == 0 && (a.OPW * 4) % 16 == 0 && !((uintptr_t)a.in & 15) && !((uintptr_t)a.out & 15) &&
           !(a.res && ((uintptr_t)a.res & 15));
}

int yq_wg_ok(const ConvK &a, int tile)
{
    if (tile < 0 || tile >= YQ_WG_TILES || a.groups != 1 || a.fout || a.u8 || (a.C4w * 4) % 16 || a.F % 16) return 0;
    if (!rows16(a)) return 0;
    return dispatch(tile, [&](auto t) { return decltype(t)::can(a); });
}

yq_status yq_wg_prepare(yq_error *err)
{
    static unsigned done;
    return yq_once_per_device(&done, err, [&]() -> yq_status {
        for (int t = 0; t < YQ_WG_TILES; t++) {
            yq_status st = dispatch(t, [&](auto w) { return decltype(w)::prepare(err); });
            if (st) return st;
        }
        return YQ_OK;
    });
}

/* ---- the halo family --------------------------------------------------------------- */

/* { BM, STAGES, blocks a multiprocessor the registers are capped for } */
const yq_wgh_tile yq_wgh_tiles[YQ_WGH_TILES] = { { 256, 4, 1 }, { 128, 4, 1 }, { 128, 6, 1 }, { 128, 4, 2 } };

namespace {

template <int BM, int STAGES, int MINB>
struct WghTile {
    typedef WghCfg<BM, STAGES, MINB> C;
    template <bool L, bool R>
    static yq_status attr(yq_error *err)
    {
        YQ_CUDA_TRY(cudaFuncSetAttribute(conv_wgh<BM, STAGES, MINB, L, R>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         C::MAX_SMEM));
        return YQ_OK;
    }
    static yq_status prepare(yq_error *err)
    {
        yq_status st;
        if ((st = attr<false, false>(err)) || (st = attr<true, false>(err)) || (st = attr<false, true>(err)) ||
            (st = attr<true, true>(err)))
            return st;
        return YQ_OK;
    }
    static bool fits(int W, int nc) { return C::fits(W, nc); }
    static yq_status launch(const ConvK &a, cudaStream_t s, yq_error *err)
    {
        const int tiles = yq_blocks((long)a.OH * (a.OW + 2), BM), n = a.M / (a.OH * a.OW);
        const int nc = a.C4w * 4 / C::BK;
        dim3 grid(n * tiles, yq_blocks(a.F, C::BN));
        auto kern = a.res ? (a.lut ? conv_wgh<BM, STAGES, MINB, true, true> : conv_wgh<BM, STAGES, MINB, false, true>)
                          : (a.lut ? conv_wgh<BM, STAGES, MINB, true, false> : conv_wgh<BM, STAGES, MINB, false, false>);
        YQ_CUDA_TRY(yq_launch_pdl(kern, grid, C::THREADS, C::smem(a.OW, nc), s, a, tiles));
        return YQ_OK;
    }
};

template <class F>
static auto wgh_dispatch(int tile, F f) -> decltype(f(WghTile<256, 4, 1>()))
{
    switch (tile) {
    case 0: return f(WghTile<256, 4, 1>());
    case 1: return f(WghTile<128, 4, 1>());
    case 2: return f(WghTile<128, 6, 1>());
    default: return f(WghTile<128, 4, 2>());
    }
}

} // namespace

int yq_wgh_shape_ok(int tile, int cin, int k, int stride, int pad, int groups, int F, int W)
{
    if (tile < 0 || tile >= YQ_WGH_TILES || k != 3 || stride != 1 || pad != 1 || groups != 1 || cin % 128 || F % 16)
        return 0;
    return wgh_dispatch(tile, [&](auto t) { return decltype(t)::fits(W, cin / 128); });
}

int yq_wgh_ok(const ConvK &a, int tile)
{
    if (a.fout || a.u8 || a.IH != a.OH || a.IW != a.OW || a.C4w * 4 != a.C) return 0;
    if (!rows16(a)) return 0;
    return yq_wgh_shape_ok(tile, a.C, a.k, a.s, a.pad, a.groups, a.F, a.OW);
}

yq_status yq_wgh_prepare(yq_error *err)
{
    static unsigned done;
    return yq_once_per_device(&done, err, [&]() -> yq_status {
        for (int t = 0; t < YQ_WGH_TILES; t++) {
            yq_status st = wgh_dispatch(t, [&](auto w) { return decltype(w)::prepare(err); });
            if (st) return st;
        }
        return YQ_OK;
    });
}

yq_status yq_wgh_launch(const ConvK &a, int tile, cudaStream_t s, yq_error *err)
{
    if (!yq_wgh_ok(a, tile)) return yq_fail(err, YQ_ERR_UNSUPPORTED, "wgmma halo conv: tile %d cannot run this conv", tile);
    return wgh_dispatch(tile, [&](auto w) { return decltype(w)::launch(a, s, err); });
}

/* ---- the streaming 1x1 family ------------------------------------------------------ */

/* { BN, BK, STAGES, blocks a multiprocessor the registers are capped for } */
const yq_wg1_tile yq_wg1_tiles[YQ_WG1_TILES] = { { 32, 64, 8, 3 },   { 64, 64, 8, 2 },   { 128, 64, 6, 2 },
                                                 { 128, 128, 4, 1 }, { 128, 64, 16, 1 }, { 128, 128, 8, 1 } };

namespace {

template <int BN, int BK, int STAGES, int MINB>
struct Wg1Tile {
    typedef Wg1Cfg<BN, BK, STAGES, MINB> C;
    template <bool L, bool R, bool F = false, bool S = false>
    static yq_status attr(yq_error *err)
    {
        YQ_CUDA_TRY(cudaFuncSetAttribute(conv_wg1<BN, BK, STAGES, MINB, L, R, F, S>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, C::MAX_SMEM));
        return YQ_OK;
    }
    static yq_status prepare(yq_error *err)
    {
        yq_status st;
        if ((st = attr<false, false>(err)) || (st = attr<true, false>(err)) || (st = attr<false, true>(err)) ||
            (st = attr<true, true>(err)) || (st = attr<false, false, true>(err)) ||
            (st = attr<false, false, false, true>(err)) || (st = attr<false, true, false, true>(err)))
            return st;
        return YQ_OK;
    }
    static bool fits(int cin) { return cin % BK == 0 && C::fits(cin); }
    static yq_status launch(const ConvK &a, int sms, cudaStream_t s, yq_error *err)
    {
        const int cb = a.C4w * 4, tiles = yq_blocks(a.M, C::BM), ny = yq_blocks(a.F, BN);
        int nx = sms * C::per_sm(cb) / ny;
        nx = nx < 1 ? 1 : nx > tiles ? tiles : nx;
        /* the same number of tiles for every block where a few more blocks allow it */
        nx = yq_blocks(tiles, yq_blocks(tiles, nx));
        const bool sm = a.small != 0;   /* no conversion instruction in the requantize */
        auto kern = a.fout  ? conv_wg1<BN, BK, STAGES, MINB, false, false, true>
                    : a.res ? (a.lut ? conv_wg1<BN, BK, STAGES, MINB, true, true, false>
                               : sm  ? conv_wg1<BN, BK, STAGES, MINB, false, true, false, true>
                                     : conv_wg1<BN, BK, STAGES, MINB, false, true, false>)
                            : (a.lut ? conv_wg1<BN, BK, STAGES, MINB, true, false, false>
                               : sm  ? conv_wg1<BN, BK, STAGES, MINB, false, false, false, true>
                                     : conv_wg1<BN, BK, STAGES, MINB, false, false, false>);
        YQ_CUDA_TRY(yq_launch_pdl(kern, dim3(nx, ny), C::THREADS, C::smem(cb), s, a, tiles));
        return YQ_OK;
    }
};

template <class F>
static auto wg1_dispatch(int tile, F f) -> decltype(f(Wg1Tile<32, 64, 8, 3>()))
{
    switch (tile) {
    case 0: return f(Wg1Tile<32, 64, 8, 3>());
    case 1: return f(Wg1Tile<64, 64, 8, 2>());
    case 2: return f(Wg1Tile<128, 64, 6, 2>());
    case 3: return f(Wg1Tile<128, 128, 4, 1>());
    case 4: return f(Wg1Tile<128, 64, 16, 1>());
    default: return f(Wg1Tile<128, 128, 8, 1>());
    }
}

} // namespace

int yq_wg1_shape_ok(int tile, int cin, int k, int stride, int pad, int groups, int F, int fout)
{
    /* int8 outputs leave as 16-byte pieces (filters a multiple of 16); float ones as words */
    if (tile < 0 || tile >= YQ_WG1_TILES || k != 1 || stride != 1 || pad != 0 || groups != 1 || (!fout && F % 16)) return 0;
    /* a filter block mostly padding: the narrower tiles serve it */
    if (F <= yq_wg1_tiles[tile].bn / 2) return 0;
    return wg1_dispatch(tile, [&](auto t) { return decltype(t)::fits(cin); });
}

int yq_wg1_ok(const ConvK &a, int tile)
{
    if (a.u8 || a.IH != a.OH || a.IW != a.OW || a.C4w * 4 != a.C || (a.fout && (a.res || a.lut))) return 0;
    if (!rows16(a)) return 0;
    return yq_wg1_shape_ok(tile, a.C, a.k, a.s, a.pad, a.groups, a.F, a.fout);
}

yq_status yq_wg1_prepare(yq_error *err)
{
    static unsigned done;
    return yq_once_per_device(&done, err, [&]() -> yq_status {
        for (int t = 0; t < YQ_WG1_TILES; t++) {
            yq_status st = wg1_dispatch(t, [&](auto w) { return decltype(w)::prepare(err); });
            if (st) return st;
        }
        return YQ_OK;
    });
}

yq_status yq_wg1_launch(const ConvK &a, int tile, int sms, cudaStream_t s, yq_error *err)
{
    if (!yq_wg1_ok(a, tile)) return yq_fail(err, YQ_ERR_UNSUPPORTED, "wgmma 1x1 conv: tile %d cannot run this conv", tile);
    return wg1_dispatch(tile, [&](auto w) { return decltype(w)::launch(a, sms, s, err); });
}

int yq_wg_can_split(int tile, int split)
{
    return tile >= 0 && tile < YQ_WG_TILES && dispatch(tile, [&](auto w) { return decltype(w)::can_split(split); });
}

yq_status yq_wg_launch(const ConvK &a, int tile, int split_k, int32_t *ws, cudaStream_t s, yq_error *err)
{
    if (!yq_wg_ok(a, tile)) return yq_fail(err, YQ_ERR_UNSUPPORTED, "wgmma conv: tile %d cannot run this conv", tile);
    if (split_k > 1 && !ws) return yq_fail(err, YQ_ERR_INVALID_ARG, "wgmma conv: split-K without scratch");
    return dispatch(tile, [&](auto w) { return decltype(w)::launch(a, split_k, ws, s, err); });
}
