/* What the commands not yet on the public API share: the graph, the qconfig struct, the
 * pipeline layer (pipeline/), latency and tuning.  tests/cli_boundary_test.py lists the files
 * that still include it; each file moved onto the public API leaves that list. */
#ifndef YQ_CLI_INTERNAL_H
#define YQ_CLI_INTERNAL_H

#include "cli/cli.h"
#include "cli/latency.h"
#include "cli/tune.h"
#include "ir/ir.h"
#include "quant/qconfig.h"
#include "calib/observe.h"
#include "calib/compare.h"
#include "pipeline/quantize.h"
#include "pipeline/search.h"
#include "runtime/evaluate.h"
#include "runtime/tune.h"

/* The FP32 graph of a Darknet MODEL (cli/graph.c). */
yq_status cli_load_model(const cli_model_opt *o, yq_graph **g, yq_error *err);

/* The quantization flags' struct (cli.h's cli_quant_opt). */
struct cli_quant_opt {
    yq_qconfig qc;
    const char *calib_dir, *cache;
    const char *calib_device; /* --calib-device cpu|cuda[:N]; NULL: cuda when usable, else cpu */
    int any;                  /* a qconfig flag was given */
};
void cli_quant_init(cli_quant_opt *q);   /* a struct of the caller's: the defaults */
/* Per-layer SQNR of int8 vs FP32 on the first n_images of dir; prints the worst top. */
yq_status cli_layer_report(const yq_graph *g, const char *dir, int n_images, int letterbox, int top,
                           yq_layer_err **out, yq_error *err);
/* pipeline/quantize.h's yq_pipe_load_inputs, yq_pipe_quantize and yq_pipe_calibrate on q's
 * flags, with the terminal's progress bar, warnings and notes (cli/qflags.c).  cli_term_io:
 * the pipeline's callbacks on the terminal, as cli_quant_term_io's. */
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

/* quantize --max-drop (cli/max_drop.c): pipeline/search.h's yq_pipe_max_drop on q's flags
 * (rank: "head" | "sqnr" | "map" | "tensor"), its steps printed as a table and into json
 * (may be NULL: no --json); sets q->qc to the answer and leaves g rewritten with it.  lat
 * (may be NULL: the CPU; cli_lat_start called already) measures each step's latency, and
 * when it is the GPU the mAP is the GPU int8 engine's.  *res: yq_pipe_drop_free. */
yq_status cli_max_drop(cli_quant_opt *q, yq_graph *g, const yq_calib_stats *cs, const yq_dataset *ds, int letterbox,
                       const double *fp_stats, double budget_pts, const char *rank, int max_float, struct cJSON *json,
                       cli_lat *lat, yq_pipe_drop_res *res, yq_error *err);


#endif
