/* The GPU float engine: whole FP32 graphs through cuDNN, in FP32 or FP16.  It is
 * the float reference on the GPU and the baseline a user would otherwise pick.
 *
 *     yq_cudnn_opt o = yq_cudnn_defaults(YQ_CUDNN_FP16);     // NHWC, tensor cores
 *     yq_cudnn_plan *p;
 *     if (yq_cudnn_plan_new(g, batch, &o, &p, &err) != YQ_OK) ...
 *     yq_cudnn_run(p, input, &err);                    // batch x C x H x W floats, host memory
 *     yq_cudnn_download(p, head_input_id, host, &err);  // float NCHW, whatever the precision
 *     yq_cudnn_plan_free(p);
 *
 * Planning does everything once: weights converted to the precision and layout;
 * per conv, the way cuDNN runs it; one device allocation for the parameters, the
 * activations (placed by liveness, as runtime/plan.c does), the float input and
 * the largest workspace.  A run only enqueues work on the plan's stream, so it can
 * be captured into a CUDA graph (kernels/cuda_bench.h).
 *
 * Convs, two ways, the faster kept:
 *   graph API: an operation graph of the conv alone (then the bias+activation
 *     kernel), or with opt->fuse conv -> + bias -> activation (relu, leaky as relu
 *     with a 0.1 lower slope, identity); up to 8 engine configurations cuDNN's
 *     heuristics offer that keep this path's numerics (below) are timed on the
 *     plan's own buffers, each checked against the legacy path on random data
 *     before it may be chosen;
 *   legacy API: cudnnConvolutionForward with the algorithm cudnnFind (or the
 *     heuristic) picks; bias + relu fused by cuDNN, bias + identity too when the
 *     algorithm allows it; otherwise one small bias+activation kernel (leaky, mish...).
 * The legacy API alone plans much faster but is far slower on small convs (no
 * split-K engines): small spatial sizes at batch 1 ran 5-10x slower on an H200.
 * Other ops: shortcut, route (cudaMemcpy2DAsync), upsample and maxpool as small
 * kernels with darknet's semantics; dropout and the heads alias their input.
 *
 * Numerics: FP32 uses no tensor cores (no TF32: CUDNN_FMA_MATH; graph engines with
 * the tensor-core or down-convert notes are refused), so it differs from the CPU
 * engine (runtime/plan.h, yq_exec_fp32) by summation order only; FP16 stores every
 * tensor in half and accumulates convs in float (engines with the reduced-precision
 * reduction note are refused).  Nondeterministic engines are refused: two runs give
 * the same bytes.  tests/test_cudnn.c bounds both precisions against the CPU.
 * With YQ_PLAN_EXACT in opt->flags (FP32 NCHW only) the convs run yquant's exact FP32
 * kernels instead of cuDNN (kernels/cuda.h YQ_CONV_F32: one fmaf chain per output in the
 * CPU's order) and the shortcuts the exact activation, so every tensor equals the CPU's
 * YQ_PLAN_EXACT run (runtime/plan.h) byte for byte; calibration runs so.
 * An int8 graph (g->q set) runs its float original; a graph without float weights
 * (a .yqp package) is refused.
 *
 * Built without cuDNN (no YQ_HAVE_CUDNN), yq_cudnn_available() is 0 and
 * yq_cudnn_plan_new returns YQ_ERR_UNSUPPORTED. */
#ifndef YQ_CUDNN_FP_H
#define YQ_CUDNN_FP_H

#include "ir/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct yq_cudnn_plan yq_cudnn_plan;

typedef enum yq_cudnn_prec { YQ_CUDNN_FP32 = 0, YQ_CUDNN_FP16 } yq_cudnn_prec;
typedef enum yq_cudnn_layout { YQ_CUDNN_LAYOUT_AUTO = 0, YQ_CUDNN_NCHW, YQ_CUDNN_NHWC } yq_cudnn_layout;

typedef struct yq_cudnn_opt {
    yq_cudnn_prec precision;
    yq_cudnn_layout layout;      /* AUTO: NHWC for FP16 (tensor cores), NCHW for FP32 */
    int device;
    int flags;                   /* YQ_PLAN_KEEP_HEADS (default) / YQ_PLAN_KEEP_ALL (runtime/plan.h) */
    size_t workspace_limit;      /* bytes a conv may use; 0: 256 MiB */
    int heuristic;               /* 1: cuDNN's heuristic pick instead of timing the legacy algorithms */
    int legacy;                  /* 1: legacy API only */
    int fuse;                    /* 1: graph API convs also add the bias and apply relu/leaky/identity
                                    (runtime-fusion engines: compiled at planning, seconds per conv) */
} yq_cudnn_opt;

yq_cudnn_opt yq_cudnn_defaults(yq_cudnn_prec precision);

/* 1 if this build has cuDNN (it may still find no GPU). */
int yq_cudnn_available(void);
/* "cuDNN 9.19.0 (compiled against 9.19.0)", or why there is none. */
void yq_cudnn_version(char *buf, size_t cap);

/* *out set only on YQ_OK.  g must outlive the plan. */
yq_status yq_cudnn_plan_new(const yq_graph *g, int batch, const yq_cudnn_opt *o, yq_cudnn_plan **out,
                            yq_error *err);
void      yq_cudnn_plan_free(yq_cudnn_plan *p);                   /* NULL is a no-op */
size_t    yq_cudnn_plan_bytes(const yq_cudnn_plan *p);            /* the one device allocation */
size_t    yq_cudnn_arena_bytes(const yq_cudnn_plan *p);           /* of it, the activations */
/* "FP16 NHWC", for tables. */
const char *yq_cudnn_plan_desc(const yq_cudnn_plan *p);
/* What runs node id: "graph eng 12 fused", "IMPLICIT_PRECOMP_GEMM tc fused" and the like. */
void      yq_cudnn_node_desc(const yq_cudnn_plan *p, int id, char *buf, size_t cap);

/* yq_cudnn_run = upload + enqueue + wait.  The parts are for benchmarks: enqueue
 * puts one whole run on the plan's stream (the input already uploaded) and returns. */
yq_status yq_cudnn_run(yq_cudnn_plan *p, const float *host_input, yq_error *err);
yq_status yq_cudnn_upload(yq_cudnn_plan *p, const float *host_input, yq_error *err);
yq_status yq_cudnn_enqueue(yq_cudnn_plan *p, yq_error *err);
void     *yq_cudnn_stream(const yq_cudnn_plan *p);                /* a cudaStream_t */
/* Called on the host after each node's work is enqueued (stream: the plan's). */
typedef void (*yq_gpu_node_fn)(void *ctx, int id, void *stream);
void      yq_cudnn_set_hook(yq_cudnn_plan *p, yq_gpu_node_fn fn, void *ctx);
/* Node id's buffer in device memory, in the plan's precision and layout (batch images).
 * Inside the hook for id it holds id's output: work the hook enqueues on the stream
 * reads it before any later node can reuse the memory.  NULL without cuDNN. */
const void *yq_cudnn_node_data(const yq_cudnn_plan *p, int id);

/* Node id's output after a run as float NCHW (batch images), converted from the
 * plan's precision and layout.  YQ_ERR_INVALID_ARG if its memory was reused. */
yq_status yq_cudnn_download(const yq_cudnn_plan *p, int id, float *host_nchw, yq_error *err);

#ifdef __cplusplus
}
#endif
#endif
