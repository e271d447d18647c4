/* Frames already in memory, the way a camera or video pipeline holds them: 8-bit BGR rows
 * with padding (OpenCV's cv::Mat, a V4L2 or GStreamer buffer), run through a session
 * without files.  Here the frames come from an image file, decoded once and written into
 * a BGR buffer with 64-byte-aligned rows; a real pipeline passes its own buffer.
 *
 *     make examples
 *     build/examples/frames yolo-fastest-1.1-xl-int8.yqp dog.jpg 8
 *
 * Only include/yq.h and include/yq_data.h (the decoder, for this example's frame) are needed. */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "yq.h"
#include "yq_data.h"

#define PER_FRAME 100

/* The decoded image (planar RGB floats in [0,1]) as interleaved BGR bytes, rows padded to
 * a multiple of 64 bytes; *stride set. */
static uint8_t *to_bgr(const yq_image *im, int *stride)
{
    *stride = (im->w * 3 + 63) & ~63;
    uint8_t *d = calloc((size_t)*stride, (size_t)im->h);
    const size_t plane = (size_t)im->w * im->h;
    for (int y = 0; d && y < im->h; y++)
        for (int x = 0; x < im->w; x++)
            for (int c = 0; c < 3; c++)
                d[(size_t)y * *stride + (size_t)x * 3 + 2 - c] = (uint8_t)(im->data[c * plane + (size_t)y * im->w + x] * 255.f + .5f);
    return d;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL.yqp|MODEL_DIR IMAGE [FRAMES]\n", argv[0]);
        return 2;
    }
    int n = argc > 3 ? atoi(argv[3]) : 4;
    if (n < 1 || n > 1024) n = 4;
    yq_error err;
    yq_model *m = NULL;
    yq_session *s = NULL;
    yq_image im = { 0 };
    if (yq_model_open(argv[1], &m, &err) != YQ_OK || yq_image_load(argv[2], &im, &err) != YQ_OK) {
        fprintf(stderr, "%s\n", err.msg);
        yq_model_free(m);
        return 1;
    }
    if (yq_session_new(m, "cuda:0", 4, &s, &err) != YQ_OK) {
        fprintf(stderr, "note: %s; using the cpu\n", err.msg);
        if (yq_session_new(m, "cpu", 4, &s, &err) != YQ_OK) {
            fprintf(stderr, "%s\n", err.msg);
            yq_image_free(&im);
            yq_model_free(m);
            return 1;
        }
    }
    int stride;
    uint8_t *bgr = to_bgr(&im, &stride);
    yq_frame *frames = calloc((size_t)n, sizeof *frames);
    yq_detection *dets = malloc(sizeof *dets * PER_FRAME * (size_t)n);
    int *counts = malloc(sizeof *counts * (size_t)n), rc = 1;
    if (!bgr || !frames || !dets || !counts) {
        fprintf(stderr, "out of memory\n");
    } else {
        for (int i = 0; i < n; i++) frames[i] = (yq_frame){ bgr, im.w, im.h, stride, YQ_PIX_BGR8 };
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (yq_session_run_frames(s, frames, n, dets, PER_FRAME, counts, &err) != YQ_OK) {
            fprintf(stderr, "%s\n", err.msg);
        } else {
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
            printf("%d frames of %dx%d BGR (stride %d) on %s: %.1f ms, %.1f frames/s\n", n, im.w, im.h, stride,
                   yq_session_device(s), ms, 1e3 * n / ms);
            printf("frame 0: %d detection%s\n", counts[0], counts[0] == 1 ? "" : "s");
            for (int k = 0; k < counts[0]; k++) {
                const yq_detection *d = &dets[k];
                const char *name = yq_model_class_name(m, d->cls);
                printf("  %-14s %5.1f%%  x=%.0f y=%.0f w=%.0f h=%.0f\n", name ? name : "?", 100.0 * (double)d->score,
                       (double)d->x, (double)d->y, (double)d->w, (double)d->h);
            }
            rc = 0;
        }
    }
    free(bgr);
    free(frames);
    free(dets);
    free(counts);
    yq_image_free(&im);
    yq_session_free(s);
    yq_model_free(m);
    return rc;
}
