/* Calibration on the GPU (calib/observe_cuda.h): cuDNN runs the FP32 graph a batch at a
 * time; its per-node hook enqueues the statistics kernels (kernels/cuda_hist.h) on the
 * plan's stream right after each node, so every tensor is read while it is still live
 * and the plan needs no more memory than an inference plan.  The host decodes the next
 * batch while the GPU works (an upload waits for the previous batch), and the
 * statistics come back in one copy at the end. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "calib/observe_cuda.h"
#include "ir/pack.h"
#include "kernels/cuda.h"
#include "kernels/cuda_hist.h"
#include "kernels/cudnn_fp.h"
#include "runtime/engine.h"
#include "runtime/detector.h"

#define DEFAULT_BATCH 32
#define MAX_THREADS 8

yq_calib_cuda_opt yq_calib_cuda_defaults(void)
{
    yq_calib_cuda_opt o;
    memset(&o, 0, sizeof o);
    return o;
}

int yq_calib_cuda_available(char *why, size_t cap)
{
    const char *r = NULL;
    if (!yq_cudnn_available()) r = "this yquant was built without cuDNN (no cudnn.h at build time)";
    else if (yq_cuda_device_count() == 0) r = "no CUDA device (or no driver)";
    if (why && cap) snprintf(why, cap, "%s", r ? r : "");
    return r == NULL;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int is_alias(yq_op op) { return op == YQ_OP_DROPOUT || yq_op_is_head(op); }

/* ---- image loading on host threads ------------------------------------------- */

typedef struct slot {
    yq_status st;
    int unreadable;      /* st came from yq_image_load: skip with a warning */
    yq_error err;
} slot;

/* One batch being loaded: paths[first .. first+count) into dst by nt threads. */
typedef struct loader loader;
typedef struct worker { loader *l; int t; } worker;

struct loader {
    const yq_graph *g;
    char *const *paths;
    int first, count, letterbox, nt;
    long in_sz;
    float *dst;          /* count x in_sz: image k at k * in_sz */
    slot *slots;         /* count */
    pthread_t th[MAX_THREADS];
    worker w[MAX_THREADS];
    int started[MAX_THREADS], busy;
    yq_warn_fn warn;     /* unreadable images (yq_calib_cuda_opt's) */
    void *warn_ctx;
};

static void load_share(loader *l, int t)
{
    for (int k = t; k < l->count; k += l->nt) {
        slot *s = &l->slots[k];
        yq_image im;
        s->unreadable = 0;
        s->st = yq_image_load(l->paths[l->first + k], &im, &s->err);
        if (s->st != YQ_OK) {
            s->unreadable = 1;
            continue;
        }
        s->st = yq_preprocess(l->g, &im, l->letterbox, l->dst + (long)k * l->in_sz, &s->err);
        yq_image_free(&im);
    }
}

static void *load_thread(void *arg)
{
    worker *w = arg;
    load_share(w->l, w->t);
    return NULL;
}

/* Starts loading paths[first .. first+count) on l->nt threads and returns. */
static void load_start(loader *l, int first, int count)
{
    l->first = first;
    l->count = count;
    l->busy = 1;
    for (int t = 0; t < l->nt; t++) {
        l->w[t] = (worker){ l, t };
        l->started[t] = pthread_create(&l->th[t], NULL, load_thread, &l->w[t]) == 0;
    }
}

/* Waits for the batch; packs the readable images at the front of dst (*got of them).
 * Unreadable images are warned about and counted in *skipped. */
static yq_status load_finish(loader *l, int n_total, int *got, int *skipped, yq_error *err)
{
    if (!l->busy) {
        *got = 0;
        return YQ_OK;
    }
    for (int t = 0; t < l->nt; t++) {
        if (l->started[t]) pthread_join(l->th[t], NULL);
        else load_share(l, t);          /* no thread: its share is done here */
    }
    l->busy = 0;
    yq_status st = YQ_OK;
    *got = 0;
    for (int k = 0; k < l->count; k++) {
        slot *s = &l->slots[k];
        if (s->st != YQ_OK && s->unreadable) {
            yq_warn_skipped(l->warn, l->warn_ctx, s->err.msg);
            (*skipped)++;
            if (*skipped * 2 > n_total && st == YQ_OK)
                st = yq_fail(err, YQ_ERR_IO, "%d of %d calibration images could not be read (last: %s)", *skipped,
                             n_total, s->err.msg);
            continue;
        }
        if (s->st != YQ_OK) {
            if (st == YQ_OK) {
                *err = s->err;
                st = s->st;
            }
            continue;
        }
        if (*got != k) memcpy(l->dst + (long)*got * l->in_sz, l->dst + (long)k * l->in_sz, sizeof(float) * (size_t)l->in_sz);
        (*got)++;
    }
    return st;
}

/* ---- the hook ---------------------------------------------------------------- */

typedef struct gobs {
    const yq_graph *g;
    yq_cuda_hist *h;
    int nb;              /* images of this batch observed (the first nb of the plan's batch) */
    yq_status st;
    yq_error err;
} gobs;

static void hook(void *ctx, int id, const void *data, int n, void *stream)
{
    (void)stream;        /* the engine's: the histogram was made on it */
    (void)n;             /* the plan's batch: only the first nb images are observed */
    gobs *o = ctx;
    if (o->st != YQ_OK) return;
    const yq_node *nd = &o->g->nodes[id];
    if (is_alias(nd->op)) return;
    o->st = yq_cuda_hist_add(o->h, id, data, o->nb, nd->out.c, (long)nd->out.h * nd->out.w, &o->err);
}

/* ---- the run ------------------------------------------------------------------ */

yq_status yq_calib_observe_cuda(const yq_graph *g, char *const *paths, int n, int letterbox,
                                const yq_calib_cuda_opt *o, yq_progress_fn progress, void *pctx,
                                yq_calib_stats **out, yq_error *err)
{
    yq_calib_cuda_opt dflt = yq_calib_cuda_defaults();
    if (!o) o = &dflt;
    char why[128];
    if (!yq_calib_cuda_available(why, sizeof why))
        return yq_fail(err, YQ_ERR_UNSUPPORTED, "calibration on the GPU: %s", why);
    if (n < 1) return yq_fail(err, YQ_ERR_INVALID_ARG, "no calibration images");
    if (o->batch < 0 || o->threads < 0) return yq_fail(err, YQ_ERR_INVALID_ARG, "calibration batch %d, threads %d", o->batch, o->threads);
    if (g->q) return yq_fail(err, YQ_ERR_INVALID_ARG, "calibration runs an FP32 graph (this one is quantized)");
    double t0 = now_ms();
    int B = o->batch ? o->batch : DEFAULT_BATCH;
    if (B > n) B = n;
    int nt = o->threads;
    if (!nt) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        nt = cores > MAX_THREADS ? MAX_THREADS : cores < 1 ? 1 : (int)cores;
    }
    if (nt > MAX_THREADS) nt = MAX_THREADS;
    if (nt > B) nt = B;

    yq_calib_stats *cs = NULL;
    yq_engine *p = NULL;
    yq_cuda_hist *h = NULL;
    int *channels = NULL;
    long in_sz = yq_shape_size(g->nodes[0].out);
    /* two host batches: one uploaded while the other is being decoded */
    float *in[2] = { NULL, NULL };
    slot *slots[2] = { NULL, NULL };
    loader ld[2];
    memset(ld, 0, sizeof ld);
    yq_status st = yq_calib_stats_new(g->n_nodes, g, &cs, err);
    if (st != YQ_OK) return st;
    channels = malloc(sizeof *channels * (size_t)g->n_nodes);
    for (int k = 0; k < 2; k++) {
        in[k] = calloc((size_t)B * (size_t)in_sz, sizeof *in[k]);
        slots[k] = calloc((size_t)B, sizeof *slots[k]);
        ld[k] = (loader){ .g = g, .paths = paths, .letterbox = letterbox, .nt = nt, .in_sz = in_sz, .dst = in[k],
                          .slots = slots[k], .warn = o->warn, .warn_ctx = o->warn_ctx };
    }
    if (!channels || !in[0] || !in[1] || !slots[0] || !slots[1]) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");

    /* The first batch decodes while CUDA, cuDNN and the plan start. */
    int pos = 0, cur = 0, nb = 0;
    if (st == YQ_OK) {
        load_start(&ld[0], 0, n < B ? n : B);
        pos = ld[0].count;
    }
    yq_engine_opt eo = yq_engine_defaults(YQ_ENGINE_CUDNN);
    eo.cudnn.layout = YQ_CUDNN_NCHW;   /* what the statistics kernels read */
    eo.device = o->device;
    eo.flags = YQ_PLAN_EXACT;          /* the CPU's bytes (calib/observe.h); nothing is read after
                                          the run: tensors share memory */
    if (st == YQ_OK) st = yq_engine_new(g, B, &eo, &p, err);
    if (st == YQ_OK) {
        for (int i = 0; i < g->n_nodes; i++) channels[i] = g->nodes[i].out.c;
        st = yq_cuda_hist_new(g->n_nodes, channels, YQ_CALIB_BINS, yq_engine_stream(p), &h, err);
    }
    for (int i = 0; i < g->n_nodes && st == YQ_OK; i++) {
        const yq_node *nd = &g->nodes[i];
        if (!is_alias(nd->op)) st = yq_cuda_hist_reserve(h, B, nd->out.c, (long)nd->out.h * nd->out.w, err);
    }
    gobs ob = { g, h, 0, YQ_OK, { YQ_OK, "" } };
    if (st == YQ_OK) st = yq_engine_set_hook(p, hook, &ob, err);
    double t_plan = now_ms(), t_load = 0, t_wait = 0;

    if (st == YQ_OK) {
        st = load_finish(&ld[0], n, &nb, &cs->skipped, err);
        t_load = now_ms() - t_plan;
    }
    int done = 0;                                 /* images whose batch is enqueued */
    while (st == YQ_OK) {
        /* next batch decoding into the other buffer while this one runs */
        if (pos < n) {
            load_start(&ld[1 - cur], pos, n - pos < B ? n - pos : B);
            pos += ld[1 - cur].count;
        }
        if (nb > 0) {
            double tw = now_ms();
            st = yq_engine_upload(p, in[cur], B, err);   /* waits for the previous batch */
            t_wait += now_ms() - tw;
            if (st == YQ_OK) {
                ob.nb = nb;
                st = yq_engine_enqueue(p, B, err);
            }
            if (st == YQ_OK && ob.st != YQ_OK) {
                *err = ob.err;
                st = ob.st;
            }
            if (st == YQ_OK) cs->images += nb;
        }
        done += ld[cur].count;
        if (st == YQ_OK && progress) progress(pctx, done, n);
        if (!ld[1 - cur].busy) break;             /* no batch left */
        double tl = now_ms();
        yq_status s2 = load_finish(&ld[1 - cur], n, &nb, &cs->skipped, err);
        t_load += now_ms() - tl;
        if (st == YQ_OK) st = s2;
        cur = 1 - cur;
    }
    for (int k = 0; k < 2; k++) {                 /* after an error: let the threads end */
        int got, sk = 0;
        yq_error e2;
        if (ld[k].busy) load_finish(&ld[k], n, &got, &sk, &e2);
    }
    if (st == YQ_OK) {
        double tw = now_ms();
        st = yq_cuda_hist_download(h, err);        /* waits for the last batch */
        t_wait += now_ms() - tw;
    }
    if (st == YQ_OK && cs->images == 0) st = yq_fail(err, YQ_ERR_IO, "none of the %d calibration images could be read", n);
    if (st == YQ_OK) {
        for (int i = 0; i < g->n_nodes; i++) {
            const yq_node *nd = &g->nodes[i];
            if (is_alias(nd->op)) continue;          /* as calib/observe.c: left empty */
            yq_cuda_hist_sum s;
            yq_cuda_hist_summary(h, i, &s);
            yq_hist *hh = &cs->hist[i];
            const uint64_t *c = yq_cuda_hist_counts(h, i);
            for (int k = 0; k < hh->nbins; k++) hh->counts[k] = (double)c[k];
            hh->range = s.range;
            hh->n = s.n;
            hh->n_nan = s.n_nan;
            hh->n_inf = s.n_inf;
            hh->min = s.min;
            hh->max = s.max;
            hh->absmax = s.n > 0 ? fmaxf(fabsf(s.min), fabsf(s.max)) : 0.f;
            const double *ms = yq_cuda_hist_ch_mean_sum(h, i);
            const float *mx = yq_cuda_hist_ch_max(h, i);
            for (int k = 0; k < nd->out.c; k++) {
                cs->ch_mean[i][k] = ms[k] / cs->images;
                cs->ch_max[i][k] = mx[k];
            }
        }
        yq_calib_list_hash(paths, n, cs->images_sha256);
    }
    if (o->times) {
        o->times->plan_ms = t_plan - t0;
        o->times->load_ms = t_load;
        o->times->wait_ms = t_wait;
        o->times->batch = B;
        o->times->threads = nt;
        o->times->total_ms = now_ms() - t0;
    }
    yq_cuda_hist_free(h);
    yq_engine_free(p);
    free(channels);
    for (int k = 0; k < 2; k++) {
        free(in[k]);
        free(slots[k]);
    }
    if (st != YQ_OK) {
        yq_calib_stats_free(cs);
        return st;
    }
    *out = cs;
    return YQ_OK;
}
