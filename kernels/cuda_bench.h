/* GPU timing for benchmarks (cli/cmd_bench.c): CUDA events around enqueued work,
 * optionally replayed from a captured CUDA graph.  No CUDA types here.
 *
 *     // enqueue(ctx, err) puts one inference on `stream` and returns
 *     float ms[100];
 *     yq_gpu_time(stream, enqueue, ctx, NULL, 10, 100, ms, &err);   // eager launches
 *     void *graph;
 *     if (yq_gpu_graph_capture(stream, enqueue, ctx, &graph, &err) == YQ_OK)
 *         yq_gpu_time(stream, NULL, NULL, graph, 10, 100, ms, &err); // graph replays
 *     yq_gpu_graph_free(graph);
 *
 * Each timed run is bracketed by two events and waited for before the next starts,
 * so ms[i] is one inference's latency as the device saw it, launch gaps included. */
#ifndef YQ_KERNELS_CUDA_BENCH_H
#define YQ_KERNELS_CUDA_BENCH_H

#include "ir/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef yq_status (*yq_gpu_enqueue_fn)(void *ctx, yq_error *err);

/* warmup untimed runs, then runs timed ones into ms[runs].  Either fn (eager) or
 * graph (a yq_gpu_graph_capture result) is given. */
yq_status yq_gpu_time(void *stream, yq_gpu_enqueue_fn fn, void *ctx, void *graph, int warmup, int runs, float *ms,
                      yq_error *err);

/* Captures what fn enqueues on stream (a non-legacy stream) into an executable
 * graph; *graph set only on YQ_OK. */
yq_status yq_gpu_graph_capture(void *stream, yq_gpu_enqueue_fn fn, void *ctx, void **graph, yq_error *err);
yq_status yq_gpu_graph_launch(void *graph, void *stream, yq_error *err);
void      yq_gpu_graph_free(void *graph);                        /* NULL is a no-op */

/* Events for per-node profiles: a pool of n events recorded in order on a stream. */
typedef struct yq_gpu_marks yq_gpu_marks;
yq_status yq_gpu_marks_new(int n, yq_gpu_marks **out, yq_error *err);
void      yq_gpu_marks_free(yq_gpu_marks *m);
/* Records event k on stream (k < n); safe to call from an executor's node hook. */
void      yq_gpu_marks_record(yq_gpu_marks *m, int k, void *stream);
/* After a sync: milliseconds from event a to event b (both recorded in this round). */
yq_status yq_gpu_marks_ms(yq_gpu_marks *m, int a, int b, float *ms, yq_error *err);
yq_status yq_gpu_stream_sync(void *stream, yq_error *err);

/* Timing of a short enqueue (a single kernel): runs timings of per enqueues back to back
 * between two events (the queue kept full, so the host's launch latency is not counted, as in
 * the tuner), the median of their means, in ms per enqueue.  per 1: one launch a timing. */
yq_status yq_gpu_median_ms(void *stream, yq_gpu_enqueue_fn fn, void *ctx, int warmup, int runs, int per, float *median,
                           yq_error *err);

/* The card's ceilings, measured: the device-to-device copy bandwidth (GB/s of bytes read
 * plus written, the best of 10 copies of 1 GiB) and the int8 mma.sync rate (TOPS, 8
 * independent m16n8k32 chains a warp, 4 blocks of 8 warps a multiprocessor; 0 before
 * sm_80).  For the benchmarks' roofline (bench/gpu/run_gpu.sh: yqgpu ceilings). */
yq_status yq_gpu_ceilings(double *copy_gbs, double *mma_tops, yq_error *err);

#ifdef __cplusplus
}
#endif
#endif
