/* yquant bench MODEL|PKG: latency and throughput of yquant's engines on one model; the
 * timing is the library's (include/yq_bench.h), this file reads the flags and prints.
 *
 * --profile adds a per-layer table ranked by time (cuDNN: events between nodes; int8 on
 * the GPU: each node's kernels timed alone; the CPU: the clock between nodes).
 *
 * --tune (cuda, int8) first tunes every int8 conv per layer in process (--log F reuses and
 * extends a tuning log), then adds rows for the tuned network beside the untuned default:
 * the fastest kernel of any family per layer, and the fastest within dp4a and within mma
 * alone (what tuning gains per family), plus the tuning time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "cli/cli.h"
#include "yq_bench.h"

static const char *help =
    "usage: yquant bench MODEL|PKG [--batch 1,32] [--device cuda|cpu] [--precision fp32,fp16,int8]\n"
    "                    [--runs N] [--warmup N] [--json FILE] [--profile] [--no-graph] [--no-views]\n"
    "                    [--gpu-float fp32|fp16] [--threads N] [--cpu-engine E]\n"
    "                    [--head int8|float] [--layout nchw|nhwc] [--heuristic] [--legacy] [--fuse]\n"
    "                    [--tune [--log FILE] [--tuner T] [--budget S] [--trials N]]\n"
    "                    [--weights FILE|synthetic[:SEED]] [--size N|WxH]\n"
    "\n"
    "Latency and throughput of yquant's engines on MODEL (a Darknet model, as for the\n"
    "other commands) or PKG (an int8 .yqp package: int8 only).\n"
    "  --batch LIST      batch sizes (default 1)\n"
    "  --device D        cuda (default when a GPU is present) or cpu\n"
    "  --precision LIST  fp32, fp16 (cuda: cuDNN), int8 (our kernels: tuned per layer on the\n"
    "                    GPU, AVX-512 VNNI or AVX2 on the CPU); default all that the device runs\n"
    "  --runs N          timed runs per configuration (default 100 on cuda, 10 on cpu);\n"
    "                    latency is their median\n"
    "  --warmup N        untimed runs first (default 10 on cuda, 2 on cpu)\n"
    "  --no-graph        cuda: time eager launches only (default: also CUDA-graph replays)\n"
    "  --no-views        cuda int8: every route copies its sources (default: concats as views\n"
    "                    where the layout allows; for measuring what the views save)\n"
    "  --profile         per-layer table ranked by time (us, %, op, shape)\n"
    "  --threads N       cpu: threads of the int8 engine and of OpenBLAS (FP32); default:\n"
    "                    every core\n"
    "  --cpu-engine E    cpu int8: fast (default: AVX-512 VNNI, else AVX2), avx2, dgemm (the\n"
    "                    exact dgemm path) or reference (plain C): the same bytes, for\n"
    "                    comparing speeds\n"
    "  --head H          int8 of a plain model: quantize the head convs too (int8) or keep\n"
    "                    them in float (float, the qconfig default)\n"
    "  --layout L        cuDNN layout (default: NHWC for fp16, NCHW for fp32)\n"
    "  --heuristic       cuDNN legacy API: the heuristic's algorithm instead of timing them\n"
    "  --legacy          cuDNN legacy API only (no graph-API engines)\n"
    "  --fuse            cuDNN graph API: fuse bias + relu/leaky into the conv (runtime-\n"
    "                    compiled engines: planning takes much longer)\n"
    "  --json FILE       also write every figure as JSON ('-': stdout)\n"
    "  --tune            cuda int8: tune the kernel of every conv first (as `yquant tune`),\n"
    "                    then time the tuned network too: any family, dp4a only, mma only\n"
    "  --log FILE        --tune: the tuning log to reuse and extend (default: none)\n"
    "  --tuner T, --budget S, --trials N   --tune: as for `yquant tune` (model, 300 s, 32);\n"
    "                    --tune-log, --tune-budget, --tune-trials: the same, as quantize and\n"
    "                    sweep name them\n"
    "  --gpu-float P     cuda int8: the layers kept in float (--head float, a package's float\n"
    "                    layers) in fp32 (default: their exact FP32, the CPU reference's bytes,\n"
    "                    as every other command and the packages run them) or fp16 (FP16 tensor\n"
    "                    cores, sm_80 and newer: faster on wide layers, not the validated\n"
    "                    numerics; for comparison)\n"
    "A plain model is quantized for int8 without calibration (thresholds do not change\n"
    "the speed).  The last lines are machine-readable: RESULT key=value ...\n";

enum { P_FP32 = 1, P_FP16 = 2, P_INT8 = 4 };
enum { TUNED_KINDS = 3 };
static const char *const kind_name[TUNED_KINDS] = { "tuned", "tuned:dp4a", "tuned:mma" };

static int parse_prec(const char *s)
{
    int m = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        if (!strcmp(t, "fp32")) m |= P_FP32;
        else if (!strcmp(t, "fp16")) m |= P_FP16;
        else if (!strcmp(t, "int8")) m |= P_INT8;
        else return -1;
    }
    return m;
}

typedef struct prow { int i; double us; } prow;
static int by_us_desc(const void *a, const void *b)
{
    const prow *x = a, *y = b;
    return (x->us < y->us) - (x->us > y->us);
}

static void print_profile(const yq_bench_result *r, int top)
{
    int n = r->n_layers;
    prow *s = malloc(sizeof *s * (size_t)(n ? n : 1));
    if (!s) return;
    double total = 0;
    for (int i = 0; i < n; i++) {
        s[i] = (prow){ i, r->layers[i].us };
        total += s[i].us;
    }
    qsort(s, (size_t)n, sizeof *s, by_us_desc);
    double e2e = (r->graph_median_ms > 0 && r->graph_median_ms < r->median_ms ? r->graph_median_ms : r->median_ms) * 1e3;
    static const char *const how[][2] = { { "events", "events between nodes, median of runs" },
                                          { "isolated", "each node's kernels timed alone, 10 launches back to back, median" },
                                          { "clock", "clock between nodes, mean of runs" } };
    const char *hw = "";
    for (int k = 0; k < 3; k++) if (!strcmp(r->profile_kind, how[k][0])) hw = how[k][1];
    int cudnn = 0;
    for (int i = 0; i < n; i++) cudnn |= r->layers[i].cudnn[0] != 0;
    printf("\nprofile: %s %s, batch %d (%s): layers sum to %.1f us, end to end %.1f us\n", r->precision, r->backend,
           r->batch, hw, total, e2e);
    printf("%5s  %-9s %10s %7s %8s  %-44s %s\n", "layer", "op", "us", "%", "TOP/s", "shape", cudnn ? "cuDNN" : "");
    for (int k = 0; k < n && k < top; k++) {
        const yq_bench_layer *l = &r->layers[s[k].i];
        if (s[k].us <= 0) break;
        char tops[16] = "";
        if (l->gflop > 0) snprintf(tops, sizeof tops, "%.2f", l->gflop * 1e3 / s[k].us);
        printf("%5d  %-9s %10.1f %6.1f%% %8s  %-44s %s\n", l->layer, l->op, s[k].us, total > 0 ? 100 * s[k].us / total : 0,
               tops, l->shape, l->cudnn);
    }
    /* by op type */
    static const char *const ops[] = { "input", "conv", "shortcut", "route", "upsample", "maxpool", "dropout", "yolo",
                                       "region", "detect" };
    printf("  by op:");
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        double by = 0;
        int cnt = 0;
        for (int j = 0; j < n; j++)
            if (!strcmp(r->layers[j].op, ops[k])) {
                by += r->layers[j].us;
                cnt++;
            }
        if (by > 0) printf("  %s %.1f us (%d, %.1f%%)", ops[k], by, cnt, total > 0 ? 100 * by / total : 0);
    }
    printf("\n");
    free(s);
}

static cJSON *result_json(const yq_bench_result *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "precision", r->precision);
    cJSON_AddStringToObject(o, "backend", r->backend);
    cJSON_AddNumberToObject(o, "batch", r->batch);
    cJSON_AddNumberToObject(o, "median_ms", r->median_ms);
    cJSON_AddNumberToObject(o, "mean_ms", r->mean_ms);
    cJSON_AddNumberToObject(o, "min_ms", r->min_ms);
    cJSON_AddNumberToObject(o, "p90_ms", r->p90_ms);
    if (r->graph_median_ms > 0) {
        cJSON_AddNumberToObject(o, "graph_median_ms", r->graph_median_ms);
        cJSON_AddNumberToObject(o, "graph_min_ms", r->graph_min_ms);
    }
    cJSON_AddNumberToObject(o, "img_s", r->img_s);
    cJSON_AddNumberToObject(o, "device_bytes", (double)r->device_bytes);
    cJSON_AddNumberToObject(o, "plan_s", r->plan_s);
    if (r->note[0]) cJSON_AddStringToObject(o, "note", r->note);
    if (r->kernels) cJSON_AddStringToObject(o, "kernels", r->kernels);
    if (r->n_layers) {
        cJSON_AddStringToObject(o, "profile_kind", r->profile_kind);
        cJSON *a = cJSON_AddArrayToObject(o, "profile");
        for (int i = 0; i < r->n_layers; i++) {
            const yq_bench_layer *l = &r->layers[i];
            if (l->us <= 0) continue;
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "layer", l->layer);
            cJSON_AddStringToObject(e, "op", l->op);
            cJSON_AddStringToObject(e, "shape", l->shape);
            cJSON_AddNumberToObject(e, "us", l->us);
            if (l->cudnn[0]) cJSON_AddStringToObject(e, "cudnn", l->cudnn);
            if (!strcmp(l->op, "conv")) {
                cJSON_AddNumberToObject(e, "gflop", l->gflop);
                cJSON_AddNumberToObject(e, "tops", l->gflop * 1e9 / (l->us * 1e-6) / 1e12);
                if (l->bytes > 0) {
                    cJSON_AddNumberToObject(e, "bytes", l->bytes);
                    cJSON_AddNumberToObject(e, "gbs", l->bytes / (l->us * 1e-6) * 1e-9);
                }
            }
            cJSON_AddItemToArray(a, e);
        }
    }
    return o;
}

/* --tune: every int8 conv at every batch, on cuda:0; its summary printed. */
static yq_status tune_all(yq_bench *b, const int *batches, int nb, const yq_tuning_opt *to, yq_bench_tuning *ts,
                          yq_error *err)
{
    yq_status st = yq_bench_tune(b, batches, nb, to, ts, err);
    if (st) return st;
    printf("tuning: %.1f s (%d shapes x batches: %d tuned, %d from the log%s%s, %d cut by the budget, %d skipped; "
           "%d trials, %d measured, %d failed)\n", ts->seconds, ts->sum.tasks, ts->sum.searched, ts->sum.logged,
           to->log ? " " : "", to->log ? to->log : "", ts->sum.partial, ts->sum.skipped, ts->sum.trials,
           ts->sum.measured, ts->sum.failed);
    for (int bi = 0; bi < nb; bi++) {
        const yq_tuning_sums *s = &ts->sums[bi];
        double d = s->default_us, fd = s->dp4a_us, fm = s->mma_us, tu = s->tuned_us;
        if (d > 0)
            printf("tuning, batch %d, convs timed alone: default %.1f us, dp4a tuned %.1f us (%.2fx), mma tuned %.1f us "
                   "(%.2fx), tuned %.1f us (%.2fx)\n", batches[bi], d, fd, d / fd, fm, d / fm, tu, d / tu);
    }
    return YQ_OK;
}

enum { OPT_PROFILE = CLI_OPT_CMD, OPT_NO_GRAPH, OPT_HEURISTIC, OPT_LEGACY, OPT_FUSE, OPT_NO_VIEWS, OPT_GPU_FLOAT,
       OPT_BATCH, OPT_DEVICE, OPT_PRECISION, OPT_RUNS, OPT_WARMUP, OPT_HEAD, OPT_LAYOUT, OPT_JSON, OPT_THREADS,
       OPT_CPU_ENGINE, OPT_TUNE, OPT_LOG, OPT_TUNER, OPT_BUDGET, OPT_TRIALS };
static const struct option options[] = {
    CLI_HELP_OPTION, CLI_MODEL_OPTIONS,
    { "profile", no_argument, NULL, OPT_PROFILE },
    { "no-graph", no_argument, NULL, OPT_NO_GRAPH },
    { "heuristic", no_argument, NULL, OPT_HEURISTIC },
    { "legacy", no_argument, NULL, OPT_LEGACY },
    { "fuse", no_argument, NULL, OPT_FUSE },
    { "no-views", no_argument, NULL, OPT_NO_VIEWS },
    { "gpu-float", required_argument, NULL, OPT_GPU_FLOAT },
    { "batch", required_argument, NULL, OPT_BATCH },
    { "device", required_argument, NULL, OPT_DEVICE },
    { "precision", required_argument, NULL, OPT_PRECISION },
    { "runs", required_argument, NULL, OPT_RUNS },
    { "warmup", required_argument, NULL, OPT_WARMUP },
    { "head", required_argument, NULL, OPT_HEAD },
    { "layout", required_argument, NULL, OPT_LAYOUT },
    { "json", required_argument, NULL, OPT_JSON },
    { "threads", required_argument, NULL, OPT_THREADS },
    { "cpu-engine", required_argument, NULL, OPT_CPU_ENGINE },
    { "tune", no_argument, NULL, OPT_TUNE },
    { "log", required_argument, NULL, OPT_LOG },
    { "tune-log", required_argument, NULL, OPT_LOG },
    { "tuner", required_argument, NULL, OPT_TUNER },
    { "budget", required_argument, NULL, OPT_BUDGET },
    { "tune-budget", required_argument, NULL, OPT_BUDGET },
    { "trials", required_argument, NULL, OPT_TRIALS },
    { "tune-trials", required_argument, NULL, OPT_TRIALS },
    { NULL, 0, NULL, 0 },
};

int cmd_bench(int argc, char **argv)
{
    cli_model_opt mo = { 0 };
    yq_bench_opt bo = yq_bench_defaults();
    yq_tuning_opt to = yq_tuning_defaults();
    int batches[16] = { 1 }, nb = 1, cuda = -1, runs = -1, warmup = -1, prec = 0, head_int8 = 0, tune = 0;
    const char *json = NULL;
    cli_getopt g;
    cli_getopt_begin(&g, "bench", argc, argv, ":h", options);
    for (int c; (c = cli_getopt_next(&g)) != -1;) {
        int r = cli_model_arg(&mo, &g, c);
        if (r) {
            if (r < 0) return 2;
            continue;
        }
        const char *v = g.arg;
        switch (c) {
        case 'h': case CLI_OPT_HELP: fputs(help, stdout); return 0;
        case OPT_PROFILE: bo.profile = 1; break;
        case OPT_NO_GRAPH: bo.graph = 0; break;
        case OPT_HEURISTIC: bo.heuristic = 1; break;
        case OPT_LEGACY: bo.legacy = 1; break;
        case OPT_FUSE: bo.fuse = 1; break;
        case OPT_NO_VIEWS: bo.no_views = 1; break;
        case OPT_GPU_FLOAT:
            if (!strcmp(v, "fp16")) bo.gpu_f16 = 1;
            else if (!strcmp(v, "fp32")) bo.gpu_f16 = 0;
            else return cli_usage_error("--gpu-float %s: expected fp32 or fp16", v);
            break;
        case OPT_BATCH:
            if ((nb = cli_parse_batches(v, batches, 16)) < 1) return cli_usage_error("--batch %s: expected N[,N...] in 1..4096", v);
            break;
        case OPT_DEVICE:
            if (!strcmp(v, "cuda") || !strcmp(v, "gpu")) cuda = 1;
            else if (!strcmp(v, "cpu")) cuda = 0;
            else return cli_usage_error("--device %s: expected cuda or cpu", v);
            break;
        case OPT_PRECISION:
            if ((prec = parse_prec(v)) <= 0) return cli_usage_error("--precision %s: expected a list of fp32, fp16, int8", v);
            break;
        case OPT_RUNS:
        case OPT_WARMUP: {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n < (c == OPT_RUNS ? 1 : 0) || n > 1000000) return cli_usage_error("%s %s: expected a count", g.name, v);
            if (c == OPT_RUNS) runs = (int)n;
            else warmup = (int)n;
            break;
        }
        case OPT_HEAD:
            if (!strcmp(v, "int8")) head_int8 = 1;
            else if (!strcmp(v, "float")) head_int8 = 0;
            else return cli_usage_error("--head %s: expected int8 or float", v);
            break;
        case OPT_LAYOUT:
            if (strcmp(v, "nchw") && strcmp(v, "nhwc")) return cli_usage_error("--layout %s: expected nchw or nhwc", v);
            bo.layout = v;
            break;
        case OPT_JSON: json = v; break;
        case OPT_THREADS: if (cli_int(g.name, v, 1, 1024, &bo.threads)) return 2; break;
        case OPT_CPU_ENGINE:
            if (strcmp(v, "fast") && strcmp(v, "avx2") && strcmp(v, "dgemm") && strcmp(v, "reference"))
                return cli_usage_error("--cpu-engine %s: expected fast, avx2, dgemm or reference", v);
            bo.cpu_engine = v;
            break;
        case OPT_TUNE: tune = 1; break;
        case OPT_LOG: to.log = v; break;
        case OPT_TUNER: {
            yq_error e;
            to.tuner = v;
            if (yq_tuning_check(&to, &e) != YQ_OK) return cli_usage_error("--tuner %s: expected grid, random, ga or model", v);
            break;
        }
        case OPT_BUDGET: if (cli_num(g.name, v, 0, 1e7, &to.budget_s)) return 2; break;
        case OPT_TRIALS: if (cli_int(g.name, v, 0, 100000, &to.trials)) return 2; break;
        default: return 2;   /* '?': cli_getopt_next said why */
        }
    }
    for (int i = optind; i < argc; i++) {
        if (!strcmp(argv[i], "-")) return cli_getopt_unknown(&g, argv[i]);
        if (!mo.model) mo.model = argv[i];
        else return cli_usage_error("bench: one MODEL only");
    }
    if (!mo.model) return cli_usage_error("bench: which MODEL?");
    {
        const char *ins[] = { mo.model, mo.weights };
        if (cli_check_outputs(ins, 2, "--json", json, "--log", to.log)) return 1;
    }
    int ngpu = yq_gpu_count();
    if (cuda < 0) cuda = ngpu > 0;
    if (cuda && ngpu == 0) {
        fprintf(stderr, "yquant: bench --device cuda: no CUDA device\n");
        return 1;
    }
    if (!prec) prec = cuda ? P_FP32 | P_FP16 | P_INT8 : P_FP32 | P_INT8;
    bo.device = cuda ? "cuda" : "cpu";
    bo.runs = runs >= 0 ? runs : cuda ? 100 : 10;
    bo.warmup = warmup >= 0 ? warmup : cuda ? 10 : 2;
    if (cuda && bo.runs < 100) cli_note("%d runs (the latency figures want >= 100)", bo.runs);
    if (tune && (!cuda || !(prec & P_INT8)))
        return cli_usage_error("bench --tune: tuning is for int8 on cuda (--device cuda --precision ...,int8)");

    yq_error err;
    yq_model *m = NULL;
    yq_bench *b = NULL;
    if (cli_open_model(&mo, &m, &err) != YQ_OK || yq_bench_new(m, head_int8, &b, &err) != YQ_OK) {
        yq_model_free(m);
        return cli_error(&err);
    }
    yq_bench_info info;
    yq_bench_describe(b, &info);
    char dev[256] = "CPU";
    if (cuda) {
        yq_error e2;
        if (yq_gpu_name(0, dev, sizeof dev, &e2) != YQ_OK) snprintf(dev, sizeof dev, "CUDA device 0");
    }
    const char *dnn = cuda ? info.cudnn : "";
    printf("model:  %s (%s)\ninput:  %dx%dx%d, %.2f GFLOP per image\ndevice: %s%s%s\nruns:   %d timed after %d warm-up, median%s\n",
           info.cfg, info.is_package ? mo.model : info.weights, info.c, info.h, info.w, info.gflop, dev, dnn[0] ? ", " : "",
           dnn, bo.runs, bo.warmup, cuda ? (bo.graph ? "; eager launches and CUDA-graph replays" : "; eager launches") : "");

    yq_bench_result *res = calloc((size_t)nb * (3 + TUNED_KINDS), sizeof *res);
    if (!res) {
        yq_bench_free(b);
        yq_model_free(m);
        fprintf(stderr, "yquant: out of memory\n");
        return 1;
    }
    int nres = 0, failed = 0, tuned_ok = 0;
    yq_bench_tuning ts;
    memset(&ts, 0, sizeof ts);
    if (tune) {
        if (tune_all(b, batches, nb, &to, &ts, &err)) {
            fprintf(stderr, "yquant: bench --tune: %s\n", err.msg);
            failed++;
        } else {
            tuned_ok = 1;
        }
        fflush(stdout);
    }
    static const char *pname[3] = { "fp32", "fp16", "int8" };
    for (int bi = 0; bi < nb; bi++) {
        bo.batch = batches[bi];
        for (int k = 0; k < 3; k++) {
            if (!(prec & (1 << k))) continue;
            bo.precision = pname[k];
            bo.kernels = NULL;
            yq_status st = yq_bench_run(b, &bo, &res[nres], &err);
            if (st) {
                fprintf(stderr, "yquant: bench %s batch %d: %s\n", pname[k], bo.batch, err.msg);
                failed += st != YQ_ERR_UNSUPPORTED;
                continue;
            }
            nres++;
            fflush(stdout);
        }
        for (int kind = 0; tuned_ok && kind < TUNED_KINDS; kind++) {
            if (kind > 0 && !ts.choices[kind]) continue;   /* no conv of this family on this GPU */
            bo.precision = "int8";
            bo.kernels = kind_name[kind];
            yq_status st = yq_bench_run(b, &bo, &res[nres], &err);
            if (st) {
                fprintf(stderr, "yquant: bench int8 %s batch %d: %s\n", kind_name[kind], bo.batch, err.msg);
                failed++;
                continue;
            }
            nres++;
            fflush(stdout);
        }
    }

    printf("\n%-44s %-5s %5s %10s %10s %10s %10s %10s %9s %7s\n", "engine", "prec", "batch", cuda ? "eager ms" : "ms",
           "min ms", "p90 ms", cuda ? "graph ms" : "", "img/s", "MB", "plan s");
    for (int i = 0; i < nres; i++) {
        const yq_bench_result *r = &res[i];
        char gm[16] = "-";
        if (r->graph_median_ms > 0) snprintf(gm, sizeof gm, "%.3f", r->graph_median_ms);
        printf("%-44s %-5s %5d %10.3f %10.3f %10.3f %10s %10.1f %9.1f %7.1f\n", r->backend, r->precision, r->batch,
               r->median_ms, r->min_ms, r->p90_ms, cuda ? gm : "", r->img_s, r->device_bytes / 1e6, r->plan_s);
        if (r->note[0]) printf("    note: %s\n", r->note);
    }
    if (bo.profile)
        for (int i = 0; i < nres; i++)
            if (res[i].n_layers) print_profile(&res[i], 30);
    printf("\n");
    for (int i = 0; i < nres; i++) {
        const yq_bench_result *r = &res[i];
        printf("RESULT engine=yquant precision=%s batch=%d device=%s median_ms=%.4f min_ms=%.4f graph_median_ms=%.4f "
               "img_s=%.2f%s%s\n", r->precision, r->batch, cuda ? "cuda" : "cpu", r->median_ms, r->min_ms,
               r->graph_median_ms, r->img_s, r->kernels ? " kernels=" : "", r->kernels ? r->kernels : "");
    }
    if (tuned_ok) {
        /* what tuning gained, end to end, per batch */
        for (int bi = 0; bi < nb; bi++) {
            const yq_bench_result *d = NULL, *t[TUNED_KINDS] = { NULL, NULL, NULL };
            for (int i = 0; i < nres; i++) {
                const yq_bench_result *r = &res[i];
                if (r->batch != batches[bi] || !r->kernels) continue;
                if (!strcmp(r->kernels, "default")) d = r;
                for (int k = 0; k < TUNED_KINDS; k++)
                    if (!strcmp(r->kernels, kind_name[k])) t[k] = r;
            }
            if (!d) continue;
            double db = d->graph_median_ms > 0 && d->graph_median_ms < d->median_ms ? d->graph_median_ms : d->median_ms;
            printf("tuning gain, batch %d (end to end, the better of eager and graph):  default %.3f ms", batches[bi], db);
            static const char *const lab[TUNED_KINDS] = { "tuned", "dp4a only", "mma only" };
            for (int k = 0; k < TUNED_KINDS; k++) {
                if (!t[k]) continue;
                double tb = t[k]->graph_median_ms > 0 && t[k]->graph_median_ms < t[k]->median_ms ? t[k]->graph_median_ms
                                                                                                 : t[k]->median_ms;
                printf(",  %s %.3f ms (%.2fx)", lab[k], tb, db / tb);
            }
            printf("\n");
        }
        printf("tuning time: %.1f s (%d trials measured; RESULT tuning_s below)\n\n", ts.seconds, ts.sum.measured);
        printf("RESULT engine=yquant tuning_s=%.2f tasks=%d from_log=%d trials=%d measured=%d failed=%d\n", ts.seconds,
               ts.sum.tasks, ts.sum.logged, ts.sum.trials, ts.sum.measured, ts.sum.failed);
    }
    int rc = failed || nres == 0 ? 1 : 0;
    if (json) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "model", info.cfg);
        cJSON_AddStringToObject(root, "weights", info.is_package ? mo.model : info.weights);
        cJSON *in = cJSON_AddArrayToObject(root, "input");
        cJSON_AddItemToArray(in, cJSON_CreateNumber(info.c));
        cJSON_AddItemToArray(in, cJSON_CreateNumber(info.h));
        cJSON_AddItemToArray(in, cJSON_CreateNumber(info.w));
        cJSON_AddNumberToObject(root, "gflop_per_image", info.gflop);
        cJSON_AddStringToObject(root, "device", dev);
        if (dnn[0]) cJSON_AddStringToObject(root, "cudnn", dnn);
        cJSON_AddNumberToObject(root, "runs", bo.runs);
        cJSON_AddNumberToObject(root, "warmup", bo.warmup);
        if (tuned_ok) {
            cJSON *tj = cJSON_AddObjectToObject(root, "tuning");
            cJSON_AddNumberToObject(tj, "seconds", ts.seconds);
            cJSON_AddStringToObject(tj, "tuner", to.tuner ? to.tuner : "model");
            if (to.log) cJSON_AddStringToObject(tj, "log", to.log);
            cJSON_AddNumberToObject(tj, "sm", ts.sm);
            cJSON_AddNumberToObject(tj, "tasks", ts.sum.tasks);
            cJSON_AddNumberToObject(tj, "tasks_from_log", ts.sum.logged);
            cJSON_AddNumberToObject(tj, "trials", ts.sum.trials);
            cJSON_AddNumberToObject(tj, "measured", ts.sum.measured);
            cJSON_AddNumberToObject(tj, "failed", ts.sum.failed);
        }
        cJSON *a = cJSON_AddArrayToObject(root, "results");
        for (int i = 0; i < nres; i++) cJSON_AddItemToArray(a, result_json(&res[i]));
        if (cli_write_json(json, root)) rc = 1;
        cJSON_Delete(root);
    }
    for (int i = 0; i < nres; i++) yq_bench_result_free(&res[i]);
    free(res);
    yq_bench_free(b);
    yq_model_free(m);
    return rc;
}
