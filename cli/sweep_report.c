/* The sweep's reports (cli/sweep.h): sweep.csv, pareto.png, report.html and the JSON. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli/report.h"
#include "cli/sweep.h"
#include "yq_draw.h"

const char *const sweep_wscale_names[3] = { "max", "power2", "mse" };

/* The per-layer SQNR rows (yq_quantizer_layer_errors') as a table with a bar per layer,
 * in network order; the heads' inputs marked. */
static void cli_html_sqnr_table(FILE *f, const yq_layer_error *e, int n)
{
    fputs("<table class=\"sqnr\">\n<tr><th>layer</th><th>type</th><th>output</th><th>runs in</th>"
          "<th>SQNR dB</th><th>max |err|</th><th>SQNR (bar: 0 to 60 dB)</th></tr>\n", f);
    for (int i = 0; i < n; i++) {
        const yq_layer_error *r = &e[i];
        double db = r->sqnr_db;
        double pct = fmin(fmax(db / 60.0, 0), 1) * 100;
        const char *col = db < 20 ? "#d62728" : db < 30 ? "#ff7f0e" : "#2ca02c";
        const char *runs = !strcmp(r->dtype, "float") ? "float" : !strcmp(r->dtype, "i8>f") ? "int8, float out" : "int8";
        /* no error at all (a float layer before any int8 one): "exact", not the 200 dB that
         * stands for it */
        char dbs[32];
        if (r->max_abs == 0) snprintf(dbs, sizeof dbs, "exact");
        else snprintf(dbs, sizeof dbs, "%.2f", db);
        fprintf(f, "<tr><td class=\"n\">%d</td><td>%s%s</td><td>%dx%dx%d</td><td>%s</td><td class=\"n\">%s</td>"
                   "<td class=\"n\">%.4g</td><td class=\"bar\"><div class=\"bar\" style=\"width:%.1f%%;background:%s\">"
                   "</div></td></tr>\n",
                r->layer, r->type, r->feeds_head ? " (head)" : "", r->out_w, r->out_h, r->out_c, runs, dbs, r->max_abs,
                pct, col);
    }
    fputs("</table>\n", f);
}

static const char *wscale_name(int w) { return w >= 0 && w < 3 ? sweep_wscale_names[w] : "max"; }
static const char *bc_name(int b) { return b == 2 ? "data" : b ? "weights" : "off"; }

static int is_std_key(const char *k)
{
    static const char *std[] = { "bits", "weights", "weight_scale", "calib", "skip_layers", "rounding",
                                 "head", "first", "keep_float", "equalize", "bias_correction" };
    for (size_t i = 0; i < sizeof std / sizeof *std; i++) if (!strcmp(k, std[i])) return 1;
    return 0;
}

yq_status sweep_write_csv(const sweep_ctx *X, const char *path, yq_error *err)
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
                p->map75, 100 * (X->fp.map - p->map), 100 * (X->fp.map50 - p->map50), p->ms,
                p->ms_mean, X->lat->tag);
        cli_csv_field(f, X->lat->label, ',');
        fprintf(f, "%.3f,", p->ms_wall);
        if (!isnan(p->cpu_ms)) fprintf(f, "%.3f", p->cpu_ms);   /* (empty: mAP measured on the GPU) */
        fprintf(f, ",%s,%.6f,%.6f,%.3f,%d,%d,%d,%d,", p->eval_gpu ? "cuda-int8" : "cpu-int8",
                X->fp.map, X->fp.map50, X->fp.ms_engine, X->images, X->calib_images, p->front,
                p->chosen);
        cli_csv_field(f, p->qtext ? p->qtext : "", '\n');
    }
    return cli_out_close(&o, err);
}

yq_status sweep_write_chart(const sweep_ctx *X, const char *path, yq_error *err)
{
    yq_chart_point *cp = calloc((size_t)X->np, sizeof *cp);
    if (!cp) return cli_fail(err, YQ_ERR_NOMEM, "out of memory");
    double mean = 0;
    for (int i = 0; i < X->np; i++) {
        cp[i] = (yq_chart_point){ X->pts[i].ms, 100 * X->pts[i].map, X->pts[i].name, X->pts[i].front, X->pts[i].chosen };
        mean += X->pts[i].ms / (double)X->np;
    }
    char title[256], ref[64], xl[256];
    char model[128];
    snprintf(model, sizeof model, "%s", cli_base_name(X->cfg));
    char *dot = strrchr(model, '.');
    if (dot) *dot = 0;
    snprintf(title, sizeof title, "%s: mAP@[.5:.95] vs latency, %d points, %d images", model, X->np, X->images);
    snprintf(ref, sizeof ref, "FP32 %.2f", 100 * X->fp.map);
    if (X->lat->gpu && X->lat->batch > 1) snprintf(xl, sizeof xl, "ms per forward, %s", X->lat->label);
    else snprintf(xl, sizeof xl, "ms per image, %s", X->lat->label);
    yq_scatter_opt o = { .title = title, .xlabel = xl, .ylabel = "mAP@[.5:.95] (points)", .has_ref = 1,
                         .ref_y = 100 * X->fp.map, .ref_label = ref, .min_xspan = 0.1 * mean };
    yq_canvas cv;
    yq_status st = yq_chart_scatter(cp, X->np, &o, X->w, X->h, &cv, err);
    free(cp);
    if (st != YQ_OK) return st;
    st = yq_png_write(path, &cv, err);
    yq_canvas_free(&cv);
    return st;
}

yq_status sweep_write_html(const sweep_ctx *X, const char *path, const char *png, const yq_layer_error *le, int n_le,
                           int le_images, yq_error *err)
{
    cli_out o;
    yq_status st = cli_out_open(&o, path, err);
    if (st != YQ_OK) return st;
    FILE *f = o.f;
    char title[600];
    snprintf(title, sizeof title, "yquant sweep: %s", cli_base_name(X->cfg));
    cli_html_head(f, title);
    fputs("<h1>", f);
    cli_html_text(f, title);
    fputs("</h1>\n<ul>\n<li>model: <code>", f);
    cli_html_text(f, X->cfg);
    fprintf(f, "</code>, input %dx%d, %s</li>\n", X->in_w, X->in_h, X->letterbox ? "letterbox" : "plain resize");
    fprintf(f, "<li>validation: %d images from <code>", X->images);
    cli_html_text(f, X->val_dir);
    fprintf(f, "</code>; calibration: %d images from <code>", X->calib_images);
    cli_html_text(f, X->calib_dir);
    fputs("</code></li>\n<li>grid: <code>", f);
    cli_html_text(f, X->grid_text ? X->grid_text : "");
    fprintf(f, "</code> (%d points)</li>\n", X->np);
    fprintf(f, "<li>FP32: mAP@[.5:.95] %.2f, mAP@.5 %.2f, %.2f ms/image (CPU FP32 engine)</li>\n",
            100 * X->fp.map, 100 * X->fp.map50, X->fp.ms_engine);
    const point *c = X->chosen >= 0 ? &X->pts[X->chosen] : NULL;
    if (c) {
        fputs("<li>chosen point (the best mAP on the Pareto front): <b>", f);
        cli_html_text(f, c->name);
        fprintf(f, "</b>, mAP@[.5:.95] %.2f (drop %.2f points), %.3f ms (", 100 * c->map,
                100 * (X->fp.map - c->map), c->ms);
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
        fprintf(f, "; the CPU int8 engine's time per image is in sweep.csv (cpu_latency_ms)");
    } else {
        fprintf(f, "): the median over the validation images of the CPU int8 engine alone (%s, batch 1; this "
                   "host: %ld CPUs online, OPENBLAS_NUM_THREADS ", yq_cpu_int8_engine(), sysconf(_SC_NPROCESSORS_ONLN));
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
                p->float_convs, 100 * p->map, 100 * p->map50, 100 * (X->fp.map - p->map), p->ms,
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
        cli_html_sqnr_table(f, le, n_le);
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

cJSON *sweep_points_json(const sweep_ctx *X)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", X->cfg);
    cJSON_AddStringToObject(root, "grid", X->grid_text ? X->grid_text : "");
    cJSON_AddNumberToObject(root, "images", X->images);
    cli_lat_json(X->lat, root);
    cJSON *fp = cJSON_AddObjectToObject(root, "fp32");
    cJSON_AddNumberToObject(fp, "map", X->fp.map);
    cJSON_AddNumberToObject(fp, "map50", X->fp.map50);
    cJSON_AddNumberToObject(fp, "latency_ms", X->fp.ms_engine);
    cJSON_AddStringToObject(fp, "latency_engine", "CPU FP32 (OpenBLAS)");
    cJSON_AddNumberToObject(root, "chosen", X->chosen + 1);
    int any_gpu = 0;
    for (int i = 0; i < X->np; i++) any_gpu |= X->pts[i].eval_gpu;
    if (any_gpu) cJSON_AddStringToObject(root, "gpu_float_precision", CLI_GPU_FLOAT);
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
        cJSON_AddNumberToObject(o, "drop_pts", 100 * (X->fp.map - p->map));
        cJSON_AddNumberToObject(o, "latency_ms", p->ms);
        if (!isnan(p->cpu_ms)) cJSON_AddNumberToObject(o, "cpu_latency_ms", p->cpu_ms);
        cJSON_AddStringToObject(o, "eval_engine", p->eval_gpu ? "cuda-int8" : "cpu-int8");
        cJSON_AddBoolToObject(o, "resumed", p->resumed);
        cJSON_AddNumberToObject(o, "float_convs", p->float_convs);
        cJSON_AddBoolToObject(o, "pareto", p->front);
        cJSON_AddBoolToObject(o, "chosen", p->chosen);
        cJSON_AddItemToArray(arr, o);
    }
    return root;
}

