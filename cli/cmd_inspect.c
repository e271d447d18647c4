/* yquant inspect MODEL: one row per layer, totals, and the same facts as JSON. */
#include <stdio.h>
#include <string.h>
#include <cjson/cJSON.h>
#include <stdlib.h>
#include "cli/cli.h"

static const char *help =
    "usage: yquant inspect MODEL [--weights FILE|synthetic[:SEED]] [--size N|WxH] [--json FILE]\n"
    "\n"
    "One row per layer: index, type, input -> output shape, parameters, GFLOPs (2 x MACs),\n"
    "then totals.  MODEL is a folder with one .cfg and one .weights, a .cfg file, an\n"
    "Ultralytics detect export (.onnx), or the name of a model under $YQ_DATA/models\n"
    "(yolo-fastest-1.1-xl, yolov3, ...).  Without weights the cfg alone is read.\n"
    "  --json FILE   also write the table as JSON ('-' for stdout)\n"
    "A .yqp package is printed too: its provenance, qconfig, calibration, accuracy, per\n"
    "layer the output type and scale, and the kernel choices of `yquant tune` (per GPU\n"
    "architecture and batch).\n";

/* The distinct (sm, batch) pairs of a package's kernel choices, sorted. */
typedef struct kgroup { int sm, batch, convs; double us, def_us; } kgroup;

static int kgroups(const yq_kernel_choice *kc, int nk, kgroup *gr, int cap)
{
    int n = 0;
    for (int i = 0; i < nk; i++) {
        const yq_kernel_choice *k = &kc[i];
        int j;
        for (j = 0; j < n && (gr[j].sm != k->sm || gr[j].batch != k->batch); j++) {}
        if (j == n) {
            if (n == cap) continue;
            gr[n++] = (kgroup){ k->sm, k->batch, 0, 0, 0 };
        }
        gr[j].convs++;
        gr[j].us += (double)k->us;
        gr[j].def_us += (double)k->default_us;
    }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && (gr[j].sm < gr[j - 1].sm || (gr[j].sm == gr[j - 1].sm && gr[j].batch < gr[j - 1].batch)); j--) {
            kgroup t = gr[j];
            gr[j] = gr[j - 1];
            gr[j - 1] = t;
        }
    return n;
}

static const char *kernel_of(const yq_kernel_choice *kc, int nk, int layer, const kgroup *gr)
{
    for (int i = 0; i < nk; i++)
        if (kc[i].layer == layer && kc[i].sm == gr->sm && kc[i].batch == gr->batch) return kc[i].kernel;
    return "-";
}

static void print_kernels(FILE *t, const yq_model *m, const yq_layer *layers, int n_layers, cJSON *root)
{
    yq_model_about about;
    yq_model_describe(m, &about);
    int nk = about.n_kernels;
    yq_kernel_choice *kc = nk ? calloc((size_t)nk, sizeof *kc) : NULL;
    for (int i = 0; i < nk && kc; i++) yq_model_kernel(m, i, &kc[i], NULL);
    if (!kc) nk = 0;
    kgroup gr[16];
    int ng = kgroups(kc, nk, gr, 16);
    if (!ng) {
        fprintf(t, "kernels: not tuned (`yquant tune` chooses a kernel per layer and GPU)\n");
        free(kc);
        return;
    }
    fprintf(t, "kernels: tuned by `yquant tune`; sum of each conv timed alone, tuned vs untuned default:\n");
    for (int j = 0; j < ng; j++)
        fprintf(t, "  sm_%d, batch %-5d %3d conv%s %10.1f us vs %10.1f us  %.2fx\n", gr[j].sm, gr[j].batch, gr[j].convs,
                gr[j].convs == 1 ? " " : "s", gr[j].us, gr[j].def_us, gr[j].us > 0 ? gr[j].def_us / gr[j].us : 0);
    fprintf(t, "%5s ", "layer");
    for (int j = 0; j < ng && j < 4; j++) {
        char h[32];
        snprintf(h, sizeof h, "sm_%d b%d", gr[j].sm, gr[j].batch);
        fprintf(t, " %-24s", h);
    }
    fprintf(t, "%s\n", ng > 4 ? " (--json has the rest)" : "");
    for (int i = 0; i < n_layers; i++) {
        if (strcmp(layers[i].type, "conv")) continue;
        int any = 0, L = layers[i].index;
        for (int j = 0; j < ng && !any; j++) any = strcmp(kernel_of(kc, nk, L, &gr[j]), "-") != 0;
        if (!any) continue;
        fprintf(t, "%5d ", L);
        for (int j = 0; j < ng && j < 4; j++) fprintf(t, " %-24s", kernel_of(kc, nk, L, &gr[j]));
        fprintf(t, "\n");
    }
    if (root) {
        cJSON *a = cJSON_AddArrayToObject(root, "kernels");
        for (int i = 0; i < nk; i++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "layer", kc[i].layer);
            cJSON_AddNumberToObject(e, "node", kc[i].layer + 1);   /* the graph's node: the input is node 0 */
            cJSON_AddNumberToObject(e, "batch", kc[i].batch);
            cJSON_AddNumberToObject(e, "sm", kc[i].sm);
            cJSON_AddStringToObject(e, "cfg", kc[i].kernel);
            cJSON_AddNumberToObject(e, "us", (double)kc[i].us);
            cJSON_AddNumberToObject(e, "default_us", (double)kc[i].default_us);
            cJSON_AddItemToArray(a, e);
        }
    }
    free(kc);
}

enum { OPT_JSON = CLI_OPT_CMD };
static const struct option options[] = {
    CLI_HELP_OPTION, CLI_MODEL_OPTIONS,
    { "json", required_argument, NULL, OPT_JSON },
    { NULL, 0, NULL, 0 },
};

int cmd_inspect(int argc, char **argv)
{
    cli_model_opt mo = { .cfg_only = 1 };
    const char *json = NULL;
    cli_getopt g;
    cli_getopt_begin(&g, "inspect", argc, argv, ":h", options);
    for (int c; (c = cli_getopt_next(&g)) != -1;) {
        int r = cli_model_arg(&mo, &g, c);
        if (r) {
            if (r < 0) return 2;
            continue;
        }
        switch (c) {
        case 'h': case CLI_OPT_HELP: fputs(help, stdout); return 0;
        case OPT_JSON: json = g.arg; break;
        default: return 2;   /* '?': cli_getopt_next said why */
        }
    }
    for (int i = optind; i < argc; i++) {
        if (!strcmp(argv[i], "-")) return cli_getopt_unknown(&g, argv[i]);
        if (!mo.model) mo.model = argv[i];
        else return cli_usage_error("inspect: one MODEL only");
    }
    if (!mo.model) return cli_usage_error("inspect: which MODEL?");
    {
        const char *ins[] = { mo.model, mo.weights };
        if (cli_check_outputs(ins, 2, "--json", json, NULL, NULL)) return 1;
    }
    yq_error err;
    yq_model *m = NULL;
    if (cli_open_model(&mo, &m, &err) != YQ_OK) return cli_error(&err);
    yq_model_about ab;
    yq_model_describe(m, &ab);
    const int int8 = yq_model_is_int8(m);
    int in_c, in_h, in_w;
    yq_model_input(m, &in_c, &in_h, &in_w);
    yq_layer *layers = calloc((size_t)(ab.layers ? ab.layers : 1), sizeof *layers);
    if (!layers) {
        yq_model_free(m);
        fprintf(stderr, "yquant: inspect: out of memory\n");
        return 1;
    }
    for (int i = 0; i < ab.layers; i++) yq_model_layer(m, i, &layers[i], NULL);

    /* With --json - stdout is the JSON alone; the table goes nowhere. */
    FILE *t = json && !strcmp(json, "-") ? fopen("/dev/null", "w") : stdout;
    if (!t) t = stdout;
    if (ab.is_package) {
        fprintf(t, "package: %s (format %d, yquant %s, written %s; %s)\n", mo.model, ab.format_version,
                ab.yquant_version, ab.created, ab.checksums ? "checksums verified" : "no checksums");
        fprintf(t, "source:  %s + %s\n         model sha256 %s\n", ab.cfg, ab.weights, ab.model_sha256);
        fprintf(t, "calibration: %d images (sha256 %s), %s; %s\n", ab.calib_images, ab.calib_images_sha256,
                ab.calib_method, yq_model_letterbox(m) ? "letterbox" : "plain resize");
        fprintf(t, "qconfig%s:\n", ab.qconfig_request ? " (as resolved: the measured choices written in)" : "");
        for (const char *l = ab.qconfig; *l;) {
            const char *e = strchr(l, '\n');
            int len = e ? (int)(e - l) : (int)strlen(l);
            fprintf(t, "  %.*s\n", len, l);
            l += len + (e != NULL);
        }
        if (ab.qconfig_request && strcmp(ab.qconfig_request, ab.qconfig)) {
            /* what was asked where it differs */
            fprintf(t, "asked, where it differs:\n");
            for (const char *l = ab.qconfig_request; *l;) {
                const char *e = strchr(l, '\n');
                int len = e ? (int)(e - l) : (int)strlen(l), found = 0;
                for (const char *k = ab.qconfig; *k && !found;) {
                    const char *ke = strchr(k, '\n');
                    int kl = ke ? (int)(ke - k) : (int)strlen(k);
                    found = kl == len && !strncmp(k, l, (size_t)len);
                    k += kl + (ke != NULL);
                }
                if (!found && len) fprintf(t, "  %.*s\n", len, l);
                l += len + (e != NULL);
            }
        }
        cJSON *plan = ab.plan_json ? cJSON_Parse(ab.plan_json) : NULL, *it;
        if (plan) {
            /* the float convs and why */
            int nf = 0;
            fprintf(t, "float convs:");
            cJSON_ArrayForEach(it, cJSON_GetObjectItem(plan, "nodes")) {
                cJSON *op = cJSON_GetObjectItem(it, "op"), *dt = cJSON_GetObjectItem(it, "dtype");
                cJSON *why = cJSON_GetObjectItem(it, "why"), *L = cJSON_GetObjectItem(it, "layer");
                if (!cJSON_IsString(op) || strcmp(op->valuestring, "conv") || !cJSON_IsString(dt) ||
                    strcmp(dt->valuestring, "float") || !cJSON_IsString(why) || !cJSON_IsNumber(L))
                    continue;
                fprintf(t, "%s %d (%s)", nf++ ? "," : "", L->valueint, why->valuestring);
            }
            fprintf(t, "%s\n", nf ? "" : " none");
            int ns = 0;
            cJSON_ArrayForEach(it, cJSON_GetObjectItem(plan, "searched_thresholds"))
                if (cJSON_IsNumber(it)) fprintf(t, "%s%d", ns++ ? "," : "thresholds searched: layers ", it->valueint);
            if (ns) fprintf(t, "\n");
        }
        cJSON_Delete(plan);
        cJSON *acc = cJSON_Parse(ab.accuracy_json);
        fprintf(t, "accuracy:%s\n", cJSON_IsArray(acc) && cJSON_GetArraySize(acc) ? "" : " not validated (quantized without a validation set)");
        for (cJSON *r = cJSON_IsArray(acc) ? acc->child : NULL; r; r = r->next) {
            cJSON *nm = cJSON_GetObjectItem(r, "name"), *mp = cJSON_GetObjectItem(r, "map"), *m50 = cJSON_GetObjectItem(r, "map50");
            cJSON *eng = cJSON_GetObjectItem(r, "engine");
            if (!cJSON_IsString(nm) || !cJSON_IsNumber(mp) || !cJSON_IsNumber(m50)) continue;
            fprintf(t, "  %-10s mAP %6.2f  mAP50 %6.2f", nm->valuestring, 100 * mp->valuedouble, 100 * m50->valuedouble);
            /* the engine it was measured on (packages before --target: cpu for every row) */
            fprintf(t, "  on %s\n", cJSON_IsString(eng) ? eng->valuestring : "cpu");
        }
        cJSON_Delete(acc);
    } else
    fprintf(t, "model:   %s\nweights: %s\n", ab.cfg, yq_model_has_weights(m) ? ab.weights : "(none: cfg only)");
    const int dw = int8 ? 40 : 26;   /* the detail column: wider with the int8 type and scale */
    fprintf(t, "%5s  %-9s %-*s %-14s    %-14s %10s %8s\n", "layer", "type", dw, "", "input", "output", "params", "GFLOPs");
    cJSON *root = json ? cJSON_CreateObject() : NULL, *jl = NULL;
    if (root) {
        cJSON_AddStringToObject(root, "cfg", ab.cfg);
        if (ab.is_package) {
            cJSON_AddStringToObject(root, "qconfig", ab.qconfig);
            if (ab.qconfig_request) cJSON_AddStringToObject(root, "qconfig_request", ab.qconfig_request);
            if (ab.plan_json) cJSON_AddItemToObject(root, "plan", cJSON_Parse(ab.plan_json));
        }
        cJSON_AddStringToObject(root, "weights", ab.is_package || yq_model_has_weights(m) ? ab.weights : "");
        cJSON *in = cJSON_AddObjectToObject(root, "input");
        cJSON_AddNumberToObject(in, "width", in_w);
        cJSON_AddNumberToObject(in, "height", in_h);
        cJSON_AddNumberToObject(in, "channels", in_c);
        jl = cJSON_AddArrayToObject(root, "layers");
    }
    for (int i = 0; i < ab.layers; i++) {
        const yq_layer *L = &layers[i];
        const int conv = !strcmp(L->type, "conv");
        char a[32], b[32], d[160];
        snprintf(a, sizeof a, "%dx%dx%d", L->in_w, L->in_h, L->in_c);
        snprintf(b, sizeof b, "%dx%dx%d", L->out_w, L->out_h, L->out_c);
        snprintf(d, sizeof d, "%s", L->detail);
        if (int8) {
            size_t dl = strlen(d);
            const char *how = !strcmp(L->dtype, "float") && conv ? (!strcmp(L->precision, "fp16w") ? " fp16w" : " fp32")
                              : L->activation_table ? " table" : "";
            snprintf(d + dl, sizeof d - dl, " [%s%s s=%.3g]", L->dtype, how, (double)L->scale);
        }
        if (conv)
            fprintf(t, "%5d  %-9s %-*s %-14s -> %-14s %10lld %8.3f\n", L->index, L->type, dw, d, a, b, L->params, L->flops * 1e-9);
        else
            fprintf(t, "%5d  %-9s %-*s %-14s -> %-14s\n", L->index, L->type, dw, d, a, b);
        if (jl) {
            cJSON *l = cJSON_CreateObject();
            cJSON_AddNumberToObject(l, "index", L->index);
            cJSON_AddStringToObject(l, "type", L->type);
            cJSON_AddStringToObject(l, "detail", d);
            cJSON_AddNumberToObject(l, "cfg_line", L->cfg_line);
            cJSON_AddItemToObject(l, "inputs", cJSON_CreateIntArray(L->inputs, L->n_inputs));
            int ia[3] = { L->in_c, L->in_h, L->in_w }, oa[3] = { L->out_c, L->out_h, L->out_w };
            cJSON_AddItemToObject(l, "input_chw", cJSON_CreateIntArray(ia, 3));
            cJSON_AddItemToObject(l, "output_chw", cJSON_CreateIntArray(oa, 3));
            cJSON_AddNumberToObject(l, "params", (double)L->params);
            cJSON_AddNumberToObject(l, "gflops", L->flops * 1e-9);
            if (int8 && conv) cJSON_AddStringToObject(l, "precision", L->precision);   /* what every engine computes it with */
            if (int8 && conv && L->activation_table) cJSON_AddBoolToObject(l, "activation_table", 1);
            cJSON_AddItemToArray(jl, l);
        }
    }
    fprintf(t, "total: %d layers (%d conv), %lld params, %.2f GFLOPs at %dx%d\n", ab.layers, ab.convs, ab.params,
            ab.flops * 1e-9, in_w, in_h);
    if (ab.is_package) print_kernels(t, m, layers, ab.layers, root);
    int rc = 0;
    if (t != stdout) fclose(t);
    if (root) {
        cJSON_AddNumberToObject(root, "layers_total", ab.layers);
        cJSON_AddNumberToObject(root, "convs", ab.convs);
        cJSON_AddNumberToObject(root, "params", (double)ab.params);
        cJSON_AddNumberToObject(root, "gflops", ab.flops * 1e-9);
        rc = cli_write_json(json, root);
        cJSON_Delete(root);
    }
    free(layers);
    yq_model_free(m);
    return rc;
}
