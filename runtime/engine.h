/* The engines behind one table: what sessions, evaluation, calibration, latency and the
 * benchmarks need of a forward pass, whichever engine runs it.
 *
 *   YQ_ENGINE_CPU    the CPU plan (runtime/plan.h): the int8 reference for an int8 graph,
 *                    the FP32 engine (or its exact definition, YQ_PLAN_EXACT) otherwise;
 *   YQ_ENGINE_CUDA   the GPU int8 engine (runtime/exec_cuda.h), an int8 graph only;
 *   YQ_ENGINE_CUDNN  cuDNN in FP32 or FP16 (kernels/cudnn_fp.h), a graph with float weights.
 *
 *     yq_engine_opt o = yq_engine_defaults(YQ_ENGINE_CUDA);
 *     o.device = 0;
 *     yq_engine *e;
 *     yq_engine_new(g, batch, &o, &e, &err);
 *     yq_engine_upload(e, host_input, n, &err);     // n <= batch images, C x H x W floats
 *     yq_engine_enqueue(e, n, &err);                // on yq_engine_stream(e); the cpu runs it
 *     yq_engine_sync(e, &err);
 *     const void *h = yq_engine_node(e, head_input); // where the engine holds it (host or device)
 *     yq_engine_free(e);
 *
 * A hook (yq_engine_set_hook) is called after each node's work, the input (node 0)
 * included: on the CPU with the node's host data once computed, on cuDNN when its work
 * is enqueued, with its device data (work the hook enqueues on the stream reads it before
 * a later node can reuse the memory).  The CUDA int8 engine has no per-node hook (its
 * plan fuses convs with their shortcuts and runs routes as views); setting one is
 * refused there.  Nothing here prints. */
#ifndef YQ_ENGINE_H
#define YQ_ENGINE_H

#include "ir/ir.h"
#include "kernels/cudnn_fp.h"

typedef enum yq_engine_kind { YQ_ENGINE_CPU = 0, YQ_ENGINE_CUDA, YQ_ENGINE_CUDNN } yq_engine_kind;

typedef struct yq_engine_opt {
    yq_engine_kind kind;
    int device;                /* GPU engines: the CUDA device */
    int flags;                 /* YQ_PLAN_* (ir/pack.h): which tensors outlive a run, exactness */
    yq_cudnn_opt cudnn;        /* YQ_ENGINE_CUDNN: precision, layout, algorithm choice
                                  (its device and flags are the two above) */
} yq_engine_opt;

/* kind, device 0, flags YQ_PLAN_KEEP_HEADS, cuDNN's FP32 defaults. */
yq_engine_opt yq_engine_defaults(yq_engine_kind kind);

typedef struct yq_engine yq_engine;
/* data: the node's output (host on the CPU, device on a GPU engine); n: the images run;
 * stream: the GPU engine's (NULL on the CPU). */
typedef void (*yq_engine_hook)(void *ctx, int id, const void *data, int n, void *stream);

/* *out set only on YQ_OK; g must outlive the engine. */
yq_status   yq_engine_new(const yq_graph *g, int batch, const yq_engine_opt *o, yq_engine **out, yq_error *err);
void        yq_engine_free(yq_engine *e);                   /* NULL is a no-op */
const char *yq_engine_name(const yq_engine *e);             /* "cpu", "cuda", "cudnn" */
int         yq_engine_on_gpu(const yq_engine *e);
int         yq_engine_batch(const yq_engine *e);
void       *yq_engine_stream(const yq_engine *e);           /* a cudaStream_t; NULL on the CPU */
/* The CPU engine's own input (batch x C x H x W floats): write the images there and upload
 * from it, and nothing is copied.  NULL for a GPU engine. */
float      *yq_engine_host_input(yq_engine *e);
/* The float input of n images from host memory (a GPU engine copies it on its stream,
 * asynchronously: host must stay as it is until the next sync). */
yq_status   yq_engine_upload(yq_engine *e, const float *host, int n, yq_error *err);
/* The forward of the first n images.  CPU: runs to the end (its hook included); GPU: on
 * the stream, nothing waited for (errors of the kernels show at the next sync).
 * cuDNN runs the whole batch whatever n is. */
yq_status   yq_engine_enqueue(yq_engine *e, int n, yq_error *err);
yq_status   yq_engine_sync(yq_engine *e, yq_error *err);    /* the CPU: nothing to wait for */
/* Node id's output after a run where the engine keeps it (host or device memory, the
 * engine's layout and the node's dtype); NULL when its memory was reused. */
const void *yq_engine_node(const yq_engine *e, int id);
yq_status   yq_engine_set_hook(yq_engine *e, yq_engine_hook fn, void *ctx, yq_error *err);
size_t      yq_engine_bytes(const yq_engine *e);            /* its activation memory */

/* The plans underneath, for what only one engine does (the int8 engine's tuned kernels,
 * cuDNN's per-node algorithm names): NULL for another kind. */
struct yq_plan *yq_engine_cpu_plan(const yq_engine *e);
struct yq_cuda_plan *yq_engine_cuda_plan(const yq_engine *e);
yq_cudnn_plan *yq_engine_cudnn_plan(const yq_engine *e);

#endif
