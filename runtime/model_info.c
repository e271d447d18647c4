/* What a model is, through the public API (include/yq.h): yq_model_describe, yq_model_layer,
 * yq_model_kernel.  Everything here reads the model's graph and, for a package, the record
 * the loader checked; nothing is computed that an engine would compute differently. */
#include <stdio.h>
#include <string.h>
#include "runtime/session.h"

void yq_model_describe(const yq_model *m, yq_model_about *out)
{
    memset(out, 0, sizeof *out);
    const yq_graph *g = yq_model_graph(m);
    const yq_package_info *pi = yq_model_info(m);
    out->cfg = pi ? pi->cfg_path : g->cfg_path;
    out->weights = pi ? pi->weights_path : yq_model_has_weights(m) ? g->weights_path : "";
    out->layers = g->n_nodes - 1;
    for (int i = 1; i < g->n_nodes; i++) {
        const yq_node *n = &g->nodes[i];
        out->convs += n->op == YQ_OP_CONV;
        out->params += yq_node_params(n);
        out->flops += yq_node_flops(g, n);
    }
    if (!pi) return;
    out->is_package = 1;
    out->format_version = pi->format_version;
    out->checksums = pi->checksums;
    out->yquant_version = pi->yquant_version;
    out->created = pi->created;
    out->model_sha256 = pi->model_sha256;
    out->calib_images = pi->calib_images;
    out->calib_images_sha256 = pi->calib_images_sha256;
    out->calib_method = pi->calib_method;
    out->qconfig = pi->qconfig_text;
    out->qconfig_request = pi->request_text;
    out->plan_json = pi->plan_json;
    out->accuracy_json = pi->accuracy_json;
    out->tuning_json = pi->tuning_json;
    out->n_kernels = pi->n_kernels;
}

/* "16 3x3/2 leaky", "from 3 linear", "80 classes, 3 anchors" */
static void detail(const yq_graph *g, const yq_node *n, char *buf, size_t cap)
{
    buf[0] = 0;
    switch (n->op) {
    case YQ_OP_CONV:
        snprintf(buf, cap, "%d %dx%d/%d%s %s", n->p.conv.filters, n->p.conv.size, n->p.conv.size, n->p.conv.stride,
                 n->p.conv.groups > 1 ? (n->p.conv.groups == yq_node_in_shape(g, n).c ? " dw" : " grouped") : "",
                 yq_act_name(n->act));
        break;
    case YQ_OP_MAXPOOL: snprintf(buf, cap, "%dx%d/%d", n->p.pool.size, n->p.pool.size, n->p.pool.stride); break;
    case YQ_OP_UPSAMPLE: snprintf(buf, cap, "x%d", n->p.up.stride); break;
    case YQ_OP_SHORTCUT: snprintf(buf, cap, "from %d %s", n->src[1] - 1, yq_act_name(n->act)); break;
    case YQ_OP_ROUTE: {
        size_t k = 0;
        for (int i = 0; i < n->n_src && k < cap; i++)
            k += (size_t)snprintf(buf + k, cap - k, "%s%d", i ? "," : "", n->src[i] - 1);
        if (n->p.route.groups > 1 && k < cap) snprintf(buf + k, cap - k, " g%d/%d", n->p.route.group_id, n->p.route.groups);
        break;
    }
    case YQ_OP_YOLO: case YQ_OP_REGION:
        snprintf(buf, cap, "%d classes, %d anchors", n->p.head.classes, n->p.head.n_mask);
        break;
    case YQ_OP_DETECT:
        snprintf(buf, cap, "%d classes, DFL %d, stride %d", n->p.head.classes, n->p.head.reg_max, n->p.head.stride);
        break;
    default: break;
    }
}

yq_status yq_model_layer(const yq_model *m, int i, yq_layer *out, yq_error *err)
{
    const yq_graph *g = yq_model_graph(m);
    if (!out || i < 0 || i >= g->n_nodes - 1)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_model_layer: layer %d outside 0..%d", i, g->n_nodes - 2);
    memset(out, 0, sizeof *out);
    int id = i + 1;                               /* node 0 is the input */
    const yq_node *n = &g->nodes[id];
    out->index = n->layer;
    out->type = yq_op_name(n->op);
    detail(g, n, out->detail, sizeof out->detail);
    out->cfg_line = n->line;
    _Static_assert(YQ_MAX_SRC <= sizeof out->inputs / sizeof out->inputs[0], "yq_layer.inputs too short");
    out->n_inputs = n->n_src;
    for (int k = 0; k < n->n_src; k++) out->inputs[k] = n->src[k] - 1;
    yq_shape s = yq_node_in_shape(g, n);
    out->in_c = s.c;
    out->in_h = s.h;
    out->in_w = s.w;
    out->out_c = n->out.c;
    out->out_h = n->out.h;
    out->out_w = n->out.w;
    if (n->op == YQ_OP_CONV) {
        out->size = n->p.conv.size;
        out->stride = n->p.conv.stride;
        out->groups = n->p.conv.groups;
    } else if (n->op == YQ_OP_MAXPOOL) {
        out->size = n->p.pool.size;
        out->stride = n->p.pool.stride;
    } else if (n->op == YQ_OP_UPSAMPLE) {
        out->stride = n->p.up.stride;
    }
    out->params = yq_node_params(n);
    out->flops = yq_node_flops(g, n);
    if (g->q) {
        const yq_qnode *q = &g->q[id];
        out->dtype = q->float_op ? "float" : q->dtype == YQ_S8 ? "int8" : q->dtype == YQ_U8 ? "uint8" : "i8>f32";
        if (n->op == YQ_OP_CONV) out->precision = !q->float_op ? "int8" : q->fp16w ? "fp16w" : "fp32";
        out->activation_table = q->lut != NULL;
        out->scale = q->scale;
    }
    return YQ_OK;
}

yq_status yq_model_kernel(const yq_model *m, int k, yq_kernel_choice *out, yq_error *err)
{
    const yq_package_info *pi = yq_model_info(m);
    int n = pi ? pi->n_kernels : 0;
    if (!out || k < 0 || k >= n) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_model_kernel: choice %d outside 0..%d", k, n - 1);
    const yq_tuned_kernel *t = &pi->kernels[k];
    const yq_graph *g = yq_model_graph(m);
    *out = (yq_kernel_choice){ g->nodes[t->node].layer, t->sm, t->batch, t->cfg, t->us, t->default_us };
    return YQ_OK;
}
