/* datasets/coco_eval: COCO bbox mAP, computed as pycocotools' COCOeval computes it.
 *
 *     yq_dataset *gt;      ... yq_dataset_load_coco(...) ...
 *     yq_det *dets;
 *     int n;
 *     double s[YQ_COCO_NSTATS];
 *     if (yq_coco_dets_load("results.json", &dets, &n, &err) != YQ_OK) ...
 *     if (yq_coco_eval(gt, dets, n, s, NULL, NULL, &err) != YQ_OK) ...
 *     printf("AP %.3f  AP50 %.3f\n", s[YQ_COCO_AP], s[YQ_COCO_AP50]);
 *     yq_coco_dets_free(dets);
 *
 * Same parameters (IoU .50:.05:.95, 101 recall points, maxDets 1/10/100, the four area
 * ranges), same matching (greedy by score, crowd regions, ignore flags), same tie order
 * (stable sort on score), same summaries (-1 where a setting has no ground truth).
 * tests/coco_eval_test.py compares all 12 numbers with pycocotools on real annotations.
 */
#ifndef YQ_DATASETS_COCO_EVAL_H
#define YQ_DATASETS_COCO_EVAL_H

#include <stdint.h>
#include "include/yq.h"
#include "datasets/labels.h"

/* One detection, COCO results format. */
typedef struct yq_det {
    int64_t image_id;
    int category_id;
    double bbox[4];      /* x, y, w, h in pixels of the original image */
    double score;
} yq_det;

/* The 12 numbers of COCOeval.summarize(), in its order. */
enum {
    YQ_COCO_AP = 0,      /* AP @[.50:.95], all areas, 100 dets */
    YQ_COCO_AP50,
    YQ_COCO_AP75,
    YQ_COCO_AP_SMALL,
    YQ_COCO_AP_MEDIUM,
    YQ_COCO_AP_LARGE,
    YQ_COCO_AR1,
    YQ_COCO_AR10,
    YQ_COCO_AR100,
    YQ_COCO_AR_SMALL,
    YQ_COCO_AR_MEDIUM,
    YQ_COCO_AR_LARGE,
    YQ_COCO_NSTATS
};

/* Evaluates dets against gt: every gt image, every category of gt->category_ids.
 * Detections of other categories are ignored (as pycocotools does); a detection naming an
 * image_id not in gt, or a non-finite score or box, is an error.
 * cat_ap and cat_ap50 (each NULL or gt->n_categories long, in gt->category_ids order)
 * receive per-category AP@[.5:.95] and AP50 (all areas, 100 dets), -1 without ground truth. */
yq_status yq_coco_eval(const yq_dataset *gt, const yq_det *dets, int n_dets,
                       double stats[YQ_COCO_NSTATS], double *cat_ap, double *cat_ap50, yq_error *err);

/* A COCO results json: an array of {"image_id", "category_id", "bbox", "score"}. */
yq_status yq_coco_dets_load(const char *path, yq_det **dets, int *n, yq_error *err);

/* Writes dets as a results json, through path.tmp renamed on success.  Numbers are
 * printed to round-trip exactly, so a saved file evaluates to the same numbers. */
yq_status yq_coco_dets_save(const char *path, const yq_det *dets, int n, yq_error *err);

void yq_coco_dets_free(yq_det *dets);

/* A short name for stats[i] ("AP", "AP50", ..., "AR_large"). */
const char *yq_coco_stat_name(int i);

#endif
