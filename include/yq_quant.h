/* yquant: making an int8 package, as a library (the quantize command's steps without the
 * command line).  A quantizer holds an FP32 Darknet model and where its calibration
 * images are; a qconfig handle says how to quantize (the keys of `yquant quantize --set`
 * and qconfig files).  Calibration runs once per qconfig and is cached on disk as the CLI
 * caches it; nothing here prints: progress, warnings and notes go to yq_quant_io.
 *
 *     yq_error err;
 *     yq_qconf *qc = NULL;
 *     yq_quantizer *q = NULL;
 *     yq_dataset *val = NULL;
 *     yq_quant_opt o = yq_quant_defaults();
 *     o.calib = "calib_images/";
 *     double fp[2], q8[2];
 *     if (yq_qconf_new(&qc, &err) || yq_qconf_set(qc, "head", "float", &err) ||
 *         yq_dataset_load_coco("val.json", "val/", &val, &err) ||                // include/yq_data.h
 *         yq_quantizer_new("yolo-fastest-1.1-xl.cfg", &o, NULL, &q, &err) ||
 *         yq_quantizer_evaluate(q, NULL, val, fp, &err) ||                       // FP32
 *         yq_quantizer_evaluate(q, qc, val, q8, &err) ||                         // int8
 *         yq_quantizer_save(q, qc, "model-int8.yqp", &err))
 *         fprintf(stderr, "%s\n", err.msg);
 *     yq_quantizer_free(q);
 *     yq_dataset_free(val);
 *     yq_qconf_free(qc);
 *
 * The package is then a yq_model (include/yq.h: yq_model_open, yq_session_new);
 * yq_quantizer_model gives the same model without keeping a file.
 * examples/quantize.c is a whole program on this header. */
#ifndef YQ_QUANT_H
#define YQ_QUANT_H

#include "yq.h"
#include "yq_data.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- qconfig handles ----------------------------------------------------------- */

typedef struct yq_qconf yq_qconf;

/* The defaults (8 bits, per-channel weights, the default calibration method, ...). */
yq_status yq_qconf_new(yq_qconf **out, yq_error *err);
/* A qconfig file (`key = value` lines, # comments, per-layer `layer.N.key = value`), on
 * top of the defaults. */
yq_status yq_qconf_load(const char *path, yq_qconf **out, yq_error *err);
/* A qconfig file's keys on top of q (as `--qconfig FILE` after other flags); on an error q
 * is left as it was. */
yq_status yq_qconf_update(yq_qconf *q, const char *path, yq_error *err);
/* The same from a qconfig file's text (yq_qconf_text's, say); name (may be NULL) names it in
 * messages ("name:LINE: ..."). */
yq_status yq_qconf_parse(const char *text, const char *name, yq_qconf **out, yq_error *err);
/* One key (as `--set key=value`); an unknown key or bad value fails naming it and leaves
 * the handle as it was.  Its messages begin "qconfig: " (a caller may put its own origin,
 * a flag or a file, in its place). */
yq_status yq_qconf_set(yq_qconf *q, const char *key, const char *value, yq_error *err);
/* The qconfig as a qconfig file's text (malloc'd: free(); NULL when out of memory);
 * yq_qconf_load reads it back to the same qconfig. */
char *yq_qconf_text(const yq_qconf *q);
/* A copy of q (a new handle: yq_qconf_free). */
yq_status yq_qconf_dup(const yq_qconf *q, yq_qconf **out, yq_error *err);
/* The value of a top-level key as the qconfig file writes it ("8", "per_channel", "mse",
 * "float", "on", ...) into buf (cap bytes, always terminated), and "skip_layers": every
 * layer kept float by a skip (the list, and per-layer `layer.N.skip = on`), "0,105", ""
 * when none.  An unknown key is YQ_ERR_INVALID_ARG naming it; a value longer than cap is
 * YQ_ERR_INVALID_ARG too (buf then holds nothing). */
yq_status yq_qconf_get(const yq_qconf *q, const char *key, char *buf, size_t cap, yq_error *err);
void yq_qconf_free(yq_qconf *q);               /* NULL is a no-op */

/* ---- the quantizer ------------------------------------------------------------- */

/* Where long jobs report (each may be NULL; ctx is passed to all). */
typedef struct yq_quant_io {
    void (*stage)(void *ctx, const char *label);            /* a step begins ("calibrating (GPU)") */
    void (*progress)(void *ctx, int done, int total);       /* the step's progress */
    yq_warn_fn warn;                                        /* something went around it */
    yq_warn_fn note;                                        /* worth a line ("calibration: cache hit") */
    void *ctx;
} yq_quant_io;

typedef struct yq_quant_opt {
    const char *calib;        /* the calibration images: a folder (required) */
    const char *weights;      /* NULL: found beside the cfg; "synthetic[:SEED]" as yq_model_opt's */
    int width, height;        /* the network input (multiples of 32); 0: as the cfg says */
    int bn_pjreddie;          /* batch-norm folded as the original darknet does (yq_model_opt's) */
    const char *cache;        /* the calibration cache file; NULL: $XDG_CACHE_HOME/yquant/calib.h5
                                 or ~/.cache/yquant/calib.h5 (none when neither is set) */
    int no_cache;             /* 1: neither read nor write a cache */
    const char *device;       /* where calibration runs: "cpu", "cuda", "cuda:N"; NULL: cuda when
                                 usable, else cpu (with a warning) */
    int letterbox;            /* -1: as the model's cfg says; 0 plain resize; 1 letterbox */
    long long created_unix;   /* the package's creation time, seconds since 1970 UTC; 0: now (a
                                 fixed time gives the same package bytes for the same inputs) */
} yq_quant_opt;

yq_quant_opt yq_quant_defaults(void);

typedef struct yq_quantizer yq_quantizer;

/* model: a Darknet .cfg, or a folder holding one (and its .weights).  The options are
 * copied. */
yq_status yq_quantizer_new(const char *model, const yq_quant_opt *o, const yq_quant_io *io, yq_quantizer **out,
                           yq_error *err);
/* Calibrates for qc now (yq_quantizer_evaluate and _save do it when needed): the
 * activations' statistics on the calibration images, from the cache when it holds them. */
yq_status yq_quantizer_calibrate(yq_quantizer *q, const yq_qconf *qc, yq_error *err);
/* COCO accuracy on a labelled set (yq_data.h: yq_dataset_load_coco or _load_yolo) on the
 * CPU: qc NULL, the FP32 model (OpenBLAS); else the int8 model qc makes (the integer
 * reference, float layers in their exact FP32, as every engine runs them).  map[0]:
 * mAP@[.5:.95], map[1]: mAP@.5, in [0, 1]. */
yq_status yq_quantizer_evaluate(yq_quantizer *q, const yq_qconf *qc, const yq_dataset *ds, double map[2], yq_error *err);
/* One point of a sweep: COCO accuracy on a labelled set with the engine timed image by
 * image (batch 1).  qc NULL: the FP32 model (on the CPU, OpenBLAS, whatever device says);
 * else qc's int8 model on device: "cpu" or NULL (the integer reference, float layers in
 * their exact FP32), "cuda" or "cuda:N" (the GPU int8 engine, which the packages run:
 * the reference's bytes for every int8 layer, float layers in FP16).  A GPU evaluation
 * that fails goes on on the CPU with a warning (score->gpu says where it ran). */
typedef struct yq_quant_score {
    double map, map50, map75; /* mAP@[.5:.95], mAP@.5, mAP@.75, in [0, 1] */
    double ms_engine;         /* the engine alone per image, median (on the GPU: upload, forward,
                                 download of the heads) */
    double ms_engine_mean;    /* the same, mean */
    double ms_wall;           /* per image, everything: decoding, resizing, engine, NMS */
    int images;               /* images evaluated (one that cannot be read: a warning, skipped) */
    int gpu;                  /* the GPU int8 engine evaluated */
} yq_quant_score;
yq_status yq_quantizer_score(yq_quantizer *q, const yq_qconf *qc, const yq_dataset *ds, const char *device,
                             yq_quant_score *score, yq_error *err);

/* One point of a sweep (`yquant sweep`): qc's int8 model scored as yq_quantizer_score does,
 * and, from the same rewrite, what it resolved to and (o->latency) its latency.  The
 * callback gets the int8 model, borrowed for the call (yq.h: yq_model_latency, sessions,
 * yq_model_layer), and returns 1 with *ms set, or 0 when it measured nothing.  qc NULL:
 * the FP32 model, on the CPU (no resolved qconfig, no latency).  Calibration is shared by
 * every qconfig with the same `equalize` value (the only key that changes what calibration
 * observes), so the points of a grid calibrate at most twice. */
typedef struct yq_point_opt {
    const char *device;       /* where the mAP is measured: as yq_quantizer_score's */
    int strict;               /* 1: a GPU evaluation that fails is an error (else the CPU takes over,
                                 with a warning, and score.gpu says so) */
    int want_dets;            /* keep the detections (yq_point_result.dets) */
    int (*latency)(void *ctx, const yq_model *int8, double *ms);   /* may be NULL */
    void *ctx;
} yq_point_opt;
typedef struct yq_point_result {
    yq_quant_score score;
    double latency_ms;        /* the callback's; -1 when it measured nothing (or none was given) */
    int float_convs, int8_convs;   /* convs the int8 model runs in float, in int8 */
    yq_qconf *resolved;       /* qc as the rewrite ran it (yq_quantizer_resolve's) */
    yq_det *dets;             /* with want_dets: every detection on the set (yq_data.h: yq_coco_eval,
                                 yq_bootstrap_drop) */
    int n_dets;
} yq_point_result;
yq_status yq_quantizer_point(yq_quantizer *q, const yq_qconf *qc, const yq_dataset *ds, const yq_point_opt *o,
                             yq_point_result *out, yq_error *err);
void yq_point_result_free(yq_point_result *r);   /* resolved and dets (NULL r: a no-op) */

/* qc checked against the model without any work (a per-layer key or skip past the last
 * layer, say): the first problem, naming the key. */
yq_status yq_quantizer_check(const yq_quantizer *q, const yq_qconf *qc, yq_error *err);

/* The accuracy-aware search of `yquant quantize --max-drop`: from every layer in int8
 * (head and first conv too), the most sensitive layers are kept in float one step at a
 * time until the mAP@[.5:.95] drop against FP32 on the labelled set is within budget. */
typedef struct yq_max_drop_step {
    int k;                    /* 0: every layer int8; k: the layers this step keeps float in addition */
    const int *layers;
    int n_layers;
    double map, drop_pts;     /* in [0, 1]; the drop against FP32 in points */
    double ms;                /* the evaluation engine's time per image */
    double latency_ms;        /* the latency callback's; < 0: not measured */
    int met;                  /* within the budget */
    int eval_gpu;             /* the mAP came from the GPU int8 engine */
} yq_max_drop_step;
typedef struct yq_max_drop_opt {
    double budget_pts;        /* the largest drop allowed, mAP points (0.5: half a point) */
    const char *rank;         /* how layers are ranked: "tensor" (NULL: the default; each int8 tensor's
                                 error at the detection outputs, a step keeps a tensor float with its
                                 conv and readers), "head" (head SQNR gain), "sqnr" (the layer's own
                                 SQNR), "map" (the mAP gain, one evaluation per conv) */
    int max_float;            /* > 0: at most this many float convs */
    const char *device;       /* where the mAP is measured: as yq_quantizer_score's (NULL: cpu) */
    const yq_quant_score *fp32;   /* FP32 on the set when the caller has it (NULL: measured here) */
    int want_dets;            /* keep the all-int8 and the answer's detections in the result */
    /* each step's latency (as yq_point_opt's; may be NULL) */
    int (*latency)(void *ctx, const yq_model *int8, double *ms);
    /* each step as it is measured (may be NULL) */
    void (*step)(void *ctx, const yq_max_drop_step *s);
    void *ctx;
    /* Spread over processes (`mpirun yquant quantize --max-drop`), as yq_sens_opt's: with
     * parts > 1 the steps are measured parts at a time (step k + j by part j), and the "map"
     * and "head" rankings' measurements split as sensitivity's rows; exchange fills in the rows of the
     * other parts (row i from part i % parts).  Every part then takes the steps in order as
     * one process does: the same answer, steps and figures at any number of parts (the
     * latencies are each part's own measurements). */
    int part, parts;
    int (*exchange)(void *ctx, void *rows, size_t row_bytes, int n);
    void *exchange_ctx;
} yq_max_drop_opt;

typedef struct yq_max_drop_result {
    int met;                  /* the budget was met (else the answer is the step with the lowest drop) */
    double fp32_map;          /* FP32 on the set */
    double all_int8_map;      /* every layer int8 */
    double map;               /* the answer's */
    int n_float;              /* convs the answer keeps float */
    int *float_layers;        /* those layers, in the order the steps chose them (yq_max_drop_result_free) */
    int steps;                /* steps measured after the all-int8 one */
    int tried;                /* float convs of the last step measured */
    double drop_pts;          /* the answer's drop, points */
    yq_quant_score all_int8_score, score;   /* the all-int8 evaluation and the answer's */
    double all_int8_latency_ms, latency_ms; /* the latency callback's (-1: not measured) */
    int eval_gpu;             /* the evaluations ended on the GPU int8 engine */
    yq_det *all_int8_dets, *dets;           /* with want_dets (yq_max_drop_result_free) */
    int n_all_int8_dets, n_dets;
} yq_max_drop_result;
void yq_max_drop_result_free(yq_max_drop_result *r);   /* float_layers and the detections */

/* qc's settings (bits, calibration method, weights, ...) searched as above; *chosen (a new
 * handle: yq_qconf_free) is qc with head and first int8, keep_float 0 and skip_layers the
 * float layers chosen, so yq_quantizer_save(q, *chosen, ...) writes the package searched. */
yq_status yq_quantizer_max_drop(yq_quantizer *q, const yq_qconf *qc, const yq_dataset *ds, const yq_max_drop_opt *o,
                                yq_qconf **chosen, yq_max_drop_result *result, yq_error *err);

/* Per-layer sensitivity (`yquant sensitivity`): from qc's settings with every layer int8
 * (head and first conv too), for each int8 conv (a) only it in int8 and (b) only it in
 * float, the mAP@[.5:.95] on the labelled set and the SQNR of the tensors feeding the
 * heads on sqnr_images calibration images.  *rows (malloc'd: free()) most sensitive first:
 * by impact = drop(a) + gain(b) in mAP points, or (rank_sqnr) by the head SQNR gain of (b). */
typedef struct yq_sens_opt {
    int max_layers;           /* > 0: only the convs with the lowest SQNR in the all-int8 graph */
    int sqnr_images;          /* calibration images for the SQNR figures (0: 8) */
    int rank_sqnr;            /* rank by the head SQNR gain of (b) instead of the impact */
    /* Spread over processes (`mpirun yquant sensitivity`): this call measures the layers
     * k = part, part + parts, ... of its measuring order (parts 0 or 1: every layer), then
     * calls exchange(exchange_ctx, rows, row_bytes, n), which must fill in every other
     * row of the array from the process that measured it (row k from part k % parts, the
     * same rows everywhere) and return 0; anything else fails the call.  The table is then
     * ranked as one process ranks it: the same table at any number of parts. */
    int part, parts;
    int (*exchange)(void *ctx, void *rows, size_t row_bytes, int n);
    void *exchange_ctx;
} yq_sens_opt;
typedef struct yq_sens_layer {
    int layer;                /* Darknet layer index */
    double sqnr_db;           /* its output's SQNR in the all-int8 graph */
    double map_a, head_db_a;  /* (a) only this layer int8: mAP in [0, 1], head SQNR (dB) */
    double map_b, head_db_b;  /* (b) only this layer float */
    double impact_pts;        /* drop(a) + gain(b), mAP points */
} yq_sens_layer;
typedef struct yq_sens_summary {
    double fp32_map, all_int8_map, all_int8_head_db;
} yq_sens_summary;
/* (o NULL: every conv, 8 images, ranked by impact) */
yq_status yq_quantizer_sensitivity(yq_quantizer *q, const yq_qconf *qc, const yq_dataset *ds, const yq_sens_opt *o,
                                   yq_sens_layer **rows, int *n_rows, yq_sens_summary *summary, yq_error *err);

/* What qc resolves to on this model; qc itself (the request) is never changed.
 * *resolved (a new handle; may be NULL: not wanted) is qc with the measured choices written
 * in: keep_float's float convs as per-layer skips, thresh_search's thresholds as per-layer
 * thresholds (both keys then 0), so that it reproduces the same int8 model.  *plan_json
 * (malloc'd: free(); may be NULL: not wanted) is the rewrite's decision for every node:
 *   {"chosen_float": [layers], "searched_thresholds": [layers], "float_convs": n,
 *    "int8_convs": n, "nodes": [{"layer", "op", "dtype": "int8" | "float", "why": "int8" |
 *    "skip_layers" | "keep_float" | "head" | "first" | "activation" | "inputs", "bits",
 *    "thresh", "precision": "fp32" | "fp16w" (float convs)}, ...]} */
yq_status yq_quantizer_resolve(yq_quantizer *q, const yq_qconf *qc, yq_qconf **resolved, char **plan_json,
                               yq_error *err);

/* The int8 model's error against FP32, layer by layer, on the first n_images calibration images
 * (evenly spaced over the folder; 8 when 0): every layer but the heads, in network order,
 * *rows malloc'd (free()).  *images (may be NULL): the images compared. */
typedef struct yq_layer_error {
    int layer;                /* Darknet layer index */
    const char *type;         /* "conv", "route", ... */
    int out_c, out_h, out_w;
    const char *dtype;        /* its output: "int8", "float" (a float layer) or "i8>f" (float written) */
    double sqnr_db;           /* 10 log10(sum f^2 / sum (f - q)^2); 200 when exact */
    double max_abs;           /* max |f - q| */
    int feeds_head;           /* a detection head reads it */
} yq_layer_error;
yq_status yq_quantizer_layer_errors(yq_quantizer *q, const yq_qconf *qc, int n_images, yq_layer_error **rows,
                                    int *n_rows, int *images, yq_error *err);

/* Quantizes as qc directs and writes the int8 package (atomically: a failed write leaves
 * no file), recording the qconfig as asked (/request), as resolved (/qconfig) and the plan
 * (/plan), as yq_quantizer_resolve gives them, and the calibration method and images. */
yq_status yq_quantizer_save(yq_quantizer *q, const yq_qconf *qc, const char *path, yq_error *err);
/* The same with what the caller measured recorded too. */
typedef struct yq_save_opt {
    const char *accuracy_json;    /* [{"name", "map", "map50", "engine", ...}, ...] (yq_model_about's) */
} yq_save_opt;
yq_status yq_quantizer_save_with(yq_quantizer *q, const yq_qconf *qc, const char *path, const yq_save_opt *o,
                                 yq_error *err);
/* The int8 model qc makes, as an open model (include/yq.h: sessions on the CPU or a GPU;
 * yq_model_free): exactly the package yq_quantizer_save would write, made and loaded in
 * memory (yq_model_open_mem), no file written. */
yq_status yq_quantizer_model(yq_quantizer *q, const yq_qconf *qc, yq_model **out, yq_error *err);
/* The FP32 model the quantizer holds, as the files hold it (yq.h: describe it, its layers, run
 * FP32 sessions on the CPU); borrowed: valid until yq_quantizer_free. */
const yq_model *yq_quantizer_fp32(const yq_quantizer *q);
void yq_quantizer_free(yq_quantizer *q);       /* NULL is a no-op */

/* ---- Q/DQ ONNX export ----------------------------------------------------------- */

/* An int8 package of an ONNX model written back as that model with QuantizeLinear /
 * DequantizeLinear pairs carrying the package's scales (runtime/onnx_export.c): a Q/DQ pair
 * on every tensor the package computes in int8 (per tensor, zero point 0), the package's
 * int8 weights (per output channel, axis 0) and int32 biases behind DequantizeLinear on
 * every int8 conv, the package's float weights on the convs it keeps in float, the
 * package's record in the metadata (yquant_version, yquant_qconfig, yquant_accuracy,
 * yquant_float_convs, yquant_model_sha256).  Written atomically. */
typedef struct yq_export_opt {
    const char *model;        /* the source .onnx; NULL: the path the package records.  Its
                                 sha256 must be the package's (YQ_ERR_INVALID_ARG else) */
    const char *trt_cache;    /* also: a TensorRT calibration cache of the activation scales
                                 for the original model; refused (YQ_ERR_INVALID_ARG) when the
                                 package's int8 weights are not the model's (equalized) */
    const char *scales_json;  /* also: the scales as JSON ("-": standard output) */
} yq_export_opt;
yq_export_opt yq_export_defaults(void);
/* pkg: a package opened with yq_model_open (of an ONNX model: YQ_ERR_UNSUPPORTED for a
 * Darknet one; opset 13 or later); out: the Q/DQ model's path. */
yq_status yq_export_qdq(const yq_model *pkg, const char *out, const yq_export_opt *o, yq_error *err);

/* Any model yquant made or reads, as ONNX (runtime/onnx_darknet.c; written atomically):
 *   - a package of an ONNX model: yq_export_qdq;
 *   - a Darknet model (yq_model_open): its FP32 graph as ONNX opset 13 (BN folded; input
 *     "images", float N x 3 x H x W in [0, 1]; one output per yolo/region head, named after it,
 *     its input undecoded; the heads' anchors, masks and strides in the metadata's
 *     yquant_heads, the class names in "names");
 *   - a package of a Darknet model: the same graph with a Q/DQ pair on every tensor the
 *     package holds in int8 and its int8 weights and int32 biases behind DequantizeLinear,
 *     and the package's record in the metadata.  o->scales_json and o->trt_cache write its
 *     scales under the graph's tensor names (the FP32 export's names too; the TensorRT cache
 *     only for a package quantized with equalize=off).  o->model does not apply. */
yq_status yq_export_onnx(const yq_model *m, const char *out, const yq_export_opt *o, yq_error *err);

#ifdef __cplusplus
}
#endif

#endif
