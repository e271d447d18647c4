/* Activation tables: mish, swish and logistic in int8 (ir/requant.h, yq_requant_out).
 *
 * A conv with such an activation requantizes its accumulator onto a grid of the
 * pre-activation, YQ_LUT_HALF steps each side of 0 with a step of its own per side, and
 * looks its int8 output up in a YQ_LUT_N-entry table.  The table is computed here, once,
 * in double precision; the engines only index it, so every engine gives the same bytes.
 *
 * Each side's grid spans the pre-activations whose output is not already its limit:
 * beyond the positive end the output saturates (mish, swish: the qmax value; logistic:
 * round(1 / scale), or qmax), beyond the negative end it rounds to 0 (all three tend
 * to 0 there); the grid's last points take those values, so clamping t loses nothing.
 * With 2047 steps over the output's range the positive step is about a sixteenth of the
 * output step: the table adds at most a thirty-second of an output step of error (times
 * the activation's slope, <= 1.1) to the rounding of the output itself.  The negative
 * side spans the tail down to where |act| rounds to 0, longer for small output scales
 * (mish at threshold 2.5: 6.6, a step of a third of the output's). */
#include <math.h>
#include "ir/requant.h"
#include "quant/rewrite.h"

double yq_act_ref(yq_act a, double x)
{
    switch (a) {
    case YQ_ACT_LEAKY: return x < 0 ? 0.1 * x : x;
    case YQ_ACT_RELU: return x < 0 ? 0 : x;
    case YQ_ACT_MISH: return x * tanh(x > 20 ? x : log1p(exp(x)));
    case YQ_ACT_SWISH: return x / (1 + exp(-x));
    case YQ_ACT_LOGISTIC: return 1 / (1 + exp(-x));
    default: return x;
    }
}

static int32_t qout(yq_act a, double x, double s_out, int32_t qmin, int32_t qmax)
{
    double v = nearbyint(yq_act_ref(a, x) / s_out);      /* ties to even */
    return v < qmin ? qmin : v > qmax ? qmax : (int32_t)v;
}

/* The far end of one side (sign +1 or -1): past the returned distance every sampled
 * pre-activation gives the side's limit value `lim`; scanned from `cap` inwards. */
static double side_range(yq_act a, int sign, double s_out, int32_t qmin, int32_t qmax, int32_t lim, double cap)
{
    enum { SAMPLES = 1 << 15 };
    double step = cap / SAMPLES;
    for (int k = SAMPLES; k > 0; k--)
        if (qout(a, sign * k * step, s_out, qmin, qmax) != lim) return (k + 1) * step;
    return step;                  /* the whole side is its limit: one step keeps the grid finite */
}

yq_status yq_act_table(yq_act a, float s_out, int32_t qmin, int32_t qmax, int8_t *lut, double *step_pos,
                       double *step_neg, yq_error *err)
{
    if (!yq_act_is_table(a)) return yq_fail(err, YQ_ERR_INVALID_ARG, "activation %s has no table", yq_act_name(a));
    if (!(s_out > 0) || !isfinite(s_out) || qmin > 0 || qmax < 0 || qmin < -128 || qmax > 127)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "activation table: scale %g, range [%d, %d]", (double)s_out, (int)qmin, (int)qmax);
    double s = s_out;
    /* mish and swish reach |x| for large |x| and their dip is above -0.31; logistic saturates
     * in 1: 4 x the output's range (at least 64) holds every side's end */
    double cap = fmax(64.0, 4.0 * s * (qmax > -qmin ? qmax : -qmin));
    int32_t lim_pos = a == YQ_ACT_LOGISTIC ? qout(a, INFINITY, s, qmin, qmax) : qmax;
    double rp = side_range(a, +1, s, qmin, qmax, lim_pos, cap);
    double rn = side_range(a, -1, s, qmin, qmax, 0, cap);
    *step_pos = rp / (YQ_LUT_HALF - 1);
    *step_neg = rn / YQ_LUT_HALF;
    for (int t = -YQ_LUT_HALF; t < YQ_LUT_HALF; t++)
        lut[t + YQ_LUT_HALF] = (int8_t)qout(a, t >= 0 ? t * *step_pos : t * *step_neg, s, qmin, qmax);
    return YQ_OK;
}
