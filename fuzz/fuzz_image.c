/* libFuzzer harness: arbitrary bytes as an image file, through yq_image_load (the
 * container walk of datasets/image.c, then libjpeg for JPEG and OpenCV for PNG).
 *
 * Any input must give YQ_OK or an error with a one-line message, never a crash,
 * undefined behaviour, a leak or anything printed by libjpeg.  The pixel limit is set to
 * 1 Mpx so that a header declaring a large image is refused before decoding (the limit is
 * what keeps a few hundred bytes from asking for gigabytes); an image that loads has the
 * size its header gives (yq_image_size agrees), 3 channels, and values in [0, 1].
 */
#include <math.h>
#include "fuzz/fuzz.h"
#include "datasets/image.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *in_path;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_dir_init("image");
    in_path = fuzz_path("in.img");
    yq_image_set_max_pixels(1L << 20);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_write(in_path, data, size);
    yq_error err = { 0 };
    yq_image im = { 0 };
    yq_status st = yq_image_load(in_path, &im, &err);
    fuzz_check_error(st, &err);
    int w = 0, h = 0;
    yq_error e2 = { 0 };
    yq_status s2 = yq_image_size(in_path, &w, &h, &e2);
    fuzz_check_error(s2, &e2);
    if (st != YQ_OK) return 0;
    if (s2 != YQ_OK || im.w != w || im.h != h || im.c != 3 || !im.data || (long)w * h > (1L << 20)) abort();
    for (size_t i = 0; i < (size_t)3 * w * h; i++)
        if (!(im.data[i] >= 0.f && im.data[i] <= 1.f)) abort();
    yq_image_free(&im);
    return 0;
}
