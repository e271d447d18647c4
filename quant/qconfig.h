/* The qconfig: what to quantize and how.  A file of `key = value` lines
 * (# comments), with per-layer overrides `layer.N.key = value`; the same keys as
 * command-line flags (`--bits 6`, `--calib kl`, `--skip-layers 0,105`).
 *
 *     yq_qconfig qc;
 *     yq_qconfig_defaults(&qc);
 *     yq_qconfig_load(&qc, "my.qconfig", &err);     // optional
 *     yq_qconfig_set(&qc, "bits", "6", "--bits", &err);
 *     yq_qconfig_validate(&qc, g, &err);           // layer indices exist
 *
 * Keys (README: "qconfig keys"):
 *   bits            2..8            activation and weight bits (symmetric, zero point 0)
 *   weights         per_channel | per_tensor
 *   weight_scale    max | power2 | mse
 *   calib           max | percentile:P | kl | mse
 *   skip_layers     comma list of layer indices kept in float
 *   rounding        nearest | even  (ties away from zero | ties to even, for weights and biases)
 *   head            int8 | float    the convs feeding the [yolo]/[region] heads
 *   first           int8 | float    the first conv (int8: it reads the uint8 image directly)
 *   keep_float      0..64           up to N convs kept in float, chosen by measurement (quant/select.h):
 *                                   the tensors whose rounding alone adds the most error at the heads
 *                                   stay float with their producer and consumer convs; recorded as
 *                                   layer.N.skip
 *   thresh_search   0..256          re-choose the thresholds of the N scale classes adding the most
 *                                   error at the heads, against that error (quant/select.h); recorded
 *                                   as layer.N.thresh
 *   equalize        on | off        cross-layer equalization of conv pairs (quant/equalize.h)
 *   float_precision fp32 | fp16w    the convs kept in float: FP32 weights (the default) or weights
 *                                   rounded to FP16 (fp16w); either way FP32 arithmetic defined to
 *                                   the bit (kernels/cpu_fp32.h yq_f32_conv_exact), which every
 *                                   engine computes: CPU and GPU give the same bytes
 *   bias_correction off | weights | data
 *                                   weights: fold the mean shift the weight rounding causes
 *                                   into the bias; data: that, then measured shifts (quant/biascorr.h)
 *   per-layer:      layer.N.bits, layer.N.calib, layer.N.weights, layer.N.weight_scale, layer.N.skip,
 *                   layer.N.thresh (the threshold of the scale class layer N's output belongs to)
 */
#ifndef YQ_QCONFIG_H
#define YQ_QCONFIG_H

#include "calib/hist.h"

typedef enum yq_wscale { YQ_WSCALE_MAX = 0, YQ_WSCALE_POWER2, YQ_WSCALE_MSE } yq_wscale;

typedef struct yq_layer_qc {
    int bits;                  /* 0: the global value */
    int per_channel;           /* -1: global */
    int wscale;                /* -1: global */
    int skip;                  /* -1: global (skip_layers), 0/1 */
    int has_calib;
    yq_calib_method calib;
    float thresh;              /* > 0: the output's threshold, instead of calibration's */
} yq_layer_qc;

#define YQ_QC_MAX_LAYERS 4096

typedef struct yq_qconfig {
    int bits;
    int per_channel;
    yq_wscale wscale;
    yq_calib_method calib;
    int round_even;
    int head_float, first_float;
    int keep_float;
    int thresh_search;         /* scale classes whose thresholds are searched (0: none) */
    int equalize, bias_correction;   /* bias_correction: 0 off, 1 weights, 2 data */
    int float_fp16w;           /* float convs: 1 fp16w (FP16-rounded weights), 0 fp32 */
    int act_table;             /* mish/swish/logistic convs: 1 int8 through a table, 0 float */
    int n_layers;              /* entries of layer[] used (max index + 1) */
    yq_layer_qc layer[YQ_QC_MAX_LAYERS];
} yq_qconfig;

/* A qconfig file's longest line (yq_qconfig_load: a longer one is an error). */
#define YQ_QC_MAX_LINE 4096

void yq_qconfig_defaults(yq_qconfig *qc);
/* origin names where the value came from in errors ("my.qc:12", "--bits"). */
yq_status yq_qconfig_set(yq_qconfig *qc, const char *key, const char *value, const char *origin, yq_error *err);
yq_status yq_qconfig_load(yq_qconfig *qc, const char *path, yq_error *err);
/* The same from a qconfig file's text (NUL-terminated), named name in messages. */
yq_status yq_qconfig_parse(yq_qconfig *qc, const char *text, const char *name, yq_error *err);
/* Per-layer overrides and skip_layers must name existing layers. */
yq_status yq_qconfig_validate(const yq_qconfig *qc, const yq_graph *g, yq_error *err);
/* The effective settings of darknet layer L. */
int  yq_qc_bits(const yq_qconfig *qc, int layer);
int  yq_qc_per_channel(const yq_qconfig *qc, int layer);
yq_wscale yq_qc_wscale(const yq_qconfig *qc, int layer);
int  yq_qc_skip(const yq_qconfig *qc, int layer);
yq_calib_method yq_qc_calib(const yq_qconfig *qc, int layer);
float yq_qc_thresh(const yq_qconfig *qc, int layer);         /* 0: none set */
/* The whole config as `key = value` text (the package stores it), like snprintf: writes at
 * most cap bytes (always terminated when cap > 0) and returns the length of the whole text,
 * so a return >= cap means it was cut.  buf may be NULL with cap 0 to measure. */
size_t yq_qconfig_str(const yq_qconfig *qc, char *buf, size_t cap);
/* The whole text, malloc'ed (free()); NULL when out of memory. */
char *yq_qconfig_text(const yq_qconfig *qc);

#endif
