/* The graph: nodes in topological order, all memory in one arena. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir/ir.h"

/* The arena is a chain of blocks; large requests get a block of their own, so
 * weights of a 250 MB model are not copied when the arena grows. */
typedef struct yq_block { struct yq_block *next; size_t used, cap; } yq_block;
struct yq_arena { yq_block *head; };

#define ARENA_BLOCK (1u << 20)
#define ARENA_ALIGN 64

static size_t block_hdr(void) { return (sizeof(yq_block) + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1); }

static void *arena_alloc(yq_arena *a, size_t bytes)
{
    bytes = (bytes + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (bytes == 0) bytes = ARENA_ALIGN;
    yq_block *b = a->head;
    if (!b || b->cap - b->used < bytes) {
        size_t cap = bytes > ARENA_BLOCK / 4 ? bytes : ARENA_BLOCK;
        void *mem = NULL;
        if (posix_memalign(&mem, ARENA_ALIGN, block_hdr() + cap) != 0) return NULL;
        yq_block *nb = mem;
        nb->used = 0;
        nb->cap = cap;
        if (cap == bytes && b) {          /* a big one: keep the current block in front */
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            a->head = nb;
        }
        b = nb;
    }
    char *p = (char *)b + block_hdr() + b->used;
    b->used += bytes;
    memset(p, 0, bytes);
    return p;
}

void *yq_arena_alloc(yq_graph *g, size_t bytes) { return arena_alloc(g->arena, bytes); }

static void arena_clear(yq_arena *a)
{
    for (yq_block *b = a->head; b;) {
        yq_block *n = b->next;
        free(b);
        b = n;
    }
    a->head = NULL;
}

static size_t arena_bytes(const yq_arena *a)
{
    size_t n = 0;
    for (const yq_block *b = a->head; b; b = b->next) n += b->used;
    return n;
}

size_t yq_graph_bytes(const yq_graph *g) { return arena_bytes(g->arena); }

yq_graph *yq_graph_new(void)
{
    yq_graph *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->arena = calloc(1, sizeof *g->arena);
    if (!g->arena) {
        free(g);
        return NULL;
    }
    return g;
}

void yq_graph_free(yq_graph *g)
{
    if (!g) return;
    arena_clear(g->arena);
    free(g->arena);
    free(g->nodes);
    yq_graph_free(g->owned_base);
    free(g);
}

yq_status yq_graph_view(const yq_graph *g, yq_graph **out, yq_error *err)
{
    *out = NULL;
    if (g->q) return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: only an FP32 graph is rewritten (this one is quantized)", g->cfg_path);
    yq_graph *v = yq_graph_new();
    if (v) v->nodes = malloc(sizeof *v->nodes * (size_t)(g->n_nodes ? g->n_nodes : 1));
    if (!v || !v->nodes) {
        yq_graph_free(v);
        return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    }
    memcpy(v->nodes, g->nodes, sizeof *v->nodes * (size_t)g->n_nodes);
    v->n_nodes = v->cap_nodes = g->n_nodes;
    v->base = g;
    v->letter_box = g->letter_box;
    v->class_names = g->class_names;
    v->n_class_names = g->n_class_names;
    memcpy(v->cfg_path, g->cfg_path, sizeof v->cfg_path);
    memcpy(v->weights_path, g->weights_path, sizeof v->weights_path);
    memcpy(v->model_sha256, g->model_sha256, sizeof v->model_sha256);
    *out = v;
    return YQ_OK;
}

yq_status yq_graph_clone(const yq_graph *g, yq_graph **out, yq_error *err)
{
    *out = NULL;
    if (g->q) return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: only an FP32 graph is cloned (this one is quantized)", g->cfg_path);
    yq_graph *c = yq_graph_new();
    if (!c) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    c->nodes = malloc(sizeof *c->nodes * (size_t)(g->n_nodes ? g->n_nodes : 1));
    int ok = c->nodes != NULL;
    if (ok) {
        memcpy(c->nodes, g->nodes, sizeof *c->nodes * (size_t)g->n_nodes);
        c->n_nodes = c->cap_nodes = g->n_nodes;
    }
    for (int i = 0; ok && i < g->n_nodes; i++) {
        const yq_node *n = &g->nodes[i];
        yq_node *m = &c->nodes[i];
        if (n->w) {
            ok = (m->w = yq_arena_alloc(c, sizeof(float) * (size_t)n->n_w)) != NULL;
            if (ok) memcpy(m->w, n->w, sizeof(float) * (size_t)n->n_w);
        }
        if (ok && n->b) {
            size_t nb = sizeof(float) * (size_t)n->p.conv.filters;
            ok = (m->b = yq_arena_alloc(c, nb)) != NULL;
            if (ok) memcpy(m->b, n->b, nb);
        }
    }
    if (ok && g->n_class_names) {
        ok = (c->class_names = yq_arena_alloc(c, sizeof *c->class_names * (size_t)g->n_class_names)) != NULL;
        for (int k = 0; ok && k < g->n_class_names; k++) {
            size_t l = strlen(g->class_names[k]) + 1;
            ok = (c->class_names[k] = yq_arena_alloc(c, l)) != NULL;
            if (ok) memcpy(c->class_names[k], g->class_names[k], l);
        }
        c->n_class_names = g->n_class_names;
    }
    if (!ok) {
        yq_graph_free(c);
        return yq_fail(err, YQ_ERR_NOMEM, "out of memory copying %s", g->cfg_path);
    }
    c->letter_box = g->letter_box;
    memcpy(c->cfg_path, g->cfg_path, sizeof c->cfg_path);
    memcpy(c->weights_path, g->weights_path, sizeof c->weights_path);
    memcpy(c->model_sha256, g->model_sha256, sizeof c->model_sha256);
    *out = c;
    return YQ_OK;
}

yq_node *yq_graph_add(yq_graph *g, yq_op op, yq_error *err)
{
    if (g->n_nodes == g->cap_nodes) {
        int cap = g->cap_nodes ? 2 * g->cap_nodes : 64;
        yq_node *nn = realloc(g->nodes, (size_t)cap * sizeof *nn);
        if (!nn) { yq_fail(err, YQ_ERR_NOMEM, "out of memory growing the graph"); return NULL; }
        g->nodes = nn;
        g->cap_nodes = cap;
    }
    yq_node *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    n->op = op;
    n->layer = g->n_nodes - 1;
    snprintf(n->name, sizeof n->name, "%s_%d", yq_op_name(op), n->layer);
    g->n_nodes++;
    return n;
}

int yq_graph_find(const yq_graph *g, const char *name)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (!strcmp(g->nodes[i].name, name)) return i;
    return -1;
}

const char *yq_op_name(yq_op op)
{
    static const char *names[YQ_OP_COUNT] = {
        "input", "conv", "shortcut", "route", "upsample", "maxpool", "dropout", "yolo", "region", "detect",
    };
    return (unsigned)op < YQ_OP_COUNT ? names[op] : "?";
}

const char *yq_act_name(yq_act a)
{
    static const char *names[YQ_ACT_COUNT] = { "linear", "leaky", "relu", "mish", "swish", "logistic" };
    return (unsigned)a < YQ_ACT_COUNT ? names[a] : "?";
}

yq_shape yq_node_in_shape(const yq_graph *g, const yq_node *n)
{
    yq_shape s = { 0, 0, 0 };
    if (n->n_src > 0) s = g->nodes[n->src[0]].out;
    return s;
}

long yq_node_params(const yq_node *n)
{
    if (n->op != YQ_OP_CONV) return 0;
    return n->n_w + n->p.conv.filters;
}

double yq_node_flops(const yq_graph *g, const yq_node *n)
{
    if (n->op != YQ_OP_CONV) return 0;
    yq_shape in = yq_node_in_shape(g, n);
    const yq_conv_p *c = &n->p.conv;
    double macs = (double)c->filters * (in.c / c->groups) * c->size * c->size * n->out.h * n->out.w;
    return 2.0 * macs;
}

void yq_graph_dump(const yq_graph *g, void *file)
{
    FILE *f = file;
    for (int i = 0; i < g->n_nodes; i++) {
        const yq_node *n = &g->nodes[i];
        fprintf(f, "%4d %-12s %-9s [", i, n->name, yq_op_name(n->op));
        for (int k = 0; k < n->n_src; k++) fprintf(f, "%s%d", k ? "," : "", n->src[k]);
        fprintf(f, "] -> %dx%dx%d", n->out.c, n->out.h, n->out.w);
        if (n->op == YQ_OP_CONV)
            fprintf(f, " k%d s%d p%d g%d %s", n->p.conv.size, n->p.conv.stride, n->p.conv.pad,
                    n->p.conv.groups, yq_act_name(n->act));
        else if (n->op == YQ_OP_MAXPOOL)
            fprintf(f, " k%d s%d p%d", n->p.pool.size, n->p.pool.stride, n->p.pool.pad);
        else if (n->op == YQ_OP_SHORTCUT)
            fprintf(f, " %s", yq_act_name(n->act));
        fputc('\n', f);
    }
}
