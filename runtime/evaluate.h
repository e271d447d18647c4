/* Detection accuracy of a graph (FP32 or int8) on a labelled dataset: run every
 * image, collect detections in COCO form, and score them with datasets/coco_eval.
 *
 *     yq_eval_opt o = yq_eval_defaults();      // conf 0.005, nms 0.45, 100 per image
 *     yq_det *dets; int n;
 *     yq_eval_detect(g, ds, &o, &dets, &n, &err);
 *     yq_coco_eval(ds, dets, n, stats, NULL, NULL, &err);
 */
#ifndef YQ_EVALUATE_H
#define YQ_EVALUATE_H

#include "datasets/coco_eval.h"
#include "runtime/detector.h"

typedef struct yq_eval_opt {
    yq_post_opt post;
    int letterbox;               /* 1 letterbox, 0 plain resize */
    yq_progress_fn progress;     /* NULL: none */
    void *progress_ctx;
    yq_warn_fn warn;             /* an unreadable image skipped; NULL: none */
    void *warn_ctx;
} yq_eval_opt;

yq_eval_opt yq_eval_defaults(void);

/* Appends image image_id's k detections (one, model classes) to *dets (n used, cap
 * allocated; grown as needed) as COCO detections: the category of each class from cat_map
 * (n_map classes, yq_eval_class_map; a class mapped to -1 is dropped), or with cat_map NULL
 * darknet's COCO table. */
yq_status yq_dets_append(yq_det **dets, int *n, int *cap, int64_t image_id, const yq_detection *one, int k,
                         const int *cat_map, int n_map, yq_error *err);
/* g's classes (its heads', its names) mapped to ds's categories (yq_dataset_class_map);
 * *n gets the count.  malloc'd; NULL when out of memory. */
int *yq_eval_class_map(const yq_graph *g, const yq_dataset *ds, int *n);

/* Unreadable images are skipped with a warning (o->warn) and counted in *skipped; it fails
 * only when none can be read.  *dets is malloc'ed (yq_coco_dets_free). */
yq_status yq_eval_detect(const yq_graph *g, const yq_dataset *ds, const yq_eval_opt *o,
                         yq_det **dets, int *n, int *skipped, yq_error *err);

#endif
