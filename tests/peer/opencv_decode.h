/* The test peer: OpenCV's decoding (opencv_decode.cpp) behind a C header, for the tests that
 * compare yquant's own decoders with it. */
#ifndef YQ_TESTS_PEER_OPENCV_DECODE_H
#define YQ_TESTS_PEER_OPENCV_DECODE_H

#include <stddef.h>
#include "datasets/image.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Decodes an encoded JPEG/PNG held in memory to a 3-channel RGB yq_image in [0,1].
 * The decoded size must equal the header's (want_w x want_h); name is used in messages. */
yq_status peer_opencv_decode(const unsigned char *buf, size_t n, const char *name,
                             int want_w, int want_h, yq_image *out, yq_error *err);

#ifdef __cplusplus
}
#endif
#endif
