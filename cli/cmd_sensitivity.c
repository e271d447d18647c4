/* yquant sensitivity MODEL: per-layer int8 sensitivity.  The measurements are the
 * library's (include/yq_quant.h, yq_quantizer_sensitivity); this file reads the flags and
 * writes the table, the CSV, the chart and the JSON. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "cli/cli.h"
#include "cli/par.h"
#include "cli/report.h"
#include "yq_draw.h"

static const char *help =
    "usage: yquant sensitivity MODEL --calib DIR --val DIR (--ann F | --labels D) [--out DIR]\n"
    "                          [--layers N] [--rank map|sqnr] [--sqnr-images N] [--json FILE] [qconfig flags]\n"
    "\n"
    "For every conv layer L (from every layer in int8, head and first conv included):\n"
    "  (a) only L in int8, every other layer float: the mAP drop against FP32\n"
    "  (b) only L in float, every other layer int8: the mAP gain over all-int8\n"
    "and for each the SQNR of the tensors feeding the heads.  Layers are ranked by impact\n"
    "= drop(a) + gain(b) in mAP points (--rank sqnr: by the head SQNR gain of (b)); the table\n"
    "goes to stdout and DIR/sensitivity.csv, the chart to DIR/sensitivity.png.\n"
    "  --layers N        only the N convs with the lowest SQNR in the all-int8 graph (faster)\n"
    "  --sqnr-images N   calibration images for the SQNR figures (default 8)\n"
    "  -o, --output DIR  default MODELNAME-sensitivity (--out: the same)\n"
    "The qconfig flags set bits, calibration method, weights and so on; skip_layers, head,\n"
    "first and keep_float are what this command varies (keep_float is 0 throughout).\n";

/* "conv 3x3/1 dw" and "13x13x256": layer L of the FP32 model. */
static void conv_desc(const yq_model *m, int layer, char *t, size_t tcap, char *shp, size_t scap)
{
    yq_layer L;
    if (yq_model_layer(m, layer, &L, NULL) != YQ_OK) memset(&L, 0, sizeof L);
    snprintf(t, tcap, "conv %dx%d/%d%s", L.size, L.size, L.stride,
             L.groups > 1 && L.groups == L.out_c ? " dw" : L.groups > 1 ? " grp" : "");
    if (shp) snprintf(shp, scap, "%dx%dx%d", L.out_w, L.out_h, L.out_c);
}

static yq_status write_sens_csv(const char *path, const yq_model *m, const yq_sens_layer *rows, int n,
                                const yq_sens_summary *sum, yq_error *err)
{
    cli_out o;
    yq_status st = cli_out_open(&o, path, err);
    if (st != YQ_OK) return st;
    fputs("rank,layer,type,output,sqnr_db_all_int8,a_map,a_drop_pts,a_head_sqnr_db,b_map,b_gain_pts,b_head_sqnr_db,"
          "impact_pts,fp32_map,all_int8_map,all_int8_head_sqnr_db\n", o.f);
    for (int k = 0; k < n; k++) {
        const yq_sens_layer *r = &rows[k];
        char t[64], shp[32];
        conv_desc(m, r->layer, t, sizeof t, shp, sizeof shp);
        fprintf(o.f, "%d,%d,%s,%s,%.3f,%.6f,%.4f,%.3f,%.6f,%.4f,%.3f,%.4f,%.6f,%.6f,%.3f\n", k + 1, r->layer, t, shp,
                r->sqnr_db, r->map_a, 100 * (sum->fp32_map - r->map_a), r->head_db_a, r->map_b,
                100 * (r->map_b - sum->all_int8_map), r->head_db_b, r->impact_pts, sum->fp32_map, sum->all_int8_map,
                sum->all_int8_head_db);
    }
    return cli_out_close(&o, err);
}

static yq_status write_sens_chart(const char *path, const yq_model *m, const yq_sens_layer *rows, int n,
                                  const yq_sens_summary *sum, yq_error *err)
{
    char **labels = calloc((size_t)(n ? n : 1), sizeof *labels);
    double *v = malloc(sizeof *v * (size_t)(n ? n : 1) * 4);
    yq_status st = YQ_OK;
    if (!labels || !v) st = cli_fail(err, YQ_ERR_NOMEM, "out of memory");
    for (int k = 0; st == YQ_OK && k < n; k++) {
        char t[48], d[96];
        conv_desc(m, rows[k].layer, t, sizeof t, NULL, 0);
        snprintf(d, sizeof d, "%d. layer %d %s", k + 1, rows[k].layer, t);
        labels[k] = strdup(d);
        v[k] = 100 * (sum->fp32_map - rows[k].map_a);
        v[n + k] = 100 * (rows[k].map_b - sum->all_int8_map);
        v[2 * n + k] = rows[k].head_db_a;
        v[3 * n + k] = rows[k].head_db_b - sum->all_int8_head_db;
    }
    if (st == YQ_OK) {
        yq_bar_panel P[3] = {
            { .title = "mAP@[.5:.95] impact (points)", .xlabel = "mAP points", .n_series = 2,
              .series = { "(a) only this layer int8: drop vs FP32", "(b) only this layer float: gain vs all-int8" },
              .values = { v, v + n } },
            { .title = "(a) head SQNR, only this layer int8", .xlabel = "dB (lower: more sensitive)", .n_series = 1,
              .series = { "(a) head SQNR" }, .values = { v + 2 * n } },
            { .title = "(b) head SQNR gain, only this layer float", .xlabel = "dB over all-int8", .n_series = 1,
              .series = { "(b) head SQNR gain" }, .values = { v + 3 * n }, .first_color = 1 },
        };
        yq_canvas cv;
        st = yq_chart_bars((const char *const *)labels, n, P, 3, 1200, &cv, err);
        if (st == YQ_OK) {
            st = yq_png_write(path, &cv, err);
            yq_canvas_free(&cv);
        }
    }
    for (int k = 0; labels && k < n; k++) free(labels[k]);
    free(labels);
    free(v);
    return st;
}

enum { OPT_VAL = CLI_OPT_CMD, OPT_ANN, OPT_LABELS, OPT_JSON, OPT_LAYERS, OPT_RANK, OPT_SQNR_IMAGES, OPT_LETTERBOX,
       OPT_NO_LETTERBOX };
static const struct option options[] = {
    CLI_HELP_OPTION, CLI_MODEL_OPTIONS, CLI_QUANT_OPTIONS,
    { "val", required_argument, NULL, OPT_VAL },
    { "images", required_argument, NULL, OPT_VAL },
    { "ann", required_argument, NULL, OPT_ANN },
    { "labels", required_argument, NULL, OPT_LABELS },
    { "output", required_argument, NULL, CLI_OPT_OUTPUT },
    { "out", required_argument, NULL, CLI_OPT_OUTPUT },
    { "json", required_argument, NULL, OPT_JSON },
    { "layers", required_argument, NULL, OPT_LAYERS },
    { "rank", required_argument, NULL, OPT_RANK },
    { "sqnr-images", required_argument, NULL, OPT_SQNR_IMAGES },
    { "letterbox", no_argument, NULL, OPT_LETTERBOX },
    { "no-letterbox", no_argument, NULL, OPT_NO_LETTERBOX },
    { NULL, 0, NULL, 0 },
};

int cmd_sensitivity(int argc, char **argv)
{
    cli_model_opt mo = { 0 };
    cli_quant_opt *qo = cli_quant_new();
    if (!qo) return 1;
    const char *val = NULL, *ann = NULL, *labels = NULL, *out = NULL, *json = NULL, *rank = "map";
    int letterbox = -1, max_layers = 0, sqnr_images = 8, rc = 2;
    cli_getopt g;
    cli_getopt_begin(&g, "sensitivity", argc, argv, ":ho:", options);
    for (int c; (c = cli_getopt_next(&g)) != -1;) {
        int r = cli_model_arg(&mo, &g, c);
        if (!r) r = cli_quant_arg(qo, &g, c);
        if (r) {
            if (r < 0) goto early;
            continue;
        }
        switch (c) {
        case 'h': case CLI_OPT_HELP: printf("%s\n%s", help, cli_quant_help); rc = 0; goto early;
        case OPT_VAL: val = g.arg; break;
        case OPT_ANN: ann = g.arg; break;
        case OPT_LABELS: labels = g.arg; break;
        case 'o': case CLI_OPT_OUTPUT: out = g.arg; break;
        case OPT_JSON: json = g.arg; break;
        case OPT_LAYERS: if (cli_int(g.name, g.arg, 0, 100000, &max_layers)) goto early; break;
        case OPT_RANK: rank = g.arg; break;
        case OPT_SQNR_IMAGES: if (cli_int(g.name, g.arg, 1, 100000, &sqnr_images)) goto early; break;
        case OPT_LETTERBOX: letterbox = 1; break;
        case OPT_NO_LETTERBOX: letterbox = 0; break;
        default: goto early;   /* '?': cli_getopt_next said why */
        }
    }
    for (int i = optind; i < argc; i++) {
        if (!strcmp(argv[i], "-")) { cli_getopt_unknown(&g, argv[i]); goto early; }
        if (!mo.model) mo.model = argv[i];
        else { cli_usage_error("sensitivity: one MODEL only"); goto early; }
    }
    if (!mo.model) { cli_usage_error("sensitivity: which MODEL?"); goto early; }
    if (!cli_quant_calib_dir(qo)) { cli_usage_error("sensitivity: --calib DIR is required"); goto early; }
    if (!val || !ann == !labels) { cli_usage_error("sensitivity: --val DIR and one of --ann FILE or --labels DIR are required"); goto early; }
    if (max_layers < 0) { cli_usage_error("sensitivity: --layers N takes N >= 0 (0: every conv)"); goto early; }
    if (sqnr_images < 1 || sqnr_images > 1024) { cli_usage_error("sensitivity: --sqnr-images in 1..1024"); goto early; }
    if (strcmp(rank, "map") && strcmp(rank, "sqnr")) { cli_usage_error("sensitivity: --rank map or sqnr"); goto early; }

    yq_error err;
    yq_quantizer *q = NULL;
    yq_qconf *qc = NULL;
    yq_dataset *ds = NULL;
    yq_sens_layer *rows = NULL;
    yq_sens_summary sum;
    int n = 0;
    char outbuf[1024], path[1100], mpath[1024];
    yq_quant_opt o;
    yq_status st0;
    cli_bar bar = { 0 };
    yq_quant_io io = cli_quant_term_io(&bar);
    rc = 1;
    /* over MPI ranks (cli/par.h): each rank measures every NR-th layer on its own device;
     * rank 0 calibrates (and fills the cache) first, the others then read it */
    const int R = cli_par_rank(), NR = cli_par_size();
    char dev_buf[32];
    if (cli_quant_options(qo, &mo, letterbox, &o, &qc, &err) != YQ_OK || cli_model_path(mo.model, mpath, sizeof mpath, &err) != YQ_OK)
        goto fail;
    o.device = cli_par_device(o.device, yq_gpu_count(), dev_buf, sizeof dev_buf);
    if (NR > 1 && R > 0) cli_par_barrier();
    st0 = yq_quantizer_new(mpath, &o, &io, &q, &err);
    if (st0 == YQ_OK && NR > 1) st0 = yq_quantizer_calibrate(q, qc, &err);
    if (NR > 1 && R == 0) cli_par_barrier();
    if (st0 != YQ_OK || cli_load_dataset(val, ann, labels, &ds, &err) != YQ_OK) goto fail;
    const yq_model *m = yq_quantizer_fp32(q);
    yq_model_about ab;
    yq_model_describe(m, &ab);
    if (!out) {
        const char *b = cli_base_name(ab.cfg), *dot = strrchr(b, '.');
        snprintf(outbuf, sizeof outbuf, "%.*s-sensitivity", dot ? (int)(dot - b) : (int)strlen(b), b);
        out = outbuf;
    }
    {
        const char *ins[] = { mo.model, mo.weights, ab.cfg, ab.weights, cli_quant_calib_dir(qo), val, ann, labels };
        if (cli_check_report(ins, (int)(sizeof ins / sizeof *ins), out, json)) goto done;
    }
    if (R == 0 && cli_make_dirs(out, &err) != YQ_OK) goto fail;
    int rank_sqnr = !strcmp(rank, "sqnr");
    yq_sens_opt so = { .max_layers = max_layers, .sqnr_images = sqnr_images, .rank_sqnr = rank_sqnr, .part = R,
                       .parts = NR, .exchange = NR > 1 ? cli_par_exchange : NULL };
    if (yq_quantizer_sensitivity(q, qc, ds, &so, &rows, &n, &sum, &err) != YQ_OK) goto fail;
    if (R > 0) {   /* rank 0 prints and writes the table */
        rc = 0;
        goto done;
    }

    printf("\n%s: per-layer sensitivity on %d images (FP32 mAP %.2f, all-int8 mAP %.2f, head SQNR %.2f dB)\n",
           ab.cfg, ds->n_images, 100 * sum.fp32_map, 100 * sum.all_int8_map, sum.all_int8_head_db);
    printf("(a) only this layer int8; (b) only this layer float; impact = drop(a) + gain(b), mAP points; "
           "ranked by %s\n", rank_sqnr ? "the head SQNR gain of (b)" : "impact");
    printf("  %4s %5s  %-14s %-12s %7s | %7s %7s %8s | %7s %7s %8s | %7s\n", "rank", "layer", "type", "output", "SQNR",
           "a mAP", "a drop", "a head", "b mAP", "b gain", "b head", "impact");
    for (int k = 0; k < n; k++) {
        const yq_sens_layer *r = &rows[k];
        char t[48], shp[32];
        conv_desc(m, r->layer, t, sizeof t, shp, sizeof shp);
        printf("  %4d %5d  %-14s %-12s %7.2f | %7.2f %7.2f %8.2f | %7.2f %7.2f %8.2f | %7.2f\n", k + 1, r->layer, t, shp,
               r->sqnr_db, 100 * r->map_a, 100 * (sum.fp32_map - r->map_a), r->head_db_a, 100 * r->map_b,
               100 * (r->map_b - sum.all_int8_map), r->head_db_b, r->impact_pts);
    }
    snprintf(path, sizeof path, "%s/sensitivity.csv", out);
    if (write_sens_csv(path, m, rows, n, &sum, &err) != YQ_OK) goto fail;
    snprintf(path, sizeof path, "%s/sensitivity.png", out);
    if (write_sens_chart(path, m, rows, n, &sum, &err) != YQ_OK) goto fail;
    printf("wrote %s/sensitivity.csv, %s/sensitivity.png\n", out, out);
    rc = 0;
    if (json) {
        cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "layers");
        cJSON_AddStringToObject(root, "model", ab.cfg);
        cJSON_AddNumberToObject(root, "images", ds->n_images);
        cJSON_AddNumberToObject(root, "fp32_map", sum.fp32_map);
        cJSON_AddNumberToObject(root, "all_int8_map", sum.all_int8_map);
        cJSON_AddNumberToObject(root, "all_int8_head_sqnr_db", sum.all_int8_head_db);
        for (int k = 0; k < n; k++) {
            cJSON *jo = cJSON_CreateObject();
            cJSON_AddNumberToObject(jo, "layer", rows[k].layer);
            cJSON_AddNumberToObject(jo, "sqnr_db", rows[k].sqnr_db);
            cJSON_AddNumberToObject(jo, "a_map", rows[k].map_a);
            cJSON_AddNumberToObject(jo, "a_head_sqnr_db", rows[k].head_db_a);
            cJSON_AddNumberToObject(jo, "b_map", rows[k].map_b);
            cJSON_AddNumberToObject(jo, "b_head_sqnr_db", rows[k].head_db_b);
            cJSON_AddNumberToObject(jo, "impact_pts", rows[k].impact_pts);
            cJSON_AddItemToArray(arr, jo);
        }
        rc = cli_write_json(json, root);
        cJSON_Delete(root);
    }
    goto done;
fail:
    cli_error(&err);
done:
    free(rows);
    yq_dataset_free(ds);
    yq_quantizer_free(q);
    yq_qconf_free(qc);
early:
    cli_quant_free(qo);
    return rc;
}
