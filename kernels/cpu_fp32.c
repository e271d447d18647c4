/* FP32 CPU kernels.  Conv is im2col + OpenBLAS sgemm per group; depthwise is a
 * direct loop (sgemm on one channel would be all overhead) over a zero-padded copy of
 * each channel, vectorized across output columns.
 *
 * Every kernel here gives bit-identical results to the plain scalar loops it replaced
 * (each output is computed with the same operations in the same order); the comments at
 * each say why.  That assumes no FMA contraction, which is GCC's default under -std=c11
 * (-ffp-contract=off); the AVX clones could not contract anyway (AVX has no FMA). */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <string.h>
#include <unistd.h>
#include <cblas.h>
#include "kernels/cpu_fp32.h"
#include "kernels/cpu_int8.h"

/* Darknet's activations, written the way darknet writes them (AlexeyAB's mish
 * with its softplus threshold of 20), so results round alike. */
static inline float logistic(float x) { return 1.f / (1.f + expf(-x)); }
static inline float softplus(float x)
{
    if (x > 20.f) return x;
    if (x < -20.f) return expf(x);
    return log1pf(expf(x));
}
static inline float tanh_dn(float x) { return 2.f / (1.f + expf(-2.f * x)) - 1.f; }

float yq_f32_act1(float x, yq_act act)
{
    switch (act) {
    case YQ_ACT_LINEAR: return x;
    case YQ_ACT_LEAKY: return x > 0 ? x : .1f * x;
    case YQ_ACT_RELU: return x * (x > 0);
    case YQ_ACT_MISH: return x * tanh_dn(softplus(x));
    case YQ_ACT_SWISH: return x * logistic(x);
    case YQ_ACT_LOGISTIC: return logistic(x);
    case YQ_ACT_COUNT: break;
    }
    return x;
}

void yq_f32_activate(float *x, long n, yq_act act)
{
    if (act == YQ_ACT_LINEAR) return;
    if (act == YQ_ACT_LEAKY) {
        for (long i = 0; i < n; i++) x[i] = x[i] > 0 ? x[i] : .1f * x[i];
        return;
    }
    for (long i = 0; i < n; i++) x[i] = yq_f32_act1(x[i], act);
}

static int is_depthwise(const yq_graph *g, const yq_node *n)
{
    yq_shape is = yq_node_in_shape(g, n);
    return n->p.conv.groups == is.c && n->p.conv.filters == is.c;
}

static int is_pointwise(const yq_conv_p *c) { return c->size == 1 && c->stride == 1 && c->pad == 0; }

/* Dense conv: the sgemm adds the bias itself (C preset to the bias, beta = 1) when K is at
 * most this.  OpenBLAS then rounds acc + bias once, as the separate pass did, so the result
 * is unchanged, and it skips its own pass that zeroes C for beta = 0.  Larger K may be
 * split into blocks whose partial sums OpenBLAS adds into C one at a time, which would
 * round differently: those keep beta = 0 and the separate bias pass. */
#define GEMM_BIAS_MAX_K 256

/* Depthwise scratch: one channel's input, zero-padded by pad on every side, with each
 * padded row stored as `stride` phases (column c at phase c % stride, index c / stride),
 * so that output column ox reads phase kx % stride at index ox + kx / stride: unit-stride
 * loads for every stride. */
typedef struct dw_geom { int hp, pw, rs; } dw_geom;   /* padded rows, phase width, row stride */
static dw_geom dw_geometry(yq_shape is, const yq_conv_p *c)
{
    dw_geom d;
    d.hp = is.h + 2 * c->pad;
    d.pw = (is.w + 2 * c->pad + c->stride - 1) / c->stride;
    d.rs = d.pw * c->stride;
    return d;
}

long yq_f32_conv_work(const yq_graph *g, const yq_node *n)
{
    if (n->op != YQ_OP_CONV) return 0;
    yq_shape is = yq_node_in_shape(g, n);
    const yq_conv_p *c = &n->p.conv;
    if (is_depthwise(g, n)) {
        dw_geom d = dw_geometry(is, c);
        return (long)d.hp * d.rs;
    }
    if (is_pointwise(c)) return 0;
    return (long)(is.c / c->groups) * c->size * c->size * n->out.h * n->out.w;
}


/* ---- vector row kernels ----
 * Written with GCC vector extensions: 8 floats, which is one AVX register where the CPU has
 * AVX (the *_avx clones, picked at run time) and two SSE registers otherwise.  Every lane
 * does the scalar code's operations in the scalar code's order (separate multiply and add,
 * never fused), so the results are bit-identical to the scalar loops they replace. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"   /* 32-byte vectors pass between always_inline helpers only */
#endif
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* No helper takes a vector by value: GCC notes an ABI change for that even when inlined. */
ALWAYS_INLINE v8f v8_load(const float *p) { v8f v; memcpy(&v, p, sizeof v); return v; }
ALWAYS_INLINE void v8_store(float *p, const v8f *v) { memcpy(p, v, sizeof *v); }
ALWAYS_INLINE v8f v8_set1(float x) { return (v8f){ x, x, x, x, x, x, x, x }; }
/* x = x > 0 ? x : .1f * x, lane by lane. */
ALWAYS_INLINE void v8_leaky(v8f *x)
{
    v8i m = *x > v8_set1(0.f);
    v8f t = v8_set1(.1f) * *x;
    *x = (v8f)(((v8i)*x & m) | ((v8i)t & ~m));
}

/* y[i] = act(y[i] + bias), i < n: the conv epilogue. */
ALWAYS_INLINE void bias_act_body(float *y, long n, float bias, yq_act act)
{
    long i = 0;
    v8f vb = v8_set1(bias);
    if (act == YQ_ACT_LEAKY)
        for (; i + 8 <= n; i += 8) {
            v8f v = v8_load(y + i) + vb;
            v8_leaky(&v);
            v8_store(y + i, &v);
        }
    else if (act == YQ_ACT_LINEAR)
        for (; i + 8 <= n; i += 8) {
            v8f v = v8_load(y + i) + vb;
            v8_store(y + i, &v);
        }
    for (; i < n; i++) y[i] = yq_f32_act1(y[i] + bias, act);
}

/* dst[j] = src[j * s], j < n; src[0 .. avail) is readable. */
ALWAYS_INLINE void strided_copy(float *dst, const float *src, int n, int s, long avail)
{
    int j = 0;
    if (s == 1) {
        memcpy(dst, src, sizeof(float) * n);
        return;
    }
    if (s == 2)
        for (; j + 8 <= n && 2L * j + 16 <= avail; j += 8) {
            v8f a = v8_load(src + 2 * j), b = v8_load(src + 2 * j + 8);
#ifdef __clang__
            v8f e = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
#else
            v8f e = __builtin_shuffle(a, b, (v8i){ 0, 2, 4, 6, 8, 10, 12, 14 });
#endif
            v8_store(dst + j, &e);
        }
    for (; j < n; j++) dst[j] = src[(long)j * s];
}

static void take_phase(const float *src, int w, int q, float *dst, int n);

/* col[(ch*k + ky)*k + kx][oy*ow + ox], zero outside the image.  par: its rows over OpenMP's
 * threads (the exact convs; the OpenBLAS path keeps its threads to itself). */
static void im2col(const float *in, int ch, int h, int w, int k, int stride, int pad, int oh, int ow, float *col,
                   int par)
{
    const int R = ch * k * k;
#pragma omp parallel for schedule(static) if (par && (long)R * oh * ow >= 65536)
    for (int r = 0; r < R; r++) {
        const int c = r / (k * k), ky = r / k % k, kx = r % k;
        float *dst = col + (long)r * oh * ow;
        const float *src = in + (long)c * h * w;
        /* ox in [x0, x1) reads inside the row; outside it, zeros. */
        int x0 = 0, x1 = ow;
        while (x0 < ow && x0 * stride + kx - pad < 0) x0++;
        while (x1 > x0 && (x1 - 1) * stride + kx - pad >= w) x1--;
        for (int oy = 0; oy < oh; oy++) {
            int y = oy * stride + ky - pad;
            float *d = dst + (long)oy * ow;
            if (y < 0 || y >= h) {
                memset(d, 0, sizeof(float) * ow);
                continue;
            }
            if (stride == 2) {   /* (a scalar gather was 7% of an int8 yolo-fastest-1.1 package's time) */
                take_phase(src + (long)y * w, w, kx - pad, d, ow);
                continue;
            }
            const float *s = src + (long)y * w + kx - pad;
            for (int ox = 0; ox < x0; ox++) d[ox] = 0.f;
            if (stride == 1) memcpy(d + x0, s + x0, sizeof(float) * (x1 - x0));
            else for (int ox = x0; ox < x1; ox++) d[ox] = s[(long)ox * stride];
            for (int ox = x1; ox < ow; ox++) d[ox] = 0.f;
        }
    }
}

/* Copies one channel (h x w at src) into the padded, phase-split layout of dw_geometry:
 * padded column c = j * s + r goes to row[r * pw + j]. */
ALWAYS_INLINE void dw_pad_body(const float *src, int h, int w, int p, int s, dw_geom d, float *pad)
{
    for (int y = 0; y < d.hp; y++) {
        float *row = pad + (long)y * d.rs;
        int iy = y - p;
        if (iy < 0 || iy >= h) {
            memset(row, 0, sizeof(float) * d.rs);
            continue;
        }
        const float *in = src + (long)iy * w;
        for (int r = 0; r < s; r++) {
            float *ph = row + r * d.pw;
            /* j in [j0, j1) reads in[j * s + r - p], inside the row. */
            int j0 = p > r ? (p - r + s - 1) / s : 0;
            int j1 = (p + w - r + s - 1) / s;
            if (j1 > d.pw) j1 = d.pw;
            if (j1 < j0) j1 = j0;
            for (int j = 0; j < j0; j++) ph[j] = 0.f;
            if (j1 > j0) {
                long first = (long)j0 * s + r - p;
                strided_copy(ph + j0, in + first, j1 - j0, s, w - first);
            }
            for (int j = j1; j < d.pw; j++) ph[j] = 0.f;
        }
    }
}

/* One channel of depthwise conv from the padded, phase-split plane (see dw_geometry):
 *   dst[oy][ox] = act(sum over ky, kx in that order of wk[ky][kx] * in[s*oy+ky-pad][s*ox+kx-pad] + bias)
 * which is the scalar loop's sum: the padding terms it skipped add w * 0 = +-0 here, and a
 * float sum that starts at +0 is never -0, so adding +-0 leaves it unchanged.  A row whose
 * width is not a multiple of 8 ends with a vector that overlaps the previous one (the
 * overlapped outputs are computed twice, identically). */
ALWAYS_INLINE void dw_plane_body(const float *pad, dw_geom d, int s, int k, const float *wk, float bias,
                                 yq_act act, float *dst, int oh, int ow)
{
    v8f vw[49];
    int xo[7];
    int kk = k <= 7 ? k : 0;   /* the vector path holds up to 7x7 weights */
    for (int i = 0; i < kk * kk; i++) vw[i] = v8_set1(wk[i]);
    for (int kx = 0; kx < kk; kx++) xo[kx] = (kx % s) * d.pw + kx / s;
    v8f vb = v8_set1(bias);
    for (int oy = 0; oy < oh; oy++) {
        const float *rows = pad + (long)oy * s * d.rs;
        float *o = dst + (long)oy * ow;
        if (kk && ow >= 8) {
            for (int ox = 0;; ox += 8) {
                if (ox + 8 > ow) {
                    if (ox == ow) break;
                    ox = ow - 8;
                }
                v8f acc = v8_set1(0.f);
                for (int ky = 0; ky < k; ky++) {
                    const float *r = rows + (long)ky * d.rs + ox;
                    for (int kx = 0; kx < k; kx++) acc = acc + vw[ky * k + kx] * v8_load(r + xo[kx]);
                }
                acc = acc + vb;
                if (act == YQ_ACT_LEAKY) v8_leaky(&acc);
                v8_store(o + ox, &acc);
                if (ox + 8 == ow) break;
            }
        } else {
            for (int ox = 0; ox < ow; ox++) {
                float acc = 0;
                for (int ky = 0; ky < k; ky++) {
                    const float *r = rows + (long)ky * d.rs + ox;
                    for (int kx = 0; kx < k; kx++) acc += wk[ky * k + kx] * r[(kx % s) * d.pw + kx / s];
                }
                acc += bias;
                o[ox] = act == YQ_ACT_LEAKY ? (acc > 0 ? acc : .1f * acc) : acc;
            }
        }
        if (act != YQ_ACT_LEAKY && act != YQ_ACT_LINEAR)
            for (int i = 0; i < ow; i++) o[i] = yq_f32_act1(o[i], act);
    }
}

/* Pads channel src into work, then convolves it into dst.  The common shapes get constant
 * k and stride, so the loops above unroll. */
ALWAYS_INLINE void dw_channel_body(const float *src, int h, int w, int p, dw_geom d, int s, int k, const float *wk,
                                   float bias, yq_act act, float *work, float *dst, int oh, int ow)
{
    if (k == 3 && s == 1) {
        dw_pad_body(src, h, w, p, 1, d, work);
        dw_plane_body(work, d, 1, 3, wk, bias, act, dst, oh, ow);
    } else if (k == 3 && s == 2) {
        dw_pad_body(src, h, w, p, 2, d, work);
        dw_plane_body(work, d, 2, 3, wk, bias, act, dst, oh, ow);
    } else if (k == 5 && s == 1) {
        dw_pad_body(src, h, w, p, 1, d, work);
        dw_plane_body(work, d, 1, 5, wk, bias, act, dst, oh, ow);
    } else if (k == 5 && s == 2) {
        dw_pad_body(src, h, w, p, 2, d, work);
        dw_plane_body(work, d, 2, 5, wk, bias, act, dst, oh, ow);
    } else {
        dw_pad_body(src, h, w, p, s, d, work);
        dw_plane_body(work, d, s, k, wk, bias, act, dst, oh, ow);
    }
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define YQ_HAVE_AVX_CLONES 1
__attribute__((target("avx"))) static void dw_channel_avx(const float *src, int h, int w, int p, dw_geom d, int s,
                                                         int k, const float *wk, float bias, yq_act act, float *work,
                                                         float *dst, int oh, int ow)
{
    dw_channel_body(src, h, w, p, d, s, k, wk, bias, act, work, dst, oh, ow);
}
__attribute__((target("avx"))) static void bias_act_avx(float *y, long n, float bias, yq_act act)
{
    bias_act_body(y, n, bias, act);
}
static int cpu_has_avx(void)
{
    static int has = -1;   /* a cache of a CPU property, set once; racing writers write the same value */
    if (has < 0) {
        __builtin_cpu_init();
        has = __builtin_cpu_supports("avx") ? 1 : 0;
    }
    return has;
}
#endif

static void dw_channel(const float *src, int h, int w, int p, dw_geom d, int s, int k, const float *wk, float bias,
                       yq_act act, float *work, float *dst, int oh, int ow)
{
#ifdef YQ_HAVE_AVX_CLONES
    if (cpu_has_avx()) {
        dw_channel_avx(src, h, w, p, d, s, k, wk, bias, act, work, dst, oh, ow);
        return;
    }
#endif
    dw_channel_body(src, h, w, p, d, s, k, wk, bias, act, work, dst, oh, ow);
}

static void bias_act(float *y, long n, float bias, yq_act act)
{
#ifdef YQ_HAVE_AVX_CLONES
    if (cpu_has_avx()) { bias_act_avx(y, n, bias, act); return; }
#endif
    bias_act_body(y, n, bias, act);
}

ALWAYS_INLINE void fill_body(float *y, long n, float v)
{
    long i = 0;
    v8f vv = v8_set1(v);
    for (; i + 8 <= n; i += 8) v8_store(y + i, &vv);
    for (; i < n; i++) y[i] = v;
}
#ifdef YQ_HAVE_AVX_CLONES
__attribute__((target("avx"))) static void fill_avx(float *y, long n, float v) { fill_body(y, n, v); }
#endif
static void fill(float *y, long n, float v)
{
#ifdef YQ_HAVE_AVX_CLONES
    if (cpu_has_avx()) { fill_avx(y, n, v); return; }
#endif
    fill_body(y, n, v);
}

/* y[i] = act(y[i]) for the conv epilogue when the bias was added by the sgemm. */
ALWAYS_INLINE void act_body(float *y, long n, yq_act act)
{
    long i = 0;
    if (act == YQ_ACT_LEAKY)
        for (; i + 8 <= n; i += 8) {
            v8f v = v8_load(y + i);
            v8_leaky(&v);
            v8_store(y + i, &v);
        }
    for (; i < n; i++) y[i] = yq_f32_act1(y[i], act);
}
#ifdef YQ_HAVE_AVX_CLONES
__attribute__((target("avx"))) static void act_avx(float *y, long n, yq_act act) { act_body(y, n, act); }
#endif
static void activate_rows(float *y, long n, yq_act act)
{
#ifdef YQ_HAVE_AVX_CLONES
    if (cpu_has_avx()) { act_avx(y, n, act); return; }
#endif
    act_body(y, n, act);
}

/* Depthwise conv + bias + activation of one image; work: yq_f32_conv_work floats.
 * (Splitting the channels over threads was tried: on the bench's 2-core machine,
 * starting threads per layer cost more than it saved.) */
static void depthwise(const yq_node *n, const float *w, yq_shape is, const float *in, float *out, float *work)
{
    const yq_conv_p *c = &n->p.conv;
    int k = c->size, oh = n->out.h, ow = n->out.w;
    dw_geom d = dw_geometry(is, c);
    for (int ch = 0; ch < is.c; ch++)
        dw_channel(in + (long)ch * is.h * is.w, is.h, is.w, c->pad, d, c->stride, k, w + (long)ch * k * k,
                   n->b[ch], n->act, work, out + (long)ch * oh * ow, oh, ow);
}

void yq_f32_conv(const yq_graph *g, const yq_node *n, const float *w, const float *in, float *out, float *work, int batch)
{
    if (!w) w = n->w;
    yq_shape is = yq_node_in_shape(g, n);
    const yq_conv_p *c = &n->p.conv;
    int G = c->groups, M = c->filters / G, K = is.c / G * c->size * c->size;
    int N = n->out.h * n->out.w;
    long in_sz = yq_shape_size(is), out_sz = yq_shape_size(n->out);
    int dw = is_depthwise(g, n), pw = is_pointwise(c);
    int bias_in_gemm = K <= GEMM_BIAS_MAX_K;
    for (int b = 0; b < batch; b++) {
        const float *x = in + b * in_sz;
        float *y = out + b * out_sz;
        if (dw) {
            depthwise(n, w, is, x, y, work);   /* bias and activation included */
            continue;
        }
        for (int gi = 0; gi < G; gi++) {
            const float *xg = x + (long)gi * (is.c / G) * is.h * is.w;
            const float *col = xg;
            if (!pw) {
                im2col(xg, is.c / G, is.h, is.w, c->size, c->stride, c->pad, n->out.h, n->out.w, work, 0);
                col = work;
            }
            float *yg = y + (long)gi * M * N;
            if (bias_in_gemm) for (int o = 0; o < M; o++) fill(yg + (long)o * N, N, n->b[gi * M + o]);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.f,
                        w + (long)gi * M * K, K, col, N, bias_in_gemm ? 1.f : 0.f, yg, N);
        }
        if (bias_in_gemm) {
            if (n->act != YQ_ACT_LINEAR) activate_rows(y, out_sz, n->act);
        } else {
            for (int o = 0; o < c->filters; o++) bias_act(y + (long)o * N, N, n->b[o], n->act);
        }
    }
}

/* ---- the float layers of int8 graphs: exact numerics ----
 * A float conv of an int8 graph (a layer the qconfig keeps in float) is defined to the bit,
 * so that every engine gives the same bytes (issue 14; DESIGN.md, "float layers"): each
 * output is one fused multiply-add chain over K = (ci, ky, kx) in increasing order starting
 * from +0 (a padding position adds nothing: fmaf(w, 0, s) = s, and s is never -0), then
 * + bias once, then yq_f32_act_exact.  The GPU's conv_f32 and conv_f32_tiled
 * (kernels/cuda_conv_kernels.cuh) compute the same chain. */

/* Darknet's activations evaluated in double and rounded to float once: exp, log1p and tanh
 * differ between libms by an ulp of a double at most, which moves the float result only when
 * it lies within that of a rounding midpoint (about 2^-28 of the time), where expf differs by
 * an ulp of a float.  kernels/cuda_common.cuh yq_act_x is the same expression. */
ALWAYS_INLINE float act_exact(float x, yq_act act)
{
    double d = x;
    switch (act) {
    case YQ_ACT_LINEAR: return x;
    case YQ_ACT_LEAKY: return x > 0 ? x : .1f * x;
    case YQ_ACT_RELU: return x * (x > 0);
    case YQ_ACT_MISH: return (float)(d * tanh(d > 20 ? d : log1p(exp(d))));
    case YQ_ACT_SWISH: return (float)(d / (1.0 + exp(-d)));
    case YQ_ACT_LOGISTIC: return (float)(1.0 / (1.0 + exp(-d)));
    case YQ_ACT_COUNT: break;
    }
    return x;
}

float yq_f32_act_exact(float x, yq_act act) { return act_exact(x, act); }

void yq_f32_activate_exact(float *x, long n, yq_act act)
{
    if (act == YQ_ACT_LINEAR) return;
#pragma omp parallel for schedule(static) if (n >= 32768)
    for (long i = 0; i < n; i++) x[i] = yq_f32_act_exact(x[i], act);
}

/* y[r][j] = chain over k < K of w[r][k] * col[k][j], r < rows of w (row stride K), col's and
 * y's rows N apart.  The work is blocked for the caches: K in blocks of CHAIN_KB, columns in
 * panels of CHAIN_NB, so a panel of col (CHAIN_KB x CHAIN_NB floats) is read from cache by
 * every row; between K blocks a chain's running sum waits in y.  Each output is still the
 * one fmaf chain over k = 0, 1, ... K-1 from +0: the blocking moves no operation. */
#define CHAIN_KB 256
#define CHAIN_NB 256
#define CHAIN_THREADS 16
#define CHAIN_PAR_FLOPS 4e6
#define CHAIN_PANEL ((long)CHAIN_KB * CHAIN_NB)     /* floats of one thread's packed panel */

static int exact_forced = -1;   /* yq_f32_exact_force; set by tests before any conv runs */
void yq_f32_exact_force(int isa) { exact_forced = isa; }

/* im2col's columns (none for a 1x1 conv), rounded up to 64 bytes, then a packed panel for
 * each of up to CHAIN_THREADS threads: the caller's scratch, so that no conv allocates (a
 * 256 KB malloc is an mmap and an munmap, per group of a depthwise conv). */
static long col_floats(const yq_graph *g, const yq_node *n)
{
    if (is_pointwise(&n->p.conv)) return 0;
    yq_shape is = yq_node_in_shape(g, n);
    const yq_conv_p *c = &n->p.conv;
    return ((long)(is.c / c->groups) * c->size * c->size * n->out.h * n->out.w + 15) & ~15L;
}

long yq_f32_conv_exact_work(const yq_graph *g, const yq_node *n)
{
    if (n->op != YQ_OP_CONV) return 0;
    return col_floats(g, n) + CHAIN_THREADS * CHAIN_PANEL;
}

/* Rows [0, RB) x columns [j0, j1) over k in [k0, k1): s = k0 ? y : +0, the chain, y = s.
 * Scalar fmaf: correctly rounded, the same as the vector FMA below lane by lane.  The
 * columns' chains advance together, k by k (their running sums in y), so that they overlap
 * instead of each waiting on its own FMA's latency: a 13x13 image's 9 tail columns took half
 * of a 3x3 conv's time one chain after the other. */
ALWAYS_INLINE void chain_scalar(const float *w, long K, const float *col, long N, float *y, int RB, long j0, long j1,
                                long k0, long k1)
{
    if (j1 <= j0) return;
    for (int r = 0; r < RB; r++) {
        float *yr = y + r * N;
        const float *wr = w + r * K;
        if (!k0)
            for (long j = j0; j < j1; j++) yr[j] = 0.f;
        for (long k = k0; k < k1; k++) {
            const float a = wr[k], *c = col + k * N;
            for (long j = j0; j < j1; j++) yr[j] = fmaf(a, c[j], yr[j]);
        }
    }
}

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
/* One K block of one column panel, its 16-column strips packed: pk holds strip t's
 * (k1 - k0) x 16 floats at t * (k1 - k0) * 16, so the inner loop reads memory in order.
 * 4 rows x 16 columns in registers per step of k, then single rows: the same chains,
 * 8 lanes at a time.  Columns past the last whole strip go through chain_scalar. */
__attribute__((target("avx2,fma"))) static void chain_fma_block(const float *w, long K, const float *col, long N,
                                                               float *y, int rows, long j0, long j1, long k0, long k1,
                                                               const float *pk)
{
    const long kn = k1 - k0, js = j0 + (j1 - j0) / 16 * 16;   /* whole strips end at js */
    int r0 = 0;
    for (; r0 + 4 <= rows; r0 += 4) {
        const float *w0 = w + r0 * K + k0;
        float *y0 = y + r0 * N;
        for (long j = j0; j < js; j += 16) {
            const float *p = pk + (j - j0) * kn;
            const float *wa = w0, *wb = w0 + K, *wc = w0 + 2 * K, *wd = w0 + 3 * K;
            float *ya = y0 + j, *yb = ya + N, *yc = yb + N, *yd = yc + N;
            /* eight named accumulators (an array of them was kept in memory by the compiler) */
            __m256 a0, a1, b0, b1, c0, c1, d0, d1;
            if (k0) {
                a0 = _mm256_loadu_ps(ya); a1 = _mm256_loadu_ps(ya + 8);
                b0 = _mm256_loadu_ps(yb); b1 = _mm256_loadu_ps(yb + 8);
                c0 = _mm256_loadu_ps(yc); c1 = _mm256_loadu_ps(yc + 8);
                d0 = _mm256_loadu_ps(yd); d1 = _mm256_loadu_ps(yd + 8);
            } else {
                a0 = a1 = b0 = b1 = c0 = c1 = d0 = d1 = _mm256_setzero_ps();
            }
            for (long k = 0; k < kn; k++) {
                const __m256 x0 = _mm256_loadu_ps(p + 16 * k), x1 = _mm256_loadu_ps(p + 16 * k + 8);
                __m256 v = _mm256_broadcast_ss(wa + k);
                a0 = _mm256_fmadd_ps(v, x0, a0);
                a1 = _mm256_fmadd_ps(v, x1, a1);
                v = _mm256_broadcast_ss(wb + k);
                b0 = _mm256_fmadd_ps(v, x0, b0);
                b1 = _mm256_fmadd_ps(v, x1, b1);
                v = _mm256_broadcast_ss(wc + k);
                c0 = _mm256_fmadd_ps(v, x0, c0);
                c1 = _mm256_fmadd_ps(v, x1, c1);
                v = _mm256_broadcast_ss(wd + k);
                d0 = _mm256_fmadd_ps(v, x0, d0);
                d1 = _mm256_fmadd_ps(v, x1, d1);
            }
            _mm256_storeu_ps(ya, a0); _mm256_storeu_ps(ya + 8, a1);
            _mm256_storeu_ps(yb, b0); _mm256_storeu_ps(yb + 8, b1);
            _mm256_storeu_ps(yc, c0); _mm256_storeu_ps(yc + 8, c1);
            _mm256_storeu_ps(yd, d0); _mm256_storeu_ps(yd + 8, d1);
        }
        chain_scalar(w + r0 * K, K, col, N, y0, 4, js, j1, k0, k1);
    }
    for (; r0 < rows; r0++) {
        const float *w0 = w + r0 * K + k0;
        float *y0 = y + r0 * N;
        for (long j = j0; j < js; j += 16) {
            const float *p = pk + (j - j0) * kn;
            __m256 a0 = k0 ? _mm256_loadu_ps(y0 + j) : _mm256_setzero_ps();
            __m256 a1 = k0 ? _mm256_loadu_ps(y0 + j + 8) : _mm256_setzero_ps();
            for (long k = 0; k < kn; k++) {
                __m256 wb = _mm256_broadcast_ss(w0 + k);
                a0 = _mm256_fmadd_ps(wb, _mm256_loadu_ps(p + 16 * k), a0);
                a1 = _mm256_fmadd_ps(wb, _mm256_loadu_ps(p + 16 * k + 8), a1);
            }
            _mm256_storeu_ps(y0 + j, a0);
            _mm256_storeu_ps(y0 + j + 8, a1);
        }
        chain_scalar(w + r0 * K, K, col, N, y0, 1, js, j1, k0, k1);
    }
}

/* col[k0:k1, j0:js) into pk as chain_fma_block reads it. */
static void chain_pack(const float *col, long N, long j0, long js, long k0, long k1, float *pk)
{
    const long kn = k1 - k0;
    for (long j = j0; j < js; j += 16) {
        float *p = pk + (j - j0) * kn;
        for (long k = k0; k < k1; k++, p += 16) memcpy(p, col + k * N + j, 16 * sizeof(float));
    }
}
/* The AVX-512 form of chain_fma_block: 8 rows x 32 columns in registers per step of k (16
 * accumulators), then a 16-column strip, then single rows; the same chains 16 lanes at a
 * time.  pk (chain_pack512): the 32-column strips' (k1 - k0) x 32 floats each, then the one
 * 16-column strip's, then the last columns' (fewer than 16, zero-padded; their lanes masked
 * on y), from j0.  The padding lanes compute chains of their own that are never stored. */
#define FMA8(x)                                                                                                   \
    do {                                                                                                          \
        a##x = _mm512_fmadd_ps(_mm512_set1_ps(w0[k]), x, a##x);                                                   \
        b##x = _mm512_fmadd_ps(_mm512_set1_ps(w0[K + k]), x, b##x);                                               \
        c##x = _mm512_fmadd_ps(_mm512_set1_ps(w0[2 * K + k]), x, c##x);                                           \
        d##x = _mm512_fmadd_ps(_mm512_set1_ps(w0[3 * K + k]), x, d##x);                                           \
        e##x = _mm512_fmadd_ps(_mm512_set1_ps(w0[4 * K + k]), x, e##x);                                           \
        f##x = _mm512_fmadd_ps(_mm512_set1_ps(w0[5 * K + k]), x, f##x);                                           \
        g##x = _mm512_fmadd_ps(_mm512_set1_ps(w0[6 * K + k]), x, g##x);                                           \
        h##x = _mm512_fmadd_ps(_mm512_set1_ps(w0[7 * K + k]), x, h##x);                                           \
    } while (0)
#define LD8(x, off)                                                                                               \
    do {                                                                                                          \
        a##x = k0 ? _mm512_loadu_ps(y0 + (off)) : _mm512_setzero_ps();                                           \
        b##x = k0 ? _mm512_loadu_ps(y0 + N + (off)) : _mm512_setzero_ps();                                       \
        c##x = k0 ? _mm512_loadu_ps(y0 + 2 * N + (off)) : _mm512_setzero_ps();                                   \
        d##x = k0 ? _mm512_loadu_ps(y0 + 3 * N + (off)) : _mm512_setzero_ps();                                   \
        e##x = k0 ? _mm512_loadu_ps(y0 + 4 * N + (off)) : _mm512_setzero_ps();                                   \
        f##x = k0 ? _mm512_loadu_ps(y0 + 5 * N + (off)) : _mm512_setzero_ps();                                   \
        g##x = k0 ? _mm512_loadu_ps(y0 + 6 * N + (off)) : _mm512_setzero_ps();                                   \
        h##x = k0 ? _mm512_loadu_ps(y0 + 7 * N + (off)) : _mm512_setzero_ps();                                   \
    } while (0)
#define LDM8(x)                                                                                                   \
    do {                                                                                                          \
        a##x = k0 ? _mm512_maskz_loadu_ps(m, y0) : _mm512_setzero_ps();                                          \
        b##x = k0 ? _mm512_maskz_loadu_ps(m, y0 + N) : _mm512_setzero_ps();                                      \
        c##x = k0 ? _mm512_maskz_loadu_ps(m, y0 + 2 * N) : _mm512_setzero_ps();                                  \
        d##x = k0 ? _mm512_maskz_loadu_ps(m, y0 + 3 * N) : _mm512_setzero_ps();                                  \
        e##x = k0 ? _mm512_maskz_loadu_ps(m, y0 + 4 * N) : _mm512_setzero_ps();                                  \
        f##x = k0 ? _mm512_maskz_loadu_ps(m, y0 + 5 * N) : _mm512_setzero_ps();                                  \
        g##x = k0 ? _mm512_maskz_loadu_ps(m, y0 + 6 * N) : _mm512_setzero_ps();                                  \
        h##x = k0 ? _mm512_maskz_loadu_ps(m, y0 + 7 * N) : _mm512_setzero_ps();                                  \
    } while (0)
#define STM8(x)                                                                                                   \
    do {                                                                                                          \
        _mm512_mask_storeu_ps(y0, m, a##x);                                                                       \
        _mm512_mask_storeu_ps(y0 + N, m, b##x);                                                                   \
        _mm512_mask_storeu_ps(y0 + 2 * N, m, c##x);                                                               \
        _mm512_mask_storeu_ps(y0 + 3 * N, m, d##x);                                                               \
        _mm512_mask_storeu_ps(y0 + 4 * N, m, e##x);                                                               \
        _mm512_mask_storeu_ps(y0 + 5 * N, m, f##x);                                                               \
        _mm512_mask_storeu_ps(y0 + 6 * N, m, g##x);                                                               \
        _mm512_mask_storeu_ps(y0 + 7 * N, m, h##x);                                                               \
    } while (0)
#define ST8(x, off)                                                                                               \
    do {                                                                                                          \
        _mm512_storeu_ps(y0 + (off), a##x);                                                                       \
        _mm512_storeu_ps(y0 + N + (off), b##x);                                                                   \
        _mm512_storeu_ps(y0 + 2 * N + (off), c##x);                                                               \
        _mm512_storeu_ps(y0 + 3 * N + (off), d##x);                                                               \
        _mm512_storeu_ps(y0 + 4 * N + (off), e##x);                                                               \
        _mm512_storeu_ps(y0 + 5 * N + (off), f##x);                                                               \
        _mm512_storeu_ps(y0 + 6 * N + (off), g##x);                                                               \
        _mm512_storeu_ps(y0 + 7 * N + (off), h##x);                                                               \
    } while (0)
__attribute__((target("avx512f"))) static void chain_fma512_block(const float *w, long K, long N, float *y, int rows,
                                                                 long j0, long j1, long k0, long k1, const float *pk)
{
    const long kn = k1 - k0, j32 = j0 + (j1 - j0) / 32 * 32, j16 = j32 + (j1 - j32) / 16 * 16;
    int r0 = 0;
    for (; r0 + 8 <= rows; r0 += 8) {
        const float *w0 = w + r0 * K + k0;
        for (long j = j0; j < j32; j += 32) {
            const float *p = pk + (j - j0) * kn;
            float *y0 = y + r0 * N + j;
            __m512 aX, bX, cX, dX, eX, fX, gX, hX, aZ, bZ, cZ, dZ, eZ, fZ, gZ, hZ;
            LD8(X, 0);
            LD8(Z, 16);
            for (long k = 0; k < kn; k++) {
                const __m512 X = _mm512_loadu_ps(p + 32 * k), Z = _mm512_loadu_ps(p + 32 * k + 16);
                FMA8(X);
                FMA8(Z);
            }
            ST8(X, 0);
            ST8(Z, 16);
        }
        if (j16 > j32) {
            const float *p = pk + (j32 - j0) * kn;
            float *y0 = y + r0 * N + j32;
            __m512 aX, bX, cX, dX, eX, fX, gX, hX;
            LD8(X, 0);
            for (long k = 0; k < kn; k++) {
                const __m512 X = _mm512_loadu_ps(p + 16 * k);
                FMA8(X);
            }
            ST8(X, 0);
        }
        if (j1 > j16) {   /* the tail: 16 lanes, the ones past j1 masked off */
            const __mmask16 m = (__mmask16)((1u << (j1 - j16)) - 1);
            const float *p = pk + (j16 - j0) * kn;
            float *y0 = y + r0 * N + j16;
            __m512 aX, bX, cX, dX, eX, fX, gX, hX;
            LDM8(X);
            for (long k = 0; k < kn; k++) {
                const __m512 X = _mm512_loadu_ps(p + 16 * k);
                FMA8(X);
            }
            STM8(X);
        }
    }
    for (; r0 < rows; r0++) {
        const float *w0 = w + r0 * K + k0;
        float *y0 = y + r0 * N;
        for (long j = j0; j < j32; j += 32) {
            const float *p = pk + (j - j0) * kn;
            __m512 a0 = k0 ? _mm512_loadu_ps(y0 + j) : _mm512_setzero_ps();
            __m512 a1 = k0 ? _mm512_loadu_ps(y0 + j + 16) : _mm512_setzero_ps();
            for (long k = 0; k < kn; k++) {
                const __m512 v = _mm512_set1_ps(w0[k]);
                a0 = _mm512_fmadd_ps(v, _mm512_loadu_ps(p + 32 * k), a0);
                a1 = _mm512_fmadd_ps(v, _mm512_loadu_ps(p + 32 * k + 16), a1);
            }
            _mm512_storeu_ps(y0 + j, a0);
            _mm512_storeu_ps(y0 + j + 16, a1);
        }
        if (j16 > j32) {
            const float *p = pk + (j32 - j0) * kn;
            __m512 a0 = k0 ? _mm512_loadu_ps(y0 + j32) : _mm512_setzero_ps();
            for (long k = 0; k < kn; k++) a0 = _mm512_fmadd_ps(_mm512_set1_ps(w0[k]), _mm512_loadu_ps(p + 16 * k), a0);
            _mm512_storeu_ps(y0 + j32, a0);
        }
        if (j1 > j16) {
            const __mmask16 m = (__mmask16)((1u << (j1 - j16)) - 1);
            const float *p = pk + (j16 - j0) * kn;
            __m512 a0 = k0 ? _mm512_maskz_loadu_ps(m, y0 + j16) : _mm512_setzero_ps();
            for (long k = 0; k < kn; k++) a0 = _mm512_fmadd_ps(_mm512_set1_ps(w0[k]), _mm512_loadu_ps(p + 16 * k), a0);
            _mm512_mask_storeu_ps(y0 + j16, m, a0);
        }
    }
}
#undef FMA8
#undef LD8
#undef ST8
#undef LDM8
#undef STM8

/* col[k0:k1, j0:j1) into pk as chain_fma512_block reads it: 32-column strips, then one of 16,
 * then the rest (fewer than 16 columns) zero-padded to 16. */
static void chain_pack512(const float *col, long N, long j0, long j1, long k0, long k1, float *pk)
{
    const long kn = k1 - k0, j32 = j0 + (j1 - j0) / 32 * 32, j16 = j32 + (j1 - j32) / 16 * 16;
    for (long j = j0; j < j32; j += 32) {
        float *p = pk + (j - j0) * kn;
        for (long k = k0; k < k1; k++, p += 32) memcpy(p, col + k * N + j, 32 * sizeof(float));
    }
    if (j16 > j32) {
        float *p = pk + (j32 - j0) * kn;
        for (long k = k0; k < k1; k++, p += 16) memcpy(p, col + k * N + j32, 16 * sizeof(float));
    }
    if (j1 > j16) {   /* the last columns, a strip of 16 with zeros after them */
        float *p = pk + (j16 - j0) * kn;
        for (long k = k0; k < k1; k++, p += 16) {
            memcpy(p, col + k * N + j16, (size_t)(j1 - j16) * sizeof(float));
            memset(p + (j1 - j16), 0, (size_t)(16 - (j1 - j16)) * sizeof(float));
        }
    }
}

/* The instructions the chains run on: 2 AVX-512, 1 AVX2 + FMA, 0 scalar fmaf (the best this
 * CPU has, or what yq_f32_exact_force asked for; every one gives the same bytes). */
static int cpu_has_avx512(void)
{
    static int has = -1;   /* a cache of a CPU property, set once; racing writers write the same value */
    if (has < 0) {
        __builtin_cpu_init();
        has = __builtin_cpu_supports("avx512f") ? 1 : 0;
    }
    return has;
}
static int cpu_has_fma(void);
static int chain_isa(void)
{
    int best = cpu_has_avx512() && cpu_has_fma() ? 2 : cpu_has_fma() ? 1 : 0;
    return exact_forced >= 0 && exact_forced < best ? exact_forced : best;
}

static int cpu_has_fma(void)
{
    static int has = -1;   /* a cache of a CPU property, set once; racing writers write the same value */
    if (has < 0) {
        __builtin_cpu_init();
        has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 1 : 0;
    }
    return has;
}
#endif

/* Columns [jb, je) of the rows; pk: room for one packed panel (CHAIN_PANEL floats). */
static void chain_rows(const float *w, long K, const float *col, long N, float *y, int rows, long jb, long je,
                       float *pk)
{
#if defined(__GNUC__) && defined(__x86_64__)
    const int isa = chain_isa();
#else
    const int isa = 0;
    (void)pk;
#endif
    for (long k0 = 0; k0 < K; k0 += CHAIN_KB) {
        long k1 = k0 + CHAIN_KB < K ? k0 + CHAIN_KB : K;
        for (long j0 = jb; j0 < je; j0 += CHAIN_NB) {
            long j1 = j0 + CHAIN_NB < je ? j0 + CHAIN_NB : je;
#if defined(__GNUC__) && defined(__x86_64__)
            if (isa == 2) {
                chain_pack512(col, N, j0, j1, k0, k1, pk);
                chain_fma512_block(w, K, N, y, rows, j0, j1, k0, k1, pk);
                continue;
            }
            if (isa == 1) {
                chain_pack(col, N, j0, j0 + (j1 - j0) / 16 * 16, k0, k1, pk);
                chain_fma_block(w, K, col, N, y, rows, j0, j1, k0, k1, pk);
                continue;
            }
#endif
            for (int r0 = 0; r0 < rows; r0 += 4)
                chain_scalar(w + r0 * K, K, col, N, y + r0 * N, rows - r0 < 4 ? rows - r0 : 4, j0, j1, k0, k1);
        }
    }
}

/* chain_rows over the host's cores, up to CHAIN_THREADS threads (OpenMP's, the pool the int8
 * engine runs on too: two pools would spin against each other): the rows cut in blocks of 4,
 * or where there are fewer blocks than threads and at least 4 strips of 16 columns a thread,
 * the columns in strips (each thread packs only its own panels).  Every output is still its
 * one chain, so the bytes do not depend on the cut; small convs (under CHAIN_PAR_FLOPS) stay
 * on the calling thread. */
typedef struct chain_job {
    const float *w, *col;
    float *y, *pk;
    long K, N, j0, j1;
    int r0, r1;
} chain_job;

static void chain_job_run(const chain_job *j)
{
    chain_rows(j->w + (long)j->r0 * j->K, j->K, j->col, j->N, j->y + (long)j->r0 * j->N, j->r1 - j->r0, j->j0, j->j1,
               j->pk);
}

static int host_threads(void)
{
    int c = omp_get_max_threads();
    return c < 1 ? 1 : c > CHAIN_THREADS ? CHAIN_THREADS : c;
}

/* panels: CHAIN_THREADS x CHAIN_PANEL floats. */
static void chain_rows_par(const float *w, long K, const float *col, long N, float *y, int rows, float *panels)
{
    int nt = host_threads(), blocks = (rows + 3) / 4;
    long strips = N / 16;
    int by_cols = blocks < nt && strips >= 4L * nt;   /* rows first: faster where both feed every thread */
    if (!by_cols && nt > blocks) nt = blocks;
    if (nt < 2 || 2.0 * rows * K * N < CHAIN_PAR_FLOPS) {
        chain_rows(w, K, col, N, y, rows, 0, N, panels);
        return;
    }
    chain_job job[CHAIN_THREADS];
    for (int t = 0; t < nt; t++) {
        if (by_cols) {
            job[t] = (chain_job){ w, col, y, panels + t * CHAIN_PANEL, K, N, 16 * (strips * t / nt),
                                  t == nt - 1 ? N : 16 * (strips * (t + 1) / nt), 0, rows };
        } else {
            job[t] = (chain_job){ w, col, y, panels + t * CHAIN_PANEL, K, N, 0, N, 4 * (blocks * t / nt),
                                  4 * (blocks * (t + 1) / nt) };
            if (job[t].r1 > rows) job[t].r1 = rows;
        }
    }
#pragma omp parallel for num_threads(nt) schedule(static, 1)
    for (int t = 0; t < nt; t++) chain_job_run(&job[t]);
}

/* dst[i] = src[2 i + q] for i < n, 0 where 2 i + q falls outside [0, w) (src: a row of w floats) */
ALWAYS_INLINE void dw_take_phase(const float *src, int w, int q, float *dst, int n)
{
    int i0 = 0, i1 = n;
    while (i0 < n && 2 * i0 + q < 0) dst[i0++] = 0.f;
    while (i1 > i0 && 2 * (i1 - 1) + q >= w) dst[--i1] = 0.f;
    if (i1 > i0) strided_copy(dst + i0, src + 2 * i0 + q, i1 - i0, 2, w - (2 * i0 + q));
}

#if defined(__GNUC__) && defined(__x86_64__)
#define YQ_TAKE512 1
/* dst[i] = src[2 i + q] for i < n, 0 where 2 i + q falls outside [0, w): 16 at a time */
__attribute__((target("avx512f"))) static void take_phase512(const float *src, int w, int q, float *dst, int n)
{
    const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    int i = 0;
    for (; i < n && 2 * i + q < 0; i++) dst[i] = 0.f;
    for (; i + 16 <= n && 2 * i + q + 32 <= w; i += 16) {
        const float *sp = src + 2 * i + q;
        _mm512_storeu_ps(dst + i, _mm512_permutex2var_ps(_mm512_loadu_ps(sp), ev, _mm512_loadu_ps(sp + 16)));
    }
    /* the rest 16 at a time, the loads masked at the row's end (past it: zeros) and the store
     * at n (a scalar tail here was half of a 160-wide row's split) */
    for (; i < n; i += 16) {
        const int rem = n - i < 16 ? n - i : 16, avail = w - (2 * i + q);
        const __mmask16 ms = rem == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << rem) - 1);
        if (avail <= 0) {
            _mm512_mask_storeu_ps(dst + i, ms, _mm512_setzero_ps());
            continue;
        }
        const __mmask16 la = avail >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << avail) - 1);
        const __mmask16 lb = avail >= 32 ? (__mmask16)0xFFFF : avail <= 16 ? (__mmask16)0 : (__mmask16)((1u << (avail - 16)) - 1);
        const float *sp = src + 2 * i + q;
        const __m512 a = _mm512_maskz_loadu_ps(la, sp), b = lb ? _mm512_maskz_loadu_ps(lb, sp + 16) : _mm512_setzero_ps();
        _mm512_mask_storeu_ps(dst + i, ms, _mm512_permutex2var_ps(a, ev, b));
    }
}

#endif

/* dst[i] = src[2 i + q] for i < n, 0 where 2 i + q falls outside [0, w): im2col's rows of a
 * stride-2 conv */
static void take_phase(const float *src, int w, int q, float *dst, int n)
{
#ifdef YQ_TAKE512
    if (chain_isa() == 2) {
        take_phase512(src, w, q, dst, n);
        return;
    }
#endif
    for (int i = 0; i < n; i++) dst[i] = 2 * i + q >= 0 && 2 * i + q < w ? src[2 * i + q] : 0.f;
}

/* The padded plane of a channel as its even and odd columns (Hp rows of Wh each), for a
 * stride-2 depthwise conv: every tap then reads a contiguous run (tap kx of output row oy is
 * phase kx % 2 of padded row 2 oy + ky, from column kx / 2).  v512: the AVX-512 split. */
ALWAYS_INLINE void dw_split_planes(const float *x, int h, int w, int p, int Hp, int Wh, float *ev, float *od, int v512)
{
    for (int r = 0; r < Hp; r++)   /* the padding rows (the split writes every column of the others) */
        if (r < p || r >= h + p) {
            memset(ev + (long)r * Wh, 0, sizeof *ev * (size_t)Wh);
            memset(od + (long)r * Wh, 0, sizeof *od * (size_t)Wh);
        }
    for (int r = 0; r < h; r++) {
        float *e = ev + (long)(r + p) * Wh, *o = od + (long)(r + p) * Wh;
#ifdef YQ_TAKE512
        if (v512) {
            take_phase512(x + (long)r * w, w, -p, e, Wh);
            take_phase512(x + (long)r * w, w, 1 - p, o, Wh);
            continue;
        }
#endif
        (void)v512;
        dw_take_phase(x + (long)r * w, w, -p, e, Wh);
        dw_take_phase(x + (long)r * w, w, 1 - p, o, Wh);
    }
}

/* One channel of a depthwise conv, exactly as the im2col path computes it (each output one
 * fmaf chain over (ky, kx) from +0, the padding taps' zeros included): the input copied into a
 * zero-padded plane (stride 2: its even and odd columns), then per output row the taps in
 * order over the whole row, the row's chains advancing together (vectorized lane by lane:
 * the same bytes; dw_exact_512 keeps them in registers).  plane: (h + 2p) x (w + 2p + 1) + ow
 * floats. */
ALWAYS_INLINE void dw_exact_body(const float *x, int h, int w, int k, int s, int p, int oh, int ow, const float *wk,
                                 float *y, float *plane)
{
    const int Wp = w + 2 * p, Hp = h + 2 * p;
    if (s == 2) {
        /* the even and odd column planes (the strided gather below was 80% of a stride-2
         * depthwise conv's time) */
        const int Wh = (Wp + 1) / 2;
        float *ev = plane, *od = plane + (long)Hp * Wh;
        dw_split_planes(x, h, w, p, Hp, Wh, ev, od, 0);
        for (int oy = 0; oy < oh; oy++) {
            float *yr = y + (long)oy * ow;
            for (int j = 0; j < ow; j++) yr[j] = 0.f;
            for (int ky = 0; ky < k; ky++) {
                const long ro = (long)(oy * 2 + ky) * Wh;
                for (int kx = 0; kx < k; kx++) {
                    const float a = wk[ky * k + kx];
                    const float *src = (kx & 1 ? od : ev) + ro + kx / 2;
#pragma omp simd
                    for (int j = 0; j < ow; j++) yr[j] = fmaf(a, src[j], yr[j]);
                }
            }
        }
        return;
    }
    float *tmp = plane + (long)Hp * Wp;
    memset(plane, 0, sizeof *plane * (size_t)Hp * (size_t)Wp);
    for (int r = 0; r < h; r++) memcpy(plane + (long)(r + p) * Wp + p, x + (long)r * w, sizeof *x * (size_t)w);
    for (int oy = 0; oy < oh; oy++) {
        float *yr = y + (long)oy * ow;
        for (int j = 0; j < ow; j++) yr[j] = 0.f;
        for (int ky = 0; ky < k; ky++) {
            const float *row = plane + (long)(oy * s + ky) * Wp;
            for (int kx = 0; kx < k; kx++) {
                const float a = wk[ky * k + kx];
                const float *src = row + kx;
                if (s != 1) {
                    for (int j = 0; j < ow; j++) tmp[j] = src[(long)j * s];
                    src = tmp;
                }
#pragma omp simd
                for (int j = 0; j < ow; j++) yr[j] = fmaf(a, src[j], yr[j]);
            }
        }
    }
}

#if defined(__GNUC__) && defined(__x86_64__)
/* The conv's epilogue on 16 chains (act 1: linear, 2: leaky; 0: none, the chains as they
 * are): bias_act's operations, an add, then the leaky select of v and .1f * v */
__attribute__((target("avx512f"), always_inline)) static inline __m512 dw_epi512(__m512 acc, float bias, int act)
{
    if (!act) return acc;
    const __m512 v = _mm512_add_ps(acc, _mm512_set1_ps(bias));
    if (act == 1) return v;
    const __mmask16 pos = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ);
    return _mm512_mask_blend_ps(pos, _mm512_mul_ps(v, _mm512_set1_ps(.1f)), v);
}

/* Output rows of a depthwise conv whose taps read contiguous runs: tap (ky, kx) of output j
 * of row oy reads phase kx % S of the padded plane at row oy S + ky, column kx / S + j (S 1:
 * the plane itself, ph0 == ph1; S 2: its even and odd columns), ld floats a row.  Each
 * output's chain (from +0, the taps in (ky, kx) order, one fused multiply-add each: fmaf's
 * bits) stays in a register over the k x k taps, 64 outputs at a time; kept in y between
 * taps instead, every tap waited for the last one's store and load. */
__attribute__((target("avx512f"), always_inline)) static inline void dw_rows512_sk(const float *ph0, const float *ph1,
                                                                                  long ld, const int S, const int k,
                                                                                  int oh, int ow, const float *wk,
                                                                                  float *y, float bias, int act)
{
    const int jf = ow / 64 * 64;   /* whole blocks of 64 outputs end here */
    for (int oy = 0; oy < oh; oy++) {
        float *yr = y + (long)oy * ow;
        for (int j = 0; j < jf; j += 64) {
            __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
            for (int ky = 0; ky < k; ky++) {
                const long ro = (long)(oy * S + ky) * ld + j;
                for (int kx = 0; kx < k; kx++) {
                    const __m512 a = _mm512_set1_ps(wk[ky * k + kx]);
                    const float *src = (S == 2 && (kx & 1) ? ph1 : ph0) + ro + kx / S;
                    acc0 = _mm512_fmadd_ps(a, _mm512_loadu_ps(src), acc0);
                    acc1 = _mm512_fmadd_ps(a, _mm512_loadu_ps(src + 16), acc1);
                    acc2 = _mm512_fmadd_ps(a, _mm512_loadu_ps(src + 32), acc2);
                    acc3 = _mm512_fmadd_ps(a, _mm512_loadu_ps(src + 48), acc3);
                }
            }
            _mm512_storeu_ps(yr + j, dw_epi512(acc0, bias, act));
            _mm512_storeu_ps(yr + j + 16, dw_epi512(acc1, bias, act));
            _mm512_storeu_ps(yr + j + 32, dw_epi512(acc2, bias, act));
            _mm512_storeu_ps(yr + j + 48, dw_epi512(acc3, bias, act));
        }
        /* the last outputs (fewer than 64), 16 at a time, the last strip masked */
        for (int j = jf; j < ow; j += 16) {
            const int c = ow - j;
            const __mmask16 m = c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << c) - 1);
            __m512 acc = _mm512_setzero_ps();
            for (int ky = 0; ky < k; ky++) {
                const long ro = (long)(oy * S + ky) * ld + j;
                for (int kx = 0; kx < k; kx++) {
                    const float *src = (S == 2 && (kx & 1) ? ph1 : ph0) + ro + kx / S;
                    acc = _mm512_fmadd_ps(_mm512_set1_ps(wk[ky * k + kx]), _mm512_maskz_loadu_ps(m, src), acc);
                }
            }
            _mm512_mask_storeu_ps(yr + j, m, dw_epi512(acc, bias, act));
        }
    }
}

/* act: dw_epi512's, the conv's bias and activation applied on the way out.  S and k are
 * constants in each call of dw_rows512_sk: a tap's column is kx / S, whose division by a
 * variable S was a third of the loop's time. */
__attribute__((target("avx512f"))) static void dw_rows512(const float *ph0, const float *ph1, long ld, int S, int k,
                                                         int oh, int ow, const float *wk, float *y, float bias, int act)
{
    if (S == 1 && k == 3) dw_rows512_sk(ph0, ph1, ld, 1, 3, oh, ow, wk, y, bias, act);
    else if (S == 2 && k == 3) dw_rows512_sk(ph0, ph1, ld, 2, 3, oh, ow, wk, y, bias, act);
    else if (S == 1) dw_rows512_sk(ph0, ph1, ld, 1, k, oh, ow, wk, y, bias, act);
    else dw_rows512_sk(ph0, ph1, ld, 2, k, oh, ow, wk, y, bias, act);
}

/* act (dw_epi512's) is applied here for strides 1 and 2 only (dw_epi_fused) */
__attribute__((target("avx512f,fma"))) static void dw_exact_512(const float *x, int h, int w, int k, int s, int p, int oh,
                                                               int ow, const float *wk, float *y, float *plane,
                                                               float bias, int act)
{
    const int Wp = w + 2 * p, Hp = h + 2 * p;
    if (s == 2) {   /* dw_exact_body's phase planes, then the rows in registers */
        const int Wh = (Wp + 1) / 2;
        float *ev = plane, *od = plane + (long)Hp * Wh;
        dw_split_planes(x, h, w, p, Hp, Wh, ev, od, 1);
        dw_rows512(ev, od, Wh, 2, k, oh, ow, wk, y, bias, act);
        return;
    }
    if (s == 1) {   /* the padded plane (only its border zeroed), then the rows in registers */
        memset(plane, 0, sizeof *plane * (size_t)p * (size_t)Wp);
        memset(plane + (long)(h + p) * Wp, 0, sizeof *plane * (size_t)p * (size_t)Wp);
        for (int r = 0; r < h; r++) {
            float *row = plane + (long)(r + p) * Wp;
            memset(row, 0, sizeof *row * (size_t)p);
            memcpy(row + p, x + (long)r * w, sizeof *x * (size_t)w);
            memset(row + p + w, 0, sizeof *row * (size_t)p);
        }
        dw_rows512(plane, plane, Wp, 1, k, oh, ow, wk, y, bias, act);
        return;
    }
    dw_exact_body(x, h, w, k, s, p, oh, ow, wk, y, plane);
}
__attribute__((target("avx2,fma"))) static void dw_exact_fma(const float *x, int h, int w, int k, int s, int p, int oh,
                                                            int ow, const float *wk, float *y, float *plane)
{
    dw_exact_body(x, h, w, k, s, p, oh, ow, wk, y, plane);
}
#endif
/* act: 0, or (where dw_epi_fused says so) the conv's linear or leaky activation with bias,
 * applied as the rows are stored */
static void dw_exact_channel(const float *x, int h, int w, int k, int s, int p, int oh, int ow, const float *wk,
                             float *y, float *plane, float bias, int act)
{
#if defined(__GNUC__) && defined(__x86_64__)
    const int isa = chain_isa();
    if (isa == 2) { dw_exact_512(x, h, w, k, s, p, oh, ow, wk, y, plane, bias, act); return; }
    if (isa == 1) { dw_exact_fma(x, h, w, k, s, p, oh, ow, wk, y, plane); return; }
#endif
    (void)bias;
    (void)act;
    dw_exact_body(x, h, w, k, s, p, oh, ow, wk, y, plane);
}

/* The epilogue code (dw_epi512's act) a depthwise conv's rows apply as they store them, or 0
 * where the separate bias-and-activation pass does: AVX-512 rows (strides 1 and 2), linear or
 * leaky (a pass over the output less: a sixth of a 160x160 one's time) */
/* dw_epi512's code for an activation: 1 linear, 2 leaky, 0 any other (a pass after the rows) */
static int epi_code(yq_act act) { return act == YQ_ACT_LINEAR ? 1 : act == YQ_ACT_LEAKY ? 2 : 0; }

static int dw_epi_fused(const yq_node *n)
{
#if defined(__GNUC__) && defined(__x86_64__)
    const int s = n->p.conv.stride;
    if (chain_isa() == 2 && (s == 1 || s == 2)) return epi_code(n->act);
#endif
    (void)n;
    return 0;
}

#if defined(__GNUC__) && defined(__x86_64__)
/* A dense conv of few taps (K = ci k k <= SMALLK_MAX: a network's first conv) on AVX-512,
 * without im2col's matrix or the chains' packing: the input is laid out once as zero-padded
 * planes (stride 2: each plane's even and odd columns), where every tap of an output row
 * reads one contiguous run (rows[k]); then 8 filters x 32 columns in registers, each output's
 * fmaf chain over k from +0 in im2col's order (the chain kernel's bytes).  Bias and a linear
 * or leaky activation are applied as the rows are stored (act: dw_epi512's codes); else the
 * caller's pass does. */
#define SMALLK_MAX 64
#define SK_FMA(r)                                                                \
    do {                                                                         \
        const __m512 v = _mm512_set1_ps(wf[(r) * K + k]);                       \
        a##r##0 = _mm512_fmadd_ps(v, x0, a##r##0);                               \
        a##r##1 = _mm512_fmadd_ps(v, x1, a##r##1);                               \
    } while (0)
#define SK_ST(r)                                                                                          \
    do {                                                                                                  \
        float *yr = yrow + (long)(f0 + (r)) * ldy + j;                                                    \
        const float b = bias ? bias[f0 + (r)] : 0.f;                                                      \
        _mm512_mask_storeu_ps(yr, m0, dw_epi512(a##r##0, b, act));                                        \
        if (m1) _mm512_mask_storeu_ps(yr + 16, m1, dw_epi512(a##r##1, b, act));                           \
    } while (0)
__attribute__((target("avx512f"))) static void smallk_row512(const float *const *rows, long K, int ow, const float *w,
                                                            int F, float *yrow, long ldy, const float *bias, int act)
{
    for (int j = 0; j < ow; j += 32) {
        const int c = ow - j;
        const __mmask16 m0 = c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << c) - 1);
        const __mmask16 m1 = c >= 32 ? (__mmask16)0xFFFF : c <= 16 ? (__mmask16)0 : (__mmask16)((1u << (c - 16)) - 1);
        int f0 = 0;
        for (; f0 + 8 <= F; f0 += 8) {   /* 8 filters: 16 accumulators, named (an array was kept in memory) */
            const float *wf = w + (long)f0 * K;
            __m512 a00 = _mm512_setzero_ps(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00,
                   a31 = a00, a40 = a00, a41 = a00, a50 = a00, a51 = a00, a60 = a00, a61 = a00, a70 = a00, a71 = a00;
            for (long k = 0; k < K; k++) {
                const __m512 x0 = _mm512_maskz_loadu_ps(m0, rows[k] + j), x1 = _mm512_maskz_loadu_ps(m1, rows[k] + j + 16);
                SK_FMA(0); SK_FMA(1); SK_FMA(2); SK_FMA(3); SK_FMA(4); SK_FMA(5); SK_FMA(6); SK_FMA(7);
            }
            SK_ST(0); SK_ST(1); SK_ST(2); SK_ST(3); SK_ST(4); SK_ST(5); SK_ST(6); SK_ST(7);
        }
        for (; f0 < F; f0++) {           /* the filters past the last group of 8, one at a time */
            const float *wf = w + (long)f0 * K;
            __m512 a00 = _mm512_setzero_ps(), a01 = a00;
            for (long k = 0; k < K; k++) {
                const __m512 x0 = _mm512_maskz_loadu_ps(m0, rows[k] + j), x1 = _mm512_maskz_loadu_ps(m1, rows[k] + j + 16);
                SK_FMA(0);
            }
            SK_ST(0);
        }
    }
}
#undef SK_FMA
#undef SK_ST
#endif

/* Floats of a small-K conv's padded input planes (smallk_conv). */
static long smallk_planes(const yq_graph *g, const yq_node *n)
{
    const yq_conv_p *c = &n->p.conv;
    yq_shape is = yq_node_in_shape(g, n);
    const long Hp = is.h + 2L * c->pad, Wp = is.w + 2L * c->pad;
    return (long)is.c * Hp * (c->stride == 2 ? 2 * ((Wp + 1) / 2) : Wp);
}

/* Whether yq_f32_conv_exact takes the small-K path for n (smallk_row512): its planes fit
 * where im2col's matrix would go. */
static int smallk_ok(const yq_graph *g, const yq_node *n)
{
#if defined(__GNUC__) && defined(__x86_64__)
    const yq_conv_p *c = &n->p.conv;
    yq_shape is = yq_node_in_shape(g, n);
    long K = (long)is.c * c->size * c->size;
    return chain_isa() == 2 && c->groups == 1 && !is_pointwise(c) && K <= SMALLK_MAX &&
           (c->stride == 1 || c->stride == 2) && smallk_planes(g, n) <= col_floats(g, n);
#else
    (void)g;
    (void)n;
    return 0;
#endif
}

/* One image of a small-K conv (smallk_ok): the padded planes into work, then the output
 * rows over the threads; epi: the epilogue its rows apply (0: none, the caller's pass). */
static void smallk_conv(const yq_graph *g, const yq_node *n, const float *w, const float *x, float *y, float *work,
                        int epi)
{
#if defined(__GNUC__) && defined(__x86_64__)
    const yq_conv_p *c = &n->p.conv;
    yq_shape is = yq_node_in_shape(g, n);
    const int k = c->size, s = c->stride, p = c->pad, oh = n->out.h, ow = n->out.w, F = c->filters;
    const int Hp = is.h + 2 * p, Wp = is.w + 2 * p, Wh = (Wp + 1) / 2;
    const long K = (long)is.c * k * k, N = (long)oh * ow;
    const long pl = s == 2 ? 2L * Hp * Wh : (long)Hp * Wp;   /* one channel's planes */
    for (int ci = 0; ci < is.c; ci++) {
        const float *xc = x + (long)ci * is.h * is.w;
        float *q = work + ci * pl;
        if (s == 2) {
            dw_split_planes(xc, is.h, is.w, p, Hp, Wh, q, q + (long)Hp * Wh, 1);
            continue;
        }
        memset(q, 0, sizeof *q * (size_t)pl);
        for (int r = 0; r < is.h; r++) memcpy(q + (long)(r + p) * Wp + p, xc + (long)r * is.w, sizeof *q * (size_t)is.w);
    }
    const int nt = host_threads();
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && F * N * K >= 65536)
    for (int oy = 0; oy < oh; oy++) {
        const float *rows[SMALLK_MAX];
        int r = 0;
        for (int ci = 0; ci < is.c; ci++)   /* im2col's row (ci, ky, kx) of output row oy: a run of a plane */
            for (int ky = 0; ky < k; ky++)
                for (int kx = 0; kx < k; kx++) {
                    const float *q = work + ci * pl;
                    rows[r++] = s == 2 ? q + (kx & 1) * (long)Hp * Wh + (long)(2 * oy + ky) * Wh + kx / 2
                                       : q + (long)(oy + ky) * Wp + kx;
                }
        smallk_row512(rows, K, ow, w, F, y + (long)oy * ow, N, epi ? n->b : NULL, epi);
    }
#else
    (void)g; (void)n; (void)w; (void)x; (void)y; (void)work; (void)epi;
#endif
}

/* Floats of dw_exact_channel's plane, or 0 when n is not a depthwise conv or the plane would
 * not fit in one thread's panel (then the im2col path runs). */
static long dw_exact_plane(const yq_graph *g, const yq_node *n)
{
    const yq_conv_p *c = &n->p.conv;
    yq_shape is = yq_node_in_shape(g, n);
    if (c->groups != is.c || c->filters != is.c || c->groups < 2) return 0;
    /* the padded plane (stride 2: its two column phases, a column more) and a row */
    long f = (long)(is.h + 2 * c->pad) * (is.w + 2 * c->pad + 1) + n->out.w;
    return f <= CHAIN_PANEL ? f : 0;
}

/* x[i] = q[i] * scale, i < n (yq_dequantize's values): the int8 engine's conversion on this
 * thread, with the instructions the exact convs use (at most those yq_f32_exact_force allows;
 * its AVX-512 form only where the int8 engine would take it) */
static void dequant_channel(const void *q, yq_dtype t, long n, float scale, float *x)
{
    const int ci = chain_isa();
    const yq_isa isa = ci == 2 && yq_cpu_isa() == YQ_ISA_AVX512 ? YQ_ISA_AVX512 : ci >= 1 ? YQ_ISA_AVX2 : YQ_ISA_REF;
    yq_cpu8_dequantize(isa, 1, q, t, n, scale, x);
}

int yq_f32_conv_exact_takes_q(const yq_graph *g, const yq_node *n)
{
    if (n->op != YQ_OP_CONV) return 0;
    yq_shape is = yq_node_in_shape(g, n);
    long f = dw_exact_plane(g, n);
    return f && ((f + 15) & ~15L) + (long)is.h * is.w <= CHAIN_PANEL;
}

/* yq_f32_conv_exact; with inq set, its input quantized (qt: uint8 or int8, times scale), which
 * only a depthwise conv that yq_f32_conv_exact_takes_q accepts reads: each channel is
 * dequantized beside its plane in the thread's panel. */
static void conv_exact(const yq_graph *g, const yq_node *n, const float *w, const float *in, const void *inq,
                       yq_dtype qt, float scale, float *out, float *work, int batch)
{
    if (!w) w = n->w;
    yq_shape is = yq_node_in_shape(g, n);
    const yq_conv_p *c = &n->p.conv;
    int G = c->groups, M = c->filters / G, cg = is.c / G, K = cg * c->size * c->size;
    long N = (long)n->out.h * n->out.w;
    long in_sz = yq_shape_size(is), out_sz = yq_shape_size(n->out), hw = (long)is.h * is.w;
    int pw = is_pointwise(c);
    float *panels = work + col_floats(g, n);
    const long plane = (dw_exact_plane(g, n) + 15) & ~15L;
    const int sk = !plane && in && smallk_ok(g, n);
    /* the rows apply the bias and a linear or leaky activation as they store */
    const int epi = plane ? dw_epi_fused(n) : sk ? epi_code(n->act) : 0;
    for (int b = 0; b < batch; b++) {
        const float *x = in ? in + b * in_sz : NULL;
        float *y = out + b * out_sz;
        if (plane) {   /* depthwise: a channel a job, over the threads (each output still its chain) */
            const int nt = host_threads();
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && (long)G * N * c->size * c->size >= 65536)
            for (int gi = 0; gi < G; gi++) {
                float *panel = panels + (long)omp_get_thread_num() * CHAIN_PANEL;
                const float *xc = x ? x + (long)gi * hw : panel + plane;
                if (!x) dequant_channel((const char *)inq + (b * in_sz + (long)gi * hw), qt, hw, scale, panel + plane);
                dw_exact_channel(xc, is.h, is.w, c->size, c->stride, c->pad, n->out.h, n->out.w, w + (long)gi * K,
                                 y + (long)gi * N, panel, n->b[gi], epi);
            }
        } else if (sk) {
            smallk_conv(g, n, w, x, y, work, epi);
        } else
        for (int gi = 0; gi < G; gi++) {
            const float *col = x + (long)gi * cg * is.h * is.w;
            if (!pw) {
                im2col(col, cg, is.h, is.w, c->size, c->stride, c->pad, n->out.h, n->out.w, work, 1);
                col = work;
            }
            chain_rows_par(w + (long)gi * M * K, K, col, N, y + (long)gi * M * N, M, panels);
        }
        /* bias and activation, the filters over the threads (a table-free activation in double
         * per value: the bulk of a small conv's time) */
        if (epi) continue;
#pragma omp parallel for schedule(static) if ((long)c->filters * N >= 32768)
        for (int o = 0; o < c->filters; o++) {
            float *yo = y + (long)o * N, bo = n->b[o];
            /* the common activations with their case fixed, so act_exact inlines to it */
            switch (n->act) {
            /* linear and leaky: bias_act's vectors are act_exact's operations (an add, then
             * the leaky select of x and .1f * x), its scalar tail act_exact's forms */
            case YQ_ACT_LINEAR: case YQ_ACT_LEAKY: bias_act(yo, N, bo, n->act); break;
            default: for (long j = 0; j < N; j++) yo[j] = yq_f32_act_exact(yo[j] + bo, n->act); break;
            }
        }
    }
}

void yq_f32_conv_exact(const yq_graph *g, const yq_node *n, const float *w, const float *in, float *out, float *work,
                       int batch)
{
    conv_exact(g, n, w, in, NULL, YQ_F32, 0.f, out, work, batch);
}

void yq_f32_conv_exact_q(const yq_graph *g, const yq_node *n, const float *w, const void *in, yq_dtype dt, float scale,
                         float *out, float *work, int batch)
{
    conv_exact(g, n, w, NULL, in, dt, scale, out, work, batch);
}

/* The max over a size x size window, scanned row by row with `v > m` from -FLT_MAX (so
 * NaNs and -inf never win, and of equal values, +0 and -0, the first one scanned does). */
static void maxpool_direct(const float *src, yq_shape is, const yq_pool_p *p, int off, yq_shape os, float *dst)
{
    for (int oy = 0; oy < os.h; oy++)
        for (int ox = 0; ox < os.w; ox++) {
            float m = -FLT_MAX;
            for (int ky = 0; ky < p->size; ky++) {
                int y = off + oy * p->stride + ky;
                if (y < 0 || y >= is.h) continue;
                for (int kx = 0; kx < p->size; kx++) {
                    int x = off + ox * p->stride + kx;
                    if (x < 0 || x >= is.w) continue;
                    float v = src[(long)y * is.w + x];
                    if (v > m) m = v;
                }
            }
            dst[(long)oy * os.w + ox] = m;
        }
}

/* The same max in two passes, over each row's window and then down the column of row
 * maxima: 2 x size comparisons per output instead of size^2.  It returns the very value
 * maxpool_direct does: the max of the non-NaN values and -FLT_MAX, and among equal zeros
 * the first in row-major scan order (the first row holding the max, and in it the first
 * such element).  rows: room for MAXPOOL_ROWS floats. */
#define MAXPOOL_ROWS 4096
static void maxpool_separable(const float *src, yq_shape is, const yq_pool_p *p, int off, yq_shape os, float *dst,
                              float *rows)
{
    int k = p->size, s = p->stride;
    int band = ((MAXPOOL_ROWS / os.w) - k) / s + 1;   /* output rows per pass; >= 1 (checked by the caller) */
    for (int oy0 = 0; oy0 < os.h; oy0 += band) {
        int oy1 = oy0 + band < os.h ? oy0 + band : os.h;
        int y0 = off + oy0 * s, y1 = off + (oy1 - 1) * s + k;   /* input rows [y0, y1) */
        for (int y = y0 < 0 ? 0 : y0; y < y1 && y < is.h; y++) {
            const float *in = src + (long)y * is.w;
            float *r = rows + (long)(y - y0) * os.w;
            for (int ox = 0; ox < os.w; ox++) {
                float m = -FLT_MAX;
                for (int kx = 0; kx < k; kx++) {
                    int x = off + ox * s + kx;
                    if (x < 0 || x >= is.w) continue;
                    float v = in[x];
                    if (v > m) m = v;
                }
                r[ox] = m;
            }
        }
        for (int oy = oy0; oy < oy1; oy++) {
            float *o = dst + (long)oy * os.w;
            for (int ox = 0; ox < os.w; ox++) o[ox] = -FLT_MAX;
            for (int ky = 0; ky < k; ky++) {
                int y = off + oy * s + ky;
                if (y < 0 || y >= is.h) continue;
                const float *r = rows + (long)(y - y0) * os.w;
                for (int ox = 0; ox < os.w; ox++)
                    if (r[ox] > o[ox]) o[ox] = r[ox];
            }
        }
    }
}

void yq_f32_maxpool(yq_shape is, const yq_pool_p *p, yq_shape os, const float *in, float *out, int batch)
{
    int off = -p->pad / 2;   /* darknet: the window starts pad/2 before the image */
    float rows[MAXPOOL_ROWS];
    int separable = p->size >= 3 && (long)os.w * p->size <= MAXPOOL_ROWS;
    for (int b = 0; b < batch; b++)
        for (int c = 0; c < is.c; c++) {
            const float *src = in + ((long)b * is.c + c) * is.h * is.w;
            float *dst = out + ((long)b * os.c + c) * os.h * os.w;
            if (separable) maxpool_separable(src, is, p, off, os, dst, rows);
            else maxpool_direct(src, is, p, off, os, dst);
        }
}

void yq_f32_upsample(yq_shape is, int s, const float *in, float *out, int batch)
{
    int ow = is.w * s;
    for (long bc = 0; bc < (long)batch * is.c; bc++) {
        const float *src = in + bc * is.h * is.w;
        float *dst = out + bc * is.h * is.w * s * s;
        for (int y = 0; y < is.h * s; y++)
            for (int x = 0; x < ow; x++) dst[(long)y * ow + x] = src[(long)(y / s) * is.w + x / s];
    }
}

void yq_f32_shortcut(long n_per_image, const float *a, const float *b, yq_act act, float *out, int batch)
{
    long n = n_per_image * batch;
    for (long i = 0; i < n; i++) out[i] = a[i] + b[i];
    yq_f32_activate(out, n, act);
}

void yq_f32_route_copy(yq_shape ss, const yq_route_p *r, const float *src, yq_shape ds, int c_off, float *dst, int batch)
{
    int part = ss.c / r->groups;
    long plane = (long)ss.h * ss.w;
    for (int b = 0; b < batch; b++)
        memcpy(dst + ((long)b * ds.c + c_off) * plane,
               src + ((long)b * ss.c + (long)r->group_id * part) * plane,
               sizeof(float) * part * plane);
}
