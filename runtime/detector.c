#include <stdlib.h>
#include <string.h>
#include "runtime/detector.h"
#include "runtime/engine.h"

#define MAX_HEADS 16

struct yq_detector {
    const yq_graph *g;
    yq_engine *e;                 /* the CPU engine, batch 1 */
    int n_heads, head_src[MAX_HEADS];
    const float *heads[MAX_HEADS];
};

yq_status yq_detector_new(const yq_graph *g, yq_detector **out, yq_error *err)
{
    yq_detector *d = calloc(1, sizeof *d);
    if (!d) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    d->g = g;
    for (int i = 0; i < g->n_nodes; i++)
        if (yq_op_is_head(g->nodes[i].op)) {
            if (d->n_heads == MAX_HEADS) { free(d); return yq_fail(err, YQ_ERR_UNSUPPORTED, "more than %d heads", MAX_HEADS); }
            d->head_src[d->n_heads++] = i;   /* the head node: an alias of its input, or its dequantized copy */
        }
    if (!d->n_heads) { free(d); return yq_fail(err, YQ_ERR_UNSUPPORTED, "%s: the model has no [yolo] or [region] head", g->cfg_path); }
    yq_engine_opt eo = yq_engine_defaults(YQ_ENGINE_CPU);
    yq_status st = yq_engine_new(g, 1, &eo, &d->e, err);
    if (st != YQ_OK) { free(d); return st; }
    *out = d;
    return YQ_OK;
}

void yq_detector_free(yq_detector *d)
{
    if (!d) return;
    yq_engine_free(d->e);
    free(d);
}

yq_status yq_preprocess(const yq_graph *g, const yq_image *im, int letterbox, float *dst, yq_error *err)
{
    yq_shape s = g->nodes[0].out;
    if (im->c != s.c) return yq_fail(err, YQ_ERR_SHAPE, "image has %d channels, the model takes %d", im->c, s.c);
    yq_image r;
    /* letterboxed the model's way: Ultralytics' for its ONNX exports (letter_box 2), darknet's else */
    const int kind = yq_letterbox_kind(g, letterbox);
    yq_status st = kind == YQ_LB_NONE ? yq_image_resize(im, s.w, s.h, &r, err)
                 : kind == YQ_LB_ULTRALYTICS ? yq_image_letterbox_ultra(im, s.w, s.h, &r, err)
                                             : yq_image_letterbox(im, s.w, s.h, &r, err);
    if (st != YQ_OK) return st;
    memcpy(dst, r.data, sizeof(float) * yq_shape_size(s));
    yq_image_free(&r);
    return YQ_OK;
}

yq_status yq_detector_run(yq_detector *d, const yq_image *im, int letterbox, const yq_post_opt *o,
                          yq_detection *dets, int cap, int *n, yq_error *err)
{
    float *in = yq_engine_host_input(d->e);
    yq_status st = yq_preprocess(d->g, im, letterbox, in, err);
    if (st == YQ_OK && (st = yq_engine_upload(d->e, in, 1, err)) == YQ_OK) st = yq_engine_enqueue(d->e, 1, err);
    if (st != YQ_OK) return st;
    for (int k = 0; k < d->n_heads; k++) d->heads[k] = yq_engine_node(d->e, d->head_src[k]);
    *n = yq_postprocess(d->g, d->heads, 0, im->w, im->h, letterbox, o, dets, cap);
    if (*n < 0) return yq_fail(err, YQ_ERR_NOMEM, "out of memory in post-processing");
    return YQ_OK;
}

const float *const *yq_detector_heads(const yq_detector *d, int *n_heads)
{
    *n_heads = d->n_heads;
    return d->heads;
}
