#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "datasets/labels.h"
#include "runtime/evaluate.h"

yq_eval_opt yq_eval_defaults(void)
{
    yq_eval_opt o;
    memset(&o, 0, sizeof o);
    o.post = yq_post_defaults();
    o.post.conf = 0.005f;   /* as darknet's `detector map` and COCO practice */
    o.post.max_dets = 100;
    return o;
}

yq_status yq_dets_append(yq_det **dets, int *n, int *cap, int image_id, const yq_detection *one, int k, yq_error *err)
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
        int cat = yq_coco_category_id(one[j].cls);
        (*dets)[(*n)++] = (yq_det){ image_id, cat > 0 ? cat : one[j].cls, { one[j].x, one[j].y, one[j].w, one[j].h },
                                    one[j].score };
    }
    return YQ_OK;
}

yq_status yq_eval_detect(const yq_graph *g, const yq_dataset *ds, const yq_eval_opt *o,
                         yq_det **dets_out, int *n_out, int *skipped, yq_error *err)
{
    yq_detector *d;
    yq_status st = yq_detector_new(g, &d, err);
    if (st != YQ_OK) return st;
    int cap = 1024, n = 0, bad = 0;
    yq_det *dets = malloc(sizeof *dets * (size_t)cap);
    yq_detection *one = malloc(sizeof *one * (size_t)o->post.max_dets);
    if (!dets || !one) { st = yq_fail(err, YQ_ERR_NOMEM, "out of memory"); goto done; }
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
        if ((st = yq_dets_append(&dets, &n, &cap, ds->images[i].id, one, k, err)) != YQ_OK) break;
        if (o->progress) o->progress(o->progress_ctx, i + 1, ds->n_images);
    }
    if (st == YQ_OK && bad == ds->n_images)
        st = yq_fail(err, YQ_ERR_IO, "none of the %d images could be read", ds->n_images);
done:
    free(one);
    yq_detector_free(d);
    if (st != YQ_OK) { free(dets); return st; }
    *dets_out = dets;
    *n_out = n;
    if (skipped) *skipped = bad;
    return YQ_OK;
}
