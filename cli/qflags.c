/* The quantization flags shared by quantize, eval, detect and sweep, and the
 * calibrate-then-rewrite step they share. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "calib/cache.h"
#include "calib/observe.h"
#include "calib/observe_cuda.h"
#include "cli/cli.h"
#include "datasets/image.h"
#include "quant/biascorr.h"
#include "quant/equalize.h"
#include "quant/rewrite.h"
#include "quant/select.h"

void cli_quant_init(cli_quant_opt *q)
{
    memset(q, 0, sizeof *q);
    yq_qconfig_defaults(&q->qc);
}

/* --calib-device: 0 cpu, 1 cuda (*dev the index), -1 not a device (yq_device_parse's). */
static int calib_device_parse(const char *v, int *dev)
{
    yq_error e;
    int d;
    if (yq_device_parse(v, &d, &e) != YQ_OK) return -1;
    if (dev) *dev = d < 0 ? 0 : d;
    return d >= 0;
}

int cli_quant_arg(cli_quant_opt *q, int argc, char **argv, int *i)
{
    static const struct { const char *flag, *key; } map[] = {
        { "--bits", "bits" }, { "--calib-method", "calib" }, { "--weight-scale", "weight_scale" },
        { "--skip-layers", "skip_layers" }, { "--rounding", "rounding" }, { "--head", "head" },
        { "--first", "first" }, { "--equalize", "equalize" }, { "--bias-correction", "bias_correction" },
    };
    const char *a = argv[*i];
    yq_error err;
    if (!strcmp(a, "--calib") || !strcmp(a, "--qconfig") || !strcmp(a, "--set") || !strcmp(a, "--calib-cache") ||
        !strcmp(a, "--calib-device")) {
        if (*i + 1 >= argc) { cli_usage_error("%s needs a value", a); return -1; }
        const char *v = argv[++*i];
        if (!strcmp(a, "--calib")) q->calib_dir = v;
        else if (!strcmp(a, "--calib-device")) {
            if (calib_device_parse(v, NULL) < 0) {
                cli_usage_error("--calib-device %s: expected cpu, cuda or cuda:N", v);
                return -1;
            }
            q->calib_device = v;
        }
        else if (!strcmp(a, "--calib-cache")) q->cache = v;
        else if (!strcmp(a, "--qconfig")) {
            if (yq_qconfig_load(&q->qc, v, &err) != YQ_OK) { cli_error(&err); return -1; }
            q->any = 1;
        } else {
            char key[128];
            const char *eq = strchr(v, '=');
            if (!eq || eq == v || (size_t)(eq - v) >= sizeof key) { cli_usage_error("--set %s: expected key=value", v); return -1; }
            snprintf(key, sizeof key, "%.*s", (int)(eq - v), v);
            if (yq_qconfig_set(&q->qc, key, eq + 1, "--set", &err) != YQ_OK) { cli_error(&err); return -1; }
            q->any = 1;
        }
        return 1;
    }
    if (!strcmp(a, "--per-tensor") || !strcmp(a, "--per-channel")) {
        q->qc.per_channel = !strcmp(a, "--per-channel");
        q->any = 1;
        return 1;
    }
    for (size_t k = 0; k < sizeof map / sizeof *map; k++)
        if (!strcmp(a, map[k].flag)) {
            if (*i + 1 >= argc) { cli_usage_error("%s needs a value", a); return -1; }
            if (yq_qconfig_set(&q->qc, map[k].key, argv[++*i], a, &err) != YQ_OK) { cli_error(&err); return -1; }
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

/* The calibration cache (calib/cache.h): --calib-cache FILE, else the user's
 * cache folder.  It only saves time, so a cache that cannot be read or written
 * costs one warning and the run goes on without it. */
typedef struct calib_cache {
    const char *path;         /* NULL: no cache */
    int no_store, warned;
    char buf[1024];
} calib_cache;

static void cache_warn(calib_cache *c, const char *msg, int reading)
{
    if (!c->warned) fprintf(stderr, "warning: calibration cache: %s (continuing without it)\n", msg);
    c->warned = 1;
    if (reading) c->path = NULL;
    c->no_store = 1;
}

/* mkdir -p; 0 when dir exists as a folder afterwards. */
static int make_dirs(char *dir)
{
    for (char *s = dir + 1;; s++) {
        if (*s && *s != '/') continue;
        char c = *s;
        *s = 0;
        int r = mkdir(dir, 0700);
        int e = errno;
        *s = c;
        if (r != 0 && e != EEXIST) return -1;
        if (!c) break;
    }
    struct stat sb;
    return stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode) ? 0 : -1;
}

static void cache_open(calib_cache *c, const char *flag)
{
    memset(c, 0, sizeof *c);
    if (flag) { c->path = flag; return; }
    /* $XDG_CACHE_HOME/yquant, ~/.cache/yquant (XDG: a relative XDG_CACHE_HOME is ignored) */
    const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char dir[sizeof c->buf - 16];
    if (x && x[0] == '/') snprintf(dir, sizeof dir, "%s/yquant", x);
    else if (home && *home) snprintf(dir, sizeof dir, "%s/.cache/yquant", home);
    else return;                                  /* nowhere to keep it */
    if (make_dirs(dir) != 0) {
        char msg[sizeof dir + 64];
        snprintf(msg, sizeof msg, "cannot create %s (%s)", dir, strerror(errno));
        cache_warn(c, msg, 1);
        return;
    }
    snprintf(c->buf, sizeof c->buf, "%s/calib.h5", dir);
    c->path = c->buf;
}

/* Where the FP32 pass runs: on_gpu (device index dev) or the CPU; asked: --calib-device given. */
typedef struct calib_where { int on_gpu, dev, asked; } calib_where;

static yq_status calib_run(calib_where *w, const yq_graph *g, char *const *paths, int n, int letterbox, int stage,
                           yq_calib_stats **cs, yq_error *err)
{
    cli_bar bar;
    if (w->on_gpu) {
        yq_calib_cuda_opt o = yq_calib_cuda_defaults();
        o.device = w->dev;
        o.warn = cli_warn;
        o.warn_ctx = &bar;
        cli_progress_start(&bar, stage ? "recalibrating (GPU)" : "calibrating (GPU)");
        yq_status st = yq_calib_observe_cuda(g, paths, n, letterbox, &o, cli_progress, &bar, cs, err);
        /* No GPU path here (no cuDNN, no device): the CPU does it.  Other failures (a
         * CUDA error, no device memory) too when the GPU was only the default. */
        if (st == YQ_OK || st == YQ_ERR_IO || (w->asked && st != YQ_ERR_UNSUPPORTED)) return st;
        fprintf(stderr, "warning: %s; calibrating on the CPU\n", err->msg);
        w->on_gpu = 0;
    }
    cli_progress_start(&bar, stage ? "recalibrating" : "calibrating");
    return yq_calib_observe(g, paths, n, letterbox, cli_progress, &bar, cli_warn, &bar, cs, err);
}

/* One calibration pass: the cached statistics for (g as it is now, the images,
 * letterbox, stage), else observe and store them. */
static yq_status calib_stage(calib_cache *c, calib_where *w, const yq_graph *g, char *const *paths, int n,
                             const uint8_t list_sha[32], int letterbox, int stage,
                             yq_calib_stats **cs, yq_error *err)
{
    uint8_t key[32];
    yq_error e2;
    *cs = NULL;
    if (c->path) {
        yq_calib_key(g, list_sha, letterbox, stage, key);
        if (yq_calib_cache_load(c->path, key, g, cs, &e2) != YQ_OK) {
            cache_warn(c, e2.msg, 1);
        } else if (*cs) {
            fprintf(stderr, "%s: cache hit (%s)\n", stage ? "recalibration" : "calibration", c->path);
            return YQ_OK;
        }
    }
    yq_status st = calib_run(w, g, paths, n, letterbox, stage, cs, err);
    if (st == YQ_OK && c->path && !c->no_store && yq_calib_cache_store(c->path, key, g, *cs, &e2) != YQ_OK)
        cache_warn(c, e2.msg, 0);
    return st;
}

yq_status cli_calibrate(const cli_quant_opt *q, yq_graph *g, int letterbox, yq_calib_stats **cs, yq_error *err)
{
    char **paths;
    int n, skipped;
    yq_status st = yq_list_images(q->calib_dir, &paths, &n, &skipped, cli_warn, NULL, err);
    if (st != YQ_OK) return st;
    calib_cache cache;
    cache_open(&cache, q->cache);
    /* The device does not enter the cache key: the same images and preprocessing give the
     * same statistics up to float rounding (calib/observe_cuda.h), so either device's
     * entry serves both. */
    calib_where where = { 0, 0, q->calib_device != NULL };
    if (q->calib_device) where.on_gpu = calib_device_parse(q->calib_device, &where.dev) == 1;
    else where.on_gpu = yq_calib_cuda_available(NULL, 0);
    /* Names and sizes only: a hit decodes no image. */
    uint8_t list_sha[32];
    yq_calib_list_hash(paths, n, list_sha);
    st = calib_stage(&cache, &where, g, paths, n, list_sha, letterbox, 0, cs, err);
    if (st == YQ_OK && q->qc.equalize) {
        /* Equalizing moves the ranges: observe the equalized graph again.  It is
         * deterministic, so cached stage-0 statistics give the same weights and
         * so the same stage-1 key. */
        int pairs = 0;
        st = yq_equalize(g, *cs, &pairs, err);
        yq_calib_stats_free(*cs);
        *cs = NULL;
        if (st == YQ_OK) st = calib_stage(&cache, &where, g, paths, n, list_sha, letterbox, 1, cs, err);
    }
    yq_list_images_free(paths, n);
    return st;
}

#include "calib/compare.h"
#include "runtime/detector.h"

typedef struct rank { int id; double db; } rank;
static int by_db(const void *a, const void *b)
{
    const rank *x = a, *y = b;
    return x->db < y->db ? -1 : x->db > y->db;
}

yq_status cli_load_inputs(const yq_graph *g, const char *dir, int max, int letterbox, float **out, int *got, yq_error *err)
{
    char **paths;
    int n, skipped;
    yq_status st = yq_list_images(dir, &paths, &n, &skipped, cli_warn, NULL, err);
    if (st != YQ_OK) return st;
    long in_sz = yq_shape_size(g->nodes[0].out);
    int want = n < max ? n : max;
    float *inputs = malloc(sizeof(float) * (size_t)(in_sz * (want ? want : 1)));
    *got = 0;
    if (!inputs) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    /* Evenly spaced over the folder, so a few images still cover it. */
    for (int k = 0; k < want && st == YQ_OK; k++) {
        yq_image im;
        yq_error e2;
        if (yq_image_load(paths[(long)k * n / want], &im, &e2) != YQ_OK) continue;
        st = yq_preprocess(g, &im, letterbox, inputs + *got * in_sz, err);
        yq_image_free(&im);
        (*got)++;
    }
    yq_list_images_free(paths, n);
    if (st != YQ_OK) { free(inputs); return st; }
    *out = inputs;
    return YQ_OK;
}

/* GFLOP of simulated runs for keep_float and thresh_search: below it, 16 images. */
#define SIM_GFLOP_BUDGET 800.0

/* keep_float and thresh_search: measured on the calibration images through simulated
 * int8 (quant/select.h); the choices go into q's qconfig (per-layer skips and thresholds,
 * so the package records them) and g is rewritten with them. */
static yq_status choose_measured(cli_quant_opt *q, yq_graph *g, const yq_calib_stats *cs, const float *inputs, int n,
                                 yq_error *err)
{
    yq_sim *sim = NULL;
    double *e = malloc(sizeof *e * (size_t)g->n_nodes);
    uint8_t *want = malloc((size_t)g->n_nodes);
    float *picked = NULL;
    int chosen = 0, changed = 0;
    yq_status st = e && want ? YQ_OK : yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    if (st == YQ_OK) {
        /* The simulated runs: keep_float's candidates, or (thresh_search) every tensor and
         * ten per searched class.  Their cost is runs x images x the model's FLOPs; a heavy
         * model gets fewer images (at least 2) so that a CPU stays within minutes: the
         * yolo-fastest models keep all 16. */
        int runs = 0;
        double gflops = 0;
        yq_float_candidates(g, want);
        for (int i = 0; i < g->n_nodes; i++) {
            runs += want[i];
            gflops += yq_node_flops(g, &g->nodes[i]) * 1e-9;
        }
        if (q->qc.thresh_search) runs = g->n_nodes + 10 * q->qc.thresh_search;
        int k = (int)(SIM_GFLOP_BUDGET / ((runs > 0 ? runs : 1) * (gflops > 0 ? gflops : 1e-9)));
        if (k < 2) k = 2;
        if (k < n) {
            long in_sz = yq_shape_size(g->nodes[0].out);
            if (!(picked = malloc(sizeof(float) * (size_t)(in_sz * k)))) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
            for (int j = 0; st == YQ_OK && j < k; j++)
                memcpy(picked + j * in_sz, inputs + (long)j * n / k * in_sz, sizeof(float) * (size_t)in_sz);
            inputs = picked;
            n = k;
        }
    }
    if (st == YQ_OK) st = yq_sim_new(g, inputs, n, &sim, err);
    /* keep_float alone needs only its candidates' errors */
    if (st == YQ_OK) st = yq_class_errors(sim, g, q->qc.thresh_search ? NULL : want, e, err);
    if (st == YQ_OK && q->qc.keep_float > 0) {
        st = yq_select_float(g, e, q->qc.keep_float, &q->qc, &chosen, err);
        q->qc.keep_float = 0;       /* done: the choice now lives in the per-layer skips */
        if (st == YQ_OK && chosen) {
            yq_unquantize_graph(g);
            st = yq_quantize_graph(g, cs, &q->qc, err);
            if (st == YQ_OK) st = yq_sim_sync(sim, err);
        }
    }
    if (st == YQ_OK && q->qc.thresh_search > 0) {
        st = yq_search_thresholds(sim, g, cs, e, q->qc.thresh_search, &q->qc, &changed, err);
        q->qc.thresh_search = 0;    /* done: the choice now lives in the per-layer thresholds */
        if (st == YQ_OK && changed) {
            yq_unquantize_graph(g);
            st = yq_quantize_graph(g, cs, &q->qc, err);
        }
    }
    yq_sim_free(sim);
    free(picked);
    free(want);
    free(e);
    return st;
}

yq_status cli_quantize_graph(cli_quant_opt *q, yq_graph *g, const yq_calib_stats *cs, int letterbox, yq_error *err)
{
    yq_status st = yq_quantize_graph(g, cs, &q->qc, err);
    float *inputs = NULL;
    int got = 0, choose = q->qc.keep_float > 0 || q->qc.thresh_search > 0;
    if (st == YQ_OK && (choose || q->qc.bias_correction == 2))
        st = cli_load_inputs(g, q->calib_dir, 16, letterbox, &inputs, &got, err);
    if (st == YQ_OK && choose && got > 0) st = choose_measured(q, g, cs, inputs, got, err);
    if (st == YQ_OK && q->qc.bias_correction == 2) st = yq_bias_correct_data(g, inputs, got, err);
    free(inputs);
    return st;
}

yq_status cli_layer_report(const yq_graph *g, const char *dir, int n_images, int letterbox, int top,
                           yq_layer_err **out, yq_error *err)
{
    float *inputs;
    int got;
    yq_status st = cli_load_inputs(g, dir, n_images, letterbox, &inputs, &got, err);
    if (st != YQ_OK) return st;
    yq_layer_err *e = NULL;
    st = yq_compare_layers(g, inputs, got, &e, err);
    free(inputs);
    if (st != YQ_OK) return st;
    rank *r = malloc(sizeof *r * (size_t)g->n_nodes);
    int m = 0;
    for (int i = 1; r && i < g->n_nodes; i++) {
        yq_op op = g->nodes[i].op;
        if (op == YQ_OP_DROPOUT || op == YQ_OP_YOLO || op == YQ_OP_REGION) continue;
        r[m++] = (rank){ i, e[i].sqnr_db };
    }
    if (r && top > 0) {
        qsort(r, (size_t)m, sizeof *r, by_db);
        printf("per-layer int8 vs FP32 error on %d images (SQNR, worst first):\n", got);
        printf("  %5s  %-9s %-14s %-5s %9s %10s\n", "layer", "type", "output", "dtype", "SQNR dB", "max|err|");
        for (int k = 0; k < m && k < top; k++) {
            const yq_node *nd = &g->nodes[r[k].id];
            char shp[32];
            snprintf(shp, sizeof shp, "%dx%dx%d", nd->out.w, nd->out.h, nd->out.c);
            const yq_qnode *q = &g->q[r[k].id];
            printf("  %5d  %-9s %-14s %-5s %9.2f %10.4f\n", nd->layer, yq_op_name(nd->op), shp,
                   q->float_op ? "float" : q->dtype == YQ_F32 ? "i8>f" : "int8", r[k].db, e[r[k].id].max_abs);
        }
    }
    free(r);
    if (out) *out = e;
    else free(e);
    return YQ_OK;
}
