/* A plan: where every node's output lives for a run of `batch` images, and the
 * FP32 CPU executor that runs it.
 *
 *     yq_plan *p;
 *     yq_plan_new(g, batch, YQ_PLAN_KEEP_HEADS, &p, &err);
 *     yq_exec_fp32(p, input, NULL, NULL, &err);       // input: batch x C x H x W floats
 *     const float *t = yq_plan_tensor(p, id);          // a head input, still live
 *     yq_plan_free(p);
 *
 * Buffers are assigned by liveness into one allocation: two tensors share memory
 * when their lifetimes do not overlap.  Dropout and the heads alias their input.
 */
#ifndef YQ_PLAN_H
#define YQ_PLAN_H

#include "ir/ir.h"
#include "ir/pack.h"
#include "kernels/cpu_int8.h"

typedef struct yq_plan yq_plan;

/* YQ_PLAN_* flags: ir/pack.h (shared with the GPU planners). */

yq_status yq_plan_new(const yq_graph *g, int batch, int flags, yq_plan **out, yq_error *err);
void      yq_plan_free(yq_plan *p);
/* A float plan (YQ_PLAN_FLOAT) of one rewrite of an FP32 graph moved to another rewrite of
 * the same graph (g->base the same: the same nodes and shapes, so the same layout); the
 * plan reads g from then on. */
yq_status yq_plan_rebind(yq_plan *p, const yq_graph *g, yq_error *err);
int       yq_plan_batch(const yq_plan *p);
size_t    yq_plan_bytes(const yq_plan *p);            /* the one activation allocation */
/* Borrowed: valid until the next run.  NULL if the node's memory was reused
 * (or, for yq_plan_tensor, if the node's output is not float). */
const float *yq_plan_tensor(const yq_plan *p, int id);
const void  *yq_plan_data(const yq_plan *p, int id);  /* of the node's dtype */
float    *yq_plan_input(yq_plan *p);                  /* write the float batch here, then run with input NULL */
/* For the executors: a node's buffer (live or not), the graph, the conv scratch. */
void     *yq_plan_buf(const yq_plan *p, int id);
const yq_graph *yq_plan_graph(const yq_plan *p);
int       yq_plan_quantized(const yq_plan *p);
int       yq_plan_flags(const yq_plan *p);        /* buffers typed by g->q (not YQ_PLAN_FLOAT) */
float    *yq_plan_work(const yq_plan *p);

/* Called after each node has been computed; data is batch x out-shape values of
 * the node's dtype (yq_node_dtype: float in an FP32 graph). */
typedef void (*yq_node_hook)(void *ctx, const yq_graph *g, int id, const void *data, int batch);

/* Runs the graph in FP32 on the CPU.  input: batch x C x H x W floats, or NULL
 * when it was written through yq_plan_input.  Convs through OpenBLAS (fast; the sums'
 * order is OpenBLAS's), or with YQ_PLAN_EXACT in their exact definition (one fmaf chain
 * per output, kernels/cpu_fp32.h), which the GPU's exact FP32 plan reproduces bit for bit. */
yq_status yq_exec_fp32(yq_plan *p, const float *input, yq_node_hook hook, void *ctx, yq_error *err);
/* Nodes [from, to) only (the input copied in only when from is 0), on whatever the plan's
 * buffers hold from earlier nodes: a caller that saved the activation memory
 * (yq_plan_arena, yq_plan_bytes) after node k can run [k, n) again from it. */
yq_status yq_exec_fp32_range(yq_plan *p, const float *input, int from, int to, yq_node_hook hook, void *ctx,
                             yq_error *err);
void     *yq_plan_arena(const yq_plan *p);            /* the one activation allocation */

/* Runs an int8 graph (g->q set) on the CPU (runtime/exec_int8.c): the fast engine
 * (kernels/cpu_int8.h: AVX-512 VNNI or AVX2, every core) where this CPU has it, else the
 * exact dgemm path; YQ_PLAN_REFERENCE, YQ_PLAN_INT8_BLAS and YQ_PLAN_CPU_AVX2 choose.  All
 * give the same bytes.  The float input is quantized into node 0 (uint8 at 1/255 for an
 * image).  The fast engine packs the graph's int8 weights at the first run: they must not
 * change while the plan lives (biases may: they are read at every run). */
yq_status yq_exec_int8(yq_plan *p, const float *input, yq_node_hook hook, void *ctx, yq_error *err);
/* Threads of the plan's CPU runs (<= 0, the default: every core): the int8 engine's, and
 * those of every OpenMP loop yq_exec_int8 and yq_exec_fp32 reach (an int8 graph's float
 * layers, conversions, the FP32 kernels' own loops); OpenBLAS's count is its own
 * (openblas_set_num_threads). */
void      yq_plan_set_threads(yq_plan *p, int threads);
/* Within a run: the calling thread's OpenMP team size set to the plan's (its nthreads ICV;
 * nothing when the plan says every core); yq_plan_omp_leave puts back what enter returned. */
int       yq_plan_omp_enter(const yq_plan *p);
void      yq_plan_omp_leave(int saved);
/* The fast engine of an int8 plan (made at the first call), or NULL where the plan runs the
 * reference or the dgemm path, or this CPU has neither AVX2 nor AVX-512. */
yq_status yq_plan_cpu8(yq_plan *p, yq_cpu8 **e, yq_error *err);

/* The GPU int8 plan's fusion rule (runtime/exec_cuda.c; the tuner measures such convs with
 * their residual): the [shortcut] node whose add runs in conv id's epilogue, or -1.  A conv
 * fuses when its only consumer (past [dropout]s read nowhere else) is an int8 shortcut
 * whose other source is int8 and earlier, and it is the first of the shortcut's two
 * sources to qualify.  *res_first (may be NULL):
 * the residual is the shortcut's first source. */
int yq_plan_fused_shortcut(const yq_graph *g, int id, int *res_first);

/* The node whose bytes node id is: id itself, or past [dropout]s (the identity) the first
 * node that is not one. */
int yq_plan_pass_source(const yq_graph *g, int id);

#endif
