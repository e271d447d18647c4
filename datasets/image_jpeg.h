/* Internal to datasets/: JPEG decoding through libjpeg with its warnings as errors
 * (image_jpeg.c). */
#ifndef YQ_DATASETS_IMAGE_JPEG_H
#define YQ_DATASETS_IMAGE_JPEG_H

#include <stddef.h>
#include "datasets/image.h"

/* An encoded JPEG in memory to a 3-channel RGB yq_image in [0,1], planar; the decoded size
 * must be want_w x want_h (the header's).  Damaged data that libjpeg warns about is
 * YQ_ERR_FORMAT; nothing is printed. */
yq_status yq_jpeg_decode(const unsigned char *buf, size_t n, const char *name, int want_w, int want_h,
                         yq_image *out, yq_error *err);

#endif
