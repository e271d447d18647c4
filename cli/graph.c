/* The FP32 graph of MODEL, for the commands that still work on the graph itself (quantize,
 * sweep, sensitivity, tune, bench) rather than through the public API. */
#include <stdio.h>
#include "cli/internal.h"

yq_status cli_load_model(const cli_model_opt *o, yq_graph **g, yq_error *err)
{
    char path[1024];
    yq_status st = cli_model_path(o->model, path, sizeof path, err);
    if (st != YQ_OK) return st;
    yq_import_opt io = { .width = o->width, .height = o->height, .bn = o->bn_pjreddie ? YQ_BN_PJREDDIE : YQ_BN_ALEXEYAB };
    return yq_load_model(path, o->weights, &io, g, err);
}
