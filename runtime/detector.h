/* A detector: a graph, a plan and the pre/post-processing around them.
 * One image in, detections in original-image pixels out.
 *
 *     yq_detector *d;
 *     yq_detector_new(g, &d, &err);
 *     yq_detector_run(d, &image, letterbox, &post, dets, cap, &n, &err);
 *     yq_detector_free(d);
 */
#ifndef YQ_DETECTOR_H
#define YQ_DETECTOR_H

#include "datasets/image.h"
#include "runtime/plan.h"
#include "runtime/postproc.h"

typedef struct yq_detector yq_detector;

yq_status yq_detector_new(const yq_graph *g, yq_detector **out, yq_error *err);  /* g is borrowed */
void      yq_detector_free(yq_detector *d);
/* The network input for an image: letterboxed or plainly resized, C x H x W floats. */
yq_status yq_preprocess(const yq_graph *g, const yq_image *im, int letterbox, float *dst, yq_error *err);
yq_status yq_detector_run(yq_detector *d, const yq_image *im, int letterbox, const yq_post_opt *o,
                          yq_detection *dets, int cap, int *n, yq_error *err);
/* The tensors feeding the heads of the last run (graph order). */
const float *const *yq_detector_heads(const yq_detector *d, int *n_heads);

#endif
