/* yquant: INT8 quantization and calibration for YOLO-family detectors.
 *
 * The one public header.  Every call that can fail returns a yq_status and fills
 * a caller-owned yq_error with the detail (file, layer, what is wrong).  Running a
 * model (an int8 .yqp package, or a Darknet model in FP32 on the CPU):
 *
 *     yq_error err;
 *     yq_model *m = NULL;
 *     yq_session *s = NULL;
 *     if (yq_model_open("yolo-fastest-1.1-xl-int8.yqp", &m, &err) != YQ_OK ||
 *         yq_session_new(m, "cuda:0", 4, &s, &err) != YQ_OK) {     // or "cpu"
 *         fprintf(stderr, "%s\n", err.msg);
 *         ...
 *     }
 *     const char *paths[2] = { "dog.jpg", "horses.jpg" };
 *     yq_detection dets[2 * 100];
 *     int counts[2];
 *     if (yq_session_run_images(s, paths, 2, dets, 100, counts, &err) == YQ_OK)
 *         for (int k = 0; k < counts[1]; k++)                      // image 1: dets + 100
 *             printf("%s %.2f\n", yq_model_class_name(m, dets[100 + k].cls), dets[100 + k].score);
 *     yq_session_free(s);
 *     yq_model_free(m);
 *
 * Handles are pointers to incomplete structs; there is no global state.  A model
 * may serve several sessions; a session is used by one thread at a time.
 */
#ifndef YQ_H
#define YQ_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define YQ_VERSION "0.1.0"

typedef enum yq_status {
    YQ_OK = 0,
    YQ_ERR_INVALID_ARG,   /* a bad argument or option value */
    YQ_ERR_IO,            /* a file could not be opened, read or written */
    YQ_ERR_FORMAT,        /* a file is malformed: truncated, over-long, bad values */
    YQ_ERR_UNSUPPORTED,   /* valid input that yquant does not handle */
    YQ_ERR_SHAPE,         /* shapes that do not fit together */
    YQ_ERR_NOMEM,
    YQ_ERR_CUDA           /* a CUDA error, or no CUDA device where one was asked for */
} yq_status;

typedef struct yq_error {
    yq_status code;
    char msg[512];        /* one line: path, line or layer, what is wrong */
} yq_error;

/* One detection, in pixels of the original image. */
typedef struct yq_detection {
    float x, y, w, h;     /* top-left corner, width, height */
    float score;          /* objectness x class probability */
    int cls;              /* class index in the model's order (darknet's 0-79 for COCO) */
} yq_detection;

/* A warning of a long job that goes on (an unreadable image skipped), as one line
 * without a "warning:" prefix or newline.  yquant never prints; a caller that wants the
 * warnings passes one of these (NULL drops them: the jobs still count what they skip). */
typedef void (*yq_warn_fn)(void *ctx, const char *msg);

/* A short name for a status ("format error", ...); never NULL. */
const char *yq_status_str(yq_status st);

/* The CPU int8 engine this machine runs int8 models on: "avx512-vnni" or "avx2" (yquant's
 * kernels for those instruction sets, found at run time), or "dgemm" (a CPU with neither:
 * the exact double-precision GEMM path).  Every one gives the reference's bytes. */
const char *yq_cpu_int8_engine(void);

/* ---- models ---------------------------------------------------------------- */
typedef struct yq_model yq_model;
typedef struct yq_session yq_session;

/* path: an int8 deploy package (.yqp, checked as it loads), a Darknet model (a folder with
 * one .cfg and one .weights, and optionally a .names, or a .cfg with its .weights beside
 * it), or an Ultralytics detect export (.onnx); the last two run in FP32 on the CPU.  *out
 * set only on YQ_OK. */
yq_status   yq_model_open(const char *path, yq_model **out, yq_error *err);
/* A package's bytes in memory (read, say, from an archive or made by yq_quantizer_model):
 * checked as yq_model_open checks a file; buf is copied, the caller keeps it.  name (may
 * be NULL) names it in messages. */
yq_status   yq_model_open_mem(const void *buf, size_t n, const char *name, yq_model **out, yq_error *err);
/* How a Darknet model is read (an .onnx model takes width and height only; packages take
 * none of these: set, they are an error). */
typedef struct yq_model_opt {
    const char *weights;  /* NULL: the .weights beside the cfg; "synthetic" or "synthetic:SEED":
                             made-up weights of the right shapes (for tests and timing) */
    int width, height;    /* the network input, multiples of 32; 0: as the cfg says */
    int bn_pjreddie;      /* fold batch-norm as the original darknet does ((x-mean)/(sqrt(var)+1e-6));
                             0 (default): AlexeyAB's (x-mean)/sqrt(var+1e-5), which trained the
                             shared models */
    int cfg_only;         /* a cfg whose weights cannot be found is read alone: shapes and layers
                             (yq_model_layer), no sessions */
} yq_model_opt;
yq_model_opt yq_model_defaults(void);
/* yq_model_open with options (o NULL: the defaults). */
yq_status   yq_model_open_opt(const char *path, const yq_model_opt *o, yq_model **out, yq_error *err);
void        yq_model_free(yq_model *m);                   /* NULL is a no-op; after its sessions */
int         yq_model_is_int8(const yq_model *m);          /* 1 for a package (or quantized graph) */
void        yq_model_input(const yq_model *m, int *c, int *h, int *w);   /* network input size */
int         yq_model_classes(const yq_model *m);          /* classes of the first head */
/* The class's name, NULL when the model has none or cls is out of range; borrowed. */
const char *yq_model_class_name(const yq_model *m, int cls);
int         yq_model_letterbox(const yq_model *m);        /* 1: letterboxed the model's way (darknet's, or
                                                             Ultralytics' grey-114 one for ONNX models); 0: resized */
int         yq_model_has_weights(const yq_model *m);      /* 0 for a cfg read alone (cfg_only) */

/* What a model is and where it comes from; strings borrowed from the model, never NULL
 * unless said.  A package's record (is_package) also says how it was made. */
typedef struct yq_model_about {
    const char *cfg, *weights;    /* the Darknet files (an ONNX model: its file, twice; "" when
                                     none; a package: where its source was when it was made) */
    int layers, convs;            /* layers (the input not counted), of which convolutions */
    long long params;
    double flops;                 /* 2 x multiply-adds of one forward */
    int is_package;
    /* a package's record (0 and NULL otherwise) */
    int format_version;
    int checksums;                /* every dataset matched its checksum */
    const char *yquant_version, *created, *model_sha256;
    int calib_images;
    const char *calib_images_sha256, *calib_method;
    const char *qconfig;          /* the qconfig as resolved (reproduces the model) */
    const char *qconfig_request;  /* as asked; NULL when the package did not store it */
    const char *plan_json;        /* every node's precision and why (yq_quantizer_resolve's); may be NULL */
    const char *accuracy_json;    /* the accuracy measured when it was made: [{"name", "map", "map50",
                                     "engine"}, ...] */
    const char *tuning_json;      /* the GPU it was tuned on; may be NULL */
    int n_kernels;                /* yq_model_kernel's choices */
} yq_model_about;
void yq_model_describe(const yq_model *m, yq_model_about *out);

/* Layer i (0 <= i < about.layers) in network order, as every engine runs it.  Strings are
 * static or in *out. */
typedef struct yq_layer {
    int index;                    /* the Darknet layer index (0-based) */
    const char *type;             /* "conv", "maxpool", "route", "shortcut", "upsample", "yolo", ... */
    char detail[96];              /* "16 3x3/2 leaky", "from 3 linear", "80 classes, 3 anchors" */
    int cfg_line;                 /* where the cfg declares it (ONNX: the node's position, from 1) */
    int n_inputs;
    int inputs[16];               /* the layers it reads (-1: the network input) */
    int in_c, in_h, in_w, out_c, out_h, out_w;   /* the first input's shape, the output's */
    int size, stride, groups;     /* convs: kernel size, stride, groups (= in_c: depthwise);
                                     maxpool: size, stride; upsample: stride; else 0 */
    long long params;
    double flops;
    /* an int8 model's (NULL, 0 in an FP32 model) */
    const char *dtype;            /* the output: "int8", "uint8", "float" (a float layer), "i8>f32"
                                     (int8 computed, float written) */
    const char *precision;        /* convs: "int8", "fp32", or "fp16w" (float, FP16 weights) */
    int activation_table;         /* the activation through a 256-entry table */
    float scale;                  /* the output's quantization scale */
} yq_layer;
yq_status yq_model_layer(const yq_model *m, int i, yq_layer *out, yq_error *err);

/* A package's tuned kernel choice k (0 <= k < about.n_kernels), from `yquant tune`. */
typedef struct yq_kernel_choice {
    int layer;                    /* the conv's Darknet layer index */
    int sm, batch;                /* tuned for this GPU architecture (90: sm_90) and batch */
    const char *kernel;           /* the kernel configuration's name */
    float us, default_us;         /* the conv timed alone with it, and with the untuned default
                                     (0: unknown) */
} yq_kernel_choice;
yq_status yq_model_kernel(const yq_model *m, int k, yq_kernel_choice *out, yq_error *err);

/* ---- sessions ---------------------------------------------------------------- */
typedef struct yq_session_opt {
    float conf;           /* keep detections with score above this (0.25) */
    float nms;            /* per-class NMS IoU threshold (0.45) */
    int max_dets;         /* detections per image, best first (100) */
    int letterbox;        /* -1: as the model says (default), 0: plain resize, 1: letterbox */
    int cuda_graph;       /* cuda: 1 (default) replays one CUDA graph per batch size, 0 launches
                             kernel by kernel; the results are the same bytes */
    int threads;          /* cpu: threads of the CPU run, every kernel (0, the default: every core; 1..1024);
                             the results are the same bytes */
} yq_session_opt;

yq_session_opt yq_session_defaults(void);

/* A device string: "cpu" -> -1, "cuda" -> 0, "cuda:N" -> N (N < 1024); YQ_ERR_INVALID_ARG
 * for anything else.  The one parser of every device option. */
yq_status yq_device_parse(const char *device, int *index, yq_error *err);

/* device: "cpu", "cuda" (= "cuda:0") or "cuda:N".  On cuda the session plans once
 * (activations in one device allocation, buffers for max_batch images) and runs
 * the whole forward, decode and NMS on the GPU; only the final detections come
 * back.  The GPU runs int8 models; a Darknet (FP32) model runs on "cpu" only.
 * YQ_ERR_CUDA, with a message, when there is no usable GPU, the index is out of
 * range, the GPU is out of memory, or the package was tuned for another
 * architecture; a CPU session of the same model still works.  m is borrowed and
 * must outlive the session.  *out set only on YQ_OK. */
yq_status yq_session_new(const yq_model *m, const char *device, int max_batch, yq_session **out, yq_error *err);
void      yq_session_free(yq_session *s);                 /* NULL is a no-op */
yq_status yq_session_set_options(yq_session *s, const yq_session_opt *o, yq_error *err);
yq_session_opt yq_session_options(const yq_session *s);   /* letterbox resolved to 0 or 1 */
/* "cpu" or "cuda:0 (NVIDIA H200, sm_90)"; borrowed. */
const char *yq_session_device(const yq_session *s);
int         yq_session_max_batch(const yq_session *s);

/* Detects objects in n images (JPEG or PNG), max_batch at a time.  Image i's
 * detections are dets[i * cap_per_image ...], counts[i] of them (at most
 * cap_per_image and max_dets), in original-image pixels, best first.  An image that
 * cannot be read fails the call with its path in the message. */
yq_status yq_session_run_images(yq_session *s, const char *const *paths, int n, yq_detection *dets,
                                int cap_per_image, int *counts, yq_error *err);
/* The same from network inputs already preprocessed (n x C x H x W floats in [0,1],
 * letterboxed or resized as the session's letterbox option says); orig_wh holds the
 * original width and height of each image (2 per image), to map boxes back. */
yq_status yq_session_run_tensor(yq_session *s, const float *nchw, int n, const int *orig_wh,
                                yq_detection *dets, int cap_per_image, int *counts, yq_error *err);

/* A frame already in memory, as a camera or video pipeline holds it: 8-bit interleaved
 * pixels, rows of stride bytes (0: width x the format's bytes a pixel; larger for padded
 * rows, never smaller), the first row first. */
typedef enum yq_pixel_format {
    YQ_PIX_RGB8 = 0,              /* R, G, B */
    YQ_PIX_BGR8 = 1,              /* B, G, R (OpenCV's default) */
    YQ_PIX_RGBA8 = 2,             /* R, G, B, A (the alpha ignored) */
    YQ_PIX_BGRA8 = 3              /* B, G, R, A (the alpha ignored) */
} yq_pixel_format;
typedef struct yq_frame {
    const uint8_t *data;
    int width, height;
    int stride;                   /* bytes a row; 0: dense */
    yq_pixel_format format;
} yq_frame;
/* Detects objects in n frames in memory, as yq_session_run_images does in files: each
 * frame is taken to RGB in [0,1] (v / 255, the decoders' arithmetic), then the same
 * preprocessing, so a frame holding a decoded file's pixels gives that file's detections
 * to the byte.  A frame with no data, a size out of range (yq_image_max_pixels), a stride
 * under a row or an unknown format fails the call naming the frame. */
yq_status yq_session_run_frames(yq_session *s, const yq_frame *frames, int n, yq_detection *dets, int cap_per_image,
                                int *counts, yq_error *err);

/* ---- GPUs ------------------------------------------------------------------------ */

/* CUDA devices usable here; 0 when there is no driver or no GPU (never an error). */
int       yq_gpu_count(void);
/* Device cuda:N described: "NVIDIA H200 (sm_90, 132 SMs)" into buf (cap bytes, always
 * terminated); YQ_ERR_CUDA naming the device when it cannot be reached. */
yq_status yq_gpu_name(int device, char *buf, size_t cap, yq_error *err);

/* ---- GPU latency ------------------------------------------------------------------- */

/* How the tuner went (the distinct conv shapes of the model at the batch, "tasks"). */
typedef struct yq_tune_summary {
    double seconds;               /* the tuning run's wall clock */
    int tasks;                    /* distinct (conv shape, batch) tasks */
    int searched, logged;         /* searched now; read from the tuning log (finished before) */
    int partial, skipped;         /* cut short by the budget; not started within it */
    int trials, measured, failed; /* candidates tried, measured, refused (not the reference's bytes) */
} yq_tune_summary;

typedef struct yq_latency_opt {
    const char *device;           /* "cuda" (NULL: cuda:0) or "cuda:N" */
    int batch;                    /* images per forward (1..4096); default 1 */
    int tune;                     /* 1 (default): tune the conv shapes the log lacks; 0: the log's
                                     choices (if any) and the heuristic, nothing measured per shape */
    const char *tune_log;         /* the tuning log (JSON lines, as `yquant tune --log`): read, and
                                     appended to; NULL: none */
    double tune_budget_s;         /* wall clock for the shapes the log lacks (default 60; <= 0: no limit) */
    int tune_trials;              /* candidates per shape (default 32) */
    int warmup, runs;             /* untimed, timed forwards (default 10, 100) */
} yq_latency_opt;
yq_latency_opt yq_latency_defaults(void);

typedef struct yq_latency {
    double ms, ms_min, ms_mean;   /* one forward of batch images: median, min, mean of the timed runs */
    double eager_ms;              /* the median of the eager launches (always measured) */
    int graph;                    /* 1: ms is from CUDA-graph replays; 0: from eager launches */
    int batch, runs;
    char gpu[160];                /* "NVIDIA H200 (sm_90, 132 SMs)" */
    char gpu_name[128];           /* "NVIDIA H200" */
    int sm;                       /* 90 */
    int int8_convs, tuned_convs;  /* convs that run int8; those that run a tuned choice */
    yq_tune_summary tune;         /* zero when nothing was tuned */
    double tune_s, plan_s;        /* tuning (uploads included), planning */
} yq_latency;

/* The GPU latency of an int8 model's forward (a package, or yq_quantizer_model's): the
 * int8 engine with every conv's kernel tuned for this GPU (the tuning log reused: shapes
 * it has finished for this architecture are read, not measured), the input already on the
 * device, decoding and NMS excluded; timed with CUDA events over replays of one CUDA graph
 * (eager launches when capture fails: out->graph says which); out->ms is the median.  The
 * kernels are exact whatever the choice, so the input is a fixed pattern.  (A package's own
 * tuned choices are what its sessions run; this measures the tuner's for the log given.)
 * YQ_ERR_UNSUPPORTED when there is no CUDA device; YQ_ERR_INVALID_ARG for an FP32 model;
 * a malformed log: YQ_ERR_FORMAT naming file and line.  *out is filled only on YQ_OK. */
yq_status yq_model_latency(const yq_model *m, const yq_latency_opt *o, yq_latency *out, yq_error *err);

#ifdef __cplusplus
}
#endif
#endif
