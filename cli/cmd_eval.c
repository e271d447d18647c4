/* yquant eval MODEL --images DIR (--ann F | --labels D): COCO mAP, FP32 or int8. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "cli/cli.h"
#include "datasets/labels.h"
#include "quant/rewrite.h"
#include "runtime/evaluate.h"
#include "runtime/session.h"

static const char *help =
    "usage: yquant eval MODEL --images DIR (--ann COCO.json | --labels DIR) [options]\n"
    "\n"
    "COCO mAP@[.5:.95], mAP@.5 and the other ten COCO stats, computed as pycocotools does.\n"
    "MODEL is a Darknet model (FP32, or int8 with --calib) or an int8 package (.yqp).\n"
    "  --device D        cpu (default), cuda or cuda:N (int8 only)\n"
    "  --batch N         images per GPU batch (default 8; the cpu runs one at a time)\n"
    "  --conf P          confidence threshold (default 0.005)\n"
    "  --nms T           per-class NMS IoU (default 0.45)\n"
    "  --letterbox | --no-letterbox   preprocessing (default: as the cfg says)\n"
    "  --json FILE       {\"map\": .., \"map50\": .., \"images\": N, \"stats\": {..}}\n"
    "  --dets FILE       the detections as COCO results JSON\n"
    "  --layers N        (int8) the N layers with the largest int8-vs-FP32 error\n"
    "With --calib DIR the model is quantized first and the int8 graph is evaluated.\n";

int cli_print_stats(const double *s)
{
    printf("  mAP@[.5:.95] %.4f   mAP@.5 %.4f   mAP@.75 %.4f\n", s[YQ_COCO_AP], s[YQ_COCO_AP50], s[YQ_COCO_AP75]);
    printf("  AP small/medium/large %.4f %.4f %.4f   AR1/10/100 %.4f %.4f %.4f\n", s[YQ_COCO_AP_SMALL],
           s[YQ_COCO_AP_MEDIUM], s[YQ_COCO_AP_LARGE], s[YQ_COCO_AR1], s[YQ_COCO_AR10], s[YQ_COCO_AR100]);
    return 0;
}

yq_status cli_load_dataset(const char *images, const char *ann, const char *labels, yq_dataset **ds, yq_error *err)
{
    if (!images || (!ann == !labels))
        return yq_fail(err, YQ_ERR_INVALID_ARG, "needs --images DIR and one of --ann FILE or --labels DIR");
    return ann ? yq_dataset_load_coco(ann, images, ds, err) : yq_dataset_load_yolo(images, labels, ds, err);
}

/* One batch through the session: the images that load, preprocessed; the others
 * skipped with a warning.  Appends to *dets (grown as needed). */
typedef struct eval_acc { yq_det *v; int n, cap, bad; } eval_acc;

static yq_status eval_batch(yq_session *s, const yq_graph *g, const yq_dataset *ds, int i0, int m, int letterbox,
                            int max_dets, float *in, int *wh, int *idx, yq_detection *one, int *counts, eval_acc *a,
                            yq_error *err)
{
    size_t in_n = (size_t)yq_shape_size(g->nodes[0].out);
    int k = 0;
    yq_status st;
    for (int j = 0; j < m; j++) {
        char path[2048];
        yq_image im;
        yq_error e2;
        if ((st = yq_dataset_image_path(ds, i0 + j, path, sizeof path, err)) != YQ_OK) return st;
        if (yq_image_load(path, &im, &e2) != YQ_OK) {
            fprintf(stderr, "warning: %s (skipped)\n", e2.msg);
            a->bad++;
            continue;
        }
        st = yq_preprocess(g, &im, letterbox, in + in_n * (size_t)k, err);
        wh[2 * k] = im.w;
        wh[2 * k + 1] = im.h;
        yq_image_free(&im);
        if (st) return st;
        idx[k++] = i0 + j;
    }
    if (!k) return YQ_OK;
    if ((st = yq_session_run_tensor(s, in, k, wh, one, max_dets, counts, err)) != YQ_OK) return st;
    for (int j = 0; j < k; j++) {
        if (a->n + counts[j] > a->cap) {
            int cap = a->cap ? a->cap : 1024;
            while (a->n + counts[j] > cap) cap *= 2;
            yq_det *nv = realloc(a->v, sizeof *nv * (size_t)cap);
            if (!nv) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
            a->v = nv;
            a->cap = cap;
        }
        const yq_detection *d = one + (size_t)j * max_dets;
        for (int t = 0; t < counts[j]; t++) {
            int cat = yq_coco_category_id(d[t].cls);
            a->v[a->n++] = (yq_det){ ds->images[idx[j]].id, cat > 0 ? cat : d[t].cls,
                                     { d[t].x, d[t].y, d[t].w, d[t].h }, d[t].score };
        }
    }
    return YQ_OK;
}

/* Every image of ds through the session (batch images at a time), then the COCO stats. */
yq_status cli_evaluate(yq_session *s, int batch, const yq_graph *g, const yq_dataset *ds, const yq_eval_opt *eo,
                       const char *label, double stats[YQ_COCO_NSTATS], const char *dets_path, yq_error *err)
{
    yq_session_opt so = yq_session_options(s);
    so.conf = eo->post.conf;
    so.nms = eo->post.nms;
    so.max_dets = eo->post.max_dets;
    so.letterbox = eo->letterbox;
    yq_status st = yq_session_set_options(s, &so, err);
    if (st) return st;
    size_t in_n = (size_t)yq_shape_size(g->nodes[0].out);
    float *in = malloc(sizeof *in * in_n * (size_t)batch);
    int *wh = malloc(sizeof *wh * 2 * (size_t)batch), *idx = malloc(sizeof *idx * (size_t)batch);
    int *counts = malloc(sizeof *counts * (size_t)batch);
    yq_detection *one = malloc(sizeof *one * (size_t)so.max_dets * (size_t)batch);
    eval_acc a = { 0 };
    cli_bar bar;
    cli_progress_start(&bar, label);
    if (!in || !wh || !idx || !counts || !one) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    for (int i0 = 0; i0 < ds->n_images && st == YQ_OK; i0 += batch) {
        int m = ds->n_images - i0 < batch ? ds->n_images - i0 : batch;
        st = eval_batch(s, g, ds, i0, m, so.letterbox, so.max_dets, in, wh, idx, one, counts, &a, err);
        cli_progress(&bar, i0 + m, ds->n_images);
    }
    free(in);
    free(wh);
    free(idx);
    free(counts);
    free(one);
    if (st == YQ_OK && a.bad == ds->n_images)
        st = yq_fail(err, YQ_ERR_IO, "none of the %d images could be read", ds->n_images);
    if (st == YQ_OK && a.bad)
        fprintf(stderr, "warning: %d of %d images could not be read and were skipped\n", a.bad, ds->n_images);
    if (st == YQ_OK) st = yq_coco_eval(ds, a.v, a.n, stats, NULL, NULL, err);
    if (st == YQ_OK && dets_path) st = yq_coco_dets_save(dets_path, a.v, a.n, err);
    free(a.v);
    return st;
}

int cmd_eval(int argc, char **argv)
{
    cli_model_opt mo = { 0 };
    cli_quant_opt qo;
    cli_quant_init(&qo);
    yq_eval_opt eo = yq_eval_defaults();
    const char *images = NULL, *ann = NULL, *labels = NULL, *json = NULL, *dets_path = NULL, *device = "cpu";
    int letterbox = -1, report = 0, batch = 0;
    for (int i = 0; i < argc; i++) {
        int r = cli_model_arg(&mo, argc, argv, &i);
        if (!r) r = cli_quant_arg(&qo, argc, argv, &i);
        if (r < 0) return 2;
        if (r) continue;
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { printf("%s\n%s", help, cli_quant_help); return 0; }
        else if (!strcmp(a, "--images") && has) images = argv[++i];
        else if (!strcmp(a, "--ann") && has) ann = argv[++i];
        else if (!strcmp(a, "--labels") && has) labels = argv[++i];
        else if (!strcmp(a, "--json") && has) json = argv[++i];
        else if (!strcmp(a, "--dets") && has) dets_path = argv[++i];
        else if (!strcmp(a, "--conf") && has) eo.post.conf = strtof(argv[++i], NULL);
        else if (!strcmp(a, "--nms") && has) eo.post.nms = strtof(argv[++i], NULL);
        else if (!strcmp(a, "--layers") && has) report = atoi(argv[++i]);
        else if (!strcmp(a, "--device") && has) device = argv[++i];
        else if (!strcmp(a, "--batch") && has) batch = atoi(argv[++i]);
        else if (!strcmp(a, "--letterbox")) letterbox = 1;
        else if (!strcmp(a, "--no-letterbox")) letterbox = 0;
        else if (a[0] == '-') return cli_usage_error("eval: unknown option or missing value: %s", a);
        else if (!mo.model) mo.model = a;
        else return cli_usage_error("eval: one MODEL only");
    }
    if (!mo.model) return cli_usage_error("eval: which MODEL?");
    if (!(eo.post.conf >= 0 && eo.post.conf < 1) || !(eo.post.nms > 0 && eo.post.nms <= 1))
        return cli_usage_error("eval: --conf in [0,1), --nms in (0,1]");
    if (qo.any && !qo.calib_dir) return cli_usage_error("eval: quantization flags need --calib DIR");
    int dev;
    yq_error err;
    if (yq_device_parse(device, &dev, &err) != YQ_OK) return cli_usage_error("eval: %s", err.msg);
    if (batch < 0 || batch > 1024) return cli_usage_error("eval: --batch in 1..1024");
    const char *ins[] = { mo.model, mo.weights, images, ann, labels, dets_path, qo.calib_dir };
    if (cli_check_outputs(ins, (int)(sizeof ins / sizeof *ins), "--json", json, NULL, NULL)) return 1;
    if (!batch || dev < 0) batch = dev < 0 ? 1 : 8;

    yq_graph *g = NULL;
    yq_model *model = NULL;
    yq_session *sess = NULL;
    yq_dataset *ds = NULL;
    yq_calib_stats *cs = NULL;
    int rc = 1;
    double stats[YQ_COCO_NSTATS];
    if (cli_load_dataset(images, ann, labels, &ds, &err) != YQ_OK || cli_open_model(&mo, &model, &g, &err) != YQ_OK) {
        cli_error(&err);
        goto done;
    }
    eo.letterbox = letterbox < 0 ? yq_model_letterbox(model) : letterbox;
    if (qo.calib_dir && !g) {
        fprintf(stderr, "yquant: eval: %s is already an int8 package; --calib quantizes a Darknet model\n", mo.model);
        goto done;
    }
    if (qo.calib_dir) {
        /* the model borrows g, which calibration may replace by its equalized copy: borrow again */
        int lb = yq_model_letterbox(model);
        yq_model_free(model);
        model = NULL;
        if (cli_calibrate_swap(&qo, &g, eo.letterbox, &cs, &err) != YQ_OK ||
            cli_quantize_graph(&qo, NULL, g, cs, eo.letterbox, &err) != YQ_OK ||
            yq_model_borrow(g, lb, &model, &err) != YQ_OK) {
            cli_error(&err);
            goto done;
        }
    }
    if (g && g->q && report > 0 && cli_layer_report(g, qo.calib_dir, 8, eo.letterbox, report, NULL, &err) != YQ_OK) {
        cli_error(&err);
        goto done;
    }
    const yq_graph *mg = yq_model_graph(model);
    const char *what = mg->q ? "int8" : "fp32", *name = g ? g->cfg_path : mo.model;
    if (yq_session_new(model, device, batch, &sess, &err) != YQ_OK ||
        cli_evaluate(sess, batch, mg, ds, &eo, what, stats, dets_path, &err) != YQ_OK) {
        cli_error(&err);
        goto done;
    }
    if (!json || strcmp(json, "-")) {   /* with --json - stdout is the JSON alone */
        printf("%s %s on %d images (%s, conf %.3f, nms %.2f, %s):\n", name, what, ds->n_images,
               eo.letterbox ? "letterbox" : "plain resize", (double)eo.post.conf, (double)eo.post.nms,
               yq_session_device(sess));
        cli_print_stats(stats);
    }
    rc = 0;
    if (json) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "model", name);
        cJSON_AddStringToObject(root, "precision", what);
        cJSON_AddStringToObject(root, "device", yq_session_device(sess));
        cJSON_AddNumberToObject(root, "map", stats[YQ_COCO_AP]);
        cJSON_AddNumberToObject(root, "map50", stats[YQ_COCO_AP50]);
        cJSON_AddNumberToObject(root, "images", ds->n_images);
        cJSON_AddBoolToObject(root, "letterbox", eo.letterbox);
        cJSON *st = cJSON_AddObjectToObject(root, "stats");
        for (int k = 0; k < YQ_COCO_NSTATS; k++) cJSON_AddNumberToObject(st, yq_coco_stat_name(k), stats[k]);
        rc = cli_write_json(json, root);
        cJSON_Delete(root);
    }
done:
    yq_calib_stats_free(cs);
    yq_dataset_free(ds);
    yq_session_free(sess);
    yq_model_free(model);
    yq_graph_free(g);
    return rc;
}
