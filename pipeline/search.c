/* pipeline/search.h: the per-layer sensitivity table and the --max-drop search. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline/search.h"
#include "quant/rewrite.h"
#include "quant/select.h"

/* ---- the measurement context ---- */

typedef struct sens {
    const yq_pipe_calib *c;
    const yq_qconfig *base;       /* bits, calibration method, weights ... */
    const yq_graph *g;            /* the FP32 graph */
    yq_graph *q;                  /* its rewrite with work (rewrite(); NULL before the first) */
    const yq_calib_stats *cs;
    const yq_dataset *ds;
    int letterbox;
    const yq_pipe_io *io;         /* the caller's (warnings, notes) */
    yq_pipe_io quiet;             /* its warnings and notes only: the inner steps draw no bar */
    float *inputs;                /* SQNR images */
    int n_inputs;
    yq_qconfig *work;             /* the config being measured (large: malloc'd) */
    char *list;                   /* skip_layers text */
    size_t list_cap;
    int eval_dev;                 /* the mAP on GPU eval_dev (>= 0), else on the CPU int8 engine */
} sens;

static yq_status sens_init(sens *S, const yq_pipe_calib *c, const yq_qconfig *base, const yq_graph *g,
                           const yq_calib_stats *cs, const yq_dataset *ds, int letterbox, const yq_pipe_io *io,
                           yq_error *err)
{
    static const yq_pipe_io none = { 0 };
    memset(S, 0, sizeof *S);
    S->c = c;
    S->base = base;
    S->g = g;
    S->cs = cs;
    S->ds = ds;
    S->letterbox = letterbox;
    S->io = io ? io : &none;
    S->quiet = (yq_pipe_io){ NULL, NULL, S->io->warn, S->io->note, S->io->ctx };
    S->eval_dev = -1;
    if (!(S->work = malloc(sizeof *S->work))) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    return YQ_OK;
}

static void sens_free(sens *S)
{
    free(S->inputs);
    free(S->list);
    free(S->work);
    yq_graph_free(S->q);
}

static void stage(const sens *S, const char *label)
{
    if (S->io->stage) S->io->stage(S->io->ctx, label);
}

static void progress(const sens *S, int done, int total)
{
    if (S->io->progress) S->io->progress(S->io->ctx, done, total);
}

/* Every layer in int8: head and first conv too, no skip, no keep_float choice. */
static void all_int8(yq_qconfig *qc)
{
    qc->head_float = qc->first_float = qc->keep_float = 0;
    for (int i = 0; i < qc->n_layers; i++) qc->layer[i].skip = -1;
}

/* S->work = base, all int8, then skip_layers: the layers listed (except=0) or every layer
 * but the one listed (except=1). */
static yq_status make_config(sens *S, const int *layers, int n, int except, yq_error *err)
{
    *S->work = *S->base;
    all_int8(S->work);
    size_t need = (size_t)(except ? S->g->n_nodes : n) * 12 + 1;
    if (need > S->list_cap) {
        char *nl = realloc(S->list, need);
        if (!nl) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
        S->list = nl;
        S->list_cap = need;
    }
    size_t m = 0;
    S->list[0] = 0;
    if (except) {
        for (int i = 1; i < S->g->n_nodes; i++)
            if (S->g->nodes[i].layer != layers[0])
                m += (size_t)snprintf(S->list + m, S->list_cap - m, "%s%d", m ? "," : "", S->g->nodes[i].layer);
    } else {
        for (int k = 0; k < n; k++) m += (size_t)snprintf(S->list + m, S->list_cap - m, "%s%d", m ? "," : "", layers[k]);
    }
    return m ? yq_qconfig_set(S->work, "skip_layers", S->list, "sensitivity", err) : YQ_OK;
}

/* The evaluation on S's engine (progress through io, may be the quiet one). */
static yq_status eval_on(sens *S, const yq_pipe_io *io, yq_pipe_eval *r, yq_error *err)
{
    return yq_pipe_eval_or_cpu(S->q, S->ds, S->letterbox, &S->eval_dev, io, r, err);
}

/* S->q: S->g rewritten with S->work (after make_config), in place of the rewrite before. */
static yq_status rewrite(sens *S, yq_error *err)
{
    yq_graph_free(S->q);
    S->q = NULL;
    return yq_pipe_quantize(S->c, S->work, NULL, S->g, S->cs, S->letterbox, &S->quiet, &S->q, err);
}

/* Rewrites S->g with S->work (S->q), then evaluates (r != NULL) and/or measures the head SQNR
 * (head_db != NULL; the per-layer errors go to *le when le != NULL). */
static yq_status measure(sens *S, yq_pipe_eval *r, double *head_db, yq_layer_err **le, yq_error *err)
{
    yq_status st = rewrite(S, err);
    if (st == YQ_OK && r) st = eval_on(S, &S->quiet, r, err);
    if (st == YQ_OK && head_db) {
        yq_layer_err *e = NULL;
        st = yq_compare_layers(S->q, S->inputs, S->n_inputs, &e, err);
        if (st == YQ_OK) {
            *head_db = yq_pipe_head_sqnr(S->q, e);
            if (le) *le = e;
            else free(e);
        }
    }
    if (st != YQ_OK && r) yq_pipe_eval_free(r);
    return st;
}

/* The convs that run in int8 when every layer may (mish/swish convs stay float anyway). */
static int int8_convs(const yq_graph *g, int *ids)
{
    int n = 0;
    for (int i = 1; i < g->n_nodes; i++)
        if (g->nodes[i].op == YQ_OP_CONV && g->q && !g->q[i].float_op) ids[n++] = i;
    return n;
}

/* ---- sensitivity ---- */

/* Most sensitive first: by impact, then by the head SQNR that keeping the layer float
 * buys, then by the layer's own SQNR (lowest first). */
static int by_impact(const void *x, const void *y)
{
    const yq_pipe_sens_row *a = x, *b = y;
    if (a->impact != b->impact) return a->impact > b->impact ? -1 : 1;
    if (a->head_b != b->head_b) return a->head_b > b->head_b ? -1 : 1;
    return a->sqnr < b->sqnr ? -1 : a->sqnr > b->sqnr;
}

static int by_head_gain(const void *x, const void *y)
{
    const yq_pipe_sens_row *a = x, *b = y;
    if (a->head_b != b->head_b) return a->head_b > b->head_b ? -1 : 1;
    return by_impact(x, y);
}

typedef struct idsq { int id; double db; } idsq;
static int by_db(const void *x, const void *y)
{
    const idsq *a = x, *b = y;
    return a->db < b->db ? -1 : a->db > b->db ? 1 : a->id - b->id;
}

yq_status yq_pipe_sensitivity(const yq_pipe_calib *c, const yq_qconfig *base, const yq_graph *g, const yq_calib_stats *cs,
                              const yq_dataset *ds, int letterbox, const double *fp_stats, const yq_pipe_sens_req *r,
                              const yq_pipe_io *io, yq_pipe_sens_res *res, yq_error *err)
{
    memset(res, 0, sizeof *res);
    sens S;
    yq_layer_err *e_all = NULL;
    int *ids = NULL;
    idsq *order = NULL;
    yq_status st = sens_init(&S, c, base, g, cs, ds, letterbox, io, err);
    if (st == YQ_OK) st = yq_pipe_load_inputs(g, c->images, r->sqnr_images, letterbox, &S.quiet, &S.inputs,
                                              &S.n_inputs, err);
    if (st == YQ_OK && !S.n_inputs) st = yq_fail(err, YQ_ERR_IO, "%s: no readable image for the SQNR figures", c->images);
    res->n_inputs = S.n_inputs;
    /* Every layer int8: the baseline (b) is measured against, and the per-layer SQNR. */
    if (st == YQ_OK && (st = make_config(&S, NULL, 0, 0, err)) == YQ_OK)
        st = measure(&S, &res->all8, &res->head_all, &e_all, err);
    if (st == YQ_OK) {
        ids = malloc(sizeof *ids * (size_t)g->n_nodes);
        order = malloc(sizeof *order * (size_t)g->n_nodes);
        res->rows = calloc((size_t)g->n_nodes, sizeof *res->rows);
        if (!ids || !order || !res->rows) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    }
    int n = 0;
    if (st == YQ_OK) {
        n = int8_convs(S.q, ids);
        for (int k = 0; k < n; k++) order[k] = (idsq){ ids[k], e_all[ids[k]].sqnr_db };
        if (r->max_layers > 0 && r->max_layers < n) {
            qsort(order, (size_t)n, sizeof *order, by_db);       /* the worst by SQNR */
            n = r->max_layers;
        }
        if (S.io->note) {
            char msg[256];
            snprintf(msg, sizeof msg, "sensitivity: %d conv layers, %d validation images, SQNR on %d calibration "
                     "images; FP32 mAP %.2f, all-int8 mAP %.2f, head SQNR %.2f dB", n, ds->n_images, S.n_inputs,
                     100 * fp_stats[YQ_COCO_AP], 100 * res->all8.s[YQ_COCO_AP], res->head_all);
            S.io->note(S.io->ctx, msg);
        }
        stage(&S, "layers");
    }
    const int parts = r->parts > 1 ? r->parts : 1, part = parts > 1 ? r->part : 0;
    const int mine = n > part ? (n - part + parts - 1) / parts : 0;   /* rows this process measures */
    for (int k = 0; k < n && st == YQ_OK; k++) {
        yq_pipe_sens_row *w = &res->rows[k];
        w->id = order[k].id;
        w->layer = g->nodes[w->id].layer;
        w->sqnr = order[k].db;
    }
    for (int k = part, j = 0; k < n && st == YQ_OK; k += parts, j++) {
        yq_pipe_sens_row *w = &res->rows[k];
        yq_pipe_eval a, b;
        if ((st = make_config(&S, &w->layer, 1, 1, err)) != YQ_OK || (st = measure(&S, &a, &w->head_a, NULL, err)) != YQ_OK)
            break;
        w->map_a = a.s[YQ_COCO_AP];
        yq_pipe_eval_free(&a);
        progress(&S, 2 * j + 1, 2 * mine);
        if ((st = make_config(&S, &w->layer, 1, 0, err)) != YQ_OK || (st = measure(&S, &b, &w->head_b, NULL, err)) != YQ_OK)
            break;
        w->map_b = b.s[YQ_COCO_AP];
        yq_pipe_eval_free(&b);
        w->impact = 100 * (fp_stats[YQ_COCO_AP] - w->map_a) + 100 * (w->map_b - res->all8.s[YQ_COCO_AP]);
        progress(&S, 2 * j + 2, 2 * mine);
    }
    if (st == YQ_OK && parts > 1 && (!r->exchange || r->exchange(r->exchange_ctx, res->rows, sizeof *res->rows, n)))
        st = yq_fail(err, YQ_ERR_IO, "sensitivity: the rows measured by the other processes did not arrive");
    if (st == YQ_OK) {
        qsort(res->rows, (size_t)n, sizeof *res->rows, r->rank_sqnr ? by_head_gain : by_impact);
        res->n = n;
    } else {
        yq_pipe_sens_free(res);
    }
    free(e_all);
    free(ids);
    free(order);
    sens_free(&S);
    return st;
}

void yq_pipe_sens_free(yq_pipe_sens_res *res)
{
    if (!res) return;
    free(res->rows);
    res->rows = NULL;
    res->n = 0;
    yq_pipe_eval_free(&res->all8);
}

/* ---- the --max-drop search ---- */

int yq_rank_parse(const char *s)
{
    static const char *names[] = { "head", "sqnr", "map", "tensor" };
    for (int i = 0; s && i < 4; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

typedef struct cand { int id, layer; double key; } cand;
static int by_key_desc(const void *x, const void *y)
{
    const cand *a = x, *b = y;
    return a->key > b->key ? -1 : a->key < b->key ? 1 : a->id - b->id;
}

/* YQ_RANK_TENSOR: on the all-int8 rewrite S->q, each scale class's error at the
 * detection outputs alone (calib/simulate.c, quant/select.c, as keep_float ranks them),
 * then the float sets keep_float's choice makes with a budget of 1, 2, ... convs: each set
 * that grows is a step, order[step_at[k] .. step_at[k + 1]) the layers it adds. */
static yq_status tensor_steps(sens *S, int *order, int *step_at, int *n_steps, yq_error *err)
{
    yq_graph *g = S->q;
    int N = g->n_nodes, m = 0, placed = 0;
    *n_steps = 0;
    step_at[0] = 0;
    uint8_t *have = calloc((size_t)N, 1);
    yq_qconfig *qc = malloc(sizeof *qc);          /* (~160 KB: not on the stack) */
    double *e = malloc(sizeof *e * (size_t)N);
    yq_sim *sim = NULL;
    yq_status st = have && qc && e ? YQ_OK : yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    if (st == YQ_OK) st = yq_sim_new(g, S->inputs, S->n_inputs, &sim, err);
    if (st == YQ_OK) st = yq_class_errors(sim, g, NULL, e, err);
    yq_sim_free(sim);
    int n8 = 0;
    for (int i = 1; i < N; i++) n8 += g->nodes[i].op == YQ_OP_CONV && !g->q[i].float_op;
    for (int b = 1; b <= n8 && st == YQ_OK; b++) {
        *qc = *S->base;
        all_int8(qc);
        int cnt = 0;
        if ((st = yq_select_float(g, e, b, qc, &cnt, err)) != YQ_OK) break;
        if (cnt <= placed) continue;
        /* the convs of this set not in an earlier step (a set that drops one of those is
         * not a step: keep_float's greedy choice can trade a group for a larger one) */
        int add = 0, lost = 0;
        for (int i = 1; i < N; i++) {
            if (g->nodes[i].op != YQ_OP_CONV) continue;
            int in = yq_qc_skip(qc, g->nodes[i].layer);
            if (in && !have[i]) add++;
            if (!in && have[i]) lost = 1;
        }
        if (lost || !add) continue;
        for (int i = 1; i < N; i++)
            if (g->nodes[i].op == YQ_OP_CONV && !have[i] && yq_qc_skip(qc, g->nodes[i].layer)) {
                have[i] = 1;
                order[placed++] = g->nodes[i].layer;
            }
        step_at[++m] = placed;
    }
    *n_steps = m;
    free(have);
    free(qc);
    free(e);
    return st;
}

static void emit(const yq_pipe_drop_req *r, int k, const int *layers, int n, const yq_pipe_eval *ev, double fp,
                 double gpu_ms, int met, int eval_gpu)
{
    if (!r->step) return;
    yq_pipe_drop_step s = { k, layers, n, ev->s[YQ_COCO_AP], 100 * (fp - ev->s[YQ_COCO_AP]), ev->ms_median, gpu_ms, met,
                          eval_gpu };
    r->step(r->ctx, &s);
}

static double lat_of(const yq_pipe_drop_req *r, const yq_graph *g)
{
    double v;
    return r->latency && r->latency(r->ctx, g, &v) ? v : -1;
}

yq_status yq_pipe_max_drop(const yq_pipe_calib *c, yq_qconfig *qc, const yq_graph *g, const yq_calib_stats *cs,
                           const yq_dataset *ds, int letterbox, const double *fp_stats, const yq_pipe_drop_req *r,
                           const yq_pipe_io *io, yq_pipe_drop_res *res, yq_error *err)
{
    memset(res, 0, sizeof *res);
    res->all8_gpu = res->final_gpu = -1;
    if (r->rank < YQ_RANK_HEAD || r->rank > YQ_RANK_TENSOR)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "max-drop: rank %d: expected head, sqnr, map or tensor", r->rank);
    int mode = r->rank;
    sens S;
    yq_status st = sens_init(&S, c, qc, g, cs, ds, letterbox, io, err);
    cand *cd = malloc(sizeof *cd * (size_t)g->n_nodes);
    int *ids = malloc(sizeof *ids * (size_t)g->n_nodes), *chosen = calloc((size_t)g->n_nodes, sizeof *chosen);
    /* the steps: step k adds the layers order[step_at[k] .. step_at[k + 1]) */
    int *order = malloc(sizeof *order * (size_t)g->n_nodes), *step_at = malloc(sizeof *step_at * (size_t)(g->n_nodes + 1));
    yq_qconfig *base = malloc(sizeof *base);     /* the caller's qconfig: S.base while qc changes */
    yq_layer_err *e_all = NULL;
    yq_pipe_eval *all8 = &res->all8, *final = &res->final, cur = { 0 }, best = { 0 };
    int n_chosen = 0;
    const int parts = r->parts > 1 ? r->parts : 1, part = parts > 1 ? r->part : 0;
    /* one measured step a part (exchanged between the parts as bytes) */
    typedef struct step_row { double s[YQ_COCO_NSTATS], ms_median, gpu; } step_row;
    step_row *sr = calloc((size_t)parts, sizeof *sr);
    if (st != YQ_OK) goto done;
    if (!cd || !ids || !chosen || !order || !step_at || !base || !sr) { st = yq_fail(err, YQ_ERR_NOMEM, "out of memory"); goto done; }
    *base = *qc;
    S.base = base;
    S.eval_dev = r->eval_device;
    if (mode != YQ_RANK_MAP &&
        (st = yq_pipe_load_inputs(g, c->images, 8, letterbox, &S.quiet, &S.inputs, &S.n_inputs, err)) != YQ_OK)
        goto done;

    double head_all = 0, fp = fp_stats[YQ_COCO_AP];
    if ((st = make_config(&S, NULL, 0, 0, err)) != YQ_OK) goto done;
    stage(&S, "all int8");
    if ((st = rewrite(&S, err)) != YQ_OK) goto done;
    if ((st = eval_on(&S, S.io, all8, err)) != YQ_OK) goto done;
    double best_gpu = -1;
    res->all8_gpu = lat_of(r, S.q);
    if (mode != YQ_RANK_MAP) {
        if ((st = yq_compare_layers(S.q, S.inputs, S.n_inputs, &e_all, err)) != YQ_OK) goto done;
        head_all = yq_pipe_head_sqnr(S.q, e_all);
    }
    int n = int8_convs(S.q, ids);
    double drop = 100 * (fp - all8->s[YQ_COCO_AP]);
    res->met = drop <= r->budget_pts;
    emit(r, 0, NULL, 0, all8, fp, res->all8_gpu, res->met, S.eval_dev >= 0);
    if (res->met) {
        if ((st = yq_pipe_eval_copy(all8, final, err)) != YQ_OK) goto done;
        res->best_drop = drop;
    } else {
        /* Rank. */
        if (mode == YQ_RANK_HEAD || mode == YQ_RANK_MAP) stage(&S, "ranking");
        /* the "map" and "head" rankings (an evaluation or a head SQNR a conv) split over
         * the parts; "sqnr" is a lookup, and every part ranks alike */
        const int rsplit = (mode == YQ_RANK_MAP || mode == YQ_RANK_HEAD) && parts > 1;
        for (int k = 0; k < n && mode != YQ_RANK_TENSOR; k++) {
            cd[k] = (cand){ ids[k], g->nodes[ids[k]].layer, 0 };
            if (mode == YQ_RANK_SQNR) { cd[k].key = -e_all[ids[k]].sqnr_db; continue; }
            if (rsplit && k % parts != part) continue;
            if ((st = make_config(&S, &cd[k].layer, 1, 0, err)) != YQ_OK) goto done;
            if (mode == YQ_RANK_HEAD) {
                double db;
                if ((st = measure(&S, NULL, &db, NULL, err)) != YQ_OK) goto done;
                cd[k].key = db - head_all;
            } else {
                yq_pipe_eval e;
                if ((st = measure(&S, &e, NULL, NULL, err)) != YQ_OK) goto done;
                cd[k].key = e.s[YQ_COCO_AP] - all8->s[YQ_COCO_AP];
                yq_pipe_eval_free(&e);
            }
            progress(&S, k + 1, n);
        }
        if (rsplit && st == YQ_OK && (!r->exchange || r->exchange(r->exchange_ctx, cd, sizeof *cd, n))) {
            st = yq_fail(err, YQ_ERR_IO, "max-drop: the ranking measured by the other processes did not arrive");
            goto done;
        }
        int n_steps = 0;
        if (mode != YQ_RANK_TENSOR) {
            qsort(cd, (size_t)n, sizeof *cd, by_key_desc);
            for (int k = 0; k < n; k++) {
                order[k] = cd[k].layer;
                step_at[k] = k;
            }
            n_steps = n;
            step_at[n] = n;
        } else if ((st = tensor_steps(&S, order, step_at, &n_steps, err)) != YQ_OK) {
            goto done;
        }
        /* Float one step more at a time.  The best step so far (lowest drop, fewest float
         * layers) is kept: it is the answer when the budget is never met.  Step k floats the
         * layers order[0 .. step_at[k + 1]).  Over several parts, steps k .. k + parts - 1
         * are measured at once (k + j by part j) and then taken in order, as one process
         * takes them: those past the first that meets the budget are dropped. */
        int best_k = 0, best_here = 0;     /* best_here: best holds the best step's evaluation */
        double best_drop = drop;
        int k = 0;
        while (k < n_steps && !res->met && (r->max_float <= 0 || step_at[k + 1] <= r->max_float)) {
            int kb = 1;
            while (kb < parts && k + kb < n_steps && (r->max_float <= 0 || step_at[k + kb + 1] <= r->max_float)) kb++;
            memset(sr, 0, sizeof *sr * (size_t)parts);
            if (part < kb) {
                const int kk = k + part;
                if ((st = make_config(&S, order, step_at[kk + 1], 0, err)) != YQ_OK) goto done;
                if ((st = measure(&S, &cur, NULL, NULL, err)) != YQ_OK) goto done;
                memcpy(sr[part].s, cur.s, sizeof cur.s);
                sr[part].ms_median = cur.ms_median;
                sr[part].gpu = lat_of(r, S.q);
            }
            if (parts > 1 && (!r->exchange || r->exchange(r->exchange_ctx, sr, sizeof *sr, parts))) {
                st = yq_fail(err, YQ_ERR_IO, "max-drop: the steps measured by the other processes did not arrive");
                goto done;
            }
            for (int j = 0; j < kb && !res->met; j++) {
                const int kk = k + j;
                yq_pipe_eval ev = { 0 };
                memcpy(ev.s, sr[j].s, sizeof ev.s);
                ev.ms_median = sr[j].ms_median;
                n_chosen = step_at[kk + 1];
                res->steps++;
                drop = 100 * (fp - ev.s[YQ_COCO_AP]);
                res->met = drop <= r->budget_pts;
                emit(r, kk + 1, order + step_at[kk], step_at[kk + 1] - step_at[kk], &ev, fp, sr[j].gpu, res->met,
                     S.eval_dev >= 0);
                if (drop < best_drop || res->met) {
                    yq_pipe_eval_free(&best);
                    best_here = j == part;
                    if (best_here) {
                        best = cur;
                        cur.dets = NULL;
                    }
                    best_gpu = sr[j].gpu;
                    best_drop = drop;
                    best_k = n_chosen;
                }
            }
            yq_pipe_eval_free(&cur);
            k += kb;
        }
        memcpy(chosen, order, sizeof *chosen * (size_t)n_chosen);
        /* a best step measured by another part: its detections measured here again (the same
         * computation, so the same evaluation) */
        if (best_k && !best_here) {
            if ((st = make_config(&S, order, best_k, 0, err)) != YQ_OK) goto done;
            if ((st = measure(&S, &best, NULL, NULL, err)) != YQ_OK) goto done;
        }
        res->tried = n_chosen;
        res->best_drop = best_drop;
        n_chosen = best_k;
        if (best_k) {
            *final = best;
            res->final_gpu = best_gpu;
            best.dets = NULL;
        } else if ((st = yq_pipe_eval_copy(all8, final, err)) != YQ_OK) {
            goto done;
        }
    }
    if (n_chosen == 0) res->final_gpu = res->all8_gpu;     /* the answer is the all-int8 graph */
    /* The decision, into the caller's qconfig (and so into the package). */
    if ((st = make_config(&S, chosen, n_chosen, 0, err)) != YQ_OK) goto done;
    *qc = *S.work;
    if (!(res->float_layers = malloc(sizeof *res->float_layers * (size_t)(n_chosen ? n_chosen : 1)))) {
        st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
        goto done;
    }
    memcpy(res->float_layers, chosen, sizeof *chosen * (size_t)n_chosen);
    res->n_float = n_chosen;
    res->eval_gpu = S.eval_dev >= 0;
done:
    if (st != YQ_OK) yq_pipe_drop_free(res);
    yq_pipe_eval_free(&cur);
    yq_pipe_eval_free(&best);
    free(e_all);
    free(cd);
    free(ids);
    free(chosen);
    free(order);
    free(step_at);
    free(base);
    free(sr);
    sens_free(&S);
    return st;
}

void yq_pipe_drop_free(yq_pipe_drop_res *res)
{
    if (!res) return;
    yq_pipe_eval_free(&res->all8);
    yq_pipe_eval_free(&res->final);
    free(res->float_layers);
    res->float_layers = NULL;
    res->n_float = 0;
}
