/* The int8 CPU reference.  Obvious loops; the conv goes through an im2col into
 * int16 (holding either the uint8 image or int8 activations) and an int32 GEMM
 * whose inner loop the compiler vectorises.  Integer arithmetic only, except the
 * dequantizing epilogue of float-output convs (one float multiply per value). */
#include <math.h>
#include <string.h>
#include "kernels/cpu_fp32.h"
#include "kernels/cpu_ref.h"

int yq_conv_is_depthwise(const yq_graph *g, const yq_node *n)
{
    yq_shape is = yq_node_in_shape(g, n);
    return n->p.conv.groups == is.c && n->p.conv.filters == is.c;
}

size_t yq_ref_conv_work(const yq_graph *g, const yq_node *n)
{
    if (n->op != YQ_OP_CONV) return 0;
    yq_shape is = yq_node_in_shape(g, n);
    const yq_conv_p *c = &n->p.conv;
    size_t np = (size_t)n->out.h * n->out.w;
    size_t col = yq_conv_is_depthwise(g, n) ? 0 : (size_t)(is.c / c->groups) * c->size * c->size * np * sizeof(int16_t);
    return (col + 63) / 64 * 64 + (size_t)c->filters * np * sizeof(int32_t);   /* the int32s 64-byte aligned */
}

static inline int16_t ld(const void *p, yq_dtype t, long i)
{
    return t == YQ_U8 ? ((const uint8_t *)p)[i] : ((const int8_t *)p)[i];
}

void yq_im2col16(const void *in, yq_dtype t, long base, int ch, int h, int w, int k, int stride, int pad,
                     int oh, int ow, int16_t *col)
{
    for (int c = 0; c < ch; c++)
        for (int ky = 0; ky < k; ky++)
            for (int kx = 0; kx < k; kx++) {
                int16_t *dst = col + ((long)(c * k + ky) * k + kx) * oh * ow;
                long src = base + (long)c * h * w;
                for (int oy = 0; oy < oh; oy++) {
                    int y = oy * stride + ky - pad;
                    for (int ox = 0; ox < ow; ox++) {
                        int x = ox * stride + kx - pad;
                        dst[(long)oy * ow + ox] = (y >= 0 && y < h && x >= 0 && x < w) ? ld(in, t, src + (long)y * w + x) : 0;
                    }
                }
            }
}

void yq_ref_epilogue(const yq_node *n, const yq_qnode *q, const int32_t *acc, void *out, long base)
{
    long np = (long)n->out.h * n->out.w;
    for (int o = 0; o < n->p.conv.filters; o++) {
        const int32_t *a = acc + (long)o * np;
        if (q->dtype == YQ_F32) {
            float *y = (float *)out + base + (long)o * np;
            for (long i = 0; i < np; i++) y[i] = yq_f32_act1((float)a[i] * q->deq[o], n->act);
        } else {
            int8_t *y = (int8_t *)out + base + (long)o * np;
            float pos = q->rq_pos[o], neg = q->rq_neg[o];
            for (long i = 0; i < np; i++) y[i] = (int8_t)yq_requant_out(a[i], pos, neg, q->qmin, q->qmax, q->lut);
        }
    }
}

void yq_ref_conv(const yq_graph *g, const yq_node *n, const yq_qnode *q, const void *in, yq_dtype in_t,
                 void *out, void *work, int batch)
{
    yq_shape is = yq_node_in_shape(g, n);
    const yq_conv_p *c = &n->p.conv;
    int G = c->groups, M = c->filters / G, cin = is.c / G, k = c->size;
    int K = cin * k * k;
    long np = (long)n->out.h * n->out.w;
    int dw = yq_conv_is_depthwise(g, n);
    int16_t *col = work;
    int32_t *acc = (int32_t *)((char *)work + (dw ? 0 : ((size_t)K * np * sizeof(int16_t) + 63) / 64 * 64));
    for (int b = 0; b < batch; b++) {
        long ibase = (long)b * yq_shape_size(is);
        if (dw) {
            for (int ch = 0; ch < is.c; ch++) {
                const int8_t *wk = q->wq + (long)ch * k * k;
                for (int oy = 0; oy < n->out.h; oy++)
                    for (int ox = 0; ox < n->out.w; ox++) {
                        int32_t s = q->bq[ch];
                        for (int ky = 0; ky < k; ky++) {
                            int y = oy * c->stride + ky - c->pad;
                            if (y < 0 || y >= is.h) continue;
                            for (int kx = 0; kx < k; kx++) {
                                int x = ox * c->stride + kx - c->pad;
                                if (x >= 0 && x < is.w)
                                    s += wk[ky * k + kx] * ld(in, in_t, ibase + ((long)ch * is.h + y) * is.w + x);
                            }
                        }
                        acc[(long)ch * np + (long)oy * n->out.w + ox] = s;
                    }
            }
        } else {
            for (int gi = 0; gi < G; gi++) {
                yq_im2col16(in, in_t, ibase + (long)gi * cin * is.h * is.w, cin, is.h, is.w, k, c->stride, c->pad,
                         n->out.h, n->out.w, col);
                for (int o = gi * M; o < (gi + 1) * M; o++) {
                    int32_t *a = acc + (long)o * np;
                    const int8_t *w = q->wq + (long)o * K;
                    for (long i = 0; i < np; i++) a[i] = q->bq[o];
                    for (int kk = 0; kk < K; kk++) {
                        int32_t wv = w[kk];
                        const int16_t *x = col + (long)kk * np;
                        if (wv)
                            for (long i = 0; i < np; i++) a[i] += wv * x[i];
                    }
                }
            }
        }
        yq_ref_epilogue(n, q, acc, out, (long)b * yq_shape_size(n->out));
    }
}

void yq_ref_maxpool(yq_shape is, const yq_pool_p *p, yq_shape os, const int8_t *in, int8_t *out, int batch)
{
    int off = -p->pad / 2;
    for (long bc = 0; bc < (long)batch * is.c; bc++) {
        const int8_t *src = in + bc * is.h * is.w;
        int8_t *dst = out + bc * os.h * os.w;
        for (int oy = 0; oy < os.h; oy++)
            for (int ox = 0; ox < os.w; ox++) {
                int m = -128;
                for (int ky = 0; ky < p->size; ky++) {
                    int y = off + oy * p->stride + ky;
                    if (y < 0 || y >= is.h) continue;
                    for (int kx = 0; kx < p->size; kx++) {
                        int x = off + ox * p->stride + kx;
                        if (x >= 0 && x < is.w && src[(long)y * is.w + x] > m) m = src[(long)y * is.w + x];
                    }
                }
                dst[(long)oy * os.w + ox] = (int8_t)m;
            }
    }
}

void yq_ref_upsample(yq_shape is, int s, const int8_t *in, int8_t *out, int batch)
{
    int ow = is.w * s;
    for (long bc = 0; bc < (long)batch * is.c; bc++) {
        const int8_t *src = in + bc * is.h * is.w;
        int8_t *dst = out + bc * is.h * is.w * s * s;
        for (int y = 0; y < is.h * s; y++)
            for (int x = 0; x < ow; x++) dst[(long)y * ow + x] = src[(long)(y / s) * is.w + x / s];
    }
}

void yq_ref_shortcut(long n_per_image, const int8_t *a, const int8_t *b, const yq_qnode *q, int8_t *out, int batch)
{
    long n = n_per_image * batch;
    for (long i = 0; i < n; i++)
        out[i] = (int8_t)yq_add_requant(a[i], b[i], q->sa, q->sb, q->sneg, q->qmin, q->qmax);
}

void yq_ref_route_copy(yq_shape ss, const yq_route_p *r, const int8_t *src, yq_shape ds, int c_off, int8_t *dst, int batch)
{
    int part = ss.c / r->groups;
    long plane = (long)ss.h * ss.w;
    for (int b = 0; b < batch; b++)
        memcpy(dst + ((long)b * ds.c + c_off) * plane, src + ((long)b * ss.c + (long)r->group_id * part) * plane,
               (size_t)part * plane);
}

void yq_quantize(const float *x, long n, float scale, int32_t qmin, int32_t qmax, int8_t *q)
{
    for (long i = 0; i < n; i++) {
        float v = roundf(x[i] / scale);           /* roundf: ties away from zero */
        q[i] = (int8_t)(v != v ? 0 : v < (float)qmin ? qmin : v > (float)qmax ? qmax : (int32_t)v);
    }
}

void yq_quantize_u8(const float *x, long n, float scale, uint8_t *q)
{
    for (long i = 0; i < n; i++) {
        float v = roundf(x[i] / scale);
        q[i] = (uint8_t)(v != v || v < 0 ? 0 : v > 255 ? 255 : (int32_t)v);
    }
}

void yq_dequantize(const void *q, yq_dtype t, long n, float scale, float *x)
{
    if (t == YQ_U8)
        for (long i = 0; i < n; i++) x[i] = ((const uint8_t *)q)[i] * scale;
    else
        for (long i = 0; i < n; i++) x[i] = ((const int8_t *)q)[i] * scale;
}
