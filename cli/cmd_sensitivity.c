/* yquant sensitivity MODEL: per-layer int8 sensitivity.  The measurements are the
 * library's (pipeline/search.h, yq_pipe_sensitivity); this file reads the flags and
 * writes the table, the CSV, the chart and the JSON. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "cli/cli.h"
#include "cli/report.h"
#include "yq_draw.h"
#include "yq_data.h"
#include "quant/rewrite.h"
#include "quant/select.h"
#include "runtime/exec_cuda.h"

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
    "  --out DIR         default MODELNAME-sensitivity\n"
    "The qconfig flags set bits, calibration method, weights and so on; skip_layers, head,\n"
    "first and keep_float are what this command varies (keep_float is 0 throughout).\n";

static void conv_desc(const yq_node *nd, char *buf, size_t cap)
{
    const yq_conv_p *c = &nd->p.conv;
    snprintf(buf, cap, "conv %dx%d/%d%s", c->size, c->size, c->stride,
             c->groups > 1 && c->groups == nd->out.c ? " dw" : c->groups > 1 ? " grp" : "");
}

static yq_status write_sens_csv(const char *path, const yq_graph *g, const yq_pipe_sens_row *rows, int n, const double *fp,
                                const yq_pipe_eval *all8, double head_all, yq_error *err)
{
    cli_out o;
    yq_status st = cli_out_open(&o, path, err);
    if (st != YQ_OK) return st;
    fputs("rank,layer,type,output,sqnr_db_all_int8,a_map,a_drop_pts,a_head_sqnr_db,b_map,b_gain_pts,b_head_sqnr_db,"
          "impact_pts,fp32_map,all_int8_map,all_int8_head_sqnr_db\n", o.f);
    for (int k = 0; k < n; k++) {
        const yq_pipe_sens_row *r = &rows[k];
        const yq_node *nd = &g->nodes[r->id];
        char t[64];
        conv_desc(nd, t, sizeof t);
        fprintf(o.f, "%d,%d,%s,%dx%dx%d,%.3f,%.6f,%.4f,%.3f,%.6f,%.4f,%.3f,%.4f,%.6f,%.6f,%.3f\n", k + 1, r->layer, t,
                nd->out.w, nd->out.h, nd->out.c, r->sqnr, r->map_a, 100 * (fp[YQ_COCO_AP] - r->map_a), r->head_a,
                r->map_b, 100 * (r->map_b - all8->s[YQ_COCO_AP]), r->head_b, r->impact, fp[YQ_COCO_AP],
                all8->s[YQ_COCO_AP], head_all);
    }
    return cli_out_close(&o, err);
}

static yq_status write_sens_chart(const char *path, const yq_graph *g, const yq_pipe_sens_row *rows, int n, const double *fp,
                                  const yq_pipe_eval *all8, double head_all, yq_error *err)
{
    char **labels = calloc((size_t)(n ? n : 1), sizeof *labels);
    double *v = malloc(sizeof *v * (size_t)(n ? n : 1) * 4);
    yq_status st = YQ_OK;
    if (!labels || !v) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    for (int k = 0; st == YQ_OK && k < n; k++) {
        char t[48], d[96];
        conv_desc(&g->nodes[rows[k].id], t, sizeof t);
        snprintf(d, sizeof d, "%d. layer %d %s", k + 1, rows[k].layer, t);
        labels[k] = strdup(d);
        v[k] = 100 * (fp[YQ_COCO_AP] - rows[k].map_a);
        v[n + k] = 100 * (rows[k].map_b - all8->s[YQ_COCO_AP]);
        v[2 * n + k] = rows[k].head_a;
        v[3 * n + k] = rows[k].head_b - head_all;
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

int cmd_sensitivity(int argc, char **argv)
{
    cli_model_opt mo = { 0 };
    cli_quant_opt *qo = malloc(sizeof *qo);
    if (!qo) { fprintf(stderr, "yquant: out of memory\n"); return 1; }
    cli_quant_init(qo);
    const char *val = NULL, *ann = NULL, *labels = NULL, *out = NULL, *json = NULL, *rank = "map";
    int letterbox = -1, max_layers = 0, sqnr_images = 8, rc = 2;
    for (int i = 0; i < argc; i++) {
        int r = cli_model_arg(&mo, argc, argv, &i);
        if (!r) r = cli_quant_arg(qo, argc, argv, &i);
        if (r < 0) goto early;
        if (r) continue;
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { printf("%s\n%s", help, cli_quant_help); rc = 0; goto early; }
        else if ((!strcmp(a, "--val") || !strcmp(a, "--images")) && has) val = argv[++i];
        else if (!strcmp(a, "--ann") && has) ann = argv[++i];
        else if (!strcmp(a, "--labels") && has) labels = argv[++i];
        else if ((!strcmp(a, "--out") || !strcmp(a, "-o")) && has) out = argv[++i];
        else if (!strcmp(a, "--json") && has) json = argv[++i];
        else if (!strcmp(a, "--layers") && has) max_layers = atoi(argv[++i]);
        else if (!strcmp(a, "--rank") && has) rank = argv[++i];
        else if (!strcmp(a, "--sqnr-images") && has) sqnr_images = atoi(argv[++i]);
        else if (!strcmp(a, "--letterbox")) letterbox = 1;
        else if (!strcmp(a, "--no-letterbox")) letterbox = 0;
        else if (a[0] == '-') { cli_usage_error("sensitivity: unknown option or missing value: %s", a); goto early; }
        else if (!mo.model) mo.model = a;
        else { cli_usage_error("sensitivity: one MODEL only"); goto early; }
    }
    if (!mo.model) { cli_usage_error("sensitivity: which MODEL?"); goto early; }
    if (!qo->calib_dir) { cli_usage_error("sensitivity: --calib DIR is required"); goto early; }
    if (!val || !ann == !labels) { cli_usage_error("sensitivity: --val DIR and one of --ann FILE or --labels DIR are required"); goto early; }
    if (max_layers < 0) { cli_usage_error("sensitivity: --layers N takes N >= 0 (0: every conv)"); goto early; }
    if (sqnr_images < 1 || sqnr_images > 1024) { cli_usage_error("sensitivity: --sqnr-images in 1..1024"); goto early; }
    if (strcmp(rank, "map") && strcmp(rank, "sqnr")) { cli_usage_error("sensitivity: --rank map or sqnr"); goto early; }

    yq_error err;
    yq_graph *g = NULL;
    yq_dataset *ds = NULL;
    yq_calib_stats *cs = NULL;
    yq_pipe_eval fp = { 0 };
    yq_pipe_sens_res res = { 0 };
    char outbuf[1024], path[1100];
    rc = 1;
    if (cli_load_model(&mo, &g, &err) != YQ_OK || cli_load_dataset(val, ann, labels, &ds, &err) != YQ_OK) goto fail;
    if (letterbox < 0) letterbox = g->letter_box;
    if (!out) {
        const char *b = cli_base_name(g->cfg_path), *dot = strrchr(b, '.');
        snprintf(outbuf, sizeof outbuf, "%.*s-sensitivity", dot ? (int)(dot - b) : (int)strlen(b), b);
        out = outbuf;
    }
    {
        const char *ins[] = { mo.model, mo.weights, g->cfg_path, g->weights_path, qo->calib_dir, val, ann, labels };
        if (cli_check_report(ins, (int)(sizeof ins / sizeof *ins), out, json)) goto done;
    }
    if (cli_make_dirs(out, &err) != YQ_OK) goto fail;
    cli_bar bar;
    cli_progress_start(&bar, "fp32");
    yq_pipe_io io = cli_term_io(&bar);
    if (yq_pipe_eval_timed(g, ds, letterbox, -1, &io, &fp, &err) != YQ_OK) goto fail;
    if (cli_calibrate_swap(qo, &g, letterbox, &cs, &err) != YQ_OK) goto fail;   /* (FP32 evaluated above) */
    int rank_sqnr = !strcmp(rank, "sqnr");
    yq_pipe_sens_req req = { .max_layers = max_layers, .sqnr_images = sqnr_images, .rank_sqnr = rank_sqnr };
    yq_pipe_calib c = cli_calib_req(qo);
    if (yq_pipe_sensitivity(&c, &qo->qc, g, cs, ds, letterbox, fp.s, &req, &io, &res, &err) != YQ_OK) goto fail;
    const yq_pipe_sens_row *rows = res.rows;
    const yq_pipe_eval all8 = res.all8;
    double head_all = res.head_all;
    int n = res.n;

    printf("\n%s: per-layer sensitivity on %d images (FP32 mAP %.2f, all-int8 mAP %.2f, head SQNR %.2f dB)\n",
           g->cfg_path, ds->n_images, 100 * fp.s[YQ_COCO_AP], 100 * all8.s[YQ_COCO_AP], head_all);
    printf("(a) only this layer int8; (b) only this layer float; impact = drop(a) + gain(b), mAP points; "
           "ranked by %s\n", rank_sqnr ? "the head SQNR gain of (b)" : "impact");
    printf("  %4s %5s  %-14s %-12s %7s | %7s %7s %8s | %7s %7s %8s | %7s\n", "rank", "layer", "type", "output", "SQNR",
           "a mAP", "a drop", "a head", "b mAP", "b gain", "b head", "impact");
    for (int k = 0; k < n; k++) {
        const yq_pipe_sens_row *r = &rows[k];
        const yq_node *nd = &g->nodes[r->id];
        char t[48], shp[32];
        conv_desc(nd, t, sizeof t);
        snprintf(shp, sizeof shp, "%dx%dx%d", nd->out.w, nd->out.h, nd->out.c);
        printf("  %4d %5d  %-14s %-12s %7.2f | %7.2f %7.2f %8.2f | %7.2f %7.2f %8.2f | %7.2f\n", k + 1, r->layer, t, shp,
               r->sqnr, 100 * r->map_a, 100 * (fp.s[YQ_COCO_AP] - r->map_a), r->head_a, 100 * r->map_b,
               100 * (r->map_b - all8.s[YQ_COCO_AP]), r->head_b, r->impact);
    }
    snprintf(path, sizeof path, "%s/sensitivity.csv", out);
    if (write_sens_csv(path, g, rows, n, fp.s, &all8, head_all, &err) != YQ_OK) goto fail;
    snprintf(path, sizeof path, "%s/sensitivity.png", out);
    if (write_sens_chart(path, g, rows, n, fp.s, &all8, head_all, &err) != YQ_OK) goto fail;
    printf("wrote %s/sensitivity.csv, %s/sensitivity.png\n", out, out);
    rc = 0;
    if (json) {
        cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "layers");
        cJSON_AddStringToObject(root, "model", g->cfg_path);
        cJSON_AddNumberToObject(root, "images", ds->n_images);
        cJSON_AddNumberToObject(root, "fp32_map", fp.s[YQ_COCO_AP]);
        cJSON_AddNumberToObject(root, "all_int8_map", all8.s[YQ_COCO_AP]);
        cJSON_AddNumberToObject(root, "all_int8_head_sqnr_db", head_all);
        for (int k = 0; k < n; k++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "layer", rows[k].layer);
            cJSON_AddNumberToObject(o, "sqnr_db", rows[k].sqnr);
            cJSON_AddNumberToObject(o, "a_map", rows[k].map_a);
            cJSON_AddNumberToObject(o, "a_head_sqnr_db", rows[k].head_a);
            cJSON_AddNumberToObject(o, "b_map", rows[k].map_b);
            cJSON_AddNumberToObject(o, "b_head_sqnr_db", rows[k].head_b);
            cJSON_AddNumberToObject(o, "impact_pts", rows[k].impact);
            cJSON_AddItemToArray(arr, o);
        }
        rc = cli_write_json(json, root);
        cJSON_Delete(root);
    }
    goto done;
fail:
    cli_error(&err);
done:
    yq_pipe_sens_free(&res);
    yq_pipe_eval_free(&fp);
    yq_calib_stats_free(cs);
    yq_dataset_free(ds);
    yq_graph_free(g);
early:
    free(qo);
    return rc;
}
