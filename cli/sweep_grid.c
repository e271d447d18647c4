/* The grid of yquant sweep: parsing, each point's values, short names (cli/sweep_grid.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/sweep_grid.h"

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\n') s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n')) *--e = 0;
    return s;
}

/* Parses "key=v1,v2; key=..." and tries every value on a scratch qconfig, so a typo
 * fails before any work. */
yq_status sweep_grid_parse(grid *G, const char *text, yq_error *err)
{
    memset(G, 0, sizeof *G);
    G->points = 1;
    G->buf = strdup(text ? text : "");
    if (!G->buf) return cli_fail(err, YQ_ERR_NOMEM, "out of memory");
    yq_status st = YQ_OK;
    char *save = NULL;
    for (char *part = strtok_r(G->buf, ";", &save); part && st == YQ_OK; part = strtok_r(NULL, ";", &save)) {
        part = trim(part);
        if (!*part) continue;
        char *eq = strchr(part, '=');
        if (!eq) { st = cli_fail(err, YQ_ERR_INVALID_ARG, "--grid: '%s': expected key=v1,v2,...", part); break; }
        *eq = 0;
        char *key = trim(part), *vals = eq + 1;
        if (!*key) { st = cli_fail(err, YQ_ERR_INVALID_ARG, "--grid: a value list without a key"); break; }
        for (int j = 0; j < G->n; j++)
            if (!strcmp(G->k[j].key, key)) st = cli_fail(err, YQ_ERR_INVALID_ARG, "--grid: key '%s' given twice", key);
        if (st != YQ_OK) break;
        if (G->n == GRID_KEYS) { st = cli_fail(err, YQ_ERR_INVALID_ARG, "--grid: at most %d keys", GRID_KEYS); break; }
        int j = G->n++;
        G->k[j].key = key;
        char sep = strchr(vals, '|') ? '|' : ',';
        for (char *v = vals;;) {
            char *e = strchr(v, sep);
            if (e) *e = 0;
            if (G->k[j].n == GRID_VALS) { st = cli_fail(err, YQ_ERR_INVALID_ARG, "--grid: %s: at most %d values", key, GRID_VALS); break; }
            char *tv = trim(v);
            G->k[j].val[G->k[j].n++] = tv;
            yq_qconf *scratch = NULL;
            yq_error e2;
            if ((st = yq_qconf_new(&scratch, &e2)) == YQ_OK) st = yq_qconf_set(scratch, key, tv, &e2);
            yq_qconf_free(scratch);
            if (st != YQ_OK) {      /* the grid's key where the handle says "qconfig" */
                const char *m = !strncmp(e2.msg, "qconfig: ", 9) ? e2.msg + 9 : e2.msg;
                st = cli_fail(err, st, "--grid %.80s: %s", key, m);
                break;
            }
            if (!e) break;
            v = e + 1;
        }
        if (st == YQ_OK) {
            G->points *= G->k[j].n;
            if (G->points > GRID_POINTS) st = cli_fail(err, YQ_ERR_INVALID_ARG, "--grid: more than %d points", GRID_POINTS);
        }
    }
    return st;
}

void sweep_grid_index(const grid *G, int p, int *idx)
{
    int rest = p;
    for (int j = G->n - 1; j >= 0; j--) {        /* the first key varies slowest */
        idx[j] = rest % G->k[j].n;
        rest /= G->k[j].n;
    }
}

/* A short token for one grid value, for chart labels: "8b", "p99.99", "pc", "hf". */
static void short_value(const char *key, const char *v, char *buf, size_t cap)
{
    if (!strcmp(key, "bits")) snprintf(buf, cap, "%sb", v);
    else if (!strcmp(key, "calib")) snprintf(buf, cap, "%s", !strncmp(v, "percentile:", 11) ? "" : v);
    else if (!strcmp(key, "weights")) snprintf(buf, cap, "%s", !strcmp(v, "per_channel") ? "pc" : !strcmp(v, "per_tensor") ? "pt" : v);
    else if (!strcmp(key, "head") || !strcmp(key, "first"))
        snprintf(buf, cap, "%c%s", key[0], !strcmp(v, "float") ? "f" : !strcmp(v, "int8") ? "8" : v);
    else if (!strcmp(key, "equalize"))
        snprintf(buf, cap, "%s", !strcmp(v, "on") || !strcmp(v, "1") || !strcmp(v, "true") ? "eq" : "noeq");
    else if (!strcmp(key, "bias_correction"))
        snprintf(buf, cap, "bc%s", !strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "false") ? "0" : !strcmp(v, "data") ? "d" : "w");
    else if (!strcmp(key, "weight_scale")) snprintf(buf, cap, "ws%s", v);
    else if (!strcmp(key, "rounding")) snprintf(buf, cap, "r%s", !strcmp(v, "even") ? "e" : "n");
    else if (!strcmp(key, "keep_float")) snprintf(buf, cap, "kf%s", v);
    else if (!strcmp(key, "skip_layers")) {
        snprintf(buf, cap, "%s%s", *v ? "skip" : "noskip", v);
        for (char *s = buf; *s; s++) if (*s == ',') *s = '+';
    } else if (!strncmp(key, "layer.", 6)) {
        const char *dot = strchr(key + 6, '.');
        char inner[48];
        short_value(dot ? dot + 1 : "", v, inner, sizeof inner);
        snprintf(buf, cap, "L%.*s:%s", dot ? (int)(dot - key - 6) : 0, key + 6, inner);
    } else snprintf(buf, cap, "%s=%s", key, v);
    if (!strcmp(key, "calib") && !strncmp(v, "percentile:", 11)) snprintf(buf, cap, "p%s", v + 11);
}

void sweep_point_name(const grid *G, const int *idx, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (int j = 0; j < G->n && n < cap; j++) {
        if (G->k[j].n < 2) continue;
        char t[96];
        short_value(G->k[j].key, G->k[j].val[idx[j]], t, sizeof t);
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? "-" : "", t);
    }
    if (!buf[0]) snprintf(buf, cap, "int8");
}
