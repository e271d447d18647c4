/* yquant: per-layer kernel tuning on the GPU, as a library (`yquant tune` without the
 * command line).  Every int8 conv shape at every batch asked for is a task; the tuner
 * measures the untuned default, then candidates (precompiled kernel configurations), keeps
 * the fastest whose output equals the default's byte for byte, and logs every trial (JSON
 * lines, reused by later runs: shapes the log has finished are not measured again).
 * Nothing here prints: progress goes to a callback.
 *
 *     yq_model *m;                                       // include/yq.h
 *     yq_tuning *t = NULL;
 *     yq_tuning_opt o = yq_tuning_defaults();            // batch 1, cuda:0, 300 s
 *     o.log = "model-int8.tune.jsonl";
 *     yq_tune_summary sum;
 *     if (yq_model_open("model-int8.yqp", &m, &err) || yq_tuning_new(m, &o, &t, &err) ||
 *         yq_tuning_run(t, &sum, &err) || yq_tuning_save(t, "model-int8.yqp", 0, NULL, &err))
 *         fprintf(stderr, "%s\n", err.msg);
 *     yq_tuning_free(t);
 *     yq_model_free(m);
 *
 * Sessions of the package on a GPU of the same architecture then run the choices. */
#ifndef YQ_PUBLIC_TUNE_H
#define YQ_PUBLIC_TUNE_H

#include "yq.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A task's progress (during yq_tuning_run). */
typedef struct yq_tuning_progress {
    int task, n_tasks;            /* 1-based */
    int trial, n_trials;          /* trials done in this task, planned */
    double cur_tops, best_tops;   /* the last trial's and the best (0: none) */
    int finished;                 /* the task is done (state is set) */
    const char *state;            /* as yq_tuning_task's */
} yq_tuning_progress;

typedef struct yq_tuning_opt {
    const char *device;           /* "cuda" (NULL: cuda:0) or "cuda:N" */
    int batches[16], n_batches;   /* session batch sizes to tune for (1..4096; default 1) */
    const char *tuner;            /* "model" (default: an analytic cost model orders the candidates),
                                     "grid", "random", "ga" */
    int trials;                   /* candidates per shape besides the default (default 32; 0: all) */
    int early_stopping;           /* end a shape after this many trials without a faster one (12; 0: off) */
    double budget_s;              /* wall clock for the whole run (default 300; 0: no limit) */
    unsigned seed;                /* random, ga (default 1) */
    const char *families;         /* "dp4a,mma,cutlass,halo,img,wgmma,wgh": only these kernel families
                                     (NULL: all) */
    int retune;                   /* search shapes the log has finished again (its trials are reused) */
    const char *log;              /* the tuning log, read first and appended to; NULL: none */
    int head_int8;                /* an FP32 model: quantize its head convs too (else they stay float) */
    void (*progress)(void *ctx, const yq_tuning_progress *p);   /* may be NULL */
    void *ctx;
} yq_tuning_opt;
yq_tuning_opt yq_tuning_defaults(void);
/* The options alone checked (tuner, families, batches, counts, device string), before any
 * model or GPU: the first problem, naming the option. */
yq_status yq_tuning_check(const yq_tuning_opt *o, yq_error *err);

typedef struct yq_tuning yq_tuning;

/* Prepares the tuning of model m on the GPU (m borrowed: it must outlive the tuning): the
 * tasks, the log (read: a malformed line is YQ_ERR_FORMAT naming file and line) and the
 * device.  m: an int8 model (a package, yq_quantizer_model's), or an FP32 Darknet model,
 * quantized here without calibration (the thresholds do not change the speed).  Errors:
 * YQ_ERR_INVALID_ARG for a bad option (naming it; device "cpu" included), YQ_ERR_UNSUPPORTED
 * when the model has no int8 conv or there is no CUDA device, YQ_ERR_CUDA for a device
 * index past the last.  *out set only on YQ_OK. */
yq_status yq_tuning_new(const yq_model *m, const yq_tuning_opt *o, yq_tuning **out, yq_error *err);

typedef struct yq_tuning_info {
    char gpu[256];                /* "NVIDIA H200 (sm_90, 132 SMs)" */
    int device;                   /* cuda:N */
    int sm;                       /* 90 */
    int tasks, convs;             /* tasks (conv shape x batch); int8 convs per batch */
    int log_trials;               /* trials the log held before the run */
    const char *tuner;            /* the tuner's name */
} yq_tuning_info;
void yq_tuning_describe(const yq_tuning *t, yq_tuning_info *out);

/* Searches every task within the budget (progress through o->progress).  A failure mid-run
 * leaves in the log what was measured.  *sum may be NULL. */
yq_status yq_tuning_run(yq_tuning *t, yq_tune_summary *sum, yq_error *err);

/* Task i (0 <= i < info.tasks), in node order, batch by batch. */
typedef struct yq_tuning_task {
    char key[96];                 /* the conv shape and batch: "c256x52x52-f512-k3s2p1-g1-s8s8-b32" */
    int batch, convs;             /* convs of the model sharing the shape */
    const char *state;            /* "pending", "tuned", "from log", "budget (partial)", "budget (default)" */
    char default_cfg[64], best_cfg[64];   /* kernel configuration names */
    double default_us, best_us;   /* 0: not measured */
    double ops;                   /* integer operations of one run (2 x MACs) */
    int trials, failed;           /* candidates tried (reused ones included), failed */
    double dp4a_us, mma_us;       /* the fastest correct time of those families (0: none) */
    char started_from[96];        /* the logged shape whose best was tried first, or "" */
} yq_tuning_task;
yq_status yq_tuning_task_get(const yq_tuning *t, int i, yq_tuning_task *out, yq_error *err);

/* The convs of one batch, each timed alone and summed (0s: no task at that batch was measured):
 * the untuned default, the fastest dp4a and mma configurations (the default where a family had
 * none), the tuned choice; over how many convs and distinct shapes. */
typedef struct yq_tuning_sums {
    double default_us, dp4a_us, mma_us, tuned_us;
    int convs, shapes;
} yq_tuning_sums;
yq_tuning_sums yq_tuning_batch_sums(const yq_tuning *t, int batch);

/* The choices yq_tuning_run made (one per int8 conv and batch): how many. */
int yq_tuning_choices(const yq_tuning *t);
/* Stores the choices in the package at path, the file m was opened from, merged with those
 * it holds (other batches and GPU architectures are kept), written atomically (a failed
 * write leaves the file as it was).  created_unix: the package's creation time (0: now).
 * *stored (may be NULL): the choices the package holds now.  YQ_ERR_INVALID_ARG when m is
 * not a package or nothing was tuned yet. */
yq_status yq_tuning_save(const yq_tuning *t, const char *path, long long created_unix, int *stored, yq_error *err);
void yq_tuning_free(yq_tuning *t);                 /* NULL is a no-op */

#ifdef __cplusplus
}
#endif

#endif
