/* points.jsonl, the sweep's store of finished points (cli/sweep_point.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/sweep_point.h"

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
void sweep_point_save(FILE *f, const run_id *id, const char *asked, point *p)
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
cJSON *sweep_points_read(const char *path, const run_id *id)
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
int sweep_point_load(const cJSON *saved, const char *asked, point *p)
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

