/* The latency of an int8 graph's forward on the GPU, with tuned kernels: what
 * `yquant sweep` and `quantize --max-drop` put beside each configuration's mAP.
 *
 *     yq_latency_opt o = yq_latency_defaults();     // batch 1, device 0, tune, 60 s budget
 *     o.tune_log = "out/tune.jsonl";                // read first, extended with what it lacks
 *     yq_latency r;
 *     yq_status st = yq_latency_gpu(g, &o, &r, &err);
 *     if (st == YQ_ERR_UNSUPPORTED) ...             // no GPU here: measure on the CPU instead
 *     printf("%.3f ms (%s, %d of %d convs tuned)\n", r.ms, r.gpu, r.tuned_convs, r.int8_convs);
 *
 * One call: the distinct (conv shape, batch) tasks of g (runtime/tune.h) are tuned on
 * the device within o->tune_budget_s, every shape the log has finished for this GPU's
 * architecture coming from the log without a measurement (so the points of a sweep
 * share the work: the first pays, the others read); the plan is built for o->batch
 * images with the fastest configuration of every tuned shape (yq_tune_apply), the
 * heuristic's elsewhere; then the forward (quantize the input, every layer; YOLO
 * decoding and NMS excluded, the input already on the device) is timed with CUDA
 * events: a few eager launches, then o->runs replays of a captured CUDA graph (eager
 * launches when capture fails: r.graph says which).  r.ms is the median.
 *
 * The kernels are exact whatever the choice, so the data does not matter: the input is
 * a fixed pattern. */
#ifndef YQ_RUNTIME_LATENCY_H
#define YQ_RUNTIME_LATENCY_H

#include "ir/ir.h"
#include "runtime/tune.h"

typedef struct yq_latency_opt {
    int batch;                /* images per forward (1..4096); default 1 */
    int device;               /* CUDA device index; default 0 */
    int tune;                 /* 1 (default): tune the shapes the log lacks; 0: the log's choices
                                 (if any) and the heuristic, nothing measured per shape */
    const char *tune_log;     /* the tuning log (JSON lines): read, appended to; NULL: none */
    double tune_budget_s;     /* wall clock for the shapes the log lacks (default 60; <= 0: no limit) */
    int tune_trials;          /* candidates per shape (default 32, as yquant tune) */
    int warmup, runs;         /* untimed, timed forwards (default 10, 100) */
} yq_latency_opt;

yq_latency_opt yq_latency_defaults(void);

typedef struct yq_latency {
    double ms, ms_min, ms_mean;   /* one forward of batch images: median, min, mean of the timed runs */
    double eager_ms;              /* the median of the eager launches (always measured) */
    int graph;                    /* 1: ms is from CUDA-graph replays; 0: from eager launches */
    int batch, runs;
    char gpu[160];                /* "NVIDIA H200 (sm_90, 132 SMs)" */
    char gpu_name[128];           /* "NVIDIA H200" */
    int sm;                       /* 90 */
    int int8_convs, tuned_convs;  /* convs of the plan that run int8, those that run a tuned choice */
    yq_tune_summary tune;         /* the tasks: from the log, searched now, cut, skipped (zero when !tune) */
    double tune_s, plan_s;        /* tuning (uploads included), planning */
} yq_latency;

/* YQ_ERR_UNSUPPORTED when there is no CUDA device (no driver or no GPU);
 * YQ_ERR_INVALID_ARG for a graph without int8 (g->q); the tuner's errors (a
 * malformed log: YQ_ERR_FORMAT naming file and line) and the device's as they come.
 * *out is filled only on YQ_OK. */
yq_status yq_latency_gpu(const yq_graph *g, const yq_latency_opt *o, yq_latency *out, yq_error *err);

#endif
