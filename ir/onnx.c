/* ONNX import: an Ultralytics detect export (YOLOv8, YOLO11 without attention, YOLOv5 v7+
 * anchor-free exports, and YOLOv5's anchor-grid head) into the graph IR.  The protobuf is parsed by protobuf-c from Debian's
 * onnx.proto (build/gen/onnx.pb-c.c, made at build time).
 *
 * The body maps op by op: Conv (with Sigmoid + Mul on its output recognised as one SiLU
 * activation) -> conv, Concat on channels -> route, Split on channels into equal parts ->
 * routes with groups, Add -> shortcut, Resize (nearest, integer scale) -> upsample, MaxPool
 * -> maxpool.  The detect head's decode (per scale a Concat of the box and class convs, then
 * Reshape, Concat over scales, Split, the DFL softmax and its arange conv, the anchor-point
 * arithmetic, Sigmoid on the classes) is recognised from where it starts and becomes one
 * detect node per scale, so that decode and NMS run in yquant's post-processing; every op
 * after that point must belong to it, and the graph's output must come out of it.
 * YOLOv5's anchor head (v6.0 and later exports: a conv per scale, Reshape to 1 x na x no x
 * ny x nx, Transpose, Sigmoid, Split, xy = (2 s + grid) stride, wh = (2 s)^2 anchor_grid,
 * Concat, Reshape) becomes a yolo node per scale with darknet's new_coords decode (inputs
 * logistic, scale_x_y 2: the same arithmetic), the conv's activation the logistic, the
 * anchors read from the anchor_grid constants and the grid constants checked to be
 * YOLOv5's cell offsets (i - 0.5, j - 0.5).
 * Anything else is refused naming the node. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <openssl/evp.h>
#include "ir/ir.h"
#include "onnx.pb-c.h"

#define MAX_SCALES 8
#define MAX_GRIDS 32               /* 5-D constants the YOLOv5 decode reads (2 a scale) */
/* protobuf-c leaves an absent optional string NULL */
#define S(x) ((x) ? (x) : "")

typedef Onnx__NodeProto node_t;
typedef Onnx__TensorProto tensor_t;

/* A name of the ONNX graph and what it is here. */
typedef struct value {
    const char *name;
    int id;                    /* our node id, or -1 */
    const tensor_t *init;      /* an initializer */
    int sigmoid_of;            /* the value index this is Sigmoid(x) of, or -1 */
    int decode;                /* part of the detect head's decode */
    int uses;                  /* nodes reading it */
} value;

typedef struct ctx {
    const char *path;
    Onnx__ModelProto *m;
    yq_graph *g;
    value *v;
    int nv, cap;
    int scale_val[MAX_SCALES]; /* per scale: the value index of its box+class concat */
    int scale_id[MAX_SCALES];  /* ... and our node id for it */
    int n_scales;
    int reg_max;
    int v5;                    /* the scales are YOLOv5 anchor heads (1) or DFL heads (0) */
    int v5_na;                 /* ... their anchors a scale */
    const tensor_t *grid[MAX_GRIDS];   /* the 1 x na x ny x nx x 2 constants of the v5 decode */
    int n_grid;
    yq_error *err;
} ctx;

static int find(ctx *c, const char *name)
{
    for (int i = 0; i < c->nv; i++)
        if (!strcmp(c->v[i].name, name)) return i;
    return -1;
}

static int intern(ctx *c, const char *name)
{
    int i = find(c, name);
    if (i >= 0) return i;
    if (c->nv == c->cap) {
        int cap = c->cap ? 2 * c->cap : 256;
        value *nv = realloc(c->v, sizeof *nv * (size_t)cap);
        if (!nv) return -1;
        c->v = nv;
        c->cap = cap;
    }
    c->v[c->nv] = (value){ name, -1, NULL, -1, 0, 0 };
    return c->nv++;
}

static const Onnx__AttributeProto *attr(const node_t *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (!strcmp(S(n->attribute[i]->name), name)) return n->attribute[i];
    return NULL;
}

static int attr_ints(const node_t *n, const char *name, int64_t *out, int cap)
{
    const Onnx__AttributeProto *a = attr(n, name);
    if (!a) return -1;
    int k = (int)a->n_ints < cap ? (int)a->n_ints : cap;
    for (int i = 0; i < k; i++) out[i] = a->ints[i];
    return (int)a->n_ints;
}

static long attr_int(const node_t *n, const char *name, long dflt)
{
    const Onnx__AttributeProto *a = attr(n, name);
    return a && a->has_i ? (long)a->i : dflt;
}

static const char *attr_str(const node_t *n, const char *name, char *buf, size_t cap)
{
    const Onnx__AttributeProto *a = attr(n, name);
    if (!a || !a->has_s) return NULL;
    snprintf(buf, cap, "%.*s", a->s.data ? (int)a->s.len : 0, a->s.data ? (const char *)a->s.data : "");
    return buf;
}

static yq_status fail_node(ctx *c, const node_t *n, int k, yq_status code, const char *what)
{
    return yq_fail(c->err, code, "%s: node %d (%s '%s'): %s", c->path, k, S(n->op_type), S(n->name), what);
}

/* The elements of a tensor as floats (FLOAT, or INT64/INT32 converted); count into *n.
 * malloc'd. */
static float *tensor_floats(const tensor_t *t, long *n)
{
    long cnt = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0 || t->dims[i] > (1L << 30)) return NULL;
        cnt *= (long)t->dims[i];
        if (cnt > (1L << 30)) return NULL;
    }
    float *out = malloc(sizeof *out * (size_t)(cnt ? cnt : 1));
    if (!out) return NULL;
    int dt = t->data_type;
    if (!cnt) {                     /* (an empty tensor: its data pointers may be NULL) */
        *n = 0;
        return out;
    }
    if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
        if (t->has_raw_data && t->raw_data.data && t->raw_data.len == (size_t)cnt * 4) memcpy(out, t->raw_data.data, (size_t)cnt * 4);
        else if (t->float_data && (long)t->n_float_data == cnt) memcpy(out, t->float_data, (size_t)cnt * 4);
        else { free(out); return NULL; }
    } else if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__INT64) {
        if (t->has_raw_data && t->raw_data.data && t->raw_data.len == (size_t)cnt * 8)
            for (long i = 0; i < cnt; i++) {
                int64_t v;
                memcpy(&v, t->raw_data.data + 8 * i, 8);
                out[i] = (float)v;
            }
        else if ((long)t->n_int64_data == cnt)
            for (long i = 0; i < cnt; i++) out[i] = (float)t->int64_data[i];
        else { free(out); return NULL; }
    } else if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__INT32 && (long)t->n_int32_data == cnt) {
        for (long i = 0; i < cnt; i++) out[i] = (float)t->int32_data[i];
    } else {
        free(out);
        return NULL;
    }
    *n = cnt;
    return out;
}

/* v as an int when it is one (and small enough); 0 otherwise. */
static int fint(float v, int *o)
{
    if (!(v > -1e9f && v < 1e9f) || v != floorf(v)) return 0;
    *o = (int)v;
    return 1;
}

/* A value that is a node of ours (not an initializer, not part of the decode). */
static int src_id(ctx *c, const char *name)
{
    int i = find(c, name);
    return i >= 0 && !c->v[i].decode ? c->v[i].id : -1;
}

static yq_status add_node(ctx *c, const node_t *n, int k, yq_op op, yq_node **out)
{
    yq_node *nd = yq_graph_add(c->g, op, c->err);
    if (!nd) return c->err->code;
    if (n->name && *n->name) snprintf(nd->name, sizeof nd->name, "%s", n->name);
    nd->line = k + 1;              /* (the node's position in the ONNX graph, from 1) */
    nd->act = YQ_ACT_LINEAR;
    *out = nd;
    return YQ_OK;
}

static yq_status infer(ctx *c, const node_t *n, int k)
{
    yq_error e;
    int id = c->g->n_nodes - 1;
    if (yq_shape_infer(c->g, id, &e) != YQ_OK) return fail_node(c, n, k, YQ_ERR_SHAPE, e.msg);
    return YQ_OK;
}

static yq_status set_out(ctx *c, const char *name, int id)
{
    int i = intern(c, name);
    if (i < 0) return yq_fail(c->err, YQ_ERR_NOMEM, "out of memory");
    c->v[i].id = id;
    return YQ_OK;
}

static yq_status do_conv(ctx *c, const node_t *n, int k)
{
    if (n->n_input < 2) return fail_node(c, n, k, YQ_ERR_FORMAT, "a Conv needs X and W");
    int x = src_id(c, n->input[0]), wi = find(c, n->input[1]), bi = n->n_input > 2 ? find(c, n->input[2]) : -1;
    if (x < 0) return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "its input is not a tensor of the network body");
    if (wi < 0 || !c->v[wi].init || (n->n_input > 2 && (bi < 0 || !c->v[bi].init)))
        return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "weights or bias not constant (initializers)");
    const tensor_t *W = c->v[wi].init;
    if (W->n_dims != 4 || W->dims[2] != W->dims[3]) return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "weights not F x C x k x k");
    int64_t st[4] = { 1, 1 }, pd[4] = { 0, 0, 0, 0 }, dl[4] = { 1, 1 };
    int ns = attr_ints(n, "strides", st, 4), np = attr_ints(n, "pads", pd, 4), nd_ = attr_ints(n, "dilations", dl, 4);
    char ap[32];
    const char *autopad = attr_str(n, "auto_pad", ap, sizeof ap);
    long groups = attr_int(n, "group", 1);
    if ((ns >= 0 && (ns != 2 || st[0] != st[1])) || (np >= 0 && (np != 4 || pd[0] != pd[1] || pd[0] != pd[2] || pd[0] != pd[3])) ||
        (nd_ >= 0 && (dl[0] != 1 || dl[1] != 1)) || (autopad && strcmp(autopad, "NOTSET")))
        return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "only square kernels, equal strides, symmetric pads, no dilation");
    for (int d = 0; d < 4; d++)
        if (W->dims[d] < 1 || W->dims[d] > 65536) return fail_node(c, n, k, YQ_ERR_FORMAT, "weights of an impossible shape");
    if (st[0] < 1 || st[0] > 64 || pd[0] < 0 || pd[0] > 64 || groups > 65536 || W->dims[2] > 64)
        return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "kernel, stride or pad out of range (64 at most)");
    int F = (int)W->dims[0], Cg = (int)W->dims[1], K = (int)W->dims[2];
    yq_shape in = c->g->nodes[x].out;
    if (groups < 1 || in.c % groups || Cg != in.c / groups || F % groups)
        return fail_node(c, n, k, YQ_ERR_SHAPE, "weights do not fit the input's channels and the groups");
    long nw;
    float *w = tensor_floats(W, &nw), *b = NULL;
    long nb = 0;
    if (!w || nw != (long)F * Cg * K * K) {
        free(w);
        return fail_node(c, n, k, YQ_ERR_FORMAT, "weights: not FLOAT data of the declared size");
    }
    if (bi >= 0 && (!(b = tensor_floats(c->v[bi].init, &nb)) || nb != F)) {
        free(w);
        free(b);
        return fail_node(c, n, k, YQ_ERR_FORMAT, "bias: not FLOAT data of one value per filter");
    }
    for (long i = 0; i < nw; i++)
        if (!isfinite(w[i])) { free(w); free(b); return fail_node(c, n, k, YQ_ERR_FORMAT, "a weight is not finite"); }
    yq_node *nd;
    yq_status s = add_node(c, n, k, YQ_OP_CONV, &nd);
    if (s == YQ_OK) {
        nd->n_src = 1;
        nd->src[0] = x;
        nd->p.conv = (yq_conv_p){ F, K, (int)st[0], (int)pd[0], (int)groups, 0 };
        nd->n_w = nw;
        nd->w = yq_arena_alloc(c->g, sizeof(float) * (size_t)nw);
        nd->b = yq_arena_alloc(c->g, sizeof(float) * (size_t)F);
        if (!nd->w || !nd->b) s = yq_fail(c->err, YQ_ERR_NOMEM, "out of memory");
        else {
            memcpy(nd->w, w, sizeof(float) * (size_t)nw);
            if (b) memcpy(nd->b, b, sizeof(float) * (size_t)F);
        }
    }
    free(w);
    free(b);
    if (s == YQ_OK) s = infer(c, n, k);
    return s == YQ_OK ? set_out(c, n->output[0], c->g->n_nodes - 1) : s;
}

/* Mul(x, Sigmoid(x)) on a conv's output that nothing else reads: the conv's SiLU. */
static int is_silu(ctx *c, const node_t *n, int *conv, int *sig)
{
    if (n->n_input != 2) return 0;
    for (int o = 0; o < 2; o++) {
        int a = find(c, n->input[o]), s = find(c, n->input[1 - o]);
        if (a < 0 || s < 0 || c->v[s].sigmoid_of != a || c->v[a].decode) continue;
        int id = c->v[a].id;
        if (id < 1 || c->g->nodes[id].op != YQ_OP_CONV || c->g->nodes[id].act != YQ_ACT_LINEAR) continue;
        if (c->v[a].uses != 2 || c->v[s].uses != 1) continue;
        *conv = id;
        *sig = s;
        return 1;
    }
    return 0;
}

static yq_status do_concat(ctx *c, const node_t *n, int k)
{
    if (attr_int(n, "axis", 0) != 1) return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "Concat other than on channels (axis 1)");
    if (n->n_input < 1 || n->n_input > YQ_MAX_SRC) return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "too many inputs");
    yq_node *nd;
    yq_status s = add_node(c, n, k, YQ_OP_ROUTE, &nd);
    if (s != YQ_OK) return s;
    nd->n_src = (int)n->n_input;
    nd->p.route = (yq_route_p){ 1, 0 };
    for (size_t i = 0; i < n->n_input; i++) {
        int id = src_id(c, n->input[i]);
        if (id < 0) return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "an input is not a tensor of the network body");
        nd->src[i] = id;
    }
    if ((s = infer(c, n, k)) != YQ_OK) return s;
    return set_out(c, n->output[0], c->g->n_nodes - 1);
}

static yq_status do_split(ctx *c, const node_t *n, int k)
{
    if (attr_int(n, "axis", 0) != 1) return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "Split other than on channels (axis 1)");
    int x = src_id(c, n->input[0]);
    if (x < 0) return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "its input is not a tensor of the network body");
    int parts = (int)n->n_output, C = c->g->nodes[x].out.c;
    if (parts < 1 || C % parts) return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "channels not split into equal parts");
    if (n->n_input > 1 && *n->input[1]) {   /* explicit sizes: all equal */
        int si = find(c, n->input[1]);
        long cnt;
        float *sz = si >= 0 && c->v[si].init ? tensor_floats(c->v[si].init, &cnt) : NULL;
        int ok = sz && cnt == parts, v;
        for (long i = 0; ok && i < cnt; i++) ok = fint(sz[i], &v) && v == C / parts;
        free(sz);
        if (!ok) return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "split sizes not constant and equal");
    }
    for (int p = 0; p < parts; p++) {
        yq_node *nd;
        yq_status s = add_node(c, n, k, YQ_OP_ROUTE, &nd);
        if (s != YQ_OK) return s;
        if (p) snprintf(nd->name + strnlen(nd->name, sizeof nd->name - 3), 3, ":%d", p);
        nd->n_src = 1;
        nd->src[0] = x;
        nd->p.route = (yq_route_p){ parts, p };
        if ((s = infer(c, n, k)) != YQ_OK || (s = set_out(c, n->output[p], c->g->n_nodes - 1)) != YQ_OK) return s;
    }
    return YQ_OK;
}

static yq_status do_add(ctx *c, const node_t *n, int k)
{
    int a = n->n_input == 2 ? src_id(c, n->input[0]) : -1, b = n->n_input == 2 ? src_id(c, n->input[1]) : -1;
    if (a < 0 || b < 0) return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "an Add of other than two network tensors");
    yq_node *nd;
    yq_status s = add_node(c, n, k, YQ_OP_SHORTCUT, &nd);
    if (s != YQ_OK) return s;
    nd->n_src = 2;
    nd->src[0] = a;
    nd->src[1] = b;
    if ((s = infer(c, n, k)) != YQ_OK) return s;
    return set_out(c, n->output[0], c->g->n_nodes - 1);
}

static yq_status do_resize(ctx *c, const node_t *n, int k)
{
    char buf[32];
    const char *mode = attr_str(n, "mode", buf, sizeof buf);
    if (mode && strcmp(mode, "nearest")) return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "Resize other than nearest");
    int x = src_id(c, n->input[0]);
    if (x < 0) return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "its input is not a tensor of the network body");
    yq_shape in = c->g->nodes[x].out;
    int sx = 0, sy = 0;
    for (size_t j = 2; j < n->n_input && j < 4; j++) {   /* scales (input 2) or sizes (input 3) */
        if (!*n->input[j]) continue;
        int vi = find(c, n->input[j]);
        long cnt;
        float *v = vi >= 0 && c->v[vi].init ? tensor_floats(c->v[vi].init, &cnt) : NULL;
        int a2, a3;
        if (v && cnt == 4 && fint(v[2], &a2) && fint(v[3], &a3)) {
            if (j == 2) {
                if (v[0] == 1 && v[1] == 1) sy = a2, sx = a3;
            } else if (a2 > 0 && a3 > 0 && a2 % in.h == 0 && a3 % in.w == 0) {
                sy = a2 / in.h;
                sx = a3 / in.w;
            }
        }
        free(v);
    }
    if (sx < 1 || sx != sy) return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "Resize by other than one constant integer scale");
    yq_node *nd;
    yq_status s = add_node(c, n, k, YQ_OP_UPSAMPLE, &nd);
    if (s != YQ_OK) return s;
    nd->n_src = 1;
    nd->src[0] = x;
    nd->p.up.stride = sx;
    if ((s = infer(c, n, k)) != YQ_OK) return s;
    return set_out(c, n->output[0], c->g->n_nodes - 1);
}

static yq_status do_maxpool(ctx *c, const node_t *n, int k)
{
    int x = src_id(c, n->input[0]);
    if (x < 0) return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "its input is not a tensor of the network body");
    int64_t ks[4] = { 0, 0 }, st[4] = { 1, 1 }, pd[4] = { 0, 0, 0, 0 };
    int64_t dl[4] = { 1, 1 };
    int nk = attr_ints(n, "kernel_shape", ks, 4), ns = attr_ints(n, "strides", st, 4), np = attr_ints(n, "pads", pd, 4);
    int nd_ = attr_ints(n, "dilations", dl, 4);
    if (nk != 2 || ks[0] != ks[1] || (ns >= 0 && st[0] != st[1]) || (np >= 0 && (pd[0] != pd[1] || pd[0] != pd[2] || pd[0] != pd[3])) ||
        attr_int(n, "ceil_mode", 0) || (nd_ >= 0 && (dl[0] != 1 || dl[1] != 1)))
        return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "only square windows, equal strides, symmetric pads");
    if (ks[0] < 1 || ks[0] > 64 || st[0] < 1 || st[0] > 64 || pd[0] < 0 || pd[0] >= ks[0])
        return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "window, stride or pad out of range");
    yq_node *nd;
    yq_status s = add_node(c, n, k, YQ_OP_MAXPOOL, &nd);
    if (s != YQ_OK) return s;
    nd->n_src = 1;
    nd->src[0] = x;
    nd->p.pool = (yq_pool_p){ (int)ks[0], (int)st[0], 2 * (int)pd[0] };
    if ((s = infer(c, n, k)) != YQ_OK) return s;
    return set_out(c, n->output[0], c->g->n_nodes - 1);
}

/* YOLOv5's head start: Reshape of a linear conv's output to 1 x na x no x ny x nx (a
 * constant shape); na into *na.  0 if not. */
static int v5_start(ctx *c, const node_t *n, int *na)
{
    if (strcmp(S(n->op_type), "Reshape") || n->n_input < 2) return 0;
    int vi = find(c, n->input[0]), si = find(c, n->input[1]);
    if (vi < 0 || c->v[vi].decode || si < 0 || !c->v[si].init) return 0;
    int id = c->v[vi].id;
    if (id < 1 || c->g->nodes[id].op != YQ_OP_CONV || c->g->nodes[id].act != YQ_ACT_LINEAR) return 0;
    yq_shape o = c->g->nodes[id].out;
    long cnt;
    float *d = tensor_floats(c->v[si].init, &cnt);
    int ok = d && cnt == 5, v[5] = { 0 };
    for (int i = 0; ok && i < 5; i++) ok = fint(d[i], &v[i]);
    free(d);
    ok = ok && v[0] == 1 && v[1] >= 1 && v[1] <= YQ_MAX_ANCH && v[2] > 5 && (long)v[1] * v[2] == o.c && v[3] == o.h && v[4] == o.w;
    if (ok) *na = v[1];
    return ok;
}

/* The decode's start: Reshape of a channel concat of two convs (box distances, classes),
 * or YOLOv5's (v5_start). */
static int decode_start(ctx *c, const node_t *n)
{
    int na;
    if (v5_start(c, n, &na)) return 1;
    if (strcmp(S(n->op_type), "Reshape") || n->n_input < 1) return 0;
    int vi = find(c, n->input[0]);
    if (vi < 0 || c->v[vi].decode) return 0;
    int id = c->v[vi].id;
    if (id < 1 || c->g->nodes[id].op != YQ_OP_ROUTE || c->g->nodes[id].n_src != 2 || c->g->nodes[id].p.route.groups != 1) return 0;
    const yq_node *a = &c->g->nodes[c->g->nodes[id].src[0]], *b = &c->g->nodes[c->g->nodes[id].src[1]];
    return a->op == YQ_OP_CONV && b->op == YQ_OP_CONV && a->out.c % 4 == 0;
}

static const char *const decode_ops[] = { "Reshape", "Concat", "Split", "Transpose", "Softmax", "Conv", "Slice", "Sub", "Add",
                                          "Div", "Mul", "Sigmoid", "Shape", "Gather", "Unsqueeze", "Cast", "Constant", "Pow",
                                          NULL };

static yq_status do_decode(ctx *c, const node_t *n, int k)
{
    int ok = 0;
    for (int i = 0; decode_ops[i] && !ok; i++) ok = !strcmp(S(n->op_type), decode_ops[i]);
    if (!ok) return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "an op the detect head's decode does not have");
    for (size_t i = 0; i < n->n_input; i++) {
        int vi = *n->input[i] ? find(c, n->input[i]) : -1;
        if (vi >= 0 && !c->v[vi].decode && !c->v[vi].init && c->v[vi].id >= 0 && !decode_start(c, n))
            return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "the decode reads a tensor of the network body besides the heads");
    }
    if (!strcmp(S(n->op_type), "Conv") && n->n_input >= 2) {   /* DFL: 1 x reg_max x 1 x 1 weights 0, 1, ..., reg_max-1 */
        int wi = find(c, n->input[1]);
        long cnt;
        float *w = wi >= 0 && c->v[wi].init ? tensor_floats(c->v[wi].init, &cnt) : NULL;
        int good = w && cnt > 1;
        for (long i = 0; good && i < cnt; i++) good = w[i] == (float)i;
        free(w);
        if (!good) return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "a decode conv other than the DFL expectation (weights 0..n-1)");
        if (c->reg_max && c->reg_max != (int)cnt) return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "two DFL sizes");
        c->reg_max = (int)cnt;
    }
    for (size_t i = 0; i < n->n_input; i++) {   /* YOLOv5's grid and anchor_grid constants */
        int vi = *n->input[i] ? find(c, n->input[i]) : -1;
        const tensor_t *t = vi >= 0 ? c->v[vi].init : NULL;
        if (!t || t->n_dims != 5 || t->dims[0] != 1 || t->dims[4] != 2) continue;
        int seen = 0;
        for (int j = 0; j < c->n_grid; j++) seen |= c->grid[j] == t;
        if (seen) continue;
        if (c->n_grid == MAX_GRIDS) return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "more grid constants than 32");
        c->grid[c->n_grid++] = t;
    }
    for (size_t i = 0; i < n->n_output; i++) {
        int vi = intern(c, n->output[i]);
        if (vi < 0) return yq_fail(c->err, YQ_ERR_NOMEM, "out of memory");
        c->v[vi].decode = 1;
    }
    return YQ_OK;
}

/* "{0: 'person', 1: 'bicycle', ...}" (the export's metadata "names") into g's class names. */
static void load_names(yq_graph *g, const char *s)
{
    int n = 0, cap = 0;
    char **names = NULL;
    for (const char *p = s; p && *p;) {
        while (*p && !isdigit((unsigned char)*p)) p++;
        if (!*p) break;
        char *end;
        long idx = strtol(p, &end, 10);
        p = end;
        while (*p == ' ' || *p == ':') p++;
        if (*p != '\'' && *p != '"') break;
        char q = *p++;
        const char *e = strchr(p, q);
        if (!e || idx != n || n >= 100000) break;
        if (n == cap) {
            cap = cap ? 2 * cap : 128;
            char **nn = realloc(names, sizeof *nn * (size_t)cap);
            if (!nn) break;
            names = nn;
        }
        char *name = yq_arena_alloc(g, (size_t)(e - p) + 1);
        if (!name) break;
        memcpy(name, p, (size_t)(e - p));
        names[n++] = name;
        p = e + 1;
    }
    if (n) {
        char **arr = yq_arena_alloc(g, sizeof *arr * (size_t)n);
        if (arr) {
            memcpy(arr, names, sizeof *arr * (size_t)n);
            g->class_names = arr;
            g->n_class_names = n;
        }
    }
    free(names);
}

/* YOLOv5's heads: per scale (finest first) its two grid constants, the anchor_grid (every
 * cell of anchor a the same w, h: the anchor in input pixels) and the grid (cell (i, j) of
 * every anchor at i - 0.5, j - 0.5, which with xy = (2 s + grid) stride is darknet's
 * new_coords decode at scale_x_y 2); then the conv's logistic and one yolo node a scale. */
static yq_status v5_heads(ctx *c, int H, int W)
{
    const int na = c->v5_na;
    yq_graph *g = c->g;
    float anchors[2 * YQ_MAX_ANCH];
    if (na * c->n_scales > YQ_MAX_ANCH)
        return yq_fail(c->err, YQ_ERR_UNSUPPORTED, "%s: %d anchors over %d scales: at most %d", c->path, na, c->n_scales, YQ_MAX_ANCH);
    for (int sI = 0; sI < c->n_scales; sI++) {
        const yq_node *src = &g->nodes[c->scale_id[sI]];
        const int ny = src->out.h, nx = src->out.w;
        int have_anchor = 0, have_grid = 0;
        for (int t = 0; t < c->n_grid; t++) {
            const tensor_t *T = c->grid[t];
            if (T->dims[1] != na || T->dims[2] != ny || T->dims[3] != nx) continue;
            long cnt;
            float *v = tensor_floats(T, &cnt);
            if (!v || cnt != (long)na * ny * nx * 2) {
                free(v);
                return yq_fail(c->err, YQ_ERR_FORMAT, "%s: a YOLOv5 grid constant '%s' not FLOAT data of its shape", c->path,
                               S(T->name));
            }
            int same = 1, grid = 1;   /* constant over the cells; YOLOv5's cell offsets */
            for (int a = 0; a < na; a++)
                for (int j = 0; j < ny; j++)
                    for (int i = 0; i < nx; i++) {
                        const float *e = v + (((long)a * ny + j) * nx + i) * 2, *e0 = v + (long)a * ny * nx * 2;
                        same &= e[0] == e0[0] && e[1] == e0[1];
                        grid &= e[0] == (float)i - 0.5f && e[1] == (float)j - 0.5f;
                    }
            if (same && !have_anchor && !(ny * nx == 1 && grid)) {
                for (int a = 0; a < na; a++) {
                    anchors[2 * (sI * na + a)] = v[(long)a * ny * nx * 2];
                    anchors[2 * (sI * na + a) + 1] = v[(long)a * ny * nx * 2 + 1];
                    if (!(anchors[2 * (sI * na + a)] > 0) || !(anchors[2 * (sI * na + a) + 1] > 0) ||
                        anchors[2 * (sI * na + a)] > 1e5f || anchors[2 * (sI * na + a) + 1] > 1e5f)
                        have_anchor = -1;
                }
                if (have_anchor == 0) have_anchor = 1;
            } else if (grid) {
                have_grid = 1;
            }
            free(v);
        }
        if (have_anchor != 1 || !have_grid)
            return yq_fail(c->err, YQ_ERR_UNSUPPORTED,
                           "%s: YOLOv5 head scale %d (%dx%d): %s not found among the decode's constants (a YOLOv5 "
                           "export of v6.0 or later with constant folding is what yquant reads)",
                           c->path, sI, nx, ny, have_anchor != 1 ? "its anchor_grid (w, h a cell, positive)" : "its cell grid (i - 0.5, j - 0.5)");
        if (H % ny || W % nx || H / ny != W / nx)
            return yq_fail(c->err, YQ_ERR_UNSUPPORTED, "%s: head scale %d: %dx%d cells do not divide the input", c->path, sI, nx, ny);
    }
    for (int sI = 0; sI < c->n_scales; sI++) {
        int id = c->scale_id[sI];
        g->nodes[id].act = YQ_ACT_LOGISTIC;   /* the decode's Sigmoid */
        yq_node *nd = yq_graph_add(g, YQ_OP_YOLO, c->err);
        if (!nd) return c->err->code;
        snprintf(nd->name, sizeof nd->name, "yolo_%d", sI);
        nd->line = 0;
        nd->n_src = 1;
        nd->src[0] = id;
        yq_head_p *h = &nd->p.head;
        h->classes = g->nodes[id].out.c / na - 5;
        h->num = na * c->n_scales;
        h->coords = 4;
        h->n_mask = na;
        for (int a = 0; a < na; a++) h->mask[a] = sI * na + a;
        memcpy(h->anchors, anchors, sizeof(float) * 2 * (size_t)h->num);
        h->scale_x_y = 2;
        h->new_coords = 1;
        yq_error e;
        if (yq_shape_infer(g, g->n_nodes - 1, &e) != YQ_OK) return yq_fail(c->err, e.code, "%s: %s", c->path, e.msg);
    }
    return YQ_OK;
}

static yq_status import(ctx *c, const yq_import_opt *opt)
{
    Onnx__ModelProto *m = c->m;
    const Onnx__GraphProto *G = m->graph;
    if (!G) return yq_fail(c->err, YQ_ERR_FORMAT, "%s: no graph in the model", c->path);
    long opset = -1;
    for (size_t i = 0; i < m->n_opset_import; i++)
        if (!m->opset_import[i]->domain || !*m->opset_import[i]->domain) opset = (long)m->opset_import[i]->version;
    if (opset < 11 || opset > 21)
        return yq_fail(c->err, YQ_ERR_UNSUPPORTED, "%s: opset %ld: yquant reads opsets 11 to 21", c->path, opset);
    for (size_t i = 0; i < G->n_initializer; i++) {
        int vi = intern(c, S(G->initializer[i]->name));
        if (vi < 0) return yq_fail(c->err, YQ_ERR_NOMEM, "out of memory");
        c->v[vi].init = G->initializer[i];
    }
    /* the input: the first graph input that is not an initializer, N x C x H x W */
    const Onnx__ValueInfoProto *in = NULL;
    for (size_t i = 0; i < G->n_input && !in; i++)
        if (find(c, S(G->input[i]->name)) < 0) in = G->input[i];
    if (!in || !in->type || !in->type->tensor_type || !in->type->tensor_type->shape ||
        in->type->tensor_type->shape->n_dim != 4)
        return yq_fail(c->err, YQ_ERR_UNSUPPORTED, "%s: the input is not an N x C x H x W tensor", c->path);
    int dims[4];
    for (int d = 0; d < 4; d++) {
        const Onnx__TensorShapeProto__Dimension *D = in->type->tensor_type->shape->dim[d];
        dims[d] = D->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && D->dim_value > 0 &&
                  D->dim_value <= 16384 ? (int)D->dim_value : -1;
    }
    int H = opt && opt->height > 0 ? opt->height : dims[2], W = opt && opt->width > 0 ? opt->width : dims[3];
    if (dims[1] < 1 || dims[1] > 64) return yq_fail(c->err, YQ_ERR_UNSUPPORTED, "%s: input channels %d", c->path, dims[1]);
    if (H < 1 || W < 1)
        return yq_fail(c->err, YQ_ERR_INVALID_ARG, "%s: the input '%s' has a dynamic height or width: give --size", c->path,
                       S(in->name));
    if (H % 32 || W % 32 || H > 8192 || W > 8192)
        return yq_fail(c->err, YQ_ERR_UNSUPPORTED, "%s: input %dx%d: multiples of 32 up to 8192", c->path, W, H);
    yq_node *inp = yq_graph_add(c->g, YQ_OP_INPUT, c->err);
    if (!inp) return c->err->code;
    strcpy(inp->name, "input");
    inp->out = (yq_shape){ dims[1], H, W };
    yq_error e;
    if (yq_shape_infer(c->g, 0, &e) != YQ_OK) return yq_fail(c->err, e.code, "%s: %s", c->path, e.msg);
    yq_status s = set_out(c, S(in->name), 0);
    if (s != YQ_OK) return s;
    for (size_t k = 0; k < G->n_node; k++)
        for (size_t i = 0; i < G->node[k]->n_input; i++) {
            if (!*G->node[k]->input[i]) continue;
            int vi = intern(c, G->node[k]->input[i]);
            if (vi < 0) return yq_fail(c->err, YQ_ERR_NOMEM, "out of memory");
            c->v[vi].uses++;
        }

    for (size_t kk = 0; kk < G->n_node && s == YQ_OK; kk++) {
        const node_t *n = G->node[kk];
        int k = (int)kk;
        const char *op = S(n->op_type);
        if (!n->n_output || (!n->n_input && strcmp(op, "Constant"))) return fail_node(c, n, k, YQ_ERR_FORMAT, "no input or no output");
        int in_decode = 0;
        for (size_t i = 0; i < n->n_input && !in_decode; i++) {
            int vi = *n->input[i] ? find(c, n->input[i]) : -1;
            in_decode = vi >= 0 && c->v[vi].decode;
        }
        if (in_decode || decode_start(c, n)) {
            if (!in_decode) {            /* a new scale of the head */
                if (c->n_scales == MAX_SCALES) return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "more detect scales than 8");
                int na, v5 = v5_start(c, n, &na);
                if (c->n_scales && (v5 != c->v5 || (v5 && na != c->v5_na)))
                    return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "detect scales of two kinds (or anchor counts)");
                c->v5 = v5;
                if (v5) c->v5_na = na;
                int vi = find(c, n->input[0]);
                c->scale_val[c->n_scales] = vi;
                c->scale_id[c->n_scales++] = c->v[vi].id;
            }
            s = do_decode(c, n, k);
        } else if (!strcmp(op, "Constant")) {
            /* a constant tensor (non-simplified exports): an initializer by another name */
            const Onnx__AttributeProto *a = attr(n, "value");
            int vi = intern(c, n->output[0]);
            if (!a || !a->t || vi < 0) return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "a Constant without a tensor value");
            c->v[vi].init = a->t;
        } else if (!strcmp(op, "Conv")) s = do_conv(c, n, k);
        else if (!strcmp(op, "Sigmoid")) {
            int x = find(c, n->input[0]);
            int vi = intern(c, n->output[0]);
            if (x < 0 || vi < 0) return fail_node(c, n, k, YQ_ERR_FORMAT, "unknown input");
            c->v[vi].sigmoid_of = x;     /* resolved by the Mul that makes it a SiLU */
        } else if (!strcmp(op, "Mul")) {
            int conv, sig;
            if (!is_silu(c, n, &conv, &sig)) return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "a Mul other than x * Sigmoid(x) after a conv");
            c->g->nodes[conv].act = YQ_ACT_SWISH;
            c->v[sig].id = conv;         /* (consumed: its only reader is this Mul) */
            s = set_out(c, n->output[0], conv);
        } else if (!strcmp(op, "Concat")) s = do_concat(c, n, k);
        else if (!strcmp(op, "Split")) s = do_split(c, n, k);
        else if (!strcmp(op, "Add")) s = do_add(c, n, k);
        else if (!strcmp(op, "Resize")) s = do_resize(c, n, k);
        else if (!strcmp(op, "MaxPool")) s = do_maxpool(c, n, k);
        else return fail_node(c, n, k, YQ_ERR_UNSUPPORTED, "op not supported");
    }
    if (s != YQ_OK) return s;
    /* a Sigmoid never consumed by a SiLU Mul is an op of its own */
    for (int i = 0; i < c->nv; i++)
        if (c->v[i].sigmoid_of >= 0 && c->v[i].uses > 0 && !c->v[i].decode && c->v[i].id < 0)
            return yq_fail(c->err, YQ_ERR_UNSUPPORTED, "%s: Sigmoid '%s' outside a SiLU and the detect head", c->path, c->v[i].name);
    if (!c->n_scales || (!c->v5 && !c->reg_max))
        return yq_fail(c->err, YQ_ERR_UNSUPPORTED, "%s: no Ultralytics detect head (DFL or YOLOv5 anchor decode) found", c->path);
    if (c->v5 && c->reg_max)
        return yq_fail(c->err, YQ_ERR_UNSUPPORTED, "%s: a DFL conv in a YOLOv5 anchor decode", c->path);
    if (G->n_output < 1 || find(c, S(G->output[0]->name)) < 0 || !c->v[find(c, S(G->output[0]->name))].decode)
        return yq_fail(c->err, YQ_ERR_UNSUPPORTED, "%s: the graph's output does not come out of the detect head", c->path);
    /* one detect node per scale, in the order the export concatenates them (finest first) */
    for (int a = 1; a < c->n_scales; a++)
        for (int b = a; b > 0 && c->g->nodes[c->scale_id[b]].out.h > c->g->nodes[c->scale_id[b - 1]].out.h; b--) {
            int t = c->scale_id[b];
            c->scale_id[b] = c->scale_id[b - 1];
            c->scale_id[b - 1] = t;
        }
    if (c->v5 && (s = v5_heads(c, H, W)) != YQ_OK) return s;
    for (int sI = 0; sI < c->n_scales && !c->v5; sI++) {
        int id = c->scale_id[sI];
        const yq_node *src = &c->g->nodes[id];
        int box = c->g->nodes[src->src[0]].out.c;
        if (box != 4 * c->reg_max)
            return yq_fail(c->err, YQ_ERR_UNSUPPORTED, "%s: head scale %d: %d box channels, not 4 x %d", c->path, sI, box, c->reg_max);
        if (H % src->out.h || W % src->out.w || H / src->out.h != W / src->out.w)
            return yq_fail(c->err, YQ_ERR_UNSUPPORTED, "%s: head scale %d: %dx%d cells do not divide the input", c->path, sI,
                           src->out.w, src->out.h);
        yq_node *nd = yq_graph_add(c->g, YQ_OP_DETECT, c->err);
        if (!nd) return c->err->code;
        nd->n_src = 1;
        nd->src[0] = id;
        nd->p.head.classes = src->out.c - box;
        nd->p.head.coords = 4;
        nd->p.head.reg_max = c->reg_max;
        nd->p.head.stride = H / src->out.h;
        nd->p.head.scale_x_y = 1;
        if (yq_shape_infer(c->g, c->g->n_nodes - 1, &e) != YQ_OK) return yq_fail(c->err, e.code, "%s: %s", c->path, e.msg);
    }
    for (size_t i = 0; i < m->n_metadata_props; i++)
        if (m->metadata_props[i]->key && !strcmp(m->metadata_props[i]->key, "names")) load_names(c->g, m->metadata_props[i]->value);
    c->g->letter_box = 2;          /* Ultralytics' preprocessing: its letterbox, grey 114, centred */
    return YQ_OK;
}

yq_status yq_onnx_load_mem(const void *data, size_t len, const char *path, const yq_import_opt *opt, yq_graph **out,
                           yq_error *err)
{
    *out = NULL;
    if (!path) path = "(ONNX model in memory)";
    if (!len) return yq_fail(err, YQ_ERR_FORMAT, "%s: empty file", path);
    ctx c = { .path = path, .err = err };
    c.m = onnx__model_proto__unpack(NULL, len, data);
    yq_status st = YQ_OK;
    if (!c.m) st = yq_fail(err, YQ_ERR_FORMAT, "%s: not an ONNX model (the protobuf does not parse: truncated or another format)", path);
    if (st == YQ_OK && !(c.g = yq_graph_new())) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    if (st == YQ_OK) st = import(&c, opt);
    if (st == YQ_OK) {
        snprintf(c.g->cfg_path, sizeof c.g->cfg_path, "%s", path);
        snprintf(c.g->weights_path, sizeof c.g->weights_path, "%s", path);
        unsigned int dl = 0;
        EVP_MD_CTX *mc = EVP_MD_CTX_new();
        if (!mc || !EVP_DigestInit_ex(mc, EVP_sha256(), NULL) || !EVP_DigestUpdate(mc, data, len) ||
            !EVP_DigestFinal_ex(mc, c.g->model_sha256, &dl))
            st = yq_fail(err, YQ_ERR_NOMEM, "%s: sha256 failed", path);
        EVP_MD_CTX_free(mc);
    }
    if (c.m) onnx__model_proto__free_unpacked(c.m, NULL);
    free(c.v);
    if (st != YQ_OK) {
        yq_graph_free(c.g);
        return st;
    }
    *out = c.g;
    return YQ_OK;
}

yq_status yq_onnx_load(const char *path, const yq_import_opt *opt, yq_graph **out, yq_error *err)
{
    *out = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    yq_status st = yq_read_file(path, &buf, &len, err);
    if (st == YQ_OK) st = yq_onnx_load_mem(buf, len, path, opt, out, err);
    free(buf);
    return st;
}

int yq_is_onnx(const char *path)
{
    size_t n = path ? strlen(path) : 0;
    return n > 5 && !strcasecmp(path + n - 5, ".onnx");
}

yq_status yq_load_model(const char *model, const char *weights_arg, const yq_import_opt *opt, yq_graph **out,
                        yq_error *err)
{
    *out = NULL;
    if (yq_is_onnx(model)) {
        if (weights_arg) return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: an ONNX model holds its weights (no --weights)", model);
        if (opt && opt->bn != YQ_BN_ALEXEYAB)
            return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: batch-norm folding does not apply to an ONNX model", model);
        return yq_onnx_load(model, opt, out, err);
    }
    yq_model_paths mp;
    yq_status st = yq_model_resolve(model, weights_arg, &mp, err);
    if (st != YQ_OK) return st;
    yq_import_opt io = opt ? *opt : (yq_import_opt){ 0 };
    io.synthetic = mp.synthetic;
    io.seed = mp.seed;
    if ((st = yq_darknet_load(mp.cfg, mp.synthetic ? NULL : mp.weights, &io, out, err)) != YQ_OK) return st;
    if (mp.names[0] && (st = yq_graph_load_names(*out, mp.names, err)) != YQ_OK) {
        yq_graph_free(*out);
        *out = NULL;
    }
    return st;
}
