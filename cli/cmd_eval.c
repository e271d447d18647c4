/* yquant eval MODEL --images DIR (--ann F | --labels D): COCO mAP, FP32 or int8. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "cli/cli.h"
#include "cli/par.h"
#include "yq_data.h"
#include "yq_quant.h"

static const char *help =
    "usage: yquant eval MODEL --images DIR (--ann COCO.json | --labels DIR) [options]\n"
    "\n"
    "COCO mAP@[.5:.95], mAP@.5 and the other ten COCO stats, computed as pycocotools does.\n"
    "MODEL is a Darknet model or an Ultralytics .onnx export (FP32, or int8 with --calib) or an\n"
    "int8 package (.yqp).\n"
    "  --device D        cpu, cuda or cuda:N (int8 only); default " CLI_DEVICE_HELP "\n"
    "  --batch N         images per GPU batch (default 8; the cpu runs one at a time)\n"
    "  --conf P          confidence threshold (default 0.005)\n"
    "  --nms T           per-class NMS IoU (default 0.45)\n"
    "  --letterbox | --no-letterbox   preprocessing (default: as the cfg says)\n"
    "  --json FILE       {\"map\": .., \"map50\": .., \"images\": N, \"stats\": {..}}: fractions in [0, 1],\n"
    "                    as pycocotools gives them (the printed table is in points)\n"
    "  --dets FILE       the detections as COCO results JSON\n"
    "  --layers N        (int8) the N layers with the largest int8-vs-FP32 error\n"
    "With --calib DIR the model is quantized first and the int8 graph is evaluated.\n"
    "Over MPI (mpirun -np N yquant eval ...): image i runs on rank i mod N (each rank on its own\n"
    "GPU, rank modulo the visible ones, or the CPU); rank 0 gathers the detections, scores them\n"
    "and writes every output: the same numbers and files, byte for byte, at any N.  With --calib\n"
    "rank 0 calibrates first and the others read the calibration cache.\n";

int cli_print_stats(const double *s)
{
    /* points, as every other command prints mAP (the JSON keeps pycocotools' fractions) */
    printf("  mAP@[.5:.95] %.2f   mAP@.5 %.2f   mAP@.75 %.2f   (points)\n", 100 * s[YQ_COCO_AP], 100 * s[YQ_COCO_AP50],
           100 * s[YQ_COCO_AP75]);
    printf("  AP small/medium/large %.2f %.2f %.2f   AR1/10/100 %.2f %.2f %.2f\n", 100 * s[YQ_COCO_AP_SMALL],
           100 * s[YQ_COCO_AP_MEDIUM], 100 * s[YQ_COCO_AP_LARGE], 100 * s[YQ_COCO_AR1], 100 * s[YQ_COCO_AR10],
           100 * s[YQ_COCO_AR100]);
    return 0;
}

yq_status cli_load_dataset(const char *images, const char *ann, const char *labels, yq_dataset **ds, yq_error *err)
{
    if (!images || (!ann == !labels))
        return cli_fail(err, YQ_ERR_INVALID_ARG, "needs --images DIR and one of --ann FILE or --labels DIR");
    yq_status st = ann ? yq_dataset_load_coco(ann, images, ds, err) : yq_dataset_load_yolo(images, labels, ds, err);
    if (st == YQ_OK && (*ds)->n_listed > (*ds)->n_images)   /* an annotation file of a larger set */
        cli_note("%s lists %d images, %d of them in %s: evaluating those", ann, (*ds)->n_listed, (*ds)->n_images, images);
    return st;
}

/* --layers N: the N layers of q's int8 model (qc) with the lowest SQNR against FP32. */
static yq_status layer_report(yq_quantizer *q, const yq_qconf *qc, int top, yq_error *err)
{
    yq_layer_error *r = NULL;
    int n = 0, got = 0;
    yq_status st = yq_quantizer_layer_errors(q, qc, 8, &r, &n, &got, err);
    if (st != YQ_OK) return st;
    cli_print_layer_errors(r, n, got, top);
    free(r);
    return YQ_OK;
}

/* The flags, checked; 0 to go on, else the exit status (the message printed). */
typedef struct eval_args {
    cli_model_opt mo;
    yq_eval_params ep;
    const char *images, *ann, *labels, *json, *dets_path, *device;
    int letterbox, report, batch;
} eval_args;

enum { OPT_IMAGES = CLI_OPT_CMD, OPT_ANN, OPT_LABELS, OPT_JSON, OPT_DETS, OPT_CONF, OPT_NMS, OPT_LAYERS, OPT_DEVICE,
       OPT_BATCH, OPT_LETTERBOX, OPT_NO_LETTERBOX };
static const struct option options[] = {
    CLI_HELP_OPTION, CLI_MODEL_OPTIONS, CLI_QUANT_OPTIONS,
    { "images", required_argument, NULL, OPT_IMAGES },
    { "ann", required_argument, NULL, OPT_ANN },
    { "labels", required_argument, NULL, OPT_LABELS },
    { "json", required_argument, NULL, OPT_JSON },
    { "dets", required_argument, NULL, OPT_DETS },
    { "conf", required_argument, NULL, OPT_CONF },
    { "nms", required_argument, NULL, OPT_NMS },
    { "layers", required_argument, NULL, OPT_LAYERS },
    { "device", required_argument, NULL, OPT_DEVICE },
    { "batch", required_argument, NULL, OPT_BATCH },
    { "letterbox", no_argument, NULL, OPT_LETTERBOX },
    { "no-letterbox", no_argument, NULL, OPT_NO_LETTERBOX },
    { NULL, 0, NULL, 0 },
};

static int eval_parse(eval_args *A, cli_quant_opt *qo, int argc, char **argv)
{
    cli_getopt g;
    cli_getopt_begin(&g, "eval", argc, argv, ":h", options);
    for (int c; (c = cli_getopt_next(&g)) != -1;) {
        int r = cli_model_arg(&A->mo, &g, c);
        if (!r) r = cli_quant_arg(qo, &g, c);
        if (r) {
            if (r < 0) return 2;
            continue;
        }
        switch (c) {
        case 'h': case CLI_OPT_HELP: printf("%s\n%s", help, cli_quant_help); return -1;
        case OPT_IMAGES: A->images = g.arg; break;
        case OPT_ANN: A->ann = g.arg; break;
        case OPT_LABELS: A->labels = g.arg; break;
        case OPT_JSON: A->json = g.arg; break;
        case OPT_DETS: A->dets_path = g.arg; break;
        case OPT_CONF: if (cli_numf(g.name, g.arg, 0, 1, &A->ep.conf)) return 2; break;
        case OPT_NMS: if (cli_numf(g.name, g.arg, 0, 1, &A->ep.nms)) return 2; break;
        case OPT_LAYERS: if (cli_int(g.name, g.arg, 0, 100000, &A->report)) return 2; break;
        case OPT_DEVICE: A->device = g.arg; break;
        case OPT_BATCH: if (cli_int(g.name, g.arg, 1, 4096, &A->batch)) return 2; break;
        case OPT_LETTERBOX: A->letterbox = 1; break;
        case OPT_NO_LETTERBOX: A->letterbox = 0; break;
        default: return 2;   /* '?': cli_getopt_next said why */
        }
    }
    for (int i = optind; i < argc; i++) {
        if (!strcmp(argv[i], "-")) return cli_getopt_unknown(&g, argv[i]);
        if (!A->mo.model) A->mo.model = argv[i];
        else return cli_usage_error("eval: one MODEL only");
    }
    if (!A->mo.model) return cli_usage_error("eval: which MODEL?");
    if (!(A->ep.conf >= 0 && A->ep.conf < 1) || !(A->ep.nms > 0 && A->ep.nms <= 1))
        return cli_usage_error("eval: --conf in [0,1), --nms in (0,1]");
    if (cli_quant_any(qo) && !cli_quant_calib_dir(qo)) return cli_usage_error("eval: quantization flags need --calib DIR");
    int dev = -1;
    yq_error err;
    if (A->device && yq_device_parse(A->device, &dev, &err) != YQ_OK) return cli_usage_error("eval: %s", err.msg);
    if (A->batch < 0 || A->batch > 1024) return cli_usage_error("eval: --batch in 1..1024");
    const char *ins[] = { A->mo.model, A->mo.weights, A->images, A->ann, A->labels, A->dets_path, cli_quant_calib_dir(qo) };
    if (cli_check_outputs(ins, (int)(sizeof ins / sizeof *ins), "--json", A->json, NULL, NULL)) return 1;
    if (A->device && (!A->batch || dev < 0)) A->batch = dev < 0 ? 1 : 8;   /* (no --device: eval_run) */
    return 0;
}

static int eval_run(const eval_args *A, const cli_quant_opt *qo);

int cmd_eval(int argc, char **argv)
{
    eval_args A = { .ep = yq_eval_params_defaults(), .device = NULL, .letterbox = -1 };
    cli_quant_opt *qo = cli_quant_new();
    if (!qo) return 1;
    int rc = eval_parse(&A, qo, argc, argv);
    if (rc < 0) rc = 0;                     /* --help */
    else if (!rc) rc = eval_run(&A, qo);
    cli_quant_free(qo);
    return rc;
}

/* The evaluation over the MPI ranks (cli/par.h): each rank detects its share of the images
 * (image i on rank i % ranks), rank 0 gathers the detections, puts them back in image order
 * (the order one process makes them in) and scores them: the same numbers, to the bit, at
 * any number of ranks.  The other ranks return with nothing in *dets. */
static yq_status eval_shared(yq_session *sess, const yq_dataset *ds, const yq_eval_params *ep, double stats[YQ_COCO_NSTATS],
                             int *skipped, yq_det **dets_out, int *n_out, yq_error *err)
{
    const int R = cli_par_rank(), NR = cli_par_size();
    yq_det *mine = NULL, *dets = NULL;
    int n_mine = 0, bad = 0;
    yq_status st = yq_session_detect_share(sess, ds, ep, R, NR, &mine, &n_mine, &bad, err);
    if (st != YQ_OK) return st;
    /* [skipped, 8 bytes][detections...] to rank 0: every part a multiple of 8 bytes, so the
     * detections lie aligned in the gathered buffer */
    int64_t bad64 = bad;
    size_t bytes = sizeof bad64 + sizeof *mine * (size_t)n_mine;
    char *msg = malloc(bytes), *all = NULL;
    size_t *cnt = NULL;
    if (!msg) {
        free(mine);
        return cli_fail(err, YQ_ERR_NOMEM, "out of memory");
    }
    memcpy(msg, &bad64, sizeof bad64);
    if (n_mine) memcpy(msg + sizeof bad64, mine, sizeof *mine * (size_t)n_mine);
    free(mine);
    int gr = cli_par_gather(msg, bytes, &all, &cnt);
    free(msg);
    if (gr) return cli_fail(err, YQ_ERR_IO, "rank %d: gathering the detections failed (MPI)", R);
    if (R > 0) return YQ_OK;
    /* rank 0: each rank's detections are in its images' order; image i's are rank i % NR's next */
    const yq_det **part = malloc(sizeof *part * (size_t)NR);
    int *left = malloc(sizeof *left * (size_t)NR), n = 0;
    bad = 0;
    size_t off = 0;
    _Static_assert(sizeof(yq_det) % 8 == 0, "yq_det records 8-byte aligned one after another");
    for (int r = 0; part && left && r < NR; r++) {
        int64_t b;
        memcpy(&b, all + off, sizeof b);
        bad += (int)b;
        part[r] = (const yq_det *)(void *)(all + off + sizeof b);   /* malloc'd buffer, parts of 8k bytes */
        left[r] = (int)((cnt[r] - sizeof b) / sizeof(yq_det));
        n += left[r];
        off += cnt[r];
    }
    dets = part && left ? malloc(sizeof *dets * (size_t)(n ? n : 1)) : NULL;
    if (!dets) st = cli_fail(err, YQ_ERR_NOMEM, "out of memory");
    int k = 0;
    for (int i = 0; st == YQ_OK && i < ds->n_images; i++) {
        const int r = i % NR;
        while (left[r] && part[r]->image_id == ds->images[i].id) {
            dets[k++] = *part[r]++;
            left[r]--;
        }
    }
    if (st == YQ_OK && k != n) st = cli_fail(err, YQ_ERR_FORMAT, "merging the ranks' detections: %d of %d in image order", k, n);
    free(part);
    free(left);
    free(all);
    free(cnt);
    if (st == YQ_OK && bad == ds->n_images) st = cli_fail(err, YQ_ERR_IO, "none of the %d images could be read", ds->n_images);
    if (st == YQ_OK) st = yq_coco_eval(ds, dets, n, stats, NULL, NULL, err);
    if (st != YQ_OK) {
        free(dets);
        return st;
    }
    *skipped = bad;
    *dets_out = dets;
    *n_out = n;
    return YQ_OK;
}

static int eval_run(const eval_args *A, const cli_quant_opt *qo)
{
    const cli_model_opt mo = A->mo;
    yq_eval_params ep = A->ep;
    const char *json = A->json, *dets_path = A->dets_path, *device = A->device;
    int report = A->report, batch = A->batch;
    yq_error err;
    yq_model *model = NULL;
    yq_session *sess = NULL;
    yq_dataset *ds = NULL;
    yq_quantizer *q = NULL;
    yq_qconf *qc = NULL;
    yq_det *dets = NULL;
    int rc = 1, n_dets = 0, skipped = 0;
    double stats[YQ_COCO_NSTATS];
    yq_model_about about;
    cli_bar bar = { 0 };
    if (cli_load_dataset(A->images, A->ann, A->labels, &ds, &err) != YQ_OK || cli_open_model(&mo, &model, &err) != YQ_OK) {
        cli_error(&err);
        goto done;
    }
    yq_model_describe(model, &about);
    char name[1024];          /* (about's strings go with the FP32 model when --calib replaces it) */
    snprintf(name, sizeof name, "%s", about.is_package ? mo.model : about.cfg);
    ep.letterbox = A->letterbox < 0 ? yq_model_letterbox(model) : A->letterbox;
    if (cli_quant_calib_dir(qo) && about.is_package) {
        fprintf(stderr, "yquant: eval: %s is already an int8 package; --calib quantizes a Darknet model\n", mo.model);
        goto done;
    }
    /* over MPI ranks: rank 0 calibrates (and fills the cache) first, the others then read it */
    const int R = cli_par_rank(), NR = cli_par_size();
    if (cli_quant_calib_dir(qo) && R > 0) cli_par_barrier();
    if (cli_quant_calib_dir(qo)) {
        /* the int8 model the quantizer makes replaces the FP32 one */
        yq_quant_opt o;
        yq_quant_io io;
        char path[1024];
        if (cli_quant_options(qo, &mo, ep.letterbox, &o, &qc, &err) != YQ_OK ||
            cli_model_path(mo.model, path, sizeof path, &err) != YQ_OK) {
            cli_error(&err);
            goto done;
        }
        io = cli_quant_term_io(&bar);
        yq_model_free(model);
        model = NULL;
        if (yq_quantizer_new(path, &o, &io, &q, &err) != YQ_OK || yq_quantizer_model(q, qc, &model, &err) != YQ_OK ||
            (report > 0 && R == 0 && layer_report(q, qc, report, &err) != YQ_OK)) {
            cli_error(&err);
            goto done;
        }
    }
    if (cli_quant_calib_dir(qo) && R == 0) cli_par_barrier();
    const char *what = yq_model_is_int8(model) ? "int8" : "fp32";
    ep.progress = cli_progress;
    ep.warn = cli_warn;
    ep.ctx = &bar;
    if (!batch) batch = !device && cli_gpu_default(model) ? 8 : 1;
    char dev_buf[32];
    if (cli_session_new(model, cli_par_device(device, yq_gpu_count(), dev_buf, sizeof dev_buf), batch, &sess, &err) != YQ_OK) {
        cli_error(&err);
        goto done;
    }
    cli_progress_start(&bar, what);
    if ((NR == 1 ? yq_session_evaluate(sess, ds, &ep, stats, &skipped, &dets, &n_dets, &err)
                 : eval_shared(sess, ds, &ep, stats, &skipped, &dets, &n_dets, &err)) != YQ_OK) {
        cli_error(&err);
        goto done;
    }
    if (R > 0) {   /* rank 0 reports and writes */
        rc = 0;
        goto done;
    }
    if (dets_path && yq_coco_dets_save(dets_path, dets, n_dets, &err) != YQ_OK) {
        cli_error(&err);
        goto done;
    }
    if (skipped) fprintf(stderr, "warning: %d of %d images could not be read and were skipped\n", skipped, ds->n_images);
    if (!json || strcmp(json, "-")) {   /* with --json - stdout is the JSON alone */
        printf("%s %s on %d images (%s, conf %.3f, nms %.2f, %s):\n", name, what, ds->n_images,
               ep.letterbox ? "letterbox" : "plain resize", (double)ep.conf, (double)ep.nms,
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
        cJSON_AddBoolToObject(root, "letterbox", ep.letterbox);
        cJSON *st = cJSON_AddObjectToObject(root, "stats");
        for (int k = 0; k < YQ_COCO_NSTATS; k++) cJSON_AddNumberToObject(st, yq_coco_stat_name(k), stats[k]);
        rc = cli_write_json(json, root);
        cJSON_Delete(root);
    }
done:
    yq_coco_dets_free(dets);
    yq_dataset_free(ds);
    yq_session_free(sess);
    yq_model_free(model);
    yq_quantizer_free(q);
    yq_qconf_free(qc);
    return rc;
}
