/* datasets/image: decode JPEG/PNG, darknet's resize and letterbox, image folders.  The API
 * is public (include/yq_data.h); this adds what only the tests and tools use.
 *
 * letterbox and resize are bit-identical to pjreddie darknet's letterbox_image and
 * resize_image (the plain resize is what AlexeyAB's `detector map` feeds the network), and
 * decoding equals libdarknet's load_image_color (its OpenCV build); tests/test_image.c
 * checks both against Debian's libdarknet.  Decoding ignores EXIF orientation, which
 * darknet's imread honours: COCO boxes refer to the stored pixels (stb_image, darknet's
 * other loader, ignores it too).  No image under ../shared carries an orientation tag.
 */
#ifndef YQ_DATASETS_IMAGE_H
#define YQ_DATASETS_IMAGE_H

#include "include/yq_data.h"

/* Decodes path and writes PATH.rgb beside it: its pixels as 8-bit RGB, interleaved, rows top
 * first (bench/gpu/sidecars.py compares them with another machine's OpenCV). */
yq_status yq_image_write_raw(const char *path, yq_error *err);

#endif
