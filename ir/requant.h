/* The integer requantize arithmetic: the one definition, compiled by C and CUDA.
 *
 * A real multiplier M >= 0 is held as an FP32 scale s (yq_rq_encode: M rounded to
 * the nearest float; below FLT_MIN it is 0, as every product would round to 0).
 *
 *     y = sat(rne(f32(acc) * s))
 *
 * Every step is one IEEE-754 binary32 operation with round-to-nearest-even, never
 * contracted into a fused multiply-add: f32(acc) is the int32 -> float conversion
 * (exact below 2^24), the product is one multiply, and rne rounds to the nearest
 * integer with ties to even.  Saturation clamps to [qmin, qmax] (int8: [-127, 127]
 * by default; bits < 8 narrow it); clamping before rounding gives the same integer
 * (the bounds are integers), and NaN (impossible for finite scales) would give qmin.
 * On a GPU this is I2F, FMUL, two FMNMX and F2I: a few 32-bit instructions; C gets
 * the same bits from the same operations (x86-64 SSE, -ffp-contract=off, the
 * default rounding mode), so kernels and the CPU reference agree bit for bit.
 *
 * Leaky ReLU fuses as a second scale for negative accumulators (s_neg = f32(0.1 * M)),
 * ReLU as s_neg = 0, linear as s_neg = s.
 *
 * Table activations (mish, swish, logistic) quantize the pre-activation onto a finer
 * grid, then look the output up:
 *     t = sat(rne(f32(acc) * s), -YQ_LUT_HALF, YQ_LUT_HALF - 1)     (s: pos or neg by sign)
 *     y = lut[t + YQ_LUT_HALF]
 * The quantizer fills the table (act of the grid point, rounded to the output's scale) and
 * picks each side's grid step; both engines only index it, so they agree bit for bit.
 *
 * The residual add of a [shortcut]:  y = sat(rne(v)) with
 *     v = f32(a) * sa + f32(b) * sb      (two multiplies, then one add)
 *     v = v < 0 ? v * sneg : v           (sneg: 0.1 leaky, 0 relu, 1 linear)
 */
#ifndef YQ_REQUANT_H
#define YQ_REQUANT_H

#include <stdint.h>

#ifdef __CUDACC__
#  define YQ_HD __host__ __device__ static inline
#else
#  define YQ_HD static inline
#endif

/* One rounding each, never fused: nvcc contracts a * b + c unless told not to. */
YQ_HD float yq_fmul(float a, float b)
{
#ifdef __CUDA_ARCH__
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}

YQ_HD float yq_fadd(float a, float b)
{
#ifdef __CUDA_ARCH__
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}

YQ_HD float yq_i2f(int32_t x)
{
#ifdef __CUDA_ARCH__
    return __int2float_rn(x);
#else
    return (float)x;
#endif
}

/* x as a float for |x| < 2^22 (int8 and uint8 values): exact.  On the GPU without a
 * conversion instruction (those run at a quarter of the float rate or less on sm_80 and
 * sm_90, and an epilogue made two or three per output): the bits of 1.5 * 2^23 plus x
 * are the float 1.5 * 2^23 + x (floats in [2^23, 2^24) are the integers), and the
 * subtraction of 1.5 * 2^23 is exact. */
YQ_HD float yq_i2f_small(int32_t x)
{
#ifdef __CUDA_ARCH__
    return __fsub_rn(__int_as_float(0x4B400000 + x), 12582912.0f);
#else
    return (float)x;
#endif
}

/* v clamped to [lo, hi], NaN to lo.  (On the GPU fmaxf and fminf, one instruction each:
 * the same value, but for the sign of a zero, which no rounding below tells apart.) */
YQ_HD float yq_clamp_f(float v, int32_t lo, int32_t hi)
{
    float flo = (float)lo, fhi = (float)hi;
#ifdef __CUDA_ARCH__
    return fminf(fmaxf(v, flo), fhi);
#else
    v = v >= flo ? v : flo;
    return v <= fhi ? v : fhi;
#endif
}

/* sat(rne(v)): v clamped to [lo, hi] (NaN to lo), then rounded to the nearest integer,
 * ties to even.  |lo|, |hi| < 2^22. */
YQ_HD int32_t yq_rne_sat(float v, int32_t lo, int32_t hi)
{
    v = yq_clamp_f(v, lo, hi);
    /* 1.5 * 2^23 + v lies in [2^23, 2^24), where floats are the integers: the add rounds
     * v to an integer, ties to even (1.5 * 2^23 is even); its bits less those of 1.5 *
     * 2^23 are that integer (what __float2int_rn gives, without a conversion
     * instruction), as is the exact subtraction on the CPU */
#ifdef __CUDA_ARCH__
    return __float_as_int(yq_fadd(v, 12582912.0f)) - 0x4B400000;
#else
    return (int32_t)(yq_fadd(v, 12582912.0f) - 12582912.0f);
#endif
}

/* yq_rne_sat's result in the low byte of the word returned (its other bytes are not the
 * result's sign): for packing int8 outputs.  On the GPU the word is the rounded float's
 * bits, 1.5 * 2^23 + y, whose low byte is y's (the bits of 1.5 * 2^23 end in a zero byte):
 * yq_rne_sat less its subtraction. */
YQ_HD uint32_t yq_rne_sat_lo8(float v, int32_t lo, int32_t hi)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(yq_fadd(yq_clamp_f(v, lo, hi), 12582912.0f));
#else
    return (uint32_t)yq_rne_sat(v, lo, hi);
#endif
}

/* y = sat(rne(f32(acc) * s)) */
YQ_HD int32_t yq_requant(int32_t acc, float s, int32_t qmin, int32_t qmax)
{
    return yq_rne_sat(yq_fmul(yq_i2f(acc), s), qmin, qmax);
}

/* Requantize with the activation fused: pos for acc >= 0, neg for acc < 0. */
YQ_HD int32_t yq_requant_act(int32_t acc, float pos, float neg, int32_t qmin, int32_t qmax)
{
    return yq_requant(acc, acc >= 0 ? pos : neg, qmin, qmax);
}

/* yq_requant_act with the int8 result in the low byte (yq_rne_sat_lo8). */
YQ_HD uint32_t yq_requant_act_lo8(int32_t acc, float pos, float neg, int32_t qmin, int32_t qmax)
{
    return yq_rne_sat_lo8(yq_fmul(yq_i2f(acc), acc >= 0 ? pos : neg), qmin, qmax);
}

#define YQ_LUT_HALF 2048
#define YQ_LUT_N (2 * YQ_LUT_HALF)   /* int8 entries of an activation table */

/* A table activation's entry for acc: the grid point, in [0, YQ_LUT_N). */
YQ_HD int32_t yq_lut_index(int32_t acc, float pos, float neg)
{
    return yq_requant_act(acc, pos, neg, -YQ_LUT_HALF, YQ_LUT_HALF - 1) + YQ_LUT_HALF;
}

/* The epilogue of an int8-output conv: the fused activation, or a table when lut is set. */
YQ_HD int32_t yq_requant_out(int32_t acc, float pos, float neg, int32_t qmin, int32_t qmax, const int8_t *lut)
{
    if (!lut) return yq_requant_act(acc, pos, neg, qmin, qmax);
    int32_t t = yq_lut_index(acc, pos, neg);
#ifdef __CUDA_ARCH__
    return __ldg(lut + t);
#else
    return lut[t];
#endif
}

/* Residual add: y = sat(rne(f32(a) * sa + f32(b) * sb)), negative sums times sneg first;
 * a and b are int8 (or uint8) values.  yq_add_f is the sum before the rounding. */
YQ_HD float yq_add_f(int32_t a, int32_t b, float sa, float sb, float sneg)
{
    float v = yq_fadd(yq_fmul(yq_i2f_small(a), sa), yq_fmul(yq_i2f_small(b), sb));
    return v < 0 ? yq_fmul(v, sneg) : v;
}

YQ_HD int32_t yq_add_requant(int32_t a, int32_t b, float sa, float sb, float sneg, int32_t qmin, int32_t qmax)
{
    return yq_rne_sat(yq_add_f(a, b, sa, sb, sneg), qmin, qmax);
}

/* yq_add_requant with the int8 result in the low byte (yq_rne_sat_lo8). */
YQ_HD uint32_t yq_add_requant_lo8(int32_t a, int32_t b, float sa, float sb, float sneg, int32_t qmin, int32_t qmax)
{
    return yq_rne_sat_lo8(yq_add_f(a, b, sa, sb, sneg), qmin, qmax);
}

#ifndef __CUDA_ARCH__
#include <float.h>
/* Encodes a real multiplier m >= 0: the nearest float; 0 below FLT_MIN (such a scale
 * rounds every int32 accumulator to 0) and for m <= 0 or NaN; FLT_MAX above it. */
static inline float yq_rq_encode(double m)
{
    if (!(m >= (double)FLT_MIN)) return 0.0f;
    if (m >= (double)FLT_MAX) return FLT_MAX;
    return (float)m;
}
#endif

#endif
