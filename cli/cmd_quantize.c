/* yquant quantize MODEL --calib DIR: calibrate, rewrite, validate, write the package.
 * Also `yquant --calib DIR --bits 8` (the default model and validation sets). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <cjson/cJSON.h>
#include "cli/cli.h"
#include "cli/latency.h"
#include "cli/max_drop.h"
#include "cli/par.h"
#include "cli/tune.h"

static const char *help =
    "usage: yquant quantize MODEL --calib DIR [qconfig flags] [--val DIR (--ann F | --labels D)]...\n"
    "                       [-o OUT.yqp] [--json FILE] [--layers N] [--bootstrap N]\n"
    "       yquant --calib DIR [--bits 8] ...   (MODEL: yolo-fastest-1.1-xl from $YQ_DATA)\n"
    "\n"
    "MODEL: a Darknet model (a folder, a .cfg, a name under $YQ_DATA/models) or an Ultralytics\n"
    "detect export (.onnx).  Calibrates on the images of DIR, rewrites it into int8 as the qconfig says,\n"
    "measures FP32 and int8 COCO mAP on the validation sets (default: every labelled set\n"
    "under $YQ_DATA/datasets), prints the table and the per-layer error (SQNR, worst\n"
    "first), and writes the int8 deploy package (default: MODELNAME-int8.yqp).\n"
    "  --val DIR         labelled images; follow with --ann COCO.json or --labels DIR\n"
    "  --no-val          skip the accuracy check (the package records none)\n"
    "  --target T        the engine the package is validated on, as it will run: cuda or cuda:N\n"
    "                    (the GPU int8 engine: int8 layers bit-exact, float layers as it runs\n"
    "                    them; default when a GPU is present) or cpu (the CPU int8 engine).\n"
    "                    The table, the package's accuracy and --max-drop's budget are that\n"
    "                    engine's (FP32 stays the CPU's)\n"
    "  --bootstrap N     resamples for the 95% interval of the drop (default 200, 0: none)\n"
    "  --layers N        rows of the per-layer error report (default 10)\n"
    "  --max-drop P      accuracy-aware: from every layer in int8 (head and first conv too), keep\n"
    "                    the most sensitive layers in float, a step at a time, until the mAP@[.5:.95]\n"
    "                    drop is within P points on the validation sets; the package's qconfig\n"
    "                    records them (skip_layers)\n"
    "  --rank R          --max-drop's ranking: tensor (default: the error each int8 tensor's\n"
    "                    rounding adds at the detection outputs, on 8 calibration images, as\n"
    "                    keep_float ranks them; a step keeps one tensor float: its conv and the\n"
    "                    convs reading it), sqnr (one layer a step, the lowest per-layer SQNR in\n"
    "                    the all-int8 graph first), head (the head SQNR gain of keeping each\n"
    "                    layer float) or map (the mAP gain on the validation sets: slow)\n"
    "  --max-float N     --max-drop keeps at most N layers in float (default: no limit)\n"
    "                    (a budget not met: the package holds the best step tried, exit status 3)\n"
    "  --lat-device D    --max-drop's latency (each step, and the cost of the float layers): the\n"
    "                    target's engine (cuda: tuned kernels, CUDA-graph replays; cpu: the CPU\n"
    "                    int8 engine); given, it must name the target's engine.\n"
    "                    On cuda the mAP of each step is measured there too, as the package will\n"
    "                    run (the CPU reference's bytes, float layers included)\n"
    "  --tune-log F      --max-drop on cuda: the tuning log reused and extended (default: OUT's\n"
    "                    name with .tune.jsonl, the log yquant tune OUT reads)\n"
    "  --tune-budget S, --lat-batch N   as for yquant sweep (60 s of tuning per step, batch 1)\n"
    "  --no-tune         with a GPU present, the package's int8 kernels are tuned on it\n"
    "                    (yquant tune OUT --batch 1,32) unless this is given\n"
    "  -o, --output FILE the package\n"
    "  --json FILE       the table and the per-layer report as JSON\n";

typedef struct valset { const char *images, *ann, *labels; } valset;

static int exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* The shared labelled sets, when present: coco-mini val2017 + train2017 and coco128. */
static int default_vals(valset *v, char bufs[][1024])
{
    const char *d = cli_data_dir();
    int n = 0;
    snprintf(bufs[0], 1024, "%s/datasets/coco-mini/val2017/images", d);
    snprintf(bufs[1], 1024, "%s/datasets/coco-mini/annotations/instances_val2017_mini.json", d);
    snprintf(bufs[2], 1024, "%s/datasets/coco-mini/train2017/images", d);
    snprintf(bufs[3], 1024, "%s/datasets/coco-mini/annotations/instances_train2017_mini.json", d);
    snprintf(bufs[4], 1024, "%s/datasets/coco128/images", d);
    snprintf(bufs[5], 1024, "%s/datasets/coco128/annotations/instances_train2017_coco128.json", d);
    for (int k = 0; k < 3; k++)
        if (exists(bufs[2 * k]) && exists(bufs[2 * k + 1])) v[n++] = (valset){ bufs[2 * k], bufs[2 * k + 1], NULL };
    return n;
}

/* An evaluation: mAP, mAP50, ms per image (everything), the detections, where it ran. */
typedef struct acc { double map, map50, ms; yq_det *dets; int n, gpu; } acc;   /* gpu: on the GPU int8 engine */

static acc acc_of(const yq_quant_score *s, yq_det *dets, int n)
{
    return (acc){ s->map, s->map50, s->ms_wall, dets, n, s->gpu };
}

/* The engine the package is validated on (--target): device -1 the CPU int8 engine,
 * else that CUDA device; name: the GPU as the runtime names it. */
typedef struct target { int device; char spec[16], name[160]; } target;

/* --target's value, or the default (the first GPU when there is one); 0, or 2 after the
 * error line. */
static int target_pick(target *t, const char *v)
{
    int ngpu = yq_gpu_count();
    memset(t, 0, sizeof *t);
    t->device = ngpu > 0 ? 0 : -1;
    if (v) {
        cli_lat p;
        cli_lat_init(&p);
        if (cli_lat_device(&p, "quantize: --target", v) < 0) return 2;
        t->device = p.want ? p.device : -1;
        if (p.want && ngpu == 0)
            return cli_usage_error("quantize: --target %s: no CUDA device here (no NVIDIA driver or no GPU); "
                                   "--target cpu validates on the CPU int8 engine", v);
        if (p.want && t->device >= ngpu)
            return cli_usage_error("quantize: --target %s: this machine has %d CUDA device%s", v, ngpu, ngpu == 1 ? "" : "s");
    }
    if (t->device < 0) {
        snprintf(t->spec, sizeof t->spec, "cpu");
        snprintf(t->name, sizeof t->name, "the CPU int8 engine (%s)", yq_cpu_int8_engine());
        return 0;
    }
    yq_error e;
    snprintf(t->spec, sizeof t->spec, "cuda:%d", t->device);
    if (yq_gpu_name(t->device, t->name, sizeof t->name, &e) != YQ_OK) {
        cli_error(&e);
        return 2;
    }
    return 0;
}

/* qc (NULL: FP32) evaluated with its detections, on the target's engine (FP32: the CPU's);
 * a GPU evaluation that fails is an error, not a CPU figure in its place. */
static yq_status evaluate(yq_quantizer *q, const yq_qconf *qc, const yq_dataset *ds, const target *t, acc *a,
                          yq_error *err)
{
    yq_point_opt o = { .device = qc ? t->spec : "cpu", .strict = 1, .want_dets = 1 };
    yq_point_result r;
    yq_status st = yq_quantizer_point(q, qc, ds, &o, &r, err);
    if (st != YQ_OK) return st;
    *a = acc_of(&r.score, r.dets, r.n_dets);
    r.dets = NULL;
    yq_point_result_free(&r);
    return YQ_OK;
}

static void add_row(cJSON *arr, const char *name, const acc *a, const acc *ref, const double ci[2][2], const target *t)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "name", name);
    cJSON_AddNumberToObject(r, "map", a->map);
    cJSON_AddNumberToObject(r, "map50", a->map50);
    if (a->gpu) {   /* evaluated on the GPU int8 engine (--target cuda) */
        char eng[256];
        snprintf(eng, sizeof eng, "%s int8 (%s), float layers %s", t->spec, t->name, CLI_GPU_FLOAT);
        cJSON_AddStringToObject(r, "engine", eng);
        cJSON_AddNumberToObject(r, "ms_per_image", a->ms);
    } else {
        cJSON_AddStringToObject(r, "engine", "cpu");
        cJSON_AddNumberToObject(r, "cpu_ms_per_image", a->ms);
    }
    if (ref) {
        cJSON_AddNumberToObject(r, "drop_map", ref->map - a->map);
        cJSON_AddNumberToObject(r, "drop_map50", ref->map50 - a->map50);
    }
    if (ci) {
        double m[2] = { ci[0][0], ci[0][1] }, m50[2] = { ci[1][0], ci[1][1] };
        cJSON_AddItemToObject(r, "drop_map_ci95", cJSON_CreateDoubleArray(m, 2));
        cJSON_AddItemToObject(r, "drop_map50_ci95", cJSON_CreateDoubleArray(m50, 2));
    }
    cJSON_AddItemToArray(arr, r);
}

static void print_row(const char *name, const acc *a, const acc *ref, const double ci[2][2])
{
    printf("  %-26s %8.2f %8.2f", name, 100 * a->map, 100 * a->map50);
    if (ref) {
        printf("   %6.2f %6.2f", 100 * (ref->map - a->map), 100 * (ref->map50 - a->map50));
        if (ci) printf("   [%.2f, %.2f] [%.2f, %.2f]", 100 * ci[0][0], 100 * ci[0][1], 100 * ci[1][0], 100 * ci[1][1]);
    }
    printf("   %8.1f\n", a->ms);
}

static void default_out(const char *cfg, char *buf, size_t cap)
{
    const char *b = strrchr(cfg, '/');
    b = b ? b + 1 : cfg;
    const char *dot = strrchr(b, '.');
    snprintf(buf, cap, "%.*s-int8.yqp", dot ? (int)(dot - b) : (int)strlen(b), b);
}


/* qc with every layer int8: head and first int8, keep_float 0, no layer skipped. */
static yq_status all_int8(const yq_qconf *qc, yq_qconf **out, yq_error *err)
{
    char skips[8192];
    yq_status st = yq_qconf_dup(qc, out, err);
    if (st == YQ_OK) st = yq_qconf_set(*out, "head", "int8", err);
    if (st == YQ_OK) st = yq_qconf_set(*out, "first", "int8", err);
    if (st == YQ_OK) st = yq_qconf_set(*out, "keep_float", "0", err);
    if (st == YQ_OK) st = yq_qconf_set(*out, "skip_layers", "", err);
    /* per-layer skips (layer.N.skip = on) stay after skip_layers is cleared */
    if (st == YQ_OK) st = yq_qconf_get(*out, "skip_layers", skips, sizeof skips, err);
    for (char *p = skips; st == YQ_OK && *p; ) {
        char key[48], *end;
        long l = strtol(p, &end, 10);
        snprintf(key, sizeof key, "layer.%ld.skip", l);
        st = yq_qconf_set(*out, key, "off", err);
        p = *end ? end + 1 : end;
    }
    if (st != YQ_OK) {
        yq_qconf_free(*out);
        *out = NULL;
    }
    return st;
}

enum { OPT_VAL = CLI_OPT_CMD, OPT_ANN, OPT_LABELS, OPT_NO_VAL, OPT_LAYERS, OPT_BOOTSTRAP, OPT_MAX_DROP, OPT_RANK,
       OPT_MAX_FLOAT, OPT_NO_TUNE, OPT_TARGET, OPT_JSON, OPT_LETTERBOX, OPT_NO_LETTERBOX };
static const struct option options[] = {
    CLI_HELP_OPTION, CLI_MODEL_OPTIONS, CLI_QUANT_OPTIONS, CLI_LAT_OPTIONS,
    { "val", required_argument, NULL, OPT_VAL },
    { "ann", required_argument, NULL, OPT_ANN },
    { "labels", required_argument, NULL, OPT_LABELS },
    { "no-val", no_argument, NULL, OPT_NO_VAL },
    { "layers", required_argument, NULL, OPT_LAYERS },
    { "bootstrap", required_argument, NULL, OPT_BOOTSTRAP },
    { "max-drop", required_argument, NULL, OPT_MAX_DROP },
    { "rank", required_argument, NULL, OPT_RANK },
    { "max-float", required_argument, NULL, OPT_MAX_FLOAT },
    { "no-tune", no_argument, NULL, OPT_NO_TUNE },
    { "target", required_argument, NULL, OPT_TARGET },
    { "output", required_argument, NULL, CLI_OPT_OUTPUT },
    { "out", required_argument, NULL, CLI_OPT_OUTPUT },
    { "json", required_argument, NULL, OPT_JSON },
    { "letterbox", no_argument, NULL, OPT_LETTERBOX },
    { "no-letterbox", no_argument, NULL, OPT_NO_LETTERBOX },
    { NULL, 0, NULL, 0 },
};

/* argv as main's; `yquant --calib DIR ...` comes here with argv[0] "yquant" */
int cmd_quantize(int argc, char **argv)
{
    cli_model_opt mo = { 0 };
    cli_quant_opt *qo = cli_quant_new();
    if (!qo) return 1;
    valset vals[16];
    char defbufs[6][1024];
    int n_vals = 0, no_val = 0, top = 10, boots = 200, letterbox = -1, rc = 2;
    const char *out = NULL, *json = NULL, *rank = "tensor", *target_arg = NULL;
    double max_drop = -1;
    int max_float = 0, no_tune = 0;
    cli_lat lat;
    cli_lat_init(&lat);
    cli_getopt g;
    cli_getopt_begin(&g, "quantize", argc, argv, ":ho:", options);
    for (int c; (c = cli_getopt_next(&g)) != -1;) {
        int r = cli_model_arg(&mo, &g, c);
        if (!r) r = cli_quant_arg(qo, &g, c);
        if (!r) r = cli_lat_arg(&lat, &g, c);
        if (r) {
            if (r < 0) goto early;
            continue;
        }
        switch (c) {
        case 'h': case CLI_OPT_HELP: printf("%s\n%s", help, cli_quant_help); rc = 0; goto early;
        case OPT_VAL:
            if (n_vals == 16) { rc = cli_usage_error("quantize: at most 16 --val sets"); goto early; }
            vals[n_vals++] = (valset){ g.arg, NULL, NULL };
            break;
        case OPT_ANN:
        case OPT_LABELS:   /* of the --val before */
            if (!n_vals) { rc = cli_usage_error("quantize: %s must follow a --val DIR", g.name); goto early; }
            if (vals[n_vals - 1].ann || vals[n_vals - 1].labels) { rc = cli_usage_error("quantize: one --ann or --labels per --val"); goto early; }
            if (c == OPT_ANN) vals[n_vals - 1].ann = g.arg;
            else vals[n_vals - 1].labels = g.arg;
            break;
        case OPT_NO_VAL: no_val = 1; break;
        case OPT_LAYERS: if (cli_int(g.name, g.arg, 0, 100000, &top)) goto early; break;
        case OPT_BOOTSTRAP: if (cli_int(g.name, g.arg, 0, 1000000, &boots)) goto early; break;
        case OPT_MAX_DROP: {
            char *end;
            max_drop = strtod(g.arg, &end);
            if (*end || !(max_drop >= 0 && max_drop <= 100)) { rc = cli_usage_error("quantize: --max-drop P takes points in [0, 100]"); goto early; }
            break;
        }
        case OPT_RANK: rank = g.arg; break;
        case OPT_MAX_FLOAT: if (cli_int(g.name, g.arg, 0, 100000, &max_float)) goto early; break;
        case OPT_NO_TUNE: no_tune = 1; break;
        case OPT_TARGET: target_arg = g.arg; break;
        case 'o': case CLI_OPT_OUTPUT: out = g.arg; break;
        case OPT_JSON: json = g.arg; break;
        case OPT_LETTERBOX: letterbox = 1; break;
        case OPT_NO_LETTERBOX: letterbox = 0; break;
        default: goto early;   /* '?': cli_getopt_next said why */
        }
    }
    for (int i = optind; i < argc; i++) {
        if (!strcmp(argv[i], "-")) { rc = cli_getopt_unknown(&g, argv[i]); goto early; }
        if (!mo.model) mo.model = argv[i];
        else { rc = cli_usage_error("quantize: one MODEL only"); goto early; }
    }
    const char *calib_dir = cli_quant_calib_dir(qo);
    char kbuf[8192];
    if (!mo.model) mo.model = "yolo-fastest-1.1-xl";
    if (!calib_dir) { rc = cli_usage_error("quantize: --calib DIR is required (a folder of calibration images)"); goto early; }
    for (int k = 0; k < n_vals; k++)
        if (!vals[k].ann && !vals[k].labels) { rc = cli_usage_error("quantize: --val %s needs --ann or --labels", vals[k].images); goto early; }
    if (!n_vals && !no_val) n_vals = default_vals(vals, defbufs);
    if (no_val) n_vals = 0;
    if (boots < 0 || top < 0) { rc = cli_usage_error("quantize: --bootstrap and --layers take counts >= 0"); goto early; }
    if (max_float < 0) { rc = cli_usage_error("quantize: --max-float N takes N >= 0"); goto early; }
    if (max_drop >= 0) {
        if (!n_vals) { rc = cli_usage_error("quantize: --max-drop needs a validation set (--val, or the shared sets)"); goto early; }
        if (*cli_qconf_get(cli_quant_qconf(qo), "skip_layers", kbuf, sizeof kbuf)) {
            rc = cli_usage_error("quantize: --max-drop chooses the float layers itself; drop --skip-layers");
            goto early;
        }
        if (strcmp(rank, "head") && strcmp(rank, "sqnr") && strcmp(rank, "map") && strcmp(rank, "tensor")) {
            rc = cli_usage_error("quantize: --rank head, sqnr, map or tensor");
            goto early;
        }
    }
    /* over MPI ranks (cli/par.h; cli/yquant.c lets quantize run there only with --max-drop)
     * the search splits: its ranking and its steps */
    const int R = cli_par_rank(), NR = cli_par_size();
    /* the engine the accuracy is measured on, and --max-drop's with it */
    target tgt;
    if (target_pick(&tgt, target_arg)) goto early;
    if (lat.want < 0) {
        lat.want = tgt.device >= 0;
        lat.device = tgt.device >= 0 ? tgt.device : 0;
    } else if (max_drop >= 0 && (lat.want != (tgt.device >= 0) || (lat.want && lat.device != tgt.device))) {
        rc = cli_usage_error("quantize: --lat-device names another engine than --target %s: --max-drop judges its budget "
                             "on the target's engine", tgt.spec);
        goto early;
    }
    if (NR > 1 && tgt.device >= 0 && yq_gpu_count() > 1) {   /* a GPU a rank, counted from the one named */
        tgt.device = (tgt.device + R) % yq_gpu_count();
        if (lat.want) lat.device = tgt.device;
    }

    yq_error err;
    yq_quantizer *q = NULL;
    yq_qconf *qc = NULL;          /* the request (--max-drop: its answer) */
    yq_dataset *parts[16] = { 0 }, *ds = NULL;
    yq_layer_error *le = NULL;
    int n_le = 0, le_images = 0;
    acc fp = { 0 }, q8 = { 0 }, all8 = { 0 };
    int have_all8 = 0, have_q8 = 0, met = 1;
    double ci[2][2], ci_all[2][2];
    cJSON *root = cJSON_CreateObject(), *rows = cJSON_AddArrayToObject(root, "rows"), *planj = NULL;
    char outbuf[1024], mpath[1024], *qtext = NULL, *acc_json = NULL, *req_text = NULL, *plan = NULL;
    yq_qconf *ran = NULL;         /* the qconfig as resolved (qc stays the request) */
    cli_bar bar = { 0 };
    yq_quant_io io = cli_quant_term_io(&bar);
    yq_quant_opt qopt;
    rc = 1;

    if (cli_quant_options(qo, &mo, letterbox, &qopt, &qc, &err) != YQ_OK ||
        cli_model_path(mo.model, mpath, sizeof mpath, &err) != YQ_OK || yq_quantizer_new(mpath, &qopt, &io, &q, &err) != YQ_OK)
        goto fail;
    const yq_model *fm = yq_quantizer_fp32(q);
    yq_model_about about;
    yq_model_describe(fm, &about);
    if (letterbox < 0) letterbox = yq_model_letterbox(fm);
    if (yq_quantizer_check(q, qc, &err) != YQ_OK) goto fail;
    if (!out) { default_out(about.cfg, outbuf, sizeof outbuf); out = outbuf; }
    {
        /* the outputs against every input, before any work */
        const char *ins[4 + 3 * 16];
        int ni = 0;
        ins[ni++] = about.cfg;
        ins[ni++] = about.weights;
        ins[ni++] = mo.model;
        ins[ni++] = calib_dir;
        for (int k = 0; k < n_vals; k++) {
            ins[ni++] = vals[k].images;
            ins[ni++] = vals[k].ann;
            ins[ni++] = vals[k].labels;
        }
        if (cli_check_outputs(ins, ni, "-o", out, "--json", json)) goto done;
    }
    if (!n_vals && max_drop < 0)     /* never silently: the package then records no accuracy */
        fprintf(stderr, "yquant: warning: %s: the package will not be validated (its accuracy record stays empty)\n",
                no_val ? "--no-val" : "no validation set (--val DIR --ann FILE, and none under $YQ_DATA/datasets)");
    /* Validation images: every set, concatenated. */
    if (n_vals) {
        int total = 0;
        for (int k = 0; k < n_vals; k++) {
            if (cli_load_dataset(vals[k].images, vals[k].ann, vals[k].labels, &parts[k], &err) != YQ_OK) goto fail;
            total += parts[k]->n_images;
        }
        yq_ds_pick *pk = malloc(sizeof *pk * (size_t)total);
        if (!pk) { cli_fail(&err, YQ_ERR_NOMEM, "out of memory"); goto fail; }
        int m = 0;
        for (int k = 0; k < n_vals; k++)
            for (int i = 0; i < parts[k]->n_images; i++) pk[m++] = (yq_ds_pick){ k, i };
        yq_status st = yq_dataset_pick(parts, pk, m, &ds, &err);
        free(pk);
        if (st != YQ_OK) goto fail;
        fprintf(stderr, "validation: %d images from %d set%s (%s)\n", ds->n_images, n_vals, n_vals > 1 ? "s" : "",
                letterbox ? "letterbox" : "plain resize");
        if (evaluate(q, NULL, ds, &tgt, &fp, &err) != YQ_OK) goto fail;
    }
    /* rank 0 calibrates (and fills the cache) first, the others then read it */
    if (NR > 1 && R > 0) cli_par_barrier();
    yq_status cst = yq_quantizer_calibrate(q, qc, &err);   /* (FP32 evaluated above) */
    if (NR > 1 && R == 0) cli_par_barrier();
    if (cst != YQ_OK) goto fail;
    if (max_drop >= 0) {
        /* the search replaces qc by its answer; its first and last evaluations are the
         * all-int8 and the package rows below */
        yq_max_drop_result md_res;
        cJSON *md = cJSON_AddObjectToObject(root, "max_drop");
        cli_lat_start(&lat, out);
        if (NR > 1 && R > 0 && lat.tune_log) {   /* over MPI ranks: a tuning log of its own */
            char rl[sizeof lat.log_buf];
            snprintf(rl, sizeof rl, "%s.rank%d", lat.tune_log, R);
            snprintf(lat.log_buf, sizeof lat.log_buf, "%s", rl);
            lat.tune_log = lat.log_buf;
        }
        yq_quant_score fps = { .map = fp.map, .map50 = fp.map50 };
        if (cli_max_drop(q, &qc, ds, &fps, max_drop, rank, max_float, md, &lat, &md_res, &err) != YQ_OK) goto fail;
        if (R > 0) {   /* the search was split; rank 0 validates, tunes and writes the package */
            yq_max_drop_result_free(&md_res);
            rc = 0;
            goto done;
        }
        met = md_res.met;
        all8 = acc_of(&md_res.all_int8_score, md_res.all_int8_dets, md_res.n_all_int8_dets);
        q8 = acc_of(&md_res.score, md_res.dets, md_res.n_dets);
        md_res.all_int8_dets = md_res.dets = NULL;        /* (the rows own them now) */
        yq_max_drop_result_free(&md_res);
        have_all8 = have_q8 = 1;
        if (!met) fprintf(stderr, "warning: --max-drop %.2f: not met; the package holds the best step tried\n", max_drop);
    }
    /* The all-int8 figures, when the qconfig keeps layers in float. */
    char hb[16], fb[16], kb[16];
    cli_qconf_get(qc, "head", hb, sizeof hb);
    cli_qconf_get(qc, "first", fb, sizeof fb);
    cli_qconf_get(qc, "keep_float", kb, sizeof kb);
    cli_qconf_get(qc, "skip_layers", kbuf, sizeof kbuf);
    int keeps_float = !strcmp(hb, "float") || !strcmp(fb, "float") || atoi(kb) > 0 || kbuf[0];
    if (!keeps_float) have_all8 = 0;          /* --max-drop kept none: the package row is all-int8 */
    if (ds && keeps_float && !have_all8) {
        yq_qconf *all = NULL;
        yq_status st = all_int8(qc, &all, &err);
        if (st == YQ_OK) st = evaluate(q, all, ds, &tgt, &all8, &err);
        yq_qconf_free(all);
        if (st != YQ_OK) goto fail;
        have_all8 = 1;
    }
    if (ds && !have_q8 && evaluate(q, qc, ds, &tgt, &q8, &err) != YQ_OK) goto fail;
    if (yq_quantizer_resolve(q, qc, &ran, &plan, &err) != YQ_OK) goto fail;
    if (ds && boots > 0) {
        fprintf(stderr, "bootstrap: %d resamples of %d images\n", boots, ds->n_images);
        if (yq_bootstrap_drop(ds, fp.dets, fp.n, q8.dets, q8.n, boots, 1, ci, &err) != YQ_OK) goto fail;
        if (have_all8 && yq_bootstrap_drop(ds, fp.dets, fp.n, all8.dets, all8.n, boots, 1, ci_all, &err) != YQ_OK) goto fail;
    }

    /* The table. */
    char v[6][64];
    const char *bc = cli_qconf_get(qc, "bias_correction", v[5], sizeof v[5]);
    printf("\n%s  ->  %s\n", about.cfg, out);
    printf("qconfig: %s bits, %s weights, calib %s, head %s, first conv %s, equalize %s, bias correction %s\n",
           cli_qconf_get(qc, "bits", v[0], sizeof v[0]),
           !strcmp(cli_qconf_get(qc, "weights", v[1], sizeof v[1]), "per_channel") ? "per-channel" : "per-tensor",
           cli_qconf_get(qc, "calib", v[2], sizeof v[2]), hb, fb, cli_qconf_get(qc, "equalize", v[3], sizeof v[3]),
           !strcmp(bc, "data") ? "weights+data" : bc);
    /* What runs in float: the qconfig's choices (head, first, keep_float's measured layers). */
    printf("float convs:");
    int n_float = 0;
    cJSON *fl = cJSON_AddArrayToObject(root, "float_layers");
    planj = cJSON_Parse(plan);
    const cJSON *node;
    cJSON_ArrayForEach(node, cJSON_GetObjectItem(planj, "nodes")) {
        const cJSON *op = cJSON_GetObjectItem(node, "op"), *dt = cJSON_GetObjectItem(node, "dtype"),
                    *ly = cJSON_GetObjectItem(node, "layer");
        if (!cJSON_IsString(op) || strcmp(op->valuestring, "conv") || !cJSON_IsString(dt) ||
            strcmp(dt->valuestring, "float") || !cJSON_IsNumber(ly))
            continue;
        printf("%s%d", n_float++ ? "," : " ", ly->valueint);
        cJSON_AddItemToArray(fl, cJSON_CreateNumber(ly->valueint));
    }
    printf("%s\n", n_float ? "" : " none");
    if (ds) {
        if (q8.gpu || all8.gpu)
            printf("\naccuracy on %d images (COCO, %s; FP32: CPU OpenBLAS; int8: the target, %s, %s: int8 layers as the "
                   "CPU reference, float layers %s):\n", ds->n_images, letterbox ? "letterbox" : "plain resize", tgt.spec,
                   tgt.name, CLI_GPU_FLOAT);
        else
            printf("\naccuracy on %d images (COCO, %s; target cpu; CPU engines: FP32 OpenBLAS, int8 %s (the reference's "
                   "bytes) with the package's float layers in their exact FP32, as every engine runs them):\n", ds->n_images,
                   yq_cpu_int8_engine(),
                   letterbox ? "letterbox" : "plain resize");
        printf("  %-26s %8s %8s   %6s %6s   %-31s %8s\n", "", "mAP", "mAP50", "drop", "drop50",
               boots ? "95% CI of the drops (paired)" : "", "ms/img");
        print_row("FP32", &fp, NULL, NULL);
        print_row(keeps_float ? "int8 (package)" : "int8 (package, all int8)", &q8, &fp, boots ? ci : NULL);
        if (have_all8) print_row("int8, every layer int8", &all8, &fp, boots ? ci_all : NULL);
        add_row(rows, "fp32", &fp, NULL, NULL, &tgt);
        add_row(rows, "int8", &q8, &fp, boots ? ci : NULL, &tgt);
        if (have_all8) add_row(rows, "int8_all", &all8, &fp, boots ? ci_all : NULL, &tgt);
        cJSON_AddNumberToObject(root, "images", ds->n_images);
    }
    printf("\n");
    if (top > 0) {
        if (yq_quantizer_layer_errors(q, qc, 8, &le, &n_le, &le_images, &err) != YQ_OK) goto fail;
        cli_print_layer_errors(le, n_le, le_images, top);
        cJSON *lr = cJSON_AddArrayToObject(root, "layers");
        for (int i = 0; i < n_le; i++) {
            cJSON *l = cJSON_CreateObject();
            cJSON_AddNumberToObject(l, "layer", le[i].layer);
            cJSON_AddStringToObject(l, "type", le[i].type);
            cJSON_AddNumberToObject(l, "sqnr_db", le[i].sqnr_db);
            cJSON_AddBoolToObject(l, "float", !strcmp(le[i].dtype, "float"));
            cJSON_AddItemToArray(lr, l);
        }
    }

    /* The package. */
    qtext = yq_qconf_text(ran);
    req_text = yq_qconf_text(qc);
    if (!qtext || !req_text || !planj) { cli_fail(&err, YQ_ERR_NOMEM, "out of memory"); goto fail; }
    cJSON_AddStringToObject(root, "target", tgt.spec);
    cJSON_AddStringToObject(root, "target_engine", tgt.name);
    cJSON_AddStringToObject(root, "model", about.cfg);
    cJSON_AddStringToObject(root, "package", out);
    cJSON_AddStringToObject(root, "qconfig", qtext);
    cJSON_AddStringToObject(root, "qconfig_request", req_text);
    cJSON_AddItemToObject(root, "plan", planj);
    planj = NULL;
    cJSON_AddBoolToObject(root, "letterbox", letterbox);
    acc_json = cJSON_PrintUnformatted(rows);
    yq_save_opt so = { acc_json };
    if (yq_quantizer_save_with(q, qc, out, &so, &err) != YQ_OK) goto fail;
    struct stat sb;
    printf("wrote %s (%.1f KB)\n", out, stat(out, &sb) == 0 ? (double)sb.st_size / 1024 : 0.0);
    if (!no_tune && yq_gpu_count() > 0) {
        /* a GPU here: its kernels chosen per layer now, stored in the package (yquant tune),
         * on the target's GPU (the first one for a cpu target) */
        char dev[16];
        snprintf(dev, sizeof dev, "cuda:%d", tgt.device >= 0 ? tgt.device : 0);
        cli_tune_req tr = cli_tune_defaults();
        tr.mo.model = out;
        tr.o.batches[0] = 1;
        tr.o.batches[1] = 32;
        tr.o.n_batches = 2;
        tr.o.device = dev;
        printf("tuning the int8 kernels on this GPU: yquant tune %s --batch 1,32 --device %s (--no-tune skips it)\n", out, dev);
        fflush(stdout);
        if (cli_tune(&tr) != 0) fprintf(stderr, "warning: tuning failed; %s is written, untuned\n", out);
    }
    rc = met ? 0 : 3;
    if (json && cli_write_json(json, root)) rc = 1;
    goto done;
fail:
    cli_error(&err);
done:
    cJSON_free(acc_json);
    cJSON_Delete(root);
    cJSON_Delete(planj);
    free(qtext);
    free(req_text);
    free(plan);
    yq_qconf_free(ran);
    free(le);
    yq_coco_dets_free(fp.dets);
    yq_coco_dets_free(q8.dets);
    yq_coco_dets_free(all8.dets);
    yq_dataset_free(ds);
    for (int k = 0; k < 16; k++) yq_dataset_free(parts[k]);
    yq_qconf_free(qc);
    yq_quantizer_free(q);
early:
    cli_quant_free(qo);
    return rc;
}
