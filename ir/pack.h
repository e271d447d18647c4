/* Buffer packing by liveness: one allocation for every tensor of a plan.
 * Shared by the CPU plan (runtime/plan.c), the int8 GPU plan (runtime/exec_cuda.c)
 * and the cuDNN float plan (kernels/cudnn_fp.cu). */
#ifndef YQ_PACK_H
#define YQ_PACK_H

#include <stddef.h>
#include "ir/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Plan flags, taken by every planner (runtime/plan.h, runtime/exec_cuda.h, kernels/cudnn_fp.h). */
enum {
    YQ_PLAN_KEEP_HEADS = 1,   /* the tensors feeding [yolo]/[region] stay readable after the run */
    YQ_PLAN_KEEP_ALL = 2,     /* every tensor stays readable (debugging, per-layer reports) */
    YQ_PLAN_FLOAT = 4,        /* run an int8 graph's float original (g->q ignored) */
    YQ_PLAN_REFERENCE = 8,    /* CPU int8 plan: every op through the plain-C reference (kernels/cpu_ref.c),
                                 not the fast engine (kernels/cpu_int8.h) */
    YQ_PLAN_NO_VIEWS = 16,    /* GPU int8 plan: every route copies (no concat or group views) */
    YQ_PLAN_GPU_F16 = 32,     /* GPU int8 plan: float convs on FP16 tensor cores (faster on wide
                                 layers; not their defined FP32 numerics: measuring only) */
    YQ_PLAN_NO_FUSE = 64,     /* GPU int8 plan: every [shortcut] its own kernel (no conv + add
                                 epilogue; a baseline, or to download a fused conv's output) */
    YQ_PLAN_EXACT = 128,      /* FP32 plans (CPU, cuDNN's): convs and activations in their exact
                                 definition (kernels/cpu_fp32.h yq_f32_conv_exact, yq_f32_act_exact),
                                 the same bytes on the CPU and the GPU; calibration runs so */
    YQ_PLAN_INT8_BLAS = 256,  /* CPU int8 plan: convs through the exact dgemm path (kernels/cpu_int8_blas.c),
                                 the engine before the fast one (for comparison) */
    YQ_PLAN_CPU_AVX2 = 512    /* CPU int8 plan: the fast engine's AVX2 kernels even where AVX-512 VNNI
                                 runs (testing and measuring the fallback) */
};

typedef struct yq_buf { int id; size_t size; } yq_buf;   /* id: the node that owns the buffer */

/* Greedy by size: sorts bufs largest first (ties by id) and gives each the lowest
 * offset that does not collide with an already placed buffer whose lifetime
 * [id, last_use[id]] overlaps its own.  off and last_use are indexed by node id.
 * Returns the arena size in bytes. */
size_t yq_pack_buffers(yq_buf *bufs, int m, const int *last_use, size_t *off);

/* The lifetimes every planner packs by, from its own choice of aliases: owner[i] is the
 * node whose buffer holds node i's output (i itself, or an earlier node an alias or view
 * shares).  last_use[o] of each owner o becomes the last node that reads it, n (past the
 * run) where flags keep it readable (YQ_PLAN_KEEP_ALL; a head's under YQ_PLAN_KEEP_HEADS),
 * and at least 1 for the input (written before the run starts); last_use[i] = i for a
 * node that owns a buffer no one reads. */
void yq_buffer_lifetimes(const yq_graph *g, const int *owner, int flags, int *last_use);

#ifdef __cplusplus
}
#endif
#endif
