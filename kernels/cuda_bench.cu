/* GPU timing for benchmarks: events, graph capture and replay (kernels/cuda_bench.h). */
#include <stdlib.h>
#include "kernels/cuda_common.cuh"
extern "C" {
#include "kernels/cuda_bench.h"
}

extern "C" yq_status yq_gpu_graph_capture(void *stream, yq_gpu_enqueue_fn fn, void *ctx, void **graph, yq_error *err)
{
    cudaStream_t s = YQ_STREAM(stream);
    cudaGraph_t g = NULL;
    cudaGraphExec_t ex = NULL;
    *graph = NULL;
    YQ_CUDA_TRY(cudaStreamSynchronize(s));
    YQ_CUDA_TRY(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    yq_status st = fn(ctx, err);
    cudaError_t e = cudaStreamEndCapture(s, &g);
    if (st) {
        if (g) cudaGraphDestroy(g);
        (void)cudaGetLastError();
        return st;
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return yq_fail(err, YQ_ERR_CUDA, "stream capture: %s", cudaGetErrorString(e));
    }
    e = cudaGraphInstantiate(&ex, g, 0);
    cudaGraphDestroy(g);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return yq_fail(err, YQ_ERR_CUDA, "graph instantiate: %s", cudaGetErrorString(e));
    }
    *graph = ex;
    return YQ_OK;
}

extern "C" yq_status yq_gpu_graph_launch(void *graph, void *stream, yq_error *err)
{
    YQ_CUDA_TRY(cudaGraphLaunch((cudaGraphExec_t)graph, YQ_STREAM(stream)));
    return YQ_OK;
}

extern "C" void yq_gpu_graph_free(void *graph)
{
    if (graph) cudaGraphExecDestroy((cudaGraphExec_t)graph);
}

static yq_status one(void *stream, yq_gpu_enqueue_fn fn, void *ctx, void *graph, yq_error *err)
{
    if (graph) return yq_gpu_graph_launch(graph, stream, err);
    return fn(ctx, err);
}

/* runs timings, each of per enqueues back to back between two events (ms per enqueue) */
static yq_status timed(void *stream, yq_gpu_enqueue_fn fn, void *ctx, void *graph, int warmup, int runs, int per,
                       float *ms, yq_error *err)
{
    cudaStream_t s = YQ_STREAM(stream);
    cudaEvent_t a, b;
    yq_status st = YQ_OK;
    YQ_CUDA_TRY(cudaEventCreate(&a));
    if (cudaEventCreate(&b) != cudaSuccess) {
        cudaEventDestroy(a);
        return yq_fail(err, YQ_ERR_CUDA, "cudaEventCreate failed");
    }
    for (int i = 0; i < warmup && !st; i++) st = one(stream, fn, ctx, graph, err);
    cudaError_t e = cudaStreamSynchronize(s);
    if (!st && e != cudaSuccess) st = yq_fail(err, YQ_ERR_CUDA, "warm-up: %s", cudaGetErrorString(e));
    for (int i = 0; i < runs && !st; i++) {
        cudaEventRecord(a, s);
        for (int k = 0; k < per && !st; k++) st = one(stream, fn, ctx, graph, err);
        cudaEventRecord(b, s);
        if (st) break;
        if ((e = cudaEventSynchronize(b)) != cudaSuccess || (e = cudaEventElapsedTime(&ms[i], a, b)) != cudaSuccess)
            st = yq_fail(err, YQ_ERR_CUDA, "timed run %d: %s", i, cudaGetErrorString(e));
        ms[i] /= (float)per;
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return st;
}

extern "C" yq_status yq_gpu_time(void *stream, yq_gpu_enqueue_fn fn, void *ctx, void *graph, int warmup, int runs,
                                 float *ms, yq_error *err)
{
    return timed(stream, fn, ctx, graph, warmup, runs, 1, ms, err);
}

struct yq_gpu_marks { int n; cudaEvent_t *ev; };

extern "C" yq_status yq_gpu_marks_new(int n, yq_gpu_marks **out, yq_error *err)
{
    yq_gpu_marks *m = (yq_gpu_marks *)calloc(1, sizeof *m);
    if (!m || !(m->ev = (cudaEvent_t *)calloc((size_t)n, sizeof *m->ev))) {
        free(m);
        return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    }
    m->n = n;
    for (int i = 0; i < n; i++)
        if (cudaEventCreate(&m->ev[i]) != cudaSuccess) {
            m->ev[i] = NULL;
            yq_gpu_marks_free(m);
            return yq_fail(err, YQ_ERR_CUDA, "cudaEventCreate failed (%d events)", n);
        }
    *out = m;
    return YQ_OK;
}

extern "C" void yq_gpu_marks_free(yq_gpu_marks *m)
{
    if (!m) return;
    for (int i = 0; i < m->n; i++)
        if (m->ev[i]) cudaEventDestroy(m->ev[i]);
    free(m->ev);
    free(m);
}

extern "C" void yq_gpu_marks_record(yq_gpu_marks *m, int k, void *stream)
{
    if (k >= 0 && k < m->n) cudaEventRecord(m->ev[k], YQ_STREAM(stream));
}

extern "C" yq_status yq_gpu_marks_ms(yq_gpu_marks *m, int a, int b, float *ms, yq_error *err)
{
    if (a < 0 || b < 0 || a >= m->n || b >= m->n) return yq_fail(err, YQ_ERR_INVALID_ARG, "event %d/%d of %d", a, b, m->n);
    YQ_CUDA_TRY(cudaEventElapsedTime(ms, m->ev[a], m->ev[b]));
    return YQ_OK;
}

extern "C" yq_status yq_gpu_stream_sync(void *stream, yq_error *err)
{
    YQ_CUDA_TRY(cudaStreamSynchronize(YQ_STREAM(stream)));
    YQ_CUDA_TRY(cudaGetLastError());
    return YQ_OK;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

extern "C" yq_status yq_gpu_median_ms(void *stream, yq_gpu_enqueue_fn fn, void *ctx, int warmup, int runs, int per,
                                      float *median, yq_error *err)
{
    if (runs < 1) runs = 1;
    if (per < 1) per = 1;
    float *ms = (float *)malloc(sizeof(float) * (size_t)runs);
    if (!ms) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    yq_status st = timed(stream, fn, ctx, NULL, warmup, runs, per, ms, err);
    if (!st) {
        qsort(ms, (size_t)runs, sizeof *ms, cmp_float);
        *median = runs % 2 ? ms[runs / 2] : 0.5f * (ms[runs / 2 - 1] + ms[runs / 2]);
    }
    free(ms);
    return st;
}

/* ---- the card's ceilings: copy bandwidth and the int8 mma.sync rate ---------------- */

/* Every warp runs 8 independent chains of m16n8k32 s8 x s8 -> s32 mma.sync (enough in
 * flight to keep the tensor pipe busy); 2 x 16 x 8 x 32 operations each.  The sums go out
 * only under a condition the data never meets, so nothing is optimized away. */
static __global__ void mma_peak_kernel(int iters, int *sink)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned a0 = threadIdx.x * 0x01010101u, a1 = a0 ^ 0x5a5a5a5au, a2 = a0 + 3, a3 = a0 * 7u;
    unsigned b0 = blockIdx.x * 0x01000193u, b1 = b0 ^ 0x3c3c3c3cu;
    int c[8][4];
#pragma unroll
    for (int k = 0; k < 8; k++) c[k][0] = c[k][1] = c[k][2] = c[k][3] = 0;
    for (int it = 0; it < iters; it++) {
#pragma unroll
        for (int k = 0; k < 8; k++)
            asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                         "{%0,%1,%2,%3};\n"
                         : "+r"(c[k][0]), "+r"(c[k][1]), "+r"(c[k][2]), "+r"(c[k][3])
                         : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
    int s = 0;
#pragma unroll
    for (int k = 0; k < 8; k++) s += c[k][0] ^ c[k][1] ^ c[k][2] ^ c[k][3];
    if (s == 0x7fffffff && iters < 0) *sink = s;
#else
    (void)iters; (void)sink;
#endif
}

extern "C" yq_status yq_gpu_ceilings(double *copy_gbs, double *mma_tops, yq_error *err)
{
    *copy_gbs = *mma_tops = 0;
    const size_t bytes = (size_t)1 << 30;     /* 1 GiB each way: far past any cache */
    void *src = NULL, *dst = NULL;
    int *sink = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    yq_status st = YQ_OK;
    cudaDeviceProp pr;
    float ms = 0, best = 0;
    if (cudaGetDeviceProperties(&pr, 0) != cudaSuccess || cudaMalloc(&src, bytes) != cudaSuccess ||
        cudaMalloc(&dst, bytes) != cudaSuccess || cudaMalloc((void **)&sink, sizeof(int)) != cudaSuccess ||
        cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess ||
        cudaMemset(src, 1, bytes) != cudaSuccess) {
        st = yq_fail(err, YQ_ERR_CUDA, "ceilings: %s", cudaGetErrorString(cudaGetLastError()));
        goto done;
    }
    /* copy: the best of 10 device-to-device copies, read + written bytes over the time */
    for (int i = 0; i < 11 && !st; i++) {
        if (cudaEventRecord(e0) != cudaSuccess || cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice) != cudaSuccess ||
            cudaEventRecord(e1) != cudaSuccess || cudaEventSynchronize(e1) != cudaSuccess ||
            cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess)
            st = yq_fail(err, YQ_ERR_CUDA, "ceilings: copy: %s", cudaGetErrorString(cudaGetLastError()));
        else if (i > 0 && (best == 0 || ms < best)) best = ms;   /* the first warms up */
    }
    if (!st && best > 0) *copy_gbs = 2.0 * (double)bytes / (best * 1e-3) * 1e-9;
    if (!st && pr.major >= 8) {
        const int iters = 4096, blocks = pr.multiProcessorCount * 4, threads = 256;
        best = 0;
        for (int i = 0; i < 6 && !st; i++) {
            cudaEventRecord(e0);
            mma_peak_kernel<<<blocks, threads>>>(iters, sink);
            cudaEventRecord(e1);
            if (cudaEventSynchronize(e1) != cudaSuccess || cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess)
                st = yq_fail(err, YQ_ERR_CUDA, "ceilings: mma: %s", cudaGetErrorString(cudaGetLastError()));
            else if (i > 0 && (best == 0 || ms < best)) best = ms;
        }
        double ops = 2.0 * 16 * 8 * 32 * 8 * (double)iters * blocks * (threads / 32);
        if (!st && best > 0) *mma_tops = ops / (best * 1e-3) * 1e-12;
    }
done:
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    cudaFree(src);
    cudaFree(dst);
    cudaFree(sink);
    (void)cudaGetLastError();
    return st;
}
