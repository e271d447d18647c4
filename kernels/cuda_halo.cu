/* Int8 3x3 convolution over few channels on tensor cores (sm_80 and newer), bit-exact
 * with yq_ref_conv: the halo family.
 *
 * The implicit-GEMM families (kernels/cuda_mma.cu, kernels/cuda_cutlass.cu) gather each
 * output pixel's K row of k x k x c4 bytes from global memory, chunk by chunk.  On a 3x3
 * conv over 16 to 64 channels (YOLOv3's layers 1 and 3: 32 channels, 208x208 and
 * 416x416 at batch 32) K is 144 to 576 bytes, so their K loop is two to nine chunks
 * long: the pipeline never fills, and every input pixel is fetched nine times.  Here a
 * block is persistent: it loads its BN filters' weights (at most 37 KB) into shared
 * memory once, then walks output tiles of TH x TW pixels of one image, each tile's
 * input window (its halo: (TH - 1) s + 3 rows of (TW - 1) s + 3 pixels) copied once by
 * cp.async while the previous tile is multiplied (two buffers).  A tap of the 3x3
 * window is then an address: ldmatrix takes each lane's row address, so the A
 * fragment of tap (ky, kx) is read straight from the halo at the shifted pixels, no
 * im2col.  K runs over 16-byte chunks (tap, 16 channels), two chunks per
 * mma.sync.m16n8k32 (an odd count ends with a zero weight chunk).
 *
 * Each warp computes 32 output pixels x BN filters.  The epilogue is the MMA family's
 * (yq_requant_act, or the table by yq_requant_out: ir/requant.h, the CPU reference's
 * functions), its bias and scales held in registers for the block's whole life; the
 * int8 outputs are staged in shared memory and leave as 16-byte vectors (4-byte words
 * where the output view is not 16-byte aligned), a fused [shortcut]'s residual read
 * and added (res_apply) on the way out.  The int32 sums are exact (|sum| < 2^31), so
 * any order gives the CPU's bytes.
 *
 * Constraints: groups 1, 3x3 kernels, stride 1 or 2, 16, 32 or 64 channel bytes per
 * input pixel (c4), int8 input and output, 16-byte aligned input pixels.  Built for
 * sm_80+ only, as the CUTLASS family (the Makefile): yq_halo_built() says whether the
 * running device has code here. */
#include "kernels/cuda_conv.cuh"
#include "kernels/cuda_ptx.cuh"

/* { TH, TW, BN }: output rows x columns of a tile, filters per block */
const yq_halo_tile yq_halo_tiles[YQ_HALO_TILES] = {
    { 8, 16, 64 },
    { 16, 16, 64 },
    { 8, 16, 32 },
};

template <int TH, int TW, int BN, int C4, int S>
struct HaloCfg {
    static constexpr int THREADS = TH * TW;          /* a warp per 32 output pixels */
    static constexpr int MI = 2, NI = BN / 8;
    static constexpr int CH = C4 / 16;               /* 16-byte chunks per pixel */
    static constexpr int Q = 9 * CH;                 /* K chunks: (tap, chunk) */
    static constexpr int KS = (Q + 1) / 2, QP = 2 * KS;   /* mma K steps; chunks with the zero one */
    static constexpr int HH = (TH - 1) * S + 3, HW = (TW - 1) * S + 3;
    /* a halo pixel's bytes: an odd number of 16-byte units, so that the 8 rows of an
     * ldmatrix (8 neighbouring pixels at stride 1) fall in 8 different bank groups */
    static constexpr int PIXB = 16 * ((CH & 1) ? CH : CH + 1);
    static constexpr int HALO = (HH * HW * PIXB + 127) / 128 * 128;
    static constexpr int WROW = QP * 16 + 16;        /* a filter's K row, padded (odd units) */
    static constexpr int WB = (BN * WROW + 127) / 128 * 128;
    static constexpr int OROW = BN + 16;             /* a staged output pixel */
    static constexpr int SMEM = WB + 2 * HALO + TH * TW * OROW;
    static_assert(TW % 16 == 0 && (TH * TW) % 32 == 0, "a fragment's 16 pixels in one tile row");
    static_assert(BN % 16 == 0, "ldmatrix pairs of 8 filters");

    /* the halo byte offset of K chunk q (tap q / CH, chunk q % CH) from a pixel's window
     * origin; the zero weight chunk (q >= Q) reads any valid bytes */
    static __host__ __device__ constexpr int qoff(int q)
    {
        return q >= Q ? 0 : (((q / CH) / 3) * HW + (q / CH) % 3) * PIXB + (q % CH) * 16;
    }
};

template <int TH, int TW, int BN, int C4, int S, bool LUT, int EP>
__global__ void __launch_bounds__(TH * TW)
conv_halo(ConvK a, int tiles_x, int tiles_y, int vec)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
#if __CUDA_ARCH__ >= 800
    typedef HaloCfg<TH, TW, BN, C4, S> C;
    extern __shared__ __align__(128) unsigned char smem[];
    unsigned char *sW = smem, *sO = smem + C::WB + 2 * C::HALO;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int n0 = blockIdx.y * BN;
    const int per_img = tiles_x * tiles_y, ntiles = per_img * (a.M / (a.OH * a.OW));
    const int8_t *in = (const int8_t *)a.in;
    const long ips = (long)a.IPW * 4;

    /* the block's weights, once: BN rows of QP chunks, zero past F and past Q */
    {
        const int8_t *w = (const int8_t *)a.w32;
        const long ktot = (long)a.K4 * 4;
        for (int i = tid; i < BN * C::QP; i += C::THREADS) {
            int r = i / C::QP, q = i - r * C::QP, f = n0 + r;
            bool v = f < a.F && q < C::Q;
            cp16(smem_addr(sW + r * C::WROW + q * 16), v ? w + f * ktot + q * 16 : w, v);
        }
    }
    auto load_halo = [&](int t, unsigned char *sH) {
        int b = t / per_img, r = t - b * per_img, ty = r / tiles_x, tx = r - ty * tiles_x;
        int iy0 = ty * TH * S - a.pad, ix0 = tx * TW * S - a.pad;
        const int8_t *img = in + (long)b * a.IH * a.IW * ips;
        for (int i = tid; i < C::HH * C::HW * C::CH; i += C::THREADS) {
            int pix = i / C::CH, ch = i - pix * C::CH, hy = pix / C::HW, hx = pix - hy * C::HW;
            int y = iy0 + hy, x = ix0 + hx;
            bool v = (unsigned)y < (unsigned)a.IH && (unsigned)x < (unsigned)a.IW;
            cp16(smem_addr(sH + pix * C::PIXB + ch * 16), v ? img + ((long)y * a.IW + x) * ips + ch * 16 : in, v);
        }
    };
    if (blockIdx.x < ntiles) load_halo(blockIdx.x, smem + C::WB);
    cp_commit();

    /* this thread's output channels (j * 8 + 2 tq + e of the block's): bias and scales,
     * and which of each pair exist (a mask of the packed pair) */
    const int gid = lane >> 2, tq = lane & 3;
    int32_t rb[C::NI][2];
    float rp[C::NI][2], rn[C::NI][2];
    unsigned mk[C::NI];
#pragma unroll
    for (int j = 0; j < C::NI; j++) {
        mk[j] = 0;
#pragma unroll
        for (int e = 0; e < 2; e++) {
            int o = n0 + j * 8 + tq * 2 + e;
            bool ok = o < a.F;
            rb[j][e] = ok ? __ldg(a.bq + o) : 0;
            rp[j][e] = ok ? __ldg(a.pos + o) : 0.0f;
            rn[j][e] = ok ? __ldg(a.neg + o) : 0.0f;
            mk[j] |= ok ? 0xFFu << (8 * e) : 0u;
        }
    }

    /* ldmatrix rows: A, the window origin of pixel warp * 32 + i * 16 + (lane % 16) (its
     * K chunk: lane / 16 of the pair); B, filter (lane % 8) + 8 (lane / 16), chunk (lane / 8) % 2 */
    const int hsel = lane >> 4;
    int aoff[C::MI];
#pragma unroll
    for (int i = 0; i < C::MI; i++) {
        int m = warp * 32 + i * 16 + (lane & 15), py = m / TW, px = m - py * TW;
        aoff[i] = (py * S * C::HW + px * S) * C::PIXB;
    }
    unsigned char *so = sO + (warp * 32 + gid) * C::OROW + tq * 2;   /* this thread's staging bytes */
    const unsigned wlane = smem_addr(sW) + ((lane & 7) + ((lane >> 4) << 3)) * C::WROW + ((lane >> 3) & 1) * 16;

    int buf = 0;
    for (int t = blockIdx.x; t < ntiles; t += gridDim.x, buf ^= 1) {
        unsigned char *sH = smem + C::WB + buf * C::HALO;
        if (t + (int)gridDim.x < ntiles) load_halo(t + gridDim.x, smem + C::WB + (buf ^ 1) * C::HALO);
        cp_commit();
        cp_wait<1>();            /* this tile's halo (and, the first time, the weights) */
        __syncthreads();

        /* the sums start at the bias (int32 additions are exact in any order) */
        int acc[C::MI][C::NI][4];
#pragma unroll
        for (int i = 0; i < C::MI; i++)
#pragma unroll
            for (int j = 0; j < C::NI; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) acc[i][j][e] = rb[j][e & 1];
        const unsigned hb = smem_addr(sH);
#pragma unroll
        for (int ks = 0; ks < C::KS; ks++) {
            const int off = hsel ? C::qoff(2 * ks + 1) : C::qoff(2 * ks);
            unsigned af[C::MI][4], bf[C::NI][2];
#pragma unroll
            for (int i = 0; i < C::MI; i++) ldm_x4(hb + aoff[i] + off, af[i][0], af[i][1], af[i][2], af[i][3]);
#pragma unroll
            for (int j = 0; j < C::NI; j += 2)
                ldm_x4(wlane + j * 8 * C::WROW + ks * 32, bf[j][0], bf[j][1], bf[j + 1][0], bf[j + 1][1]);
#pragma unroll
            for (int i = 0; i < C::MI; i++)
#pragma unroll
                for (int j = 0; j < C::NI; j++) mma_s8(acc[i][j], af[i], bf[j]);
        }

        /* requantized into the staging tile: rows gid and gid + 8 of each 16 x 8 piece,
         * columns 2 tq and 2 tq + 1 (padding channels past F are 0), without branches
         * (a test per output made nvcc branch per output: 64 serial blocks) */
#pragma unroll
        for (int i = 0; i < C::MI; i++)
#pragma unroll
            for (int j = 0; j < C::NI; j++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    unsigned pk = rq_pair<LUT>(acc[i][j][2 * h], rp[j][0], rn[j][0], acc[i][j][2 * h + 1], rp[j][1], rn[j][1], a);
                    *(uint16_t *)(so + (i * 16 + h * 8) * C::OROW + j * 8) = (uint16_t)(pk & mk[j]);
                }
        __syncthreads();

        /* out: 16 channels of a pixel per step */
        {
            constexpr int CPP = BN / 16;
            int b = t / per_img, r = t - b * per_img, ty = r / tiles_x, tx = r - ty * tiles_x;
            for (int i = tid; i < TH * TW * CPP; i += C::THREADS) {
                int m = i / CPP, c = i - m * CPP, py = m / TW, px = m - py * TW;
                int oy = ty * TH + py, ox = tx * TW + px, ch0 = n0 + c * 16;
                if (oy >= a.OH || ox >= a.OW || ch0 >= a.F4) continue;
                long p = ((long)b * a.OH + oy) * a.OW + ox;
                const uint4 v = *(const uint4 *)(sO + m * C::OROW + c * 16);
                if (vec) {
                    st_piece<EP == EP_RES>(a, p, ch0, v, EP == EP_RES ? res_piece(a, p, ch0) : v);
                } else {
                    const unsigned wv[4] = { v.x, v.y, v.z, v.w };
#pragma unroll
                    for (int k = 0; k < 4; k++) {
                        if (ch0 + 4 * k >= a.F4) break;
                        st_word_t<EP == EP_RES>(a, p, ch0 + 4 * k, wv[k]);
                    }
                }
            }
        }
        __syncthreads();         /* the staging tile and this halo buffer are free again */
    }
    cp_wait<0>();
#else
    __trap();   /* code for an older GPU run on a newer one: fail, never a silent wrong answer */
#endif
}

namespace {

/* One instantiation: shared memory, occupancy (cached per kernel) and launch. */
template <int TH, int TW, int BN, int C4, int S, bool LUT, int EP>
struct Halo {
    typedef HaloCfg<TH, TW, BN, C4, S> C;
    static constexpr int kSmem = C::SMEM;
    static auto kernel() { return conv_halo<TH, TW, BN, C4, S, LUT, EP>; }
    /* resident blocks per multiprocessor, found when the kernel is prepared (not during
     * a stream capture) */
    static int &per_sm()
    {
        static int n;
        return n;
    }
    static yq_status prepare(int max_smem, yq_error *err)
    {
        if (kSmem > max_smem) return YQ_OK;   /* never launched: yq_halo_ok refuses it */
        YQ_CUDA_TRY(cudaFuncSetAttribute(kernel(), cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
        int n = 0;
        YQ_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel(), C::THREADS, kSmem));
        per_sm() = n > 0 ? n : 1;
        return YQ_OK;
    }
    static yq_status launch(const ConvK &a, int sms, int vec, cudaStream_t s, yq_error *err)
    {
        if (!per_sm()) return yq_fail(err, YQ_ERR_INVALID_ARG, "halo conv: launched before yq_halo_prepare");
        int tx = (a.OW + TW - 1) / TW, ty = (a.OH + TH - 1) / TH;
        long ntiles = (long)tx * ty * (a.M / (a.OH * a.OW));
        long blocks = (long)sms * per_sm();
        int ny = (a.F4 + BN - 1) / BN;
        /* each filter block is a grid of its own over the tiles: fill the GPU once */
        long gx = (blocks + ny - 1) / ny;
        dim3 grid((unsigned)(gx < ntiles ? gx : ntiles), (unsigned)ny);
        kernel()<<<grid, C::THREADS, kSmem, s>>>(a, tx, ty, vec);
        YQ_CUDA_LAUNCHED();
        return YQ_OK;
    }
};

/* f(Halo<...>{}) for tile t, c4, stride, table and epilogue; YQ_ERR_UNSUPPORTED when no
 * instantiation matches. */
template <int TH, int TW, int BN, class Fn>
yq_status pick_c4(int c4, int s, bool lut, bool res, Fn &&f)
{
#define YQ_HALO_CASE(C4_, S_)                                                                                  \
    if (c4 == C4_ && s == S_)                                                                                  \
        return lut ? (res ? f(Halo<TH, TW, BN, C4_, S_, true, EP_RES>{}) : f(Halo<TH, TW, BN, C4_, S_, true, EP_S8>{})) \
                   : (res ? f(Halo<TH, TW, BN, C4_, S_, false, EP_RES>{}) : f(Halo<TH, TW, BN, C4_, S_, false, EP_S8>{}));
    YQ_HALO_CASE(16, 1) YQ_HALO_CASE(16, 2) YQ_HALO_CASE(32, 1) YQ_HALO_CASE(32, 2) YQ_HALO_CASE(64, 1)
    YQ_HALO_CASE(64, 2)
#undef YQ_HALO_CASE
    return YQ_ERR_UNSUPPORTED;
}

template <class Fn>
yq_status pick(int tile, int c4, int s, bool lut, bool res, Fn &&f)
{
    switch (tile) {
    case 0: return pick_c4<8, 16, 64>(c4, s, lut, res, f);
    case 1: return pick_c4<16, 16, 64>(c4, s, lut, res, f);
    case 2: return pick_c4<8, 16, 32>(c4, s, lut, res, f);
    }
    return YQ_ERR_UNSUPPORTED;
}

int max_optin_smem()
{
    int d = 0, v = 0;
    if (cudaGetDevice(&d) != cudaSuccess || cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, d) != cudaSuccess) {
        (void)cudaGetLastError();
        return 48 * 1024;
    }
    return v;
}

}  // namespace

int yq_halo_built(void)
{
    cudaFuncAttributes fa;
    int ok = cudaFuncGetAttributes(&fa, conv_halo<8, 16, 64, 32, 1, false, EP_S8>) == cudaSuccess && fa.binaryVersion >= 80;
    (void)cudaGetLastError();
    return ok;
}

int yq_halo_shape_ok(int tile, int c4, int k, int s, int groups, int F)
{
    if (tile < 0 || tile >= YQ_HALO_TILES || k != 3 || groups != 1 || F < 1) return 0;
    int smem = 0;
    if (pick(tile, c4, s, false, false, [&](auto h) { smem = decltype(h)::kSmem; return YQ_OK; }) != YQ_OK) return 0;
    static int optin;
    if (!optin) optin = max_optin_smem();
    return smem <= optin;
}

int yq_halo_ok(const ConvK &a, int tile)
{
    if (a.fout || a.u8 || a.groups != 1 || !yq_halo_shape_ok(tile, a.C4w * 4, a.k, a.s, a.groups, a.F)) return 0;
    /* 16-byte cp.async of the input pixels */
    return (a.IPW * 4) % 16 == 0 && ((uintptr_t)a.in & 15) == 0;
}

yq_status yq_halo_prepare(yq_error *err)
{
    static unsigned done;
    return yq_once_per_device(&done, err, [&]() -> yq_status {
        int optin = max_optin_smem();
        static const int c4s[] = { 16, 32, 64 };
        for (int t = 0; t < YQ_HALO_TILES; t++)
            for (int c = 0; c < 3; c++)
                for (int s = 1; s <= 2; s++)
                    for (int v = 0; v < 4; v++) {
                        yq_status st = pick(t, c4s[c], s, v & 1, v >> 1,
                                            [&](auto h) { return decltype(h)::prepare(optin, err); });
                        if (st) return st;
                    }
        return YQ_OK;
    });
}

yq_status yq_halo_launch(const ConvK &a, int tile, int sms, cudaStream_t s, yq_error *err)
{
    if (!yq_halo_ok(a, tile)) return yq_fail(err, YQ_ERR_UNSUPPORTED, "halo tile %d cannot run this conv", tile);
    /* 16-byte stores (and residual loads) where the output view allows them */
    int vec = a.F4 % 16 == 0 && a.OPW % 4 == 0 && ((uintptr_t)a.out & 15) == 0 && (!a.res || ((uintptr_t)a.res & 15) == 0);
    return pick(tile, a.C4w * 4, a.s, a.lut != NULL, a.res != NULL,
                [&](auto h) { return decltype(h)::launch(a, sms > 0 ? sms : 1, vec, s, err); });
}
