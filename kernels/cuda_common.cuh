/* Internal to the kernels/ .cu files: the C headers under extern "C", error checking, and
 * the element access shared by the kernels.  Not for C code (kernels/cuda.h is). */
#ifndef YQ_CUDA_COMMON_CUH
#define YQ_CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>
extern "C" {
#include "ir/ir.h"
#include "kernels/cuda.h"
}

/* Turns a failed CUDA call into YQ_ERR_CUDA with the runtime's message and file:line.
 * Use inside a function returning yq_status with a yq_error *err in scope. */
#define YQ_CUDA_TRY(call) do { \
    cudaError_t e_ = (call); \
    if (e_ != cudaSuccess) \
        return yq_fail(err, YQ_ERR_CUDA, "%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
} while (0)
/* After a launch: a bad configuration shows here; faults show at the next sync. */
#define YQ_CUDA_LAUNCHED() YQ_CUDA_TRY(cudaGetLastError())

#define YQ_STREAM(s) ((cudaStream_t)(s))

/* Programmatic dependent launch (sm_90; nothing before): a kernel launched with
 * yq_launch_pdl may begin while the stream's previous kernel still runs, so it reads only
 * constant data (weights, scales) before pdl_wait, which returns once every earlier kernel
 * of the stream has finished and its writes are visible; it touches no activation, and
 * writes nothing, before it.  pdl_trigger lets the stream's next such kernel begin (its
 * blocks take what this grid's last blocks leave free, and do their own set-up). */
__device__ __forceinline__ void pdl_wait()
{
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_trigger()
{
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/* Programmatic dependent launch for the kernels that pdl_wait (above) before
 * touching an activation: on by default; yq_cuda_pdl_enable(0) launches them as <<<>>>
 * would (for measuring what it brings: yqgpu --no-pdl). */
extern int yq_cuda_pdl;
template <class... P, class... A>
static inline cudaError_t yq_launch_pdl(void (*k)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t s, A... args)
{
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[1];
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at;
    cfg.numAttrs = yq_cuda_pdl ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, k, args...);
}

static inline unsigned yq_blocks(long n, int threads) { return (unsigned)((n + threads - 1) / threads); }

/* A family's set-up (raising its kernels' shared-memory limits: attributes of the current
 * device) once per device: *done has bit d set once device d is prepared; prepare() is
 * called again on a later device, or after it failed.  Plans (which call this) are built
 * outside stream capture, one thread at a time. */
template <class F>
static inline yq_status yq_once_per_device(unsigned *done, yq_error *err, F prepare)
{
    int d = 0;
    YQ_CUDA_TRY(cudaGetDevice(&d));
    if (d < 32 && (*done >> d & 1)) return YQ_OK;
    yq_status st = prepare();
    if (st == YQ_OK && d < 32) *done |= 1u << d;
    return st;
}

/* The pixel stride in bytes of a 1-byte tensor (yq_dt_ps, for device code). */
__host__ __device__ __forceinline__ long yq_ps(const yq_dtensor &t) { return t.ps ? t.ps : ((t.c + 3) & ~3); }

/* Element (b, c, y, x) of a tensor as a float: int8 types dequantized exactly as
 * yq_dequantize does (one float multiply, never contracted). */
__device__ __forceinline__ float yq_ld_f(const yq_dtensor &t, int b, int c, int y, int x)
{
    if (t.dtype == YQ_F32)
        return ((const float *)t.p)[(((long)b * t.c + c) * t.h + y) * t.w + x];
    long i = (((long)b * t.h + y) * t.w + x) * yq_ps(t) + c;
    int q = t.dtype == YQ_U8 ? (int)((const uint8_t *)t.p)[i] : (int)((const int8_t *)t.p)[i];
    return __fmul_rn((float)q, t.scale);
}

/* The activations' transcendental cases (mish, swish, logistic) out of line: inlined into
 * every unrolled epilogue they made the float kernels several times larger than the
 * instruction cache (the FP32 layers of a yolo-fastest package stalled 40% of their cycles
 * fetching instructions, H200, ncu), while the layers that use them are rare.  The same
 * operations, so the same bits. */
static __device__ __noinline__ float yq_act_f_rare(float x, int act)
{
    switch (act) {
    case YQ_ACT_MISH: {
        float sp = x > 20.f ? x : x < -20.f ? expf(x) : log1pf(expf(x));
        float t = __fsub_rn(__fdiv_rn(2.f, __fadd_rn(1.f, expf(__fmul_rn(-2.f, sp)))), 1.f);
        return __fmul_rn(x, t);
    }
    case YQ_ACT_SWISH: return __fmul_rn(x, __fdiv_rn(1.f, __fadd_rn(1.f, expf(-x))));
    case YQ_ACT_LOGISTIC: return __fdiv_rn(1.f, __fadd_rn(1.f, expf(-x)));
    default: return x;
    }
}

/* The piecewise-linear activations, inline (both definitions below share them): *y set and
 * true, or false for a transcendental one.  Products written with __fmul_rn so that nvcc
 * cannot fuse them with a neighbouring add. */
__device__ __forceinline__ bool yq_act_plain(float x, int act, float *y)
{
    switch (act) {
    case YQ_ACT_LINEAR: *y = x; return true;
    case YQ_ACT_LEAKY: *y = x > 0 ? x : __fmul_rn(.1f, x); return true;
    case YQ_ACT_RELU: *y = __fmul_rn(x, (float)(x > 0)); return true;
    default: return false;
    }
}

/* Darknet's activations as kernels/cpu_fp32.c writes them. */
__device__ __forceinline__ float yq_act_f(float x, int act)
{
    float y;
    return yq_act_plain(x, act, &y) ? y : yq_act_f_rare(x, act);
}

static __device__ __noinline__ float yq_act_x_rare(float x, int act)
{
    double d = x;
    switch (act) {
    case YQ_ACT_MISH: return (float)__dmul_rn(d, tanh(d > 20 ? d : log1p(exp(d))));
    case YQ_ACT_SWISH: return (float)__ddiv_rn(d, __dadd_rn(1.0, exp(-d)));
    case YQ_ACT_LOGISTIC: return (float)__ddiv_rn(1.0, __dadd_rn(1.0, exp(-d)));
    default: return x;
    }
}

/* The activation of the float layers of int8 graphs, as kernels/cpu_fp32.c
 * yq_f32_act_exact computes it: darknet's functions in double, rounded to float once
 * (exp, log1p and tanh here and in glibc differ by a double's ulp at most, so the float
 * results agree but for values within that of a rounding midpoint). */
__device__ __forceinline__ float yq_act_x(float x, int act)
{
    float y;
    return yq_act_plain(x, act, &y) ? y : yq_act_x_rare(x, act);
}

#endif
