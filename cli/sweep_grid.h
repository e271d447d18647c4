/* The grid of yquant sweep (cli/sweep_grid.c): "key=v1,v2; key=..." over qconfig keys, the
 * qconfig of each point, and the points' short names for charts. */
#ifndef YQ_CLI_SWEEP_GRID_H
#define YQ_CLI_SWEEP_GRID_H

#include "yq_quant.h"

#define GRID_KEYS 16
#define GRID_VALS 64
#define GRID_POINTS 4096

typedef struct grid {
    int n;
    struct { char *key; int n; char *val[GRID_VALS]; } k[GRID_KEYS];
    char *buf;
    int points;
} grid;

/* Parses text and tries every value on a scratch qconfig (yq_qconf_set), so that a typo
 * fails before any work; G->buf holds the strings (free it). */
yq_status sweep_grid_parse(grid *G, const char *text, yq_error *err);
/* Point p's value of each key: idx[j] indexes G->k[j].val (the first key varies slowest);
 * a point's qconfig is the base with G->k[j].key set to that value, in key order. */
void sweep_grid_index(const grid *G, int p, int *idx);
/* "8b-p99.99-pc": the point's values of the keys with more than one, short. */
void sweep_point_name(const grid *G, const int *idx, char *buf, size_t cap);

#endif
