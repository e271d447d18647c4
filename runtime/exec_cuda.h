/* The GPU executor for int8 graphs (g->q set): the plan uploads every conv's
 * parameters once and places node outputs by liveness in one device allocation;
 * a run quantizes the float input on the GPU and runs every node there.
 *
 *     yq_cuda_plan *p;
 *     if (yq_cuda_plan_new(g, batch, 0, &p, &err) != YQ_OK) ...
 *     yq_cuda_run(p, input, &err);                       // batch x C x H x W floats, host memory
 *     yq_cuda_download(p, head_input_id, host, &err);     // NCHW, in the node's dtype
 *     yq_cuda_plan_free(p);
 *
 * Results: every int8 node equals the CPU reference (yq_exec_int8) byte for byte
 * (a conv fused with its shortcut is not kept: yq_cuda_plan_fused),
 * dequantizing head convs bit for bit.  Layers the qconfig keeps in float
 * (q->float_op) compute their exact definition, the CPU's (kernels/cpu_fp32.h
 * yq_f32_conv_exact): one FP32 fmaf chain per output in a fixed order, so they too equal
 * the CPU's bytes, and so does everything downstream.  YQ_PLAN_GPU_F16 runs the float
 * convs (groups == 1, sm_80+) on FP16 tensor cores instead: faster on wide layers, not the
 * validated numerics (`yquant bench --gpu-float fp16`, for measuring what exactness
 * costs).  Device layout:
 * kernels/cuda.h. */
#ifndef YQ_EXEC_CUDA_H
#define YQ_EXEC_CUDA_H

#include "ir/ir.h"

typedef struct yq_cuda_plan yq_cuda_plan;

/* Keeps the head inputs readable after a run (YQ_PLAN_KEEP_HEADS). *out set only on YQ_OK. */
yq_status yq_cuda_plan_new(const yq_graph *g, int batch, int device, yq_cuda_plan **out, yq_error *err);
/* flags: YQ_PLAN_KEEP_HEADS / YQ_PLAN_KEEP_ALL, YQ_PLAN_NO_VIEWS, YQ_PLAN_GPU_F16 (ir/pack.h). */
yq_status yq_cuda_plan_new_flags(const yq_graph *g, int batch, int device, int flags, yq_cuda_plan **out,
                                 yq_error *err);
void      yq_cuda_plan_free(yq_cuda_plan *p);                   /* NULL is a no-op */
/* What float layers run in on the current device under a plan of these flags: "fp32"
 * (exact), or "fp16" (YQ_PLAN_GPU_F16 on sm_80 and newer). */
const char *yq_cuda_float_precision(int flags);
size_t    yq_cuda_plan_bytes(const yq_cuda_plan *p);            /* the activation allocation */
/* Runs the graph on batch x C x H x W floats (host memory); returns when done. */
yq_status yq_cuda_run(yq_cuda_plan *p, const float *host_input, yq_error *err);
/* Node id's output after a run, as the CPU executor holds it: NCHW, batch images,
 * the node's dtype (yq_node_dtype).  YQ_ERR_INVALID_ARG if its memory was reused. */
yq_status yq_cuda_download(const yq_cuda_plan *p, int id, void *host_nchw, yq_error *err);

/* For a caller that drives the device itself (runtime/session.c, which captures the
 * forward in a CUDA graph): the device input buffer (batch x C x H x W floats, write
 * it before enqueueing), node id's device output (F32: NCHW, int8: NHWC4; NULL when
 * its memory is reused, and for a view into a concat: yq_cuda_plan_views), and the forward of the first n <= batch images enqueued on
 * stream (NULL: the default stream) with no copy, allocation or sync, so that stream
 * capture can record it.  Errors of the kernels themselves show at the next sync. */
float      *yq_cuda_plan_input(yq_cuda_plan *p);
const void *yq_cuda_plan_node(const yq_cuda_plan *p, int id);
yq_status   yq_cuda_enqueue(yq_cuda_plan *p, int n, void *stream, yq_error *err);

/* Fusion (unless YQ_PLAN_NO_FUSE): a conv whose only consumer (past [dropout]s) is an
 * int8 [shortcut] runs the add in its epilogue; for such a conv and the dropouts after it
 * this returns the shortcut's id (their own output is not kept: yq_cuda_download refuses
 * it), for the shortcut the conv's id; else -1. */
int yq_cuda_plan_fused(const yq_cuda_plan *p, int id);

/* Routes that run no kernel because they are views (see runtime/exec_cuda.c): a concat
 * whose sources wrote their slices of it, or one channel group of a source.  0 with
 * YQ_PLAN_NO_VIEWS (every such route a copy, as a baseline). */
int yq_cuda_plan_views(const yq_cuda_plan *p);
/* Whether node id (> 0) runs a kernel of its own in this plan (not an alias, a view or
 * a shortcut fused into its conv). */
int yq_cuda_plan_runs(const yq_cuda_plan *p, int id);

/* Node id's conv kernel object (NULL if id is not a conv), for choosing its
 * configuration (yq_cuda_conv_set_cfg with max_batch = the plan's batch). */
struct yq_cuda_conv *yq_cuda_plan_conv(yq_cuda_plan *p, int id);

#endif
