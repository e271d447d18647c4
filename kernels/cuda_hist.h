/* Calibration statistics on the GPU: the |x| histogram of calib/hist.h, min/max, and
 * per-channel means and max |x|, accumulated on the device across batches, with one
 * download at the end.  C interface (no CUDA types), as kernels/cuda.h.
 *
 *     int ch[n] = { channels of tensor 0, 1, ... };
 *     yq_cuda_hist *h;
 *     yq_cuda_hist_new(n, ch, 2048, stream, &h, &err);
 *     yq_cuda_hist_reserve(h, batch, c, hw, &err);        // once per shape, before any add
 *     yq_cuda_hist_add(h, id, d_x, batch, c, hw, &err);   // enqueued on stream; per batch
 *     yq_cuda_hist_download(h, &err);                      // waits, one copy to the host
 *     const uint64_t *counts = yq_cuda_hist_counts(h, id); // then the getters
 *     yq_cuda_hist_free(h);
 *
 * Tensors are float NCHW (batch x c x hw) in device memory.  The histogram follows
 * calib/hist.h's rule exactly: bins of width range / nbins over [0, range), range the
 * smallest power of two above the largest finite |x| seen so far (0 while every value
 * was zero), NaN and +-Inf counted apart and not binned.  calib/hist.c grows the range
 * by doubling and merging pairs of bins; that equals binning at the final range (the
 * bin index scales by an exact power of two), which is what happens here: each add
 * first reduces the batch (min, max, NaN/Inf counts, per-channel sums and max |x|),
 * then one block raises the range and merges the accumulated bins (k -> k >> m), then
 * the values are binned at that range.  Counts are integers, so for the same float
 * values the histogram, min, max, n, n_nan and n_inf equal yq_hist_add's bit for bit
 * (tests/test_calib_cuda.c checks it).  nbins must be a power of two in [2, 4096].
 *
 * Per channel: the sum over images of the channel's mean over the plane (summed in
 * double), and max |x| (NaN ignored), as calib/observe.c accumulates them, in the same
 * order (calib/observe.h yq_calib_plane_sum: chunks of YQ_HIST_CHUNK values, 32 lanes
 * each, folded as a tree), so for the same floats the means are equal bit for bit too.
 * Every add is deterministic: partial sums are reduced in a fixed order, no float
 * atomics.  All work is on the one stream given at creation. */
#ifndef YQ_KERNELS_CUDA_HIST_H
#define YQ_KERNELS_CUDA_HIST_H

#include <stdint.h>
#include "ir/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct yq_cuda_hist yq_cuda_hist;

#define YQ_HIST_CHUNK 2048    /* values per partial sum of a plane (calib/observe.h) */

/* A tensor's histogram summary after download (the fields of calib/hist.h's yq_hist). */
typedef struct yq_cuda_hist_sum {
    double range;             /* 0 until the first non-zero finite value */
    double n, n_nan, n_inf;   /* finite values (zeros included); ignored ones */
    float min, max;           /* over the finite values; 0 while n == 0 */
} yq_cuda_hist_sum;

/* n_tensors tensors, channels[i] channels each.  stream: a cudaStream_t (NULL: the
 * default stream) on the current device.  *out set only on YQ_OK. */
yq_status yq_cuda_hist_new(int n_tensors, const int *channels, int nbins, void *stream, yq_cuda_hist **out,
                           yq_error *err);
void      yq_cuda_hist_free(yq_cuda_hist *h);    /* NULL is a no-op */
/* Sizes the scratch for adds of up to batch x c x hw (allocation: call before the adds). */
yq_status yq_cuda_hist_reserve(yq_cuda_hist *h, int batch, int c, long hw, yq_error *err);
/* Enqueues the statistics of x (device, float NCHW, batch x c x hw; c == channels[id])
 * into tensor id.  x must stay unchanged until the stream reaches this work. */
yq_status yq_cuda_hist_add(yq_cuda_hist *h, int id, const float *x, int batch, int c, long hw, yq_error *err);
/* Waits for the stream and copies every tensor's statistics to the host. */
yq_status yq_cuda_hist_download(yq_cuda_hist *h, yq_error *err);

/* After yq_cuda_hist_download; borrowed, valid until the next download or free. */
const uint64_t *yq_cuda_hist_counts(const yq_cuda_hist *h, int id);     /* nbins */
void            yq_cuda_hist_summary(const yq_cuda_hist *h, int id, yq_cuda_hist_sum *s);
const double   *yq_cuda_hist_ch_mean_sum(const yq_cuda_hist *h, int id); /* channels[id]: sum of image means */
const float    *yq_cuda_hist_ch_max(const yq_cuda_hist *h, int id);      /* channels[id]: max |x| */

#ifdef __cplusplus
}
#endif
#endif
