/* yquant eval MODEL --images DIR (--ann F | --labels D): COCO mAP, FP32 or int8. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "cli/cli.h"
#include "datasets/labels.h"
#include "quant/rewrite.h"
#include "runtime/evaluate.h"

static const char *help =
    "usage: yquant eval MODEL --images DIR (--ann COCO.json | --labels DIR) [options]\n"
    "\n"
    "COCO mAP@[.5:.95], mAP@.5 and the other ten COCO stats, computed as pycocotools does.\n"
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

yq_status cli_evaluate(const yq_graph *g, const yq_dataset *ds, const yq_eval_opt *eo, const char *label,
                       double stats[YQ_COCO_NSTATS], const char *dets_path, yq_error *err)
{
    yq_eval_opt o = *eo;
    cli_bar bar;
    cli_progress_start(&bar, label);
    o.progress = cli_progress;
    o.progress_ctx = &bar;
    yq_det *dets;
    int n, skipped;
    yq_status st = yq_eval_detect(g, ds, &o, &dets, &n, &skipped, err);
    if (st != YQ_OK) return st;
    if (skipped) fprintf(stderr, "warning: %d of %d images could not be read and were skipped\n", skipped, ds->n_images);
    st = yq_coco_eval(ds, dets, n, stats, NULL, NULL, err);
    if (st == YQ_OK && dets_path) st = yq_coco_dets_save(dets_path, dets, n, err);
    yq_coco_dets_free(dets);
    return st;
}

int cmd_eval(int argc, char **argv)
{
    cli_model_opt mo = { 0 };
    cli_quant_opt qo;
    cli_quant_init(&qo);
    yq_eval_opt eo = yq_eval_defaults();
    const char *images = NULL, *ann = NULL, *labels = NULL, *json = NULL, *dets_path = NULL;
    int letterbox = -1, report = 0;
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

    yq_error err;
    yq_graph *g = NULL;
    yq_dataset *ds = NULL;
    yq_calib_stats *cs = NULL;
    int rc = 1;
    double stats[YQ_COCO_NSTATS];
    if (cli_load_dataset(images, ann, labels, &ds, &err) != YQ_OK || cli_load_model(&mo, &g, &err) != YQ_OK) {
        cli_error(&err);
        goto done;
    }
    eo.letterbox = letterbox < 0 ? g->letter_box : letterbox;
    if (qo.calib_dir) {
        if (cli_calibrate(&qo, g, eo.letterbox, &cs, &err) != YQ_OK || yq_quantize_graph(g, cs, &qo.qc, &err) != YQ_OK) {
            cli_error(&err);
            goto done;
        }
    }
    if (g->q && report > 0 && cli_layer_report(g, qo.calib_dir, 8, eo.letterbox, report, NULL, &err) != YQ_OK) {
        cli_error(&err);
        goto done;
    }
    const char *what = g->q ? "int8" : "fp32";
    if (cli_evaluate(g, ds, &eo, what, stats, dets_path, &err) != YQ_OK) { cli_error(&err); goto done; }
    printf("%s %s on %d images (%s, conf %.3f, nms %.2f):\n", g->cfg_path, what, ds->n_images,
           eo.letterbox ? "letterbox" : "plain resize", (double)eo.post.conf, (double)eo.post.nms);
    cli_print_stats(stats);
    rc = 0;
    if (json) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "model", g->cfg_path);
        cJSON_AddStringToObject(root, "precision", what);
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
    yq_graph_free(g);
    return rc;
}
