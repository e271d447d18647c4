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

/* yq_latency_opt, yq_latency, yq_latency_defaults: include/yq.h (yq_model_latency is this
 * function on a model's graph). */

/* YQ_ERR_UNSUPPORTED when there is no CUDA device (no driver or no GPU);
 * YQ_ERR_INVALID_ARG for a graph without int8 (g->q); the tuner's errors (a
 * malformed log: YQ_ERR_FORMAT naming file and line) and the device's as they come.
 * *out is filled only on YQ_OK. */
yq_status yq_latency_gpu(const yq_graph *g, const yq_latency_opt *o, yq_latency *out, yq_error *err);

#endif
