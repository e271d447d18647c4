/* The fast int8 CPU engine's dense conv (kernels/cpu_int8.c) against the reference
 * (yq_ref_conv), byte for byte: random convs over the shapes the packing and the
 * micro-kernels cut differently (filters not a multiple of 8 or 2, im2col rows not a
 * multiple of 4, pixel counts not a multiple of 32, strides, paddings, 1x1 with and
 * without padding, groups), int8 and uint8 inputs, every epilogue (activations, a table,
 * float outputs), batches of 1 and 3, on each ISA this CPU runs and on 1 and 2 threads.
 * The whole models are compared node by node in tests/test_int8.c (t_blas_*). */
#include <math.h>
#include <time.h>
#include "tests/test.h"
#include "ir/ir.h"
#include "kernels/cpu_int8.h"
#include "kernels/cpu_ref.h"

static uint64_t rng_s;
static uint32_t rnd(void)
{
    rng_s = rng_s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_s >> 32);
}
static float rnd_f(float lo, float hi) { return lo + (hi - lo) * (float)(rnd() >> 8) / 16777216.f; }

/* bytes, one in 8 at an extreme (-128 or 127; 0 or 255 as uint8) */
static void fill8(unsigned char *p, long n)
{
    for (long i = 0; i < n; i++) {
        uint32_t r = rnd();
        p[i] = (r & 7) == 0 ? ((r >> 3) & 1 ? 127 : 128) : (unsigned char)(r >> 24);
    }
}

enum { E_LEAKY, E_LINEAR, E_RELU, E_LUT, E_F_LINEAR, E_F_LEAKY, E_F_LOGISTIC, E_COUNT };

typedef struct conv_case { int c, h, w, f, k, s, pad, groups, batch; yq_dtype in_t; int epi; } conv_case;

typedef struct net {
    yq_node nodes[2];
    yq_qnode q[2];
    yq_graph g;
    int8_t *wq, *lut;
    int32_t *bq;
    float *pos, *neg, *deq;
} net;

static void net_free(net *d)
{
    free(d->wq);
    free(d->lut);
    free(d->bq);
    free(d->pos);
    free(d->neg);
    free(d->deq);
}

static void net_make(net *d, const conv_case *cs)
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
    fill8((unsigned char *)d->wq, (long)F * K);
    fill8((unsigned char *)d->lut, YQ_LUT_N);
    /* accumulators spread over about 128 * 128 * sqrt(K): scales that cover the output
     * range and saturate some */
    float span = 128.f * 128.f * 2.f * sqrtf((float)K) * (cs->in_t == YQ_U8 ? 2.f : 1.f);
    for (int o = 0; o < F; o++) {
        d->bq[o] = (int32_t)(rnd() % 200001) - 100000;
        d->pos[o] = rnd_f(.3f, 2.f) * 127.f / span;
        d->neg[o] = d->pos[o] * .1f;
        d->deq[o] = rnd_f(.5f, 2.f) * 1e-4f;
    }
    d->q[0].dtype = cs->in_t;
    yq_qnode *q = &d->q[1];
    q->dtype = cs->epi >= E_F_LINEAR ? YQ_F32 : YQ_S8;
    q->qmin = -127;
    q->qmax = 127;
    q->wq = d->wq;
    q->bq = d->bq;
    q->rq_pos = d->pos;
    q->rq_neg = d->neg;
    q->deq = d->deq;
    n->act = YQ_ACT_LEAKY;
    switch (cs->epi) {
    case E_LINEAR:
        n->act = YQ_ACT_LINEAR;
        for (int o = 0; o < F; o++) d->neg[o] = d->pos[o];
        break;
    case E_RELU:
        n->act = YQ_ACT_RELU;
        for (int o = 0; o < F; o++) d->neg[o] = 0.f;
        break;
    case E_LUT:   /* the table's grid (+-2048): finer steps, clamped at both ends */
        n->act = YQ_ACT_MISH;
        q->lut = d->lut;
        for (int o = 0; o < F; o++) d->pos[o] *= 20.f, d->neg[o] = d->pos[o] * .7f;
        break;
    case E_F_LINEAR: n->act = YQ_ACT_LINEAR; break;
    case E_F_LOGISTIC: n->act = YQ_ACT_LOGISTIC; break;
    default: break;
    }
}

/* One case on every ISA and thread count: 0 when they all equal the reference. */
static void check_case(const conv_case *cs, int seed)
{
    rng_s = (uint64_t)seed * 0x9E3779B97F4A7C15ull + 7;
    net d;
    net_make(&d, cs);
    const yq_node *n = &d.nodes[1];
    long in_n = (long)cs->batch * cs->c * cs->h * cs->w;
    size_t out_b = (size_t)cs->batch * (size_t)yq_shape_size(n->out) * (d.q[1].dtype == YQ_F32 ? 4 : 1);
    unsigned char *in = malloc((size_t)in_n), *ref = malloc(out_b), *got = malloc(out_b);
    void *work = malloc(yq_ref_conv_work(&d.g, n));
    CHECK(in && ref && got && work);
    fill8(in, in_n);
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
                       cs->in_t == YQ_U8 ? "uint8" : "int8", cs->epi, yq_isa_name((yq_isa)isa), threads, i);
            }
        }
    free(in);
    free(ref);
    free(got);
    free(work);
    net_free(&d);
}

static void t_conv_shapes(void)
{
    if (yq_cpu_isa() == YQ_ISA_REF) TEST_SKIP("this CPU has neither AVX2 nor AVX-512 VNNI");
    static const conv_case cs[] = {
        { 16, 13, 13, 24, 1, 1, 0, 1, 1, YQ_S8, E_LEAKY },       /* 1x1, 169 pixels (a tail of 9) */
        { 8, 20, 20, 48, 1, 1, 0, 1, 2, YQ_S8, E_LINEAR },       /* K 8: two K steps */
        { 3, 33, 31, 16, 3, 2, 1, 1, 1, YQ_U8, E_LEAKY },        /* the first conv: uint8, K 27, stride 2 */
        { 3, 40, 40, 13, 3, 1, 1, 1, 2, YQ_U8, E_F_LINEAR },
        { 5, 9, 11, 7, 3, 1, 1, 1, 1, YQ_S8, E_RELU },           /* 7 filters, K 45 */
        { 32, 10, 10, 255, 1, 1, 0, 1, 1, YQ_S8, E_F_LOGISTIC },/* a head: 255 float outputs */
        { 32, 10, 10, 255, 1, 1, 0, 1, 3, YQ_S8, E_F_LEAKY },
        { 24, 12, 12, 17, 3, 1, 1, 1, 1, YQ_S8, E_LUT },         /* a table activation */
        { 16, 7, 5, 33, 5, 1, 2, 1, 2, YQ_S8, E_LEAKY },         /* 5x5 */
        { 64, 13, 13, 130, 3, 1, 1, 1, 1, YQ_S8, E_LEAKY },      /* K 576, filters past two blocks of 64 */
        { 8, 16, 16, 8, 3, 2, 0, 1, 1, YQ_S8, E_LINEAR },        /* no padding, stride 2 */
        { 12, 11, 11, 20, 1, 1, 1, 1, 1, YQ_S8, E_LEAKY },       /* 1x1 with padding */
        { 12, 11, 11, 20, 1, 2, 0, 1, 1, YQ_S8, E_LEAKY },       /* 1x1 stride 2 */
        { 16, 9, 9, 24, 3, 1, 1, 4, 2, YQ_S8, E_LEAKY },         /* groups */
        { 16, 9, 9, 16, 1, 1, 0, 2, 1, YQ_U8, E_F_LINEAR },
        { 4, 1, 1, 9, 3, 1, 1, 1, 1, YQ_S8, E_LEAKY },           /* one pixel */
        { 130, 4, 4, 3, 3, 1, 1, 1, 1, YQ_S8, E_RELU },          /* K 1170: not a multiple of 4 */
    };
    for (int i = 0; i < (int)(sizeof cs / sizeof cs[0]); i++) check_case(&cs[i], i + 1);
    /* random shapes */
    for (int r = 0; r < 60; r++) {
        rng_s = 1000u + (unsigned)r;
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
        c.epi = (int)(rnd() % E_COUNT);
        check_case(&c, 5000 + r);
    }
}

/* A conv of a graph the engine was not made for is refused, not run. */
static void t_conv_errors(void)
{
    if (yq_cpu_isa() == YQ_ISA_REF) TEST_SKIP("this CPU has neither AVX2 nor AVX-512 VNNI");
    conv_case cs = { 8, 5, 5, 8, 1, 1, 0, 1, 1, YQ_S8, E_LEAKY };
    rng_s = 3;
    net d;
    net_make(&d, &cs);
    yq_cpu8 *e;
    yq_error err;
    CHECK(yq_cpu8_new(&d.g, yq_cpu_isa(), 0, &e, &err) == YQ_OK);
    CHECK(yq_cpu8_threads(e) >= 1);
    d.q[1].float_op = 1;
    int8_t in[200], out[200];
    memset(in, 0, sizeof in);
    CHECK(yq_cpu8_conv(e, 1, in, YQ_S8, out, 1, &err) != YQ_OK && strstr(err.msg, "layer"));
    yq_cpu8_free(e);
    net_free(&d);
}

int main(void)
{
    TEST(t_conv_shapes);
    TEST(t_conv_errors);
    return test_done();
}
