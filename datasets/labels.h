/* datasets/labels: a labelled image set (images + ground-truth boxes) from COCO json or YOLO txt.
 *
 *     yq_dataset *ds;
 *     yq_error err;
 *     if (yq_dataset_load_coco("instances_val2017.json", "val2017/images", &ds, &err) != YQ_OK)
 *         ...
 *     for (int i = 0; i < ds->n_boxes; i++) {
 *         const yq_gt_box *b = &ds->boxes[i];
 *         printf("%s cls %d at %g,%g\n", ds->images[b->image].file, b->cls, b->bbox[0], b->bbox[1]);
 *     }
 *     yq_dataset_free(ds);
 *
 * Boxes are COCO's convention throughout: top-left x, y, width, height in pixels.
 */
#ifndef YQ_DATASETS_LABELS_H
#define YQ_DATASETS_LABELS_H

#include <stddef.h>
#include <stdint.h>
#include "include/yq.h"

#define YQ_COCO_CLASSES 80

typedef struct yq_ds_image {
    char *file;          /* file name as listed (json file_name, or the name in the folder) */
    int64_t id;          /* COCO image id; 1..N in name order for YOLO folders */
    int width, height;
} yq_ds_image;

typedef struct yq_gt_box {
    int image;           /* index into yq_dataset.images */
    int64_t id;          /* annotation id (json), or 1..n in load order (YOLO) */
    int category_id;     /* COCO category id */
    int cls;             /* darknet class 0..79, or -1 for a category outside the 80 */
    double bbox[4];      /* x, y, w, h in pixels */
    double area;         /* json "area" (segment area, used for COCO's size ranges); YOLO: w*h */
    int iscrowd;
} yq_gt_box;

typedef struct yq_ds_idref { int64_t id; int index; } yq_ds_idref;

typedef struct yq_dataset {
    char *image_dir;              /* where the image files are; NULL if loaded without one */
    int n_images;
    yq_ds_image *images;          /* in file (json) or name (YOLO) order */
    int n_boxes;
    yq_gt_box *boxes;             /* in file order */
    int n_categories;
    int *category_ids;            /* the categories evaluated: json "categories" ids (YOLO: the
                                     80 COCO ids), sorted ascending, unique */
    yq_ds_idref *by_id;           /* the images sorted by id (ids are unique) */
} yq_dataset;

/* COCO instances json.  image_dir may be NULL; when given, every listed image must exist
 * there.  Errors name the file and the offending image or annotation. */
yq_status yq_dataset_load_coco(const char *json_path, const char *image_dir, yq_dataset **out,
                               yq_error *err);

/* A YOLO folder pair: every .jpg/.jpeg/.png of image_dir (sorted), labels from
 * label_dir/<stem>.txt, one "class cx cy w h" per line, normalised to the image size (read
 * from the image header).  An image without a label file has no boxes.  label_dir NULL:
 * image_dir's last component "images" replaced by "labels" (darknet's convention).
 * Classes are darknet's 80 COCO classes; errors name file:line. */
yq_status yq_dataset_load_yolo(const char *image_dir, const char *label_dir, yq_dataset **out,
                               yq_error *err);

void yq_dataset_free(yq_dataset *ds);   /* NULL is a no-op */

/* Index of the image with this id, or -1. */
int yq_dataset_find_image(const yq_dataset *ds, int64_t id);

/* "image_dir/file" of image i into buf. */
yq_status yq_dataset_image_path(const yq_dataset *ds, int i, char *buf, size_t size, yq_error *err);

/* darknet class 0..79 <-> COCO category id (1..90 with gaps); -1 when there is none. */
/* A dataset of images picked from parts (concatenation, subsets, bootstrap
 * resamples: an image may be picked twice).  Images get ids 1..n in pick order
 * and full paths; boxes follow their images; categories are the union. */
typedef struct yq_ds_pick { int part, image; } yq_ds_pick;
yq_status yq_dataset_pick(yq_dataset *const *parts, const yq_ds_pick *pick, int n, yq_dataset **out, yq_error *err);

int yq_coco_category_id(int cls);
int yq_coco_class(int category_id);

#endif
