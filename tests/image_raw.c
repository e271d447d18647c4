/* For the GPU test binaries only (the Makefile's gpu-test section): the device
 * machines have no OpenCV, so this yq_image_decode_cv takes the pixels OpenCV decoded
 * on a machine that has it, saved beside the image as IMAGE.rgb (width x height x 3
 * bytes, RGB, row major; `build/tests/test_session --write-raw IMAGE...` writes them).
 * The floats are made as datasets/image_cv.cpp makes them (byte / 255.f), so an image
 * loads to the same bytes as with OpenCV.  Header and truncation checks stay those of
 * datasets/image.c, which calls this after them. */
#include <stdio.h>
#include <stdlib.h>
#include "datasets/image_cv.h"
#include "ir/ir.h"

yq_status yq_image_decode_cv(const unsigned char *buf, size_t n, const char *name, int want_w, int want_h,
                             yq_image *out, yq_error *err)
{
    (void)buf;
    (void)n;
    char path[4200];
    snprintf(path, sizeof path, "%s.rgb", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return yq_fail(err, YQ_ERR_UNSUPPORTED, "%s: this build has no image decoder and %s is missing", name, path);
    size_t plane = (size_t)want_w * (size_t)want_h;
    unsigned char *px = malloc(3 * plane);
    float *data = malloc(3 * plane * sizeof *data);
    int ok = px && data && fread(px, 1, 3 * plane, f) == 3 * plane && fgetc(f) == EOF;
    fclose(f);
    if (!ok) {
        free(px);
        free(data);
        return yq_fail(err, YQ_ERR_FORMAT, "%s: not %dx%dx3 bytes (or out of memory)", path, want_w, want_h);
    }
    for (size_t i = 0; i < plane; i++)
        for (int k = 0; k < 3; k++) data[k * plane + i] = px[3 * i + k] / 255.f;
    free(px);
    out->w = want_w;
    out->h = want_h;
    out->c = 3;
    out->data = data;
    return YQ_OK;
}
