/* The quantization flags shared by quantize, eval, sensitivity and sweep, parsed into a
 * qconfig handle (include/yq_quant.h), and the quantizer's callbacks on the terminal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"

struct cli_quant_opt {
    yq_qconf *qc;
    const char *calib_dir, *cache;
    const char *calib_device; /* --calib-device cpu|cuda[:N]; NULL: cuda when usable, else cpu */
    int any;                  /* a qconfig flag was given */
};

cli_quant_opt *cli_quant_new(void)
{
    cli_quant_opt *q = calloc(1, sizeof *q);
    yq_error e;
    if (q && yq_qconf_new(&q->qc, &e) != YQ_OK) {
        free(q);
        q = NULL;
    }
    if (!q) fprintf(stderr, "yquant: out of memory\n");
    return q;
}

void cli_quant_free(cli_quant_opt *q)
{
    if (!q) return;
    yq_qconf_free(q->qc);
    free(q);
}
int cli_quant_any(const cli_quant_opt *q) { return q->any; }
const char *cli_quant_calib_dir(const cli_quant_opt *q) { return q->calib_dir; }
const yq_qconf *cli_quant_qconf(const cli_quant_opt *q) { return q->qc; }

const char *cli_qconf_get(const yq_qconf *qc, const char *key, char *buf, size_t cap)
{
    yq_error e;
    if (yq_qconf_get(qc, key, buf, cap, &e) != YQ_OK) buf[0] = 0;
    return buf;
}

/* A key set on q's handle; an error names the flag where the handle says "qconfig". */
static int set_key(cli_quant_opt *q, const char *flag, const char *key, const char *value)
{
    yq_error err;
    if (yq_qconf_set(q->qc, key, value, &err) == YQ_OK) return 0;
    const char *m = !strncmp(err.msg, "qconfig: ", 9) ? err.msg + 9 : err.msg;
    fprintf(stderr, "yquant: %s: %s\n", flag, m);
    return -1;
}

int cli_quant_arg(cli_quant_opt *q, const cli_getopt *g, int c)
{
    /* the flags that set one qconfig key each */
    static const struct { int code; const char *key; } map[] = {
        { CLI_OPT_BITS, "bits" }, { CLI_OPT_CALIB_METHOD, "calib" }, { CLI_OPT_WEIGHT_SCALE, "weight_scale" },
        { CLI_OPT_SKIP_LAYERS, "skip_layers" }, { CLI_OPT_ROUNDING, "rounding" }, { CLI_OPT_HEAD, "head" },
        { CLI_OPT_FIRST, "first" }, { CLI_OPT_EQUALIZE, "equalize" }, { CLI_OPT_BIAS_CORRECTION, "bias_correction" },
    };
    const char *v = g->arg;
    yq_error err;
    switch (c) {
    case CLI_OPT_CALIB:
        q->calib_dir = v;
        return 1;
    case CLI_OPT_CALIB_CACHE:
        q->cache = v;
        return 1;
    case CLI_OPT_CALIB_DEVICE: {
        int d;
        if (yq_device_parse(v, &d, &err) != YQ_OK) {
            cli_usage_error("--calib-device %s: expected cpu, cuda or cuda:N", v);
            return -1;
        }
        q->calib_device = v;
        return 1;
    }
    case CLI_OPT_QCONFIG:
        if (yq_qconf_update(q->qc, v, &err) != YQ_OK) { cli_error(&err); return -1; }
        q->any = 1;
        return 1;
    case CLI_OPT_SET: {
        char key[128];
        const char *eq = strchr(v, '=');
        if (!eq || eq == v || (size_t)(eq - v) >= sizeof key) { cli_usage_error("--set %s: expected key=value", v); return -1; }
        snprintf(key, sizeof key, "%.*s", (int)(eq - v), v);
        if (set_key(q, "--set", key, eq + 1)) return -1;
        q->any = 1;
        return 1;
    }
    case CLI_OPT_PER_TENSOR:
    case CLI_OPT_PER_CHANNEL:
        if (set_key(q, g->name, "weights", c == CLI_OPT_PER_CHANNEL ? "per_channel" : "per_tensor")) return -1;
        q->any = 1;
        return 1;
    }
    for (size_t k = 0; k < sizeof map / sizeof *map; k++)
        if (c == map[k].code) {
            if (set_key(q, g->name, map[k].key, v)) return -1;
            q->any = 1;
            return 1;
        }
    return 0;
}

const char *cli_quant_help =
    "quantization (int8 through the CPU reference):\n"
    "  --calib DIR            calibration images (a folder)\n"
    "  --calib-cache FILE     calibration cache (default ~/.cache/yquant/calib.h5): a second\n"
    "                         run on the same model and images skips the FP32 pass\n"
    "  --calib-device D       cpu | cuda[:N]: where the FP32 pass runs (default cuda when a\n"
    "                         GPU and cuDNN are there, else cpu; cuda falls back to cpu\n"
    "                         with a warning when it cannot run)\n"
    "  --bits N               2..8 (default 8)\n"
    "  --calib-method M       max | percentile:P | kl | mse (default mse)\n"
    "  --per-tensor           per-tensor weight scales (default per channel)\n"
    "  --weight-scale S       max | power2 | mse\n"
    "  --head int8|float      the convs feeding the heads (default float)\n"
    "  --first int8|float     the first conv (default int8, reading the uint8 image)\n"
    "  --skip-layers L,L,...  layers kept in float\n"
    "  --rounding nearest|even, --equalize on|off, --bias-correction off|weights|data\n"
    "  --qconfig FILE         key = value lines (README: qconfig keys)\n"
    "  --set KEY=VALUE        any qconfig key, e.g. --set layer.12.bits=6\n";

/* The quantizer's callbacks on the terminal: a step starts a progress bar (ctx), its
 * warnings go through cli_warn (which clears the bar's line), its notes are lines on stderr. */
static void bar_stage(void *ctx, const char *label) { cli_progress_start(ctx, label); }
static void note_line(void *ctx, const char *msg)
{
    (void)ctx;
    if (cli_verbosity >= 1) fprintf(stderr, "%s\n", msg);
}

yq_quant_io cli_quant_term_io(cli_bar *bar)
{
    yq_quant_io io = { bar ? bar_stage : NULL, bar ? cli_progress : NULL, cli_warn, note_line, bar };
    return io;
}

typedef struct rank { int id; double db; } rank;
static int by_db(const void *a, const void *b)
{
    const rank *x = a, *y = b;
    return x->db < y->db ? -1 : x->db > y->db;
}

void cli_print_layer_errors(const yq_layer_error *r, int n, int images, int top)
{
    rank *k = malloc(sizeof *k * (size_t)(n ? n : 1));
    if (!k || top <= 0) {
        free(k);
        return;
    }
    for (int i = 0; i < n; i++) k[i] = (rank){ i, r[i].sqnr_db };
    qsort(k, (size_t)n, sizeof *k, by_db);
    printf("per-layer int8 vs FP32 error on %d images (SQNR, worst first):\n", images);
    printf("  %5s  %-9s %-14s %-5s %9s %10s\n", "layer", "type", "output", "dtype", "SQNR dB", "max|err|");
    for (int j = 0; j < n && j < top; j++) {
        const yq_layer_error *e = &r[k[j].id];
        char shp[32];
        snprintf(shp, sizeof shp, "%dx%dx%d", e->out_w, e->out_h, e->out_c);
        printf("  %5d  %-9s %-14s %-5s %9.2f %10.4f\n", e->layer, e->type, shp, e->dtype, e->sqnr_db, e->max_abs);
    }
    free(k);
}

/* ---- the same flags for the public quantizer (include/yq_quant.h) ---- */

yq_status cli_quant_options(const cli_quant_opt *q, const cli_model_opt *mo, int letterbox, yq_quant_opt *o,
                            yq_qconf **qc, yq_error *err)
{
    *o = yq_quant_defaults();
    o->calib = q->calib_dir;
    o->cache = q->cache;
    o->device = q->calib_device;
    o->weights = mo->weights;
    o->width = mo->width;
    o->height = mo->height;
    o->bn_pjreddie = mo->bn_pjreddie;
    o->letterbox = letterbox;
    o->created_unix = cli_created_unix();
    return yq_qconf_dup(q->qc, qc, err);
}
