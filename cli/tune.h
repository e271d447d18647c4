/* The tune command's work once its flags are read (cli/cmd_tune.c, on include/yq_tune.h),
 * shared with quantize, which tunes the package it wrote: no command calls another. */
#ifndef YQ_CLI_TUNE_H
#define YQ_CLI_TUNE_H

#include "cli/cli.h"
#include "yq_tune.h"

typedef struct cli_tune_req {
    cli_model_opt mo;         /* mo.model: a .yqp package, or a Darknet model (tuned, logged only) */
    yq_tuning_opt o;          /* o.log NULL: beside the package (PKG.tune.jsonl; yquant-tune.jsonl for a model) */
    int write;                /* store the choices in the package */
    const char *json;
} cli_tune_req;
cli_tune_req cli_tune_defaults(void);   /* batch 1, cuda, writing, the tuner's defaults */
int cli_tune(const cli_tune_req *r);    /* 0; else the exit status, after printing why */

#endif
