/* The quantization pipeline's first steps, as library code: calibrate a graph (the
 * calibration cache, the device, equalization's second pass) and rewrite it into int8 as a
 * qconfig directs (with the float layers and thresholds chosen by measurement, and data
 * bias correction).  The CLI's quantize, eval, sensitivity and sweep commands all
 * run these; they moved here from cli/ (issue 16) so that C code, tests included, can run
 * them without the command line.  Nothing here prints: progress, warnings and notes go to
 * the caller's callbacks (yq_pipe_io; any of them may be NULL).
 *
 *     yq_pipe_io io = { .warn = my_warn, .ctx = me };
 *     yq_pipe_calib cal = { .images = "calib/", .device = "cpu" };
 *     yq_calib_stats *cs;
 *     yq_graph *eq;                        // equalize on: g's equalized copy; else NULL
 *     yq_pipe_calibrate(&cal, &qc, g, letterbox, &io, &eq, &cs, &err);
 *     yq_graph *w = eq ? eq : g;           // the graph to rewrite
 *     yq_pipe_quantize(&cal, &qc, &resolved, w, cs, letterbox, &io, &q, &err);   // q: int8, w as it was
 */
#ifndef YQ_PIPELINE_QUANTIZE_H
#define YQ_PIPELINE_QUANTIZE_H

#include "calib/observe.h"
#include "calib/compare.h"
#include "include/yq_quant.h"
#include "ir/ir.h"
#include "quant/qconfig.h"

typedef struct yq_pipe_io {
    void (*stage)(void *ctx, const char *label);   /* a step with progress begins ("calibrating (GPU)") */
    yq_progress_fn progress;                       /* its progress */
    yq_warn_fn warn;                               /* something went around ("calibration cache: ...") */
    yq_warn_fn note;                               /* something worth a line ("calibration: cache hit (PATH)") */
    void *ctx;                                     /* passed to all four */
} yq_pipe_io;

/* Where calibration reads and runs. */
typedef struct yq_pipe_calib {
    const char *images;       /* the calibration images (a folder) */
    const char *cache;        /* the cache file; NULL: $XDG_CACHE_HOME/yquant/calib.h5 or
                                 ~/.cache/yquant/calib.h5 (none when neither is set) */
    int no_cache;             /* 1: neither read nor write a cache */
    const char *device;       /* "cpu", "cuda", "cuda:N"; NULL: cuda when usable, else cpu.  A
                                 device given that cannot run is an error; the default one
                                 falls back to the CPU with a warning */
} yq_pipe_calib;

/* The statistics of g's activations on c->images (*cs, yq_calib_stats_free), from the
 * cache when it holds them, else observed and stored.  g is not changed: with
 * qc->equalize, *eq receives a new graph (yq_graph_free), g's weights equalized with those
 * statistics, and *cs is the second pass's, on *eq (the graph to rewrite then); without,
 * *eq is NULL and g is the graph to rewrite.  A cache that cannot be read or written
 * costs one warning and the run goes on without it. */
yq_status yq_pipe_calibrate(const yq_pipe_calib *c, const yq_qconfig *qc, const yq_graph *g, int letterbox,
                            const yq_pipe_io *io, yq_graph **eq, yq_calib_stats **cs, yq_error *err);

/* *out: FP32 graph g rewritten into int8 as the request directs, from cs (a new graph that
 * borrows g's weights: quant/rewrite.h yq_rewrite; yq_graph_free; set only on YQ_OK; g is
 * not changed).  The request is not changed: *resolved (may be NULL: not wanted; never the
 * request itself) receives it with the measured choices written in: keep_float and
 * thresh_search are measured on up to 16 of c->images through simulated int8 and become
 * per-layer skips and thresholds (the two keys then 0), so that a rewrite with *resolved
 * reproduces *out; bias_correction data measures on the same images. */
yq_status yq_pipe_quantize(const yq_pipe_calib *c, const yq_qconfig *request, yq_qconfig *resolved, const yq_graph *g,
                           const yq_calib_stats *cs, int letterbox, const yq_pipe_io *io, yq_graph **out, yq_error *err);

/* The decisions of the rewrite g holds (made from request, resolved as yq_pipe_quantize
 * gave it), as compact JSON (malloc'd; NULL when out of memory or g is not quantized):
 *   {"chosen_float": [layers keep_float chose], "searched_thresholds": [layers thresh_search
 *    set], "nodes": [{"layer", "op", "dtype": "int8"|"float", "why": "int8" | "skip_layers" |
 *    "keep_float" | "head" | "first" | "activation" | "inputs", "bits" (int8), "thresh",
 *    "precision": "fp32"|"fp16w" (float convs)}, ...], "float_convs", "int8_convs"}
 * (every node but the input, dropouts and heads).  Packages store it beside the request. */
char *yq_pipe_plan_json(const yq_graph *g, const yq_qconfig *request, const yq_qconfig *resolved);

/* Up to max images of dir, evenly spaced over it, preprocessed for g (*out: *got inputs of
 * g's input size, malloc'd); images that cannot be decoded are left out. */
yq_status yq_pipe_load_inputs(const yq_graph *g, const char *dir, int max, int letterbox, const yq_pipe_io *io,
                              float **out, int *got, yq_error *err);

/* The per-layer errors of int8 graph g (e: yq_compare_layers') as public rows, every node but the
 * input, dropouts and heads, in graph order, into rows (g->n_nodes entries); how many. */
int yq_pipe_layer_rows(const yq_graph *g, const yq_layer_err *e, yq_layer_error *rows);

#endif
