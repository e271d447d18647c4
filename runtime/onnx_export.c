/* include/yq_quant.h yq_export_qdq: an int8 package of an ONNX model back into ONNX, as the
 * original graph with QuantizeLinear / DequantizeLinear pairs carrying the package's scales.
 *
 * The package's nodes came from the ONNX graph's nodes (ir/onnx.c numbers each node of ours
 * by the position of the ONNX node it came from: yq_node.line = k + 1), and the package
 * records the sha256 of the model's bytes: the export reads the model the package names (or
 * the one given), refuses it unless the digest is the package's, and then maps node by node:
 *
 *   - every int8 tensor of the package (a node output of type s8/u8: conv outputs after their
 *     activation, i.e. a SiLU's Mul output; Concat, Split parts, Add, Resize, MaxPool outputs;
 *     the network input) gets QuantizeLinear + DequantizeLinear right after the node that
 *     makes it, scale = the package's (per tensor, zero point 0), and every reader of the
 *     tensor reads the dequantized one;
 *   - every int8 conv's weights become the package's int8 weights (INT8 initializer, per
 *     output channel scales, DequantizeLinear on axis 0) and its bias the package's int32 bias
 *     (scale input scale x weight scale, axis 0), which is exactly what the int8 engines add;
 *     a conv kept in float gets the package's float weights and bias.  The package's weights,
 *     not the model's: cross-layer equalization and bias correction changed them, and the
 *     package's activation scales describe the tensors of the changed model;
 *   - a SiLU's pre-activation is left unquantized (the int8 engines look it up on a 4096-point
 *     grid, finer than int8), as are the layers the package keeps in float and the detect
 *     head's decode after the last convs (yquant's own post-processing);
 *   - the model's metadata gains yquant's: version, the resolved qconfig, the accuracy record,
 *     the convs kept in float.
 *
 * Options write the same activation scales for other tools: a TensorRT calibration cache
 * (tensor name: the hex of the float32 scale, amax / 127), valid for the original model only
 * where the package's weights are the model's (no equalization; checked), and a JSON table.
 *
 * Nothing of the unpacked model is modified: changed nodes are shallow copies with inputs of
 * their own, and the model's node, initializer and metadata arrays are swapped for the
 * packing and swapped back before protobuf-c frees the message. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>
#include "yq_quant.h"
#include "ir/ir.h"
#include "runtime/h5util.h"
#include "runtime/session.h"
#include "runtime/onnx_build.h"

typedef Onnx__NodeProto node_t;
typedef Onnx__TensorProto tensor_t;

/* An int8 tensor of the package: its ONNX name and scale. */
typedef struct qt { const char *name; float scale; int u8; int producer; /* ONNX node, -1: a graph input */ } qt;

typedef struct ex {
    yq_pbpool P;
    const char *path;               /* the model */
    Onnx__ModelProto *m;
    const yq_graph *g;
    const yq_package_info *info;
    qt *q;
    int nq;
    node_t **out;                   /* the new node list */
    int nout, capout;
    tensor_t **init;                /* initializers added */
    int ninit, capinit;
    const char **drop;              /* initializers replaced (dropped unless still read) */
    int ndrop, capdrop;
    char *floats;                   /* "name,name,...": convs kept in float */
    size_t floats_len;
    int weights_changed;            /* an int8 conv's weights are not the model's, quantized */
    yq_error *err;
} ex;

#define NOMEM(e) yq_fail((e)->err, YQ_ERR_NOMEM, "out of memory")

/* Appends x to a growing array of pointers in the pool (*a, *n used, *cap allocated). */
static yq_status push(ex *e, void *a, int *n, int *cap, void *x)
{
    return yq_pb_push(&e->P, a, n, cap, x) ? NOMEM(e) : YQ_OK;
}

static yq_status push_node(ex *e, node_t *n) { return push(e, &e->out, &e->nout, &e->capout, n); }
static yq_status push_init(ex *e, tensor_t *t) { return push(e, &e->init, &e->ninit, &e->capinit, t); }

/* An initializer of the new graph: type dt, dims[nd], raw bytes copied (NULL: zeros). */
static tensor_t *tensor(ex *e, const char *name, int dt, const int64_t *dims, int nd, const void *raw, size_t bytes)
{
    tensor_t *t = yq_pb_tensor(&e->P, name, dt, dims, nd, raw, bytes);
    return t && push_init(e, t) == YQ_OK ? t : NULL;
}

static const tensor_t *find_init(const Onnx__GraphProto *G, const char *name)
{
    for (size_t i = 0; i < G->n_initializer; i++)
        if (G->initializer[i]->name && !strcmp(G->initializer[i]->name, name)) return G->initializer[i];
    return NULL;
}

/* The ONNX node of ours (position line - 1), checked to be of op type `op`. */
static yq_status onnx_node(ex *e, int id, const char *op, int *k)
{
    const yq_node *n = &e->g->nodes[id];
    const Onnx__GraphProto *G = e->m->graph;
    *k = n->line - 1;
    if (*k < 0 || (size_t)*k >= G->n_node || strcmp(G->node[*k]->op_type ? G->node[*k]->op_type : "", op))
        return yq_fail(e->err, YQ_ERR_FORMAT, "%s: the package's node %d (%s) does not map to a %s node of this model",
                       e->path, id, n->name, op);
    return YQ_OK;
}

/* The ONNX tensor our node id's output is, and the ONNX node making it (-1: the input). */
static yq_status tensor_of(ex *e, int id, const char **name, int *producer)
{
    const Onnx__GraphProto *G = e->m->graph;
    const yq_node *n = &e->g->nodes[id];
    int k;
    yq_status st;
    if (id == 0) {
        for (size_t i = 0; i < G->n_input; i++)
            if (G->input[i]->name && !find_init(G, G->input[i]->name)) {
                *name = G->input[i]->name;
                *producer = -1;
                return YQ_OK;
            }
        return yq_fail(e->err, YQ_ERR_FORMAT, "%s: no graph input", e->path);
    }
    switch (n->op) {
    case YQ_OP_CONV:
        if ((st = onnx_node(e, id, "Conv", &k))) return st;
        *name = G->node[k]->output[0];
        *producer = k;
        if (n->act == YQ_ACT_SWISH) {   /* Mul(x, Sigmoid(x)) after it: the Mul's output */
            for (size_t j = (size_t)k + 1; j < G->n_node; j++) {
                const node_t *mn = G->node[j];
                if (!mn->op_type || strcmp(mn->op_type, "Mul") || mn->n_input != 2 || mn->n_output < 1) continue;
                if (strcmp(mn->input[0], *name) && strcmp(mn->input[1], *name)) continue;
                *name = mn->output[0];
                *producer = (int)j;
                return YQ_OK;
            }
            return yq_fail(e->err, YQ_ERR_FORMAT, "%s: conv '%s': its SiLU's Mul is not in the model", e->path, n->name);
        }
        return YQ_OK;
    case YQ_OP_ROUTE:
        if (n->p.route.groups > 1) {
            if ((st = onnx_node(e, id, "Split", &k))) return st;
            if ((size_t)n->p.route.group_id >= G->node[k]->n_output)
                return yq_fail(e->err, YQ_ERR_FORMAT, "%s: split '%s': no output %d", e->path, n->name, n->p.route.group_id);
            *name = G->node[k]->output[n->p.route.group_id];
        } else {
            if ((st = onnx_node(e, id, "Concat", &k))) return st;
            *name = G->node[k]->output[0];
        }
        *producer = k;
        return YQ_OK;
    case YQ_OP_SHORTCUT: st = onnx_node(e, id, "Add", &k); break;
    case YQ_OP_UPSAMPLE: st = onnx_node(e, id, "Resize", &k); break;
    case YQ_OP_MAXPOOL: st = onnx_node(e, id, "MaxPool", &k); break;
    default:
        return yq_fail(e->err, YQ_ERR_UNSUPPORTED, "%s: the package's node %d (%s, %s) has no ONNX tensor", e->path, id,
                       n->name, yq_op_name(n->op));
    }
    if (st) return st;
    *name = G->node[k]->output[0];
    *producer = k;
    return YQ_OK;
}

static const char *dq_name(const ex *e, const char *name)
{
    for (int i = 0; i < e->nq; i++)
        if (!strcmp(e->q[i].name, name)) return e->q[i].name;
    return NULL;
}

/* The node with every read of a quantized tensor turned into its dequantized copy, and a
 * conv's weights and bias replaced (w, b non-NULL): the node itself when nothing changes,
 * else a shallow copy with inputs of its own. */
static node_t *rewired(ex *e, node_t *n, const char *w, const char *b)
{
    int change = w || b;
    for (size_t i = 0; i < n->n_input && !change; i++) change = *n->input[i] && dq_name(e, n->input[i]);
    if (!change) return n;
    node_t *c = yq_pb_get(&e->P, sizeof *c);
    size_t ni = n->n_input < 3 && b ? 3 : n->n_input;
    char **in = yq_pb_get(&e->P, sizeof *in * ni);
    if (!c || !in) return NULL;
    *c = *n;
    for (size_t i = 0; i < ni; i++) {
        const char *x = i < n->n_input ? n->input[i] : "";
        if (*x && dq_name(e, x)) {
            x = yq_pb_str(&e->P, x, "_dq");
            if (!x) return NULL;
        }
        in[i] = (char *)x;
    }
    if (w) in[1] = (char *)w;
    if (b) in[2] = (char *)b;
    c->n_input = ni;
    c->input = in;
    return c;
}

static yq_status add_drop(ex *e, const char *name) { return push(e, &e->drop, &e->ndrop, &e->capdrop, (void *)name); }

/* A conv's weights and bias as the package has them: w, b get the new input names. */
static yq_status conv_params(ex *e, int id, node_t *cn, const char **w, const char **b)
{
    const yq_node *n = &e->g->nodes[id];
    const yq_qnode *q = &e->g->q[id];
    const Onnx__GraphProto *G = e->m->graph;
    if (cn->n_input < 2) return yq_fail(e->err, YQ_ERR_FORMAT, "%s: Conv '%s' without weights", e->path, cn->name);
    const char *W = cn->input[1], *B = cn->n_input > 2 && *cn->input[2] ? cn->input[2] : NULL;
    const tensor_t *wt = find_init(G, W);
    const int F = n->p.conv.filters, K = n->p.conv.size, Cg = e->g->nodes[n->src[0]].out.c / n->p.conv.groups;
    const long nw = (long)F * Cg * K * K;
    if (!wt || wt->n_dims != 4 || wt->dims[0] != F || wt->dims[1] != Cg || wt->dims[2] != K || wt->dims[3] != K)
        return yq_fail(e->err, YQ_ERR_FORMAT, "%s: Conv '%s': its weights are not the package's shape (%d x %d x %d x %d)", e->path,
                       cn->name, F, Cg, K, K);
    yq_status st = add_drop(e, W);
    if (!st && B) st = add_drop(e, B);
    if (st) return st;
    const int64_t wd[4] = { F, Cg, K, K }, fd[1] = { F };
    if (q->float_op || !q->wq) {                      /* kept in float: the package's float weights */
        const float *wf = yq_conv_weights(n, q);
        const char *wn = yq_pb_str(&e->P, W, "_yq"), *bn = yq_pb_str(&e->P, B ? B : W, B ? "_yq" : "_bias_yq");
        if (!wn || !bn || !wf) return wf ? NOMEM(e) : yq_fail(e->err, YQ_ERR_FORMAT, "%s: float conv '%s' without weights", e->path, n->name);
        if (!tensor(e, wn, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, wd, 4, wf, sizeof(float) * (size_t)nw) ||
            !tensor(e, bn, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, fd, 1, n->b, sizeof(float) * (size_t)F))
            return NOMEM(e);
        *w = wn, *b = bn;
        size_t add = strlen(cn->name ? cn->name : "") + 1;
        char *f = yq_pb_get(&e->P, e->floats_len + add + 1);
        if (!f) return NOMEM(e);
        if (e->floats_len) memcpy(f, e->floats, e->floats_len);
        snprintf(f + e->floats_len, add + 1, "%s%s", e->floats_len ? "," : "", cn->name ? cn->name : "");
        e->floats = f;
        e->floats_len = strlen(f);
        return YQ_OK;
    }
    /* int8: the package's weights and per-channel scales, its int32 bias at s_in x w_scale */
    const float s_in = e->g->q[n->src[0]].scale;
    const char *wq = yq_pb_str(&e->P, W, "_quantized"), *ws = yq_pb_str(&e->P, W, "_scale"), *wz = yq_pb_str(&e->P, W, "_zero_point");
    const char *wdq = yq_pb_str(&e->P, W, "_dequantized");
    const char *bb = B ? B : yq_pb_str(&e->P, cn->name ? cn->name : W, "_bias");
    const char *bq = yq_pb_str(&e->P, bb, "_quantized"), *bs = yq_pb_str(&e->P, bb, "_scale"), *bz = yq_pb_str(&e->P, bb, "_zero_point");
    const char *bdq = yq_pb_str(&e->P, bb, "_dequantized");
    float *bsc = yq_pb_get(&e->P, sizeof(float) * (size_t)F);
    if (!wq || !ws || !wz || !wdq || !bb || !bq || !bs || !bz || !bdq || !bsc) return NOMEM(e);
    for (int f = 0; f < F; f++) bsc[f] = s_in * q->w_scale[f];
    if (!tensor(e, wq, ONNX__TENSOR_PROTO__DATA_TYPE__INT8, wd, 4, q->wq, (size_t)nw) ||
        !tensor(e, ws, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, fd, 1, q->w_scale, sizeof(float) * (size_t)F) ||
        !tensor(e, wz, ONNX__TENSOR_PROTO__DATA_TYPE__INT8, fd, 1, NULL, (size_t)F) ||
        !tensor(e, bq, ONNX__TENSOR_PROTO__DATA_TYPE__INT32, fd, 1, q->bq, sizeof(int32_t) * (size_t)F) ||
        !tensor(e, bs, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, fd, 1, bsc, sizeof(float) * (size_t)F) ||
        !tensor(e, bz, ONNX__TENSOR_PROTO__DATA_TYPE__INT32, fd, 1, NULL, sizeof(int32_t) * (size_t)F))
        return NOMEM(e);
    node_t *d1 = yq_pb_qdq(&e->P, "DequantizeLinear", wq, ws, wz, wdq, 0), *d2 = yq_pb_qdq(&e->P, "DequantizeLinear", bq, bs, bz, bdq, 0);
    if (!d1 || !d2 || push_node(e, d1) || push_node(e, d2)) return NOMEM(e);
    *w = wdq, *b = bdq;
    /* are these the model's weights, quantized? (equalization scales filters: then not) */
    if (!e->weights_changed) {
        long nf;
        const int dt = wt->data_type;
        long bad = 0;
        if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT && wt->has_raw_data && wt->raw_data.len == (size_t)nw * 4) nf = nw;
        else if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT && (long)wt->n_float_data == nw) nf = nw;
        else nf = 0;
        for (long i = 0; i < nf; i++) {
            float v;
            if (wt->has_raw_data) memcpy(&v, wt->raw_data.data + 4 * i, 4);
            else v = wt->float_data[i];
            double r = nearbyint((double)v / (double)q->w_scale[i / (nw / F)]);
            r = r < -127 ? -127 : r > 127 ? 127 : r;
            bad += fabs(r - q->wq[i]) > 1;
        }
        if (!nf || bad > nw / 1000) e->weights_changed = 1;
    }
    return YQ_OK;
}

static yq_status sha_hex(const uint8_t *data, size_t len, char hex[65])
{
    uint8_t d[32];
    unsigned int dl = 0;
    EVP_MD_CTX *mc = EVP_MD_CTX_new();
    int ok = mc && EVP_DigestInit_ex(mc, EVP_sha256(), NULL) && EVP_DigestUpdate(mc, data, len) &&
             EVP_DigestFinal_ex(mc, d, &dl);
    EVP_MD_CTX_free(mc);
    if (!ok) return YQ_ERR_NOMEM;
    yq_hex_encode(d, 32, hex);
    return YQ_OK;
}

/* The new graph: nodes (the model's, rewired, with Q/DQ pairs after the int8 tensors'
 * producers and weight DQs before their convs) and initializers. */
static yq_status build(ex *e)
{
    const Onnx__GraphProto *G = e->m->graph;
    const yq_graph *g = e->g;
    yq_status st;
    /* the int8 tensors */
    e->q = yq_pb_get(&e->P, sizeof *e->q * (size_t)g->n_nodes);
    if (!e->q) return NOMEM(e);
    for (int i = 0; i < g->n_nodes; i++) {
        const yq_qnode *q = &g->q[i];
        if (yq_op_is_head(g->nodes[i].op) || (q->dtype != YQ_S8 && q->dtype != YQ_U8)) continue;
        /* a YOLOv5 head conv run int8 (--head int8): its int8 tensor is the decode's Sigmoid
         * output, which the ONNX graph computes after a Reshape and Transpose: left float */
        if (g->nodes[i].op == YQ_OP_CONV && g->nodes[i].act == YQ_ACT_LOGISTIC) continue;
        qt t = { NULL, q->scale, q->dtype == YQ_U8, -1 };
        if ((st = tensor_of(e, i, &t.name, &t.producer))) return st;
        if (!(q->scale > 0) || !isfinite(q->scale))
            return yq_fail(e->err, YQ_ERR_FORMAT, "%s: node %s: scale %g", e->path, g->nodes[i].name, (double)q->scale);
        e->q[e->nq++] = t;
    }
    /* the conv of each ONNX Conv node (-1: none, e.g. the decode's DFL) */
    int *conv_of = yq_pb_get(&e->P, sizeof *conv_of * (G->n_node ? G->n_node : 1));
    if (!conv_of) return NOMEM(e);
    for (size_t k = 0; k < G->n_node; k++) conv_of[k] = -1;
    for (int i = 1; i < g->n_nodes; i++)
        if (g->nodes[i].op == YQ_OP_CONV) {
            int k;
            if ((st = onnx_node(e, i, "Conv", &k))) return st;
            conv_of[k] = i;
        }
    /* graph inputs quantized: their Q/DQ first */
    for (int pass = -1; pass < (int)G->n_node; pass++) {
        if (pass >= 0) {
            node_t *n = G->node[pass];
            const char *w = NULL, *b = NULL;
            if (conv_of[pass] >= 0 && (st = conv_params(e, conv_of[pass], n, &w, &b))) return st;
            node_t *r = rewired(e, n, w, b);
            if (!r || push_node(e, r)) return NOMEM(e);
        }
        for (int t = 0; t < e->nq; t++) {
            if (e->q[t].producer != pass) continue;
            const char *nm = e->q[t].name;
            const char *s = yq_pb_str(&e->P, nm, "_scale"), *z = yq_pb_str(&e->P, nm, "_zero_point");
            const char *qn = yq_pb_str(&e->P, nm, "_q"), *dn = yq_pb_str(&e->P, nm, "_dq");
            const int64_t one[1] = { 1 };
            if (!s || !z || !qn || !dn) return NOMEM(e);
            tensor_t *ts = tensor(e, s, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, one, 0, &e->q[t].scale, 4);
            tensor_t *tz = tensor(e, z, e->q[t].u8 ? ONNX__TENSOR_PROTO__DATA_TYPE__UINT8 : ONNX__TENSOR_PROTO__DATA_TYPE__INT8,
                                  one, 0, NULL, 1);
            node_t *a = yq_pb_qdq(&e->P, "QuantizeLinear", nm, s, z, qn, -1), *d = yq_pb_qdq(&e->P, "DequantizeLinear", qn, s, z, dn, -1);
            if (!ts || !tz || !a || !d || push_node(e, a) || push_node(e, d)) return NOMEM(e);
        }
    }
    return YQ_OK;
}

/* The initializers of the new graph: the model's that are still read, then the new ones. */
static yq_status inits(ex *e, tensor_t ***out, size_t *n)
{
    const Onnx__GraphProto *G = e->m->graph;
    tensor_t **a = yq_pb_get(&e->P, sizeof *a * (G->n_initializer + (size_t)e->ninit + 1));
    if (!a) return NOMEM(e);
    size_t k = 0;
    for (size_t i = 0; i < G->n_initializer; i++) {
        const char *nm = G->initializer[i]->name ? G->initializer[i]->name : "";
        int dropped = 0, read = 0;
        for (int d = 0; d < e->ndrop && !dropped; d++) dropped = !strcmp(e->drop[d], nm);
        for (int j = 0; j < e->nout && dropped && !read; j++)
            for (size_t x = 0; x < e->out[j]->n_input && !read; x++) read = !strcmp(e->out[j]->input[x], nm);
        if (!dropped || read) a[k++] = G->initializer[i];
    }
    for (int i = 0; i < e->ninit; i++) a[k++] = e->init[i];
    *out = a;
    *n = k;
    return YQ_OK;
}

/* --trt-cache and --json: the int8 tensors' scales, the int8 convs' weight scales. */
static yq_status write_scales(ex *e, const char *trt, const char *json)
{
    if (trt && e->weights_changed)
        return yq_fail(e->err, YQ_ERR_INVALID_ARG,
                       "--trt-cache: the package's int8 weights are not the model's (cross-layer equalization changed them), "
                       "so its activation ranges do not describe the original model: use the Q/DQ model, or quantize "
                       "with --set equalize=off");
    yq_act_scale *a = yq_pb_get(&e->P, sizeof *a * (size_t)(e->nq ? e->nq : 1));
    yq_w_scale *w = yq_pb_get(&e->P, sizeof *w * (size_t)e->g->n_nodes);
    if (!a || !w) return NOMEM(e);
    for (int i = 0; i < e->nq; i++) a[i] = (yq_act_scale){ e->q[i].name, e->q[i].scale, e->q[i].u8 };
    int nw = 0;
    for (int i = 1; i < e->g->n_nodes; i++) {
        const yq_node *n = &e->g->nodes[i];
        const yq_qnode *q = &e->g->q[i];
        int k;
        if (n->op != YQ_OP_CONV || q->float_op || !q->wq || onnx_node(e, i, "Conv", &k)) continue;
        w[nw++] = (yq_w_scale){ e->m->graph->node[k]->input[1], q->w_scale, n->p.conv.filters };
    }
    yq_status st = trt ? yq_scales_write_trt(trt, a, e->nq, e->err) : YQ_OK;
    if (!st && json) st = yq_scales_write_json(json, e->path, e->info->model_sha256, a, e->nq, w, nw, e->floats, e->err);
    return st;
}

yq_export_opt yq_export_defaults(void)
{
    yq_export_opt o;
    memset(&o, 0, sizeof o);
    return o;
}

yq_status yq_export_qdq(const yq_model *pkg, const char *out, const yq_export_opt *opt, yq_error *err)
{
    yq_export_opt o = opt ? *opt : yq_export_defaults();
    const yq_graph *g = yq_model_graph(pkg);
    const yq_package_info *info = yq_model_info(pkg);
    if (!g || !info || !g->q)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "export: the model is not an int8 package (quantize it first)");
    if (!out || !*out) return yq_fail(err, YQ_ERR_INVALID_ARG, "export: no output file (-o)");
    ex e;
    memset(&e, 0, sizeof e);
    e.g = g;
    e.info = info;
    e.err = err;
    e.path = o.model && *o.model ? o.model : info->cfg_path;
    if (!yq_is_onnx(e.path))
        return yq_fail(err, YQ_ERR_UNSUPPORTED,
                       "%s: the package was made from a Darknet model; the Q/DQ export takes packages of ONNX models", e.path);
    uint8_t *buf = NULL;
    size_t len = 0;
    yq_status st = yq_read_file(e.path, &buf, &len, err);
    if (st) {
        if (!o.model) snprintf(err->msg + strlen(err->msg), sizeof err->msg - strlen(err->msg),
                               " (the package records this path; give the model with --model)");
        return st;
    }
    char hex[65];
    if (sha_hex(buf, len, hex)) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    else if (strcmp(hex, info->model_sha256))
        st = yq_fail(err, YQ_ERR_INVALID_ARG, "%s: not the model the package was made from (sha256 %.12s..., the package's %.12s...)",
                     e.path, hex, info->model_sha256);
    if (!st && !(e.m = onnx__model_proto__unpack(NULL, len, buf)))
        st = yq_fail(err, YQ_ERR_FORMAT, "%s: not an ONNX model", e.path);
    long opset = -1;
    for (size_t i = 0; !st && i < e.m->n_opset_import; i++)
        if (!e.m->opset_import[i]->domain || !*e.m->opset_import[i]->domain) opset = (long)e.m->opset_import[i]->version;
    if (!st && opset < 13)
        st = yq_fail(err, YQ_ERR_UNSUPPORTED, "%s: opset %ld: per-channel DequantizeLinear needs opset 13 or later", e.path, opset);
    if (!st && !e.m->graph) st = yq_fail(err, YQ_ERR_FORMAT, "%s: no graph", e.path);
    if (!st) st = build(&e);
    tensor_t **ni = NULL;
    size_t nni = 0;
    if (!st) st = inits(&e, &ni, &nni);
    /* metadata: the model's, then yquant's */
    Onnx__StringStringEntryProto **md = NULL;
    size_t nmd = 0;
    if (!st) {
        const char *keys[5] = { "yquant_version", "yquant_qconfig", "yquant_accuracy", "yquant_float_convs", "yquant_model_sha256" };
        const char *vals[5] = { YQ_VERSION, info->qconfig_text, info->accuracy_json, e.floats ? e.floats : "", info->model_sha256 };
        md = yq_pb_get(&e.P, sizeof *md * (e.m->n_metadata_props + 5));
        if (!md) st = NOMEM(&e);
        for (size_t i = 0; !st && i < e.m->n_metadata_props; i++)
            if (!e.m->metadata_props[i]->key || strncmp(e.m->metadata_props[i]->key, "yquant_", 7)) md[nmd++] = e.m->metadata_props[i];
        for (int i = 0; !st && i < 5; i++) {
            Onnx__StringStringEntryProto *p = yq_pb_get(&e.P, sizeof *p);
            if (!p) { st = NOMEM(&e); break; }
            onnx__string_string_entry_proto__init(p);
            p->key = (char *)keys[i];
            p->value = (char *)vals[i];
            md[nmd++] = p;
        }
    }
    if (!st) {
        /* swap in, pack, swap back */
        Onnx__GraphProto *G = e.m->graph;
        size_t on = G->n_node, oi = G->n_initializer, om = e.m->n_metadata_props;
        node_t **onodes = G->node;
        tensor_t **oinits = G->initializer;
        Onnx__StringStringEntryProto **omd = e.m->metadata_props;
        G->node = e.out, G->n_node = (size_t)e.nout;
        G->initializer = ni, G->n_initializer = nni;
        e.m->metadata_props = md, e.m->n_metadata_props = nmd;
        st = yq_pb_write_model(e.m, out, err);
        G->node = onodes, G->n_node = on;
        G->initializer = oinits, G->n_initializer = oi;
        e.m->metadata_props = omd, e.m->n_metadata_props = om;
    }
    if (!st && (o.trt_cache || o.scales_json)) st = write_scales(&e, o.trt_cache, o.scales_json);
    if (e.m) onnx__model_proto__free_unpacked(e.m, NULL);
    free(buf);
    yq_pb_free(&e.P);
    return st;
}
