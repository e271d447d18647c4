/* The int8 arithmetic and the int8 CPU engine.
 *  - ir/requant.h at its edges: rounding ties, saturation, shifts of 0, 31 and 62,
 *    the multiplier encoding;
 *  - every int8 op of a small network against a float simulation of the same
 *    quantization (dequantized inputs and weights, float math, quantized output):
 *    within one quantization step; copies (route, maxpool, upsample) exactly;
 *  - determinism; the dgemm path equal to the plain-C reference byte for byte on
 *    real models. */
#include <math.h>
#include <unistd.h>
#include "tests/test.h"
#include "ir/half.h"
#include "calib/observe.h"
#include "kernels/cpu_fp32.h"
#include "kernels/cpu_ref.h"
#include "quant/rewrite.h"
#include "runtime/plan.h"

/* ---- requantize ---------------------------------------------------------- */

static int64_t ref_round(__int128 v, int shift)   /* ties away from zero, by 128-bit arithmetic */
{
    if (shift == 0) return (int64_t)v;
    __int128 d = (__int128)1 << shift, a = v < 0 ? -v : v;
    __int128 q = (a + d / 2) / d;
    return (int64_t)(v < 0 ? -q : q);
}

static void t_round_ties(void)
{
    CHECK(yq_round_shift(3, 1) == 2);     /* 1.5 -> 2 */
    CHECK(yq_round_shift(-3, 1) == -2);   /* -1.5 -> -2 */
    CHECK(yq_round_shift(5, 1) == 3);     /* 2.5 -> 3 (away from zero, not to even) */
    CHECK(yq_round_shift(-5, 1) == -3);
    CHECK(yq_round_shift(1, 1) == 1);     /* 0.5 -> 1 */
    CHECK(yq_round_shift(-1, 1) == -1);
    CHECK(yq_round_shift(6, 2) == 2);     /* 1.5 */
    CHECK(yq_round_shift(5, 2) == 1);     /* 1.25 */
    CHECK(yq_round_shift(7, 0) == 7 && yq_round_shift(-7, 0) == -7);   /* shift 0: identity */
    /* Symmetric: -x rounds to -round(x), for every x and shift. */
    uint64_t s = 12345;
    for (int i = 0; i < 100000; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        int64_t v = (int64_t)(s >> 2) >> (s & 31);
        int sh = (int)((s >> 40) % 63);
        CHECKF(yq_round_shift(-v, sh) == -yq_round_shift(v, sh), "v=%lld shift=%d", (long long)v, sh);
        CHECKF(yq_round_shift(v, sh) == ref_round(v, sh), "v=%lld shift=%d", (long long)v, sh);
    }
}

static void t_requant_edges(void)
{
    yq_rq one = { 1 << 30, 30 };                   /* M = 1 */
    CHECK(yq_requant(100, one, -127, 127) == 100);
    CHECK(yq_requant(1000, one, -127, 127) == 127);        /* saturates */
    CHECK(yq_requant(-1000, one, -127, 127) == -127);      /* symmetric range: never -128 */
    CHECK(yq_requant(INT32_MAX, one, -127, 127) == 127);
    CHECK(yq_requant(INT32_MIN, one, -127, 127) == -127);
    CHECK(yq_requant(20, one, -7, 7) == 7);                /* 4 bits */
    yq_rq half = { 1 << 30, 31 };                  /* M = 0.5, shift 31 */
    CHECK(yq_requant(3, half, -127, 127) == 2);            /* 1.5 -> 2 */
    CHECK(yq_requant(-3, half, -127, 127) == -2);
    CHECK(yq_requant(INT32_MAX, (yq_rq){ INT32_MAX, 62 }, -127, 127) == 1);   /* (2^31-1)^2 / 2^62 ~ 1 */
    CHECK(yq_requant(12345, (yq_rq){ 0, 0 }, -127, 127) == 0);   /* a zero multiplier */
    /* Leaky fused: the negative multiplier applies to negative accumulators only. */
    yq_rq pos = yq_rq_encode(0.5), neg = yq_rq_encode(0.05);
    CHECK(yq_requant_act(100, pos, neg, -127, 127) == 50);
    CHECK(yq_requant_act(-100, pos, neg, -127, 127) == -5);
    CHECK(yq_requant_act(0, pos, neg, -127, 127) == 0);
    /* Residual add: (a*ma + b*mb) >> shift, leaky on negative sums. */
    CHECK(yq_add_requant(10, 20, 1 << 20, 1 << 20, 20, 0x7fffffff, -127, 127) == 30);
    CHECK(yq_add_requant(100, 100, 1 << 20, 1 << 20, 20, 0x7fffffff, -127, 127) == 127);
    CHECK(yq_add_requant(-10, -20, 1 << 20, 1 << 20, 20, 214748365, -127, 127) == -3);   /* -30 * 0.1 */
    CHECK(yq_add_requant(-10, -20, 1 << 20, 1 << 20, 20, 0, -127, 127) == 0);            /* relu */
}

static void t_rq_encode(void)
{
    yq_rq z = yq_rq_encode(0);
    CHECK(z.mult == 0);
    CHECK(yq_rq_encode(-1).mult == 0 && yq_rq_encode(NAN).mult == 0);
    for (double m = 1e-9; m < 1e4; m *= 1.37) {
        yq_rq r = yq_rq_encode(m);
        CHECK(r.shift >= 0 && r.shift <= 62 && r.mult >= 0);
        double back = ldexp((double)r.mult, -r.shift);
        double tol = r.shift == 62 ? ldexp(1.0, -62) : m * ldexp(1.0, -30);
        CHECKF(fabs(back - m) <= tol, "m=%g -> %d/2^%d = %g", m, r.mult, r.shift, back);
        if (r.shift < 62) CHECK(r.mult >= (1 << 30));
    }
    yq_rq big = yq_rq_encode(ldexp(1.0, 40));              /* beyond 2^31: clamped */
    CHECK(big.mult == 0x7fffffff && big.shift == 0);
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

static yq_graph *small_graph(uint32_t seed)
{
    char path[] = "/tmp/yq_int8_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(write(fd, net_cfg, strlen(net_cfg)) == (ssize_t)strlen(net_cfg));
    close(fd);
    yq_import_opt o = { .synthetic = 1, .seed = seed };
    yq_graph *g;
    yq_error err;
    yq_status st = yq_darknet_load(path, NULL, &o, &g, &err);
    unlink(path);
    CHECKF(st == YQ_OK, "%s", err.msg);
    return g;
}

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

/* Calibrates g on `batch` random inputs and quantizes it. */
static void calibrate_quantize(yq_graph *g, const float *in, int batch, const yq_qconfig *qc)
{
    yq_error err;
    yq_calib_stats *cs;
    CHECK(yq_calib_stats_new(g->n_nodes, g, &cs, &err) == YQ_OK);
    yq_plan *p;
    CHECK(yq_plan_new(g, batch, 0, &p, &err) == YQ_OK);
    obs o = { cs };
    CHECKF(yq_exec_fp32(p, in, observe_hook, &o, &err) == YQ_OK, "%s", err.msg);
    yq_plan_free(p);
    CHECKF(yq_quantize_graph(g, cs, qc, &err) == YQ_OK, "%s", err.msg);
    yq_calib_stats_free(cs);
}

static float deq1(const void *p, yq_dtype t, long i, float s)
{
    return t == YQ_U8 ? ((const uint8_t *)p)[i] * s : t == YQ_S8 ? ((const int8_t *)p)[i] * s : ((const float *)p)[i];
}

static void t_ops_vs_float_sim(void)
{
    yq_graph *g = small_graph(7);
    CHECK(g->n_nodes == 14);
    int B = 2;
    long in_n = yq_shape_size(g->nodes[0].out) * B;
    float *in = malloc(sizeof(float) * (size_t)in_n);
    fill_input(in, in_n, 99);
    yq_qconfig qc;
    yq_qconfig_defaults(&qc);
    qc.head_float = 0;
    calibrate_quantize(g, in, B, &qc);
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
    CHECK(checked >= 7);
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
    yq_graph *g = small_graph(3);
    int B = 3;
    long in_n = yq_shape_size(g->nodes[0].out) * B;
    float *in = malloc(sizeof(float) * (size_t)in_n);
    fill_input(in, in_n, 5);
    yq_qconfig qc;
    yq_qconfig_defaults(&qc);
    calibrate_quantize(g, in, B, &qc);
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
    free(in);
    yq_graph_free(g);
}

/* Real models: the dgemm path equals the reference, every node, byte for byte. */
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
    calibrate_quantize(g, in, 1, &qc);
    size_t l1, l2;
    unsigned char *a = run_all(g, 1, YQ_PLAN_REFERENCE, in, &l1);
    unsigned char *b = run_all(g, 1, 0, in, &l2);
    CHECK(l1 == l2);
    CHECKF(!memcmp(a, b, l1), "%s: the dgemm path differs from the reference", rel);
    free(a);
    free(b);
    free(in);
    yq_graph_free(g);
}

static void t_blas_fastest_xl(void) { blas_vs_ref_model("yolo-fastest-1.1-xl", 0, 0, 0); }
static void t_blas_yolo_lite(void) { blas_vs_ref_model("yolo-lite-coco-trial6", 0, 0, 1); }
static void t_blas_yolov3_tiny(void) { blas_vs_ref_model("cfg-only/yolov3-tiny.cfg", 1, 128, 0); }
static void t_blas_yolov4_tiny(void) { blas_vs_ref_model("cfg-only/yolov4-tiny.cfg", 1, 128, 0); }

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
 * weights (fp16w, the default) or the FP32 ones; the FP32 model's weights are never touched */
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
        calibrate_quantize(g, in, 1, &qc);
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
        /* the engine's output of that conv: yq_f32_conv on exactly those weights */
        yq_plan *p;
        CHECK(yq_plan_new(g, 1, YQ_PLAN_KEEP_ALL, &p, &err) == YQ_OK);
        CHECKF(yq_exec_int8(p, in, NULL, NULL, &err) == YQ_OK, "%s", err.msg);
        long out_n = yq_shape_size(n->out);
        float *ref = malloc(sizeof *ref * (size_t)out_n), *wk = malloc(sizeof(float) * (size_t)(yq_f32_conv_work(g, n) + 1));
        CHECK(ref && wk);
        yq_f32_conv(g, n, w, in, ref, wk, 1);          /* conv 0 reads the image itself */
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

int main(void)
{
    TEST(t_round_ties);
    TEST(t_requant_edges);
    TEST(t_rq_encode);
    TEST(t_fp16_rounding);
    TEST(t_float_precision);
    TEST(t_ops_vs_float_sim);
    TEST(t_deterministic_and_blas);
    TEST(t_blas_fastest_xl);
    TEST(t_blas_yolo_lite);
    TEST(t_blas_yolov3_tiny);
    TEST(t_blas_yolov4_tiny);
    return test_done();
}
