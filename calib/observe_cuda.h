/* Calibration on the GPU: the FP32 graph through cuDNN (kernels/cudnn_fp.h) a batch of
 * images at a time, every node's output reduced on the device (kernels/cuda_hist.h) into
 * the statistics calib/observe.c gathers on the CPU, in the same yq_calib_stats, so that
 * thresholds, the HDF5 cache and equalization take either.
 *
 *     yq_calib_cuda_opt o = yq_calib_cuda_defaults();
 *     yq_calib_stats *cs;
 *     st = yq_calib_observe_cuda(g, paths, n, letterbox, &o, progress, ctx, &cs, &err);
 *     if (st == YQ_ERR_UNSUPPORTED) st = yq_calib_observe(g, paths, n, letterbox, progress, ctx, &cs, &err);
 *
 * The FP32 graph runs in its exact definition (kernels/cudnn_fp.h YQ_PLAN_EXACT: yquant's
 * FP32 kernels, not cuDNN's convolutions), the floats of the CPU's run bit for bit, and
 * the statistics kernels reduce them in the CPU's order (calib/observe.h), so the
 * statistics equal yq_calib_observe's byte for byte (yq_calib_stats_cmp;
 * tests/test_calib_cuda.c checks it on every shared model).
 *
 * Images are decoded and preprocessed on host threads while the GPU runs the previous
 * batch.  Unreadable images are skipped with a warning, as on the CPU; the run fails
 * when more than half (or all) cannot be read. */
#ifndef YQ_CALIB_OBSERVE_CUDA_H
#define YQ_CALIB_OBSERVE_CUDA_H

#include "calib/observe.h"

/* Where the time went (for benchmarks). */
typedef struct yq_calib_cuda_times {
    double plan_ms;    /* CUDA/cuDNN set-up, the cuDNN plan, the statistics buffers */
    double load_ms;    /* host: decoding and preprocessing images (the first batch alone, the
                          rest while the GPU runs) */
    double wait_ms;    /* host waiting for the GPU */
    double total_ms;
    int batch, threads;
} yq_calib_cuda_times;

typedef struct yq_calib_cuda_opt {
    int device;        /* CUDA device index */
    int batch;         /* images per run; 0: 32 (fewer when there are fewer images) */
    int threads;       /* image decoding threads; 0: up to 8, by the cores online */
    yq_calib_cuda_times *times;   /* optional: filled on return */
    yq_warn_fn warn;              /* an unreadable image skipped (as yq_calib_observe's); NULL: none */
    void *warn_ctx;
} yq_calib_cuda_opt;

yq_calib_cuda_opt yq_calib_cuda_defaults(void);

/* 1 when this build has cuDNN and a CUDA device is present; else 0 with the reason in
 * why (may be NULL). */
int yq_calib_cuda_available(char *why, size_t cap);

/* As yq_calib_observe.  YQ_ERR_UNSUPPORTED (and nothing done) without cuDNN in the build
 * or without a CUDA device: the caller calibrates on the CPU. */
yq_status yq_calib_observe_cuda(const yq_graph *g, char *const *paths, int n, int letterbox,
                                const yq_calib_cuda_opt *o, yq_progress_fn progress, void *pctx,
                                yq_calib_stats **out, yq_error *err);

#endif
