/* The integer requantize arithmetic: the one definition, compiled by C and CUDA.
 *
 * A real multiplier M > 0 is held as (mult, shift) with M ~= mult * 2^-shift,
 * mult in [2^30, 2^31) (31 significant bits) and shift in [0, 62].
 *
 *     y = sat(round(acc * mult / 2^shift))
 *
 * Rounding rule: to nearest, ties away from zero (symmetric: -x rounds to
 * -round(x), so the negative side of leaky ReLU behaves as the positive).
 * The product is formed in 64 bits: |acc| < 2^31 and mult < 2^31, so it cannot
 * overflow.  Saturation clamps to [qmin, qmax] (int8: [-127, 127] by default: a
 * symmetric range; bits < 8 narrow it).
 *
 * Leaky ReLU fuses as a second multiplier for negative accumulators
 * (M_neg = 0.1 * M), ReLU as M_neg = 0, linear as M_neg = M.
 */
#ifndef YQ_REQUANT_H
#define YQ_REQUANT_H

#include <stdint.h>

#ifdef __CUDACC__
#  define YQ_HD __host__ __device__ static inline
#else
#  define YQ_HD static inline
#endif

typedef struct yq_rq { int32_t mult; int32_t shift; } yq_rq;   /* mult 0: the multiplier is zero */

/* round(v / 2^shift), ties away from zero; shift in [0, 62]. */
YQ_HD int64_t yq_round_shift(int64_t v, int shift)
{
    if (shift == 0) return v;
    /* Without a branch (every lane of a GPU warp takes the same path, whatever the
     * signs): |v| plus one half, shifted, and the sign put back.  |v| < 2^63 here. */
    int64_t m = -(int64_t)(v < 0);                     /* 0, or -1 for negative v */
    uint64_t a = (uint64_t)((v ^ m) - m);
    int64_t r = (int64_t)((a + ((uint64_t)1 << (shift - 1))) >> shift);
    return (r ^ m) - m;
}

YQ_HD int32_t yq_sat(int64_t v, int32_t lo, int32_t hi)
{
    return v < lo ? lo : v > hi ? hi : (int32_t)v;
}

/* y = sat(round(acc * M)) */
YQ_HD int32_t yq_requant(int32_t acc, yq_rq m, int32_t qmin, int32_t qmax)
{
    return yq_sat(yq_round_shift((int64_t)acc * m.mult, m.shift), qmin, qmax);
}

/* Requantize with the activation fused: pos for acc >= 0, neg for acc < 0. */
YQ_HD int32_t yq_requant_act(int32_t acc, yq_rq pos, yq_rq neg, int32_t qmin, int32_t qmax)
{
    return yq_requant(acc, acc >= 0 ? pos : neg, qmin, qmax);
}

/* Residual add: y = sat(round((a*ma + b*mb) / 2^shift)), then the activation as a
 * Q31 factor for negative sums (neg_q31 = 2^31-1 stands for "no change"). */
YQ_HD int32_t yq_add_requant(int32_t a, int32_t b, int32_t ma, int32_t mb, int shift,
                             int32_t neg_q31, int32_t qmin, int32_t qmax)
{
    int64_t s = (int64_t)a * ma + (int64_t)b * mb;
    if (s < 0 && neg_q31 != 0x7fffffff) return yq_sat(yq_round_shift(s * neg_q31, shift + 31), qmin, qmax);
    return yq_sat(yq_round_shift(s, shift), qmin, qmax);
}

#ifndef __CUDA_ARCH__
#include <math.h>
/* Encodes a real multiplier m >= 0.  Multipliers too small for a 62-bit shift
 * lose low bits of mult (they round to zero anyway); m >= 2^31 is clamped. */
static inline yq_rq yq_rq_encode(double m)
{
    yq_rq r = { 0, 0 };
    if (!(m > 0)) return r;
    int e;
    double f = frexp(m, &e);                 /* m = f * 2^e, f in [0.5, 1) */
    int64_t q = (int64_t)llround(f * 2147483648.0);
    if (q == ((int64_t)1 << 31)) { q >>= 1; e++; }
    int shift = 31 - e;
    if (shift < 0) { r.mult = 0x7fffffff; r.shift = 0; return r; }
    while (shift > 62) { q >>= 1; shift--; }
    r.mult = (int32_t)q;
    r.shift = shift;
    return r;
}
#endif

#endif
