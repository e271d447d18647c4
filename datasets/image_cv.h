/* Internal to datasets/: the one call into OpenCV (image_cv.cpp), kept behind a C header so
 * that nothing else in yquant is compiled as C++. */
#ifndef YQ_DATASETS_IMAGE_CV_H
#define YQ_DATASETS_IMAGE_CV_H

#include <stddef.h>
#include "datasets/image.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Decodes an encoded JPEG/PNG held in memory to a 3-channel RGB yq_image in [0,1].
 * The decoded size must equal the header's (want_w x want_h); name is used in messages. */
yq_status yq_image_decode_cv(const unsigned char *buf, size_t n, const char *name,
                             int want_w, int want_h, yq_image *out, yq_error *err);

#ifdef __cplusplus
}
#endif
#endif
