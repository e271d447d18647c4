/* datasets/image: decode JPEG/PNG, darknet's resize and letterbox, image folders.
 *
 *     yq_image im, net;
 *     yq_error err;
 *     if (yq_image_load("dog.jpg", &im, &err) != YQ_OK) { fprintf(stderr, "%s\n", err.msg); ... }
 *     if (yq_image_letterbox(&im, 416, 416, &net, &err) != YQ_OK) ...
 *     ... net.data is the network input: CHW, RGB, [0,1], grey (0.5) bars ...
 *     yq_image_free(&net);
 *     yq_image_free(&im);
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

#include <stddef.h>
#include "include/yq.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CHW planar float image: data[(k*h + y)*w + x]; c = 3 (RGB) for decoded images.
 * Owns data (malloc); a zeroed struct is an empty image. */
typedef struct yq_image { int w, h, c; float *data; } yq_image;

/* The largest image yq_image_load and yq_image_size accept, in pixels, checked from the
 * header before decoding (default 64 Mpx; a few hundred bytes can declare far more). */
#define YQ_IMAGE_MAX_PIXELS_DEFAULT (64L << 20)
void yq_image_set_max_pixels(long px);     /* <= 0 or over 268 Mpx: the default */
long yq_image_max_pixels(void);

/* Decodes a JPEG or PNG file to RGB in [0,1] (v/255.f), with libjpeg and libpng.  A
 * truncated file (JPEG without its EOI marker, PNG without IEND), a file that is neither,
 * one over the pixel limit, or one whose data the decoder reports as damaged is an error
 * naming the path; nothing is printed.  *out is set only on YQ_OK. */
yq_status yq_image_load(const char *path, yq_image *out, yq_error *err);

/* Width and height from the file's header (SOF / IHDR); the whole file is checked for
 * truncation as yq_image_load does, without decoding pixels. */
yq_status yq_image_size(const char *path, int *w, int *h, yq_error *err);

/* A w x h x c image filled with zeros. */
yq_status yq_image_make(int w, int h, int c, yq_image *out, yq_error *err);

/* Frees data and zeroes *im; NULL or an empty image is a no-op. */
void yq_image_free(yq_image *im);
/* Decodes path and writes PATH.rgb beside it: its pixels as 8-bit RGB, interleaved, rows top
 * first (bench/gpu/sidecars.py compares them with another machine's OpenCV). */
yq_status yq_image_write_raw(const char *path, yq_error *err);

/* darknet's resize_image: two-pass bilinear to w x h, aspect ratio not kept. */
yq_status yq_image_resize(const yq_image *im, int w, int h, yq_image *out, yq_error *err);

/* darknet's letterbox_image: resize to fit w x h keeping the aspect ratio, centred on 0.5. */
yq_status yq_image_letterbox(const yq_image *im, int w, int h, yq_image *out, yq_error *err);

/* The size of the resized picture inside a w x h letterbox of an im_w x im_h image (the
 * same integer arithmetic as letterbox_image and darknet's correct_yolo_boxes).  The
 * picture sits at ((w - *new_w)/2, (h - *new_h)/2). */
void yq_letterbox_size(int im_w, int im_h, int w, int h, int *new_w, int *new_h);

/* The .jpg/.jpeg/.png files (any case) of dir as "dir/name" paths, sorted by name (bytes).
 * Other files are skipped with a warning through warn (may be NULL) and counted in
 * *n_skipped (may be NULL); subdirectories, dot files and raw sidecars are skipped
 * silently.  A missing or unreadable dir, or one with no images, is an error.  Free with
 * yq_list_images_free. */
yq_status yq_list_images(const char *dir, char ***paths, int *n, int *n_skipped, yq_warn_fn warn, void *wctx,
                         yq_error *err);
void yq_list_images_free(char **paths, int n);

#ifdef __cplusplus
}
#endif
#endif
