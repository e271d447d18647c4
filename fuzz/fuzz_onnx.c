/* libFuzzer harness: arbitrary bytes as an ONNX model (ir/onnx.c).
 *
 * Any input must give YQ_OK or an error with a one-line message, never a crash,
 * undefined behaviour or a leak.  A graph that imports must have consistent shapes: every
 * source precedes its node, every output is non-empty, and it ends in detect heads. */
#include <stdlib.h>
#include <string.h>
#include "ir/ir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    yq_graph *g = NULL;
    yq_error err = { 0 };
    yq_status st = yq_onnx_load_mem(data, size, "fuzz.onnx", NULL, &g, &err);
    if (st != YQ_OK) {
        if (g || err.code != st || !err.msg[0] || strchr(err.msg, '\n')) abort();
        return 0;
    }
    int heads = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const yq_node *n = &g->nodes[i];
        if (n->out.c <= 0 || n->out.h <= 0 || n->out.w <= 0) abort();
        for (int k = 0; k < n->n_src; k++)
            if (n->src[k] < 0 || n->src[k] >= i) abort();
        heads += n->op == YQ_OP_DETECT;
        (void)yq_node_flops(g, n);
        (void)yq_node_params(n);
    }
    if (!heads) abort();
    yq_graph_free(g);
    return 0;
}
