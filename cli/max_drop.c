/* quantize --max-drop on the terminal and in --json: the search is the library's
 * (include/yq_quant.h, yq_quantizer_max_drop); this file prints its steps and writes them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/max_drop.h"
#include "cli/par.h"

typedef struct printer {
    double budget_pts, fp;
    int mode, gcol;               /* the ranking; a GPU latency column */
    cli_lat *lat;
    const char *ms_key;           /* the steps' engine time key in --json */
    cJSON *steps;                 /* NULL: no --json */
} printer;

/* A GPU latency cell of the steps table: "" without the column, "-" when not measured. */
static const char *gpu_cell(char *buf, size_t cap, int col, double ms)
{
    if (!col) snprintf(buf, cap, "%s", "");
    else if (ms < 0) snprintf(buf, cap, " %9s", "-");
    else snprintf(buf, cap, " %9.3f", ms);
    return buf;
}

static int lat_measure(void *ctx, const yq_model *m, double *ms)
{
    const printer *p = ctx;
    return cli_lat_measure(p->lat, m, ms);
}

static void step_row(void *ctx, const yq_max_drop_step *s)
{
    const printer *p = ctx;
    char gc[32], t[64];
    if (s->k == 0) {
        static const char *why[] = { "the head SQNR gain when kept in float, on 8 calibration images",
                                     "per-layer SQNR in the all-int8 graph, worst first",
                                     "the mAP gain when kept in float, on the validation set",
                                     "the error each int8 tensor's rounding adds at the detection outputs (8 "
                                     "calibration images), worst first; a step keeps a tensor float: its conv and "
                                     "the convs reading it" };
        printf("\naccuracy-aware mode: --max-drop %.2f points of mAP@[.5:.95] (FP32 %.2f); layers ranked by %s\n",
               p->budget_pts, 100 * p->fp, why[p->mode]);
        if (p->gcol)
            printf("latency: %s (the ms/img column: %s)\n", p->lat->label,
                   s->eval_gpu ? "the GPU evaluation's, per image with upload and download" : "the CPU int8 engine's");
        if (s->eval_gpu)
            printf("mAP: on the GPU int8 engine, as the package will run (float layers %s)\n", CLI_GPU_FLOAT);
        printf("  %4s  %-28s %8s %8s %9s%s\n", "step", "kept in float", "mAP", "drop", "ms/img", p->gcol ? "    GPU ms" : "");
        printf("  %4d  %-28s %8.2f %8.2f %9.2f%s\n", 0, "(none: every layer int8)", 100 * s->map, s->drop_pts, s->ms,
               gpu_cell(gc, sizeof gc, p->gcol, s->latency_ms));
    } else {
        if (s->n_layers == 1) {
            snprintf(t, sizeof t, "+ layer %d (conv)", s->layers[0]);
        } else {
            size_t tl = (size_t)snprintf(t, sizeof t, "+ layers");
            for (int j = 0; j < s->n_layers && tl < sizeof t; j++)
                tl += (size_t)snprintf(t + tl, sizeof t - tl, "%s%d", j ? "," : " ", s->layers[j]);
        }
        printf("  %4d  %-28s %8.2f %8.2f %9.2f%s%s\n", s->k, t, 100 * s->map, s->drop_pts, s->ms,
               gpu_cell(gc, sizeof gc, p->gcol, s->latency_ms), s->met ? "   within the budget" : "");
    }
    fflush(stdout);
    if (p->steps) {
        cJSON *o = cJSON_CreateObject();
        if (s->k == 0) {
            cJSON_AddNullToObject(o, "layer");
        } else {
            cJSON_AddNumberToObject(o, "layer", s->layers[0]);
            cJSON *ls = cJSON_AddArrayToObject(o, "layers");
            for (int j = 0; j < s->n_layers; j++) cJSON_AddItemToArray(ls, cJSON_CreateNumber(s->layers[j]));
        }
        cJSON_AddNumberToObject(o, "map", s->map);
        cJSON_AddNumberToObject(o, "drop_pts", s->drop_pts);
        cJSON_AddNumberToObject(o, p->ms_key, s->ms);
        if (s->latency_ms >= 0) cJSON_AddNumberToObject(o, "gpu_latency_ms", s->latency_ms);
        cJSON_AddItemToArray(p->steps, o);
    }
}

static int rank_mode(const char *r)
{
    static const char *names[] = { "head", "sqnr", "map", "tensor" };
    for (int k = 0; k < 4; k++) if (!strcmp(r, names[k])) return k;
    return -1;
}

yq_status cli_max_drop(yq_quantizer *q, yq_qconf **qc, const yq_dataset *ds, const yq_quant_score *fp,
                       double budget_pts, const char *rank, int max_float, cJSON *json, cli_lat *lat,
                       yq_max_drop_result *res, yq_error *err)
{
    int mode = rank_mode(rank);
    if (mode < 0) return cli_fail(err, YQ_ERR_INVALID_ARG, "--rank %s: expected head, sqnr, map or tensor", rank);
    int gpu = lat && lat->gpu;
    printer p = { budget_pts, fp->map, mode, gpu, lat,
                  gpu ? "gpu_eval_ms_per_image" : "cpu_latency_ms", json ? cJSON_AddArrayToObject(json, "steps") : NULL };
    /* the mAP on the GPU when the latency is the GPU's: the engine that will run the
     * package (the CPU reference's bytes, float layers included) */
    char dev[32];
    snprintf(dev, sizeof dev, gpu ? "cuda:%d" : "cpu", gpu ? lat->device : 0);
    yq_max_drop_opt o = { .budget_pts = budget_pts, .rank = rank, .max_float = max_float, .device = dev, .fp32 = fp,
                          .want_dets = 1, .latency = gpu ? lat_measure : NULL, .step = step_row, .ctx = &p,
                          .part = cli_par_rank(), .parts = cli_par_size(), .exchange = cli_par_size() > 1 ? cli_par_exchange : NULL };
    yq_qconf *chosen = NULL;
    yq_status st = yq_quantizer_max_drop(q, *qc, ds, &o, &chosen, res, err);
    if (st != YQ_OK) return st;
    yq_qconf_free(*qc);
    *qc = chosen;

    if (!res->met && res->tried > res->n_float)
        printf("  budget not met: keeping the best step, %d layer%s in float (drop %.2f)\n", res->n_float,
               res->n_float == 1 ? "" : "s", res->drop_pts);
    printf("  float layers: ");
    if (!res->n_float) printf("none");
    for (int k = 0; k < res->n_float; k++) printf("%s%d", k ? "," : "", res->float_layers[k]);
    /* The cost in one engine: the GPU's if it measured the whole run, else the CPU's. */
    int on_gpu = lat && lat->gpu && res->all_int8_latency_ms > 0 && res->latency_ms > 0;
    double lat_all8 = on_gpu ? res->all_int8_latency_ms : res->all_int8_score.ms_engine;
    double lat_final = on_gpu ? res->latency_ms : res->score.ms_engine, cost = lat_final - lat_all8;
    cli_lat cpu;
    cli_lat_init(&cpu);   /* the CPU engine's label */
    printf("; latency cost %+.3f ms%s (%+.1f%%, %s); budget %s\n", cost,
           on_gpu && lat->batch > 1 ? " per forward" : "/img", lat_all8 > 0 ? 100 * cost / lat_all8 : 0.0,
           on_gpu ? lat->label : cpu.label, res->met ? "met" : "NOT met");
    if (!json) return YQ_OK;
    cJSON_AddNumberToObject(json, "budget_pts", budget_pts);
    cJSON_AddStringToObject(json, "rank", rank);
    if (max_float > 0) cJSON_AddNumberToObject(json, "max_float", max_float);
    cJSON_AddBoolToObject(json, "met", res->met);
    cJSON_AddStringToObject(json, "eval_engine", res->eval_gpu ? "cuda-int8" : "cpu-int8-reference");
    if (res->eval_gpu) cJSON_AddStringToObject(json, "gpu_float_precision", CLI_GPU_FLOAT);
    cJSON *fl = cJSON_AddArrayToObject(json, "float_layers");
    for (int k = 0; k < res->n_float; k++) cJSON_AddItemToArray(fl, cJSON_CreateNumber(res->float_layers[k]));
    cJSON_AddNumberToObject(json, "drop_pts", 100 * (fp->map - res->map));
    cJSON_AddNumberToObject(json, "latency_ms_all_int8", lat_all8);
    cJSON_AddNumberToObject(json, "latency_ms", lat_final);
    char k2[40];
    snprintf(k2, sizeof k2, "%s_all_int8", p.ms_key);
    cJSON_AddNumberToObject(json, k2, res->all_int8_score.ms_engine);
    cJSON_AddNumberToObject(json, p.ms_key, res->score.ms_engine);
    if (lat) {
        if (lat->gpu && !on_gpu) cli_lat_to_cpu(lat);   /* (cannot happen: a GPU failure turns lat to the CPU) */
        cli_lat_json(lat, json);
    } else {
        cJSON_AddStringToObject(json, "latency_device", cpu.tag);
        cJSON_AddStringToObject(json, "latency_engine", cpu.label);
    }
    /* each step's latency_ms: the engine's */
    cJSON *it;
    cJSON_ArrayForEach(it, p.steps) {
        cJSON *gl = cJSON_GetObjectItem(it, "gpu_latency_ms"), *cl = cJSON_GetObjectItem(it, "cpu_latency_ms");
        const cJSON *use = on_gpu && gl ? gl : cl;
        if (use) cJSON_AddNumberToObject(it, "latency_ms", use->valuedouble);
    }
    return YQ_OK;
}
