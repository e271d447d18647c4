/* yquant: the data around a detector, as a library: images (decoding, darknet's resize and
 * letterbox, image folders), labelled datasets (COCO JSON or YOLO txt), COCO bbox mAP as
 * pycocotools computes it, the paired bootstrap of an mAP drop, and output files written
 * safely.  include/yq_draw.h draws on images; include/yq.h runs models on them.
 *
 *     yq_error err;
 *     yq_dataset *ds = NULL;
 *     double s[YQ_COCO_NSTATS];
 *     if (yq_dataset_load_coco("instances_val2017.json", "val2017/", &ds, &err) != YQ_OK ||
 *         yq_session_evaluate(session, ds, NULL, s, NULL, NULL, NULL, &err) != YQ_OK)
 *         fprintf(stderr, "%s\n", err.msg);
 *     else
 *         printf("mAP %.3f  mAP50 %.3f\n", s[YQ_COCO_AP], s[YQ_COCO_AP50]);
 *     yq_dataset_free(ds);
 */
#ifndef YQ_DATA_H
#define YQ_DATA_H

#include <stdint.h>
#include <stdio.h>
#include "yq.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- images ---------------------------------------------------------------------
 * Decoding with libjpeg and libpng equals libdarknet's load_image_color (its OpenCV
 * build); resize and letterbox are bit-identical to darknet's resize_image and
 * letterbox_image.  EXIF orientation is ignored: COCO boxes refer to the stored pixels. */

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

/* An 8-bit interleaved frame (yq_frame of yq.h: RGB, BGR, RGBA or BGRA, rows of stride
 * bytes, 0 for dense) as an RGB image in [0,1] (v/255.f, as the decoders give), so that
 * the pixels of a decoded file give its image to the bit.  Checked: data, size (the pixel
 * limit), stride, format; *out set only on YQ_OK. */
yq_status yq_image_from_frame(const yq_frame *f, yq_image *out, yq_error *err);

/* A w x h x c image filled with zeros. */
yq_status yq_image_make(int w, int h, int c, yq_image *out, yq_error *err);

/* Frees data and zeroes *im; NULL or an empty image is a no-op. */
void yq_image_free(yq_image *im);

/* darknet's resize_image: two-pass bilinear to w x h, aspect ratio not kept. */
yq_status yq_image_resize(const yq_image *im, int w, int h, yq_image *out, yq_error *err);

/* darknet's letterbox_image: resize to fit w x h keeping the aspect ratio, centred on 0.5. */
yq_status yq_image_letterbox(const yq_image *im, int w, int h, yq_image *out, yq_error *err);

/* The size of the resized picture inside a w x h letterbox of an im_w x im_h image (the
 * same integer arithmetic as letterbox_image and darknet's correct_yolo_boxes).  The
 * picture sits at ((w - *new_w)/2, (h - *new_h)/2). */
void yq_letterbox_size(int im_w, int im_h, int w, int h, int *new_w, int *new_h);

/* Ultralytics' letterbox (its LetterBox, what YOLOv5/v8/11 were validated with, the default
 * for ONNX models): scale r = min(w / im_w, h / im_h), the picture round(im_w r) x
 * round(im_h r) (float32, ties to even; at least 1, at most w x h) resized as OpenCV's
 * INTER_LINEAR does (pixel centres, edges clamped) and rounded to 8-bit levels as OpenCV's
 * uint8 output is, placed at ((w - new_w) / 2, (h - new_h) / 2) (integer halves) on grey
 * 114/255. */
yq_status yq_image_letterbox_ultra(const yq_image *im, int w, int h, yq_image *out, yq_error *err);
void yq_letterbox_size_ultra(int im_w, int im_h, int w, int h, int *new_w, int *new_h);

/* The .jpg/.jpeg/.png files (any case) of dir as "dir/name" paths, sorted by name (bytes).
 * Other files are skipped with a warning through warn (may be NULL) and counted in
 * *n_skipped (may be NULL); subdirectories, dot files and raw sidecars are skipped
 * silently.  A missing or unreadable dir, or one with no images, is an error.  Free with
 * yq_list_images_free. */
yq_status yq_list_images(const char *dir, char ***paths, int *n, int *n_skipped, yq_warn_fn warn, void *wctx,
                         yq_error *err);
void yq_list_images_free(char **paths, int n);

/* The network input of model m for an image: letterboxed (letterbox 1) or plainly resized
 * (0; -1: as the model says) to the model's input, C x H x W floats in [0, 1], into dst
 * (yq_model_input's c*h*w floats): what yq_session_run_tensor takes. */
yq_status yq_model_preprocess(const yq_model *m, const yq_image *im, int letterbox, float *dst, yq_error *err);

/* ---- labelled datasets -------------------------------------------------------------
 * Images and ground-truth boxes from a COCO instances JSON or a YOLO label folder.  Boxes
 * are COCO's convention throughout: top-left x, y, width, height in pixels. */

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
    char **category_names;        /* json: each category's "name" (NULL where it has none); NULL
                                     for YOLO folders and picked datasets */
    yq_ds_idref *by_id;           /* the images sorted by id (ids are unique) */
    int n_listed;                 /* COCO: the images the annotation file lists (n_images of
                                     them are in image_dir and evaluated); else n_images */
} yq_dataset;

/* COCO instances json.  image_dir may be NULL; when given, the listed images found there are
 * kept with their annotations and the others dropped (n_listed says how many the file
 * lists; none found is an error).  Errors name the file and the offending image or
 * annotation. */
yq_status yq_dataset_load_coco(const char *json_path, const char *image_dir, yq_dataset **out,
                               yq_error *err);

/* A YOLO folder pair: every .jpg/.jpeg/.png of image_dir (sorted), labels from
 * label_dir/<stem>.txt, one "class cx cy w h" per line, normalised to the image size (read
 * from the image header).  An image without a label file has no boxes.  Image ids: the file
 * stems where all are distinct numbers (COCO's names: 000000000139.jpg is 139), else 1..n in
 * name order.  label_dir NULL:
 * image_dir's last component "images" replaced by "labels" (darknet's convention).
 * Classes are darknet's 80 COCO classes; errors name file:line. */
yq_status yq_dataset_load_yolo(const char *image_dir, const char *label_dir, yq_dataset **out,
                               yq_error *err);

void yq_dataset_free(yq_dataset *ds);   /* NULL is a no-op */

/* Index of the image with this id, or -1. */
int yq_dataset_find_image(const yq_dataset *ds, int64_t id);

/* "image_dir/file" of image i into buf. */
yq_status yq_dataset_image_path(const yq_dataset *ds, int i, char *buf, size_t size, yq_error *err);

/* A dataset of images picked from parts (concatenation, subsets, bootstrap
 * resamples: an image may be picked twice).  Images get ids 1..n in pick order
 * and full paths; boxes follow their images; categories are the union. */
typedef struct yq_ds_pick { int part, image; } yq_ds_pick;
yq_status yq_dataset_pick(yq_dataset *const *parts, const yq_ds_pick *pick, int n, yq_dataset **out, yq_error *err);

/* darknet class 0..79 <-> COCO category id (1..90 with gaps); -1 when there is none. */
int yq_coco_category_id(int cls);
/* The category id each of a model's n classes is scored as on ds: darknet's COCO table where
 * ds's categories are COCO's; else by name (names[k] against the json's category names,
 * case, spaces and underscores aside: a 3-class helmet model on its own annotation file);
 * without names, the k-th category in id order; -1 for a class ds does not have (its
 * detections are not scored).  malloc'd, n entries; NULL when out of memory. */
int *yq_dataset_class_map(const yq_dataset *ds, const char *const *names, int n);
int yq_coco_class(int category_id);

/* ---- COCO evaluation ----------------------------------------------------------------
 * COCO bbox mAP as pycocotools' COCOeval computes it: IoU .50:.05:.95, 101 recall points,
 * maxDets 1/10/100, the four area ranges, greedy matching by score with crowd regions,
 * the same tie order and summaries (-1 where a setting has no ground truth). */

/* One detection, COCO results format. */
typedef struct yq_det {
    int64_t image_id;
    int category_id;
    double bbox[4];      /* x, y, w, h in pixels of the original image */
    double score;
} yq_det;

/* The 12 numbers of COCOeval.summarize(), in its order. */
enum {
    YQ_COCO_AP = 0,      /* AP @[.50:.95], all areas, 100 dets */
    YQ_COCO_AP50,
    YQ_COCO_AP75,
    YQ_COCO_AP_SMALL,
    YQ_COCO_AP_MEDIUM,
    YQ_COCO_AP_LARGE,
    YQ_COCO_AR1,
    YQ_COCO_AR10,
    YQ_COCO_AR100,
    YQ_COCO_AR_SMALL,
    YQ_COCO_AR_MEDIUM,
    YQ_COCO_AR_LARGE,
    YQ_COCO_NSTATS
};

/* Evaluates dets against gt: every gt image, every category of gt->category_ids.
 * Detections of other categories are ignored (as pycocotools does); a detection naming an
 * image_id not in gt, or a non-finite score or box, is an error.
 * cat_ap and cat_ap50 (each NULL or gt->n_categories long, in gt->category_ids order)
 * receive per-category AP@[.5:.95] and AP50 (all areas, 100 dets), -1 without ground truth. */
yq_status yq_coco_eval(const yq_dataset *gt, const yq_det *dets, int n_dets,
                       double stats[YQ_COCO_NSTATS], double *cat_ap, double *cat_ap50, yq_error *err);

/* A COCO results json: an array of {"image_id", "category_id", "bbox", "score"}. */
yq_status yq_coco_dets_load(const char *path, yq_det **dets, int *n, yq_error *err);

/* Writes dets as a results json, through path.tmp renamed on success.  Numbers are
 * printed to round-trip exactly, so a saved file evaluates to the same numbers. */
yq_status yq_coco_dets_save(const char *path, const yq_det *dets, int n, yq_error *err);

void yq_coco_dets_free(yq_det *dets);

/* A short name for stats[i] ("AP", "AP50", ..., "AR_large"). */
const char *yq_coco_stat_name(int i);

/* COCO accuracy of a session on a labelled set: every image of ds read, preprocessed and run
 * (the session's max_batch at a time), its detections as COCO results (class -> category id
 * where the model's classes are COCO's), scored by yq_coco_eval.  The session's own options
 * are left as they were. */
typedef struct yq_eval_params {
    float conf;               /* keep detections above this score (0.005: what mAP needs) */
    float nms;                /* per-class NMS IoU (0.45) */
    int max_dets;             /* per image (100: COCO's largest maxDets) */
    int letterbox;            /* -1: as the model says; 0 plain resize; 1 letterbox */
    void (*progress)(void *ctx, int done, int total);   /* images done (may be NULL) */
    yq_warn_fn warn;          /* an image that cannot be read: "<why> (skipped)" (may be NULL) */
    void *ctx;                /* passed to both */
} yq_eval_params;
yq_eval_params yq_eval_params_defaults(void);

/* stats: COCOeval's 12 numbers.  *skipped (may be NULL): images that could not be read
 * (each a warning; none readable is an error).  dets, n_dets (may be NULL): the detections
 * (yq_coco_dets_free), e.g. for yq_coco_dets_save or yq_bootstrap_drop. */
yq_status yq_session_evaluate(yq_session *s, const yq_dataset *ds, const yq_eval_params *p,
                              double stats[YQ_COCO_NSTATS], int *skipped, yq_det **dets, int *n_dets,
                              yq_error *err);

/* A share of yq_session_evaluate's work: the images i of ds with i % parts == part, in
 * order, run as yq_session_evaluate runs them, and their detections (yq_coco_dets_free),
 * not scored.  The shares of parts runs (processes, GPUs), merged in image order, are the
 * whole's detections, and yq_coco_eval scores them as yq_session_evaluate would (yquant's
 * CPU and int8 engines give each image the same detections in any batch).  *skipped (may
 * be NULL): images of the share that could not be read (each a warning; not an error). */
yq_status yq_session_detect_share(yq_session *s, const yq_dataset *ds, const yq_eval_params *p, int part, int parts,
                                  yq_det **dets, int *n_dets, int *skipped, yq_error *err);

/* Paired bootstrap over images of the COCO mAP difference between two sets of detections
 * on the same images (FP32 and int8): small sets are noisy, so a drop is reported with a
 * 95% interval.  ci[0] mAP@[.5:.95], ci[1] mAP@.5; [lo, hi] of (a - b) in mAP units. */
yq_status yq_bootstrap_drop(const yq_dataset *ds, const yq_det *a, int na, const yq_det *b, int nb,
                            int resamples, uint64_t seed, double ci[2][2], yq_error *err);

/* ---- output files -------------------------------------------------------------------
 * Files written safely: every output of yquant (packages, caches, JSON, CSV, PNG, HTML)
 * goes through one of these, so that
 *   - a regular file is replaced atomically: the bytes go to a temporary beside it, with a
 *     unique name (PATH.XXXXXX.tmp), which is renamed onto it only once every byte is
 *     written and synced; on any error the temporary is removed and the old file stays;
 *   - a symbolic link is followed: its target is replaced, the link stays a link;
 *   - a device, FIFO or socket (--json /dev/stdout, a pipe) is written in place, never
 *     replaced by a regular file; "-" is standard output;
 *   - a folder, or a missing or unwritable parent folder, is an error before any byte.
 *
 *   yq_outfile o;
 *   if (yq_out_begin(&o, path, YQ_OUT_STREAM, err) != YQ_OK) return err->code;
 *   fputs(text, o.f);
 *   return yq_out_commit(&o, err);          (or yq_out_abort(&o) on an error of the caller's)
 *
 * YQ_OUT_NAMED gives no stream but a temporary file's name (o.tmp) for libraries that open
 * files by name (HDF5); such targets must be regular files.
 *
 * A temporary left behind by a killed process (SIGKILL, power loss) is never read by yquant
 * and can be deleted: its name ends in .tmp and starts with the target's name.  SIGINT and
 * SIGTERM leave none (yq_out_remove_pending). */

#define YQ_PATH_MAX 4096

typedef enum { YQ_OUT_STREAM = 0, YQ_OUT_NAMED = 1 } yq_out_kind;

typedef struct {
    FILE *f;                    /* YQ_OUT_STREAM: write here */
    char path[YQ_PATH_MAX];     /* the file that will be replaced (symlinks resolved) */
    char tmp[YQ_PATH_MAX];      /* the temporary; "" when writing in place */
    int in_place;               /* stdout, a device, FIFO or socket */
    int mode;                   /* permissions the new file gets */
} yq_outfile;

yq_status yq_out_begin(yq_outfile *o, const char *path, yq_out_kind kind, yq_error *err);
/* Flushes, syncs and renames; on failure removes the temporary.  Always closes. */
yq_status yq_out_commit(yq_outfile *o, yq_error *err);
/* Drops what was written (removes the temporary); safe on a yq_outfile never begun
 * (zeroed) or already committed. */
void yq_out_abort(yq_outfile *o);

/* Removes the temporaries of writes in progress; async-signal-safe (unlink only), for a
 * program's SIGINT/SIGTERM handler (the yquant CLI's): an interrupted run leaves none. */
void yq_out_remove_pending(void);

/* Whole text to a file, through the above. */
yq_status yq_out_write_text(const char *path, const char *text, yq_error *err);

/* Checks, before any work, that path can be written: its folder exists and is writable, and
 * it is not a folder itself.  "-" and existing devices/FIFOs pass. */
yq_status yq_out_check(const char *path, yq_error *err);

#ifdef __cplusplus
}
#endif
#endif
