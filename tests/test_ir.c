/* The Darknet importer and the graph: broken inputs give the right status and a
 * message naming the file and the line or layer; BN folding; shape rules; FLOP
 * counts; every shared model loads; synthetic weights are deterministic and keep
 * activations near unit size through the FP32 engine; the engine is
 * deterministic and its liveness-shared buffers give the same bits as keeping
 * every tensor.
 *
 * Run from the repository root (tests/run.sh does): fixtures are read from
 * tests/fixtures/, models from $YQ_DATA/models (default ../shared).
 */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tests/test.h"
#include "ir/ir.h"
#include "runtime/plan.h"
#include "ir/stats.h"
#include "ir/pack.h"

#define FIX "tests/fixtures/"

static char tmpdir[64];     /* for generated weights files; removed at exit */

/* ---- helpers ------------------------------------------------------------- */

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); buf = NULL; }
    fclose(f);
    if (buf) { buf[n] = 0; *len = (size_t)n; }
    return buf;
}

static int write_file(const char *path, const void *a, size_t na, const void *b, size_t nb)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = (na == 0 || fwrite(a, 1, na, f) == na) && (nb == 0 || fwrite(b, 1, nb, f) == nb);
    return fclose(f) == 0 && ok ? 0 : -1;
}

static int count_op(const yq_graph *g, yq_op op)
{
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++) n += g->nodes[i].op == op;
    return n;
}

/* Parses cfg text given inline (for the shape and BN tests). */
static yq_graph *parse_text(const char *text, const yq_import_opt *opt)
{
    yq_graph *g = NULL;
    yq_error err = { 0 };
    yq_status st = yq_darknet_parse_cfg(text, strlen(text), "inline.cfg", opt, &g, &err);
    CHECKF(st == YQ_OK, "inline cfg: %s", err.msg);
    return g;
}

/* ---- broken cfg fixtures --------------------------------------------------- */

typedef struct cfg_case {
    const char *file;
    yq_status code;
    const char *where;     /* must appear in the message: ":<line>:" or "layer N" */
    const char *what;      /* and this too */
} cfg_case;

static const cfg_case cfg_cases[] = {
    { "unknown_section.cfg",     YQ_ERR_FORMAT,      ":8:",  "unknown section [frobnicate]" },
    { "unsupported_section.cfg", YQ_ERR_UNSUPPORTED, ":8:",  "[avgpool]" },
    { "bad_value.cfg",           YQ_ERR_FORMAT,      ":7:",  "size=-3" },
    { "not_integer.cfg",         YQ_ERR_FORMAT,      ":7:",  "stride=abc" },
    { "route_missing.cfg",       YQ_ERR_FORMAT,      ":8:",  "layers=-9" },
    { "route_ahead.cfg",         YQ_ERR_FORMAT,      ":8:",  "layers=5" },
    { "shortcut_missing.cfg",    YQ_ERR_FORMAT,      ":8:",  "from=-5" },
    { "channel_mismatch.cfg",    YQ_ERR_SHAPE,       ":11:", "layer 2" },
    { "groups_mismatch.cfg",     YQ_ERR_SHAPE,       ":6:",  "groups=2" },
    { "head_mismatch.cfg",       YQ_ERR_SHAPE,       ":9:",  "20 channels" },
    { "no_net.cfg",              YQ_ERR_FORMAT,      ":1:",  "expected [net]" },
    { "empty.cfg",               YQ_ERR_FORMAT,      "",     "no sections" },
    { "bad_activation.cfg",      YQ_ERR_UNSUPPORTED, ":7:",  "activation=gelu" },
    { "malformed_section.cfg",   YQ_ERR_FORMAT,      ":5:",  "malformed section" },
};
static const cfg_case *cur_case;

static void check_msg(const yq_error *err, const char *file, const char *where, const char *what)
{
    CHECKF(strstr(err->msg, file), "message does not name %s: '%s'", file, err->msg);
    CHECKF(strstr(err->msg, where), "message does not say '%s': '%s'", where, err->msg);
    CHECKF(strstr(err->msg, what), "message does not say '%s': '%s'", what, err->msg);
    CHECKF(!strchr(err->msg, '\n'), "message has a newline: '%s'", err->msg);
}

/* Both entry points: the file loader (with synthetic weights, so only the cfg
 * can fail) and the text parser; *out must stay untouched on failure. */
static void t_cfg_case(void)
{
    const cfg_case *c = cur_case;
    char path[256];
    snprintf(path, sizeof path, FIX "%s", c->file);
    yq_import_opt opt = { .synthetic = 1 };
    yq_error err = { 0 };
    yq_graph *sentinel = (yq_graph *)&err, *g = sentinel;
    yq_status st = yq_darknet_load(path, NULL, &opt, &g, &err);
    CHECKF(st == c->code, "load: status %s, expected %s (%s)", yq_status_str(st), yq_status_str(c->code), err.msg);
    CHECK(err.code == st);
    CHECK(g == sentinel);
    check_msg(&err, c->file, c->where, c->what);

    size_t len;
    char *text = slurp(path, &len);
    CHECKF(text, "cannot read %s", path);
    memset(&err, 0, sizeof err);
    st = yq_darknet_parse_cfg(text, len, path, &opt, &g, &err);
    free(text);
    CHECKF(st == c->code, "parse: status %s, expected %s (%s)", yq_status_str(st), yq_status_str(c->code), err.msg);
    CHECK(g == sentinel);
    check_msg(&err, c->file, c->where, c->what);
}

static void t_cfg_more_errors(void)
{
    static const struct { const char *text; yq_status code; const char *where, *what; } more[] = {
        { "[net]\nwidth=32\nfilters\n", YQ_ERR_FORMAT, ":3:", "key=value" },
        { "width=32\n[net]\n", YQ_ERR_FORMAT, ":1:", "before any [section]" },
        { "[net]\n[convolutional]\nfilters=4\n[shortcut]\nfrom=-1,-2\n", YQ_ERR_FORMAT, ":4:", "exactly one" },
        { "[net]\n[convolutional]\nfilters=4\n[route]\n", YQ_ERR_FORMAT, ":4:", "without layers" },
        { "[net]\n[convolutional]\nfilters=4\n[route]\nlayers=0\ngroups=2\ngroup_id=2\n", YQ_ERR_SHAPE, ":4:", "group_id=2" },
        { "[net]\n[convolutional]\nfilters=4\nbinary=1\n", YQ_ERR_UNSUPPORTED, ":4:", "binary=1" },
        { "[net]\n[convolutional]\nfilters=4\ndilation=2\n", YQ_ERR_FORMAT, ":4:", "dilation=2" },
        { "[net]\n[convolutional]\nfilters=21\n[yolo]\nnum=3\nanchors=1,2,3\nclasses=2\n", YQ_ERR_FORMAT, ":4:", "anchor values" },
        { "[net]\n[convolutional]\nfilters=21\n[yolo]\nnum=3\nmask=0,1,7\nanchors=1,2,3,4,5,6\nclasses=2\n", YQ_ERR_FORMAT, ":4:", "mask value 7" },
        { "[net]\nwidth=8\nheight=8\n[maxpool]\nsize=20\nstride=1\npadding=0\n", YQ_ERR_SHAPE, ":4:", "window 20" },
        { "[net]\nwidth=3\n\0[conv]\n", YQ_ERR_FORMAT, "", "NUL" },
        /* found by fuzz_cfg: an index past 2^24 was cast from float to long (UB) */
        { "[net]\nwidth=3\n[convolutional]\nfilters=4\n[route]\nlayers=1e30\n", YQ_ERR_FORMAT, ":6:", "bad list value" },
        { "[net]\nwidth=3\n[convolutional]\nfilters=4\n[shortcut]\nfrom=-99999999\n", YQ_ERR_FORMAT, ":6:", "bad list value" },
        /* found by fuzz_cfg: upsampling overflowed int in shape inference */
        { "[net]\nwidth=16384\nheight=16384\n[upsample]\nstride=64\n[upsample]\nstride=64\n", YQ_ERR_SHAPE, ":6:", "larger than" },
    };
    for (size_t i = 0; i < sizeof more / sizeof *more; i++) {
        yq_graph *g = NULL;
        yq_error err = { 0 };
        size_t len = strlen(more[i].text);
        if (strstr(more[i].what, "NUL")) len += 8;   /* the NUL and what follows */
        yq_status st = yq_darknet_parse_cfg(more[i].text, len, "more.cfg", NULL, &g, &err);
        CHECKF(st == more[i].code, "case %zu: status %s, expected %s (%s)", i, yq_status_str(st),
               yq_status_str(more[i].code), err.msg);
        check_msg(&err, "more.cfg", more[i].where, more[i].what);
    }
}

/* ---- tiny.cfg and its weights ----------------------------------------------- */

/* tiny.cfg needs 333 floats:
 *   layer 0 conv 3->4 3x3 BN: biases 0..3, scales 4..7, means 8..11, variances 12..15, weights 16..123
 *   layer 2 conv 4->4 1x1:    biases 124..127, weights 128..143
 *   layer 6 conv 8->21 1x1:   biases 144..164, weights 165..332 */
#define TINY_FLOATS 333
#define TINY_L0_VAR 12
#define TINY_L0_W   16
#define TINY_L2_B   124

static void tiny_floats(float *f)
{
    for (int i = 0; i < TINY_FLOATS; i++) f[i] = 0.05f + 0.01f * (float)(i % 11);  /* > 0: valid variances */
}

static void hdr_v2(uint8_t h[20])
{
    int32_t v[3] = { 0, 2, 0 };
    int64_t seen = 123456;
    memcpy(h, v, 12);
    memcpy(h + 12, &seen, 8);
}

/* Writes tmpdir/name: a v0.2 header and n floats of f. */
static const char *write_weights(const char *name, const float *f, long n)
{
    static char path[128];
    uint8_t h[20];
    hdr_v2(h);
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    CHECKF(write_file(path, h, sizeof h, f, (size_t)n * sizeof *f) == 0, "cannot write %s", path);
    return path;
}

static yq_status load_tiny(const char *weights, yq_graph **g, yq_error *err)
{
    yq_import_opt opt = { 0 };
    memset(err, 0, sizeof *err);
    *g = NULL;
    return yq_darknet_load(FIX "tiny.cfg", weights, &opt, g, err);
}

static void t_tiny_shapes(void)
{
    yq_graph *g = NULL;
    yq_error err;
    yq_import_opt opt = { .synthetic = 1 };
    CHECKF(yq_darknet_load(FIX "tiny.cfg", NULL, &opt, &g, &err) == YQ_OK, "%s", err.msg);
    static const struct { yq_op op; int c, h, w; } want[] = {
        { YQ_OP_INPUT, 3, 32, 32 }, { YQ_OP_CONV, 4, 32, 32 }, { YQ_OP_MAXPOOL, 4, 16, 16 },
        { YQ_OP_CONV, 4, 16, 16 }, { YQ_OP_SHORTCUT, 4, 16, 16 }, { YQ_OP_ROUTE, 8, 16, 16 },
        { YQ_OP_UPSAMPLE, 8, 32, 32 }, { YQ_OP_CONV, 21, 32, 32 }, { YQ_OP_YOLO, 21, 32, 32 },
    };
    int n = g->n_nodes;
    int ok = n == 9;
    for (int i = 0; ok && i < n; i++) {
        const yq_node *nd = &g->nodes[i];
        ok = nd->op == want[i].op && nd->out.c == want[i].c && nd->out.h == want[i].h && nd->out.w == want[i].w;
        if (!ok) { yq_graph_dump(g, stdout); }
    }
    /* the sources darknet's relative indices resolve to */
    int src_ok = ok && g->nodes[4].src[1] == 2 && g->nodes[5].n_src == 2 && g->nodes[5].src[0] == 4 &&
                 g->nodes[5].src[1] == 2 && g->nodes[1].act == YQ_ACT_LEAKY && g->nodes[3].act == YQ_ACT_LINEAR &&
                 g->nodes[1].p.conv.pad == 1 && g->nodes[3].p.conv.pad == 0 && g->nodes[8].p.head.n_mask == 3 &&
                 g->nodes[8].p.head.anchors[5] == 58.f;
    long floats = 0;
    for (int i = 0; i < n; i++)
        if (g->nodes[i].op == YQ_OP_CONV)
            floats += g->nodes[i].p.conv.filters * (g->nodes[i].p.conv.batch_normalize ? 4 : 1) + g->nodes[i].n_w;
    yq_graph_free(g);
    CHECKF(ok, "tiny.cfg: %d nodes or a shape/op differs (dump above)", n);
    CHECK(src_ok);
    CHECKF(floats == TINY_FLOATS, "tiny.cfg needs %ld floats, the fixtures assume %d", floats, TINY_FLOATS);
}

/* yq_graph_clone: the same nodes, weights and names in memory of its own (the original
 * freed, the copy whole; a change to the copy leaves the original as it was); a quantized
 * graph is refused. */
static void t_clone(void)
{
    yq_graph *g = NULL, *c = NULL;
    yq_error err;
    yq_import_opt opt = { .synthetic = 1, .seed = 3 };
    CHECKF(yq_darknet_load(FIX "tiny.cfg", NULL, &opt, &g, &err) == YQ_OK, "%s", err.msg);
    static char *names[2] = { "person", "bicycle" };
    g->class_names = names;
    g->n_class_names = 2;
    CHECKF(yq_graph_clone(g, &c, &err) == YQ_OK, "%s", err.msg);
    g->class_names = NULL;
    g->n_class_names = 0;
    CHECK(c->n_nodes == g->n_nodes && !strcmp(c->cfg_path, g->cfg_path) && c->letter_box == g->letter_box &&
          !memcmp(c->model_sha256, g->model_sha256, 32) && !c->q);
    CHECK(c->n_class_names == 2 && c->class_names[0] != names[0] && !strcmp(c->class_names[1], "bicycle"));
    int convs = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const yq_node *a = &g->nodes[i], *b = &c->nodes[i];
        CHECKF(a->op == b->op && a->n_w == b->n_w && !memcmp(&a->p, &b->p, sizeof a->p) && a->out.c == b->out.c,
               "node %d", i);
        if (a->w) {
            convs++;
            CHECK(b->w && b->w != a->w && !memcmp(a->w, b->w, sizeof(float) * (size_t)a->n_w));
            CHECK(b->b && b->b != a->b && !memcmp(a->b, b->b, sizeof(float) * (size_t)a->p.conv.filters));
        }
    }
    CHECK(convs >= 2);
    /* the copy's weights are its own */
    int k = 1;
    while (!c->nodes[k].w) k++;
    float w0 = g->nodes[k].w[0];
    c->nodes[k].w[0] += 1.0f;
    CHECK(g->nodes[k].w[0] == w0);
    yq_graph_free(g);
    CHECK(c->nodes[k].w[0] == w0 + 1.0f && !strcmp(c->class_names[0], "person"));
    /* a quantized graph is not cloned */
    yq_graph *d = (yq_graph *)1;
    c->q = (yq_qnode *)yq_arena_alloc(c, sizeof(yq_qnode) * (size_t)c->n_nodes);
    CHECKF(yq_graph_clone(c, &d, &err) == YQ_ERR_INVALID_ARG && d == NULL && strstr(err.msg, "quantized"), "%s", err.msg);
    yq_graph_free(c);
}

/* yq_graph_view: a graph of its own over another's weights (what a rewrite fills). Its node
 * array and arena are its own (a change of a node's fields or an allocation stays in the
 * view), the weights, biases and class names are the base's (the same pointers), freeing
 * it leaves the base whole, and a quantized graph is refused. */
static void t_graph_view(void)
{
    yq_graph *g = NULL, *v = NULL;
    yq_error err;
    yq_import_opt opt = { .synthetic = 1, .seed = 5 };
    CHECKF(yq_darknet_load(FIX "tiny.cfg", NULL, &opt, &g, &err) == YQ_OK, "%s", err.msg);
    static char *names[1] = { "person" };
    g->class_names = names;
    g->n_class_names = 1;
    size_t bytes = yq_graph_bytes(g);
    CHECKF(yq_graph_view(g, &v, &err) == YQ_OK, "%s", err.msg);
    CHECK(v != g && v->base == g && !v->owned_base && !v->q && v->nodes != g->nodes && v->n_nodes == g->n_nodes);
    CHECK(!strcmp(v->cfg_path, g->cfg_path) && !memcmp(v->model_sha256, g->model_sha256, 32) && v->letter_box == g->letter_box);
    CHECK(v->class_names == g->class_names && v->n_class_names == 1 && yq_graph_bytes(v) == 0);
    for (int i = 0; i < g->n_nodes; i++)
        CHECKF(v->nodes[i].w == g->nodes[i].w && v->nodes[i].b == g->nodes[i].b && v->nodes[i].op == g->nodes[i].op,
               "node %d", i);
    v->nodes[1].act = YQ_ACT_RELU == g->nodes[1].act ? YQ_ACT_LEAKY : YQ_ACT_RELU;   /* its own nodes */
    CHECK(v->nodes[1].act != g->nodes[1].act);
    CHECK(yq_arena_alloc(v, 1000) && yq_graph_bytes(g) == bytes && yq_graph_bytes(v) >= 1000);
    /* a quantized graph is not viewed */
    v->q = (yq_qnode *)yq_arena_alloc(v, sizeof(yq_qnode) * (size_t)v->n_nodes);
    yq_graph *x = (yq_graph *)1;
    CHECKF(yq_graph_view(v, &x, &err) == YQ_ERR_INVALID_ARG && x == NULL && strstr(err.msg, "quantized"), "%s", err.msg);
    yq_graph_free(v);
    CHECK(g->nodes[1].w && g->class_names == names && yq_graph_bytes(g) == bytes);
    g->class_names = NULL;
    g->n_class_names = 0;
    yq_graph_free(g);
}

static void t_weights_valid(void)
{
    float f[TINY_FLOATS];
    tiny_floats(f);
    const char *p = write_weights("valid.weights", f, TINY_FLOATS);
    yq_graph *g;
    yq_error err;
    CHECKF(load_tiny(p, &g, &err) == YQ_OK, "%s", err.msg);
    /* layer 2 has no BN: its biases and weights are the file's floats, in order */
    const yq_node *n = &g->nodes[3];
    int ok = n->op == YQ_OP_CONV && n->w && n->b && n->n_w == 16 &&
             !memcmp(n->b, f + TINY_L2_B, 4 * sizeof *f) && !memcmp(n->w, f + TINY_L2_B + 4, 16 * sizeof *f);
    int named = !strcmp(g->weights_path, p);
    yq_graph_free(g);
    CHECK(ok);
    CHECK(named);
}

static void t_weights_old_header(void)
{
    float f[TINY_FLOATS];
    tiny_floats(f);
    /* version 0.1.0: 'seen' is 32 bits, a 16-byte header */
    int32_t h[4] = { 0, 1, 0, 4242 };
    char path[128];
    snprintf(path, sizeof path, "%s/old.weights", tmpdir);
    CHECK(write_file(path, h, sizeof h, f, sizeof f) == 0);
    yq_graph *g_old, *g_new;
    yq_error err;
    CHECKF(load_tiny(path, &g_old, &err) == YQ_OK, "old header: %s", err.msg);
    const char *p2 = write_weights("new.weights", f, TINY_FLOATS);
    if (load_tiny(p2, &g_new, &err) != YQ_OK) { yq_graph_free(g_old); CHECKF(0, "%s", err.msg); }
    int same = 1;
    for (int i = 0; i < g_old->n_nodes; i++) {
        const yq_node *a = &g_old->nodes[i], *b = &g_new->nodes[i];
        if (a->op != YQ_OP_CONV) continue;
        same &= !memcmp(a->w, b->w, (size_t)a->n_w * sizeof(float)) &&
                !memcmp(a->b, b->b, (size_t)a->p.conv.filters * sizeof(float));
    }
    yq_graph_free(g_old);
    yq_graph_free(g_new);
    CHECKF(same, "the same floats under a 16-byte and a 20-byte header load differently");
}

static void expect_weights_error(const char *path, yq_status code, const char *where, const char *what)
{
    yq_graph *g = (yq_graph *)&code;
    yq_error err = { 0 };
    yq_import_opt opt = { 0 };
    yq_status st = yq_darknet_load(FIX "tiny.cfg", path, &opt, &g, &err);
    CHECKF(st == code, "status %s, expected %s (%s)", yq_status_str(st), yq_status_str(code), err.msg);
    CHECK(g == (yq_graph *)&code);
    const char *base = strrchr(path, '/');
    check_msg(&err, base ? base + 1 : path, where, what);
}

static void t_weights_truncated(void)
{
    float f[TINY_FLOATS];
    tiny_floats(f);
    expect_weights_error(write_weights("truncated.weights", f, TINY_FLOATS - 1), YQ_ERR_FORMAT, "layer 6", "truncated");
}

static void t_weights_overlong(void)
{
    float f[TINY_FLOATS + 1];
    tiny_floats(f);
    f[TINY_FLOATS] = 1.f;
    expect_weights_error(write_weights("overlong.weights", f, TINY_FLOATS + 1), YQ_ERR_FORMAT, "4 bytes", "left over");
}

static void t_weights_nan(void)
{
    float f[TINY_FLOATS];
    tiny_floats(f);
    f[TINY_L0_W + 5] = NAN;
    expect_weights_error(write_weights("nan.weights", f, TINY_FLOATS), YQ_ERR_FORMAT, "layer 0", "weights[5] is NaN");
}

static void t_weights_inf_bias(void)
{
    float f[TINY_FLOATS];
    tiny_floats(f);
    f[TINY_L2_B + 1] = -INFINITY;
    expect_weights_error(write_weights("inf.weights", f, TINY_FLOATS), YQ_ERR_FORMAT, "layer 2", "biases[1] is Inf");
}

static void t_weights_negative_variance(void)
{
    float f[TINY_FLOATS];
    tiny_floats(f);
    f[TINY_L0_VAR + 1] = -0.25f;
    expect_weights_error(write_weights("negvar.weights", f, TINY_FLOATS), YQ_ERR_FORMAT, "layer 0", "variance[1]");
}

/* found by fuzz_weights: finite BN values whose folding overflows a float */
static void t_weights_bn_overflow(void)
{
    float f[TINY_FLOATS];
    tiny_floats(f);
    f[4 + 2] = 1e38f;                  /* scale[2] (scales are floats 4..7) */
    f[TINY_L0_VAR + 2] = 0.f;          /* variance[2] */
    expect_weights_error(write_weights("bnover.weights", f, TINY_FLOATS), YQ_ERR_FORMAT, "layer 0", "filter 2 overflows");
}

static void t_weights_empty(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/empty.weights", tmpdir);
    CHECK(write_file(path, NULL, 0, NULL, 0) == 0);
    expect_weights_error(path, YQ_ERR_FORMAT, "0 bytes", "too short");
}

static void t_weights_header_only(void)
{
    uint8_t h[20];
    hdr_v2(h);
    char path[128];
    snprintf(path, sizeof path, "%s/header.weights", tmpdir);
    CHECK(write_file(path, h, sizeof h, NULL, 0) == 0);
    expect_weights_error(path, YQ_ERR_FORMAT, "layer 0", "truncated");
}

static void t_weights_missing(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/no-such.weights", tmpdir);
    expect_weights_error(path, YQ_ERR_IO, "", "No such file");
}

/* yq_darknet_read_weights from memory: a buffer that fits, then one that does not. */
static void t_weights_from_memory(void)
{
    size_t len;
    char *text = slurp(FIX "tiny.cfg", &len);
    CHECK(text);
    yq_graph *g = NULL;
    yq_error err;
    yq_status st = yq_darknet_parse_cfg(text, len, "tiny.cfg", NULL, &g, &err);
    free(text);
    CHECKF(st == YQ_OK, "%s", err.msg);
    uint8_t buf[20 + TINY_FLOATS * 4];
    float f[TINY_FLOATS];
    tiny_floats(f);
    hdr_v2(buf);
    memcpy(buf + 20, f, sizeof f);
    st = yq_darknet_read_weights(g, buf, sizeof buf, "mem.weights", YQ_BN_ALEXEYAB, &err);
    yq_graph_free(g);
    CHECKF(st == YQ_OK, "%s", err.msg);
}

/* ---- BN folding ---------------------------------------------------------------- */

/* One input channel, two filters, 1x1.  File order: biases, scales, means,
 * variances, weights.  Hand computation (k = scale / sd):
 *   filter 0: beta .5, gamma 2, mean 1, var 4, w 3
 *     AlexeyAB: sd = sqrt(4 + 1e-5) = 2.0000025;  k = 0.99999875;  w' = 3k = 2.99999625, b' = .5 - k = -0.49999875
 *     pjreddie: sd = 2 + 1e-6;                    k = 0.9999995;   w' = 2.9999985,  b' = -0.4999995
 *   filter 1: beta .25, gamma 1, mean .5, var 2^-14, w .5
 *     AlexeyAB: sd = sqrt(6.103515625e-5 + 1e-5) = 0.00842823;  k = 118.64880;  w' = 59.32440, b' = .25 - .5k = -59.07440
 *     pjreddie: sd = 0.0078125 + 1e-6 = 0.0078135;            k = 127.98362;  w' = 63.99181, b' = -63.74181 */
static void t_bn_fold(void)
{
    static const char *text = "[net]\nwidth=1\nheight=1\nchannels=1\n"
                              "[convolutional]\nbatch_normalize=1\nfilters=2\nsize=1\nstride=1\npad=0\nactivation=linear\n";
    const float file[10] = { .5f, .25f, 2.f, 1.f, 1.f, .5f, 4.f, 0x1p-14f, 3.f, .5f };
    static const double want[2][4] = {   /* w0, b0, w1, b1 */
        { 2.99999625, -0.49999875, 59.32440, -59.07440 },
        { 2.9999985, -0.4999995, 63.99181, -63.74181 },
    };
    uint8_t buf[20 + sizeof file];
    hdr_v2(buf);
    memcpy(buf + 20, file, sizeof file);
    for (int conv = 0; conv < 2; conv++) {
        yq_graph *g = parse_text(text, NULL);
        yq_error err;
        yq_status st = yq_darknet_read_weights(g, buf, sizeof buf, "bn.weights", conv ? YQ_BN_PJREDDIE : YQ_BN_ALEXEYAB, &err);
        if (st != YQ_OK) { yq_graph_free(g); CHECKF(0, "%s", err.msg); }
        const yq_node *n = &g->nodes[1];
        double got[4] = { n->w[0], n->b[0], n->w[1], n->b[1] };
        yq_graph_free(g);
        for (int k = 0; k < 4; k++)
            CHECKF(fabs(got[k] - want[conv][k]) <= 2e-6 * fabs(want[conv][k]),
                   "%s: value %d is %.9g, hand computation %.9g", conv ? "pjreddie" : "alexeyab", k, got[k], want[conv][k]);
    }
}

/* ---- shape rules --------------------------------------------------------------- */

static yq_shape pool_out(int in, int size, int stride)
{
    char text[256];
    snprintf(text, sizeof text, "[net]\nwidth=%d\nheight=%d\nchannels=5\n[maxpool]\nsize=%d\nstride=%d\n", in, in, size, stride);
    yq_graph *g = parse_text(text, NULL);
    yq_shape s = g->nodes[1].out;
    yq_graph_free(g);
    return s;
}

/* darknet's maxpool pads size-1 in total by default: out = (in + size-1 - size)/stride + 1 */
static void t_shape_maxpool(void)
{
    yq_shape s = pool_out(13, 2, 1);
    CHECKF(s.c == 5 && s.h == 13 && s.w == 13, "size=2 stride=1 on 13: %dx%dx%d", s.c, s.h, s.w);
    s = pool_out(13, 5, 1);     /* the SPP block */
    CHECKF(s.h == 13 && s.w == 13, "size=5 stride=1 on 13: %dx%d", s.h, s.w);
    s = pool_out(13, 9, 1);
    CHECKF(s.h == 13 && s.w == 13, "size=9 stride=1 on 13: %dx%d", s.h, s.w);
    s = pool_out(26, 2, 2);
    CHECKF(s.h == 13 && s.w == 13, "size=2 stride=2 on 26: %dx%d", s.h, s.w);
    s = pool_out(416, 2, 2);
    CHECKF(s.h == 208 && s.w == 208, "size=2 stride=2 on 416: %dx%d", s.h, s.w);
    s = pool_out(13, 2, 2);     /* odd: darknet rounds up */
    CHECKF(s.h == 7 && s.w == 7, "size=2 stride=2 on 13: %dx%d", s.h, s.w);
}

static void t_shape_conv(void)
{
    yq_graph *g = parse_text("[net]\nwidth=13\nheight=13\nchannels=8\n"
                             "[convolutional]\nfilters=6\nsize=3\nstride=2\npad=1\n"
                             "[convolutional]\nfilters=6\nsize=3\nstride=1\ngroups=6\npad=1\n"
                             "[convolutional]\nfilters=4\nsize=3\nstride=1\n", NULL);
    yq_shape a = g->nodes[1].out, b = g->nodes[2].out, c = g->nodes[3].out;
    long nw = g->nodes[2].n_w;
    yq_graph_free(g);
    CHECKF(a.c == 6 && a.h == 7 && a.w == 7, "3x3/2 pad 1 on 13: %dx%dx%d", a.c, a.h, a.w);
    CHECKF(b.c == 6 && b.h == 7 && nw == 6 * 1 * 9, "depthwise: %dx%dx%d, %ld weights", b.c, b.h, b.w, nw);
    CHECKF(c.h == 5 && c.w == 5, "3x3 no pad on 7: %dx%d", c.h, c.w);
}

/* [route] groups/group_id: each source contributes channels/groups (yolov4-tiny's CSP split). */
static void t_shape_route_groups(void)
{
    yq_graph *g = parse_text("[net]\nwidth=8\nheight=8\nchannels=3\n"
                             "[convolutional]\nfilters=16\n"                 /* 0: 16 ch */
                             "[route]\nlayers=-1\ngroups=2\ngroup_id=1\n"    /* 1: 8 ch */
                             "[convolutional]\nfilters=6\n"                  /* 2: 6 ch */
                             "[route]\nlayers=-1,0\ngroups=2\ngroup_id=0\n"  /* 3: 3 + 8 */
                             "[route]\nlayers=0,-1,2\n"                      /* 4: 16 + 11 + 6 */
                             "[route]\nlayers=0\ngroups=4\ngroup_id=3\n", NULL); /* 5: 4 */
    int c1 = g->nodes[2].out.c, c3 = g->nodes[4].out.c, c4 = g->nodes[5].out.c, c5 = g->nodes[6].out.c;
    int gid = g->nodes[2].p.route.group_id;
    yq_graph_free(g);
    CHECKF(c1 == 8 && gid == 1, "groups=2 of 16: %d (group_id %d)", c1, gid);
    CHECKF(c3 == 11, "groups=2 of 6 and 16: %d", c3);
    CHECKF(c4 == 33, "16 + 11 + 6: %d", c4);
    CHECKF(c5 == 4, "groups=4 of 16: %d", c5);
}

static void t_shape_upsample(void)
{
    yq_graph *g = parse_text("[net]\nwidth=13\nheight=10\nchannels=7\n[upsample]\nstride=3\n", NULL);
    yq_shape s = g->nodes[1].out;
    yq_graph_free(g);
    CHECKF(s.c == 7 && s.h == 30 && s.w == 39, "x3 of 13x10: %dx%dx%d", s.c, s.h, s.w);
}

/* ---- shared models ------------------------------------------------------------- */

static const char *cfg_only_path(const char *name, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/models/cfg-only/%s.cfg", test_data_dir(), name);
    if (access(buf, R_OK) != 0) TEST_SKIP("%s not found (set YQ_DATA)", buf);
    return buf;
}

static void t_yolov3_flops(void)
{
    char path[512];
    cfg_only_path("yolov3", path, sizeof path);
    size_t len;
    char *text = slurp(path, &len);
    CHECK(text);
    yq_import_opt opt = { .width = 416, .height = 416 };
    yq_graph *g = NULL;
    yq_error err;
    yq_status st = yq_darknet_parse_cfg(text, len, path, &opt, &g, &err);
    free(text);
    CHECKF(st == YQ_OK, "%s", err.msg);
    double flops = 0;
    for (int i = 0; i < g->n_nodes; i++) flops += yq_node_flops(g, &g->nodes[i]);
    int layers = g->n_nodes - 1, convs = count_op(g, YQ_OP_CONV), heads = count_op(g, YQ_OP_YOLO);
    yq_shape in = g->nodes[0].out;
    yq_graph_free(g);
    CHECKF(in.w == 416 && in.h == 416, "input %dx%d", in.w, in.h);
    CHECKF(fabs(flops * 1e-9 - 65.86) < 0.005, "%.4f GFLOPs, expected 65.86", flops * 1e-9);
    CHECKF(layers == 107 && convs == 75 && heads == 3, "%d layers, %d convs, %d heads", layers, convs, heads);
}

static void t_shared_models_load(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/models", test_data_dir());
    DIR *d = opendir(dir);
    if (!d) TEST_SKIP("%s not found (set YQ_DATA)", dir);
    char names[16][256];
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 16;)
        if (e->d_name[0] != '.' && strcmp(e->d_name, "cfg-only") && strcmp(e->d_name, "onnx")) snprintf(names[n++], sizeof names[0], "%s", e->d_name);
    closedir(d);
    CHECKF(n == 5, "%d model folders in %s, expected 5", n, dir);
    for (int i = 0; i < n; i++) {
        char folder[800];
        snprintf(folder, sizeof folder, "%s/%s", dir, names[i]);
        yq_model_paths mp;
        yq_error err;
        CHECKF(yq_model_resolve(folder, NULL, &mp, &err) == YQ_OK, "%s", err.msg);
        CHECKF(!mp.synthetic && mp.weights[0] && mp.names[0], "%s: weights '%s', names '%s'", names[i], mp.weights, mp.names);
        yq_graph *g = NULL;
        yq_import_opt opt = { 0 };
        CHECKF(yq_darknet_load(mp.cfg, mp.weights, &opt, &g, &err) == YQ_OK, "%s", err.msg);
        int convs = 0, with_w = 0, heads = 0;
        for (int k = 0; k < g->n_nodes; k++) {
            convs += g->nodes[k].op == YQ_OP_CONV;
            with_w += g->nodes[k].op == YQ_OP_CONV && g->nodes[k].w && g->nodes[k].b;
            heads += yq_op_is_head(g->nodes[k].op);
        }
        yq_status st = yq_graph_load_names(g, mp.names, &err);
        int n_names = g->n_class_names;
        yq_graph_free(g);
        CHECKF(convs > 0 && with_w == convs && heads > 0, "%s: %d convs, %d with weights, %d heads", names[i], convs, with_w, heads);
        CHECKF(st == YQ_OK && n_names == 80, "%s: %d class names (%s)", names[i], n_names, st ? err.msg : "");
    }
}

/* ---- synthetic weights through the FP32 engine ------------------------------------ */

static const char *synth_models[] = { "yolov3", "yolov3-tiny", "yolov4", "yolov4-tiny" };
static const char *cur_model;

static yq_graph *load_synth(const char *path, uint32_t seed, int size)
{
    yq_import_opt opt = { .width = size, .height = size, .synthetic = 1, .seed = seed };
    yq_graph *g = NULL;
    yq_error err;
    CHECKF(yq_darknet_load(path, NULL, &opt, &g, &err) == YQ_OK, "%s", err.msg);
    return g;
}

/* 1: same weights bytes; 0: some differ */
static int same_weights(const yq_graph *a, const yq_graph *b)
{
    if (a->n_nodes != b->n_nodes) return 0;
    for (int i = 0; i < a->n_nodes; i++) {
        const yq_node *x = &a->nodes[i], *y = &b->nodes[i];
        if (x->op != YQ_OP_CONV) continue;
        if (!x->w || !y->w || x->n_w != y->n_w || memcmp(x->w, y->w, (size_t)x->n_w * sizeof(float)) ||
            memcmp(x->b, y->b, (size_t)x->p.conv.filters * sizeof(float)))
            return 0;
    }
    return 1;
}

static void t_synth_seed(void)
{
    char path[512];
    cfg_only_path(cur_model, path, sizeof path);
    yq_graph *a = load_synth(path, 7, 0), *b = load_synth(path, 7, 0), *c = load_synth(path, 8, 0);
    int ab = same_weights(a, b), ac = same_weights(a, c);
    int sha = !memcmp(a->model_sha256, b->model_sha256, 32) && memcmp(a->model_sha256, c->model_sha256, 32);
    yq_graph_free(a);
    yq_graph_free(b);
    yq_graph_free(c);
    CHECKF(ab, "seed 7 twice gives different weights");
    CHECKF(!ac, "seeds 7 and 8 give the same weights");
    CHECKF(sha, "model_sha256 does not follow the seed");
}

static void fill_input(float *x, long n, uint32_t seed)
{
    uint32_t s = seed;
    for (long i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)(s >> 8) * (1.0f / 16777216.0f);
    }
}

typedef struct rms_ctx { int convs, bad; double lo, hi; int lo_id, hi_id; char why[200]; } rms_ctx;

static void rms_hook(void *ctx, const yq_graph *g, int id, const void *out, int batch)
{
    rms_ctx *r = ctx;
    const float *data = out;     /* an FP32 graph: every output is float */
    if (g->nodes[id].op != YQ_OP_CONV) return;
    long n = yq_shape_size(g->nodes[id].out) * batch;
    double s = 0;
    long nonfinite = 0;
    for (long i = 0; i < n; i++) {
        if (!isfinite(data[i])) nonfinite++;
        else s += (double)data[i] * (double)data[i];
    }
    double rms = sqrt(s / (double)n);
    r->convs++;
    if (rms < r->lo) { r->lo = rms; r->lo_id = id; }
    if (rms > r->hi) { r->hi = rms; r->hi_id = id; }
    if ((nonfinite || !(rms >= 0.05 && rms <= 20)) && !r->bad++)
        snprintf(r->why, sizeof r->why, "layer %d: %ld non-finite, RMS %.4g", g->nodes[id].layer, nonfinite, rms);
}

static void t_synth_rms(void)
{
    char path[512];
    cfg_only_path(cur_model, path, sizeof path);
    yq_graph *g = load_synth(path, 1, 128);
    yq_plan *p = NULL;
    yq_error err;
    if (yq_plan_new(g, 1, YQ_PLAN_KEEP_HEADS, &p, &err) != YQ_OK) { yq_graph_free(g); CHECKF(0, "%s", err.msg); }
    fill_input(yq_plan_input(p), yq_shape_size(g->nodes[0].out), 99);
    rms_ctx r = { .lo = INFINITY, .hi = 0 };
    yq_status st = yq_exec_fp32(p, NULL, rms_hook, &r, &err);
    int convs = count_op(g, YQ_OP_CONV);
    int lo_layer = g->nodes[r.lo_id].layer, hi_layer = g->nodes[r.hi_id].layer;
    yq_plan_free(p);
    yq_graph_free(g);
    CHECKF(st == YQ_OK, "%s", err.msg);
    printf("  %s at 128x128: %d convs, conv output RMS in [%.3f (layer %d), %.3f (layer %d)]\n",
           cur_model, r.convs, r.lo, lo_layer, r.hi, hi_layer);
    CHECKF(r.convs == convs, "hook saw %d convs of %d", r.convs, convs);
    CHECKF(!r.bad, "%d conv outputs out of [0.05, 20] or non-finite; first: %s", r.bad, r.why);
}

/* ---- the FP32 engine and the plan ---------------------------------------------------- */

typedef struct cmp_ctx { const yq_plan *ref; long differ; int first; } cmp_ctx;

/* Compares each node's output, while it is still live in the shared plan, with
 * the KEEP_ALL plan's copy. */
static void cmp_hook(void *ctx, const yq_graph *g, int id, const void *data, int batch)
{
    cmp_ctx *c = ctx;
    const float *ref = yq_plan_tensor(c->ref, id);
    size_t bytes = (size_t)yq_shape_size(g->nodes[id].out) * (size_t)batch * sizeof(float);
    if (!ref || memcmp(ref, data, bytes)) {
        if (!c->differ) c->first = id;
        c->differ++;
    }
}

static void t_fp32_plan_yolov3(void)
{
    char path[512];
    cfg_only_path("yolov3", path, sizeof path);
    yq_graph *g = load_synth(path, 3, 128);
    yq_plan *all = NULL, *shared = NULL;
    yq_error err;
    yq_status st = yq_plan_new(g, 1, YQ_PLAN_KEEP_ALL, &all, &err);
    if (st == YQ_OK) st = yq_plan_new(g, 1, YQ_PLAN_KEEP_HEADS, &shared, &err);
    long in_n = yq_shape_size(g->nodes[0].out);
    float *x = malloc((size_t)in_n * sizeof *x);
    float *heads[2][8] = { { 0 } };
    int n_heads = 0;
    for (int i = 0; i < g->n_nodes && n_heads < 8; i++)
        if (g->nodes[i].op == YQ_OP_YOLO) {
            size_t b = (size_t)yq_shape_size(g->nodes[i].out) * sizeof(float);
            heads[0][n_heads] = malloc(b);
            heads[1][n_heads++] = malloc(b);
        }
    cmp_ctx c = { 0 };
    int runs_same = 1, have_heads = 1;
    size_t sum = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op != YQ_OP_DROPOUT && !yq_op_is_head(g->nodes[i].op))
            sum += (size_t)yq_shape_size(g->nodes[i].out) * sizeof(float);
    size_t b_all = 0, b_shared = 0;
    if (st == YQ_OK && x) {
        fill_input(x, in_n, 5);
        b_all = yq_plan_bytes(all);
        b_shared = yq_plan_bytes(shared);
        c.ref = all;
        st = yq_exec_fp32(all, x, NULL, NULL, &err);
        /* two runs of the shared plan: the same bits each time, and each node's
         * output equal to the KEEP_ALL run's */
        for (int run = 0; run < 2 && st == YQ_OK; run++) {
            st = yq_exec_fp32(shared, x, cmp_hook, &c, &err);
            for (int i = 0, h = 0; st == YQ_OK && i < g->n_nodes; i++) {
                if (g->nodes[i].op != YQ_OP_YOLO) continue;
                const float *t = yq_plan_tensor(shared, i);
                if (!t || !heads[run][h]) { have_heads = 0; break; }
                memcpy(heads[run][h++], t, (size_t)yq_shape_size(g->nodes[i].out) * sizeof(float));
            }
        }
        for (int i = 0, h = 0; have_heads && i < g->n_nodes; i++)
            if (g->nodes[i].op == YQ_OP_YOLO) {
                runs_same &= !memcmp(heads[0][h], heads[1][h], (size_t)yq_shape_size(g->nodes[i].out) * sizeof(float));
                h++;
            }
    }
    for (int h = 0; h < n_heads; h++) { free(heads[0][h]); free(heads[1][h]); }
    free(x);
    yq_plan_free(all);
    yq_plan_free(shared);
    int layer_first = c.differ ? g->nodes[c.first].layer : -1;
    yq_graph_free(g);
    CHECKF(st == YQ_OK, "%s", err.msg);
    CHECK(x && n_heads == 3 && have_heads);
    printf("  yolov3 at 128x128: shared plan %.1f MB, KEEP_ALL %.1f MB, sum of tensors %.1f MB\n",
           (double)b_shared / 1e6, (double)b_all / 1e6, (double)sum / 1e6);
    CHECKF(b_shared < sum, "shared plan %zu bytes, sum of tensors %zu", b_shared, sum);
    CHECKF(b_all == sum, "KEEP_ALL plan %zu bytes, sum of tensors %zu", b_all, sum);
    CHECKF(!c.differ, "%ld node outputs differ from the KEEP_ALL run, first layer %d", c.differ, layer_first);
    CHECKF(runs_same, "two runs of the same plan differ");
}

/* ---- main ------------------------------------------------------------------------- */

static void rm_tmpdir(void)
{
    DIR *d = opendir(tmpdir);
    if (!d) return;
    char p[512];
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') { snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name); unlink(p); }
    closedir(d);
    rmdir(tmpdir);
}

/* ir/stats.h: the one median of every timing (odd and even counts, sorted in place),
 * the p90 rank, float input left as it was, and no figures for no values. */
static void t_stats(void)
{
    double v[] = { 5, 1, 4, 2, 3 };
    yq_stats s = yq_stats_of(v, 5);
    CHECK(s.n == 5 && s.median == 3 && s.mean == 3 && s.min == 1 && s.max == 5 && s.p90 == 4);
    CHECK(v[0] == 1 && v[4] == 5);
    double e[] = { 10, 2, 8, 4 };
    s = yq_stats_of(e, 4);
    CHECK(s.median == 6 && s.mean == 6 && s.p90 == 8);
    const float f[] = { 3.0f, 0.5f, 2.0f, 1.0f, 9.0f, 4.0f };
    s = yq_stats_of_f(f, 6);
    CHECK(s.n == 6 && s.median == 2.5 && s.min == 0.5 && s.max == 9 && s.p90 == 4);
    CHECK(f[0] == 3.0f && f[4] == 9.0f);
    s = yq_stats_of(v, 0);
    CHECK(s.n == 0 && isnan(s.median) && isnan(s.mean) && isnan(s.p90));
    s = yq_stats_of_f(NULL, 3);
    CHECK(s.n == 0 && isnan(s.min));
}

/* ir/pack.h yq_buffer_lifetimes, the one liveness pass of the three planners: a buffer
 * lives to its last reader through aliases (a dropout reading conv 1 keeps conv 1's
 * buffer alive for the dropout's readers), KEEP_HEADS keeps what feeds a head past the
 * run, KEEP_ALL every buffer, the input lives at least to node 1. */
static void t_buffer_lifetimes(void)
{
    static yq_node nodes[6];
    memset(nodes, 0, sizeof nodes);
    /* 0 input; 1 conv(0); 2 dropout(1) (an alias of 1); 3 conv(2); 4 shortcut(3, 2); 5 yolo(4) */
    const yq_op ops[6] = { YQ_OP_INPUT, YQ_OP_CONV, YQ_OP_DROPOUT, YQ_OP_CONV, YQ_OP_SHORTCUT, YQ_OP_YOLO };
    const int srcs[6][2] = { { -1, -1 }, { 0, -1 }, { 1, -1 }, { 2, -1 }, { 3, 2 }, { 4, -1 } };
    for (int i = 0; i < 6; i++) {
        nodes[i].op = ops[i];
        for (int k = 0; k < 2 && srcs[i][k] >= 0; k++) nodes[i].src[nodes[i].n_src++] = srcs[i][k];
    }
    yq_graph g;
    memset(&g, 0, sizeof g);
    g.nodes = nodes;
    g.n_nodes = 6;
    const int owner[6] = { 0, 1, 1, 3, 4, 4 };   /* the dropout and the head alias their source */
    int lu[6];
    yq_buffer_lifetimes(&g, owner, 0, lu);
    CHECKF(lu[0] == 1 && lu[1] == 4 && lu[3] == 4 && lu[4] == 5, "plain: %d %d %d %d", lu[0], lu[1], lu[3], lu[4]);
    yq_buffer_lifetimes(&g, owner, YQ_PLAN_KEEP_HEADS, lu);
    CHECKF(lu[1] == 4 && lu[4] == 6, "keep heads: %d %d", lu[1], lu[4]);
    yq_buffer_lifetimes(&g, owner, YQ_PLAN_KEEP_ALL, lu);
    CHECKF(lu[0] == 6 && lu[1] == 6 && lu[3] == 6 && lu[4] == 6, "keep all: %d %d %d %d", lu[0], lu[1], lu[3], lu[4]);
    /* an input nobody reads still lives to node 1 (it is written before the run) */
    nodes[1].n_src = 0;
    yq_buffer_lifetimes(&g, owner, 0, lu);
    CHECK(lu[0] == 1);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/yq_test_ir.XXXXXX");
    if (!mkdtemp(tmpdir)) { perror("mkdtemp"); return 2; }

    char name[96];
    for (size_t i = 0; i < sizeof cfg_cases / sizeof *cfg_cases; i++) {
        cur_case = &cfg_cases[i];
        snprintf(name, sizeof name, "t_cfg_%.*s", (int)(strlen(cur_case->file) - 4), cur_case->file);
        test_run_(name, t_cfg_case);
    }
    TEST(t_cfg_more_errors);
    TEST(t_tiny_shapes);
    TEST(t_clone);
    TEST(t_graph_view);
    TEST(t_weights_valid);
    TEST(t_weights_old_header);
    TEST(t_weights_truncated);
    TEST(t_weights_overlong);
    TEST(t_weights_nan);
    TEST(t_weights_inf_bias);
    TEST(t_weights_negative_variance);
    TEST(t_weights_bn_overflow);
    TEST(t_weights_empty);
    TEST(t_weights_header_only);
    TEST(t_weights_missing);
    TEST(t_weights_from_memory);
    TEST(t_bn_fold);
    TEST(t_shape_maxpool);
    TEST(t_shape_conv);
    TEST(t_shape_route_groups);
    TEST(t_shape_upsample);
    TEST(t_yolov3_flops);
    TEST(t_stats);
    TEST(t_buffer_lifetimes);
    TEST(t_shared_models_load);
    for (size_t i = 0; i < sizeof synth_models / sizeof *synth_models; i++) {
        cur_model = synth_models[i];
        snprintf(name, sizeof name, "t_synth_seed_%s", cur_model);
        test_run_(name, t_synth_seed);
        snprintf(name, sizeof name, "t_synth_rms_%s", cur_model);
        test_run_(name, t_synth_rms);
    }
    TEST(t_fp32_plan_yolov3);

    rm_tmpdir();
    return test_done();
}
