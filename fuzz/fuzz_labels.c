/* libFuzzer harness: arbitrary bytes as the YOLO txt labels of an image folder.
 *
 * The folder (made once, in a temporary images/) holds a.png (6x4) and b.jpg (10x8),
 * real images: the loader reads each one's size from its header, which must be whole.
 * The input up to its first NUL byte is labels/a.txt; the rest, when there is a NUL, is
 * labels/b.txt (without one, b.jpg has no label file, which means no boxes).  The
 * label folder is found by darknet's convention (images -> labels).
 *
 * Any input must give YQ_OK or an error with a one-line message, never a crash,
 * undefined behaviour or a leak.  A dataset that loads must list both images with
 * their header sizes, and boxes that come from normalised "class cx cy w h" lines:
 * a darknet class and its COCO category, finite, with w and h inside the image.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz/fuzz.h"
#include "datasets/labels.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const unsigned char png_6x4[] =
    "\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x00\x06\x00\x00\x00\x04"
    "\x08\x02\x00\x00\x00\x22\x66\xd9\x14\x00\x00\x00\x3c\x49\x44\x41\x54\x78\xda\x0d\xc8\x41\x01\x00"
    "\x30\x08\x03\xb1\xca\x41\x04\x22\x90\xd3\xe7\x49\x41\x44\x45\x20\x6b\xcb\x33\x92\x28\x31\xc2\x62"
    "\xc5\x09\xa9\xa9\x66\x1a\x37\xdb\x5c\xff\x32\x65\xc6\xd8\xac\x39\xff\x0a\x15\x26\x38\x6c\xb8\xf0"
    "\x00\xc4\x51\x1d\xd1\x9a\xa8\x43\xb7\x00\x00\x00\x00\x49\x45\x4e\x44\xae\x42\x60\x82";
static const unsigned char jpeg_10x8[] =
    "\xff\xd8\xff\xdb\x00\x43\x00\x10\x0b\x0c\x0e\x0c\x0a\x10\x0e\x0d\x0e\x12\x11\x10\x13\x18\x28\x1a"
    "\x18\x16\x16\x18\x31\x23\x25\x1d\x28\x3a\x33\x3d\x3c\x39\x33\x38\x37\x40\x48\x5c\x4e\x40\x44\x57"
    "\x45\x37\x38\x50\x6d\x51\x57\x5f\x62\x67\x68\x67\x3e\x4d\x71\x79\x70\x64\x78\x5c\x65\x67\x63\xff"
    "\xdb\x00\x43\x01\x11\x12\x12\x18\x15\x18\x2f\x1a\x1a\x2f\x63\x42\x38\x42\x63\x63\x63\x63\x63\x63"
    "\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63"
    "\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\x63\xff\xc0\x00\x11"
    "\x08\x00\x08\x00\x0a\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01\xff\xc4\x00\x16\x00\x01\x01\x01\x00"
    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x04\xff\xc4\x00\x20\x10\x00\x02\x01\x04"
    "\x01\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x02\x04\x00\x03\x05\x11\x41\x06\x21\x51\x61"
    "\xe1\xff\xc4\x00\x15\x01\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x02"
    "\xff\xc4\x00\x17\x11\x00\x03\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x31"
    "\x41\xff\xda\x00\x0c\x03\x01\x00\x02\x11\x03\x11\x00\x3f\x00\xb8\x11\x63\xe1\xb1\xcd\x32\x48\x00"
    "\x28\xd2\x2f\x2e\xdc\x28\xf6\x7e\xd6\x06\xcd\xf5\x03\xb1\x74\x94\x2d\xab\x1d\x84\x16\x50\x85\x1e"
    "\x3b\xae\xe9\x4a\x55\x64\xe1\xff\xd9";

static const struct { const char *name; int w, h; } images[2] = { { "a.png", 6, 4 }, { "b.jpg", 10, 8 } };
static const char *image_dir, *label_a, *label_b;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_dir_init("labels");
    image_dir = fuzz_mkdir("images");
    fuzz_mkdir("labels");
    fuzz_write(fuzz_path("images/a.png"), png_6x4, sizeof png_6x4 - 1);
    fuzz_write(fuzz_path("images/b.jpg"), jpeg_10x8, sizeof jpeg_10x8 - 1);
    label_a = fuzz_path("labels/a.txt");
    label_b = fuzz_path("labels/b.txt");
    return 0;
}

/* The categories: COCO's table where every class is under 80, else the classes themselves
 * (class k, id k + 1, up to the largest class). */
static void check_dataset(const yq_dataset *ds, int have_b)
{
    int top = -1;
    for (int i = 0; i < ds->n_boxes; i++) top = ds->boxes[i].cls > top ? ds->boxes[i].cls : top;
    const int coco = top < YQ_COCO_CLASSES;
    if (ds->n_images != 2 || ds->n_categories != (coco ? YQ_COCO_CLASSES : top + 1) || ds->n_boxes < 0) abort();
    for (int i = 0; i < 2; i++) {
        const yq_ds_image *im = &ds->images[i];
        if (strcmp(im->file, images[i].name) || im->width != images[i].w || im->height != images[i].h) abort();
        if (im->id != i + 1 || yq_dataset_find_image(ds, im->id) != i) abort();
    }
    for (int k = 0; k < ds->n_categories; k++)
        if (ds->category_ids[k] != (coco ? yq_coco_category_id(k) : k + 1)) abort();
    for (int i = 0; i < ds->n_boxes; i++) {
        const yq_gt_box *b = &ds->boxes[i];
        if (b->image < 0 || b->image > 1 || (b->image == 1 && !have_b) || (i && b->image < ds->boxes[i - 1].image)) abort();
        if (b->id != i + 1 || b->cls < 0 || b->cls > top || b->category_id != (coco ? yq_coco_category_id(b->cls) : b->cls + 1))
            abort();
        if (b->iscrowd || b->area != b->bbox[2] * b->bbox[3]) abort();
        for (int k = 0; k < 4; k++)
            if (!isfinite(b->bbox[k])) abort();
        if (!(b->bbox[2] >= 0 && b->bbox[2] <= images[b->image].w && b->bbox[3] >= 0 && b->bbox[3] <= images[b->image].h))
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t na = nul ? (size_t)(nul - data) : size;
    fuzz_write(label_a, data, na);
    if (nul) fuzz_write(label_b, nul + 1, size - na - 1);
    else remove(label_b);
    yq_dataset *ds = NULL;
    yq_error err = { 0 };
    yq_status st = yq_dataset_load_yolo(image_dir, NULL, &ds, &err);
    fuzz_check_error(st, &err);
    if (st == YQ_OK) check_dataset(ds, nul != NULL);
    else if (ds) abort();
    yq_dataset_free(ds);
    return 0;
}
