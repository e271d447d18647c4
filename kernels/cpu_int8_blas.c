/* Exact int8 convolution through dgemm (see kernels/cpu_ref.h). */
#include <cblas.h>
#include <stdint.h>
#include "kernels/cpu_ref.h"

size_t yq_blas_conv_work(const yq_graph *g, const yq_node *n)
{
    if (n->op != YQ_OP_CONV || yq_conv_is_depthwise(g, n)) return yq_ref_conv_work(g, n);
    yq_shape is = yq_node_in_shape(g, n);
    const yq_conv_p *c = &n->p.conv;
    size_t K = (size_t)(is.c / c->groups) * c->size * c->size, np = (size_t)n->out.h * n->out.w;
    size_t M = (size_t)c->filters / c->groups;
    /* int16 im2col, its double copy, the double weights of one group, double and int32 accumulators */
    return K * np * sizeof(int16_t) + K * np * sizeof(double) + M * K * sizeof(double) +
           (size_t)c->filters * np * (sizeof(double) + sizeof(int32_t)) + 64;
}

void yq_blas_conv(const yq_graph *g, const yq_node *n, const yq_qnode *q, const void *in, yq_dtype in_t,
                  void *out, void *work, int batch)
{
    if (yq_conv_is_depthwise(g, n)) {
        yq_ref_conv(g, n, q, in, in_t, out, work, batch);
        return;
    }
    yq_shape is = yq_node_in_shape(g, n);
    const yq_conv_p *c = &n->p.conv;
    int G = c->groups, M = c->filters / G, cin = is.c / G;
    long K = (long)cin * c->size * c->size, np = (long)n->out.h * n->out.w;
    double *col = work;
    double *wd = col + K * np;
    double *accd = wd + (long)M * K;
    int32_t *acc = (int32_t *)(accd + (long)c->filters * np);
    int16_t *col16 = (int16_t *)(acc + (long)c->filters * np);
    for (int b = 0; b < batch; b++) {
        long ibase = (long)b * yq_shape_size(is);
        for (int gi = 0; gi < G; gi++) {
            yq_im2col16(in, in_t, ibase + (long)gi * cin * is.h * is.w, cin, is.h, is.w, c->size, c->stride, c->pad,
                        n->out.h, n->out.w, col16);
            for (long i = 0; i < K * np; i++) col[i] = col16[i];
            const int8_t *w = q->wq + (long)gi * M * K;
            for (long i = 0; i < (long)M * K; i++) wd[i] = w[i];
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, (int)np, (int)K, 1.0, wd, (int)K, col, (int)np,
                        0.0, accd + (long)gi * M * np, (int)np);
        }
        for (int o = 0; o < c->filters; o++)
            for (long i = 0; i < np; i++) acc[o * np + i] = (int32_t)accd[o * np + i] + q->bq[o];
        yq_ref_epilogue(n, q, acc, out, (long)b * yq_shape_size(n->out));
    }
}
