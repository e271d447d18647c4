/* Which layers stay float, measured (issue 16: library code, moved from
 * cli/cmd_sensitivity.c): the per-layer sensitivity table and the accuracy-aware search
 * behind `quantize --max-drop P`.
 *
 * Both go through skip_layers in the qconfig, starting from every layer in int8 (head and
 * first conv included): (a) only layer L in int8, every other layer float; (b) only layer L
 * in float, every other layer int8.  For each: mAP on the labelled set (pipeline/evaluate.h)
 * and the SQNR of the tensors feeding the heads against FP32, on a few calibration images.
 * Nothing here prints: steps, progress and warnings go to the caller's callbacks.
 *
 *     yq_pipe_drop_req r = { .budget_pts = 1.0, .rank = YQ_RANK_TENSOR, .eval_device = -1 };
 *     yq_pipe_drop_res res;
 *     yq_pipe_max_drop(&cal, &qc, g, cs, ds, letterbox, fp.s, &r, &io, &res, &err);
 *     ... res.met, res.float_layers, res.final.s[YQ_COCO_AP]; qc holds the choice ...
 *     yq_pipe_drop_free(&res);
 */
#ifndef YQ_PIPELINE_SEARCH_H
#define YQ_PIPELINE_SEARCH_H

#include "pipeline/evaluate.h"

/* ---- the sensitivity table ---- */

typedef struct yq_pipe_sens_row {
    int id, layer;                /* node id, Darknet layer */
    double sqnr;                  /* the layer's output SQNR (dB) in the all-int8 graph */
    double map_a, head_a;         /* (a) only this layer int8: mAP, head SQNR (dB) */
    double map_b, head_b;         /* (b) only this layer float */
    double impact;                /* drop(a) + gain(b), mAP points */
} yq_pipe_sens_row;

typedef struct yq_pipe_sens_req {
    int max_layers;               /* > 0: only the convs with the lowest SQNR in the all-int8 graph */
    int sqnr_images;              /* calibration images for the SQNR figures */
    int rank_sqnr;                /* order by the head SQNR gain of (b) instead of impact */
    /* over several processes: this one measures rows part, part + parts, ... (parts <= 1:
     * all), then exchange fills in the others (yq_sens_opt's) before the ranking */
    int part, parts;
    int (*exchange)(void *ctx, void *rows, size_t row_bytes, int n);
    void *exchange_ctx;
} yq_pipe_sens_req;

typedef struct yq_pipe_sens_res {
    yq_pipe_sens_row *rows;            /* most sensitive first (malloc'd) */
    int n;
    yq_pipe_eval all8;            /* every layer int8 */
    double head_all;              /* its head SQNR (dB) */
    int n_inputs;                 /* calibration images the SQNR figures used */
} yq_pipe_sens_res;

/* The table for g (FP32, calibrated: cs) with the base qconfig's bits, calibration method
 * and so on; fp_stats: FP32's COCO stats on ds.  io->note gets one summary line once the
 * all-int8 graph is measured; io->stage("layers") and io->progress the layer loop.  g is
 * not changed (each configuration measured is a rewrite of its own, freed after). */
yq_status yq_pipe_sensitivity(const yq_pipe_calib *c, const yq_qconfig *base, const yq_graph *g, const yq_calib_stats *cs,
                              const yq_dataset *ds, int letterbox, const double *fp_stats, const yq_pipe_sens_req *r,
                              const yq_pipe_io *io, yq_pipe_sens_res *res, yq_error *err);
void yq_pipe_sens_free(yq_pipe_sens_res *res);

/* ---- the --max-drop search ---- */

enum { YQ_RANK_HEAD, YQ_RANK_SQNR, YQ_RANK_MAP, YQ_RANK_TENSOR };
/* "head" | "sqnr" | "map" | "tensor" -> YQ_RANK_*; -1 for anything else. */
int yq_rank_parse(const char *s);

/* One row of the search: step 0 is every layer int8, step k adds layers. */
typedef struct yq_pipe_drop_step {
    int k;
    const int *layers;            /* the layers this step keeps float in addition */
    int n_layers;                 /* (0 for step 0) */
    double map, drop_pts;         /* mAP@[.5:.95] (fraction) and its drop against FP32 (points) */
    double ms;                    /* the evaluation engine's time per image */
    double gpu_ms;                /* the latency callback's figure; < 0: not measured */
    int met;                      /* this step is within the budget */
    int eval_gpu;                 /* this step's mAP came from the GPU int8 engine */
} yq_pipe_drop_step;

typedef struct yq_pipe_drop_req {
    double budget_pts;            /* the largest mAP@[.5:.95] drop allowed, points */
    int rank;                     /* YQ_RANK_* */
    int max_float;                /* > 0: at most this many float convs */
    int eval_device;              /* >= 0: mAP on this GPU's int8 engine (the engine that will run
                                     the package); -1: the CPU int8 engine.  A GPU evaluation
                                     that fails hands over to the CPU for good (io->warn) */
    /* The latency of an int8 graph (ms per forward) into *ms: 1 if measured, 0 if not (may
     * be NULL: no latency column). */
    int (*latency)(void *ctx, const yq_graph *g, double *ms);
    /* Each step as it is measured (may be NULL). */
    void (*step)(void *ctx, const yq_pipe_drop_step *s);
    void *ctx;                    /* passed to latency and step */
    /* over several processes (yq_max_drop_opt's): the "map" and "head" rankings split
     * k = part, part + parts, ...; the steps measured parts at a time, step k + j by part j,
     * and taken in order as one process takes them (the ones past the answer dropped) */
    int part, parts;
    int (*exchange)(void *ctx, void *rows, size_t row_bytes, int n);
    void *exchange_ctx;
} yq_pipe_drop_req;

typedef struct yq_pipe_drop_res {
    int met;                      /* the budget was met */
    int *float_layers;            /* the layers kept float (malloc'd; the best step's when not met) */
    int n_float;
    int tried;                    /* float layers of the last step tried */
    int steps;                    /* steps measured after the all-int8 one */
    double best_drop;             /* the drop of the answer, points */
    yq_pipe_eval all8, final;     /* the all-int8 evaluation and the answer's */
    double all8_gpu, final_gpu;   /* their latency (< 0: not measured) */
    int eval_gpu;                 /* the evaluations ended on the GPU engine */
} yq_pipe_drop_res;

/* Starting from every layer in int8, keeps the most sensitive layers in float (ranked by
 * r->rank) one step at a time until the drop against fp_stats is within the budget on ds,
 * or max_float layers are float.  Sets *qc to the answer (head and first int8, keep_float
 * 0, skip_layers the chosen layers: when the budget is not met, those of the step with the
 * lowest drop); g is not changed.  io->stage/progress: "all int8" and "ranking". */
yq_status yq_pipe_max_drop(const yq_pipe_calib *c, yq_qconfig *qc, const yq_graph *g, const yq_calib_stats *cs,
                           const yq_dataset *ds, int letterbox, const double *fp_stats, const yq_pipe_drop_req *r,
                           const yq_pipe_io *io, yq_pipe_drop_res *res, yq_error *err);
void yq_pipe_drop_free(yq_pipe_drop_res *res);

#endif
