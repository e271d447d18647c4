/* pipeline/quantize.h run from C, without the command line: calibration with and without
 * its cache (a hit gives the same statistics byte for byte), the rewrite into int8 with a
 * measured choice of float layers written back into the qconfig, its callbacks, its
 * errors, and that it never prints.  The tiny fixture network with synthetic weights, and
 * yolo-fastest-1.1, on the shared sample images ($YQ_DATA/datasets/darknet-samples). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "tests/test.h"
#include "calib/observe.h"
#include "pipeline/quantize.h"
#include "quant/rewrite.h"

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

typedef struct run_ctx { yq_pipe_calib c; yq_qconfig qc; yq_graph *g; yq_pipe_io io; yq_calib_stats *cs; yq_status st; } run_ctx;
static void run_calibrate(void *p)
{
    run_ctx *r = p;
    r->st = yq_pipe_calibrate(&r->c, &r->qc, r->g, 0, &r->io, &r->cs, &err);
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
    long printed = stderr_bytes_during(run_calibrate, &r);
    CHECKF(r.st == YQ_OK, "%s", err.msg);
    CHECKF(printed == 0, "the pipeline printed %ld bytes", printed);
    CHECK(r.cs != NULL);
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
    yq_graph_free(r.g);
}

/* yolo-fastest-1.1 (its weights) with keep_float 2: the pipeline measures, keeps layers
 * in float, and writes the choice back into the qconfig as per-layer skips. */
static void t_quantize(void)
{
    need_samples();
    char dir[600], cfg[700], weights[700];
    snprintf(dir, sizeof dir, "%s/models/yolo-fastest-1.1", test_data_dir());
    snprintf(cfg, sizeof cfg, "%s/yolo-fastest-1.1.cfg", dir);
    snprintf(weights, sizeof weights, "%s/yolo-fastest-1.1.weights", dir);
    if (access(cfg, R_OK) || access(weights, R_OK)) TEST_SKIP("%s not found (set YQ_DATA)", dir);
    yq_import_opt o = { 0 };
    yq_graph *g = NULL;
    CHECKF(yq_darknet_load(cfg, weights, &o, &g, &err) == YQ_OK, "%s", err.msg);
    yq_qconfig *qc = malloc(sizeof *qc);
    CHECK(qc);
    yq_qconfig_defaults(qc);
    qc->keep_float = 2;
    yq_pipe_calib c = { .images = samples, .no_cache = 1, .device = "cpu" };
    yq_calib_stats *cs = NULL;
    CHECKF(yq_pipe_calibrate(&c, qc, g, 0, NULL, &cs, &err) == YQ_OK, "%s", err.msg);   /* no callbacks at all */
    CHECKF(yq_pipe_quantize(&c, qc, g, cs, 0, NULL, &err) == YQ_OK, "%s", err.msg);
    CHECK(g->q != NULL);
    int skipped = 0, convs = 0, agree = 1;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == YQ_OP_CONV) {
            convs++;
            int sk = yq_qc_skip(qc, g->nodes[i].layer) != 0;
            skipped += sk;
            if (sk && !g->q[i].float_op) agree = 0;
        }
    printf("# yolo-fastest-1.1, keep_float 2: %d of %d convs kept float\n", skipped, convs);
    CHECKF(qc->keep_float == 0 && skipped >= 1 && skipped <= 2 && agree, "keep_float %d, %d of %d convs skipped%s",
           qc->keep_float, skipped, convs, agree ? "" : ", not all float in the graph");
    yq_calib_stats_free(cs);
    yq_graph_free(g);
    free(qc);
}

static void t_errors(void)
{
    yq_graph *g = tiny();
    yq_qconfig *qc = malloc(sizeof *qc);
    CHECK(g && qc);
    yq_qconfig_defaults(qc);
    yq_calib_stats *cs = (yq_calib_stats *)1;
    yq_pipe_calib c = { .images = "/nonexistent/images", .no_cache = 1, .device = "cpu" };
    yq_status st = yq_pipe_calibrate(&c, qc, g, 0, NULL, &cs, &err);
    CHECKF(st != YQ_OK && cs == NULL && strstr(err.msg, "/nonexistent/images"), "%s: %s", yq_status_str(st), err.msg);
    printf("# %s\n", err.msg);
    c.images = ".";
    c.device = "tpu";
    st = yq_pipe_calibrate(&c, qc, g, 0, NULL, &cs, &err);
    CHECKF(st != YQ_OK && strstr(err.msg, "tpu"), "%s: %s", yq_status_str(st), err.msg);
    printf("# %s\n", err.msg);
    yq_graph_free(g);
    free(qc);
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
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) printf("warning: could not remove %s\n", tmpdir);
    return test_done();
}
