/* Int8 convolution on CUTLASS's main loop (sm_80 and newer), with yquant's epilogue.
 *
 * The main loop is CUTLASS 2.x's implicit-GEMM conv fprop for NHWC int8
 * (cutlass::conv::kernel::DefaultConv2dFprop, Sm80, mma.sync m16n8k32, the
 * multistage cp.async pipeline, the kOptimized activation iterator): M = batch x
 * output pixels, N = filters, K = k x k x channels.  The weights are the dp4a upload,
 * [filters][ky][kx][c] (KRSC), the input the NHWC4 tensor (channels a multiple of 16:
 * NHWC4 is then plain NHWC), read through its pixel stride (a view into a wider
 * tensor works when the stride and the start are 16-byte aligned).
 *
 * The epilogue is ours, not CUTLASS's: CUTLASS's EpilogueWithVisitor stages the int32
 * accumulators through shared memory into the output thread map and calls a visitor
 * with 16 consecutive channels of one output pixel at a time.  The visitor adds the
 * bias and requantizes through ir/requant.h (yq_requant_act, or a table's entry by
 * yq_lut_index: the CPU reference's functions), optionally adds a [shortcut]'s residual
 * (yq_add_requant) and stores the 16 int8 outputs as one 16-byte vector.  The block's
 * per-channel parameters (and the table) are copied to shared memory before the main
 * loop, and each thread keeps its own channels' in registers.  The int32 sums are exact
 * (|sum| < 2^31, as for every family), so the bytes are the CPU reference's.
 *
 * Constraints: groups == 1, input channels and filters multiples of 16, int8 output
 * (the dequantizing head convs run the other families), no K split.  Each tile of
 * yq_cut_tiles is one instantiation; a tuner picks one per layer.  Built for sm_80+
 * only (the Makefile compiles this file for those architectures): yq_cut_built()
 * says whether the running device has code here. */
#include "kernels/cuda_conv.cuh"

#include "cutlass/cutlass.h"
#include "cutlass/conv/conv2d_problem_size.h"
#include "cutlass/conv/kernel/default_conv2d_fprop.h"
#include "cutlass/epilogue/thread/linear_combination_clamp.h"
#include "cutlass/epilogue/threadblock/epilogue_with_visitor.h"

namespace {

/* What the epilogue reads per output channel, staged in shared memory for the block's BN
 * filters before the main loop (and the table, for a table activation): read from global
 * memory at each visit instead, these dependent loads made every tile 1.2-2.4x slower than
 * CUTLASS's own epilogue (H200, batch 32: 52x52 128->256 3x3 150 us against 89 us). */
template <int BN, bool LUT>
struct alignas(16) RqShared {
    int32_t b[BN];
    float pos[BN], neg[BN];
    int8_t lut[LUT ? YQ_LUT_N : 16];

    /* all threads of the block: the channels from col0 (F of them exist) */
    CUTLASS_DEVICE void load(const int32_t *bq, const float *ps, const float *ns, const int8_t *tab, int col0, int F,
                             int tid, int nthreads)
    {
        for (int i = tid; i < BN; i += nthreads) {
            int c = col0 + i;
            bool ok = c < F;
            b[i] = ok ? __ldg(bq + c) : 0;
            pos[i] = ok ? __ldg(ps + c) : 0.0f;
            neg[i] = ok ? __ldg(ns + c) : 0.0f;
        }
        if (LUT)
            for (int i = tid; i < YQ_LUT_N / 16; i += nthreads)
                reinterpret_cast<int4 *>(lut)[i] = __ldg(reinterpret_cast<const int4 *>(tab) + i);
    }
};

/* The visitor: bias, requantize, residual, one 16-byte store per 16 channels.  RES: a
 * [shortcut] fused (a template parameter, as LUT: a run-time test in the unrolled epilogue
 * made nvcc emit it three times over, 8500 instructions against 2800, and the tile 1.7x
 * slower).  A thread's channels are the same at every step: their parameters are read from
 * shared memory once, into registers, when they are few (kCols x kElementsPerAccess <= 16). */
template <class OutIt, int BN, bool LUT, bool RES>
struct RqVisitor {
    using ThreadMap = typename OutIt::ThreadMap;
    static int const kIterations = OutIt::kIterations;
    static int const kElementsPerAccess = ThreadMap::kElementsPerAccess;
    static int const kCols = ThreadMap::Iterations::kColumn;
    static bool const kRegs = kCols * kElementsPerAccess <= 16;
    using ElementAccumulator = int32_t;
    using ElementOutput = int8_t;
    using AccumulatorFragment = cutlass::Array<int32_t, kElementsPerAccess>;
    using OutputVector = cutlass::Array<int8_t, kElementsPerAccess>;
    using Fragment = typename OutIt::Fragment;
    static_assert(kElementsPerAccess % 4 == 0, "whole int4 / float4 loads");

    struct Params {
        typename OutIt::Params out_p, res_p;
        int8_t *out;
        const int8_t *res;
        const int32_t *bq;
        const float *pos, *neg;
        const int8_t *lut;
        int F, qmin, qmax;
        /* the residual add as yq_add_requant(conv, res, sc, sr, ...): the shortcut's scales
         * ordered for the conv's side (IEEE addition commutes, so a shortcut whose first
         * source is the residual gives the same bits with its scales swapped) */
        float sc, sr, sneg;
        int32_t sqmin, sqmax;
    };
    using SharedStorage = RqShared<BN, LUT>;

    Params const &p;
    SharedStorage const &sh;
    int col0;                     /* the block's first filter */
    OutIt it_d, it_r;
    Fragment frag_d, frag_r, frag_next;   /* frag_next: the next step's residual, loaded a step ahead */
    int32_t rb[kRegs ? kCols : 1][kElementsPerAccess];
    float rp[kRegs ? kCols : 1][kElementsPerAccess], rn[kRegs ? kCols : 1][kElementsPerAccess];

    CUTLASS_DEVICE RqVisitor(Params const &params, SharedStorage const &shared, cutlass::MatrixCoord const &extent,
                             int thread_idx, int, int, cutlass::MatrixCoord const &tb_offset)
        : p(params), sh(shared), col0(tb_offset.column()), it_d(params.out_p, params.out, extent, thread_idx, tb_offset),
          it_r(params.res_p, const_cast<int8_t *>(params.res), extent, thread_idx, tb_offset)
    {
        if (!RES) it_r.clear_mask();
    }

    CUTLASS_DEVICE void set_k_partition(int, int) {}
    CUTLASS_DEVICE void set_batch_index(int) {}
    CUTLASS_DEVICE void begin_epilogue()
    {
        if constexpr (RES) {
            frag_next.clear();
            it_r.load(frag_next);
            ++it_r;
        }
        if constexpr (kRegs) {
            CUTLASS_PRAGMA_UNROLL
            for (int c = 0; c < kCols; c++) {
                int j0 = it_d.thread_start_column() + c * ThreadMap::Delta::kColumn - col0;
                CUTLASS_PRAGMA_UNROLL
                for (int i = 0; i < kElementsPerAccess; i++) {
                    rb[c][i] = sh.b[j0 + i];
                    rp[c][i] = sh.pos[j0 + i];
                    rn[c][i] = sh.neg[j0 + i];
                }
            }
        }
    }
    CUTLASS_DEVICE void begin_step(int step)
    {
        /* the residual of this step was loaded during the previous one (loaded here, its
         * latency was exposed at every step: fused tiles 25% slower than plain ones) */
        if constexpr (RES) {
            frag_r = frag_next;
            if (step + 1 < kIterations) {
                frag_next.clear();
                it_r.load(frag_next);
                ++it_r;
            }
        }
    }
    CUTLASS_DEVICE void begin_row(int) {}

    /* kElementsPerAccess channels from col (a multiple of it, as F is: all of them are
     * channels or none) */
    CUTLASS_DEVICE void visit(int, int, int, int frag_idx, AccumulatorFragment const &acc)
    {
        int col = it_d.thread_start_column() + ThreadMap::iteration_offset(frag_idx).column();
        OutputVector &o = reinterpret_cast<OutputVector *>(&frag_d)[frag_idx];
        OutputVector const &r = reinterpret_cast<OutputVector const *>(&frag_r)[frag_idx];
        if (col >= p.F) {
            o.clear();
            return;
        }
        const int32_t *b;
        const float *sp, *sn;
        int4 bv[kElementsPerAccess / 4];
        float4 pv[kElementsPerAccess / 4], nv[kElementsPerAccess / 4];
        if constexpr (kRegs) {
            int c = frag_idx % kCols;   /* the iteration's column (OutputTileThreadMap's order) */
            b = rb[c];
            sp = rp[c];
            sn = rn[c];
        } else {
            CUTLASS_PRAGMA_UNROLL
            for (int j = 0; j < kElementsPerAccess / 4; j++) {
                bv[j] = reinterpret_cast<const int4 *>(sh.b + (col - col0))[j];
                pv[j] = reinterpret_cast<const float4 *>(sh.pos + (col - col0))[j];
                nv[j] = reinterpret_cast<const float4 *>(sh.neg + (col - col0))[j];
            }
            b = reinterpret_cast<const int32_t *>(bv);
            sp = reinterpret_cast<const float *>(pv);
            sn = reinterpret_cast<const float *>(nv);
        }
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < kElementsPerAccess; i++) {
            /* the table decided at compile time (cuda_conv.cuh: rq_out_t), read from shared
             * memory: yq_requant_out's entry */
            if constexpr (RES) {
                int32_t v = LUT ? sh.lut[yq_lut_index(acc[i] + b[i], sp[i], sn[i])]
                                : yq_requant_act(acc[i] + b[i], sp[i], sn[i], p.qmin, p.qmax);
                o[i] = (int8_t)yq_add_requant_lo8(v, r[i], p.sc, p.sr, p.sneg, p.sqmin, p.sqmax);
            } else {
                /* the low byte is the output (yq_requant_act_lo8: no sign extension) */
                o[i] = (int8_t)(LUT ? (uint32_t)sh.lut[yq_lut_index(acc[i] + b[i], sp[i], sn[i])]
                                    : yq_requant_act_lo8(acc[i] + b[i], sp[i], sn[i], p.qmin, p.qmax));
            }
        }
    }

    CUTLASS_DEVICE void end_row(int) {}
    CUTLASS_DEVICE void end_step(int)
    {
        it_d.store(frag_d);
        ++it_d;
    }
    CUTLASS_DEVICE void end_epilogue() {}
};

using Layout = cutlass::layout::TensorNHWC;

template <int BM, int BN, int BK, int WM, int WN, int STAGES, int EV = 16, bool LUT = false, bool RES = false>
struct Cut {
    /* CUTLASS's kernel, of which the main loop and the epilogue's staging are used; its
     * own output operator only fixes the epilogue's types (EV int8 per access). */
    using Base = typename cutlass::conv::kernel::DefaultConv2dFprop<
        int8_t, Layout, int8_t, Layout, int8_t, Layout, int32_t, cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80,
        cutlass::gemm::GemmShape<BM, BN, BK>, cutlass::gemm::GemmShape<WM, WN, BK>, cutlass::gemm::GemmShape<16, 8, 32>,
        cutlass::epilogue::thread::LinearCombinationClamp<int8_t, EV, int32_t, float>,
        cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<1>, STAGES, cutlass::arch::OpMultiplyAddSaturate,
        cutlass::conv::IteratorAlgorithm::kOptimized>::Kernel;
    using Mma = typename Base::Mma;
    using Swizzle = typename Base::ThreadblockSwizzle;
    using OutIt = typename Base::Epilogue::OutputTileIterator;
    using Visitor = RqVisitor<OutIt, BN, LUT, RES>;
    using Epi = typename cutlass::epilogue::threadblock::EpilogueWithVisitorFromExistingEpilogue<
        Visitor, typename Base::Epilogue>::Epilogue;
    static int const kThreads = 32 * Mma::WarpCount::kCount;

    struct SharedStorage {
        union {
            typename Mma::SharedStorage main_loop;
            typename Epi::SharedStorage epilogue;
        } u;
        typename Visitor::SharedStorage vis;   /* apart: written before the main loop */
    };

    struct Params {
        cutlass::conv::Conv2dProblemSize ps;
        cutlass::gemm::GemmCoord grid;
        int swizzle_log_tile, k_iters, k_iters_per_channel;
        typename Mma::IteratorA::Params it_a;
        const int8_t *a;
        typename Mma::IteratorB::Params it_b;
        const int8_t *b;
        cutlass::MatrixCoord extent;
        typename Visitor::Params vis;
    };
};

template <class C>
__global__ void __launch_bounds__(C::kThreads) cut_kernel(typename C::Params p)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    extern __shared__ int smem_raw[];
    typename C::SharedStorage &ss = *reinterpret_cast<typename C::SharedStorage *>(smem_raw);
    typename C::Swizzle swz;
    cutlass::gemm::GemmCoord tb = swz.get_tile_offset(p.swizzle_log_tile);
    if (p.grid.m() <= tb.m() || p.grid.n() <= tb.n()) return;
    int thread_idx = threadIdx.x;
    typename C::Mma::IteratorA it_a(p.it_a, p.ps, p.a, thread_idx, cutlass::MatrixCoord(tb.m() * C::Mma::Shape::kM, 0));
    typename C::Mma::IteratorB it_b(p.it_b, p.ps, p.b, thread_idx, cutlass::MatrixCoord(0, tb.n() * C::Mma::Shape::kN));
    int warp_idx = cutlass::canonical_warp_idx_sync();
    int lane_idx = threadIdx.x % 32;
    /* the epilogue's parameters, their loads in flight during the main loop (whose barriers,
     * and the epilogue's before its first visit, order them before any read) */
    ss.vis.load(p.vis.bq, p.vis.pos, p.vis.neg, p.vis.lut, tb.n() * C::Mma::Shape::kN, p.vis.F, thread_idx,
                C::kThreads);
    typename C::Mma mma(ss.u.main_loop, thread_idx, warp_idx, lane_idx);
    typename C::Mma::FragmentC acc;
    acc.clear();
    mma(p.k_iters, acc, it_a, it_b, acc, p.k_iters_per_channel);
    cutlass::MatrixCoord off(tb.m() * C::Mma::Shape::kM, tb.n() * C::Mma::Shape::kN);
    typename C::Epi epi(ss.u.epilogue, thread_idx, warp_idx, lane_idx);
    typename C::Visitor vis(p.vis, ss.vis, p.extent, thread_idx, warp_idx, lane_idx, off);
    epi(vis, acc);
#else
    (void)p;
    __trap();
#endif
}

/* Host side of one instantiation. */
template <class C>
struct Runner {
    static int smem() { return (int)sizeof(typename C::SharedStorage); }

    static cutlass::conv::Conv2dProblemSize problem(const ConvK &a)
    {
        int N = a.M / (a.OH * a.OW);
        return cutlass::conv::Conv2dProblemSize(N, a.IH, a.IW, a.C, a.F, a.k, a.k, a.OH, a.OW, a.pad, a.pad, a.s, a.s, 1,
                                                1, cutlass::conv::Mode::kCrossCorrelation, 1, 1);
    }

    static bool can(const ConvK &a)
    {
        cutlass::conv::Conv2dProblemSize ps = problem(a);
        return C::Mma::IteratorA::can_implement(ps) == cutlass::Status::kSuccess &&
               C::Mma::IteratorB::can_implement(ps) == cutlass::Status::kSuccess;
    }

    static yq_status prepare(yq_error *err)
    {
        if (smem() > 48 * 1024)
            YQ_CUDA_TRY(cudaFuncSetAttribute(cut_kernel<C>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem()));
        return YQ_OK;
    }

    static yq_status launch(const ConvK &a, cudaStream_t s, yq_error *err)
    {
        typename C::Params p;
        p.ps = problem(a);
        int ips = a.IPW * 4, ops = a.OPW * 4;
        Layout la(cutlass::make_Coord(ips, ips * a.IW, ips * a.IW * a.IH));
        Layout lb = Layout::packed({ a.F, a.k, a.k, a.C });
        p.it_a = C::Mma::IteratorA::getParams(p.ps, la);
        p.a = (const int8_t *)a.in;
        p.it_b = typename C::Mma::IteratorB::Params(p.ps, lb);
        p.b = (const int8_t *)a.w32;
        cutlass::gemm::GemmCoord gp = cutlass::conv::implicit_gemm_problem_size(cutlass::conv::Operator::kFprop, p.ps);
        p.k_iters = cutlass::conv::implicit_gemm_k_iterations(cutlass::conv::Operator::kFprop, C::Mma::Shape::kK, p.ps,
                                                              cutlass::conv::IteratorAlgorithm::kOptimized,
                                                              cutlass::conv::GroupMode::kNone, C::Mma::Shape::kN);
        p.k_iters_per_channel = cutlass::conv::implicit_gemm_k_iterations_per_channel(
            cutlass::conv::Operator::kFprop, p.ps, cutlass::conv::IteratorAlgorithm::kOptimized);
        typename C::Swizzle swz;
        p.grid = swz.get_tiled_shape(gp, { C::Mma::Shape::kM, C::Mma::Shape::kN, C::Mma::Shape::kK }, 1);
        p.swizzle_log_tile = swz.get_log_tile(p.grid);
        p.extent = cutlass::MatrixCoord(a.M, a.F);
        typename C::Visitor::Params &v = p.vis;
        v.out_p = typename C::OutIt::Params(cutlass::layout::RowMajor(ops));
        v.res_p = typename C::OutIt::Params(cutlass::layout::RowMajor(a.F4));
        v.out = (int8_t *)a.out;
        v.res = a.res;
        v.bq = a.bq;
        v.pos = a.pos;
        v.neg = a.neg;
        v.lut = a.lut;
        v.F = a.F;
        v.qmin = a.qmin;
        v.qmax = a.qmax;
        v.sc = a.res_first ? a.ssb : a.ssa;
        v.sr = a.res_first ? a.ssa : a.ssb;
        v.sneg = a.ssneg; v.sqmin = a.sqmin; v.sqmax = a.sqmax;
        dim3 grid = swz.get_grid_shape(p.grid);
        cut_kernel<C><<<grid, C::kThreads, smem(), s>>>(p);
        YQ_CUDA_TRY(cudaGetLastError());
        return YQ_OK;
    }
};

/* The instantiations: { BM, BN, BK, WM, WN, STAGES }, in the order of yq_cut_tiles. */
template <bool L, bool R> using T0 = Cut<128, 128, 64, 64, 64, 3, 16, L, R>;
template <bool L, bool R> using T1 = Cut<128, 128, 128, 64, 64, 3, 16, L, R>;
template <bool L, bool R> using T2 = Cut<256, 128, 64, 64, 64, 3, 16, L, R>;
template <bool L, bool R> using T3 = Cut<128, 256, 64, 64, 64, 3, 16, L, R>;
template <bool L, bool R> using T4 = Cut<64, 64, 64, 32, 32, 6, 8, L, R>;   /* 8 per access: a 64-wide tile's thread map */
template <bool L, bool R> using T5 = Cut<128, 64, 64, 64, 32, 4, 8, L, R>;
template <bool L, bool R> using T6 = Cut<128, 32, 64, 64, 32, 4, 8, L, R>;  /* 32 filters: the 1x1s that halve 64 channels */

/* Tile t, with a table activation's epilogue (L) or without, a fused residual (R) or not:
 * each its own kernel. */
template <bool L, bool R, class F>
static auto dispatch_lr(int tile, F f) -> decltype(f(Runner<T0<L, R>>()))
{
    switch (tile) {
    case 0: return f(Runner<T0<L, R>>());
    case 1: return f(Runner<T1<L, R>>());
    case 2: return f(Runner<T2<L, R>>());
    case 3: return f(Runner<T3<L, R>>());
    case 4: return f(Runner<T4<L, R>>());
    case 5: return f(Runner<T5<L, R>>());
    default: return f(Runner<T6<L, R>>());
    }
}

template <class F>
static auto dispatch(int tile, bool lut, bool res, F f) -> decltype(f(Runner<T0<false, false>>()))
{
    if (lut) return res ? dispatch_lr<true, true>(tile, f) : dispatch_lr<true, false>(tile, f);
    return res ? dispatch_lr<false, true>(tile, f) : dispatch_lr<false, false>(tile, f);
}

} // namespace

const yq_mma_tile yq_cut_tiles[YQ_CUT_TILES] = {
    { 128, 128, 64, 64, 64, 3 },
    { 128, 128, 128, 64, 64, 3 },
    { 256, 128, 64, 64, 64, 3 },
    { 128, 256, 64, 64, 64, 3 },
    { 64, 64, 64, 32, 32, 6 },
    { 128, 64, 64, 64, 32, 4 },
    { 128, 32, 64, 64, 32, 4 },
};

int yq_cut_built(void)
{
    cudaFuncAttributes fa;
    int ok = cudaFuncGetAttributes(&fa, cut_kernel<T4<false, false>>) == cudaSuccess && fa.binaryVersion >= 80;
    (void)cudaGetLastError();
    return ok;
}

int yq_cut_ok(const ConvK &a, int tile)
{
    if (tile < 0 || tile >= YQ_CUT_TILES || a.groups != 1 || a.fout || a.u8 || a.C % 16 || a.F % 16) return 0;
    /* 16-byte vectors: pixel strides and starts aligned (dense tensors always are) */
    if ((a.IPW * 4) % 16 || (a.OPW * 4) % 16 || ((uintptr_t)a.in & 15) || ((uintptr_t)a.out & 15)) return 0;
    if (a.res && ((uintptr_t)a.res & 15)) return 0;
    return dispatch(tile, a.lut != NULL, a.res != NULL, [&](auto r) { return decltype(r)::can(a); });
}

yq_status yq_cut_prepare(yq_error *err)
{
    static unsigned done;
    return yq_once_per_device(&done, err, [&]() -> yq_status {
        for (int t = 0; t < YQ_CUT_TILES; t++)
            for (int v = 0; v < 4; v++) {
                yq_status st = dispatch(t, v & 1, v >> 1, [&](auto r) { return decltype(r)::prepare(err); });
                if (st) return st;
            }
        return YQ_OK;
    });
}

yq_status yq_cut_launch(const ConvK &a, int tile, cudaStream_t s, yq_error *err)
{
    if (!yq_cut_ok(a, tile)) return yq_fail(err, YQ_ERR_UNSUPPORTED, "cutlass tile %d cannot run this conv", tile);
    return dispatch(tile, a.lut != NULL, a.res != NULL, [&](auto r) { return decltype(r)::launch(a, s, err); });
}
