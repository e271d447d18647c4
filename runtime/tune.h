/* Per-layer kernel tuning: every int8 conv layer runs the precompiled kernel
 * configuration (kernels/cuda.h: a family, dp4a or tensor-core mma, a tile, a K
 * split) that was fastest for its shape when measured on the GPU, instead of the
 * built-in heuristic.  Nothing is compiled at tuning time: the search picks among
 * the configurations the build holds, and all of them compute the same bytes.
 *
 *     yq_tune_task *t;
 *     int n;
 *     int batches[] = { 1, 32 };
 *     yq_tune_tasks(g, batches, 2, &t, &n, &err);          // distinct (shape, batch): no GPU needed
 *     yq_tune_opt o = yq_tune_defaults();
 *     o.log_path = "yolov3.tune.jsonl";                    // read first, appended to
 *     yq_tune_summary sum;
 *     yq_tune_gpu(g, t, n, &o, &sum, &err);                // candidates, measurement, search
 *     yq_tuned_kernel *k;
 *     int nk;
 *     yq_tune_choices(g, t, n, yq_cuda_arch(), -1, &k, &nk, &err);   // per node: for the package
 *     yq_tune_tasks_free(t);
 *     ... later, on a plan of B images:  yq_tune_apply(plan, g, B, sm, k, nk, &applied, &err);
 *
 * A task is one conv shape at one batch (yq_cuda_conv_key: "c256x52x52-f512-k3s2p1-
 * g1-s8s8-b32"); layers of the same shape share it.  Per task the untuned default is
 * measured first (it is the baseline, and its output the reference every candidate
 * must equal byte for byte, guard bytes included), then candidates in the order the
 * tuner gives: grid (as enumerated), random (shuffled, seeded), ga (a small genetic
 * search over tile x split) or model (an analytic cost model ranks them; the first of
 * each family comes first).  --trials caps the candidates per task, --early-stopping
 * ends a task after that many trials without a better time, --budget is wall-clock
 * for the whole run, shared fairly among the tasks still to search.  A candidate that
 * fails (launch error, mismatch, timeout) is logged and skipped; a lost GPU context
 * ends the run.
 *
 * The log (JSON lines, one per trial, one "done" line per finished task) is read
 * before searching: a task the log has finished is not measured again, trials it has
 * already are reused (an interrupted run resumes), and a new shape tries first the
 * best configuration of the most similar logged shape (same kernel size, stride,
 * padding, group kind and types; nearest size).
 *
 * yq_tune_run is the search alone, measuring through a callback: it runs and is
 * tested without a GPU (tests/test_tune.c drives it with a mock cost).  yq_tune_gpu
 * fills the candidates and measures on the current CUDA device.  yq_tune_apply
 * (runtime/tune_apply.c, which needs no cJSON) applies stored choices to a plan. */
#ifndef YQ_TUNE_H
#define YQ_TUNE_H

#include "ir/ir.h"
#include "kernels/cuda.h"
#include "runtime/exec_cuda.h"
#include "runtime/package.h"

typedef enum yq_tuner { YQ_TUNER_MODEL = 0, YQ_TUNER_GRID, YQ_TUNER_RANDOM, YQ_TUNER_GA } yq_tuner;
const char *yq_tuner_name(yq_tuner t);
int         yq_tuner_parse(const char *s, yq_tuner *t);   /* 0, or -1 for an unknown name */

typedef enum yq_tune_state {
    YQ_TUNE_PENDING = 0,
    YQ_TUNE_SEARCHED,     /* searched in this run to its end (trials, early stopping, candidates) */
    YQ_TUNE_LOGGED,       /* the log had finished it: nothing measured */
    YQ_TUNE_PARTIAL,      /* the budget ran out during its search: the best so far */
    YQ_TUNE_SKIPPED       /* the budget ran out before it: the default stays */
} yq_tune_state;

#define YQ_TUNE_FAMILIES 16   /* above every yq_conv_variant value (tune.c asserts it) */

/* One conv shape at one batch.  yq_tune_tasks fills the shape; the candidates come
 * from yq_tune_gpu (or the caller of yq_tune_run); yq_tune_run fills the results. */
typedef struct yq_tune_task {
    char key[96];                 /* yq_cuda_conv_key's format */
    int batch;
    int cin, ih, iw, f, k, stride, pad, groups, oh, ow;
    yq_dtype in_t, out_t;
    double ops;                   /* integer operations of one run (2 x MACs) */
    int node, n_nodes;            /* the first node of this shape (the one measured), how many share it */
    int res_node, res_first;      /* the [shortcut] fused into node's epilogue as the plan runs it (<= 0: none) */
    yq_conv_cfg cand[YQ_CONV_MAX_CFGS];
    int n_cand;
    yq_conv_cfg def;              /* the untuned default */
    /* results */
    yq_tune_state state;
    yq_conv_cfg best;             /* def unless a candidate beat it */
    double best_us, default_us;   /* 0: not measured */
    double family_us[YQ_TUNE_FAMILIES];          /* fastest correct time seen per family (0: none) */
    yq_conv_cfg family_best[YQ_TUNE_FAMILIES];
    int trials;                   /* candidates tried besides the default (reused ones included) */
    int measured;                 /* measurements made in this run (the default's included) */
    int failed;                   /* trials that failed */
    char similar[96];             /* the logged shape whose best was tried first, or "" */
} yq_tune_task;

/* The distinct (shape, batch) tasks of g's int8 convs (layers kept in float are not
 * tuned), in node order, batch by batch; *out malloc'ed (yq_tune_tasks_free). */
yq_status yq_tune_tasks(const yq_graph *g, const int *batches, int n_batches, yq_tune_task **out, int *n,
                        yq_error *err);
void      yq_tune_tasks_free(yq_tune_task *t);
/* Node id's task key at a batch (the conv as the GPU executor runs it); 0 on success,
 * -1 if id is not a tunable conv. */
int       yq_tune_node_key(const yq_graph *g, int id, int batch, char *buf, size_t cap);

/* ---- the search --------------------------------------------------------------- */
typedef enum yq_trial_status {
    YQ_TRIAL_OK = 0,
    YQ_TRIAL_ERROR,       /* could not run (launch failure, an error the kernel reported) */
    YQ_TRIAL_MISMATCH,    /* ran, but its bytes differ from the default's */
    YQ_TRIAL_TIMEOUT,     /* far slower than the default: not timed further */
    YQ_TRIAL_FATAL        /* the device is unusable: the run ends */
} yq_trial_status;

typedef struct yq_trial {
    yq_trial_status status;
    double us;                    /* one run of the conv, when OK */
    char why[160];                /* when not OK */
} yq_trial;

/* How candidates are measured: begin (may be NULL) prepares a task (inputs, the
 * reference output); a failure ends the run.  measure fills *out for one
 * configuration; end (may be NULL) releases the task. */
typedef struct yq_tune_device {
    void *ctx;
    yq_status (*begin)(void *ctx, yq_tune_task *t, yq_error *err);
    void      (*measure)(void *ctx, const yq_tune_task *t, yq_conv_cfg cfg, yq_trial *out);
    void      (*end)(void *ctx, yq_tune_task *t);
} yq_tune_device;

typedef struct yq_tune_progress {
    int task, n_tasks;            /* 1-based */
    const yq_tune_task *t;
    int trial, n_trials;          /* trials done in this task, planned */
    double cur_tops, best_tops;   /* the last trial's and the best (0: none) */
    int finished;                 /* the task is done (its state is set) */
} yq_tune_progress;

typedef struct yq_tune_opt {
    yq_tuner tuner;
    int trials;                   /* per task, candidates besides the default; <= 0: all */
    int early_stopping;           /* end a task after this many trials without a better time; <= 0: never */
    double budget_s;              /* wall-clock seconds for the whole run; <= 0: no limit */
    uint32_t seed;                /* random, ga */
    int sms;                      /* multiprocessors, for the cost model; 0: the device's (yq_tune_gpu), else 132 */
    unsigned families;            /* candidates of these families only (bits 1u << yq_conv_variant); 0: all */
    int retune;                   /* search tasks the log has finished again (its trials are still reused) */
    const char *log_path;         /* JSON lines, read first and appended to; NULL: no log */
    void (*progress)(void *ctx, const yq_tune_progress *p);   /* may be NULL */
    void *progress_ctx;
    double (*clock)(void *ctx);   /* seconds; NULL: the monotonic clock (tests pass a fake one) */
    void *clock_ctx;
} yq_tune_opt;

yq_tune_opt yq_tune_defaults(void);   /* model, 32 trials, early stopping 12, 300 s, seed 1 */

/* yq_tune_summary: include/yq.h (the GPU latency reports it) */

/* Searches every task (candidates filled) on the device of the given architecture
 * ("sm_90": the log's arch field); results in the tasks, totals in *sum (may be NULL). */
yq_status yq_tune_run(yq_tune_task *t, int n, const char *arch, const yq_tune_opt *o, const yq_tune_device *dev,
                      yq_tune_summary *sum, yq_error *err);

/* The cost model: predicted microseconds of one run of cfg on task t with sms
 * multiprocessors (a ranking, not a promise). */
double yq_tune_model_us(const yq_tune_task *t, yq_conv_cfg cfg, int sms);

/* ---- the log ---------------------------------------------------------------- */
typedef struct yq_tune_log yq_tune_log;
/* A missing file is an empty log; a malformed line or an unknown configuration name
 * is YQ_ERR_FORMAT naming the file and line.  *out set only on YQ_OK. */
yq_status yq_tune_log_read(const char *path, yq_tune_log **out, yq_error *err);
void      yq_tune_log_free(yq_tune_log *l);       /* NULL is a no-op */
int       yq_tune_log_trials(const yq_tune_log *l);   /* trial lines read */
/* The fastest correct configuration logged for key on arch; 1 if there is one. */
int       yq_tune_log_best(const yq_tune_log *l, const char *key, const char *arch, yq_conv_cfg *cfg, double *us);
/* 1 if a finished search of key on arch is logged. */
int       yq_tune_log_done(const yq_tune_log *l, const char *key, const char *arch);
/* The logged key on arch (not key itself) most similar to key that has a best: same
 * kernel size, stride, padding, group kind and types, nearest channels and size.
 * 1 if found (its name in similar, its best in *cfg). */
int       yq_tune_log_similar(const yq_tune_log *l, const char *key, const char *arch, char *similar, size_t cap,
                              yq_conv_cfg *cfg);

/* ---- on the GPU --------------------------------------------------------------- */
/* Fills each task's candidates (of o->families) and default on the current device,
 * then yq_tune_run with measurements there: a random input, the default's output
 * as the reference (memcmp with guard bytes), CUDA-event timing (warm-up, the median
 * of three means).  YQ_ERR_CUDA without a device. */
yq_status yq_tune_gpu(const yq_graph *g, yq_tune_task *t, int n, const yq_tune_opt *o, yq_tune_summary *sum,
                      yq_error *err);

/* Per node and batch, the choice of every task that has one (not SKIPPED), for sm;
 * family >= 0: the fastest of that family instead (tasks without one are left out).
 * *out malloc'ed (NULL when *n is 0). */
yq_status yq_tune_choices(const yq_graph *g, const yq_tune_task *t, int n, int sm, int family,
                          yq_tuned_kernel **out, int *n_out, yq_error *err);
/* Merges add into *k (*n rows, malloc'ed): a row of add replaces one of the same
 * (node, batch, sm). */
yq_status yq_tune_merge(yq_tuned_kernel **k, int *n, const yq_tuned_kernel *add, int n_add, yq_error *err);

/* runtime/tune_apply.c.  Sets the kernel configuration of every conv of plan p
 * (planned for max_batch images) that k has a choice for on sm: the row for
 * max_batch, else the nearest tuned batch whose choice can run at max_batch; other
 * convs keep the heuristic.  *applied (may be NULL): convs set. */
yq_status yq_tune_apply(yq_cuda_plan *p, const yq_graph *g, int max_batch, int sm, const yq_tuned_kernel *k, int n,
                        int *applied, yq_error *err);

#endif
