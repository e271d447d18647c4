/* Shared option handling and model loading for the yquant commands. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <cjson/cJSON.h>
#include "cli/cli.h"
#include "yq_data.h"

const char *cli_data_dir(void)
{
    const char *d = getenv("YQ_DATA");
    return d && *d ? d : "../shared";
}

long long cli_created_unix(void)
{
    const char *e = getenv("SOURCE_DATE_EPOCH");
    char *end = NULL;
    long long v = e && *e ? strtoll(e, &end, 10) : 0;
    if (e && *e && (*end || v <= 0)) {
        fprintf(stderr, "warning: SOURCE_DATE_EPOCH=%s is not a positive number of seconds: ignored\n", e);
        return 0;
    }
    return v;
}

const char *cli_base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
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

int cli_int(const char *opt, const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = s && *s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < lo || v > hi) {
        fprintf(stderr, "yquant: %s: '%s' is not an integer in [%ld, %ld]\n", opt, s ? s : "", lo, hi);
        return 2;
    }
    *out = (int)v;
    return 0;
}

int cli_num(const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = s && *s ? strtod(s, &end) : 0;
    if (!s || !*s || *end || errno || !(v >= lo && v <= hi)) {
        fprintf(stderr, "yquant: %s: '%s' is not a number in [%g, %g]\n", opt, s ? s : "", lo, hi);
        return 2;
    }
    *out = v;
    return 0;
}

int cli_numf(const char *opt, const char *s, double lo, double hi, float *out)
{
    double v;
    if (cli_num(opt, s, lo, hi, &v)) return 2;
    *out = (float)v;
    return 0;
}

void cli_getopt_begin(cli_getopt *g, const char *cmd, int argc, char **argv, const char *shortopts,
                      const struct option *longopts)
{
    *g = (cli_getopt){ .cmd = cmd, .argc = argc, .argv = argv, .shortopts = shortopts, .longopts = longopts };
    optind = 0;   /* glibc: a whole new parse (another command may have run getopt before) */
    opterr = 0;   /* the messages are ours (cli_getopt_next), one line each */
}

int cli_getopt_unknown(const cli_getopt *g, const char *a)
{
    return cli_usage_error("%s: unknown option %s", g->cmd, a);
}

int cli_getopt_next(cli_getopt *g)
{
    int idx = -1;
    int c = getopt_long(g->argc, g->argv, g->shortopts, g->longopts, &idx);
    g->arg = optarg;
    g->name[0] = 0;
    if (c == -1) return -1;
    /* the argument getopt_long just read: a long option is argv[optind - 1], or - 2 when its
     * value was the next argument; a short option's error is named by its character (optopt
     * below CLI_OPT_HELP: every long option's code is higher, 0 for no such long option) */
    const char *a = optind >= 1 && optind <= g->argc ? g->argv[optind - 1] : "";
    if (c == '?' || c == ':') {
        if (optopt > 0 && optopt < CLI_OPT_HELP) {
            if (c == ':') cli_usage_error("%s: -%c needs a value", g->cmd, optopt);
            else cli_usage_error("%s: unknown option -%c", g->cmd, optopt);
        } else if (!optopt) cli_getopt_unknown(g, a);
        else if (strchr(a, '=')) cli_usage_error("%s: %.*s takes no value (%s)", g->cmd, (int)(strchr(a, '=') - a), a, a);
        else cli_usage_error("%s: %s needs a value", g->cmd, a);
        return '?';
    }
    if (idx < 0) {
        snprintf(g->name, sizeof g->name, "-%c", c);
        return c;
    }
    const struct option *o = &g->longopts[idx];
    if (o->has_arg != no_argument && optarg == a && optind >= 2) a = g->argv[optind - 2];
    /* the whole name only: getopt_long also takes a prefix (--lett for --letterbox) */
    size_t n = strcspn(a + 2, "=");
    if (strncmp(a, "--", 2) || strncmp(a + 2, o->name, n) || o->name[n]) {
        cli_getopt_unknown(g, a);
        return '?';
    }
    snprintf(g->name, sizeof g->name, "--%s", o->name);
    return c;
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

int cli_model_arg(cli_model_opt *o, const cli_getopt *g, int c)
{
    const char *v = g->arg;
    switch (c) {
    case CLI_OPT_MAX_PIXELS: {
        /* images larger than this are refused from their header (decompression bombs) */
        char *end;
        double mp = strtod(v, &end);
        if (*end || !(mp >= 1 && mp <= 268)) {
            cli_usage_error("--max-pixels M: megapixels in [1, 268] (default %ld)", YQ_IMAGE_MAX_PIXELS_DEFAULT >> 20);
            return -1;
        }
        yq_image_set_max_pixels((long)(mp * (1 << 20)));
        return 1;
    }
    case CLI_OPT_WEIGHTS:
        o->weights = v;
        return 1;
    case CLI_OPT_SIZE:
        if (cli_parse_size(v, &o->width, &o->height)) {
            cli_usage_error("--size %s: expected N or WxH, multiples of 32 in [32, 8192]", v);
            return -1;
        }
        return 1;
    case CLI_OPT_BN:
        if (!strcmp(v, "alexeyab")) o->bn_pjreddie = 0;
        else if (!strcmp(v, "pjreddie")) o->bn_pjreddie = 1;
        else {
            cli_usage_error("--bn %s: expected alexeyab or pjreddie", v);
            return -1;
        }
        return 1;
    }
    return 0;
}

static int exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

yq_status cli_fail(yq_error *err, yq_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = code;
    return code;
}

yq_status cli_model_path(const char *model, char *path, size_t cap, yq_error *err)
{
    /* A bare name finds the shared models: "yolo-fastest-1.1-xl", "yolov3". */
    snprintf(path, cap, "%s", model);
    if (!exists(path) && !strchr(model, '/')) {
        snprintf(path, cap, "%s/models/%s", cli_data_dir(), model);
        if (!exists(path)) snprintf(path, cap, "%s/models/cfg-only/%s.cfg", cli_data_dir(), model);
        if (!exists(path))
            return cli_fail(err, YQ_ERR_IO, "%s: no such file, and no model of that name in %s/models (set YQ_DATA)",
                            model, cli_data_dir());
    }
    return YQ_OK;
}

yq_model_opt cli_model_options(const cli_model_opt *o)
{
    yq_model_opt mo = yq_model_defaults();
    mo.weights = o->weights;
    mo.width = o->width;
    mo.height = o->height;
    mo.bn_pjreddie = o->bn_pjreddie;
    mo.cfg_only = o->cfg_only;
    return mo;
}

yq_status cli_open_model(const cli_model_opt *o, yq_model **m, yq_error *err)
{
    char path[1024];
    yq_status st = cli_model_path(o->model, path, sizeof path, err);
    if (st != YQ_OK) return st;
    yq_model_opt mo = cli_model_options(o);
    return yq_model_open_opt(path, &mo, m, err);
}

static int write_json(const char *path, cJSON *root, int compact)
{
    char *s = compact ? cJSON_PrintUnformatted(root) : cJSON_Print(root);
    yq_error err;
    yq_outfile o;
    yq_status st = s ? yq_out_begin(&o, path, YQ_OUT_STREAM, &err) : cli_fail(&err, YQ_ERR_NOMEM, "%s: out of memory", path);
    if (st == YQ_OK) {
        fputs(s, o.f);
        fputc('\n', o.f);
        st = yq_out_commit(&o, &err);
    }
    cJSON_free(s);
    if (st != YQ_OK) cli_error(&err);
    return st == YQ_OK ? 0 : 1;
}

int cli_write_json(const char *path, cJSON *root) { return write_json(path, root, 0); }
int cli_write_json_compact(const char *path, cJSON *root) { return write_json(path, root, 1); }


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

/* Every input file as (device, inode), folders expanded to their entries, sorted: each
 * output is then one stat and a binary search, however many inputs a command reads. */
typedef struct input_id { dev_t dev; ino_t ino; int is_dir; char *path; } input_id;
struct cli_inputs { input_id *v; int n, cap; };

static int id_cmp(const void *a, const void *b)
{
    const input_id *x = a, *y = b;
    if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
    return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static int add_id(cli_inputs *s, const char *path, const struct stat *sb)
{
    if (s->n == s->cap) {
        int nc = s->cap ? 2 * s->cap : 64;
        input_id *v = realloc(s->v, sizeof *v * (size_t)nc);
        if (!v) return -1;
        s->v = v;
        s->cap = nc;
    }
    char *p = strdup(path);
    if (!p) return -1;
    s->v[s->n++] = (input_id){ sb->st_dev, sb->st_ino, S_ISDIR(sb->st_mode), p };
    return 0;
}

cli_inputs *cli_inputs_new(const char *const *paths, int n)
{
    cli_inputs *s = calloc(1, sizeof *s);
    int bad = !s;
    for (int i = 0; !bad && i < n; i++) {
        struct stat sb;
        if (!paths[i] || !*paths[i] || stat(paths[i], &sb) != 0) continue;
        bad = add_id(s, paths[i], &sb) != 0;
        if (bad || !S_ISDIR(sb.st_mode)) continue;
        DIR *d = opendir(paths[i]);
        char p[2048];
        for (struct dirent *e; d && !bad && (e = readdir(d));) {
            if (e->d_name[0] == '.') continue;
            snprintf(p, sizeof p, "%s/%s", paths[i], e->d_name);
            if (stat(p, &sb) == 0 && !S_ISDIR(sb.st_mode)) bad = add_id(s, p, &sb) != 0;
        }
        if (d) closedir(d);
    }
    if (bad) {
        fprintf(stderr, "yquant: out of memory\n");
        cli_inputs_free(s);
        return NULL;
    }
    if (s->n > 1) qsort(s->v, (size_t)s->n, sizeof *s->v, id_cmp);
    return s;
}

void cli_inputs_free(cli_inputs *s)
{
    if (!s) return;
    for (int i = 0; i < s->n; i++) free(s->v[i].path);
    free(s->v);
    free(s);
}

/* The input that path is (after symlinks; hard links too), or NULL. */
static const input_id *find_input(const cli_inputs *s, const char *path)
{
    struct stat sb;
    if (!s || !s->n || stat(path, &sb) != 0) return NULL;
    input_id key = { sb.st_dev, sb.st_ino, 0, NULL };
    return bsearch(&key, s->v, (size_t)s->n, sizeof *s->v, id_cmp);
}

int cli_check_outdir(const char *what, const char *dir, const cli_inputs *in)
{
    const input_id *hit = dir ? find_input(in, dir) : NULL;
    if (hit && hit->is_dir) {
        fprintf(stderr, "yquant: %s %s is an input folder (%s): its reports would mix with the inputs; "
                "nothing was done\n", what, dir, hit->path);
        return 1;
    }
    return 0;
}

int cli_check_output(const char *what, const char *out, const cli_inputs *in)
{
    if (!out || !strcmp(out, "-")) return 0;
    const input_id *hit = find_input(in, out);
    if (hit && !hit->is_dir) {
        fprintf(stderr, "yquant: %s %s would overwrite an input (%s); nothing was done\n", what, out, hit->path);
        return 1;
    }
    yq_error err;
    if (yq_out_check(out, &err) != YQ_OK) {
        fprintf(stderr, "yquant: %s %s\n", what, err.msg);
        return 1;
    }
    return 0;
}

int cli_check_outputs(const char *const *inputs, int n, const char *what1, const char *out1, const char *what2,
                      const char *out2)
{
    cli_inputs *in = cli_inputs_new(inputs, n);
    int bad = !in || cli_check_output(what1, out1, in) || (what2 && cli_check_output(what2, out2, in));
    cli_inputs_free(in);
    return bad;
}

int cli_check_report(const char *const *inputs, int n, const char *dir, const char *json)
{
    cli_inputs *in = cli_inputs_new(inputs, n);
    int bad = !in || cli_check_outdir("-o", dir, in) || cli_check_output("--json", json, in);
    cli_inputs_free(in);
    return bad;
}

int cli_gpu_default(const yq_model *m) { return yq_model_is_int8(m) && yq_gpu_count() > 0; }

yq_status cli_session_new(const yq_model *m, const char *device, int max_batch, yq_session **out, yq_error *err)
{
    if (device) return yq_session_new(m, device, max_batch, out, err);
    if (cli_gpu_default(m)) {
        yq_status st = yq_session_new(m, "cuda", max_batch, out, err);
        if (st == YQ_OK) return st;
        cli_note("%s; running on the cpu (--device cpu says so, --device cuda insists)", err->msg);
    }
    return yq_session_new(m, "cpu", max_batch, out, err);
}
