/* The GPU latency of an int8 forward with tuned kernels (runtime/latency.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "kernels/cuda.h"
#include "kernels/cuda_bench.h"
#include "ir/stats.h"
#include "runtime/exec_cuda.h"
#include "runtime/engine.h"
#include "runtime/latency.h"
#include "runtime/session.h"

int yq_gpu_count(void) { return yq_cuda_device_count(); }

yq_status yq_gpu_name(int device, char *buf, size_t cap, yq_error *err)
{
    if (!buf || !cap) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_gpu_name: no buffer");
    buf[0] = 0;
    int n = yq_cuda_device_count();
    if (device < 0 || device >= n)
        return yq_fail(err, YQ_ERR_CUDA, "cuda:%d: this machine has %d CUDA device%s", device, n, n == 1 ? "" : "s");
    yq_status st = yq_cuda_set_device(device, err);
    return st == YQ_OK ? yq_cuda_device_name(buf, cap, err) : st;
}

yq_status yq_model_latency(const yq_model *m, const yq_latency_opt *o, yq_latency *out, yq_error *err)
{
    if (!m) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_model_latency: no model");
    return yq_latency_gpu(yq_model_graph(m), o, out, err);
}

yq_latency_opt yq_latency_defaults(void)
{
    yq_latency_opt o;
    memset(&o, 0, sizeof o);
    o.batch = 1;
    o.tune = 1;
    o.tune_budget_s = 60;
    o.tune_trials = 32;
    o.warmup = 10;
    o.runs = 100;
    return o;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Median, min and mean of ms[n] (ir/stats.h); an error only without memory for them. */
static yq_status stats(const float *ms, int n, double *med, double *mn, double *mean, yq_error *err)
{
    yq_stats s = yq_stats_of_f(ms, n);
    if (s.n < 1) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    *med = s.median, *mn = s.min, *mean = s.mean;
    return YQ_OK;
}

/* The kernel choices for g at batch: tuned now (the log's finished shapes reused), or
 * with o->tune off the log's fastest logged configuration per shape, nothing measured.
 * *k malloc'ed (NULL when *nk is 0). */
static yq_status choices(const yq_graph *g, const yq_latency_opt *o, int sm, yq_latency *r, yq_tuned_kernel **k,
                         int *nk, yq_error *err)
{
    *k = NULL;
    *nk = 0;
    yq_tune_task *t = NULL;
    int n = 0;
    yq_status st = yq_tune_tasks(g, &o->batch, 1, &t, &n, err);
    if (st) return st;
    if (n == 0) {
        yq_tune_tasks_free(t);
        return YQ_OK;
    }
    if (o->tune) {
        yq_tune_opt to = yq_tune_defaults();
        to.log_path = o->tune_log;
        to.budget_s = o->tune_budget_s;
        to.trials = o->tune_trials;
        st = yq_tune_gpu(g, t, n, &to, &r->tune, err);
    } else if (o->tune_log) {
        yq_tune_log *l = NULL;
        char arch[16];
        snprintf(arch, sizeof arch, "sm_%d", sm);
        st = yq_tune_log_read(o->tune_log, &l, err);
        for (int i = 0; st == YQ_OK && i < n; i++) {
            yq_conv_cfg c;
            double us;
            if (!yq_tune_log_best(l, t[i].key, arch, &c, &us)) continue;
            t[i].best = c;
            t[i].best_us = us;
            t[i].state = YQ_TUNE_LOGGED;
            r->tune.logged++;
        }
        r->tune.tasks = n;
        yq_tune_log_free(l);
    }
    if (st == YQ_OK && (o->tune || o->tune_log)) st = yq_tune_choices(g, t, n, sm, -1, k, nk, err);
    yq_tune_tasks_free(t);
    return st;
}

/* The deterministic input pattern of cli/cmd_bench.c: values in [0, 1]. */
static void fill_input(float *x, yq_shape s, int batch)
{
    size_t n = (size_t)yq_shape_size(s) * (size_t)batch;
    for (size_t i = 0; i < n; i++) x[i] = (float)((i * 7 + (i / (size_t)s.w) * 13) % 256) / 255.f;
}

typedef struct fwd { yq_engine *e; int batch; } fwd;
static yq_status enqueue(void *ctx, yq_error *err)
{
    fwd *f = ctx;
    return yq_engine_enqueue(f->e, f->batch, err);
}

yq_status yq_latency_gpu(const yq_graph *g, const yq_latency_opt *opt, yq_latency *out, yq_error *err)
{
    yq_latency_opt o = opt ? *opt : yq_latency_defaults();
    if (!g || !out) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_latency_gpu: no graph");
    if (!g->q) return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: GPU latency is measured on an int8 graph (quantize it first)",
                              g->cfg_path);
    if (o.batch < 1 || o.batch > 4096) return yq_fail(err, YQ_ERR_INVALID_ARG, "batch %d: expected 1..4096", o.batch);
    int dev = 0;
    yq_status st = o.device ? yq_device_parse(o.device, &dev, err) : YQ_OK;
    if (st) return st;
    if (dev < 0) return yq_fail(err, YQ_ERR_INVALID_ARG, "GPU latency on \"%s\": expected cuda or cuda:N", o.device);
    if (o.runs < 1) o.runs = 1;
    if (o.warmup < 0) o.warmup = 0;
    if (yq_cuda_device_count() == 0)
        return yq_fail(err, YQ_ERR_UNSUPPORTED, "no CUDA device is available (no NVIDIA driver or no GPU): GPU latency "
                       "needs one");
    yq_latency r;
    memset(&r, 0, sizeof r);
    r.batch = o.batch;
    r.runs = o.runs;
    if ((st = yq_cuda_set_device(dev, err))) return st;
    if ((st = yq_cuda_device_name(r.gpu, sizeof r.gpu, err))) return st;
    snprintf(r.gpu_name, sizeof r.gpu_name, "%s", r.gpu);
    char *paren = strstr(r.gpu_name, " (");
    if (paren) *paren = 0;
    r.sm = yq_cuda_arch();
    if (r.sm <= 0) return yq_fail(err, YQ_ERR_CUDA, "cannot read the GPU's compute capability");

    yq_tuned_kernel *k = NULL;
    int nk = 0;
    double t0 = now_s();
    if ((st = choices(g, &o, r.sm, &r, &k, &nk, err))) return st;
    r.tune_s = now_s() - t0;

    yq_engine *e = NULL;
    yq_cuda_plan *p = NULL;
    void *stream = NULL, *graph = NULL;
    float *x = NULL, *ms = NULL;
    t0 = now_s();
    yq_engine_opt eo = yq_engine_defaults(YQ_ENGINE_CUDA);
    eo.device = dev;
    if ((st = yq_engine_new(g, o.batch, &eo, &e, err))) goto done;
    p = yq_engine_cuda_plan(e);
    stream = yq_engine_stream(e);
    if ((st = yq_tune_apply(p, g, o.batch, r.sm, k, nk, &r.tuned_convs, err))) goto done;
    r.plan_s = now_s() - t0;
    for (int id = 1; id < g->n_nodes; id++)
        r.int8_convs += yq_cuda_plan_conv(p, id) && !g->q[id].float_op;

    yq_shape is = g->nodes[0].out;
    size_t nin = (size_t)yq_shape_size(is) * (size_t)o.batch;
    int eager_runs = o.runs < 20 ? o.runs : 20;
    x = malloc(sizeof *x * nin);
    ms = malloc(sizeof *ms * (size_t)(o.runs > eager_runs ? o.runs : eager_runs));
    if (!x || !ms) {
        st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
        goto done;
    }
    fill_input(x, is, o.batch);
    if ((st = yq_engine_upload(e, x, o.batch, err)) || (st = yq_engine_sync(e, err))) goto done;
    fwd f = { e, o.batch };
    /* eager launches first: they warm up, and they are the answer if capture fails */
    if ((st = yq_gpu_time(stream, enqueue, &f, NULL, o.warmup > 2 ? o.warmup : 2, eager_runs, ms, err))) goto done;
    double emed, emin, emean;
    if ((st = stats(ms, eager_runs, &emed, &emin, &emean, err))) goto done;
    r.eager_ms = emed;
    yq_error ge;
    if (yq_gpu_graph_capture(stream, enqueue, &f, &graph, &ge) == YQ_OK) {
        if ((st = yq_gpu_time(stream, NULL, NULL, graph, o.warmup, o.runs, ms, err))) goto done;
        if ((st = stats(ms, o.runs, &r.ms, &r.ms_min, &r.ms_mean, err))) goto done;
        r.graph = 1;
    } else {
        if ((st = yq_gpu_time(stream, enqueue, &f, NULL, 0, o.runs, ms, err))) goto done;
        if ((st = stats(ms, o.runs, &r.ms, &r.ms_min, &r.ms_mean, err))) goto done;
    }
    if (!(r.ms > 0) || !isfinite(r.ms))
        st = yq_fail(err, YQ_ERR_CUDA, "the timed forward measured %g ms", r.ms);
done:
    if (stream) {
        yq_error se;
        if (yq_cuda_sync(stream, &se) && st == YQ_OK) st = yq_fail(err, se.code, "%s", se.msg);
    }
    yq_gpu_graph_free(graph);
    yq_engine_free(e);
    free(x);
    free(ms);
    free(k);
    if (st == YQ_OK) *out = r;
    return st;
}
