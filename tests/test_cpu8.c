/* The fast int8 CPU engine's kernels (kernels/cpu_int8*.c): the dense conv,
 * depthwise conv, maxpool, upsample, shortcut, quantize, each equal byte for byte to its
 * reference (kernels/cpu_ref.c) on every ISA this CPU runs (reference, AVX2, AVX-512) and
 * on 1 and 2 threads, over shapes with odd widths, borders, strides and kernel sizes,
 * int8 and uint8 inputs, every epilogue (activations, tables, float outputs), and
 * inputs at the int8 extremes and the float edge cases of quantize (ties, NaN,
 * infinities).  Prints the depthwise conv's time against the reference's. */
#include <float.h>
#include <math.h>
#include <time.h>
#include "tests/test.h"
#include "ir/ir.h"
#include "kernels/cpu_int8.h"
#include "kernels/cpu_ref.h"

static uint64_t rng_s;
static void rng_seed(uint32_t seed) { rng_s = seed * 0x9E3779B97F4A7C15ull + 1; }
static uint32_t rnd(void)
{
    rng_s = rng_s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_s >> 32);
}
static float rnd_f(float lo, float hi) { return lo + (hi - lo) * (float)(rnd() >> 8) / 16777216.f; }

/* int8 values, one in 8 at -128 or 127 */
static void fill_s8(int8_t *p, long n)
{
    for (long i = 0; i < n; i++) {
        uint32_t r = rnd();
        p[i] = (r & 7) == 0 ? ((r >> 3) & 1 ? 127 : -128) : (int8_t)(r >> 24);
    }
}

/* An output buffer with guard bytes on both sides: a kernel's stray writes show. */
#define GUARD 64
static unsigned char *guarded(size_t n)
{
    unsigned char *p = malloc(n + 2 * GUARD);
    return p ? p + GUARD : NULL;
}
static void guarded_free(unsigned char *p) { free(p ? p - GUARD : NULL); }
static void guarded_reset(unsigned char *p, size_t n) { memset(p - GUARD, 0x5A, n + 2 * GUARD); }
/* got equal to want, and the guards intact: -1; else the offset of the first bad byte */
static long guarded_diff(const unsigned char *got, const unsigned char *want, size_t n)
{
    for (long i = -GUARD; i < (long)n + GUARD; i++)
        if (i < 0 || i >= (long)n ? got[i] != 0x5A : got[i] != want[i]) return i;
    return -1;
}

/* The ISAs to compare: those this CPU runs. */
static int n_isas(void) { return (int)yq_cpu_isa() + 1; }

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- depthwise conv ------------------------------------------------------ */

enum { M_LEAKY, M_LINEAR, M_RELU, M_LUT, M_F_LINEAR, M_F_LEAKY, M_F_LOGISTIC, M_COUNT };

typedef struct dw_case { int c, h, w, k, s, pad, batch; yq_dtype in_t; int mode; } dw_case;

/* A conv node (nodes[1], input nodes[0]) and its quantized side (q[1]), random: the
 * depthwise nets below and the dense ones further down. */
typedef struct conv_net {
    yq_node nodes[2];
    yq_qnode q[2];
    yq_graph g;
    int8_t *wq, *lut;
    int32_t *bq;
    float *pos, *neg, *deq;
} conv_net;

static void conv_net_free(conv_net *d)
{
    free(d->wq);
    free(d->lut);
    free(d->bq);
    free(d->pos);
    free(d->neg);
    free(d->deq);
}

/* The output side of a conv node for one epilogue mode (pos: the requantize multipliers,
 * set; neg and the activation follow from the mode). */
static void set_epilogue(yq_node *n, yq_qnode *q, int mode, int F, float *pos, float *neg, int8_t *lut)
{
    q->dtype = mode >= M_F_LINEAR ? YQ_F32 : YQ_S8;
    n->act = YQ_ACT_LEAKY;
    for (int o = 0; o < F; o++) neg[o] = pos[o] * .1f;
    switch (mode) {
    case M_LINEAR:
        n->act = YQ_ACT_LINEAR;
        for (int o = 0; o < F; o++) neg[o] = pos[o];
        break;
    case M_RELU:
        n->act = YQ_ACT_RELU;
        for (int o = 0; o < F; o++) neg[o] = 0.f;
        break;
    case M_LUT:   /* the grid spans +-2048: finer steps, clamped at both ends */
        n->act = YQ_ACT_MISH;
        q->lut = lut;
        for (int o = 0; o < F; o++) pos[o] *= 20.f, neg[o] = pos[o] * .7f;
        break;
    case M_F_LINEAR: n->act = YQ_ACT_LINEAR; break;
    case M_F_LEAKY: n->act = YQ_ACT_LEAKY; break;
    case M_F_LOGISTIC: n->act = YQ_ACT_LOGISTIC; break;
    default: break;
    }
}

static int dw_net_make(conv_net *d, const dw_case *cs, int variant)
{
    memset(d, 0, sizeof *d);
    int C = cs->c, k = cs->k;
    d->nodes[0].op = YQ_OP_INPUT;
    d->nodes[0].out = (yq_shape){ C, cs->h, cs->w };
    yq_node *n = &d->nodes[1];
    n->op = YQ_OP_CONV;
    n->n_src = 1;
    n->src[0] = 0;
    n->p.conv = (yq_conv_p){ C, k, cs->s, cs->pad, C, 1 };
    n->out = (yq_shape){ C, (cs->h + 2 * cs->pad - k) / cs->s + 1, (cs->w + 2 * cs->pad - k) / cs->s + 1 };
    d->g.nodes = d->nodes;
    d->g.n_nodes = d->g.cap_nodes = 2;
    d->wq = malloc((size_t)C * k * k);
    d->bq = malloc(sizeof(int32_t) * (size_t)C);
    d->pos = malloc(sizeof(float) * (size_t)C);
    d->neg = malloc(sizeof(float) * (size_t)C);
    d->deq = malloc(sizeof(float) * (size_t)C);
    d->lut = malloc(YQ_LUT_N);
    if (!d->wq || !d->bq || !d->pos || !d->neg || !d->deq || !d->lut) return 0;
    fill_s8(d->wq, (long)C * k * k);
    fill_s8(d->lut, YQ_LUT_N);
    /* accumulators reach about 128 * 128 * k (uint8 input: twice that): scales that
     * spread the outputs over the range and saturate some */
    float span = 128.f * 128.f * (float)k * (cs->in_t == YQ_U8 ? 2.f : 1.f);
    for (int o = 0; o < C; o++) {
        d->bq[o] = (int32_t)(rnd() % 60001) - 30000;
        d->pos[o] = rnd_f(.3f, 2.f) * 127.f / span;
        /* and (but in the timed variant 0) a channel in 7 whose products leave the int32
         * range (saturated outputs) */
        if (variant > 0 && o % 7 == 3) d->pos[o] *= 1e7f;
        d->deq[o] = rnd_f(.5f, 2.f) * 1e-3f;
    }
    yq_qnode *q = &d->q[1];
    /* int8, 4 bits, and a range past int8 (the (int8_t) cast wraps its outputs) */
    static const int32_t ranges[][2] = { { -127, 127 }, { -128, 127 }, { -7, 7 }, { 0, 255 } };
    q->qmin = ranges[variant][0];
    q->qmax = ranges[variant][1];
    q->wq = d->wq;
    q->bq = d->bq;
    q->rq_pos = d->pos;
    q->rq_neg = d->neg;
    q->deq = d->deq;
    set_epilogue(n, q, cs->mode, C, d->pos, d->neg, d->lut);
    return 1;
}

static void t_dwconv(void)
{
    static const dw_case cs[] = {
        { 16, 13, 13, 3, 1, 1, 1, YQ_S8, M_LEAKY },     { 24, 10, 10, 3, 2, 1, 2, YQ_S8, M_LINEAR },
        { 17, 1, 1, 3, 1, 1, 1, YQ_S8, M_RELU },        { 5, 3, 3, 3, 1, 1, 2, YQ_S8, M_LUT },
        { 20, 13, 10, 5, 1, 2, 1, YQ_S8, M_F_LEAKY },   { 3, 7, 9, 5, 2, 2, 2, YQ_S8, M_F_LOGISTIC },
        { 33, 16, 16, 3, 1, 0, 1, YQ_U8, M_LEAKY },     { 7, 11, 13, 3, 2, 0, 1, YQ_U8, M_F_LINEAR },
        { 9, 12, 12, 1, 1, 0, 2, YQ_S8, M_LEAKY },      { 6, 14, 9, 3, 3, 1, 1, YQ_S8, M_LEAKY },
        { 8, 20, 30, 3, 4, 1, 1, YQ_S8, M_LINEAR },     { 5, 9, 11, 7, 1, 3, 1, YQ_S8, M_RELU },
        { 4, 6, 8, 3, 1, 2, 1, YQ_S8, M_LEAKY },        { 3, 9, 9, 4, 2, 1, 1, YQ_S8, M_LUT },
        { 4, 10, 10, 2, 2, 0, 2, YQ_U8, M_LUT },        { 3, 2, 40, 3, 1, 1, 1, YQ_S8, M_LEAKY },
        { 3, 40, 2, 3, 2, 1, 1, YQ_S8, M_F_LEAKY },     { 4, 21, 21, 5, 2, 2, 2, YQ_U8, M_RELU },
        { 5, 13, 13, 5, 1, 2, 1, YQ_U8, M_LUT },        { 2, 5, 5, 3, 2, 0, 1, YQ_S8, M_LINEAR },
        { 6, 17, 65, 3, 1, 1, 1, YQ_S8, M_F_LINEAR },   { 272, 10, 10, 3, 1, 1, 1, YQ_S8, M_LEAKY },
        { 40, 20, 20, 3, 2, 1, 1, YQ_S8, M_LEAKY },     { 18, 1, 7, 5, 1, 2, 1, YQ_S8, M_LINEAR },
        /* several strips of a plane */
        { 3, 80, 80, 3, 1, 1, 1, YQ_S8, M_LEAKY },      { 2, 160, 160, 3, 2, 1, 1, YQ_S8, M_LUT },
        { 2, 70, 90, 5, 1, 2, 2, YQ_U8, M_F_LEAKY },
        /* rows longer than 256 */
        { 2, 5, 300, 3, 1, 1, 1, YQ_S8, M_LEAKY },      { 2, 6, 333, 3, 2, 1, 1, YQ_U8, M_LINEAR },
    };
    for (size_t t = 0; t < sizeof cs / sizeof *cs; t++) {
        rng_seed(100 + (uint32_t)t);
        conv_net d;
        int variant = (int)(t % 4);
        CHECK(dw_net_make(&d, &cs[t], variant));
        const yq_node *n = &d.nodes[1];
        long in_n = (long)cs[t].batch * yq_shape_size(d.nodes[0].out), out_n = (long)cs[t].batch * yq_shape_size(n->out);
        size_t ob = (size_t)out_n * (d.q[1].dtype == YQ_F32 ? sizeof(float) : 1);
        int8_t *x = malloc((size_t)in_n);
        unsigned char *want = malloc(ob), *got = guarded(ob);
        void *work = malloc(yq_ref_conv_work(&d.g, n) + 1);
        CHECK(x && want && got && work);
        fill_s8(x, in_n);
        yq_ref_conv(&d.g, n, &d.q[1], x, cs[t].in_t, want, work, cs[t].batch);
        if (d.q[1].dtype != YQ_F32 && out_n >= 64) {   /* the outputs are not one saturated value */
            int seen[256] = { 0 }, distinct = 0;
            for (long i = 0; i < out_n; i++) distinct += !seen[want[i]]++;
            CHECKF(distinct >= 8, "case %zu: only %d distinct outputs", t, distinct);
        }
        for (int isa = 0; isa < n_isas(); isa++)
            for (int th = 1; th <= 2; th++) {
                guarded_reset(got, ob);
                yq_cpu8_dwconv((yq_isa)isa, th, &d.g, n, &d.q[1], x, cs[t].in_t, got, cs[t].batch);
                long bad = guarded_diff(got, want, ob);
                CHECKF(bad < 0, "case %zu (%dx%dx%d k%d s%d p%d b%d %s mode %d): %s, %d threads: byte %ld of %zu",
                       t, cs[t].c, cs[t].h, cs[t].w, cs[t].k, cs[t].s, cs[t].pad, cs[t].batch,
                       cs[t].in_t == YQ_U8 ? "u8" : "s8", cs[t].mode, yq_isa_name((yq_isa)isa), th, bad, ob);
            }
        free(x);
        free(want);
        guarded_free(got);
        free(work);
        conv_net_free(&d);
    }
}

/* The time of the depthwise convs that dominate yolo-fastest-1.1-xl: printed, not asserted. */
static void t_dwconv_time(void)
{
    static const dw_case cs[] = { { 64, 80, 80, 3, 1, 1, 1, YQ_S8, M_LEAKY },
                                  { 48, 160, 160, 3, 2, 1, 1, YQ_S8, M_LEAKY } };
    for (size_t t = 0; t < sizeof cs / sizeof *cs; t++) {
        rng_seed(7 + (uint32_t)t);
        conv_net d;
        CHECK(dw_net_make(&d, &cs[t], 0));
        const yq_node *n = &d.nodes[1];
        long in_n = yq_shape_size(d.nodes[0].out), out_n = yq_shape_size(n->out);
        int8_t *x = malloc((size_t)in_n), *want = malloc((size_t)out_n), *got = malloc((size_t)out_n);
        void *work = malloc(yq_ref_conv_work(&d.g, n) + 1);
        CHECK(x && want && got && work);
        fill_s8(x, in_n);
        double best = 1e9;
        for (int r = 0; r < 3; r++) {
            double t0 = now_s();
            yq_ref_conv(&d.g, n, &d.q[1], x, YQ_S8, want, work, 1);
            best = fmin(best, now_s() - t0);
        }
        char line[512];
        int at = snprintf(line, sizeof line, "# dwconv %dx%dx%d %dx%d/%d: reference %.0f us", cs[t].c, cs[t].h, cs[t].w,
                          cs[t].k, cs[t].k, cs[t].s, best * 1e6);
        for (int isa = 1; isa < n_isas(); isa++)
            for (int th = 1; th <= 2; th++) {
                double b = 1e9;
                for (int r = 0; r < 20; r++) {
                    double t0 = now_s();
                    yq_cpu8_dwconv((yq_isa)isa, th, &d.g, n, &d.q[1], x, YQ_S8, got, 1);
                    b = fmin(b, now_s() - t0);
                }
                CHECK(!memcmp(got, want, (size_t)out_n));
                at += snprintf(line + at, sizeof line - (size_t)at, ", %s %d thread%s %.0f us",
                               yq_isa_name((yq_isa)isa), th, th > 1 ? "s" : "", b * 1e6);
            }
        printf("%s\n", line);
        free(x);
        free(want);
        free(got);
        free(work);
        conv_net_free(&d);
    }
}

/* ---- maxpool, upsample --------------------------------------------------- */

static void t_maxpool(void)
{
    static const struct { int c, h, w, size, stride, pad, batch; } cs[] = {
        { 16, 13, 13, 2, 2, 1, 1 }, { 8, 26, 26, 2, 2, 1, 2 },   { 16, 13, 13, 2, 1, 1, 1 }, { 12, 13, 13, 5, 1, 4, 1 },
        { 12, 13, 13, 9, 1, 8, 2 }, { 12, 13, 13, 13, 1, 12, 1 }, { 7, 19, 17, 3, 2, 1, 2 },  { 5, 20, 20, 3, 2, 2, 1 },
        { 5, 10, 70, 2, 2, 0, 1 },  { 3, 33, 130, 3, 1, 2, 1 },  { 3, 9, 9, 4, 3, 2, 1 },    { 3, 1, 1, 1, 1, 0, 1 },
        { 3, 1, 5, 3, 1, 2, 1 },    { 3, 80, 80, 2, 2, 0, 1 },   { 2, 11, 100, 5, 2, 4, 1 }, { 4, 3, 3, 5, 1, 4, 1 },
        { 2, 7, 200, 2, 2, 1, 2 },  { 3, 10, 10, 3, 1, 0, 1 },   { 2, 6, 67, 7, 2, 6, 1 },  { 2, 5, 300, 3, 1, 2, 1 },
        { 2, 6, 333, 2, 2, 1, 1 },
    };
    for (size_t t = 0; t < sizeof cs / sizeof *cs; t++) {
        rng_seed(300 + (uint32_t)t);
        yq_shape is = { cs[t].c, cs[t].h, cs[t].w };
        yq_pool_p p = { cs[t].size, cs[t].stride, cs[t].pad };
        yq_shape os = { is.c, (is.h + p.pad - p.size) / p.stride + 1, (is.w + p.pad - p.size) / p.stride + 1 };
        long in_n = yq_shape_size(is) * cs[t].batch, out_n = yq_shape_size(os) * cs[t].batch;
        int8_t *x = malloc((size_t)in_n), *want = malloc((size_t)out_n);
        unsigned char *got = guarded((size_t)out_n);
        CHECK(x && want && got);
        fill_s8(x, in_n);
        /* the first plane all -128: the reference's initial value wins everywhere */
        memset(x, -128, (size_t)is.h * is.w);
        yq_ref_maxpool(is, &p, os, x, want, cs[t].batch);
        for (int isa = 0; isa < n_isas(); isa++)
            for (int th = 1; th <= 2; th++) {
                guarded_reset(got, (size_t)out_n);
                yq_cpu8_maxpool((yq_isa)isa, th, is, &p, os, x, (int8_t *)got, cs[t].batch);
                CHECKF(guarded_diff(got, (const unsigned char *)want, (size_t)out_n) < 0,
                       "case %zu (%dx%dx%d size %d stride %d pad %d): %s, %d threads", t, is.c, is.h, is.w, p.size,
                       p.stride, p.pad, yq_isa_name((yq_isa)isa), th);
            }
        free(x);
        free(want);
        guarded_free(got);
    }
}

static void t_upsample(void)
{
    static const struct { int c, h, w, s, batch; } cs[] = {
        { 8, 13, 13, 2, 1 }, { 5, 7, 40, 2, 2 }, { 3, 5, 33, 3, 1 }, { 4, 6, 6, 1, 1 },
        { 3, 2, 100, 2, 1 }, { 2, 1, 1, 4, 1 }, { 6, 26, 31, 2, 2 }, { 2, 3, 300, 2, 1 },
    };
    for (size_t t = 0; t < sizeof cs / sizeof *cs; t++) {
        rng_seed(400 + (uint32_t)t);
        yq_shape is = { cs[t].c, cs[t].h, cs[t].w };
        long in_n = yq_shape_size(is) * cs[t].batch, out_n = in_n * cs[t].s * cs[t].s;
        int8_t *x = malloc((size_t)in_n), *want = malloc((size_t)out_n);
        unsigned char *got = guarded((size_t)out_n);
        CHECK(x && want && got);
        fill_s8(x, in_n);
        yq_ref_upsample(is, cs[t].s, x, want, cs[t].batch);
        for (int isa = 0; isa < n_isas(); isa++)
            for (int th = 1; th <= 2; th++) {
                guarded_reset(got, (size_t)out_n);
                yq_cpu8_upsample((yq_isa)isa, th, is, cs[t].s, x, (int8_t *)got, cs[t].batch);
                CHECKF(guarded_diff(got, (const unsigned char *)want, (size_t)out_n) < 0,
                       "case %zu (%dx%dx%d x%d): %s, %d threads", t, is.c, is.h, is.w, cs[t].s,
                       yq_isa_name((yq_isa)isa), th);
            }
        free(x);
        free(want);
        guarded_free(got);
    }
}

/* ---- shortcut, quantize -------------------------------------------------- */

static void t_shortcut(void)
{
    /* sa, sb, sneg, qmin, qmax: leaky, relu and linear; halves (ties to round to even);
     * a range whose bytes the (int8_t) cast wraps */
    static const struct { float sa, sb, sneg; int32_t lo, hi; } sc[] = {
        { .731f, 1.377f, 1.f, -127, 127 }, { .0999f, 2.5f, .1f, -127, 127 }, { 1.9f, .013f, 0.f, -128, 127 },
        { .5f, .5f, 1.f, -127, 127 },      { .25f, .75f, .1f, -7, 7 },       { .5f, 1.f, 1.f, 0, 255 },
    };
    static const long lens[] = { 1, 7, 8, 15, 16, 17, 100, 40000 };
    for (size_t si = 0; si < sizeof sc / sizeof *sc; si++)
        for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
            for (int batch = 1; batch <= 2; batch++) {
                rng_seed(500 + (uint32_t)(si * 100 + li * 2) + (uint32_t)batch);
                yq_qnode q;
                memset(&q, 0, sizeof q);
                q.dtype = YQ_S8;
                q.sa = sc[si].sa, q.sb = sc[si].sb, q.sneg = sc[si].sneg, q.qmin = sc[si].lo, q.qmax = sc[si].hi;
                long n = lens[li] * batch;
                int8_t *a = malloc((size_t)n), *b = malloc((size_t)n), *want = malloc((size_t)n);
                unsigned char *got = guarded((size_t)n);
                CHECK(a && b && want && got);
                fill_s8(a, n);
                fill_s8(b, n);
                yq_ref_shortcut(lens[li], a, b, &q, want, batch);
                for (int isa = 0; isa < n_isas(); isa++)
                    for (int th = 1; th <= 2; th++) {
                        guarded_reset(got, (size_t)n);
                        yq_cpu8_shortcut((yq_isa)isa, th, lens[li], a, b, &q, (int8_t *)got, batch);
                        CHECKF(guarded_diff(got, (const unsigned char *)want, (size_t)n) < 0,
                               "scales %zu, %ld x %d: %s, %d threads", si, lens[li], batch,
                               yq_isa_name((yq_isa)isa), th);
                    }
                free(a);
                free(b);
                free(want);
                guarded_free(got);
            }
}

/* Floats for quantize: the scale's multiples and exact halves between them (ties), values
 * past the range, tiny, subnormal, signed zeros, infinities and NaN. */
static void fill_quant_input(float *x, long n, float scale)
{
    for (long i = 0; i < n; i++) {
        uint32_t r = rnd();
        switch (r % 10) {
        case 0: x[i] = ((float)((int)(r >> 8) % 600) - 300.f + .5f) * scale; break;   /* ties when exact */
        case 1: x[i] = (float)((int)(r >> 8) % 600 - 300) * scale; break;
        case 2: {
            static const float edge[] = { 0.f, -0.f, INFINITY, -INFINITY, NAN, FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_TRUE_MIN,
                                          1e-30f, 8388608.f, -8388609.f, 16777217.f, 1e20f, -1e20f, .49999997f, -.5f };
            x[i] = edge[(r >> 8) % (sizeof edge / sizeof *edge)] * ((r >> 20) & 1 ? scale : 1.f);
            break;
        }
        default: {
            uint32_t bits = rnd();   /* any float, NaNs included */
            memcpy(&x[i], &bits, sizeof bits);
            if ((r >> 8) & 3) x[i] = rnd_f(-200.f, 200.f) * scale;
            break;
        }
        }
    }
}

static void t_quantize(void)
{
    static const float scales[] = { .05f, 1.f / 128.f, .0137f, 1.f, 3e-39f, 0.f };
    /* int8's ranges, one whose bytes the (int8_t) cast wraps, and one whose bounds are no
     * floats (the reference compares with the rounded bounds, and returns the integers) */
    static const struct { int32_t lo, hi; } ranges[] = { { -127, 127 }, { -128, 127 }, { 0, 255 }, { -7, 7 },
                                                          { -(1 << 25) - 1, (1 << 25) + 3 } };
    static const long lens[] = { 1, 7, 8, 9, 16, 17, 33, 50000 };
    int ties = 0;
    for (size_t si = 0; si < sizeof scales / sizeof *scales; si++)
        for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
            rng_seed(600 + (uint32_t)(si * 10 + li));
            long n = lens[li];
            float *x = malloc(sizeof(float) * (size_t)n);
            int8_t *want = malloc((size_t)n);
            unsigned char *got = guarded((size_t)n);
            CHECK(x && want && got);
            fill_quant_input(x, n, scales[si]);
            for (long i = 0; i < n; i++) {
                float d = x[i] / scales[si];
                ties += fabsf(d - truncf(d)) == .5f;
            }
            for (size_t ri = 0; ri < sizeof ranges / sizeof *ranges; ri++) {
                yq_quantize(x, n, scales[si], ranges[ri].lo, ranges[ri].hi, want);
                for (int isa = 0; isa < n_isas(); isa++)
                    for (int th = 1; th <= 2; th++) {
                        guarded_reset(got, (size_t)n);
                        yq_cpu8_quantize((yq_isa)isa, th, x, n, scales[si], ranges[ri].lo, ranges[ri].hi, (int8_t *)got);
                        CHECKF(guarded_diff(got, (const unsigned char *)want, (size_t)n) < 0,
                               "scale %g, n %ld, range [%d, %d]: %s, %d threads",
                               (double)scales[si], n, ranges[ri].lo, ranges[ri].hi, yq_isa_name((yq_isa)isa), th);
                    }
            }
            yq_quantize_u8(x, n, scales[si], (uint8_t *)want);
            for (int isa = 0; isa < n_isas(); isa++)
                for (int th = 1; th <= 2; th++) {
                    guarded_reset(got, (size_t)n);
                    yq_cpu8_quantize_u8((yq_isa)isa, th, x, n, scales[si], got);
                    CHECKF(guarded_diff(got, (const unsigned char *)want, (size_t)n) < 0,
                           "u8: scale %g, n %ld: %s, %d threads", (double)scales[si], n,
                           yq_isa_name((yq_isa)isa), th);
                }
            free(x);
            free(want);
            guarded_free(got);
        }
    CHECKF(ties > 1000, "only %d exact ties among the inputs", ties);
}

typedef struct conv_case { int c, h, w, f, k, s, pad, groups, batch; yq_dtype in_t; int mode; } conv_case;

/* ---- dense conv (kernels/cpu_int8.c) ---------------------------------------- */

static void conv_net_make(conv_net *d, const conv_case *cs)
{
    memset(d, 0, sizeof *d);
    int F = cs->f, K = cs->c / cs->groups * cs->k * cs->k;
    d->nodes[0].op = YQ_OP_INPUT;
    d->nodes[0].out = (yq_shape){ cs->c, cs->h, cs->w };
    yq_node *n = &d->nodes[1];
    n->op = YQ_OP_CONV;
    n->n_src = 1;
    n->p.conv = (yq_conv_p){ F, cs->k, cs->s, cs->pad, cs->groups, 1 };
    n->out = (yq_shape){ F, (cs->h + 2 * cs->pad - cs->k) / cs->s + 1, (cs->w + 2 * cs->pad - cs->k) / cs->s + 1 };
    d->g.nodes = d->nodes;
    d->g.n_nodes = d->g.cap_nodes = 2;
    d->g.q = d->q;
    d->wq = malloc((size_t)F * K);
    d->bq = malloc(sizeof(int32_t) * (size_t)F);
    d->pos = malloc(sizeof(float) * (size_t)F);
    d->neg = malloc(sizeof(float) * (size_t)F);
    d->deq = malloc(sizeof(float) * (size_t)F);
    d->lut = malloc(YQ_LUT_N);
    CHECK(d->wq && d->bq && d->pos && d->neg && d->deq && d->lut);
    fill_s8(d->wq, (long)F * K);
    fill_s8(d->lut, YQ_LUT_N);
    /* accumulators spread over about 128 * 128 * sqrt(K): scales that cover the output
     * range and saturate some */
    float span = 128.f * 128.f * 2.f * sqrtf((float)K) * (cs->in_t == YQ_U8 ? 2.f : 1.f);
    for (int o = 0; o < F; o++) {
        d->bq[o] = (int32_t)(rnd() % 200001) - 100000;
        d->pos[o] = rnd_f(.3f, 2.f) * 127.f / span;
        d->deq[o] = rnd_f(.5f, 2.f) * 1e-4f;
    }
    d->q[0].dtype = cs->in_t;
    yq_qnode *q = &d->q[1];
    q->qmin = -127;
    q->qmax = 127;
    q->wq = d->wq;
    q->bq = d->bq;
    q->rq_pos = d->pos;
    q->rq_neg = d->neg;
    q->deq = d->deq;
    set_epilogue(n, q, cs->mode, F, d->pos, d->neg, d->lut);
}

/* One case on every ISA and thread count: 0 when they all equal the reference. */
static void check_case(const conv_case *cs, int seed)
{
    rng_seed((uint32_t)seed);
    conv_net d;
    conv_net_make(&d, cs);
    const yq_node *n = &d.nodes[1];
    long in_n = (long)cs->batch * cs->c * cs->h * cs->w;
    size_t out_b = (size_t)cs->batch * (size_t)yq_shape_size(n->out) * (d.q[1].dtype == YQ_F32 ? 4 : 1);
    unsigned char *in = malloc((size_t)in_n), *ref = malloc(out_b), *got = malloc(out_b);
    void *work = malloc(yq_ref_conv_work(&d.g, n));
    CHECK(in && ref && got && work);
    fill_s8((int8_t *)in, in_n);
    yq_ref_conv(&d.g, n, &d.q[1], in, cs->in_t, ref, work, cs->batch);
    for (int isa = YQ_ISA_AVX2; isa <= (int)yq_cpu_isa(); isa++)
        for (int threads = 1; threads <= 2; threads++) {
            yq_cpu8 *e;
            yq_error err;
            CHECKF(yq_cpu8_new(&d.g, (yq_isa)isa, threads, &e, &err) == YQ_OK, "%s", err.msg);
            CHECK(yq_cpu8_isa(e) == (yq_isa)isa);
            memset(got, 0x5A, out_b);
            yq_status st = yq_cpu8_conv(e, 1, in, cs->in_t, got, cs->batch, &err);
            yq_cpu8_free(e);
            CHECKF(st == YQ_OK, "%s", err.msg);
            if (memcmp(ref, got, out_b)) {
                size_t i = 0;
                while (ref[i] == got[i]) i++;
                CHECKF(0, "%dx%dx%d -> %d %dx%d/%d pad %d groups %d batch %d %s epilogue %d, %s %d thread(s): byte %zu differs",
                       cs->c, cs->h, cs->w, cs->f, cs->k, cs->k, cs->s, cs->pad, cs->groups, cs->batch,
                       cs->in_t == YQ_U8 ? "uint8" : "int8", cs->mode, yq_isa_name((yq_isa)isa), threads, i);
            }
        }
    free(in);
    free(ref);
    free(got);
    free(work);
    conv_net_free(&d);
}

static void t_conv_shapes(void)
{
    if (yq_cpu_isa() == YQ_ISA_REF) TEST_SKIP("this CPU has neither AVX2 nor AVX-512 VNNI");
    static const conv_case cs[] = {
        { 16, 13, 13, 24, 1, 1, 0, 1, 1, YQ_S8, M_LEAKY },       /* 1x1, 169 pixels (a tail of 9) */
        { 8, 20, 20, 48, 1, 1, 0, 1, 2, YQ_S8, M_LINEAR },       /* K 8: two K steps */
        { 3, 33, 31, 16, 3, 2, 1, 1, 1, YQ_U8, M_LEAKY },        /* the first conv: uint8, K 27, stride 2 */
        { 3, 40, 40, 13, 3, 1, 1, 1, 2, YQ_U8, M_F_LINEAR },
        { 5, 9, 11, 7, 3, 1, 1, 1, 1, YQ_S8, M_RELU },           /* 7 filters, K 45 */
        { 32, 10, 10, 255, 1, 1, 0, 1, 1, YQ_S8, M_F_LOGISTIC },/* a head: 255 float outputs */
        { 32, 10, 10, 255, 1, 1, 0, 1, 3, YQ_S8, M_F_LEAKY },
        { 24, 12, 12, 17, 3, 1, 1, 1, 1, YQ_S8, M_LUT },         /* a table activation */
        { 16, 7, 5, 33, 5, 1, 2, 1, 2, YQ_S8, M_LEAKY },         /* 5x5 */
        { 64, 13, 13, 130, 3, 1, 1, 1, 1, YQ_S8, M_LEAKY },      /* K 576, filters past two blocks of 64 */
        { 8, 16, 16, 8, 3, 2, 0, 1, 1, YQ_S8, M_LINEAR },        /* no padding, stride 2 */
        { 12, 11, 11, 20, 1, 1, 1, 1, 1, YQ_S8, M_LEAKY },       /* 1x1 with padding */
        { 12, 11, 11, 20, 1, 2, 0, 1, 1, YQ_S8, M_LEAKY },       /* 1x1 stride 2 */
        { 16, 9, 9, 24, 3, 1, 1, 4, 2, YQ_S8, M_LEAKY },         /* groups */
        { 16, 9, 9, 16, 1, 1, 0, 2, 1, YQ_U8, M_F_LINEAR },
        { 4, 1, 1, 9, 3, 1, 1, 1, 1, YQ_S8, M_LEAKY },           /* one pixel */
        { 130, 4, 4, 3, 3, 1, 1, 1, 1, YQ_S8, M_RELU },          /* K 1170: not a multiple of 4 */
    };
    for (int i = 0; i < (int)(sizeof cs / sizeof cs[0]); i++) check_case(&cs[i], i + 1);
    /* random shapes */
    for (int r = 0; r < 60; r++) {
        rng_seed(1000u + (unsigned)r);
        conv_case c;
        c.groups = rnd() % 5 == 0 ? 2 : 1;
        c.c = c.groups * (1 + (int)(rnd() % 40));
        c.h = 1 + (int)(rnd() % 24);
        c.w = 1 + (int)(rnd() % 24);
        c.k = (int[]){ 1, 1, 3, 3, 5 }[rnd() % 5];
        c.s = 1 + (int)(rnd() % 2);
        c.pad = (int)(rnd() % (unsigned)(c.k / 2 + 1));
        if (c.h + 2 * c.pad < c.k) c.h = c.k;
        if (c.w + 2 * c.pad < c.k) c.w = c.k;
        c.f = c.groups * (1 + (int)(rnd() % 40));
        c.batch = 1 + (int)(rnd() % 2);
        c.in_t = rnd() % 4 == 0 ? YQ_U8 : YQ_S8;
        c.mode = (int)(rnd() % M_COUNT);
        check_case(&c, 5000 + r);
    }
}

/* A conv of a graph the engine was not made for is refused, not run. */
static void t_conv_errors(void)
{
    if (yq_cpu_isa() == YQ_ISA_REF) TEST_SKIP("this CPU has neither AVX2 nor AVX-512 VNNI");
    conv_case cs = { 8, 5, 5, 8, 1, 1, 0, 1, 1, YQ_S8, M_LEAKY };
    rng_seed(3);
    conv_net d;
    conv_net_make(&d, &cs);
    yq_cpu8 *e;
    yq_error err;
    CHECK(yq_cpu8_new(&d.g, yq_cpu_isa(), 0, &e, &err) == YQ_OK);
    CHECK(yq_cpu8_threads(e) >= 1);
    d.q[1].float_op = 1;
    int8_t in[200], out[200];
    memset(in, 0, sizeof in);
    CHECK(yq_cpu8_conv(e, 1, in, YQ_S8, out, 1, &err) != YQ_OK && strstr(err.msg, "layer"));
    yq_cpu8_free(e);
    conv_net_free(&d);
}

int main(void)
{
    if (yq_cpu_isa() < YQ_ISA_AVX512)
        printf("# this CPU runs %s at most: the faster paths are not tested here\n", yq_isa_name(yq_cpu_isa()));
    TEST(t_dwconv);
    TEST(t_maxpool);
    TEST(t_upsample);
    TEST(t_shortcut);
    TEST(t_quantize);
    TEST(t_dwconv_time);
    TEST(t_conv_shapes);
    TEST(t_conv_errors);
    return test_done();
}
