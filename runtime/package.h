/* The int8 deploy package (.yqp): one HDF5 file with everything needed to run an
 * int8 graph without its source model: the graph, the int8 weights and
 * requantize parameters, the weights of layers kept in float, the qconfig text,
 * a calibration summary, the measured accuracy, provenance hashes and the
 * per-layer kernel choices of `yquant tune` (optional).  The layout is documented
 * at the top of package.c.
 *
 *     yq_package_meta meta = { .qconfig_text = qtext, .accuracy_json = acc,
 *                              .calib_method = "percentile:99.99", .calib_images = 80 };
 *     if (yq_package_write("m-int8.yqp", g, &meta, &err) != YQ_OK) ...   // g->q set
 *
 *     yq_graph *g2;
 *     yq_package_info *info;
 *     if (yq_package_load("m-int8.yqp", &g2, &info, &err) != YQ_OK) ...
 *     yq_plan_new(g2, 1, 0, &p, &err);  yq_exec_int8(p, input, NULL, NULL, &err);
 *     yq_package_info_free(info);  yq_graph_free(g2);
 *
 * The loader validates everything it reads (format and version, every dataset's
 * type and size against the graph's own shape inference, indices, enums, scales,
 * shifts), so a damaged or hostile file gives a one-line error, never a crash.
 * HDF5 is not thread-safe in its serial build: do not call these concurrently.
 */
#ifndef YQ_PACKAGE_H
#define YQ_PACKAGE_H

#include "ir/ir.h"

/* Bump when a reader of the previous version would misread a new file: a
 * dataset or field renamed, removed or given another meaning, an enum's
 * spelling changed.  Adding an optional dataset, attribute or compound field
 * that old readers can ignore does not bump it.  The loader reads this
 * version only and refuses others with a message naming both. */
#define YQ_PACKAGE_VERSION 5         /* 5: anchor-free detect heads; 4: activation tables (4, 3 read as is) */
#define YQ_PACKAGE_VERSION_MIN 3   /* 1 and 2: the 64-bit requantize, no longer run */

/* One per-layer kernel choice (`yquant tune`, runtime/tune.h): conv node `node`
 * runs the kernel configuration named `cfg` (yq_conv_cfg_name: "mma_128x128x64_s3",
 * "dp4a_64x64", ...) in sessions of `batch` images on GPUs of compute capability
 * `sm` (major*10+minor: 90).  Every configuration computes the same bytes; the
 * choice is about speed only, so a session on another GPU or batch may ignore it. */
typedef struct yq_tuned_kernel {
    int node, batch, sm;
    char cfg[32];
    float us;                     /* measured time of one run of the conv with cfg (0: unknown) */
    float default_us;             /* the same with the untuned default (0: unknown) */
} yq_tuned_kernel;

/* What the caller knows that the graph does not.  Strings may be NULL (stored
 * empty; tuning_json NULL: no /tuning dataset). */
typedef struct yq_package_meta {
    const char *qconfig_text;     /* yq_qconfig_str's text */
    const char *accuracy_json;    /* FP32 and int8 mAP etc., as JSON */
    const char *calib_method;     /* "percentile:99.99", ... */
    const char *tuning_json;      /* free-form notes on tuning (JSON), optional */
    const char *request_text;     /* the qconfig as asked, before the measured choices (optional;
                                     qconfig_text is the resolved one) */
    const char *plan_json;        /* the rewrite's per-node decisions (yq_pipe_plan_json), optional */
    const yq_tuned_kernel *kernels;   /* n_kernels per-layer kernel choices (0: no /kernels) */
    int n_kernels;
    uint8_t calib_images_sha256[32];
    int calib_images;             /* images calibration used */
    int letterbox;                /* preprocessing the accuracy was measured with (meta NULL: the cfg's) */
    long long created_unix;       /* the 'created' time, seconds since 1970 UTC; 0: now.  The rest of
                                     the file is a function of its contents, so a fixed time gives
                                     the same bytes (yquant takes it from SOURCE_DATE_EPOCH) */
} yq_package_meta;

/* The metadata of a loaded package.  Owned; free with yq_package_info_free. */
typedef struct yq_package_info {
    int format_version;
    int checksums;                /* 1: every dataset and attribute matched /checksums (always,
                                     for a package that loads: every version read has them) */
    char yquant_version[32];      /* of the yquant that wrote it */
    char created[32];             /* ISO 8601 UTC, "2026-11-30T12:34:56Z" */
    char model_sha256[65];        /* hex: of cfg bytes || weights bytes */
    char calib_images_sha256[65]; /* hex */
    char cfg_path[512], weights_path[512];   /* where the source model was (provenance only) */
    char *qconfig_text;           /* never NULL ("" when none was stored) */
    char *accuracy_json;          /* never NULL */
    char *calib_method;           /* never NULL */
    char *tuning_json;            /* NULL when the package has no /tuning */
    char *request_text;           /* NULL when the package has no /request */
    char *plan_json;              /* NULL when the package has no /plan */
    yq_tuned_kernel *kernels;     /* NULL (n_kernels 0) when the package has no /kernels */
    int n_kernels;
    int letterbox;
    int calib_images;
    int input_c, input_h, input_w;
} yq_package_info;

/* Writes a temporary beside path (ir/fsio.h), loads it back through the validating
 * loader, and renames it onto path: on any failure there is no new file at path (an
 * existing one is left untouched) and no temporary.  A graph the loader would refuse (a NaN scale, an
 * int8 conv without int8 weights) is YQ_ERR_INVALID_ARG naming the node.
 * g->q must be set (an int8 graph); meta may be NULL. */
yq_status yq_package_write(const char *path, const yq_graph *g, const yq_package_meta *meta, yq_error *err);

/* Builds an int8 graph (g->q set) ready for yq_plan_new + yq_exec_int8.  Int8
 * convs have no float weights (n->w == NULL): YQ_PLAN_FLOAT plans of it fail.
 * info may be NULL.  *out and *info are set only on YQ_OK. */
yq_status yq_package_load(const char *path, yq_graph **out, yq_package_info **info, yq_error *err);

/* The same package in memory: yq_package_image makes the bytes yq_package_write would
 * write (*buf malloc'd: free(); name, may be NULL, only names it in messages), yq_package_load_mem
 * reads them (as yq_package_load reads a file, validating everything; buf is copied, the
 * caller keeps it). */
yq_status yq_package_image(const char *name, const yq_graph *g, const yq_package_meta *meta, void **buf, size_t *n,
                           yq_error *err);
yq_status yq_package_load_mem(const char *name, const void *buf, size_t n, yq_graph **out, yq_package_info **info,
                              yq_error *err);

void yq_package_info_free(yq_package_info *info);   /* NULL is a no-op */
/* The metadata a package was written with, from its info (strings and kernels borrowed from
 * info): writing the same graph with it gives the package back (with created_unix 0: now). */
void yq_package_meta_from_info(const yq_package_info *info, yq_package_meta *meta);

/* 1 when path starts with the HDF5 signature: a package, or a damaged one (to load and be
 * told what is wrong), rather than a Darknet model. */
int yq_file_is_hdf5(const char *path);

/* 1 if path is an HDF5 file whose root says format = "yquant-package"
 * (any version); 0 otherwise, errors included. */
int yq_package_is(const char *path);

#endif
