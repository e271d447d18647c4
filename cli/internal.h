/* What the commands not yet on the public API share: the graph of a Darknet model (for
 * `yquant bench`, which times internal engines).  tests/cli_boundary_test.py lists the files
 * that still include it; each file moved onto the public API leaves that list. */
#ifndef YQ_CLI_INTERNAL_H
#define YQ_CLI_INTERNAL_H

#include "cli/cli.h"
#include "cli/latency.h"
#include "cli/tune.h"
#include "ir/ir.h"

/* The FP32 graph of a Darknet MODEL (cli/graph.c). */
yq_status cli_load_model(const cli_model_opt *o, yq_graph **g, yq_error *err);

#endif
