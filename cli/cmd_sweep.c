/* yquant sweep MODEL --calib DIR --val DIR (--ann F | --labels D) --grid G: mAP against
 * latency over a grid of qconfigs.  FP32 runs once; calibration runs once per graph state
 * (the equalize key is the only grid key that changes the float weights, so a grid over
 * it keeps two graphs) and comes from the cache when it can; every point is a rewrite of
 * the same graph and one evaluation.  Latency: on the GPU with tuned kernels when there is
 * one (cli/latency.c; the tuning log in the output folder makes every point after the
 * first read the kernels it needs), else the CPU int8 reference engine's per-image time
 * measured during the evaluation.  Writes sweep.csv, pareto.png and report.html. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "cli/internal.h"
#include "cli/report.h"
#include "cli/sweep.h"
#include "cli/sweep_grid.h"
#include "yq_draw.h"
#include "quant/rewrite.h"
#include "runtime/exec_cuda.h"

static const char *help =
    "usage: yquant sweep MODEL --calib DIR --val DIR (--ann F | --labels D) --grid G\n"
    "                    [--out DIR] [--json FILE] [--sqnr-images N] [--device cpu|cuda[:N]]\n"
    "                    [--tune-log F] [--tune-budget S] [--lat-batch N] [--eval-device D] [--resume]\n"
    "                    [qconfig flags]\n"
    "\n"
    "Evaluates one int8 rewrite per combination of the grid's values: COCO mAP on the\n"
    "labelled set (on the GPU int8 engine when the latency engine is the GPU: the CPU\n"
    "reference's bytes in every int8 layer; else the CPU int8 reference) and the latency, on\n"
    "the GPU when there is one: the int8 forward with every conv's kernel tuned for this GPU\n"
    "(the tuning log is reused: the first point tunes, later ones read), median of CUDA-graph\n"
    "replays at --lat-batch; else the CPU int8 reference engine (median over the images of\n"
    "the engine alone, batch 1).  Decoding, resizing and NMS are excluded; the CSV, the report\n"
    "and the chart name the engine.  FP32 is evaluated once; calibration runs once (and is\n"
    "cached).\n"
    "  --grid G          \"key=v1,v2,...; key=...\": any qconfig keys (README: qconfig keys), e.g.\n"
    "                    \"bits=8,6,4; calib=max,percentile:99.99,kl,mse; weights=per_channel,per_tensor;\n"
    "                    head=float,int8\".  Separate values with | when they hold commas\n"
    "                    (skip_layers=|0,105|0).  The qconfig flags set the values the grid leaves.\n"
    "  --out DIR         sweep.csv, pareto.png, report.html (default MODELNAME-sweep); in the CSV\n"
    "                    the settings are as asked, skip_layers and float_convs as run (keep_float's\n"
    "                    choice included), qconfig the effective qconfig\n"
    "  --json FILE       every point as JSON\n"
    "  --sqnr-images N   calibration images for the chosen point's per-layer SQNR (default 8)\n"
    "  --device D        the latency engine: cuda (default when a GPU is present), cuda:N or\n"
    "                    cpu; a GPU that fails falls back to cpu with a warning\n"
    "  --tune-log F      (default DIR/tune.jsonl) the tuning log the GPU latency reuses and\n"
    "                    extends (as yquant tune --log); shapes it lacks are tuned once\n"
    "  --tune-budget S   seconds of tuning per point for the shapes the log lacks (default 60;\n"
    "                    0: no tuning, the log's kernels and the heuristic)\n"
    "  --lat-batch N     the GPU forward's batch (default 1; latency is per forward)\n"
    "  --eval-device D   where the mAP is measured: cpu, or cuda[:N] (default: the latency engine's\n"
    "                    device; either engine computes the same bytes, float layers included)\n"
    "  --resume          reuse the points DIR/points.jsonl already holds for this model, image set,\n"
    "                    latency engine and qconfig (every finished point is appended there at\n"
    "                    once, so a sweep cut short goes on where it stopped); without it the file\n"
    "                    starts empty\n"
    "  --letterbox | --no-letterbox   preprocessing (default: as the cfg says)\n"
    "The chosen point is the best mAP on the Pareto front (mAP up, latency down).\n";

/* ---- points ---- */

/* The qconfig of point p: base, then the grid's values in the order the keys came. */
static yq_status grid_point(const grid *G, int p, const yq_qconfig *base, yq_qconfig *qc, int *idx, yq_error *err)
{
    *qc = *base;
    sweep_grid_index(G, p, idx);
    for (int j = 0; j < G->n; j++) {
        yq_status st = yq_qconfig_set(qc, G->k[j].key, G->k[j].val[idx[j]], "--grid", err);
        if (st != YQ_OK) return st;
    }
    return YQ_OK;
}

/* The qconfig on one line, "a=b; c=d" (malloc'ed; NULL when out of memory). */
static char *qconfig_line(const yq_qconfig *qc)
{
    char *t = yq_qconfig_text(qc);
    if (!t) return NULL;
    size_t m = strlen(t);
    while (m && t[m - 1] == '\n') t[--m] = 0;
    for (char *s = t; *s; s++) if (*s == '\n') *s = ';';
    /* "a = b;c = d" -> "a=b; c=d" */
    char *o = t;
    for (char *s = t; *s; s++) {
        if (*s == ' ' && (s[1] == '=' || (s > t && s[-1] == '='))) continue;
        *o++ = *s;
        if (*s == ';') *o++ = ' ';
    }
    *o = 0;
    return t;
}

/* A point's settings: keep_float as asked, the rest as the rewrite ran (qc: resolved, the
 * measured choices in its skips), and the convs g runs in float and int8. */
static void fill_settings(point *pt, const yq_qconfig *request, const yq_qconfig *qc, const yq_graph *g)
{
    pt->keep_float = request->keep_float;
    pt->bits = qc->bits;
    pt->per_channel = qc->per_channel;
    pt->wscale = qc->wscale;
    pt->round_even = qc->round_even;
    pt->head_float = qc->head_float;
    pt->first_float = qc->first_float;
    pt->equalize = qc->equalize;
    pt->bias_correction = qc->bias_correction;
    yq_calib_method_str(&qc->calib, pt->calib, sizeof pt->calib);
    size_t n = 0;
    pt->skip[0] = 0;
    for (int i = 0; i < qc->n_layers && n < sizeof pt->skip; i++)
        if (yq_qc_skip(qc, i)) n += (size_t)snprintf(pt->skip + n, sizeof pt->skip - n, "%s%d", n ? "," : "", i);
    pt->float_convs = pt->int8_convs = 0;
    for (int i = 1; g->q && i < g->n_nodes; i++)
        if (g->nodes[i].op == YQ_OP_CONV) {
            if (g->q[i].float_op) pt->float_convs++;
            else pt->int8_convs++;
        }
    pt->qtext = qconfig_line(qc);
}

/* One bar over every image of every point. */
typedef struct sweep_bar { cli_bar *bar; int point, points; } sweep_bar;

static void sweep_progress(void *ctx, int done, int total)
{
    sweep_bar *s = ctx;
    long t = (long)total * s->points, d = (long)total * s->point + done;
    if (t > 1 << 30) { d = d * 1000 / t; t = 1000; }    /* cli_progress counts in int */
    cli_progress(s->bar, (int)d, (int)t);
}

static void sweep_warn(void *ctx, const char *msg) { cli_warn(((sweep_bar *)ctx)->bar, msg); }
static void sweep_note(void *ctx, const char *msg)
{
    cli_bar *b = ((sweep_bar *)ctx)->bar;
    if (b->tty) fprintf(stderr, "\r\033[K");
    fprintf(stderr, "%s\n", msg);
    b->last = -1;
}

/* A graph with its calibration: one per value of equalize the grid visits.  g is the
 * model as loaded (the one FP32 ran on) or, with equalize on, its equalized copy (eq, owned). */
typedef struct gstate { yq_graph *g, *eq; yq_calib_stats *cs; } gstate;

/* A graph state ready for a point: calibrated, on *g0 or its equalized copy.  When no
 * point runs without equalization (keep_fp32 0), *g0 itself is replaced by the copy (FP32
 * has run already): one graph in memory, not two. */
static yq_status state_ready(gstate *s, yq_graph **g0, int keep_fp32, const cli_quant_opt *q, int letterbox,
                             cli_bar *bar, yq_error *err)
{
    if (s->cs) return YQ_OK;
    if (bar->tty) fprintf(stderr, "\r\033[K");
    yq_status st = keep_fp32 ? cli_calibrate(q, *g0, letterbox, &s->eq, &s->cs, err)
                             : cli_calibrate_swap(q, g0, letterbox, &s->cs, err);
    s->g = s->eq ? s->eq : *g0;
    bar->last = -1;
    return st;
}

int cmd_sweep(int argc, char **argv)
{
    cli_model_opt mo = { 0 };
    cli_quant_opt *qo = malloc(sizeof *qo), *pq = malloc(sizeof *pq);
    yq_qconfig *ran = malloc(sizeof *ran);      /* a point's qconfig as resolved */
    if (!qo || !pq || !ran) { free(qo); free(pq); free(ran); fprintf(stderr, "yquant: out of memory\n"); return 1; }
    cli_quant_init(qo);
    const char *val = NULL, *ann = NULL, *labels = NULL, *out = NULL, *json = NULL, *grid_text = NULL;
    int letterbox = -1, sqnr_images = 8, rc = 2, resume = 0;
    const char *eval_device = NULL;
    cli_lat lat;
    cli_lat_init(&lat);
    for (int i = 0; i < argc; i++) {
        int r = cli_model_arg(&mo, argc, argv, &i);
        if (!r) r = cli_quant_arg(qo, argc, argv, &i);
        if (!r) r = cli_lat_arg(&lat, argc, argv, &i);
        if (!r && !strcmp(argv[i], "--device") && i + 1 < argc) {
            r = cli_lat_device(&lat, argv[i], argv[i + 1]);
            i++;
        }
        if (r < 0) goto early;
        if (r) continue;
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { printf("%s\n%s", help, cli_quant_help); rc = 0; goto early; }
        else if ((!strcmp(a, "--val") || !strcmp(a, "--images")) && has) val = argv[++i];
        else if (!strcmp(a, "--ann") && has) ann = argv[++i];
        else if (!strcmp(a, "--labels") && has) labels = argv[++i];
        else if (!strcmp(a, "--grid") && has) grid_text = argv[++i];
        else if ((!strcmp(a, "--out") || !strcmp(a, "-o")) && has) out = argv[++i];
        else if (!strcmp(a, "--json") && has) json = argv[++i];
        else if (!strcmp(a, "--sqnr-images") && has) sqnr_images = atoi(argv[++i]);
        else if (!strcmp(a, "--eval-device") && has) eval_device = argv[++i];
        else if (!strcmp(a, "--resume")) resume = 1;
        else if (!strcmp(a, "--letterbox")) letterbox = 1;
        else if (!strcmp(a, "--no-letterbox")) letterbox = 0;
        else if (a[0] == '-') { cli_usage_error("sweep: unknown option or missing value: %s", a); goto early; }
        else if (!mo.model) mo.model = a;
        else { cli_usage_error("sweep: one MODEL only"); goto early; }
    }
    if (!mo.model) { cli_usage_error("sweep: which MODEL?"); goto early; }
    if (!qo->calib_dir) { cli_usage_error("sweep: --calib DIR is required"); goto early; }
    if (!val || !ann == !labels) { cli_usage_error("sweep: --val DIR and one of --ann FILE or --labels DIR are required"); goto early; }
    if (sqnr_images < 1 || sqnr_images > 1024) { cli_usage_error("sweep: --sqnr-images in 1..1024"); goto early; }
    int eval_dev = -2;        /* -2: the latency engine's device */
    if (eval_device) {
        yq_error e0;
        if (yq_device_parse(eval_device, &eval_dev, &e0) != YQ_OK) { cli_usage_error("sweep: --eval-device: %s", e0.msg); goto early; }
    }

    yq_error err;
    grid G;
    gstate gs[2] = { { 0 } };
    yq_graph *g0 = NULL;      /* the model as loaded: FP32 runs on it, and the states calibrate from it */
    yq_dataset *ds = NULL;
    point *pts = NULL;
    yq_layer_err *le = NULL;
    sweep_ctx X = { 0 };
    char outbuf[1024], path[1100], png[1100];
    rc = 1;
    X.fp.dets = NULL;
    if (sweep_grid_parse(&G, grid_text, &err) != YQ_OK) { rc = cli_usage_error("sweep: %s", err.msg); goto done; }
    if (cli_load_model(&mo, &g0, &err) != YQ_OK || cli_load_dataset(val, ann, labels, &ds, &err) != YQ_OK) goto fail;
    if (letterbox < 0) letterbox = g0->letter_box;
    char cfg[sizeof g0->cfg_path];            /* (g0 may be replaced by its equalized copy) */
    snprintf(cfg, sizeof cfg, "%s", g0->cfg_path);
    if (yq_qconfig_validate(&qo->qc, g0, &err) != YQ_OK) goto fail;
    if (!out) {
        const char *b = cli_base_name(g0->cfg_path), *dot = strrchr(b, '.');
        snprintf(outbuf, sizeof outbuf, "%.*s-sweep", dot ? (int)(dot - b) : (int)strlen(b), b);
        out = outbuf;
    }
    {   /* the calibration folder, before anything long runs */
        char **paths;
        int n_cal, sk;
        if (yq_list_images(qo->calib_dir, &paths, &n_cal, &sk, cli_warn, NULL, &err) != YQ_OK) goto fail;
        X.calib_images = n_cal;
        yq_list_images_free(paths, n_cal);
    }
    {
        const char *ins[] = { mo.model, mo.weights, g0->cfg_path, g0->weights_path, qo->calib_dir, val, ann, labels };
        if (cli_check_report(ins, (int)(sizeof ins / sizeof *ins), out, json)) goto done;
    }
    if (cli_make_dirs(out, &err) != YQ_OK) goto fail;
    cli_lat_start(&lat, out);
    X.lat = &lat;
    /* The mAP on the GPU when the latency engine is the GPU (bit-exact int8 layers). */
    if (eval_dev == -2) eval_dev = lat.gpu ? lat.device : -1;
    if (eval_dev >= 0 && !lat.gpu) {
        rc = cli_usage_error("sweep: --eval-device cuda needs the GPU latency engine (the CPU latency is the CPU evaluation's)");
        goto done;
    }
    pts = calloc((size_t)G.points, sizeof *pts);
    if (!pts) { yq_fail(&err, YQ_ERR_NOMEM, "out of memory"); goto fail; }
    /* Every point's qconfig must fit the model before anything runs. */
    int keep_fp32 = 0;        /* a point runs without equalization: the loaded graph stays as it is */
    for (int p = 0; p < G.points; p++) {
        if (grid_point(&G, p, &qo->qc, &pq->qc, pts[p].idx, &err) != YQ_OK || yq_qconfig_validate(&pq->qc, g0, &err) != YQ_OK)
            goto fail;
        keep_fp32 |= !pq->qc.equalize;
        sweep_point_name(&G, pts[p].idx, pts[p].name, sizeof pts[p].name);
    }
    fprintf(stderr, "sweep: %d points over %d images of %s (%s); latency: %s%s%s\n", G.points, ds->n_images, val,
            letterbox ? "letterbox" : "plain resize", lat.label,
            eval_dev >= 0 ? "; mAP on the GPU int8 engine, float layers " : "", eval_dev >= 0 ? yq_cuda_float_precision(0) : "");

    /* FP32 once, on the graph as loaded (before any equalization). */
    cli_bar bar;
    cli_progress_start(&bar, "fp32");
    yq_pipe_io fio = cli_term_io(&bar);
    if (yq_pipe_eval_timed(g0, ds, letterbox, -1, &fio, &X.fp, &err) != YQ_OK) goto fail;
    fprintf(stderr, "fp32: mAP %.2f, mAP50 %.2f, %.2f ms/img (CPU FP32 engine)\n", 100 * X.fp.s[YQ_COCO_AP],
            100 * X.fp.s[YQ_COCO_AP50], X.fp.ms_median);

    /* Every finished point goes to points.jsonl at once (--resume reads it back). */
    snprintf(path, sizeof path, "%s/points.jsonl", out);
    char lat_label0[sizeof lat.label];
    snprintf(lat_label0, sizeof lat_label0, "%s", lat.label);
    run_id rid = { cfg, val, lat_label0, ds->n_images };
    cJSON *saved = resume ? sweep_points_read(path, &rid) : NULL;   /* (before the file is opened for appending) */
    FILE *jf = fopen(path, resume ? "a" : "w");
    if (!jf) fprintf(stderr, "warning: %s: cannot write (finished points are not kept for --resume)\n", path);
    int n_resumed = 0;

    cli_progress_start(&bar, "sweep");
    for (int p = 0; p < G.points; p++) {
        point *pt = &pts[p];
        sweep_bar sb = { &bar, p, G.points };
        *pq = *qo;
        if (grid_point(&G, p, &qo->qc, &pq->qc, pt->idx, &err) != YQ_OK) goto fail_jf;
        char *asked = qconfig_line(&pq->qc);
        if (!asked) { yq_fail(&err, YQ_ERR_NOMEM, "out of memory"); goto fail_jf; }
        if (saved && sweep_point_load(saved, asked, pt)) {
            pt->resumed = 1;
            n_resumed++;
            free(asked);
            if (bar.tty) fprintf(stderr, "\r\033[K");
            fprintf(stderr, "[%*d/%d] %-28s mAP %6.2f  drop %6.2f  (from points.jsonl)\n", G.points >= 100 ? 3 : 2, p + 1,
                    G.points, pt->name, 100 * pt->map, 100 * (X.fp.s[YQ_COCO_AP] - pt->map));
            bar.last = -1;
            sweep_progress(&sb, ds->n_images, ds->n_images);
            continue;
        }
        gstate *s = &gs[pq->qc.equalize ? 1 : 0];
        yq_status pst = state_ready(s, &g0, keep_fp32, pq, letterbox, &bar, &err);
        yq_pipe_eval r;
        if (pst == YQ_OK) {
            /* the point's rewrite and evaluation (a GPU that fails: the CPU from here on) */
            yq_pipe_io io = { NULL, sweep_progress, sweep_warn, sweep_note, &sb };
            yq_pipe_calib c = cli_calib_req(pq);
            pst = yq_pipe_point(&c, &pq->qc, ran, s->g, s->cs, ds, letterbox, &eval_dev, &io, &r, &err);
        }
        if (pst != YQ_OK) { free(asked); goto fail_jf; }
        fill_settings(pt, &pq->qc, ran, s->g);
        pt->map = r.s[YQ_COCO_AP];
        pt->map50 = r.s[YQ_COCO_AP50];
        pt->map75 = r.s[YQ_COCO_AP75];
        pt->eval_gpu = r.gpu;
        pt->cpu_ms = r.gpu ? (double)NAN : r.ms_median;
        pt->cpu_ms_mean = r.gpu ? (double)NAN : r.ms_mean;
        pt->ms_wall = r.ms_wall;
        yq_pipe_eval_free(&r);
        char gms[48] = "", cms[48] = "  (mAP on the GPU)";
        if (cli_lat_measure(&lat, s->g, &pt->gpu_ms)) {
            pt->gpu_ms_mean = lat.last_mean;
            snprintf(gms, sizeof gms, "  %8.3f ms GPU", pt->gpu_ms);
        }
        if (!r.gpu) snprintf(cms, sizeof cms, "  %8.2f ms/img CPU", pt->cpu_ms);
        yq_unquantize_graph(s->g);
        sweep_point_save(jf, &rid, asked, pt);
        free(asked);
        if (bar.tty) fprintf(stderr, "\r\033[K");
        fprintf(stderr, "[%*d/%d] %-28s mAP %6.2f  drop %6.2f%s%s\n", G.points >= 100 ? 3 : 2, p + 1, G.points, pt->name,
                100 * pt->map, 100 * (X.fp.s[YQ_COCO_AP] - pt->map), cms, gms);
        bar.last = -1;
        sweep_progress(&sb, ds->n_images, ds->n_images);
    }
    if (jf) fclose(jf);
    jf = NULL;
    cJSON_Delete(saved);
    saved = NULL;
    if (n_resumed) fprintf(stderr, "sweep: %d of %d points from %s\n", n_resumed, G.points, path);

    /* One engine for every point: the GPU's unless it failed on the way (then the CPU's,
     * measured for every point by the evaluation). */
    for (int p = 0; p < G.points; p++)
        if (!lat.gpu && isnan(pts[p].cpu_ms)) {
            yq_fail(&err, YQ_ERR_CUDA, "the GPU failed during the sweep and point %d was evaluated there, without a CPU "
                    "latency: run the sweep again with --device cpu", p + 1);
            goto fail;
        }
    for (int p = 0; p < G.points; p++) {
        pts[p].ms = lat.gpu ? pts[p].gpu_ms : pts[p].cpu_ms;
        pts[p].ms_mean = lat.gpu ? pts[p].gpu_ms_mean : pts[p].cpu_ms_mean;
    }

    /* The front, and its best-mAP point. */
    X.G = &G;
    X.pts = pts;
    X.np = G.points;
    X.chosen = -1;
    {
        yq_chart_point *cp = calloc((size_t)(G.points > 0 ? G.points : 1), sizeof *cp);
        if (!cp) { yq_fail(&err, YQ_ERR_NOMEM, "out of memory"); goto fail; }
        for (int p = 0; p < G.points; p++) cp[p] = (yq_chart_point){ .x = pts[p].ms, .y = pts[p].map };
        yq_pareto_front(cp, G.points);
        for (int p = 0; p < G.points; p++) {
            pts[p].front = cp[p].front;
            if (cp[p].front && (X.chosen < 0 || pts[p].map > pts[X.chosen].map ||
                                (pts[p].map == pts[X.chosen].map && pts[p].ms < pts[X.chosen].ms)))
                X.chosen = p;
        }
        free(cp);
        if (X.chosen >= 0) pts[X.chosen].chosen = 1;
    }
    /* The chosen point's per-layer SQNR: rewrite it once more. */
    int le_images = 0;
    yq_graph *cg = g0;
    if (X.chosen >= 0) {
        int idx[GRID_KEYS];
        *pq = *qo;
        if (grid_point(&G, X.chosen, &qo->qc, &pq->qc, idx, &err) != YQ_OK) goto fail;
        gstate *s = &gs[pq->qc.equalize ? 1 : 0];
        if (state_ready(s, &g0, keep_fp32, pq, letterbox, &bar, &err) != YQ_OK) goto fail;   /* (every point resumed) */
        cg = s->g;
        yq_unquantize_graph(cg);
        if (cli_quantize_graph(pq, NULL, cg, s->cs, letterbox, &err) != YQ_OK) goto fail;
        if (cli_layer_report(cg, qo->calib_dir, sqnr_images, letterbox, 0, &le, &err) != YQ_OK) goto fail;
        le_images = sqnr_images < X.calib_images ? sqnr_images : X.calib_images;
    }
    X.cfg = cfg;
    X.val_dir = val;
    X.calib_dir = qo->calib_dir;
    X.grid_text = grid_text;
    X.images = X.fp.images;
    X.letterbox = letterbox;
    X.w = 1100;
    X.h = 700;
    X.argc = argc;
    X.argv = argv;

    snprintf(path, sizeof path, "%s/sweep.csv", out);
    if (sweep_write_csv(&X, path, &err) != YQ_OK) goto fail;
    snprintf(png, sizeof png, "%s/pareto.png", out);
    if (sweep_write_chart(&X, png, &err) != YQ_OK) goto fail;
    snprintf(path, sizeof path, "%s/report.html", out);
    if (sweep_write_html(&X, path, png, cg, le, le_images, &err) != YQ_OK) goto fail;

    /* The table. */
    printf("\n%s: %d points on %d images; latency: %s, median ms per %s\n", cfg, G.points, X.images, lat.label,
           lat.gpu && lat.batch > 1 ? "forward" : "image");
    printf("  %4s  %-30s %8s %8s %8s %9s  %s\n", "#", "name", "mAP", "mAP50", "drop", lat.gpu ? "GPU ms" : "CPU ms", "");
    printf("  %4s  %-30s %8.2f %8.2f %8s %9s  (CPU FP32 engine: %.2f ms/img)\n", "", "FP32", 100 * X.fp.s[YQ_COCO_AP],
           100 * X.fp.s[YQ_COCO_AP50], "", "", X.fp.ms_median);
    for (int p = 0; p < G.points; p++)
        printf("  %4d  %-30s %8.2f %8.2f %8.2f %9.3f  %s\n", p + 1, pts[p].name, 100 * pts[p].map, 100 * pts[p].map50,
               100 * (X.fp.s[YQ_COCO_AP] - pts[p].map), pts[p].ms,
               pts[p].chosen ? "front, chosen" : pts[p].front ? "front" : "");
    printf("Pareto front (fastest first):");
    {
        int *ord = malloc(sizeof *ord * (size_t)G.points);
        int m = 0;
        for (int p = 0; ord && p < G.points; p++) if (pts[p].front) ord[m++] = p;
        for (int a = 1; a < m; a++)               /* insertion sort by latency */
            for (int b = a; b > 0 && pts[ord[b]].ms < pts[ord[b - 1]].ms; b--) { int t = ord[b]; ord[b] = ord[b - 1]; ord[b - 1] = t; }
        for (int k = 0; k < m; k++)
            printf("%s %s (mAP %.2f, %.3f ms)", k ? "," : "", pts[ord[k]].name, 100 * pts[ord[k]].map, pts[ord[k]].ms);
        free(ord);
    }
    printf("\nwrote %s/sweep.csv, %s/pareto.png, %s/report.html\n", out, out, out);
    rc = 0;
    if (json) {
        cJSON *root = sweep_points_json(&X);
        rc = cli_write_json(json, root);
        cJSON_Delete(root);
    }
    goto done;
fail_jf:
    if (jf) fclose(jf);
    cJSON_Delete(saved);
fail:
    cli_error(&err);
done:
    free(le);
    if (pts) for (int p = 0; p < G.points; p++) free(pts[p].qtext);
    free(pts);
    free(G.buf);
    yq_coco_dets_free(X.fp.dets);
    yq_dataset_free(ds);
    yq_graph_free(g0);
    for (int k = 0; k < 2; k++) {
        yq_calib_stats_free(gs[k].cs);
        yq_graph_free(gs[k].eq);
    }
early:
    free(qo);
    free(pq);
    free(ran);
    return rc;
}
