/* libFuzzer harness: arbitrary bytes as COCO JSON, an instances file or a results file.
 *
 * The first byte says which the rest is (one corpus of JSON serves both, and a mutation
 * may carry a structure from one kind to the other):
 *   even  instances, for yq_dataset_load_coco: without an image folder (bit 1 clear), or
 *         with one (bit 1 set) holding 1.jpg and 2.jpg, empty files (the loader only
 *         checks that each listed image exists);
 *   odd   results, for yq_coco_dets_load.
 * The seeds (fuzz/corpus/coco) start with '0', '2' (instances) or '1' (results).
 *
 * Any input must give YQ_OK or an error with a one-line message, never a crash,
 * undefined behaviour or a leak.  A dataset that loads must be consistent (image ids
 * unique and indexed, boxes on listed images with finite sizes >= 0, categories sorted
 * and unique), and evaluating one detection per box must give stats that are -1 or in
 * [0, 1].  Detections that load must come back equal through yq_coco_dets_save (it
 * promises a round trip), and evaluate against a fixed ground truth (or fail, naming a
 * detection of an image it lacks).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz/fuzz.h"
#include "datasets/coco_eval.h"
#include "datasets/labels.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The ground truth fuzzed detections are evaluated against. */
static const char gt_json[] =
    "{\"images\": [{\"id\": 1, \"file_name\": \"1.jpg\", \"width\": 640, \"height\": 480},\n"
    "            {\"id\": 2, \"file_name\": \"2.jpg\", \"width\": 320, \"height\": 240}],\n"
    " \"annotations\": [\n"
    "  {\"id\": 1, \"image_id\": 1, \"category_id\": 1, \"bbox\": [10, 20, 100, 80], \"area\": 8000, \"iscrowd\": 0},\n"
    "  {\"id\": 2, \"image_id\": 1, \"category_id\": 18, \"bbox\": [200, 100, 30, 20], \"area\": 600, \"iscrowd\": 0},\n"
    "  {\"id\": 3, \"image_id\": 2, \"category_id\": 1, \"bbox\": [0, 0, 320, 240], \"area\": 76800, \"iscrowd\": 1}],\n"
    " \"categories\": [{\"id\": 1, \"name\": \"person\"}, {\"id\": 18, \"name\": \"dog\"}]}\n";

/* Evaluation costs images x categories cells and 12120 doubles per category: bigger
 * datasets are checked for consistency only. */
#define EVAL_MAX_CELLS      65536
#define EVAL_MAX_CATEGORIES 256

static const char *in_path, *out_path, *image_dir;
static yq_dataset *gt;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_dir_init("coco");
    in_path = fuzz_path("in.json");
    out_path = fuzz_path("out.json");
    image_dir = fuzz_mkdir("images");
    fuzz_write(fuzz_path("images/1.jpg"), "", 0);
    fuzz_write(fuzz_path("images/2.jpg"), "", 0);
    const char *gt_path = fuzz_path("gt.json");
    fuzz_write(gt_path, gt_json, sizeof gt_json - 1);
    yq_error err;
    if (yq_dataset_load_coco(gt_path, image_dir, &gt, &err) != YQ_OK) fuzz_die(err.msg, gt_path);
    return 0;
}

static void check_stats(const double *s, int n)
{
    for (int i = 0; i < n; i++)
        if (!(s[i] == -1 || (s[i] >= 0 && s[i] <= 1))) {
            fprintf(stderr, "fuzz: coco eval value %d of %d is %.17g\n", i, n, s[i]);
            abort();
        }
}

/* yq_coco_eval of dets against ds: YQ_OK, or an error as any. */
static void evaluate(const yq_dataset *ds, const yq_det *dets, int n)
{
    double s[YQ_COCO_NSTATS], *ap = malloc(((size_t)ds->n_categories + 1) * 2 * sizeof *ap);
    if (!ap) abort();
    yq_error err = { 0 };
    yq_status st = yq_coco_eval(ds, dets, n, s, ap, ap + ds->n_categories, &err);
    fuzz_check_error(st, &err);
    if (st == YQ_OK) {
        check_stats(s, YQ_COCO_NSTATS);
        check_stats(ap, 2 * ds->n_categories);
    }
    free(ap);
}

static void check_dataset(const yq_dataset *ds, const char *dir)
{
    if (ds->n_images < 0 || ds->n_boxes < 0 || ds->n_categories < 0) abort();
    if (dir ? !ds->image_dir || strcmp(ds->image_dir, dir) : ds->image_dir != NULL) abort();
    for (int i = 0; i < ds->n_images; i++) {
        const yq_ds_image *im = &ds->images[i];
        if (!im->file || im->width < 1 || im->height < 1 || im->width > 1 << 20 || im->height > 1 << 20) abort();
        if (yq_dataset_find_image(ds, im->id) != i) abort();
        char path[4096];
        yq_error err = { 0 };
        fuzz_check_error(yq_dataset_image_path(ds, i, path, sizeof path, &err), &err);
    }
    for (int k = 1; k < ds->n_images; k++)
        if (!(ds->by_id[k - 1].id < ds->by_id[k].id)) abort();
    for (int k = 1; k < ds->n_categories; k++)
        if (!(ds->category_ids[k - 1] < ds->category_ids[k])) abort();
    for (int i = 0; i < ds->n_boxes; i++) {
        const yq_gt_box *b = &ds->boxes[i];
        if (b->image < 0 || b->image >= ds->n_images || (b->iscrowd != 0 && b->iscrowd != 1)) abort();
        if (b->cls != yq_coco_class(b->category_id) || !isfinite(b->area)) abort();
        for (int k = 0; k < 4; k++)
            if (!isfinite(b->bbox[k])) abort();
        if (b->bbox[2] < 0 || b->bbox[3] < 0) abort();
    }
}

static void instances(const char *dir)
{
    yq_dataset *ds = NULL;
    yq_error err = { 0 };
    yq_status st = yq_dataset_load_coco(in_path, dir, &ds, &err);
    fuzz_check_error(st, &err);
    if (st != YQ_OK) {
        if (ds) abort();
        return;
    }
    check_dataset(ds, dir);
    if (ds->n_categories <= EVAL_MAX_CATEGORIES && (long)ds->n_images * ds->n_categories <= EVAL_MAX_CELLS) {
        /* one detection per box, a little off it, with scores in file order and ties */
        yq_det *d = calloc((size_t)ds->n_boxes + 1, sizeof *d);
        if (!d) abort();
        for (int i = 0; i < ds->n_boxes; i++) {
            const yq_gt_box *b = &ds->boxes[i];
            d[i].image_id = ds->images[b->image].id;
            d[i].category_id = b->category_id;
            memcpy(d[i].bbox, b->bbox, sizeof d[i].bbox);
            d[i].bbox[0] += i % 3;
            d[i].score = (double)(i * 37 % 11) / 10;
        }
        evaluate(ds, d, ds->n_boxes);
        free(d);
    }
    yq_dataset_free(ds);
}

static void results(void)
{
    yq_det *d = NULL, *d2 = NULL;
    int n = -1, n2 = -1;
    yq_error err = { 0 };
    yq_status st = yq_coco_dets_load(in_path, &d, &n, &err);
    fuzz_check_error(st, &err);
    if (st != YQ_OK) return;
    if (n < 0 || !d) abort();
    st = yq_coco_dets_save(out_path, d, n, &err);
    if (st != YQ_OK) {
        fprintf(stderr, "fuzz: loaded detections cannot be saved: %s\n", err.msg);
        abort();
    }
    st = yq_coco_dets_load(out_path, &d2, &n2, &err);
    if (st != YQ_OK) {
        fprintf(stderr, "fuzz: saved detections do not load: %s\n", err.msg);
        abort();
    }
    if (n2 != n) abort();
    for (int i = 0; i < n; i++)
        if (d[i].image_id != d2[i].image_id || d[i].category_id != d2[i].category_id || d[i].score != d2[i].score ||
            memcmp(d[i].bbox, d2[i].bbox, sizeof d[i].bbox)) {
            fprintf(stderr, "fuzz: detection %d changes through yq_coco_dets_save\n", i);
            abort();
        }
    evaluate(gt, d, n);
    yq_coco_dets_free(d2);
    yq_coco_dets_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    fuzz_write(in_path, data + 1, size - 1);
    if (data[0] & 1) results();
    else instances(data[0] & 2 ? image_dir : NULL);
    return 0;
}
