/* quantize --max-drop on the terminal and in --json (cli/max_drop.c): the search is the
 * library's (include/yq_quant.h, yq_quantizer_max_drop). */
#ifndef YQ_CLI_MAX_DROP_H
#define YQ_CLI_MAX_DROP_H

#include <cjson/cJSON.h>
#include "cli/cli.h"
#include "cli/latency.h"

/* The search from *qc (rank: "head" | "sqnr" | "map" | "tensor"), its steps printed as a
 * table and into json (may be NULL: no --json); *qc becomes the answer (the request freed).
 * fp: FP32 on ds, measured already.  lat (may be NULL: the CPU; cli_lat_start called
 * already) measures each step's latency, and when it is the GPU the mAP is the GPU int8
 * engine's.  *res keeps the detections of the all-int8 graph and of the answer:
 * yq_max_drop_result_free. */
yq_status cli_max_drop(yq_quantizer *q, yq_qconf **qc, const yq_dataset *ds, const yq_quant_score *fp,
                       double budget_pts, const char *rank, int max_float, cJSON *json, cli_lat *lat,
                       yq_max_drop_result *res, yq_error *err);

#endif
