#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "quant/rewrite.h"
#include "quant/select.h"

static int is_alias(yq_op op) { return op == YQ_OP_DROPOUT || yq_op_is_head(op); }

typedef struct ranked { int root; double e; } ranked;
static int by_e_desc(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    return x->e > y->e ? -1 : x->e < y->e ? 1 : x->root - y->root;
}

/* Run j of yq_class_errors: the tensors of class cls[j] rounded, nothing else. */
typedef struct class_ctx { yq_sim *s; int N; const int *root; const uint8_t *saved; const int *cls; } class_ctx;
static void set_class(void *ctx, int j)
{
    const class_ctx *c = ctx;
    for (int i = 0; i < c->N; i++) yq_sim_round(c->s, i, c->saved[i] && c->root[i] == c->cls[j]);
}

yq_status yq_class_errors(yq_sim *s, const yq_graph *g, const uint8_t *want, double *e, yq_error *err)
{
    int N = g->n_nodes;
    int *root = malloc(sizeof *root * (size_t)N);
    uint8_t *saved = malloc((size_t)N), *any = calloc((size_t)N, 1);
    if (!root || !saved || !any) {
        free(root);
        free(saved);
        free(any);
        return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    }
    yq_scale_classes(g, root);
    for (int i = 0; i < N; i++) {
        saved[i] = (uint8_t)yq_sim_rounds(s, i);
        if (saved[i]) any[root[i]] = 1;
        e[i] = 0;
    }
    /* one run per class, all of them through yq_sim_run_many (each from the FP32 run's
     * activations where its first rounding is) */
    int *cls = malloc(sizeof *cls * (size_t)N), m = 0;
    yq_head_err *h = malloc(sizeof *h * (size_t)N);
    yq_status st = cls && h ? YQ_OK : yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    for (int r = 0; r < N && st == YQ_OK; r++)
        if (any[r] && (!want || want[r])) cls[m++] = r;
    yq_sim_weights(s, 0);
    class_ctx cx = { s, N, root, saved, cls };
    if (st == YQ_OK) st = yq_sim_run_many(s, m, set_class, &cx, h, err);
    for (int j = 0; j < m && st == YQ_OK; j++) e[cls[j]] = yq_head_err_nsr(&h[j]);
    for (int i = 0; i < N; i++) yq_sim_round(s, i, saved[i]);
    yq_sim_weights(s, 1);
    free(cls);
    free(h);
    free(root);
    free(saved);
    free(any);
    return st;
}

/* Readers of class r from outside it. */
static int class_readers_ok(const yq_graph *g, const int *root, int r)
{
    for (int i = 1; i < g->n_nodes; i++) {
        if (root[i] == r) continue;
        const yq_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_src; k++)
            if (root[n->src[k]] == r && n->op != YQ_OP_CONV && !yq_op_is_head(n->op)) return 0;
    }
    return 1;
}

static void candidates(const yq_graph *g, const int *root, uint8_t *want)
{
    int N = g->n_nodes;
    memset(want, 0, (size_t)N);
    if (!g->q) return;
    for (int r = 1; r < N; r++) {
        if (root[r] != r) continue;
        int producer = -1, others = 0;
        for (int i = r; i < N; i++) {
            if (root[i] != r || is_alias(g->nodes[i].op)) continue;
            if (producer < 0) producer = i;
            else others++;
        }
        if (producer < 0 || others) continue;
        const yq_node *n = &g->nodes[producer];
        if (n->op != YQ_OP_CONV || g->q[producer].float_op || g->q[producer].dtype != YQ_S8) continue;
        if (class_readers_ok(g, root, r)) want[r] = 1;
    }
}

void yq_float_candidates(const yq_graph *g, uint8_t *want)
{
    int *root = malloc(sizeof *root * (size_t)g->n_nodes);
    if (!root) { memset(want, 0, (size_t)g->n_nodes); return; }
    yq_scale_classes(g, root);
    candidates(g, root, want);
    free(root);
}

yq_status yq_select_float(const yq_graph *g, const double *e, int budget, yq_qconfig *qc, int *n_chosen, yq_error *err)
{
    int N = g->n_nodes;
    *n_chosen = 0;
    if (!g->q) return yq_fail(err, YQ_ERR_INVALID_ARG, "keep_float: not an int8 graph");
    int *root = malloc(sizeof *root * (size_t)N);
    uint8_t *want = malloc((size_t)N), *chosen = calloc((size_t)N, 1), *add = malloc((size_t)N);
    ranked *c = malloc(sizeof *c * (size_t)N);
    yq_status st = YQ_OK;
    if (!root || !want || !chosen || !add || !c) { st = yq_fail(err, YQ_ERR_NOMEM, "out of memory"); goto done; }
    yq_scale_classes(g, root);
    candidates(g, root, want);
    int m = 0;
    for (int r = 1; r < N; r++)
        if (want[r] && e[r] > 0) c[m++] = (ranked){ r, e[r] };
    qsort(c, (size_t)m, sizeof *c, by_e_desc);
    int count = 0;
    for (int k = 0; k < m && count < budget; k++) {
        /* The class's conv and the int8 convs reading it: those not float yet. */
        int r = c[k].root, cost = 0;
        memset(add, 0, (size_t)N);
        for (int i = 1; i < N; i++) {
            if (root[i] == r && !is_alias(g->nodes[i].op) && !chosen[i]) add[i] = 1;
            if (root[i] == r || g->nodes[i].op != YQ_OP_CONV || g->q[i].float_op || chosen[i]) continue;
            for (int j = 0; j < g->nodes[i].n_src; j++)
                if (root[g->nodes[i].src[j]] == r) add[i] = 1;
        }
        for (int i = 1; i < N; i++) cost += add[i];
        if (count + cost > budget) continue;
        for (int i = 1; i < N; i++) chosen[i] |= add[i];
        count += cost;
    }
    for (int i = 1; i < N && st == YQ_OK; i++) {
        if (!chosen[i]) continue;
        char key[64];
        snprintf(key, sizeof key, "layer.%d.skip", g->nodes[i].layer);
        st = yq_qconfig_set(qc, key, "on", "keep_float", err);
    }
    if (st == YQ_OK) *n_chosen = count;
done:
    free(root);
    free(want);
    free(chosen);
    free(add);
    free(c);
    return st;
}

yq_status yq_search_thresholds(yq_sim *s, const yq_graph *g, const yq_calib_stats *cs, const double *e, int n_classes,
                               yq_qconfig *qc, int *n_changed, yq_error *err)
{
    int N = g->n_nodes;
    *n_changed = 0;
    if (!g->q) return yq_fail(err, YQ_ERR_INVALID_ARG, "threshold search: not an int8 graph");
    int *root = malloc(sizeof *root * (size_t)N);
    uint8_t *saved = malloc((size_t)N), *any = calloc((size_t)N, 1);
    float *sc0 = malloc(sizeof *sc0 * (size_t)N);
    ranked *c = malloc(sizeof *c * (size_t)N);
    yq_status st = YQ_OK;
    if (!root || !saved || !any || !sc0 || !c) { st = yq_fail(err, YQ_ERR_NOMEM, "out of memory"); goto done; }
    yq_scale_classes(g, root);
    for (int i = 0; i < N; i++) {
        saved[i] = (uint8_t)yq_sim_rounds(s, i);
        sc0[i] = yq_sim_scale(s, i);
        if (saved[i]) any[root[i]] = 1;
    }
    int m = 0;
    for (int r = 1; r < N; r++)      /* not the input: the image's scale is 1/255 */
        if (any[r] && e[r] > 0) c[m++] = (ranked){ r, e[r] };
    qsort(c, (size_t)m, sizeof *c, by_e_desc);
    yq_sim_weights(s, 0);
    for (int k = 0; k < m && k < n_classes && st == YQ_OK; k++) {
        int r = c[k].root;
        double t0 = g->q[r].thresh, amax = 0, best = INFINITY, e1 = INFINITY, best_f = 1;
        for (int i = 0; i < N; i++) {
            yq_sim_round(s, i, saved[i] && root[i] == r);
            if (root[i] == r && cs && (double)cs->hist[i].absmax > amax) amax = cs->hist[i].absmax;
        }
        /* 2^(j/4), j = -6..3: 0.35x .. 1.68x; above 1, only while within the largest |x|. */
        for (int j = -6; j <= 3 && st == YQ_OK; j++) {
            double f = exp2(j / 4.0);
            if (j > 0 && cs && f * t0 > amax) break;
            for (int i = 0; i < N; i++)
                if (root[i] == r && saved[i]) yq_sim_set_scale(s, i, (float)((double)sc0[i] * f));
            yq_head_err h;
            st = yq_sim_run(s, &h, err);
            double v = yq_head_err_nsr(&h);
            if (j == 0) e1 = v;
            if (v < best) { best = v; best_f = f; }
        }
        for (int i = 0; i < N; i++)
            if (root[i] == r) yq_sim_set_scale(s, i, sc0[i]);
        /* A change only for a clear gain (1%): the images are few. */
        if (st == YQ_OK && best_f != 1 && best < 0.99 * e1) {
            char key[64], val[32];
            snprintf(key, sizeof key, "layer.%d.thresh", g->nodes[r].layer);
            snprintf(val, sizeof val, "%.9g", t0 * best_f);
            st = yq_qconfig_set(qc, key, val, "thresh_search", err);
            if (st == YQ_OK) (*n_changed)++;
        }
    }
    for (int i = 0; i < N; i++) {
        yq_sim_round(s, i, saved[i]);
        yq_sim_set_scale(s, i, sc0[i]);
    }
    yq_sim_weights(s, 1);
done:
    free(root);
    free(saved);
    free(any);
    free(sc0);
    free(c);
    return st;
}
