/* ir/: the graph yquant works on.
 *
 * A graph is an array of nodes in topological order, all memory in one arena
 * owned by the graph.  Node 0 is the network input; node k (k >= 1) is layer k-1
 * of the Darknet cfg, so darknet's layer indices (route/shortcut) map one to one.
 * Tensors are per image NCHW float32; the batch is a property of a run, not of
 * the graph.
 *
 *     yq_graph *g;
 *     if (yq_darknet_load("m.cfg", "m.weights", &opt, &g, &err) != YQ_OK) ...
 *     for (int i = 0; i < g->n_nodes; i++) printf("%s\n", yq_op_name(g->nodes[i].op));
 *     yq_graph_free(g);
 */
#ifndef YQ_IR_H
#define YQ_IR_H

#include <stddef.h>
#include <stdint.h>
#include "include/yq.h"
#include "ir/requant.h"

#define YQ_MAX_SRC   16    /* route inputs */
#define YQ_MAX_ANCH  32    /* anchors per head */
#define YQ_NAME_LEN  32

typedef enum yq_op {
    YQ_OP_INPUT = 0,
    YQ_OP_CONV,         /* conv + folded BN + bias + activation */
    YQ_OP_SHORTCUT,     /* residual add of src[0] (previous) and src[1] (from), + activation */
    YQ_OP_ROUTE,        /* channel concat of its sources (with darknet's groups/group_id) */
    YQ_OP_UPSAMPLE,     /* nearest neighbour, integer stride */
    YQ_OP_MAXPOOL,
    YQ_OP_DROPOUT,      /* identity at inference */
    YQ_OP_YOLO,         /* detection head (v3/v4): decodes its input, no new tensor */
    YQ_OP_REGION,       /* YOLOv2 detection head */
    YQ_OP_DETECT,       /* anchor-free detection head (YOLOv8/YOLO11, ONNX import): one scale's
                           4 x reg_max box-distance logits (DFL) then the class logits */
    YQ_OP_COUNT
} yq_op;

typedef enum yq_act {
    YQ_ACT_LINEAR = 0, YQ_ACT_LEAKY, YQ_ACT_RELU, YQ_ACT_MISH, YQ_ACT_SWISH, YQ_ACT_LOGISTIC,
    YQ_ACT_COUNT
} yq_act;
/* Activations int8 convs run through a table (ir/requant.h, yq_requant_out; quant/table.c). */
static inline int yq_act_is_table(yq_act a) { return a == YQ_ACT_MISH || a == YQ_ACT_SWISH || a == YQ_ACT_LOGISTIC; }

typedef struct yq_shape { int c, h, w; } yq_shape;

typedef struct yq_conv_p {
    int filters, size, stride, pad, groups;   /* pad: pixels added on each side */
    int batch_normalize;                      /* as the cfg said (BN is folded at import) */
} yq_conv_p;

typedef struct yq_pool_p { int size, stride, pad; } yq_pool_p;  /* pad: total, darknet's "padding" */
typedef struct yq_route_p { int groups, group_id; } yq_route_p;
typedef struct yq_up_p { int stride; } yq_up_p;

typedef struct yq_head_p {
    int classes, num, coords;     /* num: anchors in the cfg; coords: 4 */
    int n_mask, mask[YQ_MAX_ANCH];/* yolo: anchors this head uses; region: all num */
    float anchors[2 * YQ_MAX_ANCH];
    float scale_x_y;              /* 1 when absent */
    int new_coords;               /* yolov7 style decode */
    int softmax;                  /* region */
    int reg_max;                  /* detect: bins of each side's distance distribution (16) */
    int stride;                   /* detect: input pixels per cell of this scale */
} yq_head_p;

/* The detection heads: their input tensor is decoded by the post-processing, no new tensor. */
static inline int yq_op_is_head(yq_op op) { return op == YQ_OP_YOLO || op == YQ_OP_REGION || op == YQ_OP_DETECT; }

/* Element type of a node's output. */
typedef enum yq_dtype { YQ_F32 = 0, YQ_S8, YQ_U8 } yq_dtype;

/* The int8 side of a node, filled by quant/ (the rewrite) or by the package
 * loader; absent (g->q == NULL) in an FP32 graph.  Real value = q * scale. */
typedef struct yq_qnode {
    yq_dtype dtype;          /* output type; F32 for layers kept in float and the head convs */
    int float_op;            /* computed in FP32 (a skipped layer): inputs dequantized, float weights */
    /* float_op convs: fp16w 1 = the weights are FP16 values (ir/half.h), FP32 arithmetic,
     * what every engine computes (the GPU on FP16 tensor cores); 0 = FP32 weights.  wf: the
     * weights such a conv runs with, when they are not n->w (a rewrite of an FP32 model
     * rounds a copy; a loaded package stores them rounded in n->w): engines take
     * yq_conv_weights(). */
    int fp16w;
    float *wf;
    float scale;             /* output scale; for F32 outputs, the scale int8 consumers quantize at */
    float thresh;            /* calibrated threshold (scale = thresh / qmax) */
    int32_t qmin, qmax;      /* output range: [-127, 127] at 8 bits */
    /* conv: int8 weights [filters][in_c/groups][k][k], int32 bias at scale_in * w_scale[o],
     * requantize multipliers per output channel (pos/neg: the fused activation), and
     * for float outputs the dequantize factor scale_in * w_scale[o]. */
    int8_t *wq;
    int32_t *bq;
    float *w_scale;
    float *rq_pos, *rq_neg;  /* FP32 scales (ir/requant.h) */
    /* int8 convs with a table activation (mish, swish, logistic): YQ_LUT_N outputs indexed by
     * the pre-activation on its grid (rq_pos/rq_neg scale onto it; yq_requant_out); else NULL */
    int8_t *lut;
    float *deq;
    /* shortcut: y = sat(rne(a*sa + b*sb)), negative sums times sneg (yq_add_requant) */
    float sa, sb, sneg;
} yq_qnode;

struct yq_node;
/* The float weights a conv computes with: q->wf when set (FP16-rounded), else n->w. */
#define yq_conv_weights(n, q) ((q) && (q)->wf ? (const float *)(q)->wf : (const float *)(n)->w)

typedef struct yq_node {
    yq_op op;
    int layer;                    /* darknet layer index; -1 for the input */
    int line;                     /* cfg line of the section header (0: none) */
    char name[YQ_NAME_LEN];       /* "conv_12", "route_30", ... */
    int n_src, src[YQ_MAX_SRC];   /* node ids, all < this node's id */
    yq_shape out;                 /* output shape, from shape inference */
    yq_act act;
    union { yq_conv_p conv; yq_pool_p pool; yq_route_p route; yq_up_p up; yq_head_p head; } p;
    /* conv parameters after BN folding; owned by the graph's arena.
     * w: [filters][in_c/groups][size][size], b: [filters] */
    float *w, *b;
    long n_w;
} yq_node;

typedef enum yq_bn_eps {
    YQ_BN_ALEXEYAB = 0,   /* (x-mean)/sqrt(var + 1e-5): AlexeyAB's darknet, which trained the shared models */
    YQ_BN_PJREDDIE = 1    /* (x-mean)/(sqrt(var) + 1e-6): the original darknet (Debian's package) */
} yq_bn_eps;

typedef struct yq_arena yq_arena;

typedef struct yq_graph {
    int n_nodes, cap_nodes;
    yq_node *nodes;
    yq_arena *arena;
    /* A view (yq_graph_view; what a rewrite returns): the FP32 graph whose weights and class
     * names its nodes point to, borrowed (it outlives the view) unless owned_base is it too. */
    const struct yq_graph *base;
    struct yq_graph *owned_base;  /* freed with this graph (NULL: none) */
    int letter_box;               /* [net] letter_box=1 (darknet's letterbox); 2: Ultralytics' (ONNX imports) */
    char cfg_path[512], weights_path[512];
    char **class_names;           /* NULL, or classes entries (from a .names file) */
    int n_class_names;
    uint8_t model_sha256[32];     /* of cfg bytes || weights bytes (zero when synthetic) */
    yq_qnode *q;                  /* NULL for an FP32 graph; else one per node (arena) */
} yq_graph;

/* --- graph (ir/graph.c) ------------------------------------------------- */
yq_graph *yq_graph_new(void);
void      yq_graph_free(yq_graph *g);                 /* NULL is a no-op */
/* A copy of an FP32 graph with memory of its own (nodes, weights, class names, paths):
 * freeing either leaves the other whole.  A quantized graph (g->q set) is refused. */
yq_status yq_graph_clone(const yq_graph *g, yq_graph **out, yq_error *err);
yq_node  *yq_graph_add(yq_graph *g, yq_op op, yq_error *err); /* NULL on NOMEM */
void     *yq_arena_alloc(yq_graph *g, size_t bytes);  /* zeroed, 64-byte aligned; NULL on NOMEM */
/* A new graph over FP32 graph g's weights: its own node array (a copy), arena and paths,
 * the weights, biases and class names g's (borrowed: g must outlive it and not change
 * them meanwhile).  What a rewrite fills (quant/rewrite.h) and its owner frees
 * (yq_graph_free, which leaves g whole), so that an FP32 graph is never modified by
 * quantizing it and a sweep's memory is the live points' only.  A quantized g is refused. */
yq_status yq_graph_view(const yq_graph *g, yq_graph **out, yq_error *err);
size_t    yq_graph_bytes(const yq_graph *g);          /* bytes allocated in its arena */
int       yq_graph_find(const yq_graph *g, const char *name);  /* node id or -1 */
const char *yq_op_name(yq_op op);
const char *yq_act_name(yq_act a);
long      yq_node_params(const yq_node *n);           /* weights + biases */
double    yq_node_flops(const yq_graph *g, const yq_node *n);  /* 2 x MACs per image */
yq_shape  yq_node_in_shape(const yq_graph *g, const yq_node *n); /* of src[0] */
static inline long yq_shape_size(yq_shape s) { return (long)s.c * s.h * s.w; }
static inline int yq_dtype_size(yq_dtype t) { return t == YQ_F32 ? 4 : 1; }
/* Output element type of node id (F32 in an FP32 graph). */
static inline yq_dtype yq_node_dtype(const yq_graph *g, int id) { return g->q ? g->q[id].dtype : YQ_F32; }
/* Text dump, one line per node, to f. */
void      yq_graph_dump(const yq_graph *g, void *file);

/* --- shape inference (ir/shape.c) ------------------------------------- */
/* Fills out for node id from its sources; an error names the node. */
yq_status yq_shape_infer(yq_graph *g, int id, yq_error *err);

/* --- Darknet import (ir/darknet.c) -------------------------------------- */
typedef struct yq_import_opt {
    int width, height;            /* 0: as the cfg says */
    yq_bn_eps bn;                 /* how to fold batch-norm */
    int synthetic;                /* generate weights instead of reading a file */
    uint32_t seed;                /* for synthetic weights */
} yq_import_opt;

/* weights_path may be NULL when opt->synthetic.  *out is set only on YQ_OK. */
yq_status yq_darknet_load(const char *cfg_path, const char *weights_path,
                          const yq_import_opt *opt, yq_graph **out, yq_error *err);
/* Parse cfg text alone (no weights; conv w/b stay NULL).  For the fuzzers and tests. */
yq_status yq_darknet_parse_cfg(const char *text, size_t len, const char *path,
                               const yq_import_opt *opt, yq_graph **out, yq_error *err);
/* Read weights for a parsed graph from a memory buffer (for the fuzzer). */
yq_status yq_darknet_read_weights(yq_graph *g, const uint8_t *buf, size_t len,
                                  const char *path, yq_bn_eps bn, yq_error *err);

/* Resolve MODEL as the CLI takes it: a folder with one .cfg and one .weights (and
 * optionally a .names), or a .cfg path with weights_arg ("synthetic[:SEED]" or a
 * path, NULL to look beside the cfg). */
typedef struct yq_model_paths { char cfg[512], weights[512], names[512]; int synthetic; uint32_t seed; } yq_model_paths;
yq_status yq_model_resolve(const char *model, const char *weights_arg, yq_model_paths *out, yq_error *err);
/* Load .names (one class per line) into g. */
yq_status yq_graph_load_names(yq_graph *g, const char *path, yq_error *err);

/* All of a regular file into *buf (malloc'd, *len bytes); errors name the path. */
yq_status yq_read_file(const char *path, uint8_t **buf, size_t *len, yq_error *err);

/* ONNX import (ir/onnx.c): an Ultralytics detect export; opt's width and height (0: the
 * model's) set a dynamic input's size; bn, synthetic and seed do not apply. */
yq_status yq_onnx_load(const char *path, const yq_import_opt *opt, yq_graph **out, yq_error *err);
/* The same from the file's bytes (path, may be NULL, names it in messages). */
yq_status yq_onnx_load_mem(const void *data, size_t len, const char *path, const yq_import_opt *opt, yq_graph **out,
                           yq_error *err);
/* 1 when path names an ONNX model (ends in .onnx, any case). */
int yq_is_onnx(const char *path);

/* The preprocessing a letterbox request means for g (g NULL: darknet's): 0 a plain resize,
 * 1 darknet's letterbox, 2 Ultralytics' (ONNX imports, letter_box 2).  One definition for
 * the preprocessing, both post-processings and the calibration cache's key. */
enum { YQ_LB_NONE = 0, YQ_LB_DARKNET = 1, YQ_LB_ULTRALYTICS = 2 };
static inline int yq_letterbox_kind(const yq_graph *g, int letterbox)
{
    return !letterbox ? YQ_LB_NONE : g && g->letter_box == 2 ? YQ_LB_ULTRALYTICS : YQ_LB_DARKNET;
}
/* A model file as the CLI and the library take it: an ONNX model, or a Darknet model
 * (yq_model_resolve with weights_arg, then its .names when there is one). */
yq_status yq_load_model(const char *model, const char *weights_arg, const yq_import_opt *opt, yq_graph **out,
                        yq_error *err);

/* Progress of a long job (calibration, evaluation): done of total. */
typedef void (*yq_progress_fn)(void *ctx, int done, int total);
/* warn(ctx, "<why> (skipped)") (yq_warn_fn, include/yq.h), nothing when warn is NULL */
void yq_warn_skipped(yq_warn_fn warn, void *ctx, const char *why);

/* --- errors (ir/error.c) ------------------------------------------------ */
yq_status yq_fail(yq_error *err, yq_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
