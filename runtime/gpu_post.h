/* Post-processing on the GPU: the device version of yq_postprocess (runtime/postproc.h)
 * for a graph's [yolo]/[region] heads, over head tensors already on the device.  The
 * kernels and the order/tie rules are in kernels/cuda_post.h.
 *
 *     yq_gpu_post *gp;
 *     yq_gpu_post_new(g, d_heads, batch, &opt, letterbox, &gp, &err);  // one device allocation
 *     yq_cuda_h2d(yq_gpu_post_wh(gp), wh, 2 * n * sizeof(int), &err);  // original image sizes
 *     yq_gpu_post_enqueue(gp, n, stream, &err);                        // no sync, capturable
 *     ... copy yq_gpu_post_result(gp), n * yq_gpu_post_rec_bytes(gp) bytes, to the host ...
 *     n_det = yq_gpu_post_unpack(gp, host_block, b, dets, cap);
 *     yq_gpu_post_free(gp);
 */
#ifndef YQ_GPU_POST_H
#define YQ_GPU_POST_H

#include "runtime/postproc.h"

typedef struct yq_gpu_post yq_gpu_post;

/* d_heads[k]: device pointer to the float NCHW tensor feeding the k-th head node (graph
 * order), batch images; borrowed, must outlive gp.  o->max_dets >= 1 is the number of
 * detections kept per image.  *out set only on YQ_OK. */
yq_status yq_gpu_post_new(const yq_graph *g, const float *const *d_heads, int batch, const yq_post_opt *o,
                          int letterbox, yq_gpu_post **out, yq_error *err);
void      yq_gpu_post_free(yq_gpu_post *gp);                 /* NULL is a no-op */
int      *yq_gpu_post_wh(yq_gpu_post *gp);                   /* device: batch x (width, height) */
yq_status yq_gpu_post_enqueue(yq_gpu_post *gp, int n, void *stream, yq_error *err);
const void *yq_gpu_post_result(const yq_gpu_post *gp);       /* device: batch records, image b first at b * rec bytes */
size_t    yq_gpu_post_rec_bytes(const yq_gpu_post *gp);
size_t    yq_gpu_post_bytes(const yq_gpu_post *gp);          /* device memory held */
/* From a result block copied to the host: image b's detections (best first), at most
 * cap of them; returns how many were written.  cand/kept (may be NULL): candidates
 * above conf and boxes NMS kept, for reports. */
int       yq_gpu_post_unpack(const yq_gpu_post *gp, const void *host_block, int b, yq_detection *dets, int cap,
                             int *cand, int *kept);
/* Convenience for tests and tools: upload wh (n x 2 ints, host), run, wait, and unpack
 * image by image into dets (n x cap) and counts (n).  Uses the default stream. */
yq_status yq_gpu_post_run(yq_gpu_post *gp, int n, const int *wh, yq_detection *dets, int cap, int *counts,
                          yq_error *err);

#endif
