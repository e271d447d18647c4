/* Tuning's measurement on the GPU (runtime/tune.h: yq_tune_gpu): each task's inputs and
 * reference output made once, every candidate run, checked byte for byte against the
 * default's bytes, and timed.  A conv the plan fuses with its [shortcut] is measured as the
 * plan runs it: with a residual, its epilogue writing the shortcut's output. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cjson/cJSON.h>
#include "ir/stats.h"
#include "runtime/tune_int.h"

/* ---- measurement on the GPU ---------------------------------------------------------- */

#define GUARD 256
#define GUARD_BYTE 0xA5

typedef struct gpu_ctx {
    const yq_graph *g;
    yq_cuda_conv *c;
    void *din, *dout, *dres, *probe;
    size_t out_bytes, all_bytes;
    unsigned char *ref, *host;
    yq_dtensor in, out, res;
    const yq_qnode *sq;           /* the fused shortcut's (NULL: none) */
    int res_first;
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
    yq_cuda_free(c->dres);
    free(c->ref);
    free(c->host);
    c->c = NULL;
    c->din = c->dout = c->dres = NULL;
    c->sq = NULL;
    c->ref = c->host = NULL;
}

/* One run of the conv as the plan runs it (with its fused shortcut's add, if any). */
static yq_status conv_exec(gpu_ctx *c, yq_error *err)
{
    return c->sq ? yq_cuda_conv_run_add(c->c, &c->in, &c->res, c->sq, c->res_first, &c->out, c->batch, NULL, err)
                 : yq_cuda_conv_run(c->c, &c->in, &c->out, c->batch, NULL, err);
}

static yq_status run_once(void *ctx)
{
    gpu_ctx *c = ctx;
    c->run_st = conv_exec(c, &c->run_err);
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
    if (!st && t->res_node > 0) {
        /* the residual: int8 of the output's shape, dense NHWC4, its padding channels zero */
        size_t onchw = (size_t)t->f * t->oh * t->ow * (size_t)t->batch;
        unsigned char *r = malloc(onchw), *rp = malloc(c->out_bytes);
        if (!r || !rp) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
        uint32_t s = rng_seed(777, t->key);
        for (size_t i = 0; !st && i < onchw; i++) r[i] = (unsigned char)(int8_t)((int)(rng_next(&s) % 255) - 127);
        if (!st) yq_nchw_to_nhwc4(r, t->f, t->oh, t->ow, t->batch, rp);
        if (!st) st = yq_cuda_malloc(&c->dres, c->out_bytes, err);
        if (!st) st = yq_cuda_h2d(c->dres, rp, c->out_bytes, err);
        free(r);
        free(rp);
        const yq_qnode *sq = &g->q[t->res_node];
        c->res = (yq_dtensor){ c->dres, YQ_S8, t->f, t->oh, t->ow, sq->scale, sq->qmin, sq->qmax, 0 };
        c->sq = sq;
        c->res_first = t->res_first;
    }
    free(h);
    free(pad);
    if (!st) {
        c->in = (yq_dtensor){ c->din, t->in_t, t->cin, t->ih, t->iw, g->q[n->src[0]].scale, g->q[n->src[0]].qmin,
                              g->q[n->src[0]].qmax, 0 };
        const yq_qnode *oq = c->sq ? c->sq : &g->q[t->node];    /* fused: the shortcut's output */
        c->out = (yq_dtensor){ c->dout, t->out_t, t->f, t->oh, t->ow, oq->scale, oq->qmin, oq->qmax, 0 };
        /* the reference: the untuned default (a fresh conv runs its heuristic) */
        if (!(st = yq_cuda_memset(c->dout, GUARD_BYTE, c->all_bytes, err)) &&
            !(st = conv_exec(c, err)) && !(st = yq_cuda_sync(NULL, err)))
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
    if (!st) st = conv_exec(c, &e);
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
    out->us = yq_stats_of(m, 3).median;
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
        yq_cuda_conv_key(c, x->in_t, x->res_node > 0, x->batch, key, sizeof key);
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

