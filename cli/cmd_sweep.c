/* yquant sweep MODEL --calib DIR --val DIR (--ann F | --labels D) --grid G: mAP against
 * latency over a grid of qconfigs.  FP32 runs once; calibration runs once per graph state
 * (the equalize key is the only grid key that changes the float weights, so a grid over
 * it keeps two graphs) and comes from the cache when it can; every point is a rewrite of
 * the same graph and one evaluation.  Latency: on the GPU with tuned kernels when there is
 * one (cli/latency.c; the tuning log in the output folder makes every point after the
 * first read the kernels it needs), else the CPU int8 engine's per-image time
 * measured during the evaluation.  Writes sweep.csv, pareto.png and report.html. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "cli/latency.h"
#include "cli/report.h"
#include "cli/par.h"
#include "cli/sweep.h"
#include "cli/sweep_grid.h"
#include "yq_draw.h"

static const char *help =
    "usage: yquant sweep MODEL --calib DIR --val DIR (--ann F | --labels D) --grid G\n"
    "                    [--out DIR] [--json FILE] [--sqnr-images N] [--device cpu|cuda[:N]]\n"
    "                    [--tune-log F] [--tune-budget S] [--lat-batch N] [--eval-device D] [--resume]\n"
    "                    [qconfig flags]\n"
    "\n"
    "Evaluates one int8 rewrite per combination of the grid's values: COCO mAP on the\n"
    "labelled set (on the GPU int8 engine when the latency engine is the GPU: the CPU\n"
    "reference's bytes in every int8 layer; else the CPU int8 engine) and the latency, on\n"
    "the GPU when there is one: the int8 forward with every conv's kernel tuned for this GPU\n"
    "(the tuning log is reused: the first point tunes, later ones read), median of CUDA-graph\n"
    "replays at --lat-batch; else the CPU int8 engine, AVX-512 VNNI or AVX2 (median over the images of\n"
    "the engine alone, batch 1).  Decoding, resizing and NMS are excluded; the CSV, the report\n"
    "and the chart name the engine.  FP32 is evaluated once; calibration runs once (and is\n"
    "cached).\n"
    "  --grid G          \"key=v1,v2,...; key=...\": any qconfig keys (README: qconfig keys), e.g.\n"
    "                    \"bits=8,6,4; calib=max,percentile:99.99,kl,mse; weights=per_channel,per_tensor;\n"
    "                    head=float,int8\".  Separate values with | when they hold commas\n"
    "                    (skip_layers=|0,105|0).  The qconfig flags set the values the grid leaves.\n"
    "  -o, --output DIR  sweep.csv, pareto.png, report.html (default MODELNAME-sweep; --out: the\n"
    "                    same); in the CSV the settings are as asked, skip_layers and float_convs\n"
    "                    as run (keep_float's choice included), qconfig the effective qconfig\n"
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
    "The chosen point is the best mAP on the Pareto front (mAP up, latency down).\n"
    "\n"
    "Over MPI (mpirun -np N yquant sweep ...): the points go round-robin to the ranks, each rank\n"
    "on its own GPU (rank modulo the visible ones; the one --device names is rank 0's) or the\n"
    "CPU; rank 0 writes points.jsonl as the points finish and every report.  The mAPs are the\n"
    "same at any N; --resume works across runs with different N.  Ranks sharing a CPU or a GPU\n"
    "disturb each other's latencies: give each rank its own device for the latency axis.\n";

/* ---- points ---- */

/* The qconfig of point p (a new handle): base, then the grid's values in the order the keys
 * came (each checked when the grid was parsed). */
static yq_status grid_point(const grid *G, int p, const yq_qconf *base, yq_qconf **qc, int *idx, yq_error *err)
{
    sweep_grid_index(G, p, idx);
    yq_status st = yq_qconf_dup(base, qc, err);
    for (int j = 0; j < G->n && st == YQ_OK; j++)
        if ((st = yq_qconf_set(*qc, G->k[j].key, G->k[j].val[idx[j]], err)) != YQ_OK) {
            char m[sizeof err->msg];
            snprintf(m, sizeof m, "%s", !strncmp(err->msg, "qconfig: ", 9) ? err->msg + 9 : err->msg);
            cli_fail(err, st, "--grid %.80s: %s", G->k[j].key, m);
        }
    if (st != YQ_OK) {
        yq_qconf_free(*qc);
        *qc = NULL;
    }
    return st;
}

/* The qconfig on one line, "a=b; c=d" (malloc'ed; NULL when out of memory). */
static char *qconfig_line(const yq_qconf *qc)
{
    char *t = yq_qconf_text(qc);
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

/* A top-level key's value as an index in names[] (0 when none matches: the library's first
 * value). */
static int qcode(const yq_qconf *q, const char *key, const char *const *names, int n)
{
    char b[64];
    cli_qconf_get(q, key, b, sizeof b);
    for (int i = 0; i < n; i++) if (!strcmp(b, names[i])) return i;
    return 0;
}

/* A point's settings: keep_float as asked, the rest as the rewrite ran (resolved: the
 * measured choices in its skips), and the convs it runs in float and int8. */
static void fill_settings(point *pt, const yq_qconf *request, const yq_point_result *r)
{
    static const char *off_on[] = { "off", "on" }, *int8_float[] = { "int8", "float" };
    static const char *pc[] = { "per_tensor", "per_channel" }, *rnd[] = { "nearest", "even" };
    static const char *bc[] = { "off", "weights", "data" };
    const yq_qconf *q = r->resolved;
    char b[8192];
    pt->keep_float = atoi(cli_qconf_get(request, "keep_float", b, sizeof b));
    pt->bits = atoi(cli_qconf_get(q, "bits", b, sizeof b));
    pt->per_channel = qcode(q, "weights", pc, 2);
    pt->wscale = qcode(q, "weight_scale", sweep_wscale_names, 3);
    pt->round_even = qcode(q, "rounding", rnd, 2);
    pt->head_float = qcode(q, "head", int8_float, 2);
    pt->first_float = qcode(q, "first", int8_float, 2);
    pt->equalize = qcode(q, "equalize", off_on, 2);
    pt->bias_correction = qcode(q, "bias_correction", bc, 3);
    snprintf(pt->calib, sizeof pt->calib, "%s", cli_qconf_get(q, "calib", b, sizeof b));
    snprintf(pt->skip, sizeof pt->skip, "%s", cli_qconf_get(q, "skip_layers", b, sizeof b));
    pt->float_convs = r->float_convs;
    pt->int8_convs = r->int8_convs;
    pt->qtext = qconfig_line(q);
}

/* The quantizer's callbacks during a sweep: the sweep's bar over every image of every
 * point, and a bar of their own for the steps between (FP32, calibration). */
typedef struct sweep_io {
    cli_bar sweep, step;
    cli_bar *cur;             /* the bar drawing now */
    int in_point, point, points;
} sweep_io;

static void sio_clear(cli_bar *b)
{
    if (b->tty) fprintf(stderr, "\r\033[K");
    b->last = -1;
}

static void sio_stage(void *ctx, const char *label)
{
    sweep_io *s = ctx;
    if (s->in_point && !strncmp(label, "evaluating", 10)) {   /* the point's evaluation: the sweep's bar */
        if (s->cur != &s->sweep) sio_clear(&s->sweep);
        s->cur = &s->sweep;
        return;
    }
    if (s->cur == &s->sweep) sio_clear(&s->sweep);
    cli_progress_start(&s->step, label);
    s->cur = &s->step;
}

static void sio_progress(void *ctx, int done, int total)
{
    sweep_io *s = ctx;
    if (s->cur != &s->sweep) {
        cli_progress(s->cur, done, total);
        return;
    }
    long t = (long)total * s->points, d = (long)total * s->point + done;
    if (t > 1 << 30) { d = d * 1000 / t; t = 1000; }    /* cli_progress counts in int */
    cli_progress(&s->sweep, (int)d, (int)t);
}

static void sio_warn(void *ctx, const char *msg) { cli_warn(((sweep_io *)ctx)->cur, msg); }
static void sio_note(void *ctx, const char *msg)
{
    cli_bar *b = ((sweep_io *)ctx)->cur;
    if (b->tty) fprintf(stderr, "\r\033[K");
    fprintf(stderr, "%s\n", msg);
    b->last = -1;
}

static int sweep_latency(void *ctx, const yq_model *m, double *ms) { return cli_lat_measure(ctx, m, ms); }

/* Rank 0 over MPI: the next finished point from another rank (block 0: only if one is
 * waiting), appended to points.jsonl and read back into pts as --resume reads it. */
static yq_status sweep_receive(const grid *G, const yq_qconf *base, point *pts, const sweep_ctx *X, FILE *jf, int block,
                               int *remote, yq_error *err)
{
    for (;;) {
        int src = 0, tag = 0;
        char *line = NULL;
        size_t len = 0;
        int got = cli_par_recv(block, &src, &tag, &line, &len);
        if (got < 0) return cli_fail(err, YQ_ERR_IO, "rank 0: receiving a point failed (MPI)");
        if (!got) return YQ_OK;
        yq_status st = YQ_OK;
        yq_qconf *pq = NULL;
        char *asked = NULL;
        cJSON *one = cJSON_CreateArray(), *o = cJSON_Parse(line);
        if (tag < 0 || tag >= G->points) st = cli_fail(err, YQ_ERR_FORMAT, "rank %d sent point %d of %d", src, tag + 1, G->points);
        else if ((st = grid_point(G, tag, base, &pq, pts[tag].idx, err)) == YQ_OK && !(asked = qconfig_line(pq)))
            st = cli_fail(err, YQ_ERR_NOMEM, "out of memory");
        if (st == YQ_OK && (!one || !o)) st = cli_fail(err, YQ_ERR_FORMAT, "rank %d: point %d: not a points.jsonl line", src, tag + 1);
        if (st == YQ_OK) {
            cJSON_AddItemToArray(one, o);
            o = NULL;
            if (!sweep_point_load(one, asked, &pts[tag]))
                st = cli_fail(err, YQ_ERR_FORMAT, "rank %d: point %d: another qconfig than asked", src, tag + 1);
        }
        if (st == YQ_OK) {
            if (jf) {
                fwrite(line, 1, len, jf);
                fflush(jf);
            }
            const point *pt = &pts[tag];
            fprintf(stderr, "[%*d/%d] %-28s mAP %6.2f  drop %6.2f  (rank %d)\n", G->points >= 100 ? 3 : 2, tag + 1, G->points,
                    pt->name, 100 * pt->map, 100 * (X->fp.map - pt->map), src);
            --*remote;
        }
        cJSON_Delete(o);
        cJSON_Delete(one);
        free(asked);
        yq_qconf_free(pq);
        free(line);
        if (st != YQ_OK) return st;
        if (!block || !*remote) return YQ_OK;
    }
}

enum { OPT_VAL = CLI_OPT_CMD, OPT_ANN, OPT_LABELS, OPT_GRID, OPT_JSON, OPT_SQNR_IMAGES, OPT_DEVICE, OPT_EVAL_DEVICE,
       OPT_RESUME, OPT_LETTERBOX, OPT_NO_LETTERBOX };
static const struct option options[] = {
    CLI_HELP_OPTION, CLI_MODEL_OPTIONS, CLI_QUANT_OPTIONS, CLI_LAT_OPTIONS,
    { "val", required_argument, NULL, OPT_VAL },
    { "images", required_argument, NULL, OPT_VAL },
    { "ann", required_argument, NULL, OPT_ANN },
    { "labels", required_argument, NULL, OPT_LABELS },
    { "grid", required_argument, NULL, OPT_GRID },
    { "output", required_argument, NULL, CLI_OPT_OUTPUT },
    { "out", required_argument, NULL, CLI_OPT_OUTPUT },
    { "json", required_argument, NULL, OPT_JSON },
    { "sqnr-images", required_argument, NULL, OPT_SQNR_IMAGES },
    { "device", required_argument, NULL, OPT_DEVICE },
    { "eval-device", required_argument, NULL, OPT_EVAL_DEVICE },
    { "resume", no_argument, NULL, OPT_RESUME },
    { "letterbox", no_argument, NULL, OPT_LETTERBOX },
    { "no-letterbox", no_argument, NULL, OPT_NO_LETTERBOX },
    { NULL, 0, NULL, 0 },
};

int cmd_sweep(int argc, char **argv)
{
    cli_model_opt mo = { 0 };
    cli_quant_opt *qo = cli_quant_new();
    if (!qo) return 1;
    const char *val = NULL, *ann = NULL, *labels = NULL, *out = NULL, *json = NULL, *grid_text = NULL;
    int letterbox = -1, sqnr_images = 8, rc = 2, resume = 0;
    const char *eval_device = NULL;
    cli_lat lat;
    cli_lat_init(&lat);
    /* the command line as given, for the report (getopt_long reorders argv) */
    char **given = malloc(sizeof *given * (size_t)(argc + 1));
    if (!given) {
        fprintf(stderr, "yquant: out of memory\n");
        rc = 1;
        goto early;
    }
    memcpy(given, argv, sizeof *given * (size_t)argc);
    given[argc] = NULL;
    cli_getopt g;
    cli_getopt_begin(&g, "sweep", argc, argv, ":ho:", options);
    for (int c; (c = cli_getopt_next(&g)) != -1;) {
        int r = cli_model_arg(&mo, &g, c);
        if (!r) r = cli_quant_arg(qo, &g, c);
        if (!r) r = cli_lat_arg(&lat, &g, c);
        if (r) {
            if (r < 0) goto early;
            continue;
        }
        switch (c) {
        case 'h': case CLI_OPT_HELP: printf("%s\n%s", help, cli_quant_help); rc = 0; goto early;
        case OPT_VAL: val = g.arg; break;
        case OPT_ANN: ann = g.arg; break;
        case OPT_LABELS: labels = g.arg; break;
        case OPT_GRID: grid_text = g.arg; break;
        case 'o': case CLI_OPT_OUTPUT: out = g.arg; break;
        case OPT_JSON: json = g.arg; break;
        case OPT_DEVICE: if (cli_lat_device(&lat, g.name, g.arg) < 0) goto early; break;   /* the latency engine */
        case OPT_SQNR_IMAGES: if (cli_int(g.name, g.arg, 1, 100000, &sqnr_images)) goto early; break;
        case OPT_EVAL_DEVICE: eval_device = g.arg; break;
        case OPT_RESUME: resume = 1; break;
        case OPT_LETTERBOX: letterbox = 1; break;
        case OPT_NO_LETTERBOX: letterbox = 0; break;
        default: goto early;   /* '?': cli_getopt_next said why */
        }
    }
    for (int i = optind; i < argc; i++) {
        if (!strcmp(argv[i], "-")) { cli_getopt_unknown(&g, argv[i]); goto early; }
        if (!mo.model) mo.model = argv[i];
        else { cli_usage_error("sweep: one MODEL only"); goto early; }
    }
    const char *calib_dir = cli_quant_calib_dir(qo);
    if (!mo.model) { cli_usage_error("sweep: which MODEL?"); goto early; }
    if (!calib_dir) { cli_usage_error("sweep: --calib DIR is required"); goto early; }
    if (!val || !ann == !labels) { cli_usage_error("sweep: --val DIR and one of --ann FILE or --labels DIR are required"); goto early; }
    if (sqnr_images < 1 || sqnr_images > 1024) { cli_usage_error("sweep: --sqnr-images in 1..1024"); goto early; }
    int eval_dev = -2;        /* -2: the latency engine's device */
    if (eval_device) {
        yq_error e0;
        if (yq_device_parse(eval_device, &eval_dev, &e0) != YQ_OK) { cli_usage_error("sweep: --eval-device: %s", e0.msg); goto early; }
    }

    const int R = cli_par_rank(), NR = cli_par_size();
    yq_error err;
    grid G;
    yq_quantizer *q = NULL;
    yq_qconf *base = NULL, *pq = NULL;
    yq_dataset *ds = NULL;
    point *pts = NULL;
    yq_layer_error *le = NULL;
    int n_le = 0, le_images = 0;
    sweep_ctx X = { 0 };
    sweep_io sio = { 0 };
    char outbuf[1024], path[1100], png[1100], mpath[1024];
    rc = 1;
    if (sweep_grid_parse(&G, grid_text, &err) != YQ_OK) { rc = cli_usage_error("sweep: %s", err.msg); goto done; }
    sio.cur = &sio.step;
    yq_quant_io io = { sio_stage, sio_progress, sio_warn, sio_note, &sio };
    yq_quant_opt qopt;
    if (cli_quant_options(qo, &mo, letterbox, &qopt, &base, &err) != YQ_OK ||
        cli_model_path(mo.model, mpath, sizeof mpath, &err) != YQ_OK || yq_quantizer_new(mpath, &qopt, &io, &q, &err) != YQ_OK ||
        cli_load_dataset(val, ann, labels, &ds, &err) != YQ_OK)
        goto fail;
    const yq_model *fm = yq_quantizer_fp32(q);
    yq_model_about about;
    yq_model_describe(fm, &about);
    if (letterbox < 0) letterbox = yq_model_letterbox(fm);
    const char *cfg = about.cfg;
    if (yq_quantizer_check(q, base, &err) != YQ_OK) goto fail;
    if (!out) {
        const char *b = cli_base_name(cfg), *dot = strrchr(b, '.');
        snprintf(outbuf, sizeof outbuf, "%.*s-sweep", dot ? (int)(dot - b) : (int)strlen(b), b);
        out = outbuf;
    }
    {   /* the calibration folder, before anything long runs */
        char **paths;
        int n_cal, sk;
        if (yq_list_images(calib_dir, &paths, &n_cal, &sk, cli_warn, NULL, &err) != YQ_OK) goto fail;
        X.calib_images = n_cal;
        yq_list_images_free(paths, n_cal);
    }
    {
        const char *ins[] = { mo.model, mo.weights, about.cfg, about.weights, calib_dir, val, ann, labels };
        if (cli_check_report(ins, (int)(sizeof ins / sizeof *ins), out, json)) goto done;
    }
    if (cli_make_dirs(out, &err) != YQ_OK) goto fail;
    if (NR > 1) {   /* rank R: the GPU after the one asked for, R places on (modulo the GPUs); a tuning log of its own */
        int ngpu = lat.want ? yq_gpu_count() : 0;
        if (ngpu > 0) lat.device = (lat.device + R) % ngpu;
        if (R > 0) {
            char rl[sizeof lat.log_buf];
            if (lat.tune_log) snprintf(rl, sizeof rl, "%s.rank%d", lat.tune_log, R);
            else snprintf(rl, sizeof rl, "%s/tune.rank%d.jsonl", out, R);
            snprintf(lat.log_buf, sizeof lat.log_buf, "%s", rl);
            lat.tune_log = lat.log_buf;
        }
    }
    cli_lat_start(&lat, out);
    X.lat = &lat;
    /* The mAP on the GPU when the latency engine is the GPU (bit-exact int8 layers). */
    if (eval_dev == -2) eval_dev = lat.gpu ? lat.device : -1;
    if (eval_dev >= 0 && !lat.gpu) {
        rc = cli_usage_error("sweep: --eval-device cuda needs the GPU latency engine (the CPU latency is the CPU evaluation's)");
        goto done;
    }
    pts = calloc((size_t)G.points, sizeof *pts);
    if (!pts) { cli_fail(&err, YQ_ERR_NOMEM, "out of memory"); goto fail; }
    /* Every point's qconfig must fit the model before anything runs. */
    for (int p = 0; p < G.points; p++) {
        if (grid_point(&G, p, base, &pq, pts[p].idx, &err) != YQ_OK) goto fail;
        yq_status cst = yq_quantizer_check(q, pq, &err);
        yq_qconf_free(pq);
        pq = NULL;
        if (cst != YQ_OK) goto fail;
        sweep_point_name(&G, pts[p].idx, pts[p].name, sizeof pts[p].name);
    }
    if (R == 0)
        fprintf(stderr, "sweep: %d points over %d images of %s (%s); latency: %s%s%s%s\n", G.points, ds->n_images, val,
                letterbox ? "letterbox" : "plain resize", lat.label,
                eval_dev >= 0 ? "; mAP on the GPU int8 engine, float layers " : "", eval_dev >= 0 ? CLI_GPU_FLOAT : "",
                NR > 1 ? "; the points over the MPI ranks" : "");

    /* FP32 once, on the model as loaded (rank 0: the reports are its). */
    if (R == 0) {
        if (yq_quantizer_score(q, NULL, ds, NULL, &X.fp, &err) != YQ_OK) goto fail;
        fprintf(stderr, "fp32: mAP %.2f, mAP50 %.2f, %.2f ms/img (CPU FP32 engine)\n", 100 * X.fp.map, 100 * X.fp.map50,
                X.fp.ms_engine);
    }

    /* Every finished point goes to points.jsonl at once (--resume reads it back). */
    snprintf(path, sizeof path, "%s/points.jsonl", out);
    char lat_label0[sizeof lat.label];
    snprintf(lat_label0, sizeof lat_label0, "%s", lat.label);
    run_id rid = { cfg, val, lat_label0, ds->n_images };
    /* Rank 0 alone reads and writes points.jsonl (over MPI the other ranks send it their
     * finished points' lines: see below). */
    cJSON *saved = resume && R == 0 ? sweep_points_read(path, &rid) : NULL;   /* (before the file is opened for appending) */
    FILE *jf = R == 0 ? fopen(path, resume ? "a" : "w") : NULL;
    if (!jf && R == 0) fprintf(stderr, "warning: %s: cannot write (finished points are not kept for --resume)\n", path);
    int n_resumed = 0;
    /* Which rank runs each point: -1 done (read back by --resume), else the points left go
     * round-robin over the ranks (one process: all its own). */
    int *owner = calloc((size_t)G.points, sizeof *owner);
    if (!owner) { cli_fail(&err, YQ_ERR_NOMEM, "out of memory"); goto fail_jf; }
    for (int p = 0; p < G.points && saved; p++) {
        if (grid_point(&G, p, base, &pq, pts[p].idx, &err) != YQ_OK) goto fail_jf;
        char *asked = qconfig_line(pq);
        yq_qconf_free(pq);
        pq = NULL;
        if (!asked) { cli_fail(&err, YQ_ERR_NOMEM, "out of memory"); goto fail_jf; }
        if (sweep_point_load(saved, asked, &pts[p])) owner[p] = -1;
        free(asked);
    }
    if (cli_par_bcast(owner, sizeof *owner * (size_t)G.points)) { cli_fail(&err, YQ_ERR_IO, "rank %d: MPI broadcast failed", R); goto fail_jf; }
    for (int p = 0, k = 0; p < G.points; p++)
        if (owner[p] >= 0) owner[p] = k++ % NR;
    int remote = 0;   /* rank 0: points still to come from the other ranks */
    for (int p = 0; p < G.points; p++) remote += owner[p] > 0;

    cli_progress_start(&sio.sweep, "sweep");
    sio.points = G.points;
    for (int p = 0; p < G.points; p++) {
        point *pt = &pts[p];
        sio.point = p;
        if (R == 0 && remote && sweep_receive(&G, base, pts, &X, jf, 0, &remote, &err) != YQ_OK) goto fail_jf;
        if (owner[p] < 0 && R == 0) {
            pt->resumed = 1;
            n_resumed++;
            sio_clear(&sio.sweep);
            fprintf(stderr, "[%*d/%d] %-28s mAP %6.2f  drop %6.2f  (from points.jsonl)\n", G.points >= 100 ? 3 : 2, p + 1,
                    G.points, pt->name, 100 * pt->map, 100 * (X.fp.map - pt->map));
            sio.cur = &sio.sweep;
            sio_progress(&sio, ds->n_images, ds->n_images);
            continue;
        }
        if (owner[p] != R) continue;
        if (grid_point(&G, p, base, &pq, pt->idx, &err) != YQ_OK) goto fail_jf;
        char *asked = qconfig_line(pq);
        if (!asked) { cli_fail(&err, YQ_ERR_NOMEM, "out of memory"); goto fail_jf; }
        /* the point's rewrite, evaluation and latency (a GPU evaluation that fails: the CPU
         * from here on, as the library warned) */
        char edev[32];
        snprintf(edev, sizeof edev, eval_dev >= 0 ? "cuda:%d" : "cpu", eval_dev);
        yq_point_opt po = { .device = edev, .latency = sweep_latency, .ctx = &lat };
        yq_point_result r;
        sio.in_point = 1;
        yq_status pst = yq_quantizer_point(q, pq, ds, &po, &r, &err);
        sio.in_point = 0;
        if (pst != YQ_OK) { free(asked); goto fail_jf; }
        if (eval_dev >= 0 && !r.score.gpu) eval_dev = -1;
        fill_settings(pt, pq, &r);
        yq_qconf_free(r.resolved);
        yq_qconf_free(pq);
        pq = NULL;
        pt->map = r.score.map;
        pt->map50 = r.score.map50;
        pt->map75 = r.score.map75;
        pt->eval_gpu = r.score.gpu;
        pt->cpu_ms = r.score.gpu ? (double)NAN : r.score.ms_engine;
        pt->cpu_ms_mean = r.score.gpu ? (double)NAN : r.score.ms_engine_mean;
        pt->ms_wall = r.score.ms_wall;
        char gms[48] = "", cms[48] = "  (mAP on the GPU)";
        if (r.latency_ms >= 0) {
            pt->gpu_ms = r.latency_ms;
            pt->gpu_ms_mean = lat.last_mean;
            snprintf(gms, sizeof gms, "  %8.3f ms GPU", pt->gpu_ms);
        }
        if (!r.score.gpu) snprintf(cms, sizeof cms, "  %8.2f ms/img CPU", pt->cpu_ms);
        if (R > 0) {   /* to rank 0, as its points.jsonl line */
            char *line = NULL;
            size_t len = 0;
            FILE *mf = open_memstream(&line, &len);
            if (mf) {
                sweep_point_save(mf, &rid, asked, pt);
                fclose(mf);
            }
            free(asked);
            int bad = !mf || !line || cli_par_send(0, p, line, len);
            free(line);
            if (bad) { cli_fail(&err, YQ_ERR_IO, "rank %d: sending point %d to rank 0 failed", R, p + 1); goto fail_jf; }
            continue;
        }
        sweep_point_save(jf, &rid, asked, pt);
        free(asked);
        sio_clear(&sio.sweep);
        fprintf(stderr, "[%*d/%d] %-28s mAP %6.2f  drop %6.2f%s%s\n", G.points >= 100 ? 3 : 2, p + 1, G.points, pt->name,
                100 * pt->map, 100 * (X.fp.map - pt->map), cms, gms);
        sio.cur = &sio.sweep;
        sio_progress(&sio, ds->n_images, ds->n_images);
    }
    free(owner);
    owner = NULL;
    if (R > 0) {   /* the reports are rank 0's */
        rc = 0;
        goto done;
    }
    while (remote)
        if (sweep_receive(&G, base, pts, &X, jf, 1, &remote, &err) != YQ_OK) goto fail_jf;
    if (jf) fclose(jf);
    jf = NULL;
    cJSON_Delete(saved);
    saved = NULL;
    if (n_resumed) fprintf(stderr, "sweep: %d of %d points from %s\n", n_resumed, G.points, path);

    /* One engine for every point: the GPU's unless it failed on the way (then the CPU's,
     * measured for every point by the evaluation). */
    for (int p = 0; p < G.points; p++)
        if (!lat.gpu && isnan(pts[p].cpu_ms)) {
            cli_fail(&err, YQ_ERR_CUDA, "the GPU failed during the sweep and point %d was evaluated there, without a CPU "
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
        if (!cp) { cli_fail(&err, YQ_ERR_NOMEM, "out of memory"); goto fail; }
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
    /* The chosen point's per-layer SQNR. */
    if (X.chosen >= 0) {
        int idx[GRID_KEYS];
        sio.cur = &sio.step;
        if (grid_point(&G, X.chosen, base, &pq, idx, &err) != YQ_OK ||
            yq_quantizer_layer_errors(q, pq, sqnr_images, &le, &n_le, &le_images, &err) != YQ_OK)
            goto fail;
    }
    X.cfg = cfg;
    X.val_dir = val;
    X.calib_dir = calib_dir;
    X.grid_text = grid_text;
    X.images = X.fp.images;
    X.letterbox = letterbox;
    X.w = 1100;
    X.h = 700;
    X.argc = argc - 1;
    X.argv = given + 1;
    yq_model_input(fm, NULL, &X.in_h, &X.in_w);

    snprintf(path, sizeof path, "%s/sweep.csv", out);
    if (sweep_write_csv(&X, path, &err) != YQ_OK) goto fail;
    snprintf(png, sizeof png, "%s/pareto.png", out);
    if (sweep_write_chart(&X, png, &err) != YQ_OK) goto fail;
    snprintf(path, sizeof path, "%s/report.html", out);
    if (sweep_write_html(&X, path, png, le, n_le, le_images, &err) != YQ_OK) goto fail;

    /* The table. */
    printf("\n%s: %d points on %d images; latency: %s, median ms per %s\n", cfg, G.points, X.images, lat.label,
           lat.gpu && lat.batch > 1 ? "forward" : "image");
    printf("  %4s  %-30s %8s %8s %8s %9s  %s\n", "#", "name", "mAP", "mAP50", "drop", lat.gpu ? "GPU ms" : "CPU ms", "");
    printf("  %4s  %-30s %8.2f %8.2f %8s %9s  (CPU FP32 engine: %.2f ms/img)\n", "", "FP32", 100 * X.fp.map,
           100 * X.fp.map50, "", "", X.fp.ms_engine);
    for (int p = 0; p < G.points; p++)
        printf("  %4d  %-30s %8.2f %8.2f %8.2f %9.3f  %s\n", p + 1, pts[p].name, 100 * pts[p].map, 100 * pts[p].map50,
               100 * (X.fp.map - pts[p].map), pts[p].ms, pts[p].chosen ? "front, chosen" : pts[p].front ? "front" : "");
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
        cJSON *root = sweep_points_json(&X);
        rc = cli_write_json(json, root);
        cJSON_Delete(root);
    }
    goto done;
fail_jf:
    if (jf) fclose(jf);
    cJSON_Delete(saved);
    free(owner);
fail:
    cli_error(&err);
done:
    free(le);
    if (pts) for (int p = 0; p < G.points; p++) free(pts[p].qtext);
    free(pts);
    free(G.buf);
    yq_dataset_free(ds);
    yq_qconf_free(pq);
    yq_qconf_free(base);
    yq_quantizer_free(q);
early:
    free(given);
    cli_quant_free(qo);
    return rc;
}
