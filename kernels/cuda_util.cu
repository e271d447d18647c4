/* Device discovery, checked memory wrappers, streams, timing, host layout changes. */
#include <stdio.h>
#include <string.h>
#include "kernels/cuda_common.cuh"

int yq_cuda_pdl = 1;

extern "C" void yq_cuda_pdl_enable(int on) { yq_cuda_pdl = on != 0; }

extern "C" int yq_cuda_device_count(void)
{
    int n = 0;
    /* No driver (the CI machine) or no device: an error here means "none". */
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

extern "C" yq_status yq_cuda_set_device(int device, yq_error *err)
{
    int n = yq_cuda_device_count();
    if (device < 0 || device >= n)
        return yq_fail(err, YQ_ERR_CUDA, "CUDA device %d requested, %d present", device, n);
    YQ_CUDA_TRY(cudaSetDevice(device));
    return YQ_OK;
}

extern "C" yq_status yq_cuda_device_name(char *buf, size_t cap, yq_error *err)
{
    int d;
    cudaDeviceProp pr;
    YQ_CUDA_TRY(cudaGetDevice(&d));
    YQ_CUDA_TRY(cudaGetDeviceProperties(&pr, d));
    snprintf(buf, cap, "%s (sm_%d%d, %d SMs)", pr.name, pr.major, pr.minor, pr.multiProcessorCount);
    return YQ_OK;
}

extern "C" yq_status yq_cuda_malloc(void **p, size_t bytes, yq_error *err)
{
    *p = NULL;
    cudaError_t e = cudaMalloc(p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();     /* not sticky: keep it from showing at the next launch check */
        *p = NULL;
        return yq_fail(err, e == cudaErrorMemoryAllocation ? YQ_ERR_NOMEM : YQ_ERR_CUDA,
                       "cudaMalloc(%zu bytes): %s", bytes, cudaGetErrorString(e));
    }
    return YQ_OK;
}

extern "C" void yq_cuda_free(void *p)
{
    if (p) cudaFree(p);
}

extern "C" yq_status yq_cuda_h2d(void *dst, const void *src, size_t bytes, yq_error *err)
{
    YQ_CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
    return YQ_OK;
}

extern "C" yq_status yq_cuda_d2h(void *dst, const void *src, size_t bytes, yq_error *err)
{
    YQ_CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
    return YQ_OK;
}

extern "C" yq_status yq_cuda_memset(void *p, int byte, size_t bytes, yq_error *err)
{
    YQ_CUDA_TRY(cudaMemset(p, byte, bytes));
    return YQ_OK;
}

extern "C" yq_status yq_cuda_stream_new(void **stream, yq_error *err)
{
    cudaStream_t s;
    *stream = NULL;
    /* A blocking stream: ordered with the legacy default stream that the plain
     * copies (yq_cuda_h2d/d2h) use, so an upload is complete before the kernels
     * queued after it read it. */
    YQ_CUDA_TRY(cudaStreamCreate(&s));
    *stream = s;
    return YQ_OK;
}

extern "C" void yq_cuda_stream_free(void *stream)
{
    if (stream) cudaStreamDestroy(YQ_STREAM(stream));
}

extern "C" yq_status yq_cuda_sync(void *stream, yq_error *err)
{
    YQ_CUDA_TRY(cudaGetLastError());
    YQ_CUDA_TRY(stream ? cudaStreamSynchronize(YQ_STREAM(stream)) : cudaDeviceSynchronize());
    return YQ_OK;
}

extern "C" yq_status yq_cuda_time(void *stream, int reps, yq_status (*fn)(void *ctx), void *ctx, float *ms,
                                  yq_error *err)
{
    cudaEvent_t a, b;
    yq_status st = YQ_OK;
    YQ_CUDA_TRY(cudaEventCreate(&a));
    YQ_CUDA_TRY(cudaEventCreate(&b));
    if ((st = fn(ctx)) != YQ_OK) goto done;          /* warm-up */
    cudaEventRecord(a, YQ_STREAM(stream));
    for (int i = 0; i < reps && st == YQ_OK; i++) st = fn(ctx);
    cudaEventRecord(b, YQ_STREAM(stream));
    if (st == YQ_OK) {
        cudaError_t e = cudaEventSynchronize(b);
        if (e != cudaSuccess) st = yq_fail(err, YQ_ERR_CUDA, "timing: %s", cudaGetErrorString(e));
        else {
            cudaEventElapsedTime(ms, a, b);
            *ms /= reps > 0 ? reps : 1;
        }
    }
done:
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return st;
}

extern "C" void yq_nchw_to_nhwc4(const void *src, int c, int h, int w, int batch, void *dst)
{
    const uint8_t *s = (const uint8_t *)src;
    uint8_t *d = (uint8_t *)dst;
    int c4 = (c + 3) & ~3;
    long hw = (long)h * w;
    for (int b = 0; b < batch; b++)
        for (long i = 0; i < hw; i++)
            for (int k = 0; k < c4; k++)
                d[((long)b * hw + i) * c4 + k] = k < c ? s[((long)b * c + k) * hw + i] : 0;
}

extern "C" void yq_nhwc4_to_nchw(const void *src, int c, int h, int w, int batch, void *dst)
{
    const uint8_t *s = (const uint8_t *)src;
    uint8_t *d = (uint8_t *)dst;
    int c4 = (c + 3) & ~3;
    long hw = (long)h * w;
    for (int b = 0; b < batch; b++)
        for (int k = 0; k < c; k++)
            for (long i = 0; i < hw; i++)
                d[((long)b * c + k) * hw + i] = s[((long)b * hw + i) * c4 + k];
}
