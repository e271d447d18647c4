/* FP32 CPU kernels.  Conv is im2col + OpenBLAS sgemm per group; depthwise is a
 * direct loop (sgemm on one channel would be all overhead). */
#include <float.h>
#include <math.h>
#include <string.h>
#include <cblas.h>
#include "kernels/cpu_fp32.h"

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

long yq_f32_conv_work(const yq_graph *g, const yq_node *n)
{
    if (n->op != YQ_OP_CONV || is_depthwise(g, n) || is_pointwise(&n->p.conv)) return 0;
    yq_shape is = yq_node_in_shape(g, n);
    const yq_conv_p *c = &n->p.conv;
    return (long)(is.c / c->groups) * c->size * c->size * n->out.h * n->out.w;
}

/* col[(ch*k + ky)*k + kx][oy*ow + ox], zero outside the image. */
static void im2col(const float *in, int ch, int h, int w, int k, int stride, int pad, int oh, int ow, float *col)
{
    for (int c = 0; c < ch; c++)
        for (int ky = 0; ky < k; ky++)
            for (int kx = 0; kx < k; kx++) {
                float *dst = col + ((long)(c * k + ky) * k + kx) * oh * ow;
                const float *src = in + (long)c * h * w;
                for (int oy = 0; oy < oh; oy++) {
                    int y = oy * stride + ky - pad;
                    if (y < 0 || y >= h) {
                        memset(dst + (long)oy * ow, 0, sizeof(float) * ow);
                        continue;
                    }
                    for (int ox = 0; ox < ow; ox++) {
                        int x = ox * stride + kx - pad;
                        dst[(long)oy * ow + ox] = (x >= 0 && x < w) ? src[(long)y * w + x] : 0.f;
                    }
                }
            }
}

static void depthwise(const yq_node *n, yq_shape is, const float *in, float *out)
{
    const yq_conv_p *c = &n->p.conv;
    int k = c->size, oh = n->out.h, ow = n->out.w;
    for (int ch = 0; ch < is.c; ch++) {
        const float *src = in + (long)ch * is.h * is.w;
        const float *wk = n->w + (long)ch * k * k;
        float *dst = out + (long)ch * oh * ow;
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                float s = 0;
                for (int ky = 0; ky < k; ky++) {
                    int y = oy * c->stride + ky - c->pad;
                    if (y < 0 || y >= is.h) continue;
                    for (int kx = 0; kx < k; kx++) {
                        int x = ox * c->stride + kx - c->pad;
                        if (x >= 0 && x < is.w) s += wk[ky * k + kx] * src[(long)y * is.w + x];
                    }
                }
                dst[(long)oy * ow + ox] = s;
            }
    }
}

void yq_f32_conv(const yq_graph *g, const yq_node *n, const float *in, float *out, float *work, int batch)
{
    yq_shape is = yq_node_in_shape(g, n);
    const yq_conv_p *c = &n->p.conv;
    int G = c->groups, M = c->filters / G, K = is.c / G * c->size * c->size;
    int N = n->out.h * n->out.w;
    long in_sz = yq_shape_size(is), out_sz = yq_shape_size(n->out);
    int dw = is_depthwise(g, n), pw = is_pointwise(c);
    for (int b = 0; b < batch; b++) {
        const float *x = in + b * in_sz;
        float *y = out + b * out_sz;
        if (dw) {
            depthwise(n, is, x, y);
        } else {
            for (int gi = 0; gi < G; gi++) {
                const float *xg = x + (long)gi * (is.c / G) * is.h * is.w;
                const float *col = xg;
                if (!pw) {
                    im2col(xg, is.c / G, is.h, is.w, c->size, c->stride, c->pad, n->out.h, n->out.w, work);
                    col = work;
                }
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.f,
                            n->w + (long)gi * M * K, K, col, N, 0.f, y + (long)gi * M * N, N);
            }
        }
        for (int o = 0; o < c->filters; o++) {
            float *yo = y + (long)o * N, bias = n->b[o];
            for (int i = 0; i < N; i++) yo[i] += bias;
        }
        yq_f32_activate(y, out_sz, n->act);
    }
}

void yq_f32_maxpool(yq_shape is, const yq_pool_p *p, yq_shape os, const float *in, float *out, int batch)
{
    int off = -p->pad / 2;   /* darknet: the window starts pad/2 before the image */
    for (int b = 0; b < batch; b++)
        for (int c = 0; c < is.c; c++) {
            const float *src = in + ((long)b * is.c + c) * is.h * is.w;
            float *dst = out + ((long)b * os.c + c) * os.h * os.w;
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
