/* yquant sweep's reports (cli/cmd_sweep.c runs the grid): CSV, the Pareto chart,
 * report.html and the JSON (cli/sweep_report.c); its points: cli/sweep_point.h. */
#ifndef YQ_CLI_SWEEP_H
#define YQ_CLI_SWEEP_H

#include <stdio.h>
#include <cjson/cJSON.h>
#include "cli/cli.h"
#include "cli/latency.h"
#include "cli/sweep_point.h"

/* ---- outputs ---- */

typedef struct sweep_ctx {
    const grid *G;
    point *pts;
    int np;
    int chosen;
    yq_quant_score fp;        /* FP32 */
    const cli_lat *lat;       /* the latency engine, as it ended */
    const char *model, *cfg, *val_dir, *calib_dir, *grid_text;
    int images, calib_images, letterbox, w, h, sqnr_images;
    int in_w, in_h;           /* the network input */
    int argc;
    char **argv;
} sweep_ctx;

yq_status sweep_write_csv(const sweep_ctx *X, const char *path, yq_error *err);
/* pareto.png: mAP against latency, the front and the chosen point marked. */
yq_status sweep_write_chart(const sweep_ctx *X, const char *path, yq_error *err);
/* report.html: the chart (png embedded), the table and the chosen point's per-layer SQNR
 * (le: n_le rows measured on le_images images; le may be NULL). */
yq_status sweep_write_html(const sweep_ctx *X, const char *path, const char *png, const yq_layer_error *le, int n_le,
                           int le_images, yq_error *err);
/* The --json document (caller frees). */
cJSON *sweep_points_json(const sweep_ctx *X);

#endif
