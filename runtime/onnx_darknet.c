/* include/yq_quant.h yq_export_onnx: a Darknet model, or an int8 package of one, written as an
 * ONNX graph of its own (opset 13), built node by node from yquant's graph:
 *
 *   input    "images", float N x C x H x W (N dynamic): the RGB image in [0, 1], letterboxed or
 *            resized as the metadata's yquant_input says
 *   conv     Conv (BN folded: the weights and bias yquant computes with) and its activation:
 *            leaky LeakyRelu(0.1), relu Relu, logistic Sigmoid, swish x Sigmoid(x),
 *            mish x Tanh(Softplus(x))
 *   shortcut Add of the two tensors, then the activation
 *   route    Concat on channels; darknet's groups / group_id a Slice of the channels
 *   upsample Resize, nearest, asymmetric coordinates, floor: pixel (y, x) <- (y / s, x / s)
 *   maxpool  MaxPool with darknet's padding: pad / 2 before, the rest after (max over the
 *            pixels inside the image, as darknet's -inf padding)
 *   dropout  nothing (its input)
 *   yolo, region heads: their input tensor is a graph output named after the head, float
 *            N x (anchors x (5 + classes)) x h x w, undecoded; the metadata's yquant_heads gives
 *            each one's anchors, mask, classes, scale_x_y, new_coords and stride for a decoder
 *            (yquant's own post-processing decodes them the same way).
 *
 * A package's graph adds, as the package computes it:
 *   - a QuantizeLinear + DequantizeLinear pair on every tensor it holds in int8 (per tensor,
 *     zero point 0; the network input uint8), which every reader then reads;
 *   - a float tensor (a layer kept in float) read by an int8 layer: a pair at the scale the
 *     package quantizes it at, read by the int8 readers only;
 *   - int8 convs: the package's int8 weights (per output channel, axis 0) and int32 bias
 *     (scale input scale x weight scale) behind DequantizeLinear; float convs its float
 *     weights (FP16-rounded where the package has them so).
 * ONNX's int8 saturates at -128 where yquant's stops at -127, and its activations run in
 * float between the conv and the quantize (yquant's int8 engines apply them to the int32
 * sum): a runtime's output agrees with the package's to within such roundings, not bit for bit.
 *
 * Tensor names are yquant's layer names ("conv_12": after the activation; "conv_12_preact"
 * before it), so the FP32 export and a package's export of the same model share them, and the
 * scale table (--json) and TensorRT cache (--trt-cache) name them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "yq_quant.h"
#include "ir/ir.h"
#include "runtime/h5util.h"
#include "runtime/onnx_build.h"
#include "runtime/session.h"

typedef Onnx__NodeProto node_t;
typedef Onnx__TensorProto tensor_t;

typedef struct dx {
    yq_pbpool P;
    const yq_graph *g;              /* g->q NULL: an FP32 model */
    const yq_package_info *info;    /* NULL: an FP32 model */
    const char *src;                /* the source cfg, for messages */
    const char **raw;               /* per node: its output tensor (float) */
    const char **rd;                /* per node: what its readers read (the Q/DQ output where int8) */
    const char **rd8;               /* per float node read by int8 layers: its Q/DQ output */
    node_t **nodes;
    int nn, capn;
    tensor_t **inits;
    int ni, capi;
    Onnx__ValueInfoProto **outs;
    int no, capo;
    char *floats;                   /* "conv_3,conv_9": convs kept in float */
    yq_error *err;
} dx;

#define NOMEM(e) yq_fail((e)->err, YQ_ERR_NOMEM, "out of memory")

static yq_status add_node(dx *e, node_t *n) { return n && !yq_pb_push(&e->P, &e->nodes, &e->nn, &e->capn, n) ? YQ_OK : NOMEM(e); }

static const char *init(dx *e, const char *name, int dt, const int64_t *dims, int nd, const void *raw, size_t bytes)
{
    tensor_t *t = name ? yq_pb_tensor(&e->P, name, dt, dims, nd, raw, bytes) : NULL;
    return t && !yq_pb_push(&e->P, &e->inits, &e->ni, &e->capi, t) ? name : NULL;
}

static const char *nm(dx *e, int id, const char *suffix) { return yq_pb_str(&e->P, e->g->nodes[id].name, suffix); }

/* One node y = op(in...) named after y. */
static node_t *op(dx *e, const char *type, const char *const *in, int nin, const char *y)
{
    const char *out[1] = { y };
    node_t *n = y ? yq_pb_node(&e->P, type, yq_pb_str(&e->P, y, "_node"), in, nin, out, 1) : NULL;
    return n && n->name ? n : NULL;
}

static int is_int8(yq_dtype t) { return t == YQ_S8 || t == YQ_U8; }

/* Does node id compute in int8 (read int8 inputs)? */
static int reads_int8(const dx *e, int id)
{
    const yq_graph *g = e->g;
    return g->q && !g->q[id].float_op && !yq_op_is_head(g->nodes[id].op) && g->nodes[id].op != YQ_OP_DROPOUT;
}

/* Q/DQ of tensor x at scale s (u8: uint8), its output's name from `base`. */
static const char *qdq(dx *e, const char *x, const char *base, float s, int u8)
{
    const int64_t one[1] = { 1 };
    const int dt = u8 ? ONNX__TENSOR_PROTO__DATA_TYPE__UINT8 : ONNX__TENSOR_PROTO__DATA_TYPE__INT8;
    const char *sn = init(e, yq_pb_str(&e->P, base, "_scale"), ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, one, 0, &s, 4);
    const char *zn = init(e, yq_pb_str(&e->P, base, "_zero_point"), dt, one, 0, NULL, 1);
    const char *qn = yq_pb_str(&e->P, base, "_q"), *dn = yq_pb_str(&e->P, base, "_dq");
    if (!sn || !zn || !qn || !dn) return NULL;
    if (add_node(e, yq_pb_qdq(&e->P, "QuantizeLinear", x, sn, zn, qn, -1)) ||
        add_node(e, yq_pb_qdq(&e->P, "DequantizeLinear", qn, sn, zn, dn, -1)))
        return NULL;
    return dn;
}

/* The tensor node `reader` reads for its source src. */
static yq_status input_of(dx *e, int reader, int src, const char **x)
{
    const yq_graph *g = e->g;
    *x = e->rd[src];
    if (!g->q || !reads_int8(e, reader) || is_int8(g->q[src].dtype)) return YQ_OK;
    /* a float tensor read by an int8 layer: quantized at the scale the package gives it */
    if (!e->rd8[src]) {
        const float s = g->q[src].scale;
        if (!(s > 0) || !isfinite(s))
            return yq_fail(e->err, YQ_ERR_FORMAT, "%s: layer %s: no scale for its int8 readers (%g)", e->src, g->nodes[src].name,
                           (double)s);
        if (!(e->rd8[src] = qdq(e, e->raw[src], yq_pb_str(&e->P, e->raw[src], "_i8"), s, 0))) return NOMEM(e);
    }
    *x = e->rd8[src];
    return YQ_OK;
}

/* y = act(x), the activation's nodes named after y; *out: y (x itself for linear). */
static yq_status activation(dx *e, int id, yq_act act, const char *x, const char *y, const char **out)
{
    const yq_node *n = &e->g->nodes[id];
    const char *in1[1] = { x };
    node_t *a;
    switch (act) {
    case YQ_ACT_LINEAR: *out = x; return YQ_OK;
    case YQ_ACT_LEAKY:
        a = op(e, "LeakyRelu", in1, 1, y);
        if (!a || yq_pb_attr_float(&e->P, a, "alpha", 0.1f)) return NOMEM(e);
        break;
    case YQ_ACT_RELU: a = op(e, "Relu", in1, 1, y); break;
    case YQ_ACT_LOGISTIC: a = op(e, "Sigmoid", in1, 1, y); break;
    case YQ_ACT_SWISH: {
        const char *sg = yq_pb_str(&e->P, y, "_sigmoid"), *m[2] = { x, sg };
        if (!sg || add_node(e, op(e, "Sigmoid", in1, 1, sg))) return NOMEM(e);
        a = op(e, "Mul", m, 2, y);
        break;
    }
    case YQ_ACT_MISH: {
        const char *sp = yq_pb_str(&e->P, y, "_softplus"), *th = yq_pb_str(&e->P, y, "_tanh"), *t1[1] = { sp }, *m[2] = { x, th };
        if (!sp || !th || add_node(e, op(e, "Softplus", in1, 1, sp)) || add_node(e, op(e, "Tanh", t1, 1, th))) return NOMEM(e);
        a = op(e, "Mul", m, 2, y);
        break;
    }
    default:
        return yq_fail(e->err, YQ_ERR_UNSUPPORTED, "%s: layer %s: activation %s has no ONNX form here", e->src, n->name,
                       yq_act_name(act));
    }
    if (add_node(e, a)) return NOMEM(e);
    *out = y;
    return YQ_OK;
}

/* The floats list: "a,b,c". */
static yq_status add_float(dx *e, const char *name)
{
    size_t have = e->floats ? strlen(e->floats) : 0, add = strlen(name) + 2;
    char *f = yq_pb_get(&e->P, have + add);
    if (!f) return NOMEM(e);
    snprintf(f, have + add, "%s%s%s", have ? e->floats : "", have ? "," : "", name);
    e->floats = f;
    return YQ_OK;
}

static yq_status conv(dx *e, int id)
{
    const yq_graph *g = e->g;
    const yq_node *n = &g->nodes[id];
    const yq_qnode *q = g->q ? &g->q[id] : NULL;
    const yq_conv_p *c = &n->p.conv;
    const int F = c->filters, K = c->size, Cg = g->nodes[n->src[0]].out.c / c->groups;
    const long nw = (long)F * Cg * K * K;
    const int64_t wd[4] = { F, Cg, K, K }, fd[1] = { F };
    const char *x, *w, *b;
    yq_status st = input_of(e, id, n->src[0], &x);
    if (st) return st;
    if (q && !q->float_op && q->wq) {
        /* int8: the package's weights and per-channel scales, its int32 bias at s_in x w_scale */
        const float s_in = g->q[n->src[0]].scale;
        float *bs = yq_pb_get(&e->P, sizeof *bs * (size_t)F);
        if (!bs) return NOMEM(e);
        for (int f = 0; f < F; f++) bs[f] = s_in * q->w_scale[f];
        const char *wq = init(e, nm(e, id, "_weight_quantized"), ONNX__TENSOR_PROTO__DATA_TYPE__INT8, wd, 4, q->wq, (size_t)nw);
        const char *ws = init(e, nm(e, id, "_weight_scale"), ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, fd, 1, q->w_scale, 4 * (size_t)F);
        const char *wz = init(e, nm(e, id, "_weight_zero_point"), ONNX__TENSOR_PROTO__DATA_TYPE__INT8, fd, 1, NULL, (size_t)F);
        const char *bq = init(e, nm(e, id, "_bias_quantized"), ONNX__TENSOR_PROTO__DATA_TYPE__INT32, fd, 1, q->bq, 4 * (size_t)F);
        const char *bsn = init(e, nm(e, id, "_bias_scale"), ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, fd, 1, bs, 4 * (size_t)F);
        const char *bz = init(e, nm(e, id, "_bias_zero_point"), ONNX__TENSOR_PROTO__DATA_TYPE__INT32, fd, 1, NULL, 4 * (size_t)F);
        w = nm(e, id, "_weight");
        b = nm(e, id, "_bias");
        if (!wq || !ws || !wz || !bq || !bsn || !bz || !w || !b ||
            add_node(e, yq_pb_qdq(&e->P, "DequantizeLinear", wq, ws, wz, w, 0)) ||
            add_node(e, yq_pb_qdq(&e->P, "DequantizeLinear", bq, bsn, bz, b, 0)))
            return NOMEM(e);
    } else {
        const float *wf = yq_conv_weights(n, q);
        if (!wf) return yq_fail(e->err, YQ_ERR_INVALID_ARG, "%s: layer %s has no weights (a cfg alone: give the weights)", e->src, n->name);
        float *zero = n->b ? NULL : yq_pb_get(&e->P, sizeof *zero * (size_t)F);
        w = init(e, nm(e, id, "_weight"), ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, wd, 4, wf, 4 * (size_t)nw);
        b = init(e, nm(e, id, "_bias"), ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, fd, 1, n->b ? n->b : zero, 4 * (size_t)F);
        if (!w || !b || (q && add_float(e, n->name))) return NOMEM(e);
    }
    const char *in[3] = { x, w, b };
    const char *y = n->act == YQ_ACT_LINEAR ? nm(e, id, NULL) : nm(e, id, "_preact");
    node_t *cv = op(e, "Conv", in, 3, y);
    const int64_t ks[2] = { K, K }, ss[2] = { c->stride, c->stride }, pd[4] = { c->pad, c->pad, c->pad, c->pad }, dl[2] = { 1, 1 };
    if (!cv || yq_pb_attr_ints(&e->P, cv, "kernel_shape", ks, 2) || yq_pb_attr_ints(&e->P, cv, "strides", ss, 2) ||
        yq_pb_attr_ints(&e->P, cv, "pads", pd, 4) || yq_pb_attr_ints(&e->P, cv, "dilations", dl, 2) ||
        yq_pb_attr_int(&e->P, cv, "group", c->groups) || add_node(e, cv))
        return NOMEM(e);
    return activation(e, id, n->act, y, nm(e, id, NULL), &e->raw[id]);
}

static yq_status route(dx *e, int id)
{
    const yq_graph *g = e->g;
    const yq_node *n = &g->nodes[id];
    const int G = n->p.route.groups > 1 ? n->p.route.groups : 1, gid = n->p.route.group_id;
    const char **parts = yq_pb_get(&e->P, sizeof *parts * (size_t)n->n_src);
    if (!parts) return NOMEM(e);
    for (int k = 0; k < n->n_src; k++) {
        yq_status st = input_of(e, id, n->src[k], &parts[k]);
        if (st) return st;
        if (G == 1) continue;
        /* darknet's groups: the group_id-th of G equal runs of the source's channels */
        const int C = g->nodes[n->src[k]].out.c;
        char sfx[48];
        snprintf(sfx, sizeof sfx, "_slice%d", k);
        const int64_t one[1] = { 1 }, st0[1] = { (int64_t)(C / G) * gid }, en[1] = { (int64_t)(C / G) * (gid + 1) }, ax[1] = { 1 };
        const char *sn = init(e, nm(e, id, yq_pb_str(&e->P, sfx, "_starts")), ONNX__TENSOR_PROTO__DATA_TYPE__INT64, one, 1, st0, 8);
        const char *en_ = init(e, nm(e, id, yq_pb_str(&e->P, sfx, "_ends")), ONNX__TENSOR_PROTO__DATA_TYPE__INT64, one, 1, en, 8);
        const char *an = init(e, nm(e, id, yq_pb_str(&e->P, sfx, "_axes")), ONNX__TENSOR_PROTO__DATA_TYPE__INT64, one, 1, ax, 8);
        const char *y = n->n_src == 1 ? nm(e, id, NULL) : nm(e, id, sfx);
        const char *in[4] = { parts[k], sn, en_, an };
        if (!sn || !en_ || !an || add_node(e, op(e, "Slice", in, 4, y))) return NOMEM(e);
        parts[k] = y;
    }
    if (n->n_src == 1) {   /* the slice, or the source under this layer's name */
        if (G == 1 && add_node(e, op(e, "Identity", parts, 1, nm(e, id, NULL)))) return NOMEM(e);
        e->raw[id] = G == 1 ? nm(e, id, NULL) : parts[0];
        return YQ_OK;
    }
    node_t *c = op(e, "Concat", parts, n->n_src, nm(e, id, NULL));
    if (!c || yq_pb_attr_int(&e->P, c, "axis", 1) || add_node(e, c)) return NOMEM(e);
    e->raw[id] = c->output[0];
    return YQ_OK;
}

static yq_status layer(dx *e, int id)
{
    const yq_graph *g = e->g;
    const yq_node *n = &g->nodes[id];
    yq_status st = YQ_OK;
    const char *x, *x1;
    switch (n->op) {
    case YQ_OP_CONV: return conv(e, id);
    case YQ_OP_ROUTE: return route(e, id);
    case YQ_OP_DROPOUT: e->raw[id] = e->rd[n->src[0]]; return YQ_OK;
    case YQ_OP_SHORTCUT: {
        if (n->n_src != 2)
            return yq_fail(e->err, YQ_ERR_UNSUPPORTED, "%s: layer %s adds %d tensors: only two are exported", e->src, n->name,
                           n->n_src);
        yq_shape a = g->nodes[n->src[0]].out, b = g->nodes[n->src[1]].out;
        if (a.c != b.c || a.h != b.h || a.w != b.w)
            return yq_fail(e->err, YQ_ERR_UNSUPPORTED, "%s: layer %s adds %dx%dx%d to %dx%dx%d: only equal shapes are exported",
                           e->src, n->name, b.c, b.h, b.w, a.c, a.h, a.w);
        if ((st = input_of(e, id, n->src[0], &x)) || (st = input_of(e, id, n->src[1], &x1))) return st;
        const char *in[2] = { x, x1 };
        const char *y = n->act == YQ_ACT_LINEAR ? nm(e, id, NULL) : nm(e, id, "_preact");
        if (add_node(e, op(e, "Add", in, 2, y))) return NOMEM(e);
        return activation(e, id, n->act, y, nm(e, id, NULL), &e->raw[id]);
    }
    case YQ_OP_UPSAMPLE: {
        if ((st = input_of(e, id, n->src[0], &x))) return st;
        const float sc[4] = { 1, 1, (float)n->p.up.stride, (float)n->p.up.stride };
        const int64_t four[1] = { 4 };
        const char *sn = init(e, nm(e, id, "_scales"), ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, four, 1, sc, sizeof sc);
        const char *in[3] = { x, "", sn };
        node_t *r = sn ? op(e, "Resize", in, 3, nm(e, id, NULL)) : NULL;
        if (!r || yq_pb_attr_str(&e->P, r, "mode", "nearest") ||
            yq_pb_attr_str(&e->P, r, "coordinate_transformation_mode", "asymmetric") ||
            yq_pb_attr_str(&e->P, r, "nearest_mode", "floor") || add_node(e, r))
            return NOMEM(e);
        e->raw[id] = r->output[0];
        return YQ_OK;
    }
    case YQ_OP_MAXPOOL: {
        if ((st = input_of(e, id, n->src[0], &x))) return st;
        const yq_pool_p *p = &n->p.pool;
        const yq_shape in = g->nodes[n->src[0]].out;
        const int lo = p->pad / 2, hi = p->pad - p->pad / 2;
        if ((in.w + p->pad - p->size) / p->stride + 1 != n->out.w || (in.h + p->pad - p->size) / p->stride + 1 != n->out.h)
            return yq_fail(e->err, YQ_ERR_UNSUPPORTED, "%s: layer %s: its output size is not ONNX MaxPool's", e->src, n->name);
        const int64_t ks[2] = { p->size, p->size }, ss[2] = { p->stride, p->stride }, pd[4] = { lo, lo, hi, hi };
        const char *in1[1] = { x };
        node_t *m = op(e, "MaxPool", in1, 1, nm(e, id, NULL));
        if (!m || yq_pb_attr_ints(&e->P, m, "kernel_shape", ks, 2) || yq_pb_attr_ints(&e->P, m, "strides", ss, 2) ||
            yq_pb_attr_ints(&e->P, m, "pads", pd, 4) || add_node(e, m))
            return NOMEM(e);
        e->raw[id] = m->output[0];
        return YQ_OK;
    }
    default:
        return yq_fail(e->err, YQ_ERR_UNSUPPORTED, "%s: layer %s (%s) has no ONNX form here", e->src, n->name, yq_op_name(n->op));
    }
}

/* A float N x c x h x w value (N: the dynamic "batch"). */
static Onnx__ValueInfoProto *value_info(dx *e, const char *name, yq_shape s)
{
    Onnx__ValueInfoProto *v = yq_pb_get(&e->P, sizeof *v);
    Onnx__TypeProto *t = yq_pb_get(&e->P, sizeof *t);
    Onnx__TypeProto__Tensor *tt = yq_pb_get(&e->P, sizeof *tt);
    Onnx__TensorShapeProto *sh = yq_pb_get(&e->P, sizeof *sh);
    Onnx__TensorShapeProto__Dimension *d = yq_pb_get(&e->P, sizeof *d * 4), **dp = yq_pb_get(&e->P, sizeof *dp * 4);
    if (!v || !t || !tt || !sh || !d || !dp) return NULL;
    onnx__value_info_proto__init(v);
    onnx__type_proto__init(t);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sh);
    const int64_t dims[4] = { 0, s.c, s.h, s.w };
    for (int k = 0; k < 4; k++) {
        onnx__tensor_shape_proto__dimension__init(&d[k]);
        if (k == 0) {
            d[k].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d[k].dim_param = "batch";
        } else {
            d[k].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d[k].dim_value = dims[k];
        }
        dp[k] = &d[k];
    }
    sh->n_dim = 4;
    sh->dim = dp;
    tt->has_elem_type = 1;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt->shape = sh;
    t->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    t->tensor_type = tt;
    v->name = (char *)name;
    v->type = t;
    return v;
}

/* The heads for a decoder, as JSON: [{"output": ..., "type": "yolo", ...}, ...]. */
static char *heads_json(dx *e)
{
    const yq_graph *g = e->g;
    size_t cap = 256, len = 0;
    for (int i = 0; i < g->n_nodes; i++) cap += yq_op_is_head(g->nodes[i].op) ? 512 + 64 * (size_t)g->nodes[i].p.head.num : 0;
    char *s = yq_pb_get(&e->P, cap);
    if (!s) return NULL;
#define PUT(...) (len += (size_t)snprintf(s + len, cap - len, __VA_ARGS__))
    PUT("[");
    for (int i = 0, k = 0; i < g->n_nodes; i++) {
        const yq_node *n = &g->nodes[i];
        if (!yq_op_is_head(n->op)) continue;
        const yq_head_p *h = &n->p.head;
        const yq_shape in = g->nodes[n->src[0]].out;
        PUT("%s{\"output\": \"%s\", \"type\": \"%s\", \"classes\": %d, \"coords\": %d, \"stride\": %d, \"scale_x_y\": %.9g, "
            "\"new_coords\": %d, \"softmax\": %d, \"mask\": [",
            k++ ? ", " : "", n->name, yq_op_name(n->op), h->classes, h->coords, in.w ? g->nodes[0].out.w / in.w : 0,
            (double)h->scale_x_y, h->new_coords, h->softmax);
        const int nm_ = n->op == YQ_OP_YOLO ? h->n_mask : h->num;
        for (int a = 0; a < nm_; a++) PUT("%s%d", a ? ", " : "", n->op == YQ_OP_YOLO ? h->mask[a] : a);
        PUT("], \"anchors\": [");
        for (int a = 0; a < 2 * h->num; a++) PUT("%s%.9g", a ? ", " : "", (double)h->anchors[a]);
        PUT("]}");
    }
    PUT("]");
#undef PUT
    return len < cap ? s : NULL;
}

/* Ultralytics' "names" form: {0: 'person', 1: 'bicycle', ...} (quotes in a name escaped). */
static char *names_meta(dx *e)
{
    const yq_graph *g = e->g;
    size_t cap = 8;
    for (int k = 0; k < g->n_class_names; k++) cap += 16 + 2 * strlen(g->class_names[k]);
    char *s = yq_pb_get(&e->P, cap), *p = s;
    if (!s) return NULL;
    *p++ = '{';
    for (int k = 0; k < g->n_class_names; k++) {
        p += sprintf(p, "%s%d: '", k ? ", " : "", k);
        for (const char *c = g->class_names[k]; *c; c++) {
            if (*c == '\'' || *c == '\\') *p++ = '\\';
            *p++ = *c;
        }
        *p++ = '\'';
    }
    *p++ = '}';
    *p = 0;
    return s;
}

static yq_status build(dx *e, Onnx__ModelProto *M, Onnx__GraphProto *G);
static yq_status write_scales(dx *e, const char *json, const char *trt);

yq_status yq_export_onnx(const yq_model *m, const char *out, const yq_export_opt *opt, yq_error *err)
{
    yq_export_opt o = opt ? *opt : yq_export_defaults();
    const yq_graph *g = yq_model_graph(m);
    const yq_package_info *info = yq_model_info(m);
    if (!out || !*out) return yq_fail(err, YQ_ERR_INVALID_ARG, "export: no output file (-o)");
    if (!g) return yq_fail(err, YQ_ERR_INVALID_ARG, "export: no model");
    const char *src = info ? info->cfg_path : g->cfg_path;
    if (info && yq_is_onnx(src)) return yq_export_qdq(m, out, opt, err);
    if (yq_is_onnx(src))
        return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: already an ONNX model (export its int8 package for a Q/DQ model)", src);
    if (o.model) return yq_fail(err, YQ_ERR_INVALID_ARG, "export: --model is for packages of ONNX models (%s is a Darknet model)", src);
    if (g->q && !info) return yq_fail(err, YQ_ERR_INVALID_ARG, "export: an int8 graph without its package record (open the .yqp)");
    if ((o.trt_cache || o.scales_json) && !g->q)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "export: --trt-cache and --json write a package's scales (%s is an FP32 model)", src);
    dx e;
    memset(&e, 0, sizeof e);
    e.g = g;
    e.info = info;
    e.src = src;
    e.err = err;
    Onnx__ModelProto M;
    Onnx__GraphProto G;
    if (o.trt_cache && !strstr(info->qconfig_text, "equalize = off"))
        return yq_fail(err, YQ_ERR_INVALID_ARG,
                       "--trt-cache: the package's int8 weights are not the model's (cross-layer equalization changed them), "
                       "so its activation ranges do not describe the FP32 export: use the Q/DQ model, or quantize "
                       "with --set equalize=off");
    yq_status st = build(&e, &M, &G);
    if (!st) st = yq_pb_write_model(&M, out, err);
    if (!st && g->q) st = write_scales(&e, o.scales_json, o.trt_cache);
    yq_pb_free(&e.P);
    return st;
}

/* --json and --trt-cache: the int8 tensors' scales under the graph's names, the int8 convs'
 * weight scales. */
static yq_status write_scales(dx *e, const char *json, const char *trt)
{
    const yq_graph *g = e->g;
    yq_act_scale *a = yq_pb_get(&e->P, sizeof *a * (size_t)g->n_nodes);
    yq_w_scale *w = yq_pb_get(&e->P, sizeof *w * (size_t)g->n_nodes);
    if (!a || !w) return NOMEM(e);
    int na = 0, nw = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const yq_qnode *q = &g->q[i];
        if (is_int8(q->dtype) && !yq_op_is_head(g->nodes[i].op) && g->nodes[i].op != YQ_OP_DROPOUT)
            a[na++] = (yq_act_scale){ e->raw[i], q->scale, q->dtype == YQ_U8 };
        if (i && g->nodes[i].op == YQ_OP_CONV && !q->float_op && q->wq) {
            const char *wn = nm(e, i, "_weight");
            if (!wn) return NOMEM(e);
            w[nw++] = (yq_w_scale){ wn, q->w_scale, g->nodes[i].p.conv.filters };
        }
    }
    yq_status st = json ? yq_scales_write_json(json, e->src, e->info->model_sha256, a, na, w, nw, e->floats, e->err) : YQ_OK;
    if (!st && trt) st = yq_scales_write_trt(trt, a, na, e->err);
    return st;
}

static yq_status build(dx *e, Onnx__ModelProto *M, Onnx__GraphProto *G)
{
    const yq_graph *g = e->g;
    const int N = g->n_nodes;
    yq_status st;
    e->raw = yq_pb_get(&e->P, sizeof *e->raw * (size_t)N);
    e->rd = yq_pb_get(&e->P, sizeof *e->rd * (size_t)N);
    e->rd8 = yq_pb_get(&e->P, sizeof *e->rd8 * (size_t)N);
    if (!e->raw || !e->rd || !e->rd8) return NOMEM(e);
    if (N < 2 || g->nodes[0].op != YQ_OP_INPUT) return yq_fail(e->err, YQ_ERR_FORMAT, "%s: no layers", e->src);
    e->raw[0] = "images";
    Onnx__ValueInfoProto *in = value_info(e, "images", g->nodes[0].out);
    if (!in) return NOMEM(e);
    for (int i = 0; i < N; i++) {
        const yq_node *n = &g->nodes[i];
        if (yq_op_is_head(n->op)) {
            /* the head's input, under the head's name */
            const int s = n->src[0];
            const char *x = e->rd[s], *in1[1] = { x };
            Onnx__ValueInfoProto *v = value_info(e, n->name, g->nodes[s].out);
            if (!v || add_node(e, op(e, "Identity", in1, 1, n->name)) || yq_pb_push(&e->P, &e->outs, &e->no, &e->capo, v))
                return NOMEM(e);
            e->raw[i] = e->rd[i] = n->name;
            continue;
        }
        if (i && (st = layer(e, i))) return st;
        e->rd[i] = e->raw[i];
        if (g->q && is_int8(g->q[i].dtype) && n->op != YQ_OP_DROPOUT) {
            const float s = g->q[i].scale;
            if (!(s > 0) || !isfinite(s)) return yq_fail(e->err, YQ_ERR_FORMAT, "%s: layer %s: scale %g", e->src, n->name, (double)s);
            if (!(e->rd[i] = qdq(e, e->raw[i], e->raw[i], s, g->q[i].dtype == YQ_U8))) return NOMEM(e);
        } else if (n->op == YQ_OP_DROPOUT)
            e->rd[i] = e->rd[n->src[0]], e->rd8[i] = e->rd8[n->src[0]];
    }
    if (!e->no) return yq_fail(e->err, YQ_ERR_FORMAT, "%s: no detection heads", e->src);
    /* metadata */
    char sha[65], size[64];
    if (e->info) snprintf(sha, sizeof sha, "%s", e->info->model_sha256);
    else yq_hex_encode(g->model_sha256, 32, sha);
    const yq_shape is = g->nodes[0].out;
    const int lb = e->info ? e->info->letterbox : g->letter_box;
    snprintf(size, sizeof size, "%dx%d", is.w, is.h);
    const char *keys[10], *vals[10];
    int nmd = 0;
#define META(k, v) (keys[nmd] = (k), vals[nmd++] = (v))
    META("yquant_version", YQ_VERSION);
    META("yquant_source", e->src);
    META("yquant_model_sha256", sha);
    META("yquant_input", lb ? "images: RGB in [0, 1], N x 3 x H x W, letterboxed as darknet does (grey 0.5 borders)"
                            : "images: RGB in [0, 1], N x 3 x H x W, resized to the network size");
    META("imgsz", size);
    META("yquant_heads", heads_json(e));
    if (g->class_names && g->n_class_names) META("names", names_meta(e));
    if (e->info) {
        META("yquant_qconfig", e->info->qconfig_text);
        META("yquant_accuracy", e->info->accuracy_json);
        META("yquant_float_convs", e->floats ? e->floats : "");
    }
#undef META
    Onnx__StringStringEntryProto **md = yq_pb_get(&e->P, sizeof *md * (size_t)nmd);
    if (!md) return NOMEM(e);
    for (int k = 0; k < nmd; k++) {
        md[k] = yq_pb_get(&e->P, sizeof *md[k]);
        if (!md[k] || !vals[k]) return NOMEM(e);
        onnx__string_string_entry_proto__init(md[k]);
        md[k]->key = (char *)keys[k];
        md[k]->value = (char *)vals[k];
    }
    Onnx__OperatorSetIdProto *ops = yq_pb_get(&e->P, sizeof *ops), **opp = yq_pb_get(&e->P, sizeof *opp);
    Onnx__ValueInfoProto **ins = yq_pb_get(&e->P, sizeof *ins);
    if (!ops || !opp || !ins) return NOMEM(e);
    onnx__operator_set_id_proto__init(ops);
    ops->domain = "";
    ops->has_version = 1;
    ops->version = 13;
    opp[0] = ops;
    ins[0] = in;
    onnx__graph_proto__init(G);
    G->name = "yquant";
    G->n_node = (size_t)e->nn, G->node = e->nodes;
    G->n_initializer = (size_t)e->ni, G->initializer = e->inits;
    G->n_input = 1, G->input = ins;
    G->n_output = (size_t)e->no, G->output = e->outs;
    onnx__model_proto__init(M);
    M->has_ir_version = 1;
    M->ir_version = 7;
    M->producer_name = "yquant";
    M->producer_version = YQ_VERSION;
    M->n_opset_import = 1, M->opset_import = opp;
    M->graph = G;
    M->n_metadata_props = (size_t)nmd, M->metadata_props = md;
    return YQ_OK;
}
