/* The FP32 graph of MODEL, for the commands that still work on the graph itself (quantize,
 * sweep, sensitivity, tune, bench) rather than through the public API. */
#include <stdio.h>
#include "cli/internal.h"

yq_status cli_load_model(const cli_model_opt *o, yq_graph **g, yq_error *err)
{
    char path[1024];
    yq_status st = cli_model_path(o->model, path, sizeof path, err);
    if (st != YQ_OK) return st;
    yq_model_paths mp;
    st = yq_model_resolve(path, o->weights, &mp, err);
    if (st != YQ_OK) return st;
    yq_import_opt io = { .width = o->width, .height = o->height, .bn = o->bn_pjreddie ? YQ_BN_PJREDDIE : YQ_BN_ALEXEYAB,
                         .synthetic = mp.synthetic, .seed = mp.seed };
    if ((st = yq_darknet_load(mp.cfg, mp.synthetic ? NULL : mp.weights, &io, g, err)) != YQ_OK) return st;
    if (mp.names[0] && (st = yq_graph_load_names(*g, mp.names, err)) != YQ_OK) {
        yq_graph_free(*g);
        *g = NULL;
    }
    return st;
}
