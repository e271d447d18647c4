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
#include <time.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "cli/cli.h"
#include "cli/report.h"
#include "cli/sweep_grid.h"
#include "datasets/chart.h"
#include "datasets/labels.h"
#include "quant/rewrite.h"
#include "runtime/exec_cuda.h"
#include "runtime/plan.h"
#include "runtime/postproc.h"
#include "runtime/session.h"

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

typedef struct point {
    int idx[GRID_KEYS];
    char name[128];
    char *qtext;              /* the qconfig as "key = value; ..." on one line */
    char calib[48], skip[512];
    int bits, per_channel, wscale, round_even, head_float, first_float, keep_float, equalize, bias_correction;
    int float_convs, int8_convs;
    double map, map50, map75, ms_wall;
    double ms, ms_mean;       /* the latency engine's (X->lat): per forward; the mean of its runs */
    double cpu_ms, cpu_ms_mean;   /* the CPU int8 reference, per image (always measured) */
    double gpu_ms, gpu_ms_mean;   /* the GPU's (per forward of the latency batch), when measured */
    int front, chosen;
    int eval_gpu;             /* mAP measured on the GPU int8 engine (cpu_ms then NAN) */
    int resumed;              /* read back from points.jsonl (--resume) */
} point;

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

/* The point's settings as asked (before the rewrite: keep_float turns into per-layer skips
 * there), then, after it, what ran in float. */
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

/* ---- points.jsonl: each point's results as soon as it is done (--resume reads them) ---- */

/* What a point's results depend on besides its own qconfig. */
typedef struct run_id { const char *model, *val, *latency; int images; } run_id;

static const char *const point_ints[] = { "bits", "per_channel", "wscale", "round_even", "head_float", "first_float",
                                          "keep_float", "equalize", "bias_correction", "float_convs", "int8_convs",
                                          "eval_gpu" };
static int *point_int(point *p, int k)
{
    int *f[] = { &p->bits, &p->per_channel, &p->wscale, &p->round_even, &p->head_float, &p->first_float,
                 &p->keep_float, &p->equalize, &p->bias_correction, &p->float_convs, &p->int8_convs, &p->eval_gpu };
    return f[k];
}
static const char *const point_dbls[] = { "map", "map50", "map75", "ms_wall", "cpu_ms", "cpu_ms_mean", "gpu_ms",
                                          "gpu_ms_mean" };
static double *point_dbl(point *p, int k)
{
    double *f[] = { &p->map, &p->map50, &p->map75, &p->ms_wall, &p->cpu_ms, &p->cpu_ms_mean, &p->gpu_ms, &p->gpu_ms_mean };
    return f[k];
}
#define N_POINT_INTS (int)(sizeof point_ints / sizeof point_ints[0])
#define N_POINT_DBLS (int)(sizeof point_dbls / sizeof point_dbls[0])

/* One line: the run, the qconfig as asked (the key), and every result of the point. */
static void point_save(FILE *f, const run_id *id, const char *asked, point *p)
{
    if (!f) return;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", id->model);
    cJSON_AddStringToObject(o, "val", id->val);
    cJSON_AddNumberToObject(o, "images", id->images);
    cJSON_AddStringToObject(o, "latency", id->latency);
    cJSON_AddStringToObject(o, "asked", asked);
    cJSON_AddStringToObject(o, "name", p->name);
    cJSON_AddStringToObject(o, "qconfig", p->qtext ? p->qtext : "");
    cJSON_AddStringToObject(o, "calib", p->calib);
    cJSON_AddStringToObject(o, "skip", p->skip);
    for (int k = 0; k < N_POINT_INTS; k++) cJSON_AddNumberToObject(o, point_ints[k], *point_int(p, k));
    for (int k = 0; k < N_POINT_DBLS; k++)
        if (!isnan(*point_dbl(p, k))) cJSON_AddNumberToObject(o, point_dbls[k], *point_dbl(p, k));
    char *t = cJSON_PrintUnformatted(o);
    if (t) {
        fprintf(f, "%s\n", t);
        fflush(f);
    }
    free(t);
    cJSON_Delete(o);
}

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* The lines of this run in points.jsonl (parsed once; --resume looks every point up there). */
static cJSON *points_read(const char *path, const run_id *id)
{
    cJSON *all = cJSON_CreateArray();
    FILE *f = fopen(path, "r");
    if (!all || !f) {
        if (f) fclose(f);
        return all;
    }
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        cJSON *o = cJSON_Parse(line);
        const cJSON *im = cJSON_GetObjectItemCaseSensitive(o, "images");
        if (o && cJSON_IsNumber(im) && im->valueint == id->images && !strcmp(jstr(o, "model"), id->model) &&
            !strcmp(jstr(o, "val"), id->val) && !strcmp(jstr(o, "latency"), id->latency))
            cJSON_AddItemToArray(all, o);
        else
            cJSON_Delete(o);
    }
    free(line);
    fclose(f);
    return all;
}

/* The saved line of this qconfig, if any (the last one wins), into p; 1 if found. */
static int point_load(const cJSON *saved, const char *asked, point *p)
{
    const cJSON *o, *hit = NULL;
    cJSON_ArrayForEach(o, saved)
        if (!strcmp(jstr(o, "asked"), asked)) hit = o;
    if (!hit) return 0;
    free(p->qtext);
    p->qtext = strdup(jstr(hit, "qconfig"));
    snprintf(p->calib, sizeof p->calib, "%s", jstr(hit, "calib"));
    snprintf(p->skip, sizeof p->skip, "%s", jstr(hit, "skip"));
    for (int k = 0; k < N_POINT_INTS; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(hit, point_ints[k]);
        *point_int(p, k) = cJSON_IsNumber(v) ? v->valueint : 0;
    }
    for (int k = 0; k < N_POINT_DBLS; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(hit, point_dbls[k]);
        *point_dbl(p, k) = cJSON_IsNumber(v) ? v->valuedouble : (double)NAN;
    }
    return 1;
}

static const char *wscale_name(int w) { return w == YQ_WSCALE_POWER2 ? "power2" : w == YQ_WSCALE_MSE ? "mse" : "max"; }
static const char *bc_name(int b) { return b == 2 ? "data" : b ? "weights" : "off"; }

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

/* A graph with its calibration: one per value of equalize the grid visits. */
typedef struct gstate { yq_graph *g; yq_calib_stats *cs; } gstate;

/* A graph state ready for a point: its graph (the one FP32 ran on, first) calibrated. */
static yq_status state_ready(gstate *s, yq_graph **spare, const cli_model_opt *mo, const cli_quant_opt *q, int letterbox,
                             cli_bar *bar, yq_error *err)
{
    if (s->cs) return YQ_OK;
    yq_status st = YQ_OK;
    if (!s->g && *spare) {
        s->g = *spare;
        *spare = NULL;
    } else if (!s->g && (st = cli_load_model(mo, &s->g, err)) != YQ_OK) {
        return st;
    }
    if (bar->tty) fprintf(stderr, "\r\033[K");
    st = cli_calibrate(q, s->g, letterbox, &s->cs, err);
    bar->last = -1;
    return st;
}

/* ---- outputs ---- */

typedef struct sweep_ctx {
    const grid *G;
    point *pts;
    int np;
    int chosen;
    yq_pipe_eval fp;
    const cli_lat *lat;       /* the latency engine, as it ended */
    const char *model, *cfg, *val_dir, *calib_dir, *grid_text;
    int images, calib_images, letterbox, w, h, sqnr_images;
    int argc;
    char **argv;
} sweep_ctx;

static int is_std_key(const char *k)
{
    static const char *std[] = { "bits", "weights", "weight_scale", "calib", "skip_layers", "rounding",
                                 "head", "first", "keep_float", "equalize", "bias_correction" };
    for (size_t i = 0; i < sizeof std / sizeof *std; i++) if (!strcmp(k, std[i])) return 1;
    return 0;
}

static yq_status write_csv(const sweep_ctx *X, const char *path, yq_error *err)
{
    cli_out o;
    yq_status st = cli_out_open(&o, path, err);
    if (st != YQ_OK) return st;
    FILE *f = o.f;
    fputs("point,name,bits,weights,weight_scale,calib,rounding,head,first,keep_float,equalize,bias_correction,skip_layers,", f);
    for (int j = 0; j < X->G->n; j++)
        if (!is_std_key(X->G->k[j].key)) cli_csv_field(f, X->G->k[j].key, ',');
    fputs("float_convs,int8_convs,map,map50,map75,drop_pts,drop50_pts,latency_ms,latency_mean_ms,latency_device,"
          "latency_engine,wall_ms_per_image,cpu_latency_ms,eval_engine,fp32_map,fp32_map50,fp32_latency_ms,images,calib_images,"
          "pareto,chosen,qconfig\n", f);
    for (int i = 0; i < X->np; i++) {
        const point *p = &X->pts[i];
        fprintf(f, "%d,", i + 1);
        cli_csv_field(f, p->name, ',');
        fprintf(f, "%d,%s,%s,", p->bits, p->per_channel ? "per_channel" : "per_tensor", wscale_name(p->wscale));
        cli_csv_field(f, p->calib, ',');
        fprintf(f, "%s,%s,%s,%d,%s,%s,", p->round_even ? "even" : "nearest", p->head_float ? "float" : "int8",
                p->first_float ? "float" : "int8", p->keep_float, p->equalize ? "on" : "off", bc_name(p->bias_correction));
        cli_csv_field(f, p->skip, ',');
        for (int j = 0; j < X->G->n; j++)
            if (!is_std_key(X->G->k[j].key)) cli_csv_field(f, X->G->k[j].val[p->idx[j]], ',');
        fprintf(f, "%d,%d,%.6f,%.6f,%.6f,%.4f,%.4f,%.4f,%.4f,%s,", p->float_convs, p->int8_convs, p->map, p->map50,
                p->map75, 100 * (X->fp.s[YQ_COCO_AP] - p->map), 100 * (X->fp.s[YQ_COCO_AP50] - p->map50), p->ms,
                p->ms_mean, X->lat->tag);
        cli_csv_field(f, X->lat->label, ',');
        fprintf(f, "%.3f,", p->ms_wall);
        if (!isnan(p->cpu_ms)) fprintf(f, "%.3f", p->cpu_ms);   /* (empty: mAP measured on the GPU) */
        fprintf(f, ",%s,%.6f,%.6f,%.3f,%d,%d,%d,%d,", p->eval_gpu ? "cuda-int8" : "cpu-int8-reference",
                X->fp.s[YQ_COCO_AP], X->fp.s[YQ_COCO_AP50], X->fp.ms_median, X->images, X->calib_images, p->front,
                p->chosen);
        cli_csv_field(f, p->qtext ? p->qtext : "", '\n');
    }
    return cli_out_close(&o, err);
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

static yq_status write_chart(const sweep_ctx *X, const char *path, yq_error *err)
{
    yq_chart_point *cp = calloc((size_t)X->np, sizeof *cp);
    if (!cp) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    double mean = 0;
    for (int i = 0; i < X->np; i++) {
        cp[i] = (yq_chart_point){ X->pts[i].ms, 100 * X->pts[i].map, X->pts[i].name, X->pts[i].front, X->pts[i].chosen };
        mean += X->pts[i].ms / (double)X->np;
    }
    char title[256], ref[64], xl[256];
    char model[128];
    snprintf(model, sizeof model, "%s", base_name(X->cfg));
    char *dot = strrchr(model, '.');
    if (dot) *dot = 0;
    snprintf(title, sizeof title, "%s: mAP@[.5:.95] vs latency, %d points, %d images", model, X->np, X->images);
    snprintf(ref, sizeof ref, "FP32 %.2f", 100 * X->fp.s[YQ_COCO_AP]);
    if (X->lat->gpu && X->lat->batch > 1) snprintf(xl, sizeof xl, "ms per forward, %s", X->lat->label);
    else snprintf(xl, sizeof xl, "ms per image, %s", X->lat->label);
    yq_scatter_opt o = { .title = title, .xlabel = xl, .ylabel = "mAP@[.5:.95] (points)", .has_ref = 1,
                         .ref_y = 100 * X->fp.s[YQ_COCO_AP], .ref_label = ref, .min_xspan = 0.1 * mean };
    yq_canvas cv;
    yq_status st = yq_chart_scatter(cp, X->np, &o, X->w, X->h, &cv, err);
    free(cp);
    if (st != YQ_OK) return st;
    st = yq_png_write(path, &cv, err);
    yq_canvas_free(&cv);
    return st;
}

static yq_status write_html(const sweep_ctx *X, const char *path, const char *png, const yq_graph *g,
                            const yq_layer_err *le, int le_images, yq_error *err)
{
    cli_out o;
    yq_status st = cli_out_open(&o, path, err);
    if (st != YQ_OK) return st;
    FILE *f = o.f;
    char title[600];
    snprintf(title, sizeof title, "yquant sweep: %s", base_name(X->cfg));
    cli_html_head(f, title);
    fputs("<h1>", f);
    cli_html_text(f, title);
    fputs("</h1>\n<ul>\n<li>model: <code>", f);
    cli_html_text(f, X->cfg);
    fprintf(f, "</code>, input %dx%d, %s</li>\n", g->nodes[0].out.w, g->nodes[0].out.h, X->letterbox ? "letterbox" : "plain resize");
    fprintf(f, "<li>validation: %d images from <code>", X->images);
    cli_html_text(f, X->val_dir);
    fprintf(f, "</code>; calibration: %d images from <code>", X->calib_images);
    cli_html_text(f, X->calib_dir);
    fputs("</code></li>\n<li>grid: <code>", f);
    cli_html_text(f, X->grid_text ? X->grid_text : "");
    fprintf(f, "</code> (%d points)</li>\n", X->np);
    fprintf(f, "<li>FP32: mAP@[.5:.95] %.2f, mAP@.5 %.2f, %.2f ms/image (CPU FP32 engine)</li>\n",
            100 * X->fp.s[YQ_COCO_AP], 100 * X->fp.s[YQ_COCO_AP50], X->fp.ms_median);
    const point *c = X->chosen >= 0 ? &X->pts[X->chosen] : NULL;
    if (c) {
        fputs("<li>chosen point (the best mAP on the Pareto front): <b>", f);
        cli_html_text(f, c->name);
        fprintf(f, "</b>, mAP@[.5:.95] %.2f (drop %.2f points), %.3f ms (", 100 * c->map,
                100 * (X->fp.s[YQ_COCO_AP] - c->map), c->ms);
        cli_html_text(f, X->lat->label);
        fputs(")</li>\n", f);
    }
    fputs("</ul>\n<h2>mAP against latency</h2>\n", f);
    if ((st = cli_html_png(f, png, "Pareto chart: mAP@[.5:.95] against latency", err)) != YQ_OK) { cli_out_abort(&o); return st; }
    const char *obt = getenv("OPENBLAS_NUM_THREADS");
    const cli_lat *L = X->lat;
    fputs("<p class=\"muted\">Latency (<b>", f);
    cli_html_text(f, L->label);
    fputs("</b>", f);
    if (L->gpu) {
        fputs(", ", f);
        cli_html_text(f, L->gpu_desc);
        fprintf(f, "): the median of %d %s of the int8 forward at batch %d (quantizing the input and every layer, "
                   "the input already on the device), ", L->runs, L->graph ? "CUDA-graph replays" : "eager launches",
                L->batch);
        if (L->budget_s > 0)
            fprintf(f, "every int8 conv running the fastest kernel configuration measured for its shape on this GPU "
                       "(tuning log <code>");
        else
            fprintf(f, "every int8 conv running the fastest kernel configuration the tuning log holds for its shape "
                       "(<code>");
        cli_html_text(f, L->tune_log ? L->tune_log : "");
        fprintf(f, "</code>; %d shapes tuned in this run, %.1f s)", L->shapes_tuned, L->tune_s);
        fprintf(f, "; the CPU int8 reference engine's time per image is in sweep.csv (cpu_latency_ms)");
    } else {
        fprintf(f, "): the median over the validation images of the int8 CPU reference engine alone (batch 1; this "
                   "host: %ld CPUs online, OPENBLAS_NUM_THREADS ", sysconf(_SC_NPROCESSORS_ONLN));
        cli_html_text(f, obt ? obt : "unset");
        fputs(")", f);
        if (L->why_cpu[0] && strcmp(L->why_cpu, "--device cpu")) {
            fputs("; no GPU latency: ", f);
            cli_html_text(f, L->why_cpu);
        }
    }
    fputs("; decoding, resizing and NMS are excluded. Red: the Pareto "
          "front (no other point is both faster and more accurate), joined left to right; green ring: the chosen "
          "point; dashed: FP32. The x axis spans at least 10% of the mean latency, so that timing noise does not "
          "fill the chart. With few validation images the mAP figures are noisy.</p>\n", f);

    fputs("<h2>Points</h2>\n<table class=\"points\">\n<tr><th>#</th><th>name</th>", f);
    for (int j = 0; j < X->G->n; j++) {
        fputs("<th>", f);
        cli_html_text(f, X->G->k[j].key);
        fputs("</th>", f);
    }
    fprintf(f, "<th>float convs</th><th>mAP</th><th>mAP@.5</th><th>drop (pts)</th><th>%s ms</th><th>front</th></tr>\n",
            X->lat->gpu ? "GPU" : "CPU");
    for (int i = 0; i < X->np; i++) {
        const point *p = &X->pts[i];
        fprintf(f, "<tr%s><td class=\"n\">%d</td><td>", p->chosen ? " class=\"chosen\"" : p->front ? " class=\"front\"" : "", i + 1);
        cli_html_text(f, p->name);
        fputs("</td>", f);
        for (int j = 0; j < X->G->n; j++) {
            fputs("<td>", f);
            cli_html_text(f, X->G->k[j].val[p->idx[j]]);
            fputs("</td>", f);
        }
        fprintf(f, "<td class=\"n\">%d</td><td class=\"n\">%.2f</td><td class=\"n\">%.2f</td><td class=\"n\">%.2f</td>"
                   "<td class=\"n\">%.3f</td><td>%s</td></tr>\n",
                p->float_convs, 100 * p->map, 100 * p->map50, 100 * (X->fp.s[YQ_COCO_AP] - p->map), p->ms,
                p->chosen ? "chosen" : p->front ? "yes" : "");
    }
    fputs("</table>\n", f);
    if (c && le) {
        fputs("<h2>Per-layer SQNR of the chosen point (", f);
        cli_html_text(f, c->name);
        fprintf(f, ")</h2>\n<p class=\"muted\">Every layer's int8 output, dequantized, against the FP32 tensor on %d "
                   "calibration images: SQNR = 10 log10(&Sigma;f&sup2; / &Sigma;(f&minus;q)&sup2;). Float layers show the "
                   "error they inherit. qconfig: <code>", le_images);
        cli_html_text(f, c->qtext);
        fputs("</code></p>\n", f);
        cli_html_sqnr_table(f, g, le);
    }
    fputs("<p class=\"muted\">", f);
    fputs("command: <code>yquant sweep", f);
    for (int i = 0; i < X->argc; i++) {
        fputc(' ', f);
        cli_html_text(f, X->argv[i]);
    }
    fputs("</code>; yquant " YQ_VERSION "</p>\n", f);
    cli_html_tail(f);
    return cli_out_close(&o, err);
}

static cJSON *points_json(const sweep_ctx *X)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", X->cfg);
    cJSON_AddStringToObject(root, "grid", X->grid_text ? X->grid_text : "");
    cJSON_AddNumberToObject(root, "images", X->images);
    cli_lat_json(X->lat, root);
    cJSON *fp = cJSON_AddObjectToObject(root, "fp32");
    cJSON_AddNumberToObject(fp, "map", X->fp.s[YQ_COCO_AP]);
    cJSON_AddNumberToObject(fp, "map50", X->fp.s[YQ_COCO_AP50]);
    cJSON_AddNumberToObject(fp, "latency_ms", X->fp.ms_median);
    cJSON_AddStringToObject(fp, "latency_engine", "CPU FP32 (OpenBLAS)");
    cJSON_AddNumberToObject(root, "chosen", X->chosen + 1);
    int any_gpu = 0;
    for (int i = 0; i < X->np; i++) any_gpu |= X->pts[i].eval_gpu;
    if (any_gpu) cJSON_AddStringToObject(root, "gpu_float_precision", yq_cuda_float_precision());
    cJSON *arr = cJSON_AddArrayToObject(root, "points");
    for (int i = 0; i < X->np; i++) {
        const point *p = &X->pts[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "point", (double)(i + 1));
        cJSON_AddStringToObject(o, "name", p->name);
        cJSON *s = cJSON_AddObjectToObject(o, "grid");
        for (int j = 0; j < X->G->n; j++) cJSON_AddStringToObject(s, X->G->k[j].key, X->G->k[j].val[p->idx[j]]);
        cJSON_AddStringToObject(o, "qconfig", p->qtext ? p->qtext : "");
        cJSON_AddNumberToObject(o, "map", p->map);
        cJSON_AddNumberToObject(o, "map50", p->map50);
        cJSON_AddNumberToObject(o, "drop_pts", 100 * (X->fp.s[YQ_COCO_AP] - p->map));
        cJSON_AddNumberToObject(o, "latency_ms", p->ms);
        if (!isnan(p->cpu_ms)) cJSON_AddNumberToObject(o, "cpu_latency_ms", p->cpu_ms);
        cJSON_AddStringToObject(o, "eval_engine", p->eval_gpu ? "cuda-int8" : "cpu-int8-reference");
        cJSON_AddBoolToObject(o, "resumed", p->resumed);
        cJSON_AddNumberToObject(o, "float_convs", p->float_convs);
        cJSON_AddBoolToObject(o, "pareto", p->front);
        cJSON_AddBoolToObject(o, "chosen", p->chosen);
        cJSON_AddItemToArray(arr, o);
    }
    return root;
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
    yq_graph *spare = NULL;
    yq_dataset *ds = NULL;
    point *pts = NULL;
    yq_layer_err *le = NULL;
    sweep_ctx X = { 0 };
    char outbuf[1024], path[1100], png[1100];
    rc = 1;
    X.fp.dets = NULL;
    if (sweep_grid_parse(&G, grid_text, &err) != YQ_OK) { rc = cli_usage_error("sweep: %s", err.msg); goto done; }
    if (cli_load_model(&mo, &spare, &err) != YQ_OK || cli_load_dataset(val, ann, labels, &ds, &err) != YQ_OK) goto fail;
    yq_graph *g0 = spare;     /* borrowed from then on: a graph state takes it over */
    if (letterbox < 0) letterbox = g0->letter_box;
    if (yq_qconfig_validate(&qo->qc, g0, &err) != YQ_OK) goto fail;
    if (!out) {
        const char *b = base_name(g0->cfg_path), *dot = strrchr(b, '.');
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
    for (int p = 0; p < G.points; p++) {
        if (sweep_grid_point(&G, p, &qo->qc, &pq->qc, pts[p].idx, &err) != YQ_OK || yq_qconfig_validate(&pq->qc, g0, &err) != YQ_OK)
            goto fail;
        sweep_point_name(&G, pts[p].idx, pts[p].name, sizeof pts[p].name);
    }
    fprintf(stderr, "sweep: %d points over %d images of %s (%s); latency: %s%s%s\n", G.points, ds->n_images, val,
            letterbox ? "letterbox" : "plain resize", lat.label,
            eval_dev >= 0 ? "; mAP on the GPU int8 engine, float layers " : "", eval_dev >= 0 ? yq_cuda_float_precision() : "");

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
    run_id rid = { g0->cfg_path, val, lat_label0, ds->n_images };
    cJSON *saved = resume ? points_read(path, &rid) : NULL;   /* (before the file is opened for appending) */
    FILE *jf = fopen(path, resume ? "a" : "w");
    if (!jf) fprintf(stderr, "warning: %s: cannot write (finished points are not kept for --resume)\n", path);
    int n_resumed = 0;

    cli_progress_start(&bar, "sweep");
    for (int p = 0; p < G.points; p++) {
        point *pt = &pts[p];
        sweep_bar sb = { &bar, p, G.points };
        *pq = *qo;
        if (sweep_grid_point(&G, p, &qo->qc, &pq->qc, pt->idx, &err) != YQ_OK) goto fail_jf;
        char *asked = qconfig_line(&pq->qc);
        if (!asked) { yq_fail(&err, YQ_ERR_NOMEM, "out of memory"); goto fail_jf; }
        if (saved && point_load(saved, asked, pt)) {
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
        yq_status pst = state_ready(s, &spare, &mo, pq, letterbox, &bar, &err);
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
        point_save(jf, &rid, asked, pt);
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
        if (sweep_grid_point(&G, X.chosen, &qo->qc, &pq->qc, idx, &err) != YQ_OK) goto fail;
        gstate *s = &gs[pq->qc.equalize ? 1 : 0];
        if (state_ready(s, &spare, &mo, pq, letterbox, &bar, &err) != YQ_OK) goto fail;   /* (every point resumed) */
        cg = s->g;
        yq_unquantize_graph(cg);
        if (cli_quantize_graph(pq, NULL, cg, s->cs, letterbox, &err) != YQ_OK) goto fail;
        if (cli_layer_report(cg, qo->calib_dir, sqnr_images, letterbox, 0, &le, &err) != YQ_OK) goto fail;
        le_images = sqnr_images < X.calib_images ? sqnr_images : X.calib_images;
    }
    X.cfg = g0->cfg_path;
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
    if (write_csv(&X, path, &err) != YQ_OK) goto fail;
    snprintf(png, sizeof png, "%s/pareto.png", out);
    if (write_chart(&X, png, &err) != YQ_OK) goto fail;
    snprintf(path, sizeof path, "%s/report.html", out);
    if (write_html(&X, path, png, cg, le, le_images, &err) != YQ_OK) goto fail;

    /* The table. */
    printf("\n%s: %d points on %d images; latency: %s, median ms per %s\n", g0->cfg_path, G.points, X.images, lat.label,
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
        cJSON *root = points_json(&X);
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
    yq_graph_free(spare);
    for (int k = 0; k < 2; k++) {
        yq_calib_stats_free(gs[k].cs);
        yq_graph_free(gs[k].g);
    }
early:
    free(qo);
    free(pq);
    free(ran);
    return rc;
}
