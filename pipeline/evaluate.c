/* pipeline/evaluate.h: the timed evaluation shared by sweep, sensitivity and the
 * --max-drop search: detections and COCO mAP on a dataset with the engine timed image by
 * image, on the CPU engines or the GPU int8 engine. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ir/stats.h"
#include "pipeline/evaluate.h"
#include "quant/rewrite.h"
#include "runtime/evaluate.h"
#include "runtime/exec_cuda.h"
#include "runtime/plan.h"
#include "runtime/postproc.h"
#include "runtime/session.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define MAX_HEADS 16

yq_status yq_pipe_eval_timed(const yq_graph *g, const yq_dataset *ds, int letterbox, int device, const yq_pipe_io *io,
                             yq_pipe_eval *r, yq_error *err)
{
    memset(r, 0, sizeof *r);
    yq_progress_fn progress = io ? io->progress : NULL;
    yq_warn_fn warn = io ? io->warn : NULL;
    void *pctx = io ? io->ctx : NULL;
    yq_eval_opt eo = yq_eval_defaults();
    int heads[MAX_HEADS], nh = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (yq_op_is_head(g->nodes[i].op)) {
            if (nh == MAX_HEADS) return yq_fail(err, YQ_ERR_UNSUPPORTED, "more than %d heads", MAX_HEADS);
            heads[nh++] = i;
        }
    if (!nh) return yq_fail(err, YQ_ERR_UNSUPPORTED, "%s: the model has no [yolo] or [region] head", g->cfg_path);
    /* the GPU int8 engine: the CPU reference's bytes for every layer (float layers in their
     * exact FP32); the heads come back to the host for the same post-processing */
    yq_plan *p = NULL;
    yq_cuda_plan *gp = NULL;
    float *gin = NULL, *gh[MAX_HEADS] = { 0 };
    yq_status st;
    if (device >= 0 && g->q) {
        r->gpu = 1;
        st = yq_cuda_plan_new(g, 1, device, &gp, err);
        if (st == YQ_OK && !(gin = malloc(sizeof *gin * (size_t)yq_shape_size(g->nodes[0].out))))
            st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
        for (int h = 0; h < nh && st == YQ_OK; h++)
            if (!(gh[h] = malloc(sizeof(float) * (size_t)yq_shape_size(g->nodes[heads[h]].out))))
                st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    } else {
        st = yq_plan_new(g, 1, YQ_PLAN_KEEP_HEADS, &p, err);
    }
    int cap = 1024, n = 0, bad = 0, timed = 0, n_map = 0;
    yq_det *dets = malloc(sizeof *dets * (size_t)cap);
    yq_detection *one = malloc(sizeof *one * (size_t)eo.post.max_dets);
    double *ms = malloc(sizeof *ms * (size_t)(ds->n_images ? ds->n_images : 1)), wall = 0;
    int *map = yq_eval_class_map(g, ds, &n_map);
    if (st == YQ_OK && (!dets || !one || !ms || !map)) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    for (int i = 0; i < ds->n_images && st == YQ_OK; i++) {
        char path[2048];
        yq_image im;
        yq_error e2;
        double t0 = now_s();
        if ((st = yq_dataset_image_path(ds, i, path, sizeof path, err)) != YQ_OK) break;
        if (yq_image_load(path, &im, &e2) != YQ_OK) {
            yq_warn_skipped(warn, pctx, e2.msg);
            bad++;
            if (progress) progress(pctx, i + 1, ds->n_images);
            continue;
        }
        st = yq_preprocess(g, &im, letterbox, gp ? gin : yq_plan_input(p), err);
        double t1 = now_s();
        if (st == YQ_OK && gp) {
            st = yq_cuda_run(gp, gin, err);
            for (int h = 0; h < nh && st == YQ_OK; h++) st = yq_cuda_download(gp, heads[h], gh[h], err);
        } else if (st == YQ_OK) {
            st = g->q ? yq_exec_int8(p, NULL, NULL, NULL, err) : yq_exec_fp32(p, NULL, NULL, NULL, err);
        }
        double t2 = now_s();
        int k = 0;
        if (st == YQ_OK) {
            const float *hp[MAX_HEADS];
            for (int h = 0; h < nh; h++) hp[h] = gp ? gh[h] : yq_plan_tensor(p, heads[h]);
            k = yq_postprocess(g, hp, 0, im.w, im.h, letterbox, &eo.post, one, eo.post.max_dets);
            if (k < 0) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory in post-processing");
        }
        yq_image_free(&im);
        if (st != YQ_OK) break;
        ms[timed++] = 1e3 * (t2 - t1);
        wall += now_s() - t0;
        if ((st = yq_dets_append(&dets, &n, &cap, ds->images[i].id, one, k, map, n_map, err)) != YQ_OK) break;
        if (progress) progress(pctx, i + 1, ds->n_images);
    }
    if (st == YQ_OK && !timed) st = yq_fail(err, YQ_ERR_IO, "none of the %d images could be read", ds->n_images);
    if (st == YQ_OK) st = yq_coco_eval(ds, dets, n, r->s, NULL, NULL, err);
    if (st == YQ_OK) {
        yq_stats s = yq_stats_of(ms, timed);
        r->ms_median = s.median;
        r->ms_mean = s.mean;
        r->ms_wall = 1e3 * wall / timed;
        r->dets = dets;
        r->n = n;
        r->images = timed;
        dets = NULL;
    }
    if (bad && st == YQ_OK && warn) {
        char msg[128];
        snprintf(msg, sizeof msg, "%d of %d images could not be read and were skipped", bad, ds->n_images);
        warn(pctx, msg);
    }
    free(dets);
    free(one);
    free(map);
    free(ms);
    yq_plan_free(p);
    yq_cuda_plan_free(gp);
    free(gin);
    for (int h = 0; h < nh; h++) free(gh[h]);
    return st;
}

yq_status yq_pipe_eval_or_cpu(const yq_graph *g, const yq_dataset *ds, int letterbox, int *device, const yq_pipe_io *io,
                              yq_pipe_eval *r, yq_error *err)
{
    yq_status st = yq_pipe_eval_timed(g, ds, letterbox, *device, io, r, err);
    if (st != YQ_OK && *device >= 0) {
        if (io && io->warn) {
            char msg[sizeof err->msg + 128];
            snprintf(msg, sizeof msg, "evaluation on the GPU failed (%s); the CPU int8 engine evaluates from here on",
                     err->msg);
            io->warn(io->ctx, msg);
        }
        *device = -1;
        st = yq_pipe_eval_timed(g, ds, letterbox, -1, io, r, err);
    }
    return st;
}

void yq_pipe_eval_free(yq_pipe_eval *r)
{
    if (!r) return;
    yq_coco_dets_free(r->dets);
    r->dets = NULL;
}

yq_status yq_pipe_eval_copy(const yq_pipe_eval *a, yq_pipe_eval *b, yq_error *err)
{
    *b = *a;
    b->dets = malloc(sizeof *b->dets * (size_t)(a->n ? a->n : 1));
    if (!b->dets) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    memcpy(b->dets, a->dets, sizeof *b->dets * (size_t)a->n);
    return YQ_OK;
}

double yq_pipe_head_sqnr(const yq_graph *g, const yq_layer_err *e)
{
    double sig = 0, noise = 0;
    for (int i = 1; i < g->n_nodes; i++)
        if (yq_op_is_head(g->nodes[i].op)) {
            int s = g->nodes[i].src[0];
            sig += e[s].sig;
            noise += e[s].noise;
        }
    if (!(noise > 0)) return 200;
    return 10 * log10(sig / noise);
}
