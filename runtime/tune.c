/* Per-layer kernel tuning (runtime/tune.h): tasks, the search strategies, the cost
 * model, the JSON-lines log, and the measurement on the GPU.
 *
 * Log lines (one JSON object each; unknown fields are ignored, so later versions
 * may add some):
 *   a trial   {"key": K, "arch": "sm_90", "cfg": NAME, "ok": true, "us": 41.2, "tops": 412.5,
 *              "default": true (the baseline), "tuner": "model", "time": "2026-..Z"}
 *             {"key": K, "arch": ..., "cfg": NAME, "ok": false, "why": "mismatch: ..."}
 *   a task    {"key": K, "arch": ..., "done": true, "best": NAME, "us": 38.0,
 *              "default": NAME, "default_us": 52.1, "trials": 31}
 * "done" is written only when a search ends by itself (candidates, --trials, early
 * stopping), not when the budget cuts it: the next run resumes such a task, reusing
 * the trials logged so far. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cjson/cJSON.h>
#include "runtime/tune.h"

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

static int same_cfg(yq_conv_cfg a, yq_conv_cfg b)
{
    return a.family == b.family && a.tile == b.tile && a.split_k == b.split_k;
}

static void cfg_str(yq_conv_cfg c, char *buf, size_t cap) { yq_conv_cfg_name(c, buf, cap); }

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
    snprintf(buf, cap, "c%dx%dx%d-f%d-k%ds%dp%d-g%d-%s%s-b%d", is.c, is.h, is.w, c->filters, c->size, c->stride,
             c->pad, c->groups, dtype_tag(it), dtype_tag(ot), batch);
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
            x->def.split_k = 1;
            x->best = x->def;
        }
    }
    *out = t;
    *n = m;
    return YQ_OK;
}

void yq_tune_tasks_free(yq_tune_task *t) { free(t); }

/* ---- shapes from keys (the log holds keys only) ---------------------------------- */

typedef struct kshape { int cin, h, w, f, k, s, p, g, b; char types[16]; } kshape;

static int parse_key(const char *key, kshape *s)
{
    int used = 0;
    memset(s, 0, sizeof *s);
    if (sscanf(key, "c%dx%dx%d-f%d-k%ds%dp%d-g%d-%15[a-z0-9]-b%d%n", &s->cin, &s->h, &s->w, &s->f, &s->k, &s->s, &s->p,
               &s->g, s->types, &s->b, &used) != 10 || key[used] || s->cin < 1 || s->h < 1 || s->w < 1 || s->f < 1 ||
        s->k < 1 || s->s < 1 || s->p < 0 || s->g < 1 || s->b < 1)
        return -1;
    return 0;
}

static int group_kind(const kshape *s) { return s->g == 1 ? 0 : s->g == s->cin && s->f == s->cin ? 1 : 2; }

/* ---- configuration geometry, from the stable names --------------------------------- */

typedef struct geom { int fam, bm, bn, bk, stages, split; } geom;

static geom cfg_geom(yq_conv_cfg c)
{
    char name[64];
    cfg_str(c, name, sizeof name);
    geom g = { c.family, 0, 0, 0, 1, c.split_k ? c.split_k : 1 };
    int bm, bn, bk, st;
    if (sscanf(name, "mma_%dx%dx%d_s%d", &bm, &bn, &bk, &st) == 4 ||
        sscanf(name, "cutlass_%dx%dx%d_s%d", &bm, &bn, &bk, &st) == 4) {
        g.bm = bm; g.bn = bn; g.bk = bk; g.stages = st;
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
    if (g.bm < 1 || g.bn < 1 || g.bk < 1)   /* dw, direct, f32: one kernel each, nothing to rank */
        return launch + t->ops / (sms * 0.3e6);
    /* peak integer ops per microsecond per multiprocessor (H100/H200 class: int8 mma
     * ~15 T/s, dp4a ~1 T/s per SM) times a family efficiency (CUTLASS's main loop measured
     * 1.7-2x ours on the H200) */
    double peak = g.fam == YQ_CONV_CUTLASS ? 15.0e6 * 0.9 : g.fam == YQ_CONV_MMA ? 15.0e6 * 0.55 : 1.0e6 * 0.6;
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

/* ---- the log store ------------------------------------------------------------- */

typedef struct lkey {
    char key[96], arch[16];
    kshape s;
    int has_shape;
    int has_best;
    yq_conv_cfg best;
    double best_us;
    int done;
    yq_conv_cfg done_best, def;
    double done_us, def_us;
    int has_def;
} lkey;

typedef struct ltrial {
    int key;
    yq_conv_cfg cfg;
    int ok;
    double us;
    char why[96];
} ltrial;

struct yq_tune_log {
    lkey *k;
    int nk, capk;
    ltrial *t;
    int nt, capt;
    int read_trials;
};

static int log_key_find(const yq_tune_log *l, const char *key, const char *arch)
{
    for (int i = 0; i < l->nk; i++)
        if (!strcmp(l->k[i].key, key) && !strcmp(l->k[i].arch, arch)) return i;
    return -1;
}

static int log_key_get(yq_tune_log *l, const char *key, const char *arch)
{
    int i = log_key_find(l, key, arch);
    if (i >= 0) return i;
    if (l->nk == l->capk) {
        int nc = l->capk ? 2 * l->capk : 64;
        lkey *p = realloc(l->k, sizeof *p * (size_t)nc);
        if (!p) return -1;
        l->k = p;
        l->capk = nc;
    }
    lkey *k = &l->k[l->nk];
    memset(k, 0, sizeof *k);
    snprintf(k->key, sizeof k->key, "%s", key);
    snprintf(k->arch, sizeof k->arch, "%s", arch);
    k->has_shape = parse_key(key, &k->s) == 0;
    return l->nk++;
}

static int log_add_trial(yq_tune_log *l, const char *key, const char *arch, yq_conv_cfg cfg, int ok, double us,
                         const char *why)
{
    int ki = log_key_get(l, key, arch);
    if (ki < 0) return -1;
    if (l->nt == l->capt) {
        int nc = l->capt ? 2 * l->capt : 256;
        ltrial *p = realloc(l->t, sizeof *p * (size_t)nc);
        if (!p) return -1;
        l->t = p;
        l->capt = nc;
    }
    ltrial *t = &l->t[l->nt++];
    memset(t, 0, sizeof *t);
    t->key = ki;
    t->cfg = cfg;
    t->ok = ok;
    t->us = us;
    if (why) snprintf(t->why, sizeof t->why, "%s", why);
    lkey *k = &l->k[ki];
    if (ok && (!k->has_best || us < k->best_us)) {
        k->has_best = 1;
        k->best = cfg;
        k->best_us = us;
    }
    return 0;
}

static int log_add_done(yq_tune_log *l, const char *key, const char *arch, yq_conv_cfg best, double us, int has_def,
                        yq_conv_cfg def, double def_us)
{
    int ki = log_key_get(l, key, arch);
    if (ki < 0) return -1;
    lkey *k = &l->k[ki];
    k->done = 1;
    k->done_best = best;
    k->done_us = us;
    if (has_def) {
        k->has_def = 1;
        k->def = def;
        k->def_us = def_us;
    }
    if (!k->has_best || us < k->best_us) {
        k->has_best = 1;
        k->best = best;
        k->best_us = us;
    }
    return 0;
}

/* A logged trial of cfg on key: 1 and its result (the fastest correct one, else a failure). */
static int log_known(const yq_tune_log *l, int ki, yq_conv_cfg cfg, yq_trial *out)
{
    int found = 0;
    for (int i = 0; i < l->nt; i++) {
        const ltrial *t = &l->t[i];
        if (t->key != ki || !same_cfg(t->cfg, cfg)) continue;
        if (t->ok && (!found || out->status != YQ_TRIAL_OK || t->us < out->us)) {
            out->status = YQ_TRIAL_OK;
            out->us = t->us;
            out->why[0] = 0;
        } else if (!t->ok && !found) {
            out->status = YQ_TRIAL_ERROR;
            out->us = 0;
            snprintf(out->why, sizeof out->why, "%s", t->why);
        }
        found = 1;
    }
    return found;
}

void yq_tune_log_free(yq_tune_log *l)
{
    if (!l) return;
    free(l->k);
    free(l->t);
    free(l);
}

int yq_tune_log_trials(const yq_tune_log *l) { return l ? l->read_trials : 0; }

int yq_tune_log_best(const yq_tune_log *l, const char *key, const char *arch, yq_conv_cfg *cfg, double *us)
{
    int i = l ? log_key_find(l, key, arch) : -1;
    if (i < 0 || !l->k[i].has_best) return 0;
    if (cfg) *cfg = l->k[i].best;
    if (us) *us = l->k[i].best_us;
    return 1;
}

int yq_tune_log_done(const yq_tune_log *l, const char *key, const char *arch)
{
    int i = l ? log_key_find(l, key, arch) : -1;
    return i >= 0 && l->k[i].done;
}

static double lratio(double a, double b) { return fabs(log(a / b)); }

int yq_tune_log_similar(const yq_tune_log *l, const char *key, const char *arch, char *similar, size_t cap,
                        yq_conv_cfg *cfg)
{
    kshape s;
    if (!l || parse_key(key, &s)) return 0;
    int best = -1;
    double bd = 0;
    for (int i = 0; i < l->nk; i++) {
        const lkey *k = &l->k[i];
        if (!k->has_best || !k->has_shape || strcmp(k->arch, arch) || !strcmp(k->key, key)) continue;
        const kshape *o = &k->s;
        if (o->k != s.k || o->s != s.s || o->p != s.p || group_kind(o) != group_kind(&s) || strcmp(o->types, s.types))
            continue;
        double d = lratio(o->cin, s.cin) + lratio(o->f, s.f) +
                   lratio((double)o->b * o->h * o->w, (double)s.b * s.h * s.w);
        if (best < 0 || d < bd) {
            best = i;
            bd = d;
        }
    }
    if (best < 0) return 0;
    if (similar) snprintf(similar, cap, "%s", l->k[best].key);
    if (cfg) *cfg = l->k[best].best;
    return 1;
}

/* ---- the log file ----------------------------------------------------------------- */

static int arch_ok(const char *a)
{
    if (strncmp(a, "sm_", 3) || !isdigit((unsigned char)a[3])) return 0;
    for (const char *p = a + 3; *p; p++)
        if (!isdigit((unsigned char)*p)) return 0;
    return strlen(a) < 16;
}

/* A configuration name (a JSON string) into cfg: 0, or -1 with the message in why. */
static int cfg_of(const cJSON *name, yq_conv_cfg *cfg, char *why, size_t cap)
{
    if (!yq_conv_cfg_parse(name->valuestring, cfg)) return 0;
    snprintf(why, cap, "unknown kernel configuration '%.40s' (written by another yquant version?)", name->valuestring);
    return -1;
}

/* One line of the log into l; a message in why on failure. */
static int parse_line(yq_tune_log *l, const char *line, char *why, size_t cap)
{
    cJSON *j = cJSON_Parse(line);
    int rc = -1;
    if (!cJSON_IsObject(j)) {
        snprintf(why, cap, "not a JSON object");
        goto done;
    }
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(j, "key"), *arch = cJSON_GetObjectItemCaseSensitive(j, "arch");
    kshape ks;
    if (!cJSON_IsString(key) || parse_key(key->valuestring, &ks) || strlen(key->valuestring) >= 96) {
        snprintf(why, cap, "no \"key\" naming a conv shape (such as \"c256x52x52-f512-k3s2p1-g1-s8s8-b32\")");
        goto done;
    }
    if (!cJSON_IsString(arch) || !arch_ok(arch->valuestring)) {
        snprintf(why, cap, "no \"arch\" such as \"sm_90\"");
        goto done;
    }
    const cJSON *done = cJSON_GetObjectItemCaseSensitive(j, "done");
    const cJSON *us = cJSON_GetObjectItemCaseSensitive(j, "us");
    yq_conv_cfg cfg, def = { 0, 0, 1, 0 };
    if (cJSON_IsTrue(done)) {
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(j, "best"), *d = cJSON_GetObjectItemCaseSensitive(j, "default");
        const cJSON *du = cJSON_GetObjectItemCaseSensitive(j, "default_us");
        if (!cJSON_IsString(b)) {
            snprintf(why, cap, "a \"done\" line without \"best\"");
            goto done;
        }
        if (cfg_of(b, &cfg, why, cap)) goto done;
        if (!cJSON_IsNumber(us) || !isfinite(us->valuedouble) || us->valuedouble <= 0) {
            snprintf(why, cap, "\"us\" must be a time > 0");
            goto done;
        }
        int has_def = cJSON_IsString(d);
        if (has_def && cfg_of(d, &def, why, cap)) goto done;
        double dus = cJSON_IsNumber(du) && isfinite(du->valuedouble) && du->valuedouble > 0 ? du->valuedouble : 0;
        if (log_add_done(l, key->valuestring, arch->valuestring, cfg, us->valuedouble, has_def, def, dus)) {
            snprintf(why, cap, "out of memory");
            goto done;
        }
        rc = 0;
        goto done;
    }
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, "cfg"), *ok = cJSON_GetObjectItemCaseSensitive(j, "ok");
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "why");
    if (!cJSON_IsString(c)) {
        snprintf(why, cap, "neither a trial (\"cfg\") nor a finished task (\"done\")");
        goto done;
    }
    if (cfg_of(c, &cfg, why, cap)) goto done;
    if (!cJSON_IsBool(ok)) {
        snprintf(why, cap, "a trial without \"ok\": true or false");
        goto done;
    }
    if (cJSON_IsTrue(ok) && (!cJSON_IsNumber(us) || !isfinite(us->valuedouble) || us->valuedouble <= 0)) {
        snprintf(why, cap, "a correct trial needs \"us\", a time > 0");
        goto done;
    }
    if (log_add_trial(l, key->valuestring, arch->valuestring, cfg, cJSON_IsTrue(ok), cJSON_IsTrue(ok) ? us->valuedouble : 0,
                      cJSON_IsString(w) ? w->valuestring : "failed")) {
        snprintf(why, cap, "out of memory");
        goto done;
    }
    l->read_trials++;
    rc = 0;
done:
    cJSON_Delete(j);
    return rc;
}

yq_status yq_tune_log_read(const char *path, yq_tune_log **out, yq_error *err)
{
    *out = NULL;
    yq_tune_log *l = calloc(1, sizeof *l);
    if (!l) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f) {
        if (path && errno != ENOENT) {
            yq_status st = yq_fail(err, YQ_ERR_IO, "%s: cannot read the tuning log: %s", path, strerror(errno));
            yq_tune_log_free(l);
            return st;
        }
        *out = l;
        return YQ_OK;
    }
    char *line = NULL, why[160];
    size_t cap = 0;
    ssize_t len;
    int no = 0;
    yq_status st = YQ_OK;
    while ((len = getline(&line, &cap, f)) >= 0) {
        no++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        const char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) continue;
        if (strlen(line) != (size_t)len) {
            st = yq_fail(err, YQ_ERR_FORMAT, "%s:%d: a NUL byte in the line (not a tuning log?)", path, no);
            break;
        }
        if (parse_line(l, p, why, sizeof why)) {
            st = yq_fail(err, YQ_ERR_FORMAT, "%s:%d: %s", path, no, why);
            break;
        }
    }
    if (st == YQ_OK && ferror(f)) st = yq_fail(err, YQ_ERR_IO, "%s: read error", path);
    free(line);
    fclose(f);
    if (st) {
        yq_tune_log_free(l);
        return st;
    }
    *out = l;
    return YQ_OK;
}

typedef struct logw { FILE *f; const char *path; const char *tuner; } logw;

static void now_iso(char *buf, size_t cap)
{
    time_t t = time(NULL);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm)) snprintf(buf, cap, "unknown");
}

static yq_status log_put(logw *w, cJSON *j, yq_error *err)
{
    char ts[32];
    now_iso(ts, sizeof ts);
    cJSON_AddStringToObject(j, "time", ts);
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    int ok = s && fputs(s, w->f) >= 0 && fputc('\n', w->f) >= 0 && fflush(w->f) == 0;
    cJSON_free(s);
    return ok ? YQ_OK : yq_fail(err, YQ_ERR_IO, "%s: cannot append to the tuning log: %s", w->path, strerror(errno));
}

static yq_status log_trial(logw *w, const yq_tune_task *t, const char *arch, yq_conv_cfg cfg, const yq_trial *r,
                           int is_default, yq_error *err)
{
    if (!w->f) return YQ_OK;
    char name[64];
    cfg_str(cfg, name, sizeof name);
    cJSON *j = cJSON_CreateObject();
    if (!j) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    cJSON_AddStringToObject(j, "key", t->key);
    cJSON_AddStringToObject(j, "arch", arch);
    cJSON_AddStringToObject(j, "cfg", name);
    cJSON_AddBoolToObject(j, "ok", r->status == YQ_TRIAL_OK);
    if (r->status == YQ_TRIAL_OK) {
        cJSON_AddNumberToObject(j, "us", round(r->us * 1000) / 1000);
        cJSON_AddNumberToObject(j, "tops", round(t->ops / r->us * 1e-6 * 100) / 100);
    } else {
        cJSON_AddStringToObject(j, "why", r->why);
    }
    if (is_default) cJSON_AddBoolToObject(j, "default", 1);
    cJSON_AddStringToObject(j, "tuner", w->tuner);
    return log_put(w, j, err);
}

static yq_status log_done(logw *w, const yq_tune_task *t, const char *arch, yq_error *err)
{
    if (!w->f) return YQ_OK;
    char b[64], d[64];
    cfg_str(t->best, b, sizeof b);
    cfg_str(t->def, d, sizeof d);
    cJSON *j = cJSON_CreateObject();
    if (!j) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    cJSON_AddStringToObject(j, "key", t->key);
    cJSON_AddStringToObject(j, "arch", arch);
    cJSON_AddBoolToObject(j, "done", 1);
    cJSON_AddStringToObject(j, "best", b);
    cJSON_AddNumberToObject(j, "us", round(t->best_us * 1000) / 1000);
    cJSON_AddStringToObject(j, "default", d);
    cJSON_AddNumberToObject(j, "default_us", round(t->default_us * 1000) / 1000);
    cJSON_AddNumberToObject(j, "trials", t->trials);
    cJSON_AddStringToObject(j, "tuner", w->tuner);
    return log_put(w, j, err);
}

/* ---- search orders ---------------------------------------------------------------- */

static uint32_t rng_next(uint32_t *s)
{
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

static uint32_t rng_seed(uint32_t seed, const char *key)
{
    uint32_t h = 2166136261u ^ seed;
    for (const char *p = key; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
    return h ? h : 0x9e3779b9u;
}

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
    int ki = log_key_find(r->log, t->key, r->arch);
    if (ki >= 0 && log_known(r->log, ki, cfg, out)) return YQ_OK;
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
    if (log_add_trial(r->log, t->key, r->arch, cfg, out->status == YQ_TRIAL_OK, out->us, out->why))
        return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    return log_trial(&r->w, t, r->arch, cfg, out, is_default, err);
}

static double tops(const yq_tune_task *t, double us) { return us > 0 ? t->ops / us * 1e-6 : 0; }

static void report(runctx *r, int i, int n, const yq_tune_task *t, int planned, double cur_us, int finished)
{
    if (!r->o->progress) return;
    yq_tune_progress p = { i + 1, n, t, t->trials, planned, tops(t, cur_us), tops(t, t->best_us), finished };
    r->o->progress(r->o->progress_ctx, &p);
}

/* Whether the log's finished search of t can stand: its best is still a candidate. */
static int take_logged(runctx *r, yq_tune_task *t)
{
    int ki = log_key_find(r->log, t->key, r->arch);
    if (ki < 0 || !r->log->k[ki].done || r->o->retune) return 0;
    const lkey *k = &r->log->k[ki];
    yq_conv_cfg best = k->has_best ? k->best : k->done_best;
    if (cand_index(t, best) < 0 && !same_cfg(best, t->def)) return 0;
    t->best = best;
    t->best_us = k->has_best ? k->best_us : k->done_us;
    yq_trial d;
    if (log_known(r->log, ki, t->def, &d) && d.status == YQ_TRIAL_OK) t->default_us = d.us;
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
    if (n < 0 || (n > 0 && !tasks) || !dev || !dev->measure || !arch || !arch_ok(arch))
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
            int ki = log_key_get(r.log, t->key, arch);
            if (ki < 0 || log_add_done(r.log, t->key, arch, t->best, t->best_us, 1, t->def, t->default_us)) {
                st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
                break;
            }
            if ((st = log_done(&r.w, t, arch, err))) break;
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

/* ---- measurement on the GPU ---------------------------------------------------------- */

#define GUARD 256
#define GUARD_BYTE 0xA5

typedef struct gpu_ctx {
    const yq_graph *g;
    yq_cuda_conv *c;
    void *din, *dout, *probe;
    size_t out_bytes, all_bytes;
    unsigned char *ref, *host;
    yq_dtensor in, out;
    int batch;
    yq_status run_st;
    yq_error run_err;
} gpu_ctx;

static void gpu_end(void *ctx, yq_tune_task *t)
{
    (void)t;
    gpu_ctx *c = ctx;
    yq_cuda_conv_free(c->c);
    yq_cuda_free(c->din);
    yq_cuda_free(c->dout);
    free(c->ref);
    free(c->host);
    c->c = NULL;
    c->din = c->dout = NULL;
    c->ref = c->host = NULL;
}

static yq_status run_once(void *ctx)
{
    gpu_ctx *c = ctx;
    c->run_st = yq_cuda_conv_run(c->c, &c->in, &c->out, c->batch, NULL, &c->run_err);
    return c->run_st;
}

static yq_status gpu_begin(void *ctx, yq_tune_task *t, yq_error *err)
{
    gpu_ctx *c = ctx;
    const yq_graph *g = c->g;
    const yq_node *n = &g->nodes[t->node];
    c->batch = t->batch;
    size_t in_img = yq_dlayout_bytes(t->in_t, t->cin, t->ih, t->iw);
    size_t in_bytes = in_img * (size_t)t->batch;
    c->out_bytes = yq_dlayout_bytes(t->out_t, t->f, t->oh, t->ow) * (size_t)t->batch;
    c->all_bytes = c->out_bytes + GUARD;
    size_t nchw = (size_t)t->cin * t->ih * t->iw * (size_t)t->batch;
    unsigned char *h = malloc(nchw > in_bytes ? nchw : in_bytes), *pad = malloc(in_bytes);
    c->ref = malloc(c->all_bytes);
    c->host = malloc(c->all_bytes);
    yq_status st = h && pad && c->ref && c->host ? YQ_OK : yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    if (!st) {
        /* int8 in [-127, 127] (or any uint8), the padding channels zero as the executor keeps them */
        uint32_t s = rng_seed(12345, t->key);
        for (size_t i = 0; i < nchw; i++) {
            uint32_t v = rng_next(&s);
            h[i] = t->in_t == YQ_U8 ? (unsigned char)v : (unsigned char)(int8_t)((int)(v % 255) - 127);
        }
        yq_nchw_to_nhwc4(h, t->cin, t->ih, t->iw, t->batch, pad);
    }
    if (!st) st = yq_cuda_conv_new(g, n, &g->q[t->node], &c->c, err);
    if (!st) st = yq_cuda_malloc(&c->din, in_bytes, err);
    if (!st) st = yq_cuda_malloc(&c->dout, c->all_bytes, err);
    if (!st) st = yq_cuda_h2d(c->din, pad, in_bytes, err);
    free(h);
    free(pad);
    if (!st) {
        c->in = (yq_dtensor){ c->din, t->in_t, t->cin, t->ih, t->iw, g->q[n->src[0]].scale, g->q[n->src[0]].qmin,
                              g->q[n->src[0]].qmax, 0 };
        c->out = (yq_dtensor){ c->dout, t->out_t, t->f, t->oh, t->ow, g->q[t->node].scale, g->q[t->node].qmin,
                               g->q[t->node].qmax, 0 };
        /* the reference: the untuned default (a fresh conv runs its heuristic) */
        if (!(st = yq_cuda_memset(c->dout, GUARD_BYTE, c->all_bytes, err)) &&
            !(st = yq_cuda_conv_run(c->c, &c->in, &c->out, t->batch, NULL, err)) && !(st = yq_cuda_sync(NULL, err)))
            st = yq_cuda_d2h(c->ref, c->dout, c->all_bytes, err);
    }
    if (st) gpu_end(c, t);
    return st;
}

/* After a failed trial: is the device still usable? */
static int device_alive(gpu_ctx *c, char *why, size_t cap)
{
    yq_error e;
    if (yq_cuda_memset(c->probe, 0, 256, &e) == YQ_OK && yq_cuda_sync(NULL, &e) == YQ_OK) return 1;
    snprintf(why, cap, "the GPU is unusable after it: %.120s", e.msg);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void gpu_measure(void *ctx, const yq_tune_task *t, yq_conv_cfg cfg, yq_trial *out)
{
    gpu_ctx *c = ctx;
    yq_error e;
    int is_def = same_cfg(cfg, t->def);
    out->status = YQ_TRIAL_ERROR;
    if (yq_cuda_conv_set_cfg(c->c, cfg, t->batch, &e)) {
        snprintf(out->why, sizeof out->why, "%.150s", e.msg);
        if (e.code == YQ_ERR_CUDA && !device_alive(c, out->why, sizeof out->why)) out->status = YQ_TRIAL_FATAL;
        return;
    }
    yq_status st = yq_cuda_memset(c->dout, GUARD_BYTE, c->all_bytes, &e);
    if (!st) st = yq_cuda_conv_run(c->c, &c->in, &c->out, t->batch, NULL, &e);
    if (!st) st = yq_cuda_sync(NULL, &e);
    if (!st) st = yq_cuda_d2h(c->host, c->dout, c->all_bytes, &e);
    if (st) {
        snprintf(out->why, sizeof out->why, "%.150s", e.msg);
        if (!device_alive(c, out->why, sizeof out->why)) out->status = YQ_TRIAL_FATAL;
        return;
    }
    if (memcmp(c->host, c->ref, c->all_bytes)) {
        size_t first = 0, diff = 0;
        for (size_t i = c->all_bytes; i-- > 0;)
            if (c->host[i] != c->ref[i]) {
                first = i;
                diff++;
            }
        out->status = YQ_TRIAL_MISMATCH;
        snprintf(out->why, sizeof out->why, "mismatch: %zu of %zu bytes differ from the default's, the first at byte %zu%s",
                 diff, c->all_bytes, first, first >= c->out_bytes ? " (a guard byte: written outside the output)" : "");
        return;
    }
    /* one run first: a configuration far slower than the default is not timed further */
    float ms = 0;
    c->run_st = YQ_OK;
    st = yq_cuda_time(NULL, 1, run_once, c, &ms, &e);
    if (c->run_st) {   /* the conv's own error (yq_cuda_time passes it on without a message) */
        st = c->run_st;
        e = c->run_err;
    }
    if (st) {
        snprintf(out->why, sizeof out->why, "%.150s", e.msg);
        if (!device_alive(c, out->why, sizeof out->why)) out->status = YQ_TRIAL_FATAL;
        return;
    }
    double us1 = 1e3 * (double)ms;
    double limit = t->default_us > 0 && !is_def ? fmax(50 * t->default_us, 5000) : 1e7;
    if (us1 > limit) {
        out->status = YQ_TRIAL_TIMEOUT;
        snprintf(out->why, sizeof out->why, "timeout: %.0f us for one run, over %.0f us (50x the default)", us1, limit);
        return;
    }
    /* about 1.5 ms of back-to-back runs, three times: the median of the three means */
    int reps = us1 > 0 ? (int)(1500 / us1) : 100;
    reps = reps < 2 ? 2 : reps > 100 ? 100 : reps;
    double m[3];
    for (int k = 0; k < 3; k++) {
        st = yq_cuda_time(NULL, reps, run_once, c, &ms, &e);
        if (c->run_st) {
            st = c->run_st;
            e = c->run_err;
        }
        if (st) {
            snprintf(out->why, sizeof out->why, "%.150s", e.msg);
            if (!device_alive(c, out->why, sizeof out->why)) out->status = YQ_TRIAL_FATAL;
            return;
        }
        m[k] = 1e3 * (double)ms;
    }
    qsort(m, 3, sizeof *m, cmp_double);
    out->us = m[1];
    out->status = YQ_TRIAL_OK;
}

/* "NVIDIA H200 (sm_90, 132 SMs)" -> 132 */
static int device_sms(void)
{
    char name[256];
    yq_error e;
    if (yq_cuda_device_name(name, sizeof name, &e)) return 0;
    const char *p = strstr(name, " SMs)");
    if (!p) return 0;
    while (p > name && isdigit((unsigned char)p[-1])) p--;
    return atoi(p);
}

yq_status yq_tune_gpu(const yq_graph *g, yq_tune_task *t, int n, const yq_tune_opt *opt, yq_tune_summary *sum,
                      yq_error *err)
{
    if (sum) memset(sum, 0, sizeof *sum);
    if (yq_cuda_device_count() == 0)
        return yq_fail(err, YQ_ERR_CUDA, "no CUDA device is available (no NVIDIA driver or no GPU): tuning measures "
                       "the kernels on the GPU that will run them");
    int sm = yq_cuda_arch();
    if (sm <= 0) return yq_fail(err, YQ_ERR_CUDA, "cannot read the GPU's compute capability");
    yq_tune_opt o = opt ? *opt : yq_tune_defaults();
    if (o.sms <= 0) o.sms = device_sms();
    for (int i = 0; i < n; i++) {
        yq_tune_task *x = &t[i];
        yq_cuda_conv *c;
        yq_status st = yq_cuda_conv_new(g, &g->nodes[x->node], &g->q[x->node], &c, err);
        if (st) return st;
        char key[96];
        yq_cuda_conv_key(c, x->in_t, x->batch, key, sizeof key);
        yq_conv_cfg all[YQ_CONV_MAX_CFGS];
        int m = yq_cuda_conv_candidates(c, x->batch, all, YQ_CONV_MAX_CFGS);
        x->def = yq_cuda_conv_default_cfg(c, x->batch);
        yq_cuda_conv_free(c);
        if (strcmp(key, x->key))
            return yq_fail(err, YQ_ERR_INVALID_ARG, "node %d: tuning key %s, the kernel's %s (a yquant bug)", x->node,
                           x->key, key);
        if (m > YQ_CONV_MAX_CFGS) m = YQ_CONV_MAX_CFGS;
        x->n_cand = 0;
        for (int k = 0; k < m; k++)
            if (!o.families || (o.families >> all[k].family & 1u) || same_cfg(all[k], x->def)) x->cand[x->n_cand++] = all[k];
    }
    gpu_ctx c;
    memset(&c, 0, sizeof c);
    c.g = g;
    yq_status st = yq_cuda_malloc(&c.probe, 256, err);
    if (st) return st;
    yq_tune_device dev = { &c, gpu_begin, gpu_measure, gpu_end };
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%d", sm);
    st = yq_tune_run(t, n, arch, &o, &dev, sum, err);
    gpu_end(&c, NULL);
    yq_cuda_free(c.probe);
    return st;
}
