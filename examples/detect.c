/* The public API in one page: open a model, run images on the GPU when there is one
 * (else on the CPU), print the detections.
 *
 *     make examples
 *     build/examples/detect yolo-fastest-1.1-xl-int8.yqp dog.jpg horses.jpg
 *
 * Only include/yq.h is needed; link with build/libyq.a and its libraries (Makefile). */
#include <stdio.h>
#include <stdlib.h>
#include "yq.h"

#define PER_IMAGE 100

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL.yqp|MODEL_DIR IMAGE...\n", argv[0]);
        return 2;
    }
    int n = argc - 2;
    yq_error err;
    yq_model *m = NULL;
    yq_session *s = NULL;
    if (yq_model_open(argv[1], &m, &err) != YQ_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    /* The GPU if this model and machine allow it; the CPU otherwise. */
    if (yq_session_new(m, "cuda:0", 4, &s, &err) != YQ_OK) {
        fprintf(stderr, "note: %s; using the cpu\n", err.msg);
        if (yq_session_new(m, "cpu", 1, &s, &err) != YQ_OK) {
            fprintf(stderr, "%s\n", err.msg);
            yq_model_free(m);
            return 1;
        }
    }
    printf("%s on %s\n", argv[1], yq_session_device(s));

    yq_detection *dets = malloc(sizeof *dets * PER_IMAGE * (size_t)n);
    int *counts = malloc(sizeof *counts * (size_t)n);
    int rc = 1;
    if (!dets || !counts) {
        fprintf(stderr, "out of memory\n");
    } else if (yq_session_run_images(s, (const char *const *)(argv + 2), n, dets, PER_IMAGE, counts, &err) != YQ_OK) {
        fprintf(stderr, "%s\n", err.msg);
    } else {
        for (int i = 0; i < n; i++) {
            printf("%s: %d detection%s\n", argv[2 + i], counts[i], counts[i] == 1 ? "" : "s");
            for (int k = 0; k < counts[i]; k++) {
                const yq_detection *d = &dets[i * PER_IMAGE + k];
                const char *name = yq_model_class_name(m, d->cls);
                printf("  %-14s %5.1f%%  x=%.0f y=%.0f w=%.0f h=%.0f\n", name ? name : "?", 100.0 * (double)d->score,
                       (double)d->x, (double)d->y, (double)d->w, (double)d->h);
            }
        }
        rc = 0;
    }
    free(dets);
    free(counts);
    yq_session_free(s);
    yq_model_free(m);
    return rc;
}
