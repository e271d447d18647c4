/* pipeline/quantize.h run from C, without the command line: calibration with and without
 * its cache (a hit gives the same statistics byte for byte), the rewrite into int8 with a
 * measured choice of float layers written back into the qconfig, its callbacks, its
 * errors, and that it never prints.  The tiny fixture network with synthetic weights, and
 * yolo-fastest-1.1, on the shared sample images ($YQ_DATA/datasets/darknet-samples). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "tests/test.h"
#include "calib/observe.h"
#include "pipeline/quantize.h"
#include "tests/test_rewrite.h"
#include "yq_quant.h"
#include "calib/hist.h"
#include "datasets/image.h"
#include "datasets/labels.h"
#include "runtime/evaluate.h"
#include "runtime/package.h"
#include "runtime/session.h"

static yq_error err;
static char samples[600], tmpdir[64];

static void need_samples(void)
{
    snprintf(samples, sizeof samples, "%s/datasets/darknet-samples", test_data_dir());
    if (access(samples, R_OK)) TEST_SKIP("%s not found (set YQ_DATA)", samples);
}

static yq_graph *tiny(void)
{
    yq_import_opt o = { .synthetic = 1, .seed = 7 };
    yq_graph *g = NULL;
    CHECKF(yq_darknet_load("tests/fixtures/tiny.cfg", NULL, &o, &g, &err) == YQ_OK, "%s", err.msg);
    return g;
}

/* What the callbacks saw. */
typedef struct seen { int stages, progress_done, progress_total, warns, notes; char stage[64], note[1100]; } seen;
static void on_stage(void *ctx, const char *label)
{
    seen *s = ctx;
    s->stages++;
    snprintf(s->stage, sizeof s->stage, "%s", label);
}
static void on_progress(void *ctx, int done, int total)
{
    seen *s = ctx;
    s->progress_done = done;
    s->progress_total = total;
}
static void on_warn(void *ctx, const char *msg)
{
    ((seen *)ctx)->warns++;
    printf("# warning: %s\n", msg);
}
static void on_note(void *ctx, const char *msg)
{
    seen *s = ctx;
    s->notes++;
    snprintf(s->note, sizeof s->note, "%s", msg);
}

/* stderr into a file while f runs: the pipeline prints nothing. */
static long stderr_bytes_during(void (*f)(void *), void *arg)
{
    char path[96];
    snprintf(path, sizeof path, "%s/stderr.txt", tmpdir);
    fflush(stderr);
    int saved = dup(2);
    FILE *o = fopen(path, "w");
    if (!o || saved < 0) return -1;
    dup2(fileno(o), 2);
    f(arg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    long n = -1;
    fclose(o);
    FILE *r = fopen(path, "rb");
    if (r && fseek(r, 0, SEEK_END) == 0) n = ftell(r);
    if (r) fclose(r);
    return n;
}

typedef struct run_ctx {
    yq_pipe_calib c;
    yq_qconfig qc;
    yq_graph *g, *eq;
    yq_pipe_io io;
    yq_calib_stats *cs;
    yq_status st;
} run_ctx;
static void run_calibrate(void *p)
{
    run_ctx *r = p;
    yq_graph_free(r->eq);
    r->st = yq_pipe_calibrate(&r->c, &r->qc, r->g, 0, &r->io, &r->eq, &r->cs, &err);
}

/* A conv's weights, bias and every node's shape and type as one sum: equal before and
 * after means the graph was not changed. */
static double graph_sum(const yq_graph *g)
{
    double s = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const yq_node *n = &g->nodes[i];
        s += n->op * 7.0 + n->out.c + n->out.h * 3.0 + n->act;
        for (long k = 0; n->w && k < n->n_w; k++) s += (double)n->w[k] * (double)(k % 13 + 1);
        for (int k = 0; n->b && k < n->p.conv.filters; k++) s += (double)n->b[k];
    }
    return s;
}

static void t_calibrate(void)
{
    need_samples();
    static run_ctx r;
    seen s = { 0 };
    yq_qconfig_defaults(&r.qc);
    r.g = tiny();
    r.c = (yq_pipe_calib){ .images = samples, .no_cache = 1, .device = "cpu" };
    r.io = (yq_pipe_io){ on_stage, on_progress, on_warn, on_note, &s };
    double before = graph_sum(r.g);
    long printed = stderr_bytes_during(run_calibrate, &r);
    CHECKF(r.st == YQ_OK, "%s", err.msg);
    CHECKF(printed == 0, "the pipeline printed %ld bytes", printed);
    CHECK(r.cs != NULL);
    /* the model graph as it was; equalization made a copy of its own */
    CHECKF(graph_sum(r.g) == before, "calibration changed the graph it was given");
    CHECKF(r.qc.equalize ? r.eq && r.eq != r.g && r.eq->n_nodes == r.g->n_nodes : !r.eq,
           "equalize %d: copy %p", r.qc.equalize, (void *)r.eq);
    /* equalization (on by default) observes the equalized graph again */
    CHECKF(r.qc.equalize ? s.stages == 2 && !strcmp(s.stage, "recalibrating") : s.stages == 1 && !strcmp(s.stage, "calibrating"),
           "%d stages, the last '%s'", s.stages, s.stage);
    CHECKF(s.progress_total >= 7 && s.progress_done == s.progress_total, "progress %d/%d", s.progress_done,
           s.progress_total);
    CHECK(s.notes == 0);                /* (warnings: files of the folder that are not images) */
    /* the same images through a cache: stored, then a hit with the same statistics */
    char cache[96];
    snprintf(cache, sizeof cache, "%s/calib.h5", tmpdir);
    static run_ctx r2;
    seen s2 = { 0 };
    r2 = r;
    r2.cs = NULL;
    r2.eq = NULL;
    r2.c.no_cache = 0;
    r2.c.cache = cache;
    r2.io.ctx = &s2;
    run_calibrate(&r2);
    CHECKF(r2.st == YQ_OK && s2.notes == 0 && !access(cache, R_OK), "store: %s", err.msg);
    yq_calib_stats_free(r2.cs);
    r2.cs = NULL;
    run_calibrate(&r2);
    /* a hit per pass: calibration, and recalibration after equalizing */
    CHECKF(r2.st == YQ_OK && s2.notes == (r.qc.equalize ? 2 : 1) && strstr(s2.note, "calibration: cache hit"),
           "hit: notes %d '%s'", s2.notes, s2.note);
    printf("# %s\n", s2.note);
    char why[256] = "";
    CHECKF(!yq_calib_stats_cmp(r.cs, r2.cs, r.g, why, sizeof why), "the cache's statistics differ: %s", why);
    CHECKF(!r.eq == !r2.eq && (!r.eq || graph_sum(r.eq) == graph_sum(r2.eq)), "two equalized copies differ");
    yq_calib_stats_free(r2.cs);
    /* a cache that cannot be written: one warning, and the statistics all the same */
    seen s3 = { 0 };
    r2.cs = NULL;
    r2.c.cache = "/proc/yquant-no-such-dir/calib.h5";
    r2.io.ctx = &s3;
    run_calibrate(&r2);
    CHECKF(r2.st == YQ_OK && s3.warns == s.warns + 1, "unwritable cache: %s, %d warnings", yq_status_str(r2.st), s3.warns);
    yq_calib_stats_free(r2.cs);
    yq_calib_stats_free(r.cs);
    yq_graph_free(r2.eq);
    yq_graph_free(r.eq);
    yq_graph_free(r.g);
}

/* yolo-fastest-1.1's folder, cfg and weights in the shared data (the test skips without). */
typedef struct fastest { char dir[600], cfg[700], weights[700]; } fastest;
static void need_fastest(fastest *f)
{
    snprintf(f->dir, sizeof f->dir, "%s/models/yolo-fastest-1.1", test_data_dir());
    snprintf(f->cfg, sizeof f->cfg, "%s/yolo-fastest-1.1.cfg", f->dir);
    snprintf(f->weights, sizeof f->weights, "%s/yolo-fastest-1.1.weights", f->dir);
    if (access(f->cfg, R_OK) || access(f->weights, R_OK)) TEST_SKIP("%s not found (set YQ_DATA)", f->dir);
}

/* yolo-fastest-1.1 (its weights) with keep_float 2: the pipeline measures, keeps layers
 * in float, and writes the choice into the resolved qconfig as per-layer skips, leaving
 * the request as it was; a rewrite with the resolved qconfig gives the same graph; the
 * plan names the chosen layers and why every conv runs as it does. */
static void t_quantize(void)
{
    need_samples();
    fastest f;
    need_fastest(&f);
    yq_import_opt o = { 0 };
    yq_graph *g = NULL;
    CHECKF(yq_darknet_load(f.cfg, f.weights, &o, &g, &err) == YQ_OK, "%s", err.msg);
    yq_qconfig *qc = malloc(sizeof *qc);
    CHECK(qc);
    yq_qconfig_defaults(qc);
    qc->keep_float = 2;
    qc->thresh_search = 3;   /* both measured choices: the search runs on keep_float's rewrite */
    yq_pipe_calib c = { .images = samples, .no_cache = 1, .device = "cpu" };
    yq_calib_stats *cs = NULL;
    yq_graph *eq = NULL;
    double sum0 = graph_sum(g);
    CHECKF(yq_pipe_calibrate(&c, qc, g, 0, NULL, &eq, &cs, &err) == YQ_OK, "%s", err.msg);   /* no callbacks at all */
    /* equalization (on by default) changed a copy, not the model's graph */
    CHECKF(eq && graph_sum(g) == sum0 && graph_sum(eq) != sum0, "equalized copy %p; the graph %s", (void *)eq,
           graph_sum(g) == sum0 ? "unchanged" : "changed");
    if (eq) {                           /* equalized: the copy is the graph to rewrite */
        yq_graph_free(g);
        g = eq;
    }
    yq_qconfig *rq = malloc(sizeof *rq), *before = malloc(sizeof *before);
    CHECK(rq && before);
    *before = *qc;
    yq_graph *q8 = NULL;
    double fp_sum = graph_sum(g);
    CHECKF(yq_pipe_quantize(&c, qc, rq, g, cs, 0, NULL, &q8, &err) == YQ_OK, "%s", err.msg);
    /* a new graph: the one given is as it was (FP32, the same weights) */
    CHECK(q8 && q8 != g && q8->q != NULL && q8->base == g && g->q == NULL && graph_sum(g) == fp_sum);
    q8->owned_base = g;
    g = q8;
    CHECKF(!memcmp(before, qc, sizeof *qc), "the request changed");
    int skipped = 0, convs = 0, agree = 1, asked = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == YQ_OP_CONV) {
            convs++;
            int sk = yq_qc_skip(rq, g->nodes[i].layer) != 0;
            skipped += sk;
            asked += yq_qc_skip(qc, g->nodes[i].layer) != 0;
            if (sk && !g->q[i].float_op) agree = 0;
        }
    printf("# yolo-fastest-1.1, keep_float 2: %d of %d convs kept float\n", skipped, convs);
    CHECKF(rq->keep_float == 0 && rq->thresh_search == 0 && qc->keep_float == 2 && asked == 0 && skipped >= 1 &&
           skipped <= 2 && agree,
           "keep_float %d (asked %d), %d of %d convs skipped (%d asked)%s", rq->keep_float, qc->keep_float, skipped, convs,
           asked, agree ? "" : ", not all float in the graph");
    /* the plan: the chosen convs as keep_float's, every conv's dtype as the graph runs it */
    char *plan = yq_pipe_plan_json(g, qc, rq);
    CHECK(plan);
    printf("# plan: %.160s...\n", plan ? plan : "");
    int n_chosen = 0, n_keep = 0, n_conv = 0, dtypes_agree = 1;
    cJSON *pj = plan ? cJSON_Parse(plan) : NULL, *it;
    CHECK(pj);
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(pj, "chosen_float")) {
        n_chosen++;
        CHECK(yq_qc_skip(rq, it->valueint) && !yq_qc_skip(qc, it->valueint));
    }
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(pj, "nodes")) {
        int L = cJSON_GetObjectItem(it, "layer")->valueint;
        const char *op = cJSON_GetObjectItem(it, "op")->valuestring, *dt = cJSON_GetObjectItem(it, "dtype")->valuestring;
        const char *why = cJSON_GetObjectItem(it, "why")->valuestring;
        if (strcmp(op, "conv")) continue;
        n_conv++;
        int id = -1;
        for (int i = 1; i < g->n_nodes; i++)
            if (g->nodes[i].layer == L) id = i;
        CHECK(id > 0);
        if (id > 0 && (strcmp(dt, "float") == 0) != (g->q[id].float_op != 0)) dtypes_agree = 0;
        n_keep += !strcmp(why, "keep_float");
        if (!strcmp(dt, "int8") != !strcmp(why, "int8")) dtypes_agree = 0;
    }
    CHECKF(n_chosen == skipped && n_keep == skipped && n_conv == convs && dtypes_agree &&
           cJSON_GetObjectItem(pj, "float_convs")->valueint + cJSON_GetObjectItem(pj, "int8_convs")->valueint == convs,
           "%d chosen, %d keep_float, %d of %d convs listed, dtypes %s", n_chosen, n_keep, n_conv, convs,
           dtypes_agree ? "agree" : "disagree");
    cJSON_Delete(pj);
    free(plan);
    /* the resolved qconfig reproduces the graph (the same float convs) */
    uint8_t *fl = malloc((size_t)g->n_nodes);
    CHECK(fl);
    for (int i = 0; i < g->n_nodes; i++) fl[i] = g->q[i].float_op;
    test_unrewrite(&g);
    CHECKF(test_rewrite(&g, cs, rq, &err) == YQ_OK, "%s", err.msg);
    for (int i = 0; i < g->n_nodes; i++) CHECKF(fl[i] == g->q[i].float_op, "node %d", i);
    free(fl);
    yq_calib_stats_free(cs);
    yq_graph_free(g);
    free(qc);
    free(rq);
    free(before);
}

static void t_errors(void)
{
    yq_graph *g = tiny();
    yq_qconfig *qc = malloc(sizeof *qc);
    CHECK(g && qc);
    yq_qconfig_defaults(qc);
    yq_calib_stats *cs = (yq_calib_stats *)1;
    yq_pipe_calib c = { .images = "/nonexistent/images", .no_cache = 1, .device = "cpu" };
    yq_graph *eq = (yq_graph *)1;
    yq_status st = yq_pipe_calibrate(&c, qc, g, 0, NULL, &eq, &cs, &err);
    CHECKF(st != YQ_OK && cs == NULL && eq == NULL && strstr(err.msg, "/nonexistent/images"), "%s: %s", yq_status_str(st),
           err.msg);
    printf("# %s\n", err.msg);
    c.images = ".";
    c.device = "tpu";
    st = yq_pipe_calibrate(&c, qc, g, 0, NULL, &eq, &cs, &err);
    CHECKF(st != YQ_OK && eq == NULL && strstr(err.msg, "tpu"), "%s: %s", yq_status_str(st), err.msg);
    printf("# %s\n", err.msg);
    yq_graph_free(g);
    free(qc);
}

/* ---- the public API (include/yq_quant.h) ---------------------------------------- */

static void t_qconf(void)
{
    yq_qconf *q = NULL, *r = NULL;
    CHECKF(yq_qconf_new(&q, &err) == YQ_OK, "%s", err.msg);
    char *t0 = yq_qconf_text(q);
    CHECK(t0 && strstr(t0, "bits = 8\n"));
    CHECKF(yq_qconf_set(q, "bits", "7", &err) == YQ_OK && yq_qconf_set(q, "head", "int8", &err) == YQ_OK, "%s", err.msg);
    char *t1 = yq_qconf_text(q);
    CHECKF(t1 && strstr(t1, "bits = 7\n") && strstr(t1, "head = int8\n"), "%s", t1 ? t1 : "(null)");
    /* refused: named in the message, the handle unchanged */
    yq_status st = yq_qconf_set(q, "no_such_key", "1", &err);
    CHECKF(st == YQ_ERR_INVALID_ARG && strstr(err.msg, "no_such_key"), "%s: %s", yq_status_str(st), err.msg);
    printf("# %s\n", err.msg);
    st = yq_qconf_set(q, "bits", "99", &err);
    CHECKF(st != YQ_OK && strstr(err.msg, "99"), "%s: %s", yq_status_str(st), err.msg);
    char *t2 = yq_qconf_text(q);
    CHECK(t2 && !strcmp(t1, t2));
    /* the text is a qconfig file that reads back to the same qconfig */
    char path[96];
    snprintf(path, sizeof path, "%s/q.qconfig", tmpdir);
    FILE *f = fopen(path, "w");
    CHECK(f && fputs(t1, f) >= 0 && fclose(f) == 0);
    CHECKF(yq_qconf_load(path, &r, &err) == YQ_OK, "%s", err.msg);
    char *t3 = yq_qconf_text(r);
    CHECKF(t3 && !strcmp(t1, t3), "read back:\n%s", t3 ? t3 : "(null)");
    yq_qconf *none = (yq_qconf *)1;
    st = yq_qconf_load("/nonexistent/q.qconfig", &none, &err);
    CHECKF(st != YQ_OK && none == NULL && strstr(err.msg, "/nonexistent/q.qconfig"), "%s", err.msg);
    free(t0);
    free(t1);
    free(t2);
    free(t3);
    yq_qconf_free(q);
    yq_qconf_free(r);
    yq_qconf_free(NULL);
}

/* A COCO annotation file for two of the samples (boxes where the FP32 model finds the
 * dog, the bicycle and the truck, and a horse). */
static void write_ann(const char *path)
{
    static const struct { const char *file; int cat; double b[4]; } box[] = {
        { "dog.jpg", 18, { 109, 201, 289, 309 } }, { "dog.jpg", 2, { 116, 98, 473, 364 } },
        { "dog.jpg", 8, { 452, 80, 227, 85 } },    { "horses.jpg", 19, { 0, 215, 237, 161 } },
    };
    static const char *files[2] = { "dog.jpg", "horses.jpg" };
    FILE *f = fopen(path, "w");
    CHECK(f);
    fprintf(f, "{\"images\": [");
    for (int i = 0; i < 2; i++) {
        char p[700];
        int w = 0, h = 0;
        snprintf(p, sizeof p, "%s/%s", samples, files[i]);
        CHECKF(yq_image_size(p, &w, &h, &err) == YQ_OK, "%s", err.msg);
        fprintf(f, "%s{\"id\": %d, \"file_name\": \"%s\", \"width\": %d, \"height\": %d}", i ? ", " : "", i + 1, files[i], w, h);
    }
    fprintf(f, "], \"annotations\": [");
    for (int k = 0; k < 4; k++)
        fprintf(f, "%s{\"id\": %d, \"image_id\": %d, \"category_id\": %d, \"bbox\": [%g, %g, %g, %g], \"area\": %g, "
                   "\"iscrowd\": 0}", k ? ", " : "", k + 1, strcmp(box[k].file, "dog.jpg") ? 2 : 1, box[k].cat, box[k].b[0],
                box[k].b[1], box[k].b[2], box[k].b[3], box[k].b[2] * box[k].b[3]);
    fprintf(f, "], \"categories\": [{\"id\": 2, \"name\": \"bicycle\"}, {\"id\": 8, \"name\": \"truck\"}, "
               "{\"id\": 18, \"name\": \"dog\"}, {\"id\": 19, \"name\": \"horse\"}]}\n");
    CHECK(fclose(f) == 0);
}

typedef struct api_ctx {
    yq_quantizer *q;
    yq_qconf *qc;
    const char *path;
    yq_status st;
} api_ctx;
static void run_save(void *p)
{
    api_ctx *a = p;
    a->st = yq_quantizer_save(a->q, a->qc, a->path, &err);
}

/* A model folder as the CLI (and the quantizer) loads it: cfg, weights, class names. */
static yq_graph *load_folder(const char *dir)
{
    yq_model_paths mp;
    yq_import_opt imp = { 0 };
    yq_graph *g = NULL;
    CHECKF(yq_model_resolve(dir, NULL, &mp, &err) == YQ_OK && yq_darknet_load(mp.cfg, mp.weights, &imp, &g, &err) == YQ_OK &&
           (!mp.names[0] || yq_graph_load_names(g, mp.names, &err) == YQ_OK), "%s", err.msg);
    return g;
}

static int same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb, ca, cb;
    while (same && (ca = fgetc(fa)) == (cb = fgetc(fb)) && ca != EOF) {}
    if (same) same = ca == cb;
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

/* The quantizer on yolo-fastest-1.1 (its weights) calibrated on the samples: its package
 * is byte for byte the one pipeline/quantize.h and the package writer make by hand with
 * the same metadata; a second save reuses the calibration; evaluation gives the mAP of
 * yq_eval_detect and yq_coco_eval run by hand, FP32 and int8; and nothing is printed. */
static void t_quantizer(void)
{
    need_samples();
    fastest f;
    need_fastest(&f);
    const char *dir = f.dir;
    seen s = { 0 };
    yq_quant_io io = { on_stage, on_progress, on_warn, on_note, &s };
    yq_quant_opt o = yq_quant_defaults();
    o.calib = samples;
    o.no_cache = 1;
    o.device = "cpu";
    o.created_unix = 1764547200;       /* fixed: the same bytes */
    api_ctx a = { 0 };
    CHECKF(yq_quantizer_new(dir, &o, &io, &a.q, &err) == YQ_OK, "%s", err.msg);
    CHECKF(yq_qconf_new(&a.qc, &err) == YQ_OK && yq_qconf_set(a.qc, "keep_float", "1", &err) == YQ_OK, "%s", err.msg);
    char p1[96], p2[96], ann[96];
    snprintf(p1, sizeof p1, "%s/api.yqp", tmpdir);
    snprintf(p2, sizeof p2, "%s/hand.yqp", tmpdir);
    snprintf(ann, sizeof ann, "%s/ann.json", tmpdir);
    a.path = p1;
    long printed = stderr_bytes_during(run_save, &a);
    CHECKF(a.st == YQ_OK, "%s", err.msg);
    CHECKF(printed == 0, "the quantizer printed %ld bytes", printed);
    int stages = s.stages;
    CHECK(stages >= 1);

    /* by hand */
    yq_graph *g = load_folder(dir);
    yq_qconfig *qc = malloc(sizeof *qc);
    CHECK(qc);
    yq_qconfig_defaults(qc);
    qc->keep_float = 1;
    yq_pipe_calib c = { .images = samples, .no_cache = 1, .device = "cpu" };
    yq_calib_stats *cs = NULL;
    yq_graph *eq = NULL;
    CHECKF(yq_pipe_calibrate(&c, qc, g, g->letter_box, NULL, &eq, &cs, &err) == YQ_OK, "%s", err.msg);
    if (eq) {
        yq_graph_free(g);
        g = eq;
    }
    yq_qconfig *rq = malloc(sizeof *rq);
    CHECK(rq);
    yq_graph *q8 = NULL;
    CHECKF(yq_pipe_quantize(&c, qc, rq, g, cs, g->letter_box, NULL, &q8, &err) == YQ_OK, "%s", err.msg);
    q8->owned_base = g;
    g = q8;
    char *text = yq_qconfig_text(rq), *req = yq_qconfig_text(qc), *plan = yq_pipe_plan_json(g, qc, rq), method[128];
    yq_calib_method_str(&rq->calib, method, sizeof method);
    yq_package_meta meta = { .qconfig_text = text, .request_text = req, .plan_json = plan, .calib_method = method,
                             .calib_images = cs->images, .letterbox = g->letter_box, .created_unix = o.created_unix };
    memcpy(meta.calib_images_sha256, cs->images_sha256, 32);
    CHECKF(yq_package_write(p2, g, &meta, &err) == YQ_OK, "%s", err.msg);
    CHECKF(same_file(p1, p2), "%s and %s differ", p1, p2);
    printf("# yq_quantizer_save = pipeline + yq_package_write, byte for byte (%s)\n", p1);

    /* a second save of the same qconfig: no new calibration */
    CHECKF(yq_quantizer_save(a.q, a.qc, p1, &err) == YQ_OK && same_file(p1, p2), "%s", err.msg);
    CHECKF(s.stages == stages, "the second save calibrated again (%d stages, then %d)", stages, s.stages);

    /* evaluation */
    write_ann(ann);
    yq_dataset *ds = NULL;
    CHECKF(yq_dataset_load_coco(ann, samples, &ds, &err) == YQ_OK, "%s", err.msg);
    double m8[2], mf[2], h8[YQ_COCO_NSTATS], hf[YQ_COCO_NSTATS];
    yq_eval_opt eo = yq_eval_defaults();
    eo.letterbox = g->letter_box;
    yq_det *d = NULL;
    int n = 0, sk = 0;
    CHECKF(yq_eval_detect(g, ds, &eo, &d, &n, &sk, &err) == YQ_OK && yq_coco_eval(ds, d, n, h8, NULL, NULL, &err) == YQ_OK,
           "%s", err.msg);
    yq_coco_dets_free(d);
    test_unrewrite(&g);
    yq_graph_free(g);                   /* (the equalized copy) the FP32 model, fresh */
    g = load_folder(dir);
    CHECKF(yq_eval_detect(g, ds, &eo, &d, &n, &sk, &err) == YQ_OK && yq_coco_eval(ds, d, n, hf, NULL, NULL, &err) == YQ_OK,
           "%s", err.msg);
    yq_coco_dets_free(d);
    CHECKF(yq_quantizer_evaluate(a.q, NULL, ds, mf, &err) == YQ_OK, "%s", err.msg);
    CHECKF(yq_quantizer_evaluate(a.q, a.qc, ds, m8, &err) == YQ_OK, "%s", err.msg);
    printf("# two samples: FP32 mAP %.4f mAP50 %.4f, int8 %.4f %.4f\n", mf[0], mf[1], m8[0], m8[1]);
    CHECKF(mf[0] == hf[0] && mf[1] == hf[1] && m8[0] == h8[0] && m8[1] == h8[1],
           "FP32 %g %g against %g %g by hand, int8 %g %g against %g %g", mf[0], mf[1], hf[0], hf[1], m8[0], m8[1], h8[0], h8[1]);
    CHECKF(mf[1] > 0.5, "FP32 mAP50 %g on boxes where it detects", mf[1]);
    /* the package the quantizer wrote runs, and yq_quantizer_model is that package: the
     * same detections on the samples, byte for byte */
    yq_model *m = NULL, *mm = NULL;
    CHECKF(yq_model_open(p1, &m, &err) == YQ_OK && yq_model_is_int8(m), "%s", err.msg);
    CHECKF(yq_quantizer_model(a.q, a.qc, &mm, &err) == YQ_OK && yq_model_is_int8(mm), "%s", err.msg);
    {
        enum { CAP = 100 };
        char i0[700], i1[700];
        snprintf(i0, sizeof i0, "%s/dog.jpg", samples);
        snprintf(i1, sizeof i1, "%s/horses.jpg", samples);
        const char *imgs[2] = { i0, i1 };
        static yq_detection d1[2 * CAP], d2[2 * CAP];
        int c1[2] = { 0 }, c2[2] = { 0 };
        yq_session *s1 = NULL, *s2 = NULL;
        memset(d1, 0, sizeof d1);
        memset(d2, 0, sizeof d2);
        CHECKF(yq_session_new(m, "cpu", 2, &s1, &err) == YQ_OK && yq_session_new(mm, "cpu", 2, &s2, &err) == YQ_OK &&
               yq_session_run_images(s1, imgs, 2, d1, CAP, c1, &err) == YQ_OK &&
               yq_session_run_images(s2, imgs, 2, d2, CAP, c2, &err) == YQ_OK, "%s", err.msg);
        printf("# yq_quantizer_model: %d + %d detections, as the saved package's\n", c2[0], c2[1]);
        CHECKF(c1[0] > 0 && c1[0] == c2[0] && c1[1] == c2[1] && !memcmp(d1, d2, sizeof d1), "%d+%d against %d+%d detections",
               c2[0], c2[1], c1[0], c1[1]);
        yq_session_free(s1);
        yq_session_free(s2);
    }
    /* intent and decisions apart: the request, as asked; the resolved qconfig and the plan
     * as the package stores them */
    {
        yq_qconf *rs = NULL;
        char *pj = NULL, *asked0 = yq_qconf_text(a.qc);
        CHECKF(yq_quantizer_resolve(a.q, a.qc, &rs, &pj, &err) == YQ_OK && rs && pj, "%s", err.msg);
        char *asked1 = yq_qconf_text(a.qc), *rtext = yq_qconf_text(rs);
        const yq_package_info *pi = yq_model_info(m);
        CHECK(asked0 && asked1 && rtext && pi);
        CHECKF(!strcmp(asked0, asked1) && strstr(asked0, "keep_float = 1"), "the request changed or lost keep_float: %s",
               asked1);
        CHECKF(strstr(rtext, "keep_float = 0") && strstr(rtext, ".skip = on"), "resolved: %s", rtext);
        CHECKF(pi->request_text && !strcmp(pi->request_text, asked0), "the package's request: %s",
               pi->request_text ? pi->request_text : "(none)");
        CHECKF(!strcmp(pi->qconfig_text, rtext), "the package's qconfig is not the resolved one");
        CHECKF(pi->plan_json && !strcmp(pi->plan_json, pj), "the package's plan is not yq_quantizer_resolve's");
        cJSON *pl = cJSON_Parse(pj);
        CHECKF(pl && cJSON_GetArraySize(cJSON_GetObjectItem(pl, "chosen_float")) >= 1, "%s", pj);
        cJSON_Delete(pl);
        printf("# resolve: the request keeps keep_float = 1; the resolved qconfig and the plan as the package holds them\n");
        free(asked0);
        free(asked1);
        free(rtext);
        free(pj);
        yq_qconf_free(rs);
    }
    yq_model_free(m);
    yq_model_free(mm);

    /* errors */
    yq_quantizer *bad = (yq_quantizer *)1;
    yq_status st = yq_quantizer_new("/nonexistent/model.cfg", &o, NULL, &bad, &err);
    CHECKF(st != YQ_OK && bad == NULL && strstr(err.msg, "/nonexistent/model.cfg"), "%s", err.msg);
    yq_quant_opt o2 = o;
    o2.calib = NULL;
    st = yq_quantizer_new(dir, &o2, NULL, &bad, &err);
    CHECKF(st == YQ_ERR_INVALID_ARG && strstr(err.msg, "calibration"), "%s", err.msg);
    st = yq_quantizer_save(a.q, a.qc, "/nonexistent/dir/x.yqp", &err);
    CHECKF(st != YQ_OK && access("/nonexistent/dir/x.yqp", F_OK), "%s", err.msg);
    printf("# %s\n", err.msg);

    yq_dataset_free(ds);
    yq_calib_stats_free(cs);
    yq_graph_free(g);
    free(text);
    free(req);
    free(plan);
    free(rq);
    free(qc);
    yq_qconf_free(a.qc);
    yq_quantizer_free(a.q);
}

/* What the search's step callback saw. */
typedef struct steps_seen { int n, last_k, layers; double map[64], drop[64]; } steps_seen;
static void on_step(void *ctx, const yq_max_drop_step *st)
{
    int k = st->k, n_layers = st->n_layers;
    const int *layers = st->layers;
    double map = st->map, drop_pts = st->drop_pts;
    steps_seen *s = ctx;
    if (s->n < 64) {
        s->map[s->n] = map;
        s->drop[s->n] = drop_pts;
    }
    s->n++;
    s->last_k = k;
    s->layers += n_layers;
    printf("# step %d: %d layer%s (first %d), mAP %.4f, drop %.2f points\n", k, n_layers, n_layers == 1 ? "" : "s",
           n_layers ? layers[0] : -1, map, drop_pts);
}

typedef struct search_ctx {
    yq_quantizer *q;
    const yq_qconf *qc;
    const yq_dataset *ds;
    yq_max_drop_opt o;
    yq_qconf *chosen;
    yq_max_drop_result r;
    yq_status st;
} search_ctx;
static void run_search(void *p)
{
    search_ctx *a = p;
    a->st = yq_quantizer_max_drop(a->q, a->qc, a->ds, &a->o, &a->chosen, &a->r, &err);
}

/* yolo-fastest-1.1 in a quantizer (the sample images, the CPU, no cache; its callbacks
 * into *sn) and two of the samples labelled (write_ann) as *ds; skips without the data. */
static void fastest_quantizer(seen *sn, const char *ann_name, yq_quantizer **q, yq_dataset **ds)
{
    need_samples();
    fastest f;
    need_fastest(&f);
    yq_quant_opt o = yq_quant_defaults();
    o.calib = samples;
    o.no_cache = 1;
    o.device = "cpu";
    yq_quant_io io = { on_stage, on_progress, on_warn, on_note, sn };
    CHECKF(yq_quantizer_new(f.dir, &o, &io, q, &err) == YQ_OK, "%s", err.msg);
    char ann[96];
    snprintf(ann, sizeof ann, "%s/%s", tmpdir, ann_name);
    write_ann(ann);
    CHECKF(yq_dataset_load_coco(ann, samples, ds, &err) == YQ_OK, "%s", err.msg);
}

/* yq_quantizer_score is yq_quantizer_evaluate's mAP with timings (FP32 and int8, on the
 * CPU); yq_quantizer_max_drop's answer, saved and scored again, has the mAP the search
 * reported, keeps the layers it reported float, and the steps it reported are the ones its
 * callback saw; a budget met at once keeps every layer int8; nothing is printed; bad
 * arguments fail naming what is wrong. */

/* yq_sens_opt's exchange for a table measured in two parts by one process: part 1's call
 * keeps its rows (keep_rows), part 0's takes rows 1, 3, ... from them (fill_rows). */
typedef struct sens_parts_ctx { void *rows; size_t bytes; int filled; } sens_parts_ctx;

static int keep_rows(void *ctx, void *rows, size_t row_bytes, int n)
{
    sens_parts_ctx *c = ctx;
    free(c->rows);
    c->bytes = row_bytes * (size_t)n;
    c->rows = malloc(c->bytes ? c->bytes : 1);
    if (!c->rows) return -1;
    memcpy(c->rows, rows, c->bytes);
    return 0;
}

static int fill_rows(void *ctx, void *rows, size_t row_bytes, int n)
{
    sens_parts_ctx *c = ctx;
    if (!c->rows || c->bytes != row_bytes * (size_t)n) return -1;
    for (int k = 1; k < n; k += 2) memcpy((char *)rows + (size_t)k * row_bytes, (char *)c->rows + (size_t)k * row_bytes, row_bytes);
    c->filled++;
    return 0;
}

static void t_quantizer_search(void)
{
    seen sn = { 0 };
    yq_quantizer *q = NULL;
    yq_qconf *qc = NULL;
    yq_dataset *ds = NULL;
    fastest_quantizer(&sn, "ann2.json", &q, &ds);
    CHECKF(yq_qconf_new(&qc, &err) == YQ_OK, "%s", err.msg);

    double mf[2], m8[2];
    yq_quant_score sf, s8;
    CHECKF(yq_quantizer_evaluate(q, NULL, ds, mf, &err) == YQ_OK &&
           yq_quantizer_evaluate(q, qc, ds, m8, &err) == YQ_OK, "%s", err.msg);
    CHECKF(yq_quantizer_score(q, NULL, ds, NULL, &sf, &err) == YQ_OK &&
           yq_quantizer_score(q, qc, ds, "cpu", &s8, &err) == YQ_OK, "%s", err.msg);
    printf("# score: FP32 mAP %.4f (%.1f ms/img engine, %.1f all), int8 %.4f (%.1f, %.1f), %d images\n", sf.map,
           sf.ms_engine, sf.ms_wall, s8.map, s8.ms_engine, s8.ms_wall, s8.images);
    CHECKF(sf.map == mf[0] && sf.map50 == mf[1] && s8.map == m8[0] && s8.map50 == m8[1],
           "score %g %g / %g %g against evaluate %g %g / %g %g", sf.map, sf.map50, s8.map, s8.map50, mf[0], mf[1], m8[0], m8[1]);
    CHECK(sf.images == 2 && s8.images == 2 && !sf.gpu && !s8.gpu);
    CHECK(sf.ms_engine > 0 && sf.ms_wall >= sf.ms_engine && s8.ms_engine > 0 && s8.ms_wall >= s8.ms_engine);
    yq_status st = yq_quantizer_score(q, qc, ds, "gpu0", &s8, &err);
    CHECKF(st == YQ_ERR_INVALID_ARG && strstr(err.msg, "gpu0"), "%s", err.msg);

    /* every layer int8 meets a budget of 100 points at once */
    steps_seen ss = { 0 };
    search_ctx a = { q, qc, ds, { .budget_pts = 100, .step = on_step, .ctx = &ss }, NULL, { 0 }, YQ_OK };
    long printed = stderr_bytes_during(run_search, &a);
    CHECKF(a.st == YQ_OK, "%s", err.msg);
    CHECKF(printed == 0, "the search printed %ld bytes", printed);
    char *t = yq_qconf_text(a.chosen);
    CHECK(t);
    CHECKF(a.r.met && a.r.n_float == 0 && a.r.steps == 0 && ss.n == 1 && ss.last_k == 0 && a.r.map == a.r.all_int8_map &&
           a.r.fp32_map == mf[0], "met %d, %d float, %d steps, %d seen, mAP %g (all int8 %g, FP32 %g)", a.r.met,
           a.r.n_float, a.r.steps, ss.n, a.r.map, a.r.all_int8_map, a.r.fp32_map);
    CHECKF(strstr(t, "head = int8") && strstr(t, "first = int8") && !strstr(t, "skip_layers"), "%s", t);
    free(t);
    yq_qconf_free(a.chosen);
    yq_max_drop_result_free(&a.r);

    /* the sensitivity of the two convs with the lowest SQNR: the impact as defined, most
     * sensitive first, and (b) for a layer is the mAP of a qconfig keeping only it float,
     * scored on its own */
    {
        yq_sens_layer *rows = NULL;
        int nr = 0;
        yq_sens_summary sum;
        CHECKF(yq_quantizer_sensitivity(q, qc, ds, &(yq_sens_opt){ .max_layers = 2, .sqnr_images = 2 }, &rows, &nr, &sum, &err) == YQ_OK && rows, "%s", err.msg);
        CHECKF(nr == 2 && sum.fp32_map == mf[0] && sum.all_int8_map == a.r.all_int8_map, "%d rows, FP32 %g (%g), all int8 %g (%g)",
               nr, sum.fp32_map, mf[0], sum.all_int8_map, a.r.all_int8_map);
        for (int k = 0; k < nr; k++) {
            double imp = 100 * (sum.fp32_map - rows[k].map_a) + 100 * (rows[k].map_b - sum.all_int8_map);
            printf("# sensitivity: layer %d, SQNR %.2f dB, (a) %.4f (b) %.4f, impact %.2f\n", rows[k].layer,
                   rows[k].sqnr_db, rows[k].map_a, rows[k].map_b, rows[k].impact_pts);
            CHECKF(fabs(imp - rows[k].impact_pts) < 1e-9 && (k == 0 || rows[k - 1].impact_pts >= rows[k].impact_pts),
                   "row %d: impact %g, computed %g", k, rows[k].impact_pts, imp);
        }
        /* the same table measured in two parts (as two MPI ranks measure it): part 1 alone,
         * its rows kept; then part 0, whose exchange fills in part 1's rows */
        {
            sens_parts_ctx pc = { 0 };
            yq_sens_layer *r1 = NULL, *r0 = NULL;
            int n1 = 0, n0 = 0;
            yq_sens_opt o1 = { .max_layers = 2, .sqnr_images = 2, .part = 1, .parts = 2, .exchange = keep_rows,
                               .exchange_ctx = &pc };
            yq_sens_opt o0 = { .max_layers = 2, .sqnr_images = 2, .part = 0, .parts = 2, .exchange = fill_rows,
                               .exchange_ctx = &pc };
            CHECKF(yq_quantizer_sensitivity(q, qc, ds, &o1, &r1, &n1, NULL, &err) == YQ_OK && pc.rows, "%s", err.msg);
            free(r1);
            CHECKF(yq_quantizer_sensitivity(q, qc, ds, &o0, &r0, &n0, NULL, &err) == YQ_OK, "%s", err.msg);
            CHECKF(n0 == nr && pc.filled == 1 && r0 && !memcmp(r0, rows, sizeof *rows * (size_t)nr),
                   "two parts: %d rows (%d), %d filled in, equal to one part's: %d", n0, nr, pc.filled,
                   r0 && n0 == nr && !memcmp(r0, rows, sizeof *rows * (size_t)nr));
            yq_sens_opt bad = { .max_layers = 2, .part = 2, .parts = 2, .exchange = keep_rows };
            CHECK(yq_quantizer_sensitivity(q, qc, ds, &bad, &r1, &n1, NULL, &err) == YQ_ERR_INVALID_ARG && !r1);
            free(r0);
            free(pc.rows);
        }
        yq_qconf *only = NULL;
        char L[16];
        snprintf(L, sizeof L, "%d", nr ? rows[0].layer : 0);
        yq_quant_score sb;
        CHECKF(yq_qconf_new(&only, &err) == YQ_OK && yq_qconf_set(only, "head", "int8", &err) == YQ_OK &&
               yq_qconf_set(only, "first", "int8", &err) == YQ_OK && yq_qconf_set(only, "keep_float", "0", &err) == YQ_OK &&
               yq_qconf_set(only, "skip_layers", L, &err) == YQ_OK &&
               yq_quantizer_score(q, only, ds, "cpu", &sb, &err) == YQ_OK, "%s", err.msg);
        CHECKF(nr && sb.map == rows[0].map_b, "layer %s float alone scores %g, the table's (b) %g", L, sb.map,
               nr ? rows[0].map_b : -1.0);
        yq_qconf_free(only);
        free(rows);
    }

    /* 4 bits, a budget of 0 with at most 2 float convs, ranked by their own SQNR: the
     * steps run (every layer in 4 bits loses mAP on these boxes) */
    CHECKF(yq_qconf_set(qc, "bits", "4", &err) == YQ_OK, "%s", err.msg);
    memset(&ss, 0, sizeof ss);
    a = (search_ctx){ q, qc, ds, { .budget_pts = 0, .rank = "sqnr", .max_float = 2, .fp32 = &sf, .want_dets = 1,
                                   .step = on_step, .ctx = &ss }, NULL, { 0 }, YQ_OK };
    run_search(&a);
    CHECKF(a.st == YQ_OK, "%s", err.msg);
    /* FP32 as given; the answer's detections score its mAP; the float layers as the qconfig lists them */
    {
        double s2[YQ_COCO_NSTATS], s3[YQ_COCO_NSTATS];
        CHECKF(a.r.fp32_map == sf.map && a.r.dets && a.r.all_int8_dets &&
               yq_coco_eval(ds, a.r.dets, a.r.n_dets, s2, NULL, NULL, &err) == YQ_OK &&
               yq_coco_eval(ds, a.r.all_int8_dets, a.r.n_all_int8_dets, s3, NULL, NULL, &err) == YQ_OK &&
               s2[0] == a.r.map && s3[0] == a.r.all_int8_map && a.r.score.map == a.r.map,
               "FP32 %g (%g); detections %p %p", a.r.fp32_map, sf.map, (void *)a.r.dets, (void *)a.r.all_int8_dets);
        char sk[256], mine[256] = "";
        size_t n = 0;
        for (int k = 0; k < a.r.n_float; k++) n += (size_t)snprintf(mine + n, sizeof mine - n, "%s%d", k ? "," : "", a.r.float_layers[k]);
        CHECKF(yq_qconf_get(a.chosen, "skip_layers", sk, sizeof sk, &err) == YQ_OK && strlen(sk) == strlen(mine),
               "skip_layers '%s', float layers '%s'", sk, mine);
    }
    printf("# max-drop 0, max-float 2: met %d, %d float, %d steps; FP32 %.4f, all int8 %.4f, answer %.4f\n", a.r.met,
           a.r.n_float, a.r.steps, a.r.fp32_map, a.r.all_int8_map, a.r.map);
    CHECKF(a.r.all_int8_map < a.r.fp32_map && a.r.steps >= 1, "4 bits: all int8 %g, FP32 %g, %d steps", a.r.all_int8_map,
           a.r.fp32_map, a.r.steps);
    CHECKF(ss.n == a.r.steps + 1 && a.r.n_float <= 2, "%d seen, %d steps", ss.n, a.r.steps);
    /* the answer: met, or not met and the best step (no step lower) */
    double best = 1e9;
    for (int k = 0; k < ss.n && k < 64; k++) best = ss.drop[k] < best ? ss.drop[k] : best;
    CHECKF(a.r.met ? 100 * (a.r.fp32_map - a.r.map) <= 0 : 100 * (a.r.fp32_map - a.r.map) == best,
           "met %d, answer's drop %g, best step's %g", a.r.met, 100 * (a.r.fp32_map - a.r.map), best);
    if (a.r.steps) CHECKF(ss.layers >= a.r.n_float && ss.layers <= 2, "%d layers over the steps", ss.layers);
    /* the answer's qconfig, scored on its own: the search's mAP */
    yq_quant_score sc;
    CHECKF(yq_quantizer_score(q, a.chosen, ds, "cpu", &sc, &err) == YQ_OK, "%s", err.msg);
    CHECKF(sc.map == a.r.map, "the answer scores %g, the search said %g", sc.map, a.r.map);
    t = yq_qconf_text(a.chosen);
    CHECK(t);
    int listed = 0;
    const char *sl = t ? strstr(t, "skip_layers = ") : NULL;
    if (sl) for (listed = 1, sl += 14; *sl && *sl != '\n'; sl++) listed += *sl == ',';
    CHECKF(listed == a.r.n_float, "%d float layers, the qconfig lists %d: %s", a.r.n_float, listed, t);
    free(t);
    yq_qconf_free(a.chosen);
    yq_max_drop_result_free(&a.r);

    /* errors */
    a.o.rank = "bogus";
    run_search(&a);
    CHECKF(a.st == YQ_ERR_INVALID_ARG && strstr(err.msg, "bogus") && a.chosen == NULL, "%s", err.msg);
    a.o.rank = NULL;
    a.o.budget_pts = -1;
    run_search(&a);
    CHECKF(a.st == YQ_ERR_INVALID_ARG && strstr(err.msg, "budget"), "%s", err.msg);
    yq_qconf_free(qc);
    yq_quantizer_free(q);
    yq_dataset_free(ds);
}

/* What a sweep point's latency callback saw. */
typedef struct lat_seen { int calls, int8, layers; } lat_seen;
static int on_latency(void *ctx, const yq_model *m, double *ms)
{
    lat_seen *l = ctx;
    yq_model_about a;
    yq_model_describe(m, &a);
    l->calls++;
    l->int8 = yq_model_is_int8(m);
    l->layers = a.layers;
    *ms = 1.25;
    return 1;
}

/* A plan's "float_convs" (yq_quantizer_resolve's JSON); -1 if absent. */
static int plan_float_convs(const char *plan)
{
    cJSON *j = plan ? cJSON_Parse(plan) : NULL;
    const cJSON *f = cJSON_GetObjectItem(j, "float_convs");
    int n = cJSON_IsNumber(f) ? f->valueint : -1;
    cJSON_Delete(j);
    return n;
}

/* A sweep point through the public API (what `yquant sweep` runs): yq_quantizer_point's
 * score is yq_quantizer_score's, its resolved qconfig and float convs are
 * yq_quantizer_resolve's, its latency callback gets the int8 model of the same rewrite;
 * points that differ in anything but equalize calibrate once, equalize on a second time
 * (two passes), and back to off not again; qconfig handles copy and read back their keys;
 * yq_quantizer_check refuses a layer past the last; the GPU latency of an FP32 model or on
 * "cpu" is refused, and without a GPU it says so. */
static void t_quantizer_point(void)
{
    seen sn = { 0 };
    yq_quantizer *q = NULL;
    yq_qconf *qc = NULL, *q6 = NULL;
    yq_dataset *ds = NULL;
    fastest_quantizer(&sn, "ann3.json", &q, &ds);
    CHECKF(yq_qconf_new(&qc, &err) == YQ_OK, "%s", err.msg);
    yq_model_about fa;
    yq_model_describe(yq_quantizer_fp32(q), &fa);

    /* handles: a copy is independent; keys read back as the text writes them */
    char b[64];
    CHECKF(yq_qconf_set(qc, "keep_float", "2", &err) == YQ_OK && yq_qconf_dup(qc, &q6, &err) == YQ_OK &&
           yq_qconf_set(q6, "bits", "6", &err) == YQ_OK, "%s", err.msg);
    CHECKF(yq_qconf_get(qc, "bits", b, sizeof b, &err) == YQ_OK && !strcmp(b, "8"), "bits: %s", b);
    CHECKF(yq_qconf_get(q6, "bits", b, sizeof b, &err) == YQ_OK && !strcmp(b, "6"), "bits: %s", b);
    CHECKF(yq_qconf_get(qc, "weights", b, sizeof b, &err) == YQ_OK && !strcmp(b, "per_channel"), "weights: %s", b);
    CHECKF(yq_qconf_get(qc, "skip_layers", b, sizeof b, &err) == YQ_OK && !b[0], "skip_layers: '%s'", b);
    CHECKF(yq_qconf_get(qc, "bitz", b, sizeof b, &err) == YQ_ERR_INVALID_ARG && strstr(err.msg, "bitz"), "%s", err.msg);
    CHECKF(yq_qconf_get(qc, "layer.3.bits", b, sizeof b, &err) == YQ_ERR_INVALID_ARG, "layer.3.bits read");
    CHECKF(yq_qconf_get(qc, "weights", b, 4, &err) == YQ_ERR_INVALID_ARG && !b[0], "a short buffer: '%s'", b);

    /* a point: the score, the resolved qconfig, the latency callback on the same rewrite */
    lat_seen ls = { 0 };
    yq_point_opt po = { .device = "cpu", .latency = on_latency, .ctx = &ls };
    yq_point_result r;
    sn.stages = 0;
    CHECKF(yq_quantizer_point(q, qc, ds, &po, &r, &err) == YQ_OK && r.resolved, "%s", err.msg);
    int calib1 = sn.stages;
    yq_quant_score sc;
    yq_qconf *res = NULL;
    char *plan = NULL;
    CHECKF(yq_quantizer_score(q, qc, ds, "cpu", &sc, &err) == YQ_OK &&
           yq_quantizer_resolve(q, qc, &res, &plan, &err) == YQ_OK, "%s", err.msg);
    CHECKF(r.score.map == sc.map && r.score.map50 == sc.map50 && r.score.map75 == sc.map75 && r.score.images == 2 &&
           r.score.ms_engine > 0 && r.score.ms_engine_mean > 0 && !r.score.gpu,
           "point %g %g %g (%d images), score %g %g %g", r.score.map, r.score.map50, r.score.map75, r.score.images, sc.map,
           sc.map50, sc.map75);
    char *t1 = yq_qconf_text(r.resolved), *t2 = yq_qconf_text(res);
    CHECKF(t1 && t2 && !strcmp(t1, t2), "resolved:\n%s\nyq_quantizer_resolve:\n%s", t1, t2);
    CHECKF(t1 && strstr(t1, "keep_float = 0"), "%s", t1);
    free(t1);
    free(t2);
    CHECKF(yq_qconf_get(r.resolved, "skip_layers", b, sizeof b, &err) == YQ_OK && b[0] && strchr(b, ','),
           "keep_float 2 resolved to skip_layers '%s'", b);
    printf("# point: mAP %.4f, %d float + %d int8 convs, skips %s, latency %.2f ms\n", r.score.map, r.float_convs,
           r.int8_convs, b, r.latency_ms);
    CHECKF(r.float_convs == plan_float_convs(plan) && r.float_convs + r.int8_convs == fa.convs && r.float_convs >= 2,
           "%d float + %d int8 convs of %d; the plan says %d float", r.float_convs, r.int8_convs, fa.convs,
           plan_float_convs(plan));
    CHECKF(ls.calls == 1 && ls.int8 && ls.layers == fa.layers && r.latency_ms == 1.25, "latency: %d calls, int8 %d, %d "
           "layers (%d), %g ms", ls.calls, ls.int8, ls.layers, fa.layers, r.latency_ms);
    yq_qconf_free(r.resolved);
    yq_qconf_free(res);
    free(plan);
    /* no qconfig: FP32, as yq_quantizer_score gives it, with its detections when asked */
    yq_quant_score sf;
    yq_point_opt pf = { .want_dets = 1 };
    CHECKF(yq_quantizer_score(q, NULL, ds, NULL, &sf, &err) == YQ_OK &&
           yq_quantizer_point(q, NULL, ds, &pf, &r, &err) == YQ_OK, "%s", err.msg);
    CHECKF(r.score.map == sf.map && r.score.map50 == sf.map50 && !r.resolved && r.dets && r.n_dets > 0 &&
           r.float_convs == 0 && r.int8_convs == 0 && r.latency_ms == -1, "FP32 point: mAP %g (%g), %d dets",
           r.score.map, sf.map, r.n_dets);
    double s2[YQ_COCO_NSTATS];
    CHECKF(yq_coco_eval(ds, r.dets, r.n_dets, s2, NULL, NULL, &err) == YQ_OK && s2[0] == sf.map, "the detections "
           "score %g, the point %g", s2[0], sf.map);
    yq_point_result_free(&r);
    CHECK(!r.dets && !r.resolved);
    /* no callback: no latency */
    CHECKF(yq_quantizer_point(q, q6, ds, NULL, &r, &err) == YQ_OK && r.latency_ms == -1, "%s", err.msg);
    yq_qconf_free(r.resolved);

    /* calibration (equalize is on by default: two passes) once for both points above;
     * equalize off: one pass; on again: none */
    CHECKF(calib1 == 3 && sn.stages == calib1 + 4, "the first point: %d stages (calibrating, recalibrating, "
           "evaluating expected), then %d more (4 evaluations, no calibration expected)", calib1, sn.stages - calib1);
    int before = sn.stages;
    CHECKF(yq_qconf_set(q6, "equalize", "off", &err) == YQ_OK && yq_quantizer_point(q, q6, ds, NULL, &r, &err) == YQ_OK,
           "%s", err.msg);
    yq_qconf_free(r.resolved);
    CHECKF(sn.stages == before + 2, "equalize off: %d stages (calibrating, evaluating expected)", sn.stages - before);
    before = sn.stages;
    CHECKF(yq_qconf_set(q6, "equalize", "on", &err) == YQ_OK && yq_quantizer_point(q, q6, ds, NULL, &r, &err) == YQ_OK,
           "%s", err.msg);
    yq_qconf_free(r.resolved);
    CHECKF(sn.stages == before + 1, "equalize on again: %d stages (evaluating only expected)", sn.stages - before);

    /* check */
    CHECKF(yq_quantizer_check(q, qc, &err) == YQ_OK, "%s", err.msg);
    CHECKF(yq_qconf_set(q6, "skip_layers", "999", &err) == YQ_OK, "%s", err.msg);
    yq_status st = yq_quantizer_check(q, q6, &err);
    CHECKF(st != YQ_OK && strstr(err.msg, "999"), "skip_layers 999: status %d: %s", (int)st, err.msg);

    /* the GPU latency's refusals */
    yq_latency lat;
    yq_latency_opt lo = yq_latency_defaults();
    st = yq_model_latency(yq_quantizer_fp32(q), &lo, &lat, &err);
    CHECKF(st == YQ_ERR_INVALID_ARG && strstr(err.msg, "int8"), "FP32 model: status %d: %s", (int)st, err.msg);
    yq_model *m8 = NULL;
    CHECKF(yq_qconf_set(q6, "skip_layers", "", &err) == YQ_OK && yq_quantizer_model(q, q6, &m8, &err) == YQ_OK, "%s",
           err.msg);
    lo.device = "cpu";
    st = yq_model_latency(m8, &lo, &lat, &err);
    CHECKF(st == YQ_ERR_INVALID_ARG && strstr(err.msg, "cpu"), "on cpu: status %d: %s", (int)st, err.msg);
    lo.device = NULL;
    char name[160];
    st = yq_gpu_name(yq_gpu_count(), name, sizeof name, &err);
    CHECKF(st == YQ_ERR_CUDA && strstr(err.msg, "CUDA device"), "one past the last GPU: status %d: %s", (int)st, err.msg);
    if (yq_gpu_count() == 0) {
        st = yq_model_latency(m8, &lo, &lat, &err);
        CHECKF(st == YQ_ERR_UNSUPPORTED && strstr(err.msg, "no CUDA device"), "no GPU: status %d: %s", (int)st, err.msg);
    } else {
        CHECKF(yq_gpu_name(0, name, sizeof name, &err) == YQ_OK && strstr(name, "sm_"), "%s", err.msg);
        lo.tune = 0;
        lo.runs = 5;
        CHECKF(yq_model_latency(m8, &lo, &lat, &err) == YQ_OK && lat.ms > 0 && lat.int8_convs > 0, "%s", err.msg);
        printf("# %s: %.3f ms per forward\n", lat.gpu, lat.ms);
    }
    yq_model_free(m8);
    yq_qconf_free(qc);
    yq_qconf_free(q6);
    yq_quantizer_free(q);
    yq_dataset_free(ds);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/yq_pipeline_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        printf("FAIL test_pipeline: cannot create a temporary directory\n");
        return 1;
    }
    TEST(t_calibrate);
    TEST(t_quantize);
    TEST(t_errors);
    TEST(t_qconf);
    TEST(t_quantizer);
    TEST(t_quantizer_search);
    TEST(t_quantizer_point);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) printf("warning: could not remove %s\n", tmpdir);
    return test_done();
}
