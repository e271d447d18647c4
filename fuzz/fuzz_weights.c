/* libFuzzer harness: arbitrary bytes as the .weights file of tests/fixtures/tiny.cfg.
 *
 * The cfg is embedded (comments dropped) so the binary needs no file at run
 * time; keep it in step with the fixture.  Each input is read into a freshly
 * parsed graph: reading weights allocates from the graph's arena, so one graph
 * reused across inputs would grow without bound.  An input that loads must
 * leave finite weights everywhere.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ir/ir.h"

static const char tiny_cfg[] =
    "[net]\nwidth=32\nheight=32\nchannels=3\n"
    "[convolutional]\nbatch_normalize=1\nfilters=4\nsize=3\nstride=1\npad=1\nactivation=leaky\n"
    "[maxpool]\nsize=2\nstride=2\n"
    "[convolutional]\nfilters=4\nsize=1\nstride=1\npad=1\nactivation=linear\n"
    "[shortcut]\nfrom=-2\nactivation=linear\n"
    "[route]\nlayers=-1,-3\n"
    "[upsample]\nstride=2\n"
    "[convolutional]\nfilters=21\nsize=1\nstride=1\npad=1\nactivation=linear\n"
    "[yolo]\nmask=0,1,2\nanchors=10,14, 23,27, 37,58\nclasses=2\nnum=3\n";

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static yq_graph *parse_tiny(void)
{
    yq_graph *g = NULL;
    yq_error err;
    if (yq_darknet_parse_cfg(tiny_cfg, sizeof tiny_cfg - 1, "tiny.cfg", NULL, &g, &err) != YQ_OK) abort();
    return g;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    yq_graph *g = parse_tiny();    /* the embedded cfg must parse: fail at once, not per input */
    yq_graph_free(g);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    yq_graph *g = parse_tiny();
    yq_error err = { 0 };
    /* The last byte picks the BN convention, so both folding paths run. */
    yq_bn_eps bn = size && (data[size - 1] & 1) ? YQ_BN_PJREDDIE : YQ_BN_ALEXEYAB;
    yq_status st = yq_darknet_read_weights(g, data, size, "fuzz.weights", bn, &err);
    if (st != YQ_OK) {
        if (err.code != st || !err.msg[0] || strchr(err.msg, '\n')) abort();
    } else {
        for (int i = 0; i < g->n_nodes; i++) {
            const yq_node *n = &g->nodes[i];
            if (n->op != YQ_OP_CONV) continue;
            if (!n->w || !n->b) abort();
            for (long k = 0; k < n->n_w; k++)
                if (!isfinite(n->w[k])) abort();
            for (int k = 0; k < n->p.conv.filters; k++)
                if (!isfinite(n->b[k])) abort();
        }
    }
    yq_graph_free(g);
    return 0;
}
