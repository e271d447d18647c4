/* include/yq_tune.h: the tuner of runtime/tune.h on a model, as a library. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "yq_tune.h"
#include "kernels/cuda.h"
#include "quant/rewrite.h"
#include "runtime/package.h"
#include "runtime/session.h"
#include "runtime/tune.h"
#include "runtime/tuning.h"

struct yq_tuning {
    const yq_model *m;
    const yq_graph *g;            /* m's graph, or own (an FP32 model quantized here) */
    yq_graph *own;
    yq_tune_opt o;
    yq_tuning_opt uo;
    char *log;                    /* a copy of the log's path */
    int batches[16], nb;
    yq_tune_task *tasks;
    int ntask;
    yq_tuning_info info;
    yq_tuned_kernel *k;           /* the choices, after a run */
    int nk;
    int ran;
};

yq_tuning_opt yq_tuning_defaults(void)
{
    yq_tune_opt t = yq_tune_defaults();
    yq_tuning_opt o;
    memset(&o, 0, sizeof o);
    o.batches[0] = 1;
    o.n_batches = 1;
    o.trials = t.trials;
    o.early_stopping = t.early_stopping;
    o.budget_s = t.budget_s;
    o.seed = t.seed;
    return o;
}

static int parse_families(const char *s, unsigned *mask)
{
    static const struct { const char *name; int v; } fam[] = {
        { "dp4a", YQ_CONV_DP4A }, { "mma", YQ_CONV_MMA }, { "cutlass", YQ_CONV_CUTLASS }, { "halo", YQ_CONV_HALO },
        { "img", YQ_CONV_IMG },   { "wgmma", YQ_CONV_WGMMA }, { "wgh", YQ_CONV_WGH }, { "wg1", YQ_CONV_WG1 },
    };
    *mask = 0;
    for (const char *p = s; *p; ) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        size_t k = 0;
        while (k < sizeof fam / sizeof *fam && (strlen(fam[k].name) != n || strncmp(fam[k].name, p, n))) k++;
        if (k == sizeof fam / sizeof *fam) return -1;
        *mask |= 1u << fam[k].v;
        if (!e) break;
        p = e + 1;
    }
    /* the families with one kernel each are always allowed: nothing else runs those convs */
    if (*mask) *mask |= 1u << YQ_CONV_DW | 1u << YQ_CONV_DIRECT | 1u << YQ_CONV_F32 | 1u << YQ_CONV_F16;
    return *mask ? 0 : -1;
}

yq_status yq_tuning_options(const yq_tuning_opt *o, yq_tune_opt *t, int *dev, yq_error *err)
{
    *t = yq_tune_defaults();
    if (o->tuner && yq_tuner_parse(o->tuner, &t->tuner))
        return yq_fail(err, YQ_ERR_INVALID_ARG, "tuner \"%s\": expected grid, random, ga or model", o->tuner);
    if (o->families && parse_families(o->families, &t->families))
        return yq_fail(err, YQ_ERR_INVALID_ARG, "families \"%s\": expected a list of dp4a, mma, cutlass, halo, img, "
                       "wgmma, wgh", o->families);
    if (o->n_batches < 1 || o->n_batches > 16)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "%d batch sizes: expected 1..16", o->n_batches);
    for (int b = 0; b < o->n_batches; b++)
        if (o->batches[b] < 1 || o->batches[b] > 4096)
            return yq_fail(err, YQ_ERR_INVALID_ARG, "batch %d: expected 1..4096", o->batches[b]);
    if (o->trials < 0 || o->early_stopping < 0 || !(o->budget_s >= 0))
        return yq_fail(err, YQ_ERR_INVALID_ARG, "trials %d, early stopping %d, budget %g: expected values >= 0",
                       o->trials, o->early_stopping, o->budget_s);
    *dev = 0;
    if (o->device) {
        yq_status st = yq_device_parse(o->device, dev, err);
        if (st != YQ_OK) return st;
        if (*dev < 0)
            return yq_fail(err, YQ_ERR_INVALID_ARG, "device %s: tuning measures kernels on a GPU (cuda or cuda:N)",
                           o->device);
    }
    t->trials = o->trials;
    t->early_stopping = o->early_stopping;
    t->budget_s = o->budget_s;
    t->seed = o->seed;
    t->retune = o->retune != 0;
    t->log_path = o->log;
    return YQ_OK;
}

yq_status yq_tuning_check(const yq_tuning_opt *o, yq_error *err)
{
    if (!o) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_tuning_check: no options");
    yq_tune_opt t;
    int dev;
    return yq_tuning_options(o, &t, &dev, err);
}

void yq_tuning_free(yq_tuning *t)
{
    if (!t) return;
    yq_tune_tasks_free(t->tasks);
    yq_graph_free(t->own);
    free(t->k);
    free(t->log);
    free(t);
}

yq_status yq_tuning_new(const yq_model *m, const yq_tuning_opt *o, yq_tuning **out, yq_error *err)
{
    if (!out) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_tuning_new: NULL output");
    *out = NULL;
    if (!m || !o) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_tuning_new: NULL model or options");
    yq_tuning *t = calloc(1, sizeof *t);
    if (!t) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    t->m = m;
    t->uo = *o;
    t->uo.families = t->uo.tuner = t->uo.device = t->uo.log = NULL;   /* (not kept: the tuner's options hold them) */
    int dev = 0;
    yq_status st = yq_tuning_options(o, &t->o, &dev, err);
    if (st == YQ_OK && o->log && !(t->log = strdup(o->log))) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    t->o.log_path = t->log;
    const yq_graph *g = yq_model_graph(m);
    if (st == YQ_OK && !yq_model_has_weights(m))
        st = yq_fail(err, YQ_ERR_INVALID_ARG, "%s: a cfg without weights cannot be tuned", g->cfg_path);
    if (st == YQ_OK && !g->q) {
        /* an FP32 model: int8 without calibration (the kernels' speed does not depend on the
         * thresholds) */
        st = yq_quantize_uncalibrated(g, o->head_int8, &t->own, err);
        g = t->own;
    }
    t->g = g;
    if (st == YQ_OK) {
        memcpy(t->batches, o->batches, sizeof t->batches);
        t->nb = o->n_batches;
        st = yq_tune_tasks(g, t->batches, t->nb, &t->tasks, &t->ntask, err);
    }
    if (st == YQ_OK && t->ntask == 0) st = yq_fail(err, YQ_ERR_UNSUPPORTED, "%s has no int8 conv to tune", g->cfg_path);
    /* the log before the GPU: a bad line is reported wherever this runs */
    if (st == YQ_OK) {
        yq_tune_log *lg = NULL;
        st = yq_tune_log_read(t->log, &lg, err);
        t->info.log_trials = lg ? yq_tune_log_trials(lg) : 0;
        yq_tune_log_free(lg);
    }
    int ndev = st == YQ_OK ? yq_cuda_device_count() : 0;
    if (st == YQ_OK && ndev == 0)
        st = yq_fail(err, YQ_ERR_UNSUPPORTED, "no CUDA device is available (no NVIDIA driver or no GPU); tuning measures "
                     "the kernels on the GPU that will run them");
    if (st == YQ_OK && dev >= ndev) st = yq_fail(err, YQ_ERR_CUDA, "cuda:%d: no such device (%d present)", dev, ndev);
    if (st == YQ_OK && (st = yq_cuda_set_device(dev, err)) == YQ_OK)
        st = yq_cuda_device_name(t->info.gpu, sizeof t->info.gpu, err);
    if (st != YQ_OK) {
        yq_tuning_free(t);
        return st;
    }
    t->info.device = dev;
    t->info.sm = yq_cuda_arch();
    t->info.tasks = t->ntask;
    for (int i = 0; i < t->ntask; i++) t->info.convs += t->tasks[i].n_nodes;
    t->info.convs /= t->nb;
    t->info.tuner = yq_tuner_name(t->o.tuner);
    *out = t;
    return YQ_OK;
}

void yq_tuning_describe(const yq_tuning *t, yq_tuning_info *out)
{
    if (t && out) *out = t->info;
}

static const char *state_name(yq_tune_state s)
{
    switch (s) {
    case YQ_TUNE_SEARCHED: return "tuned";
    case YQ_TUNE_LOGGED: return "from log";
    case YQ_TUNE_PARTIAL: return "budget (partial)";
    case YQ_TUNE_SKIPPED: return "budget (default)";
    default: return "pending";
    }
}

static void on_progress(void *ctx, const yq_tune_progress *p)
{
    const yq_tuning *t = ctx;
    yq_tuning_progress q = { p->task, p->n_tasks, p->trial, p->n_trials, p->cur_tops, p->best_tops, p->finished,
                             state_name(p->t->state) };
    t->uo.progress(t->uo.ctx, &q);
}

yq_status yq_tuning_run(yq_tuning *t, yq_tune_summary *sum, yq_error *err)
{
    if (!t) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_tuning_run: no tuning");
    yq_tune_opt o = t->o;
    if (t->uo.progress) {
        o.progress = on_progress;
        o.progress_ctx = t;
    }
    yq_tune_summary s;
    yq_status st = yq_cuda_set_device(t->info.device, err);
    if (st == YQ_OK) st = yq_tune_gpu(t->g, t->tasks, t->ntask, &o, &s, err);
    free(t->k);
    t->k = NULL;
    t->nk = 0;
    if (st == YQ_OK) st = yq_tune_choices(t->g, t->tasks, t->ntask, t->info.sm, -1, &t->k, &t->nk, err);
    if (st == YQ_OK) {
        t->ran = 1;
        if (sum) *sum = s;
    }
    return st;
}

yq_status yq_tuning_task_get(const yq_tuning *t, int i, yq_tuning_task *out, yq_error *err)
{
    if (!t || !out) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_tuning_task_get: NULL argument");
    if (i < 0 || i >= t->ntask) return yq_fail(err, YQ_ERR_INVALID_ARG, "task %d: expected 0..%d", i, t->ntask - 1);
    const yq_tune_task *x = &t->tasks[i];
    memset(out, 0, sizeof *out);
    snprintf(out->key, sizeof out->key, "%s", x->key);
    out->batch = x->batch;
    out->convs = x->n_nodes;
    out->state = state_name(x->state);
    yq_conv_cfg_name(x->def, out->default_cfg, sizeof out->default_cfg);
    yq_conv_cfg_name(x->best, out->best_cfg, sizeof out->best_cfg);
    out->default_us = x->default_us;
    out->best_us = x->best_us;
    out->ops = x->ops;
    out->trials = x->trials;
    out->failed = x->failed;
    out->dp4a_us = x->family_us[YQ_CONV_DP4A];
    out->mma_us = x->family_us[YQ_CONV_MMA];
    snprintf(out->started_from, sizeof out->started_from, "%s", x->similar);
    return YQ_OK;
}

yq_tuning_sums yq_tune_batch_sums(const yq_tune_task *t, int n, int batch)
{
    yq_tuning_sums s = { 0, 0, 0, 0, 0, 0 };
    for (int i = 0; i < n; i++) {
        const yq_tune_task *x = &t[i];
        if (x->batch != batch || x->default_us <= 0) continue;
        double w = x->n_nodes, d = x->default_us;
        s.default_us += w * d;
        s.dp4a_us += w * (x->family_us[YQ_CONV_DP4A] > 0 ? x->family_us[YQ_CONV_DP4A] : d);
        s.mma_us += w * (x->family_us[YQ_CONV_MMA] > 0 ? x->family_us[YQ_CONV_MMA] : d);
        s.tuned_us += w * (x->best_us > 0 ? x->best_us : d);
        s.convs += x->n_nodes;
        s.shapes++;
    }
    return s;
}

yq_tuning_sums yq_tuning_batch_sums(const yq_tuning *t, int batch)
{
    yq_tuning_sums none = { 0, 0, 0, 0, 0, 0 };
    return t ? yq_tune_batch_sums(t->tasks, t->ntask, batch) : none;
}

int yq_tuning_choices(const yq_tuning *t) { return t ? t->nk : 0; }

yq_status yq_tuning_save(const yq_tuning *t, const char *path, long long created_unix, int *stored, yq_error *err)
{
    if (!t || !path) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_tuning_save: NULL argument");
    const yq_package_info *info = yq_model_info(t->m);
    if (!info || t->own) return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: not a package: its choices stay in the log", path);
    if (!t->ran || t->nk == 0) return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: nothing tuned to store", path);
    yq_tuned_kernel *merged = NULL;
    int nmerged = 0;
    if (info->n_kernels > 0) {
        if (!(merged = malloc(sizeof *merged * (size_t)info->n_kernels))) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
        memcpy(merged, info->kernels, sizeof *merged * (size_t)info->n_kernels);
        nmerged = info->n_kernels;
    }
    yq_status st = yq_tune_merge(&merged, &nmerged, t->k, t->nk, err);
    if (st == YQ_OK) {
        yq_package_meta meta;
        yq_package_meta_from_info(info, &meta);
        meta.kernels = merged;
        meta.n_kernels = nmerged;
        meta.created_unix = created_unix;
        st = yq_package_write(path, t->g, &meta, err);
    }
    if (st == YQ_OK && stored) *stored = nmerged;
    free(merged);
    return st;
}
