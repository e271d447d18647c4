/* The public API alone (include/: yq.h, yq_data.h, yq_quant.h), as a program outside the
 * tree would use it: models opened with options and described layer by layer, packages'
 * records, preprocessing, a session evaluated on a COCO set, qconfig text, the quantizer's
 * per-layer errors.  Every figure is checked against a second way of getting it (sums over
 * the layers, the quantizer's own evaluation, yq_coco_eval on the returned detections).
 * Shared data: yolo-fastest-1.1, cfg-only/yolov3.cfg, coco-mini val, the sample images. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cjson/cJSON.h>
#include "tests/test.h"
#include "yq.h"
#include "yq_data.h"
#include "yq_quant.h"
#include "yq_bench.h"

static yq_error err;
static char tmpdir[64];

static const char *shared(const char *rel, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s", test_data_dir(), rel);
    struct stat sb;
    if (stat(buf, &sb)) TEST_SKIP("%s not found (set YQ_DATA)", buf);
    return buf;
}

static yq_model *open_model(const char *path, const yq_model_opt *o)
{
    yq_model *m = NULL;
    CHECKF(yq_model_open_opt(path, o, &m, &err) == YQ_OK, "%s", err.msg);
    return m;
}

/* Layer by layer: indices in order, inputs earlier, shapes chained, totals the sums. */
static void check_layers(const yq_model *m, int want_int8)
{
    yq_model_about ab;
    yq_model_describe(m, &ab);
    CHECK(ab.layers > 0 && ab.convs > 0);
    long long params = 0;
    double flops = 0;
    int convs = 0;
    for (int i = 0; i < ab.layers; i++) {
        yq_layer L;
        CHECKF(yq_model_layer(m, i, &L, &err) == YQ_OK, "%s", err.msg);
        CHECKF(L.index == i, "layer %d says %d", i, L.index);
        CHECK(L.type && *L.type && L.cfg_line > 0);
        CHECK(L.out_c > 0 && L.out_h > 0 && L.out_w > 0 && L.in_c > 0);
        for (int k = 0; k < L.n_inputs; k++) CHECKF(L.inputs[k] >= -1 && L.inputs[k] < i, "layer %d reads %d", i, L.inputs[k]);
        if (!strcmp(L.type, "conv")) {
            convs++;
            CHECKF(L.params > 0 && L.flops > 0, "conv %d: %lld params, %g flops", i, L.params, L.flops);
        }
        params += L.params;
        flops += L.flops;
        if (want_int8) {
            CHECKF(L.dtype && (!strcmp(L.dtype, "int8") || !strcmp(L.dtype, "uint8") || !strcmp(L.dtype, "float") ||
                               !strcmp(L.dtype, "i8>f32")), "layer %d dtype %s", i, L.dtype ? L.dtype : "NULL");
            CHECK(!strcmp(L.type, "conv") == (L.precision != NULL));
            CHECK(isfinite(L.scale) && L.scale > 0);
        } else {
            CHECK(!L.dtype && !L.precision && !L.activation_table);
        }
    }
    CHECKF(convs == ab.convs && params == ab.params && fabs(flops - ab.flops) <= 1e-9 * ab.flops,
           "sums: %d convs vs %d, %lld params vs %lld", convs, ab.convs, params, ab.params);
    yq_layer L;
    CHECK(yq_model_layer(m, ab.layers, &L, &err) == YQ_ERR_INVALID_ARG && strstr(err.msg, "outside"));
    CHECK(yq_model_layer(m, -1, &L, &err) == YQ_ERR_INVALID_ARG);
}

static void t_model_open(void)
{
    char dir[700], cfg[700];
    shared("models/yolo-fastest-1.1", dir, sizeof dir);
    shared("models/cfg-only/yolov3.cfg", cfg, sizeof cfg);
    yq_model *m = open_model(dir, NULL);
    yq_model_about ab;
    yq_model_describe(m, &ab);
    CHECK(!ab.is_package && strstr(ab.cfg, "yolo-fastest-1.1.cfg") && strstr(ab.weights, ".weights"));
    CHECK(yq_model_has_weights(m) && !yq_model_is_int8(m) && ab.n_kernels == 0);
    check_layers(m, 0);
    int c, h, w;
    yq_model_input(m, &c, &h, &w);
    CHECK(c == 3 && w == 320 && h == 320);
    yq_model_free(m);

    /* another input size: every shape follows */
    yq_model_opt o = yq_model_defaults();
    o.width = 416;
    o.height = 256;
    m = open_model(dir, &o);
    yq_model_input(m, &c, &h, &w);
    CHECK(w == 416 && h == 256);
    yq_layer L;
    CHECK(yq_model_layer(m, 0, &L, &err) == YQ_OK && L.out_w == 208 && L.out_h == 128);
    yq_model_free(m);

    /* a cfg alone: layers, no weights, no session */
    yq_model_opt co = yq_model_defaults();
    co.cfg_only = 1;
    m = open_model(cfg, &co);
    yq_model_describe(m, &ab);
    CHECK(!yq_model_has_weights(m) && !*ab.weights && ab.layers == 107 && ab.convs == 75);
    check_layers(m, 0);
    yq_session *s = NULL;
    CHECK(yq_session_new(m, "cpu", 1, &s, &err) == YQ_ERR_INVALID_ARG && !s && strstr(err.msg, "no weights"));
    yq_model_free(m);
    /* without cfg_only the missing weights are an error */
    CHECK(yq_model_open_opt(cfg, NULL, &m, &err) != YQ_OK);

    /* synthetic weights: a runnable model */
    o = yq_model_defaults();
    o.weights = "synthetic:5";
    m = open_model(cfg, &o);
    CHECK(yq_model_has_weights(m));
    yq_model_free(m);

    /* bad sizes */
    o = yq_model_defaults();
    o.width = 100;
    CHECK(yq_model_open_opt(dir, &o, &m, &err) == YQ_ERR_INVALID_ARG && strstr(err.msg, "multiples of 32"));
}

/* A quantizer on yolo-fastest-1.1 with the sample images as calibration set. */
static yq_quantizer *quantizer(void)
{
    char dir[700], calib[700];
    shared("models/yolo-fastest-1.1", dir, sizeof dir);
    shared("datasets/darknet-samples", calib, sizeof calib);
    yq_quant_opt o = yq_quant_defaults();
    o.calib = calib;
    o.no_cache = 1;
    o.device = "cpu";
    o.created_unix = 1;
    yq_quantizer *q = NULL;
    CHECKF(yq_quantizer_new(dir, &o, NULL, &q, &err) == YQ_OK, "%s", err.msg);
    return q;
}

static void t_package_record(void)
{
    yq_quantizer *q = quantizer();
    yq_qconf *qc = NULL, *resolved = NULL;
    yq_model *m = NULL;
    char *plan = NULL, *rtext = NULL, *qtext = NULL;
    CHECK(yq_qconf_new(&qc, &err) == YQ_OK && yq_qconf_set(qc, "keep_float", "2", &err) == YQ_OK);
    CHECKF(yq_quantizer_model(q, qc, &m, &err) == YQ_OK, "%s", err.msg);
    CHECKF(yq_quantizer_resolve(q, qc, &resolved, &plan, &err) == YQ_OK, "%s", err.msg);
    yq_model_about ab;
    yq_model_describe(m, &ab);
    rtext = yq_qconf_text(resolved);
    qtext = yq_qconf_text(qc);
    CHECK(ab.is_package && yq_model_is_int8(m) && ab.checksums && ab.format_version > 0);
    CHECKF(rtext && !strcmp(ab.qconfig, rtext), "qconfig:\n%s\nresolved:\n%s", ab.qconfig, rtext ? rtext : "");
    CHECK(qtext && ab.qconfig_request && !strcmp(ab.qconfig_request, qtext));
    CHECK(ab.plan_json && plan && !strcmp(ab.plan_json, plan));
    CHECK(strstr(ab.cfg, "yolo-fastest-1.1.cfg") && strlen(ab.model_sha256) == 64 && ab.calib_images == 7);
    CHECK(!strcmp(ab.created, "1970-01-01T00:00:01Z") && ab.accuracy_json && ab.n_kernels == 0);
    check_layers(m, 1);
    /* the float convs the plan names are the layers whose precision is not int8 */
    cJSON *pj = cJSON_Parse(plan), *it;
    CHECK(pj);
    int planned = 0, float_convs = 0;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(pj, "nodes")) {
        yq_layer L;
        int li = cJSON_GetObjectItem(it, "layer")->valueint;
        CHECK(yq_model_layer(m, li, &L, &err) == YQ_OK);
        CHECKF(!strcmp(cJSON_GetObjectItem(it, "op")->valuestring, L.type), "layer %d: %s vs %s", li,
               cJSON_GetObjectItem(it, "op")->valuestring, L.type);
        int fl = !strcmp(cJSON_GetObjectItem(it, "dtype")->valuestring, "float");
        if (L.precision) CHECKF(fl == !!strcmp(L.precision, "int8"), "layer %d: plan %s, model %s", li, fl ? "float" : "int8", L.precision);
        planned += fl && L.precision;
    }
    for (int i = 0; i < ab.layers; i++) {
        yq_layer L;
        CHECK(yq_model_layer(m, i, &L, &err) == YQ_OK);
        float_convs += L.precision && strcmp(L.precision, "int8");
    }
    CHECKF(planned == float_convs && cJSON_GetObjectItem(pj, "float_convs")->valueint == float_convs && float_convs >= 2,
           "plan: %d float convs, model: %d", planned, float_convs);
    cJSON_Delete(pj);
    yq_kernel_choice k;
    CHECK(yq_model_kernel(m, 0, &k, &err) == YQ_ERR_INVALID_ARG);
    free(plan);
    free(rtext);
    free(qtext);
    yq_model_free(m);
    yq_qconf_free(resolved);
    yq_qconf_free(qc);
    yq_quantizer_free(q);
}

static void t_package_options(void)
{
    yq_quantizer *q = quantizer();
    yq_qconf *qc = NULL;
    CHECK(yq_qconf_new(&qc, &err) == YQ_OK);
    char path[128];
    snprintf(path, sizeof path, "%s/m.yqp", tmpdir);
    /* the caller's accuracy record is stored as given */
    const char *acc = "[{\"name\":\"int8\",\"map\":0.25,\"engine\":\"cpu\"}]";
    yq_save_opt so = { acc };
    CHECKF(yq_quantizer_save_with(q, qc, path, &so, &err) == YQ_OK, "%s", err.msg);
    yq_model *ma = open_model(path, NULL);
    yq_model_about aa;
    yq_model_describe(ma, &aa);
    CHECKF(aa.accuracy_json && !strcmp(aa.accuracy_json, acc), "accuracy: %s", aa.accuracy_json ? aa.accuracy_json : "(none)");
    yq_model_free(ma);
    CHECKF(yq_quantizer_save(q, qc, path, &err) == YQ_OK, "%s", err.msg);
    yq_model_opt o = yq_model_defaults();
    o.weights = "x.weights";
    yq_model *m = NULL;
    CHECK(yq_model_open_opt(path, &o, &m, &err) == YQ_ERR_INVALID_ARG && !m && strstr(err.msg, "do not apply to a package"));
    o = yq_model_defaults();
    o.width = 416;
    o.height = 416;
    CHECK(yq_model_open_opt(path, &o, &m, &err) == YQ_ERR_INVALID_ARG && !m);
    m = open_model(path, NULL);
    yq_model_about ab;
    yq_model_describe(m, &ab);
    CHECK(ab.is_package);
    yq_model_free(m);
    m = NULL;
    /* a damaged package is refused as a package (not read as a Darknet cfg) */
    FILE *f = fopen(path, "r+b");
    CHECK(f && fseek(f, 0, SEEK_END) == 0);
    long n = ftell(f);
    fclose(f);
    CHECK(truncate(path, n / 2) == 0);
    CHECKF(yq_model_open_opt(path, NULL, &m, &err) != YQ_OK && !m && strstr(err.msg, path), "%s", err.msg);
    yq_qconf_free(qc);
    yq_quantizer_free(q);
}

/* Preprocessing: the model's input size; letterbox and plain resize differ; -1 is the model's. */
static void t_preprocess(void)
{
    char dir[700], img[700];
    shared("models/yolo-fastest-1.1", dir, sizeof dir);
    shared("datasets/darknet-samples/dog.jpg", img, sizeof img);
    yq_model *m = open_model(dir, NULL);
    yq_image im;
    CHECKF(yq_image_load(img, &im, &err) == YQ_OK, "%s", err.msg);
    int c, h, w;
    yq_model_input(m, &c, &h, &w);
    size_t n = (size_t)c * (size_t)h * (size_t)w;
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *d = malloc(n * sizeof *d);
    CHECK(a && b && d);
    CHECK(yq_model_preprocess(m, &im, 0, a, &err) == YQ_OK && yq_model_preprocess(m, &im, 1, b, &err) == YQ_OK &&
          yq_model_preprocess(m, &im, -1, d, &err) == YQ_OK);
    CHECK(memcmp(a, b, n * sizeof *a) != 0);
    CHECK(!memcmp(d, yq_model_letterbox(m) ? b : a, n * sizeof *a));
    /* the plain resize is yq_image_resize's */
    yq_image r;
    CHECK(yq_image_resize(&im, w, h, &r, &err) == YQ_OK && !memcmp(r.data, a, n * sizeof *a));
    yq_image_free(&r);
    yq_image_free(&im);
    free(a);
    free(b);
    free(d);
    yq_model_free(m);
}

/* A decoded file's pixels as 8-bit interleaved frames (RGB dense, BGR with padded rows,
 * RGBA, BGRA padded), as a capture pipeline would hold them. */
static uint8_t *frame_of(const yq_image *im, yq_pixel_format fmt, int pad, yq_frame *f)
{
    const int bpp = fmt == YQ_PIX_RGB8 || fmt == YQ_PIX_BGR8 ? 3 : 4, bgr = fmt == YQ_PIX_BGR8 || fmt == YQ_PIX_BGRA8;
    const int stride = im->w * bpp + pad;
    const size_t plane = (size_t)im->w * im->h;
    uint8_t *d = malloc((size_t)stride * im->h);
    CHECK(d);
    memset(d, 0xA5, (size_t)stride * im->h);        /* padding and alpha: anything */
    for (int y = 0; y < im->h; y++)
        for (int x = 0; x < im->w; x++) {
            uint8_t *p = d + (size_t)y * stride + (size_t)x * bpp;
            for (int ch = 0; ch < 3; ch++) {
                float v = im->data[ch * plane + (size_t)y * im->w + x];
                long b = lrintf(v * 255.f);
                /* the decoders' v/255.f: each byte comes back exactly */
                CHECKF(b >= 0 && b <= 255 && (float)b / 255.f == v, "pixel (%d, %d) channel %d: %g", x, y, ch, (double)v);
                p[bgr ? 2 - ch : ch] = (uint8_t)b;
            }
        }
    *f = (yq_frame){ d, im->w, im->h, pad ? stride : 0, fmt };
    return d;
}

/* Frames in memory (yq_session_run_frames): the same detections, byte for byte, as the files
 * their pixels were decoded from, in every pixel format, padded rows or not, two images in
 * one batch; a frame without data, a stride under a row and an unknown format fail naming
 * the frame. */
static void t_session_frames(void)
{
    char dir[700], dog[700], horses[700];
    shared("models/yolo-fastest-1.1", dir, sizeof dir);
    shared("datasets/darknet-samples/dog.jpg", dog, sizeof dog);
    shared("datasets/darknet-samples/horses.jpg", horses, sizeof horses);
    yq_model *m = open_model(dir, NULL);
    yq_session *s = NULL;
    CHECKF(yq_session_new(m, "cpu", 4, &s, &err) == YQ_OK, "%s", err.msg);
    yq_image a, b;
    CHECKF(yq_image_load(dog, &a, &err) == YQ_OK && yq_image_load(horses, &b, &err) == YQ_OK, "%s", err.msg);
    yq_frame f[4];
    uint8_t *buf[4] = { frame_of(&a, YQ_PIX_RGB8, 0, &f[0]), frame_of(&b, YQ_PIX_BGR8, 13, &f[1]),
                        frame_of(&a, YQ_PIX_RGBA8, 0, &f[2]), frame_of(&b, YQ_PIX_BGRA8, 64, &f[3]) };
    const char *paths[4] = { dog, horses, dog, horses };
    enum { CAP = 100 };
    yq_detection *d1 = calloc(4 * CAP, sizeof *d1), *d2 = calloc(4 * CAP, sizeof *d2);
    int c1[4], c2[4];
    CHECK(d1 && d2);
    CHECKF(yq_session_run_images(s, paths, 4, d1, CAP, c1, &err) == YQ_OK, "%s", err.msg);
    CHECKF(yq_session_run_frames(s, f, 4, d2, CAP, c2, &err) == YQ_OK, "%s", err.msg);
    for (int i = 0; i < 4; i++) {
        CHECKF(c1[i] > 0 && c1[i] == c2[i], "image %d: %d detections from the file, %d from the frame", i, c1[i], c2[i]);
        CHECKF(!memcmp(d1 + i * CAP, d2 + i * CAP, sizeof *d1 * (size_t)c1[i]), "image %d: the detections differ", i);
    }
    printf("# frames: %d + %d + %d + %d detections, the files' bytes\n", c2[0], c2[1], c2[2], c2[3]);
    yq_frame bad[3] = { f[0], f[1], f[2] };
    bad[1].data = NULL;
    CHECK(yq_session_run_frames(s, bad, 3, d2, CAP, c2, &err) == YQ_ERR_INVALID_ARG && strstr(err.msg, "frame 1"));
    bad[1] = f[1];
    bad[2].stride = bad[2].width * 4 - 1;
    CHECK(yq_session_run_frames(s, bad, 3, d2, CAP, c2, &err) == YQ_ERR_INVALID_ARG && strstr(err.msg, "frame 2") &&
          strstr(err.msg, "stride"));
    bad[2] = f[2];
    bad[0].format = (yq_pixel_format)9;
    CHECK(yq_session_run_frames(s, bad, 3, d2, CAP, c2, &err) == YQ_ERR_INVALID_ARG && strstr(err.msg, "frame 0") &&
          strstr(err.msg, "format"));
    for (int i = 0; i < 4; i++) free(buf[i]);
    free(d1);
    free(d2);
    yq_image_free(&a);
    yq_image_free(&b);
    yq_session_free(s);
    yq_model_free(m);
}

static void count_warn(void *ctx, const char *msg)
{
    ++*(int *)ctx;
    printf("# warning: %s\n", msg);
}

/* A session on coco-mini val: the quantizer's own FP32 evaluation (another code path: the
 * detector image by image) gives the same mAP; the detections score the same again; the
 * session's options are untouched; an unreadable image is skipped with a warning. */
static void t_session_evaluate(void)
{
    char dir[700], ann[700], imgs[700];
    shared("models/yolo-fastest-1.1", dir, sizeof dir);
    shared("datasets/coco-mini/annotations/instances_val2017_mini.json", ann, sizeof ann);
    shared("datasets/coco-mini/val2017/images", imgs, sizeof imgs);
    yq_model *m = open_model(dir, NULL);
    yq_dataset *ds = NULL;
    CHECKF(yq_dataset_load_coco(ann, imgs, &ds, &err) == YQ_OK, "%s", err.msg);
    yq_session *s = NULL;
    CHECKF(yq_session_new(m, "cpu", 1, &s, &err) == YQ_OK, "%s", err.msg);
    yq_session_opt before = yq_session_options(s);
    double st[YQ_COCO_NSTATS], again[YQ_COCO_NSTATS];
    yq_det *dets = NULL;
    int n = 0, skipped = -1, warns = 0;
    yq_eval_params p = yq_eval_params_defaults();
    p.warn = count_warn;
    p.ctx = &warns;
    CHECKF(yq_session_evaluate(s, ds, &p, st, &skipped, &dets, &n, &err) == YQ_OK, "%s", err.msg);
    CHECK(skipped == 0 && warns == 0 && n > 0);
    yq_session_opt after = yq_session_options(s);
    CHECK(!memcmp(&before, &after, sizeof before));
    CHECK(yq_coco_eval(ds, dets, n, again, NULL, NULL, &err) == YQ_OK && !memcmp(st, again, sizeof st));
    yq_quantizer *q = quantizer();
    double map[2];
    CHECKF(yq_quantizer_evaluate(q, NULL, ds, map, &err) == YQ_OK, "%s", err.msg);
    CHECKF(map[0] == st[YQ_COCO_AP] && map[1] == st[YQ_COCO_AP50], "session %.6f %.6f vs quantizer %.6f %.6f",
           st[YQ_COCO_AP], st[YQ_COCO_AP50], map[0], map[1]);
    printf("# yolo-fastest-1.1 FP32 on %d images: mAP %.4f, mAP50 %.4f (both paths)\n", ds->n_images, map[0], map[1]);
    yq_quantizer_free(q);
    yq_coco_dets_free(dets);

    /* bad parameters */
    p = yq_eval_params_defaults();
    p.conf = 1.5f;
    CHECK(yq_session_evaluate(s, ds, &p, st, NULL, NULL, NULL, &err) == YQ_ERR_INVALID_ARG && strstr(err.msg, "conf"));

    /* one image replaced by a damaged file: skipped with a warning, the others scored */
    char d2[128];
    snprintf(d2, sizeof d2, "%s/val", tmpdir);
    CHECK(mkdir(d2, 0700) == 0);
    for (int i = 0; i < ds->n_images; i++) {
        char rel[2048], cwd[1024], src[4096], dst[2048];
        CHECK(yq_dataset_image_path(ds, i, rel, sizeof rel, &err) == YQ_OK && getcwd(cwd, sizeof cwd));
        snprintf(src, sizeof src, "%s%s%s", rel[0] == '/' ? "" : cwd, rel[0] == '/' ? "" : "/", rel);
        snprintf(dst, sizeof dst, "%s/%s", d2, ds->images[i].file);
        if (i == 3) {
            FILE *f = fopen(dst, "wb");
            CHECK(f && fputs("not a jpeg", f) >= 0 && fclose(f) == 0);
        } else {
            CHECK(symlink(src, dst) == 0);
        }
    }
    yq_dataset *bad = NULL;
    CHECKF(yq_dataset_load_coco(ann, d2, &bad, &err) == YQ_OK, "%s", err.msg);
    warns = 0;
    p = yq_eval_params_defaults();
    p.warn = count_warn;
    p.ctx = &warns;
    CHECKF(yq_session_evaluate(s, bad, &p, st, &skipped, NULL, NULL, &err) == YQ_OK, "%s", err.msg);
    CHECKF(skipped == 1 && warns == 1, "%d skipped, %d warnings", skipped, warns);
    yq_dataset_free(bad);
    yq_session_free(s);
    yq_dataset_free(ds);
    yq_model_free(m);
}

static void t_qconf_text(void)
{
    yq_qconf *a = NULL, *b = NULL;
    CHECK(yq_qconf_new(&a, &err) == YQ_OK);
    CHECK(yq_qconf_set(a, "bits", "6", &err) == YQ_OK && yq_qconf_set(a, "layer.12.bits", "4", &err) == YQ_OK &&
          yq_qconf_set(a, "calib", "percentile:99.9", &err) == YQ_OK && yq_qconf_set(a, "head", "int8", &err) == YQ_OK);
    char *ta = yq_qconf_text(a);
    CHECK(ta);
    CHECKF(yq_qconf_parse(ta, "t", &b, &err) == YQ_OK, "%s", err.msg);
    char *tb = yq_qconf_text(b);
    CHECK(tb && !strcmp(ta, tb));
    free(ta);
    free(tb);
    yq_qconf_free(b);
    b = NULL;
    /* comments and blank lines; an error names the text and the line */
    CHECK(yq_qconf_parse("# a comment\n\nbits = 7\n", NULL, &b, &err) == YQ_OK);
    yq_qconf_free(b);
    b = NULL;
    CHECK(yq_qconf_parse("bits = 7\nnonsense\n", "flags", &b, &err) == YQ_ERR_INVALID_ARG && !b && strstr(err.msg, "flags:2"));
    CHECK(yq_qconf_parse("bits = 99\n", "flags", &b, &err) == YQ_ERR_INVALID_ARG && !b && strstr(err.msg, "flags:1"));
    CHECK(yq_qconf_parse("", NULL, &b, &err) == YQ_OK);
    char *tc = yq_qconf_text(b), *td = NULL;
    yq_qconf *d = NULL;
    CHECK(yq_qconf_new(&d, &err) == YQ_OK && (td = yq_qconf_text(d)) && tc && !strcmp(tc, td));
    free(tc);
    free(td);
    yq_qconf_free(d);
    yq_qconf_free(b);
    /* a file's keys on top of a handle; a bad file leaves it as it was */
    char path[128];
    snprintf(path, sizeof path, "%s/q.txt", tmpdir);
    FILE *f = fopen(path, "w");
    CHECK(f);
    fputs("weights = per_tensor\n", f);
    fclose(f);
    char v[32];
    CHECKF(yq_qconf_update(a, path, &err) == YQ_OK, "%s", err.msg);
    CHECK(yq_qconf_get(a, "weights", v, sizeof v, &err) == YQ_OK && !strcmp(v, "per_tensor"));
    CHECK(yq_qconf_get(a, "bits", v, sizeof v, &err) == YQ_OK && !strcmp(v, "6"));       /* kept */
    f = fopen(path, "w");
    CHECK(f);
    fputs("bits = 5\nbits = 99\n", f);
    fclose(f);
    CHECK(yq_qconf_update(a, path, &err) == YQ_ERR_INVALID_ARG && strstr(err.msg, ":2"));
    CHECK(yq_qconf_get(a, "bits", v, sizeof v, &err) == YQ_OK && !strcmp(v, "6"));       /* as it was */
    yq_qconf_free(a);
}

/* Per-layer errors: one row per layer but the heads, in order; int8 layers lose something,
 * float-written heads' inputs are float; the quantizer's FP32 model is unchanged after. */
static void t_layer_errors(void)
{
    yq_quantizer *q = quantizer();
    yq_qconf *qc = NULL;
    CHECK(yq_qconf_new(&qc, &err) == YQ_OK);
    yq_layer_error *r = NULL;
    int n = 0, got = 0;
    CHECKF(yq_quantizer_layer_errors(q, qc, 3, &r, &n, &got, &err) == YQ_OK, "%s", err.msg);
    CHECKF(got == 3 && n > 100, "%d rows on %d images", n, got);
    int int8 = 0;
    for (int i = 0; i < n; i++) {
        CHECK(i == 0 || r[i].layer > r[i - 1].layer);
        CHECK(strcmp(r[i].type, "yolo") && strcmp(r[i].type, "dropout"));
        CHECK(isfinite(r[i].sqnr_db) && r[i].max_abs >= 0);
        if (!strcmp(r[i].dtype, "int8")) {
            int8++;
            CHECKF(r[i].sqnr_db > 5 && r[i].sqnr_db < 200 && r[i].max_abs > 0, "layer %d: %.2f dB", r[i].layer, r[i].sqnr_db);
        }
    }
    CHECK(int8 > 50);
    free(r);
    CHECK(yq_quantizer_layer_errors(q, qc, -1, &r, &n, NULL, &err) == YQ_ERR_INVALID_ARG);
    yq_qconf_free(qc);
    yq_quantizer_free(q);
}

/* include/yq_bench.h on the CPU (and the GPU when there is one): a model's FP32 and int8
 * timed (median, min, throughput consistent), the profile naming every node, FP16 on the
 * CPU and FP32 of a package refused as unsupported, bad options named. */
static void t_bench(void)
{
    yq_model_opt mo = yq_model_defaults();
    mo.weights = "synthetic";
    yq_model *m = open_model("tests/fixtures/tiny.cfg", &mo);
    yq_bench *b = NULL;
    CHECKF(yq_bench_new(m, 1, &b, &err) == YQ_OK, "%s", err.msg);
    yq_bench_info info;
    yq_bench_describe(b, &info);
    yq_model_about ab;
    yq_model_describe(m, &ab);
    CHECKF(!info.is_package && info.c == 3 && fabs(info.gflop - ab.flops * 1e-9) < 1e-9 * (1 + ab.flops * 1e-9),
           "info: package %d, %d channels, %g GFLOP (model %g)", info.is_package, info.c, info.gflop, ab.flops * 1e-9);
    yq_bench_opt o = yq_bench_defaults();
    o.device = "cpu";
    o.runs = 3;
    o.warmup = 1;
    o.profile = 1;
    const char *precs[2] = { "fp32", "int8" };
    for (int k = 0; k < 2; k++) {
        yq_bench_result r;
        o.precision = precs[k];
        o.batch = 2;
        CHECKF(yq_bench_run(b, &o, &r, &err) == YQ_OK, "%s: %s", precs[k], err.msg);
        double sum = 0;
        for (int i = 0; i < r.n_layers; i++) sum += r.layers[i].us;
        printf("# %s, batch 2: %.3f ms (min %.3f), layers sum %.1f us, %s\n", r.backend, r.median_ms, r.min_ms, sum,
               r.profile_kind);
        CHECKF(!strcmp(r.precision, precs[k]) && r.batch == 2 && r.min_ms > 0 && r.median_ms >= r.min_ms &&
               r.graph_median_ms < 0 && fabs(r.img_s - 2 / (r.median_ms * 1e-3)) < 1e-6 * r.img_s &&
               r.n_layers == ab.layers + 1 && !strcmp(r.profile_kind, "clock") && !strcmp(r.layers[1].op, "conv") &&
               r.layers[1].gflop > 0 && sum > 0,
               "%s: %d layers (%d + input), kind %s", precs[k], r.n_layers, ab.layers, r.profile_kind);
        CHECKF(strstr(r.backend, k ? "int8" : "FP32"), "%s", r.backend);
        yq_bench_result_free(&r);
        CHECK(!r.layers && !r.n_layers);
    }
    struct { const char *dev, *prec, *kernels; int batch; yq_status st; const char *why; } bad[] = {
        { "cpu", "fp16", NULL, 1, YQ_ERR_UNSUPPORTED, "FP16" },
        { "cpu", "int4", NULL, 1, YQ_ERR_INVALID_ARG, "int4" },
        { "tpu", "int8", NULL, 1, YQ_ERR_INVALID_ARG, "tpu" },
        { "cpu", "int8", NULL, 0, YQ_ERR_INVALID_ARG, "batch" },
        { "cpu", "int8", "tuned:xyz", 1, YQ_ERR_INVALID_ARG, "tuned:xyz" },
        { "cpu", "int8", "tuned", 1, YQ_ERR_UNSUPPORTED, "cuda" },
    };
    o.profile = 0;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        yq_bench_result r;
        o.device = bad[i].dev;
        o.precision = bad[i].prec;
        o.kernels = bad[i].kernels;
        o.batch = bad[i].batch;
        yq_status st = yq_bench_run(b, &o, &r, &err);
        CHECKF(st == bad[i].st && strstr(err.msg, bad[i].why) && !r.layers, "case %zu: status %d: %s", i, (int)st, err.msg);
    }
    o.kernels = NULL;
    o.batch = 1;
    /* the tuned rows' tuning: options checked, then the GPU */
    yq_tuning_opt to = yq_tuning_defaults();
    yq_bench_tuning bt;
    int batches[1] = { 1 };
    to.tuner = "xgb";
    yq_status tst = yq_bench_tune(b, batches, 1, &to, &bt, &err);
    CHECKF(tst == YQ_ERR_INVALID_ARG && strstr(err.msg, "xgb"), "tuner xgb: status %d: %s", (int)tst, err.msg);
    to.tuner = NULL;
    if (yq_gpu_count() == 0) {
        tst = yq_bench_tune(b, batches, 1, &to, &bt, &err);
        CHECKF(tst == YQ_ERR_UNSUPPORTED && strstr(err.msg, "no CUDA device"), "no GPU: status %d: %s", (int)tst, err.msg);
    }
    if (yq_gpu_count() > 0) {
        o.device = "cuda";
        o.runs = 20;
        o.profile = 1;
        for (int k = 0; k < 2; k++) {
            yq_bench_result r;
            o.precision = k ? "int8" : "fp16";
            CHECKF(yq_bench_run(b, &o, &r, &err) == YQ_OK, "cuda %s: %s", o.precision, err.msg);
            printf("# %s: %.3f ms eager, %.3f ms graph, profile %s\n", r.backend, r.median_ms, r.graph_median_ms,
                   r.profile_kind);
            CHECKF(r.median_ms > 0 && r.device_bytes > 0 && r.n_layers == ab.layers + 1 &&
                   !strcmp(r.profile_kind, k ? "isolated" : "events"), "cuda %s", o.precision);
            yq_bench_result_free(&r);
        }
    }
    yq_bench_free(b);
    yq_model_free(m);
    /* a package: int8 only */
    yq_quantizer *q = quantizer();
    yq_qconf *qc = NULL;
    char path[128];
    snprintf(path, sizeof path, "%s/bench.yqp", tmpdir);
    CHECK(yq_qconf_new(&qc, &err) == YQ_OK);
    CHECKF(yq_quantizer_save(q, qc, path, &err) == YQ_OK, "%s", err.msg);
    m = open_model(path, NULL);
    CHECKF(yq_bench_new(m, 0, &b, &err) == YQ_OK, "%s", err.msg);
    yq_bench_describe(b, &info);
    yq_bench_result r;
    o = yq_bench_defaults();
    o.device = "cpu";
    o.precision = "fp32";
    o.runs = 1;
    yq_status st = yq_bench_run(b, &o, &r, &err);
    CHECKF(info.is_package && st == YQ_ERR_UNSUPPORTED && strstr(err.msg, "int8"), "package fp32: %d %s", (int)st, err.msg);
    o.precision = "int8";
    CHECKF(yq_bench_run(b, &o, &r, &err) == YQ_OK && r.median_ms > 0, "package int8: %s", err.msg);
    yq_bench_result_free(&r);
    yq_bench_free(b);
    yq_model_free(m);
    yq_qconf_free(qc);
    yq_quantizer_free(q);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/yq_api_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        printf("FAIL test_api: cannot create a temporary directory\n");
        return 1;
    }
    TEST(t_model_open);
    TEST(t_package_record);
    TEST(t_package_options);
    TEST(t_preprocess);
    TEST(t_session_frames);
    TEST(t_session_evaluate);
    TEST(t_qconf_text);
    TEST(t_layer_errors);
    TEST(t_bench);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) printf("warning: could not remove %s\n", tmpdir);
    return test_done();
}
