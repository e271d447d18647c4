/* The fast int8 CPU engine's shared pieces: which instructions this CPU has, and one
 * output channel's epilogue in vector form (kernels/cpu_int8.h). */
#include <string.h>
#include "ir/requant.h"
#include "kernels/cpu_fp32.h"
#include "kernels/cpu_int8.h"
#include "kernels/cpu_int8_simd.h"
#include "yq.h"

yq_isa yq_cpu_isa(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni"))
        return YQ_ISA_AVX512;
    if (__builtin_cpu_supports("avx2")) return YQ_ISA_AVX2;
#endif
    return YQ_ISA_REF;
}

const char *yq_cpu_int8_engine(void)
{
    yq_isa isa = yq_cpu_isa();
    return isa == YQ_ISA_REF ? "dgemm" : yq_isa_name(isa);
}

const char *yq_isa_name(yq_isa isa)
{
    switch (isa) {
    case YQ_ISA_AVX512: return "avx512-vnni";
    case YQ_ISA_AVX2: return "avx2";
    case YQ_ISA_REF: break;
    }
    return "reference";
}

/* ---- one channel's epilogue ---- */

static void row_scalar(const yq_node *n, const yq_qnode *q, int o, const int32_t *a, long cnt, void *out)
{
    if (q->dtype == YQ_F32) {
        float *y = out;
        for (long i = 0; i < cnt; i++) y[i] = yq_f32_act1((float)a[i] * q->deq[o], n->act);
    } else {
        int8_t *y = out;
        float pos = q->rq_pos[o], neg = q->rq_neg[o];
        for (long i = 0; i < cnt; i++) y[i] = (int8_t)yq_requant_out(a[i], pos, neg, q->qmin, q->qmax, q->lut);
    }
}

YQ_TARGET_AVX512 static long row_avx512(const yq_node *n, const yq_qnode *q, int o, const int32_t *a, long cnt,
                                        void *out)
{
    long i = 0;
    if (q->dtype == YQ_F32) {
        if (n->act != YQ_ACT_LINEAR && n->act != YQ_ACT_LEAKY) return 0;
        const __m512 d = _mm512_set1_ps(q->deq[o]), tenth = _mm512_set1_ps(.1f);
        float *y = out;
        for (; i + 16 <= cnt; i += 16) {
            __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_loadu_si512(a + i)), d);
            if (n->act == YQ_ACT_LEAKY) {   /* x > 0 ? x : .1f * x */
                __mmask16 p = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ);
                v = _mm512_mask_blend_ps(p, _mm512_mul_ps(v, tenth), v);
            }
            _mm512_storeu_ps(y + i, v);
        }
        return i;
    }
    const __m512 pos = _mm512_set1_ps(q->rq_pos[o]), neg = _mm512_set1_ps(q->rq_neg[o]);
    int8_t *y = out;
    if (q->lut) {
        const __m512 lo = _mm512_set1_ps(-YQ_LUT_HALF), hi = _mm512_set1_ps(YQ_LUT_HALF - 1);
        const __m512i half = _mm512_set1_epi32(YQ_LUT_HALF);
        /* a dword gather at lut + t (scale 1) holds entry t in its low byte; the last three
         * entries are read as the top byte of the dword at lut + t - 3, never past the table */
        const __m512i last = _mm512_set1_epi32(YQ_LUT_N - 4), three = _mm512_set1_epi32(3);
        for (; i + 16 <= cnt; i += 16) {
            __m512i t = _mm512_add_epi32(yq_v16_requant(_mm512_loadu_si512(a + i), pos, neg, lo, hi), half);
            __mmask16 in = _mm512_cmple_epi32_mask(t, last);
            __m512i g = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), in, t, q->lut, 1);
            __m512i e = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), (__mmask16)~in, _mm512_sub_epi32(t, three), q->lut, 1);
            g = _mm512_mask_blend_epi32(in, _mm512_srli_epi32(e, 24), g);
            _mm_storeu_si128((__m128i *)(y + i), _mm512_cvtepi32_epi8(g));
        }
        return i;
    }
    const __m512 lo = _mm512_set1_ps((float)q->qmin), hi = _mm512_set1_ps((float)q->qmax);
    for (; i + 16 <= cnt; i += 16)
        _mm_storeu_si128((__m128i *)(y + i), _mm512_cvtepi32_epi8(yq_v16_requant(_mm512_loadu_si512(a + i), pos, neg, lo, hi)));
    return i;
}

YQ_TARGET_AVX2 static long row_avx2(const yq_node *n, const yq_qnode *q, int o, const int32_t *a, long cnt, void *out)
{
    long i = 0;
    if (q->dtype == YQ_F32) {
        if (n->act != YQ_ACT_LINEAR && n->act != YQ_ACT_LEAKY) return 0;
        const __m256 d = _mm256_set1_ps(q->deq[o]), tenth = _mm256_set1_ps(.1f);
        float *y = out;
        for (; i + 8 <= cnt; i += 8) {
            __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(a + i))), d);
            if (n->act == YQ_ACT_LEAKY)
                v = _mm256_blendv_ps(_mm256_mul_ps(v, tenth), v, _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GT_OQ));
            _mm256_storeu_ps(y + i, v);
        }
        return i;
    }
    const __m256 pos = _mm256_set1_ps(q->rq_pos[o]), neg = _mm256_set1_ps(q->rq_neg[o]);
    int8_t *y = out;
    if (q->lut) {
        const __m256 lo = _mm256_set1_ps(-YQ_LUT_HALF), hi = _mm256_set1_ps(YQ_LUT_HALF - 1);
        const __m256i half = _mm256_set1_epi32(YQ_LUT_HALF);
        int32_t t[8];
        for (; i + 8 <= cnt; i += 8) {
            __m256i r = _mm256_add_epi32(yq_v8_requant(_mm256_loadu_si256((const __m256i *)(a + i)), pos, neg, lo, hi), half);
            _mm256_storeu_si256((__m256i *)t, r);
            for (int k = 0; k < 8; k++) y[i + k] = q->lut[t[k]];
        }
        return i;
    }
    const __m256 lo = _mm256_set1_ps((float)q->qmin), hi = _mm256_set1_ps((float)q->qmax);
    for (; i + 8 <= cnt; i += 8)
        _mm_storel_epi64((__m128i *)(y + i),
                         yq_v8_pack8(yq_v8_requant(_mm256_loadu_si256((const __m256i *)(a + i)), pos, neg, lo, hi)));
    return i;
}

void yq_cpu8_epilogue_row(yq_isa isa, const yq_node *n, const yq_qnode *q, int o, const int32_t *acc, long cnt,
                          void *out)
{
    long done = isa == YQ_ISA_AVX512 ? row_avx512(n, q, o, acc, cnt, out)
              : isa == YQ_ISA_AVX2   ? row_avx2(n, q, o, acc, cnt, out) : 0;
    size_t es = q->dtype == YQ_F32 ? sizeof(float) : 1;
    row_scalar(n, q, o, acc + done, cnt - done, (char *)out + (size_t)done * es);
}
