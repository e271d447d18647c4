/* Shared pieces of the yquant commands. */
#ifndef YQ_CLI_H
#define YQ_CLI_H

#include "ir/ir.h"

/* YQ_DATA, default ../shared. */
const char *cli_data_dir(void);
/* SOURCE_DATE_EPOCH (the reproducible-builds convention) as the packages' 'created' time:
 * then the same inputs write the same package bytes; 0 (now) when unset or not a number. */
long long cli_created_unix(void);

/* Model options every command takes: MODEL, --weights, --size, --bn. */
typedef struct cli_model_opt {
    const char *model, *weights;
    int width, height;
    int bn_pjreddie;          /* --bn pjreddie */
    int cfg_only;             /* a cfg without weights is fine (inspect) */
} cli_model_opt;

/* Consumes argv[*i] if it is one of the model options; 1 if consumed, 0 if not,
 * -1 on a bad value (message printed). */
int  cli_model_arg(cli_model_opt *o, int argc, char **argv, int *i);
/* MODEL as a path: itself when it exists, else a model of that name under $YQ_DATA/models
 * (a folder, or cfg-only/NAME.cfg); an error naming both when neither exists. */
yq_status cli_model_path(const char *model, char *path, size_t cap, yq_error *err);
yq_model_opt cli_model_options(const cli_model_opt *o);
/* MODEL (a .yqp package or a Darknet model, found by cli_model_path) opened with the options. */
yq_status cli_open_model(const cli_model_opt *o, yq_model **m, yq_error *err);
/* The FP32 graph of a Darknet MODEL (cli/graph.c; for the commands not yet on the public API). */
yq_status cli_load_model(const cli_model_opt *o, yq_graph **g, yq_error *err);
/* Fills err (code and message) as the library does; returns code. */
yq_status cli_fail(yq_error *err, yq_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* "--size 416" or "--size 416x320" */
int  cli_parse_size(const char *s, int *w, int *h);
/* The file name of path: what follows its last '/' (path itself without one). */
const char *cli_base_name(const char *path);
/* Prints "yquant: <msg>" to stderr and returns 1 (the exit status). */
int  cli_error(const yq_error *err);
int  cli_usage_error(const char *fmt, ...);
/* Outputs against inputs, before any work.  A cli_inputs holds every input file (folders
 * expanded to their files; NULL and missing paths skipped) by device and inode, so that
 * symlinks and hard links count.  cli_check_output refuses an output path (what: "-o",
 * "--json") that is one of them or that cannot be written (missing or read-only folder, a
 * folder itself); cli_check_outdir an output folder (sweep, sensitivity) that is an input
 * folder.  Each prints one line and returns 1; 0 when fine ("-" and NULL are fine).
 * cli_inputs_new prints and returns NULL when out of memory. */
typedef struct cli_inputs cli_inputs;
cli_inputs *cli_inputs_new(const char *const *paths, int n);
void cli_inputs_free(cli_inputs *in);
int  cli_check_output(const char *what, const char *out, const cli_inputs *in);
int  cli_check_outdir(const char *what, const char *dir, const cli_inputs *in);
/* The set made, one or two outputs checked (what2 NULL: one), the set freed. */
int  cli_check_outputs(const char *const *inputs, int n, const char *what1, const char *out1, const char *what2,
                       const char *out2);
/* The same for a report folder (-o, cli_check_outdir) and its --json (sweep, sensitivity). */
int  cli_check_report(const char *const *inputs, int n, const char *dir, const char *json);
/* Writes a cJSON tree and a newline to path ("-": stdout) through ir/fsio.h, printed
 * indented or compact; 0 on success, else the error printed and 1. */
struct cJSON;
int  cli_write_json(const char *path, struct cJSON *root);
int  cli_write_json_compact(const char *path, struct cJSON *root);

/* Terminal progress bar; pass cli_progress as a yq_progress_fn with &bar as ctx. */
typedef struct cli_bar { const char *label; double t0; int tty, last; } cli_bar;
void cli_progress_start(cli_bar *p, const char *label);
void cli_progress(void *ctx, int done, int total);
/* A library warning on stderr ("warning: MSG"), a yq_warn_fn; ctx a cli_bar drawing (its
 * line is cleared first) or NULL. */
void cli_warn(void *ctx, const char *msg);

/* Quantization flags (cli/qflags.c). */
#include "quant/qconfig.h"
#include "calib/observe.h"
typedef struct cli_quant_opt {
    yq_qconfig qc;
    const char *calib_dir, *cache;
    const char *calib_device; /* --calib-device cpu|cuda[:N]; NULL: cuda when usable, else cpu */
    int any;                  /* a qconfig flag was given */
} cli_quant_opt;
void cli_quant_init(cli_quant_opt *q);
int  cli_quant_arg(cli_quant_opt *q, int argc, char **argv, int *i);   /* as cli_model_arg */
extern const char *cli_quant_help;
/* Per-layer SQNR of int8 vs FP32 on the first n_images of dir; prints the worst top. */
#include "calib/compare.h"
yq_status cli_layer_report(const yq_graph *g, const char *dir, int n_images, int letterbox, int top,
                           yq_layer_err **out, yq_error *err);
/* The worst top of n per-layer errors (lowest SQNR first), as a table on stdout. */
#include "yq_quant.h"
void cli_print_layer_errors(const yq_layer_error *r, int n, int images, int top);
/* q's flags and mo's model options as the public quantizer takes them (*qc: yq_qconf_free);
 * letterbox -1: as the cfg says. */
yq_status cli_quant_options(const cli_quant_opt *q, const cli_model_opt *mo, int letterbox, yq_quant_opt *o,
                            yq_qconf **qc, yq_error *err);
/* The quantizer's callbacks on the terminal, as cli_term_io's. */
yq_quant_io cli_quant_term_io(cli_bar *bar);
/* pipeline/quantize.h's yq_pipe_load_inputs, yq_pipe_quantize and yq_pipe_calibrate on q's
 * flags, with the terminal's progress bar, warnings and notes (cli/qflags.c). */
#include "pipeline/quantize.h"
/* The pipeline's callbacks on the terminal: a step starts bar (may be NULL: no bar), warnings
 * go through cli_warn, notes are lines on stderr. */
yq_pipe_io cli_term_io(cli_bar *bar);
yq_pipe_calib cli_calib_req(const cli_quant_opt *q);
yq_status cli_load_inputs(const yq_graph *g, const char *dir, int max, int letterbox, float **out, int *got, yq_error *err);
/* (resolved: may be NULL; see yq_pipe_quantize) */
yq_status cli_quantize_graph(const cli_quant_opt *q, yq_qconfig *resolved, yq_graph *g, const yq_calib_stats *cs,
                             int letterbox, yq_error *err);
/* (*eq: as yq_pipe_calibrate's, the equalized copy or NULL) */
yq_status cli_calibrate(const cli_quant_opt *q, const yq_graph *g, int letterbox, yq_graph **eq, yq_calib_stats **cs,
                        yq_error *err);
/* cli_calibrate for a command done with the FP32 weights: *g becomes the graph to rewrite
 * (the equalized copy, the FP32 graph freed, when the qconfig equalizes). */
yq_status cli_calibrate_swap(const cli_quant_opt *q, yq_graph **g, int letterbox, yq_calib_stats **cs, yq_error *err);

/* Evaluation helpers (cli/cmd_eval.c). */
#include "runtime/evaluate.h"
int cli_print_stats(const double *stats);
yq_status cli_load_dataset(const char *images, const char *ann, const char *labels, yq_dataset **ds, yq_error *err);

/* The latency engine of sweep and quantize --max-drop (cli/latency.c): the GPU with tuned
 * kernels (runtime/latency.h) when there is one, else the CPU int8 reference engine (the
 * per-image times cli_eval_timed measures).  cli_lat_init, the flags, cli_lat_start (which
 * decides, and names the engine in tag and label), then cli_lat_measure per int8 graph.
 * A GPU failure turns the engine to the CPU for the rest of the run (one warning line). */
typedef struct cli_lat {
    int want;                 /* -1: cuda when a device is present (default); 0: cpu; 1: cuda */
    int device;               /* cuda:N */
    int batch;                /* --lat-batch (GPU only) */
    double budget_s;          /* --tune-budget: tuning per measurement (0: the log's kernels only) */
    const char *tune_log;     /* --tune-log; NULL until cli_lat_start picks the default */
    /* set by cli_lat_start and cli_lat_measure */
    int gpu;                  /* the engine is the GPU (still) */
    char tag[32];             /* "cuda-int8-tuned" | "cpu-int8-reference" */
    char label[192];          /* "GPU int8, tuned, batch 1, NVIDIA H200" | "CPU int8 reference" */
    char gpu_desc[160];       /* "NVIDIA H200 (sm_90, 132 SMs)" */
    char why_cpu[256];        /* why the engine is the CPU ("" while it is the GPU) */
    int measured, shapes_tuned, graph, runs, tasks, from_log, tuned_convs, int8_convs;
    double tune_s;
    double last_mean;         /* the last measurement's mean (its median is what cli_lat_measure returned) */
    char log_buf[1100];
} cli_lat;
void cli_lat_init(cli_lat *l);
/* --lat-device D (and --tune-log, --lat-batch, --tune-budget): as cli_model_arg. */
int  cli_lat_arg(cli_lat *l, int argc, char **argv, int *i);
/* Sets the engine from a device value (cpu | cuda | cuda:N) given to option opt: 1, or -1
 * (usage message printed). */
int  cli_lat_device(cli_lat *l, const char *opt, const char *v);
/* Picks the engine and the default tuning log (out ending in .yqp: OUT.tune.jsonl, as
 * yquant tune; else the folder out's tune.jsonl).  --device cuda without a GPU: a warning
 * line, then the CPU. */
void cli_lat_start(cli_lat *l, const char *out);
/* The GPU latency (ms per forward of l->batch images) of int8 graph g into *ms: 1 if
 * measured; 0 when the engine is the CPU (now, or after this failure: warning printed). */
int  cli_lat_measure(cli_lat *l, const yq_graph *g, double *ms);
/* latency_device, latency_engine and a "latency" object with the details, into root. */
void cli_lat_json(const cli_lat *l, struct cJSON *root);

/* quantize --max-drop (cli/max_drop.c): pipeline/search.h's yq_pipe_max_drop on q's flags
 * (rank: "head" | "sqnr" | "map" | "tensor"), its steps printed as a table and into json
 * (may be NULL: no --json); sets q->qc to the answer and leaves g rewritten with it.  lat
 * (may be NULL: the CPU; cli_lat_start called already) measures each step's latency, and
 * when it is the GPU the mAP is the GPU int8 engine's.  *res: yq_pipe_drop_free. */
#include "pipeline/search.h"
yq_status cli_max_drop(cli_quant_opt *q, yq_graph *g, const yq_calib_stats *cs, const yq_dataset *ds, int letterbox,
                       const double *fp_stats, double budget_pts, const char *rank, int max_float, struct cJSON *json,
                       cli_lat *lat, yq_pipe_drop_res *res, yq_error *err);

/* "1,32": batch sizes in 1..4096 into out; how many, or -1 for a malformed list. */
int cli_parse_batches(const char *s, int *out, int cap);

#include "runtime/tune.h"

/* The tune command's work once its flags are read (cli/cmd_tune.c), shared with
 * quantize, which tunes the package it wrote: no command calls another. */
typedef struct cli_tune_req {
    cli_model_opt mo;         /* mo.model: a .yqp package, or a Darknet model (tuned, logged only) */
    yq_tune_opt o;
    int batches[16], nb;
    int write;                /* store the choices in the package */
    int head_int8;            /* a model: quantize its head convs too */
    const char *log, *json, *device;   /* NULL log: beside the package; device "cuda[:N]" */
} cli_tune_req;
cli_tune_req cli_tune_defaults(void);   /* batch 1, cuda, writing, the tuner's defaults */
int cli_tune(const cli_tune_req *r);    /* 0; else the exit status, after printing why */

int cmd_inspect(int argc, char **argv);
int cmd_detect(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_sensitivity(int argc, char **argv);
int cmd_tune(int argc, char **argv);

#endif
