/* The timed evaluation behind sweep, sensitivity and the --max-drop search (issue 16:
 * library code, moved from cli/): detections and COCO mAP of a graph on a labelled
 * dataset, one image at a time with the engine timed image by image, on the CPU engines
 * (FP32 OpenBLAS, or the int8 reference) or the GPU int8 engine.  Nothing here prints:
 * progress and warnings (an image that cannot be read) go to the caller's yq_pipe_io.
 *
 *     yq_pipe_eval r;
 *     yq_pipe_eval_timed(g, ds, letterbox, -1, &io, &r, &err);   // the CPU
 *     ... r.s[YQ_COCO_AP], r.ms_median ...
 *     yq_pipe_eval_free(&r);
 */
#ifndef YQ_PIPELINE_EVALUATE_H
#define YQ_PIPELINE_EVALUATE_H

#include "calib/compare.h"
#include "datasets/coco_eval.h"
#include "datasets/labels.h"
#include "pipeline/quantize.h"

typedef struct yq_pipe_eval {
    double s[YQ_COCO_NSTATS];     /* COCO stats, fractions (s[YQ_COCO_AP]: mAP@[.5:.95]) */
    double ms_median, ms_mean;    /* the engine alone (yq_exec_int8 / yq_exec_fp32, batch 1), per image;
                                     on the GPU: upload, forward and the heads' download */
    int gpu;                      /* evaluated on the GPU int8 engine */
    double ms_wall;               /* everything (decode, resize, engine, NMS), per image */
    yq_det *dets;                 /* malloc'ed (yq_pipe_eval_free) */
    int n, images;                /* detections; images evaluated (unreadable ones skipped) */
} yq_pipe_eval;

/* g on every image of ds.  device >= 0 and an int8 graph: the GPU int8 engine on that
 * device (the CPU reference's bytes in every layer, float layers in their exact FP32, as
 * the packages run); else the CPU engines.  Progress
 * through io->progress (io may be NULL); an unreadable image is skipped with io->warn.
 * *r zeroed first; on failure it holds nothing to free. */
yq_status yq_pipe_eval_timed(const yq_graph *g, const yq_dataset *ds, int letterbox, int device, const yq_pipe_io *io,
                             yq_pipe_eval *r, yq_error *err);
/* As yq_pipe_eval_timed on *device; a GPU evaluation that fails hands over to the CPU
 * for good: one io->warn line, *device = -1, and the CPU evaluates. */
yq_status yq_pipe_eval_or_cpu(const yq_graph *g, const yq_dataset *ds, int letterbox, int *device, const yq_pipe_io *io,
                              yq_pipe_eval *r, yq_error *err);
/* Frees r's detections (r->dets NULL after; NULL r is a no-op). */
void yq_pipe_eval_free(yq_pipe_eval *r);
/* A copy of a's detections into *b (b = a otherwise). */
yq_status yq_pipe_eval_copy(const yq_pipe_eval *a, yq_pipe_eval *b, yq_error *err);

/* SQNR (dB) of the tensors feeding the heads, all heads pooled, from yq_compare_layers'
 * output; 200 when there is no noise. */
double yq_pipe_head_sqnr(const yq_graph *g, const yq_layer_err *e);

#endif
