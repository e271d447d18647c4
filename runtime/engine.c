/* runtime/engine.h: one table of operations per engine; the public functions dispatch
 * through it and check what is common (batch bounds, a hook's support). */
#include <stdlib.h>
#include <string.h>
#include "kernels/cuda.h"
#include "kernels/cuda_post.h"
#include "runtime/engine.h"
#include "runtime/exec_cuda.h"
#include "runtime/plan.h"

typedef struct engine_ops {
    const char *name;
    int on_gpu;
    yq_status (*plan)(yq_engine *e, const yq_engine_opt *o, yq_error *err);
    yq_status (*upload)(yq_engine *e, const float *host, int n, yq_error *err);
    yq_status (*enqueue)(yq_engine *e, int n, yq_error *err);
    const void *(*node)(const yq_engine *e, int id);
    size_t (*bytes)(const yq_engine *e);
    int has_hook;
    void (*release)(yq_engine *e);
} engine_ops;

struct yq_engine {
    const engine_ops *ops;
    const yq_graph *g;
    int batch, device;
    void *stream;              /* GPU engines: the stream the work goes on */
    int own_stream;            /* freed with the engine (the cuDNN plan owns its own) */
    yq_engine_hook hook;
    void *hook_ctx;
    int n_run;                 /* images of the run in progress (for the hook) */
    yq_plan *cpu;
    yq_cuda_plan *cuda;
    yq_cudnn_plan *cudnn;
};

yq_engine_opt yq_engine_defaults(yq_engine_kind kind)
{
    yq_engine_opt o;
    memset(&o, 0, sizeof o);
    o.kind = kind;
    o.flags = YQ_PLAN_KEEP_HEADS;
    o.cudnn = yq_cudnn_defaults(YQ_CUDNN_FP32);
    return o;
}

/* ---- the CPU plan ---- */

static yq_status cpu_plan(yq_engine *e, const yq_engine_opt *o, yq_error *err)
{
    return yq_plan_new(e->g, e->batch, o->flags, &e->cpu, err);
}

static yq_status cpu_upload(yq_engine *e, const float *host, int n, yq_error *err)
{
    (void)err;
    float *in = yq_plan_input(e->cpu);
    if (in != host) memcpy(in, host, sizeof(float) * (size_t)yq_shape_size(e->g->nodes[0].out) * (size_t)n);
    return YQ_OK;
}

static void cpu_hook(void *ctx, const yq_graph *g, int id, const void *data, int batch)
{
    (void)g;
    const yq_engine *e = ctx;
    e->hook(e->hook_ctx, id, data, batch, NULL);
}

static yq_status cpu_enqueue(yq_engine *e, int n, yq_error *err)
{
    (void)n;   /* the plan runs its batch: images past n compute on whatever the input holds */
    yq_node_hook h = e->hook ? cpu_hook : NULL;
    int int8 = e->g->q && !(yq_plan_flags(e->cpu) & YQ_PLAN_FLOAT);
    return int8 ? yq_exec_int8(e->cpu, NULL, h, e, err) : yq_exec_fp32(e->cpu, NULL, h, e, err);
}

static const void *cpu_node(const yq_engine *e, int id) { return yq_plan_data(e->cpu, id); }
static size_t cpu_bytes(const yq_engine *e) { return yq_plan_bytes(e->cpu); }
static void cpu_release(yq_engine *e) { yq_plan_free(e->cpu); }

/* ---- the GPU int8 engine ---- */

static yq_status cuda_plan(yq_engine *e, const yq_engine_opt *o, yq_error *err)
{
    yq_status st = yq_cuda_set_device(e->device, err);
    if (!st) st = yq_cuda_plan_new_flags(e->g, e->batch, e->device, o->flags, &e->cuda, err);
    if (!st && (st = yq_cuda_stream_new_async(&e->stream, err)) == YQ_OK) e->own_stream = 1;
    return st;
}

static yq_status cuda_upload(yq_engine *e, const float *host, int n, yq_error *err)
{
    size_t bytes = sizeof(float) * (size_t)yq_shape_size(e->g->nodes[0].out) * (size_t)n;
    return yq_cuda_h2d_async(yq_cuda_plan_input(e->cuda), host, bytes, e->stream, err);
}

static yq_status cuda_enqueue(yq_engine *e, int n, yq_error *err) { return yq_cuda_enqueue(e->cuda, n, e->stream, err); }
static const void *cuda_node(const yq_engine *e, int id) { return yq_cuda_plan_node(e->cuda, id); }
static size_t cuda_bytes(const yq_engine *e) { return yq_cuda_plan_bytes(e->cuda); }
static void cuda_release(yq_engine *e) { yq_cuda_plan_free(e->cuda); }

/* ---- cuDNN ---- */

static yq_status cudnn_plan(yq_engine *e, const yq_engine_opt *o, yq_error *err)
{
    yq_cudnn_opt co = o->cudnn;
    co.device = e->device;
    co.flags = o->flags;
    yq_status st = yq_cudnn_plan_new(e->g, e->batch, &co, &e->cudnn, err);
    if (!st) e->stream = yq_cudnn_stream(e->cudnn);
    return st;
}

static yq_status cudnn_upload(yq_engine *e, const float *host, int n, yq_error *err)
{
    (void)n;   /* the plan's whole batch: the host buffer holds batch images */
    return yq_cudnn_upload(e->cudnn, host, err);
}

static void cudnn_hook(void *ctx, int id, void *stream)
{
    const yq_engine *e = ctx;
    e->hook(e->hook_ctx, id, yq_cudnn_node_data(e->cudnn, id), e->n_run, stream);
}

static yq_status cudnn_enqueue(yq_engine *e, int n, yq_error *err)
{
    (void)n;
    return yq_cudnn_enqueue(e->cudnn, err);
}

static const void *cudnn_node(const yq_engine *e, int id) { return yq_cudnn_node_data(e->cudnn, id); }
static size_t cudnn_bytes(const yq_engine *e) { return yq_cudnn_arena_bytes(e->cudnn); }
static void cudnn_release(yq_engine *e) { yq_cudnn_plan_free(e->cudnn); }

static const engine_ops ENGINES[] = {
    [YQ_ENGINE_CPU] = { "cpu", 0, cpu_plan, cpu_upload, cpu_enqueue, cpu_node, cpu_bytes, 1, cpu_release },
    [YQ_ENGINE_CUDA] = { "cuda", 1, cuda_plan, cuda_upload, cuda_enqueue, cuda_node, cuda_bytes, 0, cuda_release },
    [YQ_ENGINE_CUDNN] = { "cudnn", 1, cudnn_plan, cudnn_upload, cudnn_enqueue, cudnn_node, cudnn_bytes, 1, cudnn_release },
};

/* ---- the table's users ---- */

yq_status yq_engine_new(const yq_graph *g, int batch, const yq_engine_opt *o, yq_engine **out, yq_error *err)
{
    *out = NULL;
    if (!g || !o) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_engine_new: no graph or options");
    if ((unsigned)o->kind >= sizeof ENGINES / sizeof *ENGINES)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "engine kind %d: expected cpu, cuda or cudnn", (int)o->kind);
    if (batch < 1) return yq_fail(err, YQ_ERR_INVALID_ARG, "batch %d must be >= 1", batch);
    if (o->kind == YQ_ENGINE_CUDA && !g->q)
        return yq_fail(err, YQ_ERR_UNSUPPORTED, "%s: the GPU int8 engine runs int8 graphs (this one is FP32)", g->cfg_path);
    if (o->kind != YQ_ENGINE_CPU && o->device < 0)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "the %s engine on device %d", ENGINES[o->kind].name, o->device);
    yq_engine *e = calloc(1, sizeof *e);
    if (!e) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    e->ops = &ENGINES[o->kind];
    e->g = g;
    e->batch = batch;
    e->device = o->device;
    yq_status st = e->ops->plan(e, o, err);
    if (st != YQ_OK) {
        yq_engine_free(e);
        return st;
    }
    *out = e;
    return YQ_OK;
}

void yq_engine_free(yq_engine *e)
{
    if (!e) return;
    if (e->ops->on_gpu) {
        yq_error ig;
        yq_cuda_set_device(e->device, &ig);
    }
    e->ops->release(e);
    if (e->own_stream) yq_cuda_stream_free(e->stream);
    free(e);
}

const char *yq_engine_name(const yq_engine *e) { return e->ops->name; }
int yq_engine_on_gpu(const yq_engine *e) { return e->ops->on_gpu; }
int yq_engine_batch(const yq_engine *e) { return e->batch; }
void *yq_engine_stream(const yq_engine *e) { return e->stream; }
float *yq_engine_host_input(yq_engine *e) { return e->cpu ? yq_plan_input(e->cpu) : NULL; }

static yq_status check_n(const yq_engine *e, int n, yq_error *err)
{
    if (n < 1 || n > e->batch) return yq_fail(err, YQ_ERR_INVALID_ARG, "%d images for an engine of batch %d", n, e->batch);
    return YQ_OK;
}

yq_status yq_engine_upload(yq_engine *e, const float *host, int n, yq_error *err)
{
    yq_status st = check_n(e, n, err);
    return st ? st : e->ops->upload(e, host, n, err);
}

yq_status yq_engine_enqueue(yq_engine *e, int n, yq_error *err)
{
    yq_status st = check_n(e, n, err);
    if (st) return st;
    e->n_run = n;
    return e->ops->enqueue(e, n, err);
}

yq_status yq_engine_sync(yq_engine *e, yq_error *err) { return e->ops->on_gpu ? yq_cuda_sync(e->stream, err) : YQ_OK; }
const void *yq_engine_node(const yq_engine *e, int id) { return id >= 0 && id < e->g->n_nodes ? e->ops->node(e, id) : NULL; }
size_t yq_engine_bytes(const yq_engine *e) { return e->ops->bytes(e); }

yq_status yq_engine_set_hook(yq_engine *e, yq_engine_hook fn, void *ctx, yq_error *err)
{
    if (fn && !e->ops->has_hook)
        return yq_fail(err, YQ_ERR_UNSUPPORTED, "the %s engine calls no hook per node", e->ops->name);
    e->hook = fn;
    e->hook_ctx = ctx;
    if (e->cudnn) yq_cudnn_set_hook(e->cudnn, fn ? cudnn_hook : NULL, fn ? e : NULL);
    return YQ_OK;
}

yq_plan *yq_engine_cpu_plan(const yq_engine *e) { return e->cpu; }
yq_cuda_plan *yq_engine_cuda_plan(const yq_engine *e) { return e->cuda; }
yq_cudnn_plan *yq_engine_cudnn_plan(const yq_engine *e) { return e->cudnn; }
