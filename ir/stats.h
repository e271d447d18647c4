/* Summary statistics of timings: one definition, used by the benchmarks (runtime/bench.c),
 * the GPU latency of sweeps and searches (runtime/latency.c), the tuner's trials
 * (runtime/tune_gpu.c) and the timed evaluations (pipeline/evaluate.c). */
#ifndef YQ_IR_STATS_H
#define YQ_IR_STATS_H

typedef struct yq_stats {
    int n;
    double median;   /* the middle value; for an even n the mean of the two middle ones */
    double mean, min, max;
    double p90;      /* the value at rank floor(0.9 (n - 1)) of the sorted values */
} yq_stats;

/* Statistics of v[n], which is sorted in place (ascending; NaNs are not expected).  n < 1
 * gives n 0 and every figure NaN. */
yq_stats yq_stats_of(double *v, int n);
/* The same of float values (GPU event timings), v untouched; n 0 (every figure NaN) also
 * when the copy cannot be allocated. */
yq_stats yq_stats_of_f(const float *v, int n);

#endif
