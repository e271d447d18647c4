/* yquant: INT8 quantization and calibration for YOLO-family detectors.
 *
 * The one public header.  Every call that can fail returns a yq_status and fills
 * a caller-owned yq_error with the detail (file, layer, what is wrong):
 *
 *     yq_error err;
 *     yq_model *m;
 *     if (yq_model_load("models/yolo-fastest-1.1-xl", NULL, &m, &err) != YQ_OK) {
 *         fprintf(stderr, "%s\n", err.msg);
 *         return 1;
 *     }
 *     printf("%d layers, input %dx%dx%d\n", yq_model_layers(m), ...);
 *     yq_model_free(m);
 *
 * Handles are pointers to incomplete structs; there is no global state.
 */
#ifndef YQ_H
#define YQ_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define YQ_VERSION "0.1.0"

typedef enum yq_status {
    YQ_OK = 0,
    YQ_ERR_INVALID_ARG,   /* a bad argument or option value */
    YQ_ERR_IO,            /* a file could not be opened, read or written */
    YQ_ERR_FORMAT,        /* a file is malformed: truncated, over-long, bad values */
    YQ_ERR_UNSUPPORTED,   /* valid input that yquant does not handle */
    YQ_ERR_SHAPE,         /* shapes that do not fit together */
    YQ_ERR_NOMEM,
    YQ_ERR_CUDA           /* a CUDA error, or no CUDA device where one was asked for */
} yq_status;

typedef struct yq_error {
    yq_status code;
    char msg[512];        /* one line: path, line or layer, what is wrong */
} yq_error;

/* One detection, in pixels of the original image. */
typedef struct yq_detection {
    float x, y, w, h;     /* top-left corner, width, height */
    float score;          /* objectness x class probability */
    int cls;              /* class index in the model's order (darknet's 0-79 for COCO) */
} yq_detection;

/* A short name for a status ("format error", ...); never NULL. */
const char *yq_status_str(yq_status st);

#ifdef __cplusplus
}
#endif
#endif
