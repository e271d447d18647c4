/* Shape inference, one rule per op.  Errors name the node and its cfg line. */
#include <stdio.h>
#include "ir/ir.h"

/* Largest c, h or w a tensor may have.  Checked on every output, so the sizes
 * feeding the next rule are bounded and c*h*w (as long) cannot overflow. */
#define MAX_DIM (1 << 20)

#define FAIL(code, ...) do { \
    char m_[300]; snprintf(m_, sizeof m_, __VA_ARGS__); \
    return yq_fail(err, code, "layer %d (%s, cfg line %d): %s", n->layer, yq_op_name(n->op), n->line, m_); \
} while (0)

yq_status yq_shape_infer(yq_graph *g, int id, yq_error *err)
{
    yq_node *n = &g->nodes[id];
    for (int k = 0; k < n->n_src; k++)
        if (n->src[k] < 0 || n->src[k] >= id)
            FAIL(YQ_ERR_SHAPE, "input %d refers to layer %d, which does not precede it", k, n->src[k] - 1);
    if (n->op != YQ_OP_INPUT && n->n_src == 0) FAIL(YQ_ERR_SHAPE, "no input");
    yq_shape in = yq_node_in_shape(g, n);
    yq_shape o = in;

    switch (n->op) {
    case YQ_OP_INPUT:
        o = n->out;
        break;
    case YQ_OP_CONV: {
        const yq_conv_p *c = &n->p.conv;
        if (c->groups < 1 || in.c % c->groups || c->filters % c->groups)
            FAIL(YQ_ERR_SHAPE, "groups=%d does not divide input channels %d and filters %d",
                 c->groups, in.c, c->filters);
        o.c = c->filters;
        o.h = (in.h + 2 * c->pad - c->size) / c->stride + 1;
        o.w = (in.w + 2 * c->pad - c->size) / c->stride + 1;
        if (in.h + 2 * c->pad < c->size || in.w + 2 * c->pad < c->size)
            FAIL(YQ_ERR_SHAPE, "kernel %d larger than padded input %dx%d", c->size, in.h, in.w);
        break;
    }
    case YQ_OP_SHORTCUT: {
        yq_shape f = g->nodes[n->src[1]].out;
        if (f.c != in.c || f.h != in.h || f.w != in.w)
            FAIL(YQ_ERR_SHAPE, "adds %dx%dx%d (layer %d) to %dx%dx%d (layer %d): shapes differ",
                 f.c, f.h, f.w, n->src[1] - 1, in.c, in.h, in.w, n->src[0] - 1);
        break;
    }
    case YQ_OP_ROUTE: {
        const yq_route_p *r = &n->p.route;
        if (r->groups < 1 || r->group_id < 0 || r->group_id >= r->groups)
            FAIL(YQ_ERR_SHAPE, "groups=%d group_id=%d", r->groups, r->group_id);
        long oc = 0;
        for (int k = 0; k < n->n_src; k++) {
            yq_shape s = g->nodes[n->src[k]].out;
            if (s.h != in.h || s.w != in.w)
                FAIL(YQ_ERR_SHAPE, "concatenates %dx%d (layer %d) with %dx%d (layer %d): sizes differ",
                     s.h, s.w, n->src[k] - 1, in.h, in.w, n->src[0] - 1);
            if (s.c % r->groups)
                FAIL(YQ_ERR_SHAPE, "groups=%d does not divide %d channels of layer %d", r->groups, s.c, n->src[k] - 1);
            oc += s.c / r->groups;
        }
        if (oc > MAX_DIM) FAIL(YQ_ERR_SHAPE, "concatenates %ld channels (at most %d)", oc, MAX_DIM);
        o.c = (int)oc;
        break;
    }
    case YQ_OP_UPSAMPLE:
        if (n->p.up.stride < 1) FAIL(YQ_ERR_UNSUPPORTED, "stride=%d (only positive strides)", n->p.up.stride);
        if ((long)in.h * n->p.up.stride > MAX_DIM || (long)in.w * n->p.up.stride > MAX_DIM)
            FAIL(YQ_ERR_SHAPE, "%dx%d upsampled x%d is larger than %d", in.h, in.w, n->p.up.stride, MAX_DIM);
        o.h = in.h * n->p.up.stride;
        o.w = in.w * n->p.up.stride;
        break;
    case YQ_OP_MAXPOOL: {
        const yq_pool_p *p = &n->p.pool;
        if (p->size < 1 || p->stride < 1 || p->pad < 0) FAIL(YQ_ERR_SHAPE, "size=%d stride=%d padding=%d", p->size, p->stride, p->pad);
        if (in.h + p->pad < p->size || in.w + p->pad < p->size)
            FAIL(YQ_ERR_SHAPE, "window %d larger than padded input %dx%d", p->size, in.h, in.w);
        o.h = (in.h + p->pad - p->size) / p->stride + 1;
        o.w = (in.w + p->pad - p->size) / p->stride + 1;
        break;
    }
    case YQ_OP_DROPOUT:
        break;
    case YQ_OP_YOLO: {
        const yq_head_p *h = &n->p.head;
        if (in.c != h->n_mask * (h->classes + 5))
            FAIL(YQ_ERR_SHAPE, "input has %d channels, %d anchors x (%d classes + 5) = %d expected",
                 in.c, h->n_mask, h->classes, h->n_mask * (h->classes + 5));
        break;
    }
    case YQ_OP_REGION: {
        const yq_head_p *h = &n->p.head;
        if (in.c != h->num * (h->classes + h->coords + 1))
            FAIL(YQ_ERR_SHAPE, "input has %d channels, %d anchors x (%d classes + %d) = %d expected",
                 in.c, h->num, h->classes, h->coords + 1, h->num * (h->classes + h->coords + 1));
        break;
    }
    case YQ_OP_DETECT: {
        const yq_head_p *h = &n->p.head;
        if (h->classes < 1 || h->reg_max < 1 || h->stride < 1 || in.c != 4 * h->reg_max + h->classes)
            FAIL(YQ_ERR_SHAPE, "input has %d channels, 4 x %d distance bins + %d classes = %d expected (stride %d)",
                 in.c, h->reg_max, h->classes, 4 * h->reg_max + h->classes, h->stride);
        break;
    }
    case YQ_OP_COUNT:
        FAIL(YQ_ERR_UNSUPPORTED, "bad op");
    }
    if (o.c <= 0 || o.h <= 0 || o.w <= 0 || o.c > MAX_DIM || o.h > MAX_DIM || o.w > MAX_DIM)
        FAIL(YQ_ERR_SHAPE, "output size %dx%dx%d", o.c, o.h, o.w);
    n->out = o;
    return YQ_OK;
}
