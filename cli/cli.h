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
/* "--size 416" or "--size 416x320" */
int  cli_parse_size(const char *s, int *w, int *h);
/* Prints "yquant: <msg>" to stderr and returns 1 (the exit status). */
int  cli_error(const yq_error *err);
int  cli_usage_error(const char *fmt, ...);

int cmd_inspect(int argc, char **argv);
int cmd_detect(int argc, char **argv);

#endif
