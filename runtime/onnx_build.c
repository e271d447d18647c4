/* runtime/onnx_build.h: ONNX messages built in one pool. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir/fsio.h"
#include "runtime/onnx_build.h"

void *yq_pb_get(yq_pbpool *P, size_t n)
{
    if (P->n == P->cap) {
        int cap = P->cap ? 2 * P->cap : 256;
        void **np = realloc(P->p, sizeof *np * (size_t)cap);
        if (!np) return NULL;
        P->p = np;
        P->cap = cap;
    }
    void *x = calloc(1, n ? n : 1);
    if (x) P->p[P->n++] = x;
    return x;
}

void yq_pb_free(yq_pbpool *P)
{
    for (int i = 0; i < P->n; i++) free(P->p[i]);
    free(P->p);
    memset(P, 0, sizeof *P);
}

char *yq_pb_str(yq_pbpool *P, const char *a, const char *b)
{
    size_t la = strlen(a), lb = b ? strlen(b) : 0;
    char *s = yq_pb_get(P, la + lb + 1);
    if (s) {
        memcpy(s, a, la);
        if (b) memcpy(s + la, b, lb);
    }
    return s;
}

int yq_pb_push(yq_pbpool *P, void *array_, int *n, int *cap, void *x)
{
    void ***a = array_;
    if (*n == *cap) {
        int c = *cap ? 2 * *cap : 256;
        void **na = yq_pb_get(P, sizeof *na * (size_t)c);
        if (!na) return -1;
        if (*n) memcpy(na, *a, sizeof *na * (size_t)*n);
        *a = na;
        *cap = c;
    }
    (*a)[(*n)++] = x;
    return 0;
}

Onnx__TensorProto *yq_pb_tensor(yq_pbpool *P, const char *name, int dt, const int64_t *dims, int nd, const void *raw,
                                size_t bytes)
{
    Onnx__TensorProto *t = yq_pb_get(P, sizeof *t);
    int64_t *d = yq_pb_get(P, sizeof *d * (size_t)(nd ? nd : 1));
    uint8_t *b = yq_pb_get(P, bytes);
    if (!t || !d || !b) return NULL;
    onnx__tensor_proto__init(t);
    if (nd) memcpy(d, dims, sizeof *d * (size_t)nd);
    t->n_dims = (size_t)nd;
    t->dims = d;
    t->has_data_type = 1;
    t->data_type = dt;
    t->name = (char *)name;
    if (raw) memcpy(b, raw, bytes);
    t->has_raw_data = 1;
    t->raw_data.len = bytes;
    t->raw_data.data = b;
    return t;
}

Onnx__NodeProto *yq_pb_node(yq_pbpool *P, const char *op, const char *name, const char *const *in, int nin,
                            const char *const *out, int nout)
{
    Onnx__NodeProto *n = yq_pb_get(P, sizeof *n);
    char **i = yq_pb_get(P, sizeof *i * (size_t)(nin ? nin : 1)), **o = yq_pb_get(P, sizeof *o * (size_t)(nout ? nout : 1));
    if (!n || !i || !o) return NULL;
    onnx__node_proto__init(n);
    for (int k = 0; k < nin; k++) i[k] = (char *)in[k];
    for (int k = 0; k < nout; k++) o[k] = (char *)out[k];
    n->n_input = (size_t)nin, n->input = i;
    n->n_output = (size_t)nout, n->output = o;
    n->op_type = (char *)op;
    n->name = (char *)name;
    return n;
}

static Onnx__AttributeProto *attr(yq_pbpool *P, Onnx__NodeProto *n, const char *name, int type)
{
    Onnx__AttributeProto *a = yq_pb_get(P, sizeof *a);
    Onnx__AttributeProto **aa = yq_pb_get(P, sizeof *aa * (n->n_attribute + 1));
    if (!a || !aa) return NULL;
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = type;
    if (n->n_attribute) memcpy(aa, n->attribute, sizeof *aa * n->n_attribute);
    aa[n->n_attribute++] = a;
    n->attribute = aa;
    return a;
}

int yq_pb_attr_int(yq_pbpool *P, Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = attr(P, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (!a) return -1;
    a->has_i = 1;
    a->i = v;
    return 0;
}

int yq_pb_attr_ints(yq_pbpool *P, Onnx__NodeProto *n, const char *name, const int64_t *v, int nv)
{
    Onnx__AttributeProto *a = attr(P, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    int64_t *d = yq_pb_get(P, sizeof *d * (size_t)(nv ? nv : 1));
    if (!a || !d) return -1;
    memcpy(d, v, sizeof *d * (size_t)nv);
    a->n_ints = (size_t)nv;
    a->ints = d;
    return 0;
}

int yq_pb_attr_float(yq_pbpool *P, Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = attr(P, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (!a) return -1;
    a->has_f = 1;
    a->f = v;
    return 0;
}

int yq_pb_attr_str(yq_pbpool *P, Onnx__NodeProto *n, const char *name, const char *v)
{
    Onnx__AttributeProto *a = attr(P, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    if (!a) return -1;
    a->has_s = 1;
    a->s.data = (uint8_t *)v;
    a->s.len = strlen(v);
    return 0;
}

Onnx__NodeProto *yq_pb_qdq(yq_pbpool *P, const char *op, const char *x, const char *s, const char *z, const char *y, int axis)
{
    const char *in[3] = { x, s, z }, *out[1] = { y };
    Onnx__NodeProto *n = yq_pb_node(P, op, yq_pb_str(P, y, "_node"), in, 3, out, 1);
    if (!n || !n->name || (axis >= 0 && yq_pb_attr_int(P, n, "axis", axis))) return NULL;
    return n;
}

yq_status yq_pb_write_model(const Onnx__ModelProto *m, const char *path, yq_error *err)
{
    size_t sz = onnx__model_proto__get_packed_size(m);
    uint8_t *pk = malloc(sz ? sz : 1);
    if (!pk) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    onnx__model_proto__pack(m, pk);
    yq_outfile of;
    yq_status st = yq_out_begin(&of, path, YQ_OUT_STREAM, err);
    if (!st) {
        if (fwrite(pk, 1, sz, of.f) != sz) {
            yq_out_abort(&of);
            st = yq_fail(err, YQ_ERR_IO, "%s: write failed", path);
        } else st = yq_out_commit(&of, err);
    }
    free(pk);
    return st;
}

static yq_status scales_commit(yq_outfile *o, const char *path, yq_error *err)
{
    if (ferror(o->f)) {
        yq_out_abort(o);
        return yq_fail(err, YQ_ERR_IO, "%s: write failed", path);
    }
    return yq_out_commit(o, err);
}

yq_status yq_scales_write_trt(const char *path, const yq_act_scale *a, int n, yq_error *err)
{
    yq_outfile o;
    yq_status st = yq_out_begin(&o, path, YQ_OUT_STREAM, err);
    if (st) return st;
    /* TensorRT's header; the version field: 8.6's (the format is unchanged since) */
    fprintf(o.f, "TRT-8601-EntropyCalibration2\n");
    for (int i = 0; i < n; i++) {
        float s = a[i].scale * (a[i].u8 ? 255.0f / 127.0f : 1.0f);   /* TensorRT: amax / 127, signed */
        uint32_t bits;
        memcpy(&bits, &s, 4);
        fprintf(o.f, "%s: %08x\n", a[i].name, (unsigned)bits);
    }
    return scales_commit(&o, path, err);
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", *s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

yq_status yq_scales_write_json(const char *path, const char *model, const char *sha256, const yq_act_scale *a, int na,
                               const yq_w_scale *w, int nw, const char *floats, yq_error *err)
{
    yq_outfile o;
    yq_status st = yq_out_begin(&o, path, YQ_OUT_STREAM, err);
    if (st) return st;
    FILE *f = o.f;
    fprintf(f, "{\n  \"format\": \"yquant-scales\",\n  \"model\": ");
    json_str(f, model);
    fprintf(f, ",\n  \"model_sha256\": \"%s\",\n  \"activations\": {", sha256);
    for (int i = 0; i < na; i++) {
        fprintf(f, "%s\n    ", i ? "," : "");
        json_str(f, a[i].name);
        fprintf(f, ": {\"scale\": %.9g, \"zero_point\": 0, \"type\": \"%s\"}", (double)a[i].scale, a[i].u8 ? "uint8" : "int8");
    }
    fprintf(f, "\n  },\n  \"weights\": {");
    for (int i = 0; i < nw; i++) {
        fprintf(f, "%s\n    ", i ? "," : "");
        json_str(f, w[i].name);
        fprintf(f, ": {\"axis\": 0, \"scales\": [");
        for (int c = 0; c < w[i].n; c++) fprintf(f, "%s%.9g", c ? ", " : "", (double)w[i].scales[c]);
        fprintf(f, "]}");
    }
    fprintf(f, "\n  },\n  \"float_convs\": ");
    json_str(f, floats ? floats : "");
    fprintf(f, "\n}\n");
    return scales_commit(&o, path, err);
}
