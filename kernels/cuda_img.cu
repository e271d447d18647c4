/* The image's conv on int8 tensor cores (family YQ_CONV_IMG, "img_mma"): a 3x3 conv,
 * stride 1 or 2, over the 3-channel uint8 image (NHWC4: one word a pixel), at most 64
 * filters, int8 output.  The dp4a kernels spend 9 dp4a per pixel and filter on it (YOLOv3's
 * layer 0 at batch 32: 216 us, 44 int8 TOP/s, where writing its 177 MB takes 45 us).
 *
 * Here the window's 27 bytes are one K step of mma.sync.m16n8k32.u8.s8: K index k = 3 tap +
 * channel (k < 27; zero above), so a thread's A register (4 consecutive k of one pixel,
 * PTX's fragment layout) takes its bytes from at most two tap words, one byte permute with a
 * selector fixed per lane; the weights' B fragments and the per-channel parameters are
 * loaded once per thread.  Each warp takes 16 pixels at a time (persistent blocks), its
 * 16 x 8 tiles requantized (ir/requant.h, through rq_pair) and staged in shared memory, the
 * 16 pixels' outputs then stored as consecutive 16-byte vectors (words where a view's
 * pixels are only word-aligned), a fused shortcut's residual added on the way out.  Integer
 * sums are exact: the CPU reference's bytes.  Built for sm_80+ (the Makefile), as the
 * CUTLASS and halo families. */
#include "kernels/cuda_conv.cuh"
#include "kernels/cuda_ptx.cuh"

namespace {

__device__ __forceinline__ void mma_u8s8(int *c, const unsigned *a, const unsigned *b)
{
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

constexpr int IMG_WARPS = 4, IMG_T = 32 * IMG_WARPS;

/* NT: 8-filter tiles (F4 <= 8 NT); S: the stride */
template <int NT, int S, bool LUT>
__global__ void __launch_bounds__(IMG_T) conv_img(ConvK a)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
#if __CUDA_ARCH__ >= 800
    constexpr int ROW = 8 * NT + 4;               /* a staged pixel's bytes (a word of padding) */
    __shared__ __align__(16) uint8_t stage[IMG_WARPS][16 * ROW];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tq = lane & 3;
    uint8_t *st = stage[warp];

    /* B: b[j][r] holds k = 16 r + 4 tq .. + 3 of filter 8 j + g (weights [F][3][3][3]) */
    unsigned bf[NT][2];
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int r = 0; r < 2; r++) {
            unsigned w = 0;
            const int n = 8 * j + g;
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int k = 16 * r + 4 * tq + e;
                if (k < 27 && n < a.F) w |= (unsigned)(uint8_t)a.wq[(n * 3 + k % 3) * 9 + k / 3] << (8 * e);
            }
            bf[j][r] = w;
        }
    /* A: register r of a pixel takes bytes from the words of taps ta[r] and ta[r] + 1 */
    int ta[2];
    unsigned sel[2], msk[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int k0 = 16 * r + 4 * tq;
        ta[r] = min(k0 / 3, 8);
        sel[r] = 0;
        msk[r] = 0;
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int k = k0 + e;
            if (k >= 27) continue;
            const int src = (k / 3 - ta[r]) * 4 + k % 3;   /* byte of the pair (word ta, word ta + 1) */
            sel[r] |= (unsigned)src << (4 * e);
            msk[r] |= 0xFFu << (8 * e);
        }
    }
    /* the parameters of this lane's channels: 8 j + 2 tq and + 1 (zero-padded to 16) */
    int bq[NT][2];
    float sp[NT][2], sn[NT][2];
    unsigned pm[NT];                              /* a pair's mask: channels past F are zero */
#pragma unroll
    for (int j = 0; j < NT; j++) {
        const int o = min(8 * j + 2 * tq, ((a.F + 15) & ~15) - 2);
#pragma unroll
        for (int h = 0; h < 2; h++) {
            bq[j][h] = __ldg(a.bq + o + h);
            sp[j][h] = __ldg(a.pos + o + h);
            sn[j][h] = __ldg(a.neg + o + h);
        }
        pm[j] = (8 * j + 2 * tq < a.F ? 0xFFu : 0u) | (8 * j + 2 * tq + 1 < a.F ? 0xFF00u : 0u);
    }

    const unsigned *in = (const unsigned *)a.in;
    const int ohw = a.OH * a.OW, ntiles = (a.M + 15) >> 4;
    const bool v16 = a.F4 % 16 == 0 && a.OPW % 4 == 0 && !((uintptr_t)a.out & 15) && !((uintptr_t)a.res & 15);
    for (int tile = blockIdx.x * IMG_WARPS + warp; tile < ntiles; tile += gridDim.x * IMG_WARPS) {
        const int p0 = tile * 16;
        unsigned af[4];
#pragma unroll
        for (int h = 0; h < 2; h++) {             /* pixel p0 + g (A rows g), p0 + g + 8 (rows g + 8) */
            const int p = min(p0 + g + 8 * h, a.M - 1);
            const int b = p / ohw, rem = p - b * ohw, oy = rem / a.OW, ox = rem - oy * a.OW;
            const int y0 = oy * S - a.pad, x0 = ox * S - a.pad;
            const unsigned *img = in + (long)b * a.IH * a.IW * a.IPW;
#pragma unroll
            for (int r = 0; r < 2; r++) {
                unsigned wv[2];
#pragma unroll
                for (int u = 0; u < 2; u++) {
                    const int tap = ta[r] + u, y = y0 + tap / 3, x = x0 + tap % 3;
                    const bool ok = tap < 9 && (unsigned)y < (unsigned)a.IH && (unsigned)x < (unsigned)a.IW;
                    const int yc = min(max(y, 0), a.IH - 1), xc = min(max(x, 0), a.IW - 1);
                    const unsigned v = __ldg(img + ((long)yc * a.IW + xc) * a.IPW);
                    wv[u] = ok ? v : 0u;
                }
                af[2 * r + h] = __byte_perm(wv[0], wv[1], sel[r]) & msk[r];
            }
        }
        /* register order: a0 row g k 0-15 half, a1 row g + 8, a2 row g k 16-31, a3 row g + 8 */
        const unsigned afr[4] = { af[0], af[1], af[2], af[3] };
#pragma unroll
        for (int j = 0; j < NT; j++) {
            int acc[4] = { 0, 0, 0, 0 };
            mma_u8s8(acc, afr, bf[j]);
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const unsigned pk = rq_pair<LUT>(acc[2 * h] + bq[j][0], sp[j][0], sn[j][0], acc[2 * h + 1] + bq[j][1],
                                                 sp[j][1], sn[j][1], a) & pm[j];
                if (8 * j + 2 * tq < a.F4)
                    *(uint16_t *)(st + (g + 8 * h) * ROW + 8 * j + 2 * tq) = (uint16_t)pk;
            }
        }
        __syncwarp();
        const int npx = min(16, a.M - p0);
        if (v16) {
            const int per = a.F4 >> 4;
            for (int u = lane; u < npx * per; u += 32) {
                const int px = u / per, q = u - px * per;
                const uint8_t *s = st + px * ROW + 16 * q;
                const uint4 v = make_uint4(*(const unsigned *)s, *(const unsigned *)(s + 4), *(const unsigned *)(s + 8),
                                           *(const unsigned *)(s + 12));
                if (a.res) st_piece<true>(a, p0 + px, 16 * q, v, res_piece(a, p0 + px, 16 * q));
                else st_piece<false>(a, p0 + px, 16 * q, v, v);
            }
        } else {
            const int per = a.F4 >> 2;
            for (int u = lane; u < npx * per; u += 32) {
                const int px = u / per, q = u - px * per;
                st_word(a, p0 + px, 4 * q, *(const unsigned *)(st + px * ROW + 4 * q));
            }
        }
        __syncwarp();
    }
#else
    __trap();   /* code for an older GPU run on a newer one: fail, never a silent wrong answer */
#endif
}

template <class Fn>
yq_status pick(int F4, int s, bool lut, Fn &&f)
{
#define YQ_IMG_CASE(NT_, S_)                                                                 \
    if (F4 <= 8 * NT_ && s == S_) return lut ? f(conv_img<NT_, S_, true>) : f(conv_img<NT_, S_, false>);
    YQ_IMG_CASE(1, 1) YQ_IMG_CASE(1, 2) YQ_IMG_CASE(2, 1) YQ_IMG_CASE(2, 2)
    YQ_IMG_CASE(4, 1) YQ_IMG_CASE(4, 2) YQ_IMG_CASE(8, 1) YQ_IMG_CASE(8, 2)
#undef YQ_IMG_CASE
    return YQ_ERR_UNSUPPORTED;
}

}  // namespace

int yq_img_built(void)
{
    cudaFuncAttributes fa;
    int ok = cudaFuncGetAttributes(&fa, conv_img<4, 1, false>) == cudaSuccess && fa.binaryVersion >= 80;
    (void)cudaGetLastError();
    return ok;
}

int yq_img_shape_ok(int cin, int k, int s, int groups, int F)
{
    return cin == 3 && k == 3 && (s == 1 || s == 2) && groups == 1 && F >= 1 && F <= 64;
}

int yq_img_ok(const ConvK &a)
{
    /* the uint8 image, one word a pixel; int8 output */
    return a.u8 && !a.fout && a.C4w == 1 && yq_img_shape_ok(a.C, a.k, a.s, a.groups, a.F);
}

yq_status yq_img_launch(const ConvK &a, int sms, cudaStream_t s, yq_error *err)
{
    if (!yq_img_ok(a)) return yq_fail(err, YQ_ERR_UNSUPPORTED, "img_mma cannot run this conv");
    long tiles = ((long)a.M + 15) / 16, blocks = (tiles + IMG_WARPS - 1) / IMG_WARPS;
    long cap = (long)(sms > 0 ? sms : 1) * 16;    /* persistent: the weights' fragments loaded once a thread */
    unsigned grid = (unsigned)(blocks < cap ? blocks : cap);
    return pick(a.F4, a.s, a.lut != NULL, [&](auto kern) {
        kern<<<grid, IMG_T, 0, s>>>(a);
        YQ_CUDA_LAUNCHED();
        return YQ_OK;
    });
}
