/* Darknet .cfg + .weights -> graph.
 *
 * Every read is checked: an unknown section, a key with an impossible value, a
 * route to a layer that does not exist, a truncated or over-long weights file,
 * NaN/Inf weights and negative variances each give one error line naming the
 * file and the cfg line or layer.  Batch-norm is folded into the conv weights
 * with the convention of the darknet that trained the model (AlexeyAB's by
 * default; see yq_bn_eps).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <openssl/evp.h>
#include "ir/ir.h"

/* ---- cfg text -> sections of key=value ---------------------------------- */

typedef struct kv { char *key, *val; int line, used; } kv;
typedef struct section { char name[32]; int line, first, n; } section;
typedef struct cfg {
    char *text;              /* owned copy, keys and values point into it */
    kv *kvs; int n_kv;
    section *secs; int n_sec;
    const char *path;
} cfg;

static void cfg_free(cfg *c)
{
    free(c->text);
    free(c->kvs);
    free(c->secs);
}

/* Darknet strips every blank inside a line ("stride = 2" is "stride=2"). */
static void strip_blanks(char *s)
{
    char *d = s;
    for (; *s; s++)
        if (!isspace((unsigned char)*s)) *d++ = *s;
    *d = 0;
}

static yq_status cfg_parse(cfg *c, const char *text, size_t len, const char *path, yq_error *err)
{
    memset(c, 0, sizeof *c);
    c->path = path;
    c->text = malloc(len + 1);
    if (!c->text) return yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory", path);
    memcpy(c->text, text, len);
    c->text[len] = 0;
    if (memchr(text, 0, len)) return yq_fail(err, YQ_ERR_FORMAT, "%s: not a text file (NUL byte)", path);

    int cap_kv = 64, cap_sec = 16;
    c->kvs = malloc(cap_kv * sizeof *c->kvs);
    c->secs = malloc(cap_sec * sizeof *c->secs);
    if (!c->kvs || !c->secs) return yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory", path);

    int line = 0;
    for (char *p = c->text; p && *p;) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = 0;
        char *s = p;
        p = nl ? nl + 1 : NULL;
        line++;
        strip_blanks(s);
        if (!*s || *s == '#' || *s == ';') continue;
        if (*s == '[') {
            size_t n = strlen(s);
            if (s[n - 1] != ']' || n < 3 || n - 2 >= sizeof c->secs[0].name)
                return yq_fail(err, YQ_ERR_FORMAT, "%s:%d: malformed section header '%s'", path, line, s);
            if (c->n_sec == cap_sec) {
                cap_sec *= 2;
                section *ns = realloc(c->secs, cap_sec * sizeof *ns);
                if (!ns) return yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory", path);
                c->secs = ns;
            }
            section *sec = &c->secs[c->n_sec++];
            memcpy(sec->name, s + 1, n - 2);
            sec->name[n - 2] = 0;
            sec->line = line;
            sec->first = c->n_kv;
            sec->n = 0;
            continue;
        }
        char *eq = strchr(s, '=');
        if (!eq || eq == s)
            return yq_fail(err, YQ_ERR_FORMAT, "%s:%d: expected key=value, got '%s'", path, line, s);
        if (c->n_sec == 0)
            return yq_fail(err, YQ_ERR_FORMAT, "%s:%d: '%s' before any [section]", path, line, s);
        *eq = 0;
        if (c->n_kv == cap_kv) {
            cap_kv *= 2;
            kv *nk = realloc(c->kvs, cap_kv * sizeof *nk);
            if (!nk) return yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory", path);
            c->kvs = nk;
        }
        c->kvs[c->n_kv++] = (kv){ s, eq + 1, line, 0 };
        c->secs[c->n_sec - 1].n++;
    }
    if (c->n_sec == 0) return yq_fail(err, YQ_ERR_FORMAT, "%s: no sections", path);
    return YQ_OK;
}

static kv *find_key(cfg *c, const section *s, const char *key)
{
    kv *hit = NULL;
    for (int i = s->first; i < s->first + s->n; i++)
        if (!strcmp(c->kvs[i].key, key)) hit = &c->kvs[i];   /* the last one wins, as in darknet */
    if (hit) hit->used = 1;
    return hit;
}

/* An integer option within [lo, hi]; def when absent. */
static yq_status get_int(cfg *c, const section *s, const char *key, int def, int lo, int hi, int *out, yq_error *err)
{
    kv *k = find_key(c, s, key);
    if (!k) { *out = def; return YQ_OK; }
    char *end;
    errno = 0;
    long v = strtol(k->val, &end, 10);
    if (errno || end == k->val || *end)
        return yq_fail(err, YQ_ERR_FORMAT, "%s:%d: [%s] %s=%s is not an integer", c->path, k->line, s->name, key, k->val);
    if (v < lo || v > hi)
        return yq_fail(err, YQ_ERR_FORMAT, "%s:%d: [%s] %s=%ld out of range [%d, %d]", c->path, k->line, s->name, key, v, lo, hi);
    *out = (int)v;
    return YQ_OK;
}

static yq_status get_float(cfg *c, const section *s, const char *key, float def, float lo, float hi, float *out, yq_error *err)
{
    kv *k = find_key(c, s, key);
    if (!k) { *out = def; return YQ_OK; }
    char *end;
    float v = strtof(k->val, &end);
    if (end == k->val || *end || !isfinite(v))
        return yq_fail(err, YQ_ERR_FORMAT, "%s:%d: [%s] %s=%s is not a number", c->path, k->line, s->name, key, k->val);
    if (v < lo || v > hi)
        return yq_fail(err, YQ_ERR_FORMAT, "%s:%d: [%s] %s=%g out of range [%g, %g]", c->path, k->line, s->name, key, (double)v, (double)lo, (double)hi);
    *out = v;
    return YQ_OK;
}

/* A comma-separated list of numbers (darknet tolerates a trailing comma).
 * Integers are held exactly by a float only up to 2^24; beyond that (say
 * layers=1e30) the cast to an index would be undefined, so they are refused. */
static yq_status get_list(cfg *c, const section *s, const char *key, float *vals, int max, int *n,
                          int integers, yq_error *err)
{
    *n = 0;
    kv *k = find_key(c, s, key);
    if (!k) return YQ_OK;
    const char *p = k->val;
    while (*p) {
        char *end;
        float v = strtof(p, &end);
        if (end == p || (*end && *end != ',') || !isfinite(v) ||
            (integers && (v != floorf(v) || fabsf(v) > 16777216.f)))
            return yq_fail(err, YQ_ERR_FORMAT, "%s:%d: [%s] %s: bad list value near '%.20s'", c->path, k->line, s->name, key, p);
        if (*n == max)
            return yq_fail(err, YQ_ERR_UNSUPPORTED, "%s:%d: [%s] %s: more than %d values", c->path, k->line, s->name, key, max);
        vals[(*n)++] = v;
        p = *end ? end + 1 : end;
    }
    return YQ_OK;
}

static yq_status get_act(cfg *c, const section *s, const char *def, yq_act *out, yq_error *err)
{
    static const char *names[YQ_ACT_COUNT] = { "linear", "leaky", "relu", "mish", "swish", "logistic" };
    kv *k = find_key(c, s, "activation");
    const char *v = k ? k->val : def;
    for (int a = 0; a < YQ_ACT_COUNT; a++)
        if (!strcmp(v, names[a])) { *out = (yq_act)a; return YQ_OK; }
    return yq_fail(err, YQ_ERR_UNSUPPORTED, "%s:%d: [%s] activation=%s is not supported (linear, leaky, relu, mish, swish, logistic)",
                   c->path, k ? k->line : s->line, s->name, v);
}

/* A key that would change the arithmetic and that yquant does not implement. */
static yq_status reject_if(cfg *c, const section *s, const char *key, const char *ok_value, yq_error *err)
{
    kv *k = find_key(c, s, key);
    if (k && strcmp(k->val, ok_value))
        return yq_fail(err, YQ_ERR_UNSUPPORTED, "%s:%d: [%s] %s=%s is not supported", c->path, k->line, s->name, key, k->val);
    return YQ_OK;
}

#define TRY(x) do { yq_status st_ = (x); if (st_ != YQ_OK) return st_; } while (0)

static yq_status parse_head(cfg *c, const section *s, yq_node *n, int yolo, yq_error *err)
{
    yq_head_p *h = &n->p.head;
    float v[2 * YQ_MAX_ANCH];
    int nv;
    TRY(get_int(c, s, "classes", 20, 1, 100000, &h->classes, err));
    TRY(get_int(c, s, "num", 1, 1, YQ_MAX_ANCH, &h->num, err));
    TRY(get_list(c, s, "anchors", v, 2 * YQ_MAX_ANCH, &nv, 0, err));
    if (nv != 2 * h->num)
        return yq_fail(err, YQ_ERR_FORMAT, "%s:%d: [%s] %d anchor values for num=%d (need %d)", c->path, s->line, s->name, nv, h->num, 2 * h->num);
    for (int i = 0; i < nv; i++) {
        if (v[i] <= 0) return yq_fail(err, YQ_ERR_FORMAT, "%s:%d: [%s] anchor %g must be > 0", c->path, s->line, s->name, (double)v[i]);
        h->anchors[i] = v[i];
    }
    TRY(get_float(c, s, "scale_x_y", 1.f, 0.f, 100.f, &h->scale_x_y, err));
    if (yolo) {
        h->coords = 4;
        TRY(get_list(c, s, "mask", v, YQ_MAX_ANCH, &h->n_mask, 1, err));
        if (h->n_mask == 0) {
            h->n_mask = h->num;
            for (int i = 0; i < h->num; i++) h->mask[i] = i;
        } else {
            for (int i = 0; i < h->n_mask; i++) {
                if (v[i] < 0 || v[i] >= h->num)
                    return yq_fail(err, YQ_ERR_FORMAT, "%s:%d: [yolo] mask value %g not in [0, num=%d)", c->path, s->line, (double)v[i], h->num);
                h->mask[i] = (int)v[i];
            }
        }
        TRY(get_int(c, s, "new_coords", 0, 0, 1, &h->new_coords, err));
    } else {
        TRY(get_int(c, s, "coords", 4, 4, 4, &h->coords, err));
        TRY(get_int(c, s, "softmax", 0, 0, 1, &h->softmax, err));
        h->n_mask = h->num;
        for (int i = 0; i < h->num; i++) h->mask[i] = i;
        /* pjreddie's region has no scale_x_y; YOLOv2 heads never set it. */
    }
    return YQ_OK;
}

/* Relative (negative) or absolute darknet index -> node id. */
static yq_status layer_ref(cfg *c, const section *s, const char *key, int cur, long v, int *node, yq_error *err)
{
    long idx = v < 0 ? cur + v : v;
    if (idx < 0 || idx >= cur)
        return yq_fail(err, YQ_ERR_FORMAT, "%s:%d: [%s] %s=%ld refers to layer %ld, which does not exist before layer %d",
                       c->path, s->line, s->name, key, v, idx, cur);
    *node = (int)idx + 1;
    return YQ_OK;
}

/* yq_shape_infer names the node but not the file; prefix it, so the message
 * stands alone (the CLI prints it as the one error line). */
static yq_status infer_at(cfg *c, yq_graph *g, int id, yq_error *err)
{
    yq_status st = yq_shape_infer(g, id, err);
    if (st != YQ_OK && err) {
        char m[sizeof err->msg];
        snprintf(m, sizeof m, "%s", err->msg);
        yq_fail(err, st, "%s:%d: %s", c->path, g->nodes[id].line, m);
    }
    return st;
}

static yq_status build_graph(cfg *c, const yq_import_opt *opt, yq_graph *g, yq_error *err)
{
    section *net = &c->secs[0];
    if (strcmp(net->name, "net") && strcmp(net->name, "network"))
        return yq_fail(err, YQ_ERR_FORMAT, "%s:%d: first section is [%s], expected [net]", c->path, net->line, net->name);
    int w, h, ch;
    TRY(get_int(c, net, "width", 416, 1, 16384, &w, err));
    TRY(get_int(c, net, "height", 416, 1, 16384, &h, err));
    TRY(get_int(c, net, "channels", 3, 1, 64, &ch, err));
    TRY(get_int(c, net, "letter_box", 0, 0, 1, &g->letter_box, err));
    if (opt && opt->width > 0) w = opt->width;
    if (opt && opt->height > 0) h = opt->height;
    yq_node *in = yq_graph_add(g, YQ_OP_INPUT, err);
    if (!in) return err->code;
    in->line = net->line;
    strcpy(in->name, "input");
    in->out = (yq_shape){ ch, h, w };
    TRY(infer_at(c, g, 0, err));

    for (int si = 1; si < c->n_sec; si++) {
        section *s = &c->secs[si];
        int cur = g->n_nodes - 1;          /* this layer's darknet index */
        int prev = g->n_nodes - 1;         /* node id of the previous layer */
        yq_op op;
        if (!strcmp(s->name, "convolutional") || !strcmp(s->name, "conv")) op = YQ_OP_CONV;
        else if (!strcmp(s->name, "shortcut")) op = YQ_OP_SHORTCUT;
        else if (!strcmp(s->name, "route")) op = YQ_OP_ROUTE;
        else if (!strcmp(s->name, "upsample")) op = YQ_OP_UPSAMPLE;
        else if (!strcmp(s->name, "maxpool") || !strcmp(s->name, "max")) op = YQ_OP_MAXPOOL;
        else if (!strcmp(s->name, "dropout")) op = YQ_OP_DROPOUT;
        else if (!strcmp(s->name, "yolo")) op = YQ_OP_YOLO;
        else if (!strcmp(s->name, "region")) op = YQ_OP_REGION;
        else {
            static const char *known[] = { "connected", "avgpool", "softmax", "cost", "local", "crnn", "rnn",
                "gru", "lstm", "reorg", "reorg3d", "batchnorm", "detection", "crop", "normalization",
                "sam", "scale_channels", "implicit_add", "implicit_mul", "contrastive", "empty", "silence",
                "activation", "deconvolutional", "Gaussian_yolo", "conv_lstm", "xnor", "net", "network" };
            for (size_t k = 0; k < sizeof known / sizeof *known; k++)
                if (!strcmp(s->name, known[k]))
                    return yq_fail(err, YQ_ERR_UNSUPPORTED, "%s:%d: layer %d: [%s] is not supported by yquant", c->path, s->line, cur, s->name);
            return yq_fail(err, YQ_ERR_FORMAT, "%s:%d: unknown section [%s]", c->path, s->line, s->name);
        }
        yq_node *n = yq_graph_add(g, op, err);
        if (!n) return err->code;
        n->line = s->line;
        n->n_src = 1;
        n->src[0] = prev;

        switch (op) {
        case YQ_OP_CONV: {
            yq_conv_p *p = &n->p.conv;
            int pad, padding, dil;
            TRY(get_int(c, s, "filters", 1, 1, 1 << 16, &p->filters, err));
            TRY(get_int(c, s, "size", 1, 1, 64, &p->size, err));
            TRY(get_int(c, s, "stride", 1, 1, 64, &p->stride, err));
            TRY(get_int(c, s, "pad", 0, 0, 1, &pad, err));
            TRY(get_int(c, s, "padding", 0, 0, 64, &padding, err));
            TRY(get_int(c, s, "groups", 1, 1, 1 << 16, &p->groups, err));
            TRY(get_int(c, s, "batch_normalize", 0, 0, 1, &p->batch_normalize, err));
            TRY(get_int(c, s, "dilation", 1, 1, 1, &dil, err));
            TRY(get_act(c, s, "logistic", &n->act, err));
            TRY(reject_if(c, s, "binary", "0", err));
            TRY(reject_if(c, s, "xnor", "0", err));
            int sx, sy;
            TRY(get_int(c, s, "stride_x", p->stride, 1, 64, &sx, err));
            TRY(get_int(c, s, "stride_y", p->stride, 1, 64, &sy, err));
            if (sx != p->stride || sy != p->stride)
                return yq_fail(err, YQ_ERR_UNSUPPORTED, "%s:%d: layer %d: stride_x/stride_y differ from stride", c->path, s->line, cur);
            p->pad = pad ? p->size / 2 : padding;
            break;
        }
        case YQ_OP_SHORTCUT: {
            float from[YQ_MAX_SRC];
            int nf;
            TRY(get_list(c, s, "from", from, YQ_MAX_SRC, &nf, 1, err));
            if (nf != 1)
                return yq_fail(err, YQ_ERR_FORMAT, "%s:%d: [shortcut] needs exactly one 'from' layer (got %d)", c->path, s->line, nf);
            TRY(layer_ref(c, s, "from", cur, (long)from[0], &n->src[1], err));
            n->n_src = 2;
            TRY(get_act(c, s, "linear", &n->act, err));
            TRY(reject_if(c, s, "weights_type", "none", err));
            break;
        }
        case YQ_OP_ROUTE: {
            float l[YQ_MAX_SRC];
            int nl;
            TRY(get_list(c, s, "layers", l, YQ_MAX_SRC, &nl, 1, err));
            if (nl == 0) return yq_fail(err, YQ_ERR_FORMAT, "%s:%d: [route] without layers", c->path, s->line);
            for (int k = 0; k < nl; k++) TRY(layer_ref(c, s, "layers", cur, (long)l[k], &n->src[k], err));
            n->n_src = nl;
            TRY(get_int(c, s, "groups", 1, 1, 1 << 16, &n->p.route.groups, err));
            TRY(get_int(c, s, "group_id", 0, 0, (1 << 16) - 1, &n->p.route.group_id, err));
            break;
        }
        case YQ_OP_UPSAMPLE: {
            float scale;
            TRY(get_int(c, s, "stride", 2, 1, 64, &n->p.up.stride, err));
            TRY(get_float(c, s, "scale", 1.f, 1.f, 1.f, &scale, err));
            break;
        }
        case YQ_OP_MAXPOOL: {
            yq_pool_p *p = &n->p.pool;
            TRY(get_int(c, s, "stride", 1, 1, 64, &p->stride, err));
            TRY(get_int(c, s, "size", p->stride, 1, 64, &p->size, err));
            TRY(get_int(c, s, "padding", p->size - 1, 0, 128, &p->pad, err));
            TRY(reject_if(c, s, "maxpool_depth", "0", err));
            int sx, sy;
            TRY(get_int(c, s, "stride_x", p->stride, 1, 64, &sx, err));
            TRY(get_int(c, s, "stride_y", p->stride, 1, 64, &sy, err));
            if (sx != p->stride || sy != p->stride)
                return yq_fail(err, YQ_ERR_UNSUPPORTED, "%s:%d: layer %d: stride_x/stride_y differ from stride", c->path, s->line, cur);
            break;
        }
        case YQ_OP_DROPOUT: {
            float prob;
            TRY(get_float(c, s, "probability", .5f, 0.f, 1.f, &prob, err));
            break;
        }
        case YQ_OP_YOLO: TRY(parse_head(c, s, n, 1, err)); break;
        case YQ_OP_REGION: TRY(parse_head(c, s, n, 0, err)); break;
        default: break;
        }
        TRY(infer_at(c, g, g->n_nodes - 1, err));
        if (op == YQ_OP_CONV) {
            yq_shape is = yq_node_in_shape(g, n);
            n->n_w = (long)n->p.conv.filters * (is.c / n->p.conv.groups) * n->p.conv.size * n->p.conv.size;
        }
    }
    return YQ_OK;
}

yq_status yq_darknet_parse_cfg(const char *text, size_t len, const char *path,
                               const yq_import_opt *opt, yq_graph **out, yq_error *err)
{
    cfg c;
    yq_graph *g = NULL;
    yq_status st = cfg_parse(&c, text, len, path, err);
    if (st == YQ_OK) {
        g = yq_graph_new();
        if (!g) st = yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory", path);
    }
    if (st == YQ_OK) st = build_graph(&c, opt, g, err);
    if (st == YQ_OK) snprintf(g->cfg_path, sizeof g->cfg_path, "%s", path);
    cfg_free(&c);
    if (st != YQ_OK) { yq_graph_free(g); return st; }
    *out = g;
    return YQ_OK;
}

/* ---- weights ------------------------------------------------------------ */

typedef struct reader { const uint8_t *p; size_t len, off; const char *path; } reader;

static yq_status read_floats(reader *r, float *dst, long n, const yq_node *node, const char *what, yq_error *err)
{
    size_t bytes = (size_t)n * sizeof(float);
    if (r->len - r->off < bytes)
        return yq_fail(err, YQ_ERR_FORMAT, "%s: truncated in layer %d (conv, cfg line %d) reading %s at byte %zu: need %zu bytes, %zu left",
                       r->path, node->layer, node->line, what, r->off, bytes, r->len - r->off);
    memcpy(dst, r->p + r->off, bytes);
    for (long i = 0; i < n; i++)
        if (!isfinite(dst[i]))
            return yq_fail(err, YQ_ERR_FORMAT, "%s: layer %d (conv, cfg line %d): %s[%ld] is %s (byte %zu)",
                           r->path, node->layer, node->line, what, i, isnan(dst[i]) ? "NaN" : "Inf", r->off + (size_t)i * 4);
    r->off += bytes;
    return YQ_OK;
}

/* BN folding.  Computed in double so the folded weights are the nearest floats
 * to darknet's unfolded arithmetic.  Finite inputs can still fold to Inf (a huge
 * scale over a near-zero variance): returns the first such filter, or -1. */
static int fold_bn(yq_node *n, const float *scale, const float *mean, const float *var, yq_bn_eps bn)
{
    int f = n->p.conv.filters, bad = -1;
    long per = n->n_w / f;
    for (int o = 0; o < f; o++) {
        double sd = bn == YQ_BN_PJREDDIE ? sqrt((double)var[o]) + 1e-6 : sqrt((double)var[o] + 1e-5);
        double k = (double)scale[o] / sd;
        int ok = 1;
        for (long i = 0; i < per; i++) {
            n->w[o * per + i] = (float)((double)n->w[o * per + i] * k);
            ok &= isfinite(n->w[o * per + i]) != 0;
        }
        n->b[o] = (float)((double)n->b[o] - (double)mean[o] * k);
        if ((!ok || !isfinite(n->b[o])) && bad < 0) bad = o;
    }
    return bad;
}

yq_status yq_darknet_read_weights(yq_graph *g, const uint8_t *buf, size_t len,
                                  const char *path, yq_bn_eps bn, yq_error *err)
{
    reader r = { buf, len, 0, path };
    if (len < 16) return yq_fail(err, YQ_ERR_FORMAT, "%s: %zu bytes, too short for a darknet weights header", path, len);
    int32_t major, minor, rev;
    memcpy(&major, buf, 4);
    memcpy(&minor, buf + 4, 4);
    memcpy(&rev, buf + 8, 4);
    if (major < 0 || minor < 0 || major > 1000 || minor > 1000)
        return yq_fail(err, YQ_ERR_FORMAT, "%s: bad header version %d.%d.%d", path, major, minor, rev);
    /* Version >= 0.2 stores 'seen' as 64 bits, older files as 32. */
    r.off = (major * 10 + minor >= 2) ? 20 : 16;
    if (len < r.off) return yq_fail(err, YQ_ERR_FORMAT, "%s: truncated header", path);

    float *tmp = NULL;
    long tmp_n = 0;
    yq_status st = YQ_OK;
    for (int i = 0; i < g->n_nodes && st == YQ_OK; i++) {
        yq_node *n = &g->nodes[i];
        if (n->op != YQ_OP_CONV) continue;
        int f = n->p.conv.filters;
        n->w = yq_arena_alloc(g, (size_t)n->n_w * sizeof(float));
        n->b = yq_arena_alloc(g, (size_t)f * sizeof(float));
        if (!n->w || !n->b) { st = yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory for layer %d", path, n->layer); break; }
        /* Check the size before reading, so a truncation is reported once, by the layer. */
        size_t need = ((size_t)f * (n->p.conv.batch_normalize ? 4 : 1) + (size_t)n->n_w) * 4;
        if (r.len - r.off < need) {
            st = yq_fail(err, YQ_ERR_FORMAT, "%s: truncated in layer %d (conv, cfg line %d) at byte %zu: needs %zu bytes, %zu left",
                         path, n->layer, n->line, r.off, need, r.len - r.off);
            break;
        }
        st = read_floats(&r, n->b, f, n, "biases", err);
        if (st != YQ_OK) break;
        if (n->p.conv.batch_normalize) {
            if (tmp_n < 3L * f) {
                free(tmp);
                tmp = malloc(3 * (size_t)f * sizeof *tmp);
                tmp_n = tmp ? 3L * f : 0;
                if (!tmp) { st = yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory", path); break; }
            }
            if ((st = read_floats(&r, tmp, f, n, "bn scales", err)) != YQ_OK ||
                (st = read_floats(&r, tmp + f, f, n, "bn means", err)) != YQ_OK ||
                (st = read_floats(&r, tmp + 2 * f, f, n, "bn variances", err)) != YQ_OK)
                break;
            for (int o = 0; o < f; o++)
                if (tmp[2 * f + o] < 0) {
                    st = yq_fail(err, YQ_ERR_FORMAT, "%s: layer %d (conv, cfg line %d): bn variance[%d] = %g is negative",
                                 path, n->layer, n->line, o, (double)tmp[2 * f + o]);
                    break;
                }
            if (st != YQ_OK) break;
        }
        st = read_floats(&r, n->w, n->n_w, n, "weights", err);
        if (st == YQ_OK && n->p.conv.batch_normalize) {
            int o = fold_bn(n, tmp, tmp + f, tmp + 2 * f, bn);
            if (o >= 0)
                st = yq_fail(err, YQ_ERR_FORMAT, "%s: layer %d (conv, cfg line %d): folding batch-norm of filter %d overflows a float (scale %g, mean %g, variance %g)",
                             path, n->layer, n->line, o, (double)tmp[o], (double)tmp[f + o], (double)tmp[2 * f + o]);
        }
    }
    free(tmp);
    if (st == YQ_OK && r.off != r.len)
        st = yq_fail(err, YQ_ERR_FORMAT, "%s: %zu bytes left over after the last layer (file has %zu, the cfg needs %zu): weights do not match the cfg",
                     path, r.len - r.off, r.len, r.off);
    return st;
}

/* ---- synthetic weights ---------------------------------------------------- */

/* Deterministic weights for the architecture-only cfgs.  Each conv's weights are
 * scaled from a running estimate of its input's second moment, so that its
 * pre-activation has unit second moment: activations stay near unit size through
 * 100+ layers and residual adds.  splitmix64 gives the same stream everywhere. */
static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double uniform(uint64_t *s) { return (double)(splitmix(s) >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0; }

static yq_status synth_weights(yq_graph *g, uint32_t seed, yq_error *err)
{
    double *m2 = calloc((size_t)g->n_nodes, sizeof *m2);   /* second moment per node */
    if (!m2) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    uint64_t s = 0x5EED0000ull + seed;
    m2[0] = 0.33;   /* an image in [0,1] */
    for (int i = 1; i < g->n_nodes; i++) {
        yq_node *n = &g->nodes[i];
        double in = m2[n->src[0]];
        switch (n->op) {
        case YQ_OP_CONV: {
            int f = n->p.conv.filters;
            long fan_in = n->n_w / f;
            n->w = yq_arena_alloc(g, (size_t)n->n_w * sizeof(float));
            n->b = yq_arena_alloc(g, (size_t)f * sizeof(float));
            if (!n->w || !n->b) { free(m2); return yq_fail(err, YQ_ERR_NOMEM, "out of memory for layer %d", n->layer); }
            double a = sqrt(3.0 / ((double)fan_in * (in > 1e-6 ? in : 1e-6)));  /* uniform(-a,a): var a^2/3 */
            for (long k = 0; k < n->n_w; k++) n->w[k] = (float)(a * uniform(&s));
            for (int o = 0; o < f; o++) n->b[o] = (float)(0.1 * uniform(&s));
            double pre = 1.0;
            /* E[act(z)^2] for z ~ N(0, pre).  Mish and swish keep less than relu's
             * half; assuming 0.5 for them lost ~10% per layer, compounding to the
             * bias floor (RMS 0.06) in yolov4's 72 mish layers. */
            m2[i] = n->act == YQ_ACT_LINEAR ? pre : n->act == YQ_ACT_LOGISTIC ? 0.3 :
                    n->act == YQ_ACT_MISH ? 0.452 * pre : n->act == YQ_ACT_SWISH ? 0.356 * pre : 0.5 * pre;
            break;
        }
        case YQ_OP_SHORTCUT: m2[i] = in + m2[n->src[1]]; break;
        case YQ_OP_ROUTE: {
            double sum = 0;
            int ch = 0;
            for (int k = 0; k < n->n_src; k++) {
                int c = g->nodes[n->src[k]].out.c;
                sum += m2[n->src[k]] * c;
                ch += c;
            }
            m2[i] = ch ? sum / ch : 1.0;
            break;
        }
        default: m2[i] = in; break;
        }
    }
    free(m2);
    return YQ_OK;
}

/* ---- files ---------------------------------------------------------------- */

yq_status yq_read_file(const char *path, uint8_t **buf, size_t *len, yq_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) return yq_fail(err, YQ_ERR_IO, "%s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return yq_fail(err, YQ_ERR_IO, "%s: not a regular file", path);
    }
    *len = (size_t)sb.st_size;
    *buf = malloc(*len ? *len : 1);
    if (!*buf) { fclose(f); return yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory (%zu bytes)", path, *len); }
    if (fread(*buf, 1, *len, f) != *len) {
        fclose(f);
        free(*buf);
        *buf = NULL;
        return yq_fail(err, YQ_ERR_IO, "%s: read error", path);
    }
    fclose(f);
    return YQ_OK;
}

yq_status yq_darknet_load(const char *cfg_path, const char *weights_path,
                          const yq_import_opt *opt, yq_graph **out, yq_error *err)
{
    yq_import_opt def = { 0 };
    if (!opt) opt = &def;
    uint8_t *text = NULL, *wbuf = NULL;
    size_t tlen = 0, wlen = 0;
    yq_graph *g = NULL;
    yq_status st = yq_read_file(cfg_path, &text, &tlen, err);
    if (st == YQ_OK) st = yq_darknet_parse_cfg((const char *)text, tlen, cfg_path, opt, &g, err);
    if (st == YQ_OK && !opt->synthetic) {
        if (!weights_path) st = yq_fail(err, YQ_ERR_INVALID_ARG, "%s: no weights file given", cfg_path);
        else st = yq_read_file(weights_path, &wbuf, &wlen, err);
        if (st == YQ_OK) st = yq_darknet_read_weights(g, wbuf, wlen, weights_path, opt->bn, err);
        if (st == YQ_OK) snprintf(g->weights_path, sizeof g->weights_path, "%s", weights_path);
    } else if (st == YQ_OK) {
        st = synth_weights(g, opt->seed, err);
        if (st == YQ_OK) snprintf(g->weights_path, sizeof g->weights_path, "synthetic:%u", opt->seed);
    }
    if (st == YQ_OK) {
        /* The model's identity: the cfg bytes, then the weights bytes (or the synthetic seed). */
        EVP_MD_CTX *mc = EVP_MD_CTX_new();
        unsigned int dl = 0;
        if (!mc || !EVP_DigestInit_ex(mc, EVP_sha256(), NULL) || !EVP_DigestUpdate(mc, text, tlen) ||
            !(wbuf ? EVP_DigestUpdate(mc, wbuf, wlen) : EVP_DigestUpdate(mc, g->weights_path, strlen(g->weights_path))) ||
            !EVP_DigestFinal_ex(mc, g->model_sha256, &dl))
            st = yq_fail(err, YQ_ERR_NOMEM, "%s: sha256 failed", cfg_path);
        EVP_MD_CTX_free(mc);
    }
    free(text);
    free(wbuf);
    if (st != YQ_OK) { yq_graph_free(g); return st; }
    *out = g;
    return YQ_OK;
}

yq_status yq_graph_load_names(yq_graph *g, const char *path, yq_error *err)
{
    uint8_t *buf;
    size_t len;
    yq_status st = yq_read_file(path, &buf, &len, err);
    if (st != YQ_OK) return st;
    int n = 0;
    for (size_t i = 0; i < len; i++) n += buf[i] == '\n';
    n += len && buf[len - 1] != '\n';
    char **names = yq_arena_alloc(g, (size_t)(n ? n : 1) * sizeof *names);
    char *copy = yq_arena_alloc(g, len + 1);
    if (!names || !copy) { free(buf); return yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory", path); }
    memcpy(copy, buf, len);
    free(buf);
    int k = 0;
    for (char *p = copy; p < copy + len && k < n;) {
        char *e = memchr(p, '\n', (size_t)(copy + len - p));
        if (e) *e = 0;
        size_t l = strlen(p);
        if (l && p[l - 1] == '\r') p[l - 1] = 0;
        names[k++] = p;
        p = e ? e + 1 : copy + len;
    }
    g->class_names = names;
    g->n_class_names = k;
    return YQ_OK;
}

/* ---- MODEL argument ------------------------------------------------------- */

static int has_suffix(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcasecmp(s + a - b, suf);
}

/* Exactly one file with the suffix in dir: 1; none: 0; several: -1. */
/* The one file of dir ending in suf, into out: 1; none: 0; several: -1, with the first two
 * names in both ("a.cfg, b.cfg", for the error; both may be NULL). */
static int find_one(const char *dir, const char *suf, char *out, size_t cap, char *both, size_t bcap)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    char first[256] = "";
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.' && has_suffix(e->d_name, suf)) {
            if (n == 0) {
                snprintf(out, cap, "%s/%s", dir, e->d_name);
                snprintf(first, sizeof first, "%s", e->d_name);
            } else if (n == 1 && both) {
                snprintf(both, bcap, "%s, %s", first, e->d_name);
            }
            n++;
        }
    closedir(d);
    return n > 1 ? -1 : n;
}

yq_status yq_model_resolve(const char *model, const char *weights_arg, yq_model_paths *out, yq_error *err)
{
    memset(out, 0, sizeof *out);
    struct stat sb;
    if (stat(model, &sb) != 0) return yq_fail(err, YQ_ERR_IO, "%s: %s", model, strerror(errno));
    char dir[512];
    if (S_ISDIR(sb.st_mode)) {
        snprintf(dir, sizeof dir, "%s", model);
        char both[520] = "";
        int n = find_one(dir, ".cfg", out->cfg, sizeof out->cfg, both, sizeof both);
        if (n == 0) return yq_fail(err, YQ_ERR_IO, "%s: no .cfg file in this folder", model);
        if (n < 0) {
            out->cfg[0] = 0;         /* no cfg chosen: callers must not fall back on the first */
            return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: more than one .cfg file (%s): name the one to use", model, both);
        }
    } else {
        if (!has_suffix(model, ".cfg")) return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: expected a model folder or a .cfg file", model);
        snprintf(out->cfg, sizeof out->cfg, "%s", model);
        const char *slash = strrchr(model, '/');
        snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - model) : 1, slash ? model : ".");
    }
    if (weights_arg && !strncmp(weights_arg, "synthetic", 9)) {
        out->synthetic = 1;
        if (weights_arg[9] == ':') {
            char *end;
            unsigned long v = strtoul(weights_arg + 10, &end, 10);
            if (*end || end == weights_arg + 10) return yq_fail(err, YQ_ERR_INVALID_ARG, "--weights %s: expected synthetic[:SEED]", weights_arg);
            out->seed = (uint32_t)v;
        } else if (weights_arg[9]) {
            return yq_fail(err, YQ_ERR_INVALID_ARG, "--weights %s: expected synthetic[:SEED]", weights_arg);
        }
    } else if (weights_arg) {
        snprintf(out->weights, sizeof out->weights, "%s", weights_arg);
    } else {
        char both[520] = "";
        int n = find_one(dir, ".weights", out->weights, sizeof out->weights, both, sizeof both);
        if (n == 0) return yq_fail(err, YQ_ERR_IO, "%s: no .weights file beside the cfg (pass --weights FILE or --weights synthetic)", dir);
        if (n < 0) return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: more than one .weights file (%s): pass --weights FILE", dir, both);
    }
    if (find_one(dir, ".names", out->names, sizeof out->names, NULL, 0) != 1) out->names[0] = 0;
    return YQ_OK;
}
