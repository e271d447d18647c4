/* Int8 convolution on tensor cores (sm_80 and newer), bit-exact with yq_ref_conv.
 *
 * Implicit GEMM, as the dp4a kernels (kernels/cuda_conv_kernels.cuh): M = batch x output
 * pixels, N = filters, K = k x k x c4 bytes, where c4 (the NHWC4 pixel, channels
 * padded to 4) is a multiple of 16 here, so that every 16-byte piece of a pixel's K
 * row lies in one tap and is 16-byte aligned.  The weights are the dp4a upload,
 * [filters][ky][kx][c4]: a filter's K row lines up with the gathered input row.
 *
 * A block computes a BM x BN tile of the output; its warps WM x WN each.  K advances
 * in chunks of BK bytes through a STAGES-deep ring in shared memory filled by
 * cp.async (16 bytes per copy, zero-fill for padding pixels, rows past M or N and K
 * past its end), so the gathers of chunk t + STAGES - 1 are in flight while chunk t
 * is multiplied.  Fragments come from shared memory by ldmatrix (rows padded by 16
 * bytes: conflict-free); mma.sync.m16n8k32.s32.s8.s8.s32 accumulates in int32.
 *
 * Exactness: the products and their int32 sums are exact (|sum| < 2^31 for every
 * K here: 9 x 1024 x 127 x 128 < 2^31), so any order of summation gives the CPU's
 * accumulator; the epilogue is the same code as the dp4a kernels' (ir/requant.h,
 * or the dequantizing float epilogue).  Split-K (split_k > 1): each split writes
 * its int32 partial sums to scratch and a second kernel adds them (exact again)
 * and applies the epilogue.
 *
 * The family is a table of tiles (yq_mma_tiles); a tuner picks one per layer. */
#include "kernels/cuda_conv.cuh"
#include "kernels/cuda_ptx.cuh"

/* { BM, BN, BK, WM, WN, STAGES } */
const yq_mma_tile yq_mma_tiles[YQ_MMA_TILES] = {
    { 128, 128, 64, 64, 32, 4 },
    { 128, 64, 64, 64, 32, 4 },
    { 64, 128, 64, 32, 64, 4 },
    { 64, 64, 64, 32, 32, 4 },
    { 128, 256, 64, 64, 64, 3 },
    { 128, 128, 128, 64, 32, 3 },
    { 64, 64, 128, 32, 32, 3 },
    { 32, 64, 128, 32, 16, 3 },
};

#define ROWPAD 16

template <int BM, int BN, int BK, int WM, int WN, int STAGES>
struct MmaCfg {
    static constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN;
    static constexpr int THREADS = WARPS_M * WARPS_N * 32;
    static constexpr int MI = WM / 16, NI = WN / 8;
    static constexpr int ROW = BK + ROWPAD;              /* bytes per smem row */
    static constexpr int CPR = BK / 16;                  /* 16-byte chunks per row */
    static constexpr int A_IT = BM * CPR / THREADS, B_IT = BN * CPR / THREADS;
    static constexpr int STAGE_BYTES = (BM + BN) * ROW;
    static constexpr int SMEM = STAGES * STAGE_BYTES;
    static_assert(NI % 2 == 0, "warp tile N must be a multiple of 16");
    static_assert(THREADS % CPR == 0 && A_IT >= 1 && B_IT >= 1, "loader shape");
    static_assert(BM * CPR % THREADS == 0 && BN * CPR % THREADS == 0, "loader shape");
};

/* One output tile.  z = blockIdx.z is the K split (its range by yq_split_range); with
 * ws set the int32 sums go to ws[z][M][F4] and yq_mma_reduce finishes them. */
template <int BM, int BN, int BK, int WM, int WN, int STAGES, bool LUT, int EP>
__global__ void __launch_bounds__(MmaCfg<BM, BN, BK, WM, WN, STAGES>::THREADS)
conv_mma(ConvK a, int32_t *ws, int n_split)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
#if __CUDA_ARCH__ >= 800
    typedef MmaCfg<BM, BN, BK, WM, WN, STAGES> C;
    extern __shared__ __align__(16) unsigned char smem[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp % C::WARPS_M, wn = warp / C::WARPS_M;
    const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
    const int Cb = a.C4w * 4, Ktot = a.K4 * 4, ohw = a.OH * a.OW;
    int kbeg, kend;
    yq_split_range(Ktot, BK, n_split, blockIdx.z, &kbeg, &kend);
    const int KT = kend > kbeg ? (kend - kbeg + BK - 1) / BK : 0;

    /* loader: thread = chunk column col of rows row0 + i * (THREADS / CPR) */
    const int col = tid % C::CPR, row0 = tid / C::CPR;
    constexpr int RSTEP = C::THREADS / C::CPR;
    const int8_t *in = (const int8_t *)a.in;
    const int8_t *w = (const int8_t *)a.w32;
    long abase[C::A_IT];
    int ay[C::A_IT], ax[C::A_IT];
#pragma unroll
    for (int i = 0; i < C::A_IT; i++) {
        int p = m0 + row0 + i * RSTEP;
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
    /* the tap (ky, kx) and channel byte c of this thread's chunk column, advanced by BK
     * bytes per chunk without a division */
    int kb = kbeg + col * 16;
    int tap = kb / Cb, c = kb - tap * Cb, ky = tap / a.k, kx = tap - ky * a.k;
    auto load = [&](int slot) {
        unsigned char *sa = smem + slot * C::STAGE_BYTES, *sb = sa + BM * C::ROW;
        bool kv = kb < kend;
#pragma unroll
        for (int i = 0; i < C::A_IT; i++) {
            int r = row0 + i * RSTEP, y = ay[i] + ky, x = ax[i] + kx;
            bool v = kv && (unsigned)y < (unsigned)a.IH && (unsigned)x < (unsigned)a.IW;
            const int8_t *src = v ? in + ((abase[i] + y) * a.IW + x) * (a.IPW * 4) + c : in;
            cp16(smem_addr(sa + r * C::ROW + col * 16), src, v);
        }
#pragma unroll
        for (int i = 0; i < C::B_IT; i++) {
            int r = row0 + i * RSTEP, f = n0 + r;
            bool v = kv && f < a.F;
            const int8_t *src = v ? w + (long)f * Ktot + kb : w;
            cp16(smem_addr(sb + r * C::ROW + col * 16), src, v);
        }
        kb += BK;
        c += BK;
        while (c >= Cb) {
            c -= Cb;
            if (++kx == a.k) { kx = 0; ky++; }
        }
    };

    int acc[C::MI][C::NI][4];
#pragma unroll
    for (int i = 0; i < C::MI; i++)
#pragma unroll
        for (int j = 0; j < C::NI; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0;

#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < KT) load(s);
        cp_commit();
    }
    /* ldmatrix addresses: A rows (lane % 16), chunk (lane / 16); B rows (lane % 8) +
     * 8 (lane / 16), chunk (lane / 8) % 2 */
    const int a_row = wm * WM + (lane & 15), a_chk = lane >> 4;
    const int b_row = wn * WN + (lane & 7) + ((lane >> 4) << 3), b_chk = (lane >> 3) & 1;
    for (int kt = 0; kt < KT; kt++) {
        cp_wait<STAGES - 2>();
        __syncthreads();
        int nk = kt + STAGES - 1;
        if (nk < KT) load(nk % STAGES);
        cp_commit();
        const unsigned char *sa = smem + (kt % STAGES) * C::STAGE_BYTES, *sb = sa + BM * C::ROW;
#pragma unroll
        for (int ks = 0; ks < BK / 32; ks++) {
            unsigned af[C::MI][4], bf[C::NI][2];
#pragma unroll
            for (int i = 0; i < C::MI; i++)
                ldm_x4(smem_addr(sa + (a_row + i * 16) * C::ROW + ks * 32 + a_chk * 16), af[i][0], af[i][1], af[i][2],
                       af[i][3]);
#pragma unroll
            for (int j = 0; j < C::NI; j += 2)
                ldm_x4(smem_addr(sb + (b_row + j * 8) * C::ROW + ks * 32 + b_chk * 16), bf[j][0], bf[j][1], bf[j + 1][0],
                       bf[j + 1][1]);
#pragma unroll
            for (int i = 0; i < C::MI; i++)
#pragma unroll
                for (int j = 0; j < C::NI; j++) mma_s8(acc[i][j], af[i], bf[j]);
        }
    }
    cp_wait<0>();

    /* epilogue: the thread holds rows gid and gid + 8, columns 2 tq and 2 tq + 1 of each
     * 16 x 8 piece.  Split-K partials go straight to scratch.  Otherwise the tile is staged
     * in the drained ring and leaves in coalesced runs: int8 outputs as 4-byte words, 32
     * consecutive words of the tile's rows a warp (stored from the accumulators' layout,
     * a warp's words would fall on 16 pixels 8 bytes at a time: a quarter of each 32-byte
     * sector, the 1x1 convs at a fifth of the copy bandwidth); float outputs a channel's
     * consecutive pixels a warp (the NCHW layout).  Column parameters are loaded once per
     * column; int8 outputs are paired with the neighbouring thread's (lane ^ 1) into
     * 4-byte words of 4 channels: even tq the row gid, odd tq the row gid + 8. */
    const int gid = lane >> 2, tq = lane & 3;
    constexpr bool fused = EP == EP_RES;
    if (EP == EP_WIDE && ws) {
#pragma unroll
        for (int j = 0; j < C::NI; j++) {
            const int o = n0 + wn * WN + j * 8 + tq * 2;
#pragma unroll
            for (int i = 0; i < C::MI; i++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    int p = m0 + wm * WM + i * 16 + gid + h * 8;
                    if (p < a.M && o < a.F4)
                        *(int2 *)(ws + ((long)blockIdx.z * a.M + p) * a.F4 + o) = make_int2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
                }
        }
        return;
    }
    if (EP == EP_WIDE) {                   /* a.fout: stored from the accumulators (staging them
                                              measured slower on the heads' 64 x 64 tiles) */
#pragma unroll
        for (int j = 0; j < C::NI; j++) {
            const int o = n0 + wn * WN + j * 8 + tq * 2;
            int32_t b0 = 0, b1 = 0;
            if (o < a.F) b0 = a.bq[o];
            if (o + 1 < a.F) b1 = a.bq[o + 1];
#pragma unroll
            for (int i = 0; i < C::MI; i++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int p = m0 + wm * WM + i * 16 + gid + h * 8;
                    if (p >= a.M) continue;
                    const int b = p / ohw, pix = p - b * ohw;
                    float *out = (float *)a.out;
                    if (o < a.F) out[((long)b * a.F + o) * ohw + pix] = deq_out(acc[i][j][2 * h] + b0, o, a);
                    if (o + 1 < a.F) out[((long)b * a.F + o + 1) * ohw + pix] = deq_out(acc[i][j][2 * h + 1] + b1, o + 1, a);
                }
        }
    } else {                               /* [BM][BN / 4 + 4] words */
        __syncthreads();                   /* every warp is done with the ring */
        constexpr int SW = BN / 4 + 4;
        unsigned *st = reinterpret_cast<unsigned *>(smem);
        static_assert(BM * SW * 4 <= C::SMEM, "the output tile fits in the ring");
#pragma unroll
        for (int j = 0; j < C::NI; j++) {
            const int o = n0 + wn * WN + j * 8 + tq * 2;
            int32_t b0 = 0, b1 = 0;
            float p0 = 0, p1 = 0, q0 = 0, q1 = 0;
            if (o < a.F) { b0 = a.bq[o]; p0 = a.pos[o]; q0 = a.neg[o]; }
            if (o + 1 < a.F) { b1 = a.bq[o + 1]; p1 = a.pos[o + 1]; q1 = a.neg[o + 1]; }
            /* both outputs of a pair computed, the padding masked after (a test per
             * output made nvcc branch per output) */
            const unsigned m01 = (o < a.F ? 0xFFu : 0u) | (o + 1 < a.F ? 0xFF00u : 0u);
#pragma unroll
            for (int i = 0; i < C::MI; i++) {
                unsigned pk[2];
#pragma unroll
                for (int h = 0; h < 2; h++)
                    pk[h] = rq_pair<LUT>(acc[i][j][2 * h] + b0, p0, q0, acc[i][j][2 * h + 1] + b1, p1, q1, a) & m01;
                /* even tq keeps row gid and takes its partner's; odd tq row gid + 8 */
                unsigned give = (tq & 1) ? pk[0] : pk[1];
                unsigned got = __shfl_xor_sync(0xffffffffu, give, 1);
                const int pl = wm * WM + i * 16 + gid + (tq & 1) * 8, ql = (wn * WN + j * 8 + tq * 2) >> 2;
                st[pl * SW + ql] = (tq & 1) ? (got | pk[1] << 16) : (pk[0] | got << 16);
            }
        }
        __syncthreads();
        /* the words out, a fused shortcut's residual word added on the way (every padding
         * channel is zero: masked above, and res_apply masks past F) */
        /* only the tile's words that exist (F4 - n0 of them a row, when the filters end
         * inside the tile: its padding columns are not visited) */
        const int qv = min(BN, a.F4 - n0) >> 2;
#pragma unroll 4
        for (int idx = tid; idx < BM * qv; idx += C::THREADS) {
            const int r = idx / qv, q = idx - r * qv, p = m0 + r, o4 = n0 + q * 4;
            if (p >= a.M) continue;
            st_word_t<fused>(a, p, o4, st[r * SW + q]);
        }
    }
#else
    __trap();   /* code for an older GPU run on a newer one: fail, never a silent wrong answer */
#endif
}

/* Split-K: thread = (pixel, 4 filters): the splits' int32 sums added, then the epilogue. */
static __global__ void mma_reduce(ConvK a, const int32_t *ws, int n_split)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    int cw = a.F4 >> 2;
    if (t >= (long)a.M * cw) return;
    int p = (int)(t / cw), o0 = (int)(t - (long)p * cw) * 4;
    int4 s = make_int4(0, 0, 0, 0);
    for (int z = 0; z < n_split; z++) {
        int4 v = *(const int4 *)(ws + ((long)z * a.M + p) * a.F4 + o0);
        s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;
    }
    int sv[4] = { s.x, s.y, s.z, s.w };
    if (a.fout) {
        int ohw = a.OH * a.OW, b = p / ohw, pix = p - b * ohw;
        for (int j = 0; j < 4; j++)
            if (o0 + j < a.F) ((float *)a.out)[((long)b * a.F + o0 + j) * ohw + pix] = deq_out(sv[j] + a.bq[o0 + j], o0 + j, a);
    } else {
        unsigned word = 0;
        for (int j = 0; j < 4; j++) {
            int8_t v = o0 + j < a.F ? rq_out(sv[j] + a.bq[o0 + j], o0 + j, a) : 0;
            word |= (unsigned)(uint8_t)v << (8 * j);
        }
        st_word(a, p, o0, word);
    }
}

yq_status yq_mma_reduce(const ConvK &a, const int32_t *ws, int split, cudaStream_t s, yq_error *err)
{
    mma_reduce<<<yq_blocks((long)a.M * (a.F4 / 4), 256), 256, 0, s>>>(a, ws, split);
    YQ_CUDA_LAUNCHED();
    return YQ_OK;
}

template <int BM, int BN, int BK, int WM, int WN, int STAGES>
static yq_status launch(const ConvK &a, int split, int32_t *ws, cudaStream_t s, yq_error *err)
{
    typedef MmaCfg<BM, BN, BK, WM, WN, STAGES> C;
    /* a table activation's epilogue is its own instantiation (cuda_conv.cuh: rq_out_t), as
     * is a fused residual's; split-K partials and float outputs share one */
    auto kern = split > 1 || a.fout ? conv_mma<BM, BN, BK, WM, WN, STAGES, false, EP_WIDE>
                : a.res ? (a.lut ? conv_mma<BM, BN, BK, WM, WN, STAGES, true, EP_RES>
                                 : conv_mma<BM, BN, BK, WM, WN, STAGES, false, EP_RES>)
                        : (a.lut ? conv_mma<BM, BN, BK, WM, WN, STAGES, true, EP_S8>
                                 : conv_mma<BM, BN, BK, WM, WN, STAGES, false, EP_S8>);
    int nout = a.fout ? a.F : a.F4;
    dim3 grid(yq_blocks(a.M, BM), yq_blocks(nout, BN), split);
    kern<<<grid, C::THREADS, C::SMEM, s>>>(a, split > 1 ? ws : NULL, split);
    YQ_CUDA_LAUNCHED();
    return split > 1 ? yq_mma_reduce(a, ws, split, s, err) : YQ_OK;
}

template <int BM, int BN, int BK, int WM, int WN, int STAGES>
static yq_status prepare(yq_error *err)
{
    const int sm = MmaCfg<BM, BN, BK, WM, WN, STAGES>::SMEM;
    const cudaFuncAttribute at = cudaFuncAttributeMaxDynamicSharedMemorySize;
    YQ_CUDA_TRY(cudaFuncSetAttribute(conv_mma<BM, BN, BK, WM, WN, STAGES, false, EP_S8>, at, sm));
    YQ_CUDA_TRY(cudaFuncSetAttribute(conv_mma<BM, BN, BK, WM, WN, STAGES, true, EP_S8>, at, sm));
    YQ_CUDA_TRY(cudaFuncSetAttribute(conv_mma<BM, BN, BK, WM, WN, STAGES, false, EP_RES>, at, sm));
    YQ_CUDA_TRY(cudaFuncSetAttribute(conv_mma<BM, BN, BK, WM, WN, STAGES, true, EP_RES>, at, sm));
    YQ_CUDA_TRY(cudaFuncSetAttribute(conv_mma<BM, BN, BK, WM, WN, STAGES, false, EP_WIDE>, at, sm));
    return YQ_OK;
}

/* Per device: the attribute belongs to the device's context.  Not during a stream
 * capture: conv objects are made (and this called) when a plan is built. */
yq_status yq_mma_prepare(yq_error *err)
{
    static unsigned done;
    return yq_once_per_device(&done, err, [&]() -> yq_status {
        yq_status st;
        if ((st = prepare<128, 128, 64, 64, 32, 4>(err)) || (st = prepare<128, 64, 64, 64, 32, 4>(err)) ||
            (st = prepare<64, 128, 64, 32, 64, 4>(err)) || (st = prepare<64, 64, 64, 32, 32, 4>(err)) ||
            (st = prepare<128, 256, 64, 64, 64, 3>(err)) || (st = prepare<128, 128, 128, 64, 32, 3>(err)) ||
            (st = prepare<64, 64, 128, 32, 32, 3>(err)) || (st = prepare<32, 64, 128, 32, 16, 3>(err)))
            return st;
        return YQ_OK;
    });
}

yq_status yq_mma_launch(const ConvK &a, int tile, int split_k, int32_t *ws, cudaStream_t s, yq_error *err)
{
    if (a.u8) return yq_fail(err, YQ_ERR_UNSUPPORTED, "tensor-core conv: uint8 input (the image) runs on dp4a");
    if ((a.C4w * 4) % 16) return yq_fail(err, YQ_ERR_UNSUPPORTED, "tensor-core conv: %d input channels (needs a multiple of 16)", a.C);
    if (a.IPW % 4 || ((uintptr_t)a.in & 15))
        return yq_fail(err, YQ_ERR_UNSUPPORTED, "tensor-core conv: input pixels not 16-byte aligned (a view of %d-byte pixels)", a.IPW * 4);
    if (split_k > 1 && !ws) return yq_fail(err, YQ_ERR_INVALID_ARG, "tensor-core conv: split-K without scratch");
    switch (tile) {
    case 0: return launch<128, 128, 64, 64, 32, 4>(a, split_k, ws, s, err);
    case 1: return launch<128, 64, 64, 64, 32, 4>(a, split_k, ws, s, err);
    case 2: return launch<64, 128, 64, 32, 64, 4>(a, split_k, ws, s, err);
    case 3: return launch<64, 64, 64, 32, 32, 4>(a, split_k, ws, s, err);
    case 4: return launch<128, 256, 64, 64, 64, 3>(a, split_k, ws, s, err);
    case 5: return launch<128, 128, 128, 64, 32, 3>(a, split_k, ws, s, err);
    case 6: return launch<64, 64, 128, 32, 32, 3>(a, split_k, ws, s, err);
    case 7: return launch<32, 64, 128, 32, 16, 3>(a, split_k, ws, s, err);
    }
    return yq_fail(err, YQ_ERR_INVALID_ARG, "tensor-core conv: no tile %d", tile);
}
