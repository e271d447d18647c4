/* The GPU int8 engine against the CPU reference.
 *
 * Per op: seeded random data through every kernel variant, compared with
 * kernels/cpu_ref.c by memcmp (integer outputs and dequantizing epilogues), with
 * guard bytes around every GPU output buffer.  Whole models: every node of
 * yq_exec_int8 (CPU) against yq_cuda_run (GPU), every node by memcmp: the float layers
 * (q->float_op) too, whose FP32 numerics are defined to the bit (yq_f32_conv_exact).  Only
 * the FP16 tensor-core family, which runs when asked for, is compared by relative error:
 * max |gpu - cpu| <= F16_BOUND * max |cpu|.  Every test is skipped without a GPU. */
#include <math.h>
#include <time.h>
#include "ir/ir.h"
#include "kernels/cpu_fp32.h"
#include "kernels/cpu_ref.h"
#include "kernels/cuda.h"
#include "tests/test_rewrite.h"
#include "runtime/exec_cuda.h"
#include "runtime/plan.h"
#include "tests/test.h"

/* Float convs on FP16 tensor cores (YQ_CONV_F16, only when asked for): weights rounded to
 * FP16 (relative 2^-11 each), inputs exact (int8 codes, or an FP32 value as two FP16
 * parts), sums in FP32 in the tensor cores' order.  The bound on max |gpu - cpu| / max |cpu|. */
#define F16_BOUND 2e-3
#define GUARD 256
#define GUARD_BYTE 0xA5

static yq_error err;
#define OK(call) do { yq_status st_ = (call); CHECKF(st_ == YQ_OK, "%s: %s", #call, err.msg); } while (0)

static void need_gpu(void)
{
    if (yq_cuda_device_count() == 0) TEST_SKIP("no CUDA device");
}

static uint32_t rng_state;
static uint32_t rnd(void)
{
    uint32_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return rng_state = x;
}
static int rnd_range(int lo, int hi) { return lo + (int)(rnd() % (uint32_t)(hi - lo + 1)); }
static float rnd_unit(void) { return (float)(rnd() >> 8) / 16777216.f; }

/* A device buffer with GUARD bytes of GUARD_BYTE on each side. */
typedef struct gbuf { unsigned char *base; size_t bytes; } gbuf;
static void *gbuf_new(gbuf *b, size_t bytes)
{
    void *d;
    b->bytes = bytes;
    OK(yq_cuda_malloc(&d, bytes + 2 * GUARD, &err));
    b->base = d;
    OK(yq_cuda_memset(b->base, GUARD_BYTE, bytes + 2 * GUARD, &err));
    return b->base + GUARD;
}
/* Copies the data out and checks the guards; frees the buffer. */
static void gbuf_take(gbuf *b, void *host)
{
    size_t all = b->bytes + 2 * GUARD;
    unsigned char *h = malloc(all);
    CHECK(h);
    OK(yq_cuda_sync(NULL, &err));
    yq_status st = yq_cuda_d2h(h, b->base, all, &err);
    yq_cuda_free(b->base);
    b->base = NULL;
    if (st) free(h);
    CHECKF(st == YQ_OK, "download: %s", err.msg);
    int bad = -1;
    for (size_t i = 0; i < GUARD && bad < 0; i++)
        if (h[i] != GUARD_BYTE || h[GUARD + b->bytes + i] != GUARD_BYTE) bad = (int)i;
    if (bad < 0) memcpy(host, h + GUARD, b->bytes);
    free(h);
    CHECKF(bad < 0, "a kernel wrote outside its buffer (guard byte %d)", bad);
}

static void *upload_nhwc4(const void *nchw, int c, int h, int w, int batch)
{
    size_t bytes = yq_dlayout_bytes(YQ_S8, c, h, w) * batch;
    void *tmp = malloc(bytes), *d;
    CHECK(tmp);
    yq_nchw_to_nhwc4(nchw, c, h, w, batch, tmp);
    OK(yq_cuda_malloc(&d, bytes, &err));
    yq_status st = yq_cuda_h2d(d, tmp, bytes, &err);
    free(tmp);
    OK(st);
    return d;
}

/* int8 tensor downloaded as NHWC4: checks the padding channels are zero, returns NCHW. */
static int8_t *nhwc4_checked(const uint8_t *raw, int c, int h, int w, int batch)
{
    int c4 = (c + 3) & ~3;
    for (long i = 0; i < (long)h * w * batch; i++)
        for (int k = c; k < c4; k++) CHECKF(raw[i * c4 + k] == 0, "padding channel %d of pixel %ld is %d", k, i, raw[i * c4 + k]);
    int8_t *o = malloc((size_t)c * h * w * batch);
    CHECK(o);
    yq_nhwc4_to_nchw(raw, c, h, w, batch, o);
    return o;
}

static void fill_s8(int8_t *x, long n) { for (long i = 0; i < n; i++) x[i] = (int8_t)rnd(); }

/* Views (yq_dtensor.ps): a tensor held as a slice of wider pixels, as the GPU plan
 * keeps the sources of a concat.  view_in uploads nchw's NHWC4 bytes at byte off of
 * ps-byte pixels with random bytes around them (a kernel reading outside its slice
 * reads junk); view_out gives a slice of pixels filled with GUARD_BYTE, and view_take
 * checks that nothing outside the slice was written and returns the slice as dense
 * NHWC4.  Both are guarded buffers (gbuf). */
typedef struct vbuf { gbuf g; int ps, off, c4; size_t pixels; } vbuf;

static yq_dtensor view_in(vbuf *v, const void *nchw, yq_dtype t, int c, int h, int w, int B, int ps, int off)
{
    v->ps = ps; v->off = off; v->c4 = (c + 3) & ~3; v->pixels = (size_t)h * w * B;
    unsigned char *dense = malloc((size_t)v->c4 * v->pixels), *wide = malloc((size_t)ps * v->pixels);
    CHECK(dense && wide);
    yq_nchw_to_nhwc4(nchw, c, h, w, B, dense);
    for (size_t i = 0; i < (size_t)ps * v->pixels; i++) wide[i] = (unsigned char)rnd();
    for (size_t i = 0; i < v->pixels; i++) memcpy(wide + i * ps + off, dense + i * v->c4, (size_t)v->c4);
    unsigned char *d = gbuf_new(&v->g, (size_t)ps * v->pixels);
    yq_status st = yq_cuda_h2d(d, wide, (size_t)ps * v->pixels, &err);
    free(dense);
    free(wide);
    OK(st);
    yq_dtensor r = { d + off, t, c, h, w, .1f, -127, 127, ps };
    return r;
}

static void view_free(vbuf *v) { yq_cuda_free(v->g.base); v->g.base = NULL; }

static yq_dtensor view_out(vbuf *v, yq_dtype t, int c, int h, int w, int B, int ps, int off)
{
    v->ps = ps; v->off = off; v->c4 = (c + 3) & ~3; v->pixels = (size_t)h * w * B;
    unsigned char *d = gbuf_new(&v->g, (size_t)ps * v->pixels);
    yq_dtensor r = { d + off, t, c, h, w, .1f, -127, 127, ps };
    return r;
}

static void view_take(vbuf *v, unsigned char *dense)
{
    unsigned char *wide = malloc((size_t)v->ps * v->pixels);
    CHECK(wide);
    gbuf_take(&v->g, wide);
    long bad = -1;
    for (size_t i = 0; i < v->pixels && bad < 0; i++) {
        for (int k = 0; k < v->ps; k++)
            if ((k < v->off || k >= v->off + v->c4) && wide[i * v->ps + k] != GUARD_BYTE) bad = (long)(i * v->ps + k);
        memcpy(dense + i * v->c4, wide + i * v->ps + v->off, (size_t)v->c4);
    }
    free(wide);
    CHECKF(bad < 0, "a kernel wrote outside its view (byte %ld of the wide buffer)", bad);
}

static long first_diff(const void *a, const void *b, size_t n)
{
    const unsigned char *x = a, *y = b;
    for (size_t i = 0; i < n; i++) if (x[i] != y[i]) return (long)i;
    return -1;
}

static double rel_err(const float *ref, const float *got, long n)
{
    double mx = 0, d = 0;
    for (long i = 0; i < n; i++) {
        if (isnan(got[i]) != isnan(ref[i])) return INFINITY;
        if (fabs((double)ref[i]) > mx) mx = fabs((double)ref[i]);
        if (fabs((double)ref[i] - (double)got[i]) > d) d = fabs((double)ref[i] - (double)got[i]);
    }
    return mx > 0 ? d / mx : d;
}

/* ---- conv ------------------------------------------------------------------ */

/* YQ_CUDA_PERF=1: after the tests, time a few conv shapes (printed, never asserted). */
static int perf_mode;
static long n_cfg_runs;    /* configurations run and compared */
static long n_cut_runs;    /* of which CUTLASS-family ones */
static long n_cut32_runs;  /* of those, on the 32-filter tile */
static long n_halo_runs;   /* halo-family ones */
static long n_const_runs;  /* and dp4a_const ones */
static long n_dwdp4a_runs; /* and dw_dp4a ones */
static long n_dwtile_runs;  /* and dw_tile ones */
static long n_dwcol_runs;   /* and dw_col ones */
static long n_f32px_runs, n_f32dw_runs; /* the exact FP32 family's pixel and depthwise kernels */
static long n_img_runs;    /* and img_mma ones (the image's conv on tensor cores) */
static long n_wg_runs;     /* and wgmma ones (sm_90's warpgroup tensor cores) */
static long n_wgh_runs;    /* and the wgmma halo family's */
static long n_wg1_runs;    /* and the streaming 1x1 family's */
static long n_wg1f_runs;   /* of those, with a float (head) output */
static long n_wg1s_runs, n_wg1b_runs;   /* int8 out, no table: sums within 2^22 (no conversion) or not */
static long n_f16_runs;    /* of those, FP16 tensor-core float convs */
static double worst_f16;   /* their largest relative error */
typedef struct conv_timing { const yq_cuda_conv *c; const yq_dtensor *in, *out; int batch; } conv_timing;
static yq_status conv_timed(void *ctx)
{
    conv_timing *t = ctx;
    return yq_cuda_conv_run(t->c, t->in, t->out, t->batch, NULL, &err);
}

typedef struct conv_case { int c, h, w, f, k, s, groups, batch; yq_dtype in_t, out_t; yq_act act; int float_op; } conv_case;

/* raw: the GPU output (int8 as dense NHWC4), against the CPU reference. */
static void conv_check(const conv_case *cc, const char *name, const char *how, const void *ref, const unsigned char *raw,
                       yq_shape os, int B)
{
    long out_n = yq_shape_size(os) * B;
    if (cc->out_t == YQ_S8) {
        int8_t *got = nhwc4_checked(raw, os.c, os.h, os.w, B);
        long d = first_diff(ref, got, (size_t)out_n);
        int gv = d >= 0 ? got[d] : 0;
        free(got);
        CHECKF(d < 0, "%s%s: int8 output %ld differs: cpu %d gpu %d", name, how, d, ((const int8_t *)ref)[d], gv);
    } else if (cc->float_op && !strncmp(name, "f16", 3)) {   /* FP16 tensor cores: not exact */
        double e = rel_err(ref, (const float *)raw, out_n);
        CHECKF(e <= F16_BOUND, "float conv %s%s: relative error %.3g > %.1g", name, how, e, F16_BOUND);
        if (e > worst_f16) worst_f16 = e;
    } else {   /* dequantizing int8 convs, and the float convs' exact FP32 */
        long d = first_diff(ref, raw, (size_t)out_n * 4);
        CHECKF(d < 0, "%s%s: float output %ld differs: cpu %.9g gpu %.9g", name, how, d / 4,
               (double)((const float *)ref)[d / 4], (double)((const float *)raw)[d / 4]);
    }
}

static void conv_one(const conv_case *cc)
{
    /* Built by hand: the cfg importer caps [net] channels at 64. */
    yq_graph *g = yq_graph_new();
    CHECK(g);
    yq_node *n0 = yq_graph_add(g, YQ_OP_INPUT, &err), *n;
    CHECK(n0);
    n0->out = (yq_shape){ cc->c, cc->h, cc->w };
    n = yq_graph_add(g, YQ_OP_CONV, &err);
    CHECK(n);
    n->n_src = 1;
    n->src[0] = 0;
    n->act = cc->act;
    n->p.conv = (yq_conv_p){ cc->f, cc->k, cc->s, cc->k / 2, cc->groups, 0 };
    n->out = (yq_shape){ cc->f, (cc->h + 2 * (cc->k / 2) - cc->k) / cc->s + 1, (cc->w + 2 * (cc->k / 2) - cc->k) / cc->s + 1 };
    yq_qnode *q = yq_arena_alloc(g, 2 * sizeof *q);
    int cg = cc->c / cc->groups, F = cc->f, K = cg * cc->k * cc->k, B = cc->batch;
    n->n_w = (long)F * K;
    q[0] = (yq_qnode){ .dtype = cc->in_t, .scale = cc->in_t == YQ_U8 ? 1.f / 255.f : 0.02f,
                       .qmin = cc->in_t == YQ_U8 ? 0 : -127, .qmax = cc->in_t == YQ_U8 ? 255 : 127 };
    q[1] = (yq_qnode){ .dtype = cc->out_t, .float_op = cc->float_op, .scale = 0.05f, .qmin = -127, .qmax = 127 };
    q[1].wq = yq_arena_alloc(g, (size_t)n->n_w);
    q[1].bq = yq_arena_alloc(g, 4 * (size_t)F);
    q[1].rq_pos = yq_arena_alloc(g, sizeof(float) * F);
    q[1].rq_neg = yq_arena_alloc(g, sizeof(float) * F);
    q[1].deq = yq_arena_alloc(g, 4 * (size_t)F);
    q[1].w_scale = yq_arena_alloc(g, 4 * (size_t)F);
    n->w = yq_arena_alloc(g, 4 * (size_t)n->n_w);
    n->b = yq_arena_alloc(g, 4 * (size_t)F);
    CHECK(q[1].wq && q[1].bq && q[1].rq_pos && q[1].rq_neg && q[1].deq && n->w && n->b);
    fill_s8(q[1].wq, n->n_w);
    for (long i = 0; i < n->n_w; i++) {
        if (q[1].wq[i] == -128) q[1].wq[i] = -127;
        n->w[i] = (rnd_unit() - .5f) * .2f;
    }
    double m0 = 60.0 / (sqrt((double)K) * 127 * (cc->in_t == YQ_U8 ? 140 : 70));
    /* a table activation on an int8 output: the requantize lands on the table's grid */
    double step_pos = 0, step_neg = 0;
    if (!cc->float_op && cc->out_t == YQ_S8 && yq_act_is_table(cc->act)) {
        q[1].lut = yq_arena_alloc(g, YQ_LUT_N);
        CHECK(q[1].lut);
        OK(yq_act_table(cc->act, q[1].scale, q[1].qmin, q[1].qmax, q[1].lut, &step_pos, &step_neg, &err));
    }
    for (int o = 0; o < F; o++) {
        double m = m0 * (0.3 + 2.7 * (double)rnd_unit());
        q[1].bq[o] = rnd_range(-20000, 20000);
        q[1].rq_pos[o] = yq_rq_encode(q[1].lut ? m * (double)q[1].scale / step_pos : m);
        q[1].rq_neg[o] = yq_rq_encode(q[1].lut ? m * (double)q[1].scale / step_neg
                                      : cc->act == YQ_ACT_LEAKY ? 0.1 * m : cc->act == YQ_ACT_RELU ? 0 : m);
        q[1].deq[o] = (float)(m * 0.05);
        n->b[o] = rnd_unit() - .5f;
    }
    g->q = q;

    yq_shape is = g->nodes[0].out, os = n->out;
    long in_n = yq_shape_size(is) * B, out_n = yq_shape_size(os) * B;
    /* the input: int8 codes, or (a float layer fed by another) FP32 values in [-4, 4) */
    int fin = cc->in_t == YQ_F32;
    CHECK(!fin || cc->float_op);
    int8_t *x = malloc((size_t)in_n);
    float *xf = malloc(4 * (size_t)in_n);
    CHECK(x && xf);
    fill_s8(x, in_n);
    if (fin) for (long i = 0; i < in_n; i++) xf[i] = 8 * rnd_unit() - 4;
    else yq_dequantize(x, cc->in_t, in_n, q[0].scale, xf);
    /* CPU reference */
    void *ref = malloc((size_t)out_n * 4);
    CHECK(ref);
    if (cc->float_op) {
        float *wk = malloc(4 * (size_t)(yq_f32_conv_exact_work(g, n) + 1));
        CHECK(wk);
        yq_f32_conv_exact(g, n, yq_conv_weights(n, &q[1]), xf, ref, wk, B);
        free(wk);
    } else {
        void *wk = malloc(yq_ref_conv_work(g, n) + 1);
        CHECK(wk);
        yq_ref_conv(g, n, &q[1], x, cc->in_t, ref, wk, B);
        free(wk);
    }
    /* GPU, every variant that applies */
    void *din;
    if (fin) {
        OK(yq_cuda_malloc(&din, 4 * (size_t)in_n, &err));
        OK(yq_cuda_h2d(din, xf, 4 * (size_t)in_n, &err));
    } else {
        din = upload_nhwc4(x, is.c, is.h, is.w, B);
    }
    free(xf);
    yq_cuda_conv *c;
    OK(yq_cuda_conv_new(g, n, &q[1], &c, &err));
    /* every configuration a tuner could pick (yq_cuda_conv_candidates), then the
     * one-thread-per-output fallback; a float conv: its exact FP32 family, then (sm_80+,
     * groups == 1) the FP16 tensor-core family a plan runs only when asked */
    yq_conv_cfg cfgs[2 * YQ_CONV_MAX_CFGS + 1];
    int nv = yq_cuda_conv_candidates(c, B, cfgs, YQ_CONV_MAX_CFGS);
    CHECK(nv >= 1 && nv <= YQ_CONV_MAX_CFGS);
    if (!cc->float_op) {
        cfgs[nv++] = (yq_conv_cfg){ YQ_CONV_DIRECT, 0, 1, 0 };
    } else {
        CHECKF(yq_cuda_conv_variant(c) == YQ_CONV_F32, "float conv: default family %d, expected FP32",
               (int)yq_cuda_conv_variant(c));
        for (int v = 0; v < nv; v++)   /* one configuration: a K split would change the sums */
            CHECKF(cfgs[v].family == YQ_CONV_F32 && cfgs[v].split_k == 1, "float conv candidate %d: family %d split %d", v,
                   cfgs[v].family, cfgs[v].split_k);
        if (cc->groups == 1 && yq_cuda_arch() >= 80) {
            OK(yq_cuda_conv_set_variant(c, YQ_CONV_F16, &err));
            int n2 = yq_cuda_conv_candidates(c, B, cfgs + nv, YQ_CONV_MAX_CFGS);
            CHECK(n2 >= 1 && n2 <= YQ_CONV_MAX_CFGS);
            for (int v = nv; v < nv + n2; v++) CHECK(cfgs[v].family == YQ_CONV_F16);
            nv += n2;
            OK(yq_cuda_conv_set_variant(c, YQ_CONV_F32, &err));
        }
    }
    yq_dtensor ti = { din, cc->in_t, is.c, is.h, is.w, q[0].scale, q[0].qmin, q[0].qmax, 0 };
    size_t ob = yq_dlayout_bytes(cc->out_t, os.c, os.h, os.w) * B;
    unsigned char *raw = malloc(ob);
    CHECK(raw);
    for (int v = 0; v < nv; v++) {
        char name[64];
        yq_conv_cfg_name(cfgs[v], name, sizeof name);
        yq_conv_variant fam = (yq_conv_variant)cfgs[v].family;
        if (fam == YQ_CONV_DIRECT || fam == YQ_CONV_F16 || fam == YQ_CONV_F32) OK(yq_cuda_conv_set_variant(c, fam, &err));
        if (fam != YQ_CONV_DIRECT) OK(yq_cuda_conv_set_cfg(c, cfgs[v], B, &err));
        n_f16_runs += fam == YQ_CONV_F16;
        gbuf gb;
        yq_dtensor to = { gbuf_new(&gb, ob), cc->out_t, os.c, os.h, os.w, q[1].scale, q[1].qmin, q[1].qmax, 0 };
        yq_status rs = yq_cuda_conv_run(c, &ti, &to, B, NULL, &err);
        CHECKF(rs == YQ_OK, "%s: %s", name, err.msg);
        if (perf_mode) {
            conv_timing ct = { c, &ti, &to, B };
            float ms = 0;
            OK(yq_cuda_time(NULL, 20, conv_timed, &ct, &ms, &err));
            double ops = yq_cuda_conv_ops(c, B);
            printf("# perf conv %dx%dx%d -> %d, k%d s%d g%d, batch %d, %s in, %s out, %-22s %8.1f us %7.1f TOPS\n",
                   cc->c, cc->h, cc->w, F, cc->k, cc->s, cc->groups, B, cc->in_t == YQ_U8 ? "u8" : fin ? "f32" : "s8",
                   cc->out_t == YQ_F32 ? "f32" : "s8", name, 1e3 * (double)ms, ops / ((double)ms * 1e-3) / 1e12);
        }
        gbuf_take(&gb, raw);
        conv_check(cc, name, "", ref, raw, os, B);
        if (!perf_mode && !fin && cc->out_t == YQ_S8) {
            /* the same configuration with a [shortcut] fused into its epilogue, against
             * yq_ref_shortcut of the reference's output (each source first in turn) */
            int8_t *res = malloc((size_t)out_n), *ref2 = malloc((size_t)out_n);
            CHECK(res && ref2);
            fill_s8(res, out_n);
            static const float negs[] = { 1.0f, 0.1f, 0.0f };
            yq_qnode sq = { .dtype = YQ_S8, .qmin = -127, .qmax = 127 };
            sq.sa = 0.2f + 1.8f * rnd_unit();
            sq.sb = 0.2f + 1.8f * rnd_unit();
            sq.sneg = negs[v % 3];
            int res_first = v & 1;
            if (res_first) yq_ref_shortcut(yq_shape_size(os), res, ref, &sq, ref2, B);
            else yq_ref_shortcut(yq_shape_size(os), ref, res, &sq, ref2, B);
            void *dres = upload_nhwc4(res, os.c, os.h, os.w, B);
            yq_dtensor tr = { dres, YQ_S8, os.c, os.h, os.w, .1f, -127, 127, 0 };
            yq_dtensor to2 = { gbuf_new(&gb, ob), YQ_S8, os.c, os.h, os.w, .1f, -127, 127, 0 };
            rs = yq_cuda_conv_run_add(c, &ti, &tr, &sq, res_first, &to2, B, NULL, &err);
            yq_cuda_free(dres);
            if (rs) yq_cuda_free(gb.base);
            CHECKF(rs == YQ_OK, "%s + shortcut: %s", name, err.msg);
            gbuf_take(&gb, raw);
            conv_check(cc, name, " + shortcut", ref2, raw, os, B);
            free(res);
            free(ref2);
        }
        if (!perf_mode && !fin) {
            /* the same configuration on views: the input a slice of wider pixels (16 bytes
             * in, as a concat's second source), the output a slice at byte 8 (FP32
             * tensors are always dense; at byte 16 for the CUTLASS family, whose 16-byte
             * stores need it: elsewhere it runs the MMA family) */
            vbuf vi, vo;
            int ips = ((is.c + 3) & ~3) + 32, ops = ((os.c + 3) & ~3) + 16;
            yq_dtensor tiv = view_in(&vi, x, cc->in_t, is.c, is.h, is.w, B, ips, 16);
            tiv.scale = ti.scale; tiv.qmin = ti.qmin; tiv.qmax = ti.qmax;
            yq_dtensor tov = cc->out_t == YQ_F32 ? (yq_dtensor){ gbuf_new(&gb, ob), YQ_F32, os.c, os.h, os.w, 0, 0, 0, 0 }
                                                 : view_out(&vo, YQ_S8, os.c, os.h, os.w, B, ops,
                                                            fam == YQ_CONV_CUTLASS || fam == YQ_CONV_WGMMA ||
                                                                    fam == YQ_CONV_WGH || fam == YQ_CONV_WG1 ? 16 : 8);
            tov.scale = q[1].scale;
            rs = yq_cuda_conv_run(c, &tiv, &tov, B, NULL, &err);
            view_free(&vi);
            if (rs && cc->out_t == YQ_F32) yq_cuda_free(gb.base);
            if (rs && cc->out_t != YQ_F32) yq_cuda_free(vo.g.base);
            CHECKF(rs == YQ_OK, "%s on views: %s", name, err.msg);
            if (cc->out_t == YQ_F32) gbuf_take(&gb, raw);
            else view_take(&vo, raw);
            conv_check(cc, name, " on views", ref, raw, os, B);
        }
        n_cfg_runs++;
        n_cut_runs += fam == YQ_CONV_CUTLASS;
        n_cut32_runs += !strcmp(name, "cutlass_128x32x64_s4");
        n_halo_runs += fam == YQ_CONV_HALO;
        n_const_runs += !strcmp(name, "dp4a_const");
        n_dwdp4a_runs += !strcmp(name, "dw_dp4a");
        n_dwtile_runs += !strcmp(name, "dw_tile");
        n_dwcol_runs += !strcmp(name, "dw_col");
        n_f32px_runs += !strcmp(name, "f32_px");
        n_f32dw_runs += !strcmp(name, "f32_dw");
        n_img_runs += fam == YQ_CONV_IMG;
        n_wg_runs += fam == YQ_CONV_WGMMA;
        n_wgh_runs += fam == YQ_CONV_WGH;
        n_wg1_runs += fam == YQ_CONV_WG1;
        n_wg1f_runs += fam == YQ_CONV_WG1 && cc->out_t == YQ_F32;
        n_wg1s_runs += fam == YQ_CONV_WG1 && cc->out_t == YQ_S8 && !q[1].lut && yq_cuda_conv_small(c);
        n_wg1b_runs += fam == YQ_CONV_WG1 && cc->out_t == YQ_S8 && !q[1].lut && !yq_cuda_conv_small(c);
    }
    free(raw);
    yq_cuda_conv_free(c);
    yq_cuda_free(din);
    free(ref);
    free(x);
    yq_graph_free(g);
}

static void t_conv(void)
{
    need_gpu();
    rng_state = 12345;
    static const int chans[] = { 3, 5, 8, 13, 48, 255 };
    static const yq_act acts[] = { YQ_ACT_LINEAR, YQ_ACT_LEAKY, YQ_ACT_RELU };
    int cases = 0;
    for (int ci = 0; ci < 6; ci++)
        for (int k = 1; k <= 3; k += 2)
            for (int s = 1; s <= 2; s++)
                for (int oi = 0; oi < 3; oi++) {
                    conv_case cc = { chans[ci], 11 + ci, 9 + 2 * ci, chans[(ci + oi + 1) % 6], k, s, 1,
                                     1 + 2 * ((ci + k + s) & 1), YQ_S8, oi == 2 ? YQ_F32 : YQ_S8, acts[(ci + oi) % 3], 0 };
                    if (cc.out_t == YQ_F32) cc.act = YQ_ACT_LINEAR;
                    conv_one(&cc);
                    cc.in_t = YQ_U8;                   /* the first conv reads the uint8 image */
                    conv_one(&cc);
                    cases += 2;
                }
    printf("# %d int8 conv cases (dp4a + direct)\n", cases);
}

/* The tensor-core family (input channels a multiple of 16): every tile and K split
 * the candidates list, on shapes that cut tiles, K chunks and splits unevenly. */
static void t_conv_mma(void)
{
    need_gpu();
    rng_state = 2024;
    long before = n_cfg_runs;
    static const conv_case cs[] = {
        { 16, 13, 11, 24, 3, 1, 1, 2, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 32, 20, 20, 64, 3, 2, 1, 1, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 48, 9, 7, 130, 1, 1, 1, 3, YQ_S8, YQ_S8, YQ_ACT_RELU, 0 },
        { 144, 10, 10, 40, 3, 1, 1, 2, YQ_S8, YQ_S8, YQ_ACT_LINEAR, 0 },
        { 64, 33, 31, 96, 1, 1, 1, 2, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 512, 7, 7, 256, 3, 1, 1, 1, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },     /* long K: the splits */
        { 256, 13, 13, 255, 1, 1, 1, 2, YQ_S8, YQ_F32, YQ_ACT_LINEAR, 0 }, /* a head, dequantized */
        { 128, 12, 12, 75, 3, 1, 1, 1, YQ_S8, YQ_F32, YQ_ACT_LEAKY, 0 },
        { 96, 40, 36, 160, 3, 2, 1, 4, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 16, 24, 24, 16, 3, 1, 1, 1, YQ_U8, YQ_S8, YQ_ACT_LEAKY, 0 },     /* uint8 input: dp4a reads it */
        /* the CUTLASS family's shapes (channels and filters multiples of 16): tiles cut
         * unevenly in M and N, a 1x1, strides 1 and 2, K from 16 to 4608 */
        { 128, 26, 26, 256, 3, 1, 1, 2, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 256, 13, 13, 128, 1, 1, 1, 3, YQ_S8, YQ_S8, YQ_ACT_LINEAR, 0 },
        { 16, 31, 29, 32, 3, 2, 1, 2, YQ_S8, YQ_S8, YQ_ACT_RELU, 0 },
        { 512, 5, 5, 1024, 3, 1, 1, 2, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 48, 17, 15, 208, 1, 1, 1, 1, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        /* the small convs' kernel (dp4a_const: 3x3 over at most 4 channels, 1x1 over 4, 8
         * or 16; at most 64 filters): 16-byte stores (32, 48 and 64 filters), word stores
         * (8 and 24), blocks cut short by the batch's last pixels */
        { 8, 19, 17, 48, 1, 1, 1, 2, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 4, 13, 11, 24, 1, 1, 1, 2, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },       /* 1x1 over 4 channels */
        { 4, 9, 10, 8, 1, 1, 1, 3, YQ_S8, YQ_S8, YQ_ACT_LINEAR, 0 },
        { 16, 13, 15, 8, 1, 1, 1, 3, YQ_S8, YQ_S8, YQ_ACT_RELU, 0 },
        { 16, 9, 9, 64, 1, 1, 1, 1, YQ_S8, YQ_S8, YQ_ACT_LINEAR, 0 },
        { 3, 30, 26, 32, 3, 1, 1, 2, YQ_U8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 4, 17, 19, 64, 3, 2, 1, 1, YQ_S8, YQ_S8, YQ_ACT_RELU, 0 },
        { 3, 21, 20, 24, 3, 2, 1, 3, YQ_U8, YQ_S8, YQ_ACT_LINEAR, 0 },
        { 3, 33, 35, 16, 3, 2, 1, 2, YQ_U8, YQ_S8, YQ_ACT_LEAKY, 0 },      /* yolo-fastest's: 16 and 8 filters */
        { 3, 17, 19, 8, 3, 2, 1, 3, YQ_U8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 3, 18, 21, 64, 3, 1, 1, 1, YQ_U8, YQ_S8, YQ_ACT_RELU, 0 },        /* 64 filters: 8 tiles of 8 */
        { 3, 13, 12, 40, 3, 1, 1, 2, YQ_U8, YQ_S8, YQ_ACT_LEAKY, 0 },       /* 40: 8 tiles, 3 of them padding */
        /* wide rows (the image's usual shape: more pixels a row than a block's) */
        { 3, 7, 150, 32, 3, 1, 1, 2, YQ_U8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 3, 6, 261, 16, 3, 2, 1, 2, YQ_U8, YQ_S8, YQ_ACT_LEAKY, 0 },
        /* CUTLASS's 32-filter tile: 32 filters (YOLOv3's 1x1 at 208 x 208), 48 (two N tiles) */
        { 64, 33, 31, 32, 1, 1, 1, 2, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 32, 27, 25, 48, 3, 1, 1, 2, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        /* the halo family (3x3 over 16, 32 or 64 channels): tiles cut by the image's rows
         * and columns, several tiles per block, a second filter block cut short (80
         * filters), 16-byte and word stores (24 filters) */
        { 64, 30, 34, 128, 3, 1, 1, 2, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 32, 40, 37, 64, 3, 1, 1, 3, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 16, 23, 50, 80, 3, 2, 1, 2, YQ_S8, YQ_S8, YQ_ACT_RELU, 0 },
        { 32, 45, 19, 24, 3, 2, 1, 1, YQ_S8, YQ_S8, YQ_ACT_LINEAR, 0 },
        /* the wgmma family (channels a multiple of 64, filters of 16; besides the shapes
         * above): 192 channels (the 64-byte K steps only), stride 2 on odd sizes, 80
         * filters (a filter tile cut short), 272 (a second 256-filter tile of 16) */
        { 192, 19, 23, 80, 3, 2, 1, 2, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 256, 11, 9, 272, 3, 1, 1, 1, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 128, 21, 17, 144, 1, 1, 1, 3, YQ_S8, YQ_S8, YQ_ACT_RELU, 0 },
        /* more tiles than the H200's 132 multiprocessors (several waves): K of 9 steps,
         * and of one (a 1x1 over 128 channels) */
        { 64, 96, 96, 128, 3, 1, 1, 4, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 128, 64, 64, 64, 1, 1, 1, 8, YQ_S8, YQ_S8, YQ_ACT_LINEAR, 0 },
        /* the wgmma halo family (stride-1 3x3 over multiples of 128 channels; besides the
         * shapes above): many tiles an image, the last cut by the image's end, 3 images,
         * 144 filters (a second filter tile of 16); 384 channels (three halo chunks:
         * both slots reused); a width of 1 (the two padding columns wider than the image) */
        { 128, 30, 23, 144, 3, 1, 1, 3, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 384, 14, 17, 128, 3, 1, 1, 2, YQ_S8, YQ_S8, YQ_ACT_RELU, 0 },
        { 256, 9, 1, 32, 3, 1, 1, 5, YQ_S8, YQ_S8, YQ_ACT_LINEAR, 0 },
        /* the streaming 1x1 family (besides the 1x1s above, one tile a block): more tiles
         * than blocks, so that blocks walk several and their loads cross tile boundaries,
         * with 3 K steps a tile and 80 filters (three, two and one filter blocks), and
         * with the 128-byte K steps (2 a tile) */
        { 192, 100, 100, 80, 1, 1, 1, 4, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 256, 30, 30, 128, 1, 1, 1, 36, YQ_S8, YQ_S8, YQ_ACT_RELU, 0 },
        /* ... with a float output (a head's, dequantized, NCHW; besides the 255-filter head
         * above): 75 filters (every tile, a filter block cut short, an activation), and
         * YOLO's 255 over 64 channels on more tiles than blocks */
        { 128, 21, 19, 75, 1, 1, 1, 3, YQ_S8, YQ_F32, YQ_ACT_LEAKY, 0 },
        { 64, 90, 90, 255, 1, 1, 1, 4, YQ_S8, YQ_F32, YQ_ACT_LINEAR, 0 },
        /* ... over 1024 channels: sums that may pass 2^22 (the requantize with its int-to-float
         * conversion; the shorter K above stay within it and skip the conversion) */
        { 1024, 13, 13, 64, 1, 1, 1, 2, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
    };
    long halo_before = n_halo_runs, wg_before = n_wg_runs, wgh_before = n_wgh_runs, wg1_before = n_wg1_runs,
         wg1f_before = n_wg1f_runs;
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) conv_one(&cs[i]);
    CHECKF(yq_cuda_arch() < 80 || n_halo_runs - halo_before >= 12, "sm_%d: %ld halo-family configurations ran",
           yq_cuda_arch(), n_halo_runs - halo_before);
    /* every tile on at least the 128-channel shapes (two 128-byte-K tiles, three 64-byte) */
    CHECKF(yq_cuda_arch() != 90 || n_wg_runs - wg_before >= 30, "sm_%d: %ld wgmma configurations ran", yq_cuda_arch(),
           n_wg_runs - wg_before);
    /* its four tiles on each of the 7 shapes it takes (the two-block tile fits each of
     * them) */
    CHECKF(yq_cuda_arch() != 90 || n_wgh_runs - wgh_before >= 28, "sm_%d: %ld wgmma halo configurations ran",
           yq_cuda_arch(), n_wgh_runs - wgh_before);
    /* its tiles on the 1x1s they take: 96 filters over 64 channels (3 tiles), 128 and
     * 144 over 256 and 128 (4 each), 64 (2), 32 (1), and the two above (3 and 4) */
    CHECKF(yq_cuda_arch() != 90 || n_wg1_runs - wg1_before >= 21, "sm_%d: %ld streaming 1x1 configurations ran",
           yq_cuda_arch(), n_wg1_runs - wg1_before);
    /* both requantize forms of its int8 outputs: without the conversion (sums within 2^22)
     * and with it */
    CHECKF(yq_cuda_arch() != 90 || (n_wg1s_runs > 0 && n_wg1b_runs > 0),
           "sm_%d: streaming 1x1 int8 outputs: %ld configurations within 2^22, %ld beyond", yq_cuda_arch(), n_wg1s_runs,
           n_wg1b_runs);
    if (yq_cuda_arch() == 90)
        printf("# streaming 1x1, int8 out: %ld configurations without the int-to-float conversion, %ld with it\n",
               n_wg1s_runs, n_wg1b_runs);
    /* with float outputs: 255 over 256 channels (4 tiles), 75 over 128 (4), 255 over 64 (3) */
    CHECKF(yq_cuda_arch() != 90 || n_wg1f_runs - wg1f_before >= 11, "sm_%d: %ld float-output streaming 1x1 configurations ran",
           yq_cuda_arch(), n_wg1f_runs - wg1f_before);
    printf("# %ld conv configurations compared (tensor-core tiles x splits, CUTLASS and halo tiles, dp4a tiles, direct)\n",
           n_cfg_runs - before);
    CHECKF(yq_cuda_arch() < 80 || n_cut_runs > 0, "sm_%d: no CUTLASS-family configuration ran", yq_cuda_arch());
    CHECKF(yq_cuda_arch() < 80 || n_cut32_runs >= 2, "sm_%d: the 32-filter CUTLASS tile ran %ld times", yq_cuda_arch(),
           n_cut32_runs);
    CHECK(n_const_runs >= 8);
    /* the image's 3x3 on tensor cores: 32 and 24 filters (the 16-byte and word stores),
     * strides 1 and 2, with and without a fused shortcut, on views */
    CHECKF(yq_cuda_arch() < 80 || n_img_runs >= 8, "sm_%d: img_mma ran %ld configurations", yq_cuda_arch(), n_img_runs);
}

static void t_conv_head_float(void)
{
    need_gpu();
    rng_state = 777;
    /* dequantizing epilogues with the three int8 activations, compared bit for bit */
    static const yq_act acts[] = { YQ_ACT_LINEAR, YQ_ACT_LEAKY, YQ_ACT_RELU };
    for (int a = 0; a < 3; a++) {
        conv_case cc = { 48, 13, 13, 255, 1, 1, 1, 3, YQ_S8, YQ_F32, acts[a], 0 };
        conv_one(&cc);
        cc.k = 3;
        cc.c = 13;
        conv_one(&cc);
    }
}

static void t_conv_depthwise(void)
{
    need_gpu();
    rng_state = 4242;
    long col_before = n_dwcol_runs;
    static const int chans[] = { 3, 5, 8, 13, 48, 255 };
    for (int ci = 0; ci < 6; ci++)
        for (int k = 1; k <= 5; k += 2)
            for (int s = 1; s <= 2; s++) {
                int c = chans[ci];
                int fo = k == 5 && (ci & 1);       /* 5x5: int8 and float outputs in turn */
                conv_case cc = { c, 10 + ci, 7 + ci, c, k, s, c, 1 + 2 * (s & 1), YQ_S8,
                                 fo ? YQ_F32 : YQ_S8, (yq_act)(fo ? YQ_ACT_LINEAR : ci % 3), 0 };
                conv_one(&cc);
            }
    conv_case dw_u8 = { 3, 12, 11, 3, 3, 1, 3, 2, YQ_U8, YQ_S8, YQ_ACT_LEAKY, 0 };   /* on the image */
    conv_one(&dw_u8);
    /* dw_dp4a's 16-byte path over several words a pixel (yolo-fastest's widths) */
    static const conv_case wide[] = {
        { 192, 9, 8, 192, 3, 1, 192, 2, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 64, 11, 13, 64, 3, 2, 64, 3, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 144, 7, 9, 144, 5, 1, 144, 2, YQ_S8, YQ_S8, YQ_ACT_RELU, 0 },
        { 16, 12, 10, 16, 5, 2, 16, 1, YQ_S8, YQ_S8, YQ_ACT_LINEAR, 0 },
        /* dw_tile: a slab of 4 words after four of 16, 12-word slabs, tiles cut in both
         * directions, maps shorter than a thread's 4 rows */
        { 272, 11, 10, 272, 3, 1, 272, 2, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 48, 23, 37, 48, 3, 1, 48, 3, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 96, 17, 21, 96, 5, 2, 96, 2, YQ_S8, YQ_S8, YQ_ACT_LINEAR, 0 },
        { 32, 3, 5, 32, 3, 1, 32, 2, YQ_S8, YQ_S8, YQ_ACT_RELU, 0 },
        { 80, 6, 7, 80, 5, 1, 80, 2, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        /* dw_col: 16 channels over 19 rows (a segment cut short: rows that load zeros and
         * store nothing), stride 2 over 19 output rows */
        { 16, 19, 13, 16, 3, 1, 16, 2, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 64, 37, 21, 64, 3, 2, 64, 2, YQ_S8, YQ_S8, YQ_ACT_RELU, 0 },
    };
    long tile_before = n_dwtile_runs;
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++) conv_one(&wide[i]);
    CHECKF(n_dwdp4a_runs >= 20, "dw_dp4a ran %ld configurations", n_dwdp4a_runs);
    CHECKF(n_dwtile_runs - tile_before >= 9, "dw_tile ran %ld configurations", n_dwtile_runs - tile_before);
    /* dw_col: every 3x3 case above (maps shorter and longer than its 8 rows, both strides) */
    CHECKF(n_dwcol_runs - col_before >= 17, "dw_col ran %ld configurations", n_dwcol_runs - col_before);
    conv_case grouped = { 8, 9, 9, 6, 3, 1, 2, 3, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 };
    conv_one(&grouped);
    conv_case grouped2 = { 12, 9, 7, 9, 1, 2, 3, 1, YQ_S8, YQ_F32, YQ_ACT_LINEAR, 0 };
    conv_one(&grouped2);
}

/* Table activations (mish, swish, logistic) on int8 outputs: every family's epilogue
 * indexes the same table as the CPU reference (byte for byte, with and without a fused
 * shortcut, on views): the image's first conv, dp4a, tensor-core and CUTLASS shapes,
 * depthwise (4- and 16-channel kernels), grouped. */
static void t_conv_table(void)
{
    need_gpu();
    rng_state = 4242;
    long cut_before = n_cut_runs, halo_before = n_halo_runs, runs_before = n_cfg_runs, wg_before = n_wg_runs;
    long wgh_before = n_wgh_runs;
    static const conv_case cs[] = {
        { 3, 20, 18, 32, 3, 1, 1, 2, YQ_U8, YQ_S8, YQ_ACT_MISH, 0 },
        { 13, 11, 9, 21, 1, 1, 1, 3, YQ_S8, YQ_S8, YQ_ACT_SWISH, 0 },
        { 8, 12, 12, 16, 1, 1, 1, 2, YQ_S8, YQ_S8, YQ_ACT_LOGISTIC, 0 },
        { 48, 13, 13, 64, 3, 1, 1, 2, YQ_S8, YQ_S8, YQ_ACT_MISH, 0 },
        { 64, 26, 26, 128, 3, 2, 1, 4, YQ_S8, YQ_S8, YQ_ACT_MISH, 0 },
        { 32, 17, 33, 64, 3, 1, 1, 2, YQ_S8, YQ_S8, YQ_ACT_SWISH, 0 },
        { 128, 13, 13, 64, 1, 1, 1, 8, YQ_S8, YQ_S8, YQ_ACT_SWISH, 0 },
        { 64, 10, 10, 64, 3, 1, 64, 2, YQ_S8, YQ_S8, YQ_ACT_MISH, 0 },
        { 128, 11, 13, 48, 3, 1, 1, 2, YQ_S8, YQ_S8, YQ_ACT_MISH, 0 },     /* the wgmma halo family */
        { 12, 9, 9, 12, 5, 2, 12, 1, YQ_S8, YQ_S8, YQ_ACT_LOGISTIC, 0 },
        { 8, 9, 9, 6, 3, 1, 2, 3, YQ_S8, YQ_S8, YQ_ACT_MISH, 0 },
    };
    long img_before = n_img_runs;
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) conv_one(&cs[i]);
    if (yq_cuda_arch() >= 80)
        CHECKF(n_cut_runs > cut_before && n_halo_runs > halo_before && n_img_runs > img_before,
               "no CUTLASS, halo or img_mma configuration ran a table");
    CHECKF(yq_cuda_arch() != 90 || n_wg_runs > wg_before, "no wgmma configuration ran a table");
    CHECKF(yq_cuda_arch() != 90 || n_wgh_runs > wgh_before, "no wgmma halo configuration ran a table");
    printf("# table activations: %ld configurations compared\n", n_cfg_runs - runs_before);
}

/* Layers kept in float: FP16 tensor cores (and FP32, each case run both ways) against
 * the CPU's FP32 conv.  Shapes that cut the 64 x 64 tile, the K chunk of 32 and the
 * 8-wide weight loads unevenly; int8, uint8 and FP32 inputs; long K for the splits. */
static void t_conv_float_op(void)
{
    need_gpu();
    rng_state = 99;
    long f16_before = n_f16_runs, px_before = n_f32px_runs, dw_before = n_f32dw_runs;
    static const yq_act acts[] = { YQ_ACT_LINEAR, YQ_ACT_LEAKY, YQ_ACT_MISH, YQ_ACT_LOGISTIC };
    for (int a = 0; a < 4; a++) {
        conv_case cc = { 13, 12, 10, 255, 1, 1, 1, 3, YQ_S8, YQ_F32, acts[a], 1 };
        conv_one(&cc);
        conv_case c3 = { 48, 9, 11, 21, 3, 2, 1, 1, a & 1 ? YQ_U8 : YQ_S8, YQ_F32, acts[a], 1 };
        conv_one(&c3);
        conv_case dw = { 16, 9, 11, 16, 3, 1, 16, 2, YQ_S8, YQ_F32, acts[a], 1 };
        conv_one(&dw);
        conv_case ff = { 40, 14, 9, 70, 3, 1, 1, 2, YQ_F32, YQ_F32, acts[a], 1 };   /* fed by a float layer */
        conv_one(&ff);
        /* f32_dw (FP32 planes or int8 pixels in) and f32_px (16-filter slices, a tail of 4) */
        static const conv_case more[] = {
            { 16, 20, 18, 16, 3, 1, 16, 2, YQ_F32, YQ_F32, YQ_ACT_LINEAR, 1 },
            { 24, 13, 11, 24, 5, 2, 24, 2, YQ_F32, YQ_F32, YQ_ACT_LINEAR, 1 },
            { 20, 10, 9, 20, 5, 1, 20, 1, YQ_S8, YQ_F32, YQ_ACT_LINEAR, 1 },
            { 36, 11, 14, 36, 3, 2, 36, 2, YQ_S8, YQ_F32, YQ_ACT_LINEAR, 1 },
            { 16, 17, 19, 16, 1, 1, 1, 2, YQ_F32, YQ_F32, YQ_ACT_LINEAR, 1 },
            { 16, 15, 13, 20, 1, 1, 1, 2, YQ_S8, YQ_F32, YQ_ACT_LINEAR, 1 },
            { 3, 21, 23, 16, 3, 2, 1, 2, YQ_F32, YQ_F32, YQ_ACT_LINEAR, 1 },
        };
        for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) {
            conv_case m = more[i];
            m.act = acts[(a + (int)i) % 4];
            conv_one(&m);
        }
    }
    static const conv_case big[] = {
        { 256, 13, 13, 255, 1, 1, 1, 2, YQ_S8, YQ_F32, YQ_ACT_LINEAR, 1 },  /* a YOLO head */
        { 512, 7, 7, 130, 3, 1, 1, 1, YQ_S8, YQ_F32, YQ_ACT_LEAKY, 1 },     /* long K, few pixels: splits */
        { 3, 30, 34, 16, 3, 2, 1, 2, YQ_U8, YQ_F32, YQ_ACT_LEAKY, 1 },      /* the first conv: K = 27 */
        { 96, 26, 26, 48, 1, 1, 1, 1, YQ_F32, YQ_F32, YQ_ACT_LEAKY, 1 },
    };
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) conv_one(&big[i]);
    CHECKF(n_f32px_runs - px_before >= 24 && n_f32dw_runs - dw_before >= 20, "f32_px ran %ld, f32_dw %ld configurations",
           n_f32px_runs - px_before, n_f32dw_runs - dw_before);
    if (yq_cuda_arch() >= 80)
        CHECKF(n_f16_runs - f16_before >= 20, "%ld FP16 configurations ran", n_f16_runs - f16_before);
    printf("# float convs: %ld FP16 tensor-core configurations, largest relative error %.2g (bound %.0g)\n",
           n_f16_runs - f16_before, worst_f16, F16_BOUND);
}

/* ---- other ops ----------------------------------------------------------- */

static void maxpool_one(int c, int h, int w, int size, int stride, int pad, int B)
{
    yq_shape is = { c, h, w }, os = { c, (h + pad - size) / stride + 1, (w + pad - size) / stride + 1 };
    yq_pool_p p = { size, stride, pad };
    long in_n = yq_shape_size(is) * B, out_n = yq_shape_size(os) * B;
    int8_t *x = malloc(in_n), *ref = malloc(out_n);
    uint8_t *raw = malloc(yq_dlayout_bytes(YQ_S8, os.c, os.h, os.w) * B);
    CHECK(x && ref && raw);
    fill_s8(x, in_n);
    yq_ref_maxpool(is, &p, os, x, ref, B);
    void *din = upload_nhwc4(x, c, h, w, B);
    gbuf gb;
    yq_dtensor ti = { din, YQ_S8, c, h, w, .1f, -127, 127, 0 };
    yq_dtensor to = { gbuf_new(&gb, yq_dlayout_bytes(YQ_S8, os.c, os.h, os.w) * B), YQ_S8, os.c, os.h, os.w, .1f, -127, 127, 0 };
    OK(yq_cuda_maxpool(&ti, &p, &to, B, NULL, &err));
    gbuf_take(&gb, raw);
    int8_t *got = nhwc4_checked(raw, os.c, os.h, os.w, B);
    long d = first_diff(ref, got, out_n);
    free(got);
    /* on views (SPP: maxpools read a concat's slice and write another) */
    vbuf vi, vo;
    int c4 = (c + 3) & ~3;
    yq_dtensor tiv = view_in(&vi, x, YQ_S8, c, h, w, B, 3 * c4, c4);
    yq_dtensor tov = view_out(&vo, YQ_S8, os.c, os.h, os.w, B, 2 * c4 + 4, 4);
    OK(yq_cuda_maxpool(&tiv, &p, &tov, B, NULL, &err));
    view_free(&vi);
    view_take(&vo, raw);
    got = nhwc4_checked(raw, os.c, os.h, os.w, B);
    long dv = first_diff(ref, got, out_n);
    free(got);
    CHECKF(dv < 0, "maxpool %d/%d pad %d on views: int8 output %ld differs", size, stride, pad, dv);
    /* the float version on the same data (dequantized): max is exact */
    float *xf = malloc(4 * in_n), *rf = malloc(4 * out_n), *gf = malloc(4 * out_n);
    CHECK(xf && rf && gf);
    yq_dequantize(x, YQ_S8, in_n, .1f, xf);
    yq_f32_maxpool(is, &p, os, xf, rf, B);
    yq_dtensor tf = { gbuf_new(&gb, 4 * out_n), YQ_F32, os.c, os.h, os.w, .1f, -127, 127, 0 };
    OK(yq_cuda_maxpool(&ti, &p, &tf, B, NULL, &err));
    gbuf_take(&gb, gf);
    long df = first_diff(rf, gf, 4 * out_n);
    free(xf); free(rf); free(gf);
    yq_cuda_free(din);
    free(x); free(ref); free(raw);
    CHECKF(d < 0, "maxpool %d/%d pad %d: int8 output %ld differs", size, stride, pad, d);
    CHECKF(df < 0, "maxpool %d/%d pad %d: float output %ld differs", size, stride, pad, df / 4);
}

static void t_maxpool(void)
{
    need_gpu();
    rng_state = 5;
    maxpool_one(13, 13, 13, 2, 2, 1, 1);    /* odd size, darknet's default padding */
    maxpool_one(48, 12, 12, 2, 2, 0, 3);    /* 16 bytes a thread (three pieces a pixel) */
    maxpool_one(128, 16, 18, 2, 2, 0, 2);   /* yolov4-tiny's */
    maxpool_one(5, 13, 13, 2, 1, 1, 3);     /* yolov3-tiny's stride 1 */
    maxpool_one(8, 10, 10, 5, 1, 4, 1);     /* SPP */
    maxpool_one(255, 7, 9, 9, 1, 8, 2);
    maxpool_one(3, 6, 6, 13, 1, 12, 1);
}

static void t_upsample(void)
{
    need_gpu();
    rng_state = 6;
    int c = 13, h = 5, w = 7, s = 2, B = 3;
    yq_shape is = { c, h, w }, os = { c, h * s, w * s };
    long in_n = yq_shape_size(is) * B, out_n = yq_shape_size(os) * B;
    int8_t *x = malloc(in_n), *ref = malloc(out_n);
    uint8_t *raw = malloc(yq_dlayout_bytes(YQ_S8, c, os.h, os.w) * B);
    CHECK(x && ref && raw);
    fill_s8(x, in_n);
    yq_ref_upsample(is, s, x, ref, B);
    void *din = upload_nhwc4(x, c, h, w, B);
    gbuf gb;
    yq_dtensor ti = { din, YQ_S8, c, h, w, .1f, -127, 127, 0 };
    yq_dtensor to = { gbuf_new(&gb, yq_dlayout_bytes(YQ_S8, c, os.h, os.w) * B), YQ_S8, c, os.h, os.w, .1f, -127, 127, 0 };
    OK(yq_cuda_upsample(&ti, s, &to, B, NULL, &err));
    gbuf_take(&gb, raw);
    int8_t *got = nhwc4_checked(raw, c, os.h, os.w, B);
    long d = first_diff(ref, got, out_n);
    free(got);
    /* on views (YOLOv3: the upsample writes the first slice of a concat) */
    vbuf vi, vo;
    yq_dtensor tiv = view_in(&vi, x, YQ_S8, c, h, w, B, 24, 8);
    yq_dtensor tov = view_out(&vo, YQ_S8, c, os.h, os.w, B, 36, 0);
    OK(yq_cuda_upsample(&tiv, s, &tov, B, NULL, &err));
    view_free(&vi);
    view_take(&vo, raw);
    got = nhwc4_checked(raw, c, os.h, os.w, B);
    long dv = first_diff(ref, got, out_n);
    free(got);
    CHECKF(dv < 0, "upsample on views: output %ld differs", dv);
    yq_cuda_free(din);
    free(x); free(ref); free(raw);
    CHECKF(d < 0, "upsample output %ld differs", d);
}

static void t_shortcut(void)
{
    need_gpu();
    rng_state = 7;
    static const float negs[] = { 1.0f, 0.1f, 0.0f };
    for (int r = 0; r < 6; r++) {
        int c = r & 1 ? 13 : 48, h = 9, w = 6, B = 1 + (r % 3);
        yq_shape sh = { c, h, w };
        long n = yq_shape_size(sh) * B;
        yq_qnode q = { .dtype = YQ_S8, .qmin = -127, .qmax = 127 };
        q.sa = 0.2f + 1.8f * rnd_unit();
        q.sb = 0.2f + 1.8f * rnd_unit();
        q.sneg = negs[r % 3];
        int8_t *a = malloc(n), *b = malloc(n), *ref = malloc(n);
        uint8_t *raw = malloc(yq_dlayout_bytes(YQ_S8, c, h, w) * B);
        CHECK(a && b && ref && raw);
        fill_s8(a, n);
        fill_s8(b, n);
        yq_ref_shortcut(yq_shape_size(sh), a, b, &q, ref, B);
        void *da = upload_nhwc4(a, c, h, w, B), *db = upload_nhwc4(b, c, h, w, B);
        gbuf gb;
        yq_dtensor ta = { da, YQ_S8, c, h, w, .1f, -127, 127, 0 }, tb = { db, YQ_S8, c, h, w, .2f, -127, 127, 0 };
        yq_dtensor to = { gbuf_new(&gb, yq_dlayout_bytes(YQ_S8, c, h, w) * B), YQ_S8, c, h, w, .1f, -127, 127, 0 };
        OK(yq_cuda_shortcut(&ta, &tb, &q, YQ_ACT_LINEAR, &to, B, NULL, &err));
        gbuf_take(&gb, raw);
        int8_t *got = nhwc4_checked(raw, c, h, w, B);
        long d = first_diff(ref, got, n);
        free(got);
        /* on views: both sources and the output slices of wider pixels */
        int c4 = (c + 3) & ~3;
        vbuf va, vb, vo;
        yq_dtensor tav = view_in(&va, a, YQ_S8, c, h, w, B, c4 + 16, 16);
        yq_dtensor tbv = view_in(&vb, b, YQ_S8, c, h, w, B, 2 * c4, 0);
        yq_dtensor tov = view_out(&vo, YQ_S8, c, h, w, B, c4 + 8, 4);
        OK(yq_cuda_shortcut(&tav, &tbv, &q, YQ_ACT_LINEAR, &tov, B, NULL, &err));
        view_free(&va);
        view_free(&vb);
        view_take(&vo, raw);
        got = nhwc4_checked(raw, c, h, w, B);
        long dv = first_diff(ref, got, n);
        free(got);
        CHECKF(dv < 0, "shortcut case %d on views: output %ld differs", r, dv);
        yq_cuda_free(da);
        yq_cuda_free(db);
        free(a); free(b); free(ref); free(raw);
        CHECKF(d < 0, "shortcut case %d: output %ld differs", r, d);
    }
}

static void route_one(int n_src, const int *cs, int groups, int group_id, int B)
{
    int h = 5, w = 6, c_out = 0;
    yq_route_p r = { groups, group_id };
    for (int k = 0; k < n_src; k++) c_out += cs[k] / groups;
    yq_shape os = { c_out, h, w };
    int8_t *x[4], *ref = malloc(yq_shape_size(os) * B);
    yq_dtensor ts[4];
    CHECK(ref);
    int c_off = 0;
    for (int k = 0; k < n_src; k++) {
        yq_shape ss = { cs[k], h, w };
        x[k] = malloc(yq_shape_size(ss) * B);
        CHECK(x[k]);
        fill_s8(x[k], yq_shape_size(ss) * B);
        yq_ref_route_copy(ss, &r, x[k], os, c_off, ref, B);
        c_off += cs[k] / groups;
        ts[k] = (yq_dtensor){ upload_nhwc4(x[k], cs[k], h, w, B), YQ_S8, cs[k], h, w, .1f, -127, 127, 0 };
    }
    size_t ob = yq_dlayout_bytes(YQ_S8, c_out, h, w) * B;
    uint8_t *raw = malloc(ob);
    CHECK(raw);
    gbuf gb;
    yq_dtensor to = { gbuf_new(&gb, ob), YQ_S8, c_out, h, w, .1f, -127, 127, 0 };
    OK(yq_cuda_route(ts, n_src, &r, &to, B, NULL, &err));
    gbuf_take(&gb, raw);
    int8_t *got = nhwc4_checked(raw, c_out, h, w, B);
    long d = first_diff(ref, got, yq_shape_size(os) * B);
    free(got);
    /* on views: every source and the output slices of wider pixels */
    vbuf vs[4], vo;
    yq_dtensor tv[4];
    for (int k = 0; k < n_src; k++) {
        int c4 = (cs[k] + 3) & ~3;
        tv[k] = view_in(&vs[k], x[k], YQ_S8, cs[k], h, w, B, c4 + 4 * (k + 1), 4 * k);
    }
    yq_dtensor tov = view_out(&vo, YQ_S8, c_out, h, w, B, ((c_out + 3) & ~3) + 12, 8);
    OK(yq_cuda_route(tv, n_src, &r, &tov, B, NULL, &err));
    for (int k = 0; k < n_src; k++) view_free(&vs[k]);
    view_take(&vo, raw);
    got = nhwc4_checked(raw, c_out, h, w, B);
    long dv = first_diff(ref, got, yq_shape_size(os) * B);
    free(got);
    CHECKF(dv < 0, "route on views: output %ld differs", dv);
    free(raw);
    free(ref);
    for (int k = 0; k < n_src; k++) {
        yq_cuda_free(ts[k].p);
        free(x[k]);
    }
    CHECKF(d < 0, "route output %ld differs", d);
}

static void t_route(void)
{
    need_gpu();
    rng_state = 8;
    int a[] = { 13, 8, 5 };
    route_one(3, a, 1, 0, 3);
    int b[] = { 64 };
    route_one(1, b, 2, 1, 2);    /* yolov4-tiny: the second half of the channels */
    int c[] = { 10, 6 };
    route_one(2, c, 2, 0, 1);
    int d[] = { 255, 3, 48 };
    route_one(3, d, 1, 0, 1);
    /* the 16-byte copy (every slice whole 16-byte pieces) and the 4-byte one */
    int e[] = { 32, 16, 48 };
    route_one(3, e, 1, 0, 3);
    int f[] = { 64, 128 };
    route_one(2, f, 2, 1, 2);
    int g[] = { 8, 12 };
    route_one(2, g, 1, 0, 2);
}

static void t_convert(void)
{
    need_gpu();
    rng_state = 9;
    int c = 5, h = 7, w = 9, B = 2;
    long n = (long)c * h * w * B;
    float *x = malloc(4 * n), *rf = malloc(4 * n), *gf = malloc(4 * n);
    int8_t *rq = malloc(n);
    uint8_t *raw = malloc(yq_dlayout_bytes(YQ_S8, c, h, w) * B);
    CHECK(x && rf && gf && rq && raw);
    float sc = 0.0371f;
    for (long i = 0; i < n; i++) x[i] = (rnd_unit() - .5f) * 12.f;
    x[0] = NAN; x[1] = INFINITY; x[2] = -INFINITY; x[3] = 2.5f * sc; x[4] = -0.5f * sc; x[5] = 1e30f;
    void *dx;
    OK(yq_cuda_malloc(&dx, 4 * n, &err));
    OK(yq_cuda_h2d(dx, x, 4 * n, &err));
    yq_dtensor tx = { dx, YQ_F32, c, h, w, sc, -127, 127, 0 };
    gbuf gb;
    /* F32 -> S8 */
    yq_quantize(x, n, sc, -127, 127, rq);
    yq_dtensor ts = { gbuf_new(&gb, yq_dlayout_bytes(YQ_S8, c, h, w) * B), YQ_S8, c, h, w, sc, -127, 127, 0 };
    OK(yq_cuda_convert(&tx, &ts, B, NULL, &err));
    gbuf_take(&gb, raw);
    int8_t *got = nhwc4_checked(raw, c, h, w, B);
    long d1 = first_diff(rq, got, n);
    free(got);
    /* F32 -> U8 (the image) */
    for (long i = 6; i < n; i++) x[i] = rnd_unit() * 1.1f - .05f;
    OK(yq_cuda_h2d(dx, x, 4 * n, &err));
    yq_quantize_u8(x, n, 1.f / 255.f, (uint8_t *)rq);
    yq_dtensor tu = { gbuf_new(&gb, yq_dlayout_bytes(YQ_U8, c, h, w) * B), YQ_U8, c, h, w, 1.f / 255.f, 0, 255, 0 };
    OK(yq_cuda_convert(&tx, &tu, B, NULL, &err));
    gbuf_take(&gb, raw);
    got = nhwc4_checked(raw, c, h, w, B);
    long d2 = first_diff(rq, got, n);
    free(got);
    /* U8 -> S8 at the image's own scale and range (exec_int8's input_as), and S8/U8 -> F32 */
    uint8_t *u = malloc(n);
    int8_t *r2 = malloc(n);
    CHECK(u && r2);
    for (long i = 0; i < n; i++) u[i] = (uint8_t)rnd();
    void *du = upload_nhwc4(u, c, h, w, B);
    yq_dtensor tu2 = { du, YQ_U8, c, h, w, 1.f / 255.f, 0, 255, 0 };
    yq_dequantize(u, YQ_U8, n, 1.f / 255.f, rf);
    yq_quantize(rf, n, 1.f / 255.f, 0, 255, r2);
    yq_dtensor ts2 = { gbuf_new(&gb, yq_dlayout_bytes(YQ_S8, c, h, w) * B), YQ_S8, c, h, w, 1.f / 255.f, 0, 255, 0 };
    OK(yq_cuda_convert(&tu2, &ts2, B, NULL, &err));
    gbuf_take(&gb, raw);
    got = nhwc4_checked(raw, c, h, w, B);
    long d3 = first_diff(r2, got, n);
    free(got);
    yq_dtensor tf = { gbuf_new(&gb, 4 * n), YQ_F32, c, h, w, 0, 0, 0, 0 };
    OK(yq_cuda_convert(&tu2, &tf, B, NULL, &err));
    gbuf_take(&gb, gf);
    long d4 = first_diff(rf, gf, 4 * n);
    /* views: S8 read from a slice (a float consumer of a concat's source), and F32 -> S8 into one */
    vbuf vi, vo;
    yq_dtensor tsv = view_in(&vi, r2, YQ_S8, c, h, w, B, 20, 12);
    tsv.scale = 1.f / 255.f;
    yq_dequantize(r2, YQ_S8, n, 1.f / 255.f, rf);
    tf.p = gbuf_new(&gb, 4 * n);
    OK(yq_cuda_convert(&tsv, &tf, B, NULL, &err));
    view_free(&vi);
    gbuf_take(&gb, gf);
    long d5 = first_diff(rf, gf, 4 * n);
    OK(yq_cuda_h2d(dx, rf, 4 * n, &err));
    yq_dtensor tov = view_out(&vo, YQ_S8, c, h, w, B, 12, 4);
    tov.scale = 1.f / 255.f;
    tx.scale = 1.f / 255.f;
    OK(yq_cuda_convert(&tx, &tov, B, NULL, &err));
    view_take(&vo, raw);
    got = nhwc4_checked(raw, c, h, w, B);
    yq_quantize(rf, n, 1.f / 255.f, -127, 127, r2);
    long d6 = first_diff(r2, got, n);
    free(got);
    yq_cuda_free(du);
    yq_cuda_free(dx);
    free(u); free(r2); free(x); free(rf); free(gf); free(rq); free(raw);
    CHECKF(d1 < 0, "F32 -> S8: %ld differs", d1);
    CHECKF(d2 < 0, "F32 -> U8: %ld differs", d2);
    CHECKF(d3 < 0, "U8 -> S8: %ld differs", d3);
    CHECKF(d4 < 0, "U8 -> F32: %ld differs", d4 / 4);
    CHECKF(d5 < 0, "S8 view -> F32: %ld differs", d5 / 4);
    CHECKF(d6 < 0, "F32 -> S8 view: %ld differs", d6);
}

static void t_errors(void)
{
    need_gpu();
    void *p = NULL;
    yq_status st = yq_cuda_malloc(&p, (size_t)1 << 50, &err);
    CHECKF(st != YQ_OK && p == NULL && strlen(err.msg) > 0, "a 1 PiB allocation did not fail cleanly");
    st = yq_cuda_set_device(yq_cuda_device_count(), &err);
    CHECK(st == YQ_ERR_CUDA);
}

static void t_device_count(void)
{
    int n = yq_cuda_device_count();     /* must not crash without a driver */
    CHECK(n >= 0);
    if (n == 0) TEST_SKIP("no CUDA device");
    char name[256];
    OK(yq_cuda_device_name(name, sizeof name, &err));
    printf("# device: %s, %d present\n", name, n);
}

/* ---- whole models ---------------------------------------------------------- */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Runs g (quantized) on the CPU reference and on the GPU; compares every node. */
static int cfg_rotation;   /* > 0: compare_graph gives each conv a rotating configuration */
static int plan_flags;     /* added to YQ_PLAN_KEEP_ALL (YQ_PLAN_NO_VIEWS: every route a copy) */
static int last_views;     /* routes the last GPU plan made views */
static void compare_graph(const char *label, yq_graph *g, int B)
{
    yq_shape is = g->nodes[0].out;
    long in_n = yq_shape_size(is) * B;
    float *x = malloc(4 * in_n);
    CHECK(x);
    for (long i = 0; i < in_n; i++) x[i] = rnd_unit();
    yq_plan *cp;
    OK(yq_plan_new(g, B, YQ_PLAN_KEEP_ALL, &cp, &err));
    double t0 = now_ms();
    yq_status st = yq_exec_int8(cp, x, NULL, NULL, &err);
    double t_cpu = now_ms() - t0;
    if (st) yq_plan_free(cp);
    CHECKF(st == YQ_OK, "cpu: %s", err.msg);
    yq_cuda_plan *gp;
    st = yq_cuda_plan_new_flags(g, B, 0, YQ_PLAN_KEEP_ALL | plan_flags, &gp, &err);
    if (st) yq_plan_free(cp);
    CHECKF(st == YQ_OK, "gpu plan: %s", err.msg);
    last_views = yq_cuda_plan_views(gp);
    int n_rot = 0;
    if (cfg_rotation)   /* each conv a different configuration, round robin over its candidates */
        for (int i = 1; i < g->n_nodes && st == YQ_OK; i++) {
            struct yq_cuda_conv *cv = yq_cuda_plan_conv(gp, i);
            if (!cv) continue;
            yq_conv_cfg cand[YQ_CONV_MAX_CFGS];
            int nc = yq_cuda_conv_candidates(cv, B, cand, YQ_CONV_MAX_CFGS);
            if (nc > 0) st = yq_cuda_conv_set_cfg(cv, cand[(i * 7 + cfg_rotation) % nc], B, &err);
            n_rot++;
        }
    if (st == YQ_OK) st = yq_cuda_run(gp, x, &err);
    char why[600] = "";
    if (st) snprintf(why, sizeof why, "gpu run: %s", err.msg);
    /* every node by memcmp: int8 ones, dequantizing heads and the float layers (their exact
     * FP32), and so everything downstream of a float layer too */
    int n = g->n_nodes, n_int = 0, n_flt = 0, n_after_flt = 0, bad = 0, n_exact_f = 0, n_fused = 0, n_fused_drop = 0;
    uint8_t *after = calloc((size_t)n, 1);   /* downstream of a float layer */
    CHECK(after);
    for (int i = 0; i < n && !st; i++) {
        const yq_node *nd = &g->nodes[i];
        for (int k = 0; k < nd->n_src; k++) after[i] |= after[nd->src[k]] | g->q[nd->src[k]].float_op;
        yq_dtype t = yq_node_dtype(g, i);
        size_t bytes = (size_t)yq_shape_size(nd->out) * B * yq_dtype_size(t);
        if (nd->op != YQ_OP_SHORTCUT && yq_cuda_plan_fused(gp, i) >= 0) {   /* its shortcut is compared instead */
            n_fused += nd->op == YQ_OP_CONV;
            n_fused_drop += nd->op == YQ_OP_DROPOUT;
            continue;
        }
        const void *ref = yq_plan_data(cp, i);
        void *got = malloc(bytes ? bytes : 1);
        if (!ref || !got) { snprintf(why, sizeof why, "node %d: no data", i); free(got); break; }
        if ((st = yq_cuda_download(gp, i, got, &err))) { snprintf(why, sizeof why, "download %d: %s", i, err.msg); free(got); break; }
        long d = first_diff(ref, got, bytes);
        if (g->q[i].float_op) n_flt++;
        else if (t == YQ_F32) n_exact_f++;
        else n_int++;
        n_after_flt += after[i] && !g->q[i].float_op;
        if (d >= 0) {
            bad++;
            if (!why[0]) {
                long cnt = 0;
                for (size_t j = 0; j < bytes; j++) cnt += ((const unsigned char *)ref)[j] != ((unsigned char *)got)[j];
                int fl = t == YQ_F32;
                snprintf(why, sizeof why, "%s: node %d (%s %s, %s%s%s) differs at byte %ld (%ld bytes differ; cpu %.9g, gpu %.9g)",
                         label, i, nd->name, yq_op_name(nd->op), fl ? "f32" : t == YQ_U8 ? "u8" : "s8",
                         g->q[i].float_op ? ", float layer" : "", after[i] ? ", after a float layer" : "", d, cnt,
                         fl ? (double)((const float *)ref)[d / 4] : (double)((const int8_t *)ref)[d],
                         fl ? (double)((const float *)got)[d / 4] : (double)((const int8_t *)got)[d]);
            }
        }
        free(got);
    }
    free(after);
    if (!bad && !why[0]) {
        for (int r = 0; r < 2 && !st; r++) st = yq_cuda_run(gp, x, &err);   /* warm */
        double t1 = now_ms();
        int reps = 10;
        for (int r = 0; r < reps && !st; r++) st = yq_cuda_run(gp, x, &err);
        double t_gpu = (now_ms() - t1) / reps;
        printf("# %s: %d nodes, batch %d, %dx%d: every node bit-exact: %d int8, %d dequantized, %d float "
               "(%d int8 or dequantized nodes after a float layer); cpu ref %.0f ms, gpu %.3f ms/run "
               "(incl. h2d), %.1f MB activations; %d convs fused with their shortcut (%d through a dropout), %d routes "
               "as views%s\n", label, n, B, is.w, is.h, n_int, n_exact_f, n_flt, n_after_flt, t_cpu, t_gpu,
               yq_cuda_plan_bytes(gp) / 1e6, n_fused, n_fused_drop, last_views, n_rot ? ", convs on rotating configurations" : "");
    }
    yq_cuda_plan_free(gp);
    yq_plan_free(cp);
    free(x);
    CHECKF(!why[0], "%s", why);
}

/* Four passes, every node compared by memcmp: every conv int8, routes as views; heads float
 * with every route copied (no views, no fusion); heads float, rotating configurations and
 * fused shortcuts; heads and layers 1-3 float (a chain of float layers feeding int8 ones),
 * fused.  min_views: routes the first pass's plan must make views (concats written in
 * place, channel groups). */
static void model_case(const char *label, const char *cfg, const char *weights, int size, int B, int min_views)
{
    yq_import_opt opt = { .width = size, .height = size, .synthetic = weights == NULL, .seed = 1 };
    for (volatile int pass = 0; pass < 4; pass++) {
        cfg_rotation = pass == 2 ? 1 : 0;
        /* pass 0: routes as views without fusion (a fused shortcut writes dense memory, so
         * the concats it feeds copy); pass 1: the baseline (neither); passes 2 and 3 fuse
         * convs with their shortcuts, as plans do by default */
        plan_flags = pass == 0 ? YQ_PLAN_NO_FUSE : pass == 1 ? YQ_PLAN_NO_VIEWS | YQ_PLAN_NO_FUSE : 0;
        yq_graph *g;
        OK(yq_darknet_load(cfg, weights, &opt, &g, &err));
        yq_qconfig qc;
        yq_qconfig_defaults(&qc);
        if (pass == 0) qc.head_float = 0;   /* every conv int8 (heads dequantize in the epilogue) */
        if (pass == 3)
            for (int i = 1; i < g->n_nodes; i++)
                if (g->nodes[i].op == YQ_OP_CONV && g->nodes[i].layer >= 1 && g->nodes[i].layer <= 3) {
                    char key[32];
                    snprintf(key, sizeof key, "layer.%d.skip", g->nodes[i].layer);
                    OK(yq_qconfig_set(&qc, key, "1", "test", &err));
                }
        yq_status st = test_rewrite(&g, NULL, &qc, &err);
        if (st) yq_graph_free(g);
        CHECKF(st == YQ_OK, "quantize %s: %s", label, err.msg);
        char l2[128];
        snprintf(l2, sizeof l2, "%s [head=%s%s]", label, pass == 0 ? "int8" : "float",
                 pass == 1 ? ", routes copied" : pass == 2 ? ", rotated configurations" : pass == 3 ? ", layers 1-3 float" : "");
        rng_state = 31337 + pass;
        /* compare_graph longjmps on failure: free the graph first by running it in a scope we control */
        jmp_buf save;
        memcpy(save, test_jmp_, sizeof save);
        if (setjmp(test_jmp_) == 0) {
            compare_graph(l2, g, B);
            memcpy(test_jmp_, save, sizeof save);
            yq_graph_free(g);
            /* (pass 2 fuses convs with their shortcuts: a fused shortcut writes dense memory,
             * so the concats it feeds copy) */
            CHECKF(pass == 2 || pass == 3 || (pass == 1 ? last_views == 0 : last_views >= min_views),
                   "%s: %d routes as views, expected %s %d", l2, last_views, pass == 1 ? "" : "at least",
                   pass == 1 ? 0 : min_views);
        } else {
            memcpy(test_jmp_, save, sizeof save);
            yq_graph_free(g);
            longjmp(test_jmp_, 1);
        }
    }
}

static void shared_model(const char *folder, int size, int B)
{
    need_gpu();
    char path[1024];
    snprintf(path, sizeof path, "%s/models/%s", test_data_dir(), folder);
    yq_model_paths mp;
    if (yq_model_resolve(path, NULL, &mp, &err) != YQ_OK) TEST_SKIP("%s: %s", folder, err.msg);
    model_case(folder, mp.cfg, mp.weights, size, B, 0);
}

static void cfg_only_model(const char *file, int size, int B, int min_views)
{
    need_gpu();
    char path[1024];
    snprintf(path, sizeof path, "%s/models/cfg-only/%s", test_data_dir(), file);
    FILE *f = fopen(path, "r");
    if (!f) TEST_SKIP("%s not found", path);
    fclose(f);
    model_case(file, path, NULL, size, B, min_views);
}

static void t_model_fastest_10(void) { shared_model("yolo-fastest-1.0", 0, 2); }
static void t_model_fastest_11(void) { shared_model("yolo-fastest-1.1", 0, 2); }
static void t_model_fastest_11_xl(void) { shared_model("yolo-fastest-1.1-xl", 0, 2); }
static void t_model_fastest_xl_10(void) { shared_model("yolo-fastest-xl-1.0", 0, 1); }
static void t_model_lite_trial6(void) { shared_model("yolo-lite-coco-trial6", 0, 3); }
/* yolov4-tiny: 3 channel groups and 6 concats in its CSP blocks (the head's concat
 * copies: its conv 23 already sits in the slice of a CSP concat);
 * YOLOv3: the two concats of an upsample with an earlier shortcut. */
static void t_model_yolov4_tiny(void) { cfg_only_model("yolov4-tiny.cfg", 160, 2, 9); }
static void t_model_yolov3(void) { cfg_only_model("yolov3.cfg", 128, 1, 2); }
/* YOLOv4: mish convs int8 through their tables; CSP concats and SPP. */
static void t_model_yolov4(void) { cfg_only_model("yolov4.cfg", 128, 1, 1); }

static const char *perf_cases;    /* YQ_CUDA_PERF=only:I,J,...: those cases of t_perf alone */

static int perf_case_on(size_t i)
{
    if (!perf_cases) return 1;
    for (const char *p = perf_cases; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) return 0;
        if (v == (long)i) return 1;
        p = *end == ',' ? end + 1 : end;
    }
    return 0;
}

static void t_perf(void)
{
    rng_state = 1;
    conv_case cs[] = {
        { 32, 208, 208, 64, 3, 1, 1, 32, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },  /* yolov3 at 416, batch 32: 32 channels */
        { 32, 416, 416, 64, 3, 2, 1, 32, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 128, 104, 104, 256, 3, 2, 1, 32, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 }, /* yolov3 at 416, batch 32: large 3x3 */
        { 128, 52, 52, 256, 3, 1, 1, 32, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 256, 26, 26, 512, 3, 1, 1, 32, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 512, 13, 13, 1024, 3, 1, 1, 32, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 64, 104, 104, 128, 3, 1, 1, 32, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 256, 52, 52, 128, 1, 1, 1, 32, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },   /* batch 32: a 1x1 */
        { 512, 13, 13, 1024, 3, 1, 1, 1, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },   /* batch 1: small M, long K */
        { 256, 52, 52, 256, 3, 1, 1, 1, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },   /* yolov3 at 416: a middle 3x3 */
        { 512, 26, 26, 256, 1, 1, 1, 8, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 3, 416, 416, 32, 3, 1, 1, 1, YQ_U8, YQ_S8, YQ_ACT_LEAKY, 0 },    /* the first conv */
        { 3, 416, 416, 32, 3, 1, 1, 8, YQ_U8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 256, 52, 52, 255, 1, 1, 1, 1, YQ_S8, YQ_F32, YQ_ACT_LINEAR, 0 }, /* a head */
        { 128, 80, 80, 128, 3, 1, 128, 1, YQ_S8, YQ_S8, YQ_ACT_LINEAR, 0 }, /* depthwise */
        /* layers kept in float: FP16 tensor cores against FP32 (each case runs both) */
        { 256, 52, 52, 255, 1, 1, 1, 1, YQ_S8, YQ_F32, YQ_ACT_LINEAR, 1 }, /* a head */
        { 256, 52, 52, 255, 1, 1, 1, 32, YQ_S8, YQ_F32, YQ_ACT_LINEAR, 1 },
        { 128, 52, 52, 256, 3, 1, 1, 1, YQ_S8, YQ_F32, YQ_ACT_LEAKY, 1 },
        { 512, 13, 13, 1024, 3, 1, 1, 1, YQ_S8, YQ_F32, YQ_ACT_LEAKY, 1 },
        { 96, 40, 40, 96, 1, 1, 1, 8, YQ_F32, YQ_F32, YQ_ACT_LEAKY, 1 },   /* fed by a float layer */
        /* yolo-fastest-1.1-xl at batch 128: its widest depthwise and 1x1 layers */
        { 64, 80, 80, 64, 3, 1, 64, 128, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
        { 8, 160, 160, 48, 1, 1, 1, 128, YQ_S8, YQ_S8, YQ_ACT_LEAKY, 0 },
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
        if (perf_case_on(i)) conv_one(&cs[i]);
}

int main(void)
{
    const char *pm = getenv("YQ_CUDA_PERF");
    if (pm && !strncmp(pm, "only", 4) && yq_cuda_device_count() > 0) {   /* the timings alone */
        if (pm[4] == ':') perf_cases = pm + 5;
        perf_mode = 1;
        TEST(t_perf);
        return test_done();
    }
    TEST(t_device_count);
    TEST(t_errors);
    TEST(t_convert);
    TEST(t_conv);
    TEST(t_conv_mma);
    TEST(t_conv_head_float);
    TEST(t_conv_depthwise);
    TEST(t_conv_table);
    TEST(t_conv_float_op);
    TEST(t_maxpool);
    TEST(t_upsample);
    TEST(t_shortcut);
    TEST(t_route);
    TEST(t_model_fastest_10);
    TEST(t_model_fastest_11);
    TEST(t_model_fastest_11_xl);
    TEST(t_model_fastest_xl_10);
    TEST(t_model_lite_trial6);
    TEST(t_model_yolov4_tiny);
    TEST(t_model_yolov3);
    TEST(t_model_yolov4);
    if (pm && *pm == '1' && yq_cuda_device_count() > 0) {
        perf_mode = 1;
        TEST(t_perf);
    }
    return test_done();
}
