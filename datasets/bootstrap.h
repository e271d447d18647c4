/* Paired bootstrap over images of the COCO mAP difference between two sets of
 * detections on the same images (FP32 and int8): small sets are noisy, so the
 * drop is reported with a 95% interval.
 *
 *     double lo_hi[2][2];   // [map, map50][lo, hi] of (a - b), in mAP units
 *     yq_bootstrap_drop(ds, fp32, n1, int8, n2, 200, 1, lo_hi, &err);
 */
#ifndef YQ_DATASETS_BOOTSTRAP_H
#define YQ_DATASETS_BOOTSTRAP_H

#include "datasets/coco_eval.h"

yq_status yq_bootstrap_drop(const yq_dataset *ds, const yq_det *a, int na, const yq_det *b, int nb,
                            int resamples, uint64_t seed, double ci[2][2], yq_error *err);

#endif
