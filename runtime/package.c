/* The int8 deploy package: writer and validating loader.
 *
 * Layout of a .yqp file (HDF5), format version 5 (YQ_PACKAGE_VERSION):
 *
 *   /                      root attributes
 *     format               string  "yquant-package"
 *     format_version       int32   5 (4: the same without the detect heads' two fields,
 *                                  3: without activation tables either, both read as is; 1 and 2, written before the FP32 requantize of
 *                                  ir/requant.h, held 64-bit multipliers and shifts: refused,
 *                                  with a message to quantize again)
 *     yquant_version       string  YQ_VERSION of the writer
 *     created              string  ISO 8601 UTC, "2026-11-30T12:34:56Z"
 *     model_sha256         string  64 hex digits: sha256 of cfg bytes || weights bytes
 *     calib_images_sha256  string  64 hex digits, from the caller
 *     cfg_path, weights_path  string  where the source model was (provenance only)
 *     letterbox            int32   the preprocessing the accuracy was measured with
 *     net_letter_box       int32   the cfg's [net] letter_box (yq_graph.letter_box; 2: Ultralytics' letterbox, ONNX models)
 *     input_c, input_h, input_w  int32  the network input (= node 0's shape)
 *   /graph/nodes           compound[n_nodes], one row per node in execution
 *                          (topological) order; row k is node k, node 0 the input:
 *     name string[32], op string[16] (yq_op_name: "input", "conv", ...),
 *     act string[16] (yq_act_name: "linear", "leaky", ...), layer, line, n_src,
 *     src int32[16] (node ids < k; unused entries 0), out_c, out_h, out_w,
 *     conv_filters, conv_size, conv_stride, conv_pad, conv_groups, conv_batch_normalize,
 *     pool_size, pool_stride, pool_pad, route_groups, route_group_id, up_stride,
 *     head_classes, head_num, head_coords, head_n_mask, head_mask int32[32],
 *     head_anchors float[64], head_scale_x_y float, head_new_coords, head_softmax,
 *     head_reg_max, head_stride (version 5: "detect" heads, ONNX imports)
 *     (all int32 unless said; the parameters of other ops are 0)
 *   /quant/nodes           compound[n_nodes], the yq_qnode scalars of node k:
 *     dtype string[4] ("f32" | "s8" | "u8"), float_op, scale float, thresh float,
 *     qmin, qmax, add_a, add_b, add_neg float (the last three: int8 shortcuts, the
 *     scales of yq_add_requant; else 0)
 *   /quant/<layer>/        one group per conv, named by its darknet layer index:
 *     int8 conv (float_op 0):  wq int8[n_w], bq int32[F], w_scale float[F],
 *                              rq_pos, rq_neg float[F] (the FP32 requantize scales of
 *                              ir/requant.h for accumulators >= 0 and < 0),
 *                              deq float[F],
 *                              lut int8[YQ_LUT_N] when the activation is a table
 *                              (mish, swish, logistic with an int8 output; required
 *                              there, refused elsewhere): yq_requant_out's outputs,
 *                              each in [qmin, qmax]
 *     float conv (float_op 1): w float[n_w], b float[F], precision string: "fp16w" (w are
 *                              FP16 values, FP32 arithmetic: every engine runs exactly that)
 *                              or "fp32"; absent in packages written before it: fp32
 *     where F = filters and n_w = F * (in_c / groups) * size * size; in_c comes
 *     from shape inference on the graph, and w is [F][in_c/groups][size][size].
 *   /class_names           string[n], optional
 *   /qconfig               string (scalar): yq_qconfig_str's text, as resolved: the measured
 *                          choices (keep_float's skips, thresh_search's thresholds) written in,
 *                          so that a rewrite with it reproduces the graph
 *   /request               string (scalar), optional: the qconfig as asked (keep_float N and
 *                          thresh_search N still unresolved)
 *   /plan                  string (scalar), optional: JSON, the rewrite's per-node decisions
 *                          and why (pipeline/quantize.h, yq_pipe_plan_json)
 *   /checksums             compound[n]: object string[160] ("/quant/12/wq", "/@format"),
 *                          sha256 string[65] (hex) of every other dataset and attribute
 *                          (see "checksums" below); verified by the loader before anything
 *   /calibration/thresh    float[n_nodes], the calibrated threshold per node;
 *                          attributes method (string) and images (int32)
 *   /accuracy              string (scalar): JSON from the caller
 *   /tuning                string (scalar): JSON, optional: free-form notes on tuning
 *   /kernels/choices       compound[n], optional: the per-layer kernel choices of
 *                          `yquant tune` (yq_tuned_kernel), one row per (node, batch, sm):
 *     node int32 (a conv node id), batch int32 (the session batch it was tuned at),
 *     sm int32 (compute capability, major*10+minor), cfg string[32] (a kernel
 *     configuration name, yq_conv_cfg_name), us float, default_us float (measured
 *     time of one run of the conv: the choice, the untuned default; 0 unknown).
 *     The loader refuses a name no build knows, a node that is not a conv, an
 *     int8 kernel on a conv kept in float (or the reverse), and duplicate rows.
 *
 * The loader checks everything before use: format and version first, then each
 * node's op, activation, parameters and sources, then shape inference on the
 * rebuilt graph must give each stored output shape, then every array's type and
 * length against that shape, then values (scales finite and > 0, shifts in
 * [0, 62], multipliers >= 0, ranges that fit the dtype).  Parameters of other
 * ops in a row (a conv row's pool_size) are ignored.  The writer loads its
 * own file back before publishing it.
 *
 * Numbers are little-endian in the file whatever the host.  Strings are fixed
 * length; the loader also accepts variable-length ones (h5py writes those).
 * The float weights of int8 convs are not stored: the package is int8.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <hdf5.h>
#include <openssl/evp.h>
#include "ir/fsio.h"
#include "runtime/h5mem.h"
#include "runtime/h5util.h"
#include "ir/half.h"
#include "ir/requant.h"
#include "kernels/cuda.h"
#include "runtime/package.h"

#define FORMAT_NAME  "yquant-package"
#define MAX_NODES    65536
#define MAX_PARAM    4096         /* kernel size, stride, pad */
#define MAX_CLASSES  65536
#define MAX_TEXT     (64L << 20)  /* a string dataset or attribute */

/* ---- the two compound records ------------------------------------------- */

typedef struct pk_node {
    char name[YQ_NAME_LEN];
    char op[16], act[16];
    int32_t layer, line, n_src, src[YQ_MAX_SRC];
    int32_t out_c, out_h, out_w;
    int32_t conv_filters, conv_size, conv_stride, conv_pad, conv_groups, conv_batch_normalize;
    int32_t pool_size, pool_stride, pool_pad;
    int32_t route_groups, route_group_id;
    int32_t up_stride;
    int32_t head_classes, head_num, head_coords, head_n_mask, head_mask[YQ_MAX_ANCH];
    float head_anchors[2 * YQ_MAX_ANCH], head_scale_x_y;
    int32_t head_new_coords, head_softmax;
    int32_t head_reg_max, head_stride;      /* (version 5) */
} pk_node;

typedef struct pk_qnode {
    char dtype[4];
    int32_t float_op;
    float scale, thresh;
    int32_t qmin, qmax;
    float add_a, add_b, add_neg;
} pk_qnode;

enum { K_I32, K_F32, K_STR };
typedef struct field { const char *name; size_t off; int kind; int n; } field;  /* n: array length or string size */

#define FN(f, k, n) { #f, offsetof(pk_node, f), k, n }
static const field node_fields[] = {
    FN(name, K_STR, YQ_NAME_LEN), FN(op, K_STR, 16), FN(act, K_STR, 16),
    FN(layer, K_I32, 1), FN(line, K_I32, 1), FN(n_src, K_I32, 1), FN(src, K_I32, YQ_MAX_SRC),
    FN(out_c, K_I32, 1), FN(out_h, K_I32, 1), FN(out_w, K_I32, 1),
    FN(conv_filters, K_I32, 1), FN(conv_size, K_I32, 1), FN(conv_stride, K_I32, 1),
    FN(conv_pad, K_I32, 1), FN(conv_groups, K_I32, 1), FN(conv_batch_normalize, K_I32, 1),
    FN(pool_size, K_I32, 1), FN(pool_stride, K_I32, 1), FN(pool_pad, K_I32, 1),
    FN(route_groups, K_I32, 1), FN(route_group_id, K_I32, 1), FN(up_stride, K_I32, 1),
    FN(head_classes, K_I32, 1), FN(head_num, K_I32, 1), FN(head_coords, K_I32, 1),
    FN(head_n_mask, K_I32, 1), FN(head_mask, K_I32, YQ_MAX_ANCH),
    FN(head_anchors, K_F32, 2 * YQ_MAX_ANCH), FN(head_scale_x_y, K_F32, 1),
    FN(head_new_coords, K_I32, 1), FN(head_softmax, K_I32, 1),
    FN(head_reg_max, K_I32, 1), FN(head_stride, K_I32, 1),     /* (last: not in version 4 and 3) */
};
#undef FN
#define NODE_FIELDS_V4 (NFIELDS(node_fields) - 2)
typedef struct pk_kernel {
    int32_t node, batch, sm;
    char cfg[32];
    float us, default_us;
} pk_kernel;

#define FQ(f, k, n) { #f, offsetof(pk_qnode, f), k, n }
static const field qnode_fields[] = {
    FQ(dtype, K_STR, 4), FQ(float_op, K_I32, 1), FQ(scale, K_F32, 1), FQ(thresh, K_F32, 1),
    FQ(qmin, K_I32, 1), FQ(qmax, K_I32, 1), FQ(add_a, K_F32, 1), FQ(add_b, K_F32, 1),
    FQ(add_neg, K_F32, 1),
};
#undef FQ
#define FK(f, k, n) { #f, offsetof(pk_kernel, f), k, n }
static const field kernel_fields[] = {
    FK(node, K_I32, 1), FK(batch, K_I32, 1), FK(sm, K_I32, 1), FK(cfg, K_STR, 32),
    FK(us, K_F32, 1), FK(default_us, K_F32, 1),
};
#undef FK
#define NFIELDS(a) ((int)(sizeof a / sizeof a[0]))

static hid_t member_type(const field *f, int file)
{
    if (f->kind == K_STR) return yq_h5_str_type((size_t)f->n);
    hid_t base = f->kind == K_I32 ? (file ? H5T_STD_I32LE : H5T_NATIVE_INT32) : (file ? H5T_IEEE_F32LE : H5T_NATIVE_FLOAT);
    if (f->n == 1) return H5Tcopy(base);
    hsize_t d = (hsize_t)f->n;
    return H5Tarray_create2(base, 1, &d);
}

/* The compound type of a record: in memory (the struct's layout, native types)
 * or in the file (packed, little-endian).  -1 on failure. */
static hid_t compound_type(const field *fs, int nf, size_t mem_size, int file)
{
    hid_t mt[64];
    size_t total = 0;
    int k;
    for (k = 0; k < nf; k++) {
        mt[k] = member_type(&fs[k], file);
        if (mt[k] < 0) break;
        total += H5Tget_size(mt[k]);
    }
    hid_t t = -1;
    if (k == nf) {
        t = H5Tcreate(H5T_COMPOUND, file ? total : mem_size);
        size_t off = 0;
        for (int i = 0; t >= 0 && i < nf; i++) {
            if (H5Tinsert(t, fs[i].name, file ? off : fs[i].off, mt[i]) < 0) { H5Tclose(t); t = -1; }
            off += H5Tget_size(mt[i]);
        }
    }
    for (int i = 0; i < k; i++) H5Tclose(mt[i]);
    return t;
}

/* ---- small helpers ------------------------------------------------------ */

static int op_from_name(const char *s)
{
    for (int k = 0; k < YQ_OP_COUNT; k++) if (!strcmp(s, yq_op_name((yq_op)k))) return k;
    return -1;
}
static int act_from_name(const char *s)
{
    for (int k = 0; k < YQ_ACT_COUNT; k++) if (!strcmp(s, yq_act_name((yq_act)k))) return k;
    return -1;
}
static const char *dtype_name(yq_dtype t) { return t == YQ_S8 ? "s8" : t == YQ_U8 ? "u8" : "f32"; }
static int dtype_from_name(const char *s)
{
    return !strcmp(s, "f32") ? YQ_F32 : !strcmp(s, "s8") ? YQ_S8 : !strcmp(s, "u8") ? YQ_U8 : -1;
}

/* Expected weight count of conv node n (shapes already inferred); -1 beyond 2^31. */
static long conv_n_w(const yq_graph *g, const yq_node *n)
{
    yq_shape is = yq_node_in_shape(g, n);
    const yq_conv_p *c = &n->p.conv;
    if (c->groups < 1) return -1;
    double v = (double)c->filters * (is.c / c->groups) * c->size * c->size;
    return v > 2147483647.0 ? -1 : (long)v;
}

/* ---- checksums ---------------------------------------------------------- */
/* /checksums lists every dataset and attribute of the file but itself, by name ("/quant/12/wq",
 * "/@format", "/calibration@method"), with the sha256 of its value read in its own file
 * type: the bytes as stored (little-endian), whatever the host and the struct layout.  A
 * variable-length string (h5py writes those) counts as its characters.  The loader
 * recomputes the list: a changed byte, or an object added or removed, is refused by name. */

#define CK_NAME 160

typedef struct pk_check {
    char object[CK_NAME];
    char sha256[65];
} pk_check;

#define FC(f, k, n) { #f, offsetof(pk_check, f), k, n }
static const field check_fields_tab[] = { FC(object, K_STR, CK_NAME), FC(sha256, K_STR, 65) };
#undef FC

typedef struct cklist {
    pk_check *v;
    int n, cap;
    int failed;            /* an object could not be read */
    char bad[CK_NAME];     /* which */
} cklist;

static int ck_push(cklist *l, const char *name, const uint8_t sha[32])
{
    if (l->n == l->cap) {
        int nc = l->cap ? 2 * l->cap : 64;
        pk_check *v = realloc(l->v, sizeof *v * (size_t)nc);
        if (!v) return -1;
        l->v = v;
        l->cap = nc;
    }
    pk_check *c = &l->v[l->n++];
    memset(c, 0, sizeof *c);
    snprintf(c->object, sizeof c->object, "%s", name);
    yq_hex_encode(sha, 32, c->sha256);
    return 0;
}

/* sha256 of an object's value: a dataset (is_attr 0) or an attribute (1). */
static int ck_hash(hid_t obj, int is_attr, uint8_t sha[32])
{
    hid_t t = is_attr ? H5Aget_type(obj) : H5Dget_type(obj);
    hid_t sp = is_attr ? H5Aget_space(obj) : H5Dget_space(obj);
    hssize_t n = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    size_t es = t >= 0 ? H5Tget_size(t) : 0;
    int ok = t >= 0 && sp >= 0 && n >= 0 && es > 0 && (double)n * (double)es <= (double)(1L << 34);
    int vstr = ok ? H5Tis_variable_str(t) : 0;
    void *buf = NULL;
    hid_t mt = -1;
    if (ok && vstr > 0) {
        mt = H5Tcopy(H5T_C_S1);
        ok = mt >= 0 && H5Tset_size(mt, H5T_VARIABLE) >= 0;
        es = sizeof(char *);
    } else if (ok) {
        ok = vstr == 0 && H5Tdetect_class(t, H5T_VLEN) == 0 && H5Tget_class(t) != H5T_REFERENCE;
        mt = ok ? H5Tcopy(t) : -1;
        ok = ok && mt >= 0;
    }
    if (ok) ok = (buf = calloc((size_t)n ? (size_t)n : 1, es)) != NULL;
    if (ok) ok = (is_attr ? H5Aread(obj, mt, buf) : H5Dread(obj, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf)) >= 0;
    EVP_MD_CTX *mc = ok ? EVP_MD_CTX_new() : NULL;
    unsigned dl = 0;
    ok = ok && mc && EVP_DigestInit_ex(mc, EVP_sha256(), NULL);
    if (ok && vstr > 0) {
        char **sv = buf;
        for (hssize_t i = 0; ok && i < n; i++) ok = EVP_DigestUpdate(mc, sv[i] ? sv[i] : "", sv[i] ? strlen(sv[i]) + 1 : 1);
        if (sp >= 0 && mt >= 0) H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, buf);
    } else if (ok) {
        ok = EVP_DigestUpdate(mc, buf, (size_t)n * es);
    }
    ok = ok && EVP_DigestFinal_ex(mc, sha, &dl) && dl == 32;
    EVP_MD_CTX_free(mc);
    free(buf);
    if (mt >= 0) H5Tclose(mt);
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
    return ok ? 0 : -1;
}

typedef struct ckvisit { cklist *l; const char *obj; } ckvisit;

static herr_t ck_attr(hid_t loc, const char *name, const H5A_info_t *ai, void *ctx)
{
    (void)ai;
    ckvisit *cv = ctx;
    char full[CK_NAME];
    snprintf(full, sizeof full, "%s@%s", cv->obj, name);
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    uint8_t sha[32];
    int bad = a < 0 || ck_hash(a, 1, sha) != 0;
    if (a >= 0) H5Aclose(a);
    if (bad) {
        cv->l->failed = 1;
        snprintf(cv->l->bad, sizeof cv->l->bad, "%s", full);
        return -1;
    }
    return ck_push(cv->l, full, sha) ? -1 : 0;
}

#if H5_VERSION_GE(1, 12, 0)
typedef H5O_info2_t ck_oinfo;
#else
typedef H5O_info_t ck_oinfo;
#endif

static herr_t ck_visit(hid_t root, const char *name, const ck_oinfo *oi, void *ctx)
{
    cklist *l = ctx;
    char full[CK_NAME];
    snprintf(full, sizeof full, "/%s", strcmp(name, ".") ? name : "");
    if (!strcmp(full, "/checksums")) return 0;
    if (oi->type != H5O_TYPE_GROUP && oi->type != H5O_TYPE_DATASET) {
        l->failed = 1;
        snprintf(l->bad, sizeof l->bad, "%s", full);
        return -1;
    }
    hid_t o = H5Oopen(root, name, H5P_DEFAULT);
    if (o < 0) {
        l->failed = 1;
        snprintf(l->bad, sizeof l->bad, "%s", full);
        return -1;
    }
    int r = 0;
    if (oi->type == H5O_TYPE_DATASET) {
        uint8_t sha[32];
        if (ck_hash(o, 0, sha) != 0) {
            l->failed = 1;
            snprintf(l->bad, sizeof l->bad, "%s", full);
            r = -1;
        } else if (ck_push(l, full, sha)) {
            r = -1;
        }
    }
    if (r == 0) {
        ckvisit cv = { l, full };
        hsize_t idx = 0;
        if (H5Aiterate2(o, H5_INDEX_NAME, H5_ITER_INC, &idx, ck_attr, &cv) < 0) r = -1;
    }
    H5Oclose(o);
    return r;
}

static int ck_cmp(const void *a, const void *b) { return strcmp(((const pk_check *)a)->object, ((const pk_check *)b)->object); }

/* Every object's checksum, sorted by name.  -1: an object could not be read (l->bad) or out of memory. */
static int ck_collect(hid_t f, cklist *l)
{
    memset(l, 0, sizeof *l);
#if H5_VERSION_GE(1, 12, 0)
    herr_t r = H5Ovisit3(f, H5_INDEX_NAME, H5_ITER_INC, ck_visit, l, H5O_INFO_BASIC);
#else
    herr_t r = H5Ovisit2(f, H5_INDEX_NAME, H5_ITER_INC, ck_visit, l, H5O_INFO_BASIC);
#endif
    if (r < 0) return -1;
    if (l->n > 1) qsort(l->v, (size_t)l->n, sizeof *l->v, ck_cmp);
    return 0;
}

/* ---- writer ------------------------------------------------------------- */

typedef struct wctx { const char *path; yq_error *err; } wctx;

/* h: HDF5's message, taken at the failure (a later call clears the stack); NULL: take it now. */
static yq_status wfail_h(wctx *w, const char *what, const char *h)
{
    char buf[YQ_H5_WHY];
    if (!h) {
        yq_h5_why(buf);
        h = buf;
    }
    return yq_fail(w->err, YQ_ERR_IO, "%s: writing %s failed (%s)", w->path, what, h);
}
static yq_status wfail(wctx *w, const char *what) { return wfail_h(w, what, NULL); }

static yq_status w_attr_int(wctx *w, hid_t loc, const char *name, int v)
{
    char h[YQ_H5_WHY];
    return yq_h5_attr_put_int(loc, name, v, h) ? wfail_h(w, name, h) : YQ_OK;
}

static yq_status w_attr_str(wctx *w, hid_t loc, const char *name, const char *s)
{
    char h[YQ_H5_WHY];
    return yq_h5_attr_put_str(loc, name, s, h) ? wfail_h(w, name, h) : YQ_OK;
}

/* A 1-d dataset of n elements, or a scalar one when n == 0. */
static yq_status w_ds(wctx *w, hid_t loc, const char *name, const char *what, hid_t ftype, hid_t mtype,
                      hsize_t n, const void *data)
{
    hid_t s = n ? H5Screate_simple(1, &n, NULL) : H5Screate(H5S_SCALAR);
    /* No timestamps: the same graph gives the same bytes (but for 'created'). */
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (dcpl >= 0) H5Pset_obj_track_times(dcpl, 0);
#if H5_VERSION_GE(1, 10, 5)
    if (dcpl >= 0) H5Pset_dset_no_attrs_hint(dcpl, 1);   /* minimal object headers: ours carry no attributes */
#endif
    hid_t d = s < 0 ? -1 : H5Dcreate2(loc, name, ftype, s, H5P_DEFAULT, dcpl >= 0 ? dcpl : H5P_DEFAULT, H5P_DEFAULT);
    if (dcpl >= 0) H5Pclose(dcpl);
    int ok = d >= 0 && H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0;
    char h[YQ_H5_WHY] = "";
    if (!ok) yq_h5_why(h);
    if (d >= 0 && H5Dclose(d) < 0 && ok) {
        ok = 0;
        yq_h5_why(h);
    }
    if (s >= 0) H5Sclose(s);
    return ok ? YQ_OK : wfail_h(w, what ? what : name, h);
}

static yq_status w_ds_str(wctx *w, hid_t loc, const char *name, const char *s)
{
    if (!s) s = "";
    hid_t t = yq_h5_str_type(strlen(s) + 1);
    if (t < 0) return wfail(w, name);
    yq_status st = w_ds(w, loc, name, NULL, t, t, 0, s);
    H5Tclose(t);
    return st;
}

static yq_status w_group(wctx *w, hid_t loc, const char *name, hid_t *out)
{
    hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
    if (gcpl >= 0) H5Pset_obj_track_times(gcpl, 0);
    *out = H5Gcreate2(loc, name, H5P_DEFAULT, gcpl >= 0 ? gcpl : H5P_DEFAULT, H5P_DEFAULT);
    if (gcpl >= 0) H5Pclose(gcpl);
    return *out < 0 ? wfail(w, name) : YQ_OK;
}

static void fill_record(const yq_node *n, pk_node *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", n->name);
    snprintf(r->op, sizeof r->op, "%s", yq_op_name(n->op));
    snprintf(r->act, sizeof r->act, "%s", yq_act_name(n->act));
    r->layer = n->layer;
    r->line = n->line;
    r->n_src = n->n_src;
    for (int k = 0; k < n->n_src && k < YQ_MAX_SRC; k++) r->src[k] = n->src[k];
    r->out_c = n->out.c;
    r->out_h = n->out.h;
    r->out_w = n->out.w;
    switch (n->op) {
    case YQ_OP_CONV:
        r->conv_filters = n->p.conv.filters;
        r->conv_size = n->p.conv.size;
        r->conv_stride = n->p.conv.stride;
        r->conv_pad = n->p.conv.pad;
        r->conv_groups = n->p.conv.groups;
        r->conv_batch_normalize = n->p.conv.batch_normalize;
        break;
    case YQ_OP_MAXPOOL:
        r->pool_size = n->p.pool.size;
        r->pool_stride = n->p.pool.stride;
        r->pool_pad = n->p.pool.pad;
        break;
    case YQ_OP_ROUTE:
        r->route_groups = n->p.route.groups;
        r->route_group_id = n->p.route.group_id;
        break;
    case YQ_OP_UPSAMPLE:
        r->up_stride = n->p.up.stride;
        break;
    case YQ_OP_DETECT:
        r->head_classes = n->p.head.classes;
        r->head_coords = n->p.head.coords;
        r->head_reg_max = n->p.head.reg_max;
        r->head_stride = n->p.head.stride;
        r->head_scale_x_y = 1;
        break;
    case YQ_OP_YOLO: case YQ_OP_REGION: {
        const yq_head_p *h = &n->p.head;
        r->head_classes = h->classes;
        r->head_num = h->num;
        r->head_coords = h->coords;
        r->head_n_mask = h->n_mask;
        memcpy(r->head_mask, h->mask, sizeof r->head_mask);
        memcpy(r->head_anchors, h->anchors, sizeof r->head_anchors);
        r->head_scale_x_y = h->scale_x_y;
        r->head_new_coords = h->new_coords;
        r->head_softmax = h->softmax;
        break;
    }
    default: break;
    }
}

/* The arrays of conv node id in group grp. */
static yq_status write_conv(wctx *w, const yq_graph *g, int id, hid_t grp)
{
    const yq_node *n = &g->nodes[id];
    const yq_qnode *q = &g->q[id];
    int F = n->p.conv.filters;
    long nw = conv_n_w(g, n);
    char what[96];
    if (nw <= 0 || F < 1 || n->n_w != nw)
        return yq_fail(w->err, YQ_ERR_INVALID_ARG, "%s: layer %d (%s): %ld weights, the shape says %ld",
                       w->path, n->layer, n->name, n->n_w, nw);
#define DS(nm, ft, mt, cnt, data) do { \
        snprintf(what, sizeof what, "/quant/%d/%s", n->layer, nm); \
        yq_status s_ = w_ds(w, grp, nm, what, ft, mt, (hsize_t)(cnt), data); \
        if (s_ != YQ_OK) return s_; } while (0)
    if (q->float_op) {
        if (!n->w || !n->b)
            return yq_fail(w->err, YQ_ERR_INVALID_ARG, "%s: layer %d (%s) runs in float but has no float weights",
                           w->path, n->layer, n->name);
        DS("w", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, nw, yq_conv_weights(n, q));
        DS("b", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, F, n->b);
        return w_ds_str(w, grp, "precision", q->fp16w ? "fp16w" : "fp32");
    }
    if (!q->wq || !q->bq || !q->w_scale || !q->rq_pos || !q->rq_neg || !q->deq)
        return yq_fail(w->err, YQ_ERR_INVALID_ARG, "%s: layer %d (%s) is int8 but has no quantized weights",
                       w->path, n->layer, n->name);
    DS("wq", H5T_STD_I8LE, H5T_NATIVE_INT8, nw, q->wq);
    DS("bq", H5T_STD_I32LE, H5T_NATIVE_INT32, F, q->bq);
    DS("w_scale", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, F, q->w_scale);
    DS("deq", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, F, q->deq);
    DS("rq_pos", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, F, q->rq_pos);
    DS("rq_neg", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, F, q->rq_neg);
    if (q->lut) DS("lut", H5T_STD_I8LE, H5T_NATIVE_INT8, YQ_LUT_N, q->lut);
#undef DS
    return YQ_OK;
}

/* /kernels/choices; the loader (run on the file before it is published) validates the rows. */
static yq_status write_kernels(wctx *w, hid_t f, const yq_tuned_kernel *k, int n)
{
    if (!k || n > MAX_NODES)
        return yq_fail(w->err, YQ_ERR_INVALID_ARG, "%s: %d kernel choices (at most %d)", w->path, n, MAX_NODES);
    pk_kernel *rec = calloc((size_t)n, sizeof *rec);
    if (!rec) return yq_fail(w->err, YQ_ERR_NOMEM, "%s: out of memory", w->path);
    for (int i = 0; i < n; i++) {
        rec[i].node = k[i].node;
        rec[i].batch = k[i].batch;
        rec[i].sm = k[i].sm;
        snprintf(rec[i].cfg, sizeof rec[i].cfg, "%s", k[i].cfg);
        rec[i].us = k[i].us;
        rec[i].default_us = k[i].default_us;
    }
    hid_t grp = -1;
    hid_t ft = compound_type(kernel_fields, NFIELDS(kernel_fields), sizeof(pk_kernel), 1);
    hid_t mt = compound_type(kernel_fields, NFIELDS(kernel_fields), sizeof(pk_kernel), 0);
    yq_status st = ft < 0 || mt < 0 ? wfail(w, "the kernel choice type") : w_group(w, f, "kernels", &grp);
    if (st == YQ_OK) st = w_ds(w, grp, "choices", "/kernels/choices", ft, mt, (hsize_t)n, rec);
    if (grp >= 0) H5Gclose(grp);
    if (ft >= 0) H5Tclose(ft);
    if (mt >= 0) H5Tclose(mt);
    free(rec);
    return st;
}

static yq_status write_all(wctx *w, hid_t f, const yq_graph *g, const yq_package_meta *m)
{
    int N = g->n_nodes;
    yq_status st = YQ_OK;
    hid_t grp = -1, ft = -1, mt = -1;
    pk_node *rec = NULL;
    pk_qnode *qrec = NULL;
    float *thr = NULL;
    char hex[65], created[32], name[32];
    time_t now = m && m->created_unix > 0 ? (time_t)m->created_unix : time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm)) strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    else snprintf(created, sizeof created, "unknown");

#define TRY(x) do { if ((st = (x)) != YQ_OK) goto done; } while (0)
    TRY(w_attr_str(w, f, "format", FORMAT_NAME));
    TRY(w_attr_int(w, f, "format_version", YQ_PACKAGE_VERSION));
    TRY(w_attr_str(w, f, "yquant_version", YQ_VERSION));
    TRY(w_attr_str(w, f, "created", created));
    yq_hex_encode(g->model_sha256, 32, hex);
    TRY(w_attr_str(w, f, "model_sha256", hex));
    static const uint8_t zero[32];
    yq_hex_encode(m ? m->calib_images_sha256 : zero, 32, hex);
    TRY(w_attr_str(w, f, "calib_images_sha256", hex));
    TRY(w_attr_str(w, f, "cfg_path", g->cfg_path));
    TRY(w_attr_str(w, f, "weights_path", g->weights_path));
    TRY(w_attr_int(w, f, "letterbox", m ? m->letterbox : g->letter_box));
    TRY(w_attr_int(w, f, "net_letter_box", g->letter_box));
    TRY(w_attr_int(w, f, "input_c", g->nodes[0].out.c));
    TRY(w_attr_int(w, f, "input_h", g->nodes[0].out.h));
    TRY(w_attr_int(w, f, "input_w", g->nodes[0].out.w));

    /* /graph/nodes */
    rec = calloc((size_t)N, sizeof *rec);
    qrec = calloc((size_t)N, sizeof *qrec);
    thr = calloc((size_t)N, sizeof *thr);
    if (!rec || !qrec || !thr) { st = yq_fail(w->err, YQ_ERR_NOMEM, "%s: out of memory", w->path); goto done; }
    for (int i = 0; i < N; i++) fill_record(&g->nodes[i], &rec[i]);
    TRY(w_group(w, f, "graph", &grp));
    ft = compound_type(node_fields, NFIELDS(node_fields), sizeof(pk_node), 1);
    mt = compound_type(node_fields, NFIELDS(node_fields), sizeof(pk_node), 0);
    if (ft < 0 || mt < 0) { st = wfail(w, "the node type"); goto done; }
    TRY(w_ds(w, grp, "nodes", "/graph/nodes", ft, mt, (hsize_t)N, rec));
    H5Tclose(ft); H5Tclose(mt); H5Gclose(grp);
    ft = mt = grp = -1;

    /* /quant */
    for (int i = 0; i < N; i++) {
        const yq_qnode *q = &g->q[i];
        snprintf(qrec[i].dtype, sizeof qrec[i].dtype, "%s", dtype_name(q->dtype));
        qrec[i].float_op = q->float_op;
        qrec[i].scale = q->scale;
        qrec[i].thresh = q->thresh;
        qrec[i].qmin = q->qmin;
        qrec[i].qmax = q->qmax;
        if (g->nodes[i].op == YQ_OP_SHORTCUT) {
            qrec[i].add_a = q->sa;
            qrec[i].add_b = q->sb;
            qrec[i].add_neg = q->sneg;
        }
        thr[i] = q->thresh;
    }
    TRY(w_group(w, f, "quant", &grp));
    ft = compound_type(qnode_fields, NFIELDS(qnode_fields), sizeof(pk_qnode), 1);
    mt = compound_type(qnode_fields, NFIELDS(qnode_fields), sizeof(pk_qnode), 0);
    if (ft < 0 || mt < 0) { st = wfail(w, "the quant type"); goto done; }
    TRY(w_ds(w, grp, "nodes", "/quant/nodes", ft, mt, (hsize_t)N, qrec));
    H5Tclose(ft); H5Tclose(mt);
    ft = mt = -1;
    for (int i = 1; i < N; i++) {
        if (g->nodes[i].op != YQ_OP_CONV) continue;
        snprintf(name, sizeof name, "%d", g->nodes[i].layer);
        if (H5Lexists(grp, name, H5P_DEFAULT) > 0) {
            st = yq_fail(w->err, YQ_ERR_INVALID_ARG, "%s: two convs are layer %d", w->path, g->nodes[i].layer);
            goto done;
        }
        hid_t cg;
        TRY(w_group(w, grp, name, &cg));
        st = write_conv(w, g, i, cg);
        H5Gclose(cg);
        if (st != YQ_OK) goto done;
    }
    H5Gclose(grp);
    grp = -1;

    /* Names, text, calibration. */
    if (g->class_names && g->n_class_names > 0) {
        size_t len = 1;
        for (int k = 0; k < g->n_class_names; k++) {
            size_t l = strlen(g->class_names[k]) + 1;
            if (l > len) len = l;
        }
        char *buf = calloc((size_t)g->n_class_names, len);
        hid_t t = yq_h5_str_type(len);
        if (!buf || t < 0) {
            free(buf);
            if (t >= 0) H5Tclose(t);
            st = yq_fail(w->err, YQ_ERR_NOMEM, "%s: out of memory", w->path);
            goto done;
        }
        for (int k = 0; k < g->n_class_names; k++) memcpy(buf + (size_t)k * len, g->class_names[k], strlen(g->class_names[k]));
        st = w_ds(w, f, "class_names", "/class_names", t, t, (hsize_t)g->n_class_names, buf);
        H5Tclose(t);
        free(buf);
        if (st != YQ_OK) goto done;
    }
    TRY(w_ds_str(w, f, "qconfig", m ? m->qconfig_text : NULL));
    TRY(w_ds_str(w, f, "accuracy", m ? m->accuracy_json : NULL));
    if (m && m->tuning_json) TRY(w_ds_str(w, f, "tuning", m->tuning_json));
    if (m && m->request_text) TRY(w_ds_str(w, f, "request", m->request_text));
    if (m && m->plan_json) TRY(w_ds_str(w, f, "plan", m->plan_json));
    if (m && m->n_kernels > 0) TRY(write_kernels(w, f, m->kernels, m->n_kernels));
    TRY(w_group(w, f, "calibration", &grp));
    TRY(w_ds(w, grp, "thresh", "/calibration/thresh", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, (hsize_t)N, thr));
    TRY(w_attr_str(w, grp, "method", m ? m->calib_method : NULL));
    TRY(w_attr_int(w, grp, "images", m ? m->calib_images : 0));
#undef TRY
done:
    if (ft >= 0) H5Tclose(ft);
    if (mt >= 0) H5Tclose(mt);
    if (grp >= 0) H5Gclose(grp);
    free(rec);
    free(qrec);
    free(thr);
    return st;
}

/* What the loader reads: the file at path, or (mem != NULL) mem_n bytes of a package in
 * memory, with path only naming it in messages. */
typedef struct rctx { const char *path; yq_error *err; const unsigned char *mem; size_t mem_n; } rctx;
static yq_status package_load(rctx *r, yq_graph **out, yq_package_info **info_out);

/* The checksum table of everything written so far, as /checksums. */
static yq_status write_checksums(wctx *w, hid_t f)
{
    cklist l;
    if (ck_collect(f, &l) != 0) {
        free(l.v);
        return yq_fail(w->err, YQ_ERR_IO, "%s: checksum of %s failed", w->path, l.failed ? l.bad : "(out of memory)");
    }
    hid_t ft = compound_type(check_fields_tab, NFIELDS(check_fields_tab), sizeof(pk_check), 1);
    hid_t mt = compound_type(check_fields_tab, NFIELDS(check_fields_tab), sizeof(pk_check), 0);
    yq_status st = ft < 0 || mt < 0 ? wfail(w, "checksums")
                 : w_ds(w, f, "checksums", "/checksums", ft, mt, (hsize_t)l.n, l.v);
    if (ft >= 0) H5Tclose(ft);
    if (mt >= 0) H5Tclose(mt);
    free(l.v);
    return st;
}

/* The package's bytes, made in memory: *im holds them (its first *n bytes; yq_h5mem_free). */
static yq_status package_image(const char *path, const yq_graph *g, const yq_package_meta *meta, yq_h5mem *im,
                               size_t *n, yq_error *err)
{
    *n = 0;
    memset(im, 0, sizeof *im);
    if (!path || !*path || !g) return yq_fail(err, YQ_ERR_INVALID_ARG, "package: no path or no graph");
    if (!g->q) return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: the graph is not quantized (no int8 annotation)", path);
    if (g->n_nodes < 1 || g->n_nodes > MAX_NODES || g->nodes[0].op != YQ_OP_INPUT)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: the graph has %d nodes or no input node", path, g->n_nodes);
    wctx w = { path, err };
    /* The file is made in memory (HDF5's core driver, no backing store) and its image
     * written out by yquant: HDF5 never writes to disk, so a full disk is an ordinary
     * write error here, never a half-closed HDF5 file that its exit handler trips over.
     * The image is taken when HDF5 frees it at close (so its superblock is final), through
     * the file-image callbacks.  HDF5 1.8 structures (readable by HDF5 1.8 and newer):
     * compact groups and minimal dataset headers take a quarter of the metadata. */
    hid_t fapl = yq_h5mem_fapl(im);
    if (fapl < 0) return wfail(&w, "the in-memory file");
#if H5_VERSION_GE(1, 10, 2)
    H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V18);
#endif
    H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
    /* no times in the root group's header either (every other object is made without):
     * the same contents and 'created' give the same bytes */
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    if (fcpl >= 0) H5Pset_obj_track_times(fcpl, 0);
    hid_t f = H5Fcreate("/dev/null/yquant-package-in-memory", H5F_ACC_TRUNC, fcpl >= 0 ? fcpl : H5P_DEFAULT, fapl);
    if (fcpl >= 0) H5Pclose(fcpl);
    H5Pclose(fapl);
    if (f < 0) return wfail(&w, "the in-memory file");
    yq_status st = write_all(&w, f, g, meta);
    if (st == YQ_OK) st = write_checksums(&w, f);
    if (H5Fclose(f) < 0 && st == YQ_OK) st = wfail(&w, "the in-memory file");
    *n = yq_h5mem_image(im);
    if (st == YQ_OK && !*n)
        st = yq_fail(err, YQ_ERR_IO, "%s: HDF5 returned no file image (%zu bytes)", path, im->size);
    if (st != YQ_OK) yq_h5mem_free(im);
    return st;
}

static yq_status package_write(const char *path, const yq_graph *g, const yq_package_meta *meta, yq_error *err)
{
    yq_h5mem im;
    size_t n;
    yq_status st = package_image(path, g, meta, &im, &n, err);
    const unsigned char *img = im.kept;
    yq_outfile o;
    if (st == YQ_OK && (st = yq_out_begin(&o, path, YQ_OUT_NAMED, err)) == YQ_OK) {
        FILE *fp = fopen(o.tmp, "wb");
        int bad = !fp || fwrite(img, 1, n, fp) != n;
        int e = errno;
        if (fp && fclose(fp) != 0 && !bad) bad = 1, e = errno;
        if (bad) st = yq_fail(err, YQ_ERR_IO, "%s: write failed: %s", path, strerror(e));
        /* Publish only what the loader accepts: a graph with, say, a NaN scale
         * fails here, naming the node, rather than in the hands of a user. */
        if (st == YQ_OK) {
            yq_graph *back = NULL;
            yq_error e2;
            rctx r = { o.tmp, &e2, NULL, 0 };
            if (package_load(&r, &back, NULL) != YQ_OK)
                st = yq_fail(err, e2.code == YQ_ERR_NOMEM ? YQ_ERR_NOMEM : YQ_ERR_INVALID_ARG,
                             "%s: not written, it would not load: %s", path, e2.msg);
            yq_graph_free(back);
        }
        if (st == YQ_OK) st = yq_out_commit(&o, err);
        else yq_out_abort(&o);
    }
    yq_h5mem_free(&im);
    return st;
}

/* ---- loader ------------------------------------------------------------- */


#define RFAIL(code, ...) yq_fail(r->err, code, __VA_ARGS__)

/* A string attribute (is_attr) or scalar dataset; *out malloc'd. */
static yq_status r_str(rctx *r, hid_t obj, int is_attr, const char *what, char **out)
{
    switch (yq_h5_str_read(obj, is_attr, 1, (size_t)MAX_TEXT, out)) {
    case 1: return YQ_OK;
    case YQ_H5_NOT_STR: return RFAIL(YQ_ERR_FORMAT, "%s: %s is not a string", r->path, what);
    case YQ_H5_TOO_LONG: return RFAIL(YQ_ERR_FORMAT, "%s: %s is empty or over %ld bytes", r->path, what, (long)MAX_TEXT);
    case YQ_H5_NOMEM: return RFAIL(YQ_ERR_NOMEM, "%s: out of memory reading %s", r->path, what);
    default: return RFAIL(YQ_ERR_FORMAT, "%s: cannot read %s (damaged)", r->path, what);
    }
}

/* A string attribute of loc; absent: "" when optional, else an error. */
static yq_status r_attr_str(rctx *r, hid_t loc, const char *objname, const char *name, int optional, char **out)
{
    char what[128];
    snprintf(what, sizeof what, "attribute '%s' of %s", name, objname);
    *out = NULL;
    if (H5Aexists(loc, name) <= 0) {
        if (optional) return (*out = strdup("")) ? YQ_OK : RFAIL(YQ_ERR_NOMEM, "%s: out of memory", r->path);
        return RFAIL(YQ_ERR_FORMAT, "%s: missing %s", r->path, what);
    }
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    if (a < 0) return RFAIL(YQ_ERR_FORMAT, "%s: cannot open %s (damaged)", r->path, what);
    yq_status st = r_str(r, a, 1, what, out);
    H5Aclose(a);
    return st;
}

/* Copies a string attribute into a fixed buffer. */
static yq_status r_attr_buf(rctx *r, hid_t loc, const char *name, char *buf, size_t cap)
{
    char *s;
    yq_status st = r_attr_str(r, loc, "/", name, 0, &s);
    if (st != YQ_OK) return st;
    if (strlen(s) >= cap) st = RFAIL(YQ_ERR_FORMAT, "%s: attribute '%s' is %zu bytes long (at most %zu)", r->path, name, strlen(s), cap - 1);
    else memcpy(buf, s, strlen(s) + 1);
    free(s);
    return st;
}

static yq_status r_attr_int(rctx *r, hid_t loc, const char *objname, const char *name, int *v)
{
    if (H5Aexists(loc, name) <= 0) return RFAIL(YQ_ERR_FORMAT, "%s: missing attribute '%s' of %s", r->path, name, objname);
    return yq_h5_attr_get_int(loc, name, v) == 1
               ? YQ_OK : RFAIL(YQ_ERR_FORMAT, "%s: attribute '%s' of %s is not an integer", r->path, name, objname);
}

/* A scalar string dataset; absent: NULL when optional. */
static yq_status r_ds_str(rctx *r, hid_t loc, const char *name, int optional, char **out)
{
    char what[64];
    snprintf(what, sizeof what, "/%s", name);
    *out = NULL;
    if (H5Lexists(loc, name, H5P_DEFAULT) <= 0)
        return optional ? YQ_OK : RFAIL(YQ_ERR_FORMAT, "%s: missing dataset %s", r->path, what);
    hid_t d = H5Dopen2(loc, name, H5P_DEFAULT);
    if (d < 0) return RFAIL(YQ_ERR_FORMAT, "%s: %s is not a dataset (or is damaged)", r->path, what);
    yq_status st = r_str(r, d, 0, what, out);
    H5Dclose(d);
    return st;
}

/* A 1-d numeric dataset of exactly n elements of class cls, esize bytes
 * (integers signed), read into buf as mtype.  who names the node. */
static yq_status r_array(rctx *r, hid_t loc, const char *name, const char *what, const char *who,
                         H5T_class_t cls, size_t esize, hid_t mtype, long n, void *buf)
{
    if (H5Lexists(loc, name, H5P_DEFAULT) <= 0)
        return RFAIL(YQ_ERR_FORMAT, "%s: %s: missing dataset %s", r->path, who, what);
    hid_t d = H5Dopen2(loc, name, H5P_DEFAULT);
    if (d < 0) return RFAIL(YQ_ERR_FORMAT, "%s: %s: %s is not a dataset (or is damaged)", r->path, who, what);
    hid_t t = H5Dget_type(d), s = H5Dget_space(d);
    yq_status st = YQ_OK;
    hsize_t dim = 0;
    if (t < 0 || s < 0 || H5Tget_class(t) != cls || H5Tget_size(t) != esize ||
        (cls == H5T_INTEGER && H5Tget_sign(t) != H5T_SGN_2)) {
        st = RFAIL(YQ_ERR_FORMAT, "%s: %s: %s is not %s%zu-byte %s", r->path, who, what,
                   cls == H5T_INTEGER ? "signed " : "", esize, cls == H5T_INTEGER ? "integers" : "floats");
    } else if (H5Sget_simple_extent_ndims(s) != 1 || H5Sget_simple_extent_dims(s, &dim, NULL) != 1) {
        st = RFAIL(YQ_ERR_FORMAT, "%s: %s: %s is not a 1-d array", r->path, who, what);
    } else if (dim != (hsize_t)n) {
        st = RFAIL(YQ_ERR_FORMAT, "%s: %s: %s has %llu values, expected %ld", r->path, who, what,
                   (unsigned long long)dim, n);
    } else if (H5Dread(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        st = RFAIL(YQ_ERR_FORMAT, "%s: %s: cannot read %s (damaged)", r->path, who, what);
    }
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    H5Dclose(d);
    return st;
}

/* Every field of the memory type must be in the file's compound, of the same
 * class (and array length). */
static yq_status check_fields(rctx *r, hid_t ftype, hid_t mtype, const char *what)
{
    if (H5Tget_class(ftype) != H5T_COMPOUND) return RFAIL(YQ_ERR_FORMAT, "%s: %s is not a table (compound)", r->path, what);
    int nm = H5Tget_nmembers(mtype);
    yq_status st = YQ_OK;
    for (int i = 0; i < nm && st == YQ_OK; i++) {
        char *name = H5Tget_member_name(mtype, (unsigned)i);
        if (!name) return RFAIL(YQ_ERR_NOMEM, "%s: out of memory", r->path);
        int fi = H5Tget_member_index(ftype, name);
        if (fi < 0) {
            st = RFAIL(YQ_ERR_FORMAT, "%s: %s lacks the field '%s'", r->path, what, name);
        } else {
            hid_t a = H5Tget_member_type(mtype, (unsigned)i), b = H5Tget_member_type(ftype, (unsigned)fi);
            int ok = a >= 0 && b >= 0 && H5Tget_class(a) == H5Tget_class(b);
            if (ok && H5Tget_class(a) == H5T_ARRAY) {
                hsize_t da = 0, db = 0;
                hid_t ba = -1, bb = -1;
                ok = H5Tget_array_ndims(b) == 1 && H5Tget_array_dims2(a, &da) == 1 && H5Tget_array_dims2(b, &db) == 1 &&
                     da == db && (ba = H5Tget_super(a)) >= 0 && (bb = H5Tget_super(b)) >= 0 &&
                     H5Tget_class(ba) == H5Tget_class(bb);
                if (ba >= 0) H5Tclose(ba);
                if (bb >= 0) H5Tclose(bb);
            }
            if (ok && H5Tget_class(a) == H5T_STRING) ok = H5Tis_variable_str(b) == 0;
            if (a >= 0) H5Tclose(a);
            if (b >= 0) H5Tclose(b);
            if (!ok) st = RFAIL(YQ_ERR_FORMAT, "%s: %s: field '%s' has another type", r->path, what, name);
        }
        H5free_memory(name);
    }
    return st;
}

/* A compound table of n rows (n < 0: any count in [1, MAX_NODES], returned). */
static yq_status r_table(rctx *r, hid_t f, const char *group, const char *dsname, const field *fs, int nf,
                         size_t rsize, int *n, void **out)
{
    *out = NULL;
    /* The group first: H5Lexists fails (rather than says no) on a path through a missing group. */
    if (H5Lexists(f, group, H5P_DEFAULT) <= 0 || H5Lexists(f, dsname, H5P_DEFAULT) <= 0)
        return RFAIL(YQ_ERR_FORMAT, "%s: missing %s", r->path, dsname);
    hid_t d = H5Dopen2(f, dsname, H5P_DEFAULT);
    if (d < 0) return RFAIL(YQ_ERR_FORMAT, "%s: %s is not a dataset (or is damaged)", r->path, dsname);
    hid_t t = H5Dget_type(d), s = H5Dget_space(d), m = compound_type(fs, nf, rsize, 0);
    yq_status st = YQ_OK;
    hsize_t dim = 0;
    if (t < 0 || s < 0 || m < 0) {
        st = RFAIL(YQ_ERR_FORMAT, "%s: cannot read %s (damaged)", r->path, dsname);
        goto done;
    }
    if ((st = check_fields(r, t, m, dsname)) != YQ_OK) goto done;
    if (H5Sget_simple_extent_ndims(s) != 1 || H5Sget_simple_extent_dims(s, &dim, NULL) != 1) {
        st = RFAIL(YQ_ERR_FORMAT, "%s: %s is not a 1-d table", r->path, dsname);
        goto done;
    }
    if (*n < 0 ? (dim < 1 || dim > MAX_NODES) : dim != (hsize_t)*n) {
        if (*n < 0) st = RFAIL(YQ_ERR_FORMAT, "%s: %s has %llu rows (1 to %d)", r->path, dsname, (unsigned long long)dim, MAX_NODES);
        else st = RFAIL(YQ_ERR_FORMAT, "%s: %s has %llu rows, the graph %d nodes", r->path, dsname, (unsigned long long)dim, *n);
        goto done;
    }
    *out = calloc((size_t)dim, rsize);
    if (!*out) {
        st = RFAIL(YQ_ERR_NOMEM, "%s: out of memory", r->path);
        goto done;
    }
    if (H5Dread(d, m, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0) {
        free(*out);
        *out = NULL;
        st = RFAIL(YQ_ERR_FORMAT, "%s: cannot read %s (damaged)", r->path, dsname);
        goto done;
    }
    *n = (int)dim;
done:
    if (m >= 0) H5Tclose(m);
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    H5Dclose(d);
    return st;
}

static int in_range(long v, long lo, long hi) { return v >= lo && v <= hi; }

/* Node i of the graph from its record: op, params, sources; then shape inference
 * must give the stored output shape. */
static yq_status build_node(rctx *r, yq_graph *g, int i, const pk_node *rc, const char *who)
{
    int op = op_from_name(rc->op), act = act_from_name(rc->act);
    if (op < 0) return RFAIL(YQ_ERR_FORMAT, "%s: %s: unknown op '%s'", r->path, who, rc->op);
    if (act < 0) return RFAIL(YQ_ERR_FORMAT, "%s: %s: unknown activation '%s'", r->path, who, rc->act);
    if ((i == 0) != (op == YQ_OP_INPUT))
        return RFAIL(YQ_ERR_FORMAT, "%s: %s: %s", r->path, who, i ? "a second input node" : "node 0 is not the input");
    int lo = 1, hi = 1;
    if (op == YQ_OP_INPUT) lo = hi = 0;
    else if (op == YQ_OP_SHORTCUT) lo = hi = 2;
    else if (op == YQ_OP_ROUTE) hi = YQ_MAX_SRC;
    if (!in_range(rc->n_src, lo, hi))
        return RFAIL(YQ_ERR_FORMAT, "%s: %s: %d inputs (a %s takes %d to %d)", r->path, who, rc->n_src, rc->op, lo, hi);
    for (int k = 0; k < rc->n_src; k++)
        if (!in_range(rc->src[k], 0, i - 1))
            return RFAIL(YQ_ERR_FORMAT, "%s: %s: input %d is node %d, which does not precede it", r->path, who, k, rc->src[k]);
    if (rc->layer < -1 || rc->line < 0) return RFAIL(YQ_ERR_FORMAT, "%s: %s: layer %d, line %d", r->path, who, rc->layer, rc->line);

    yq_error e2;
    yq_node *n = yq_graph_add(g, (yq_op)op, &e2);
    if (!n) return RFAIL(YQ_ERR_NOMEM, "%s: out of memory", r->path);
    memcpy(n->name, rc->name, sizeof n->name);
    n->layer = rc->layer;
    n->line = rc->line;
    n->act = (yq_act)act;
    n->n_src = rc->n_src;
    for (int k = 0; k < rc->n_src; k++) n->src[k] = rc->src[k];
    switch ((yq_op)op) {
    case YQ_OP_INPUT:
        if (!in_range(rc->out_c, 1, 1 << 16) || !in_range(rc->out_h, 1, 1 << 16) || !in_range(rc->out_w, 1, 1 << 16))
            return RFAIL(YQ_ERR_FORMAT, "%s: %s: input %dx%dx%d", r->path, who, rc->out_c, rc->out_h, rc->out_w);
        n->out = (yq_shape){ rc->out_c, rc->out_h, rc->out_w };
        break;
    case YQ_OP_CONV: {
        yq_conv_p *c = &n->p.conv;
        if (!in_range(rc->conv_filters, 1, 1 << 20) || !in_range(rc->conv_size, 1, MAX_PARAM) || !in_range(rc->conv_stride, 1, MAX_PARAM) ||
            !in_range(rc->conv_pad, 0, MAX_PARAM) || !in_range(rc->conv_groups, 1, 1 << 20) || !in_range(rc->conv_batch_normalize, 0, 1))
            return RFAIL(YQ_ERR_FORMAT, "%s: %s: filters=%d size=%d stride=%d pad=%d groups=%d batch_normalize=%d",
                         r->path, who, rc->conv_filters, rc->conv_size, rc->conv_stride, rc->conv_pad,
                         rc->conv_groups, rc->conv_batch_normalize);
        *c = (yq_conv_p){ rc->conv_filters, rc->conv_size, rc->conv_stride, rc->conv_pad, rc->conv_groups,
                          rc->conv_batch_normalize };
        break;
    }
    case YQ_OP_MAXPOOL:
        if (!in_range(rc->pool_size, 1, MAX_PARAM) || !in_range(rc->pool_stride, 1, MAX_PARAM) || !in_range(rc->pool_pad, 0, MAX_PARAM))
            return RFAIL(YQ_ERR_FORMAT, "%s: %s: size=%d stride=%d padding=%d", r->path, who,
                         rc->pool_size, rc->pool_stride, rc->pool_pad);
        n->p.pool = (yq_pool_p){ rc->pool_size, rc->pool_stride, rc->pool_pad };
        break;
    case YQ_OP_ROUTE:
        if (!in_range(rc->route_groups, 1, 1 << 16) || !in_range(rc->route_group_id, 0, rc->route_groups - 1))
            return RFAIL(YQ_ERR_FORMAT, "%s: %s: groups=%d group_id=%d", r->path, who, rc->route_groups, rc->route_group_id);
        n->p.route = (yq_route_p){ rc->route_groups, rc->route_group_id };
        break;
    case YQ_OP_UPSAMPLE:
        if (!in_range(rc->up_stride, 1, MAX_PARAM)) return RFAIL(YQ_ERR_FORMAT, "%s: %s: stride=%d", r->path, who, rc->up_stride);
        n->p.up.stride = rc->up_stride;
        break;
    case YQ_OP_YOLO: case YQ_OP_REGION: {
        yq_head_p *h = &n->p.head;
        if (!in_range(rc->head_classes, 1, MAX_CLASSES) || !in_range(rc->head_num, 1, YQ_MAX_ANCH) || !in_range(rc->head_coords, 0, 64) ||
            !in_range(rc->head_n_mask, 0, YQ_MAX_ANCH) || !in_range(rc->head_new_coords, 0, 1) || !in_range(rc->head_softmax, 0, 1) ||
            !isfinite(rc->head_scale_x_y) || !(rc->head_scale_x_y > 0))
            return RFAIL(YQ_ERR_FORMAT, "%s: %s: classes=%d num=%d coords=%d masks=%d new_coords=%d softmax=%d scale_x_y=%g",
                         r->path, who, rc->head_classes, rc->head_num, rc->head_coords, rc->head_n_mask,
                         rc->head_new_coords, rc->head_softmax, (double)rc->head_scale_x_y);
        for (int k = 0; k < rc->head_n_mask; k++)
            if (!in_range(rc->head_mask[k], 0, rc->head_num - 1))
                return RFAIL(YQ_ERR_FORMAT, "%s: %s: mask %d is anchor %d of %d", r->path, who, k, rc->head_mask[k], rc->head_num);
        for (int k = 0; k < 2 * YQ_MAX_ANCH; k++)
            if (!isfinite(rc->head_anchors[k]))
                return RFAIL(YQ_ERR_FORMAT, "%s: %s: anchor value %d is not finite", r->path, who, k);
        h->classes = rc->head_classes;
        h->num = rc->head_num;
        h->coords = rc->head_coords;
        h->n_mask = rc->head_n_mask;
        memcpy(h->mask, rc->head_mask, sizeof h->mask);
        memcpy(h->anchors, rc->head_anchors, sizeof h->anchors);
        h->scale_x_y = rc->head_scale_x_y;
        h->new_coords = rc->head_new_coords;
        h->softmax = rc->head_softmax;
        break;
    }
    case YQ_OP_DETECT: {
        if (!in_range(rc->head_classes, 1, MAX_CLASSES) || rc->head_coords != 4 || !in_range(rc->head_reg_max, 1, 64) ||
            !in_range(rc->head_stride, 1, 1024))
            return RFAIL(YQ_ERR_FORMAT, "%s: %s: detect head with classes=%d coords=%d reg_max=%d stride=%d", r->path, who,
                         rc->head_classes, rc->head_coords, rc->head_reg_max, rc->head_stride);
        yq_head_p *h = &n->p.head;
        h->classes = rc->head_classes;
        h->coords = 4;
        h->reg_max = rc->head_reg_max;
        h->stride = rc->head_stride;
        h->scale_x_y = 1;
        break;
    }
    case YQ_OP_SHORTCUT: case YQ_OP_DROPOUT: case YQ_OP_COUNT:
        break;
    }
    yq_error se;
    if (yq_shape_infer(g, i, &se) != YQ_OK)
        return RFAIL(YQ_ERR_FORMAT, "%s: %s: %s", r->path, who, se.msg);
    if (n->out.c != rc->out_c || n->out.h != rc->out_h || n->out.w != rc->out_w)
        return RFAIL(YQ_ERR_FORMAT, "%s: %s: stored output %dx%dx%d, shape inference gives %dx%dx%d", r->path, who,
                     rc->out_c, rc->out_h, rc->out_w, n->out.c, n->out.h, n->out.w);
    if (op == YQ_OP_CONV) {
        n->n_w = conv_n_w(g, n);
        if (n->n_w <= 0) return RFAIL(YQ_ERR_FORMAT, "%s: %s: more than 2^31 weights", r->path, who);
    }
    return YQ_OK;
}

static yq_status check_qnode(rctx *r, const yq_graph *g, int i, const pk_qnode *qr, yq_qnode *q, const char *who)
{
    int dt = dtype_from_name(qr->dtype);
    if (dt < 0) return RFAIL(YQ_ERR_FORMAT, "%s: %s: unknown dtype '%s'", r->path, who, qr->dtype);
    if (!in_range(qr->float_op, 0, 1) || (qr->float_op && dt != YQ_F32) || (i == 0 && qr->float_op))
        return RFAIL(YQ_ERR_FORMAT, "%s: %s: float_op=%d with dtype %s", r->path, who, qr->float_op, qr->dtype);
    if (!isfinite(qr->scale) || !(qr->scale > 0) || !isfinite(qr->thresh) || !(qr->thresh > 0))
        return RFAIL(YQ_ERR_FORMAT, "%s: %s: scale %g, threshold %g (must be finite and > 0)", r->path, who,
                     (double)qr->scale, (double)qr->thresh);
    int lo = dt == YQ_U8 ? 0 : -128, hi = dt == YQ_S8 ? 127 : 255;
    if (!in_range(qr->qmin, lo, hi) || !in_range(qr->qmax, lo, hi) || qr->qmin >= qr->qmax || qr->qmax < 1)
        return RFAIL(YQ_ERR_FORMAT, "%s: %s: range [%d, %d] for %s", r->path, who, qr->qmin, qr->qmax, qr->dtype);
    yq_op op = g->nodes[i].op;
    if ((yq_op_is_head(op)) && dt != YQ_F32)   /* the heads decode floats */
        return RFAIL(YQ_ERR_FORMAT, "%s: %s: a detection head of dtype %s (heads are f32)", r->path, who, qr->dtype);
    q->dtype = (yq_dtype)dt;
    q->float_op = qr->float_op;
    q->scale = qr->scale;
    q->thresh = qr->thresh;
    q->qmin = qr->qmin;
    q->qmax = qr->qmax;
    if (op == YQ_OP_SHORTCUT && !qr->float_op) {
        if (!isfinite(qr->add_a) || !isfinite(qr->add_b) || !(qr->add_a >= 0) || !(qr->add_b >= 0) ||
            !(qr->add_neg >= 0 && qr->add_neg <= 1))
            return RFAIL(YQ_ERR_FORMAT, "%s: %s: add scales %g, %g (finite, >= 0), negative factor %g (0 to 1)",
                         r->path, who, (double)qr->add_a, (double)qr->add_b, (double)qr->add_neg);
        q->sa = qr->add_a;
        q->sb = qr->add_b;
        q->sneg = qr->add_neg;
    }
    return YQ_OK;
}

/* The arrays of conv node i from /quant/<layer>. */
/* Before allocating from the graph's shapes (which a damaged file sets): a 1-d dataset
 * name of loc must hold n values.  A missing or odd one is left to r_array to report. */
static yq_status check_count(rctx *r, hid_t loc, const char *name, const char *what, const char *who, long n)
{
    if (H5Lexists(loc, name, H5P_DEFAULT) <= 0) return YQ_OK;
    hid_t d = H5Dopen2(loc, name, H5P_DEFAULT);
    hid_t s = d < 0 ? -1 : H5Dget_space(d);
    hsize_t dim = 0;
    int ok = s < 0 || H5Sget_simple_extent_ndims(s) != 1 || H5Sget_simple_extent_dims(s, &dim, NULL) != 1 ||
             dim == (hsize_t)n;
    if (s >= 0) H5Sclose(s);
    if (d >= 0) H5Dclose(d);
    return ok ? YQ_OK : RFAIL(YQ_ERR_FORMAT, "%s: %s: %s has %llu values, expected %ld", r->path, who, what,
                              (unsigned long long)dim, n);
}

static yq_status load_conv(rctx *r, hid_t quant, yq_graph *g, int i, const char *who)
{
    yq_node *n = &g->nodes[i];
    yq_qnode *q = &g->q[i];
    int F = n->p.conv.filters;
    long nw = n->n_w;
    char gname[32], what[96];
    snprintf(gname, sizeof gname, "%d", n->layer);
    if (H5Lexists(quant, gname, H5P_DEFAULT) <= 0)
        return RFAIL(YQ_ERR_FORMAT, "%s: %s: missing group /quant/%s", r->path, who, gname);
    hid_t cg = H5Gopen2(quant, gname, H5P_DEFAULT);
    if (cg < 0) return RFAIL(YQ_ERR_FORMAT, "%s: %s: /quant/%s is not a group (or is damaged)", r->path, who, gname);
    yq_status st = YQ_OK;
#define ARR(nm, cls, esz, mt, cnt, buf) do { \
        snprintf(what, sizeof what, "/quant/%s/%s", gname, nm); \
        if ((st = r_array(r, cg, nm, what, who, cls, esz, mt, cnt, buf)) != YQ_OK) goto done; } while (0)
#define BAD(...) do { st = RFAIL(YQ_ERR_FORMAT, __VA_ARGS__); goto done; } while (0)
    snprintf(what, sizeof what, "/quant/%s/%s", gname, q->float_op ? "w" : "wq");
    if ((st = check_count(r, cg, q->float_op ? "w" : "wq", what, who, nw)) != YQ_OK) goto done;
    if (q->float_op) {
        n->w = yq_arena_alloc(g, sizeof(float) * (size_t)nw);
        n->b = yq_arena_alloc(g, sizeof(float) * (size_t)F);
        if (!n->w || !n->b) { st = RFAIL(YQ_ERR_NOMEM, "%s: out of memory", r->path); goto done; }
        ARR("w", H5T_FLOAT, 4, H5T_NATIVE_FLOAT, nw, n->w);
        ARR("b", H5T_FLOAT, 4, H5T_NATIVE_FLOAT, F, n->b);
        for (long k = 0; k < nw; k++) if (!isfinite(n->w[k])) BAD("%s: %s: /quant/%s/w[%ld] is not finite", r->path, who, gname, k);
        for (int o = 0; o < F; o++) if (!isfinite(n->b[o])) BAD("%s: %s: /quant/%s/b[%d] is not finite", r->path, who, gname, o);
        /* the numerics every engine computes this conv with; none stored: FP32 (packages
         * from before precisions were recorded, validated in FP32) */
        char *prec = NULL;
        snprintf(what, sizeof what, "/quant/%s/precision", gname);
        if ((st = r_ds_str(r, cg, "precision", 1, &prec)) != YQ_OK) goto done;
        q->fp16w = prec && !strcmp(prec, "fp16w");
        int known = !prec || q->fp16w || !strcmp(prec, "fp32");
        free(prec);
        if (!known) BAD("%s: %s: %s is not fp16w or fp32", r->path, who, what);
        if (q->fp16w && (n->p.conv.groups != 1))
            BAD("%s: %s: %s: fp16w on a grouped conv (those run FP32 weights)", r->path, who, what);
        for (long k = 0; q->fp16w && k < nw; k++)
            if (!yq_is_fp16(n->w[k]))
                BAD("%s: %s: fp16w, but /quant/%s/w[%ld] = %.9g is not an FP16 value", r->path, who, gname, k, (double)n->w[k]);
        goto done;
    }
    q->wq = yq_arena_alloc(g, (size_t)nw);
    q->bq = yq_arena_alloc(g, sizeof(int32_t) * (size_t)F);
    q->w_scale = yq_arena_alloc(g, sizeof(float) * (size_t)F);
    q->rq_pos = yq_arena_alloc(g, sizeof(float) * (size_t)F);
    q->rq_neg = yq_arena_alloc(g, sizeof(float) * (size_t)F);
    q->deq = yq_arena_alloc(g, sizeof(float) * (size_t)F);
    if (!q->wq || !q->bq || !q->w_scale || !q->rq_pos || !q->rq_neg || !q->deq) {
        st = RFAIL(YQ_ERR_NOMEM, "%s: out of memory", r->path);
        goto done;
    }
    ARR("wq", H5T_INTEGER, 1, H5T_NATIVE_INT8, nw, q->wq);
    ARR("bq", H5T_INTEGER, 4, H5T_NATIVE_INT32, F, q->bq);
    ARR("w_scale", H5T_FLOAT, 4, H5T_NATIVE_FLOAT, F, q->w_scale);
    ARR("deq", H5T_FLOAT, 4, H5T_NATIVE_FLOAT, F, q->deq);
    ARR("rq_pos", H5T_FLOAT, 4, H5T_NATIVE_FLOAT, F, q->rq_pos);
    ARR("rq_neg", H5T_FLOAT, 4, H5T_NATIVE_FLOAT, F, q->rq_neg);
    for (int o = 0; o < F; o++) {
        if (!isfinite(q->w_scale[o]) || !(q->w_scale[o] > 0))
            BAD("%s: %s: /quant/%s/w_scale[%d] = %g (must be finite and > 0)", r->path, who, gname, o, (double)q->w_scale[o]);
        if (!isfinite(q->deq[o]) || q->deq[o] < 0)
            BAD("%s: %s: /quant/%s/deq[%d] = %g (must be finite and >= 0)", r->path, who, gname, o, (double)q->deq[o]);
    }
    for (int s = 0; s < 2; s++) {
        const float *rq = s ? q->rq_neg : q->rq_pos;
        for (int o = 0; o < F; o++)
            if (!isfinite(rq[o]) || !(rq[o] >= 0))
                BAD("%s: %s: /quant/%s/%s[%d] = %g (must be finite and >= 0)", r->path, who, gname,
                    s ? "rq_neg" : "rq_pos", o, (double)rq[o]);
    }
    /* the activation table: exactly where the activation is one and the output int8 */
    int has_lut = H5Lexists(cg, "lut", H5P_DEFAULT) > 0;
    int wants_lut = q->dtype == YQ_S8 && yq_act_is_table(n->act);
    if (wants_lut && !has_lut)
        BAD("%s: %s: missing /quant/%s/lut (an int8 %s conv needs its table)", r->path, who, gname, yq_act_name(n->act));
    if (has_lut && !wants_lut)
        BAD("%s: %s: unexpected /quant/%s/lut (a %s conv with %s output has no table)", r->path, who, gname,
            yq_act_name(n->act), dtype_name(q->dtype));
    if (has_lut) {
        if (!(q->lut = yq_arena_alloc(g, YQ_LUT_N))) { st = RFAIL(YQ_ERR_NOMEM, "%s: out of memory", r->path); goto done; }
        ARR("lut", H5T_INTEGER, 1, H5T_NATIVE_INT8, YQ_LUT_N, q->lut);
        for (int k = 0; k < YQ_LUT_N; k++)
            if (q->lut[k] < q->qmin || q->lut[k] > q->qmax)
                BAD("%s: %s: /quant/%s/lut[%d] = %d is outside the output range [%d, %d]", r->path, who, gname, k,
                    (int)q->lut[k], (int)q->qmin, (int)q->qmax);
    }
#undef ARR
#undef BAD
done:
    H5Gclose(cg);
    return st;
}

static yq_status load_names(rctx *r, hid_t f, yq_graph *g)
{
    if (H5Lexists(f, "class_names", H5P_DEFAULT) <= 0) return YQ_OK;
    hid_t d = H5Dopen2(f, "class_names", H5P_DEFAULT);
    if (d < 0) return RFAIL(YQ_ERR_FORMAT, "%s: /class_names is not a dataset (or is damaged)", r->path);
    hid_t t = H5Dget_type(d), s = H5Dget_space(d), m = -1;
    yq_status st = YQ_OK;
    hsize_t n = 0;
    size_t len = t >= 0 ? H5Tget_size(t) : 0;
    if (t < 0 || s < 0 || H5Tget_class(t) != H5T_STRING || H5Tis_variable_str(t) != 0 || len < 1 || len > 4096 ||
        H5Sget_simple_extent_ndims(s) != 1 || H5Sget_simple_extent_dims(s, &n, NULL) != 1 || n > MAX_CLASSES) {
        st = RFAIL(YQ_ERR_FORMAT, "%s: /class_names is not a list of at most %d fixed-length strings", r->path, MAX_CLASSES);
        goto done;
    }
    if (n == 0) goto done;
    char *buf = yq_arena_alloc(g, (size_t)n * (len + 1));
    char **names = yq_arena_alloc(g, sizeof *names * (size_t)n);
    m = yq_h5_str_type(len + 1);
    if (!buf || !names || m < 0) {
        st = RFAIL(YQ_ERR_NOMEM, "%s: out of memory", r->path);
        goto done;
    }
    if (H5Dread(d, m, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        st = RFAIL(YQ_ERR_FORMAT, "%s: cannot read /class_names (damaged)", r->path);
        goto done;
    }
    for (hsize_t k = 0; k < n; k++) {
        names[k] = buf + k * (len + 1);
        names[k][len] = 0;
    }
    g->class_names = names;
    g->n_class_names = (int)n;
done:
    if (m >= 0) H5Tclose(m);
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    H5Dclose(d);
    return st;
}

static int cmp_kernel(const void *pa, const void *pb)
{
    const yq_tuned_kernel *a = pa, *b = pb;
    if (a->node != b->node) return a->node < b->node ? -1 : 1;
    if (a->batch != b->batch) return a->batch < b->batch ? -1 : 1;
    return (a->sm > b->sm) - (a->sm < b->sm);
}

/* /kernels/choices, when present: every row names a conv of g, a kernel
 * configuration this build knows and that fits the conv's kind, and a (node,
 * batch, sm) no other row names. */
static yq_status load_kernels(rctx *r, hid_t f, const yq_graph *g, yq_package_info *info)
{
    if (H5Lexists(f, "kernels", H5P_DEFAULT) <= 0) return YQ_OK;
    int n = -1;
    pk_kernel *rec = NULL;
    yq_status st = r_table(r, f, "kernels", "/kernels/choices", kernel_fields, NFIELDS(kernel_fields),
                           sizeof(pk_kernel), &n, (void **)&rec);
    if (st != YQ_OK) return st;
    yq_tuned_kernel *k = calloc((size_t)n, sizeof *k);
    if (!k) {
        free(rec);
        return RFAIL(YQ_ERR_NOMEM, "%s: out of memory", r->path);
    }
#define BAD(...) do { st = RFAIL(YQ_ERR_FORMAT, __VA_ARGS__); goto done; } while (0)
    for (int i = 0; i < n; i++) {
        const pk_kernel *c = &rec[i];
        if (!memchr(c->cfg, 0, sizeof c->cfg)) BAD("%s: /kernels/choices row %d: cfg is not a terminated string", r->path, i);
        if (!in_range(c->node, 1, g->n_nodes - 1) || g->nodes[c->node].op != YQ_OP_CONV)
            BAD("%s: /kernels/choices row %d: node %d is not a conv of this graph", r->path, i, c->node);
        if (!in_range(c->batch, 1, 65536) || !in_range(c->sm, 10, 999))
            BAD("%s: /kernels/choices row %d (node %d): batch %d, sm %d (expected 1..65536 and 10..999)", r->path, i,
                c->node, c->batch, c->sm);
        yq_conv_cfg cfg;
        if (yq_conv_cfg_parse(c->cfg, &cfg) != 0)
            BAD("%s: /kernels/choices row %d (node %d, batch %d, sm_%d): unknown kernel configuration '%s' "
                "(tuned by another yquant version? run `yquant tune` again)", r->path, i, c->node, c->batch, c->sm, c->cfg);
        int fl = g->q[c->node].float_op, is_fl = cfg.family == YQ_CONV_F32 || cfg.family == YQ_CONV_F16;
        if (cfg.family == YQ_CONV_AUTO || fl != is_fl)
            BAD("%s: /kernels/choices row %d: kernel configuration '%s' cannot run node %d (%s, %s)", r->path, i, c->cfg,
                c->node, g->nodes[c->node].name, fl ? "kept in float" : "int8");
        if (!isfinite(c->us) || c->us < 0 || !isfinite(c->default_us) || c->default_us < 0)
            BAD("%s: /kernels/choices row %d (node %d): times %g and %g us (must be finite and >= 0)", r->path, i,
                c->node, (double)c->us, (double)c->default_us);
        k[i].node = c->node;
        k[i].batch = c->batch;
        k[i].sm = c->sm;
        memcpy(k[i].cfg, c->cfg, sizeof k[i].cfg);
        k[i].us = c->us;
        k[i].default_us = c->default_us;
    }
    {
        /* duplicates: sorted copies side by side (a hostile file may hold many rows) */
        yq_tuned_kernel *sorted = malloc(sizeof *sorted * (size_t)n);
        if (!sorted) { st = RFAIL(YQ_ERR_NOMEM, "%s: out of memory", r->path); goto done; }
        memcpy(sorted, k, sizeof *sorted * (size_t)n);
        qsort(sorted, (size_t)n, sizeof *sorted, cmp_kernel);
        for (int i = 1; i < n; i++)
            if (!cmp_kernel(&sorted[i - 1], &sorted[i])) {
                int node = sorted[i].node, batch = sorted[i].batch, sm = sorted[i].sm;
                free(sorted);
                BAD("%s: /kernels/choices: two rows choose for node %d, batch %d, sm_%d", r->path, node, batch, sm);
            }
        free(sorted);
    }
#undef BAD
done:
    free(rec);
    if (st != YQ_OK) {
        free(k);
        return st;
    }
    info->kernels = k;
    info->n_kernels = n;
    return YQ_OK;
}

static yq_status check_signature(rctx *r)
{
    static const unsigned char sig[8] = { 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n' };
    unsigned char b[8];
    if (r->mem) {
        if (r->mem_n < 8 || memcmp(r->mem, sig, 8))
            return RFAIL(YQ_ERR_FORMAT, "%s: not a yquant package (not an HDF5 file: no HDF5 signature)", r->path);
        return YQ_OK;
    }
    FILE *fp = fopen(r->path, "rb");
    if (!fp) return RFAIL(YQ_ERR_IO, "%s: cannot open: %s", r->path, strerror(errno));
    size_t got = fread(b, 1, 8, fp);
    fclose(fp);
    if (got != 8 || memcmp(b, sig, 8))
        return RFAIL(YQ_ERR_FORMAT, "%s: not a yquant package (not an HDF5 file: no HDF5 signature)", r->path);
    return YQ_OK;
}

/* The root's format and version: YQ_OK when this reader can read the rest. */
static yq_status check_format(rctx *r, hid_t f, int *version)
{
    if (H5Aexists(f, "format") <= 0)
        return RFAIL(YQ_ERR_FORMAT, "%s: not a yquant package (an HDF5 file without a 'format' attribute)", r->path);
    char *fmt;
    yq_status st = r_attr_str(r, f, "/", "format", 0, &fmt);
    if (st != YQ_OK) return st;
    if (strcmp(fmt, FORMAT_NAME)) {
        st = RFAIL(YQ_ERR_FORMAT, "%s: not a yquant package (format is '%.64s')", r->path, fmt);
        free(fmt);
        return st;
    }
    free(fmt);
    if ((st = r_attr_int(r, f, "/", "format_version", version)) != YQ_OK) return st;
    if (*version == 1 || *version == 2)
        return RFAIL(YQ_ERR_UNSUPPORTED, "%s: package format version %d holds the 64-bit requantize of an older "
                     "yquant, which this one no longer runs: quantize the model again", r->path, *version);
    if (*version < YQ_PACKAGE_VERSION_MIN || *version > YQ_PACKAGE_VERSION)
        return RFAIL(YQ_ERR_UNSUPPORTED, "%s: package format version %d, this yquant reads versions %d to %d",
                     r->path, *version, YQ_PACKAGE_VERSION_MIN, YQ_PACKAGE_VERSION);
    return YQ_OK;
}

/* /checksums against the file's objects (see "checksums" above); every version this reader
 * reads has them; *have: they were there and matched. */
static yq_status verify_checksums(rctx *r, hid_t f, int *have)
{
    *have = H5Lexists(f, "checksums", H5P_DEFAULT) > 0;
    if (!*have) return RFAIL(YQ_ERR_FORMAT, "%s: damaged package: /checksums is missing", r->path);
    pk_check *want = NULL;
    int n = -1;
    yq_status st = r_table(r, f, "checksums", "/checksums", check_fields_tab, NFIELDS(check_fields_tab), sizeof(pk_check),
                           &n, (void **)&want);
    if (st != YQ_OK) return st;
    /* Each listed object opened by its name and hashed (no walk of the whole file: a walk
     * through a damaged group can leave HDF5's own state unclosable at exit).  A dataset
     * the list does not name is not read by this loader either. */
    for (int i = 0; i < n && st == YQ_OK; i++) {
        pk_check *c = &want[i];
        c->object[CK_NAME - 1] = 0;
        c->sha256[64] = 0;
        char obj[CK_NAME];
        snprintf(obj, sizeof obj, "%s", c->object);
        char *at = strrchr(obj, '@');
        if (at) *at++ = 0;
        if (obj[0] != '/' || (at && !*at) || (!at && !strcmp(obj, "/"))) {
            st = RFAIL(YQ_ERR_FORMAT, "%s: damaged package: /checksums names '%.64s'", r->path, c->object);
            break;
        }
        hid_t o = H5Oopen(f, obj, H5P_DEFAULT);
        hid_t x = o < 0 ? -1 : at ? H5Aopen(o, at, H5P_DEFAULT) : o;
        uint8_t sha[32];
        char hex[65];
        if (x < 0 || ck_hash(x, at != NULL, sha) != 0)
            st = RFAIL(YQ_ERR_FORMAT, "%s: damaged package: %s is missing or cannot be read", r->path, c->object);
        else if (yq_hex_encode(sha, 32, hex), strcmp(hex, c->sha256))
            st = RFAIL(YQ_ERR_FORMAT, "%s: damaged package: %s does not match its checksum", r->path, c->object);
        if (at && x >= 0) H5Aclose(x);
        if (o >= 0) H5Oclose(o);
    }
    free(want);
    return st;
}

static hid_t open_file(rctx *r, yq_status *st)
{
    /* STRONG: closing the file closes whatever an error path left open in it */
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl >= 0) H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
    if (r->mem) {
        /* the core driver on a copy of the bytes, nothing on disk */
        hid_t f = -1;
        if (fapl >= 0 && H5Pset_fapl_core(fapl, 64 << 10, 0) >= 0 &&
            H5Pset_file_image(fapl, (void *)r->mem, r->mem_n) >= 0)
            f = H5Fopen(YQ_H5MEM_NAME, H5F_ACC_RDONLY, fapl);
        if (fapl >= 0) H5Pclose(fapl);
        if (f < 0) {
            char h[YQ_H5_WHY];
            yq_h5_why(h);
            *st = RFAIL(YQ_ERR_FORMAT, "%s: damaged HDF5 image of %zu bytes, truncated or corrupt (%s)", r->path,
                        r->mem_n, h);
        }
        return f;
    }
    hid_t f = H5Fopen(r->path, H5F_ACC_RDONLY, fapl >= 0 ? fapl : H5P_DEFAULT);
    if (fapl >= 0) H5Pclose(fapl);
    if (f < 0) {
        char h[YQ_H5_WHY];
        yq_h5_why(h);
        FILE *fp = fopen(r->path, "rb");
        long size = -1;
        if (fp && fseek(fp, 0, SEEK_END) == 0) size = ftell(fp);
        if (fp) fclose(fp);
        *st = RFAIL(YQ_ERR_FORMAT, "%s: damaged HDF5 file of %ld bytes, truncated or corrupt (%s)", r->path, size, h);
    }
    return f;
}

static yq_status package_load(rctx *r, yq_graph **out, yq_package_info **info_out)
{
    const char *path = r->path;
    yq_status st = check_signature(r);
    if (st != YQ_OK) return st;
    hid_t f = open_file(r, &st);
    if (f < 0) return st;
    yq_graph *g = NULL;
    yq_package_info *info = calloc(1, sizeof *info);
    pk_node *recs = NULL;
    pk_qnode *qrecs = NULL;
    float *thr = NULL;
    hid_t quant = -1, cal = -1;
    char who[96];
    int N = -1;
#define TRY(x) do { if ((st = (x)) != YQ_OK) goto fail; } while (0)
    if (!info) { st = RFAIL(YQ_ERR_NOMEM, "%s: out of memory", path); goto fail; }
    TRY(check_format(r, f, &info->format_version));
    TRY(verify_checksums(r, f, &info->checksums));

    /* Root attributes. */
    TRY(r_attr_buf(r, f, "yquant_version", info->yquant_version, sizeof info->yquant_version));
    TRY(r_attr_buf(r, f, "created", info->created, sizeof info->created));
    TRY(r_attr_buf(r, f, "model_sha256", info->model_sha256, sizeof info->model_sha256));
    TRY(r_attr_buf(r, f, "calib_images_sha256", info->calib_images_sha256, sizeof info->calib_images_sha256));
    TRY(r_attr_buf(r, f, "cfg_path", info->cfg_path, sizeof info->cfg_path));
    TRY(r_attr_buf(r, f, "weights_path", info->weights_path, sizeof info->weights_path));
    uint8_t sha[32], sha2[32];
    if (!yq_hex_decode(info->model_sha256, sha, 32) || !yq_hex_decode(info->calib_images_sha256, sha2, 32)) {
        st = RFAIL(YQ_ERR_FORMAT, "%s: model_sha256 or calib_images_sha256 is not 64 hex digits", path);
        goto fail;
    }
    int net_lb;
    TRY(r_attr_int(r, f, "/", "letterbox", &info->letterbox));
    TRY(r_attr_int(r, f, "/", "net_letter_box", &net_lb));
    TRY(r_attr_int(r, f, "/", "input_c", &info->input_c));
    TRY(r_attr_int(r, f, "/", "input_h", &info->input_h));
    TRY(r_attr_int(r, f, "/", "input_w", &info->input_w));

    /* The graph, node by node, checked against shape inference. */
    TRY(r_table(r, f, "graph", "/graph/nodes", node_fields, info->format_version >= 5 ? (int)NFIELDS(node_fields) : NODE_FIELDS_V4,
                sizeof(pk_node), &N, (void **)&recs));
    TRY(r_table(r, f, "quant", "/quant/nodes", qnode_fields, NFIELDS(qnode_fields), sizeof(pk_qnode), &N, (void **)&qrecs));
    g = yq_graph_new();
    if (!g) { st = RFAIL(YQ_ERR_NOMEM, "%s: out of memory", path); goto fail; }
    for (int i = 0; i < N; i++) {
        pk_node *rc = &recs[i];
        if (!memchr(rc->name, 0, sizeof rc->name) || !memchr(rc->op, 0, sizeof rc->op) || !memchr(rc->act, 0, sizeof rc->act)) {
            st = RFAIL(YQ_ERR_FORMAT, "%s: node %d: name, op or act is not a terminated string", path, i);
            goto fail;
        }
        snprintf(who, sizeof who, "node %d (%s)", i, rc->name);
        TRY(build_node(r, g, i, rc, who));
    }
    if (g->nodes[0].out.c != info->input_c || g->nodes[0].out.h != info->input_h || g->nodes[0].out.w != info->input_w) {
        st = RFAIL(YQ_ERR_FORMAT, "%s: input %dx%dx%d in the attributes, %dx%dx%d in /graph/nodes", path,
                   info->input_c, info->input_h, info->input_w, g->nodes[0].out.c, g->nodes[0].out.h, g->nodes[0].out.w);
        goto fail;
    }

    /* The int8 annotation. */
    yq_qnode *q = yq_arena_alloc(g, sizeof *q * (size_t)N);
    if (!q) { st = RFAIL(YQ_ERR_NOMEM, "%s: out of memory", path); goto fail; }
    g->q = q;
    for (int i = 0; i < N; i++) {
        snprintf(who, sizeof who, "node %d (%s)", i, g->nodes[i].name);
        if (!memchr(qrecs[i].dtype, 0, sizeof qrecs[i].dtype)) {
            st = RFAIL(YQ_ERR_FORMAT, "%s: %s: dtype is not a terminated string", path, who);
            goto fail;
        }
        TRY(check_qnode(r, g, i, &qrecs[i], &q[i], who));
    }
    quant = H5Gopen2(f, "quant", H5P_DEFAULT);
    if (quant < 0) { st = RFAIL(YQ_ERR_FORMAT, "%s: cannot open /quant (damaged)", path); goto fail; }
    for (int i = 1; i < N; i++) {
        if (g->nodes[i].op != YQ_OP_CONV) continue;
        snprintf(who, sizeof who, "node %d (%s)", i, g->nodes[i].name);
        TRY(load_conv(r, quant, g, i, who));
    }

    /* Names, text, calibration. */
    TRY(load_names(r, f, g));
    TRY(r_ds_str(r, f, "qconfig", 0, &info->qconfig_text));
    TRY(r_ds_str(r, f, "accuracy", 0, &info->accuracy_json));
    TRY(r_ds_str(r, f, "tuning", 1, &info->tuning_json));
    TRY(r_ds_str(r, f, "request", 1, &info->request_text));
    TRY(r_ds_str(r, f, "plan", 1, &info->plan_json));
    TRY(load_kernels(r, f, g, info));
    if (H5Lexists(f, "calibration", H5P_DEFAULT) <= 0) { st = RFAIL(YQ_ERR_FORMAT, "%s: missing group /calibration", path); goto fail; }
    cal = H5Gopen2(f, "calibration", H5P_DEFAULT);
    if (cal < 0) { st = RFAIL(YQ_ERR_FORMAT, "%s: /calibration is not a group (or is damaged)", path); goto fail; }
    TRY(r_attr_str(r, cal, "/calibration", "method", 0, &info->calib_method));
    TRY(r_attr_int(r, cal, "/calibration", "images", &info->calib_images));
    thr = malloc(sizeof *thr * (size_t)N);
    if (!thr) { st = RFAIL(YQ_ERR_NOMEM, "%s: out of memory", path); goto fail; }
    TRY(r_array(r, cal, "thresh", "/calibration/thresh", "calibration", H5T_FLOAT, 4, H5T_NATIVE_FLOAT, N, thr));
    for (int i = 0; i < N; i++)
        if (!isfinite(thr[i]) || thr[i] < 0) {
            st = RFAIL(YQ_ERR_FORMAT, "%s: /calibration/thresh[%d] = %g", path, i, (double)thr[i]);
            goto fail;
        }
    if (info->calib_images < 0) { st = RFAIL(YQ_ERR_FORMAT, "%s: /calibration images = %d", path, info->calib_images); goto fail; }
#undef TRY

    memcpy(g->model_sha256, sha, 32);
    snprintf(g->cfg_path, sizeof g->cfg_path, "%s", info->cfg_path);
    snprintf(g->weights_path, sizeof g->weights_path, "%s", info->weights_path);
    g->letter_box = net_lb;
    H5Gclose(cal);
    H5Gclose(quant);
    if (H5Fclose(f) < 0) {
        f = -1;
        quant = cal = -1;
        st = RFAIL(YQ_ERR_FORMAT, "%s: closing failed (damaged)", path);
        goto fail;
    }
    free(recs);
    free(qrecs);
    free(thr);
    *out = g;
    if (info_out) *info_out = info;
    else yq_package_info_free(info);
    return YQ_OK;
fail:
    if (cal >= 0) H5Gclose(cal);
    if (quant >= 0) H5Gclose(quant);
    if (f >= 0) H5Fclose(f);
    free(recs);
    free(qrecs);
    free(thr);
    yq_graph_free(g);
    yq_package_info_free(info);
    return st;
}

/* ---- public ------------------------------------------------------------- */

/* HDF5 prints its error stack by default; our callers get one line instead.
 * The handler is process-wide, so it is restored on the way out. */
typedef struct h5quiet { H5E_auto2_t fn; void *data; } h5quiet;
static h5quiet quiet_begin(void)
{
    h5quiet q = { NULL, NULL };
    H5Eget_auto2(H5E_DEFAULT, &q.fn, &q.data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    return q;
}
static void quiet_end(h5quiet q) { H5Eset_auto2(H5E_DEFAULT, q.fn, q.data); }

yq_status yq_package_write(const char *path, const yq_graph *g, const yq_package_meta *meta, yq_error *err)
{
    h5quiet q = quiet_begin();
    yq_status st = package_write(path, g, meta, err);
    quiet_end(q);
    return st;
}

yq_status yq_package_load(const char *path, yq_graph **out, yq_package_info **info, yq_error *err)
{
    if (!path || !out) return yq_fail(err, YQ_ERR_INVALID_ARG, "package: no path or no output");
    h5quiet q = quiet_begin();
    rctx r = { path, err, NULL, 0 };
    yq_status st = package_load(&r, out, info);
    quiet_end(q);
    return st;
}

yq_status yq_package_image(const char *name, const yq_graph *g, const yq_package_meta *meta, void **buf, size_t *n,
                           yq_error *err)
{
    if (!buf || !n) return yq_fail(err, YQ_ERR_INVALID_ARG, "package: no output");
    *buf = NULL;
    *n = 0;
    if (!name) name = "(package in memory)";
    h5quiet q = quiet_begin();
    yq_h5mem im;
    yq_status st = package_image(name, g, meta, &im, n, err);
    quiet_end(q);
    if (st != YQ_OK) return st;
    *buf = im.kept;               /* (malloc'd by the image callbacks: the caller's now) */
    return YQ_OK;
}

yq_status yq_package_load_mem(const char *name, const void *buf, size_t n, yq_graph **out, yq_package_info **info,
                              yq_error *err)
{
    if (!buf || !out) return yq_fail(err, YQ_ERR_INVALID_ARG, "package: no bytes or no output");
    h5quiet q = quiet_begin();
    rctx r = { name ? name : "(package in memory)", err, buf, n };
    yq_status st = package_load(&r, out, info);
    quiet_end(q);
    return st;
}

void yq_package_info_free(yq_package_info *info)
{
    if (!info) return;
    free(info->qconfig_text);
    free(info->accuracy_json);
    free(info->calib_method);
    free(info->tuning_json);
    free(info->request_text);
    free(info->plan_json);
    free(info->kernels);
    free(info);
}

int yq_file_is_hdf5(const char *path)
{
    yq_error err;
    rctx r = { path, &err, NULL, 0 };
    return path && check_signature(&r) == YQ_OK;
}

int yq_package_is(const char *path)
{
    if (!path) return 0;
    yq_error err;
    rctx r = { path, &err, NULL, 0 };
    if (check_signature(&r) != YQ_OK) return 0;
    h5quiet q = quiet_begin();
    yq_status st;
    hid_t f = open_file(&r, &st);
    int is = 0;
    if (f >= 0) {
        char *fmt = NULL;
        is = H5Aexists(f, "format") > 0 && r_attr_str(&r, f, "/", "format", 0, &fmt) == YQ_OK && !strcmp(fmt, FORMAT_NAME);
        free(fmt);
        H5Fclose(f);
    }
    quiet_end(q);
    return is;
}

void yq_package_meta_from_info(const yq_package_info *info, yq_package_meta *meta)
{
    memset(meta, 0, sizeof *meta);
    meta->qconfig_text = info->qconfig_text;
    meta->accuracy_json = info->accuracy_json;
    meta->calib_method = info->calib_method;
    meta->tuning_json = info->tuning_json;
    meta->request_text = info->request_text;
    meta->plan_json = info->plan_json;
    meta->kernels = info->kernels;
    meta->n_kernels = info->n_kernels;
    meta->calib_images = info->calib_images;
    meta->letterbox = info->letterbox;
    for (int i = 0; i < 32; i++) {
        unsigned x = 0;
        sscanf(info->calib_images_sha256 + 2 * i, "%2x", &x);
        meta->calib_images_sha256[i] = (uint8_t)x;
    }
}
