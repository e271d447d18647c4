/* Calibrate, then rewrite into int8 (pipeline/quantize.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cjson/cJSON.h>
#include "calib/cache.h"
#include "calib/observe_cuda.h"
#include "datasets/image.h"
#include "pipeline/quantize.h"
#include "quant/biascorr.h"
#include "quant/equalize.h"
#include "quant/rewrite.h"
#include "quant/select.h"
#include "runtime/detector.h"

static void io_stage(const yq_pipe_io *io, const char *label)
{
    if (io && io->stage) io->stage(io->ctx, label);
}

static void io_warn(const yq_pipe_io *io, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void io_warn(const yq_pipe_io *io, const char *fmt, ...)
{
    if (!io || !io->warn) return;
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    io->warn(io->ctx, msg);
}

/* The calibration cache (calib/cache.h).  It only saves time, so a cache that cannot be
 * read or written costs one warning and the run goes on without it. */
typedef struct calib_cache {
    const char *path;         /* NULL: no cache */
    int no_store, warned;
    char buf[1024];
} calib_cache;

static void cache_warn(const yq_pipe_io *io, calib_cache *c, const char *msg, int reading)
{
    if (!c->warned) io_warn(io, "calibration cache: %s (continuing without it)", msg);
    c->warned = 1;
    if (reading) c->path = NULL;
    c->no_store = 1;
}

/* mkdir -p; 0 when dir exists as a folder afterwards. */
static int make_dirs(char *dir)
{
    for (char *s = dir + 1;; s++) {
        if (*s && *s != '/') continue;
        char c = *s;
        *s = 0;
        int r = mkdir(dir, 0700);
        int e = errno;
        *s = c;
        if (r != 0 && e != EEXIST) return -1;
        if (!c) break;
    }
    struct stat sb;
    return stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode) ? 0 : -1;
}

static void cache_open(const yq_pipe_io *io, calib_cache *c, const yq_pipe_calib *req)
{
    memset(c, 0, sizeof *c);
    if (req->no_cache) return;
    if (req->cache) { c->path = req->cache; return; }
    /* $XDG_CACHE_HOME/yquant, ~/.cache/yquant (XDG: a relative XDG_CACHE_HOME is ignored) */
    const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char dir[sizeof c->buf - 16];
    if (x && x[0] == '/') snprintf(dir, sizeof dir, "%s/yquant", x);
    else if (home && *home) snprintf(dir, sizeof dir, "%s/.cache/yquant", home);
    else return;                                  /* nowhere to keep it */
    if (make_dirs(dir) != 0) {
        char msg[sizeof dir + 64];
        snprintf(msg, sizeof msg, "cannot create %s (%s)", dir, strerror(errno));
        cache_warn(io, c, msg, 1);
        return;
    }
    snprintf(c->buf, sizeof c->buf, "%s/calib.h5", dir);
    c->path = c->buf;
}

/* Where the FP32 pass runs: on_gpu (device index dev) or the CPU; asked: a device given. */
typedef struct calib_where { int on_gpu, dev, asked; } calib_where;

static yq_status calib_run(const yq_pipe_io *io, calib_where *w, const yq_graph *g, char *const *paths, int n,
                           int letterbox, int stage, yq_calib_stats **cs, yq_error *err)
{
    yq_progress_fn pf = io ? io->progress : NULL;
    yq_warn_fn wf = io ? io->warn : NULL;
    void *ctx = io ? io->ctx : NULL;
    if (w->on_gpu) {
        yq_calib_cuda_opt o = yq_calib_cuda_defaults();
        o.device = w->dev;
        o.warn = wf;
        o.warn_ctx = ctx;
        io_stage(io, stage ? "recalibrating (GPU)" : "calibrating (GPU)");
        yq_status st = yq_calib_observe_cuda(g, paths, n, letterbox, &o, pf, ctx, cs, err);
        /* No GPU path here (no cuDNN, no device): the CPU does it.  Other failures (a
         * CUDA error, no device memory) too when the GPU was only the default. */
        if (st == YQ_OK || st == YQ_ERR_IO || (w->asked && st != YQ_ERR_UNSUPPORTED)) return st;
        io_warn(io, "%s; calibrating on the CPU", err->msg);
        w->on_gpu = 0;
    }
    io_stage(io, stage ? "recalibrating" : "calibrating");
    return yq_calib_observe(g, paths, n, letterbox, pf, ctx, wf, ctx, cs, err);
}

/* One calibration pass: the cached statistics for (g as it is now, the images,
 * letterbox, stage), else observe and store them. */
static yq_status calib_stage(const yq_pipe_io *io, calib_cache *c, calib_where *w, const yq_graph *g,
                             char *const *paths, int n, const uint8_t list_sha[32], int letterbox, int stage,
                             yq_calib_stats **cs, yq_error *err)
{
    uint8_t key[32];
    yq_error e2;
    *cs = NULL;
    if (c->path) {
        yq_calib_key(g, list_sha, letterbox, stage, key);
        if (yq_calib_cache_load(c->path, key, g, cs, &e2) != YQ_OK) {
            cache_warn(io, c, e2.msg, 1);
        } else if (*cs) {
            if (io && io->note) {
                char msg[1100];
                snprintf(msg, sizeof msg, "%s: cache hit (%s)", stage ? "recalibration" : "calibration", c->path);
                io->note(io->ctx, msg);
            }
            return YQ_OK;
        }
    }
    yq_status st = calib_run(io, w, g, paths, n, letterbox, stage, cs, err);
    if (st == YQ_OK && c->path && !c->no_store && yq_calib_cache_store(c->path, key, g, *cs, &e2) != YQ_OK)
        cache_warn(io, c, e2.msg, 0);
    return st;
}

yq_status yq_pipe_calibrate(const yq_pipe_calib *c, const yq_qconfig *qc, const yq_graph *g, int letterbox,
                            const yq_pipe_io *io, yq_graph **eq, yq_calib_stats **cs, yq_error *err)
{
    *cs = NULL;
    *eq = NULL;
    calib_where where = { 0, 0, c->device != NULL };
    int d = -1;
    yq_status st;
    if (c->device && (st = yq_device_parse(c->device, &d, err)) != YQ_OK) return st;
    char **paths;
    int n, skipped;
    st = yq_list_images(c->images, &paths, &n, &skipped, io ? io->warn : NULL, io ? io->ctx : NULL, err);
    if (st != YQ_OK) return st;
    calib_cache cache;
    cache_open(io, &cache, c);
    where.on_gpu = c->device ? d >= 0 : yq_calib_cuda_available(NULL, 0);
    where.dev = d < 0 ? 0 : d;
    /* The device does not enter the cache key: both engines compute the same statistics
     * to the bit (calib/observe.h), so either device's entry serves both. */
    uint8_t list_sha[32];
    yq_calib_list_hash(paths, n, list_sha);      /* names and sizes only: a hit decodes no image */
    st = calib_stage(io, &cache, &where, g, paths, n, list_sha, letterbox, 0, cs, err);
    if (st == YQ_OK && qc->equalize) {
        /* Equalizing moves the ranges: observe the equalized graph again.  It is
         * deterministic, so cached stage-0 statistics give the same weights and
         * so the same stage-1 key. */
        int pairs = 0;
        st = yq_equalize(g, *cs, eq, &pairs, err);
        yq_calib_stats_free(*cs);
        *cs = NULL;
        if (st == YQ_OK) st = calib_stage(io, &cache, &where, *eq, paths, n, list_sha, letterbox, 1, cs, err);
        if (st != YQ_OK) {
            yq_graph_free(*eq);
            *eq = NULL;
        }
    }
    yq_list_images_free(paths, n);
    return st;
}

yq_status yq_pipe_load_inputs(const yq_graph *g, const char *dir, int max, int letterbox, const yq_pipe_io *io,
                              float **out, int *got, yq_error *err)
{
    char **paths;
    int n, skipped;
    yq_status st = yq_list_images(dir, &paths, &n, &skipped, io ? io->warn : NULL, io ? io->ctx : NULL, err);
    if (st != YQ_OK) return st;
    long in_sz = yq_shape_size(g->nodes[0].out);
    int want = n < max ? n : max;
    float *inputs = malloc(sizeof(float) * (size_t)(in_sz * (want ? want : 1)));
    *got = 0;
    if (!inputs) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    /* Evenly spaced over the folder, so a few images still cover it. */
    for (int k = 0; k < want && st == YQ_OK; k++) {
        yq_image im;
        yq_error e2;
        if (yq_image_load(paths[(long)k * n / want], &im, &e2) != YQ_OK) continue;
        st = yq_preprocess(g, &im, letterbox, inputs + *got * in_sz, err);
        yq_image_free(&im);
        (*got)++;
    }
    yq_list_images_free(paths, n);
    if (st != YQ_OK) { free(inputs); return st; }
    *out = inputs;
    return YQ_OK;
}

/* GFLOP of simulated runs for keep_float and thresh_search: below it, 16 images. */
#define SIM_GFLOP_BUDGET 800.0

/* A new rewrite of *q's FP32 graph with qc in place of *q (freed), which sim (if any)
 * simulates from then on (a failed sync included: free sim then, run it no more). */
static yq_status rewrite_again(yq_graph **q, const yq_calib_stats *cs, const yq_qconfig *qc, yq_sim *sim, yq_error *err)
{
    yq_graph *n;
    yq_status st = yq_rewrite((*q)->base, cs, qc, &n, err);
    if (st != YQ_OK) return st;
    if (sim) st = yq_sim_sync(sim, n, err);
    yq_graph_free(*q);
    *q = n;
    return st;
}

/* keep_float and thresh_search: measured on the calibration images through simulated
 * int8 (quant/select.h); the choices go into qc (per-layer skips and thresholds, so the
 * package records them) and *qg (an int8 graph) is replaced by the rewrite with them. */
static yq_status choose_measured(yq_qconfig *qc, yq_graph **qg, const yq_calib_stats *cs, const float *inputs, int n,
                                 yq_error *err)
{
    yq_graph *g = *qg;
    yq_sim *sim = NULL;
    double *e = malloc(sizeof *e * (size_t)g->n_nodes);
    uint8_t *want = malloc((size_t)g->n_nodes);
    float *picked = NULL;
    int chosen = 0, changed = 0;
    yq_status st = e && want ? YQ_OK : yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    if (st == YQ_OK) {
        /* The simulated runs: keep_float's candidates, or (thresh_search) every tensor and
         * ten per searched class.  Their cost is runs x images x the model's FLOPs; a heavy
         * model gets fewer images (at least 2) so that a CPU stays within minutes: the
         * yolo-fastest models keep all 16. */
        int runs = 0;
        double gflops = 0;
        yq_float_candidates(g, want);
        for (int i = 0; i < g->n_nodes; i++) {
            runs += want[i];
            gflops += yq_node_flops(g, &g->nodes[i]) * 1e-9;
        }
        if (qc->thresh_search) runs = g->n_nodes + 10 * qc->thresh_search;
        int k = (int)(SIM_GFLOP_BUDGET / ((runs > 0 ? runs : 1) * (gflops > 0 ? gflops : 1e-9)));
        if (k < 2) k = 2;
        if (k < n) {
            long in_sz = yq_shape_size(g->nodes[0].out);
            if (!(picked = malloc(sizeof(float) * (size_t)(in_sz * k)))) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
            for (int j = 0; st == YQ_OK && j < k; j++)
                memcpy(picked + j * in_sz, inputs + (long)j * n / k * in_sz, sizeof(float) * (size_t)in_sz);
            inputs = picked;
            n = k;
        }
    }
    if (st == YQ_OK) st = yq_sim_new(g, inputs, n, &sim, err);
    /* keep_float alone needs only its candidates' errors */
    if (st == YQ_OK) st = yq_class_errors(sim, g, qc->thresh_search ? NULL : want, e, err);
    if (st == YQ_OK && qc->keep_float > 0) {
        st = yq_select_float(g, e, qc->keep_float, qc, &chosen, err);
        qc->keep_float = 0;         /* done: the choice now lives in the per-layer skips */
        if (st == YQ_OK && chosen && (st = rewrite_again(qg, cs, qc, sim, err)) == YQ_OK) g = *qg;
    }
    if (st == YQ_OK && qc->thresh_search > 0) {
        st = yq_search_thresholds(sim, g, cs, e, qc->thresh_search, qc, &changed, err);
        qc->thresh_search = 0;      /* done: the choice now lives in the per-layer thresholds */
        yq_sim_free(sim);           /* (it simulates the graph the rewrite replaces) */
        sim = NULL;
        if (st == YQ_OK && changed) st = rewrite_again(qg, cs, qc, NULL, err);
    }
    yq_sim_free(sim);
    free(picked);
    free(want);
    free(e);
    return st;
}

yq_status yq_pipe_quantize(const yq_pipe_calib *c, const yq_qconfig *request, yq_qconfig *resolved, const yq_graph *g,
                           const yq_calib_stats *cs, int letterbox, const yq_pipe_io *io, yq_graph **out, yq_error *err)
{
    *out = NULL;
    yq_qconfig *qc = resolved ? resolved : malloc(sizeof *qc);   /* (large: not on the stack) */
    if (!qc) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    if (qc != request) *qc = *request;
    yq_graph *q = NULL;
    yq_status st = yq_rewrite(g, cs, qc, &q, err);
    float *inputs = NULL;
    int got = 0, choose = qc->keep_float > 0 || qc->thresh_search > 0;
    if (st == YQ_OK && (choose || qc->bias_correction == 2))
        st = yq_pipe_load_inputs(q, c->images, 16, letterbox, io, &inputs, &got, err);
    if (st == YQ_OK && choose && got > 0) st = choose_measured(qc, &q, cs, inputs, got, err);
    if (st == YQ_OK && qc->bias_correction == 2) st = yq_bias_correct_data(q, inputs, got, err);
    free(inputs);
    if (qc != resolved) free(qc);
    if (st == YQ_OK) *out = q;
    else yq_graph_free(q);
    return st;
}

char *yq_pipe_plan_json(const yq_graph *g, const yq_qconfig *request, const yq_qconfig *resolved)
{
    int N = g->n_nodes;
    uint8_t *why = malloc((size_t)(N ? N : 1));
    cJSON *root = cJSON_CreateObject();
    if (!why || !root || !g->q) {
        free(why);
        cJSON_Delete(root);
        return NULL;
    }
    yq_float_reasons(g, resolved, why);
    cJSON *chosen = cJSON_AddArrayToObject(root, "chosen_float"), *searched = cJSON_AddArrayToObject(root, "searched_thresholds");
    cJSON *nodes = cJSON_AddArrayToObject(root, "nodes");
    int n_float = 0, n_int8 = 0;
    for (int i = 1; i < N; i++) {
        const yq_node *n = &g->nodes[i];
        const yq_qnode *q = &g->q[i];
        if (n->op == YQ_OP_DROPOUT || yq_op_is_head(n->op)) continue;
        int L = n->layer;
        /* a skip the request does not hold is keep_float's measured choice */
        const char *w = why[i] == YQ_WHY_SKIP ? (yq_qc_skip(request, L) ? "skip_layers" : "keep_float")
                                              : yq_float_why_name((yq_float_why)why[i]);
        if (why[i] == YQ_WHY_SKIP && !yq_qc_skip(request, L) && n->op == YQ_OP_CONV)
            cJSON_AddItemToArray(chosen, cJSON_CreateNumber(L));
        /* a threshold the request does not hold is thresh_search's */
        float t_req = yq_qc_thresh(request, L), t_res = yq_qc_thresh(resolved, L);
        if (t_res > 0 && t_res != t_req) cJSON_AddItemToArray(searched, cJSON_CreateNumber(L));
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "layer", L);
        cJSON_AddStringToObject(o, "op", yq_op_name(n->op));
        cJSON_AddStringToObject(o, "dtype", q->float_op ? "float" : "int8");
        cJSON_AddStringToObject(o, "why", w);
        if (!q->float_op) cJSON_AddNumberToObject(o, "bits", yq_qc_bits(resolved, L));
        if (q->thresh > 0) cJSON_AddNumberToObject(o, "thresh", q->thresh);
        if (n->op == YQ_OP_CONV && q->float_op) cJSON_AddStringToObject(o, "precision", q->fp16w ? "fp16w" : "fp32");
        cJSON_AddItemToArray(nodes, o);
        if (n->op == YQ_OP_CONV) {
            if (q->float_op) n_float++;
            else n_int8++;
        }
    }
    cJSON_AddNumberToObject(root, "float_convs", n_float);
    cJSON_AddNumberToObject(root, "int8_convs", n_int8);
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    free(why);
    return text;
}

int yq_pipe_layer_rows(const yq_graph *g, const yq_layer_err *e, yq_layer_error *rows)
{
    int m = 0;
    for (int i = 1; i < g->n_nodes; i++) {
        const yq_node *nd = &g->nodes[i];
        if (nd->op == YQ_OP_DROPOUT || yq_op_is_head(nd->op)) continue;
        const yq_qnode *q = &g->q[i];
        int head = 0;
        for (int j = i + 1; j < g->n_nodes && !head; j++)
            head = yq_op_is_head(g->nodes[j].op) && g->nodes[j].src[0] == i;
        rows[m++] = (yq_layer_error){ nd->layer, yq_op_name(nd->op), nd->out.c, nd->out.h, nd->out.w,
                                      q->float_op ? "float" : q->dtype == YQ_F32 ? "i8>f" : "int8", e[i].sqnr_db,
                                      e[i].max_abs, head };
    }
    return m;
}
