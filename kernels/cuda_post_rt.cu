/* The runtime calls a graph-captured session needs, for C callers (kernels/cuda_post.h):
 * device architecture, a non-blocking stream, pinned memory, async copies, stream
 * capture into an instantiated graph, per-call event timing. */
#include <stdio.h>
#include <stdlib.h>
#include "kernels/cuda_common.cuh"
extern "C" {
#include "kernels/cuda_post.h"
}

extern "C" void yq_cuda_clear_error(void)
{
    (void)cudaGetLastError();
}

extern "C" yq_status yq_cuda_device_sm(int device, int *sm, char *name, size_t cap, yq_error *err)
{
    int n = yq_cuda_device_count();
    if (device < 0 || device >= n) return yq_fail(err, YQ_ERR_CUDA, "CUDA device %d requested, %d present", device, n);
    cudaDeviceProp pr;
    YQ_CUDA_TRY(cudaGetDeviceProperties(&pr, device));
    *sm = pr.major * 10 + pr.minor;
    if (name && cap) snprintf(name, cap, "%s", pr.name);
    return YQ_OK;
}

extern "C" yq_status yq_cuda_stream_new_async(void **stream, yq_error *err)
{
    cudaStream_t s;
    *stream = NULL;
    YQ_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    *stream = s;
    return YQ_OK;
}

extern "C" yq_status yq_cuda_host_alloc(void **p, size_t bytes, yq_error *err)
{
    *p = NULL;
    cudaError_t e = cudaMallocHost(p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        *p = NULL;
        return yq_fail(err, YQ_ERR_CUDA, "cudaMallocHost(%zu bytes): %s", bytes, cudaGetErrorString(e));
    }
    return YQ_OK;
}

extern "C" void yq_cuda_host_free(void *p)
{
    if (p) cudaFreeHost(p);
}

extern "C" yq_status yq_cuda_h2d_async(void *dst, const void *src, size_t bytes, void *stream, yq_error *err)
{
    YQ_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, YQ_STREAM(stream)));
    return YQ_OK;
}

extern "C" yq_status yq_cuda_d2h_async(void *dst, const void *src, size_t bytes, void *stream, yq_error *err)
{
    YQ_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, YQ_STREAM(stream)));
    return YQ_OK;
}

extern "C" yq_status yq_cuda_memset_async(void *p, int byte, size_t bytes, void *stream, yq_error *err)
{
    YQ_CUDA_TRY(cudaMemsetAsync(p, byte, bytes, YQ_STREAM(stream)));
    return YQ_OK;
}

extern "C" yq_status yq_cuda_capture_begin(void *stream, yq_error *err)
{
    /* Thread-local: another thread's unrelated CUDA calls do not invalidate the capture. */
    YQ_CUDA_TRY(cudaStreamBeginCapture(YQ_STREAM(stream), cudaStreamCaptureModeThreadLocal));
    return YQ_OK;
}

extern "C" yq_status yq_cuda_capture_end(void *stream, void **graph_exec, yq_error *err)
{
    cudaGraph_t g = NULL;
    cudaError_t e = cudaStreamEndCapture(YQ_STREAM(stream), &g);
    if (graph_exec) *graph_exec = NULL;
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (g) cudaGraphDestroy(g);
        return yq_fail(err, YQ_ERR_CUDA, "stream capture: %s", cudaGetErrorString(e));
    }
    if (!graph_exec) {                  /* discard (after a failed enqueue) */
        cudaGraphDestroy(g);
        return YQ_OK;
    }
    cudaGraphExec_t x = NULL;
    e = cudaGraphInstantiate(&x, g, 0);
    cudaGraphDestroy(g);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return yq_fail(err, YQ_ERR_CUDA, "cudaGraphInstantiate: %s", cudaGetErrorString(e));
    }
    *graph_exec = x;
    return YQ_OK;
}

extern "C" yq_status yq_cuda_graph_launch(void *graph_exec, void *stream, yq_error *err)
{
    YQ_CUDA_TRY(cudaGraphLaunch((cudaGraphExec_t)graph_exec, YQ_STREAM(stream)));
    return YQ_OK;
}

extern "C" void yq_cuda_graph_free(void *graph_exec)
{
    if (graph_exec) cudaGraphExecDestroy((cudaGraphExec_t)graph_exec);
}

extern "C" yq_status yq_cuda_time_each(void *stream, int reps, yq_status (*fn)(void *ctx), void *ctx, float *ms,
                                       yq_error *err)
{
    cudaEvent_t a, b;
    cudaStream_t s = YQ_STREAM(stream);
    yq_status st = YQ_OK;
    YQ_CUDA_TRY(cudaEventCreate(&a));
    if (cudaEventCreate(&b) != cudaSuccess) {
        cudaEventDestroy(a);
        return yq_fail(err, YQ_ERR_CUDA, "cudaEventCreate failed");
    }
    st = fn(ctx);                                       /* warm-up */
    for (int r = 0; r < reps && st == YQ_OK; r++) {
        cudaError_t e = cudaEventRecord(a, s);
        if (e == cudaSuccess && (st = fn(ctx)) == YQ_OK) {
            e = cudaEventRecord(b, s);
            if (e == cudaSuccess) e = cudaEventSynchronize(b);
            if (e == cudaSuccess) e = cudaEventElapsedTime(&ms[r], a, b);
        }
        if (st == YQ_OK && e != cudaSuccess) st = yq_fail(err, YQ_ERR_CUDA, "timing: %s", cudaGetErrorString(e));
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return st;
}
