/* Calibration: run the FP32 graph over images and record, for every node's
 * output tensor, a histogram of |x| (calib/hist.h) and per-channel means (for
 * bias correction).  Observes through the executor's per-node hook.
 *
 *     yq_calib_stats *cs;
 *     yq_calib_observe(g, paths, n, letterbox, &progress, &cs, &err);
 *     float t = yq_thresh(&cs->hist[id], &method, 8);
 *     yq_calib_stats_free(cs);
 */
#ifndef YQ_CALIB_OBSERVE_H
#define YQ_CALIB_OBSERVE_H

#include "calib/hist.h"

#define YQ_CALIB_BINS 2048

typedef struct yq_calib_stats {
    int n_nodes;
    int images, skipped;     /* images observed; unreadable ones skipped */
    yq_hist *hist;           /* per node */
    double **ch_mean;        /* per node: out.c channel means */
    float **ch_max;          /* per node: out.c channel max |x| */
    uint8_t images_sha256[32];  /* of the sorted list of image file names and sizes */
} yq_calib_stats;

/* The FP32 graph runs in its exact definition (YQ_PLAN_EXACT: one fmaf chain per conv
 * output, activations in double rounded once), which the GPU's exact plan
 * (calib/observe_cuda.h) reproduces bit for bit, and every statistic is a function of the
 * float values that both engines compute in the same order: histogram counts, min, max and
 * per-channel max are order-free, and each channel mean sums its plane with
 * yq_calib_plane_sum.  So the CPU and the GPU give the same statistics, byte for byte, and
 * the same package (tests/test_calib_cuda.c).  One caveat: mish, swish and logistic
 * evaluate exp/log1p/tanh in double, where glibc and CUDA may differ by a double's ulp; the
 * float result moves only within that of a rounding midpoint (about 2^-28 of values).
 *
 * Unreadable images are skipped with a warning through warn (may be NULL) and counted in
 * (*out)->skipped; the run fails only when more than half of them (or all) cannot be read. */
yq_status yq_calib_observe(const yq_graph *g, char *const *paths, int n, int letterbox,
                           yq_progress_fn progress, void *pctx, yq_warn_fn warn, void *wctx,
                           yq_calib_stats **out, yq_error *err);
yq_status yq_calib_stats_new(int n_nodes, const yq_graph *g, yq_calib_stats **out, yq_error *err);
void yq_calib_stats_free(yq_calib_stats *cs);
/* 0 when a and b (statistics of g) are equal byte for byte: image counts, every
 * histogram (counts, range, n, NaN/Inf counts, min, max), per-channel means and max;
 * else 1, with the first difference described in why. */
int yq_calib_stats_cmp(const yq_calib_stats *a, const yq_calib_stats *b, const yq_graph *g, char *why, size_t cap);
/* The sum of n floats in double, in the order both engines use: chunks of 2048 values,
 * each summed in 32 lanes (lane l takes the chunk's values l, l + 32, ...), the lanes
 * folded as a tree (l += l + 16 for l < 16, then 8, 4, 2, 1), the chunks' sums added in
 * order.  kernels/cuda_hist.cu's k_parts and k_fold_ch compute exactly this (its chunk,
 * YQ_HIST_CHUNK, is the 2048). */
double yq_calib_plane_sum(const float *x, long n);
/* sha256 over the file names (without folders) and sizes, in order. */
void yq_calib_list_hash(char *const *paths, int n, uint8_t out[32]);

#endif
