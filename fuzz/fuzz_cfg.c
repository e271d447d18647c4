/* libFuzzer harness: arbitrary bytes as a Darknet .cfg.
 *
 * Any input must give YQ_OK or an error with a one-line message, never a crash,
 * undefined behaviour or a leak.  A graph that parses must have consistent
 * shapes: every source precedes its node and every output is non-empty.
 */
#include <stdlib.h>
#include <string.h>
#include "ir/ir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    yq_graph *g = NULL;
    yq_error err = { 0 };
    /* Keep the cfg's own size, so shape arithmetic on big sizes is reached too. */
    yq_status st = yq_darknet_parse_cfg((const char *)data, size, "fuzz.cfg", NULL, &g, &err);
    if (st != YQ_OK) {
        if (g || err.code != st || !err.msg[0] || strchr(err.msg, '\n')) abort();
        return 0;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const yq_node *n = &g->nodes[i];
        if (n->out.c <= 0 || n->out.h <= 0 || n->out.w <= 0) abort();
        for (int k = 0; k < n->n_src; k++)
            if (n->src[k] < 0 || n->src[k] >= i) abort();
        (void)yq_node_flops(g, n);
        (void)yq_node_params(n);
    }
    yq_graph_free(g);
    return 0;
}
