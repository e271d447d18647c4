/* The int8 arithmetic and the int8 CPU engine.
 *  - ir/requant.h: rounding ties and saturation at its edges, the requantize against a
 *    wide-integer model of its FP32 operations, the residual add against a double model
 *    over every pair of int8 inputs, the scale encoding;
 *  - every int8 op of a small network against a float simulation of the same
 *    quantization (dequantized inputs and weights, float math, quantized output):
 *    within one quantization step; copies (route, maxpool, upsample) exactly;
 *  - determinism; the dgemm path equal to the plain-C reference byte for byte on
 *    real models. */
#include <float.h>
#include <math.h>
#include <unistd.h>
#include "tests/test.h"
#include "ir/half.h"
#include "calib/observe.h"
#include "kernels/cpu_fp32.h"
#include "kernels/cpu_ref.h"
#include "tests/test_rewrite.h"
#include "runtime/engine.h"
#include "runtime/plan.h"

/* ---- requantize ---------------------------------------------------------- */

/* A wide-integer model of ir/requant.h's FP32 arithmetic, written without the FPU:
 * binary32 values as (mantissa, exponent) pairs, every rounding to nearest, ties to
 * even, in 64/128-bit integers. */
typedef struct wf { int neg; uint64_t m; int e; } wf;     /* (-1)^neg * m * 2^e */

/* m * 2^e rounded to `bits` significant bits, ties to even. */
static wf wf_round(int neg, unsigned __int128 m, int e, int bits)
{
    wf r = { neg, 0, 0 };
    if (!m) return r;
    int n = 0;
    for (unsigned __int128 t = m; t; t >>= 1) n++;
    if (n > bits) {
        int sh = n - bits;
        unsigned __int128 q = m >> sh, rem = m & (((unsigned __int128)1 << sh) - 1), half = (unsigned __int128)1 << (sh - 1);
        if (rem > half || (rem == half && (q & 1))) q++;
        m = q;
        e += sh;
    }
    r.m = (uint64_t)m;
    r.e = e;
    return r;
}

static wf wf_from_float(float x)
{
    int e;
    double f = frexp((double)x, &e);                      /* exact: x has 24 bits */
    wf r = { x < 0, (uint64_t)llround(fabs(f) * 16777216.0), e - 24 };
    return r;
}

/* sat(rne(x)) of the model's value */
static int32_t wf_rne_sat(wf x, int32_t lo, int32_t hi)
{
    __int128 v;
    if (x.e >= 0) {
        v = x.e > 40 ? ((__int128)1 << 80) : (__int128)x.m << x.e;     /* beyond any range */
    } else {
        int sh = -x.e;
        if (sh > 100) v = 0;
        else {
            unsigned __int128 m = x.m, q = m >> sh, rem = m & (((unsigned __int128)1 << sh) - 1),
                              half = (unsigned __int128)1 << (sh - 1);
            if (rem > half || (rem == half && (q & 1))) q++;
            v = (__int128)q;
        }
    }
    if (x.neg) v = -v;
    return v < lo ? lo : v > hi ? hi : (int32_t)v;
}

/* The model of yq_requant: f32(acc), times s, both rounded to 24 bits. */
static int32_t model_requant(int32_t acc, float s, int32_t lo, int32_t hi)
{
    if (acc == 0 || s == 0) return 0 < lo ? lo : 0 > hi ? hi : 0;
    int64_t a = acc;
    wf fa = wf_round(a < 0, (unsigned __int128)(a < 0 ? -a : a), 0, 24), fs = wf_from_float(s);
    wf p = wf_round(fa.neg, (unsigned __int128)fa.m * fs.m, fa.e + fs.e, 24);
    /* a product below FLT_MIN (subnormal) rounds to 0 as an integer whichever way */
    return wf_rne_sat(p, lo, hi);
}

static void t_rne_sat(void)
{
    static const struct { float v; int32_t want; } c[] = {
        { 0.5f, 0 }, { 1.5f, 2 }, { 2.5f, 2 }, { 3.5f, 4 }, { -0.5f, 0 }, { -1.5f, -2 }, { -2.5f, -2 },
        { 0.49999997f, 0 }, { 0.50000006f, 1 }, { 126.5f, 126 }, { 125.5f, 126 }, { 127.4f, 127 },
        { 127.6f, 127 }, { -126.5f, -126 }, { 1e30f, 127 }, { -1e30f, -127 }, { INFINITY, 127 },
        { -INFINITY, -127 }, { -0.0f, 0 }, { 1e-40f, 0 },
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        CHECKF(yq_rne_sat(c[i].v, -127, 127) == c[i].want, "rne_sat(%.9g) = %d, want %d", (double)c[i].v,
               yq_rne_sat(c[i].v, -127, 127), c[i].want);
    CHECK(yq_rne_sat(NAN, -127, 127) == -127);             /* NaN: qmin (no finite scale makes one) */
    CHECK(yq_rne_sat(300.0f, 0, 255) == 255 && yq_rne_sat(-3.0f, 0, 255) == 0);
    /* every float in [-256, 256) with at least one fraction bit, against rint in double
     * (round to nearest even, the default mode) */
    long n = 0;
    for (int32_t k = -256 * 65536; k < 256 * 65536; k++) {
        float v = (float)k / 65536.0f;                     /* exact: 24 bits */
        double want = rint((double)v);
        int32_t w = want < -127 ? -127 : want > 127 ? 127 : (int32_t)want;
        if (yq_rne_sat(v, -127, 127) != w) { CHECKF(0, "rne_sat(%.9g) = %d, want %d", (double)v, yq_rne_sat(v, -127, 127), w); }
        n++;
    }
    CHECK(n == 512L * 65536);
}

/* The GPU's conversion-free forms in ir/requant.h (the device branches), written here
 * with the same IEEE float operations through the bits: int -> float for |x| < 2^22,
 * and float -> int after the clamp, against the conversions they replace. */
static float dev_i2f_small(int32_t x)
{
    uint32_t u = 0x4B400000u + (uint32_t)x;
    float f;
    memcpy(&f, &u, sizeof f);
    return f - 12582912.0f;
}

static int32_t dev_rne_clamped(float v)
{
    float t = v + 12582912.0f;
    int32_t u;
    memcpy(&u, &t, sizeof u);
    return u - 0x4B400000;
}

static void t_conversion_free(void)
{
    /* every integer of the range: the float of the bits is the conversion's, exactly */
    long bad = 0;
    for (int32_t x = -(1 << 22) + 1; x < (1 << 22); x++) bad += dev_i2f_small(x) != (float)x;
    CHECKF(bad == 0, "%ld integers converted differently", bad);
    CHECK(dev_i2f_small(-127) == -127.0f && dev_i2f_small(255) == 255.0f && dev_i2f_small(0) == 0.0f);
    /* rounding after the clamp: every float in [-256, 256] with 16 fraction bits, the
     * halfway points and their neighbours, against rint in double (ties to even) */
    bad = 0;
    for (int32_t k = -256 * 65536; k <= 256 * 65536; k++) {
        float v = (float)k / 65536.0f;
        bad += dev_rne_clamped(v) != (int32_t)rint((double)v);
    }
    for (int32_t i = -300; i <= 300; i++) {
        float h = (float)i + 0.5f, lo = nextafterf(h, -1e9f), hi = nextafterf(h, 1e9f);
        bad += dev_rne_clamped(h) != (int32_t)rint((double)h) || dev_rne_clamped(lo) != (int32_t)rint((double)lo) ||
               dev_rne_clamped(hi) != (int32_t)rint((double)hi);
    }
    CHECKF(bad == 0, "%ld floats rounded differently", bad);
    CHECK(dev_rne_clamped(-0.0f) == 0 && dev_rne_clamped(2.5f) == 2 && dev_rne_clamped(-2.5f) == -2);
}

static void t_requant_edges(void)
{
    CHECK(yq_requant(100, 1.0f, -127, 127) == 100);
    CHECK(yq_requant(1000, 1.0f, -127, 127) == 127);       /* saturates */
    CHECK(yq_requant(-1000, 1.0f, -127, 127) == -127);     /* symmetric range: never -128 */
    CHECK(yq_requant(INT32_MAX, 1.0f, -127, 127) == 127);
    CHECK(yq_requant(INT32_MIN, 1.0f, -127, 127) == -127);
    CHECK(yq_requant(20, 1.0f, -7, 7) == 7);               /* 4 bits */
    CHECK(yq_requant(3, 0.5f, -127, 127) == 2);            /* 1.5 -> 2 */
    CHECK(yq_requant(5, 0.5f, -127, 127) == 2);            /* 2.5 -> 2: ties to even */
    CHECK(yq_requant(-3, 0.5f, -127, 127) == -2);
    CHECK(yq_requant(-5, 0.5f, -127, 127) == -2);
    CHECK(yq_requant(12345, 0.0f, -127, 127) == 0);        /* a zero scale */
    float pos = yq_rq_encode(0.5), neg = yq_rq_encode(0.05);
    CHECK(yq_requant_act(100, pos, neg, -127, 127) == 50);
    CHECK(yq_requant_act(-100, pos, neg, -127, 127) == -5);
    CHECK(yq_requant_act(0, pos, neg, -127, 127) == 0);
    /* shortcut: a + b at the same scale, leaky and relu on the negative side */
    CHECK(yq_add_requant(10, 20, 1.0f, 1.0f, 1.0f, -127, 127) == 30);
    CHECK(yq_add_requant(100, 100, 1.0f, 1.0f, 1.0f, -127, 127) == 127);
    CHECK(yq_add_requant(-10, -20, 1.0f, 1.0f, 0.1f, -127, 127) == -3);    /* -30 * 0.1 */
    CHECK(yq_add_requant(-10, -20, 1.0f, 1.0f, 0.0f, -127, 127) == 0);     /* relu */
    CHECK(yq_add_requant(-10, -15, 1.0f, 1.0f, 0.1f, -127, 127) == -2);    /* -2.5: ties to even */
}

/* yq_requant against the wide-integer model: the accumulators where f32() rounds (around
 * 2^24 and at the int32 ends), scales at the ends of the float range and ties, and a
 * million random pairs over the ranges real layers use. */
static void t_requant_model(void)
{
    static const int32_t accs[] = { 0, 1, -1, 2, 3, 5, 127, 254, 255, 16777215, 16777216, 16777217, 16777219,
                                    -16777217, -16777219, 33554435, 1 << 30, (1 << 30) + 65, INT32_MAX,
                                    INT32_MIN, INT32_MIN + 1, -123456789 };
    static const float scales[] = { 1.0f, 0.5f, 0.25f, 0x1p-24f, 0x1p-25f, 0x1p-31f, FLT_MIN, FLT_MAX, 1e-10f,
                                    3.0f, 0.1f, 0.0999999940f, 1.0000001f, 0x1.fffffep-1f, 7.6e-6f };
    for (size_t i = 0; i < sizeof accs / sizeof accs[0]; i++)
        for (size_t j = 0; j < sizeof scales / sizeof scales[0]; j++) {
            int32_t got = yq_requant(accs[i], scales[j], -127, 127), want = model_requant(accs[i], scales[j], -127, 127);
            CHECKF(got == want, "requant(%d, %.9g) = %d, model %d", accs[i], (double)scales[j], got, want);
        }
    uint64_t r = 777;
    long ties = 0;
    for (int i = 0; i < 1000000; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        int32_t acc = (int32_t)(r >> 32) >> (int)((r >> 8) % 24);                /* all magnitudes */
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        float s = ldexpf(1.0f + (float)((r >> 40) & 0xffffff) / 16777216.0f, -(int)((r >> 20) % 34));
        if (i % 4 == 0) s = ldexpf(1.0f, -(int)((r >> 20) % 24));              /* powers of two: exact ties */
        int32_t got = yq_requant(acc, s, -127, 127), want = model_requant(acc, s, -127, 127);
        ties += acc % 2 != 0 && s == 0.5f;
        if (got != want) { CHECKF(0, "requant(%d, %.9g) = %d, model %d", acc, (double)s, got, want); }
    }
    CHECK(ties > 0);
}

/* yq_add_requant over every pair of int8 inputs, against a double model (int8 times a
 * float is exact in double, each float rounding a (float) conversion of an exact value;
 * the sum of the two rounded products, of scales within 2^8 of each other, is exact in
 * double). */
static void t_add_model(void)
{
    static const float sc[][2] = { { 1.0f, 1.0f }, { 0.5f, 0.25f }, { 0.731f, 1.377f }, { 0.0999f, 2.5f }, { 1.9f, 0.013f } };
    static const float negs[] = { 1.0f, 0.1f, 0.0f };
    for (size_t k = 0; k < sizeof sc / sizeof sc[0]; k++)
        for (size_t m = 0; m < 3; m++)
            for (int a = -127; a <= 127; a++)
                for (int b = -127; b <= 127; b++) {
                    float pa = (float)((double)a * (double)sc[k][0]), pb = (float)((double)b * (double)sc[k][1]);
                    float v = (float)((double)pa + (double)pb);
                    if (v < 0) v = (float)((double)v * (double)negs[m]);
                    double rr = rint((double)v);
                    int32_t want = rr < -127 ? -127 : rr > 127 ? 127 : (int32_t)rr;
                    int32_t got = yq_add_requant(a, b, sc[k][0], sc[k][1], negs[m], -127, 127);
                    if (got != want) { CHECKF(0, "add(%d, %d, %g, %g, %g) = %d, model %d", a, b, (double)sc[k][0], (double)sc[k][1], (double)negs[m], got, want); }
                }
}

static void t_rq_encode(void)
{
    CHECK(yq_rq_encode(0) == 0.0f && yq_rq_encode(-1) == 0.0f && yq_rq_encode(NAN) == 0.0f);
    CHECK(yq_rq_encode((double)FLT_MIN / 2) == 0.0f && yq_rq_encode((double)FLT_MIN) == FLT_MIN);
    CHECK(yq_rq_encode(1e300) == FLT_MAX && yq_rq_encode(INFINITY) == FLT_MAX);
    CHECK(yq_rq_encode(0.1) == 0.1f && yq_rq_encode(1.0) == 1.0f);
    for (double m = 1e-12; m < 1e6; m *= 1.37) {
        float s = yq_rq_encode(m);
        CHECKF(fabs((double)s - m) <= m * 0x1p-24, "m=%g -> %.9g", m, (double)s);
    }
}

/* ---- activation tables ---------------------------------------------------- */

/* quant/table.c through yq_requant_out: every entry in range; over random accumulators
 * and scales spanning both sides and both saturations, the output within half a step
 * plus the grid's share (slope <= 1.1 times half a grid step) of act(x) / s, the right
 * rounding for almost all, and the far ends exactly their limits. */
static void t_act_table(void)
{
    static const yq_act acts[] = { YQ_ACT_MISH, YQ_ACT_SWISH, YQ_ACT_LOGISTIC };
    static const float scales[] = { 0.01f, 0.05f, 0.2f, 1.f / 127 };
    static int8_t lut[YQ_LUT_N];
    uint64_t rs = 12345;
    yq_error err;
    for (int ai = 0; ai < 3; ai++)
        for (int si = 0; si < 5; si++) {
            yq_act a = acts[ai];
            float s = si < 4 ? scales[si] : 0.1f;
            int32_t qmax = si < 4 ? 127 : 31, qmin = -qmax;
            double sp, sn;
            CHECK(yq_act_table(a, s, qmin, qmax, lut, &sp, &sn, &err) == YQ_OK);
            CHECK(sp > 0 && sn > 0 && isfinite(sp) && isfinite(sn));
            for (int k = 0; k < YQ_LUT_N; k++) CHECK(lut[k] >= qmin && lut[k] <= qmax);
            double bound = 0.5 + 0.55 * fmax(sp, sn) / (double)s + 1e-3;
            long right = 0, n = 200000;
            double worst = 0;
            for (long i = 0; i < n; i++) {
                rs = rs * 6364136223846793005ull + 1442695040888963407ull;
                double acc_scale = 1e-4 * (1 + (double)((rs >> 40) % 1000));
                double x = ((double)((rs >> 8) % 2000001) / 1e6 - 1) * 3 * (double)s * qmax;   /* +-3x the output range */
                int32_t acc = (int32_t)llround(x / acc_scale);
                x = acc * acc_scale;
                int32_t y = yq_requant_out(acc, yq_rq_encode(acc_scale / sp), yq_rq_encode(acc_scale / sn), qmin, qmax, lut);
                double ideal = yq_act_ref(a, x) / (double)s, c = fmin(fmax(ideal, qmin), qmax);
                double d = fabs(y - c);
                if (d > worst) worst = d;
                right += y == (int32_t)nearbyint(c);
            }
            CHECKF(worst <= bound, "%s at scale %g: %.3f steps off (bound %.3f)", yq_act_name(a), (double)s, worst, bound);
            CHECKF(right >= n * 97 / 100, "%s at scale %g: %ld of %ld rounded right", yq_act_name(a), (double)s, right, n);
            int32_t top = yq_requant_out(INT32_MAX, 1.f, 1.f, qmin, qmax, lut), bot = yq_requant_out(INT32_MIN + 1, 1.f, 1.f, qmin, qmax, lut);
            CHECK(top == (a == YQ_ACT_LOGISTIC ? (int32_t)fmin(nearbyint(1 / (double)s), qmax) : qmax));
            CHECK(bot == 0);
        }
    CHECK(yq_act_table(YQ_ACT_LEAKY, 0.1f, -127, 127, lut, &(double){0}, &(double){0}, &err) == YQ_ERR_INVALID_ARG);
    CHECK(yq_act_table(YQ_ACT_MISH, 0.f, -127, 127, lut, &(double){0}, &(double){0}, &err) == YQ_ERR_INVALID_ARG);
}

/* ---- a small network with every op ---------------------------------------- */

static const char *net_cfg =
    "[net]\nwidth=24\nheight=16\nchannels=3\n"
    "[convolutional]\nbatch_normalize=1\nfilters=13\nsize=3\nstride=1\npad=1\nactivation=leaky\n"   /* 0 */
    "[convolutional]\nbatch_normalize=1\nfilters=13\nsize=3\nstride=1\npad=1\ngroups=13\nactivation=leaky\n" /* 1 dw */
    "[convolutional]\nbatch_normalize=1\nfilters=13\nsize=1\nstride=1\npad=0\nactivation=linear\n"   /* 2 */
    "[shortcut]\nfrom=-3\nactivation=linear\n"                                                         /* 3 */
    "[maxpool]\nsize=2\nstride=2\n"                                                                    /* 4 */
    "[convolutional]\nbatch_normalize=1\nfilters=8\nsize=3\nstride=2\npad=1\nactivation=relu\n"      /* 5 */
    "[upsample]\nstride=2\n"                                                                           /* 6 */
    "[route]\nlayers=-1,-3\n"                                                                          /* 7 */
    "[maxpool]\nsize=2\nstride=1\n"                                                                    /* 8 */
    "[convolutional]\nbatch_normalize=1\nfilters=8\nsize=3\nstride=1\npad=1\nactivation=leaky\n"     /* 9 */
    "[shortcut]\nfrom=-4\nactivation=leaky\n"                                                          /* 10: wait, shapes */
    "[convolutional]\nsize=1\nstride=1\npad=1\nfilters=21\nactivation=linear\n"                       /* 11 */
    "[yolo]\nmask=0,1,2\nanchors=10,13,16,30,33,23\nclasses=2\nnum=3\n";                             /* 12 */

/* Every table activation (mish, swish, logistic) on int8 outputs, fed by and feeding
 * int8 convs, one of them into a shortcut. */
static const char *table_cfg =
    "[net]\nwidth=20\nheight=12\nchannels=3\n"
    "[convolutional]\nbatch_normalize=1\nfilters=12\nsize=3\nstride=1\npad=1\nactivation=mish\n"    /* 0 */
    "[convolutional]\nbatch_normalize=1\nfilters=12\nsize=1\nstride=1\npad=0\nactivation=swish\n"   /* 1 */
    "[shortcut]\nfrom=-2\nactivation=linear\n"                                                          /* 2 */
    "[convolutional]\nbatch_normalize=1\nfilters=9\nsize=3\nstride=2\npad=1\nactivation=logistic\n" /* 3 */
    "[convolutional]\nbatch_normalize=1\nfilters=12\nsize=3\nstride=1\npad=1\ngroups=3\nactivation=mish\n" /* 4 */
    "[convolutional]\nsize=1\nstride=1\npad=1\nfilters=21\nactivation=linear\n"                      /* 5 */
    "[yolo]\nmask=0,1,2\nanchors=10,13,16,30,33,23\nclasses=2\nnum=3\n";                              /* 6 */

static yq_graph *cfg_graph(const char *cfg, uint32_t seed)
{
    char path[] = "/tmp/yq_int8_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(write(fd, cfg, strlen(cfg)) == (ssize_t)strlen(cfg));
    close(fd);
    yq_import_opt o = { .synthetic = 1, .seed = seed };
    yq_graph *g;
    yq_error err;
    yq_status st = yq_darknet_load(path, NULL, &o, &g, &err);
    unlink(path);
    CHECKF(st == YQ_OK, "%s", err.msg);
    return g;
}

static yq_graph *small_graph(uint32_t seed) { return cfg_graph(net_cfg, seed); }

static void fill_input(float *x, long n, uint32_t seed)
{
    uint64_t s = seed;
    for (long i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((s >> 33) % 1000) / 999.f;
    }
}

typedef struct obs { yq_calib_stats *cs; } obs;
static void observe_hook(void *ctx, const yq_graph *g, int id, const void *data, int batch)
{
    obs *o = ctx;
    const yq_node *n = &g->nodes[id];
    long sz = yq_shape_size(n->out);
    const float *x = data;
    yq_hist_add(&o->cs->hist[id], x, sz * batch);
    long plane = (long)n->out.h * n->out.w;
    for (int b = 0; b < batch; b++)
        for (int c = 0; c < n->out.c; c++) {
            double s = 0;
            for (long i = 0; i < plane; i++) {
                s += (double)x[b * sz + c * plane + i];
                o->cs->ch_max[id][c] = fmaxf(o->cs->ch_max[id][c], fabsf(x[b * sz + c * plane + i]));
            }
            o->cs->ch_mean[id][c] += s / plane / batch;
        }
}

/* Calibrates FP32 graph *gp on `batch` random inputs and replaces it by its rewrite (which
 * owns it: tests/test_rewrite.h). */
static void calibrate_quantize(yq_graph **gp, const float *in, int batch, const yq_qconfig *qc)
{
    yq_graph *g = *gp;
    yq_error err;
    yq_calib_stats *cs;
    CHECK(yq_calib_stats_new(g->n_nodes, g, &cs, &err) == YQ_OK);
    yq_plan *p;
    CHECK(yq_plan_new(g, batch, 0, &p, &err) == YQ_OK);
    obs o = { cs };
    CHECKF(yq_exec_fp32(p, in, observe_hook, &o, &err) == YQ_OK, "%s", err.msg);
    yq_plan_free(p);
    CHECKF(test_rewrite(gp, cs, qc, &err) == YQ_OK, "%s", err.msg);
    yq_calib_stats_free(cs);
}

static float deq1(const void *p, yq_dtype t, long i, float s)
{
    return t == YQ_U8 ? ((const uint8_t *)p)[i] * s : t == YQ_S8 ? ((const int8_t *)p)[i] * s : ((const float *)p)[i];
}

/* Every int8 conv and shortcut of the graph cfg within one step of the float simulation
 * (n_nodes: the graph's, with the input; at least min_checked of those ops). */
static void ops_vs_float_sim(const char *cfg, int n_nodes, int min_checked)
{
    yq_graph *g = cfg_graph(cfg, 7);
    CHECK(g->n_nodes == n_nodes);
    int B = 2;
    long in_n = yq_shape_size(g->nodes[0].out) * B;
    float *in = malloc(sizeof(float) * (size_t)in_n);
    fill_input(in, in_n, 99);
    yq_qconfig qc;
    yq_qconfig_defaults(&qc);
    qc.head_float = 0;
    calibrate_quantize(&g, in, B, &qc);
    yq_error err;
    yq_plan *p;
    CHECK(yq_plan_new(g, B, YQ_PLAN_KEEP_ALL | YQ_PLAN_REFERENCE, &p, &err) == YQ_OK);
    CHECKF(yq_exec_int8(p, in, NULL, NULL, &err) == YQ_OK, "%s", err.msg);
    int checked = 0;
    for (int i = 1; i < g->n_nodes; i++) {
        const yq_node *n = &g->nodes[i];
        const yq_qnode *q = &g->q[i];
        if (q->float_op || q->dtype != YQ_S8 || n->op == YQ_OP_DROPOUT) continue;
        const int8_t *y = yq_plan_data(p, i);
        const void *x = yq_plan_data(p, n->src[0]);
        yq_dtype xt = g->q[n->src[0]].dtype;
        float sx = g->q[n->src[0]].scale;
        yq_shape is = yq_node_in_shape(g, n), os = n->out;
        long sz = yq_shape_size(os);
        int worst = 0;
        for (int b = 0; b < B; b++)
            for (int c = 0; c < os.c; c++)
                for (int oy = 0; oy < os.h; oy++)
                    for (int ox = 0; ox < os.w; ox++) {
                        long oi = b * sz + ((long)c * os.h + oy) * os.w + ox;
                        float f = 0;
                        int exact = 0;
                        if (n->op == YQ_OP_CONV) {
                            const yq_conv_p *cp = &n->p.conv;
                            int cin = is.c / cp->groups, c0 = c / (cp->filters / cp->groups) * cin;
                            double acc = 0;
                            for (int ci = 0; ci < cin; ci++)
                                for (int ky = 0; ky < cp->size; ky++)
                                    for (int kx = 0; kx < cp->size; kx++) {
                                        int yy = oy * cp->stride + ky - cp->pad, xx = ox * cp->stride + kx - cp->pad;
                                        if (yy < 0 || yy >= is.h || xx < 0 || xx >= is.w) continue;
                                        float w = q->wq[((long)c * cin + ci) * cp->size * cp->size + ky * cp->size + kx] * q->w_scale[c];
                                        acc += (double)w * (double)deq1(x, xt, b * yq_shape_size(is) + ((long)(c0 + ci) * is.h + yy) * is.w + xx, sx);
                                    }
                            acc += (double)q->bq[c] * (double)sx * (double)q->w_scale[c];
                            f = yq_f32_act1((float)acc, n->act);
                        } else if (n->op == YQ_OP_SHORTCUT) {
                            const void *xb = yq_plan_data(p, n->src[1]);
                            float a = deq1(x, xt, oi, sx), bb = deq1(xb, g->q[n->src[1]].dtype, oi, g->q[n->src[1]].scale);
                            f = yq_f32_act1(a + bb, n->act);
                        } else {
                            exact = 1;   /* maxpool, upsample, route: the same scale in and out */
                            continue;
                        }
                        float e = roundf(f / q->scale);
                        e = fminf(fmaxf(e, (float)q->qmin), (float)q->qmax);
                        int d = abs(y[oi] - (int)e);
                        if (d > worst) worst = d;
                        (void)exact;
                    }
        if (n->op == YQ_OP_CONV || n->op == YQ_OP_SHORTCUT) {
            CHECKF(worst <= 1, "layer %d (%s): int8 differs from the float simulation by %d steps", n->layer, yq_op_name(n->op), worst);
            checked++;
        }
    }
    CHECK(checked >= min_checked);
    /* Copies: route = its inputs' bytes; maxpool and upsample = the float op on the int8 values. */
    for (int i = 1; i < g->n_nodes; i++) {
        const yq_node *n = &g->nodes[i];
        if (n->op == YQ_OP_UPSAMPLE || n->op == YQ_OP_MAXPOOL || n->op == YQ_OP_ROUTE) {
            CHECKF(g->q[i].scale == g->q[n->src[0]].scale, "layer %d: %s changes scale", n->layer, yq_op_name(n->op));
            yq_shape is = yq_node_in_shape(g, n);
            long isz = yq_shape_size(is) * B, osz = yq_shape_size(n->out) * B;
            float *fi = malloc(sizeof(float) * (size_t)isz), *fo = malloc(sizeof(float) * (size_t)osz);
            const int8_t *xi = yq_plan_data(p, n->src[0]), *yo = yq_plan_data(p, i);
            for (long k = 0; k < isz; k++) fi[k] = xi[k];
            if (n->op == YQ_OP_UPSAMPLE) yq_f32_upsample(is, n->p.up.stride, fi, fo, B);
            else if (n->op == YQ_OP_MAXPOOL) yq_f32_maxpool(is, &n->p.pool, n->out, fi, fo, B);
            else {
                int off = 0;
                for (int k = 0; k < n->n_src; k++) {
                    yq_shape ss = g->nodes[n->src[k]].out;
                    const int8_t *xs = yq_plan_data(p, n->src[k]);
                    float *fs = malloc(sizeof(float) * (size_t)(yq_shape_size(ss) * B));
                    for (long j = 0; j < yq_shape_size(ss) * B; j++) fs[j] = xs[j];
                    yq_f32_route_copy(ss, &n->p.route, fs, n->out, off, fo, B);
                    off += ss.c;
                    free(fs);
                }
            }
            for (long k = 0; k < osz; k++) CHECKF(fo[k] == (float)yo[k], "layer %d (%s) at %ld", n->layer, yq_op_name(n->op), k);
            free(fi);
            free(fo);
        }
    }
    yq_plan_free(p);
    free(in);
    yq_graph_free(g);
}

static void t_ops_vs_float_sim(void) { ops_vs_float_sim(net_cfg, 14, 7); }

static unsigned char *run_all(const yq_graph *g, int B, int flags, const float *in, size_t *len);

/* Every node's bytes: the reference twice (deterministic), then the dgemm path, all equal. */
static void same_on_both_paths(const yq_graph *g, int B, const float *in)
{
    size_t l1, l2, l3;
    unsigned char *a = run_all(g, B, YQ_PLAN_REFERENCE, in, &l1);
    unsigned char *b = run_all(g, B, YQ_PLAN_REFERENCE, in, &l2);
    unsigned char *c = run_all(g, B, 0, in, &l3);
    CHECK(l1 == l2 && l1 == l3);
    CHECK(!memcmp(a, b, l1));
    CHECK(!memcmp(a, c, l1));
    free(a);
    free(b);
    free(c);
}

/* The table activations: every table conv is int8 (act_table on, the default), within
 * one step of the float simulation, deterministic and equal on both CPU paths. */
static void t_table_vs_float_sim(void)
{
    ops_vs_float_sim(table_cfg, 8, 5);
    yq_graph *g = cfg_graph(table_cfg, 3);
    int B = 3;
    long in_n = yq_shape_size(g->nodes[0].out) * B;
    float *in = malloc(sizeof(float) * (size_t)in_n);
    fill_input(in, in_n, 5);
    yq_qconfig qc;
    yq_qconfig_defaults(&qc);
    qc.head_float = 0;
    calibrate_quantize(&g, in, B, &qc);
    int tables = 0;
    for (int i = 1; i < g->n_nodes; i++)
        if (g->nodes[i].op == YQ_OP_CONV && yq_act_is_table(g->nodes[i].act)) {
            CHECKF(!g->q[i].float_op && g->q[i].dtype == YQ_S8 && g->q[i].lut, "node %d: not an int8 table conv", i);
            tables++;
        }
    CHECK(tables == 4);
    same_on_both_paths(g, B, in);
    /* act_table off: those convs stay in float */
    test_unrewrite(&g);
    qc.act_table = 0;
    calibrate_quantize(&g, in, B, &qc);
    for (int i = 1; i < g->n_nodes; i++)
        if (g->nodes[i].op == YQ_OP_CONV && yq_act_is_table(g->nodes[i].act))
            CHECKF(g->q[i].float_op && !g->q[i].lut, "node %d: act_table off, yet int8", i);
    free(in);
    yq_graph_free(g);
}

/* small_graph(seed) calibrated on B inputs (fill_input(in_seed), *in, malloc'd) and rewritten
 * with the default qconfig (the rewrite owns the FP32 graph). */
static yq_graph *small_quantized(uint32_t seed, int B, uint32_t in_seed, float **in)
{
    yq_graph *g = small_graph(seed);
    long in_n = yq_shape_size(g->nodes[0].out) * B;
    *in = malloc(sizeof(float) * (size_t)in_n);
    fill_input(*in, in_n, in_seed);
    yq_qconfig qc;
    yq_qconfig_defaults(&qc);
    calibrate_quantize(&g, *in, B, &qc);
    return g;
}

/* runtime/engine.h on the CPU: the engine's run of an int8 graph holds every node's bytes
 * as the plan run directly does (KEEP_ALL), its hook sees each node once with those bytes,
 * and the checks common to every engine refuse what they should. */
typedef struct hook_seen { const yq_graph *g; int calls, bad; const unsigned char *ref; size_t *off; int B; } hook_seen;
static void engine_hook(void *ctx, int id, const void *data, int n, void *stream)
{
    hook_seen *h = ctx;
    size_t b = (size_t)yq_shape_size(h->g->nodes[id].out) * (size_t)n * (size_t)yq_dtype_size(h->g->q[id].dtype);
    h->calls++;
    if (stream || n != h->B || memcmp(data, h->ref + h->off[id], b)) h->bad++;
}

static void t_engine_cpu(void)
{
    int B = 2;
    float *in;
    yq_graph *g = small_quantized(9, B, 23, &in);
    size_t len;
    unsigned char *ref = run_all(g, B, 0, in, &len);
    size_t *off = malloc(sizeof *off * (size_t)g->n_nodes), o = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        off[i] = o;
        o += (size_t)yq_shape_size(g->nodes[i].out) * B * yq_dtype_size(g->q[i].dtype);
    }
    yq_error err;
    yq_engine_opt eo = yq_engine_defaults(YQ_ENGINE_CPU);
    eo.flags = YQ_PLAN_KEEP_ALL;
    yq_engine *e = NULL;
    CHECKF(yq_engine_new(g, B, &eo, &e, &err) == YQ_OK, "%s", err.msg);
    CHECK(!strcmp(yq_engine_name(e), "cpu") && !yq_engine_on_gpu(e) && yq_engine_batch(e) == B && !yq_engine_stream(e));
    hook_seen h = { g, 0, 0, ref, off, B };
    CHECK(yq_engine_set_hook(e, engine_hook, &h, &err) == YQ_OK);
    CHECK(yq_engine_upload(e, in, B, &err) == YQ_OK && yq_engine_enqueue(e, B, &err) == YQ_OK && yq_engine_sync(e, &err) == YQ_OK);
    int same = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        size_t b = (size_t)yq_shape_size(g->nodes[i].out) * B * yq_dtype_size(g->q[i].dtype);
        const void *d = yq_engine_node(e, i);
        same += d && !memcmp(d, ref + off[i], b);
    }
    CHECKF(same == g->n_nodes, "%d of %d nodes as the plan's own run", same, g->n_nodes);
    CHECKF(h.calls == g->n_nodes && h.bad == 0, "hook: %d calls (%d nodes, the input included), %d wrong", h.calls,
           g->n_nodes, h.bad);
    /* the common checks */
    CHECK(yq_engine_enqueue(e, B + 1, &err) == YQ_ERR_INVALID_ARG && strstr(err.msg, "batch"));
    CHECK(yq_engine_upload(e, in, 0, &err) == YQ_ERR_INVALID_ARG);
    CHECK(yq_engine_node(e, -1) == NULL && yq_engine_node(e, g->n_nodes) == NULL);
    yq_engine_free(e);
    yq_engine *x = (yq_engine *)1;
    eo.kind = (yq_engine_kind)7;
    CHECK(yq_engine_new(g, B, &eo, &x, &err) == YQ_ERR_INVALID_ARG && x == NULL && strstr(err.msg, "kind"));
    eo.kind = YQ_ENGINE_CPU;
    CHECK(yq_engine_new(g, 0, &eo, &x, &err) == YQ_ERR_INVALID_ARG && x == NULL);
    eo.kind = YQ_ENGINE_CUDA;       /* an FP32 graph: refused before any GPU is looked for */
    CHECK(yq_engine_new(g->base, B, &eo, &x, &err) == YQ_ERR_UNSUPPORTED && x == NULL && strstr(err.msg, "FP32"));
    free(off);
    free(ref);
    free(in);
    yq_graph_free(g);
}

/* Quantized again and again (a sweep's points): each rewrite is a graph of its own, the
 * same size and the same bytes each time, and the FP32 graph is never touched (its memory,
 * its q, its weights). */
static void t_requantize_memory(void)
{
    yq_graph *g = small_graph(5);
    int B = 2;
    long in_n = yq_shape_size(g->nodes[0].out) * B;
    float *in = malloc(sizeof(float) * (size_t)in_n);
    fill_input(in, in_n, 17);
    yq_qconfig qc;
    yq_qconfig_defaults(&qc);
    size_t fp32 = yq_graph_bytes(g), first = 0;
    long nw = g->nodes[1].n_w;
    float *w0 = malloc(sizeof *w0 * (size_t)nw);
    memcpy(w0, g->nodes[1].w, sizeof *w0 * (size_t)nw);
    unsigned char *ref = NULL;
    size_t len = 0;
    for (int k = 0; k < 30; k++) {
        calibrate_quantize(&g, in, B, &qc);
        CHECK(g->q && g->base && !g->base->q && g->nodes[1].w == g->base->nodes[1].w);
        size_t l2;
        unsigned char *out = run_all(g, B, 0, in, &l2);
        size_t bytes = yq_graph_bytes(g);
        test_unrewrite(&g);
        CHECK(g->q == NULL && yq_graph_bytes(g) == fp32 && !memcmp(g->nodes[1].w, w0, sizeof *w0 * (size_t)nw));
        if (!k) {
            first = bytes;
            ref = out;
            len = l2;
            continue;
        }
        CHECK(l2 == len && !memcmp(out, ref, len));
        free(out);
        CHECKF(bytes == first, "round %d: the rewrite holds %zu bytes, %zu the first time", k, bytes, first);
    }
    printf("# 30 rewrites: each holds %zu bytes of its own (the FP32 graph %zu, untouched)\n", first, fp32);
    free(w0);
    free(ref);
    free(in);
    yq_graph_free(g);
}

/* Runs g's int8 plan (flags) on in; returns a malloc'ed concatenation of every node's bytes. */
static unsigned char *run_all(const yq_graph *g, int B, int flags, const float *in, size_t *len)
{
    yq_error err;
    yq_plan *p;
    CHECK(yq_plan_new(g, B, YQ_PLAN_KEEP_ALL | flags, &p, &err) == YQ_OK);
    CHECKF(yq_exec_int8(p, in, NULL, NULL, &err) == YQ_OK, "%s", err.msg);
    size_t total = 0;
    for (int i = 0; i < g->n_nodes; i++) total += (size_t)yq_shape_size(g->nodes[i].out) * B * yq_dtype_size(g->q[i].dtype);
    unsigned char *all = malloc(total), *w = all;
    for (int i = 0; i < g->n_nodes; i++) {
        size_t b = (size_t)yq_shape_size(g->nodes[i].out) * B * yq_dtype_size(g->q[i].dtype);
        memcpy(w, yq_plan_data(p, i), b);
        w += b;
    }
    yq_plan_free(p);
    *len = total;
    return all;
}

static void t_deterministic_and_blas(void)
{
    int B = 3;
    float *in;
    yq_graph *g = small_quantized(3, B, 5, &in);
    same_on_both_paths(g, B, in);
    free(in);
    yq_graph_free(g);
}

/* Real models: the dgemm path and the fast engine (AVX-512 VNNI where this CPU has it, and
 * AVX2) equal the reference, every node, byte for byte. */
static void blas_vs_ref_model(const char *rel, int synthetic, int size, int head_float)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/models/%s", test_data_dir(), rel);
    if (access(path, R_OK)) TEST_SKIP("%s missing (see DATA.md)", path);
    yq_model_paths mp;
    yq_error err;
    CHECKF(yq_model_resolve(path, synthetic ? "synthetic" : NULL, &mp, &err) == YQ_OK, "%s", err.msg);
    yq_import_opt o = { .width = size, .height = size, .synthetic = synthetic };
    yq_graph *g;
    CHECKF(yq_darknet_load(mp.cfg, synthetic ? NULL : mp.weights, &o, &g, &err) == YQ_OK, "%s", err.msg);
    long in_n = yq_shape_size(g->nodes[0].out);
    float *in = malloc(sizeof(float) * (size_t)in_n);
    fill_input(in, in_n, 11);
    yq_qconfig qc;
    yq_qconfig_defaults(&qc);
    qc.head_float = head_float;
    calibrate_quantize(&g, in, 1, &qc);
    size_t l1, l2;
    unsigned char *a = run_all(g, 1, YQ_PLAN_REFERENCE, in, &l1);
    static const struct { int flags; const char *name; } path_[] = {
        { YQ_PLAN_INT8_BLAS, "the dgemm path" }, { 0, "the fast engine" }, { YQ_PLAN_CPU_AVX2, "the fast engine's AVX2 path" } };
    for (int k = 0; k < 3; k++) {
        if (k > 0 && yq_cpu_isa() < (k == 1 ? YQ_ISA_AVX512 : YQ_ISA_AVX2)) continue;
        unsigned char *b = run_all(g, 1, path_[k].flags, in, &l2);
        CHECK(l1 == l2);
        if (memcmp(a, b, l1)) {   /* name the first node that differs */
            size_t off = 0;
            int bad = -1;
            for (int i = 0; i < g->n_nodes && bad < 0; i++) {
                size_t nb = (size_t)yq_shape_size(g->nodes[i].out) * yq_dtype_size(g->q[i].dtype);
                if (memcmp(a + off, b + off, nb)) bad = i;
                off += nb;
            }
            CHECKF(0, "%s: %s differs from the reference first at node %d (layer %d, %s)", rel, path_[k].name, bad,
                   g->nodes[bad].layer, yq_op_name(g->nodes[bad].op));
        }
        free(b);
    }
    free(a);
    free(in);
    yq_graph_free(g);
}

static void t_blas_fastest_xl(void) { blas_vs_ref_model("yolo-fastest-1.1-xl", 0, 0, 0); }
static void t_blas_yolo_lite(void) { blas_vs_ref_model("yolo-lite-coco-trial6", 0, 0, 1); }
static void t_blas_yolov3_tiny(void) { blas_vs_ref_model("cfg-only/yolov3-tiny.cfg", 1, 128, 0); }
static void t_blas_yolov4_tiny(void) { blas_vs_ref_model("cfg-only/yolov4-tiny.cfg", 1, 128, 0); }
/* mish: every int8 conv through its activation table */
static void t_blas_yolov4_mish(void) { blas_vs_ref_model("cfg-only/yolov4.cfg", 1, 96, 0); }

/* ir/half.h against the compiler's _Float16 (IEEE round to nearest even, as CUDA's
 * __float2half_rn): every float whose bits are a multiple of 4093, and the edges (the
 * largest half, the rounding threshold to infinity, subnormal ties, signed zeros, NaN). */
static void t_fp16_rounding(void)
{
    static const uint32_t edges[] = { 0, 0x80000000u, 0x477fe000u, 0x477fefffu, 0x477ff000u, 0x47800000u, 0x7f800000u,
                                      0x7fc00000u, 0x33000000u, 0x33000001u, 0x33800000u, 0x38800000u, 0x387fe000u,
                                      0x387ff000u, 0x00000001u, 0x3f800fffu, 0x3f801000u, 0x3f803000u, 0xc77fefffu };
    long bad = 0, n = 0;
    size_t n_edges = sizeof edges / sizeof *edges;
    for (uint64_t i = 0; i < (1ull << 32) / 4093 + 1 + n_edges; i++) {
        uint32_t u = i < (1ull << 32) / 4093 + 1 ? (uint32_t)(i * 4093) : edges[i - ((1ull << 32) / 4093 + 1)];
        float x, a, b;
        memcpy(&x, &u, 4);
        a = yq_round_fp16(x);
        b = (float)(_Float16)x;
        n++;
        if (memcmp(&a, &b, 4) && !(a != a && b != b) && bad++ < 3)
            printf("     %08x: ours %a, _Float16 %a\n", (unsigned)u, (double)a, (double)b);
    }
    CHECK(n > 1000000);
    CHECKF(bad == 0, "%ld of %ld floats round differently", bad, n);
    CHECK(yq_is_fp16(1.5f) && !yq_is_fp16(1.0001f) && yq_is_fp16(65504.f) && !yq_is_fp16(65504.5f));
}

/* float_precision: a float conv of an int8 graph runs with the FP16-rounded copy of its
 * weights (fp16w) or the FP32 ones (the default); the FP32 model's weights are never touched */
static void t_float_precision(void)
{
    for (int fp16w = 1; fp16w >= 0; fp16w--) {
        yq_graph *g = small_graph(11);
        int conv0 = 1;
        CHECK(g->nodes[conv0].op == YQ_OP_CONV && g->nodes[conv0].p.conv.groups == 1);
        long nw = g->nodes[conv0].n_w;
        float *orig = malloc(sizeof *orig * (size_t)nw);
        CHECK(orig);
        memcpy(orig, g->nodes[conv0].w, sizeof *orig * (size_t)nw);
        long in_n = yq_shape_size(g->nodes[0].out);
        float *in = malloc(sizeof *in * (size_t)in_n);
        CHECK(in);
        fill_input(in, in_n, 5);
        yq_qconfig qc;
        yq_qconfig_defaults(&qc);
        yq_error err;
        CHECK(yq_qconfig_set(&qc, "skip_layers", "0,1", "t", &err) == YQ_OK);   /* conv 0 and the dw conv in float */
        CHECK(yq_qconfig_set(&qc, "float_precision", fp16w ? "fp16w" : "fp32", "t", &err) == YQ_OK);
        calibrate_quantize(&g, in, 1, &qc);
        const yq_node *n = &g->nodes[conv0];
        const yq_qnode *q = &g->q[conv0];
        CHECK(q->float_op && q->fp16w == fp16w && g->q[2].float_op && g->q[2].fp16w == 0);   /* grouped: fp32 */
        CHECK(!memcmp(n->w, orig, sizeof *orig * (size_t)nw));
        const float *w = yq_conv_weights(n, q);
        long changed = 0;
        for (long k = 0; k < nw; k++) {
            CHECK(w[k] == (fp16w ? yq_round_fp16(orig[k]) : orig[k]));
            changed += w[k] != orig[k];
        }
        CHECK(!fp16w || changed > nw / 2);
        /* the engine's output of that conv: yq_f32_conv_exact on exactly those weights */
        yq_plan *p;
        CHECK(yq_plan_new(g, 1, YQ_PLAN_KEEP_ALL, &p, &err) == YQ_OK);
        CHECKF(yq_exec_int8(p, in, NULL, NULL, &err) == YQ_OK, "%s", err.msg);
        long out_n = yq_shape_size(n->out);
        float *ref = malloc(sizeof *ref * (size_t)out_n), *wk = malloc(sizeof(float) * (size_t)(yq_f32_conv_exact_work(g, n) + 1));
        CHECK(ref && wk);
        yq_f32_conv_exact(g, n, w, in, ref, wk, 1);          /* conv 0 reads the image itself */
        CHECK(g->q[0].dtype == YQ_F32 || g->q[0].dtype == YQ_U8);
        if (g->q[0].dtype == YQ_F32)
            CHECK(!memcmp(ref, yq_plan_data(p, conv0), sizeof *ref * (size_t)out_n));
        yq_plan_free(p);
        free(ref);
        free(wk);
        free(in);
        free(orig);
        yq_graph_free(g);
    }
}

/* The float convs' exact definition, written plainly: per output one fmaf chain over (ci, ky,
 * kx) from +0 skipping the padding taps (as the GPU's conv_f32 does), + bias, then
 * yq_f32_act_exact.  yq_f32_conv_exact (im2col with zero taps, AVX2 FMA rows where the CPU has
 * them, scalar fmaf tails) must give the same bytes on every shape, with each instruction set
 * the CPU has (AVX-512, AVX2 + FMA, scalar): dense 3x3 with stride 1
 * and 2 (few input channels too), 1x1, 5x5, grouped and depthwise (stride 1 and 2, rows shorter and longer than a
 * vector block), widths that leave vector tails, every activation,
 * K over several of its blocks, more rows than a row group, and convs large enough to run on
 * the host's threads (cut by rows, and by strips). */
static void t_float_exact(void)
{
    static const struct { int c, h, w, f, k, s, groups; yq_act act; } cs[] = {
        { 3, 17, 23, 16, 3, 2, 1, YQ_ACT_LEAKY },   { 13, 9, 11, 37, 3, 1, 1, YQ_ACT_LINEAR },
        { 40, 7, 5, 255, 1, 1, 1, YQ_ACT_LINEAR },  { 16, 12, 19, 16, 3, 1, 16, YQ_ACT_LEAKY },
        { 24, 10, 13, 24, 5, 2, 24, YQ_ACT_MISH },  { 32, 8, 8, 20, 3, 1, 4, YQ_ACT_SWISH },
        /* depthwise stride 2 (its column phases: rows of even and odd widths, vector and tail) */
        { 24, 37, 50, 24, 3, 2, 24, YQ_ACT_LEAKY }, { 8, 19, 35, 8, 3, 2, 8, YQ_ACT_LINEAR },
        /* ... and rows of more than 64 outputs (the AVX-512 rows' blocks), stride 2 and 1 */
        { 8, 9, 150, 8, 3, 2, 8, YQ_ACT_LEAKY },    { 4, 7, 141, 4, 3, 1, 4, YQ_ACT_LINEAR },
        { 6, 11, 133, 6, 5, 2, 6, YQ_ACT_LEAKY },
        { 9, 33, 31, 5, 3, 1, 1, YQ_ACT_LOGISTIC }, { 64, 6, 6, 70, 3, 1, 1, YQ_ACT_RELU },
        /* few taps (K <= 64: the first conv's row kernel): strides 1 and 2, filters past a
         * group of 8, rows with a masked tail, an activation the rows do not apply */
        { 3, 21, 70, 13, 3, 1, 1, YQ_ACT_LINEAR },  { 3, 23, 67, 10, 3, 2, 1, YQ_ACT_LEAKY },
        { 4, 15, 47, 8, 3, 2, 1, YQ_ACT_MISH },     { 7, 9, 40, 3, 3, 1, 1, YQ_ACT_LEAKY },
        /* large enough for the host's threads: cut by rows, and (3 filters) by strips */
        { 64, 40, 40, 98, 3, 1, 1, YQ_ACT_LEAKY },  { 64, 40, 43, 3, 3, 1, 1, YQ_ACT_LINEAR },
    };
    yq_error err;
    for (size_t t = 0; t < sizeof cs / sizeof *cs; t++) {
        yq_graph *g = yq_graph_new();
        CHECK(g);
        yq_node *n0 = yq_graph_add(g, YQ_OP_INPUT, &err), *n;
        CHECK(n0);
        n0->out = (yq_shape){ cs[t].c, cs[t].h, cs[t].w };
        n = yq_graph_add(g, YQ_OP_CONV, &err);
        CHECK(n);
        int k = cs[t].k, pad = k / 2, st = cs[t].s, G = cs[t].groups, cg = cs[t].c / G, F = cs[t].f;
        n->n_src = 1;
        n->src[0] = 0;
        n->act = cs[t].act;
        n->p.conv = (yq_conv_p){ F, k, st, pad, G, 0 };
        n->out = (yq_shape){ F, (cs[t].h + 2 * pad - k) / st + 1, (cs[t].w + 2 * pad - k) / st + 1 };
        n->n_w = (long)F * cg * k * k;
        n->w = yq_arena_alloc(g, sizeof(float) * (size_t)n->n_w);
        n->b = yq_arena_alloc(g, sizeof(float) * (size_t)F);
        CHECK(n->w && n->b);
        fill_input(n->w, n->n_w, 3 + (uint32_t)t);
        fill_input(n->b, F, 7 + (uint32_t)t);
        for (long i = 0; i < n->n_w; i++) n->w[i] = (n->w[i] - .5f) * .3f;
        const int B = 2;
        yq_shape is = n0->out, os = n->out;
        long in_n = yq_shape_size(is) * B, out_n = yq_shape_size(os) * B;
        float *x = malloc(sizeof *x * (size_t)in_n), *got = malloc(sizeof *got * (size_t)out_n),
              *want = malloc(sizeof *want * (size_t)out_n),
              *wk = malloc(sizeof(float) * (size_t)(yq_f32_conv_exact_work(g, n) + 1));
        CHECK(x && got && want && wk);
        fill_input(x, in_n, 11 + (uint32_t)t);
        for (long i = 0; i < in_n; i++) x[i] = 8 * x[i] - 4;
        /* a conv that may read its input quantized (yq_f32_conv_exact_q: a float depthwise conv
         * after an int8 layer): the input is int8 (uint8 in odd cases) times a scale, the
         * dequantized values yq_dequantize gives, so both forms have the one definition */
        const int takes_q = yq_f32_conv_exact_takes_q(g, n);
        const yq_dtype qdt = t & 1 ? YQ_U8 : YQ_S8;
        const float qscale = .0371f;
        uint8_t *xq = malloc((size_t)in_n);
        CHECK(xq);
        if (takes_q) {
            for (long i = 0; i < in_n; i++) xq[i] = (uint8_t)(int)(x[i] * 31.75f + (qdt == YQ_U8 ? 128 : 0));
            yq_dequantize(xq, qdt, in_n, qscale, x);
        }
        for (int b = 0; b < B; b++)
            for (int o = 0; o < F; o++)
                for (int oy = 0; oy < os.h; oy++)
                    for (int ox = 0; ox < os.w; ox++) {
                        int gi = o / (F / G);
                        float sum = 0.f;
                        for (int ci = 0; ci < cg; ci++)
                            for (int ky = 0; ky < k; ky++)
                                for (int kx = 0; kx < k; kx++) {
                                    int y = oy * st + ky - pad, xx = ox * st + kx - pad;
                                    if (y < 0 || y >= is.h || xx < 0 || xx >= is.w) continue;
                                    sum = fmaf(n->w[((long)(o * cg + ci) * k + ky) * k + kx],
                                               x[(((long)b * is.c + gi * cg + ci) * is.h + y) * is.w + xx], sum);
                                }
                        want[(((long)b * F + o) * os.h + oy) * os.w + ox] = yq_f32_act_exact(sum + n->b[o], n->act);
                    }
        /* every instruction set this CPU has: AVX-512, AVX2 + FMA, scalar fmaf */
        for (int isa = 2; isa >= 0; isa--) {
            yq_f32_exact_force(isa);
            memset(got, 0xff, sizeof *got * (size_t)out_n);
            yq_f32_conv_exact(g, n, NULL, x, got, wk, B);
            long d = -1;
            for (long i = 0; i < out_n && d < 0; i++)
                if (memcmp(&got[i], &want[i], sizeof *got)) d = i;
            CHECKF(d < 0, "case %zu (%dx%dx%d -> %d, k%d s%d g%d), isa %d: output %ld: %.9g, the definition %.9g", t,
                   cs[t].c, cs[t].h, cs[t].w, F, k, st, G, isa, d, d >= 0 ? (double)got[d] : 0.0,
                   d >= 0 ? (double)want[d] : 0.0);
            if (!takes_q) continue;
            memset(got, 0xff, sizeof *got * (size_t)out_n);
            yq_f32_conv_exact_q(g, n, NULL, xq, qdt, qscale, got, wk, B);
            CHECKF(memcmp(got, want, sizeof *got * (size_t)out_n) == 0, "case %zu, isa %d: quantized input (%s)", t, isa,
                   qdt == YQ_U8 ? "u8" : "s8");
        }
        yq_f32_exact_force(-1);
        free(xq);
        free(x);
        free(got);
        free(want);
        free(wk);
        yq_graph_free(g);
    }
    /* the activations: within an ulp of darknet's FP32 forms (the definition only rounds once) */
    for (int a = 0; a < YQ_ACT_COUNT; a++)
        for (float v = -25.f; v < 25.f; v += .37f) {
            float e = yq_f32_act_exact(v, (yq_act)a), f = yq_f32_act1(v, (yq_act)a);
            CHECKF(fabsf(e - f) <= 2e-6f * fmaxf(1.f, fabsf(f)), "activation %d at %g: %.9g against darknet's %.9g", a,
                   (double)v, (double)e, (double)f);
        }
}

int main(void)
{
    TEST(t_rne_sat);
    TEST(t_conversion_free);
    TEST(t_requant_edges);
    TEST(t_requant_model);
    TEST(t_add_model);
    TEST(t_rq_encode);
    TEST(t_act_table);
    TEST(t_fp16_rounding);
    TEST(t_float_precision);
    TEST(t_float_exact);
    TEST(t_ops_vs_float_sim);
    TEST(t_table_vs_float_sim);
    TEST(t_deterministic_and_blas);
    TEST(t_requantize_memory);
    TEST(t_engine_cpu);
    TEST(t_blas_fastest_xl);
    TEST(t_blas_yolo_lite);
    TEST(t_blas_yolov3_tiny);
    TEST(t_blas_yolov4_tiny);
    TEST(t_blas_yolov4_mish);
    return test_done();
}
