/* Shared pieces of the yquant commands. */
#ifndef YQ_CLI_H
#define YQ_CLI_H

#include "ir/ir.h"

/* YQ_DATA, default ../shared. */
const char *cli_data_dir(void);

/* Model options every command takes: MODEL, --weights, --size, --bn. */
typedef struct cli_model_opt {
    const char *model, *weights;
    int width, height;
    yq_bn_eps bn;
    int cfg_only;             /* a cfg without weights is fine (inspect) */
} cli_model_opt;

/* Consumes argv[*i] if it is one of the model options; 1 if consumed, 0 if not,
 * -1 on a bad value (message printed). */
int  cli_model_arg(cli_model_opt *o, int argc, char **argv, int *i);
/* Resolves MODEL (a path, or a name under $YQ_DATA/models) and loads it. */
yq_status cli_load_model(const cli_model_opt *o, yq_graph **g, yq_error *err);
/* MODEL as detect/eval take it: a .yqp package, or cli_load_model's graph (into
 * *owned, which the model borrows).  Free *m, then *owned (cli/cmd_detect.c). */
yq_status cli_open_model(const cli_model_opt *o, yq_model **m, yq_graph **owned, yq_error *err);
/* "--size 416" or "--size 416x320" */
int  cli_parse_size(const char *s, int *w, int *h);
/* Prints "yquant: <msg>" to stderr and returns 1 (the exit status). */
int  cli_error(const yq_error *err);
int  cli_usage_error(const char *fmt, ...);
/* Writes a cJSON tree to path ("-": stdout) through path.tmp; 0 on success. */
struct cJSON;
int  cli_write_json(const char *path, struct cJSON *root);

/* Terminal progress bar; pass cli_progress as a yq_progress_fn with &bar as ctx. */
typedef struct cli_bar { const char *label; double t0; int tty, last; } cli_bar;
void cli_progress_start(cli_bar *p, const char *label);
void cli_progress(void *ctx, int done, int total);

/* Quantization flags (cli/qflags.c). */
#include "quant/qconfig.h"
#include "calib/observe.h"
typedef struct cli_quant_opt {
    yq_qconfig qc;
    const char *calib_dir, *cache;
    int any;                  /* a qconfig flag was given */
} cli_quant_opt;
void cli_quant_init(cli_quant_opt *q);
int  cli_quant_arg(cli_quant_opt *q, int argc, char **argv, int *i);   /* as cli_model_arg */
extern const char *cli_quant_help;
/* Per-layer SQNR of int8 vs FP32 on the first n_images of dir; prints the worst top. */
#include "calib/compare.h"
yq_status cli_layer_report(const yq_graph *g, const char *dir, int n_images, int letterbox, int top,
                           yq_layer_err **out, yq_error *err);
/* Up to max preprocessed images of dir, evenly spaced; *out malloc'ed. */
yq_status cli_load_inputs(const yq_graph *g, const char *dir, int max, int letterbox, float **out, int *got, yq_error *err);
/* The rewrite; then keep_float's measured choice of float layers (written into q's
 * per-layer skips) and the data-driven bias correction, when the qconfig asks. */
yq_status cli_quantize_graph(cli_quant_opt *q, yq_graph *g, const yq_calib_stats *cs, int letterbox, yq_error *err);
yq_status cli_calibrate(const cli_quant_opt *q, yq_graph *g, int letterbox, yq_calib_stats **cs, yq_error *err);

/* Evaluation helpers (cli/cmd_eval.c). */
#include "runtime/evaluate.h"
int cli_print_stats(const double *stats);
yq_status cli_load_dataset(const char *images, const char *ann, const char *labels, yq_dataset **ds, yq_error *err);
/* Every image of ds through session s (batch at a time, options from eo), then COCO stats. */
yq_status cli_evaluate(yq_session *s, int batch, const yq_graph *g, const yq_dataset *ds, const yq_eval_opt *eo,
                       const char *label, double stats[YQ_COCO_NSTATS], const char *dets_path, yq_error *err);

/* Sweeps, sensitivity and the accuracy-aware mode (cli/cmd_sweep.c, cli/cmd_sensitivity.c). */
typedef struct cli_timed_eval {
    double s[YQ_COCO_NSTATS];
    double ms_median, ms_mean;    /* the engine alone (yq_exec_int8 / yq_exec_fp32, batch 1), per image */
    double ms_wall;               /* everything (decode, resize, engine, NMS), per image */
    yq_det *dets;                 /* malloc'ed (yq_coco_dets_free) */
    int n, images;
} cli_timed_eval;
/* As yq_eval_detect + yq_coco_eval, with the engine timed image by image; progress may be
 * NULL (cli_progress with a cli_bar, or any yq_progress_fn). */
yq_status cli_eval_timed(const yq_graph *g, const yq_dataset *ds, int letterbox, yq_progress_fn progress, void *pctx,
                         cli_timed_eval *r, yq_error *err);
/* SQNR (dB) of the tensors feeding the heads, all heads pooled, from yq_compare_layers' output. */
double cli_head_sqnr(const yq_graph *g, const yq_layer_err *e);
/* --max-drop: starting from every layer in int8, keeps the most sensitive layers in float
 * (ranked by rank: "head" | "sqnr" | "map") one at a time until the mAP@[.5:.95] drop against
 * fp_stats is within budget_pts points on ds, or max_float layers are float (0: no cap).
 * Sets q->qc to the result (head and first int8, skip_layers the chosen layers: when the
 * budget is not met, those of the step with the lowest drop) and leaves g rewritten with it; *all8 and *final are the
 * first and last evaluations (caller frees their dets), *met whether the budget was met.
 * json (may be NULL) receives the steps. */
yq_status cli_max_drop(cli_quant_opt *q, yq_graph *g, const yq_calib_stats *cs, const yq_dataset *ds, int letterbox,
                       const double *fp_stats, double budget_pts, const char *rank, int max_float, struct cJSON *json,
                       cli_timed_eval *all8, cli_timed_eval *final, int *met, yq_error *err);

int cmd_inspect(int argc, char **argv);
int cmd_detect(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_sensitivity(int argc, char **argv);

#endif
