#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "datasets/labels.h"
#include "runtime/evaluate.h"
#include "runtime/session.h"

yq_eval_opt yq_eval_defaults(void)
{
    yq_eval_opt o;
    memset(&o, 0, sizeof o);
    o.post = yq_post_defaults();
    o.post.conf = 0.005f;   /* as darknet's `detector map` and COCO practice */
    o.post.max_dets = 100;
    return o;
}

int *yq_eval_class_map(const yq_graph *g, const yq_dataset *ds, int *n)
{
    int classes = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (yq_op_is_head(g->nodes[i].op) && g->nodes[i].p.head.classes > classes) classes = g->nodes[i].p.head.classes;
    if (g->n_class_names > classes) classes = g->n_class_names;
    const char *const *names = g->n_class_names >= classes ? (const char *const *)g->class_names : NULL;
    *n = classes;
    return yq_dataset_class_map(ds, names, classes);
}

yq_status yq_dets_append(yq_det **dets, int *n, int *cap, int64_t image_id, const yq_detection *one, int k,
                         const int *cat_map, int n_map, yq_error *err)
{
    if (*n + k > *cap) {
        int c = *cap > 0 ? *cap : 1024;
        while (*n + k > c) c *= 2;
        yq_det *nd = realloc(*dets, sizeof *nd * (size_t)c);
        if (!nd) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
        *dets = nd;
        *cap = c;
    }
    for (int j = 0; j < k; j++) {
        int c = one[j].cls, cat = cat_map ? (c >= 0 && c < n_map ? cat_map[c] : -1) : yq_coco_category_id(c);
        if (cat_map && cat < 0) continue;          /* a class the dataset has not: not scored */
        (*dets)[(*n)++] = (yq_det){ image_id, cat > 0 ? cat : c, { one[j].x, one[j].y, one[j].w, one[j].h }, one[j].score };
    }
    return YQ_OK;
}

yq_status yq_eval_detect(const yq_graph *g, const yq_dataset *ds, const yq_eval_opt *o,
                         yq_det **dets_out, int *n_out, int *skipped, yq_error *err)
{
    yq_detector *d;
    yq_status st = yq_detector_new(g, &d, err);
    if (st != YQ_OK) return st;
    int cap = 1024, n = 0, bad = 0, n_map = 0;
    yq_det *dets = malloc(sizeof *dets * (size_t)cap);
    yq_detection *one = malloc(sizeof *one * (size_t)o->post.max_dets);
    int *map = yq_eval_class_map(g, ds, &n_map);
    if (!dets || !one || !map) { st = yq_fail(err, YQ_ERR_NOMEM, "out of memory"); goto done; }
    for (int i = 0; i < ds->n_images && st == YQ_OK; i++) {
        char path[2048];
        yq_image im;
        yq_error e2;
        int k = 0;
        if ((st = yq_dataset_image_path(ds, i, path, sizeof path, err)) != YQ_OK) break;
        if (yq_image_load(path, &im, &e2) != YQ_OK) {
            yq_warn_skipped(o->warn, o->warn_ctx, e2.msg);
            bad++;
            if (o->progress) o->progress(o->progress_ctx, i + 1, ds->n_images);
            continue;
        }
        st = yq_detector_run(d, &im, o->letterbox, &o->post, one, o->post.max_dets, &k, err);
        yq_image_free(&im);
        if (st != YQ_OK) break;
        if ((st = yq_dets_append(&dets, &n, &cap, ds->images[i].id, one, k, map, n_map, err)) != YQ_OK) break;
        if (o->progress) o->progress(o->progress_ctx, i + 1, ds->n_images);
    }
    if (st == YQ_OK && bad == ds->n_images)
        st = yq_fail(err, YQ_ERR_IO, "none of the %d images could be read", ds->n_images);
done:
    free(one);
    free(map);
    yq_detector_free(d);
    if (st != YQ_OK) { free(dets); return st; }
    *dets_out = dets;
    *n_out = n;
    if (skipped) *skipped = bad;
    return YQ_OK;
}

/* ---- a session on a dataset (include/yq_data.h) ---- */

yq_eval_params yq_eval_params_defaults(void)
{
    yq_eval_opt o = yq_eval_defaults();
    yq_eval_params p;
    memset(&p, 0, sizeof p);
    p.conf = o.post.conf;
    p.nms = o.post.nms;
    p.max_dets = o.post.max_dets;
    p.letterbox = -1;
    return p;
}

yq_status yq_model_preprocess(const yq_model *m, const yq_image *im, int letterbox, float *dst, yq_error *err)
{
    if (!m || !im || !dst) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_model_preprocess: NULL argument");
    return yq_preprocess(yq_model_graph(m), im, letterbox < 0 ? yq_model_letterbox(m) : letterbox != 0, dst, err);
}

/* Images i0, i0 + step, ... (m of them) of ds through the session as one batch: those that
 * load, preprocessed; the others skipped with a warning. */
static yq_status eval_batch(yq_session *s, const yq_model *mod, const yq_dataset *ds, int i0, int step, int m,
                            const yq_eval_params *p, int letterbox, float *in, size_t in_n, int *wh, int *idx,
                            yq_detection *one, int *counts, const int *map, int n_map, yq_det **dets, int *n, int *cap,
                            int *bad, yq_error *err)
{
    int k = 0;
    yq_status st;
    for (int j = 0; j < m; j++) {
        char path[2048];
        yq_image im;
        yq_error e2;
        if ((st = yq_dataset_image_path(ds, i0 + j * step, path, sizeof path, err)) != YQ_OK) return st;
        if (yq_image_load(path, &im, &e2) != YQ_OK) {
            yq_warn_skipped(p->warn, p->ctx, e2.msg);
            ++*bad;
            continue;
        }
        st = yq_model_preprocess(mod, &im, letterbox, in + in_n * (size_t)k, err);
        wh[2 * k] = im.w;
        wh[2 * k + 1] = im.h;
        yq_image_free(&im);
        if (st) return st;
        idx[k++] = i0 + j * step;
    }
    if (!k) return YQ_OK;
    if ((st = yq_session_run_tensor(s, in, k, wh, one, p->max_dets, counts, err)) != YQ_OK) return st;
    for (int j = 0; j < k && st == YQ_OK; j++)
        st = yq_dets_append(dets, n, cap, ds->images[idx[j]].id, one + (size_t)j * (size_t)p->max_dets, counts[j], map, n_map,
                            err);
    return st;
}

yq_status yq_session_detect_share(yq_session *s, const yq_dataset *ds, const yq_eval_params *p, int part, int parts,
                                  yq_det **dets_out, int *n_out, int *skipped, yq_error *err)
{
    yq_eval_params dp = yq_eval_params_defaults();
    if (!p) p = &dp;
    if (!s || !ds || !dets_out || !n_out) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_session_detect_share: NULL argument");
    if (parts < 1 || part < 0 || part >= parts)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_session_detect_share: part %d of %d", part, parts);
    if (!(p->conf >= 0 && p->conf < 1) || !(p->nms > 0 && p->nms <= 1) || p->max_dets < 1 || p->max_dets > 100000)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_session_evaluate: conf %g (in [0, 1)), nms %g (in (0, 1]), max_dets %d "
                       "(in 1..100000)", (double)p->conf, (double)p->nms, p->max_dets);
    if (!ds->n_images) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_session_evaluate: the dataset has no images");
    const yq_model *mod = yq_session_model(s);
    int c, h, w;
    yq_model_input(mod, &c, &h, &w);
    size_t in_n = (size_t)c * (size_t)h * (size_t)w;
    int batch = yq_session_max_batch(s);
    yq_session_opt keep = yq_session_options(s), so = keep;
    so.conf = p->conf;
    so.nms = p->nms;
    so.max_dets = p->max_dets;
    so.letterbox = p->letterbox < 0 ? yq_model_letterbox(mod) : p->letterbox != 0;
    yq_status st = yq_session_set_options(s, &so, err);
    if (st) return st;
    /* the share: images part, part + parts, ... (mine of them), batch by batch */
    const int mine = (ds->n_images - part + parts - 1) / parts;
    float *in = malloc(sizeof *in * in_n * (size_t)batch);
    int *wh = malloc(sizeof *wh * 2 * (size_t)batch), *idx = malloc(sizeof *idx * (size_t)batch);
    int *counts = malloc(sizeof *counts * (size_t)batch);
    yq_detection *one = malloc(sizeof *one * (size_t)p->max_dets * (size_t)batch);
    yq_det *dets = NULL;
    int n = 0, cap = 0, bad = 0, n_map = 0;
    int *map = yq_eval_class_map(yq_model_graph(mod), ds, &n_map);
    if (!in || !wh || !idx || !counts || !one || !map) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    for (int j0 = 0; j0 < mine && st == YQ_OK; j0 += batch) {
        int m = mine - j0 < batch ? mine - j0 : batch;
        st = eval_batch(s, mod, ds, part + j0 * parts, parts, m, p, so.letterbox, in, in_n, wh, idx, one, counts, map, n_map,
                        &dets, &n, &cap, &bad, err);
        if (p->progress) p->progress(p->ctx, j0 + m, mine);
    }
    free(in);
    free(wh);
    free(idx);
    free(counts);
    free(one);
    free(map);
    yq_error e2;
    if (yq_session_set_options(s, &keep, &e2) != YQ_OK && st == YQ_OK) {
        *err = e2;
        st = e2.code;
    }
    if (st != YQ_OK) {
        free(dets);
        return st;
    }
    *dets_out = dets;
    *n_out = n;
    if (skipped) *skipped = bad;
    return YQ_OK;
}

yq_status yq_session_evaluate(yq_session *s, const yq_dataset *ds, const yq_eval_params *p,
                              double stats[YQ_COCO_NSTATS], int *skipped, yq_det **dets_out, int *n_out,
                              yq_error *err)
{
    if (!s || !ds || !stats) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_session_evaluate: NULL argument");
    yq_det *dets = NULL;
    int n = 0, bad = 0;
    yq_status st = yq_session_detect_share(s, ds, p, 0, 1, &dets, &n, &bad, err);
    if (st == YQ_OK && bad == ds->n_images)
        st = yq_fail(err, YQ_ERR_IO, "none of the %d images could be read", ds->n_images);
    if (st == YQ_OK) st = yq_coco_eval(ds, dets, n, stats, NULL, NULL, err);
    if (st != YQ_OK) {
        free(dets);
        return st;
    }
    if (skipped) *skipped = bad;
    if (dets_out && n_out) {
        *dets_out = dets;
        *n_out = n;
    } else {
        free(dets);
    }
    return YQ_OK;
}
