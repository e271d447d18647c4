/* yquant tune PKG|MODEL: per-layer kernel tuning on the GPU (include/yq_tune.h).
 *
 * Every int8 conv shape at every batch is a task; the tuner measures the untuned
 * default and then candidates (precompiled kernel configurations: dp4a and
 * tensor-core tiles, K splits), keeps the fastest that equals the default byte for
 * byte, logs every trial (JSON lines, reused by later runs) and, for a package,
 * stores the choices in it (/kernels/choices: written to PKG.tmp and renamed).  A
 * plain Darknet model is quantized first as `yquant bench` does (no calibration:
 * thresholds do not change the speed); its choices go to the log only. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "cli/tune.h"

static const char *help =
    "usage: yquant tune PKG|MODEL [--batch 1,32] [--budget SECONDS] [--trials N] [--early-stopping N]\n"
    "                   [--tuner grid|random|ga|model] [--log FILE] [--seed N] [--families LIST]\n"
    "                   [--retune] [--no-write] [--json FILE] [--device cuda[:N]]\n"
    "                   [--weights FILE|synthetic[:SEED]] [--size N|WxH] [--head int8|float]\n"
    "\n"
    "Measures, on the GPU, every precompiled kernel configuration that can run each int8\n"
    "conv shape of PKG (a .yqp package) and keeps the fastest per layer; a candidate must\n"
    "produce exactly the bytes of the untuned default before it may win.  The choices are\n"
    "stored in PKG (per conv, batch and GPU architecture; sessions on that GPU use them).\n"
    "MODEL (a Darknet model, as for the other commands) is quantized without calibration\n"
    "first, and its choices go to the log only.\n"
    "  --batch LIST         session batch sizes to tune for (default 1)\n"
    "  --budget S           wall-clock seconds for the whole run, shared among the shapes\n"
    "                       still to tune (default 300; 0: no limit)\n"
    "                       (--tune-budget, --tune-trials, --tune-log: the names every command\n"
    "                       that tunes gives these three; the same here)\n"
    "  --trials N           candidates per shape besides the default (default 32; 0: all)\n"
    "  --early-stopping N   end a shape after N trials without a faster one (default 12; 0: off)\n"
    "  --tuner T            model (default: an analytic cost model orders the candidates),\n"
    "                       grid (all, in order), random (shuffled), ga (a genetic search)\n"
    "  --log FILE           JSON-lines tuning log, read first and appended to: shapes it has\n"
    "                       finished are not measured again, new shapes start from the best\n"
    "                       of the most similar logged one (default: PKG with .tune.jsonl,\n"
    "                       for a MODEL yquant-tune.jsonl)\n"
    "  --seed N             for random and ga (default 1)\n"
    "  --families LIST      only these kernel families: dp4a, mma, cutlass, halo, img,\n"
    "                       wgmma, wgh, wg1 (default all)\n"
    "  --retune             search shapes the log has finished again (its trials are reused)\n"
    "  --no-write           leave PKG as it is (the log still records everything)\n"
    "  --json FILE          the results as JSON ('-': stdout, the table then goes nowhere)\n"
    "  --device D           cuda or cuda:N (default cuda:0)\n"
    "  --head H             MODEL only: quantize the head convs too (int8) or keep them float\n"
    "A line per shape shows [Task i/n] Current/Best: TOPS | Progress: (trials/planned).\n";

typedef struct tune_cli { int tty; double t0; } tune_cli;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* "[Task 3/23] Current/Best: 410.2/720.5 TOPS | Progress: (20/32) | 12.3 s": rewritten in
 * place on a terminal; elsewhere one line per finished task. */
static void on_progress(void *ctx, const yq_tuning_progress *p)
{
    tune_cli *c = ctx;
    if (!c->tty && !p->finished) return;
    char tail[64] = "";
    if (p->finished && strcmp(p->state, "tuned")) snprintf(tail, sizeof tail, " | %s", p->state);
    fprintf(stderr, "%s[Task %d/%d] Current/Best: %.1f/%.1f TOPS | Progress: (%d/%d) | %.1f s%s%s", c->tty ? "\r" : "",
            p->task, p->n_tasks, p->cur_tops, p->best_tops, p->trial, p->n_trials, now_s() - c->t0, tail,
            c->tty ? "\033[K" : "");
    if (p->finished) fputc('\n', stderr);
    fflush(stderr);
}

static int parse_int(const char *s, long lo, long hi, long *v)
{
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (end == s || *end || errno || x < lo || x > hi) return -1;
    *v = x;
    return 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

cli_tune_req cli_tune_defaults(void)
{
    cli_tune_req r;
    memset(&r, 0, sizeof r);
    r.o = yq_tuning_defaults();
    r.o.device = "cuda";
    r.write = 1;
    return r;
}

/* One option checked alone as the library checks it: 0, or the usage error's status. */
static int check_opt(const yq_tuning_opt *o, const char *flag, const char *v, const char *expected)
{
    yq_error e;
    return yq_tuning_check(o, &e) == YQ_OK ? 0 : cli_usage_error("%s %s: expected %s", flag, v, expected);
}

enum { OPT_RETUNE = CLI_OPT_CMD, OPT_NO_WRITE, OPT_BATCH, OPT_BUDGET, OPT_TRIALS, OPT_EARLY_STOPPING, OPT_SEED,
       OPT_TUNER, OPT_FAMILIES, OPT_HEAD, OPT_LOG, OPT_JSON, OPT_DEVICE };
static const struct option options[] = {
    CLI_HELP_OPTION, CLI_MODEL_OPTIONS,
    { "retune", no_argument, NULL, OPT_RETUNE },
    { "no-write", no_argument, NULL, OPT_NO_WRITE },
    { "batch", required_argument, NULL, OPT_BATCH },
    { "budget", required_argument, NULL, OPT_BUDGET },
    { "tune-budget", required_argument, NULL, OPT_BUDGET },
    { "trials", required_argument, NULL, OPT_TRIALS },
    { "tune-trials", required_argument, NULL, OPT_TRIALS },
    { "early-stopping", required_argument, NULL, OPT_EARLY_STOPPING },
    { "seed", required_argument, NULL, OPT_SEED },
    { "tuner", required_argument, NULL, OPT_TUNER },
    { "families", required_argument, NULL, OPT_FAMILIES },
    { "head", required_argument, NULL, OPT_HEAD },
    { "log", required_argument, NULL, OPT_LOG },
    { "tune-log", required_argument, NULL, OPT_LOG },
    { "json", required_argument, NULL, OPT_JSON },
    { "device", required_argument, NULL, OPT_DEVICE },
    { NULL, 0, NULL, 0 },
};

int cmd_tune(int argc, char **argv)
{
    cli_tune_req req = cli_tune_defaults();
    cli_getopt g;
    cli_getopt_begin(&g, "tune", argc, argv, ":h", options);
    for (int c; (c = cli_getopt_next(&g)) != -1;) {
        int r = cli_model_arg(&req.mo, &g, c);
        if (r) {
            if (r < 0) return 2;
            continue;
        }
        const char *a = g.name, *v = g.arg;
        long n;
        switch (c) {
        case 'h': case CLI_OPT_HELP: fputs(help, stdout); return 0;
        case OPT_RETUNE: req.o.retune = 1; break;
        case OPT_NO_WRITE: req.write = 0; break;
        case OPT_BATCH:
            if ((req.o.n_batches = cli_parse_batches(v, req.o.batches, 16)) < 1)
                return cli_usage_error("--batch %s: expected N[,N...] in 1..4096", v);
            break;
        case OPT_BUDGET: if (cli_num(a, v, 0, 1e7, &req.o.budget_s)) return 2; break;
        case OPT_TRIALS: if (cli_int(a, v, 0, 100000, &req.o.trials)) return 2; break;
        case OPT_EARLY_STOPPING:
            if (parse_int(v, 0, 100000, &n)) return cli_usage_error("--early-stopping %s: expected a count >= 0", v);
            req.o.early_stopping = (int)n;
            break;
        case OPT_SEED:
            if (parse_int(v, 0, 2147483647L, &n)) return cli_usage_error("--seed %s: expected a number >= 0", v);
            req.o.seed = (unsigned)n;
            break;
        case OPT_TUNER:
            req.o.tuner = v;
            if (check_opt(&req.o, a, v, "grid, random, ga or model")) return 2;
            break;
        case OPT_FAMILIES:
            req.o.families = v;
            if (check_opt(&req.o, a, v, "a list of dp4a, mma, cutlass, halo, img, wgmma, wgh, wg1")) return 2;
            break;
        case OPT_HEAD:
            if (!strcmp(v, "int8")) req.o.head_int8 = 1;
            else if (!strcmp(v, "float")) req.o.head_int8 = 0;
            else return cli_usage_error("--head %s: expected int8 or float", v);
            break;
        case OPT_LOG: req.o.log = v; break;
        case OPT_JSON: req.json = v; break;
        case OPT_DEVICE: req.o.device = v; break;
        default: return 2;   /* '?': cli_getopt_next said why */
        }
    }
    for (int i = optind; i < argc; i++) {
        if (!strcmp(argv[i], "-")) return cli_getopt_unknown(&g, argv[i]);
        if (!req.mo.model) req.mo.model = argv[i];
        else return cli_usage_error("tune: one PKG or MODEL only");
    }
    if (!req.mo.model) return cli_usage_error("tune: which PKG (or MODEL)?");
    return cli_tune(&req);
}

int cli_tune(const cli_tune_req *r)
{
    const cli_model_opt *mo = &r->mo;
    yq_tuning_opt o = r->o;
    const int write = r->write;
    const char *json = r->json, *device = o.device ? o.device : "cuda";
    {
        const char *ins[] = { mo->model, mo->weights };
        if (cli_check_outputs(ins, 2, "--json", json, "--log", o.log)) return 1;
    }
    yq_error err;
    int dev = 0;
    if (yq_device_parse(device, &dev, &err) != YQ_OK)
        return cli_usage_error("--device %s: expected cuda or cuda:N", device);
    if (dev < 0) return cli_usage_error("--device %s: tuning measures kernels on a GPU (cuda or cuda:N)", device);

    /* The model first: a missing or broken file is the error to report, GPU or not. */
    yq_model *m = NULL;
    if (cli_open_model(mo, &m, &err) != YQ_OK) return cli_error(&err);
    yq_model_about about;
    yq_model_describe(m, &about);
    int is_pkg = about.is_package;
    int rc = 1;
    yq_tuning *t = NULL;
    yq_tuning_task *tasks = NULL;
    cJSON *root = NULL;
    char logbuf[1100];
    FILE *out = json && !strcmp(json, "-") ? fopen("/dev/null", "w") : stdout;
    if (!out) out = stdout;
    if (!o.log) {
        if (is_pkg) {
            size_t l = strlen(mo->model);
            if (ends_with(mo->model, ".yqp")) l -= 4;
            snprintf(logbuf, sizeof logbuf, "%.*s.tune.jsonl", (int)l, mo->model);
        } else {
            snprintf(logbuf, sizeof logbuf, "yquant-tune.jsonl");
        }
        o.log = logbuf;
    }
    tune_cli tc = { isatty(2), 0 };
    o.progress = on_progress;
    o.ctx = &tc;
    if (yq_tuning_new(m, &o, &t, &err) != YQ_OK) {
        fprintf(stderr, "yquant: tune: %s\n", err.msg);
        goto done;
    }
    yq_tuning_info info;
    yq_tuning_describe(t, &info);
    fprintf(out, "tune:    %s%s\ndevice:  cuda:%d, %s\ntasks:   %d (conv shape x batch) over %d int8 convs, batch %d",
            mo->model, is_pkg ? "" : " (quantized without calibration; choices go to the log only)", info.device, info.gpu,
            info.tasks, info.convs, o.batches[0]);
    for (int b = 1; b < o.n_batches; b++) fprintf(out, ",%d", o.batches[b]);
    fprintf(out, "\ntuner:   %s, trials %d, early stopping %d, budget %.0f s%s\nlog:     %s (%d trials known)\n",
            info.tuner, o.trials, o.early_stopping, o.budget_s, o.retune ? ", retune" : "", o.log, info.log_trials);
    fflush(out);
    tc.t0 = now_s();
    yq_tune_summary sum;
    if (yq_tuning_run(t, &sum, &err) != YQ_OK) {
        fprintf(stderr, "yquant: tune: %s (the log keeps what was measured)\n", err.msg);
        goto done;
    }
    int nt = info.tasks;
    if (!(tasks = calloc((size_t)nt, sizeof *tasks))) {
        fprintf(stderr, "yquant: out of memory\n");
        goto done;
    }
    for (int i = 0; i < nt; i++)
        if (yq_tuning_task_get(t, i, &tasks[i], &err) != YQ_OK) {
            cli_error(&err);
            goto done;
        }

    /* the table */
    fprintf(out, "\n%-38s %5s %-22s %9s %-24s %9s %7s %6s  %s\n", "shape (key)", "convs", "default", "us", "tuned", "us",
            "speedup", "trials", "");
    for (int i = 0; i < nt; i++) {
        const yq_tuning_task *x = &tasks[i];
        char dus[16] = "-", bus[16] = "-", sp[16] = "-";
        if (x->default_us > 0) snprintf(dus, sizeof dus, "%.1f", x->default_us);
        if (x->best_us > 0) snprintf(bus, sizeof bus, "%.1f", x->best_us);
        if (x->default_us > 0 && x->best_us > 0) snprintf(sp, sizeof sp, "%.2fx", x->default_us / x->best_us);
        fprintf(out, "%-38s %5d %-22s %9s %-24s %9s %7s %6d  %s\n", x->key, x->convs, x->default_cfg, dus, x->best_cfg, bus,
                sp, x->trials, x->state);
        if (x->failed) fprintf(out, "%38s (%d candidates failed and were skipped: see the log)\n", "", x->failed);
    }
    for (int b = 0; b < o.n_batches; b++) {
        yq_tuning_sums s = yq_tuning_batch_sums(t, o.batches[b]);
        if (!s.convs || s.default_us <= 0) continue;
        fprintf(out, "\nbatch %d, sum over %d convs (%d shapes), each timed alone:\n", o.batches[b], s.convs, s.shapes);
        fprintf(out, "  untuned default %10.1f us\n  dp4a, tuned     %10.1f us  %.2fx\n  mma, tuned      %10.1f us  %.2fx\n"
                "  tuned (any)     %10.1f us  %.2fx\n", s.default_us, s.dp4a_us, s.default_us / s.dp4a_us, s.mma_us,
                s.default_us / s.mma_us, s.tuned_us, s.default_us / s.tuned_us);
    }
    fprintf(out, "\ntuning: %.1f s, %d tasks (%d tuned, %d from the log, %d cut by the budget, %d skipped), %d trials "
            "(%d measured, %d failed)\n", sum.seconds, sum.tasks, sum.searched, sum.logged, sum.partial, sum.skipped,
            sum.trials, sum.measured, sum.failed);

    int nk = yq_tuning_choices(t);
    if (is_pkg && write && nk > 0) {
        int stored = 0;
        if (yq_tuning_save(t, mo->model, cli_created_unix(), &stored, &err) != YQ_OK) {
            cli_error(&err);
            goto done;
        }
        fprintf(out, "wrote %d kernel choices (sm_%d) to %s (%d in all)\n", nk, info.sm, mo->model, stored);
    } else if (is_pkg && nk > 0) {
        fprintf(out, "--no-write: %s left as it was\n", mo->model);
    }
    rc = 0;
    if (json) {
        root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "model", mo->model);
        cJSON_AddStringToObject(root, "device", info.gpu);
        cJSON_AddNumberToObject(root, "sm", info.sm);
        cJSON_AddStringToObject(root, "tuner", info.tuner);
        cJSON_AddStringToObject(root, "log", o.log);
        cJSON_AddNumberToObject(root, "seconds", sum.seconds);
        cJSON_AddNumberToObject(root, "trials", sum.trials);
        cJSON_AddNumberToObject(root, "measured", sum.measured);
        cJSON_AddNumberToObject(root, "failed", sum.failed);
        cJSON_AddNumberToObject(root, "tasks_from_log", sum.logged);
        cJSON *a = cJSON_AddArrayToObject(root, "tasks");
        for (int i = 0; i < nt; i++) {
            const yq_tuning_task *x = &tasks[i];
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "key", x->key);
            cJSON_AddNumberToObject(e, "batch", x->batch);
            cJSON_AddNumberToObject(e, "convs", x->convs);
            cJSON_AddStringToObject(e, "state", x->state);
            cJSON_AddStringToObject(e, "default", x->default_cfg);
            cJSON_AddNumberToObject(e, "default_us", x->default_us);
            cJSON_AddStringToObject(e, "best", x->best_cfg);
            cJSON_AddNumberToObject(e, "best_us", x->best_us);
            if (x->best_us > 0) cJSON_AddNumberToObject(e, "best_tops", x->ops / x->best_us * 1e-6);
            cJSON_AddNumberToObject(e, "trials", x->trials);
            cJSON_AddNumberToObject(e, "failed", x->failed);
            if (x->dp4a_us > 0) cJSON_AddNumberToObject(e, "dp4a_us", x->dp4a_us);
            if (x->mma_us > 0) cJSON_AddNumberToObject(e, "mma_us", x->mma_us);
            if (x->started_from[0]) cJSON_AddStringToObject(e, "started_from", x->started_from);
            cJSON_AddItemToArray(a, e);
        }
        cJSON *fs = cJSON_AddArrayToObject(root, "sums");
        for (int b = 0; b < o.n_batches; b++) {
            yq_tuning_sums s = yq_tuning_batch_sums(t, o.batches[b]);
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "batch", o.batches[b]);
            cJSON_AddNumberToObject(e, "convs", s.convs);
            cJSON_AddNumberToObject(e, "default_us", s.default_us);
            cJSON_AddNumberToObject(e, "dp4a_us", s.dp4a_us);
            cJSON_AddNumberToObject(e, "mma_us", s.mma_us);
            cJSON_AddNumberToObject(e, "tuned_us", s.tuned_us);
            cJSON_AddItemToArray(fs, e);
        }
        if (cli_write_json(json, root)) rc = 1;
    }
done:
    if (out != stdout) fclose(out);
    cJSON_Delete(root);
    free(tasks);
    yq_tuning_free(t);
    yq_model_free(m);
    return rc;
}
