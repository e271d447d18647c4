/* Building ONNX messages (protobuf-c's generated onnx.pb-c.h) for the two exporters:
 * runtime/onnx_export.c (a package of an ONNX model, as that model with Q/DQ pairs) and
 * runtime/onnx_darknet.c (a Darknet model or package, as an ONNX graph of its own).
 *
 * Every string, array and message comes from one pool and is freed with it; the messages
 * point into the pool and are never given to protobuf-c's free. */
#ifndef YQ_ONNX_BUILD_H
#define YQ_ONNX_BUILD_H

#include <stddef.h>
#include <stdint.h>
#include "ir/ir.h"
#include "onnx.pb-c.h"

typedef struct yq_pbpool { void **p; int n, cap; } yq_pbpool;

void *yq_pb_get(yq_pbpool *P, size_t n);                    /* zeroed; NULL on NOMEM */
void  yq_pb_free(yq_pbpool *P);
char *yq_pb_str(yq_pbpool *P, const char *a, const char *b); /* a then b (b may be NULL) */

/* A growing array of pointers in the pool: *n used, *cap allocated.  0 or -1 (NOMEM). */
int yq_pb_push(yq_pbpool *P, void *array_, int *n, int *cap, void *x);

/* A tensor of type dt (ONNX__TENSOR_PROTO__DATA_TYPE__*), dims[nd], its raw bytes copied
 * (raw NULL: zeros). */
Onnx__TensorProto *yq_pb_tensor(yq_pbpool *P, const char *name, int dt, const int64_t *dims, int nd, const void *raw,
                                size_t bytes);
/* A node of op type op: inputs in[nin] ("" for an absent optional one), outputs out[nout]. */
Onnx__NodeProto *yq_pb_node(yq_pbpool *P, const char *op, const char *name, const char *const *in, int nin,
                            const char *const *out, int nout);
/* Attributes added to node n; 0 or -1 (NOMEM). */
int yq_pb_attr_int(yq_pbpool *P, Onnx__NodeProto *n, const char *name, int64_t v);
int yq_pb_attr_ints(yq_pbpool *P, Onnx__NodeProto *n, const char *name, const int64_t *v, int nv);
int yq_pb_attr_float(yq_pbpool *P, Onnx__NodeProto *n, const char *name, float v);
int yq_pb_attr_str(yq_pbpool *P, Onnx__NodeProto *n, const char *name, const char *v);
/* QuantizeLinear / DequantizeLinear y = op(x, s, z) (axis >= 0: per channel on that axis). */
Onnx__NodeProto *yq_pb_qdq(yq_pbpool *P, const char *op, const char *x, const char *s, const char *z, const char *y, int axis);

/* m packed and written to path atomically (ir/fsio.h). */
yq_status yq_pb_write_model(const Onnx__ModelProto *m, const char *path, yq_error *err);

/* The scale tables both exporters write beside the model: an int8 tensor of the model (its
 * name, scale, uint8 or int8) and an int8 conv's weight (its initializer's name, per-channel
 * scales). */
typedef struct yq_act_scale { const char *name; float scale; int u8; } yq_act_scale;
typedef struct yq_w_scale { const char *name; const float *scales; int n; } yq_w_scale;
/* A TensorRT calibration cache: "name: hex of amax / 127" per tensor. */
yq_status yq_scales_write_trt(const char *path, const yq_act_scale *a, int n, yq_error *err);
/* The JSON table {"format": "yquant-scales", "model", "model_sha256", "activations",
 * "weights", "float_convs"}. */
yq_status yq_scales_write_json(const char *path, const char *model, const char *sha256, const yq_act_scale *a, int na,
                               const yq_w_scale *w, int nw, const char *floats, yq_error *err);

#endif
