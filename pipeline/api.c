/* include/yq_quant.h on the pipeline (pipeline/quantize.h): qconfig handles and the
 * quantizer.  The quantizer's FP32 graph stays as the model's files hold it: equalization
 * makes a copy (kept with the statistics it was calibrated for), and a rewrite is undone
 * after each evaluation or save.  Calibration observes the same activations whatever the
 * qconfig says but `equalize` (yq_pipe_calibrate reads nothing else of it), so the
 * quantizer keeps one calibration per value of that key. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "yq_quant.h"
#include "calib/hist.h"
#include "calib/compare.h"
#include "calib/observe.h"
#include "datasets/labels.h"
#include "pipeline/quantize.h"
#include "pipeline/search.h"
#include "quant/qconfig.h"
#include "quant/rewrite.h"
#include "runtime/evaluate.h"
#include "runtime/package.h"
#include "runtime/session.h"

struct yq_qconf {
    yq_qconfig qc;
};

yq_status yq_qconf_new(yq_qconf **out, yq_error *err)
{
    if (!out) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_qconf_new: NULL output");
    *out = malloc(sizeof **out);
    if (!*out) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    yq_qconfig_defaults(&(*out)->qc);
    return YQ_OK;
}

yq_status yq_qconf_load(const char *path, yq_qconf **out, yq_error *err)
{
    if (!path) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_qconf_load: no path");
    yq_status st = yq_qconf_new(out, err);
    if (st == YQ_OK && (st = yq_qconfig_load(&(*out)->qc, path, err)) != YQ_OK) {
        free(*out);
        *out = NULL;
    }
    return st;
}

yq_status yq_qconf_update(yq_qconf *q, const char *path, yq_error *err)
{
    if (!q || !path) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_qconf_update: NULL argument");
    yq_qconf *t = malloc(sizeof *t);          /* on a copy: a bad file leaves the handle as it was */
    if (!t) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    *t = *q;
    yq_status st = yq_qconfig_load(&t->qc, path, err);
    if (st == YQ_OK) *q = *t;
    free(t);
    return st;
}

yq_status yq_qconf_parse(const char *text, const char *name, yq_qconf **out, yq_error *err)
{
    if (!text) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_qconf_parse: no text");
    yq_status st = yq_qconf_new(out, err);
    if (st == YQ_OK && (st = yq_qconfig_parse(&(*out)->qc, text, name ? name : "(qconfig text)", err)) != YQ_OK) {
        free(*out);
        *out = NULL;
    }
    return st;
}

yq_status yq_qconf_set(yq_qconf *q, const char *key, const char *value, yq_error *err)
{
    if (!q || !key || !value) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_qconf_set: NULL argument");
    /* set on a copy: a refused value leaves the handle as it was */
    yq_qconf *t = malloc(sizeof *t);
    if (!t) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    *t = *q;
    yq_status st = yq_qconfig_set(&t->qc, key, value, "qconfig", err);
    if (st == YQ_OK) *q = *t;
    free(t);
    return st;
}

char *yq_qconf_text(const yq_qconf *q) { return q ? yq_qconfig_text(&q->qc) : NULL; }

void yq_qconf_free(yq_qconf *q) { free(q); }

yq_status yq_qconf_dup(const yq_qconf *q, yq_qconf **out, yq_error *err)
{
    if (!q || !out) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_qconf_dup: NULL argument");
    if (!(*out = malloc(sizeof **out))) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    **out = *q;
    return YQ_OK;
}

yq_status yq_qconf_get(const yq_qconf *q, const char *key, char *buf, size_t cap, yq_error *err)
{
    if (!q || !key || !buf || !cap) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_qconf_get: NULL argument");
    buf[0] = 0;
    if (!strcmp(key, "skip_layers")) {           /* every skip, listed or per layer */
        size_t n = 0;
        for (int i = 0; i < q->qc.n_layers; i++)
            if (yq_qc_skip(&q->qc, i)) {
                n += (size_t)snprintf(buf + (n < cap ? n : cap), n < cap ? cap - n : 0, "%s%d", n ? "," : "", i);
                if (n >= cap) {
                    buf[0] = 0;
                    return yq_fail(err, YQ_ERR_INVALID_ARG, "qconfig: skip_layers: longer than %zu bytes", cap);
                }
            }
        return YQ_OK;
    }
    /* the value as the text writes it: one "key = value" line of the top-level keys */
    char *t = yq_qconfig_text(&q->qc);
    if (!t) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    size_t kl = strlen(key);
    yq_status st = yq_fail(err, YQ_ERR_INVALID_ARG, "qconfig: %s: not a top-level key", key);
    for (char *l = t; *l; ) {
        char *e = strchr(l, '\n');
        if (e) *e = 0;
        if (!strncmp(l, key, kl) && !strncmp(l + kl, " = ", 3) && !strchr(key, '.')) {
            const char *v = l + kl + 3;
            if (strlen(v) >= cap) st = yq_fail(err, YQ_ERR_INVALID_ARG, "qconfig: %s: longer than %zu bytes", key, cap);
            else {
                memcpy(buf, v, strlen(v) + 1);
                st = YQ_OK;
            }
            break;
        }
        if (!e) break;
        l = e + 1;
    }
    free(t);
    return st;
}

/* ---- the quantizer ---------------------------------------------------------------- */

/* A calibration: the statistics, and for equalize on the equalized copy they were observed on. */
typedef struct calib_state {
    yq_graph *eq;                 /* g's equalized copy (equalize on), else NULL */
    yq_calib_stats *cs;           /* NULL: not calibrated yet */
} calib_state;

struct yq_quantizer {
    char *model, *weights, *calib, *cache, *device;   /* copies of the options' strings */
    yq_quant_opt o;               /* its strings point at the copies */
    yq_pipe_io io;
    yq_graph *g;                  /* FP32, as the files hold it */
    int letterbox;
    calib_state st[2];            /* [equalize]: off, on */
    yq_model *fp32;               /* g as a model (borrowed) */
    /* the last request's resolution (its text, and the qconfig it resolved to): a rewrite
     * with the resolved qconfig is the same graph, without measuring keep_float or
     * thresh_search again (an evaluation, the plan and the package of one qconfig) */
    char *rq_for;
    yq_qconfig *rq;
};

yq_quant_opt yq_quant_defaults(void)
{
    yq_quant_opt o;
    memset(&o, 0, sizeof o);
    o.letterbox = -1;
    return o;
}

static char *dup_or_null(const char *s, int *fail)
{
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *fail = 1;
    return d;
}

static yq_status load_graph(yq_quantizer *q, yq_error *err)
{
    yq_import_opt io = { .width = q->o.width, .height = q->o.height, .bn = q->o.bn_pjreddie ? YQ_BN_PJREDDIE : YQ_BN_ALEXEYAB };
    return yq_load_model(q->model, q->weights, &io, &q->g, err);
}

yq_status yq_quantizer_new(const char *model, const yq_quant_opt *o, const yq_quant_io *io, yq_quantizer **out,
                           yq_error *err)
{
    if (!out) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_quantizer_new: NULL output");
    *out = NULL;
    if (!model || !o) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_quantizer_new: NULL model or options");
    if (!o->calib) return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: no calibration images (yq_quant_opt.calib)", model);
    if (o->letterbox < -1 || o->letterbox > 1)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_quant_opt.letterbox %d: -1, 0 or 1", o->letterbox);
    if (o->width < 0 || o->height < 0 || o->width % 32 || o->height % 32 || o->width > 8192 || o->height > 8192)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: input size %dx%d: expected multiples of 32 up to 8192", model,
                       o->width, o->height);
    yq_quantizer *q = calloc(1, sizeof *q);
    if (!q) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    int fail = 0;
    q->model = dup_or_null(model, &fail);
    q->weights = dup_or_null(o->weights, &fail);
    q->calib = dup_or_null(o->calib, &fail);
    q->cache = dup_or_null(o->cache, &fail);
    q->device = dup_or_null(o->device, &fail);
    q->o = *o;
    q->o.weights = q->weights;
    q->o.calib = q->calib;
    q->o.cache = q->cache;
    q->o.device = q->device;
    if (io) q->io = (yq_pipe_io){ io->stage, io->progress, io->warn, io->note, io->ctx };
    yq_status st = fail ? yq_fail(err, YQ_ERR_NOMEM, "out of memory") : load_graph(q, err);
    if (st != YQ_OK) {
        yq_quantizer_free(q);
        return st;
    }
    q->letterbox = o->letterbox >= 0 ? o->letterbox : q->g->letter_box;
    if ((st = yq_model_borrow(q->g, q->letterbox, &q->fp32, err)) != YQ_OK) {
        yq_quantizer_free(q);
        return st;
    }
    *out = q;
    return YQ_OK;
}

void yq_quantizer_free(yq_quantizer *q)
{
    if (!q) return;
    yq_model_free(q->fp32);
    free(q->rq_for);
    free(q->rq);
    for (int k = 0; k < 2; k++) {
        yq_calib_stats_free(q->st[k].cs);
        yq_graph_free(q->st[k].eq);
    }
    yq_graph_free(q->g);
    free(q->model);
    free(q->weights);
    free(q->calib);
    free(q->cache);
    free(q->device);
    free(q);
}

const yq_model *yq_quantizer_fp32(const yq_quantizer *q) { return q ? q->fp32 : NULL; }

static yq_pipe_calib calib_req(const yq_quantizer *q)
{
    return (yq_pipe_calib){ q->o.calib, q->o.cache, q->o.no_cache, q->o.device };
}

/* The calibration qc needs (observed once per value of equalize, or read from the cache). */
static yq_status ensure_stats(yq_quantizer *q, const yq_qconfig *qc, calib_state **out, yq_error *err)
{
    calib_state *s = &q->st[qc->equalize ? 1 : 0];
    *out = s;
    if (s->cs) return YQ_OK;
    yq_pipe_calib c = calib_req(q);
    return yq_pipe_calibrate(&c, qc, q->g, q->letterbox, &q->io, &s->eq, &s->cs, err);
}

/* The graph a calibration was observed on: the one to rewrite. */
static yq_graph *work_graph(const yq_quantizer *q, const calib_state *s) { return s->eq ? s->eq : q->g; }

yq_status yq_quantizer_calibrate(yq_quantizer *q, const yq_qconf *qc, yq_error *err)
{
    if (!q || !qc) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_quantizer_calibrate: NULL argument");
    calib_state *s;
    return ensure_stats(q, &qc->qc, &s, err);
}

yq_status yq_quantizer_check(const yq_quantizer *q, const yq_qconf *qc, yq_error *err)
{
    if (!q || !qc) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_quantizer_check: NULL argument");
    return yq_qconfig_validate(&qc->qc, q->g, err);
}

/* *w: the graph qc calibrates for, rewritten into int8 as qc directs (a new graph: the
 * caller frees it, yq_graph_free); *resolved (malloc'd when asked) the qconfig with
 * keep_float's and thresh_search's choices written in. */
static yq_status quantize(yq_quantizer *q, const yq_qconf *qc, yq_qconfig **resolved, yq_graph **w, yq_error *err)
{
    calib_state *s;
    yq_status st = ensure_stats(q, &qc->qc, &s, err);
    *w = NULL;
    if (st != YQ_OK) return st;
    yq_qconfig *work = malloc(sizeof *work);     /* (the qconfig is large: not on the stack) */
    char *text = yq_qconfig_text(&qc->qc);
    if (!work || !text) {
        free(work);
        free(text);
        return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    }
    int known = q->rq && q->rq_for && !strcmp(text, q->rq_for);
    yq_pipe_calib c = calib_req(q);
    yq_graph *g = work_graph(q, s);
    yq_graph *qg = NULL;
    st = yq_pipe_quantize(&c, known ? q->rq : &qc->qc, work, g, s->cs, q->letterbox, &q->io, &qg, err);
    if (st == YQ_OK && !known) {          /* remember this resolution */
        yq_qconfig *keep = malloc(sizeof *keep);
        if (keep) {
            *keep = *work;
            free(q->rq);
            free(q->rq_for);
            q->rq = keep;
            q->rq_for = text;
            text = NULL;
        }
    }
    free(text);
    if (st == YQ_OK && resolved) *resolved = work;
    else free(work);
    if (st == YQ_OK) *w = qg;
    return st;
}

yq_status yq_quantizer_evaluate(yq_quantizer *q, const yq_qconf *qc, const yq_dataset *ds, double map[2], yq_error *err)
{
    if (!q || !ds || !map) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_quantizer_evaluate: NULL argument");
    yq_status st = YQ_OK;
    yq_graph *w = NULL;
    if (qc) st = quantize(q, qc, NULL, &w, err);
    yq_det *dets = NULL;
    int n = 0, skipped = 0;
    if (st == YQ_OK) {
        yq_eval_opt eo = yq_eval_defaults();
        eo.letterbox = q->letterbox;
        eo.progress = q->io.progress;
        eo.progress_ctx = q->io.ctx;
        eo.warn = q->io.warn;
        eo.warn_ctx = q->io.ctx;
        if (q->io.stage) q->io.stage(q->io.ctx, qc ? "evaluating int8" : "evaluating fp32");
        st = yq_eval_detect(qc ? w : q->g, ds, &eo, &dets, &n, &skipped, err);
    }
    double s[YQ_COCO_NSTATS];
    if (st == YQ_OK && (st = yq_coco_eval(ds, dets, n, s, NULL, NULL, err)) == YQ_OK) {
        map[0] = s[0];
        map[1] = s[1];
    }
    if (w) yq_graph_free(w);
    yq_coco_dets_free(dets);
    return st;
}

yq_status yq_quantizer_layer_errors(yq_quantizer *q, const yq_qconf *qc, int n_images, yq_layer_error **rows,
                                    int *n_rows, int *images, yq_error *err)
{
    if (!q || !qc || !rows || !n_rows) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_quantizer_layer_errors: NULL argument");
    if (n_images < 0) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_quantizer_layer_errors: %d images", n_images);
    *rows = NULL;
    *n_rows = 0;
    yq_graph *g;
    yq_status st = quantize(q, qc, NULL, &g, err);
    if (st != YQ_OK) return st;
    float *inputs = NULL;
    int got = 0;
    yq_layer_err *e = NULL;
    yq_layer_error *r = NULL;
    int m = 0;
    if ((st = yq_pipe_load_inputs(g, q->o.calib, n_images ? n_images : 8, q->letterbox, &q->io, &inputs, &got, err)) == YQ_OK &&
        (st = yq_compare_layers(g, inputs, got, &e, err)) == YQ_OK &&
        !(r = malloc(sizeof *r * (size_t)g->n_nodes)))
        st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    if (st == YQ_OK) m = yq_pipe_layer_rows(g, e, r);
    free(inputs);
    free(e);
    yq_graph_free(g);
    if (st != YQ_OK) {
        free(r);
        return st;
    }
    *rows = r;
    *n_rows = m;
    if (images) *images = got;
    return YQ_OK;
}

static yq_quant_score score_of(const yq_pipe_eval *r)
{
    return (yq_quant_score){ r->s[YQ_COCO_AP], r->s[YQ_COCO_AP50], r->s[YQ_COCO_AP75], r->ms_median, r->ms_mean,
                             r->ms_wall, r->images, r->gpu };
}

yq_status yq_quantizer_point(yq_quantizer *q, const yq_qconf *qc, const yq_dataset *ds, const yq_point_opt *o,
                             yq_point_result *out, yq_error *err)
{
    if (!q || !ds || !out) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_quantizer_point: NULL argument");
    memset(out, 0, sizeof *out);
    out->latency_ms = -1;
    yq_point_opt none = { 0 };
    if (!o) o = &none;
    int dev = -1;
    yq_status st = o->device ? yq_device_parse(o->device, &dev, err) : YQ_OK;
    yq_qconfig *rq = NULL;
    yq_graph *w = NULL;                 /* the int8 graph (NULL: FP32, on the CPU) */
    if (st == YQ_OK && qc) st = quantize(q, qc, &rq, &w, err);
    yq_pipe_eval r = { 0 };
    if (st == YQ_OK) {
        if (q->io.stage) q->io.stage(q->io.ctx, qc ? "evaluating int8" : "evaluating fp32");
        if (!w) st = yq_pipe_eval_timed(q->g, ds, q->letterbox, -1, &q->io, &r, err);
        else if (o->strict) st = yq_pipe_eval_timed(w, ds, q->letterbox, dev, &q->io, &r, err);
        else st = yq_pipe_eval_or_cpu(w, ds, q->letterbox, &dev, &q->io, &r, err);
    }
    yq_qconf *h = NULL;
    if (st == YQ_OK && w && !(h = malloc(sizeof *h))) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    yq_model *m = NULL;
    if (st == YQ_OK && w && o->latency) st = yq_model_borrow(w, q->letterbox, &m, err);
    if (st == YQ_OK) {
        out->score = score_of(&r);
        for (int i = 1; w && i < w->n_nodes; i++)
            if (w->nodes[i].op == YQ_OP_CONV) {
                if (w->q[i].float_op) out->float_convs++;
                else out->int8_convs++;
            }
        double ms;
        if (m && o->latency(o->ctx, m, &ms)) out->latency_ms = ms;
        if (h) {
            h->qc = *rq;
            out->resolved = h;
            h = NULL;
        }
        if (o->want_dets) {
            out->dets = r.dets;
            out->n_dets = r.n;
            r.dets = NULL;
        }
    }
    yq_model_free(m);
    free(h);
    free(rq);
    yq_pipe_eval_free(&r);
    if (w) yq_graph_free(w);
    return st;
}

void yq_point_result_free(yq_point_result *r)
{
    if (!r) return;
    yq_qconf_free(r->resolved);
    yq_coco_dets_free(r->dets);
    r->resolved = NULL;
    r->dets = NULL;
    r->n_dets = 0;
}

yq_status yq_quantizer_score(yq_quantizer *q, const yq_qconf *qc, const yq_dataset *ds, const char *device,
                             yq_quant_score *score, yq_error *err)
{
    if (!q || !ds || !score) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_quantizer_score: NULL argument");
    memset(score, 0, sizeof *score);
    yq_point_opt o = { .device = device };
    yq_point_result r;
    yq_status st = yq_quantizer_point(q, qc, ds, &o, &r, err);
    if (st == YQ_OK) *score = r.score;
    yq_point_result_free(&r);
    return st;
}

typedef struct drop_ctx { const yq_max_drop_opt *o; int letterbox; } drop_ctx;
static void on_drop_step(void *ctx, const yq_pipe_drop_step *s)
{
    const yq_max_drop_opt *o = ((drop_ctx *)ctx)->o;
    yq_max_drop_step p = { s->k, s->layers, s->n_layers, s->map, s->drop_pts, s->ms, s->gpu_ms, s->met, s->eval_gpu };
    o->step(o->ctx, &p);
}
/* The caller's latency callback on the int8 graph as a borrowed model. */
static int on_drop_latency(void *ctx, const yq_graph *g, double *ms)
{
    const drop_ctx *d = ctx;
    yq_model *m = NULL;
    yq_error e;
    if (yq_model_borrow(g, d->letterbox, &m, &e) != YQ_OK) return 0;
    int r = d->o->latency(d->o->ctx, m, ms);
    yq_model_free(m);
    return r;
}

yq_status yq_quantizer_max_drop(yq_quantizer *q, const yq_qconf *qc, const yq_dataset *ds, const yq_max_drop_opt *o,
                                yq_qconf **chosen, yq_max_drop_result *result, yq_error *err)
{
    if (chosen) *chosen = NULL;
    if (!q || !qc || !ds || !o || !chosen || !result)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_quantizer_max_drop: NULL argument");
    memset(result, 0, sizeof *result);
    int rank = yq_rank_parse(o->rank ? o->rank : "tensor"), dev = -1;
    if (rank < 0) return yq_fail(err, YQ_ERR_INVALID_ARG, "rank \"%s\": expected tensor, head, sqnr or map", o->rank);
    if (!(o->budget_pts >= 0)) return yq_fail(err, YQ_ERR_INVALID_ARG, "budget %g: a drop in points, >= 0", o->budget_pts);
    if (o->parts > 1 && (o->part < 0 || o->part >= o->parts || !o->exchange))
        return yq_fail(err, YQ_ERR_INVALID_ARG, "part %d of %d parts (0..parts-1, with an exchange function)", o->part,
                       o->parts);
    yq_status st = o->device ? yq_device_parse(o->device, &dev, err) : YQ_OK;
    /* FP32 on the graph as the files hold it (equalization makes its own copy), unless given */
    double fp_stats[YQ_COCO_NSTATS] = { 0 };
    if (st == YQ_OK && o->fp32) {
        fp_stats[YQ_COCO_AP] = o->fp32->map;
        fp_stats[YQ_COCO_AP50] = o->fp32->map50;
        fp_stats[YQ_COCO_AP75] = o->fp32->map75;
    } else if (st == YQ_OK) {
        yq_pipe_eval fp = { 0 };
        if (q->io.stage) q->io.stage(q->io.ctx, "evaluating fp32");
        st = yq_pipe_eval_timed(q->g, ds, q->letterbox, -1, &q->io, &fp, err);
        memcpy(fp_stats, fp.s, sizeof fp_stats);
        yq_pipe_eval_free(&fp);
    }
    calib_state *cal = NULL;
    if (st == YQ_OK) st = ensure_stats(q, &qc->qc, &cal, err);
    yq_qconf *out = NULL;
    if (st == YQ_OK && !(out = malloc(sizeof *out))) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    yq_pipe_drop_res res = { 0 };
    if (st == YQ_OK) {
        *out = *qc;
        drop_ctx dc = { o, q->letterbox };
        yq_pipe_drop_req r = { .budget_pts = o->budget_pts, .rank = rank, .max_float = o->max_float, .eval_device = dev,
                               .latency = o->latency ? on_drop_latency : NULL, .step = o->step ? on_drop_step : NULL,
                               .ctx = &dc, .part = o->part, .parts = o->parts, .exchange = o->exchange,
                               .exchange_ctx = o->exchange_ctx };
        yq_pipe_calib c = calib_req(q);
        st = yq_pipe_max_drop(&c, &out->qc, work_graph(q, cal), cal->cs, ds, q->letterbox, fp_stats, &r, &q->io, &res, err);
    }
    if (st == YQ_OK) {
        yq_max_drop_result *R = result;
        R->met = res.met;
        R->fp32_map = fp_stats[YQ_COCO_AP];
        R->all_int8_map = res.all8.s[YQ_COCO_AP];
        R->map = res.final.s[YQ_COCO_AP];
        R->n_float = res.n_float;
        R->float_layers = res.float_layers;
        res.float_layers = NULL;
        R->steps = res.steps;
        R->tried = res.tried;
        R->drop_pts = res.best_drop;
        R->all_int8_score = score_of(&res.all8);
        R->score = score_of(&res.final);
        R->all_int8_latency_ms = res.all8_gpu;
        R->latency_ms = res.final_gpu;
        R->eval_gpu = res.eval_gpu;
        if (o->want_dets) {
            R->all_int8_dets = res.all8.dets;
            R->n_all_int8_dets = res.all8.n;
            R->dets = res.final.dets;
            R->n_dets = res.final.n;
            res.all8.dets = res.final.dets = NULL;
        }
        *chosen = out;
        out = NULL;
    }
    yq_pipe_drop_free(&res);
    free(out);
    return st;
}

void yq_max_drop_result_free(yq_max_drop_result *r)
{
    if (!r) return;
    free(r->float_layers);
    yq_coco_dets_free(r->all_int8_dets);
    yq_coco_dets_free(r->dets);
    r->float_layers = NULL;
    r->all_int8_dets = r->dets = NULL;
    r->n_all_int8_dets = r->n_dets = 0;
}

yq_status yq_quantizer_sensitivity(yq_quantizer *q, const yq_qconf *qc, const yq_dataset *ds, const yq_sens_opt *o,
                                   yq_sens_layer **rows, int *n_rows, yq_sens_summary *summary, yq_error *err)
{
    if (rows) *rows = NULL;
    if (n_rows) *n_rows = 0;
    if (!q || !qc || !ds || !rows || !n_rows)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_quantizer_sensitivity: NULL argument");
    yq_sens_opt d = { 0 };
    if (!o) o = &d;
    if (o->max_layers < 0 || o->sqnr_images < 0 || o->sqnr_images > 1024)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "max_layers %d (>= 0), sqnr_images %d (0..1024)", o->max_layers,
                       o->sqnr_images);
    if (o->parts > 1 && (o->part < 0 || o->part >= o->parts || !o->exchange))
        return yq_fail(err, YQ_ERR_INVALID_ARG, "part %d of %d parts (0..parts-1, with an exchange function)", o->part,
                       o->parts);
    yq_status st = YQ_OK;
    yq_pipe_eval fp = { 0 };
    if (st == YQ_OK) {
        if (q->io.stage) q->io.stage(q->io.ctx, "evaluating fp32");
        st = yq_pipe_eval_timed(q->g, ds, q->letterbox, -1, &q->io, &fp, err);
    }
    calib_state *cal = NULL;
    if (st == YQ_OK) st = ensure_stats(q, &qc->qc, &cal, err);
    yq_pipe_sens_res res = { 0 };
    if (st == YQ_OK) {
        yq_pipe_sens_req r = { .max_layers = o->max_layers, .sqnr_images = o->sqnr_images ? o->sqnr_images : 8,
                               .rank_sqnr = o->rank_sqnr != 0, .part = o->part, .parts = o->parts,
                               .exchange = o->exchange, .exchange_ctx = o->exchange_ctx };
        yq_pipe_calib c = calib_req(q);
        st = yq_pipe_sensitivity(&c, &qc->qc, work_graph(q, cal), cal->cs, ds, q->letterbox, fp.s, &r, &q->io, &res, err);
    }
    if (st == YQ_OK && !(*rows = malloc(sizeof **rows * (size_t)(res.n ? res.n : 1))))
        st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    if (st == YQ_OK) {
        for (int k = 0; k < res.n; k++) {
            const yq_pipe_sens_row *w = &res.rows[k];
            (*rows)[k] = (yq_sens_layer){ w->layer, w->sqnr, w->map_a, w->head_a, w->map_b, w->head_b, w->impact };
        }
        *n_rows = res.n;
        if (summary) *summary = (yq_sens_summary){ fp.s[YQ_COCO_AP], res.all8.s[YQ_COCO_AP], res.head_all };
    }
    yq_pipe_sens_free(&res);
    yq_pipe_eval_free(&fp);
    return st;
}

yq_status yq_quantizer_resolve(yq_quantizer *q, const yq_qconf *qc, yq_qconf **resolved, char **plan_json,
                               yq_error *err)
{
    if (resolved) *resolved = NULL;
    if (plan_json) *plan_json = NULL;
    if (!q || !qc) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_quantizer_resolve: NULL argument");
    yq_qconfig *rq = NULL;
    yq_graph *w;
    yq_status st = quantize(q, qc, &rq, &w, err);
    if (st != YQ_OK) return st;
    char *plan = plan_json ? yq_pipe_plan_json(w, &qc->qc, rq) : NULL;
    yq_graph_free(w);
    if (plan_json && !plan) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    yq_qconf *h = NULL;
    if (st == YQ_OK && resolved && !(h = malloc(sizeof *h))) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    if (st == YQ_OK) {
        if (h) {
            h->qc = *rq;
            *resolved = h;
        }
        if (plan_json) *plan_json = plan;
    } else {
        free(plan);
    }
    free(rq);
    return st;
}

/* The int8 package qc makes: written to path, or (path NULL) made in memory into *buf, *n. */
static yq_status package(yq_quantizer *q, const yq_qconf *qc, const char *acc, const char *path, void **buf, size_t *n,
                         yq_error *err)
{
    yq_qconfig *resolved = NULL;
    yq_graph *g;
    yq_status st = quantize(q, qc, &resolved, &g, err);
    if (st != YQ_OK) return st;
    const yq_calib_stats *cs = q->st[qc->qc.equalize ? 1 : 0].cs;
    char *text = yq_qconfig_text(resolved), *req = yq_qconfig_text(&qc->qc), method[128];
    char *plan = yq_pipe_plan_json(g, &qc->qc, resolved);
    yq_calib_method_str(&resolved->calib, method, sizeof method);
    if (!text || !req || !plan) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    else {
        yq_package_meta meta = { .qconfig_text = text, .request_text = req, .plan_json = plan, .calib_method = method,
                                 .accuracy_json = acc,
                                 .calib_images = cs->images, .letterbox = q->letterbox,
                                 .created_unix = q->o.created_unix };
        memcpy(meta.calib_images_sha256, cs->images_sha256, 32);
        st = path ? yq_package_write(path, g, &meta, err) : yq_package_image(q->model, g, &meta, buf, n, err);
    }
    free(text);
    free(req);
    free(plan);
    free(resolved);
    yq_graph_free(g);
    return st;
}

yq_status yq_quantizer_save(yq_quantizer *q, const yq_qconf *qc, const char *path, yq_error *err)
{
    if (!q || !qc || !path) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_quantizer_save: NULL argument");
    return package(q, qc, NULL, path, NULL, NULL, err);
}

yq_status yq_quantizer_save_with(yq_quantizer *q, const yq_qconf *qc, const char *path, const yq_save_opt *o,
                                 yq_error *err)
{
    if (!q || !qc || !path) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_quantizer_save_with: NULL argument");
    return package(q, qc, o ? o->accuracy_json : NULL, path, NULL, NULL, err);
}

yq_status yq_quantizer_model(yq_quantizer *q, const yq_qconf *qc, yq_model **out, yq_error *err)
{
    if (!out) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_quantizer_model: NULL argument");
    *out = NULL;
    if (!q || !qc) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_quantizer_model: NULL argument");
    /* the package itself, in memory, so that the model is what a saved one would be to the byte */
    void *buf = NULL;
    size_t n = 0;
    yq_status st = package(q, qc, NULL, NULL, &buf, &n, err);
    if (st == YQ_OK) st = yq_model_open_mem(buf, n, q->model, out, err);
    free(buf);
    return st;
}
