/* yquant inspect MODEL: one row per layer, totals, and the same facts as JSON. */
#include <stdio.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "cli/cli.h"
#include "runtime/package.h"

static const char *help =
    "usage: yquant inspect MODEL [--weights FILE|synthetic[:SEED]] [--size N|WxH] [--json FILE]\n"
    "\n"
    "One row per layer: index, type, input -> output shape, parameters, GFLOPs (2 x MACs),\n"
    "then totals.  MODEL is a folder with one .cfg and one .weights, a .cfg file, or the\n"
    "name of a model under $YQ_DATA/models (yolo-fastest-1.1-xl, yolov3, ...).  Without\n"
    "weights the cfg alone is read.\n"
    "  --json FILE   also write the table as JSON ('-' for stdout)\n"
    "A .yqp package is printed too: its provenance, qconfig, calibration, accuracy, per\n"
    "layer the output type and scale, and the kernel choices of `yquant tune` (per GPU\n"
    "architecture and batch).\n";

/* The distinct (sm, batch) pairs of a package's kernel choices, sorted. */
typedef struct kgroup { int sm, batch, convs; double us, def_us; } kgroup;

static int kgroups(const yq_package_info *pi, kgroup *gr, int cap)
{
    int n = 0;
    for (int i = 0; i < pi->n_kernels; i++) {
        const yq_tuned_kernel *k = &pi->kernels[i];
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

static const char *kernel_of(const yq_package_info *pi, int node, const kgroup *gr)
{
    for (int i = 0; i < pi->n_kernels; i++)
        if (pi->kernels[i].node == node && pi->kernels[i].sm == gr->sm && pi->kernels[i].batch == gr->batch)
            return pi->kernels[i].cfg;
    return "-";
}

static void print_kernels(FILE *t, const yq_graph *g, const yq_package_info *pi, cJSON *root)
{
    kgroup gr[16];
    int ng = kgroups(pi, gr, 16);
    if (!ng) {
        fprintf(t, "kernels: not tuned (`yquant tune` chooses a kernel per layer and GPU)\n");
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
    for (int id = 1; id < g->n_nodes; id++) {
        if (g->nodes[id].op != YQ_OP_CONV) continue;
        int any = 0;
        for (int j = 0; j < ng && !any; j++) any = strcmp(kernel_of(pi, id, &gr[j]), "-") != 0;
        if (!any) continue;
        fprintf(t, "%5d ", g->nodes[id].layer);
        for (int j = 0; j < ng && j < 4; j++) fprintf(t, " %-24s", kernel_of(pi, id, &gr[j]));
        fprintf(t, "\n");
    }
    if (!root) return;
    cJSON *a = cJSON_AddArrayToObject(root, "kernels");
    for (int i = 0; i < pi->n_kernels; i++) {
        const yq_tuned_kernel *k = &pi->kernels[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "layer", g->nodes[k->node].layer);
        cJSON_AddNumberToObject(e, "node", k->node);
        cJSON_AddNumberToObject(e, "batch", k->batch);
        cJSON_AddNumberToObject(e, "sm", k->sm);
        cJSON_AddStringToObject(e, "cfg", k->cfg);
        cJSON_AddNumberToObject(e, "us", (double)k->us);
        cJSON_AddNumberToObject(e, "default_us", (double)k->default_us);
        cJSON_AddItemToArray(a, e);
    }
}

static void shape_str(char *buf, size_t n, yq_shape s) { snprintf(buf, n, "%dx%dx%d", s.w, s.h, s.c); }

static void detail(const yq_graph *g, const yq_node *n, char *buf, size_t cap)
{
    buf[0] = 0;
    switch (n->op) {
    case YQ_OP_CONV:
        snprintf(buf, cap, "%d %dx%d/%d%s %s", n->p.conv.filters, n->p.conv.size, n->p.conv.size, n->p.conv.stride,
                 n->p.conv.groups > 1 ? (n->p.conv.groups == yq_node_in_shape(g, n).c ? " dw" : " grouped") : "",
                 yq_act_name(n->act));
        break;
    case YQ_OP_MAXPOOL: snprintf(buf, cap, "%dx%d/%d", n->p.pool.size, n->p.pool.size, n->p.pool.stride); break;
    case YQ_OP_UPSAMPLE: snprintf(buf, cap, "x%d", n->p.up.stride); break;
    case YQ_OP_SHORTCUT: snprintf(buf, cap, "from %d %s", n->src[1] - 1, yq_act_name(n->act)); break;
    case YQ_OP_ROUTE: {
        size_t k = 0;
        for (int i = 0; i < n->n_src && k < cap; i++)
            k += (size_t)snprintf(buf + k, cap - k, "%s%d", i ? "," : "", n->src[i] - 1);
        if (n->p.route.groups > 1 && k < cap) snprintf(buf + k, cap - k, " g%d/%d", n->p.route.group_id, n->p.route.groups);
        break;
    }
    case YQ_OP_YOLO: case YQ_OP_REGION:
        snprintf(buf, cap, "%d classes, %d anchors", n->p.head.classes, n->p.head.n_mask);
        break;
    default: break;
    }
}

int cmd_inspect(int argc, char **argv)
{
    cli_model_opt mo = { .cfg_only = 1 };
    const char *json = NULL;
    for (int i = 0; i < argc; i++) {
        int r = cli_model_arg(&mo, argc, argv, &i);
        if (r < 0) return 2;
        if (r) continue;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { fputs(help, stdout); return 0; }
        if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else if (argv[i][0] == '-') return cli_usage_error("inspect: unknown option %s", argv[i]);
        else if (!mo.model) mo.model = argv[i];
        else return cli_usage_error("inspect: one MODEL only");
    }
    if (!mo.model) return cli_usage_error("inspect: which MODEL?");
    {
        const char *ins[] = { mo.model, mo.weights };
        if (cli_check_outputs(ins, 2, "--json", json, NULL, NULL)) return 1;
    }
    yq_error err;
    yq_graph *g;
    yq_package_info *pi = NULL;
    size_t ml = strlen(mo.model);
    if ((ml > 4 && !strcmp(mo.model + ml - 4, ".yqp")) || yq_file_is_hdf5(mo.model)) {   /* a damaged one says so */
        if (yq_package_load(mo.model, &g, &pi, &err) != YQ_OK) return cli_error(&err);
    } else if (cli_load_model(&mo, &g, &err) != YQ_OK) {
        return cli_error(&err);
    }

    /* With --json - stdout is the JSON alone; the table goes nowhere. */
    FILE *t = json && !strcmp(json, "-") ? fopen("/dev/null", "w") : stdout;
    if (!t) t = stdout;
    const int show_weights = g->nodes[g->n_nodes > 1 ? 1 : 0].w != NULL || g->weights_path[0];
    if (pi) {
        fprintf(t, "package: %s (format %d, yquant %s, written %s; %s)\n", mo.model, pi->format_version,
                pi->yquant_version, pi->created, pi->checksums ? "checksums verified" : "no checksums");
        fprintf(t, "source:  %s + %s\n         model sha256 %s\n", pi->cfg_path, pi->weights_path, pi->model_sha256);
        fprintf(t, "calibration: %d images (sha256 %s), %s; %s\n", pi->calib_images, pi->calib_images_sha256,
                pi->calib_method, pi->letterbox ? "letterbox" : "plain resize");
        fprintf(t, "qconfig%s:\n", pi->request_text ? " (as resolved: the measured choices written in)" : "");
        for (const char *l = pi->qconfig_text; *l;) {
            const char *e = strchr(l, '\n');
            int len = e ? (int)(e - l) : (int)strlen(l);
            fprintf(t, "  %.*s\n", len, l);
            l += len + (e != NULL);
        }
        if (pi->request_text && strcmp(pi->request_text, pi->qconfig_text)) {
            /* what was asked where it differs */
            fprintf(t, "asked, where it differs:\n");
            for (const char *l = pi->request_text; *l;) {
                const char *e = strchr(l, '\n');
                int len = e ? (int)(e - l) : (int)strlen(l), found = 0;
                for (const char *k = pi->qconfig_text; *k && !found;) {
                    const char *ke = strchr(k, '\n');
                    int kl = ke ? (int)(ke - k) : (int)strlen(k);
                    found = kl == len && !strncmp(k, l, (size_t)len);
                    k += kl + (ke != NULL);
                }
                if (!found && len) fprintf(t, "  %.*s\n", len, l);
                l += len + (e != NULL);
            }
        }
        cJSON *plan = pi->plan_json ? cJSON_Parse(pi->plan_json) : NULL, *it;
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
        cJSON *acc = cJSON_Parse(pi->accuracy_json);
        fprintf(t, "accuracy:%s\n", cJSON_IsArray(acc) && cJSON_GetArraySize(acc) ? "" : " (not measured)");
        for (cJSON *r = cJSON_IsArray(acc) ? acc->child : NULL; r; r = r->next) {
            cJSON *nm = cJSON_GetObjectItem(r, "name"), *m = cJSON_GetObjectItem(r, "map"), *m50 = cJSON_GetObjectItem(r, "map50");
            cJSON *eng = cJSON_GetObjectItem(r, "engine");
            if (!cJSON_IsString(nm) || !cJSON_IsNumber(m) || !cJSON_IsNumber(m50)) continue;
            fprintf(t, "  %-10s mAP %6.2f  mAP50 %6.2f", nm->valuestring, 100 * m->valuedouble, 100 * m50->valuedouble);
            /* the engine it was measured on (packages before --target: cpu for every row) */
            fprintf(t, "  on %s\n", cJSON_IsString(eng) ? eng->valuestring : "cpu");
        }
        cJSON_Delete(acc);
    } else
    fprintf(t, "model:   %s\nweights: %s\n", g->cfg_path, show_weights ? g->weights_path : "(none: cfg only)");
    const int dw = g->q ? 40 : 26;   /* the detail column: wider with the int8 type and scale */
    fprintf(t, "%5s  %-9s %-*s %-14s    %-14s %10s %8s\n", "layer", "type", dw, "", "input", "output", "params", "GFLOPs");
    double flops = 0;
    long params = 0;
    int convs = 0;
    cJSON *root = json ? cJSON_CreateObject() : NULL, *layers = NULL;
    if (root) {
        cJSON_AddStringToObject(root, "cfg", g->cfg_path);
        if (pi) {
            cJSON_AddStringToObject(root, "qconfig", pi->qconfig_text);
            if (pi->request_text) cJSON_AddStringToObject(root, "qconfig_request", pi->request_text);
            if (pi->plan_json) cJSON_AddItemToObject(root, "plan", cJSON_Parse(pi->plan_json));
        }
        cJSON_AddStringToObject(root, "weights", g->weights_path);
        cJSON *in = cJSON_AddObjectToObject(root, "input");
        cJSON_AddNumberToObject(in, "width", g->nodes[0].out.w);
        cJSON_AddNumberToObject(in, "height", g->nodes[0].out.h);
        cJSON_AddNumberToObject(in, "channels", g->nodes[0].out.c);
        layers = cJSON_AddArrayToObject(root, "layers");
    }
    for (int i = 1; i < g->n_nodes; i++) {
        const yq_node *n = &g->nodes[i];
        char a[32], b[32], d[96];
        shape_str(a, sizeof a, yq_node_in_shape(g, n));
        shape_str(b, sizeof b, n->out);
        detail(g, n, d, sizeof d);
        if (g->q) {
            size_t dl = strlen(d);
            const yq_qnode *q = &g->q[i];
            snprintf(d + dl, sizeof d - dl, " [%s%s s=%.3g]", q->float_op ? "float" : q->dtype == YQ_S8 ? "int8" : q->dtype == YQ_U8 ? "uint8" : "i8>f32",
                     q->float_op && n->op == YQ_OP_CONV ? (q->fp16w ? " fp16w" : " fp32") : q->lut ? " table" : "",
                     (double)q->scale);
        }
        double f = yq_node_flops(g, n);
        long p = yq_node_params(n);
        flops += f;
        params += p;
        convs += n->op == YQ_OP_CONV;
        if (n->op == YQ_OP_CONV)
            fprintf(t, "%5d  %-9s %-*s %-14s -> %-14s %10ld %8.3f\n", n->layer, yq_op_name(n->op), dw, d, a, b, p, f * 1e-9);
        else
            fprintf(t, "%5d  %-9s %-*s %-14s -> %-14s\n", n->layer, yq_op_name(n->op), dw, d, a, b);
        if (layers) {
            cJSON *l = cJSON_CreateObject();
            cJSON_AddNumberToObject(l, "index", n->layer);
            cJSON_AddStringToObject(l, "type", yq_op_name(n->op));
            cJSON_AddStringToObject(l, "detail", d);
            cJSON_AddNumberToObject(l, "cfg_line", n->line);
            cJSON *src = cJSON_AddArrayToObject(l, "inputs");
            for (int k = 0; k < n->n_src; k++) cJSON_AddItemToArray(src, cJSON_CreateNumber(n->src[k] - 1));
            yq_shape s = yq_node_in_shape(g, n);
            int ia[3] = { s.c, s.h, s.w }, oa[3] = { n->out.c, n->out.h, n->out.w };
            cJSON_AddItemToObject(l, "input_chw", cJSON_CreateIntArray(ia, 3));
            cJSON_AddItemToObject(l, "output_chw", cJSON_CreateIntArray(oa, 3));
            cJSON_AddNumberToObject(l, "params", (double)p);
            cJSON_AddNumberToObject(l, "gflops", f * 1e-9);
            if (g->q && n->op == YQ_OP_CONV)    /* what every engine computes it with */
                cJSON_AddStringToObject(l, "precision", !g->q[i].float_op ? "int8" : g->q[i].fp16w ? "fp16w" : "fp32");
            if (g->q && n->op == YQ_OP_CONV && g->q[i].lut)   /* its activation through a table (quant/table.c) */
                cJSON_AddBoolToObject(l, "activation_table", 1);
            cJSON_AddItemToArray(layers, l);
        }
    }
    fprintf(t, "total: %d layers (%d conv), %ld params, %.2f GFLOPs at %dx%d\n", g->n_nodes - 1, convs, params,
           flops * 1e-9, g->nodes[0].out.w, g->nodes[0].out.h);
    if (pi) print_kernels(t, g, pi, root);
    int rc = 0;
    if (t != stdout) fclose(t);
    if (root) {
        cJSON_AddNumberToObject(root, "layers_total", g->n_nodes - 1);
        cJSON_AddNumberToObject(root, "convs", convs);
        cJSON_AddNumberToObject(root, "params", (double)params);
        cJSON_AddNumberToObject(root, "gflops", flops * 1e-9);
        char *s = cJSON_Print(root);
        FILE *f = !strcmp(json, "-") ? stdout : fopen(json, "w");
        if (!s || !f || fputs(s, f) < 0 || fputc('\n', f) < 0 || (f != stdout && fclose(f) != 0)) {
            fprintf(stderr, "yquant: %s: cannot write\n", json);
            rc = 1;
        }
        cJSON_free(s);
        cJSON_Delete(root);
    }
    yq_package_info_free(pi);
    yq_graph_free(g);
    return rc;
}
