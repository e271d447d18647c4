/* The deploy package: an int8 graph written and loaded back runs bit-identically
 * (every node, memcmp) and keeps its metadata; h5dump reads the file; the loader
 * refuses another format version, a truncated file, a dataset of the wrong size,
 * out-of-range values and files that are not packages, with one line naming the
 * path and the node; a failed write leaves neither the package nor a .tmp; no
 * HDF5 handle is left open on any path.
 *
 * The graph is tests/fixtures/tiny.cfg with synthetic weights (an embedded copy
 * when the fixture is absent), quantized without calibration (thresholds 1.0):
 * nothing here depends on the calibration flow.  Run from the repository root.
 */
#include <hdf5.h>
#include <openssl/evp.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tests/test.h"
#include "ir/half.h"
#include "ir/requant.h"
#include "ir/ir.h"
#include "tests/test_rewrite.h"
#include "runtime/h5mem.h"
#include "runtime/h5util.h"
#include "runtime/package.h"
#include "runtime/plan.h"

#define TINY "tests/fixtures/tiny.cfg"

/* The fixture's network, for a checkout without it. */
static const char tiny_cfg[] =
    "[net]\nwidth=32\nheight=32\nchannels=3\n"
    "[convolutional]\nbatch_normalize=1\nfilters=4\nsize=3\nstride=1\npad=1\nactivation=leaky\n"
    "[maxpool]\nsize=2\nstride=2\n"
    "[convolutional]\nfilters=4\nsize=1\nstride=1\npad=1\nactivation=linear\n"
    "[shortcut]\nfrom=-2\nactivation=linear\n"
    "[route]\nlayers=-1,-3\n"
    "[upsample]\nstride=2\n"
    "[convolutional]\nfilters=21\nsize=1\nstride=1\npad=1\nactivation=linear\n"
    "[yolo]\nmask=0,1,2\nanchors=10,14, 23,27, 37,58\nclasses=2\nnum=3\n";

static char tmpdir[64];
static char qtext[1 << 16];
static const char *ACC = "{\"fp32\":{\"map50\":0.51},\"int8\":{\"map50\":0.5}}";
static const char *TUNE = "{\"conv_0\":\"ref\"}";

/* ---- helpers ------------------------------------------------------------- */

static const char *tpath(const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static int exists(const char *p) { return access(p, F_OK) == 0; }

static long file_size(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 ? (long)sb.st_size : -1;
}

/* Copies the first n bytes of src (n < 0: all). */
static int copy_file(const char *src, const char *dst, long n)
{
    FILE *a = fopen(src, "rb"), *b = fopen(dst, "wb");
    int ok = a && b;
    char buf[65536];
    long done = 0;
    while (ok && (n < 0 || done < n)) {
        size_t want = n < 0 || n - done > (long)sizeof buf ? sizeof buf : (size_t)(n - done);
        size_t got = fread(buf, 1, want, a);
        if (got == 0) break;
        ok = fwrite(buf, 1, got, b) == got;
        done += (long)got;
    }
    if (a) fclose(a);
    if (b && fclose(b) != 0) ok = 0;
    return ok ? 0 : -1;
}

/* Open HDF5 files and objects in them (groups, datasets, attributes, named
 * types): a loader that leaks one also keeps its file open.  (HDF5 1.10 cannot
 * count transient types and dataspaces from outside.) */
static long h5_ids(void)
{
    return (long)H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
}

/* /checksums made anew for a file the test patched on purpose, so that the loader's other
 * checks are reached: this test's own implementation of the rule runtime/package.c
 * documents (sha256 of every dataset's and attribute's value in its file type, by name). */
typedef struct ck_row { char object[160]; char sha256[65]; } ck_row;
typedef struct ck_acc { ck_row *rows; int n; const char *obj; } ck_acc;

static void sha_hex(const void *b, size_t n, char out[65])
{
    unsigned char d[32];
    unsigned dl = 0;
    EVP_Digest(b, n, d, &dl, EVP_sha256(), NULL);
    for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void ck_add(ck_acc *a, const char *name, hid_t obj, int is_attr)
{
    hid_t t = is_attr ? H5Aget_type(obj) : H5Dget_type(obj);
    hid_t sp = is_attr ? H5Aget_space(obj) : H5Dget_space(obj);
    size_t n = (size_t)H5Sget_simple_extent_npoints(sp) * H5Tget_size(t);
    void *buf = calloc(n ? n : 1, 1);
    CHECK(buf && (is_attr ? H5Aread(obj, t, buf) : H5Dread(obj, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf)) >= 0);
    a->rows = realloc(a->rows, sizeof *a->rows * (size_t)(a->n + 1));
    CHECK(a->rows);
    ck_row *r = &a->rows[a->n++];
    memset(r, 0, sizeof *r);
    snprintf(r->object, sizeof r->object, "%s", name);
    sha_hex(buf, n, r->sha256);
    free(buf);
    H5Tclose(t);
    H5Sclose(sp);
}

static herr_t ck_attr_cb(hid_t loc, const char *name, const H5A_info_t *ai, void *ctx)
{
    (void)ai;
    ck_acc *a = ctx;
    char full[160];
    snprintf(full, sizeof full, "%s@%s", a->obj, name);
    hid_t at = H5Aopen(loc, name, H5P_DEFAULT);
    ck_add(a, full, at, 1);
    H5Aclose(at);
    return 0;
}

static herr_t ck_obj_cb(hid_t root, const char *name, const H5O_info_t *oi, void *ctx)
{
    ck_acc *a = ctx;
    char full[160];
    snprintf(full, sizeof full, "/%s", strcmp(name, ".") ? name : "");
    if (!strcmp(full, "/checksums")) return 0;
    hid_t o = H5Oopen(root, name, H5P_DEFAULT);
    if (oi->type == H5O_TYPE_DATASET) ck_add(a, full, o, 0);
    ck_acc sub = *a;
    sub.obj = full;
    hsize_t idx = 0;
    H5Aiterate2(o, H5_INDEX_NAME, H5_ITER_INC, &idx, ck_attr_cb, &sub);
    a->rows = sub.rows;
    a->n = sub.n;
    H5Oclose(o);
    return 0;
}

static void reseal(const char *path)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    CHECK(f >= 0);
    if (H5Lexists(f, "checksums", H5P_DEFAULT) > 0) CHECK(H5Ldelete(f, "checksums", H5P_DEFAULT) >= 0);
    ck_acc a = { NULL, 0, "" };
    CHECK(H5Ovisit2(f, H5_INDEX_NAME, H5_ITER_INC, ck_obj_cb, &a, H5O_INFO_BASIC) >= 0);
    hid_t s160 = H5Tcopy(H5T_C_S1), s65 = H5Tcopy(H5T_C_S1);
    H5Tset_size(s160, 160);
    H5Tset_size(s65, 65);
    hid_t ct = H5Tcreate(H5T_COMPOUND, sizeof(ck_row));
    H5Tinsert(ct, "object", offsetof(ck_row, object), s160);
    H5Tinsert(ct, "sha256", offsetof(ck_row, sha256), s65);
    hsize_t n = (hsize_t)a.n;
    hid_t sp = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(f, "checksums", ct, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(d >= 0 && H5Dwrite(d, ct, H5S_ALL, H5S_ALL, H5P_DEFAULT, a.rows) >= 0);
    H5Dclose(d); H5Sclose(sp); H5Tclose(ct); H5Tclose(s160); H5Tclose(s65);
    free(a.rows);
    CHECK(H5Fclose(f) >= 0);
}

/* Temporaries (NAME.XXXXXX.tmp) left in the test folder. */
static int count_tmp(void) { return test_count_tmp(tmpdir); }

/* Table activations on int8 convs (a mish conv into a shortcut, a logistic one). */
static const char table_cfg[] =
    "[net]\nwidth=32\nheight=32\nchannels=3\n"
    "[convolutional]\nbatch_normalize=1\nfilters=4\nsize=3\nstride=1\npad=1\nactivation=mish\n"
    "[convolutional]\nbatch_normalize=1\nfilters=4\nsize=1\nstride=1\npad=1\nactivation=logistic\n"
    "[shortcut]\nfrom=-2\nactivation=linear\n"
    "[convolutional]\nfilters=21\nsize=1\nstride=1\npad=1\nactivation=linear\n"
    "[yolo]\nmask=0,1,2\nanchors=10,14, 23,27, 37,58\nclasses=2\nnum=3\n";

typedef struct variant { const char *name; const char *key[2], *val[2]; const char *cfg; } variant;
static const variant variants[] = {
    { "default (head conv in float)", { NULL, NULL }, { NULL, NULL }, NULL },
    { "layer 2 in float, fp16w", { "skip_layers", "float_precision" }, { "2", "fp16w" }, NULL },
    { "head int8, first conv float", { "head", "first" }, { "int8", "float" }, NULL },
    { "mish and logistic tables", { NULL, NULL }, { NULL, NULL }, table_cfg },
};
#define TABLE_VARIANT 3

/* tiny.cfg with synthetic weights, quantized with thresholds 1.0. */
static yq_graph *make_graph(const variant *v)
{
    yq_import_opt opt = { 0 };
    opt.synthetic = 1;
    opt.seed = 7;
    yq_graph *g = NULL;
    yq_error err = { 0 };
    const char *cfg = TINY;
    if (v->cfg) {
        cfg = tpath("table.cfg");
        FILE *f = fopen(cfg, "w");
        CHECK(f && fputs(v->cfg, f) >= 0 && fclose(f) == 0);
    } else if (!exists(TINY)) {
        cfg = tpath("tiny.cfg");
        FILE *f = fopen(cfg, "w");
        CHECK(f && fputs(tiny_cfg, f) >= 0 && fclose(f) == 0);
    }
    CHECKF(yq_darknet_load(cfg, NULL, &opt, &g, &err) == YQ_OK, "%s", err.msg);
    if (v->cfg) remove(cfg);
    static yq_qconfig qc;
    yq_qconfig_defaults(&qc);
    for (int k = 0; k < 2; k++)
        if (v->key[k]) CHECKF(yq_qconfig_set(&qc, v->key[k], v->val[k], "test", &err) == YQ_OK, "%s", err.msg);
    CHECKF(test_rewrite(&g, NULL, &qc, &err) == YQ_OK, "%s", err.msg);
    yq_qconfig_str(&qc, qtext, sizeof qtext);
    char **names = yq_arena_alloc(g, 2 * sizeof *names);
    CHECK(names);
    names[0] = "person";
    names[1] = "bicycle";
    g->class_names = names;
    g->n_class_names = 2;
    return g;
}

static yq_package_meta make_meta(void)
{
    yq_package_meta m = { 0 };
    m.qconfig_text = qtext;
    m.accuracy_json = ACC;
    m.calib_method = "percentile:99.99";
    m.tuning_json = TUNE;
    for (int i = 0; i < 32; i++) m.calib_images_sha256[i] = (uint8_t)(0xa0 + i);
    m.calib_images = 80;
    m.letterbox = 1;
    return m;
}

/* Writes the default variant to name; returns the graph (caller frees). */
static yq_graph *write_pkg(const char *name)
{
    yq_graph *g = make_graph(&variants[0]);
    yq_package_meta m = make_meta();
    yq_error err = { 0 };
    CHECKF(yq_package_write(tpath(name), g, &m, &err) == YQ_OK, "%s", err.msg);
    return g;
}

/* A deterministic input in [0, 1). */
static void fill_input(float *x, long n)
{
    uint32_t s = 12345;
    for (long i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)(s >> 8) / 16777216.f;
    }
}

static yq_plan *run(const yq_graph *g, const float *x)
{
    yq_plan *p = NULL;
    yq_error err = { 0 };
    CHECKF(yq_plan_new(g, 2, YQ_PLAN_KEEP_ALL, &p, &err) == YQ_OK, "%s", err.msg);
    CHECKF(yq_exec_int8(p, x, NULL, NULL, &err) == YQ_OK, "%s", err.msg);
    return p;
}

/* Loads path and expects refusal with code; msg must contain both needles. */
static void expect_refused(const char *path, yq_status code, const char *n1, const char *n2)
{
    yq_graph *g = (yq_graph *)1;
    yq_package_info *info = (yq_package_info *)1;
    yq_error err = { 0 };
    long ids = h5_ids();
    yq_status st = yq_package_load(path, &g, &info, &err);
    CHECKF(st == code, "%s: status %d (%s), expected %d", path, st, err.msg, code);
    CHECKF(g == (yq_graph *)1 && info == (yq_package_info *)1, "outputs set on failure");
    CHECKF(strstr(err.msg, path), "message does not name the path: %s", err.msg);
    CHECKF(!n1 || strstr(err.msg, n1), "message lacks '%s': %s", n1, err.msg);
    CHECKF(!n2 || strstr(err.msg, n2), "message lacks '%s': %s", n2, err.msg);
    CHECKF(!strchr(err.msg, '\n'), "message is more than one line: %s", err.msg);
    CHECKF(h5_ids() == ids, "%ld HDF5 identifiers left open", h5_ids() - ids);
    if (getenv("YQ_TEST_VERBOSE")) printf("     refused: %s\n", err.msg);
}

/* Patches element k of field of row in a compound dataset of path (in place). */
static void patch_field(const char *path, const char *ds, const char *field, int row, int k, double v)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    CHECK(f >= 0);
    hid_t d = H5Dopen2(f, ds, H5P_DEFAULT);
    CHECK(d >= 0);
    hid_t ft = H5Dget_type(d), s = H5Dget_space(d);
    int mi = H5Tget_member_index(ft, field);
    CHECK(mi >= 0);
    hid_t mt = H5Tget_member_type(ft, (unsigned)mi);
    hsize_t len = 1;
    int is_float = 0;
    if (H5Tget_class(mt) == H5T_ARRAY) {
        H5Tget_array_dims2(mt, &len);
        hid_t b = H5Tget_super(mt);
        is_float = H5Tget_class(b) == H5T_FLOAT;
        H5Tclose(b);
    } else {
        is_float = H5Tget_class(mt) == H5T_FLOAT;
    }
    hid_t base = is_float ? H5T_NATIVE_FLOAT : H5T_NATIVE_INT32;
    hid_t et = len > 1 ? H5Tarray_create2(base, 1, &len) : H5Tcopy(base);
    hid_t ct = H5Tcreate(H5T_COMPOUND, 4 * (size_t)len);
    H5Tinsert(ct, field, 0, et);
    hsize_t n = 0;
    H5Sget_simple_extent_dims(s, &n, NULL);
    char *buf = calloc((size_t)n, 4 * (size_t)len);
    CHECK(buf && H5Dread(d, ct, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
    char *e = buf + ((size_t)row * len + (size_t)k) * 4;
    if (is_float) { float x = (float)v; memcpy(e, &x, 4); }
    else { int32_t x = (int32_t)v; memcpy(e, &x, 4); }
    CHECK(H5Dwrite(d, ct, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
    free(buf);
    H5Tclose(ct); H5Tclose(et); H5Tclose(mt); H5Tclose(ft); H5Sclose(s); H5Dclose(d);
    CHECK(H5Fclose(f) >= 0);
    reseal(path);
}

/* Sets a fixed-length string field (of size bytes) of row in a compound dataset. */
static void patch_str(const char *path, const char *ds, const char *field, size_t size, int row, const char *v)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    CHECK(f >= 0);
    hid_t d = H5Dopen2(f, ds, H5P_DEFAULT), s = H5Dget_space(d);
    hid_t st = H5Tcopy(H5T_C_S1);
    H5Tset_size(st, size);
    hid_t ct = H5Tcreate(H5T_COMPOUND, size);
    H5Tinsert(ct, field, 0, st);
    hsize_t n = 0;
    H5Sget_simple_extent_dims(s, &n, NULL);
    char *buf = calloc((size_t)n, size);
    CHECK(buf && (size_t)row < n && H5Dread(d, ct, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
    snprintf(buf + (size_t)row * size, size, "%s", v);
    CHECK(H5Dwrite(d, ct, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
    free(buf);
    H5Tclose(ct); H5Tclose(st); H5Sclose(s); H5Dclose(d);
    CHECK(H5Fclose(f) >= 0);
    reseal(path);
}

/* Replaces a 1-d int32 or int8 dataset of path with n elements of value v. */
static void replace_array(const char *path, const char *ds, hid_t type, hsize_t n, int v)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    CHECK(f >= 0);
    CHECK(H5Ldelete(f, ds, H5P_DEFAULT) >= 0);
    int32_t *buf = malloc(sizeof *buf * (size_t)n);
    CHECK(buf);
    for (hsize_t i = 0; i < n; i++) buf[i] = v;
    hid_t s = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(f, ds, type, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(d >= 0 && H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
    free(buf);
    H5Dclose(d); H5Sclose(s);
    CHECK(H5Fclose(f) >= 0);
    reseal(path);
}

/* ---- tests --------------------------------------------------------------- */

/* write -> load -> the same graph, the same bits at every node, the same metadata. */
static void t_roundtrip(void)
{
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        yq_graph *g = make_graph(&variants[v]), *h = NULL;
        yq_package_meta m = make_meta();
        yq_error err = { 0 };
        const char *path = tpath("rt.yqp");
        long ids = h5_ids();
        CHECKF(yq_package_write(path, g, &m, &err) == YQ_OK, "%s", err.msg);
        CHECK(!exists(tpath("rt.yqp.tmp")));
        CHECK(yq_package_is(path) == 1);
        yq_package_info *info = NULL;
        CHECKF(yq_package_load(path, &h, &info, &err) == YQ_OK, "%s: %s", variants[v].name, err.msg);
        CHECKF(h5_ids() == ids, "%ld HDF5 identifiers left open", h5_ids() - ids);

        /* The graph. */
        CHECK(h->n_nodes == g->n_nodes && h->q);
        int n_float_conv = 0, n_int8_conv = 0, n_table = 0;
        for (int i = 0; i < g->n_nodes; i++) {
            const yq_node *a = &g->nodes[i], *b = &h->nodes[i];
            CHECKF(a->op == b->op && a->layer == b->layer && a->line == b->line && a->act == b->act &&
                   !strcmp(a->name, b->name) && a->n_src == b->n_src &&
                   !memcmp(a->src, b->src, sizeof a->src[0] * (size_t)a->n_src) &&
                   a->out.c == b->out.c && a->out.h == b->out.h && a->out.w == b->out.w, "node %d differs", i);
            if (a->op == YQ_OP_CONV) CHECK(!memcmp(&a->p.conv, &b->p.conv, sizeof a->p.conv) && a->n_w == b->n_w);
            if (a->op == YQ_OP_MAXPOOL) CHECK(!memcmp(&a->p.pool, &b->p.pool, sizeof a->p.pool));
            if (a->op == YQ_OP_ROUTE) CHECK(!memcmp(&a->p.route, &b->p.route, sizeof a->p.route));
            if (a->op == YQ_OP_UPSAMPLE) CHECK(a->p.up.stride == b->p.up.stride);
            if (a->op == YQ_OP_YOLO) CHECK(!memcmp(&a->p.head, &b->p.head, sizeof a->p.head));
            const yq_qnode *qa = &g->q[i], *qb = &h->q[i];
            CHECKF(qa->dtype == qb->dtype && qa->float_op == qb->float_op && qa->scale == qb->scale &&
                   qa->thresh == qb->thresh && qa->qmin == qb->qmin && qa->qmax == qb->qmax, "qnode %d differs", i);
            if (a->op == YQ_OP_SHORTCUT)
                CHECK(!memcmp(&qa->sa, &qb->sa, sizeof qa->sa) && !memcmp(&qa->sb, &qb->sb, sizeof qa->sb) &&
                      !memcmp(&qa->sneg, &qb->sneg, sizeof qa->sneg));
            if (a->op == YQ_OP_CONV && qa->float_op) {
                n_float_conv++;
                CHECK(b->w && b->b && !qb->wq);
                /* the weights the conv runs with (fp16w: the rounded copy), and its precision */
                CHECK(!memcmp(yq_conv_weights(a, qa), b->w, sizeof(float) * (size_t)a->n_w));
                int want16 = v == 1 && a->p.conv.groups == 1;   /* fp16w where asked (not grouped) */
                CHECKF(qa->fp16w == qb->fp16w && qa->fp16w == want16,
                       "node %d: precision fp16w %d, loaded %d", i, qa->fp16w, qb->fp16w);
                for (long k = 0; qa->fp16w && k < a->n_w; k++) CHECK(yq_is_fp16(b->w[k]));
                CHECK(!memcmp(a->b, b->b, sizeof(float) * (size_t)a->p.conv.filters));
            } else if (a->op == YQ_OP_CONV) {
                n_int8_conv++;
                int F = a->p.conv.filters;
                CHECKF(!b->w && !b->b, "node %d: float weights loaded for an int8 conv", i);
                CHECK(!memcmp(qa->wq, qb->wq, (size_t)a->n_w));
                CHECK(!memcmp(qa->bq, qb->bq, sizeof(int32_t) * (size_t)F));
                CHECK(!memcmp(qa->w_scale, qb->w_scale, sizeof(float) * (size_t)F));
                CHECK(!memcmp(qa->rq_pos, qb->rq_pos, sizeof(float) * (size_t)F));
                CHECK(!memcmp(qa->rq_neg, qb->rq_neg, sizeof(float) * (size_t)F));
                CHECK(!memcmp(qa->deq, qb->deq, sizeof(float) * (size_t)F));
                CHECKF(!qa->lut == !qb->lut && (!qa->lut || !memcmp(qa->lut, qb->lut, YQ_LUT_N)), "node %d: the table", i);
                n_table += qa->lut != NULL;
            }
        }
        CHECKF(n_float_conv >= 1 && n_int8_conv >= 1, "%s: %d float and %d int8 convs", variants[v].name,
               n_float_conv, n_int8_conv);
        CHECKF(n_table == (v == TABLE_VARIANT ? 2 : 0), "%s: %d tables", variants[v].name, n_table);
        CHECK(!memcmp(g->model_sha256, h->model_sha256, 32));
        CHECK(!strcmp(g->cfg_path, h->cfg_path) && !strcmp(g->weights_path, h->weights_path));
        CHECK(h->letter_box == g->letter_box);
        CHECK(h->n_class_names == 2 && !strcmp(h->class_names[0], "person") && !strcmp(h->class_names[1], "bicycle"));

        /* The same bits at every node. */
        long n_in = yq_shape_size(g->nodes[0].out) * 2;
        float *x = malloc(sizeof *x * (size_t)n_in);
        CHECK(x);
        fill_input(x, n_in);
        yq_plan *pa = run(g, x), *pb = run(h, x);
        free(x);
        for (int i = 0; i < g->n_nodes; i++) {
            const void *da = yq_plan_data(pa, i), *db = yq_plan_data(pb, i);
            CHECK(da && db);
            size_t bytes = (size_t)yq_shape_size(g->nodes[i].out) * 2 * (size_t)yq_dtype_size(yq_node_dtype(g, i));
            CHECKF(!memcmp(da, db, bytes), "%s: node %d (%s) output differs", variants[v].name, i, g->nodes[i].name);
        }
        yq_plan_free(pa);
        yq_plan_free(pb);

        /* The metadata. */
        char hex[65];
        for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", g->model_sha256[i]);
        CHECK(info->format_version == YQ_PACKAGE_VERSION);
        CHECK(!strcmp(info->yquant_version, YQ_VERSION));
        CHECKF(strlen(info->created) == 20 && info->created[10] == 'T' && info->created[19] == 'Z', "created '%s'", info->created);
        CHECK(!strcmp(info->model_sha256, hex));
        for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", m.calib_images_sha256[i]);
        CHECK(!strcmp(info->calib_images_sha256, hex));
        CHECK(!strcmp(info->qconfig_text, qtext) && strlen(qtext) > 20);
        CHECK(!strcmp(info->accuracy_json, ACC));
        CHECK(!strcmp(info->calib_method, "percentile:99.99"));
        CHECK(info->tuning_json && !strcmp(info->tuning_json, TUNE));
        CHECK(info->letterbox == 1 && info->calib_images == 80);
        CHECK(info->input_c == 3 && info->input_h == 32 && info->input_w == 32);
        CHECK(!strcmp(info->cfg_path, g->cfg_path));
        yq_package_info_free(info);
        yq_graph_free(h);
        yq_graph_free(g);
        CHECK(remove(path) == 0);
    }
}

/* A package made and read in memory (yq_package_image, yq_package_load_mem,
 * yq_model_open_mem): the bytes of the file yq_package_write writes, to the byte; loaded,
 * the same bits at every node as the file gives; no file or temporary made; damaged
 * bytes (truncated, a flipped byte, not HDF5 at all) refused in one line naming the
 * package, with no HDF5 identifier left open. */
static void t_memory(void)
{
    yq_graph *g = make_graph(&variants[0]), *h = NULL, *hf = NULL;
    yq_package_meta m = make_meta();
    m.created_unix = 1764547200;       /* fixed: the same bytes twice */
    yq_error err = { 0 };
    const char *path = tpath("mem.yqp");
    int tmps = count_tmp();
    long ids = h5_ids();
    void *buf = NULL;
    size_t n = 0;
    CHECKF(yq_package_image("mem", g, &m, &buf, &n, &err) == YQ_OK && buf && n > 1000, "%s", err.msg);
    {                                   /* no name: the same bytes */
        void *b2 = NULL;
        size_t n2 = 0;
        CHECKF(yq_package_image(NULL, g, &m, &b2, &n2, &err) == YQ_OK && n2 == n && !memcmp(b2, buf, n), "%s", err.msg);
        free(b2);
    }
    CHECKF(count_tmp() == tmps, "the image made %d files", count_tmp() - tmps);
    CHECKF(yq_package_write(path, g, &m, &err) == YQ_OK, "%s", err.msg);
    long fn = file_size(path);
    unsigned char *fb = malloc((size_t)(fn > 0 ? fn : 1));
    FILE *f = fopen(path, "rb");
    CHECK(fb && f && fread(fb, 1, (size_t)fn, f) == (size_t)fn);
    fclose(f);
    CHECKF((size_t)fn == n && !memcmp(fb, buf, n), "image %zu bytes, file %ld bytes: they differ", n, fn);
    yq_package_info *info = NULL;
    CHECKF(yq_package_load_mem("mem", buf, n, &h, &info, &err) == YQ_OK, "%s", err.msg);
    CHECKF(yq_package_load(path, &hf, NULL, &err) == YQ_OK, "%s", err.msg);
    CHECK(info && !strcmp(info->qconfig_text, qtext) && info->calib_images == 80 && !strcmp(info->created, "2025-12-01T00:00:00Z"));
    CHECKF(h5_ids() == ids, "%ld HDF5 identifiers left open", h5_ids() - ids);
    long n_in = yq_shape_size(g->nodes[0].out) * 2;
    float *x = malloc(sizeof *x * (size_t)n_in);
    CHECK(x);
    fill_input(x, n_in);
    yq_plan *pa = run(hf, x), *pb = run(h, x);
    free(x);
    for (int i = 0; i < g->n_nodes; i++) {
        size_t bytes = (size_t)yq_shape_size(g->nodes[i].out) * 2 * (size_t)yq_dtype_size(yq_node_dtype(g, i));
        CHECKF(!memcmp(yq_plan_data(pa, i), yq_plan_data(pb, i), bytes), "node %d (%s) differs", i, g->nodes[i].name);
    }
    yq_plan_free(pa);
    yq_plan_free(pb);
    /* the public door: a model from the bytes */
    yq_model *mo = NULL;
    CHECKF(yq_model_open_mem(buf, n, "mem.yqp", &mo, &err) == YQ_OK && yq_model_is_int8(mo) && yq_model_letterbox(mo) == 1,
           "%s", err.msg);
    yq_model_free(mo);

    /* damaged bytes */
    struct { size_t len; long flip; const char *want; } bad[] = {
        { 0, -1, "not a yquant package" }, { 8, -1, "damaged" }, { 0, -1, "truncated" }, { 0, 0, "not a yquant package" },
    };
    bad[0].len = 7;
    bad[2].len = n / 2;
    bad[3].len = n;
    unsigned char *cp = malloc(n);
    CHECK(cp);
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        memcpy(cp, buf, n);
        if (bad[k].flip >= 0) cp[bad[k].flip] ^= 0x40;
        yq_graph *z = (yq_graph *)1;
        yq_status st = yq_package_load_mem("damaged.yqp", cp, bad[k].len, &z, NULL, &err);
        CHECKF(st == YQ_ERR_FORMAT && z == (yq_graph *)1 && strstr(err.msg, "damaged.yqp") && strstr(err.msg, bad[k].want) &&
               !strchr(err.msg, '\n'), "case %zu: status %d, %s", k, st, err.msg);
        CHECKF(h5_ids() == ids, "case %zu: %ld HDF5 identifiers left open", k, h5_ids() - ids);
        if (getenv("YQ_TEST_VERBOSE")) printf("     refused: %s\n", err.msg);
    }
    /* a byte flipped inside a dataset: the checksums catch it */
    memcpy(cp, buf, n);
    cp[n - 200] ^= 0x01;
    yq_graph *z = NULL;
    yq_status st = yq_package_load_mem("flipped.yqp", cp, n, &z, NULL, &err);
    CHECKF(st != YQ_OK && strstr(err.msg, "flipped.yqp") && !strchr(err.msg, '\n'), "status %d, %s", st, err.msg);
    yq_graph_free(z);
    CHECKF(h5_ids() == ids, "%ld HDF5 identifiers left open", h5_ids() - ids);
    CHECKF(count_tmp() == tmps, "%d files left", count_tmp() - tmps);
    free(cp);
    free(fb);
    free(buf);
    yq_package_info_free(info);
    yq_graph_free(h);
    yq_graph_free(hf);
    yq_graph_free(g);
    CHECK(remove(path) == 0);
}

/* Optional parts absent, meta NULL, info NULL. */
static void t_minimal(void)
{
    yq_graph *g = make_graph(&variants[0]), *h = NULL;
    g->class_names = NULL;
    g->n_class_names = 0;
    yq_error err = { 0 };
    const char *path = tpath("min.yqp");
    CHECKF(yq_package_write(path, g, NULL, &err) == YQ_OK, "%s", err.msg);
    yq_package_info *info = NULL;
    CHECKF(yq_package_load(path, &h, &info, &err) == YQ_OK, "%s", err.msg);
    CHECK(info->tuning_json == NULL && !strcmp(info->qconfig_text, "") && !strcmp(info->accuracy_json, ""));
    CHECK(h->class_names == NULL && h->n_class_names == 0);
    yq_package_info_free(info);
    yq_graph_free(h);
    h = NULL;
    CHECKF(yq_package_load(path, &h, NULL, &err) == YQ_OK, "%s", err.msg);
    CHECK(h && h->q);
    yq_graph_free(h);
    yq_graph_free(g);
    remove(path);
}

static void t_h5dump(void)
{
    if (system("command -v h5dump >/dev/null 2>&1") != 0) TEST_SKIP("h5dump not installed");
    yq_graph_free(write_pkg("dump.yqp"));
    char cmd[700];
    snprintf(cmd, sizeof cmd, "h5dump -H '%s' >/dev/null 2>&1", tpath("dump.yqp"));
    CHECK(system(cmd) == 0);
    /* The whole file, data included, reads too. */
    snprintf(cmd, sizeof cmd, "h5dump '%s' >/dev/null 2>&1", tpath("dump.yqp"));
    CHECK(system(cmd) == 0);
    remove(tpath("dump.yqp"));
}

static void t_version(void)
{
    yq_graph_free(write_pkg("v.yqp"));
    char p[512];
    snprintf(p, sizeof p, "%s", tpath("vx.yqp"));
    /* a newer one, and the two before the FP32 requantize (whose multipliers no kernel runs) */
    static const struct { int32_t v; const char *what; } cases[] = {
        { 6, "this yquant reads versions 3 to 5" },
        { 2, "holds the 64-bit requantize of an older yquant, which this one no longer runs: quantize the model again" },
        { 1, "holds the 64-bit requantize" },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        CHECK(copy_file(tpath("v.yqp"), p, -1) == 0);
        hid_t f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
        CHECK(f >= 0);
        hid_t a = H5Aopen(f, "format_version", H5P_DEFAULT);
        CHECK(a >= 0 && H5Awrite(a, H5T_NATIVE_INT32, &cases[k].v) >= 0);
        H5Aclose(a);
        CHECK(H5Fclose(f) >= 0);
        reseal(p);
        char want[64];
        snprintf(want, sizeof want, "package format version %d", (int)cases[k].v);
        expect_refused(p, YQ_ERR_UNSUPPORTED, want, cases[k].what);
        CHECK(yq_package_is(p) == 1);     /* still a package, just not one this yquant runs */
    }
    /* versions 3 and 4 (the same layout without tables, and without the detect heads' two
     * node fields): read as they are */
    for (int32_t v3 = 3; v3 <= 4; v3++) {
        CHECK(copy_file(tpath("v.yqp"), p, -1) == 0);
        hid_t f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
        hid_t a = H5Aopen(f, "format_version", H5P_DEFAULT);
        CHECK(f >= 0 && a >= 0 && H5Awrite(a, H5T_NATIVE_INT32, &v3) >= 0);
        H5Aclose(a);
        CHECK(H5Fclose(f) >= 0);
        reseal(p);
        yq_graph *g = NULL;
        yq_package_info *info = NULL;
        yq_error err = { 0 };
        CHECKF(yq_package_load(p, &g, &info, &err) == YQ_OK, "%s", err.msg);
        CHECK(info->format_version == v3);
        yq_package_info_free(info);
        yq_graph_free(g);
    }
    remove(p);
    remove(tpath("v.yqp"));
}

/* The activation table: required on an int8 table conv, refused on another conv, each
 * entry within the output's range. */
static void t_table_damaged(void)
{
    yq_graph *g = make_graph(&variants[TABLE_VARIANT]);
    yq_package_meta m = make_meta();
    yq_error err = { 0 };
    const char *src = tpath("tab.yqp"), *p = tpath("bad.yqp");
    CHECKF(yq_package_write(src, g, &m, &err) == YQ_OK, "%s", err.msg);
    CHECK(g->nodes[1].act == YQ_ACT_MISH && g->q[1].lut);

    CHECK(copy_file(src, p, -1) == 0);
    {
        hid_t f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
        CHECK(f >= 0 && H5Ldelete(f, "/quant/0/lut", H5P_DEFAULT) >= 0 && H5Fclose(f) >= 0);
        reseal(p);
    }
    expect_refused(p, YQ_ERR_FORMAT, "node 1 (conv_0)", "missing /quant/0/lut (an int8 mish conv needs its table)");

    CHECK(copy_file(src, p, -1) == 0);
    replace_array(p, "/quant/0/lut", H5T_STD_I8LE, YQ_LUT_N, -128);
    expect_refused(p, YQ_ERR_FORMAT, "node 1 (conv_0)", "/quant/0/lut[0] = -128 is outside the output range [-127, 127]");

    CHECK(copy_file(src, p, -1) == 0);
    replace_array(p, "/quant/0/lut", H5T_STD_I8LE, YQ_LUT_N - 1, 0);
    expect_refused(p, YQ_ERR_FORMAT, "node 1 (conv_0)", "/quant/0/lut");

    /* a table on the leaky conv of the tiny network */
    yq_graph_free(write_pkg("d.yqp"));
    CHECK(copy_file(tpath("d.yqp"), p, -1) == 0);
    {
        hid_t f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
        hsize_t n = YQ_LUT_N;
        int8_t *buf = calloc(YQ_LUT_N, 1);
        hid_t sp = H5Screate_simple(1, &n, NULL);
        hid_t d = H5Dcreate2(f, "/quant/0/lut", H5T_STD_I8LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        CHECK(f >= 0 && d >= 0 && H5Dwrite(d, H5T_NATIVE_INT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
        free(buf);
        H5Dclose(d); H5Sclose(sp);
        CHECK(H5Fclose(f) >= 0);
        reseal(p);
    }
    expect_refused(p, YQ_ERR_FORMAT, "node 1 (conv_0)", "unexpected /quant/0/lut (a leaky conv with s8 output has no table)");
    remove(p);
    remove(src);
    remove(tpath("d.yqp"));
    yq_graph_free(g);
}

/* Checksums: a flipped byte anywhere in a dataset's data is refused, naming the dataset; a
 * package without them is refused; random single-byte damage anywhere either is refused with one
 * line or leaves the weights exactly as written (the part of the file it hit is unused). */
static void t_checksums(void)
{
    yq_graph *g = write_pkg("c.yqp");
    const char *src = tpath("c.yqp"), *p = tpath("cbad.yqp");
    yq_error err = { 0 };
    yq_graph *h = NULL;
    yq_package_info *info = NULL;
    CHECKF(yq_package_load(src, &h, &info, &err) == YQ_OK, "%s", err.msg);
    CHECK(info->format_version == YQ_PACKAGE_VERSION && info->checksums == 1);
    yq_package_info_free(info);
    yq_graph_free(h);

    /* one byte of /quant/0/wq's stored values, found through HDF5, flipped in the file */
    hid_t f = H5Fopen(src, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, "/quant/0/wq", H5P_DEFAULT);
    haddr_t off = H5Dget_offset(d);
    H5Dclose(d);
    H5Fclose(f);
    CHECK(off != HADDR_UNDEF);
    long size = file_size(src);
    unsigned char *img = malloc((size_t)size);
    FILE *fp = fopen(src, "rb");
    CHECK(img && fp && fread(img, 1, (size_t)size, fp) == (size_t)size);
    fclose(fp);
    img[off + 5] ^= 0x10;
    fp = fopen(p, "wb");
    CHECK(fp && fwrite(img, 1, (size_t)size, fp) == (size_t)size && fclose(fp) == 0);
    img[off + 5] ^= 0x10;
    expect_refused(p, YQ_ERR_FORMAT, "damaged package", "/quant/0/wq does not match its checksum");

    /* changed through HDF5 without new checksums: an attribute */
    CHECK(copy_file(src, p, -1) == 0);
    f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t a = H5Aopen(f, "letterbox", H5P_DEFAULT);
    int32_t zero = 0;
    CHECK(a >= 0 && H5Awrite(a, H5T_NATIVE_INT32, &zero) >= 0);
    H5Aclose(a);
    CHECK(H5Fclose(f) >= 0);
    expect_refused(p, YQ_ERR_FORMAT, "damaged package", "/@letterbox does not match");

    /* without /checksums */
    CHECK(copy_file(src, p, -1) == 0);
    f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
    CHECK(f >= 0 && H5Ldelete(f, "checksums", H5P_DEFAULT) >= 0 && H5Fclose(f) >= 0);
    expect_refused(p, YQ_ERR_FORMAT, "damaged package", "/checksums is missing");

    /* random damage: 300 single-byte changes at random places */
    uint32_t rs = 99;
    int refused = 0, loaded = 0;
    for (int t = 0; t < 300; t++) {
        rs = rs * 1664525u + 1013904223u;
        long at = (long)(rs % (uint32_t)size);
        unsigned char old = img[at];
        img[at] = (unsigned char)(old ^ (1u + (rs >> 24) % 255u));
        fp = fopen(p, "wb");
        CHECK(fp && fwrite(img, 1, (size_t)size, fp) == (size_t)size && fclose(fp) == 0);
        img[at] = old;
        h = NULL;
        long ids = h5_ids();
        yq_status st = yq_package_load(p, &h, NULL, &err);
        CHECKF(h5_ids() == ids, "byte %ld: %ld HDF5 identifiers left open", at, h5_ids() - ids);
        if (st != YQ_OK) {
            CHECKF(err.msg[0] && !strchr(err.msg, '\n'), "byte %ld: %s", at, err.msg);
            if (getenv("YQ_TEST_VERBOSE")) printf("     byte %ld: %s\n", at, err.msg);
            refused++;
            continue;
        }
        loaded++;
        for (int i = 1; i < g->n_nodes; i++) {
            if (g->nodes[i].op != YQ_OP_CONV || g->q[i].float_op) continue;
            CHECKF(!memcmp(h->q[i].wq, g->q[i].wq, (size_t)g->nodes[i].n_w), "byte %ld: node %d's weights changed and loaded", at, i);
            CHECKF(!memcmp(h->q[i].bq, g->q[i].bq, sizeof *g->q[i].bq * (size_t)g->nodes[i].p.conv.filters),
                   "byte %ld: node %d's bias changed and loaded", at, i);
        }
        yq_graph_free(h);
    }
    if (getenv("YQ_TEST_VERBOSE")) printf("     random damage: %d refused, %d loaded unchanged\n", refused, loaded);
    CHECK(refused > 200);
    free(img);
    remove(p);
    remove(src);
    yq_graph_free(g);
}

/* A full disk while writing (RLIMIT_FSIZE: writes past the limit fail, as on a full disk):
 * one line, no package, no temporary, and the process exits cleanly (HDF5's exit handler
 * once crashed on the half-closed file). */
static void t_disk_full(void)
{
    yq_graph *g = make_graph(&variants[0]);
    yq_package_meta m = make_meta();
    const char *p = tpath("full.yqp");
    pid_t pid = test_fork_fsize(8192);
    if (pid == 0) {
        yq_error err = { 0 };
        yq_status st = yq_package_write(p, g, &m, &err);
        int ok = st == YQ_ERR_IO && strstr(err.msg, p) && !strchr(err.msg, '\n') && !exists(p) && count_tmp() == 0;
        if (!ok) fprintf(stderr, "disk full: status %d: %s\n", st, err.msg);
        yq_graph_free(g);
        exit(ok ? 0 : 3);             /* exit(): HDF5's atexit handler runs */
    }
    TEST_CHILD_OK(pid);
    yq_graph_free(g);
}

static void t_truncated(void)
{
    yq_graph_free(write_pkg("t.yqp"));
    const char *p = tpath("half.yqp");
    long n = file_size(tpath("t.yqp"));
    CHECK(n > 1000 && copy_file(tpath("t.yqp"), p, n / 2) == 0 && file_size(p) == n / 2);
    expect_refused(p, YQ_ERR_FORMAT, "truncated", NULL);
    CHECK(yq_package_is(p) == 0);
    /* Only the signature left. */
    CHECK(copy_file(tpath("t.yqp"), p, 8) == 0);
    expect_refused(p, YQ_ERR_FORMAT, "damaged", NULL);
    remove(p);
    remove(tpath("t.yqp"));
}

/* A dataset one element short, and other damage a writer would never make. */
static void t_damaged(void)
{
    yq_graph *g = write_pkg("d.yqp");
    const char *src = tpath("d.yqp"), *p = tpath("bad.yqp");
    int conv0 = 1;
    CHECK(g->nodes[conv0].op == YQ_OP_CONV && !g->q[conv0].float_op);
    long nw = g->nodes[conv0].n_w;
    int F = g->nodes[conv0].p.conv.filters;

    CHECK(copy_file(src, p, -1) == 0);
    replace_array(p, "/quant/0/wq", H5T_STD_I8LE, (hsize_t)nw - 1, 1);
    expect_refused(p, YQ_ERR_FORMAT, "node 1 (conv_0)", "/quant/0/wq has 107 values, expected 108");

    CHECK(copy_file(src, p, -1) == 0);
    replace_array(p, "/quant/0/rq_pos", H5T_IEEE_F32LE, (hsize_t)F, -5);
    expect_refused(p, YQ_ERR_FORMAT, "node 1 (conv_0)", "/quant/0/rq_pos[0] = -5 (must be finite and >= 0)");

    CHECK(copy_file(src, p, -1) == 0);
    replace_array(p, "/quant/0/rq_neg", H5T_STD_I32LE, (hsize_t)F, 1);
    expect_refused(p, YQ_ERR_FORMAT, "node 1 (conv_0)", "rq_neg");

    CHECK(copy_file(src, p, -1) == 0);
    replace_array(p, "/quant/0/bq", H5T_STD_I32LE, (hsize_t)F + 1, 0);
    expect_refused(p, YQ_ERR_FORMAT, "node 1 (conv_0)", "/quant/0/bq");

    CHECK(copy_file(src, p, -1) == 0);          /* wq stored as int32: another type */
    replace_array(p, "/quant/0/wq", H5T_STD_I32LE, (hsize_t)nw, 1);
    expect_refused(p, YQ_ERR_FORMAT, "node 1 (conv_0)", "wq");

    CHECK(copy_file(src, p, -1) == 0);          /* a float conv's bias missing */
    {
        hid_t f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
        CHECK(f >= 0 && H5Ldelete(f, "/quant/6/b", H5P_DEFAULT) >= 0 && H5Fclose(f) >= 0);
        reseal(p);
    }
    expect_refused(p, YQ_ERR_FORMAT, "node 7 (conv_6)", "/quant/6/b");

    CHECK(copy_file(src, p, -1) == 0);          /* an input that does not precede */
    patch_field(p, "/graph/nodes", "src", 4, 1, 6);
    expect_refused(p, YQ_ERR_FORMAT, "node 4 (shortcut_3)", "does not precede");

    CHECK(copy_file(src, p, -1) == 0);          /* a stored shape shape inference disagrees with */
    patch_field(p, "/graph/nodes", "out_c", 3, 0, 5);
    expect_refused(p, YQ_ERR_FORMAT, "node 3 (conv_2)", "shape inference");

    CHECK(copy_file(src, p, -1) == 0);          /* a conv too wide for its weights */
    patch_field(p, "/graph/nodes", "conv_filters", 1, 0, 8);
    expect_refused(p, YQ_ERR_FORMAT, "node 1 (conv_0)", NULL);

    CHECK(copy_file(src, p, -1) == 0);
    patch_field(p, "/graph/nodes", "n_src", 5, 0, 17);
    expect_refused(p, YQ_ERR_FORMAT, "node 5 (route_4)", "inputs");

    CHECK(copy_file(src, p, -1) == 0);
    patch_field(p, "/graph/nodes", "head_mask", 8, 2, 7);
    expect_refused(p, YQ_ERR_FORMAT, "node 8 (yolo_7)", "mask");

    CHECK(copy_file(src, p, -1) == 0);
    patch_field(p, "/quant/nodes", "scale", 2, 0, -1.0);
    expect_refused(p, YQ_ERR_FORMAT, "node 2 (maxpool_1)", "scale");

    CHECK(copy_file(src, p, -1) == 0);
    patch_field(p, "/quant/nodes", "scale", 2, 0, NAN);
    expect_refused(p, YQ_ERR_FORMAT, "node 2 (maxpool_1)", "scale");

    CHECK(copy_file(src, p, -1) == 0);
    patch_field(p, "/quant/nodes", "add_b", 4, 0, -0.5);
    expect_refused(p, YQ_ERR_FORMAT, "node 4 (shortcut_3)", "add scales");

    CHECK(copy_file(src, p, -1) == 0);
    patch_field(p, "/quant/nodes", "add_a", 4, 0, INFINITY);
    expect_refused(p, YQ_ERR_FORMAT, "node 4 (shortcut_3)", "add scales");

    CHECK(copy_file(src, p, -1) == 0);
    patch_field(p, "/quant/nodes", "add_neg", 4, 0, 1.5);
    expect_refused(p, YQ_ERR_FORMAT, "node 4 (shortcut_3)", "negative factor 1.5 (0 to 1)");

    CHECK(copy_file(src, p, -1) == 0);
    patch_field(p, "/quant/nodes", "qmax", 3, 0, 300);
    expect_refused(p, YQ_ERR_FORMAT, "node 3 (conv_2)", "range");

    CHECK(copy_file(src, p, -1) == 0);          /* an op name this reader does not know */
    patch_str(p, "/graph/nodes", "op", 16, 2, "avgpool");
    expect_refused(p, YQ_ERR_FORMAT, "node 2 (maxpool_1)", "unknown op 'avgpool'");

    CHECK(copy_file(src, p, -1) == 0);
    patch_str(p, "/quant/nodes", "dtype", 4, 3, "s16");
    expect_refused(p, YQ_ERR_FORMAT, "node 3 (conv_2)", "dtype 's16'");

    CHECK(copy_file(src, p, -1) == 0);          /* a head that would hand int8 to the decoder */
    patch_field(p, "/quant/nodes", "float_op", 8, 0, 0);
    patch_str(p, "/quant/nodes", "dtype", 4, 8, "s8");
    expect_refused(p, YQ_ERR_FORMAT, "node 8 (yolo_7)", "head");

    remove(p);
    remove(src);
    yq_graph_free(g);
}

static void t_not_package(void)
{
    const char *p = tpath("nope.yqp");
    FILE *f = fopen(p, "w");
    CHECK(f && fputs("[net]\nwidth=32\n", f) >= 0 && fclose(f) == 0);
    expect_refused(p, YQ_ERR_FORMAT, "not an HDF5 file", NULL);
    CHECK(yq_package_is(p) == 0);
    /* An HDF5 file of something else. */
    hid_t h = H5Fcreate(p, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(h >= 0 && H5Fclose(h) >= 0);
    expect_refused(p, YQ_ERR_FORMAT, "not a yquant package", NULL);
    CHECK(yq_package_is(p) == 0);
    remove(p);
    expect_refused(tpath("missing.yqp"), YQ_ERR_IO, "cannot open", NULL);
    CHECK(yq_package_is(tpath("missing.yqp")) == 0);
}

static void t_write_failures(void)
{
    yq_graph *g = make_graph(&variants[0]);
    yq_package_meta m = make_meta();
    yq_error err = { 0 };

    /* Into a missing directory. */
    const char *p = tpath("no/such/dir/x.yqp");
    CHECK(yq_package_write(p, g, &m, &err) == YQ_ERR_IO);
    CHECKF(strstr(err.msg, p) && !strchr(err.msg, '\n'), "%s", err.msg);
    CHECK(!exists(p) && count_tmp() == 0);

    /* A failure halfway (an int8 conv without int8 weights): the existing
     * package stays as it was, no .tmp is left. */
    p = tpath("keep.yqp");
    CHECKF(yq_package_write(p, g, &m, &err) == YQ_OK, "%s", err.msg);
    long size = file_size(p);
    int8_t *wq = g->q[3].wq;
    CHECK(g->nodes[3].op == YQ_OP_CONV && wq);
    g->q[3].wq = NULL;
    CHECK(yq_package_write(p, g, &m, &err) == YQ_ERR_INVALID_ARG);
    CHECKF(strstr(err.msg, "conv_2"), "%s", err.msg);
    g->q[3].wq = wq;
    CHECK(count_tmp() == 0);
    CHECK(file_size(p) == size && yq_package_is(p) == 1);
    yq_graph *h = NULL;
    CHECKF(yq_package_load(p, &h, NULL, &err) == YQ_OK, "%s", err.msg);
    yq_graph_free(h);
    remove(p);

    /* A graph the loader would refuse (a NaN scale) is not published. */
    float sc = g->q[2].scale;
    g->q[2].scale = NAN;
    CHECK(yq_package_write(p, g, &m, &err) == YQ_ERR_INVALID_ARG);
    CHECKF(strstr(err.msg, "node 2 (maxpool_1)") && strstr(err.msg, "scale"), "%s", err.msg);
    g->q[2].scale = sc;
    CHECK(!exists(p) && count_tmp() == 0);

    /* The rename fails (a directory is in the way): no .tmp left. */
    p = tpath("isdir.yqp");
    CHECK(mkdir(p, 0700) == 0);
    char inner[600];
    snprintf(inner, sizeof inner, "%s/x", p);
    FILE *f = fopen(inner, "w");
    CHECK(f && fclose(f) == 0);
    CHECK(yq_package_write(p, g, &m, &err) == YQ_ERR_IO);
    CHECKF(strstr(err.msg, "is a folder"), "%s", err.msg);
    CHECK(count_tmp() == 0);
    remove(inner);
    rmdir(p);

    /* An FP32 graph is not a package. */
    yq_qnode *q = g->q;
    g->q = NULL;
    CHECK(yq_package_write(tpath("fp.yqp"), g, &m, &err) == YQ_ERR_INVALID_ARG);
    g->q = q;
    CHECK(!exists(tpath("fp.yqp")) && count_tmp() == 0);
    yq_graph_free(g);
}

/* The shared models (real weights; the cfg-only ones with synthetic weights):
 * the loaded package runs bit-identically to the graph it was written from.
 * Prints each package's size beside the float weights'. */
static void t_real_models(void)
{
    static const char *models[][2] = {
        { "yolo-fastest-1.0", NULL }, { "yolo-fastest-1.1", NULL }, { "yolo-fastest-1.1-xl", NULL },
        { "yolo-fastest-xl-1.0", NULL }, { "yolo-lite-coco-trial6", NULL },
        { "cfg-only/yolov3-tiny.cfg", "synthetic:1" }, { "cfg-only/yolov4-tiny.cfg", "synthetic:1" },
    };
    int done = 0;
    for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) {
        char dir[512];
        snprintf(dir, sizeof dir, "%s/models/%s", test_data_dir(), models[k][0]);
        if (!exists(dir)) continue;
        yq_model_paths mp;
        yq_error err = { 0 };
        CHECKF(yq_model_resolve(dir, models[k][1], &mp, &err) == YQ_OK, "%s", err.msg);
        yq_import_opt opt = { 0 };
        opt.synthetic = mp.synthetic;
        opt.seed = mp.seed;
        yq_graph *g = NULL, *h = NULL;
        CHECKF(yq_darknet_load(mp.cfg, mp.synthetic ? NULL : mp.weights, &opt, &g, &err) == YQ_OK, "%s", err.msg);
        static yq_qconfig qc;
        yq_qconfig_defaults(&qc);
        CHECKF(test_rewrite(&g, NULL, &qc, &err) == YQ_OK, "%s", err.msg);
        const char *p = tpath("real.yqp");
        CHECKF(yq_package_write(p, g, NULL, &err) == YQ_OK, "%s", err.msg);
        CHECKF(yq_package_load(p, &h, NULL, &err) == YQ_OK, "%s", err.msg);
        long n_in = yq_shape_size(g->nodes[0].out);
        float *x = malloc(sizeof *x * (size_t)n_in);
        CHECK(x);
        fill_input(x, n_in);
        yq_plan *pa = NULL, *pb = NULL;
        CHECKF(yq_plan_new(g, 1, YQ_PLAN_KEEP_ALL, &pa, &err) == YQ_OK && yq_exec_int8(pa, x, NULL, NULL, &err) == YQ_OK, "%s", err.msg);
        CHECKF(yq_plan_new(h, 1, YQ_PLAN_KEEP_ALL, &pb, &err) == YQ_OK && yq_exec_int8(pb, x, NULL, NULL, &err) == YQ_OK, "%s", err.msg);
        free(x);
        for (int i = 0; i < g->n_nodes; i++) {
            size_t bytes = (size_t)yq_shape_size(g->nodes[i].out) * (size_t)yq_dtype_size(yq_node_dtype(g, i));
            CHECKF(!memcmp(yq_plan_data(pa, i), yq_plan_data(pb, i), bytes), "%s: node %d differs", models[k][0], i);
        }
        long params = 0;
        for (int i = 0; i < g->n_nodes; i++) params += yq_node_params(&g->nodes[i]);
        printf("     %-26s %4d nodes, package %8.1f KB, float weights %8.1f KB\n", models[k][0], g->n_nodes,
               (double)file_size(p) / 1024, (double)params * 4 / 1024);
        yq_plan_free(pa);
        yq_plan_free(pb);
        yq_graph_free(h);
        yq_graph_free(g);
        remove(p);
        done++;
    }
    if (!done) TEST_SKIP("no models under %s/models", test_data_dir());
}

/* runtime/h5util: the helpers the package and the calibration cache share, on an
 * in-memory file: attributes written and read back with their types, absent and
 * malformed ones told apart, a failed write's HDF5 message captured, hex both ways. */
static void t_h5util(void)
{
    uint8_t b[4] = { 0x00, 0x9f, 0xa0, 0xff }, back[4] = { 1, 1, 1, 1 };
    char hex[9];
    yq_hex_encode(b, 4, hex);
    CHECK(!strcmp(hex, "009fa0ff"));
    CHECK(yq_hex_decode("009FA0ff", back, 4) == 1 && !memcmp(back, b, 4));
    memset(back, 7, sizeof back);
    CHECK(yq_hex_decode("009fa0f", back, 4) == 0 && back[0] == 7);    /* odd length */
    CHECK(yq_hex_decode("009fa0fg", back, 4) == 0 && back[0] == 7);   /* not hex: b untouched */
    CHECK(yq_hex_decode("009fa0ff00", back, 4) == 0);

    yq_h5mem m = { 0 };
    hid_t fa = yq_h5mem_fapl(&m);
    CHECK(fa >= 0);
    hid_t f = H5Fcreate(YQ_H5MEM_NAME, H5F_ACC_TRUNC, H5P_DEFAULT, fa);
    CHECK(f >= 0);
    char why[YQ_H5_WHY] = "";
    CHECK(yq_h5_attr_put_int(f, "n", -42, why) == 0);
    CHECK(yq_h5_attr_put_str(f, "s", "yquant", why) == 0);
    CHECK(yq_h5_attr_put_str(f, "empty", NULL, why) == 0);
    float x = 1.5f;
    CHECK(yq_h5_attr_put(f, "x", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, &x, why) == 0);
    int v = 0;
    CHECK(yq_h5_attr_get_int(f, "n", &v) == 1 && v == -42);
    v = 5;
    CHECK(yq_h5_attr_get_int(f, "absent", &v) == 0 && v == 5);
    CHECK(yq_h5_attr_get_int(f, "x", &v) == -1 && v == 5);            /* a float: not an integer */
    CHECK(yq_h5_attr_get_int(f, "s", &v) == -1);
    /* the types as written: a little-endian int32, a NUL-terminated string of its length */
    hid_t a = H5Aopen(f, "n", H5P_DEFAULT), t = H5Aget_type(a);
    CHECK(H5Tequal(t, H5T_STD_I32LE) > 0);
    H5Tclose(t);
    H5Aclose(a);
    a = H5Aopen(f, "s", H5P_DEFAULT);
    t = H5Aget_type(a);
    CHECK(H5Tget_class(t) == H5T_STRING && H5Tget_size(t) == 7 && H5Tget_strpad(t) == H5T_STR_NULLTERM);
    H5Tclose(t);
    H5Aclose(a);
    /* a second attribute of the same name fails, with HDF5's own words */
    int r;
    H5E_BEGIN_TRY { r = yq_h5_attr_put_int(f, "n", 1, why); } H5E_END_TRY;
    CHECKF(r == -1 && why[0] && strcmp(why, "HDF5 error"), "why: '%s'", why);
    printf("# a second attribute 'n': %s\n", why);
    H5Fclose(f);
    H5Pclose(fa);
    CHECK(yq_h5mem_image(&m) > 0);
    yq_h5mem_free(&m);
    /* nothing on the stack: the fallback */
    H5Eclear2(H5E_DEFAULT);
    CHECK(!strcmp(yq_h5_why(why), "HDF5 error"));
}

int main(void)
{
    H5dont_atexit();     /* as the yquant program: see cli/yquant.c */
    H5open();
    snprintf(tmpdir, sizeof tmpdir, "/tmp/yq_package_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        printf("FAIL test_package: cannot create a temporary directory\n");
        return 1;
    }
    TEST(t_h5util);
    TEST(t_roundtrip);
    TEST(t_memory);
    TEST(t_minimal);
    TEST(t_h5dump);
    TEST(t_version);
    TEST(t_table_damaged);
    TEST(t_checksums);
    TEST(t_disk_full);
    TEST(t_truncated);
    TEST(t_damaged);
    TEST(t_not_package);
    TEST(t_write_failures);
    TEST(t_real_models);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) printf("warning: could not remove %s\n", tmpdir);
    return test_done();
}
