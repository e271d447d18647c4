/* The cuDNN float engine (kernels/cudnn_fp.h): planning (liveness, the legacy
 * algorithm and the graph-API engine per conv, chosen by timing them on the plan's
 * own buffers), the small kernels for the ops cuDNN has no darknet version of, and
 * the node loop.
 *
 * Tensors are packed in one layout for the whole plan: NCHW or NHWC, float or
 * half.  The small kernels decode an element's (b, c, y, x) from its position in
 * that layout; where channels (NHWC) or planes (NCHW) allow it a thread moves 16
 * bytes.  Activations are darknet's (yq_act_f, as kernels/cpu_fp32.c writes them),
 * computed in float for both precisions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <float.h>
#include <cuda_fp16.h>
#include "kernels/cuda_common.cuh"
extern "C" {
#include "kernels/cudnn_fp.h"
#include "kernels/cuda.h"
#include "ir/pack.h"
}

extern "C" yq_cudnn_opt yq_cudnn_defaults(yq_cudnn_prec precision)
{
    yq_cudnn_opt o;
    memset(&o, 0, sizeof o);
    o.precision = precision;
    o.layout = YQ_CUDNN_LAYOUT_AUTO;
    o.flags = YQ_PLAN_KEEP_HEADS;
    return o;
}

#ifndef YQ_HAVE_CUDNN

extern "C" int yq_cudnn_available(void) { return 0; }
extern "C" void yq_cudnn_version(char *buf, size_t cap) { snprintf(buf, cap, "none (built without cuDNN)"); }
extern "C" yq_status yq_cudnn_plan_new(const yq_graph *g, int batch, const yq_cudnn_opt *o, yq_cudnn_plan **out,
                                       yq_error *err)
{
    (void)g; (void)batch; (void)o; (void)out;
    return yq_fail(err, YQ_ERR_UNSUPPORTED, "this yquant was built without cuDNN (no cudnn.h at build time)");
}
extern "C" void yq_cudnn_plan_free(yq_cudnn_plan *p) { (void)p; }
extern "C" size_t yq_cudnn_plan_bytes(const yq_cudnn_plan *p) { (void)p; return 0; }
extern "C" size_t yq_cudnn_arena_bytes(const yq_cudnn_plan *p) { (void)p; return 0; }
extern "C" const char *yq_cudnn_plan_desc(const yq_cudnn_plan *p) { (void)p; return "none"; }
extern "C" void yq_cudnn_node_desc(const yq_cudnn_plan *p, int id, char *buf, size_t cap)
{
    (void)p; (void)id;
    if (cap) buf[0] = 0;
}
extern "C" yq_status yq_cudnn_run(yq_cudnn_plan *p, const float *x, yq_error *err)
{
    (void)p; (void)x;
    return yq_fail(err, YQ_ERR_UNSUPPORTED, "built without cuDNN");
}
extern "C" yq_status yq_cudnn_upload(yq_cudnn_plan *p, const float *x, yq_error *err)
{
    (void)p; (void)x;
    return yq_fail(err, YQ_ERR_UNSUPPORTED, "built without cuDNN");
}
extern "C" yq_status yq_cudnn_enqueue(yq_cudnn_plan *p, yq_error *err)
{
    (void)p;
    return yq_fail(err, YQ_ERR_UNSUPPORTED, "built without cuDNN");
}
extern "C" void *yq_cudnn_stream(const yq_cudnn_plan *p) { (void)p; return NULL; }
extern "C" void yq_cudnn_set_hook(yq_cudnn_plan *p, yq_gpu_node_fn fn, void *ctx) { (void)p; (void)fn; (void)ctx; }
extern "C" const void *yq_cudnn_node_data(const yq_cudnn_plan *p, int id) { (void)p; (void)id; return NULL; }
extern "C" yq_status yq_cudnn_download(const yq_cudnn_plan *p, int id, float *h, yq_error *err)
{
    (void)p; (void)id; (void)h;
    return yq_fail(err, YQ_ERR_UNSUPPORTED, "built without cuDNN");
}

#else   /* YQ_HAVE_CUDNN */

#include <cudnn.h>

#define ALIGN 256
#define NT 256

#define CUDNN_TRY(call) do { \
    cudnnStatus_t s_ = (call); \
    if (s_ != CUDNN_STATUS_SUCCESS) \
        return yq_fail(err, YQ_ERR_CUDA, "%s:%d: %s: %s", __FILE__, __LINE__, #call, cudnnGetErrorString(s_)); \
} while (0)

/* ---- element access ------------------------------------------------------- */

__device__ __forceinline__ float ldf(const float *p, long i) { return p[i]; }
__device__ __forceinline__ float ldf(const __half *p, long i) { return __half2float(p[i]); }
__device__ __forceinline__ void stf(float *p, long i, float v) { p[i] = v; }
__device__ __forceinline__ void stf(__half *p, long i, float v) { p[i] = __float2half_rn(v); }

/* V elements of T moved as one 16-byte access (V * sizeof(T) == 16), or V == 1. */
template <typename T, int V> struct alignas(V * sizeof(T)) Vec { T v[V]; };

/* Position t of a packed tensor (B x C x H x W in the layout) -> (b, c, y, x). */
template <bool NHWC>
__device__ __forceinline__ void decode(long t, int C, int H, int W, int &b, int &c, int &y, int &x)
{
    if (NHWC) {
        c = (int)(t % C);
        long r = t / C;
        x = (int)(r % W);
        r /= W;
        y = (int)(r % H);
        b = (int)(r / H);
    } else {
        x = (int)(t % W);
        long r = t / W;
        y = (int)(r % H);
        r /= H;
        c = (int)(r % C);
        b = (int)(r / C);
    }
}

template <bool NHWC>
__device__ __forceinline__ long offs(int b, int c, int y, int x, int C, int H, int W)
{
    return NHWC ? (((long)b * H + y) * W + x) * C + c : (((long)b * C + c) * H + y) * W + x;
}

/* ---- kernels -------------------------------------------------------------- */

/* The float NCHW input batch -> the plan's type and layout. */
template <typename T, bool NHWC>
__global__ void k_input(const float *in, T *out, int C, int H, int W, long n)
{
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    int b, c, y, x;
    decode<NHWC>(t, C, H, W, b, c, y, x);
    stf(out, t, in[(((long)b * C + c) * H + y) * W + x]);
}

/* Any node -> float NCHW (downloads). */
template <typename T, bool NHWC>
__global__ void k_to_nchw(const T *in, float *out, int C, int H, int W, long n)
{
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    int x = (int)(t % W), y = (int)(t / W % H);
    long bc = t / ((long)W * H);
    int c = (int)(bc % C), b = (int)(bc / C);
    out[t] = ldf(in, offs<NHWC>(b, c, y, x, C, H, W));
}

/* In place: y = act(y + bias[c]).  V elements per thread share a channel run (NHWC,
 * C % V == 0) or a plane (NCHW, HW % V == 0). */
template <typename T, bool NHWC, int V>
__global__ void k_bias_act(T *y, const float *bias, int C, long HW, long nv, int act)
{
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nv) return;
    long i0 = t * V;
    Vec<T, V> v = ((Vec<T, V> *)y)[t];
    int c0 = NHWC ? (int)(i0 % C) : (int)((i0 / HW) % C);
#pragma unroll
    for (int j = 0; j < V; j++) {
        float b = bias[NHWC ? c0 + j : c0];
        float x = __fadd_rn(ldf(v.v, j), b);
        stf(v.v, j, yq_act_f(x, act));
    }
    ((Vec<T, V> *)y)[t] = v;
}

/* out = act(a + b), elementwise over identical shapes; X: the exact activation (yq_act_x,
 * YQ_PLAN_EXACT plans) instead of darknet's float one. */
template <typename T, int V, bool X>
__global__ void k_shortcut(const T *a, const T *b, T *out, long nv, int act)
{
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nv) return;
    Vec<T, V> x = ((const Vec<T, V> *)a)[t], z = ((const Vec<T, V> *)b)[t], o;
#pragma unroll
    for (int j = 0; j < V; j++) {
        float v = __fadd_rn(ldf(x.v, j), ldf(z.v, j));
        stf(o.v, j, X ? yq_act_x(v, act) : yq_act_f(v, act));
    }
    ((Vec<T, V> *)out)[t] = o;
}

/* Nearest neighbour.  NHWC moves V channels at a time (C % V == 0). */
template <typename T, bool NHWC, int V>
__global__ void k_upsample(const T *in, T *out, int C, int OH, int OW, int s, long nv)
{
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nv) return;
    int b, c, y, x;
    decode<NHWC>(t * V, C, OH, OW, b, c, y, x);
    long src = offs<NHWC>(b, c, y / s, x / s, C, OH / s, OW / s);
    ((Vec<T, V> *)out)[t] = *(const Vec<T, V> *)(in + src);
}

/* Darknet's maxpool: the window starts pad/2 before the image; positions outside
 * it are skipped.  NHWC takes V channels at a time. */
template <typename T, bool NHWC, int V>
__global__ void k_maxpool(const T *in, T *out, int C, int IH, int IW, int OH, int OW, int size, int stride,
                          int pad, long nv)
{
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nv) return;
    int b, c, oy, ox;
    decode<NHWC>(t * V, C, OH, OW, b, c, oy, ox);
    int off = -pad / 2;
    float m[V];
#pragma unroll
    for (int j = 0; j < V; j++) m[j] = -FLT_MAX;
    for (int ky = 0; ky < size; ky++) {
        int y = off + oy * stride + ky;
        if (y < 0 || y >= IH) continue;
        for (int kx = 0; kx < size; kx++) {
            int x = off + ox * stride + kx;
            if (x < 0 || x >= IW) continue;
            Vec<T, V> v = *(const Vec<T, V> *)(in + offs<NHWC>(b, c, y, x, C, IH, IW));
#pragma unroll
            for (int j = 0; j < V; j++) {
                float f = ldf(v.v, j);
                if (f > m[j]) m[j] = f;
            }
        }
    }
    Vec<T, V> o;
#pragma unroll
    for (int j = 0; j < V; j++) stf(o.v, j, m[j]);
    ((Vec<T, V> *)out)[t] = o;
}

/* Planning only: random values in [-1, 1) (a hash of the position), and the
 * largest |a - b| and |b| of two tensors (as bits: non-negative floats order as
 * unsigned), with a flag for a non-finite a. */
template <typename T>
__global__ void k_fill(T *p, long n, uint32_t seed)
{
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15; h *= 2246822519u; h ^= h >> 13; h *= 3266489917u; h ^= h >> 16;
        stf(p, i, (float)(h >> 8) * (2.f / 16777216.f) - 1.f);
    }
}

template <typename T>
__global__ void k_cmp(const T *a, const T *b, long n, unsigned *out)
{
    float d = 0.f, m = 0.f;
    unsigned bad = 0;
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        float x = ldf(a, i), r = ldf(b, i);
        if (!isfinite(x)) bad = 1;
        d = fmaxf(d, fabsf(x - r));
        m = fmaxf(m, fabsf(r));
    }
    atomicMax(&out[0], __float_as_uint(d));
    atomicMax(&out[1], __float_as_uint(m));
    if (bad) atomicMax(&out[2], 1u);
}

/* ---- the plan ------------------------------------------------------------- */

typedef struct conv_plan {
    cudnnTensorDescriptor_t x, y, bias;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    cudnnActivationDescriptor_t act;
    cudnnConvolutionFwdAlgo_t algo;
    cudnnMathType_t math;
    size_t ws;
    int fused;              /* bias + activation inside cuDNN */
    size_t w_off, bt_off, bf_off;   /* in params: weights (T), bias (T, fused), bias (float) */
    float find_ms;
    /* graph API */
    int graph;              /* 1: runs through gplan (else the legacy call) */
    int gfused;             /* the graph adds the bias and applies the activation */
    int64_t gws, geng;      /* its workspace, cuDNN's global engine index */
    cudnnBackendDescriptor_t gplan, gpack;
    int n_cand;
    cudnnBackendDescriptor_t cand[8];
    int64_t cand_ws[8], cand_eng[8];
    int cand_fused;
    int gowner_self;        /* 1: gplan is this conv's own (0: shared with an earlier, equal conv) */
    int share;              /* -1, or the earlier equal conv whose graph choice this one takes */
    yq_cuda_conv *ex;       /* YQ_PLAN_EXACT: the conv runs our exact FP32 kernels (no cuDNN) */
    int nd;                 /* descriptors the plans refer to, destroyed with the plan */
    cudnnBackendDescriptor_t d[128];
} conv_plan;

struct yq_cudnn_plan {
    const yq_graph *g;
    int batch, flags, device;
    yq_cudnn_prec prec;
    int nhwc, es;           /* layout, element size */
    char desc[64];
    cudnnHandle_t h;
    cudaStream_t s;
    unsigned char *mem;     /* the one allocation: params | arena | input | workspace */
    size_t mem_bytes, params_bytes, arena_bytes, ws_bytes, in_off, arena_off, ws_off;
    int *owner, *last_use;
    size_t *off;            /* per owner, inside the arena */
    conv_plan *cv;          /* per node (conv nodes only) */
    yq_gpu_node_fn hook;
    void *hook_ctx;
};

static size_t up(size_t n) { return (n + ALIGN - 1) & ~(size_t)(ALIGN - 1); }

static int is_alias(const yq_graph *g, int id)
{
    yq_op op = g->nodes[id].op;
    return op == YQ_OP_DROPOUT || yq_op_is_head(op);
}

static void *nbuf(const yq_cudnn_plan *p, int id) { return p->mem + p->arena_off + p->off[p->owner[id]]; }

static cudnnDataType_t dtype_of(const yq_cudnn_plan *p) { return p->prec == YQ_CUDNN_FP16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT; }
static cudnnTensorFormat_t fmt_of(const yq_cudnn_plan *p) { return p->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW; }

extern "C" int yq_cudnn_available(void) { return 1; }

extern "C" void yq_cudnn_version(char *buf, size_t cap)
{
    size_t v = cudnnGetVersion();
    snprintf(buf, cap, "cuDNN %zu.%zu.%zu (compiled against %d.%d.%d)", v / 10000, v / 100 % 100, v % 100, CUDNN_MAJOR,
             CUDNN_MINOR, CUDNN_PATCHLEVEL);
}

static const char *algo_name(cudnnConvolutionFwdAlgo_t a)
{
    switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "?";
    }
}

static void conv_destroy(conv_plan *c)
{
    yq_cuda_conv_free(c->ex);
    if (c->gpack) cudnnBackendDestroyDescriptor(c->gpack);
    for (int k = 0; k < c->n_cand; k++)
        if (c->cand[k]) cudnnBackendDestroyDescriptor(c->cand[k]);
    if (c->gplan && c->gowner_self) cudnnBackendDestroyDescriptor(c->gplan);
    for (int k = c->nd - 1; k >= 0; k--) cudnnBackendDestroyDescriptor(c->d[k]);
    if (c->x) cudnnDestroyTensorDescriptor(c->x);
    if (c->y) cudnnDestroyTensorDescriptor(c->y);
    if (c->bias) cudnnDestroyTensorDescriptor(c->bias);
    if (c->w) cudnnDestroyFilterDescriptor(c->w);
    if (c->conv) cudnnDestroyConvolutionDescriptor(c->conv);
    if (c->act) cudnnDestroyActivationDescriptor(c->act);
}

extern "C" void yq_cudnn_plan_free(yq_cudnn_plan *p)
{
    if (!p) return;
    if (p->cv)
        for (int i = 0; i < p->g->n_nodes; i++) conv_destroy(&p->cv[i]);
    free(p->cv);
    if (p->mem) cudaFree(p->mem);
    if (p->h) cudnnDestroy(p->h);
    if (p->s) cudaStreamDestroy(p->s);
    free(p->owner);
    free(p->last_use);
    free(p->off);
    free(p);
}

/* Descriptors of conv node id at the plan's batch, type and layout. */
static yq_status conv_describe(yq_cudnn_plan *p, int id, yq_error *err)
{
    const yq_graph *g = p->g;
    const yq_node *n = &g->nodes[id];
    conv_plan *c = &p->cv[id];
    yq_shape is = yq_node_in_shape(g, n), os = n->out;
    const yq_conv_p *cp = &n->p.conv;
    cudnnDataType_t dt = dtype_of(p);
    CUDNN_TRY(cudnnCreateTensorDescriptor(&c->x));
    CUDNN_TRY(cudnnCreateTensorDescriptor(&c->y));
    CUDNN_TRY(cudnnCreateTensorDescriptor(&c->bias));
    CUDNN_TRY(cudnnCreateFilterDescriptor(&c->w));
    CUDNN_TRY(cudnnCreateConvolutionDescriptor(&c->conv));
    CUDNN_TRY(cudnnCreateActivationDescriptor(&c->act));
    CUDNN_TRY(cudnnSetTensor4dDescriptor(c->x, fmt_of(p), dt, p->batch, is.c, is.h, is.w));
    CUDNN_TRY(cudnnSetTensor4dDescriptor(c->y, fmt_of(p), dt, p->batch, os.c, os.h, os.w));
    CUDNN_TRY(cudnnSetTensor4dDescriptor(c->bias, fmt_of(p), dt, 1, os.c, 1, 1));
    CUDNN_TRY(cudnnSetFilter4dDescriptor(c->w, dt, fmt_of(p), cp->filters, is.c / cp->groups, cp->size, cp->size));
    CUDNN_TRY(cudnnSetConvolution2dDescriptor(c->conv, cp->pad, cp->pad, cp->stride, cp->stride, 1, 1,
                                              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUDNN_TRY(cudnnSetConvolutionGroupCount(c->conv, cp->groups));
    c->math = p->prec == YQ_CUDNN_FP16 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
    CUDNN_TRY(cudnnSetConvolutionMathType(c->conv, c->math));
    int on, oc, oh, ow;
    CUDNN_TRY(cudnnGetConvolution2dForwardOutputDim(c->conv, c->x, c->w, &on, &oc, &oh, &ow));
    if (on != p->batch || oc != os.c || oh != os.h || ow != os.w)
        return yq_fail(err, YQ_ERR_SHAPE, "%s: cuDNN computes %dx%dx%d, the graph says %dx%dx%d", n->name, oc, oh, ow,
                       os.c, os.h, os.w);
    return YQ_OK;
}

/* Whether conv a and b have the same problem (then the same algorithm). */
static int same_conv(const yq_graph *g, int a, int b)
{
    const yq_node *x = &g->nodes[a], *y = &g->nodes[b];
    yq_shape xi = yq_node_in_shape(g, x), yi = yq_node_in_shape(g, y);
    return !memcmp(&x->p.conv, &y->p.conv, sizeof x->p.conv) && xi.c == yi.c && xi.h == yi.h && xi.w == yi.w;
}

static yq_status conv_choose(yq_cudnn_plan *p, int id, size_t limit, int heuristic, yq_error *err)
{
    conv_plan *c = &p->cv[id];
    const yq_node *n = &p->g->nodes[id];
    for (int j = 1; j < id; j++)
        if (p->g->nodes[j].op == YQ_OP_CONV && same_conv(p->g, j, id)) {
            c->algo = p->cv[j].algo;
            c->math = p->cv[j].math;
            c->ws = p->cv[j].ws;
            c->find_ms = p->cv[j].find_ms;
            CUDNN_TRY(cudnnSetConvolutionMathType(c->conv, c->math));
            return YQ_OK;
        }
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int got = 0;
    if (heuristic)
        CUDNN_TRY(cudnnGetConvolutionForwardAlgorithm_v7(p->h, c->x, c->w, c->conv, c->y,
                                                          CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf));
    else
        CUDNN_TRY(cudnnFindConvolutionForwardAlgorithm(p->h, c->x, c->w, c->conv, c->y,
                                                        CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf));
    for (int k = 0; k < got; k++) {
        if (perf[k].status != CUDNN_STATUS_SUCCESS || perf[k].memory > limit) continue;
        /* FP32 stays FP32: a TF32 result (tensor-op math) is not what this path promises. */
        if (p->prec == YQ_CUDNN_FP32 && perf[k].mathType != CUDNN_FMA_MATH && perf[k].mathType != CUDNN_DEFAULT_MATH)
            continue;
        c->algo = perf[k].algo;
        c->math = p->prec == YQ_CUDNN_FP32 ? CUDNN_FMA_MATH : perf[k].mathType;
        c->find_ms = perf[k].time;
        CUDNN_TRY(cudnnSetConvolutionMathType(c->conv, c->math));
        /* The workspace of this algorithm under the math type actually set. */
        CUDNN_TRY(cudnnGetConvolutionForwardWorkspaceSize(p->h, c->x, c->w, c->conv, c->y, c->algo, &c->ws));
        if (c->ws > limit) continue;
        return YQ_OK;
    }
    return yq_fail(err, YQ_ERR_UNSUPPORTED, "%s: cuDNN has no algorithm for this conv within %zu bytes of workspace",
                   n->name, limit);
}

/* ---- convs through the graph (backend) API -------------------------------- */

#define BKT(call) do { cudnnStatus_t s_ = (call); if (s_ != CUDNN_STATUS_SUCCESS) return s_; } while (0)

/* A descriptor the conv keeps until the plan is freed (finalized plans refer to them). */
static cudnnStatus_t bk_new(conv_plan *c, cudnnBackendDescriptorType_t t, cudnnBackendDescriptor_t *d)
{
    if (c->nd >= (int)(sizeof c->d / sizeof c->d[0])) return CUDNN_STATUS_ALLOC_FAILED;
    cudnnStatus_t s = cudnnBackendCreateDescriptor(t, d);
    if (s == CUDNN_STATUS_SUCCESS) c->d[c->nd++] = *d;
    return s;
}

/* A packed tensor n x ch x h x w in the plan's layout. */
static cudnnStatus_t bk_tensor(conv_plan *c, int64_t uid, cudnnDataType_t dt, int64_t n, int64_t ch, int64_t h,
                               int64_t w, int nhwc, int virt, cudnnBackendDescriptor_t *t)
{
    int64_t d[4] = { n, ch, h, w }, st[4], align = 16;
    if (nhwc) { st[1] = 1; st[3] = ch; st[2] = w * ch; st[0] = h * w * ch; }
    else { st[3] = 1; st[2] = w; st[1] = h * w; st[0] = ch * h * w; }
    bool v = virt != 0;
    BKT(bk_new(c, CUDNN_BACKEND_TENSOR_DESCRIPTOR, t));
    BKT(cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt));
    BKT(cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, d));
    BKT(cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, st));
    BKT(cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
    BKT(cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align));
    if (virt) BKT(cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v));
    return cudnnBackendFinalize(*t);
}

/* y = mode(x [, b]) in float. */
static cudnnStatus_t bk_pointwise(conv_plan *c, cudnnPointwiseMode_t mode, double slope, cudnnBackendDescriptor_t x,
                                  cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t y, cudnnBackendDescriptor_t *op)
{
    cudnnBackendDescriptor_t pw;
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    BKT(bk_new(c, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &pw));
    BKT(cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode));
    BKT(cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec));
    if (mode == CUDNN_POINTWISE_RELU_FWD) {
        double lo = 0.0;
        BKT(cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, CUDNN_TYPE_DOUBLE, 1, &lo));
        BKT(cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE, CUDNN_TYPE_DOUBLE, 1, &slope));
    }
    BKT(cudnnBackendFinalize(pw));
    BKT(bk_new(c, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, op));
    BKT(cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw));
    BKT(cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
    if (b) BKT(cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b));
    BKT(cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
    return cudnnBackendFinalize(*op);
}

/* Whether an engine configuration keeps this path's numerics (see cudnn_fp.h);
 * *eng: its global engine index. */
static int engine_ok(const yq_cudnn_plan *p, cudnnBackendDescriptor_t cfg, int64_t *eng_index)
{
    cudnnBackendDescriptor_t eng;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) != CUDNN_STATUS_SUCCESS) return 0;
    int64_t n = 0, nn = 0;
    int ok = cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng) ==
             CUDNN_STATUS_SUCCESS && n == 1;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    if (ok && cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                       CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &nn, notes) != CUDNN_STATUS_SUCCESS)
        ok = 0;
    for (int64_t k = 0; ok && k < nn; k++) {
        cudnnBackendNumericalNote_t t = notes[k];
        if (t == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC || t == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION) ok = 0;
        if (p->prec == YQ_CUDNN_FP32 && (t == CUDNN_NUMERICAL_NOTE_TENSOR_CORE || t == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS))
            ok = 0;
    }
    *eng_index = -1;
    if (ok) cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, eng_index);
    cudnnBackendDestroyDescriptor(eng);
    return ok;
}

/* The operation graph of conv node id (fused: + bias, then the activation), and up
 * to 8 finalized execution plans for it that keep our numerics and fit in limit. */
static cudnnStatus_t graph_candidates(yq_cudnn_plan *p, int id, int fused, size_t limit)
{
    const yq_graph *g = p->g;
    const yq_node *n = &g->nodes[id];
    conv_plan *c = &p->cv[id];
    yq_shape is = yq_node_in_shape(g, n), os = n->out;
    const yq_conv_p *cp = &n->p.conv;
    cudnnDataType_t dt = dtype_of(p), fl = CUDNN_DATA_FLOAT;
    int B = p->batch, nh = p->nhwc;
    cudnnBackendDescriptor_t x, w, y, cy, conv, op, ops[3], og, heur, b = NULL, ya = NULL;
    int nops = 0;
    BKT(bk_tensor(c, 1, dt, B, is.c, is.h, is.w, nh, 0, &x));
    BKT(bk_tensor(c, 2, dt, cp->filters, is.c / cp->groups, cp->size, cp->size, nh, 0, &w));
    BKT(bk_tensor(c, 3, dt, B, os.c, os.h, os.w, nh, 0, &y));
    if (fused) {
        BKT(bk_tensor(c, 4, dt, 1, os.c, 1, 1, nh, 0, &b));
        BKT(bk_tensor(c, 10, fl, B, os.c, os.h, os.w, nh, 1, &cy));
    } else {
        cy = y;
    }
    {
        cudnnDataType_t ct = CUDNN_DATA_FLOAT;
        cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
        int64_t nd = 2, dil[2] = { 1, 1 }, st[2] = { cp->stride, cp->stride }, pad[2] = { cp->pad, cp->pad };
        float alpha = 1.f, beta = 0.f;
        BKT(bk_new(c, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &conv));
        BKT(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &ct));
        BKT(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
        BKT(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &nd));
        BKT(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil));
        BKT(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, st));
        BKT(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
        BKT(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
        BKT(cudnnBackendFinalize(conv));
        BKT(bk_new(c, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &op));
        BKT(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
        BKT(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w));
        BKT(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cy));
        BKT(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv));
        BKT(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha));
        BKT(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta));
        BKT(cudnnBackendFinalize(op));
        ops[nops++] = op;
    }
    if (fused) {
        cudnnBackendDescriptor_t add;
        if (n->act == YQ_ACT_LINEAR) {
            BKT(bk_pointwise(c, CUDNN_POINTWISE_ADD, 0, cy, b, y, &add));
            ops[nops++] = add;
        } else {
            cudnnBackendDescriptor_t act;
            BKT(bk_tensor(c, 11, fl, B, os.c, os.h, os.w, nh, 1, &ya));
            BKT(bk_pointwise(c, CUDNN_POINTWISE_ADD, 0, cy, b, ya, &add));
            BKT(bk_pointwise(c, CUDNN_POINTWISE_RELU_FWD, n->act == YQ_ACT_LEAKY ? 0.1 : 0.0, ya, NULL, y, &act));
            ops[nops++] = add;
            ops[nops++] = act;
        }
    }
    BKT(bk_new(c, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &og));
    BKT(cudnnBackendSetAttribute(og, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, nops, ops));
    BKT(cudnnBackendSetAttribute(og, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &p->h));
    BKT(cudnnBackendFinalize(og));
    cudnnBackendHeurMode_t modes[2] = { CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK };
    for (int mi = 0; mi < 2 && c->n_cand == 0; mi++) {
        BKT(bk_new(c, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur));
        BKT(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &og));
        BKT(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &modes[mi]));
        if (cudnnBackendFinalize(heur) != CUDNN_STATUS_SUCCESS) continue;
        cudnnBackendDescriptor_t cfgs[16];
        int64_t ncfg = 0;
        int made = 0;
        for (; made < 16; made++)
            if (bk_new(c, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[made]) != CUDNN_STATUS_SUCCESS) break;
        if (cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, made, &ncfg, cfgs) !=
            CUDNN_STATUS_SUCCESS)
            ncfg = 0;
        for (int64_t k = 0; k < ncfg && c->n_cand < 8; k++) {
            int64_t eng = -1, ws = 0, cnt = 0;
            if (!engine_ok(p, cfgs[k], &eng)) continue;
            cudnnBackendDescriptor_t plan;
            if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan) != CUDNN_STATUS_SUCCESS) continue;
            if (cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &p->h) ||
                cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfgs[k]) ||
                cudnnBackendFinalize(plan) ||
                cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &cnt, &ws) ||
                ws < 0 || (size_t)ws > limit) {
                cudnnBackendDestroyDescriptor(plan);
                continue;
            }
            c->cand[c->n_cand] = plan;
            c->cand_ws[c->n_cand] = ws;
            c->cand_eng[c->n_cand] = eng;
            c->n_cand++;
        }
    }
    c->cand_fused = fused;
    return c->n_cand ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_NOT_SUPPORTED;
}

static cudnnStatus_t make_pack(yq_cudnn_plan *p, int id, int fused, cudnnBackendDescriptor_t *pack)
{
    const yq_node *n = &p->g->nodes[id];
    conv_plan *c = &p->cv[id];
    int64_t uids[4] = { 1, 2, 3, 4 };
    void *ptrs[4] = { nbuf(p, n->src[0]), p->mem + c->w_off, nbuf(p, id), p->mem + c->bt_off };
    void *ws = p->mem + p->ws_off;
    BKT(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, pack));
    cudnnStatus_t s = cudnnBackendSetAttribute(*pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, fused ? 4 : 3, uids);
    if (!s) s = cudnnBackendSetAttribute(*pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, fused ? 4 : 3, ptrs);
    if (!s) s = cudnnBackendSetAttribute(*pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
    if (!s) s = cudnnBackendFinalize(*pack);
    if (s) {
        cudnnBackendDestroyDescriptor(*pack);
        *pack = NULL;
    }
    return s;
}

/* ---- running one conv ------------------------------------------------------ */

/* The vector width for elements of T when every V-group stays in one channel run. */
template <typename T> static int vec_width(long group)
{
    int v = 16 / (int)sizeof(T);
    return group % v == 0 ? v : 1;
}

/* In place on conv node id's output: + bias, then the activation. */
template <typename T, bool NHWC>
static yq_status bias_act_t(yq_cudnn_plan *p, int id, yq_error *err)
{
    const yq_node *nd = &p->g->nodes[id];
    yq_shape os = nd->out;
    long nout = yq_shape_size(os) * p->batch, hw = (long)os.h * os.w;
    T *y = (T *)nbuf(p, id);
    const float *bf = (const float *)(p->mem + p->cv[id].bf_off);
    int v = vec_width<T>(NHWC ? os.c : hw);
    if (v > 1)
        k_bias_act<T, NHWC, 16 / sizeof(T)><<<yq_blocks(nout / v, NT), NT, 0, p->s>>>(y, bf, os.c, hw, nout / v, nd->act);
    else
        k_bias_act<T, NHWC, 1><<<yq_blocks(nout, NT), NT, 0, p->s>>>(y, bf, os.c, hw, nout, nd->act);
    YQ_CUDA_LAUNCHED();
    return YQ_OK;
}

static yq_status bias_act(yq_cudnn_plan *p, int id, yq_error *err)
{
    if (p->es == 2) return p->nhwc ? bias_act_t<__half, true>(p, id, err) : bias_act_t<__half, false>(p, id, err);
    return p->nhwc ? bias_act_t<float, true>(p, id, err) : bias_act_t<float, false>(p, id, err);
}

static yq_status conv_legacy(yq_cudnn_plan *p, int id, yq_error *err)
{
    const float one = 1.f, zero = 0.f;
    conv_plan *c = &p->cv[id];
    const void *x = nbuf(p, p->g->nodes[id].src[0]), *w = p->mem + c->w_off;
    void *y = nbuf(p, id), *ws = p->ws_bytes ? p->mem + p->ws_off : NULL;
    if (c->fused) {
        CUDNN_TRY(cudnnConvolutionBiasActivationForward(p->h, &one, c->x, x, c->w, w, c->conv, c->algo, ws, p->ws_bytes,
                                                        &zero, c->y, y, c->bias, p->mem + c->bt_off, c->act, c->y, y));
        return YQ_OK;
    }
    CUDNN_TRY(cudnnConvolutionForward(p->h, &one, c->x, x, c->w, w, c->conv, c->algo, ws, p->ws_bytes, &zero, c->y, y));
    return bias_act(p, id, err);
}

static yq_status conv_graph(yq_cudnn_plan *p, int id, cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack,
                            int fused, yq_error *err)
{
    CUDNN_TRY(cudnnBackendExecute(p->h, plan, pack));
    return fused ? YQ_OK : bias_act(p, id, err);
}

/* Best of 5 runs of conv id (legacy when plan is NULL), in ms; < 0 on failure. */
static float conv_time(yq_cudnn_plan *p, int id, cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack, int fused,
                       cudaEvent_t e0, cudaEvent_t e1)
{
    float best = -1;
    yq_error e2;
    for (int r = 0; r < 6; r++) {
        float ms = 0;
        cudaEventRecord(e0, p->s);
        yq_status st = plan ? conv_graph(p, id, plan, pack, fused, &e2) : conv_legacy(p, id, &e2);
        cudaEventRecord(e1, p->s);
        if (st || cudaEventSynchronize(e1) != cudaSuccess || cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess) {
            (void)cudaGetLastError();
            return -1;
        }
        if (r > 0 && (best < 0 || ms < best)) best = ms;   /* the first run warms up */
    }
    return best;
}

/* Picks conv id's fastest graph candidate whose output matches the legacy path on
 * the (random) data in the plan's buffers, if it beats the legacy path; frees the
 * other candidates.  ref: scratch for one output; cmp: 3 device words. */
static yq_status conv_tune(yq_cudnn_plan *p, int id, void *ref, unsigned *cmp, cudaEvent_t e0, cudaEvent_t e1,
                           yq_error *err)
{
    conv_plan *c = &p->cv[id];
    const yq_node *n = &p->g->nodes[id];
    long nout = yq_shape_size(n->out) * p->batch;
    yq_status st = conv_legacy(p, id, err);
    if (st) return st;
    YQ_CUDA_TRY(cudaMemcpyAsync(ref, nbuf(p, id), (size_t)nout * p->es, cudaMemcpyDeviceToDevice, p->s));
    float best = conv_time(p, id, NULL, NULL, 0, e0, e1);
    int bi = -1;
    double tol = p->prec == YQ_CUDNN_FP16 ? 1e-2 : 1e-4;
    cudnnBackendDescriptor_t pack = NULL;
    if (make_pack(p, id, c->cand_fused, &pack) == CUDNN_STATUS_SUCCESS) {
        for (int k = 0; k < c->n_cand; k++) {
            yq_error e2;
            if (conv_graph(p, id, c->cand[k], pack, c->cand_fused, &e2)) {
                (void)cudaGetLastError();
                continue;
            }
            unsigned h[3] = { 0, 0, 0 };
            cudaMemsetAsync(cmp, 0, sizeof h, p->s);
            if (p->es == 2) k_cmp<__half><<<512, NT, 0, p->s>>>((const __half *)nbuf(p, id), (const __half *)ref, nout, cmp);
            else k_cmp<float><<<512, NT, 0, p->s>>>((const float *)nbuf(p, id), (const float *)ref, nout, cmp);
            YQ_CUDA_TRY(cudaMemcpyAsync(h, cmp, sizeof h, cudaMemcpyDeviceToHost, p->s));
            YQ_CUDA_TRY(cudaStreamSynchronize(p->s));
            float d, m;
            memcpy(&d, &h[0], sizeof d);
            memcpy(&m, &h[1], sizeof m);
            if (h[2] || !((double)d <= tol * (double)m)) continue;   /* not the same function: never chosen */
            float t = conv_time(p, id, c->cand[k], pack, c->cand_fused, e0, e1);
            if (t > 0 && (best < 0 || t < best)) {
                best = t;
                bi = k;
            }
        }
        cudnnBackendDestroyDescriptor(pack);
    }
    if (bi >= 0) {
        c->graph = 1;
        c->gplan = c->cand[bi];
        c->gowner_self = 1;
        c->cand[bi] = NULL;
        c->gws = c->cand_ws[bi];
        c->geng = c->cand_eng[bi];
        c->gfused = c->cand_fused;
    }
    for (int k = 0; k < c->n_cand; k++)
        if (c->cand[k]) cudnnBackendDestroyDescriptor(c->cand[k]);
    c->n_cand = 0;
    return YQ_OK;
}

/* Host copy of a conv's weights in the plan's layout and type, at dst. */
static void pack_weights(const yq_cudnn_plan *p, const yq_node *n, int cin_g, unsigned char *dst)
{
    int F = n->p.conv.filters, k = n->p.conv.size;
    long per = (long)cin_g * k * k;
    for (int o = 0; o < F; o++)
        for (int ci = 0; ci < cin_g; ci++)
            for (int ky = 0; ky < k; ky++)
                for (int kx = 0; kx < k; kx++) {
                    float v = n->w[o * per + ((long)ci * k + ky) * k + kx];
                    long i = p->nhwc ? o * per + ((long)ky * k + kx) * cin_g + ci : o * per + ((long)ci * k + ky) * k + kx;
                    if (p->es == 2) ((__half *)dst)[i] = __float2half_rn(v);
                    else ((float *)dst)[i] = v;
                }
}

/* After the allocation: each conv with graph candidates keeps the fastest correct
 * one, or the legacy path (conv_tune); equal convs share the choice.  Then the one
 * allocation shrinks to the workspace actually used, and the variant packs (device
 * pointers) are built. */
static yq_status choose_graphs(yq_cudnn_plan *p, yq_error *err)
{
    const yq_graph *g = p->g;
    size_t maxout = 0;
    for (int i = 1; i < g->n_nodes; i++)
        if (g->nodes[i].op == YQ_OP_CONV) {
            size_t b = (size_t)yq_shape_size(g->nodes[i].out) * p->batch * p->es;
            if (b > maxout) maxout = b;
        }
    void *ref = NULL;
    unsigned *cmp = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    yq_status st = YQ_OK;
    if (cudaMalloc(&ref, maxout ? maxout : 1) != cudaSuccess || cudaMalloc((void **)&cmp, 16) != cudaSuccess ||
        cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess) {
        (void)cudaGetLastError();
        st = yq_fail(err, YQ_ERR_NOMEM, "cuDNN plan: no device memory to try the graph engines");
    }
    /* random activations, so that a wrong engine cannot match by accident */
    long ne = (long)(p->arena_bytes / p->es);
    if (!st && ne > 0) {
        if (p->es == 2) k_fill<__half><<<1024, NT, 0, p->s>>>((__half *)(p->mem + p->arena_off), ne, 12345u);
        else k_fill<float><<<1024, NT, 0, p->s>>>((float *)(p->mem + p->arena_off), ne, 12345u);
    }
    for (int i = 1; i < g->n_nodes && !st; i++) {
        conv_plan *c = &p->cv[i];
        if (g->nodes[i].op != YQ_OP_CONV) continue;
        if (c->share >= 0) {
            const conv_plan *o = &p->cv[c->share];
            c->graph = o->graph;
            c->gplan = o->gplan;
            c->gowner_self = 0;
            c->gws = o->gws;
            c->geng = o->geng;
            c->gfused = o->gfused;
        } else if (c->n_cand) {
            st = conv_tune(p, i, ref, cmp, e0, e1, err);
        }
    }
    if (ref) cudaFree(ref);
    if (cmp) cudaFree(cmp);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (st) return st;
    YQ_CUDA_TRY(cudaStreamSynchronize(p->s));
    YQ_CUDA_TRY(cudaGetLastError());
    /* the workspace the chosen paths need */
    size_t ws = 0;
    for (int i = 1; i < g->n_nodes; i++) {
        const conv_plan *c = &p->cv[i];
        if (g->nodes[i].op != YQ_OP_CONV) continue;
        size_t need = c->graph ? (size_t)c->gws : c->ws;
        if (need > ws) ws = need;
    }
    if (ws < p->ws_bytes) {
        size_t bytes = p->ws_off + up(ws ? ws : 1);
        unsigned char *m = NULL;
        if (cudaMalloc((void **)&m, bytes) == cudaSuccess) {
            cudaError_t e = cudaMemcpy(m, p->mem, p->params_bytes, cudaMemcpyDeviceToDevice);
            if (e != cudaSuccess) {
                cudaFree(m);
                return yq_fail(err, YQ_ERR_CUDA, "cuDNN plan: moving the weights: %s", cudaGetErrorString(e));
            }
            cudaFree(p->mem);
            p->mem = m;
            p->mem_bytes = bytes;
            p->ws_bytes = ws;
        } else {
            (void)cudaGetLastError();   /* keep the larger allocation */
        }
    }
    for (int i = 1; i < g->n_nodes; i++) {
        conv_plan *c = &p->cv[i];
        if (g->nodes[i].op != YQ_OP_CONV || !c->graph) continue;
        cudnnStatus_t cs = make_pack(p, i, c->gfused, &c->gpack);
        if (cs != CUDNN_STATUS_SUCCESS)
            return yq_fail(err, YQ_ERR_CUDA, "%s: cuDNN variant pack: %s", g->nodes[i].name, cudnnGetErrorString(cs));
    }
    return YQ_OK;
}


extern "C" yq_status yq_cudnn_plan_new(const yq_graph *g, int batch, const yq_cudnn_opt *o, yq_cudnn_plan **out,
                                       yq_error *err)
{
    yq_cudnn_opt dflt = yq_cudnn_defaults(YQ_CUDNN_FP32);
    if (!o) o = &dflt;
    const int exact = (o->flags & YQ_PLAN_EXACT) != 0;
    if (exact && (o->precision != YQ_CUDNN_FP32 || o->layout == YQ_CUDNN_NHWC))
        return yq_fail(err, YQ_ERR_INVALID_ARG, "an exact FP32 plan is FP32 NCHW");
    if (batch < 1) return yq_fail(err, YQ_ERR_INVALID_ARG, "batch %d must be >= 1", batch);
    int n = g->n_nodes;
    if (n < 1) return yq_fail(err, YQ_ERR_INVALID_ARG, "empty graph");
    for (int i = 1; i < n; i++) {
        const yq_node *nd = &g->nodes[i];
        if (nd->op == YQ_OP_INPUT || nd->op >= YQ_OP_COUNT)
            return yq_fail(err, YQ_ERR_UNSUPPORTED, "layer %d: %s cannot be executed", nd->layer, yq_op_name(nd->op));
        if (nd->op == YQ_OP_CONV && (!nd->w || !nd->b))
            return yq_fail(err, YQ_ERR_INVALID_ARG, "%s (layer %d): no float weights (an int8 package runs on the int8 engine)",
                           nd->name, nd->layer);
    }
    yq_status st = yq_cuda_set_device(o->device, err);
    if (st) return st;
    size_t limit = o->workspace_limit ? o->workspace_limit : (size_t)256 << 20;
    int use_graph = !exact && !o->legacy;
    int use_fuse = o->fuse;
    yq_cudnn_plan *p = (yq_cudnn_plan *)calloc(1, sizeof *p);
    yq_buf *items = (yq_buf *)calloc((size_t)n, sizeof *items);
    unsigned char *host = NULL;
    if (!p || !items) goto nomem;
    p->g = g;
    p->batch = batch;
    p->flags = o->flags;
    p->device = o->device;
    p->prec = o->precision;
    p->nhwc = o->layout == YQ_CUDNN_NHWC || (o->layout == YQ_CUDNN_LAYOUT_AUTO && o->precision == YQ_CUDNN_FP16);
    p->es = p->prec == YQ_CUDNN_FP16 ? 2 : 4;
    snprintf(p->desc, sizeof p->desc, "%s %s%s", p->prec == YQ_CUDNN_FP16 ? "FP16" : "FP32", p->nhwc ? "NHWC" : "NCHW",
             exact ? ", exact convs" : "");
    p->owner = (int *)malloc((size_t)n * sizeof *p->owner);
    p->last_use = (int *)malloc((size_t)n * sizeof *p->last_use);
    p->off = (size_t *)calloc((size_t)n, sizeof *p->off);
    p->cv = (conv_plan *)calloc((size_t)n, sizeof *p->cv);
    if (!p->owner || !p->last_use || !p->off || !p->cv) goto nomem;
    if (cudaStreamCreateWithFlags(&p->s, cudaStreamNonBlocking) != cudaSuccess) {
        st = yq_fail(err, YQ_ERR_CUDA, "cudaStreamCreate: %s", cudaGetErrorString(cudaGetLastError()));
        goto fail;
    }
    {
        cudnnStatus_t cs = cudnnCreate(&p->h);
        if (cs != CUDNN_STATUS_SUCCESS) {
            p->h = NULL;
            st = yq_fail(err, YQ_ERR_CUDA, "cudnnCreate: %s", cudnnGetErrorString(cs));
            goto fail;
        }
        if ((cs = cudnnSetStream(p->h, p->s)) != CUDNN_STATUS_SUCCESS) {
            st = yq_fail(err, YQ_ERR_CUDA, "cudnnSetStream: %s", cudnnGetErrorString(cs));
            goto fail;
        }
    }

    /* Liveness (ir/pack.h, as every planner): aliases share their source's buffer. */
    for (int i = 0; i < n; i++) p->owner[i] = i > 0 && is_alias(g, i) ? p->owner[g->nodes[i].src[0]] : i;
    yq_buffer_lifetimes(g, p->owner, p->flags, p->last_use);
    {
        int m = 0;
        for (int i = 0; i < n; i++)
            if (p->owner[i] == i) items[m++] = (yq_buf){ i, up((size_t)yq_shape_size(g->nodes[i].out) * batch * p->es) };
        size_t total = yq_pack_buffers(items, m, p->last_use, p->off);
        p->arena_bytes = total;
    }

    /* Convs: descriptors, algorithm, the parameter layout. */
    {
        size_t params = 0;
        for (int i = 1; i < n; i++) {
            const yq_node *nd = &g->nodes[i];
            if (nd->op != YQ_OP_CONV) continue;
            conv_plan *c = &p->cv[i];
            c->share = -1;
            if (exact) {                 /* weights uploaded by the conv itself */
                if ((st = yq_cuda_conv_new(g, nd, NULL, &c->ex, err))) goto fail;
                continue;
            }
            if ((st = conv_describe(p, i, err)) || (st = conv_choose(p, i, limit, o->heuristic, err))) goto fail;
            /* cuDNN fuses bias + relu for any algorithm, bias + identity only with IMPLICIT_PRECOMP_GEMM. */
            c->fused = nd->act == YQ_ACT_RELU ||
                       (nd->act == YQ_ACT_LINEAR && c->algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
            if (c->fused) {
                cudnnStatus_t cs = cudnnSetActivationDescriptor(
                    c->act, nd->act == YQ_ACT_RELU ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                    CUDNN_NOT_PROPAGATE_NAN, 0.0);
                if (cs != CUDNN_STATUS_SUCCESS) {
                    st = yq_fail(err, YQ_ERR_CUDA, "cudnnSetActivationDescriptor: %s", cudnnGetErrorString(cs));
                    goto fail;
                }
            }
            if (c->ws > p->ws_bytes) p->ws_bytes = c->ws;
            /* graph API candidates; an equal conv (same problem and activation) shares its plan */
            c->share = -1;
            if (use_graph) {
                for (int j = 1; j < i && c->share < 0; j++)
                    if (g->nodes[j].op == YQ_OP_CONV && g->nodes[j].act == nd->act && same_conv(g, j, i) &&
                        p->cv[j].share < 0)
                        c->share = j;
                if (c->share < 0) {
                    int fuse = use_fuse && (nd->act == YQ_ACT_LINEAR || nd->act == YQ_ACT_LEAKY || nd->act == YQ_ACT_RELU);
                    if (graph_candidates(p, i, fuse, limit) != CUDNN_STATUS_SUCCESS && fuse) {
                        for (int k = 0; k < c->n_cand; k++) cudnnBackendDestroyDescriptor(c->cand[k]);
                        c->n_cand = 0;
                        graph_candidates(p, i, 0, limit);
                    }
                    for (int k = 0; k < c->n_cand; k++)
                        if ((size_t)c->cand_ws[k] > p->ws_bytes) p->ws_bytes = (size_t)c->cand_ws[k];
                }
            }
            c->w_off = params;
            params += up((size_t)nd->n_w * p->es);
            c->bt_off = params;
            params += up((size_t)nd->p.conv.filters * p->es);
            c->bf_off = params;
            params += up((size_t)nd->p.conv.filters * sizeof(float));
        }
        p->params_bytes = params;
    }
    p->arena_off = p->params_bytes;
    p->in_off = p->arena_off + up(p->arena_bytes);
    p->ws_off = p->in_off + up((size_t)yq_shape_size(g->nodes[0].out) * batch * sizeof(float));
    p->mem_bytes = p->ws_off + up(p->ws_bytes ? p->ws_bytes : 1);
    {
        cudaError_t e = cudaMalloc((void **)&p->mem, p->mem_bytes);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            p->mem = NULL;
            st = yq_fail(err, e == cudaErrorMemoryAllocation ? YQ_ERR_NOMEM : YQ_ERR_CUDA,
                         "cudaMalloc(%zu bytes) for the cuDNN plan: %s", p->mem_bytes, cudaGetErrorString(e));
            goto fail;
        }
    }
    /* Parameters: packed on the host, one upload. */
    if (p->params_bytes) {
        host = (unsigned char *)calloc(p->params_bytes, 1);
        if (!host) goto nomem;
        for (int i = 1; i < n; i++) {
            const yq_node *nd = &g->nodes[i];
            if (nd->op != YQ_OP_CONV || p->cv[i].ex) continue;
            conv_plan *c = &p->cv[i];
            pack_weights(p, nd, yq_node_in_shape(g, nd).c / nd->p.conv.groups, host + c->w_off);
            for (int f = 0; f < nd->p.conv.filters; f++) {
                ((float *)(host + c->bf_off))[f] = nd->b[f];
                if (p->es == 2) ((__half *)(host + c->bt_off))[f] = __float2half_rn(nd->b[f]);
                else ((float *)(host + c->bt_off))[f] = nd->b[f];
            }
        }
        cudaError_t e = cudaMemcpy(p->mem, host, p->params_bytes, cudaMemcpyHostToDevice);
        free(host);
        host = NULL;
        if (e != cudaSuccess) {
            st = yq_fail(err, YQ_ERR_CUDA, "uploading the cuDNN plan's weights: %s", cudaGetErrorString(e));
            goto fail;
        }
    }
    /* Each fused conv once on the plan's buffers: a configuration cuDNN's fused call
     * refuses (it supports fewer than plain convolution) runs unfused instead. */
    {
        const float one = 1.f, zero = 0.f;
        cudaMemsetAsync(p->mem + p->arena_off, 0x3c, p->arena_bytes, p->s);
        for (int i = 1; i < n; i++) {
            conv_plan *c = &p->cv[i];
            if (g->nodes[i].op != YQ_OP_CONV || !c->fused || c->ex) continue;
            cudnnStatus_t cs = cudnnConvolutionBiasActivationForward(
                p->h, &one, c->x, nbuf(p, g->nodes[i].src[0]), c->w, p->mem + c->w_off, c->conv, c->algo,
                p->ws_bytes ? p->mem + p->ws_off : NULL, p->ws_bytes, &zero, c->y, nbuf(p, i), c->bias,
                p->mem + c->bt_off, c->act, c->y, nbuf(p, i));
            if (cs != CUDNN_STATUS_SUCCESS) c->fused = 0;
        }
        cudaError_t e = cudaStreamSynchronize(p->s);
        if (e == cudaSuccess) e = cudaGetLastError();
        if (e != cudaSuccess) {
            st = yq_fail(err, YQ_ERR_CUDA, "cuDNN plan: trying the fused convs: %s", cudaGetErrorString(e));
            goto fail;
        }
    }
    if (use_graph && (st = choose_graphs(p, err))) goto fail;
    if (use_graph) {
        int nc = 0, ng = 0;
        for (int i = 1; i < n; i++)
            if (g->nodes[i].op == YQ_OP_CONV) {
                nc++;
                ng += p->cv[i].graph;
            }
        snprintf(p->desc, sizeof p->desc, "%s %s, graph API %d/%d convs%s", p->prec == YQ_CUDNN_FP16 ? "FP16" : "FP32",
                 p->nhwc ? "NHWC" : "NCHW", ng, nc, use_fuse ? " (fused)" : "");
    }
    free(items);
    *out = p;
    return YQ_OK;
nomem:
    st = yq_fail(err, YQ_ERR_NOMEM, "out of memory planning %d nodes at batch %d", n, batch);
fail:
    free(host);
    free(items);
    yq_cudnn_plan_free(p);
    return st;
}

extern "C" size_t yq_cudnn_plan_bytes(const yq_cudnn_plan *p) { return p->mem_bytes; }
extern "C" size_t yq_cudnn_arena_bytes(const yq_cudnn_plan *p) { return p->arena_bytes; }
extern "C" const char *yq_cudnn_plan_desc(const yq_cudnn_plan *p) { return p->desc; }
extern "C" void *yq_cudnn_stream(const yq_cudnn_plan *p) { return p->s; }
extern "C" void yq_cudnn_set_hook(yq_cudnn_plan *p, yq_gpu_node_fn fn, void *ctx)
{
    p->hook = fn;
    p->hook_ctx = ctx;
}

extern "C" const void *yq_cudnn_node_data(const yq_cudnn_plan *p, int id)
{
    return id >= 0 && id < p->g->n_nodes ? nbuf(p, id) : NULL;
}

extern "C" void yq_cudnn_node_desc(const yq_cudnn_plan *p, int id, char *buf, size_t cap)
{
    if (!cap) return;
    buf[0] = 0;
    if (id < 0 || id >= p->g->n_nodes || p->g->nodes[id].op != YQ_OP_CONV) return;
    const conv_plan *c = &p->cv[id];
    if (c->ex) {
        yq_conv_cfg_name(yq_cuda_conv_default_cfg(c->ex, p->batch), buf, cap);
        return;
    }
    if (c->graph)
        snprintf(buf, cap, "graph eng %lld%s", (long long)c->geng, c->gfused ? " fused" : "");
    else
        snprintf(buf, cap, "%s%s%s", algo_name(c->algo),
                 c->math == CUDNN_TENSOR_OP_MATH || c->math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION ? " tc" : "",
                 c->fused ? " fused" : "");
}

extern "C" yq_status yq_cudnn_upload(yq_cudnn_plan *p, const float *host, yq_error *err)
{
    size_t bytes = (size_t)yq_shape_size(p->g->nodes[0].out) * p->batch * sizeof(float);
    YQ_CUDA_TRY(cudaSetDevice(p->device));
    YQ_CUDA_TRY(cudaMemcpyAsync(p->mem + p->in_off, host, bytes, cudaMemcpyHostToDevice, p->s));
    YQ_CUDA_TRY(cudaStreamSynchronize(p->s));
    return YQ_OK;
}

template <typename T, bool NHWC>
static yq_status run_nodes(yq_cudnn_plan *p, yq_error *err)
{
    const yq_graph *g = p->g;
    int B = p->batch;
    cudaStream_t s = p->s;
    const int VV = 16 / (int)sizeof(T);
    yq_shape is = g->nodes[0].out;
    {
        long nn = yq_shape_size(is) * B;
        k_input<T, NHWC><<<yq_blocks(nn, NT), NT, 0, s>>>((const float *)(p->mem + p->in_off), (T *)nbuf(p, 0),
                                                          is.c, is.h, is.w, nn);
        YQ_CUDA_LAUNCHED();
    }
    if (p->hook) p->hook(p->hook_ctx, 0, s);
    for (int i = 1; i < g->n_nodes; i++) {
        const yq_node *nd = &g->nodes[i];
        yq_shape os = nd->out;
        long nout = yq_shape_size(os) * B;
        T *y = (T *)nbuf(p, i);
        const T *x = (const T *)nbuf(p, nd->src[0]);
        switch (nd->op) {
        case YQ_OP_CONV: {
            conv_plan *c = &p->cv[i];
            yq_status st;
            if (c->ex) {
                yq_shape xs = yq_node_in_shape(g, nd);
                yq_dtensor in = { (void *)x, YQ_F32, xs.c, xs.h, xs.w, 1.f, 0, 0, 0 };
                yq_dtensor out = { y, YQ_F32, os.c, os.h, os.w, 1.f, 0, 0, 0 };
                st = yq_cuda_conv_run(c->ex, &in, &out, B, s, err);
            } else {
                st = c->graph ? conv_graph(p, i, c->gplan, c->gpack, c->gfused, err) : conv_legacy(p, i, err);
            }
            if (st) return st;
            break;
        }
        case YQ_OP_SHORTCUT: {
            const T *b = (const T *)nbuf(p, nd->src[1]);
            const bool ex = (p->flags & YQ_PLAN_EXACT) != 0;
            if (nout % VV == 0 && ex)
                k_shortcut<T, 16 / sizeof(T), true><<<yq_blocks(nout / VV, NT), NT, 0, s>>>(x, b, y, nout / VV, nd->act);
            else if (nout % VV == 0)
                k_shortcut<T, 16 / sizeof(T), false><<<yq_blocks(nout / VV, NT), NT, 0, s>>>(x, b, y, nout / VV, nd->act);
            else if (ex)
                k_shortcut<T, 1, true><<<yq_blocks(nout, NT), NT, 0, s>>>(x, b, y, nout, nd->act);
            else
                k_shortcut<T, 1, false><<<yq_blocks(nout, NT), NT, 0, s>>>(x, b, y, nout, nd->act);
            YQ_CUDA_LAUNCHED();
            break;
        }
        case YQ_OP_ROUTE: {
            int c_off = 0, gid = nd->p.route.group_id;
            long hw = (long)os.h * os.w;
            for (int k = 0; k < nd->n_src; k++) {
                yq_shape ss = g->nodes[nd->src[k]].out;
                int part = ss.c / nd->p.route.groups;
                const unsigned char *src = (const unsigned char *)nbuf(p, nd->src[k]);
                unsigned char *dst = (unsigned char *)y;
                size_t es = sizeof(T);
                if (NHWC)   /* rows: pixels; each copies its channel slice */
                    YQ_CUDA_TRY(cudaMemcpy2DAsync(dst + (size_t)c_off * es, (size_t)os.c * es,
                                                  src + (size_t)gid * part * es, (size_t)ss.c * es, (size_t)part * es,
                                                  (size_t)B * hw, cudaMemcpyDeviceToDevice, s));
                else        /* rows: images; each copies `part` planes */
                    YQ_CUDA_TRY(cudaMemcpy2DAsync(dst + (size_t)c_off * hw * es, (size_t)os.c * hw * es,
                                                  src + (size_t)gid * part * hw * es, (size_t)ss.c * hw * es,
                                                  (size_t)part * hw * es, (size_t)B, cudaMemcpyDeviceToDevice, s));
                c_off += part;
            }
            break;
        }
        case YQ_OP_UPSAMPLE: {
            int st_ = nd->p.up.stride;
            if (NHWC && os.c % VV == 0)
                k_upsample<T, NHWC, 16 / sizeof(T)><<<yq_blocks(nout / VV, NT), NT, 0, s>>>(x, y, os.c, os.h, os.w, st_, nout / VV);
            else
                k_upsample<T, NHWC, 1><<<yq_blocks(nout, NT), NT, 0, s>>>(x, y, os.c, os.h, os.w, st_, nout);
            YQ_CUDA_LAUNCHED();
            break;
        }
        case YQ_OP_MAXPOOL: {
            yq_shape in = yq_node_in_shape(g, nd);
            const yq_pool_p *pp = &nd->p.pool;
            if (NHWC && os.c % VV == 0)
                k_maxpool<T, NHWC, 16 / sizeof(T)><<<yq_blocks(nout / VV, NT), NT, 0, s>>>(
                    x, y, os.c, in.h, in.w, os.h, os.w, pp->size, pp->stride, pp->pad, nout / VV);
            else
                k_maxpool<T, NHWC, 1><<<yq_blocks(nout, NT), NT, 0, s>>>(x, y, os.c, in.h, in.w, os.h, os.w, pp->size,
                                                                       pp->stride, pp->pad, nout);
            YQ_CUDA_LAUNCHED();
            break;
        }
        case YQ_OP_DROPOUT: case YQ_OP_YOLO: case YQ_OP_REGION: case YQ_OP_DETECT:
            break;   /* aliases */
        case YQ_OP_INPUT: case YQ_OP_COUNT:
            return yq_fail(err, YQ_ERR_UNSUPPORTED, "layer %d: %s cannot be executed", nd->layer, yq_op_name(nd->op));
        }
        if (p->hook) p->hook(p->hook_ctx, i, s);
    }
    return YQ_OK;
}

extern "C" yq_status yq_cudnn_enqueue(yq_cudnn_plan *p, yq_error *err)
{
    yq_status st;
    if (p->prec == YQ_CUDNN_FP16) st = p->nhwc ? run_nodes<__half, true>(p, err) : run_nodes<__half, false>(p, err);
    else st = p->nhwc ? run_nodes<float, true>(p, err) : run_nodes<float, false>(p, err);
    return st;
}

extern "C" yq_status yq_cudnn_run(yq_cudnn_plan *p, const float *host, yq_error *err)
{
    yq_status st = yq_cudnn_upload(p, host, err);
    if (!st) st = yq_cudnn_enqueue(p, err);
    if (st) return st;
    YQ_CUDA_TRY(cudaStreamSynchronize(p->s));
    YQ_CUDA_TRY(cudaGetLastError());
    return YQ_OK;
}

extern "C" yq_status yq_cudnn_download(const yq_cudnn_plan *p, int id, float *host, yq_error *err)
{
    const yq_graph *g = p->g;
    if (id < 0 || id >= g->n_nodes) return yq_fail(err, YQ_ERR_INVALID_ARG, "node %d out of range", id);
    if (p->last_use[p->owner[id]] != g->n_nodes)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "node %d (%s): its memory was reused (plan with YQ_PLAN_KEEP_ALL)", id,
                       g->nodes[id].name);
    yq_shape s = g->nodes[id].out;
    long nn = yq_shape_size(s) * p->batch;
    float *d = NULL;
    YQ_CUDA_TRY(cudaSetDevice(p->device));
    YQ_CUDA_TRY(cudaStreamSynchronize(p->s));
    YQ_CUDA_TRY(cudaMalloc((void **)&d, sizeof(float) * (size_t)(nn ? nn : 1)));
    const void *src = nbuf(p, id);
    if (p->es == 2) {
        if (p->nhwc) k_to_nchw<__half, true><<<yq_blocks(nn, NT), NT, 0, p->s>>>((const __half *)src, d, s.c, s.h, s.w, nn);
        else k_to_nchw<__half, false><<<yq_blocks(nn, NT), NT, 0, p->s>>>((const __half *)src, d, s.c, s.h, s.w, nn);
    } else {
        if (p->nhwc) k_to_nchw<float, true><<<yq_blocks(nn, NT), NT, 0, p->s>>>((const float *)src, d, s.c, s.h, s.w, nn);
        else k_to_nchw<float, false><<<yq_blocks(nn, NT), NT, 0, p->s>>>((const float *)src, d, s.c, s.h, s.w, nn);
    }
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaMemcpyAsync(host, d, sizeof(float) * (size_t)nn, cudaMemcpyDeviceToHost, p->s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(p->s);
    cudaFree(d);
    if (e != cudaSuccess) return yq_fail(err, YQ_ERR_CUDA, "download of node %d: %s", id, cudaGetErrorString(e));
    return YQ_OK;
}

#endif   /* YQ_HAVE_CUDNN */
