/* yquant: latency and throughput of yquant's engines on one model, as a library (`yquant
 * bench` without the command line).  GPU: FP32 and FP16 through cuDNN (the peer every int8
 * figure is compared with), int8 through yquant's own kernels; CPU: the FP32 engine
 * (OpenBLAS) and the int8 engine (AVX-512 VNNI or AVX2, the reference's bytes).  Each configuration is planned once, warmed up,
 * then timed run by run (GPU: between two CUDA events, each run waited for before the next;
 * CPU: the monotonic clock); latency is the median of those runs, eager and (GPU) as
 * replayed from a captured CUDA graph.  The input is a fixed pattern already on the device.
 * Nothing here prints.
 *
 *     yq_bench *b = NULL;
 *     yq_bench_opt o = yq_bench_defaults();            // cuda, int8, batch 1, 100 runs
 *     yq_bench_result r;
 *     if (yq_bench_new(model, 0, &b, &err) || yq_bench_run(b, &o, &r, &err)) ...
 *     printf("%s: %.3f ms\n", r.backend, r.graph_median_ms);
 *     yq_bench_result_free(&r);
 *     yq_bench_free(b);
 */
#ifndef YQ_PUBLIC_BENCH_H
#define YQ_PUBLIC_BENCH_H

#include "yq.h"
#include "yq_tune.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct yq_bench yq_bench;

/* m (borrowed: it must outlive the bench): a package (int8 only) or a Darknet model (FP32;
 * its int8 is quantized without calibration, the thresholds do not change the speed, with
 * the head convs in int8 when head_int8 is 1, else kept float as the qconfig's default). */
yq_status yq_bench_new(const yq_model *m, int head_int8, yq_bench **out, yq_error *err);
void yq_bench_free(yq_bench *b);                   /* NULL is a no-op */

typedef struct yq_bench_info {
    const char *cfg, *weights;    /* the model's files as its graph names them (borrowed) */
    int is_package;
    int c, h, w;                  /* the network input */
    double gflop;                 /* 2 x MACs of one image, 1e9 */
    char cudnn[128];              /* the cuDNN yquant is linked with ("" when none) */
} yq_bench_info;
void yq_bench_describe(const yq_bench *b, yq_bench_info *out);

typedef struct yq_bench_opt {
    const char *device;           /* "cuda" (cuda:0) or "cpu" */
    const char *precision;        /* "fp32", "fp16" (cuDNN; cuda only) or "int8" */
    int batch;                    /* 1..4096 */
    int runs, warmup;             /* timed, untimed runs (runs >= 1) */
    int graph;                    /* cuda: also time CUDA-graph replays */
    int profile;                  /* per-layer times (yq_bench_result.layers) */
    int no_views;                 /* cuda int8: every route copies its sources */
    int gpu_f16;                  /* cuda int8: the float layers in FP16 (not the validated numerics) */
    const char *layout;           /* cuDNN: "nchw", "nhwc" or NULL (NHWC for FP16, NCHW for FP32) */
    int heuristic, legacy, fuse;  /* cuDNN: the heuristic's algorithm; the legacy API only; fused epilogues */
    const char *kernels;          /* cuda int8: NULL (untuned), or "tuned", "tuned:dp4a", "tuned:mma"
                                     (yq_bench_tune's choices: any family, dp4a only, mma only) */
    int threads;                  /* cpu: threads of the int8 engine and of OpenBLAS (FP32); 0: every core */
    const char *cpu_engine;       /* cpu int8: NULL or "fast" (AVX-512 VNNI or AVX2, as the CPU has), "avx2"
                                     (the fallback even where AVX-512 runs), "dgemm" (the exact dgemm path)
                                     or "reference" (plain C): the same bytes, different speeds */
} yq_bench_opt;
yq_bench_opt yq_bench_defaults(void);

/* One layer's time in a profile. */
typedef struct yq_bench_layer {
    int layer;                    /* Darknet layer index (-1: the input) */
    const char *op;               /* "conv", "route", ... */
    char shape[96];               /* "256x52x52 -> 512x26x26 3x3/2" */
    double us;
    double gflop;                 /* convs: 2 x MACs of the batch, 1e9; else 0 */
    double bytes;                 /* int8 convs timed alone ("isolated"): input, output and a fused
                                     residual at their types, weights once; else 0 */
    char cudnn[48];               /* cuDNN: what ran it ("" otherwise) */
} yq_bench_layer;

typedef struct yq_bench_result {
    char precision[8];
    char backend[96];             /* "cuDNN ...", "yquant int8, untuned (float heads)", ... */
    int batch;
    double median_ms, mean_ms, min_ms, p90_ms;   /* eager launches (or the CPU), ms per batch */
    double graph_median_ms, graph_min_ms;        /* CUDA-graph replays; < 0 when none */
    double img_s;                 /* batch / the better median */
    double plan_s;                /* planning (algorithm choice, uploads) */
    size_t device_bytes;
    char note[160];
    const char *kernels;          /* cuda int8: "default", "tuned", ... when a tuning exists; else NULL */
    /* with o->profile (n_layers 0 otherwise): every node in network order, the input's
     * conversion first (us 0: nothing ran for it, a route the plan makes a view, say) */
    const char *profile_kind;     /* "events" (between nodes, median of runs), "isolated" (each node's
                                     kernels timed alone, 10 launches back to back, median), "clock" (CPU, mean of runs) */
    yq_bench_layer *layers;
    int n_layers;
} yq_bench_result;
/* Times one configuration.  YQ_ERR_UNSUPPORTED for one the model or device cannot run (FP16
 * on the CPU, FP32 of a package, tuned kernels without yq_bench_tune); *out is zeroed first
 * and holds nothing to free on failure. */
yq_status yq_bench_run(yq_bench *b, const yq_bench_opt *o, yq_bench_result *out, yq_error *err);
void yq_bench_result_free(yq_bench_result *r);     /* the layers */

/* The tuned rows' kernels: every int8 conv at these batches tuned on cuda:0 (as
 * yq_tuning_run; o: its options, o->batches ignored), then choices of any family, of dp4a
 * only and of mma only kept for yq_bench_run's kernels. */
typedef struct yq_bench_tuning {
    double seconds;               /* the tuning, conv uploads included */
    yq_tune_summary sum;
    int sm;
    int choices[3];               /* tuned, tuned:dp4a, tuned:mma: convs with a choice (0: none of that family) */
    yq_tuning_sums sums[16];      /* per batch, in the order given (yq_tune.h) */
} yq_bench_tuning;
yq_status yq_bench_tune(yq_bench *b, const int *batches, int n_batches, const yq_tuning_opt *o, yq_bench_tuning *out,
                        yq_error *err);

#ifdef __cplusplus
}
#endif

#endif
