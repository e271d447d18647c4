/* datasets/coco_eval and datasets/labels: hand-computed COCO cases, the loaders on the
 * shared datasets, and the loaders' error messages.  The comparison with pycocotools on
 * real annotations is tests/coco_eval_test.py.
 *
 * Note on "1.0": pycocotools' precision is tp / (tp + fp + eps), and 1 + eps is a double,
 * so a lone true positive has precision 1/(1 + 2^-52) = 0.9999999999999998, while 2/(2 + eps)
 * rounds to 1 and the envelope carries it back; hence `one` and NEAR below.
 */
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datasets/coco_eval.h"
#include "datasets/labels.h"
#include "runtime/evaluate.h"
#include "tests/test.h"

#define EMSG "%.400s"
#define NEAR(a, b) (fabs((a) - (b)) < 1e-12)

static char tmpdir[64];

static const char *tmp_path(const char *name)
{
    static char p[2][256];
    static int k;
    if (!tmpdir[0]) {
        strcpy(tmpdir, "/tmp/yq_test_coco_XXXXXX");
        if (!mkdtemp(tmpdir)) { tmpdir[0] = 0; CHECKF(0, "mkdtemp failed"); }
    }
    k ^= 1;   /* two live results, for calls that take two paths */
    snprintf(p[k], sizeof p[k], "%s/%s", tmpdir, name);
    return p[k];
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECKF(f != NULL, "cannot write %s", path);
    fputs(text, f);
    CHECK(fclose(f) == 0);
}

/* A ground truth json for the synthetic cases: images 200x200 with ids 1.., categories
 * 1, 2 and 3 (3 never appears), annotations given as text. */
static yq_dataset *gt_from(const char *images, const char *anns)
{
    static char buf[8192];
    snprintf(buf, sizeof buf,
             "{\"images\": [%s],\n \"categories\": [{\"id\": 3}, {\"id\": 1}, {\"id\": 2}],\n"
             " \"annotations\": [%s]}", images, anns);
    write_text(tmp_path("gt.json"), buf);
    yq_dataset *ds;
    yq_error err;
    CHECKF(yq_dataset_load_coco(tmp_path("gt.json"), NULL, &ds, &err) == YQ_OK, EMSG, err.msg);
    return ds;
}

#define IMG1 "{\"id\": 1, \"file_name\": \"a.jpg\", \"width\": 200, \"height\": 200}"
#define IMG2 IMG1 ", {\"id\": 2, \"file_name\": \"b.jpg\", \"width\": 200, \"height\": 200}"

static void eval(const yq_dataset *gt, const yq_det *d, int n, double *s)
{
    yq_error err;
    CHECKF(yq_coco_eval(gt, d, n, s, NULL, NULL, &err) == YQ_OK, EMSG, err.msg);
}

static void t_perfect(void)
{
    /* a medium (area 2500) and a large (10000) object, found exactly */
    yq_dataset *gt = gt_from(IMG1,
        "{\"id\": 1, \"image_id\": 1, \"category_id\": 1, \"bbox\": [0, 0, 50, 50], \"area\": 2500, \"iscrowd\": 0},"
        "{\"id\": 2, \"image_id\": 1, \"category_id\": 1, \"bbox\": [100, 100, 100, 100], \"area\": 10000, \"iscrowd\": 0}");
    CHECK(gt->n_categories == 3 && gt->category_ids[0] == 1 && gt->category_ids[2] == 3);
    yq_det d[] = {{1, 1, {0, 0, 50, 50}, .9}, {1, 1, {100, 100, 100, 100}, .8}};
    double s[YQ_COCO_NSTATS], ap[3], ap50[3];
    yq_error err;
    CHECK(yq_coco_eval(gt, d, 2, s, ap, ap50, &err) == YQ_OK);
    const double one = 1 / (1 + 0x1p-52);
    CHECKF(s[YQ_COCO_AP] == 1 && s[YQ_COCO_AP50] == 1 && s[YQ_COCO_AP75] == 1, "AP %.17g", s[0]);
    CHECK(s[YQ_COCO_AP_SMALL] == -1 && s[YQ_COCO_AP_MEDIUM] == one && s[YQ_COCO_AP_LARGE] == one);
    CHECKF(s[YQ_COCO_AR1] == .5, "AR1 %g", s[YQ_COCO_AR1]);   /* one det per image finds 1 of 2 */
    CHECK(s[YQ_COCO_AR10] == 1 && s[YQ_COCO_AR100] == 1);
    CHECK(s[YQ_COCO_AR_SMALL] == -1 && s[YQ_COCO_AR_MEDIUM] == 1 && s[YQ_COCO_AR_LARGE] == 1);
    CHECK(ap[0] == 1 && ap50[0] == 1 && ap[1] == -1 && ap[2] == -1);   /* cats 2, 3: no GT */
    yq_dataset_free(gt);
}

static void t_false_positive_first(void)
{
    yq_dataset *gt = gt_from(IMG1,
        "{\"id\": 7, \"image_id\": 1, \"category_id\": 2, \"bbox\": [10, 10, 60, 60], \"area\": 3600, \"iscrowd\": 0}");
    /* an FP above the TP: precision 0 then 1/2, the envelope makes it 1/2 everywhere */
    yq_det d[] = {{1, 2, {120, 120, 60, 60}, .9}, {1, 2, {10, 10, 60, 60}, .8},
                  {1, 1, {10, 10, 60, 60}, .99}};   /* wrong class: category 1 has no GT */
    double s[YQ_COCO_NSTATS];
    eval(gt, d, 3, s);
    CHECKF(s[YQ_COCO_AP] == .5 && s[YQ_COCO_AP50] == .5, "AP %.17g", s[0]);
    CHECK(s[YQ_COCO_AR1] == 0 && s[YQ_COCO_AR10] == 1);
    /* equal scores: the stable sort keeps file order, FP first gives 1/2, TP first ~1 */
    d[0].score = d[1].score = .5;
    eval(gt, d, 2, s);
    CHECK(s[YQ_COCO_AP] == .5);
    yq_det swapped[] = {d[1], d[0]};
    eval(gt, swapped, 2, s);
    CHECK(NEAR(s[YQ_COCO_AP], 1));
    /* IoU threshold: a box shifted by 10 of 60 has IoU 50*60/(2*3600-3000) = 0.714 */
    yq_det shifted = {1, 2, {20, 10, 60, 60}, .9};
    eval(gt, &shifted, 1, s);
    CHECK(NEAR(s[YQ_COCO_AP50], 1) && s[YQ_COCO_AP75] == 0);
    CHECKF(NEAR(s[YQ_COCO_AP], 5 / 10.), "AP %.17g", s[0]);   /* .50 .. .70 of 10 thresholds */
    yq_dataset_free(gt);
}

static void t_crowd(void)
{
    /* a crowd region: detections inside it are neither TP nor FP, however many */
    yq_dataset *gt = gt_from(IMG1,
        "{\"id\": 1, \"image_id\": 1, \"category_id\": 1, \"bbox\": [0, 0, 40, 40], \"area\": 1600, \"iscrowd\": 0},"
        "{\"id\": 2, \"image_id\": 1, \"category_id\": 1, \"bbox\": [100, 100, 100, 100], \"area\": 5000, \"iscrowd\": 1}");
    yq_det d[] = {{1, 1, {110, 110, 20, 20}, .95}, {1, 1, {150, 150, 30, 30}, .94},
                  {1, 1, {120, 160, 10, 10}, .93}, {1, 1, {0, 0, 40, 40}, .5}};
    double s[YQ_COCO_NSTATS];
    eval(gt, d, 4, s);
    CHECKF(NEAR(s[YQ_COCO_AP], 1), "AP %.17g (crowd matches counted as FP?)", s[0]);
    CHECK(s[YQ_COCO_AR100] == 1);
    yq_dataset_free(gt);
    /* the same region without iscrowd: three FPs first, one TP of two GT */
    gt = gt_from(IMG1,
        "{\"id\": 1, \"image_id\": 1, \"category_id\": 1, \"bbox\": [0, 0, 40, 40], \"area\": 1600, \"iscrowd\": 0},"
        "{\"id\": 2, \"image_id\": 1, \"category_id\": 1, \"bbox\": [100, 100, 100, 100], \"area\": 5000}");
    eval(gt, d, 4, s);
    CHECKF(NEAR(s[YQ_COCO_AP], .25 * 51 / 101), "AP %.17g", s[0]);   /* p = 1/4 up to recall .5 */
    yq_dataset_free(gt);
}

static void t_area_ranges(void)
{
    /* the GT "area" field decides the range, not the box: 40x40 (1600) with area 500 is small;
     * an unmatched detection outside a range is ignored in that range */
    yq_dataset *gt = gt_from(IMG2,
        "{\"id\": 1, \"image_id\": 1, \"category_id\": 1, \"bbox\": [0, 0, 40, 40], \"area\": 500, \"iscrowd\": 0},"
        "{\"id\": 2, \"image_id\": 2, \"category_id\": 1, \"bbox\": [50, 50, 120, 120], \"area\": 14400, \"iscrowd\": 0},"
        "{\"id\": 3, \"image_id\": 2, \"category_id\": 1, \"bbox\": [0, 0, 5, 5], \"area\": 25, \"iscrowd\": 0}");
    yq_det d[] = {{1, 1, {0, 0, 40, 40}, .9},       /* TP, small by the GT area */
                  {2, 1, {50, 50, 120, 120}, .8},   /* TP, large */
                  {1, 1, {100, 0, 100, 150}, .95}}; /* FP of area 15000: ignored for small/medium */
    double s[YQ_COCO_NSTATS];
    eval(gt, d, 3, s);
    /* small: GT 500 and 25; the FP is ignored, one TP: recall .5 at precision ~1 */
    CHECKF(NEAR(s[YQ_COCO_AP_SMALL], 51 / 101.), "AP_small %.17g", s[YQ_COCO_AP_SMALL]);
    CHECK(s[YQ_COCO_AR_SMALL] == .5);
    CHECK(s[YQ_COCO_AP_MEDIUM] == -1 && s[YQ_COCO_AR_MEDIUM] == -1);
    /* large: the FP (0.95) ranks above the TP (0.8): precision 1/2 */
    CHECKF(s[YQ_COCO_AP_LARGE] == .5, "AP_large %.17g", s[YQ_COCO_AP_LARGE]);
    /* all: FP, TP, TP over 3 GT: p = 1/2 at r = 1/3, 2/3 at r = 2/3 (envelope), 0 beyond */
    double want = (34 * (2 / (3 + 0x1p-52)) + 33 * (2 / (3 + 0x1p-52))) / 101;
    CHECKF(NEAR(s[YQ_COCO_AP], want), "AP %.17g want %.17g", s[0], want);
    yq_dataset_free(gt);
}

static void t_max_dets(void)
{
    /* 120 detections on one image: only the best 100 count, and AR1 sees only the first */
    yq_dataset *gt = gt_from(IMG1,
        "{\"id\": 1, \"image_id\": 1, \"category_id\": 1, \"bbox\": [0, 0, 20, 20], \"area\": 400, \"iscrowd\": 0}");
    yq_det d[120];
    for (int i = 0; i < 120; i++) d[i] = (yq_det){1, 1, {100, 100, 10, 10}, 1 - i / 200.};
    d[100].bbox[0] = d[100].bbox[1] = 0, d[100].bbox[2] = d[100].bbox[3] = 20;   /* TP, rank 101 */
    double s[YQ_COCO_NSTATS];
    eval(gt, d, 120, s);
    CHECK(s[YQ_COCO_AR100] == 0 && s[YQ_COCO_AP] == 0);
    d[100].score = 0.999;   /* now rank 2 */
    eval(gt, d, 120, s);
    CHECK(s[YQ_COCO_AR1] == 0 && s[YQ_COCO_AR10] == 1 && s[YQ_COCO_AP] == .5);
    yq_dataset_free(gt);
}

static void t_eval_errors(void)
{
    yq_dataset *gt = gt_from(IMG1, "");
    yq_det d = {42, 1, {0, 0, 1, 1}, .5};
    double s[YQ_COCO_NSTATS];
    yq_error err;
    CHECK(yq_coco_eval(gt, &d, 1, s, NULL, NULL, &err) == YQ_ERR_INVALID_ARG);
    CHECKF(strstr(err.msg, "image_id 42"), EMSG, err.msg);
    d.image_id = 1;
    d.score = NAN;
    CHECK(yq_coco_eval(gt, &d, 1, s, NULL, NULL, &err) == YQ_ERR_INVALID_ARG);
    /* no ground truth at all: every stat is -1, as pycocotools prints */
    d.score = .5;
    eval(gt, &d, 1, s);
    for (int i = 0; i < YQ_COCO_NSTATS; i++) CHECK(s[i] == -1);
    yq_dataset_free(gt);
}

static void t_results_roundtrip(void)
{
    yq_det d[] = {{139, 1, {0.1, 1 / 3., 1e-300, 12345.678}, 0.30000000000000004},
                  {9007199254740991LL, 90, {-0., 2, 3, 4}, 1}};
    yq_error err;
    const char *p = tmp_path("res.json");
    CHECKF(yq_coco_dets_save(p, d, 2, &err) == YQ_OK, EMSG, err.msg);
    CHECK(access(tmp_path("res.json.tmp"), F_OK) != 0);
    yq_det *back;
    int n;
    CHECKF(yq_coco_dets_load(p, &back, &n, &err) == YQ_OK, EMSG, err.msg);
    CHECK(n == 2);
    for (int i = 0; i < 2; i++)   /* field by field: padding differs; memcmp tells -0. from 0. */
        CHECK(back[i].image_id == d[i].image_id && back[i].category_id == d[i].category_id &&
              memcmp(back[i].bbox, d[i].bbox, sizeof d[i].bbox) == 0 &&
              memcmp(&back[i].score, &d[i].score, sizeof d[i].score) == 0);
    yq_coco_dets_free(back);
    write_text(p, "[{\"image_id\": 1, \"category_id\": 1, \"bbox\": [1, 2, 3], \"score\": 0.5}]");
    CHECK(yq_coco_dets_load(p, &back, &n, &err) == YQ_ERR_FORMAT);
    CHECKF(strstr(err.msg, "detection 0"), EMSG, err.msg);
    write_text(p, "[{\"image_id\": 1,\n \"category_id\": 1 \"bbox\": []}]");
    CHECK(yq_coco_dets_load(p, &back, &n, &err) == YQ_ERR_FORMAT);
    CHECKF(strstr(err.msg, "malformed JSON at line 2"), EMSG, err.msg);
    d[0].score = INFINITY;
    CHECK(yq_coco_dets_save(p, d, 2, &err) == YQ_ERR_INVALID_ARG);
    unlink(p);
}

/* ---- labels ---- */

static const char *data_path(const char *rel)
{
    static char p[4][600];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/datasets/%s", test_data_dir(), rel);
    return p[k];
}

static void t_category_table(void)
{
    int seen[91] = {0};
    for (int c = 0; c < YQ_COCO_CLASSES; c++) {
        int id = yq_coco_category_id(c);
        CHECK(id >= 1 && id <= 90 && !seen[id] && yq_coco_class(id) == c);
        CHECK(c == 0 || id > yq_coco_category_id(c - 1));
        seen[id] = 1;
    }
    CHECK(yq_coco_category_id(80) == -1 && yq_coco_class(12) == -1 && yq_coco_class(91) == -1);
    CHECK(yq_coco_category_id(0) == 1 && yq_coco_category_id(79) == 90 && yq_coco_category_id(11) == 13);
}

static void t_load_coco_mini(void)
{
    const char *json = data_path("coco-mini/annotations/instances_val2017_mini.json");
    if (access(json, R_OK) != 0) TEST_SKIP("%s missing", json);
    yq_dataset *ds;
    yq_error err;
    CHECKF(yq_dataset_load_coco(json, data_path("coco-mini/val2017/images"), &ds, &err) == YQ_OK, EMSG, err.msg);
    int crowd = 0;
    for (int i = 0; i < ds->n_boxes; i++) crowd += ds->boxes[i].iscrowd;
    CHECKF(ds->n_images == 79 && ds->n_boxes == 624 && crowd == 5 && ds->n_categories == 80,
           "%d images, %d boxes, %d crowd, %d categories", ds->n_images, ds->n_boxes, crowd, ds->n_categories);
    for (int c = 0; c < 80; c++) CHECK(ds->category_ids[c] == yq_coco_category_id(c));
    char path[1024];
    CHECK(yq_dataset_image_path(ds, 0, path, sizeof path, &err) == YQ_OK && access(path, R_OK) == 0);
    CHECK(yq_dataset_find_image(ds, ds->images[5].id) == 5 && yq_dataset_find_image(ds, -7) == -1);
    /* ground truth as detections: every class, every image, AP ~1 */
    yq_det *d = malloc((size_t)ds->n_boxes * sizeof *d);
    CHECK(d != NULL);
    for (int i = 0; i < ds->n_boxes; i++) {
        const yq_gt_box *b = &ds->boxes[i];
        d[i] = (yq_det){ds->images[b->image].id, b->category_id,
                        {b->bbox[0], b->bbox[1], b->bbox[2], b->bbox[3]}, 1 - i * 1e-4};
    }
    double s[YQ_COCO_NSTATS];
    eval(ds, d, ds->n_boxes, s);
    free(d);
    CHECKF(s[YQ_COCO_AP] > .999 && s[YQ_COCO_AR100] == 1, "AP %g AR100 %g", s[0], s[YQ_COCO_AR100]);
    yq_dataset_free(ds);

    /* the same json against a folder that lacks every image it lists */
    CHECK(yq_dataset_load_coco(json, data_path("coco128/images"), &ds, &err) == YQ_ERR_IO);
    CHECKF(strstr(err.msg, "none of the 79 images") && strstr(err.msg, "coco128"), EMSG, err.msg);

    /* ... and against a folder holding 5 of them: those 5 with their boxes, the rest dropped,
     * the ground truth as detections still a perfect score */
    CHECKF(yq_dataset_load_coco(json, data_path("coco-mini/val2017/images"), &ds, &err) == YQ_OK, EMSG, err.msg);
    const char *sub = tmp_path("subset");
    CHECK(mkdir(sub, 0700) == 0);
    int want_boxes = 0;
    int64_t keep_ids[5];
    for (int i = 0; i < 5; i++) {
        int k = 7 + 13 * i;
        char src[1024], dst[1024];
        char abs[2048], cwd[1024];
        CHECK(yq_dataset_image_path(ds, k, src, sizeof src, &err) == YQ_OK && getcwd(cwd, sizeof cwd));
        snprintf(abs, sizeof abs, "%s%s%s", src[0] == '/' ? "" : cwd, src[0] == '/' ? "" : "/", src);
        snprintf(dst, sizeof dst, "%s/%s", sub, ds->images[k].file);
        CHECK(symlink(abs, dst) == 0);
        keep_ids[i] = ds->images[k].id;
        for (int b = 0; b < ds->n_boxes; b++) want_boxes += ds->boxes[b].image == k;
    }
    yq_dataset_free(ds);
    CHECKF(yq_dataset_load_coco(json, sub, &ds, &err) == YQ_OK, EMSG, err.msg);
    CHECKF(ds->n_images == 5 && ds->n_listed == 79 && ds->n_boxes == want_boxes, "%d of %d images, %d boxes (want %d)",
           ds->n_images, ds->n_listed, ds->n_boxes, want_boxes);
    for (int i = 0; i < 5; i++) CHECK(yq_dataset_find_image(ds, keep_ids[i]) >= 0);
    d = malloc((size_t)(ds->n_boxes ? ds->n_boxes : 1) * sizeof *d);
    CHECK(d != NULL);
    for (int i = 0; i < ds->n_boxes; i++) {
        const yq_gt_box *b = &ds->boxes[i];
        CHECK(b->image >= 0 && b->image < 5);
        d[i] = (yq_det){ds->images[b->image].id, b->category_id,
                        {b->bbox[0], b->bbox[1], b->bbox[2], b->bbox[3]}, 1 - i * 1e-4};
    }
    eval(ds, d, ds->n_boxes, s);
    free(d);
    CHECKF(s[YQ_COCO_AP] > .999, "subset: AP %g", s[YQ_COCO_AP]);
    for (int i = 0; i < 5; i++) {
        char dst[1024];
        snprintf(dst, sizeof dst, "%s/%s", sub, ds->images[i].file);
        unlink(dst);
    }
    rmdir(sub);
    yq_dataset_free(ds);
}

/* coco128: the YOLO labels equal the json's non-crowd boxes (DATA.md: all 929 match). */
static void t_yolo_matches_json(void)
{
    const char *json = data_path("coco128/annotations/instances_train2017_coco128.json");
    const char *imgs = data_path("coco128/images");
    if (access(json, R_OK) != 0 || access(imgs, R_OK) != 0) TEST_SKIP("coco128 missing");
    yq_dataset *js, *yo;
    yq_error err;
    CHECKF(yq_dataset_load_coco(json, imgs, &js, &err) == YQ_OK, EMSG, err.msg);
    CHECKF(yq_dataset_load_yolo(imgs, NULL, &yo, &err) == YQ_OK, EMSG, err.msg);
    CHECKF(yo->n_images == 128 && yo->n_boxes == 929, "%d images %d boxes", yo->n_images, yo->n_boxes);
    /* COCO file names: the ids are their numbers, the json's own */
    CHECK(yo->n_categories == 80 && yo->n_listed == 128);
    for (int i = 0; i < yo->n_images; i++) {
        int j = yq_dataset_find_image(js, yo->images[i].id);
        CHECKF(j >= 0 && !strcmp(js->images[j].file, yo->images[i].file), "%s: id %lld", yo->images[i].file,
               (long long)yo->images[i].id);
    }
    for (int i = 1; i < yo->n_images; i++) CHECK(strcmp(yo->images[i - 1].file, yo->images[i].file) < 0);
    for (int i = 0; i < yo->n_boxes; i++) {
        const yq_gt_box *b = &yo->boxes[i];
        const yq_ds_image *im = &yo->images[b->image];
        int found = 0;
        for (int j = 0; j < js->n_boxes && !found; j++) {
            const yq_gt_box *c = &js->boxes[j];
            const yq_ds_image *jm = &js->images[c->image];
            if (c->iscrowd || c->category_id != b->category_id || strcmp(jm->file, im->file)) continue;
            CHECK(jm->width == im->width && jm->height == im->height);
            found = fabs(c->bbox[0] - b->bbox[0]) < .01 && fabs(c->bbox[1] - b->bbox[1]) < .01 &&
                    fabs(c->bbox[2] - b->bbox[2]) < .01 && fabs(c->bbox[3] - b->bbox[3]) < .01;
        }
        CHECKF(found, "%s: YOLO box %d (class %d) has no json twin", im->file, i, b->cls);
    }
    yq_dataset_free(js);
    yq_dataset_free(yo);
}

static void write_png(const char *path, int w, int h)
{
    unsigned char *px = calloc((size_t)w * h, 3);
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    pi.width = (png_uint_32)w;
    pi.height = (png_uint_32)h;
    pi.format = PNG_FORMAT_RGB;
    int ok = px && png_image_write_to_file(&pi, path, 0, px, 0, NULL);
    free(px);
    CHECK(ok);
}

static void expect_yolo_error(const char *label_text, const char *want)
{
    write_text(tmp_path("y/labels/p.txt"), label_text);
    yq_dataset *ds;
    yq_error err;
    CHECK(yq_dataset_load_yolo(tmp_path("y/images"), NULL, &ds, &err) == YQ_ERR_FORMAT);
    CHECKF(strstr(err.msg, want), "%.300s (wanted %s)", err.msg, want);
}

static void t_yolo_errors(void)
{
    CHECK(mkdir(tmp_path("y"), 0700) == 0);
    CHECK(mkdir(tmp_path("y/images"), 0700) == 0);
    CHECK(mkdir(tmp_path("y/labels"), 0700) == 0);
    write_png(tmp_path("y/images/p.png"), 64, 32);
    write_png(tmp_path("y/images/q.png"), 8, 8);   /* no label file: no boxes */
    write_text(tmp_path("y/labels/p.txt"), "0 0.5 0.5 0.5 0.25\n\n 79 1 1 0 0 \r\n");
    yq_dataset *ds;
    yq_error err;
    CHECKF(yq_dataset_load_yolo(tmp_path("y/images"), tmp_path("y/labels"), &ds, &err) == YQ_OK, EMSG, err.msg);
    CHECK(ds->n_images == 2 && ds->n_boxes == 2 && ds->images[0].width == 64 && ds->images[0].height == 32);
    const yq_gt_box *b = &ds->boxes[0];
    CHECK(b->bbox[0] == 16 && b->bbox[1] == 12 && b->bbox[2] == 32 && b->bbox[3] == 8 && b->area == 256);
    CHECK(b->category_id == 1 && ds->boxes[1].category_id == 90 && ds->boxes[1].cls == 79);
    yq_dataset_free(ds);

    /* over COCO's 80 classes: the classes themselves are the categories (class k, id k + 1),
     * and a model's classes map to them in order */
    write_text(tmp_path("y/labels/p.txt"), "0 0.5 0.5 0.1 0.1\n80 0.5 0.5 0.2 0.2\n119 0.5 0.5 0.3 0.3\n");
    CHECKF(yq_dataset_load_yolo(tmp_path("y/images"), NULL, &ds, &err) == YQ_OK, EMSG, err.msg);
    CHECK(ds->n_categories == 120 && ds->category_ids[0] == 1 && ds->category_ids[119] == 120);
    CHECK(ds->boxes[0].category_id == 1 && ds->boxes[1].category_id == 81 && ds->boxes[2].category_id == 120 &&
          ds->boxes[2].cls == 119);
    int *cm = yq_dataset_class_map(ds, NULL, 120);
    CHECK(cm && cm[0] == 1 && cm[80] == 81 && cm[119] == 120);
    free(cm);
    yq_dataset_free(ds);
    expect_yolo_error("0 0.5 0.5 0.1 0.1\n100000 0.5 0.5 0.1 0.1\n", "p.txt:2: class 100000 out of range");
    expect_yolo_error("-1 0.5 0.5 0.1 0.1\n", "p.txt:1: class -1 out of range");
    expect_yolo_error("3 0.5 1.5 0.1 0.1\n", "p.txt:1: coordinate 1.5 outside [0,1]");
    expect_yolo_error("3 0.5 0.5 0.1\n", "p.txt:1: expected");
    expect_yolo_error("3 0.5 0.5 0.1 0.1 7\n", "p.txt:1: expected");
    expect_yolo_error("3 0.5 0.5 nan 0.1\n", "p.txt:1: coordinate nan");

    CHECK(yq_dataset_load_yolo(tmp_path("y"), NULL, &ds, &err) == YQ_ERR_INVALID_ARG);
    CHECK(yq_dataset_load_yolo(tmp_path("y/images"), tmp_path("y/nolabels"), &ds, &err) == YQ_ERR_IO);
    CHECKF(strstr(err.msg, "nolabels"), EMSG, err.msg);
    unlink(tmp_path("y/labels/p.txt"));
    unlink(tmp_path("y/images/p.png"));
    unlink(tmp_path("y/images/q.png"));
    rmdir(tmp_path("y/labels"));
    rmdir(tmp_path("y/images"));
    rmdir(tmp_path("y"));
}

static void expect_coco_error(const char *text, yq_status code, const char *want)
{
    write_text(tmp_path("bad.json"), text);
    yq_dataset *ds;
    yq_error err;
    CHECKF(yq_dataset_load_coco(tmp_path("bad.json"), NULL, &ds, &err) == code, "accepted or wrong code: %.200s", text);
    CHECKF(strstr(err.msg, want) && strstr(err.msg, "bad.json"), "%.300s (wanted %s)", err.msg, want);
}

/* A dataset of its own classes (a helmet detector's three): model classes map to the json's
 * category ids by name, case, spaces and underscores aside; without names in id order; COCO
 * files keep darknet's table; the detections of a class the dataset has not are dropped, and
 * the ground truth scored through the map is a perfect score. */
static void t_custom_classes(void)
{
    const char *json = tmp_path("helmet.json");
    write_text(json, "{\"images\": [{\"id\": 5, \"file_name\": \"a.png\", \"width\": 64, \"height\": 48}],"
                     " \"categories\": [{\"id\": 7, \"name\": \"Hard_Hat\"}, {\"id\": 3, \"name\": \"head\"},"
                     " {\"id\": 12, \"name\": \"person\"}],"
                     " \"annotations\": [{\"id\": 1, \"image_id\": 5, \"category_id\": 7, \"bbox\": [4, 4, 10, 8]},"
                     " {\"id\": 2, \"image_id\": 5, \"category_id\": 12, \"bbox\": [20, 10, 30, 30]}]}");
    yq_dataset *ds;
    yq_error err;
    CHECKF(yq_dataset_load_coco(json, NULL, &ds, &err) == YQ_OK, EMSG, err.msg);
    const char *names[4] = { "person", "hard hat", "head", "vest" };
    int *m = yq_dataset_class_map(ds, names, 4);
    CHECKF(m && m[0] == 12 && m[1] == 7 && m[2] == 3 && m[3] == -1, "by name: %d %d %d %d", m[0], m[1], m[2], m[3]);
    free(m);
    m = yq_dataset_class_map(ds, NULL, 4);
    CHECKF(m && m[0] == 3 && m[1] == 7 && m[2] == 12 && m[3] == -1, "in id order: %d %d %d %d", m[0], m[1], m[2], m[3]);
    free(m);
    /* the ground truth as the model's detections (class person 0, hard hat 1), and a vest (3)
     * the dataset does not have */
    m = yq_dataset_class_map(ds, names, 4);
    yq_detection one[3] = { { 4, 4, 10, 8, .9f, 1 }, { 20, 10, 30, 30, .8f, 0 }, { 0, 0, 5, 5, .99f, 3 } };
    yq_det *d = NULL;
    int n = 0, cap = 0;
    CHECK(m && yq_dets_append(&d, &n, &cap, 5, one, 3, m, 4, &err) == YQ_OK);
    CHECKF(n == 2 && d[0].category_id == 7 && d[1].category_id == 12, "%d detections", n);
    double st[YQ_COCO_NSTATS];
    eval(ds, d, n, st);
    CHECKF(st[YQ_COCO_AP] > .999, "AP %g", st[YQ_COCO_AP]);
    free(d);
    free(m);
    yq_dataset_free(ds);
    /* COCO's own categories: darknet's table whatever the names */
    const char *cj = data_path("coco-mini/annotations/instances_val2017_mini.json");
    if (access(cj, R_OK) == 0) {
        CHECKF(yq_dataset_load_coco(cj, NULL, &ds, &err) == YQ_OK, EMSG, err.msg);
        const char *coco_names[2] = { "person", "bicycle" };
        m = yq_dataset_class_map(ds, coco_names, 2);
        CHECK(m && m[0] == 1 && m[1] == 2);
        free(m);
        yq_dataset_free(ds);
    }
}

static void t_coco_errors(void)
{
    yq_dataset *ds;
    yq_error err;
    CHECK(yq_dataset_load_coco(tmp_path("none.json"), NULL, &ds, &err) == YQ_ERR_IO);
    CHECKF(strstr(err.msg, "none.json"), EMSG, err.msg);
    expect_coco_error("{\"images\": [\n\n{\"id\": 1,,}]}", YQ_ERR_FORMAT, "malformed JSON at line 3");
    expect_coco_error("{\"images\": []}", YQ_ERR_FORMAT, "\"categories\"");
    expect_coco_error("{\"images\": [" IMG1 "], \"categories\": [{\"id\": 1}], \"annotations\": "
                      "[{\"id\": 5, \"image_id\": 2, \"category_id\": 1, \"bbox\": [0,0,1,1]}]}",
                      YQ_ERR_FORMAT, "annotation 5 names image_id 2");
    expect_coco_error("{\"images\": [" IMG1 "," IMG1 "], \"categories\": []}", YQ_ERR_FORMAT, "image id 1 appears twice");
    expect_coco_error("{\"images\": [" IMG1 "], \"categories\": [{\"id\": 1}], \"annotations\": "
                      "[{\"id\": 5, \"image_id\": 1, \"category_id\": 1, \"bbox\": [0,0,-1,1]}]}",
                      YQ_ERR_FORMAT, "annotation 5: \"bbox\"");
    /* no "area": the box's stands in, and 100 x 1e308 is not a number any more (found by the coco fuzzer) */
    expect_coco_error("{\"images\": [" IMG1 "], \"categories\": [{\"id\": 1}], \"annotations\": "
                      "[{\"id\": 6, \"image_id\": 1, \"category_id\": 1, \"bbox\": [0,0,100,1e308]}]}",
                      YQ_ERR_FORMAT, "annotation 6: the box's area is not finite");
    expect_coco_error("{\"images\": [{\"id\": 1, \"file_name\": \"a.jpg\", \"width\": 0, \"height\": 5}], "
                      "\"categories\": []}", YQ_ERR_FORMAT, "bad width/height");
    unlink(tmp_path("bad.json"));
}

int main(void)
{
    TEST(t_perfect);
    TEST(t_false_positive_first);
    TEST(t_crowd);
    TEST(t_area_ranges);
    TEST(t_max_dets);
    TEST(t_eval_errors);
    TEST(t_results_roundtrip);
    TEST(t_category_table);
    TEST(t_load_coco_mini);
    TEST(t_yolo_matches_json);
    TEST(t_yolo_errors);
    TEST(t_coco_errors);
    TEST(t_custom_classes);
    if (tmpdir[0]) {
        unlink(tmp_path("gt.json"));
        rmdir(tmpdir);
    }
    return test_done();
}
