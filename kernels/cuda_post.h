/* GPU post-processing: [yolo]/[region] decode and per-class NMS on the device, and
 * the few runtime calls a CUDA-graph session needs (pinned memory, async copies,
 * stream capture), behind a C interface (no CUDA types here).
 *
 *     yq_post_dev d = { ... };                        // runtime/gpu_post.c fills it from a graph
 *     yq_cuda_post_enqueue(&d, n, stream, &err);      // decode + NMS + top-K of n images
 *     // d.result: per image a yq_post_rec: count, then up to d.k detections, best first
 *
 * Pipeline (one memset and three kernels, no host round trip):
 *   1. decode: one warp per (image, head cell, anchor).  Objectness above conf gives a
 *      box (centre form, original-image relative, as correct_yolo_boxes; an anchor-free
 *      detect head: every cell, the DFL expectation of each side, no objectness) and, per class
 *      whose score is above conf, a candidate appended with an atomic counter to the
 *      list of that (image, class).  Each cell adds at most one candidate per class, so
 *      a list holds at most cells candidates and never overflows.
 *   2. nms: one block per (image, class): the list is sorted (bitonic, in shared memory
 *      up to YQ_POST_SMEM_ITEMS, in place in global memory above) and greedy NMS keeps a
 *      box unless an earlier kept box of its class overlaps it by IoU > nms, exactly
 *      runtime/postproc.c's loop; survivors are appended to the image's kept list.
 *   3. top: one block per image sorts the kept boxes and writes the best k in pixels.
 *
 * Order and ties.  The CPU (postproc.c) sorts candidates by class, score descending,
 * centre x, centre y, and keeps decode order for full ties (glibc's qsort is a stable
 * merge sort); it then sorts the survivors by score descending and class, keeping that
 * order for ties.  The GPU uses that total order explicitly: within a class (score desc,
 * cx, cy, decode index), and for the output (score desc, class, cx, cy, decode index),
 * where the decode index is the CPU's push order (head, anchor, row, column, class).
 *
 * Numerics.  Every float operation is the CPU's, in the CPU's order, written with
 * __f*_rn intrinsics so that nvcc cannot fuse a multiply and an add.  expf is the one
 * function that differs: the GPU evaluates (float)exp((double)x), correctly rounded
 * except in rare cases, where glibc's expf is within 0.502 ulp; so a score can differ
 * from the CPU's by one ulp, rarely, which can only matter for a score within an ulp of
 * conf or of another score, or an IoU within rounding of nms.
 */
#ifndef YQ_KERNELS_CUDA_POST_H
#define YQ_KERNELS_CUDA_POST_H

#include "ir/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

#define YQ_POST_MAX_HEADS 16
/* Lists up to this many boxes are sorted in shared memory; longer ones in global memory. */
#define YQ_POST_SMEM_ITEMS 2048

/* One head as the decode kernel reads it. */
typedef struct yq_post_head {
    const float *x;          /* device: batch x c x h x w floats (NCHW), image b at b * c*h*w */
    int c, h, w;             /* the head's input */
    int yolo;                /* 1 [yolo], 0 [region] */
    int detect;              /* 1: an anchor-free (DFL) head: reg_max bins per side, stride (n_mask 1) */
    int reg_max, stride;
    int classes, coords, n_mask;
    int new_coords, softmax;
    float scale_x_y;
    int cell0;               /* first cell (anchor x h x w, in decode order) of this head */
    int mask[YQ_MAX_ANCH];
    float anchors[2 * YQ_MAX_ANCH];
} yq_post_head;

/* One image's result as the device writes it (and the host reads it back). */
typedef struct yq_post_rec {
    int32_t count;           /* detections written, <= k */
    int32_t n_cand, n_kept;  /* candidates above conf, boxes kept by NMS (all classes) */
    int32_t pad;
    /* followed by k yq_detection */
} yq_post_rec;

YQ_HD size_t yq_post_rec_bytes(int k) { return sizeof(yq_post_rec) + (size_t)k * sizeof(yq_detection); }

/* Everything the kernels use; device pointers unless said.  runtime/gpu_post.c sizes it. */
typedef struct yq_post_dev {
    const yq_post_head *heads;   /* device copy of n_heads descriptors */
    int batch;                   /* images the buffers hold */
    int n_heads, classes, cells; /* classes: the most of any head; cells: per image */
    int netw, neth, letterbox;    /* 0 plain resize, 1 darknet's letterbox, 2 Ultralytics' */
    float conf, nms;
    int k;                       /* detections kept per image (max_dets) */
    int seg_cap;                 /* per (image, class) list: pow2 >= cells */
    long kept_cap;               /* per image: pow2 >= classes x cells */
    const int *orig_wh;          /* batch x 2: original width, height */
    float *boxes;                /* batch x cells x 4: cx, cy, w, h (relative, corrected) */
    int *counts;                 /* batch x classes list lengths, then batch kept counts (zeroed per run) */
    void *seg;                   /* batch x classes x seg_cap items */
    void *kept;                  /* batch x kept_cap items */
    unsigned char *result;       /* batch records of yq_post_rec_bytes(k) */
} yq_post_dev;

/* Bytes of the item arrays, for the allocator. */
size_t yq_post_seg_item_bytes(void);
size_t yq_post_kept_item_bytes(void);

/* Enqueues the pipeline for images 0..n-1 on stream; no sync, capturable. */
yq_status yq_cuda_post_enqueue(const yq_post_dev *d, int n, void *stream, yq_error *err);

/* --- runtime helpers for a graph-captured session (kernels/cuda_post_rt.cu) --- */
/* Clears the runtime's last-error slot: a failed allocation elsewhere (one not made
 * through yq_cuda_malloc) must not surface as the error of a later, unrelated launch. */
void      yq_cuda_clear_error(void);
/* Compute capability as major*10+minor of device, and its name. */
yq_status yq_cuda_device_sm(int device, int *sm, char *name, size_t cap, yq_error *err);
/* A stream that does not synchronise with the legacy default stream (capture needs one). */
yq_status yq_cuda_stream_new_async(void **stream, yq_error *err);
/* Page-locked host memory: copies from it can be captured. */
yq_status yq_cuda_host_alloc(void **p, size_t bytes, yq_error *err);
void      yq_cuda_host_free(void *p);                          /* NULL is a no-op */
yq_status yq_cuda_h2d_async(void *dst, const void *src, size_t bytes, void *stream, yq_error *err);
yq_status yq_cuda_d2h_async(void *dst, const void *src, size_t bytes, void *stream, yq_error *err);
yq_status yq_cuda_memset_async(void *p, int byte, size_t bytes, void *stream, yq_error *err);
/* Stream capture into an instantiated graph: begin, enqueue work, end.  On a failed
 * capture end_capture discards it and returns the error. */
yq_status yq_cuda_capture_begin(void *stream, yq_error *err);
yq_status yq_cuda_capture_end(void *stream, void **graph_exec, yq_error *err);
yq_status yq_cuda_graph_launch(void *graph_exec, void *stream, yq_error *err);
void      yq_cuda_graph_free(void *graph_exec);                /* NULL is a no-op */
/* Times fn(ctx) enqueued on stream reps times, one pair of events around each call:
 * ms[r] for r < reps (after one untimed warm-up call). */
yq_status yq_cuda_time_each(void *stream, int reps, yq_status (*fn)(void *ctx), void *ctx, float *ms,
                            yq_error *err);

#ifdef __cplusplus
}
#endif
#endif
