/* qconfig parsing: one table of keys, shared by files and flags. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include "quant/qconfig.h"

void yq_qconfig_defaults(yq_qconfig *qc)
{
    memset(qc, 0, sizeof *qc);
    qc->bits = 8;
    qc->per_channel = 1;
    qc->wscale = YQ_WSCALE_MAX;
    qc->calib.kind = YQ_CALIB_MSE;      /* measured best on the shared models (README: accuracy) */
    qc->keep_float = 5;
    qc->thresh_search = 0;
    qc->head_float = 1;
    qc->first_float = 0;
    qc->equalize = 1;
    qc->bias_correction = 1;
    qc->float_fp16w = 0;      /* FP32 weights: measured better than fp16w (README: accuracy) */
    qc->act_table = 1;        /* mish/swish/logistic in int8 (quant/table.c) */
}

static yq_status bad(yq_error *err, const char *origin, const char *key, const char *value, const char *valid)
{
    return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: %s = %s: expected %s", origin, key, value, valid);
}

static int parse_int(const char *s, long *v)
{
    char *end;
    errno = 0;
    *v = strtol(s, &end, 10);
    return !errno && end != s && !*end;
}

static yq_status parse_onoff(const char *v, int *out)
{
    if (!strcmp(v, "on") || !strcmp(v, "1") || !strcmp(v, "true")) { *out = 1; return YQ_OK; }
    if (!strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "false")) { *out = 0; return YQ_OK; }
    return YQ_ERR_INVALID_ARG;
}

static yq_layer_qc *layer_slot(yq_qconfig *qc, long idx)
{
    if (idx < 0 || idx >= YQ_QC_MAX_LAYERS) return NULL;
    while (qc->n_layers <= idx) {
        yq_layer_qc *l = &qc->layer[qc->n_layers++];
        l->bits = 0;
        l->per_channel = l->wscale = l->skip = -1;
        l->has_calib = 0;
        l->thresh = 0;
    }
    return &qc->layer[idx];
}

static yq_status set_layer(yq_qconfig *qc, long idx, const char *key, const char *value, const char *origin, yq_error *err)
{
    char full[64];
    snprintf(full, sizeof full, "layer.%ld.%s", idx, key);
    yq_layer_qc *l = layer_slot(qc, idx);
    if (!l) return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: %s: layer index out of range", origin, full);
    long v;
    int b;
    if (!strcmp(key, "bits")) {
        if (!parse_int(value, &v) || v < 2 || v > 8) return bad(err, origin, full, value, "an integer in 2..8");
        l->bits = (int)v;
    } else if (!strcmp(key, "weights")) {
        if (!strcmp(value, "per_channel")) l->per_channel = 1;
        else if (!strcmp(value, "per_tensor")) l->per_channel = 0;
        else return bad(err, origin, full, value, "per_channel or per_tensor");
    } else if (!strcmp(key, "weight_scale")) {
        if (!strcmp(value, "max")) l->wscale = YQ_WSCALE_MAX;
        else if (!strcmp(value, "power2")) l->wscale = YQ_WSCALE_POWER2;
        else if (!strcmp(value, "mse")) l->wscale = YQ_WSCALE_MSE;
        else return bad(err, origin, full, value, "max, power2 or mse");
    } else if (!strcmp(key, "calib")) {
        yq_error e2;
        if (yq_calib_method_parse(value, &l->calib, &e2) != YQ_OK) return bad(err, origin, full, value, "max, percentile:P, kl or mse");
        l->has_calib = 1;
    } else if (!strcmp(key, "skip")) {
        if (parse_onoff(value, &b) != YQ_OK) return bad(err, origin, full, value, "on or off");
        l->skip = b;
    } else if (!strcmp(key, "thresh")) {
        char *end;
        errno = 0;
        double t = strtod(value, &end);
        /* > 0 as a float too: 1e-50 would be stored as 0, which means "none set" */
        if (errno || end == value || *end || !(t > 0) || !(t <= 3.4e38) || !((float)t > 0))
            return bad(err, origin, full, value, "a threshold > 0 (at least 1.4e-45, a float's smallest)");
        l->thresh = (float)t;
    } else {
        return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: unknown per-layer key '%s' (bits, weights, weight_scale, calib, skip, thresh)", origin, full);
    }
    return YQ_OK;
}

yq_status yq_qconfig_set(yq_qconfig *qc, const char *key, const char *value, const char *origin, yq_error *err)
{
    long v;
    int b;
    if (!strncmp(key, "layer.", 6)) {
        char *end;
        errno = 0;
        long idx = strtol(key + 6, &end, 10);
        if (errno || end == key + 6 || *end != '.')
            return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: '%s': expected layer.N.key", origin, key);
        return set_layer(qc, idx, end + 1, value, origin, err);
    }
    if (!strcmp(key, "bits")) {
        if (!parse_int(value, &v) || v < 2 || v > 8) return bad(err, origin, key, value, "an integer in 2..8");
        qc->bits = (int)v;
    } else if (!strcmp(key, "weights")) {
        if (!strcmp(value, "per_channel")) qc->per_channel = 1;
        else if (!strcmp(value, "per_tensor")) qc->per_channel = 0;
        else return bad(err, origin, key, value, "per_channel or per_tensor");
    } else if (!strcmp(key, "weight_scale")) {
        if (!strcmp(value, "max")) qc->wscale = YQ_WSCALE_MAX;
        else if (!strcmp(value, "power2")) qc->wscale = YQ_WSCALE_POWER2;
        else if (!strcmp(value, "mse")) qc->wscale = YQ_WSCALE_MSE;
        else return bad(err, origin, key, value, "max, power2 or mse");
    } else if (!strcmp(key, "calib")) {
        yq_error e2;
        if (yq_calib_method_parse(value, &qc->calib, &e2) != YQ_OK) return bad(err, origin, key, value, "max, percentile:P (0 < P <= 100), kl or mse");
    } else if (!strcmp(key, "skip_layers")) {
        /* Replaces earlier skip_layers; per-layer skip overrides set with layer.N.skip stay. */
        for (int i = 0; i < qc->n_layers; i++) if (qc->layer[i].skip == 2) qc->layer[i].skip = -1;
        const char *p = value;
        while (*p) {
            char *end;
            errno = 0;
            long idx = strtol(p, &end, 10);
            if (errno || end == p || (*end && *end != ',')) return bad(err, origin, key, value, "a comma list of layer indices");
            yq_layer_qc *l = layer_slot(qc, idx);
            if (!l) return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: skip_layers: layer %ld out of range", origin, idx);
            if (l->skip < 0) l->skip = 2;    /* 2: from skip_layers */
            p = *end ? end + 1 : end;
        }
    } else if (!strcmp(key, "rounding")) {
        if (!strcmp(value, "nearest")) qc->round_even = 0;
        else if (!strcmp(value, "even")) qc->round_even = 1;
        else return bad(err, origin, key, value, "nearest or even");
    } else if (!strcmp(key, "head")) {
        if (!strcmp(value, "float")) qc->head_float = 1;
        else if (!strcmp(value, "int8")) qc->head_float = 0;
        else return bad(err, origin, key, value, "int8 or float");
    } else if (!strcmp(key, "first")) {
        if (!strcmp(value, "float")) qc->first_float = 1;
        else if (!strcmp(value, "int8")) qc->first_float = 0;
        else return bad(err, origin, key, value, "int8 or float");
    } else if (!strcmp(key, "keep_float")) {
        if (!parse_int(value, &v) || v < 0 || v > 64) return bad(err, origin, key, value, "an integer in 0..64");
        qc->keep_float = (int)v;
    } else if (!strcmp(key, "thresh_search")) {
        if (!parse_int(value, &v) || v < 0 || v > 256) return bad(err, origin, key, value, "an integer in 0..256");
        qc->thresh_search = (int)v;
    } else if (!strcmp(key, "equalize")) {
        if (parse_onoff(value, &b) != YQ_OK) return bad(err, origin, key, value, "on or off");
        qc->equalize = b;
    } else if (!strcmp(key, "float_precision")) {
        if (!strcmp(value, "fp16w")) qc->float_fp16w = 1;
        else if (!strcmp(value, "fp32")) qc->float_fp16w = 0;
        else return bad(err, origin, key, value, "fp16w or fp32");
    } else if (!strcmp(key, "act_table")) {
        if (parse_onoff(value, &b) != YQ_OK) return bad(err, origin, key, value, "on or off");
        qc->act_table = b;
    } else if (!strcmp(key, "bias_correction")) {
        if (!strcmp(value, "data")) qc->bias_correction = 2;
        else if (!strcmp(value, "weights")) qc->bias_correction = 1;
        else if (parse_onoff(value, &b) == YQ_OK) qc->bias_correction = b;
        else return bad(err, origin, key, value, "off, weights or data (on = weights)");
    } else {
        return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: unknown key '%s' (bits, weights, weight_scale, calib, skip_layers, "
                       "rounding, head, first, keep_float, thresh_search, equalize, bias_correction, float_precision, act_table, layer.N.*)", origin, key);
    }
    return YQ_OK;
}

/* The lines of f, named path in messages. */
static yq_status parse_lines(yq_qconfig *qc, FILE *f, const char *path, yq_error *err)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int ln = 0;
    yq_status st = YQ_OK;
    /* getline: a whole line whatever its length, so an over-long line is one error with its
     * own number, never split into pieces whose tail would be parsed as a setting. */
    while (st == YQ_OK && (len = getline(&line, &cap, f)) >= 0) {
        ln++;
        ssize_t text = len - (len > 0 && line[len - 1] == '\n');
        if (text > YQ_QC_MAX_LINE) {
            st = yq_fail(err, YQ_ERR_INVALID_ARG, "%s:%d: line of %zd bytes, longer than %d", path, ln,
                         text, YQ_QC_MAX_LINE);
            break;
        }
        if (memchr(line, 0, (size_t)len)) {
            st = yq_fail(err, YQ_ERR_INVALID_ARG, "%s:%d: NUL byte in a text line", path, ln);
            break;
        }
        char *h = strchr(line, '#');
        if (h) *h = 0;
        char *s = line;
        while (isspace((unsigned char)*s)) s++;
        if (!*s) continue;
        char *eq = strchr(s, '=');
        char origin[600];
        snprintf(origin, sizeof origin, "%s:%d", path, ln);
        if (!eq) { st = yq_fail(err, YQ_ERR_INVALID_ARG, "%s: expected key = value", origin); break; }
        *eq = 0;
        char *k = s, *v = eq + 1;
        for (char *e = k + strlen(k); e > k && isspace((unsigned char)e[-1]);) *--e = 0;
        while (isspace((unsigned char)*v)) v++;
        for (char *e = v + strlen(v); e > v && isspace((unsigned char)e[-1]);) *--e = 0;
        st = yq_qconfig_set(qc, k, v, origin, err);
    }
    if (st == YQ_OK && ferror(f)) st = yq_fail(err, YQ_ERR_IO, "%s: read error", path);
    free(line);
    return st;
}

yq_status yq_qconfig_load(yq_qconfig *qc, const char *path, yq_error *err)
{
    FILE *f = fopen(path, "r");
    if (!f) return yq_fail(err, YQ_ERR_IO, "%s: %s", path, strerror(errno));
    yq_status st = parse_lines(qc, f, path, err);
    fclose(f);
    return st;
}

yq_status yq_qconfig_parse(yq_qconfig *qc, const char *text, const char *name, yq_error *err)
{
    size_t n = strlen(text);
    if (!n) return YQ_OK;
    FILE *f = fmemopen((void *)(uintptr_t)text, n, "r");
    if (!f) return yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory", name);
    yq_status st = parse_lines(qc, f, name, err);
    fclose(f);
    return st;
}

yq_status yq_qconfig_validate(const yq_qconfig *qc, const yq_graph *g, yq_error *err)
{
    int layers = g->n_nodes - 1;
    for (int i = layers; i < qc->n_layers; i++) {
        const yq_layer_qc *l = &qc->layer[i];
        if (l->bits || l->per_channel >= 0 || l->wscale >= 0 || l->skip >= 0 || l->has_calib || l->thresh > 0)
            return yq_fail(err, YQ_ERR_INVALID_ARG, "qconfig names layer %d, but the model has layers 0..%d", i, layers - 1);
    }
    return YQ_OK;
}

static const yq_layer_qc *L(const yq_qconfig *qc, int layer)
{
    return layer >= 0 && layer < qc->n_layers ? &qc->layer[layer] : NULL;
}
int yq_qc_bits(const yq_qconfig *qc, int layer) { const yq_layer_qc *l = L(qc, layer); return l && l->bits ? l->bits : qc->bits; }
int yq_qc_per_channel(const yq_qconfig *qc, int layer) { const yq_layer_qc *l = L(qc, layer); return l && l->per_channel >= 0 ? l->per_channel : qc->per_channel; }
yq_wscale yq_qc_wscale(const yq_qconfig *qc, int layer) { const yq_layer_qc *l = L(qc, layer); return l && l->wscale >= 0 ? (yq_wscale)l->wscale : qc->wscale; }
int yq_qc_skip(const yq_qconfig *qc, int layer) { const yq_layer_qc *l = L(qc, layer); return l && l->skip > 0; }
yq_calib_method yq_qc_calib(const yq_qconfig *qc, int layer) { const yq_layer_qc *l = L(qc, layer); return l && l->has_calib ? l->calib : qc->calib; }
float yq_qc_thresh(const yq_qconfig *qc, int layer) { const yq_layer_qc *l = L(qc, layer); return l ? l->thresh : 0.f; }

/* Appends to buf[cap] like snprintf: *n counts every byte the whole text needs, and what
 * does not fit is dropped (buf stays terminated), so one pass both measures and writes. */
static void app(char *buf, size_t cap, size_t *n, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void app(char *buf, size_t cap, size_t *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(*n < cap ? buf + *n : NULL, *n < cap ? cap - *n : 0, fmt, ap);
    va_end(ap);
    if (k > 0) *n += (size_t)k;
}

size_t yq_qconfig_str(const yq_qconfig *qc, char *buf, size_t cap)
{
    static const char *ws[] = { "max", "power2", "mse" };
    char cm[64];
    size_t n = 0;
    if (!buf) cap = 0;
    if (cap) buf[0] = 0;
    yq_calib_method_str(&qc->calib, cm, sizeof cm);
    app(buf, cap, &n,
        "bits = %d\nweights = %s\nweight_scale = %s\ncalib = %s\nrounding = %s\nhead = %s\nfirst = %s\n"
        "keep_float = %d\nthresh_search = %d\nequalize = %s\nbias_correction = %s\nfloat_precision = %s\nact_table = %s\n",
        qc->bits, qc->per_channel ? "per_channel" : "per_tensor", ws[qc->wscale], cm,
        qc->round_even ? "even" : "nearest", qc->head_float ? "float" : "int8", qc->first_float ? "float" : "int8",
        qc->keep_float, qc->thresh_search, qc->equalize ? "on" : "off", qc->bias_correction == 2 ? "data" : qc->bias_correction ? "weights" : "off",
        qc->float_fp16w ? "fp16w" : "fp32", qc->act_table ? "on" : "off");
    int first = 1;
    for (int i = 0; i < qc->n_layers; i++)
        if (qc->layer[i].skip == 2) {
            app(buf, cap, &n, "%s%d", first ? "skip_layers = " : ",", i);
            first = 0;
        }
    if (!first) app(buf, cap, &n, "\n");
    for (int i = 0; i < qc->n_layers; i++) {
        const yq_layer_qc *l = &qc->layer[i];
        if (l->bits) app(buf, cap, &n, "layer.%d.bits = %d\n", i, l->bits);
        if (l->per_channel >= 0) app(buf, cap, &n, "layer.%d.weights = %s\n", i, l->per_channel ? "per_channel" : "per_tensor");
        if (l->wscale >= 0) app(buf, cap, &n, "layer.%d.weight_scale = %s\n", i, ws[l->wscale]);
        if (l->skip == 0 || l->skip == 1) app(buf, cap, &n, "layer.%d.skip = %s\n", i, l->skip ? "on" : "off");
        if (l->has_calib) {
            yq_calib_method_str(&l->calib, cm, sizeof cm);
            app(buf, cap, &n, "layer.%d.calib = %s\n", i, cm);
        }
        if (l->thresh > 0) app(buf, cap, &n, "layer.%d.thresh = %.9g\n", i, (double)l->thresh);
    }
    return n;
}

char *yq_qconfig_text(const yq_qconfig *qc)
{
    size_t n = yq_qconfig_str(qc, NULL, 0);
    char *t = malloc(n + 1);
    if (t) yq_qconfig_str(qc, t, n + 1);
    return t;
}
