/* The latency engine of `yquant sweep` and `quantize --max-drop` (cli/latency.c), on the
 * public API. */
#ifndef YQ_CLI_LATENCY_H
#define YQ_CLI_LATENCY_H

#include "cli/cli.h"

/* The latency engine of sweep and quantize --max-drop (cli/latency.c): the GPU with tuned
 * kernels (yq.h: yq_model_latency) when there is one, else the CPU int8 reference engine (the
 * per-image times yq_quantizer_point's evaluation measures).  cli_lat_init, the flags, cli_lat_start (which
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
/* The engine becomes the CPU's int8 engine (tag and label say which instructions it runs). */
void cli_lat_to_cpu(cli_lat *l);
/* --lat-device D, --tune-log F, --lat-batch N, --tune-budget S (CLI_LAT_OPTIONS): as
 * cli_model_arg. */
#define CLI_LAT_OPTIONS                                                        \
    { "lat-device", required_argument, NULL, CLI_OPT_LAT_DEVICE },             \
    { "tune-log", required_argument, NULL, CLI_OPT_TUNE_LOG },                 \
    { "lat-batch", required_argument, NULL, CLI_OPT_LAT_BATCH },               \
    { "tune-budget", required_argument, NULL, CLI_OPT_TUNE_BUDGET }
int  cli_lat_arg(cli_lat *l, const cli_getopt *g, int c);
/* Sets the engine from a device value (cpu | cuda | cuda:N) given to option opt: 1, or -1
 * (usage message printed). */
int  cli_lat_device(cli_lat *l, const char *opt, const char *v);
/* Picks the engine and the default tuning log (out ending in .yqp: OUT.tune.jsonl, as
 * yquant tune; else the folder out's tune.jsonl).  --device cuda without a GPU: a warning
 * line, then the CPU. */
void cli_lat_start(cli_lat *l, const char *out);
/* The GPU latency (ms per forward of l->batch images) of int8 model m into *ms: 1 if
 * measured; 0 when the engine is the CPU (now, or after this failure: warning printed). */
int  cli_lat_measure(cli_lat *l, const yq_model *m, double *ms);
/* latency_device, latency_engine and a "latency" object with the details, into root. */
void cli_lat_json(const cli_lat *l, struct cJSON *root);

#endif
