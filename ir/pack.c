#include <stdlib.h>
#include "ir/pack.h"

static int by_size_desc(const void *a, const void *b)
{
    const yq_buf *x = a, *y = b;
    if (x->size != y->size) return x->size < y->size ? 1 : -1;
    return x->id - y->id;
}

size_t yq_pack_buffers(yq_buf *bufs, int m, const int *last_use, size_t *off)
{
    qsort(bufs, (size_t)m, sizeof *bufs, by_size_desc);
    size_t total = 0;
    for (int a = 0; a < m; a++) {
        int id = bufs[a].id;
        size_t o = 0;
        for (int moved = 1; moved;) {
            moved = 0;
            for (int b = 0; b < a; b++) {
                int ob = bufs[b].id;
                int overlap = !(last_use[ob] < id || last_use[id] < ob);
                if (overlap && o < off[ob] + bufs[b].size && off[ob] < o + bufs[a].size) {
                    o = off[ob] + bufs[b].size;
                    moved = 1;
                }
            }
        }
        off[id] = o;
        if (o + bufs[a].size > total) total = o + bufs[a].size;
    }
    return total;
}

void yq_buffer_lifetimes(const yq_graph *g, const int *owner, int flags, int *last_use)
{
    int n = g->n_nodes;
    for (int i = 0; i < n; i++) last_use[i] = i;
    for (int i = 0; i < n; i++) {
        const yq_node *nd = &g->nodes[i];
        for (int k = 0; k < nd->n_src; k++) {
            int o = owner[nd->src[k]];
            if (last_use[o] < i) last_use[o] = i;
        }
        if ((flags & YQ_PLAN_KEEP_ALL) || ((flags & YQ_PLAN_KEEP_HEADS) && yq_op_is_head(nd->op)))
            last_use[owner[i]] = n;
    }
    if (n > 0 && last_use[0] < 1) last_use[0] = 1;
}
