/* The reference's requantize arithmetic (ir/requant.h) in vector form, for the fast int8
 * CPU engine's files: 16 lanes on AVX-512, 8 on AVX2.  Each function is the scalar
 * definition lane by lane, bit for bit:
 *
 *     f32(acc)            vcvtdq2ps        (MXCSR rounding: round to nearest even, as (float)acc)
 *     * s                 vmulps           (s: pos where acc >= 0, else neg)
 *     clamp [lo, hi]      vmaxps(v, lo), vminps(v, hi)   (vmaxps returns its second operand
 *                                          for a NaN: NaN -> lo, as yq_clamp_f)
 *     rne                 + 1.5 * 2^23, the bits less those of 1.5 * 2^23 (yq_rne_sat)
 *
 * Included only by files compiled for these instruction sets (YQ_TARGET_* below). */
#ifndef YQ_CPU_INT8_SIMD_H
#define YQ_CPU_INT8_SIMD_H

#include <immintrin.h>
#include <stdint.h>

#define YQ_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,bmi2")))
#define YQ_TARGET_AVX2 __attribute__((target("avx2,bmi2")))

#define YQ_RNE_MAGIC 12582912.0f     /* 1.5 * 2^23 */
#define YQ_RNE_BITS 0x4B400000

/* ---- AVX-512: 16 lanes ---- */

YQ_TARGET_AVX512 static inline __m512i yq_v16_rne_sat(__m512 v, __m512 lo, __m512 hi)
{
    v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    v = _mm512_add_ps(v, _mm512_set1_ps(YQ_RNE_MAGIC));
    return _mm512_sub_epi32(_mm512_castps_si512(v), _mm512_set1_epi32(YQ_RNE_BITS));
}

/* yq_requant_act on 16 accumulators: the integers (int32 lanes) */
YQ_TARGET_AVX512 static inline __m512i yq_v16_requant(__m512i acc, __m512 pos, __m512 neg, __m512 lo, __m512 hi)
{
    __mmask16 m = _mm512_cmplt_epi32_mask(acc, _mm512_setzero_si512());
    __m512 s = _mm512_mask_blend_ps(m, pos, neg);
    return yq_v16_rne_sat(_mm512_mul_ps(_mm512_cvtepi32_ps(acc), s), lo, hi);
}

/* ---- AVX2: 8 lanes ---- */

YQ_TARGET_AVX2 static inline __m256i yq_v8_rne_sat(__m256 v, __m256 lo, __m256 hi)
{
    v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
    v = _mm256_add_ps(v, _mm256_set1_ps(YQ_RNE_MAGIC));
    return _mm256_sub_epi32(_mm256_castps_si256(v), _mm256_set1_epi32(YQ_RNE_BITS));
}

YQ_TARGET_AVX2 static inline __m256i yq_v8_requant(__m256i acc, __m256 pos, __m256 neg, __m256 lo, __m256 hi)
{
    __m256 s = _mm256_blendv_ps(pos, neg, _mm256_castsi256_ps(acc));   /* the sign bit picks neg */
    return yq_v8_rne_sat(_mm256_mul_ps(_mm256_cvtepi32_ps(acc), s), lo, hi);
}

/* 8 int32 lanes in [-128, 127] -> 8 int8 in the low 8 bytes */
YQ_TARGET_AVX2 static inline __m128i yq_v8_pack8(__m256i r)
{
    __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    return _mm_packs_epi16(w, w);
}

#endif
