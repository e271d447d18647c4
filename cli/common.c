/* Shared option handling and model loading for the yquant commands. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <cjson/cJSON.h>
#include "cli/cli.h"
#include "datasets/image.h"
#include "ir/fsio.h"

const char *cli_data_dir(void)
{
    const char *d = getenv("YQ_DATA");
    return d && *d ? d : "../shared";
}

int cli_error(const yq_error *err)
{
    fprintf(stderr, "yquant: %s\n", err->msg);
    return 1;
}

int cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("yquant: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(" (see --help)\n", stderr);
    va_end(ap);
    return 2;
}

int cli_parse_size(const char *s, int *w, int *h)
{
    char *end;
    long a = strtol(s, &end, 10), b = a;
    if (end == s) return -1;
    if (*end == 'x' || *end == 'X') {
        const char *t = end + 1;
        b = strtol(t, &end, 10);
        if (end == t) return -1;
    }
    if (*end || a < 32 || b < 32 || a > 8192 || b > 8192 || a % 32 || b % 32) return -1;
    *w = (int)a;
    *h = (int)b;
    return 0;
}

int cli_model_arg(cli_model_opt *o, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (!strcmp(a, "--max-pixels")) {
        /* images larger than this are refused from their header (decompression bombs) */
        char *end;
        double v = *i + 1 < argc ? strtod(argv[*i + 1], &end) : 0;
        if (*i + 1 >= argc || *end || !(v >= 1 && v <= 268)) {
            cli_usage_error("--max-pixels M: megapixels in [1, 268] (default %ld)", YQ_IMAGE_MAX_PIXELS_DEFAULT >> 20);
            return -1;
        }
        ++*i;
        yq_image_set_max_pixels((long)(v * (1 << 20)));
        return 1;
    }
    if (!strcmp(a, "--weights") || !strcmp(a, "--size") || !strcmp(a, "--bn")) {
        if (*i + 1 >= argc) { cli_usage_error("%s needs a value", a); return -1; }
        const char *v = argv[++*i];
        if (!strcmp(a, "--weights")) o->weights = v;
        else if (!strcmp(a, "--size")) {
            if (cli_parse_size(v, &o->width, &o->height)) {
                cli_usage_error("--size %s: expected N or WxH, multiples of 32 in [32, 8192]", v);
                return -1;
            }
        } else if (!strcmp(v, "alexeyab")) o->bn = YQ_BN_ALEXEYAB;
        else if (!strcmp(v, "pjreddie")) o->bn = YQ_BN_PJREDDIE;
        else { cli_usage_error("--bn %s: expected alexeyab or pjreddie", v); return -1; }
        return 1;
    }
    return 0;
}

static int exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

yq_status cli_load_model(const cli_model_opt *o, yq_graph **g, yq_error *err)
{
    /* A bare name finds the shared models: "yolo-fastest-1.1-xl", "yolov3". */
    char path[1024];
    snprintf(path, sizeof path, "%s", o->model);
    if (!exists(path) && !strchr(o->model, '/')) {
        snprintf(path, sizeof path, "%s/models/%s", cli_data_dir(), o->model);
        if (!exists(path)) snprintf(path, sizeof path, "%s/models/cfg-only/%s.cfg", cli_data_dir(), o->model);
        if (!exists(path))
            return yq_fail(err, YQ_ERR_IO, "%s: no such file, and no model of that name in %s/models (set YQ_DATA)",
                           o->model, cli_data_dir());
    }
    yq_model_paths mp;
    yq_status st = yq_model_resolve(path, o->weights, &mp, err);
    yq_import_opt io = { .width = o->width, .height = o->height, .bn = o->bn,
                         .synthetic = mp.synthetic, .seed = mp.seed };
    if (st != YQ_OK && o->cfg_only && !o->weights && mp.cfg[0]) {
        /* inspect needs shapes only: read the cfg alone */
        FILE *f = fopen(mp.cfg, "rb");
        if (!f) return st;
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        fseek(f, 0, SEEK_SET);
        char *text = malloc((size_t)len + 1);
        size_t got = text ? fread(text, 1, (size_t)len, f) : 0;
        fclose(f);
        if (!text || got != (size_t)len) { free(text); return yq_fail(err, YQ_ERR_IO, "%s: read error", mp.cfg); }
        st = yq_darknet_parse_cfg(text, (size_t)len, mp.cfg, &io, g, err);
        free(text);
    } else if (st == YQ_OK) {
        st = yq_darknet_load(mp.cfg, mp.synthetic ? NULL : mp.weights, &io, g, err);
    }
    if (st == YQ_OK && mp.names[0] && yq_graph_load_names(*g, mp.names, err) != YQ_OK) {
        yq_graph_free(*g);
        *g = NULL;
        return err->code;
    }
    return st;
}

int cli_write_json(const char *path, cJSON *root)
{
    char *s = cJSON_Print(root);
    yq_error err;
    yq_outfile o;
    yq_status st = s ? yq_out_begin(&o, path, YQ_OUT_STREAM, &err) : yq_fail(&err, YQ_ERR_NOMEM, "%s: out of memory", path);
    if (st == YQ_OK) {
        fputs(s, o.f);
        fputc('\n', o.f);
        st = yq_out_commit(&o, &err);
    }
    cJSON_free(s);
    if (st != YQ_OK) cli_error(&err);
    return st == YQ_OK ? 0 : 1;
}


int cli_parse_batches(const char *s, int *out, int cap)
{
    int n = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > 4096 || n >= cap) return -1;
        out[n++] = (int)v;
        s = end;
        if (*s == ',' && s[1]) s++;
        else if (*s) return -1;
    }
    return n;
}

/* out against one input: a file, or every entry of a folder */
static const char *clobbers(const char *out, const char *in, char *hit, size_t cap)
{
    struct stat sb;
    if (!in || !*in || stat(in, &sb) != 0) return NULL;
    if (!S_ISDIR(sb.st_mode)) return yq_same_file(out, in) ? in : NULL;
    DIR *d = opendir(in);
    const char *r = NULL;
    for (struct dirent *e; d && !r && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        snprintf(hit, cap, "%s/%s", in, e->d_name);
        if (yq_same_file(out, hit)) r = hit;
    }
    if (d) closedir(d);
    return r;
}

int cli_check_outdir(const char *what, const char *dir, const char *const *inputs, int n)
{
    if (!dir) return 0;
    for (int i = 0; i < n; i++) {
        struct stat sb;
        if (inputs[i] && stat(inputs[i], &sb) == 0 && S_ISDIR(sb.st_mode) && yq_same_file(dir, inputs[i])) {
            fprintf(stderr, "yquant: %s %s is an input folder (%s): its reports would mix with the inputs; "
                    "nothing was done\n", what, dir, inputs[i]);
            return 1;
        }
    }
    return 0;
}

int cli_check_output(const char *what, const char *out, const char *const *inputs, int n)
{
    if (!out || !strcmp(out, "-")) return 0;
    char hit[2048];
    for (int i = 0; i < n; i++) {
        const char *c = clobbers(out, inputs[i], hit, sizeof hit);
        if (c) {
            fprintf(stderr, "yquant: %s %s would overwrite an input (%s); nothing was done\n", what, out, c);
            return 1;
        }
    }
    yq_error err;
    if (yq_out_check(out, &err) != YQ_OK) {
        fprintf(stderr, "yquant: %s %s\n", what, err.msg);
        return 1;
    }
    return 0;
}
