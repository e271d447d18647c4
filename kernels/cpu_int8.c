/* The fast int8 CPU engine's dense convs (kernels/cpu_int8.h): an im2col into packed
 * bytes and an integer GEMM on AVX-512 VNNI (vpdpbusd) or AVX2 (vpmaddwd), the epilogue
 * fused, every core through OpenMP.  Byte-identical to yq_ref_conv.
 *
 * A conv of one group is out[o][p] = bias[o] + sum_k w[o][k] * x[k][p] over K = cin*k*k
 * (x: the im2col of the input, k = (c, ky, kx)).  The packing:
 *
 *   col    [pixel block of 32][K/4][32 pixels][4 bytes]   the 4 consecutive k of a pixel
 *                                                         side by side: one dword lane
 *   weights[filter block][K/4][MR filters][4 bytes]       (AVX2: int16, 2 filters)
 *
 * so that one vpdpbusd multiplies 16 pixels' 4 bytes by one filter's 4 weights (a
 * broadcast dword) and adds the 4 products into each pixel's int32 lane.  vpdpbusd takes
 * unsigned bytes times signed ones: an int8 input is stored as x + 128 (the top bit
 * flipped) and the filter's 128 * sum(w) taken off its bias, which is exact (integer
 * arithmetic modulo 2^32, the true sum fitting an int32 as in the reference).  AVX2 has
 * no such instruction: bytes are sign-extended to int16 and multiplied in pairs by
 * vpmaddwd (int16 products summed into int32: exact, no saturation), a uint8 input
 * stored as x - 128 with the opposite correction.  Padding is x = 0, stored as the
 * offset itself, so the correction covers it as well. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "ir/requant.h"
#include "kernels/cpu_int8.h"
#include "kernels/cpu_int8_simd.h"
#include "kernels/cpu_ref.h"

#define PX 32        /* pixels a block */
#define MR 8         /* filters a block (AVX-512) */
#define MR2 2        /* filters a block (AVX2) */

typedef struct conv8 {
    int M, K, K4, G, MB;      /* per group: filters, im2col rows, K / 4 rounded up, groups, filter blocks */
    void *wp;                 /* packed weights, [G][MB][K4][mr][4] (int8, or int16 on AVX2) */
    int32_t *wsum;            /* per filter: the sum of its weights */
} conv8;

struct yq_cpu8 {
    const yq_graph *g;
    yq_isa isa;
    int threads;
    conv8 *conv;              /* per node (M == 0: not a dense int8 conv) */
    unsigned char *col;       /* the packed im2col of one image and group */
    size_t col_bytes;
    unsigned char *rows;      /* the unpacked im2col of a conv that is not pointwise */
    size_t rows_bytes;
    int32_t *bias;            /* a conv's corrected biases (the most filters of any conv) */
};

static int nthreads(const yq_cpu8 *e) { return e->threads > 0 ? e->threads : omp_get_max_threads(); }

const yq_graph *yq_cpu8_graph(const yq_cpu8 *e) { return e->g; }
yq_isa yq_cpu8_isa(const yq_cpu8 *e) { return e->isa; }
int    yq_cpu8_threads(const yq_cpu8 *e) { return nthreads(e); }

static int dense(const yq_graph *g, int id)
{
    const yq_node *n = &g->nodes[id];
    return n->op == YQ_OP_CONV && !g->q[id].float_op && g->q[id].wq && !yq_conv_is_depthwise(g, n);
}

static yq_status pack_conv(const yq_graph *g, int id, yq_isa isa, conv8 *c, yq_error *err)
{
    const yq_node *n = &g->nodes[id];
    const yq_qnode *q = &g->q[id];
    yq_shape is = yq_node_in_shape(g, n);
    int mr = isa == YQ_ISA_AVX512 ? MR : MR2, es = isa == YQ_ISA_AVX512 ? 1 : 2;
    c->G = n->p.conv.groups;
    c->M = n->p.conv.filters / c->G;
    c->K = is.c / c->G * n->p.conv.size * n->p.conv.size;
    c->K4 = (c->K + 3) / 4;
    c->MB = (c->M + mr - 1) / mr;
    size_t cnt = (size_t)c->G * c->MB * c->K4 * mr * 4;
    c->wp = calloc(cnt, (size_t)es);
    c->wsum = malloc(sizeof(int32_t) * (size_t)n->p.conv.filters);
    if (!c->wp || !c->wsum) return yq_fail(err, YQ_ERR_NOMEM, "layer %d: out of memory packing int8 weights", n->layer);
    for (int gi = 0; gi < c->G; gi++)
        for (int o = 0; o < c->M; o++) {
            const int8_t *w = q->wq + ((long)gi * c->M + o) * c->K;
            int32_t s = 0;
            for (int k = 0; k < c->K; k++) {
                size_t at = ((((size_t)gi * c->MB + o / mr) * c->K4 + k / 4) * mr + o % mr) * 4 + k % 4;
                if (es == 1) ((int8_t *)c->wp)[at] = w[k];
                else ((int16_t *)c->wp)[at] = w[k];
                s += w[k];
            }
            c->wsum[gi * c->M + o] = s;
        }
    return YQ_OK;
}

yq_status yq_cpu8_new(const yq_graph *g, yq_isa isa, int threads, yq_cpu8 **out, yq_error *err)
{
    *out = NULL;
    if (!g->q) return yq_fail(err, YQ_ERR_INVALID_ARG, "not an int8 graph");
    if (isa > yq_cpu_isa()) isa = yq_cpu_isa();
    yq_cpu8 *e = calloc(1, sizeof *e);
    if (!e || !(e->conv = calloc((size_t)g->n_nodes, sizeof *e->conv))) {
        free(e);
        return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    }
    e->g = g;
    e->isa = isa;
    e->threads = threads;
    if (isa == YQ_ISA_REF) {
        *out = e;
        return YQ_OK;
    }
    int max_f = 0;
    for (int i = 1; i < g->n_nodes; i++) {
        if (!dense(g, i)) continue;
        yq_status st = pack_conv(g, i, isa, &e->conv[i], err);
        if (st) {
            yq_cpu8_free(e);
            return st;
        }
        const yq_node *n = &g->nodes[i];
        size_t np = (size_t)n->out.h * n->out.w, pb = (np + PX - 1) / PX;
        size_t bytes = pb * (size_t)e->conv[i].K4 * PX * 4;
        if (bytes > e->col_bytes) e->col_bytes = bytes;
        if (n->p.conv.filters > max_f) max_f = n->p.conv.filters;
        const yq_conv_p *cp = &n->p.conv;
        if (!(cp->size == 1 && cp->stride == 1 && cp->pad == 0) && np * e->conv[i].K > e->rows_bytes)
            e->rows_bytes = np * (size_t)e->conv[i].K;
    }
    if ((max_f && !(e->bias = malloc(sizeof(int32_t) * (size_t)max_f))) ||
        (e->col_bytes && !(e->col = aligned_alloc(64, (e->col_bytes + 63) / 64 * 64))) ||
        (e->rows_bytes && !(e->rows = aligned_alloc(64, (e->rows_bytes + 63) / 64 * 64)))) {
        yq_cpu8_free(e);
        return yq_fail(err, YQ_ERR_NOMEM, "out of memory for the int8 im2col");
    }
    *out = e;
    return YQ_OK;
}

void yq_cpu8_free(yq_cpu8 *e)
{
    if (!e) return;
    if (e->conv)
        for (int i = 0; i < e->g->n_nodes; i++) {
            free(e->conv[i].wp);
            free(e->conv[i].wsum);
        }
    free(e->conv);
    free(e->col);
    free(e->rows);
    free(e->bias);
    free(e);
}

/* ---- the packed im2col ---- */

typedef struct geom {
    const void *in;           /* this image and group's first input channel */
    int h, w, ks, s, pad, oh, ow, K;
    long np;
    unsigned char flip;       /* XOR into every byte: 0x80 where the offset is +-128 */
} geom;

/* The im2col rows k in [k0, k1) of a conv that is not pointwise, unpacked: u[k][p] = the input
 * byte under tap k of output pixel p, 0 in the padding.  Whole output rows at a time (a copy
 * for stride 1, a strided loop else), so the packing below reads every conv as a pointwise
 * one reads its input. */
static void unpack_rows(const geom *q, int k0, int k1, unsigned char *u)
{
    for (int k = k0; k < k1; k++) {
        int c = k / (q->ks * q->ks), ky = k / q->ks % q->ks, kx = k % q->ks;
        const unsigned char *plane = (const unsigned char *)q->in + (long)c * q->h * q->w;
        /* the output columns whose tap lies inside the row: [xa, xb) */
        int xa = 0, xb = q->ow;
        while (xa < q->ow && xa * q->s - q->pad + kx < 0) xa++;
        while (xb > xa && (xb - 1) * q->s - q->pad + kx >= q->w) xb--;
        for (int oy = 0; oy < q->oh; oy++) {
            unsigned char *d = u + (long)k * q->np + (long)oy * q->ow;
            int iy = oy * q->s - q->pad + ky;
            if (iy < 0 || iy >= q->h || xa >= xb) {
                memset(d, 0, (size_t)q->ow);
                continue;
            }
            const unsigned char *row = plane + (long)iy * q->w + (xa * q->s - q->pad + kx);
            memset(d, 0, (size_t)xa);
            if (q->s == 1) memcpy(d + xa, row, (size_t)(xb - xa));
            else {
                int x = 0;
                if (q->s == 2) {   /* 16 at a time: the even bytes of 32, where all 32 lie in the row */
                    const __m128i lo = _mm_set1_epi16(0xFF);
                    long room = q->w - (xa * 2 - q->pad + kx);
                    for (; 2L * x + 32 <= room && x + 16 <= xb - xa; x += 16) {
                        __m128i a = _mm_and_si128(_mm_loadu_si128((const __m128i *)(row + 2 * x)), lo);
                        __m128i b = _mm_and_si128(_mm_loadu_si128((const __m128i *)(row + 2 * x + 16)), lo);
                        _mm_storeu_si128((__m128i *)(d + xa + x), _mm_packus_epi16(a, b));
                    }
                }
                for (; x < xb - xa; x++) d[xa + x] = row[(long)x * q->s];
            }
            memset(d + xb, 0, (size_t)(q->ow - xb));
        }
    }
}

/* block pb of the packed im2col: [K4][32][4], each byte flipped; src: the K rows of np bytes
 * (the input itself for a pointwise conv, else unpack_rows') */
static void pack_block(const geom *q, const unsigned char *src, long pb, unsigned char *dst)
{
    static const unsigned char zero[PX];
    unsigned char r[4][PX];
    const __m128i flip = _mm_set1_epi8((char)q->flip);
    int K4 = (q->K + 3) / 4;
    long p0 = pb * PX, n = q->np - p0 < PX ? q->np - p0 : PX;
    for (int kb = 0; kb < K4; kb++, dst += PX * 4) {
        const unsigned char *s4[4];
        for (int j = 0; j < 4; j++) {
            int k = kb * 4 + j;
            if (k >= q->K) s4[j] = zero;
            else if (n == PX) s4[j] = src + (long)k * q->np + p0;
            else {   /* the last block: its pixels, then zeros */
                memcpy(r[j], src + (long)k * q->np + p0, (size_t)n);
                memset(r[j] + n, 0, (size_t)(PX - n));
                s4[j] = r[j];
            }
        }
        for (int h = 0; h < PX; h += 16) {     /* 16 pixels: 4 rows of 16 bytes -> 64 interleaved */
            __m128i a = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(s4[0] + h)), flip);
            __m128i b = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(s4[1] + h)), flip);
            __m128i c = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(s4[2] + h)), flip);
            __m128i d = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(s4[3] + h)), flip);
            __m128i ab0 = _mm_unpacklo_epi8(a, b), ab1 = _mm_unpackhi_epi8(a, b);
            __m128i cd0 = _mm_unpacklo_epi8(c, d), cd1 = _mm_unpackhi_epi8(c, d);
            __m128i *o = (__m128i *)(dst + h * 4);
            _mm_storeu_si128(o + 0, _mm_unpacklo_epi16(ab0, cd0));
            _mm_storeu_si128(o + 1, _mm_unpackhi_epi16(ab0, cd0));
            _mm_storeu_si128(o + 2, _mm_unpacklo_epi16(ab1, cd1));
            _mm_storeu_si128(o + 3, _mm_unpackhi_epi16(ab1, cd1));
        }
    }
}

/* ---- the micro-kernels: MR (or MR2) filters x 32 pixels over all of K ---- */

typedef struct tile {
    const yq_node *n;
    const yq_qnode *q;
    yq_isa isa;
    int o0, mr;               /* the first filter (of the whole conv) and how many are real */
    long p0, np;              /* the first pixel, pixels of a channel */
    const int32_t *bias;      /* per filter of the conv: bq - offset * wsum */
    void *out;                /* this image's output */
} tile;

/* the accumulators of one filter's 32 pixels -> its output (those pixels that exist) */
static void store_row(const tile *t, int m, const int32_t *acc)
{
    long cnt = t->np - t->p0 < PX ? t->np - t->p0 : PX;
    int o = t->o0 + m;
    size_t es = t->q->dtype == YQ_F32 ? sizeof(float) : 1;
    yq_cpu8_epilogue_row(t->isa, t->n, t->q, o, acc, cnt, (char *)t->out + ((size_t)o * t->np + t->p0) * es);
}

YQ_TARGET_AVX512 static void kern_avx512(const tile *t, const unsigned char *col, const int8_t *w, int K4)
{
    __m512i acc[MR][2];
    for (int m = 0; m < MR; m++) acc[m][0] = acc[m][1] = _mm512_set1_epi32(m < t->mr ? t->bias[t->o0 + m] : 0);
    for (int kb = 0; kb < K4; kb++, col += PX * 4, w += MR * 4) {
        __m512i x0 = _mm512_loadu_si512(col), x1 = _mm512_loadu_si512(col + 64);
#pragma GCC unroll 8
        for (int m = 0; m < MR; m++) {
            int32_t w4;
            memcpy(&w4, w + m * 4, 4);   /* the filter's 4 weights of this K step (one load) */
            __m512i wb = _mm512_set1_epi32(w4);
            acc[m][0] = _mm512_dpbusd_epi32(acc[m][0], x0, wb);
            acc[m][1] = _mm512_dpbusd_epi32(acc[m][1], x1, wb);
        }
    }
    const yq_qnode *q = t->q;
    if (q->dtype == YQ_S8 && !q->lut && t->np - t->p0 >= PX) {
        const __m512 lo = _mm512_set1_ps((float)q->qmin), hi = _mm512_set1_ps((float)q->qmax);
        for (int m = 0; m < t->mr; m++) {
            int o = t->o0 + m;
            const __m512 pos = _mm512_set1_ps(q->rq_pos[o]), neg = _mm512_set1_ps(q->rq_neg[o]);
            int8_t *y = (int8_t *)t->out + (size_t)o * t->np + t->p0;
            _mm_storeu_si128((__m128i *)y, _mm512_cvtepi32_epi8(yq_v16_requant(acc[m][0], pos, neg, lo, hi)));
            _mm_storeu_si128((__m128i *)(y + 16), _mm512_cvtepi32_epi8(yq_v16_requant(acc[m][1], pos, neg, lo, hi)));
        }
        return;
    }
    int32_t a[PX];
    for (int m = 0; m < t->mr; m++) {
        _mm512_storeu_si512(a, acc[m][0]);
        _mm512_storeu_si512(a + 16, acc[m][1]);
        store_row(t, m, a);
    }
}

/* AVX2: both halves of a filter's 32 pixels, then its epilogue */
YQ_TARGET_AVX2 static void tile_avx2(const tile *t, const unsigned char *col, const int16_t *w, int K4)
{
    int32_t a[MR2][PX];
    for (int h = 0; h < PX; h += 16) {
        __m256i acc[MR2][4];
        for (int m = 0; m < MR2; m++)
            for (int r = 0; r < 4; r++) acc[m][r] = _mm256_setzero_si256();
        const unsigned char *c = col + h * 4;
        const int16_t *wk = w;
        for (int kb = 0; kb < K4; kb++, c += PX * 4, wk += MR2 * 4) {
            __m256i x0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(c)));
            __m256i x1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(c + 16)));
            __m256i x2 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(c + 32)));
            __m256i x3 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(c + 48)));
            for (int m = 0; m < MR2; m++) {
                long long w4;
                memcpy(&w4, wk + m * 4, 8);
                __m256i wb = _mm256_set1_epi64x(w4);
                acc[m][0] = _mm256_add_epi32(acc[m][0], _mm256_madd_epi16(x0, wb));
                acc[m][1] = _mm256_add_epi32(acc[m][1], _mm256_madd_epi16(x1, wb));
                acc[m][2] = _mm256_add_epi32(acc[m][2], _mm256_madd_epi16(x2, wb));
                acc[m][3] = _mm256_add_epi32(acc[m][3], _mm256_madd_epi16(x3, wb));
            }
        }
        for (int m = 0; m < MR2; m++) {
            __m256i b = _mm256_set1_epi32(m < t->mr ? t->bias[t->o0 + m] : 0);
            /* register r holds pixels 4r .. 4r + 3 as (k0k1, k2k3) pairs: hadd of two
             * registers gives [r0p0 r0p1 r1p0 r1p1 | r0p2 r0p3 r1p2 r1p3]; the 64-bit
             * permute puts them in pixel order */
            __m256i s0 = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[m][0], acc[m][1]), 0xD8);
            __m256i s1 = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[m][2], acc[m][3]), 0xD8);
            _mm256_storeu_si256((__m256i *)(a[m] + h), _mm256_add_epi32(s0, b));
            _mm256_storeu_si256((__m256i *)(a[m] + h + 8), _mm256_add_epi32(s1, b));
        }
    }
    for (int m = 0; m < t->mr; m++) store_row(t, m, a[m]);
}

/* ---- the conv ---- */

yq_status yq_cpu8_conv(yq_cpu8 *e, int id, const void *in, yq_dtype in_t, void *out, int batch, yq_error *err)
{
    const yq_graph *g = e->g;
    const yq_node *n = &g->nodes[id];
    const yq_qnode *q = &g->q[id];
    if (e->isa == YQ_ISA_REF || q->float_op) return yq_fail(err, YQ_ERR_UNSUPPORTED, "layer %d: not a fast int8 conv", n->layer);
    if (yq_conv_is_depthwise(g, n)) {
        yq_cpu8_dwconv(e->isa, e->threads, g, n, q, in, in_t, out, batch);
        return YQ_OK;
    }
    const conv8 *c = &e->conv[id];
    if (!c->M) return yq_fail(err, YQ_ERR_INVALID_ARG, "layer %d: the int8 engine was prepared for another graph", n->layer);
    yq_shape is = yq_node_in_shape(g, n);
    int u8 = in_t == YQ_U8, avx512 = e->isa == YQ_ISA_AVX512;
    /* the stored byte is x + off: +128 for int8 on vpdpbusd, -128 for uint8 on vpmaddwd */
    int off = avx512 ? (u8 ? 0 : 128) : (u8 ? -128 : 0);
    int F = n->p.conv.filters, mr = avx512 ? MR : MR2;
    int32_t *bias = e->bias;
    for (int o = 0; o < F; o++) bias[o] = (int32_t)((uint32_t)q->bq[o] - (uint32_t)off * (uint32_t)c->wsum[o]);
    long np = (long)n->out.h * n->out.w, PB = (np + PX - 1) / PX;
    int cin = is.c / c->G, nt = nthreads(e);
    size_t wblock = (size_t)c->K4 * mr * 4 * (avx512 ? 1 : 2);
    /* tiles (filter block, pixel block): filter blocks outer where a group's weights are
     * large (each thread reuses one block's weights over its pixels), pixels outer else */
    int mb_outer = (size_t)c->MB * wblock > 256 * 1024;
    long tiles = PB * c->MB;
    size_t es = q->dtype == YQ_F32 ? sizeof(float) : 1;
    const yq_conv_p *cp = &n->p.conv;
    int pointwise = cp->size == 1 && cp->stride == 1 && cp->pad == 0;
    for (int b = 0; b < batch; b++)
        for (int gi = 0; gi < c->G; gi++) {
            geom gm = { .in = (const char *)in + ((long)b * is.c + (long)gi * cin) * is.h * is.w,
                        .h = is.h, .w = is.w, .ks = n->p.conv.size, .s = n->p.conv.stride,
                        .pad = n->p.conv.pad, .oh = n->out.h, .ow = n->out.w, .K = c->K, .np = np,
                        .flip = (unsigned char)(off ? 0x80 : 0) };
            void *ob = (char *)out + (size_t)b * F * np * es;
#pragma omp parallel num_threads(nt)
            {
                const unsigned char *src = gm.in;
                if (!pointwise) {
#pragma omp for schedule(static)
                    for (int k = 0; k < c->K; k++) unpack_rows(&gm, k, k + 1, e->rows);
                    src = e->rows;
                }
#pragma omp for schedule(static)
                for (long pb = 0; pb < PB; pb++) pack_block(&gm, src, pb, e->col + (size_t)pb * c->K4 * PX * 4);
#pragma omp for schedule(static)
                for (long ti = 0; ti < tiles; ti++) {
                    long mb = mb_outer ? ti / PB : ti % c->MB, pb = mb_outer ? ti % PB : ti / c->MB;
                    int o0 = gi * c->M + (int)mb * mr;
                    tile t = { .n = n, .q = q, .isa = e->isa, .o0 = o0, .mr = c->M - (int)mb * mr < mr ? c->M - (int)mb * mr : mr,
                               .p0 = pb * PX, .np = np, .bias = bias, .out = ob };
                    const unsigned char *colb = e->col + (size_t)pb * c->K4 * PX * 4;
                    const char *wb = (const char *)c->wp + ((size_t)gi * c->MB + (size_t)mb) * wblock;
                    if (avx512) kern_avx512(&t, colb, (const int8_t *)wb, c->K4);
                    else tile_avx2(&t, colb, (const int16_t *)wb, c->K4);
                }
            }
        }
    return YQ_OK;
}
