/* yquant sensitivity MODEL: per-layer int8 sensitivity, and the accuracy-aware search
 * behind `quantize --max-drop P`.
 *
 * Both go through skip_layers in the qconfig, starting from every layer in int8 (head and
 * first conv included): (a) only layer L in int8, every other layer float; (b) only layer L
 * in float, every other layer int8.  For each: mAP on the labelled set and the SQNR of the
 * tensors feeding the heads against FP32, on a few calibration images. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "cli/cli.h"
#include "cli/report.h"
#include "datasets/chart.h"
#include "datasets/labels.h"
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

/* ---- the measurement context, shared with --max-drop ---- */

typedef struct sens {
    const cli_quant_opt *q;       /* calib_dir and the base qconfig */
    yq_graph *g;
    const yq_calib_stats *cs;
    const yq_dataset *ds;
    int letterbox;
    float *inputs;                /* SQNR images */
    int n_inputs;
    cli_quant_opt *work;          /* the config being measured */
    char *list;                   /* skip_layers text */
    size_t list_cap;
    int eval_dev;                 /* the mAP on GPU eval_dev (>= 0), else on the CPU int8 reference */
} sens;

/* Every layer in int8: head and first conv too, no skip, no keep_float choice. */
static void all_int8(yq_qconfig *qc)
{
    qc->head_float = qc->first_float = qc->keep_float = 0;
    for (int i = 0; i < qc->n_layers; i++) qc->layer[i].skip = -1;
}

/* S->work = base, all int8, then skip_layers: the layers listed (except=0) or every layer
 * but the one listed (except=1). */
static yq_status make_config(sens *S, const int *layers, int n, int except, yq_error *err)
{
    *S->work = *S->q;
    all_int8(&S->work->qc);
    size_t need = (size_t)(except ? S->g->n_nodes : n) * 12 + 1;
    if (need > S->list_cap) {
        char *nl = realloc(S->list, need);
        if (!nl) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
        S->list = nl;
        S->list_cap = need;
    }
    size_t m = 0;
    S->list[0] = 0;
    if (except) {
        for (int i = 1; i < S->g->n_nodes; i++)
            if (S->g->nodes[i].layer != layers[0])
                m += (size_t)snprintf(S->list + m, S->list_cap - m, "%s%d", m ? "," : "", S->g->nodes[i].layer);
    } else {
        for (int k = 0; k < n; k++) m += (size_t)snprintf(S->list + m, S->list_cap - m, "%s%d", m ? "," : "", layers[k]);
    }
    return m ? yq_qconfig_set(&S->work->qc, "skip_layers", S->list, "sensitivity", err) : YQ_OK;
}

/* The evaluation on S's engine; a GPU that fails hands over to the CPU for good (one
 * warning line; the steps before were measured on the GPU). */
static yq_status eval_on(sens *S, yq_progress_fn progress, void *pctx, cli_timed_eval *r, yq_error *err)
{
    yq_status st = cli_eval_timed_on(S->g, S->ds, S->letterbox, S->eval_dev, progress, pctx, r, err);
    if (st != YQ_OK && S->eval_dev >= 0) {
        fprintf(stderr, "\nwarning: evaluation on the GPU failed (%s); the CPU int8 reference evaluates from here on\n",
                err->msg);
        S->eval_dev = -1;
        st = cli_eval_timed_on(S->g, S->ds, S->letterbox, -1, progress, pctx, r, err);
    }
    return st;
}

/* Rewrites S->g with S->work, then evaluates (r != NULL) and/or measures the head SQNR
 * (head_db != NULL; the per-layer errors go to *le when le != NULL). */
static yq_status measure(sens *S, cli_timed_eval *r, double *head_db, yq_layer_err **le, yq_error *err)
{
    yq_unquantize_graph(S->g);
    yq_status st = cli_quantize_graph(S->work, S->g, S->cs, S->letterbox, err);
    if (st == YQ_OK && r) st = eval_on(S, NULL, NULL, r, err);
    if (st == YQ_OK && head_db) {
        yq_layer_err *e = NULL;
        st = yq_compare_layers(S->g, S->inputs, S->n_inputs, &e, err);
        if (st == YQ_OK) {
            *head_db = cli_head_sqnr(S->g, e);
            if (le) *le = e;
            else free(e);
        }
    }
    return st;
}

/* The convs that run in int8 when every layer may (mish/swish convs stay float anyway). */
static int int8_convs(const yq_graph *g, int *ids)
{
    int n = 0;
    for (int i = 1; i < g->n_nodes; i++)
        if (g->nodes[i].op == YQ_OP_CONV && g->q && !g->q[i].float_op) ids[n++] = i;
    return n;
}

static void conv_desc(const yq_node *nd, char *buf, size_t cap)
{
    const yq_conv_p *c = &nd->p.conv;
    snprintf(buf, cap, "conv %dx%d/%d%s", c->size, c->size, c->stride,
             c->groups > 1 && c->groups == nd->out.c ? " dw" : c->groups > 1 ? " grp" : "");
}

/* ---- sensitivity ---- */

typedef struct row {
    int id, layer;
    double sqnr;                  /* the layer's output in the all-int8 graph */
    double map_a, head_a, map_b, head_b;
    double impact;
} row;

/* Most sensitive first: by impact, then by the head SQNR that keeping the layer float
 * buys, then by the layer's own SQNR (lowest first). */
static int by_impact(const void *x, const void *y)
{
    const row *a = x, *b = y;
    if (a->impact != b->impact) return a->impact > b->impact ? -1 : 1;
    if (a->head_b != b->head_b) return a->head_b > b->head_b ? -1 : 1;
    return a->sqnr < b->sqnr ? -1 : a->sqnr > b->sqnr;
}

static int by_head_gain(const void *x, const void *y)
{
    const row *a = x, *b = y;
    if (a->head_b != b->head_b) return a->head_b > b->head_b ? -1 : 1;
    return by_impact(x, y);
}

typedef struct idsq { int id; double db; } idsq;
static int by_db(const void *x, const void *y)
{
    const idsq *a = x, *b = y;
    return a->db < b->db ? -1 : a->db > b->db ? 1 : a->id - b->id;
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

static yq_status write_sens_csv(const char *path, const yq_graph *g, const row *rows, int n, const double *fp,
                                const cli_timed_eval *all8, double head_all, yq_error *err)
{
    cli_out o;
    yq_status st = cli_out_open(&o, path, err);
    if (st != YQ_OK) return st;
    fputs("rank,layer,type,output,sqnr_db_all_int8,a_map,a_drop_pts,a_head_sqnr_db,b_map,b_gain_pts,b_head_sqnr_db,"
          "impact_pts,fp32_map,all_int8_map,all_int8_head_sqnr_db\n", o.f);
    for (int k = 0; k < n; k++) {
        const row *r = &rows[k];
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

static yq_status write_sens_chart(const char *path, const yq_graph *g, const row *rows, int n, const double *fp,
                                  const cli_timed_eval *all8, double head_all, yq_error *err)
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
    cli_quant_opt *qo = malloc(sizeof *qo), *work = malloc(sizeof *work);
    if (!qo || !work) { free(qo); free(work); fprintf(stderr, "yquant: out of memory\n"); return 1; }
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
    yq_layer_err *e_all = NULL;
    cli_timed_eval fp = { 0 }, all8 = { 0 };
    sens S = { 0 };
    row *rows = NULL;
    int *ids = NULL;
    idsq *order = NULL;
    char outbuf[1024], path[1100];
    rc = 1;
    if (cli_load_model(&mo, &g, &err) != YQ_OK || cli_load_dataset(val, ann, labels, &ds, &err) != YQ_OK) goto fail;
    if (letterbox < 0) letterbox = g->letter_box;
    if (!out) {
        const char *b = base_name(g->cfg_path), *dot = strrchr(b, '.');
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
    if (cli_eval_timed(g, ds, letterbox, cli_progress, &bar, &fp, &err) != YQ_OK) goto fail;
    if (cli_calibrate(qo, g, letterbox, &cs, &err) != YQ_OK) goto fail;
    S = (sens){ .q = qo, .g = g, .cs = cs, .ds = ds, .letterbox = letterbox, .work = work, .eval_dev = -1 };
    if (cli_load_inputs(g, qo->calib_dir, sqnr_images, letterbox, &S.inputs, &S.n_inputs, &err) != YQ_OK) goto fail;
    if (!S.n_inputs) { yq_fail(&err, YQ_ERR_IO, "%s: no readable image for the SQNR figures", qo->calib_dir); goto fail; }

    /* Every layer int8: the baseline (b) is measured against, and the per-layer SQNR. */
    double head_all;
    if (make_config(&S, NULL, 0, 0, &err) != YQ_OK || measure(&S, &all8, &head_all, &e_all, &err) != YQ_OK) goto fail;
    ids = malloc(sizeof *ids * (size_t)g->n_nodes);
    order = malloc(sizeof *order * (size_t)g->n_nodes);
    rows = calloc((size_t)g->n_nodes, sizeof *rows);
    if (!ids || !order || !rows) { yq_fail(&err, YQ_ERR_NOMEM, "out of memory"); goto fail; }
    int n = int8_convs(g, ids);
    for (int k = 0; k < n; k++) order[k] = (idsq){ ids[k], e_all[ids[k]].sqnr_db };
    if (max_layers && max_layers < n) {
        qsort(order, (size_t)n, sizeof *order, by_db);       /* the worst by SQNR */
        n = max_layers;
    }
    fprintf(stderr, "sensitivity: %d conv layers, %d validation images, SQNR on %d calibration images; "
                    "FP32 mAP %.2f, all-int8 mAP %.2f, head SQNR %.2f dB\n",
            n, ds->n_images, S.n_inputs, 100 * fp.s[YQ_COCO_AP], 100 * all8.s[YQ_COCO_AP], head_all);
    cli_progress_start(&bar, "layers");
    for (int k = 0; k < n; k++) {
        row *r = &rows[k];
        r->id = order[k].id;
        r->layer = g->nodes[r->id].layer;
        r->sqnr = order[k].db;
        cli_timed_eval a, b;
        if (make_config(&S, &r->layer, 1, 1, &err) != YQ_OK || measure(&S, &a, &r->head_a, NULL, &err) != YQ_OK) goto fail;
        r->map_a = a.s[YQ_COCO_AP];
        yq_coco_dets_free(a.dets);
        cli_progress(&bar, 2 * k + 1, 2 * n);
        if (make_config(&S, &r->layer, 1, 0, &err) != YQ_OK || measure(&S, &b, &r->head_b, NULL, &err) != YQ_OK) goto fail;
        r->map_b = b.s[YQ_COCO_AP];
        yq_coco_dets_free(b.dets);
        r->impact = 100 * (fp.s[YQ_COCO_AP] - r->map_a) + 100 * (r->map_b - all8.s[YQ_COCO_AP]);
        cli_progress(&bar, 2 * k + 2, 2 * n);
    }
    int rank_sqnr = !strcmp(rank, "sqnr");
    qsort(rows, (size_t)n, sizeof *rows, rank_sqnr ? by_head_gain : by_impact);

    printf("\n%s: per-layer sensitivity on %d images (FP32 mAP %.2f, all-int8 mAP %.2f, head SQNR %.2f dB)\n",
           g->cfg_path, ds->n_images, 100 * fp.s[YQ_COCO_AP], 100 * all8.s[YQ_COCO_AP], head_all);
    printf("(a) only this layer int8; (b) only this layer float; impact = drop(a) + gain(b), mAP points; "
           "ranked by %s\n", rank_sqnr ? "the head SQNR gain of (b)" : "impact");
    printf("  %4s %5s  %-14s %-12s %7s | %7s %7s %8s | %7s %7s %8s | %7s\n", "rank", "layer", "type", "output", "SQNR",
           "a mAP", "a drop", "a head", "b mAP", "b gain", "b head", "impact");
    for (int k = 0; k < n; k++) {
        const row *r = &rows[k];
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
    free(rows);
    free(ids);
    free(order);
    free(e_all);
    free(S.inputs);
    free(S.list);
    yq_coco_dets_free(fp.dets);
    yq_coco_dets_free(all8.dets);
    yq_calib_stats_free(cs);
    yq_dataset_free(ds);
    yq_graph_free(g);
early:
    free(qo);
    free(work);
    return rc;
}

/* ---- quantize --max-drop ---- */

static yq_status copy_eval(const cli_timed_eval *a, cli_timed_eval *b, yq_error *err)
{
    *b = *a;
    b->dets = malloc(sizeof *b->dets * (size_t)(a->n ? a->n : 1));
    if (!b->dets) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    memcpy(b->dets, a->dets, sizeof *b->dets * (size_t)a->n);
    return YQ_OK;
}

typedef struct cand { int id, layer; double key; } cand;
static int by_key_desc(const void *x, const void *y)
{
    const cand *a = x, *b = y;
    return a->key > b->key ? -1 : a->key < b->key ? 1 : a->id - b->id;
}

/* A GPU latency cell of the steps table: "" without the column, "-" when not measured. */
static const char *gpu_cell(char *buf, size_t cap, int col, double ms)
{
    if (!col) snprintf(buf, cap, "%s", "");
    else if (ms < 0) snprintf(buf, cap, " %9s", "-");
    else snprintf(buf, cap, " %9.3f", ms);
    return buf;
}

/* --rank tensor: on the all-int8 graph S->g holds, each scale class's error at the detection
 * outputs alone (calib/simulate.c, quant/select.c, as keep_float ranks them), then the
 * float sets keep_float's choice makes with a budget of 1, 2, ... convs: each set that
 * grows is a step, order[step_at[k] .. step_at[k + 1]) the layers it adds. */
static yq_status tensor_steps(sens *S, int *order, int *step_at, int *n_steps, double **e, yq_error *err)
{
    yq_graph *g = S->g;
    int N = g->n_nodes, m = 0, placed = 0;
    *n_steps = 0;
    step_at[0] = 0;
    uint8_t *have = calloc((size_t)N, 1);
    yq_qconfig *qc = malloc(sizeof *qc);          /* (~160 KB: not on the stack) */
    *e = malloc(sizeof **e * (size_t)N);
    yq_sim *sim = NULL;
    yq_status st = have && qc && *e ? YQ_OK : yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    if (st == YQ_OK) st = yq_sim_new(g, S->inputs, S->n_inputs, &sim, err);
    if (st == YQ_OK) st = yq_class_errors(sim, g, NULL, *e, err);
    yq_sim_free(sim);
    int n8 = 0;
    for (int i = 1; i < N; i++) n8 += g->nodes[i].op == YQ_OP_CONV && !g->q[i].float_op;
    for (int b = 1; b <= n8 && st == YQ_OK; b++) {
        *qc = S->q->qc;
        all_int8(qc);
        int cnt = 0;
        if ((st = yq_select_float(g, *e, b, qc, &cnt, err)) != YQ_OK) break;
        if (cnt <= placed) continue;
        /* the convs of this set not in an earlier step (a set that drops one of those is
         * not a step: keep_float's greedy choice can trade a group for a larger one) */
        int add = 0, lost = 0;
        for (int i = 1; i < N; i++) {
            if (g->nodes[i].op != YQ_OP_CONV) continue;
            int in = yq_qc_skip(qc, g->nodes[i].layer);
            if (in && !have[i]) add++;
            if (!in && have[i]) lost = 1;
        }
        if (lost || !add) continue;
        for (int i = 1; i < N; i++)
            if (g->nodes[i].op == YQ_OP_CONV && !have[i] && yq_qc_skip(qc, g->nodes[i].layer)) {
                have[i] = 1;
                order[placed++] = g->nodes[i].layer;
            }
        step_at[++m] = placed;
    }
    *n_steps = m;
    free(have);
    free(qc);
    return st;
}

yq_status cli_max_drop(cli_quant_opt *q, yq_graph *g, const yq_calib_stats *cs, const yq_dataset *ds, int letterbox,
                       const double *fp_stats, double budget_pts, const char *rank, int max_float, cJSON *json,
                       cli_lat *lat, cli_timed_eval *all8, cli_timed_eval *final, int *met, yq_error *err)
{
    memset(all8, 0, sizeof *all8);
    memset(final, 0, sizeof *final);
    *met = 0;
    int mode = !strcmp(rank, "sqnr") ? 1 : !strcmp(rank, "map") ? 2 : !strcmp(rank, "head") ? 0
             : !strcmp(rank, "tensor") ? 3 : -1;
    if (mode < 0) return yq_fail(err, YQ_ERR_INVALID_ARG, "--rank %s: expected head, sqnr, map or tensor", rank);
    cli_quant_opt *work = malloc(sizeof *work);
    cand *c = malloc(sizeof *c * (size_t)g->n_nodes);
    int *ids = malloc(sizeof *ids * (size_t)g->n_nodes), *chosen = calloc((size_t)g->n_nodes, sizeof *chosen);
    /* the steps: step k adds the layers order[step_at[k] .. step_at[k + 1]) */
    int *order = malloc(sizeof *order * (size_t)g->n_nodes), *step_at = malloc(sizeof *step_at * (size_t)(g->n_nodes + 1));
    double *cls_e = NULL;
    yq_layer_err *e_all = NULL;
    /* the mAP on the GPU when the latency is the GPU's: the engine that will run the
     * package (the CPU reference's bytes, float layers included) */
    sens S = { .q = q, .g = g, .cs = cs, .ds = ds, .letterbox = letterbox, .work = work,
               .eval_dev = lat && lat->gpu ? lat->device : -1 };
    cJSON *steps = json ? cJSON_AddArrayToObject(json, "steps") : NULL;
    /* the evaluation's engine time per image: the CPU int8 reference's latency, or on the
     * GPU the upload, forward and download of one image (not the CUDA-graph latency) */
    const char *ms_key = S.eval_dev >= 0 ? "gpu_eval_ms_per_image" : "cpu_latency_ms";
    yq_status st = YQ_OK;
    cli_timed_eval cur = { 0 }, best = { 0 };
    int n_chosen = 0, last_k = -1;      /* last_k: float layers of the rewrite g holds (-1: none yet) */
    if (!work || !c || !ids || !chosen || !order || !step_at) { st = yq_fail(err, YQ_ERR_NOMEM, "out of memory"); goto done; }
    if (mode != 2 && (st = cli_load_inputs(g, q->calib_dir, 8, letterbox, &S.inputs, &S.n_inputs, err)) != YQ_OK) goto done;

    double head_all = 0, fp = fp_stats[YQ_COCO_AP];
    if ((st = make_config(&S, NULL, 0, 0, err)) != YQ_OK) goto done;
    cli_bar bar;
    cli_progress_start(&bar, "all int8");
    yq_unquantize_graph(g);
    if ((st = cli_quantize_graph(work, g, cs, letterbox, err)) != YQ_OK) goto done;
    if ((st = eval_on(&S, cli_progress, &bar, all8, err)) != YQ_OK) goto done;
    last_k = 0;
    /* GPU latencies (ms per forward; < 0: not measured), while the engine is the GPU */
    int gcol = lat && lat->gpu;
    double all8_gpu = -1, cur_gpu = -1, best_gpu = -1, final_gpu = -1, v;
    char gc[32];
    if (gcol && cli_lat_measure(lat, g, &v)) all8_gpu = v;
    if (mode != 2) {
        if ((st = yq_compare_layers(g, S.inputs, S.n_inputs, &e_all, err)) != YQ_OK) goto done;
        head_all = cli_head_sqnr(g, e_all);
    }
    int n = int8_convs(g, ids);
    static const char *why[] = { "the head SQNR gain when kept in float, on 8 calibration images",
                                 "per-layer SQNR in the all-int8 graph, worst first",
                                 "the mAP gain when kept in float, on the validation set",
                                 "the error each int8 tensor's rounding adds at the detection outputs (8 "
                                 "calibration images), worst first; a step keeps a tensor float: its conv and "
                                 "the convs reading it" };
    printf("\naccuracy-aware mode: --max-drop %.2f points of mAP@[.5:.95] (FP32 %.2f); layers ranked by %s\n",
           budget_pts, 100 * fp, why[mode]);
    if (gcol) printf("latency: %s (the ms/img column: %s)\n", lat->label,
                     S.eval_dev >= 0 ? "the GPU evaluation's, per image with upload and download" : "the CPU int8 reference");
    if (S.eval_dev >= 0)
        printf("mAP: on the GPU int8 engine, as the package will run (float layers %s)\n", yq_cuda_float_precision());
    printf("  %4s  %-28s %8s %8s %9s%s\n", "step", "kept in float", "mAP", "drop", "ms/img", gcol ? "    GPU ms" : "");
    printf("  %4d  %-28s %8.2f %8.2f %9.2f%s\n", 0, "(none: every layer int8)", 100 * all8->s[YQ_COCO_AP],
           100 * (fp - all8->s[YQ_COCO_AP]), all8->ms_median, gpu_cell(gc, sizeof gc, gcol, all8_gpu));
    if (steps) {
        cJSON *s = cJSON_CreateObject();
        cJSON_AddNullToObject(s, "layer");
        cJSON_AddNumberToObject(s, "map", all8->s[YQ_COCO_AP]);
        cJSON_AddNumberToObject(s, "drop_pts", 100 * (fp - all8->s[YQ_COCO_AP]));
        cJSON_AddNumberToObject(s, ms_key, all8->ms_median);
        if (all8_gpu >= 0) cJSON_AddNumberToObject(s, "gpu_latency_ms", all8_gpu);
        cJSON_AddItemToArray(steps, s);
    }
    double drop = 100 * (fp - all8->s[YQ_COCO_AP]);
    if (drop <= budget_pts) {
        *met = 1;
        if ((st = copy_eval(all8, final, err)) != YQ_OK) goto done;
    } else {
        /* Rank. */
        if (mode == 0 || mode == 2) {
            cli_progress_start(&bar, "ranking");
            last_k = -1;                 /* the ranking rewrites g */
        }
        for (int k = 0; k < n && mode != 3; k++) {
            c[k] = (cand){ ids[k], g->nodes[ids[k]].layer, 0 };
            if (mode == 1) { c[k].key = -e_all[ids[k]].sqnr_db; continue; }
            if ((st = make_config(&S, &c[k].layer, 1, 0, err)) != YQ_OK) goto done;
            if (mode == 0) {
                double db;
                if ((st = measure(&S, NULL, &db, NULL, err)) != YQ_OK) goto done;
                c[k].key = db - head_all;
            } else {
                cli_timed_eval r;
                if ((st = measure(&S, &r, NULL, NULL, err)) != YQ_OK) goto done;
                c[k].key = r.s[YQ_COCO_AP] - all8->s[YQ_COCO_AP];
                yq_coco_dets_free(r.dets);
            }
            cli_progress(&bar, k + 1, n);
        }
        int n_steps = 0;
        if (mode != 3) {
            qsort(c, (size_t)n, sizeof *c, by_key_desc);
            for (int k = 0; k < n; k++) {
                order[k] = c[k].layer;
                step_at[k] = k;
            }
            n_steps = n;
            step_at[n] = n;
        } else if ((st = tensor_steps(&S, order, step_at, &n_steps, &cls_e, err)) != YQ_OK) {
            goto done;
        }
        /* Float one step more at a time.  The best step so far (lowest drop, fewest float
         * layers) is kept: it is the answer when the budget is never met. */
        int best_k = 0;
        double best_drop = drop;
        for (int k = 0; k < n_steps && !*met && (max_float <= 0 || step_at[k + 1] <= max_float); k++) {
            while (n_chosen < step_at[k + 1]) chosen[n_chosen] = order[n_chosen], n_chosen++;
            if ((st = make_config(&S, chosen, n_chosen, 0, err)) != YQ_OK) goto done;
            if ((st = measure(&S, &cur, NULL, NULL, err)) != YQ_OK) goto done;
            last_k = n_chosen;
            cur_gpu = gcol && cli_lat_measure(lat, g, &v) ? v : -1;
            drop = 100 * (fp - cur.s[YQ_COCO_AP]);
            *met = drop <= budget_pts;
            if (drop < best_drop || *met) {
                yq_coco_dets_free(best.dets);
                best = cur;
                best_gpu = cur_gpu;
                best_drop = drop;
                best_k = n_chosen;
            } else {
                yq_coco_dets_free(cur.dets);
            }
            cur.dets = NULL;
            char t[64];
            if (step_at[k + 1] - step_at[k] == 1) {
                snprintf(t, sizeof t, "+ layer %d (conv)", order[step_at[k]]);
            } else {
                size_t tl = (size_t)snprintf(t, sizeof t, "+ layers");
                for (int j = step_at[k]; j < step_at[k + 1] && tl < sizeof t; j++)
                    tl += (size_t)snprintf(t + tl, sizeof t - tl, "%s%d", j > step_at[k] ? "," : " ", order[j]);
            }
            printf("  %4d  %-28s %8.2f %8.2f %9.2f%s%s\n", k + 1, t, 100 * cur.s[YQ_COCO_AP], drop, cur.ms_median,
                   gpu_cell(gc, sizeof gc, gcol, cur_gpu), *met ? "   within the budget" : "");
            fflush(stdout);
            if (steps) {
                cJSON *s = cJSON_CreateObject();
                cJSON_AddNumberToObject(s, "layer", order[step_at[k]]);
                cJSON *ls = cJSON_AddArrayToObject(s, "layers");
                for (int j = step_at[k]; j < step_at[k + 1]; j++) cJSON_AddItemToArray(ls, cJSON_CreateNumber(order[j]));
                cJSON_AddNumberToObject(s, "map", cur.s[YQ_COCO_AP]);
                cJSON_AddNumberToObject(s, "drop_pts", drop);
                cJSON_AddNumberToObject(s, ms_key, cur.ms_median);
                if (cur_gpu >= 0) cJSON_AddNumberToObject(s, "gpu_latency_ms", cur_gpu);
                cJSON_AddItemToArray(steps, s);
            }
        }
        if (!*met && n_chosen > best_k)
            printf("  budget not met: keeping the best step, %d layer%s in float (drop %.2f)\n", best_k,
                   best_k == 1 ? "" : "s", best_drop);
        n_chosen = best_k;
        if (best_k) {
            *final = best;
            final_gpu = best_gpu;
            best.dets = NULL;
        } else if ((st = copy_eval(all8, final, err)) != YQ_OK) {
            goto done;
        }
    }
    if (n_chosen == 0) final_gpu = all8_gpu;     /* the answer is the all-int8 graph */
    /* The decision, into the caller's qconfig (and so into the package). */
    if ((st = make_config(&S, chosen, n_chosen, 0, err)) != YQ_OK) goto done;
    q->qc = work->qc;
    if (n_chosen != last_k) {            /* g holds the last rewrite: make it this config's */
        yq_unquantize_graph(g);
        if ((st = cli_quantize_graph(q, g, cs, letterbox, err)) != YQ_OK) goto done;
    }
    printf("  float layers: ");
    if (!n_chosen) printf("none");
    for (int k = 0; k < n_chosen; k++) printf("%s%d", k ? "," : "", chosen[k]);
    /* The cost in one engine: the GPU's if it measured the whole run, else the CPU's. */
    int on_gpu = lat && lat->gpu && all8_gpu > 0 && final_gpu > 0;
    double lat_all8 = on_gpu ? all8_gpu : all8->ms_median, lat_final = on_gpu ? final_gpu : final->ms_median;
    double cost = lat_final - lat_all8;
    printf("; latency cost %+.3f ms%s (%+.1f%%, %s); budget %s\n", cost,
           on_gpu && lat->batch > 1 ? " per forward" : "/img", lat_all8 > 0 ? 100 * cost / lat_all8 : 0.0,
           on_gpu ? lat->label : "CPU int8 reference", *met ? "met" : "NOT met");
    if (json) {
        cJSON_AddNumberToObject(json, "budget_pts", budget_pts);
        cJSON_AddStringToObject(json, "rank", rank);
        if (max_float > 0) cJSON_AddNumberToObject(json, "max_float", max_float);
        cJSON_AddBoolToObject(json, "met", *met);
        cJSON_AddStringToObject(json, "eval_engine", S.eval_dev >= 0 ? "cuda-int8" : "cpu-int8-reference");
        if (S.eval_dev >= 0) cJSON_AddStringToObject(json, "gpu_float_precision", yq_cuda_float_precision());
        cJSON *fl = cJSON_AddArrayToObject(json, "float_layers");
        for (int k = 0; k < n_chosen; k++) cJSON_AddItemToArray(fl, cJSON_CreateNumber(chosen[k]));
        cJSON_AddNumberToObject(json, "drop_pts", 100 * (fp - final->s[YQ_COCO_AP]));
        cJSON_AddNumberToObject(json, "latency_ms_all_int8", lat_all8);
        cJSON_AddNumberToObject(json, "latency_ms", lat_final);
        char k2[40];
        snprintf(k2, sizeof k2, "%s_all_int8", ms_key);
        cJSON_AddNumberToObject(json, k2, all8->ms_median);
        cJSON_AddNumberToObject(json, ms_key, final->ms_median);
        if (lat) {
            if (lat->gpu && !on_gpu) {   /* (cannot happen: a GPU failure turns lat to the CPU) */
                lat->gpu = 0;
                snprintf(lat->tag, sizeof lat->tag, "cpu-int8-reference");
                snprintf(lat->label, sizeof lat->label, "CPU int8 reference");
            }
            cli_lat_json(lat, json);
        } else {
            cJSON_AddStringToObject(json, "latency_device", "cpu-int8-reference");
            cJSON_AddStringToObject(json, "latency_engine", "CPU int8 reference");
        }
        /* each step's latency_ms: the engine's */
        cJSON *it;
        cJSON_ArrayForEach(it, steps) {
            cJSON *gl = cJSON_GetObjectItem(it, "gpu_latency_ms"), *cl = cJSON_GetObjectItem(it, "cpu_latency_ms");
            const cJSON *use = on_gpu && gl ? gl : cl;
            if (use) cJSON_AddNumberToObject(it, "latency_ms", use->valuedouble);
        }
    }
done:
    if (st != YQ_OK) {
        yq_coco_dets_free(all8->dets);
        yq_coco_dets_free(final->dets);
        all8->dets = final->dets = NULL;
    }
    yq_coco_dets_free(cur.dets);
    yq_coco_dets_free(best.dets);
    free(e_all);
    free(S.inputs);
    free(S.list);
    free(work);
    free(c);
    free(ids);
    free(chosen);
    free(order);
    free(step_at);
    free(cls_e);
    return st;
}
