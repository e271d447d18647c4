/* Per-layer kernel tuning (runtime/tune.h): tasks, the cost model, the search strategies
 * and the run.  The JSON-lines log is runtime/tune_log.c, the measurement on the GPU
 * runtime/tune_gpu.c.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cjson/cJSON.h>
#include "runtime/plan.h"
#include "runtime/tune_int.h"

/* ---- names and defaults --------------------------------------------------------- */

static const char *const tuner_names[] = { "model", "grid", "random", "ga" };

const char *yq_tuner_name(yq_tuner t)
{
    return (unsigned)t < sizeof tuner_names / sizeof *tuner_names ? tuner_names[t] : "?";
}

int yq_tuner_parse(const char *s, yq_tuner *t)
{
    for (unsigned i = 0; s && i < sizeof tuner_names / sizeof *tuner_names; i++)
        if (!strcmp(s, tuner_names[i])) {
            *t = (yq_tuner)i;
            return 0;
        }
    return -1;
}

yq_tune_opt yq_tune_defaults(void)
{
    yq_tune_opt o;
    memset(&o, 0, sizeof o);
    o.tuner = YQ_TUNER_MODEL;
    o.trials = 32;
    o.early_stopping = 12;
    o.budget_s = 300;
    o.seed = 1;
    return o;
}

static double mono_s(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *dtype_tag(yq_dtype t) { return t == YQ_F32 ? "f32" : t == YQ_U8 ? "u8" : "s8"; }

/* ---- tasks ---------------------------------------------------------------------- */

/* The conv as the GPU executor runs it: int8 (not kept in float), reading S8 (float
 * sources are converted first) or the U8 image. */
static int conv_types(const yq_graph *g, int id, yq_dtype *in_t, yq_dtype *out_t)
{
    const yq_node *n = &g->nodes[id];
    if (!g->q || n->op != YQ_OP_CONV || g->q[id].float_op || n->n_src < 1) return -1;
    yq_dtype t = yq_node_dtype(g, n->src[0]);
    *in_t = t == YQ_F32 ? YQ_S8 : t;
    *out_t = g->q[id].dtype;
    return 0;
}

int yq_tune_node_key(const yq_graph *g, int id, int batch, char *buf, size_t cap)
{
    yq_dtype it, ot;
    if (id < 1 || id >= g->n_nodes || conv_types(g, id, &it, &ot)) return -1;
    const yq_node *n = &g->nodes[id];
    yq_shape is = yq_node_in_shape(g, n);
    const yq_conv_p *c = &n->p.conv;
    /* the format of yq_cuda_conv_key (kernels/cuda_conv.cu); yq_tune_gpu checks they agree */
    snprintf(buf, cap, "c%dx%dx%d-f%d-k%ds%dp%d-g%d-%s%s%s%s-b%d", is.c, is.h, is.w, c->filters, c->size, c->stride,
             c->pad, c->groups, dtype_tag(it), dtype_tag(ot), ot == YQ_S8 && g->q[id].lut ? "t" : "",
             yq_plan_fused_shortcut(g, id, NULL) >= 0 ? "r" : "", batch);
    return 0;
}

yq_status yq_tune_tasks(const yq_graph *g, const int *batches, int n_batches, yq_tune_task **out, int *n,
                        yq_error *err)
{
    *out = NULL;
    *n = 0;
    if (!g || !g->q) return yq_fail(err, YQ_ERR_INVALID_ARG, "tuning needs an int8 graph (a package, or a quantized model)");
    if (n_batches < 1 || !batches) return yq_fail(err, YQ_ERR_INVALID_ARG, "tuning: no batch size");
    for (int b = 0; b < n_batches; b++)
        if (batches[b] < 1 || batches[b] > 65536) return yq_fail(err, YQ_ERR_INVALID_ARG, "tuning: batch %d", batches[b]);
    int cap = 0;
    for (int i = 1; i < g->n_nodes; i++) cap += g->nodes[i].op == YQ_OP_CONV;
    cap *= n_batches;
    yq_tune_task *t = calloc((size_t)(cap > 0 ? cap : 1), sizeof *t);
    if (!t) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    int m = 0;
    for (int b = 0; b < n_batches; b++) {
        int dup = 0;
        for (int b2 = 0; b2 < b; b2++) dup |= batches[b2] == batches[b];
        if (dup) continue;
        for (int id = 1; id < g->n_nodes; id++) {
            char key[96];
            if (yq_tune_node_key(g, id, batches[b], key, sizeof key)) continue;
            int k;
            for (k = 0; k < m && strcmp(t[k].key, key); k++) {}
            if (k < m) {
                t[k].n_nodes++;
                continue;
            }
            yq_tune_task *x = &t[m++];
            const yq_node *nd = &g->nodes[id];
            yq_shape is = yq_node_in_shape(g, nd);
            snprintf(x->key, sizeof x->key, "%s", key);
            x->batch = batches[b];
            x->cin = is.c;
            x->ih = is.h;
            x->iw = is.w;
            x->f = nd->p.conv.filters;
            x->k = nd->p.conv.size;
            x->stride = nd->p.conv.stride;
            x->pad = nd->p.conv.pad;
            x->groups = nd->p.conv.groups;
            x->oh = nd->out.h;
            x->ow = nd->out.w;
            conv_types(g, id, &x->in_t, &x->out_t);
            x->ops = 2.0 * x->batch * x->oh * x->ow * (double)x->f * (x->cin / x->groups) * x->k * x->k;
            x->node = id;
            x->n_nodes = 1;
            x->res_node = yq_plan_fused_shortcut(g, id, &x->res_first);
            x->def.split_k = 1;
            x->best = x->def;
        }
    }
    *out = t;
    *n = m;
    return YQ_OK;
}

void yq_tune_tasks_free(yq_tune_task *t) { free(t); }

/* ---- configuration geometry, from the stable names --------------------------------- */

typedef struct geom { int fam, bm, bn, bk, stages, split; } geom;

static geom cfg_geom(yq_conv_cfg c)
{
    char name[64];
    cfg_str(c, name, sizeof name);
    geom g = { c.family, 0, 0, 0, 1, c.split_k ? c.split_k : 1 };
    int bm, bn, bk, st, th, tw;
    if (sscanf(name, "mma_%dx%dx%d_s%d", &bm, &bn, &bk, &st) == 4 ||
        sscanf(name, "cutlass_%dx%dx%d_s%d", &bm, &bn, &bk, &st) == 4 ||
        sscanf(name, "wgmma_%dx%dx%d_s%d", &bm, &bn, &bk, &st) == 4 ||
        sscanf(name, "wgh_%dx%dx%d_s%d", &bm, &bn, &bk, &st) == 4 ||
        sscanf(name, "wg1_%dx%dx%d_s%d", &bm, &bn, &bk, &st) == 4) {
        g.bm = bm; g.bn = bn; g.bk = bk; g.stages = st;
    } else if (sscanf(name, "halo_%dx%dx%d", &th, &tw, &bn) == 3) {
        /* th x tw pixels x bn filters; the whole K from shared memory, no pipeline to fill */
        g.bm = th * tw; g.bn = bn; g.bk = 32; g.stages = 1;
    } else if (!strncmp(name, "dp4a_32x32ks", 12)) {
        g.bm = 32; g.bn = 32; g.bk = 32; g.stages = 2;
    } else if (sscanf(name, "dp4a_%dx%d", &bm, &bn) == 2) {
        g.bm = bm; g.bn = bn; g.bk = bm >= 128 ? 64 : 32; g.stages = 2;
    }
    return g;
}

/* ---- the cost model ------------------------------------------------------------ */

double yq_tune_model_us(const yq_tune_task *t, yq_conv_cfg cfg, int sms)
{
    if (sms < 1) sms = 132;
    geom g = cfg_geom(cfg);
    const double launch = 3.0;
    if (g.bm < 1 || g.bn < 1 || g.bk < 1)   /* dw, direct, f32: no tile to rank; dw_dp4a's dot products */
        return launch + t->ops / (sms * (cfg.family == YQ_CONV_DW && cfg.tile == 1 ? 0.6e6 : 0.3e6));
    /* peak integer ops per microsecond per multiprocessor (H100/H200 class: int8 mma
     * ~15 T/s, dp4a ~1 T/s per SM) times a family efficiency (CUTLASS's main loop measured
     * 1.7-2x ours on the H200) */
    /* (the wgmma halo family loads about half the operand bytes of the plain one) */
    /* (the streaming 1x1 family: its filters loaded once a block, its loads never drained) */
    double peak = g.fam == YQ_CONV_WGH || g.fam == YQ_CONV_WG1 ? 15.0e6 * 1.3 : g.fam == YQ_CONV_WGMMA ? 15.0e6
                : g.fam == YQ_CONV_CUTLASS || g.fam == YQ_CONV_HALO ? 15.0e6 * 0.9
                : g.fam == YQ_CONV_MMA ? 15.0e6 * 0.55 : 1.0e6 * 0.6;
    double M = (double)t->batch * t->oh * t->ow;
    double N = (double)((t->f + 3) & ~3);
    double K = (double)t->k * t->k * ((t->cin / t->groups + 3) & ~3);
    double mt = ceil(M / g.bm), nt = ceil(N / g.bn);
    double kc = ceil(K / g.split / g.bk) * g.bk;                 /* K of one split, whole chunks */
    double blocks = mt * nt * g.split;
    /* arithmetic intensity of the tile: larger tiles reuse more of what they load */
    double inten = (double)g.bm * g.bn / (g.bm + g.bn);
    double eff_tile = (inten / (inten + 16.0)) / 0.8;
    /* the busiest multiprocessor's blocks; a lone block cannot hide its latencies */
    double per_sm = ceil(blocks / sms);
    double util = per_sm >= 3 ? 1.0 : per_sm >= 2 ? 0.8 : 0.6;
    double block_ops = 2.0 * g.bm * g.bn * kc;
    double t_sm = per_sm * block_ops / (peak * eff_tile * util);
    /* the multi-stage pipeline fills and drains once per block */
    double chunks = kc / g.bk;
    double pipe = chunks / (chunks + g.stages - 1);
    /* split-K: each split writes int32 partial sums that one more pass reads back */
    double red = g.split > 1 ? 2.0 + g.split * M * N * 4.0 * 2.0 / 3.0e6 : 0;
    return launch + t_sm / pipe + red;
}

/* ---- search orders ---------------------------------------------------------------- */

#define GA_POP 4

typedef struct search {
    const yq_tune_task *t;
    yq_tuner tuner;
    int n;
    int *order, n_order, pos;
    unsigned char *tried;
    double *cost;                 /* per candidate: us of a correct run; HUGE_VAL failed; 0 unknown */
    uint32_t rng;
    int first;                    /* candidate tried first (the similar shape's best), or -1 */
    /* ga */
    int *tile_of;                 /* candidate -> index of its (family, tile) */
    int n_tiles;
    int queue[GA_POP], nq;
    int init_done;
} search;

typedef struct rank { int i; double us; } rank;
static int by_us(const void *a, const void *b)
{
    const rank *x = a, *y = b;
    if (x->us != y->us) return x->us < y->us ? -1 : 1;
    return x->i - y->i;
}

static void search_free(search *s)
{
    free(s->order);
    free(s->tried);
    free(s->cost);
    free(s->tile_of);
}

static int search_init(search *s, const yq_tune_task *t, yq_tuner tuner, uint32_t seed, int sms, int first)
{
    memset(s, 0, sizeof *s);
    s->t = t;
    s->tuner = tuner;
    s->n = t->n_cand;
    s->first = first;
    s->rng = rng_seed(seed, t->key);
    int n = s->n > 0 ? s->n : 1;
    s->order = malloc(sizeof *s->order * (size_t)(n + 1));
    s->tried = calloc((size_t)n, 1);
    s->cost = calloc((size_t)n, sizeof *s->cost);
    s->tile_of = malloc(sizeof *s->tile_of * (size_t)n);
    if (!s->order || !s->tried || !s->cost || !s->tile_of) return -1;
    for (int i = 0; i < s->n; i++) s->order[i] = i;
    if (tuner == YQ_TUNER_RANDOM) {
        for (int i = s->n - 1; i > 0; i--) {
            int j = (int)(rng_next(&s->rng) % (uint32_t)(i + 1)), x = s->order[i];
            s->order[i] = s->order[j];
            s->order[j] = x;
        }
    } else if (tuner == YQ_TUNER_MODEL) {
        rank *r = malloc(sizeof *r * (size_t)n);
        if (!r) return -1;
        for (int i = 0; i < s->n; i++) r[i] = (rank){ i, yq_tune_model_us(t, t->cand[i], sms) };
        qsort(r, (size_t)s->n, sizeof *r, by_us);
        /* the best-ranked of each family first (so that every family is measured), then the rest */
        int m = 0;
        unsigned seen = 0;
        for (int i = 0; i < s->n; i++) {
            unsigned bit = 1u << (t->cand[r[i].i].family & 31);
            if (!(seen & bit)) {
                seen |= bit;
                s->order[m++] = r[i].i;
                r[i].i = -1;
            }
        }
        for (int i = 0; i < s->n; i++)
            if (r[i].i >= 0) s->order[m++] = r[i].i;
        free(r);
    }
    s->n_order = s->n;
    if (first >= 0) {   /* to the front */
        int k = 0;
        while (k < s->n && s->order[k] != first) k++;
        for (; k > 0; k--) s->order[k] = s->order[k - 1];
        s->order[0] = first;
    }
    /* ga: the (family, tile) of every candidate */
    for (int i = 0; i < s->n; i++) {
        int k;
        for (k = 0; k < i; k++)
            if (t->cand[k].family == t->cand[i].family && t->cand[k].tile == t->cand[i].tile) break;
        s->tile_of[i] = k < i ? s->tile_of[k] : s->n_tiles++;
    }
    return 0;
}

static int untried_random(search *s)
{
    int left = 0;
    for (int i = 0; i < s->n; i++) left += !s->tried[i];
    if (!left) return -1;
    int k = (int)(rng_next(&s->rng) % (uint32_t)left);
    for (int i = 0; i < s->n; i++)
        if (!s->tried[i] && k-- == 0) return i;
    return -1;
}

/* The candidate of (family, tile) index `tile` whose split is nearest `split` (by ratio). */
static int with_split(const search *s, int tile, int split)
{
    int best = -1;
    double bd = 0;
    for (int i = 0; i < s->n; i++) {
        if (s->tile_of[i] != tile) continue;
        double d = fabs(log((double)s->t->cand[i].split_k / split));
        if (best < 0 || d < bd) {
            best = i;
            bd = d;
        }
    }
    return best;
}

/* Tournament of two among the correct measured candidates; -1 if none. */
static int ga_pick(search *s)
{
    int good = 0;
    for (int i = 0; i < s->n; i++) good += s->cost[i] > 0 && isfinite(s->cost[i]);
    if (!good) return -1;
    int a = -1, b = -1;
    for (int r = 0; r < 2; r++) {
        int k = (int)(rng_next(&s->rng) % (uint32_t)good), pick = -1;
        for (int i = 0; i < s->n && pick < 0; i++)
            if (s->cost[i] > 0 && isfinite(s->cost[i]) && k-- == 0) pick = i;
        if (r == 0) a = pick;
        else b = pick;
    }
    return s->cost[a] <= s->cost[b] ? a : b;
}

/* A steady-state genetic search over (tile, split): after a small random first
 * population, each child takes its tile from one tournament winner and its split
 * from another (crossover), then mutates: its tile, preferring tiles not tried yet
 * (exploration), or its split.  A child already measured is drawn again. */
static int ga_next(search *s)
{
    if (!s->init_done) {
        s->init_done = 1;
        s->nq = 0;
        if (s->first >= 0) s->queue[s->nq++] = s->first;
        for (int tries = 0; s->nq < GA_POP && tries < 8 * GA_POP; tries++) {
            int i = untried_random(s), dup = 0;
            for (int k = 0; k < s->nq; k++) dup |= s->queue[k] == i;
            if (i >= 0 && !dup) s->queue[s->nq++] = i;
        }
    }
    while (s->nq > 0) {
        int i = s->queue[0];
        memmove(s->queue, s->queue + 1, sizeof *s->queue * (size_t)--s->nq);
        if (!s->tried[i]) return i;
    }
    static const int splits[] = { 1, 2, 3, 4, 6, 8, 12, 16 };
    for (int attempt = 0; attempt < 16; attempt++) {
        int a = ga_pick(s), b = ga_pick(s);
        if (a < 0 || b < 0) return untried_random(s);
        int tile = s->tile_of[a], split = s->t->cand[b].split_k;
        uint32_t r = rng_next(&s->rng) % 100;
        if (r < 50) {
            /* a tile nothing has been tried with, when there is one */
            int fresh[YQ_CONV_MAX_CFGS], nf = 0;
            for (int k = 0; k < s->n_tiles; k++) {
                int seen = 0;
                for (int i = 0; i < s->n && !seen; i++) seen = s->tile_of[i] == k && s->tried[i];
                if (!seen) fresh[nf++] = k;
            }
            tile = nf ? fresh[rng_next(&s->rng) % (uint32_t)nf] : (int)(rng_next(&s->rng) % (uint32_t)s->n_tiles);
        } else if (r < 80) {
            split = splits[rng_next(&s->rng) % (sizeof splits / sizeof *splits)];
        }
        int c = with_split(s, tile, split);
        if (c >= 0 && !s->tried[c]) return c;
    }
    return untried_random(s);
}

static int search_next(search *s)
{
    if (s->tuner == YQ_TUNER_GA) return ga_next(s);
    while (s->pos < s->n_order) {
        int i = s->order[s->pos++];
        if (!s->tried[i]) return i;
    }
    return -1;
}

/* ---- the run -------------------------------------------------------------------- */

static int cand_index(const yq_tune_task *t, yq_conv_cfg c)
{
    for (int i = 0; i < t->n_cand; i++)
        if (same_cfg(t->cand[i], c)) return i;
    return -1;
}

_Static_assert(YQ_CONV_LAST < YQ_TUNE_FAMILIES, "a family past the per-family tables");

static void note_family(yq_tune_task *t, yq_conv_cfg c, double us)
{
    int f = c.family;
    if (f < 0 || f >= YQ_TUNE_FAMILIES) return;
    if (t->family_us[f] <= 0 || us < t->family_us[f]) {
        t->family_us[f] = us;
        t->family_best[f] = c;
    }
}

typedef struct runctx {
    const yq_tune_opt *o;
    const yq_tune_device *dev;
    yq_tune_log *log;
    logw w;
    const char *arch;
    double (*clock)(void *);
    int begun;
} runctx;

/* One configuration of task t: from the log when known, else measured (and logged). */
static yq_status trial(runctx *r, yq_tune_task *t, yq_conv_cfg cfg, int is_default, yq_trial *out, int *measured,
                       yq_error *err)
{
    memset(out, 0, sizeof *out);
    *measured = 0;
    int ki = yq_tl_key_find(r->log, t->key, r->arch);
    if (ki >= 0 && yq_tl_known(r->log, ki, cfg, out)) return YQ_OK;
    if (!r->begun) {
        if (r->dev->begin) {
            yq_status st = r->dev->begin(r->dev->ctx, t, err);
            if (st) return st;
        }
        r->begun = 1;
    }
    r->dev->measure(r->dev->ctx, t, cfg, out);
    *measured = 1;
    t->measured++;
    char name[64];
    cfg_str(cfg, name, sizeof name);
    if (out->status == YQ_TRIAL_FATAL)
        return yq_fail(err, YQ_ERR_CUDA, "%s, %s: %s", t->key, name, out->why[0] ? out->why : "the device failed");
    if (out->status == YQ_TRIAL_OK && !(out->us > 0 && isfinite(out->us))) {
        out->status = YQ_TRIAL_ERROR;
        snprintf(out->why, sizeof out->why, "no time measured");
    }
    if (out->status != YQ_TRIAL_OK && !out->why[0])
        snprintf(out->why, sizeof out->why, "%s", out->status == YQ_TRIAL_MISMATCH ? "mismatch" :
                 out->status == YQ_TRIAL_TIMEOUT ? "timeout" : "error");
    if (yq_tl_add_trial(r->log, t->key, r->arch, cfg, out->status == YQ_TRIAL_OK, out->us, out->why))
        return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    return yq_tl_trial(&r->w, t, r->arch, cfg, out, is_default, err);
}

static void report(runctx *r, int i, int n, const yq_tune_task *t, int planned, double cur_us, int finished)
{
    if (!r->o->progress) return;
    yq_tune_progress p = { i + 1, n, t, t->trials, planned, tops(t, cur_us), tops(t, t->best_us), finished };
    r->o->progress(r->o->progress_ctx, &p);
}

/* Whether the log's finished search of t can stand: its best is still a candidate. */
static int take_logged(runctx *r, yq_tune_task *t)
{
    int ki = yq_tl_key_find(r->log, t->key, r->arch);
    if (ki < 0 || !r->log->k[ki].done || r->o->retune) return 0;
    const lkey *k = &r->log->k[ki];
    yq_conv_cfg best = k->has_best ? k->best : k->done_best;
    if (cand_index(t, best) < 0 && !same_cfg(best, t->def)) return 0;
    t->best = best;
    t->best_us = k->has_best ? k->best_us : k->done_us;
    yq_trial d;
    if (yq_tl_known(r->log, ki, t->def, &d) && d.status == YQ_TRIAL_OK) t->default_us = d.us;
    else if (k->has_def && same_cfg(k->def, t->def)) t->default_us = k->def_us;
    for (int i = 0; i < r->log->nt; i++) {
        const ltrial *x = &r->log->t[i];
        if (x->key == ki && x->ok && (cand_index(t, x->cfg) >= 0 || same_cfg(x->cfg, t->def))) note_family(t, x->cfg, x->us);
    }
    note_family(t, t->best, t->best_us);
    t->state = YQ_TUNE_LOGGED;
    return 1;
}

yq_status yq_tune_run(yq_tune_task *tasks, int n, const char *arch, const yq_tune_opt *opt, const yq_tune_device *dev,
                      yq_tune_summary *sum, yq_error *err)
{
    yq_tune_opt defaults = yq_tune_defaults();
    const yq_tune_opt *o = opt ? opt : &defaults;
    if (sum) memset(sum, 0, sizeof *sum);
    if (n < 0 || (n > 0 && !tasks) || !dev || !dev->measure || !arch || !yq_tl_arch_ok(arch))
        return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_tune_run: bad arguments");
    runctx r;
    memset(&r, 0, sizeof r);
    r.o = o;
    r.dev = dev;
    r.arch = arch;
    r.clock = o->clock ? o->clock : mono_s;
    r.w.path = o->log_path;
    r.w.tuner = yq_tuner_name(o->tuner);
    yq_status st = yq_tune_log_read(o->log_path, &r.log, err);
    if (st) return st;
    if (o->log_path && !(r.w.f = fopen(o->log_path, "a"))) {
        st = yq_fail(err, YQ_ERR_IO, "%s: cannot append to the tuning log: %s", o->log_path, strerror(errno));
        yq_tune_log_free(r.log);
        return st;
    }
    void *cc = o->clock_ctx;
    double t0 = r.clock(cc);
    double deadline = o->budget_s > 0 ? t0 + o->budget_s : HUGE_VAL;
    for (int i = 0; i < n; i++) {
        yq_tune_task *t = &tasks[i];
        t->state = YQ_TUNE_PENDING;
        t->best = t->def;
        t->best_us = t->default_us = 0;
        memset(t->family_us, 0, sizeof t->family_us);
        t->trials = t->measured = t->failed = 0;
        t->similar[0] = 0;
    }
    /* tasks the log has finished first: they cost nothing and tell the others */
    int to_search = 0;
    for (int i = 0; i < n; i++)
        if (!take_logged(&r, &tasks[i])) to_search++;
    for (int i = 0; i < n && st == YQ_OK; i++) {
        yq_tune_task *t = &tasks[i];
        if (t->state == YQ_TUNE_LOGGED) {
            report(&r, i, n, t, t->trials, 0, 1);
            continue;
        }
        double now = r.clock(cc);
        if (now >= deadline) {
            t->state = YQ_TUNE_SKIPPED;
            to_search--;
            report(&r, i, n, t, 0, 0, 1);
            continue;
        }
        double task_deadline = now + (deadline - now) / (to_search > 0 ? to_search : 1);
        to_search--;
        int planned = t->n_cand - (cand_index(t, t->def) >= 0);
        if (o->trials > 0 && planned > o->trials) planned = o->trials;
        r.begun = 0;
        /* the default: the baseline (and, on the device, the reference) */
        yq_trial tr;
        int meas;
        if ((st = trial(&r, t, t->def, 1, &tr, &meas, err))) break;
        if (tr.status != YQ_TRIAL_OK) {
            char name[64];
            cfg_str(t->def, name, sizeof name);
            st = yq_fail(err, YQ_ERR_CUDA, "%s: the default kernel %s failed: %s", t->key, name, tr.why);
            break;
        }
        t->default_us = t->best_us = tr.us;
        note_family(t, t->def, tr.us);
        /* the most similar known shape's best goes first */
        int first = -1;
        yq_conv_cfg sc;
        if (yq_tune_log_similar(r.log, t->key, arch, t->similar, sizeof t->similar, &sc)) {
            first = cand_index(t, sc);
            if (first < 0 || same_cfg(sc, t->def)) {
                t->similar[0] = 0;
                first = -1;
            }
        }
        search s;
        if (search_init(&s, t, o->tuner, o->seed, o->sms, first)) {
            search_free(&s);
            st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
            break;
        }
        int di = cand_index(t, t->def);
        if (di >= 0) {
            s.tried[di] = 1;
            s.cost[di] = tr.us;
        }
        report(&r, i, n, t, planned, tr.us, 0);
        int stale = 0, cut = 0;
        for (;;) {
            if (o->trials > 0 && t->trials >= o->trials) break;
            if (o->early_stopping > 0 && stale >= o->early_stopping) break;
            if (r.clock(cc) >= task_deadline) { cut = 1; break; }
            int c = search_next(&s);
            if (c < 0) break;
            s.tried[c] = 1;
            if ((st = trial(&r, t, t->cand[c], 0, &tr, &meas, err))) break;
            t->trials++;
            if (tr.status == YQ_TRIAL_OK) {
                s.cost[c] = tr.us;
                note_family(t, t->cand[c], tr.us);
                if (tr.us < t->best_us) {
                    t->best = t->cand[c];
                    t->best_us = tr.us;
                    stale = 0;
                } else {
                    stale++;
                }
            } else {
                s.cost[c] = HUGE_VAL;
                t->failed++;
                stale++;
            }
            report(&r, i, n, t, planned, tr.status == YQ_TRIAL_OK ? tr.us : 0, 0);
        }
        search_free(&s);
        if (r.begun && dev->end) dev->end(dev->ctx, t);
        if (st) break;
        t->state = cut ? YQ_TUNE_PARTIAL : YQ_TUNE_SEARCHED;
        if (!cut) {
            int ki = yq_tl_key_get(r.log, t->key, arch);
            if (ki < 0 || yq_tl_add_done(r.log, t->key, arch, t->best, t->best_us, 1, t->def, t->default_us)) {
                st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
                break;
            }
            if ((st = yq_tl_done(&r.w, t, arch, err))) break;
        }
        report(&r, i, n, t, planned, 0, 1);
    }
    if (r.w.f && fclose(r.w.f) != 0 && st == YQ_OK)
        st = yq_fail(err, YQ_ERR_IO, "%s: cannot write the tuning log: %s", o->log_path, strerror(errno));
    yq_tune_log_free(r.log);
    if (sum) {
        sum->seconds = r.clock(cc) - t0;
        sum->tasks = n;
        for (int i = 0; i < n; i++) {
            const yq_tune_task *t = &tasks[i];
            sum->searched += t->state == YQ_TUNE_SEARCHED;
            sum->logged += t->state == YQ_TUNE_LOGGED;
            sum->partial += t->state == YQ_TUNE_PARTIAL;
            sum->skipped += t->state == YQ_TUNE_SKIPPED;
            sum->trials += t->trials;
            sum->measured += t->measured;
            sum->failed += t->failed;
        }
    }
    return st;
}

/* ---- choices ------------------------------------------------------------------- */

yq_status yq_tune_choices(const yq_graph *g, const yq_tune_task *t, int n, int sm, int family,
                          yq_tuned_kernel **out, int *n_out, yq_error *err)
{
    *out = NULL;
    *n_out = 0;
    if (family >= YQ_TUNE_FAMILIES) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_tune_choices: family %d", family);
    int batches[64], nb = 0;
    for (int i = 0; i < n; i++) {
        int k;
        for (k = 0; k < nb && batches[k] != t[i].batch; k++) {}
        if (k == nb && nb < 64) batches[nb++] = t[i].batch;
    }
    yq_tuned_kernel *k = calloc((size_t)(g->n_nodes * (nb > 0 ? nb : 1)), sizeof *k);
    if (!k) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    int m = 0;
    for (int b = 0; b < nb; b++)
        for (int id = 1; id < g->n_nodes; id++) {
            char key[96];
            if (yq_tune_node_key(g, id, batches[b], key, sizeof key)) continue;
            const yq_tune_task *x = NULL;
            for (int i = 0; i < n && !x; i++)
                if (!strcmp(t[i].key, key)) x = &t[i];
            if (!x || x->state == YQ_TUNE_SKIPPED || x->state == YQ_TUNE_PENDING) continue;
            yq_conv_cfg c = x->best;
            double us = x->best_us;
            if (family >= 0) {
                if (x->family_us[family] <= 0) continue;
                c = x->family_best[family];
                us = x->family_us[family];
            }
            yq_tuned_kernel *r = &k[m++];
            r->node = id;
            r->batch = batches[b];
            r->sm = sm;
            cfg_str(c, r->cfg, sizeof r->cfg);
            r->us = (float)us;
            r->default_us = (float)x->default_us;
        }
    if (!m) {
        free(k);
        k = NULL;
    }
    *out = k;
    *n_out = m;
    return YQ_OK;
}

yq_status yq_tune_merge(yq_tuned_kernel **k, int *n, const yq_tuned_kernel *add, int n_add, yq_error *err)
{
    yq_tuned_kernel *r = realloc(*k, sizeof *r * (size_t)(*n + n_add > 0 ? *n + n_add : 1));
    if (!r) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    *k = r;
    for (int i = 0; i < n_add; i++) {
        int j;
        for (j = 0; j < *n; j++)
            if (r[j].node == add[i].node && r[j].batch == add[i].batch && r[j].sm == add[i].sm) break;
        r[j] = add[i];
        if (j == *n) (*n)++;
    }
    return YQ_OK;
}

