/* A point of yquant sweep (its settings and results) and points.jsonl, the store of
 * finished points that --resume reads (cli/sweep_store.c); the reports are cli/sweep.h's. */
#ifndef YQ_CLI_SWEEP_POINT_H
#define YQ_CLI_SWEEP_POINT_H

#include <stdio.h>
#include <cjson/cJSON.h>
#include "cli/sweep_grid.h"

/* weight_scale's values in the order of point.wscale's codes (those points.jsonl holds). */
extern const char *const sweep_wscale_names[3];   /* "max", "power2", "mse" */

typedef struct point {
    int idx[GRID_KEYS];
    char name[128];
    char *qtext;              /* the qconfig as "key = value; ..." on one line */
    char calib[48], skip[512];
    int bits, per_channel, wscale, round_even, head_float, first_float, keep_float, equalize, bias_correction;
    int float_convs, int8_convs;
    double map, map50, map75, ms_wall;
    double ms, ms_mean;       /* the latency engine's (X->lat): per forward; the mean of its runs */
    double cpu_ms, cpu_ms_mean;   /* the CPU int8 engine, per image (always measured) */
    double gpu_ms, gpu_ms_mean;   /* the GPU's (per forward of the latency batch), when measured */
    int front, chosen;
    int eval_gpu;             /* mAP measured on the GPU int8 engine (cpu_ms then NAN) */
    int resumed;              /* read back from points.jsonl (--resume) */
} point;

/* What a point's results depend on besides its own qconfig. */
typedef struct run_id { const char *model, *val, *latency; int images; } run_id;

/* points.jsonl: one line per finished point (the run, the qconfig as asked, every result),
 * appended and flushed at once, so that a sweep cut short goes on where it stopped. */
void sweep_point_save(FILE *f, const run_id *id, const char *asked, point *p);
/* The lines of this run in path (parsed once; --resume looks every point up there); an
 * empty array when there is no file. */
cJSON *sweep_points_read(const char *path, const run_id *id);
/* The saved line of this qconfig, if any (the last one wins), into p; 1 if found. */
int sweep_point_load(const cJSON *saved, const char *asked, point *p);

#endif
