/* The latency engine of `yquant sweep` and `quantize --max-drop`: the GPU with tuned
 * kernels when there is one (runtime/latency.h), else the CPU int8 engine (AVX-512 VNNI or
 * AVX2, the reference's bytes),
 * whose per-image times the evaluation measures anyway (yq_quantizer_point).  A GPU that
 * fails turns the engine to the CPU for the rest of the run, with one warning line, so
 * that every figure of a run comes from one engine and says which. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "cli/latency.h"

#define TAG_CPU "cpu-int8"

/* "CPU int8 (avx512-vnni)": the CPU engine and the instructions it runs */
static const char *cpu_label(char *b, size_t n)
{
    snprintf(b, n, "CPU int8 (%s)", yq_cpu_int8_engine());
    return b;
}

void cli_lat_init(cli_lat *l)
{
    memset(l, 0, sizeof *l);
    l->want = -1;
    l->batch = 1;
    l->budget_s = 60;
    cli_lat_to_cpu(l);
}

void cli_lat_to_cpu(cli_lat *l)
{
    l->gpu = 0;
    snprintf(l->tag, sizeof l->tag, TAG_CPU);
    cpu_label(l->label, sizeof l->label);
}

int cli_lat_device(cli_lat *l, const char *opt, const char *v)
{
    yq_error e;
    int d;
    if (!strcmp(v, "gpu")) v = "cuda";
    if (yq_device_parse(v, &d, &e) != YQ_OK) {   /* the library's parser: one set of bounds */
        cli_usage_error("%s %s: expected cpu, cuda or cuda:N", opt, v);
        return -1;
    }
    l->want = d >= 0;
    l->device = d < 0 ? 0 : d;
    return 1;
}

int cli_lat_arg(cli_lat *l, const cli_getopt *g, int c)
{
    const char *v = g->arg;
    char *end;
    switch (c) {
    case CLI_OPT_LAT_DEVICE:
        return cli_lat_device(l, g->name, v);
    case CLI_OPT_TUNE_LOG:
        if (!*v) { cli_usage_error("--tune-log: empty path"); return -1; }
        l->tune_log = v;
        return 1;
    case CLI_OPT_LAT_BATCH: {
        long b = strtol(v, &end, 10);
        if (end == v || *end || b < 1 || b > 4096) { cli_usage_error("--lat-batch %s: expected 1..4096", v); return -1; }
        l->batch = (int)b;
        return 1;
    }
    case CLI_OPT_TUNE_BUDGET: {
        double s = strtod(v, &end);
        if (end == v || *end || !(s >= 0) || s > 1e7) { cli_usage_error("--tune-budget %s: expected seconds >= 0", v); return -1; }
        l->budget_s = s;
        return 1;
    }
    }
    return 0;
}

static void warn_line(void)
{
    if (isatty(2)) fprintf(stderr, "\r\033[K");
}

static void to_cpu(cli_lat *l, const char *why)
{
    snprintf(l->why_cpu, sizeof l->why_cpu, "%s", why);
    cli_lat_to_cpu(l);
}

void cli_lat_start(cli_lat *l, const char *out)
{
    if (!l->tune_log && out) {
        size_t n = strlen(out);
        if (n > 4 && !strcmp(out + n - 4, ".yqp")) snprintf(l->log_buf, sizeof l->log_buf, "%.*s.tune.jsonl", (int)(n - 4), out);
        else if (n > 0) snprintf(l->log_buf, sizeof l->log_buf, "%s/tune.jsonl", out);
        if (l->log_buf[0]) l->tune_log = l->log_buf;
    }
    to_cpu(l, "");
    int ngpu = l->want ? yq_gpu_count() : 0;
    if (l->want == 0) {
        snprintf(l->why_cpu, sizeof l->why_cpu, "--device cpu");
        return;
    }
    if (ngpu == 0) {
        snprintf(l->why_cpu, sizeof l->why_cpu, "no CUDA device");
        if (l->want == 1)
            fprintf(stderr, "warning: latency: no CUDA device (no NVIDIA driver or no GPU); measuring on the %s engine "
                            "instead\n", l->label);
        return;
    }
    yq_error e;
    char name[160];
    if (yq_gpu_name(l->device, name, sizeof name, &e) == YQ_OK) {
        l->gpu = 1;
        l->why_cpu[0] = 0;
        snprintf(l->gpu_desc, sizeof l->gpu_desc, "%s", name);
        char *paren = strstr(name, " (");
        if (paren) *paren = 0;
        snprintf(l->tag, sizeof l->tag, "cuda-int8-%s", l->budget_s > 0 ? "tuned" : "logged");
        snprintf(l->label, sizeof l->label, "GPU int8, %s, batch %d, %s",
                 l->budget_s > 0 ? "tuned" : "kernels from the tuning log", l->batch, name);
        return;
    }
    fprintf(stderr, "warning: latency: %s; measuring on the %s engine instead\n", e.msg, l->label);   /* still the CPU's */
    to_cpu(l, e.msg);
}

int cli_lat_measure(cli_lat *l, const yq_model *m, double *ms)
{
    if (!l || !l->gpu) return 0;
    yq_latency_opt o = yq_latency_defaults();
    char dev[32];
    snprintf(dev, sizeof dev, "cuda:%d", l->device);
    o.batch = l->batch;
    o.device = dev;
    o.tune = l->budget_s > 0;
    o.tune_budget_s = l->budget_s;
    o.tune_log = l->tune_log;
    yq_latency r;
    yq_error e;
    yq_status st = yq_model_latency(m, &o, &r, &e);
    if (st != YQ_OK) {
        warn_line();
        char lb[64];
        fprintf(stderr, "warning: GPU latency: %s; every latency of this run now comes from the %s engine\n", e.msg,
                cpu_label(lb, sizeof lb));
        to_cpu(l, e.msg);
        return 0;
    }
    int now = r.tune.searched + r.tune.partial;
    if (now) {
        warn_line();
        fprintf(stderr, "latency: tuned %d conv shape%s on the GPU in %.1f s (%d from %s%s)\n", now, now == 1 ? "" : "s",
                r.tune_s, r.tune.logged, l->tune_log ? l->tune_log : "no log",
                r.tune.skipped ? ", some cut by --tune-budget" : "");
    }
    l->measured++;
    l->tune_s += r.tune_s;
    l->shapes_tuned += now;
    l->graph = r.graph;
    l->runs = r.runs;
    l->last_mean = r.ms_mean;
    l->tasks = r.tune.tasks;
    l->from_log = r.tune.logged;
    l->tuned_convs = r.tuned_convs;
    l->int8_convs = r.int8_convs;
    *ms = r.ms;
    return 1;
}

void cli_lat_json(const cli_lat *l, cJSON *root)
{
    cJSON_AddStringToObject(root, "latency_device", l->tag);
    cJSON_AddStringToObject(root, "latency_engine", l->label);
    cJSON *o = cJSON_AddObjectToObject(root, "latency");
    cJSON_AddStringToObject(o, "engine", l->gpu ? "cuda" : "cpu");
    if (l->gpu) {
        cJSON_AddStringToObject(o, "gpu", l->gpu_desc);
        cJSON_AddNumberToObject(o, "batch", l->batch);
        cJSON_AddStringToObject(o, "timing", l->graph ? "CUDA-graph replays, median" : "eager launches, median");
        cJSON_AddNumberToObject(o, "runs", l->runs);
        if (l->tune_log) cJSON_AddStringToObject(o, "tune_log", l->tune_log);
        cJSON_AddNumberToObject(o, "tune_budget_s", l->budget_s);
        cJSON_AddNumberToObject(o, "tuning_s", l->tune_s);
        cJSON_AddNumberToObject(o, "shapes_tuned", l->shapes_tuned);
        cJSON_AddNumberToObject(o, "measurements", l->measured);
    } else {
        cJSON_AddNumberToObject(o, "batch", 1);
        cJSON_AddStringToObject(o, "timing", "the engine alone per image, median over the validation images");
        if (l->why_cpu[0]) cJSON_AddStringToObject(o, "why_cpu", l->why_cpu);
    }
}
