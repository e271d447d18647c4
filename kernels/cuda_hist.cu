/* Calibration statistics on the GPU (kernels/cuda_hist.h).
 *
 * One add is four launches on the tensor's stream:
 *   k_parts      one warp per chunk of CHUNK values of one (image, channel) plane: the
 *                chunk's sum (double: lane l adds values l, l + 32, ... in order, then
 *                the lanes fold as a tree; calib/observe.h yq_calib_plane_sum is the
 *                CPU's copy of this order), max |x|, finite min/max, NaN and Inf counts;
 *   k_fold_ch    one thread per channel: the plane sums (chunks in order) over the plane
 *                size, added image by image to the channel's mean sum, and max |x|;
 *   k_fold_node  one block: the batch's finite min/max and NaN/Inf counts, then the new
 *                range (the smallest power of two above max |x|) and, when it grew by
 *                2^m, the accumulated bins merged k -> k >> m, as hist.c's doubling does;
 *   k_hist       the values binned at that range: a block-private histogram in shared
 *                memory (32-bit counts), flushed into the 64-bit device counts.
 * Nothing reduces floats through atomics, so two runs give the same bytes.  The bin of
 * |x| is (long)(|x| * (nbins / range)) in double, as hist.c computes it: nbins / range is
 * a power of two, so the product is exact and binning at the final range equals the
 * CPU's binning followed by its doublings. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/cuda_common.cuh"
extern "C" {
#include "kernels/cuda_hist.h"
}

#define CHUNK YQ_HIST_CHUNK   /* values per partial (one warp) */
#define MAX_BINS 4096         /* the merge holds every bin in shared memory */
#define NT 256

typedef struct part {
    double sum;
    float amax, lo, hi;       /* max |x| (NaN ignored); finite min and max */
    unsigned nan, inf;
} part;

typedef struct hstate {
    double range, inv_w;      /* inv_w = nbins / range, 0 while range is 0 */
    unsigned long long n, nan, inf;
    float lo, hi;
    int has;                  /* n > 0: lo/hi are set */
    int pad_;
} hstate;

struct yq_cuda_hist {
    int n, nbins, sms;
    cudaStream_t s;
    long *ch_off;             /* per tensor: offset of its channels in ch_mean / ch_max */
    int *ch;
    unsigned char *dev;       /* counts | states | ch_mean | ch_max: the one download */
    size_t bytes, off_state, off_mean, off_max;
    unsigned char *host;      /* bytes, after download */
    part *parts;
    long max_parts;
    int downloaded;
};

static size_t up16(size_t n) { return (n + 15) & ~(size_t)15; }

/* ---- kernels ------------------------------------------------------------------ */

__device__ __forceinline__ void part_merge(part &a, const part &b)
{
    a.sum += b.sum;
    a.amax = fmaxf(a.amax, b.amax);
    a.lo = fminf(a.lo, b.lo);
    a.hi = fmaxf(a.hi, b.hi);
    a.nan += b.nan;
    a.inf += b.inf;
}

__global__ void k_parts(const float *__restrict__ x, long hw, int chunks, long nparts, part *__restrict__ out)
{
    long w = ((long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (w >= nparts) return;
    long plane = w / chunks;
    long i0 = (w % chunks) * (long)CHUNK, i1 = i0 + CHUNK < hw ? i0 + CHUNK : hw;
    const float *p = x + plane * hw;
    part a = { 0.0, 0.f, INFINITY, -INFINITY, 0u, 0u };
    for (long i = i0 + lane; i < i1; i += 32) {
        float v = p[i];
        a.sum += (double)v;
        a.amax = fmaxf(a.amax, fabsf(v));
        if (isfinite(v)) {
            a.lo = fminf(a.lo, v);
            a.hi = fmaxf(a.hi, v);
        } else if (isnan(v)) {
            a.nan++;
        } else {
            a.inf++;
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        part b;
        b.sum = __shfl_down_sync(0xffffffffu, a.sum, o);
        b.amax = __shfl_down_sync(0xffffffffu, a.amax, o);
        b.lo = __shfl_down_sync(0xffffffffu, a.lo, o);
        b.hi = __shfl_down_sync(0xffffffffu, a.hi, o);
        b.nan = __shfl_down_sync(0xffffffffu, a.nan, o);
        b.inf = __shfl_down_sync(0xffffffffu, a.inf, o);
        part_merge(a, b);
    }
    if (lane == 0) out[w] = a;
}

/* Channel c: image by image, the plane's sum over hw added to mean_sum (calib/observe.c
 * adds s / plane per image), and max |x|. */
__global__ void k_fold_ch(const part *__restrict__ parts, int batch, int C, int chunks, long hw, double *mean_sum,
                          float *chmax)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    double acc = mean_sum[c];
    float m = chmax[c];
    for (int b = 0; b < batch; b++) {
        const part *p = parts + ((long)b * C + c) * chunks;
        double s = 0;
        for (int k = 0; k < chunks; k++) {
            s += p[k].sum;
            m = fmaxf(m, p[k].amax);
        }
        acc += s / (double)hw;
    }
    mean_sum[c] = acc;
    chmax[c] = m;
}

__global__ void __launch_bounds__(1024) k_fold_node(const part *__restrict__ parts, long nparts, long total,
                                                    hstate *st, unsigned long long *counts, int nbins)
{
    __shared__ unsigned long long sc[MAX_BINS];
    __shared__ float wlo[32], whi[32];
    __shared__ unsigned long long wnan[32], winf[32];
    __shared__ int s_m;
    int tid = threadIdx.x, lane = tid & 31, wid = tid >> 5;
    float lo = INFINITY, hi = -INFINITY;
    unsigned long long nn = 0, ni = 0;
    for (long i = tid; i < nparts; i += blockDim.x) {
        lo = fminf(lo, parts[i].lo);
        hi = fmaxf(hi, parts[i].hi);
        nn += parts[i].nan;
        ni += parts[i].inf;
    }
    for (int o = 16; o > 0; o >>= 1) {
        lo = fminf(lo, __shfl_down_sync(0xffffffffu, lo, o));
        hi = fmaxf(hi, __shfl_down_sync(0xffffffffu, hi, o));
        nn += __shfl_down_sync(0xffffffffu, nn, o);
        ni += __shfl_down_sync(0xffffffffu, ni, o);
    }
    if (lane == 0) {
        wlo[wid] = lo;
        whi[wid] = hi;
        wnan[wid] = nn;
        winf[wid] = ni;
    }
    __syncthreads();
    if (tid == 0) {
        int nw = (blockDim.x + 31) >> 5;
        for (int k = 1; k < nw; k++) {
            lo = fminf(lo, wlo[k]);
            hi = fmaxf(hi, whi[k]);
            nn += wnan[k];
            ni += winf[k];
        }
        unsigned long long fin = (unsigned long long)total - nn - ni;
        hstate s = *st;
        s.nan += nn;
        s.inf += ni;
        int m = 0;
        if (fin > 0) {
            if (!s.has) {
                s.lo = lo;
                s.hi = hi;
                s.has = 1;
            } else {
                s.lo = fminf(s.lo, lo);
                s.hi = fmaxf(s.hi, hi);
            }
            s.n += fin;
            double a = (double)fmaxf(fabsf(lo), fabsf(hi));
            if (a > 0 && !(a < s.range)) {      /* hist.c's hist_grow */
                int e, eo;
                frexp(a, &e);                    /* 2^(e-1) <= a < 2^e */
                double r = ldexp(1.0, e);
                if (s.range > 0) {
                    frexp(s.range, &eo);         /* range = 2^(eo-1) exactly */
                    m = e - (eo - 1);            /* r / range = 2^m, m >= 1 since range <= a < r */
                    if (m > 30) m = 30;          /* nbins <= 2^12: everything in bin 0 */
                }
                s.range = r;
                s.inv_w = (double)nbins / r;
            }
        }
        *st = s;
        s_m = m;
    }
    __syncthreads();
    int m = s_m;
    if (m <= 0) return;
    for (int j = tid; j < nbins; j += blockDim.x) sc[j] = counts[j];
    __syncthreads();
    for (int j = tid; j < nbins; j += blockDim.x) {
        unsigned long long v = 0;
        long k0 = (long)j << m;
        if (k0 < nbins) {
            long k1 = k0 + (1L << m) < nbins ? k0 + (1L << m) : nbins;
            for (long k = k0; k < k1; k++) v += sc[k];
        }
        counts[j] = v;
    }
}

__device__ __forceinline__ void bin1(unsigned *sh, float v, double inv, int last)
{
    if (!isfinite(v)) return;
    long b = (long)(fabs((double)v) * inv);
    atomicAdd(&sh[b > last ? last : b], 1u);
}

template <bool VEC>
__global__ void k_hist(const float *__restrict__ x, long n, const hstate *st, unsigned long long *counts, int nbins)
{
    extern __shared__ unsigned sh[];
    for (int j = threadIdx.x; j < nbins; j += blockDim.x) sh[j] = 0;
    __syncthreads();
    const double inv = st->inv_w;
    const int last = nbins - 1;
    long stride = (long)gridDim.x * blockDim.x, t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    long done = 0;
    if (VEC) {
        long n4 = n >> 2;
        const float4 *x4 = (const float4 *)x;
        for (long i = t; i < n4; i += stride) {
            float4 v = x4[i];
            bin1(sh, v.x, inv, last);
            bin1(sh, v.y, inv, last);
            bin1(sh, v.z, inv, last);
            bin1(sh, v.w, inv, last);
        }
        done = n4 << 2;
    }
    for (long i = done + t; i < n; i += stride) bin1(sh, x[i], inv, last);
    __syncthreads();
    for (int j = threadIdx.x; j < nbins; j += blockDim.x)
        if (sh[j]) atomicAdd(&counts[j], (unsigned long long)sh[j]);
}

/* ---- host --------------------------------------------------------------------- */

extern "C" yq_status yq_cuda_hist_new(int n, const int *channels, int nbins, void *stream, yq_cuda_hist **out,
                                      yq_error *err)
{
    *out = NULL;
    if (n < 1 || !channels) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_cuda_hist_new: %d tensors", n);
    if (nbins < 2 || nbins > MAX_BINS || (nbins & (nbins - 1)))
        return yq_fail(err, YQ_ERR_INVALID_ARG, "GPU histogram: %d bins (a power of two in [2, %d])", nbins, MAX_BINS);
    yq_cuda_hist *h = (yq_cuda_hist *)calloc(1, sizeof *h);
    if (!h) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    h->n = n;
    h->nbins = nbins;
    h->s = YQ_STREAM(stream);
    h->ch = (int *)malloc(sizeof *h->ch * (size_t)n);
    h->ch_off = (long *)malloc(sizeof *h->ch_off * (size_t)n);
    if (!h->ch || !h->ch_off) {
        yq_cuda_hist_free(h);
        return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    }
    long sum = 0;
    for (int i = 0; i < n; i++) {
        if (channels[i] < 0) {
            yq_cuda_hist_free(h);
            return yq_fail(err, YQ_ERR_INVALID_ARG, "GPU histogram: tensor %d has %d channels", i, channels[i]);
        }
        h->ch[i] = channels[i];
        h->ch_off[i] = sum;
        sum += channels[i];
    }
    h->off_state = up16(sizeof(unsigned long long) * (size_t)n * nbins);
    h->off_mean = h->off_state + up16(sizeof(hstate) * (size_t)n);
    h->off_max = h->off_mean + up16(sizeof(double) * (size_t)sum);
    h->bytes = h->off_max + up16(sizeof(float) * (size_t)sum);
    h->host = (unsigned char *)malloc(h->bytes);
    if (!h->host) {
        yq_cuda_hist_free(h);
        return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    }
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&h->sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess) e = cudaMalloc((void **)&h->dev, h->bytes);
    if (e == cudaSuccess) e = cudaMemsetAsync(h->dev, 0, h->bytes, h->s);   /* zero counts, states, sums */
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        size_t bytes = h->bytes;
        yq_cuda_hist_free(h);
        return yq_fail(err, e == cudaErrorMemoryAllocation ? YQ_ERR_NOMEM : YQ_ERR_CUDA,
                       "GPU histogram (%zu bytes of device memory): %s", bytes, cudaGetErrorString(e));
    }
    *out = h;
    return YQ_OK;
}

extern "C" void yq_cuda_hist_free(yq_cuda_hist *h)
{
    if (!h) return;
    if (h->dev) cudaFree(h->dev);
    if (h->parts) cudaFree(h->parts);
    free(h->host);
    free(h->ch);
    free(h->ch_off);
    free(h);
}

static long n_chunks(long hw) { return (hw + CHUNK - 1) / CHUNK; }

extern "C" yq_status yq_cuda_hist_reserve(yq_cuda_hist *h, int batch, int c, long hw, yq_error *err)
{
    if (batch < 1 || c < 1 || hw < 1)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "GPU histogram: reserve %d x %d x %ld", batch, c, hw);
    long need = (long)batch * c * n_chunks(hw);
    if (need <= h->max_parts) return YQ_OK;
    part *p = NULL;
    /* the stream may still use the old scratch */
    YQ_CUDA_TRY(cudaStreamSynchronize(h->s));
    cudaError_t e = cudaMalloc((void **)&p, sizeof(part) * (size_t)need);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return yq_fail(err, e == cudaErrorMemoryAllocation ? YQ_ERR_NOMEM : YQ_ERR_CUDA,
                       "GPU histogram scratch (%ld partials): %s", need, cudaGetErrorString(e));
    }
    if (h->parts) cudaFree(h->parts);
    h->parts = p;
    h->max_parts = need;
    return YQ_OK;
}

extern "C" yq_status yq_cuda_hist_add(yq_cuda_hist *h, int id, const float *x, int batch, int c, long hw,
                                      yq_error *err)
{
    if (id < 0 || id >= h->n) return yq_fail(err, YQ_ERR_INVALID_ARG, "GPU histogram: tensor %d of %d", id, h->n);
    if (c != h->ch[id])
        return yq_fail(err, YQ_ERR_INVALID_ARG, "GPU histogram: tensor %d has %d channels, %d given", id, h->ch[id], c);
    if (batch < 1 || hw < 1) return yq_fail(err, YQ_ERR_INVALID_ARG, "GPU histogram: add %d x %d x %ld", batch, c, hw);
    long chunks = n_chunks(hw), np = (long)batch * c * chunks;
    if (np > h->max_parts)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "GPU histogram: %d x %d x %ld was not reserved", batch, c, hw);
    h->downloaded = 0;
    unsigned long long *counts = (unsigned long long *)h->dev + (size_t)id * h->nbins;
    hstate *st = (hstate *)(h->dev + h->off_state) + id;
    double *mean = (double *)(h->dev + h->off_mean) + h->ch_off[id];
    float *mx = (float *)(h->dev + h->off_max) + h->ch_off[id];
    long total = (long)batch * c * hw;

    k_parts<<<yq_blocks(np * 32, NT), NT, 0, h->s>>>(x, hw, (int)chunks, np, h->parts);
    YQ_CUDA_LAUNCHED();
    k_fold_ch<<<yq_blocks(c, 128), 128, 0, h->s>>>(h->parts, batch, c, (int)chunks, hw, mean, mx);
    YQ_CUDA_LAUNCHED();
    k_fold_node<<<1, 1024, 0, h->s>>>(h->parts, np, total, st, counts, h->nbins);
    YQ_CUDA_LAUNCHED();
    long blocks = (total + NT * 16L - 1) / (NT * 16L);
    long cap = 8L * (h->sms > 0 ? h->sms : 1);
    if (blocks > cap) blocks = cap;
    if (blocks < 1) blocks = 1;
    size_t shm = sizeof(unsigned) * (size_t)h->nbins;
    /* 32-bit block counts: a block sees at most total / blocks values */
    if (total / blocks >= 0xffffffffL) blocks = total / 0xfffffffeL + 1;
    if (((uintptr_t)x & 15) == 0)
        k_hist<true><<<(unsigned)blocks, NT, shm, h->s>>>(x, total, st, counts, h->nbins);
    else
        k_hist<false><<<(unsigned)blocks, NT, shm, h->s>>>(x, total, st, counts, h->nbins);
    YQ_CUDA_LAUNCHED();
    return YQ_OK;
}

extern "C" yq_status yq_cuda_hist_download(yq_cuda_hist *h, yq_error *err)
{
    YQ_CUDA_TRY(cudaMemcpyAsync(h->host, h->dev, h->bytes, cudaMemcpyDeviceToHost, h->s));
    YQ_CUDA_TRY(cudaStreamSynchronize(h->s));
    YQ_CUDA_TRY(cudaGetLastError());
    h->downloaded = 1;
    return YQ_OK;
}

extern "C" const uint64_t *yq_cuda_hist_counts(const yq_cuda_hist *h, int id)
{
    return (const uint64_t *)h->host + (size_t)id * h->nbins;
}

extern "C" void yq_cuda_hist_summary(const yq_cuda_hist *h, int id, yq_cuda_hist_sum *s)
{
    hstate st;
    memcpy(&st, h->host + h->off_state + sizeof(hstate) * (size_t)id, sizeof st);
    s->range = st.range;
    s->n = (double)st.n;
    s->n_nan = (double)st.nan;
    s->n_inf = (double)st.inf;
    s->min = st.has ? st.lo : 0.f;
    s->max = st.has ? st.hi : 0.f;
}

extern "C" const double *yq_cuda_hist_ch_mean_sum(const yq_cuda_hist *h, int id)
{
    return (const double *)(h->host + h->off_mean) + h->ch_off[id];
}

extern "C" const float *yq_cuda_hist_ch_max(const yq_cuda_hist *h, int id)
{
    return (const float *)(h->host + h->off_max) + h->ch_off[id];
}
