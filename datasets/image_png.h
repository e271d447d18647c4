/* Internal to datasets/: PNG decoding through libpng with its messages caught
 * (image_png.c). */
#ifndef YQ_DATASETS_IMAGE_PNG_H
#define YQ_DATASETS_IMAGE_PNG_H

#include <stddef.h>
#include "datasets/image.h"

/* An encoded PNG in memory to a 3-channel RGB yq_image in [0,1], planar, converted as
 * OpenCV's imread(IMREAD_COLOR) converts it; the decoded size must be want_w x want_h (the
 * header's).  Damaged data is YQ_ERR_FORMAT; nothing is printed. */
yq_status yq_png_decode(const unsigned char *buf, size_t n, const char *name, int want_w, int want_h,
                        yq_image *out, yq_error *err);

#endif
