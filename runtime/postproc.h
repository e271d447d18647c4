/* Post-processing: decode the [yolo]/[region] heads into boxes, map them back
 * from the network input to the original image (undoing letterbox or plain
 * resize), and per-class NMS.
 *
 *     yq_post_opt o = yq_post_defaults();
 *     yq_detection dets[300];
 *     int n = yq_postprocess(g, heads, 0, img_w, img_h, letterbox, &o, dets, 300);
 */
#ifndef YQ_POSTPROC_H
#define YQ_POSTPROC_H

#include "ir/ir.h"

typedef struct yq_post_opt {
    float conf;           /* keep class scores above this (darknet's thresh) */
    float nms;            /* IoU above which a lower-scored box of the same class is dropped */
    int max_dets;         /* cap per image, best first */
} yq_post_opt;

yq_post_opt yq_post_defaults(void);   /* conf 0.25, nms 0.45, max 100 */

/* heads[k]: the float tensor feeding the k-th head node (in graph order), batch
 * of images, image b at offset b * size.  Returns the number of detections
 * written to out (sorted by score, at most cap), or -1 when out of memory. */
int yq_postprocess(const yq_graph *g, const float *const *heads, int b, int img_w, int img_h,
                   int letterbox, const yq_post_opt *o, yq_detection *out, int cap);

float yq_box_iou(const yq_detection *a, const yq_detection *b);

/* A model with anchor-free (DFL) heads: its decoded output as the Ultralytics export gives it
 * ("output0": (4 + classes) x N, N the cells of every scale in head order; rows cx, cy, w, h
 * in network-input pixels, then the class probabilities), image b of the batch.  Returns
 * 4 + classes, or -1 when a head is not a detect head or the heads disagree on classes. */
long yq_detect_raw_cells(const yq_graph *g);
int  yq_detect_raw(const yq_graph *g, const float *const *heads, int b, float *out);

#endif
