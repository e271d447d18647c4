/* yquant tune PKG|MODEL: per-layer kernel tuning on the GPU (runtime/tune.h).
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
#include "cli/internal.h"
#include "kernels/cuda.h"
#include "quant/rewrite.h"
#include "runtime/package.h"
#include "runtime/tune.h"

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
    "                       wgmma, wgh (default all)\n"
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

static const char *state_name(yq_tune_state s)
{
    switch (s) {
    case YQ_TUNE_SEARCHED: return "tuned";
    case YQ_TUNE_LOGGED: return "from log";
    case YQ_TUNE_PARTIAL: return "budget (partial)";
    case YQ_TUNE_SKIPPED: return "budget (default)";
    default: return "pending";
    }
}

/* "[Task 3/23] Current/Best: 410.2/720.5 TOPS | Progress: (20/32) | 12.3 s": rewritten in
 * place on a terminal; elsewhere one line per finished task. */
static void on_progress(void *ctx, const yq_tune_progress *p)
{
    tune_cli *c = ctx;
    if (!c->tty && !p->finished) return;
    char tail[64] = "";
    if (p->finished && p->t->state != YQ_TUNE_SEARCHED) snprintf(tail, sizeof tail, " | %s", state_name(p->t->state));
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

static int parse_families(const char *s, unsigned *mask)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    *mask = 0;
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        if (!strcmp(t, "dp4a")) *mask |= 1u << YQ_CONV_DP4A;
        else if (!strcmp(t, "mma")) *mask |= 1u << YQ_CONV_MMA;
        else if (!strcmp(t, "cutlass")) *mask |= 1u << YQ_CONV_CUTLASS;
        else if (!strcmp(t, "halo")) *mask |= 1u << YQ_CONV_HALO;
        else if (!strcmp(t, "img")) *mask |= 1u << YQ_CONV_IMG;
        else if (!strcmp(t, "wgmma")) *mask |= 1u << YQ_CONV_WGMMA;
        else if (!strcmp(t, "wgh")) *mask |= 1u << YQ_CONV_WGH;
        else return -1;
    }
    /* the families with one kernel each are always allowed: nothing else runs those convs */
    if (*mask) *mask |= 1u << YQ_CONV_DW | 1u << YQ_CONV_DIRECT | 1u << YQ_CONV_F32 | 1u << YQ_CONV_F16;
    return *mask ? 0 : -1;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* Sum over the convs of a batch: the default, the fastest of a family (the default
 * where the family had none), the tuned choice. */
typedef struct fam_sum { double def, dp4a, mma, tuned; int convs, shapes; } fam_sum;

static fam_sum family_sums(const yq_tune_task *t, int n, int batch)
{
    fam_sum s = { 0, 0, 0, 0, 0, 0 };
    for (int i = 0; i < n; i++) {
        const yq_tune_task *x = &t[i];
        if (x->batch != batch || x->default_us <= 0) continue;
        double w = x->n_nodes;
        s.def += w * x->default_us;
        s.dp4a += w * (x->family_us[YQ_CONV_DP4A] > 0 ? x->family_us[YQ_CONV_DP4A] : x->default_us);
        s.mma += w * (x->family_us[YQ_CONV_MMA] > 0 ? x->family_us[YQ_CONV_MMA] : x->default_us);
        s.tuned += w * (x->best_us > 0 ? x->best_us : x->default_us);
        s.convs += x->n_nodes;
        s.shapes++;
    }
    return s;
}

cli_tune_req cli_tune_defaults(void)
{
    cli_tune_req r;
    memset(&r, 0, sizeof r);
    r.o = yq_tune_defaults();
    r.batches[0] = 1;
    r.nb = 1;
    r.write = 1;
    r.device = "cuda";
    return r;
}

int cmd_tune(int argc, char **argv)
{
    cli_tune_req req = cli_tune_defaults();
    for (int i = 0; i < argc; i++) {
        int r = cli_model_arg(&req.mo, argc, argv, &i);
        if (r < 0) return 2;
        if (r) continue;
        const char *a = argv[i];
        int has = i + 1 < argc;
        long v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(help, stdout); return 0; }
        else if (!strcmp(a, "--retune")) req.o.retune = 1;
        else if (!strcmp(a, "--no-write")) req.write = 0;
        else if (!strcmp(a, "--batch") && has) {
            if ((req.nb = cli_parse_batches(argv[++i], req.batches, 16)) < 1) return cli_usage_error("--batch %s: expected N[,N...] in 1..4096", argv[i]);
        } else if (!strcmp(a, "--budget") && has) {
            char *end;
            double b = strtod(argv[++i], &end);
            if (end == argv[i] || *end || !(b >= 0) || b > 1e7) return cli_usage_error("--budget %s: expected seconds >= 0", argv[i]);
            req.o.budget_s = b;
        } else if (!strcmp(a, "--trials") && has) {
            if (parse_int(argv[++i], 0, 100000, &v)) return cli_usage_error("--trials %s: expected a count >= 0", argv[i]);
            req.o.trials = (int)v;
        } else if (!strcmp(a, "--early-stopping") && has) {
            if (parse_int(argv[++i], 0, 100000, &v)) return cli_usage_error("--early-stopping %s: expected a count >= 0", argv[i]);
            req.o.early_stopping = (int)v;
        } else if (!strcmp(a, "--seed") && has) {
            if (parse_int(argv[++i], 0, 2147483647L, &v)) return cli_usage_error("--seed %s: expected a number >= 0", argv[i]);
            req.o.seed = (uint32_t)v;
        } else if (!strcmp(a, "--tuner") && has) {
            if (yq_tuner_parse(argv[++i], &req.o.tuner)) return cli_usage_error("--tuner %s: expected grid, random, ga or model", argv[i]);
        } else if (!strcmp(a, "--families") && has) {
            if (parse_families(argv[++i], &req.o.families))
                return cli_usage_error("--families %s: expected a list of dp4a, mma, cutlass, halo, img, wgmma, wgh", argv[i]);
        } else if (!strcmp(a, "--head") && has) {
            const char *h = argv[++i];
            if (!strcmp(h, "int8")) req.head_int8 = 1;
            else if (!strcmp(h, "float")) req.head_int8 = 0;
            else return cli_usage_error("--head %s: expected int8 or float", h);
        } else if (!strcmp(a, "--log") && has) req.log = argv[++i];
        else if (!strcmp(a, "--json") && has) req.json = argv[++i];
        else if (!strcmp(a, "--device") && has) req.device = argv[++i];
        else if (a[0] == '-') return cli_usage_error("tune: unknown option %s (or a missing value)", a);
        else if (!req.mo.model) req.mo.model = a;
        else return cli_usage_error("tune: one PKG or MODEL only");
    }
    if (!req.mo.model) return cli_usage_error("tune: which PKG (or MODEL)?");
    return cli_tune(&req);
}

int cli_tune(const cli_tune_req *r)
{
    cli_model_opt mo = r->mo;
    yq_tune_opt o = r->o;
    const int *batches = r->batches, nb = r->nb, write = r->write, head_int8 = r->head_int8;
    const char *log = r->log, *json = r->json, *device = r->device;
    {
        const char *ins[] = { mo.model, mo.weights };
        if (cli_check_outputs(ins, 2, "--json", json, "--log", log)) return 1;
    }
    yq_error err;
    int dev = 0;
    if (yq_device_parse(device, &dev, &err) != YQ_OK)
        return cli_usage_error("--device %s: expected cuda or cuda:N", device);
    if (dev < 0) return cli_usage_error("--device %s: tuning measures kernels on a GPU (cuda or cuda:N)", device);

    /* The model first: a missing or broken file is the error to report, GPU or not. */
    yq_graph *g = NULL;
    yq_package_info *info = NULL;
    int is_pkg = yq_package_is(mo.model) || ends_with(mo.model, ".yqp");
    if (is_pkg) {
        /* (a missing or damaged .yqp gets the loader's own one-line reason) */
        if (yq_package_load(mo.model, &g, &info, &err) != YQ_OK) return cli_error(&err);
    } else {
        if (cli_load_model(&mo, &g, &err) != YQ_OK) return cli_error(&err);
        yq_qconfig *qc = malloc(sizeof *qc);
        yq_status st = qc ? YQ_OK : yq_fail(&err, YQ_ERR_NOMEM, "out of memory");
        if (!st) {
            yq_qconfig_defaults(qc);
            qc->head_float = !head_int8;
            st = yq_quantize_graph(g, NULL, qc, &err);
        }
        free(qc);
        if (st) {
            yq_graph_free(g);
            return cli_error(&err);
        }
    }
    int rc = 1;
    yq_tune_task *tasks = NULL;
    yq_tuned_kernel *k = NULL, *merged = NULL;
    int ntask = 0, nk = 0, nmerged = 0;
    cJSON *root = NULL;
    char logbuf[1100], devname[256] = "";
    FILE *out = json && !strcmp(json, "-") ? fopen("/dev/null", "w") : stdout;
    if (!out) out = stdout;
    if (!log) {
        if (is_pkg) {
            size_t l = strlen(mo.model);
            if (ends_with(mo.model, ".yqp")) l -= 4;
            snprintf(logbuf, sizeof logbuf, "%.*s.tune.jsonl", (int)l, mo.model);
        } else {
            snprintf(logbuf, sizeof logbuf, "yquant-tune.jsonl");
        }
        log = logbuf;
    }
    o.log_path = log;
    if (yq_tune_tasks(g, batches, nb, &tasks, &ntask, &err)) {
        cli_error(&err);
        goto done;
    }
    if (ntask == 0) {
        fprintf(stderr, "yquant: tune: %s has no int8 conv to tune\n", mo.model);
        goto done;
    }
    /* the log before the GPU: a bad line is reported wherever this runs */
    int known = 0;
    {
        yq_tune_log *lg = NULL;
        if (yq_tune_log_read(log, &lg, &err)) {
            cli_error(&err);
            goto done;
        }
        known = yq_tune_log_trials(lg);
        yq_tune_log_free(lg);
    }
    int ndev = yq_cuda_device_count();
    if (ndev == 0) {
        fprintf(stderr, "yquant: tune: no CUDA device is available (no NVIDIA driver or no GPU); tuning measures the "
                        "kernels on the GPU that will run them\n");
        goto done;
    }
    if (dev >= ndev) {
        fprintf(stderr, "yquant: tune: cuda:%d: no such device (%d present)\n", dev, ndev);
        goto done;
    }
    if (yq_cuda_set_device(dev, &err) || yq_cuda_device_name(devname, sizeof devname, &err)) {
        cli_error(&err);
        goto done;
    }
    {
        int convs = 0;
        for (int i = 0; i < ntask; i++) convs += tasks[i].n_nodes;
        fprintf(out, "tune:    %s%s\ndevice:  cuda:%d, %s\ntasks:   %d (conv shape x batch) over %d int8 convs, batch %d",
                mo.model, is_pkg ? "" : " (quantized without calibration; choices go to the log only)", dev, devname,
                ntask, convs / nb, batches[0]);
        for (int b = 1; b < nb; b++) fprintf(out, ",%d", batches[b]);
        fprintf(out, "\ntuner:   %s, trials %d, early stopping %d, budget %.0f s%s\nlog:     %s (%d trials known)\n",
                yq_tuner_name(o.tuner), o.trials, o.early_stopping, o.budget_s, o.retune ? ", retune" : "", log, known);
        fflush(out);
    }
    tune_cli tc = { isatty(2), now_s() };
    o.progress = on_progress;
    o.progress_ctx = &tc;
    yq_tune_summary sum;
    if (yq_tune_gpu(g, tasks, ntask, &o, &sum, &err)) {
        fprintf(stderr, "yquant: tune: %s (the log keeps what was measured)\n", err.msg);
        goto done;
    }
    int sm = yq_cuda_arch();
    if (yq_tune_choices(g, tasks, ntask, sm, -1, &k, &nk, &err)) {
        cli_error(&err);
        goto done;
    }

    /* the table */
    fprintf(out, "\n%-38s %5s %-22s %9s %-24s %9s %7s %6s  %s\n", "shape (key)", "convs", "default", "us", "tuned", "us",
            "speedup", "trials", "");
    for (int i = 0; i < ntask; i++) {
        const yq_tune_task *t = &tasks[i];
        char dn[64], bn[64], dus[16] = "-", bus[16] = "-", sp[16] = "-";
        yq_conv_cfg_name(t->def, dn, sizeof dn);
        yq_conv_cfg_name(t->best, bn, sizeof bn);
        if (t->default_us > 0) snprintf(dus, sizeof dus, "%.1f", t->default_us);
        if (t->best_us > 0) snprintf(bus, sizeof bus, "%.1f", t->best_us);
        if (t->default_us > 0 && t->best_us > 0) snprintf(sp, sizeof sp, "%.2fx", t->default_us / t->best_us);
        fprintf(out, "%-38s %5d %-22s %9s %-24s %9s %7s %6d  %s\n", t->key, t->n_nodes, dn, dus, bn, bus, sp, t->trials,
                state_name(t->state));
        if (t->failed) fprintf(out, "%38s (%d candidates failed and were skipped: see the log)\n", "", t->failed);
    }
    for (int b = 0; b < nb; b++) {
        fam_sum s = family_sums(tasks, ntask, batches[b]);
        if (!s.convs || s.def <= 0) continue;
        fprintf(out, "\nbatch %d, sum over %d convs (%d shapes), each timed alone:\n", batches[b], s.convs, s.shapes);
        fprintf(out, "  untuned default %10.1f us\n  dp4a, tuned     %10.1f us  %.2fx\n  mma, tuned      %10.1f us  %.2fx\n"
                "  tuned (any)     %10.1f us  %.2fx\n", s.def, s.dp4a, s.def / s.dp4a, s.mma, s.def / s.mma, s.tuned,
                s.def / s.tuned);
    }
    fprintf(out, "\ntuning: %.1f s, %d tasks (%d tuned, %d from the log, %d cut by the budget, %d skipped), %d trials "
            "(%d measured, %d failed)\n", sum.seconds, sum.tasks, sum.searched, sum.logged, sum.partial, sum.skipped,
            sum.trials, sum.measured, sum.failed);

    if (is_pkg && write && nk > 0) {
        if (info->n_kernels > 0) {
            merged = malloc(sizeof *merged * (size_t)info->n_kernels);
            if (!merged) {
                fprintf(stderr, "yquant: out of memory\n");
                goto done;
            }
            memcpy(merged, info->kernels, sizeof *merged * (size_t)info->n_kernels);
            nmerged = info->n_kernels;
        }
        if (yq_tune_merge(&merged, &nmerged, k, nk, &err)) {
            cli_error(&err);
            goto done;
        }
        yq_package_meta meta;
        memset(&meta, 0, sizeof meta);
        meta.qconfig_text = info->qconfig_text;
        meta.accuracy_json = info->accuracy_json;
        meta.calib_method = info->calib_method;
        meta.tuning_json = info->tuning_json;
        meta.request_text = info->request_text;
        meta.plan_json = info->plan_json;
        meta.kernels = merged;
        meta.n_kernels = nmerged;
        meta.calib_images = info->calib_images;
        meta.letterbox = info->letterbox;
        meta.created_unix = cli_created_unix();
        for (int i = 0; i < 32; i++) {
            unsigned x = 0;
            sscanf(info->calib_images_sha256 + 2 * i, "%2x", &x);
            meta.calib_images_sha256[i] = (uint8_t)x;
        }
        if (yq_package_write(mo.model, g, &meta, &err)) {
            cli_error(&err);
            goto done;
        }
        fprintf(out, "wrote %d kernel choices (sm_%d) to %s (%d in all)\n", nk, sm, mo.model, nmerged);
    } else if (is_pkg && nk > 0) {
        fprintf(out, "--no-write: %s left as it was\n", mo.model);
    }
    rc = 0;
    if (json) {
        root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "model", mo.model);
        cJSON_AddStringToObject(root, "device", devname);
        cJSON_AddNumberToObject(root, "sm", sm);
        cJSON_AddStringToObject(root, "tuner", yq_tuner_name(o.tuner));
        cJSON_AddStringToObject(root, "log", log);
        cJSON_AddNumberToObject(root, "seconds", sum.seconds);
        cJSON_AddNumberToObject(root, "trials", sum.trials);
        cJSON_AddNumberToObject(root, "measured", sum.measured);
        cJSON_AddNumberToObject(root, "failed", sum.failed);
        cJSON_AddNumberToObject(root, "tasks_from_log", sum.logged);
        cJSON *a = cJSON_AddArrayToObject(root, "tasks");
        for (int i = 0; i < ntask; i++) {
            const yq_tune_task *t = &tasks[i];
            char nm[64];
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "key", t->key);
            cJSON_AddNumberToObject(e, "batch", t->batch);
            cJSON_AddNumberToObject(e, "convs", t->n_nodes);
            cJSON_AddStringToObject(e, "state", state_name(t->state));
            yq_conv_cfg_name(t->def, nm, sizeof nm);
            cJSON_AddStringToObject(e, "default", nm);
            cJSON_AddNumberToObject(e, "default_us", t->default_us);
            yq_conv_cfg_name(t->best, nm, sizeof nm);
            cJSON_AddStringToObject(e, "best", nm);
            cJSON_AddNumberToObject(e, "best_us", t->best_us);
            if (t->best_us > 0) cJSON_AddNumberToObject(e, "best_tops", t->ops / t->best_us * 1e-6);
            cJSON_AddNumberToObject(e, "trials", t->trials);
            cJSON_AddNumberToObject(e, "failed", t->failed);
            if (t->family_us[YQ_CONV_DP4A] > 0) cJSON_AddNumberToObject(e, "dp4a_us", t->family_us[YQ_CONV_DP4A]);
            if (t->family_us[YQ_CONV_MMA] > 0) cJSON_AddNumberToObject(e, "mma_us", t->family_us[YQ_CONV_MMA]);
            if (t->similar[0]) cJSON_AddStringToObject(e, "started_from", t->similar);
            cJSON_AddItemToArray(a, e);
        }
        cJSON *fs = cJSON_AddArrayToObject(root, "sums");
        for (int b = 0; b < nb; b++) {
            fam_sum s = family_sums(tasks, ntask, batches[b]);
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "batch", batches[b]);
            cJSON_AddNumberToObject(e, "convs", s.convs);
            cJSON_AddNumberToObject(e, "default_us", s.def);
            cJSON_AddNumberToObject(e, "dp4a_us", s.dp4a);
            cJSON_AddNumberToObject(e, "mma_us", s.mma);
            cJSON_AddNumberToObject(e, "tuned_us", s.tuned);
            cJSON_AddItemToArray(fs, e);
        }
        if (cli_write_json(json, root)) rc = 1;
    }
done:
    if (out != stdout) fclose(out);
    cJSON_Delete(root);
    free(k);
    free(merged);
    yq_tune_tasks_free(tasks);
    yq_package_info_free(info);
    yq_graph_free(g);
    return rc;
}
