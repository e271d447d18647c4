/* The fast int8 CPU engine's kernels besides the dense conv (kernels/cpu_int8.h): the
 * depthwise conv, maxpool, upsample, shortcut and quantize, on AVX-512 or AVX2, every
 * core through OpenMP.  Each gives yq_ref_*'s bytes for any ISA and any number of threads:
 * integer sums are exact in any order, a maximum does not depend on it, and the float
 * steps are the reference's own IEEE operations lane by lane (ir/requant.h).
 *
 * Depthwise conv.  One (image, channel) plane at a time: the plane is copied, zero-padded,
 * into a per-thread scratch laid out so that the conv becomes a one-dimensional one,
 *
 *     acc[j] = bias + sum_{ky,kx} w[ky][kx] * buf[s*j + roff[ky] + kx]
 *
 * with j = oy * wo + ox (s: the stride).  A scratch row holds wrow = s * wo columns, and
 * padded row r is stored at row (r % s) * hs + r / s (the stride's phases of the rows one
 * after the other), so that output row oy's kernel row ky, padded row s*oy + ky, starts at
 * oy * wrow + roff[ky] = s * (oy * wo) + roff[ky].  The grid's columns ox >= ow are
 * computed and dropped: no row ends or borders to test in the inner loop, and vectors
 * run across rows however narrow the plane.
 *
 * AVX-512: vpdpbusd multiplies 4 unsigned bytes by 4 signed ones and adds the 4 products
 * to an int32 lane.  Lane i of a 64-byte load at buf + s*j + p*s + 4*i holds the 4 bytes
 * kx = 0..3 of output j + (4/s)*i + p: one instruction takes 4 taps of a kernel row for 16
 * outputs, the weights (w[ky][0..3], zero past k) a broadcast dword.  4/s such "phases" p
 * make 64/s consecutive outputs.  The input is stored as x + 128 (int8; uint8 as it is),
 * the padding as 128 (0), and 128 * sum(w) taken off the bias: exact, modulo 2^32.  AVX2
 * has no vpdpbusd (vpmaddubsw saturates): the scratch is int16 and vpmaddwd takes 2 taps
 * for 8 outputs, 2/s phases.  An int8 output without a table is requantized in the same
 * loop (dw_span512's modes); a float or table output goes through yq_cpu8_epilogue_row. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "ir/requant.h"
#include "kernels/cpu_int8.h"
#include "kernels/cpu_int8_simd.h"
#include "kernels/cpu_ref.h"

#define AI static inline __attribute__((always_inline))

/* Threads for tasks units of work: the caller's count (<= 0: OpenMP's), at most one a task. */
static int team(int threads, long tasks)
{
    int nt = threads > 0 ? threads : omp_get_max_threads();
    if (tasks < nt) nt = tasks < 1 ? 1 : (int)tasks;
    return nt;
}

static long lmax(long a, long b) { return a > b ? a : b; }
static long lmin(long a, long b) { return a < b ? a : b; }

/* ============================== depthwise conv ============================== */

#define DW_KMAX 16        /* larger kernels take the scalar path */
#define DW_STRIP 4096     /* grid outputs a strip (int32 accumulators that stay in L1) */

typedef struct dw_plan {
    int h, w, k, s, pad, oh, ow;
    int hs;               /* scratch rows of one phase */
    int wrow, wo;         /* scratch row length (a multiple of s); wrow / s */
    int chunk;            /* outputs a vector step computes, at most: the slack past the grid */
    int strip;            /* output rows a strip */
    long nbuf;            /* scratch elements */
    long roff[DW_KMAX];   /* where kernel row ky starts, from s * j */
} dw_plan;

static int dw_plan_make(dw_plan *pl, yq_shape is, const yq_conv_p *c, yq_shape os, int chunk)
{
    int k = c->size, s = c->stride;
    if (k < 1 || k > DW_KMAX || s < 1 || c->pad < 0 || os.h < 1 || os.w < 1 || is.h < 1 || is.w < 1) return 0;
    pl->h = is.h, pl->w = is.w, pl->k = k, pl->s = s, pl->pad = c->pad, pl->oh = os.h, pl->ow = os.w;
    pl->chunk = chunk;
    /* the padded plane covers the input and every tap of the output (the bottom and right
     * padding are what the output shape implies, as in the reference) */
    long hp = lmax(is.h + 2L * c->pad, (long)s * (os.h - 1) + k);
    long wp = lmax(is.w + 2L * c->pad, (long)s * (os.w - 1) + k);
    pl->hs = (int)((hp + s - 1) / s);
    pl->wrow = (int)((wp + s - 1) / s * s);
    pl->wo = pl->wrow / s;
    long rmax = 0;
    for (int ky = 0; ky < k; ky++) {
        pl->roff[ky] = ((long)(ky % s) * pl->hs + ky / s) * pl->wrow;
        rmax = lmax(rmax, pl->roff[ky]);
    }
    pl->strip = (int)lmin(os.h, lmax(1, DW_STRIP / pl->wo));
    /* the last vector step of the last strip reads past the grid: up to s * (oh * wo +
     * chunk) + rmax + k plus one load's width */
    pl->nbuf = lmax((long)s * pl->hs * pl->wrow, (long)s * ((long)os.h * pl->wo + chunk) + rmax + k + 64) + 64;
    return 1;
}

/* The reference's arithmetic, a row segment at a time (no scratch): the REF path, and
 * shapes the vector paths do not take. */
static void dw_plane_scalar(yq_isa isa, const yq_node *n, const yq_qnode *q, int ch, const void *src, yq_dtype in_t,
                            int h, int w, void *dst)
{
    const yq_conv_p *c = &n->p.conv;
    int k = c->size, oh = n->out.h, ow = n->out.w;
    size_t es = q->dtype == YQ_F32 ? sizeof(float) : 1;
    const int8_t *wk = q->wq + (long)ch * k * k;
    const int8_t *s8 = src;
    const uint8_t *u8 = src;
    int32_t acc[256];
    for (int oy = 0; oy < oh; oy++)
        for (int ox0 = 0; ox0 < ow; ox0 += 256) {
            int cnt = (int)lmin(256, ow - ox0);
            for (int i = 0; i < cnt; i++) {
                int ox = ox0 + i;
                int32_t sum = q->bq[ch];
                for (int ky = 0; ky < k; ky++) {
                    int y = oy * c->stride + ky - c->pad;
                    if (y < 0 || y >= h) continue;
                    for (int kx = 0; kx < k; kx++) {
                        int x = ox * c->stride + kx - c->pad;
                        if (x >= 0 && x < w) {
                            long at = (long)y * w + x;
                            sum += wk[ky * k + kx] * (in_t == YQ_U8 ? (int32_t)u8[at] : (int32_t)s8[at]);
                        }
                    }
                }
                acc[i] = sum;
            }
            yq_cpu8_epilogue_row(isa, n, q, ch, acc, cnt, (char *)dst + ((size_t)oy * ow + ox0) * es);
        }
}

/* The scratch row of padded row r = y + pad, y = 0, 1, ...: its phase r % s and index
 * r / s stepped along (no division a row). */
typedef struct dw_rows { int ph, idx; } dw_rows;
static dw_rows dw_rows_start(const dw_plan *pl) { return (dw_rows){ pl->pad % pl->s, pl->pad / pl->s }; }
static long dw_rows_next(const dw_plan *pl, dw_rows *r)
{
    long at = ((long)r->ph * pl->hs + r->idx) * pl->wrow + pl->pad;
    if (++r->ph == pl->s) r->ph = 0, r->idx++;
    return at;
}

/* How a span stores its outputs.  An int8 output without a table has its requantize fused
 * into the vector steps, either as the reference's operations (DW_LO8: the rounded float's
 * bits, 1.5 * 2^23 + y, have y's low byte, as those of 1.5 * 2^23 end in a zero byte;
 * yq_rne_sat_lo8), or in fewer instructions where the product stays well inside the int32
 * range (DW_PACK, dw_can_pack): vcvtps2dq rounds to nearest even itself, the saturating
 * packs to int8 and a byte max and min clamp, and rounding then clamping gives what
 * clamping then rounding does (the bounds are integers). */
enum { DW_ACC, DW_LO8, DW_PACK };

typedef struct dw_rq { float pos, neg, lo, hi; int8_t qmin, qmax; } dw_rq;

/* sabs: the sum of the channel's |w| */
static int dw_can_pack(const yq_qnode *q, int ch, long sabs, yq_dtype in_t)
{
    if (q->qmin < -128 || q->qmax > 127 || q->qmin > q->qmax) return 0;
    /* |acc| at most (exact in a double) */
    double amax = fabs((double)q->bq[ch]) + (double)sabs * (in_t == YQ_U8 ? 255. : 128.);
    double sp = fabs((double)q->rq_pos[ch]), sn = fabs((double)q->rq_neg[ch]);
    /* |f32(acc) * s| below 2^30 (1 + 2^-23), whatever the roundings: no overflow (NaN fails) */
    return amax * sp < 0x1p30 && amax * sn < 0x1p30;
}

/* ---- AVX-512 ---- */

static const int32_t dw_ilo[16] = { 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23 };
static const int32_t dw_ihi[16] = { 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31 };
static const int64_t dw_qlo[8] = { 0, 8, 1, 9, 2, 10, 3, 11 };
static const int64_t dw_qhi[8] = { 4, 12, 5, 13, 6, 14, 7, 15 };
/* DW_PACK's byte orders, within each 128-bit lane after the packs (see dw_span512) */
static const int8_t dw_sh4[16] = { 0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15 };
static const int8_t dw_sh2[16] = { 0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15 };
static const int64_t dw_q2[8] = { 0, 2, 4, 6, 1, 3, 5, 7 };

/* yq_requant_act_lo8 on 16 lanes: the result in each lane's low byte */
YQ_TARGET_AVX512 AI __m512i rq_lo8_512(__m512i acc, __m512 pos, __m512 neg, __m512 lo, __m512 hi)
{
    __m512 s = _mm512_mask_blend_ps(_mm512_cmplt_epi32_mask(acc, _mm512_setzero_si512()), pos, neg);
    __m512 v = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(acc), s), lo), hi);
    return _mm512_castps_si512(_mm512_add_ps(v, _mm512_set1_ps(YQ_RNE_MAGIC)));
}

/* rne(f32(acc) * s), unclamped (DW_PACK) */
YQ_TARGET_AVX512 AI __m512i rq_rne_512(__m512i acc, __m512 pos, __m512 neg)
{
    __m512 s = _mm512_mask_blend_ps(_mm512_cmplt_epi32_mask(acc, _mm512_setzero_si512()), pos, neg);
    return _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_cvtepi32_ps(acc), s));
}

/* Grid outputs j in [j0, j1) (and up to 64 past j1) at dst + (j - j0): int32 or int8 as
 * M says.  P = 4 / s phases, kernel size K (a constant where inlined with one: the loops
 * unroll).  Lane i of phase p is output P*i + p.  DW_PACK on 2 phases takes two chunks a
 * step (a0, a1, then a2, a3 32 outputs on), so that its packs have 4 vectors. */
YQ_TARGET_AVX512 AI void dw_span512(const dw_plan *pl, const uint8_t *buf, const int32_t *wd, int32_t init, long j0,
                                     long j1, void *dst, const dw_rq *rq, const int P, const int K, const int M)
{
    const int s = pl->s, T = (K + 3) / 4, two = M == DW_PACK && P == 2;
    const int nv = P == 4 || two ? 4 : P, step = two ? 64 : 16 * P;
    /* where phase (or vector) v loads, from a kernel tap's */
    const long o1 = s, o2 = two ? 64 : 2 * s, o3 = two ? 66 : 3 * s;
    long roff[DW_KMAX];   /* (a local copy: the int8 stores below may alias pl) */
    for (int ky = 0; ky < K; ky++) roff[ky] = pl->roff[ky];
    const __m512 pos = _mm512_set1_ps(rq ? rq->pos : 0.f), neg = _mm512_set1_ps(rq ? rq->neg : 0.f);
    const __m512 lo = _mm512_set1_ps(rq ? rq->lo : 0.f), hi = _mm512_set1_ps(rq ? rq->hi : 0.f);
    const __m512i bmin = _mm512_set1_epi8(rq ? rq->qmin : 0), bmax = _mm512_set1_epi8(rq ? rq->qmax : 0);
    const __m512i sh = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(P == 4 ? dw_sh4 : dw_sh2)));
    const __m512i q2 = _mm512_loadu_si512(dw_q2);
    const __m512i ilo = _mm512_loadu_si512(dw_ilo), ihi = _mm512_loadu_si512(dw_ihi);
    const __m512i qlo = _mm512_loadu_si512(dw_qlo), qhi = _mm512_loadu_si512(dw_qhi);
    for (long j = j0; j < j1; j += step) {
        __m512i a0 = _mm512_set1_epi32(init), a1 = a0, a2 = a0, a3 = a0;
        const uint8_t *base = buf + (long)s * j;
#pragma GCC unroll 16
        for (int ky = 0; ky < K; ky++) {
            const uint8_t *r = base + roff[ky];
#pragma GCC unroll 4
            for (int t = 0; t < T; t++) {
                const __m512i wv = _mm512_set1_epi32(wd[ky * T + t]);
                const uint8_t *x = r + 4 * t;
                a0 = _mm512_dpbusd_epi32(a0, _mm512_loadu_si512(x), wv);
                if (nv > 1) a1 = _mm512_dpbusd_epi32(a1, _mm512_loadu_si512(x + o1), wv);
                if (nv > 2) {
                    a2 = _mm512_dpbusd_epi32(a2, _mm512_loadu_si512(x + o2), wv);
                    a3 = _mm512_dpbusd_epi32(a3, _mm512_loadu_si512(x + o3), wv);
                }
            }
        }
        if (M == DW_PACK && nv == 4) {
            /* each 128-bit lane L after the packs: bytes 4v + m from vector v's lane 4L + m */
            __m512i b = _mm512_packs_epi16(_mm512_packs_epi32(rq_rne_512(a0, pos, neg), rq_rne_512(a1, pos, neg)),
                                           _mm512_packs_epi32(rq_rne_512(a2, pos, neg), rq_rne_512(a3, pos, neg)));
            b = _mm512_shuffle_epi8(_mm512_min_epi8(_mm512_max_epi8(b, bmin), bmax), sh);
            /* 4 phases: lane L now holds outputs 16L..16L+15.  Two chunks of 2: outputs
             * 8L..8L+7 then 32+8L..32+8L+7, the qwords put in order */
            if (two) b = _mm512_permutexvar_epi64(q2, b);
            _mm512_storeu_si512((int8_t *)dst + (j - j0), b);
            continue;
        }
        if (M != DW_ACC) {
            int8_t *o = (int8_t *)dst + (j - j0);
            __m512i r0 = rq_lo8_512(a0, pos, neg, lo, hi);
            if (P == 1) {
                _mm_storeu_si128((__m128i *)o, _mm512_cvtepi32_epi8(r0));
                continue;
            }
            /* dword i gathers the phases' low bytes: output P*i + p at byte p */
            __m512i v = _mm512_mask_blend_epi8(0x2222222222222222ull, r0,
                                               _mm512_slli_epi32(rq_lo8_512(a1, pos, neg, lo, hi), 8));
            if (P == 2) {
                _mm256_storeu_si256((__m256i *)o, _mm512_cvtepi32_epi16(v));
                continue;
            }
            v = _mm512_mask_blend_epi8(0x4444444444444444ull, v, _mm512_slli_epi32(rq_lo8_512(a2, pos, neg, lo, hi), 16));
            v = _mm512_mask_blend_epi8(0x8888888888888888ull, v, _mm512_slli_epi32(rq_lo8_512(a3, pos, neg, lo, hi), 24));
            _mm512_storeu_si512(o, v);
            continue;
        }
        int32_t *o = (int32_t *)dst + (j - j0);
        if (P == 4) {   /* a 4 x 16 transpose */
            __m512i t01l = _mm512_permutex2var_epi32(a0, ilo, a1), t01h = _mm512_permutex2var_epi32(a0, ihi, a1);
            __m512i t23l = _mm512_permutex2var_epi32(a2, ilo, a3), t23h = _mm512_permutex2var_epi32(a2, ihi, a3);
            _mm512_storeu_si512(o, _mm512_permutex2var_epi64(t01l, qlo, t23l));
            _mm512_storeu_si512(o + 16, _mm512_permutex2var_epi64(t01l, qhi, t23l));
            _mm512_storeu_si512(o + 32, _mm512_permutex2var_epi64(t01h, qlo, t23h));
            _mm512_storeu_si512(o + 48, _mm512_permutex2var_epi64(t01h, qhi, t23h));
        } else if (P == 2) {
            _mm512_storeu_si512(o, _mm512_permutex2var_epi32(a0, ilo, a1));
            _mm512_storeu_si512(o + 16, _mm512_permutex2var_epi32(a0, ihi, a1));
        } else {
            _mm512_storeu_si512(o, a0);
        }
    }
}

YQ_TARGET_AVX512 static void dw_span512_any(const dw_plan *pl, const uint8_t *buf, const int32_t *wd, int32_t init,
                                            long j0, long j1, void *dst, const dw_rq *rq, int mode)
{
    int P = 4 / pl->s;
#define DW_K(p_, m_) \
    if (pl->k == 3) dw_span512(pl, buf, wd, init, j0, j1, dst, rq, p_, 3, m_); \
    else if (pl->k == 5) dw_span512(pl, buf, wd, init, j0, j1, dst, rq, p_, 5, m_); \
    else dw_span512(pl, buf, wd, init, j0, j1, dst, rq, p_, pl->k, m_);
#define DW_P(p_) \
    if (P == p_) { \
        if (mode == DW_PACK && P > 1) { DW_K(p_, DW_PACK) } \
        else if (mode != DW_ACC) { DW_K(p_, DW_LO8) } \
        else dw_span512(pl, buf, wd, init, j0, j1, dst, rq, p_, pl->k, DW_ACC); \
        return; \
    }
    DW_P(4)
    DW_P(2)
    DW_P(1)
#undef DW_P
#undef DW_K
}

/* One plane into the scratch: x + 128 for int8 (the top bit flipped), uint8 as is. */
YQ_TARGET_AVX512 static void dw_fill512(const dw_plan *pl, const void *src, yq_dtype in_t, uint8_t *buf)
{
    const __m512i flip = _mm512_set1_epi8(in_t == YQ_U8 ? 0 : (char)0x80);
    const uint8_t *sp = src;
    dw_rows rows = dw_rows_start(pl);
    for (int y = 0; y < pl->h; y++, sp += pl->w) {
        uint8_t *d = buf + dw_rows_next(pl, &rows);
        for (int x = 0; x < pl->w; x += 64) {
            __mmask64 m = _bzhi_u64(~0ull, (unsigned)lmin(64, pl->w - x));
            _mm512_mask_storeu_epi8(d + x, m, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, sp + x), flip));
        }
    }
}

/* rows of n bytes, src stride ss, dst stride ds */
YQ_TARGET_AVX512 static void copy_rows512(int8_t *dst, long ds, const int8_t *src, long ss, int rows, int n)
{
    for (int r = 0; r < rows; r++, dst += ds, src += ss)
        for (int x = 0; x < n; x += 64) {
            __mmask64 m = n - x >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (n - x)) - 1);
            _mm512_mask_storeu_epi8(dst + x, m, _mm512_maskz_loadu_epi8(m, src + x));
        }
}

/* ---- AVX2 ---- */

/* 8 int32 lanes -> their low bytes (the (int8_t) cast, whatever the range) */
YQ_TARGET_AVX2 static inline __m128i lo8_256(__m256i r)
{
    r = _mm256_and_si256(r, _mm256_set1_epi32(0xFF));
    __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    return _mm_packus_epi16(w, w);
}

YQ_TARGET_AVX2 AI __m256i rq_lo8_256(__m256i acc, __m256 pos, __m256 neg, __m256 lo, __m256 hi)
{
    __m256 s = _mm256_blendv_ps(pos, neg, _mm256_castsi256_ps(acc));   /* the sign bit picks neg */
    __m256 v = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(acc), s), lo), hi);
    return _mm256_castps_si256(_mm256_add_ps(v, _mm256_set1_ps(YQ_RNE_MAGIC)));
}

/* As dw_span512 (DW_ACC or DW_LO8, rq set), 2 / s phases of 8 lanes. */
YQ_TARGET_AVX2 AI void dw_span256(const dw_plan *pl, const int16_t *buf, const int32_t *wd, int32_t init, long j0,
                                   long j1, void *dst, const dw_rq *rq, const int P, const int K)
{
    const int s = pl->s, T = (K + 1) / 2;
    const __m256 pos = _mm256_set1_ps(rq ? rq->pos : 0.f), neg = _mm256_set1_ps(rq ? rq->neg : 0.f);
    const __m256 lo = _mm256_set1_ps(rq ? rq->lo : 0.f), hi = _mm256_set1_ps(rq ? rq->hi : 0.f);
    long roff[DW_KMAX];   /* (a local copy: the int8 stores below may alias pl) */
    for (int ky = 0; ky < K; ky++) roff[ky] = pl->roff[ky];
    for (long j = j0; j < j1; j += 8 * P) {
        __m256i a0 = _mm256_set1_epi32(init), a1 = a0;
        const int16_t *base = buf + (long)s * j;
#pragma GCC unroll 16
        for (int ky = 0; ky < K; ky++) {
            const int16_t *r = base + roff[ky];
#pragma GCC unroll 8
            for (int t = 0; t < T; t++) {
                const __m256i wv = _mm256_set1_epi32(wd[ky * T + t]);
                const int16_t *x = r + 2 * t;
                a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)x), wv));
                if (P > 1) a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(x + s)), wv));
            }
        }
        /* lane i of phase p is output P*i + p */
        if (rq) {
            int8_t *o = (int8_t *)dst + (j - j0);
            __m256i r0 = rq_lo8_256(a0, pos, neg, lo, hi);
            if (P == 1) {
                _mm_storel_epi64((__m128i *)o, lo8_256(r0));
                continue;
            }
            /* word i: outputs 2i and 2i + 1 */
            __m256i w = _mm256_or_si256(_mm256_and_si256(r0, _mm256_set1_epi32(0xFF)),
                                        _mm256_and_si256(_mm256_slli_epi32(rq_lo8_256(a1, pos, neg, lo, hi), 8),
                                                         _mm256_set1_epi32(0xFF00)));
            _mm_storeu_si128((__m128i *)o, _mm_packus_epi32(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1)));
            continue;
        }
        int32_t *o = (int32_t *)dst + (j - j0);
        if (P == 2) {
            __m256i l = _mm256_unpacklo_epi32(a0, a1), h = _mm256_unpackhi_epi32(a0, a1);
            _mm256_storeu_si256((__m256i *)o, _mm256_permute2x128_si256(l, h, 0x20));
            _mm256_storeu_si256((__m256i *)(o + 8), _mm256_permute2x128_si256(l, h, 0x31));
        } else {
            _mm256_storeu_si256((__m256i *)o, a0);
        }
    }
}

YQ_TARGET_AVX2 static void dw_span256_any(const dw_plan *pl, const int16_t *buf, const int32_t *wd, int32_t init,
                                          long j0, long j1, void *dst, const dw_rq *rq)
{
    int P = 2 / pl->s;
#define DW_CASE(p_) \
    if (P == p_) { \
        if (pl->k == 3) dw_span256(pl, buf, wd, init, j0, j1, dst, rq, p_, 3); \
        else if (pl->k == 5) dw_span256(pl, buf, wd, init, j0, j1, dst, rq, p_, 5); \
        else dw_span256(pl, buf, wd, init, j0, j1, dst, rq, p_, pl->k); \
        return; \
    }
    DW_CASE(2)
    DW_CASE(1)
#undef DW_CASE
}

YQ_TARGET_AVX2 static void dw_fill256(const dw_plan *pl, const void *src, yq_dtype in_t, int16_t *buf)
{
    dw_rows rows = dw_rows_start(pl);
    for (int y = 0; y < pl->h; y++) {
        int16_t *d = buf + dw_rows_next(pl, &rows);
        int x = 0;
        if (in_t == YQ_U8) {
            const uint8_t *sp = (const uint8_t *)src + (long)y * pl->w;
            for (; x + 16 <= pl->w; x += 16)
                _mm256_storeu_si256((__m256i *)(d + x), _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(sp + x))));
            for (; x < pl->w; x++) d[x] = sp[x];
        } else {
            const int8_t *sp = (const int8_t *)src + (long)y * pl->w;
            for (; x + 16 <= pl->w; x += 16)
                _mm256_storeu_si256((__m256i *)(d + x), _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(sp + x))));
            for (; x < pl->w; x++) d[x] = sp[x];
        }
    }
}

YQ_TARGET_AVX2 static void copy_rows256(int8_t *dst, long ds, const int8_t *src, long ss, int rows, int n)
{
    for (int r = 0; r < rows; r++, dst += ds, src += ss) {
        int x = 0;
        for (; x + 32 <= n; x += 32)
            _mm256_storeu_si256((__m256i *)(dst + x), _mm256_loadu_si256((const __m256i *)(src + x)));
        for (; x < n; x++) dst[x] = src[x];
    }
}

/* One thread's scratch: the padded plane, the strip's grid, its rows compacted. */
typedef struct dw_scratch { void *buf; int32_t *grid, *acc; } dw_scratch;

static void dw_plane_vec(yq_isa isa, const dw_plan *pl, const yq_node *n, const yq_qnode *q, int ch, const void *src,
                         yq_dtype in_t, void *dst, const dw_scratch *sc)
{
    void *buf = sc->buf;
    int k = pl->k;
    const int8_t *wk = q->wq + (long)ch * k * k;
    int32_t wd[DW_KMAX * DW_KMAX / 2 + DW_KMAX];   /* (k rows of T dwords, and a copy's overrun) */
    int32_t init = q->bq[ch];
    long sum = 0, sabs = 0;
    for (int i = 0; i < k * k; i++) sum += wk[i], sabs += wk[i] < 0 ? -wk[i] : wk[i];
    /* a kernel row's taps side by side, zeros past k (x86 is little-endian: byte or int16
     * lane b of a dword is its tap b); each row's copy (fixed size) runs past its T dwords
     * into the next row's, written after it */
    if (isa == YQ_ISA_AVX512) {   /* dwords of 4 int8 taps */
        int T = (k + 3) / 4;
        for (int ky = 0; ky < k; ky++) {
            int8_t row[DW_KMAX] = { 0 };
            for (int kx = 0; kx < k; kx++) row[kx] = wk[ky * k + kx];
            memcpy(wd + ky * T, row, sizeof row);
        }
        /* int8 input: 128 * sum(w) off the bias (modulo 2^32) */
        if (in_t != YQ_U8) init = (int32_t)((uint32_t)init - 128u * (uint32_t)sum);
        dw_fill512(pl, src, in_t, buf);
    } else {   /* dwords of 2 int16 taps */
        int T = (k + 1) / 2;
        for (int ky = 0; ky < k; ky++) {
            int16_t row[DW_KMAX] = { 0 };
            for (int kx = 0; kx < k; kx++) row[kx] = wk[ky * k + kx];
            memcpy(wd + ky * T, row, sizeof row);
        }
        dw_fill256(pl, src, in_t, buf);
    }
    int fused = q->dtype != YQ_F32 && !q->lut;
    int mode = !fused ? DW_ACC : isa == YQ_ISA_AVX512 && dw_can_pack(q, ch, sabs, in_t) ? DW_PACK : DW_LO8;
    dw_rq rq = { fused ? q->rq_pos[ch] : 0.f, fused ? q->rq_neg[ch] : 0.f, (float)q->qmin, (float)q->qmax,
                 (int8_t)(mode == DW_PACK ? q->qmin : 0), (int8_t)(mode == DW_PACK ? q->qmax : 0) };
    size_t es = q->dtype == YQ_F32 ? sizeof(float) : 1;
    for (int oy0 = 0; oy0 < pl->oh; oy0 += pl->strip) {
        int oy1 = (int)lmin(pl->oh, oy0 + pl->strip), rows = oy1 - oy0;
        long j0 = (long)oy0 * pl->wo, j1 = (long)oy1 * pl->wo;
        char *o = (char *)dst + (size_t)oy0 * pl->ow * es;
        if (isa == YQ_ISA_AVX512) dw_span512_any(pl, buf, wd, init, j0, j1, sc->grid, fused ? &rq : NULL, mode);
        else dw_span256_any(pl, buf, wd, init, j0, j1, sc->grid, fused ? &rq : NULL);
        /* the grid's columns past ow dropped: the strip's rows, contiguous in the output */
        if (fused) {
            if (isa == YQ_ISA_AVX512) copy_rows512((int8_t *)o, pl->ow, (const int8_t *)sc->grid, pl->wo, rows, pl->ow);
            else copy_rows256((int8_t *)o, pl->ow, (const int8_t *)sc->grid, pl->wo, rows, pl->ow);
            continue;
        }
        for (int r = 0; r < rows; r++)
            memcpy(sc->acc + (long)r * pl->ow, sc->grid + (long)r * pl->wo, sizeof(int32_t) * (size_t)pl->ow);
        yq_cpu8_epilogue_row(isa, n, q, ch, sc->acc, (long)rows * pl->ow, o);
    }
}

void yq_cpu8_dwconv(yq_isa isa, int threads, const yq_graph *g, const yq_node *n, const yq_qnode *q,
                    const void *in, yq_dtype in_t, void *out, int batch)
{
    yq_shape is = yq_node_in_shape(g, n);
    int C = is.c;
    long tasks = (long)batch * C, plane = (long)is.h * is.w, np = (long)n->out.h * n->out.w;
    size_t es = q->dtype == YQ_F32 ? sizeof(float) : 1;
    dw_plan pl;
    int vec = (isa == YQ_ISA_AVX512 && (n->p.conv.stride == 1 || n->p.conv.stride == 2 || n->p.conv.stride == 4) &&
               dw_plan_make(&pl, is, &n->p.conv, n->out, 64)) ||
              (isa == YQ_ISA_AVX2 && (n->p.conv.stride == 1 || n->p.conv.stride == 2) &&
               dw_plan_make(&pl, is, &n->p.conv, n->out, 16 / n->p.conv.stride));
    /* the scratch's value of a zero: 128 (int8 input, +128 on AVX-512), else 0 */
    int zero = isa == YQ_ISA_AVX512 && in_t != YQ_U8 ? 0x80 : 0;
    size_t eb = isa == YQ_ISA_AVX512 ? 1 : sizeof(int16_t), nb = vec ? eb * (size_t)pl.nbuf : 0;
#pragma omp parallel num_threads(team(threads, tasks))
    {
        dw_scratch sc = { NULL, NULL, NULL };
        int ok = 0;
        if (vec) {
            sc.buf = malloc(nb);
            sc.grid = malloc(sizeof(int32_t) * ((size_t)pl.strip * pl.wo + (size_t)pl.chunk));
            sc.acc = malloc(sizeof(int32_t) * (size_t)pl.strip * pl.ow);
            ok = sc.buf && sc.grid && sc.acc;
            /* the padding (and the slack past the plane) is written once: each plane
             * rewrites the same interior */
            if (ok) memset(sc.buf, zero, nb);
        }
#pragma omp for schedule(static)   /* (every plane costs the same) */
        for (long t = 0; t < tasks; t++) {
            int ch = (int)(t % C);
            const void *src = (const char *)in + t * plane;
            void *dst = (char *)out + (size_t)t * np * es;
            if (ok) dw_plane_vec(isa, &pl, n, q, ch, src, in_t, dst, &sc);
            else dw_plane_scalar(isa, n, q, ch, src, in_t, is.h, is.w, dst);   /* (or out of memory) */
        }
        free(sc.buf);
        free(sc.grid);
        free(sc.acc);
    }
}

/* ================================= maxpool ================================== */

/* Where the reference skips a tap outside the plane, a max with -128 (its initial value)
 * changes nothing: the plane is given -128 borders, and the window's maximum is taken down
 * the columns, then along the rows (a maximum in any order).
 *
 * Stride 1 (the SPP blocks' pools, small planes): the whole plane at once, copied into a
 * scratch of rows wp = ow + k - 1 wide, oh + k - 1 of them; both maxima are then
 * one-dimensional over the flattened scratch, taps wp apart down the columns and 1 apart
 * along the rows, and the outputs of the columns past ow are dropped (as the depthwise
 * conv's grid): vectors of 64 whatever the plane's width.
 *
 * Size 2, stride 2 has a path of its own (mp22_plane*).  Other strides, a row at a time: V
 * holds the column maxima of an output row's window rows (V[v] for column v - left), and
 * the output is a max over V; stride 2 splits V's even and odd columns first. */

/* dst[j] = max over i < k of src[j + i * d], j < n rounded up to a vector */
YQ_TARGET_AVX512 static void mp_max1d512(int8_t *dst, const int8_t *src, long n, int k, long d)
{
    for (long j = 0; j < n; j += 64) {
        __m512i v = _mm512_loadu_si512(src + j);
        for (int i = 1; i < k; i++) v = _mm512_max_epi8(v, _mm512_loadu_si512(src + j + i * d));
        _mm512_storeu_si512(dst + j, v);
    }
}

YQ_TARGET_AVX2 static void mp_max1d256(int8_t *dst, const int8_t *src, long n, int k, long d)
{
    for (long j = 0; j < n; j += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(src + j));
        for (int i = 1; i < k; i++) v = _mm256_max_epi8(v, _mm256_loadu_si256((const __m256i *)(src + j + i * d)));
        _mm256_storeu_si256((__m256i *)(dst + j), v);
    }
}

/* Stride 1's scratch: the padded plane P (hp rows of wp), the column maxima M (oh rows),
 * the row maxima R (oh rows), each with a vector's slack and more past the reads */
typedef struct mp1_plan { int left, hp, wp; long np, nm; } mp1_plan;

static mp1_plan mp1_plan_make(const yq_pool_p *p, yq_shape os)
{
    mp1_plan m;
    m.left = p->pad / 2;
    m.wp = os.w + p->size - 1;
    m.hp = os.h + p->size - 1;
    m.nm = (long)os.h * m.wp + 64 + p->size + 64;         /* M's reads: the row maxima's taps */
    m.np = lmax((long)m.hp * m.wp, m.nm + (long)(p->size - 1) * m.wp) + 64;   /* P's: the columns' */
    return m;
}

static void mp1_plane(yq_isa isa, const mp1_plan *m, yq_shape is, int k, yq_shape os, const int8_t *src, int8_t *dst,
                      int8_t *P, int8_t *M, int8_t *R)
{
    /* the input's rows and columns that some window reads, in place; the rest stays -128 */
    int rows = (int)lmin(is.h, m->hp - m->left), cols = (int)lmin(is.w, m->wp - m->left);
    long n = (long)os.h * m->wp;
    int8_t *p0 = P + (long)m->left * m->wp + m->left;
    if (isa == YQ_ISA_AVX512) {
        if (rows > 0 && cols > 0) copy_rows512(p0, m->wp, src, is.w, rows, cols);
        mp_max1d512(M, P, n, k, m->wp);
        mp_max1d512(R, M, n, k, 1);
        copy_rows512(dst, os.w, R, m->wp, os.h, os.w);
    } else {
        if (rows > 0 && cols > 0) copy_rows256(p0, m->wp, src, is.w, rows, cols);
        mp_max1d256(M, P, n, k, m->wp);
        mp_max1d256(R, M, n, k, 1);
        copy_rows256(dst, os.w, R, m->wp, os.h, os.w);
    }
}

/* V[x] = max over rows r < nr of src[r * w + x], x < w */
YQ_TARGET_AVX512 static void mp_vmax512(int8_t *V, const int8_t *src, int w, int nr)
{
    for (int x = 0; x < w; x += 64) {
        __mmask64 m = w - x >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (w - x)) - 1);
        __m512i v = _mm512_maskz_loadu_epi8(m, src + x);
        for (int r = 1; r < nr; r++) v = _mm512_max_epi8(v, _mm512_maskz_loadu_epi8(m, src + (long)r * w + x));
        _mm512_mask_storeu_epi8(V + x, m, v);
    }
}

/* dst[ox] = max over i < ka of A[ox + i] and i < kb of B[ox + i], ox < ow */
YQ_TARGET_AVX512 static void mp_hmax512(int8_t *dst, const int8_t *A, int ka, const int8_t *B, int kb, int ow)
{
    for (int x = 0; x < ow; x += 64) {
        __mmask64 m = ow - x >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (ow - x)) - 1);
        __m512i v = _mm512_loadu_si512(A + x);
        for (int i = 1; i < ka; i++) v = _mm512_max_epi8(v, _mm512_loadu_si512(A + x + i));
        for (int i = 0; i < kb; i++) v = _mm512_max_epi8(v, _mm512_loadu_si512(B + x + i));
        _mm512_mask_storeu_epi8(dst + x, m, v);
    }
}

/* E[c] = V[2c], O[c] = V[2c + 1], c < ne (rounded up to 32) */
YQ_TARGET_AVX512 static void mp_split512(int8_t *E, int8_t *O, const int8_t *V, int ne)
{
    for (int c = 0; c < ne; c += 32) {
        __m512i v = _mm512_loadu_si512(V + 2 * c);
        _mm256_storeu_si256((__m256i *)(E + c), _mm512_cvtepi16_epi8(v));
        _mm256_storeu_si256((__m256i *)(O + c), _mm512_cvtepi16_epi8(_mm512_srli_epi16(v, 8)));
    }
}

YQ_TARGET_AVX2 static void mp_vmax256(int8_t *V, const int8_t *src, int w, int nr)
{
    int x = 0;
    for (; x + 32 <= w; x += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(src + x));
        for (int r = 1; r < nr; r++) v = _mm256_max_epi8(v, _mm256_loadu_si256((const __m256i *)(src + (long)r * w + x)));
        _mm256_storeu_si256((__m256i *)(V + x), v);
    }
    for (; x < w; x++) {
        int8_t m = src[x];
        for (int r = 1; r < nr; r++) m = src[(long)r * w + x] > m ? src[(long)r * w + x] : m;
        V[x] = m;
    }
}

YQ_TARGET_AVX2 static void mp_hmax256(int8_t *dst, const int8_t *A, int ka, const int8_t *B, int kb, int ow)
{
    int x = 0;
    for (; x + 32 <= ow; x += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(A + x));
        for (int i = 1; i < ka; i++) v = _mm256_max_epi8(v, _mm256_loadu_si256((const __m256i *)(A + x + i)));
        for (int i = 0; i < kb; i++) v = _mm256_max_epi8(v, _mm256_loadu_si256((const __m256i *)(B + x + i)));
        _mm256_storeu_si256((__m256i *)(dst + x), v);
    }
    for (; x < ow; x++) {
        int8_t m = A[x];
        for (int i = 1; i < ka; i++) m = A[x + i] > m ? A[x + i] : m;
        for (int i = 0; i < kb; i++) m = B[x + i] > m ? B[x + i] : m;
        dst[x] = m;
    }
}

YQ_TARGET_AVX2 static void mp_split256(int8_t *E, int8_t *O, const int8_t *V, int ne)
{
    /* per 128-bit lane: the even bytes, then the odd ones; then the lanes' halves paired */
    const __m256i sh = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
                                        0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    for (int c = 0; c < ne; c += 16) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(V + 2 * c));
        v = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(v, sh), 0xD8);
        _mm_storeu_si128((__m128i *)(E + c), _mm256_castsi256_si128(v));
        _mm_storeu_si128((__m128i *)(O + c), _mm256_extracti128_si256(v, 1));
    }
}

static void mp_hmax_scalar(int8_t *dst, const int8_t *V, int k, int s, int ow)
{
    for (int ox = 0; ox < ow; ox++) {
        int8_t m = V[(long)s * ox];
        for (int i = 1; i < k; i++) m = V[(long)s * ox + i] > m ? V[(long)s * ox + i] : m;
        dst[ox] = m;
    }
}

/* Size 2, stride 2, no padding in front (yolov3-tiny's and yolov4-tiny's pools): the two
 * rows' maximum, then each byte pair's as int16 lanes (the low byte sign-extended, the
 * high one shifted down), narrowed back to bytes.  Past the plane, -128. */
YQ_TARGET_AVX512 static void mp22_plane512(yq_shape is, yq_shape os, const int8_t *src, int8_t *dst)
{
    const __m512i floor = _mm512_set1_epi8(-128);
    for (int oy = 0; oy < os.h; oy++) {
        const int8_t *r0 = src + 2L * oy * is.w, *r1 = r0 + is.w;
        int two = 2 * oy + 1 < is.h;
        for (int ox = 0; ox < os.w; ox += 32) {
            __mmask64 m = _bzhi_u64(~0ull, (unsigned)lmin(64, is.w - 2L * ox));
            __m512i a = _mm512_mask_loadu_epi8(floor, m, r0 + 2 * ox);
            if (two) a = _mm512_max_epi8(a, _mm512_mask_loadu_epi8(floor, m, r1 + 2 * ox));
            __m512i v = _mm512_max_epi16(_mm512_srai_epi16(_mm512_slli_epi16(a, 8), 8), _mm512_srai_epi16(a, 8));
            _mm256_mask_storeu_epi8(dst + (long)oy * os.w + ox, _bzhi_u32(~0u, (unsigned)lmin(32, os.w - ox)),
                                    _mm512_cvtepi16_epi8(v));
        }
    }
}

YQ_TARGET_AVX2 static void mp22_plane256(yq_shape is, yq_shape os, const int8_t *src, int8_t *dst)
{
    for (int oy = 0; oy < os.h; oy++) {
        const int8_t *r0 = src + 2L * oy * is.w, *r1 = r0 + is.w;
        int two = 2 * oy + 1 < is.h, ox = 0;
        int8_t *d = dst + (long)oy * os.w;
        for (; ox + 16 <= os.w && 2 * ox + 32 <= is.w; ox += 16) {
            __m256i a = _mm256_loadu_si256((const __m256i *)(r0 + 2 * ox));
            if (two) a = _mm256_max_epi8(a, _mm256_loadu_si256((const __m256i *)(r1 + 2 * ox)));
            __m256i v = _mm256_max_epi16(_mm256_srai_epi16(_mm256_slli_epi16(a, 8), 8), _mm256_srai_epi16(a, 8));
            /* (packs saturate: the values are int8's already) */
            __m128i b = _mm_packs_epi16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
            _mm_storeu_si128((__m128i *)(d + ox), b);
        }
        for (; ox < os.w; ox++) {
            int m = -128;
            for (int y = 2 * oy; y < 2 * oy + 2 && y < is.h; y++)
                for (int x = 2 * ox; x < 2 * ox + 2 && x < is.w; x++)
                    if (src[(long)y * is.w + x] > m) m = src[(long)y * is.w + x];
            d[ox] = (int8_t)m;
        }
    }
}

static void mp_plane_vec(yq_isa isa, yq_shape is, const yq_pool_p *p, yq_shape os, const int8_t *src, int8_t *dst,
                         int8_t *V, int8_t *E, int8_t *O)
{
    int off = -p->pad / 2, left = -off, k = p->size, s = p->stride;
    int ne = os.w + k / 2 + 1;   /* E and O entries read, from s == 2's taps */
    for (int oy = 0; oy < os.h; oy++) {
        int y0 = off + oy * s;
        int ya = (int)lmax(0, y0), yb = (int)lmin(is.h, (long)y0 + k);
        int8_t *d = dst + (long)oy * os.w;
        if (ya >= yb) {   /* no row of the window inside the plane */
            memset(d, -128, (size_t)os.w);
            continue;
        }
        if (isa == YQ_ISA_AVX512) mp_vmax512(V + left, src + (long)ya * is.w, is.w, yb - ya);
        else mp_vmax256(V + left, src + (long)ya * is.w, is.w, yb - ya);
        if (s == 2) {   /* the even taps from V's even columns, the odd ones from the odd */
            if (isa == YQ_ISA_AVX512) {
                mp_split512(E, O, V, ne);
                mp_hmax512(d, E, (k + 1) / 2, O, k / 2, os.w);
            } else {
                mp_split256(E, O, V, ne);
                mp_hmax256(d, E, (k + 1) / 2, O, k / 2, os.w);
            }
        } else {
            mp_hmax_scalar(d, V, k, s, os.w);
        }
    }
}

void yq_cpu8_maxpool(yq_isa isa, int threads, yq_shape is, const yq_pool_p *p, yq_shape os, const int8_t *in,
                     int8_t *out, int batch)
{
    long planes = (long)batch * is.c, ip = (long)is.h * is.w, op = (long)os.h * os.w;
    int off = -p->pad / 2, s1 = p->stride == 1, p2 = p->size == 2 && p->stride == 2 && off == 0;
    int vec = isa != YQ_ISA_REF && off <= 0 && p->size >= 1 && p->stride >= 1 && os.h > 0 && os.w > 0;
    mp1_plan m = mp1_plan_make(p, os);
    /* rows: V, column v being input column v + off, covers the plane and every tap, and a
     * vector's width past them (the loads of the last, partial, vector); E and O as long */
    long L = lmax((long)is.w - off, (long)p->stride * (os.w - 1) + p->size) + 160;
    size_t bytes = vec && !p2 ? (s1 ? (size_t)(m.np + 2 * m.nm) : 3 * (size_t)L) : 0;
    yq_shape one = { 1, is.h, is.w }, one_o = { 1, os.h, os.w };
#pragma omp parallel num_threads(team(threads, planes))
    {
        /* -128 once: the borders stay (each plane rewrites the same interior); the rest
         * is written before it is read but for the vectors' lanes past the outputs */
        int8_t *buf = vec ? malloc(bytes) : NULL;
        if (buf) memset(buf, -128, bytes);
#pragma omp for schedule(static)
        for (long t = 0; t < planes; t++) {
            if (vec && p2) {
                if (isa == YQ_ISA_AVX512) mp22_plane512(is, os, in + t * ip, out + t * op);
                else mp22_plane256(is, os, in + t * ip, out + t * op);
            } else if (!buf) yq_ref_maxpool(one, p, one_o, in + t * ip, out + t * op, 1);   /* (or out of memory) */
            else if (s1)
                mp1_plane(isa, &m, is, p->size, os, in + t * ip, out + t * op, buf, buf + m.np, buf + m.np + m.nm);
            else mp_plane_vec(isa, is, p, os, in + t * ip, out + t * op, buf, buf + L, buf + 2 * L);
        }
        free(buf);
    }
}

/* ================================= upsample ================================= */

/* d[x] = s[x / 2], x < 2w: each byte doubled (zero-extended to 16 bits, or'ed with itself
 * shifted up a byte) */
YQ_TARGET_AVX512 static void up2_row512(int8_t *d, const int8_t *s, int w)
{
    for (int x = 0; x < w; x += 32) {
        __mmask32 m = w - x >= 32 ? ~(__mmask32)0 : (((__mmask32)1 << (w - x)) - 1);
        __m512i v = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(m, s + x));
        v = _mm512_or_si512(v, _mm512_slli_epi16(v, 8));
        __mmask64 m2 = w - x >= 32 ? ~(__mmask64)0 : (((__mmask64)1 << (2 * (w - x))) - 1);
        _mm512_mask_storeu_epi8(d + 2 * x, m2, v);
    }
}

YQ_TARGET_AVX2 static void up2_row256(int8_t *d, const int8_t *s, int w)
{
    int x = 0;
    for (; x + 16 <= w; x += 16) {
        __m256i v = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(s + x)));
        _mm256_storeu_si256((__m256i *)(d + 2 * x), _mm256_or_si256(v, _mm256_slli_epi16(v, 8)));
    }
    for (; x < w; x++) d[2 * x] = d[2 * x + 1] = s[x];
}

void yq_cpu8_upsample(yq_isa isa, int threads, yq_shape is, int stride, const int8_t *in, int8_t *out, int batch)
{
    long planes = (long)batch * is.c, ip = (long)is.h * is.w;
    long ow = (long)is.w * stride, op = ip * stride * stride;
    yq_shape one = { 1, is.h, is.w };
#pragma omp parallel for num_threads(team(threads, planes)) schedule(static)
    for (long t = 0; t < planes; t++) {
        const int8_t *src = in + t * ip;
        int8_t *dst = out + t * op;
        if (isa == YQ_ISA_REF || stride < 1) {
            yq_ref_upsample(one, stride, src, dst, 1);
            continue;
        }
        for (int y = 0; y < is.h; y++) {
            const int8_t *s = src + (long)y * is.w;
            int8_t *d = dst + (long)y * stride * ow;
            if (stride == 1) memcpy(d, s, (size_t)is.w);
            else if (stride == 2 && isa == YQ_ISA_AVX512) up2_row512(d, s, is.w);
            else if (stride == 2) up2_row256(d, s, is.w);
            else
                for (int x = 0; x < is.w; x++) memset(d + (long)x * stride, s[x], (size_t)stride);
            for (int r = 1; r < stride; r++) memcpy(d + r * ow, d, (size_t)ow);
        }
    }
}

/* ================================= shortcut ================================= */

#define EW_BLOCK 16384   /* elements a task of the elementwise ops */

/* Lane by lane yq_add_requant: two multiplies, one add, the negative side's multiply,
 * the clamp and the round (ir/requant.h); the int32 results' low bytes, as (int8_t). */
YQ_TARGET_AVX512 static long add_span512(const int8_t *a, const int8_t *b, const yq_qnode *q, int8_t *out, long n)
{
    const __m512 sa = _mm512_set1_ps(q->sa), sb = _mm512_set1_ps(q->sb), sn = _mm512_set1_ps(q->sneg);
    const __m512 lo = _mm512_set1_ps((float)q->qmin), hi = _mm512_set1_ps((float)q->qmax);
    long i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 fa = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(a + i))));
        __m512 fb = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(b + i))));
        __m512 v = _mm512_add_ps(_mm512_mul_ps(fa, sa), _mm512_mul_ps(fb, sb));
        v = _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), v, sn);
        _mm_storeu_si128((__m128i *)(out + i), _mm512_cvtepi32_epi8(yq_v16_rne_sat(v, lo, hi)));
    }
    return i;
}

YQ_TARGET_AVX2 static long add_span256(const int8_t *a, const int8_t *b, const yq_qnode *q, int8_t *out, long n)
{
    const __m256 sa = _mm256_set1_ps(q->sa), sb = _mm256_set1_ps(q->sb), sn = _mm256_set1_ps(q->sneg);
    const __m256 lo = _mm256_set1_ps((float)q->qmin), hi = _mm256_set1_ps((float)q->qmax);
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 fa = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(a + i))));
        __m256 fb = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(b + i))));
        __m256 v = _mm256_add_ps(_mm256_mul_ps(fa, sa), _mm256_mul_ps(fb, sb));
        v = _mm256_blendv_ps(v, _mm256_mul_ps(v, sn), _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ));
        _mm_storel_epi64((__m128i *)(out + i), lo8_256(yq_v8_rne_sat(v, lo, hi)));
    }
    return i;
}

void yq_cpu8_shortcut(yq_isa isa, int threads, long n_per_image, const int8_t *a, const int8_t *b, const yq_qnode *q,
                      int8_t *out, int batch)
{
    long n = n_per_image * batch, nb = (n + EW_BLOCK - 1) / EW_BLOCK;
#pragma omp parallel for num_threads(team(threads, nb)) schedule(static)
    for (long t = 0; t < nb; t++) {
        long i0 = t * EW_BLOCK, cnt = lmin(EW_BLOCK, n - i0), done = 0;
        if (isa == YQ_ISA_AVX512) done = add_span512(a + i0, b + i0, q, out + i0, cnt);
        else if (isa == YQ_ISA_AVX2) done = add_span256(a + i0, b + i0, q, out + i0, cnt);
        yq_ref_shortcut(cnt - done, a + i0 + done, b + i0 + done, q, out + i0 + done, 1);
    }
}

/* ================================= quantize ================================= */

/* roundf(x / scale), exactly: the true division, then ties away from zero as trunc(d) plus
 * one away from zero where |d - trunc(d)| >= 0.5.  d - trunc(d) is exact (the fraction's
 * bits are d's), as is trunc(d) +- 1 (|d| < 2^23 there; from 2^23 on d is an integer and
 * its fraction 0).  An infinite d has a NaN fraction: no step, d itself; NaN stays NaN. */
YQ_TARGET_AVX512 static inline __m512 round_div512(const float *x, __m512 scale)
{
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u), absm = _mm512_set1_epi32(0x7FFFFFFF);
    __m512 d = _mm512_div_ps(_mm512_loadu_ps(x), scale);
    __m512 t = _mm512_roundscale_ps(d, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m512 f = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(_mm512_sub_ps(d, t)), absm));
    __m512 one = _mm512_castsi512_ps(
        _mm512_or_si512(_mm512_castps_si512(_mm512_set1_ps(1.f)), _mm512_and_si512(_mm512_castps_si512(d), sign)));
    return _mm512_mask_add_ps(t, _mm512_cmp_ps_mask(f, _mm512_set1_ps(.5f), _CMP_GE_OQ), t, one);
}

YQ_TARGET_AVX2 static inline __m256 round_div256(const float *x, __m256 scale)
{
    const __m256 sign = _mm256_set1_ps(-0.f);
    __m256 d = _mm256_div_ps(_mm256_loadu_ps(x), scale);
    __m256 t = _mm256_round_ps(d, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256 f = _mm256_andnot_ps(sign, _mm256_sub_ps(d, t));
    __m256 one = _mm256_or_ps(_mm256_set1_ps(1.f), _mm256_and_ps(d, sign));
    return _mm256_add_ps(t, _mm256_and_ps(one, _mm256_cmp_ps(f, _mm256_set1_ps(.5f), _CMP_GE_OQ)));
}

/* v != v ? 0 : v < qmin ? qmin : v > qmax ? qmax : v, as yq_quantize (the clamp's bounds
 * are the integers themselves: the caller checks that they are floats, in order) */
YQ_TARGET_AVX512 static long quant_span512(const float *x, long n, float scale, int32_t qmin, int32_t qmax, int8_t *q)
{
    const __m512 s = _mm512_set1_ps(scale), lo = _mm512_set1_ps((float)qmin), hi = _mm512_set1_ps((float)qmax);
    long i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = round_div512(x + i, s);
        __mmask16 num = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
        __m512i r = _mm512_maskz_mov_epi32(num, _mm512_cvttps_epi32(_mm512_min_ps(_mm512_max_ps(v, lo), hi)));
        _mm_storeu_si128((__m128i *)(q + i), _mm512_cvtepi32_epi8(r));
    }
    return i;
}

YQ_TARGET_AVX2 static long quant_span256(const float *x, long n, float scale, int32_t qmin, int32_t qmax, int8_t *q)
{
    const __m256 s = _mm256_set1_ps(scale), lo = _mm256_set1_ps((float)qmin), hi = _mm256_set1_ps((float)qmax);
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = round_div256(x + i, s);
        __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
        __m256i r = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(v, lo), hi));
        _mm_storel_epi64((__m128i *)(q + i), lo8_256(_mm256_andnot_si256(_mm256_castps_si256(nan), r)));
    }
    return i;
}

/* yq_quantize_u8: NaN and negatives 0 (vmaxps(v, 0) gives 0 for a NaN), above 255 255 */
YQ_TARGET_AVX512 static long quant_u8_span512(const float *x, long n, float scale, uint8_t *q)
{
    const __m512 s = _mm512_set1_ps(scale), hi = _mm512_set1_ps(255.f);
    long i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_min_ps(_mm512_max_ps(round_div512(x + i, s), _mm512_setzero_ps()), hi);
        _mm_storeu_si128((__m128i *)(q + i), _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(v)));
    }
    return i;
}

YQ_TARGET_AVX2 static long quant_u8_span256(const float *x, long n, float scale, uint8_t *q)
{
    const __m256 s = _mm256_set1_ps(scale), hi = _mm256_set1_ps(255.f);
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_min_ps(_mm256_max_ps(round_div256(x + i, s), _mm256_setzero_ps()), hi);
        _mm_storel_epi64((__m128i *)(q + i), lo8_256(_mm256_cvttps_epi32(v)));
    }
    return i;
}

void yq_cpu8_quantize(yq_isa isa, int threads, const float *x, long n, float scale, int32_t qmin, int32_t qmax,
                      int8_t *q)
{
    /* bounds that are floats exactly, in order: else the reference's code alone */
    if (!(qmin <= qmax && qmin >= -(1 << 24) && qmax <= (1 << 24))) isa = YQ_ISA_REF;
    long nb = (n + EW_BLOCK - 1) / EW_BLOCK;
#pragma omp parallel for num_threads(team(threads, nb)) schedule(static)
    for (long t = 0; t < nb; t++) {
        long i0 = t * EW_BLOCK, cnt = lmin(EW_BLOCK, n - i0), done = 0;
        if (isa == YQ_ISA_AVX512) done = quant_span512(x + i0, cnt, scale, qmin, qmax, q + i0);
        else if (isa == YQ_ISA_AVX2) done = quant_span256(x + i0, cnt, scale, qmin, qmax, q + i0);
        yq_quantize(x + i0 + done, cnt - done, scale, qmin, qmax, q + i0 + done);
    }
}

/* x[i] = (float)q[i] * scale, as yq_dequantize: the byte's float is exact, then one IEEE
 * multiply */
YQ_TARGET_AVX512 static long dequant_span512(const void *q, int u8, long n, float scale, float *x)
{
    const __m512 s = _mm512_set1_ps(scale);
    long i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i b = _mm_loadu_si128((const __m128i *)((const unsigned char *)q + i));
        __m512i w = u8 ? _mm512_cvtepu8_epi32(b) : _mm512_cvtepi8_epi32(b);
        _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_cvtepi32_ps(w), s));
    }
    return i;
}

YQ_TARGET_AVX2 static long dequant_span256(const void *q, int u8, long n, float scale, float *x)
{
    const __m256 s = _mm256_set1_ps(scale);
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i b = _mm_loadl_epi64((const __m128i *)((const unsigned char *)q + i));
        __m256i w = u8 ? _mm256_cvtepu8_epi32(b) : _mm256_cvtepi8_epi32(b);
        _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_cvtepi32_ps(w), s));
    }
    return i;
}

void yq_cpu8_dequantize(yq_isa isa, int threads, const void *q, yq_dtype t, long n, float scale, float *x)
{
    const int u8 = t == YQ_U8;
    long nb = (n + EW_BLOCK - 1) / EW_BLOCK;
#pragma omp parallel for num_threads(team(threads, nb)) schedule(static)
    for (long b = 0; b < nb; b++) {
        long i0 = b * EW_BLOCK, cnt = lmin(EW_BLOCK, n - i0), done = 0;
        const unsigned char *qb = (const unsigned char *)q + i0;
        if (isa == YQ_ISA_AVX512) done = dequant_span512(qb, u8, cnt, scale, x + i0);
        else if (isa == YQ_ISA_AVX2) done = dequant_span256(qb, u8, cnt, scale, x + i0);
        yq_dequantize(qb + done, t, cnt - done, scale, x + i0 + done);
    }
}

void yq_cpu8_quantize_u8(yq_isa isa, int threads, const float *x, long n, float scale, uint8_t *q)
{
    long nb = (n + EW_BLOCK - 1) / EW_BLOCK;
#pragma omp parallel for num_threads(team(threads, nb)) schedule(static)
    for (long t = 0; t < nb; t++) {
        long i0 = t * EW_BLOCK, cnt = lmin(EW_BLOCK, n - i0), done = 0;
        if (isa == YQ_ISA_AVX512) done = quant_u8_span512(x + i0, cnt, scale, q + i0);
        else if (isa == YQ_ISA_AVX2) done = quant_u8_span256(x + i0, cnt, scale, q + i0);
        yq_quantize_u8(x + i0 + done, cnt - done, scale, q + i0 + done);
    }
}
