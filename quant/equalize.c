#include <math.h>
#include <stdlib.h>
#include "quant/equalize.h"

static int homogeneous(yq_act a) { return a == YQ_ACT_LINEAR || a == YQ_ACT_LEAKY || a == YQ_ACT_RELU; }

/* g's weights equalized in place. */
static yq_status equalize(yq_graph *g, const yq_calib_stats *cs, int *pairs, yq_error *err)
{
    int N = g->n_nodes;
    int *uses = calloc((size_t)N, sizeof *uses);
    float *s = NULL;
    if (!uses) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    for (int i = 1; i < N; i++)
        for (int k = 0; k < g->nodes[i].n_src; k++) uses[g->nodes[i].src[k]]++;
    *pairs = 0;
    for (int c = 1; c < N; c++) {
        yq_node *C = &g->nodes[c];
        if (C->op != YQ_OP_CONV || !C->w) continue;
        int p = C->src[0];
        yq_node *P = &g->nodes[p];
        if (P->op != YQ_OP_CONV || !P->w || uses[p] != 1 || !homogeneous(P->act)) continue;
        int ch = P->out.c;
        int dw = C->p.conv.groups == ch && C->p.conv.filters == ch;
        if (C->p.conv.groups != 1 && !dw) continue;
        const float *r = cs->ch_max[p];
        float rmax = 0;
        for (int i = 0; i < ch; i++) rmax = fmaxf(rmax, r[i]);
        if (!(rmax > 0)) continue;
        free(s);
        s = malloc(sizeof *s * (size_t)ch);
        if (!s) { free(uses); return yq_fail(err, YQ_ERR_NOMEM, "out of memory"); }
        int kk = C->p.conv.size * C->p.conv.size;
        long perP = P->n_w / ch;
        for (int i = 0; i < ch; i++) {
            if (!(r[i] > 0)) { s[i] = 1; continue; }
            if (dw) {
                s[i] = fmaxf(r[i] / rmax, 1e-3f);
            } else {
                float w = 0;
                for (int o = 0; o < C->p.conv.filters; o++)
                    for (int k = 0; k < kk; k++) w = fmaxf(w, fabsf(C->w[((long)o * ch + i) * kk + k]));
                s[i] = w > 0 ? sqrtf(r[i] / w) : 1;
            }
        }
        if (!dw) {   /* DFQ's s is defined up to one global factor: keep P's largest channel as it was */
            float smax = 0;
            for (int i = 0; i < ch; i++) if (r[i] / s[i] > smax) smax = r[i] / s[i];
            for (int i = 0; i < ch && smax > 0; i++) s[i] *= smax / rmax;
        }
        for (int i = 0; i < ch; i++) {
            for (long k = 0; k < perP; k++) P->w[i * perP + k] /= s[i];
            P->b[i] /= s[i];
            if (dw) {
                for (int k = 0; k < kk; k++) C->w[(long)i * kk + k] *= s[i];
            } else {
                for (int o = 0; o < C->p.conv.filters; o++)
                    for (int k = 0; k < kk; k++) C->w[((long)o * ch + i) * kk + k] *= s[i];
            }
        }
        (*pairs)++;
    }
    free(s);
    free(uses);
    return YQ_OK;
}

yq_status yq_equalize(const yq_graph *g, const yq_calib_stats *cs, yq_graph **out, int *pairs, yq_error *err)
{
    *pairs = 0;
    yq_status st = yq_graph_clone(g, out, err);
    if (st == YQ_OK && (st = equalize(*out, cs, pairs, err)) != YQ_OK) {
        yq_graph_free(*out);
        *out = NULL;
    }
    return st;
}
