/* FP16 rounding of FP32 values, as CUDA's __float2half_rn: round to nearest, ties to even,
 * subnormal halves kept, beyond the largest half (65504) infinity, NaN stays NaN.  Float
 * layers of precision fp16w have their weights rounded by this once, so the CPU and the
 * GPU compute with the same weights (quant/rewrite.c; the GPU's FP16 kernels round again,
 * which changes nothing).  tests/test_harden.c checks it against the compiler's _Float16. */
#ifndef YQ_IR_HALF_H
#define YQ_IR_HALF_H

#include <stdint.h>
#include <string.h>

static inline float yq_round_fp16(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    uint32_t sign = u & 0x80000000u, a = u & 0x7fffffffu;
    uint32_t r;
    if (a >= 0x7f800000u) {
        r = a;                                     /* inf, NaN (payload kept as is) */
    } else if (a >= 0x477ff000u) {
        r = 0x7f800000u;                           /* >= 65520: rounds past 65504 */
    } else if (a >= 0x38800000u) {                 /* a normal half: keep 10 mantissa bits */
        uint32_t drop = a & 0x1fffu, keep = a & ~0x1fffu;
        if (drop > 0x1000u || (drop == 0x1000u && (keep & 0x2000u))) keep += 0x2000u;
        r = keep;
    } else {                                       /* a subnormal half (or zero): units of 2^-24 */
        float f;
        memcpy(&f, &a, 4);
        /* f * 2^24 rounded to an integer, ties to even (f < 2^-14: exact in float) */
        float t = f * 16777216.f;
        float n = (float)(int32_t)t;
        float frac = t - n;
        if (frac > 0.5f || (frac == 0.5f && ((int32_t)n & 1))) n += 1.f;
        float back = n / 16777216.f;
        memcpy(&r, &back, 4);
    }
    r |= sign;
    float y;
    memcpy(&y, &r, 4);
    return y;
}

/* 1 when x is an FP16 value (rounding leaves it as it is). */
static inline int yq_is_fp16(float x)
{
    float y = yq_round_fp16(x);
    return memcmp(&x, &y, 4) == 0 || (x != x && y != y);
}

#endif
