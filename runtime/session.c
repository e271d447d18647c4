/* Models and sessions: the public run API of include/yq.h.
 *
 * Both run on an engine of runtime/engine.h.  cpu: image by image on the CPU engine
 * (batch 1: the int8 reference or the FP32 engine), yq_postprocess.
 * cuda: the GPU int8 engine for max_batch images (runtime/exec_cuda.c), the GPU
 * post-processing (runtime/gpu_post.c) reading the head tensors where the plan left
 * them, and page-locked staging buffers.  A batch of n images is one sequence on one
 * stream: copy the inputs and image sizes up, quantize the input, every layer,
 * decode, NMS, top-k, copy the records down.  With cuda_graph on, that sequence is
 * captured once per n into a CUDA graph and replayed; either way the host waits
 * once per batch.  A package's per-layer kernel choices (`yquant tune`) are applied
 * to the plan when they were tuned on a GPU of this architecture: the session's
 * batch, else the nearest tuned batch whose choice can run (runtime/tune_apply.c);
 * other convs keep the built-in heuristic. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "datasets/image.h"
#include "kernels/cuda.h"
#include "kernels/cuda_post.h"
#include "runtime/detector.h"
#include "runtime/engine.h"
#include "runtime/plan.h"
#include "runtime/exec_cuda.h"
#include "runtime/gpu_post.h"
#include "runtime/session.h"
#include "runtime/tune.h"

#define MAX_HEADS YQ_POST_MAX_HEADS
#define MAX_BATCH 65536

struct yq_model {
    yq_graph *owned;              /* freed with the model; NULL when borrowed */
    const yq_graph *g;
    yq_package_info *info;
    int letterbox;
    int has_weights;              /* 0: a cfg read alone (no sessions) */
};

struct yq_session {
    const yq_model *m;
    const yq_graph *g;
    int device;                   /* -1: cpu */
    int max_batch;
    yq_session_opt opt;           /* letterbox resolved */
    char name[192];
    int n_heads, head_id[MAX_HEADS];
    size_t in_floats;             /* one image's network input */
    yq_engine *eng;               /* the cpu (batch 1) or the GPU int8 engine (max_batch) */
    float *h_in;                  /* max_batch inputs (cuda: page-locked; cpu: the engine's own) */
    /* cuda */
    yq_gpu_post *post;
    void *stream;                 /* the engine's */
    int *h_wh;                    /* page-locked: max_batch x (w, h) */
    unsigned char *h_res;         /* page-locked: max_batch result records */
    void **graphs;                /* [n - 1]: the captured batch of n, NULL until first used */
    int tuned;                    /* convs running a package's tuned choice */
};

/* ---- models ------------------------------------------------------------------ */

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

yq_model_opt yq_model_defaults(void)
{
    yq_model_opt o;
    memset(&o, 0, sizeof o);
    return o;
}

/* A cfg alone (its weights not found): the graph's shapes, no weights. */
static yq_status read_cfg_alone(const char *cfg, const yq_import_opt *io, yq_graph **g, yq_error *err)
{
    uint8_t *text = NULL;
    size_t len = 0;
    yq_status st = yq_read_file(cfg, &text, &len, err);
    if (st == YQ_OK) st = yq_darknet_parse_cfg((const char *)text, len, cfg, io, g, err);
    free(text);
    return st;
}

yq_status yq_model_open_opt(const char *path, const yq_model_opt *o, yq_model **out, yq_error *err)
{
    if (!path || !*path || !out) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_model_open: no path");
    yq_model_opt d = yq_model_defaults();
    if (!o) o = &d;
    if (o->width < 0 || o->height < 0 || o->width % 32 || o->height % 32 || o->width > 8192 || o->height > 8192)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: input size %dx%d: expected multiples of 32 up to 8192", path,
                       o->width, o->height);
    yq_model *m = calloc(1, sizeof *m);
    if (!m) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    yq_status st;
    m->has_weights = 1;
    if (ends_with(path, ".yqp") || yq_file_is_hdf5(path)) {    /* (a damaged package says so) */
        if (o->weights || o->width || o->height || o->bn_pjreddie)
            st = yq_fail(err, YQ_ERR_INVALID_ARG, "%s: weights, input size and batch-norm folding do not apply to a package",
                         path);
        else st = yq_package_load(path, &m->owned, &m->info, err);
        if (st == YQ_OK) m->letterbox = m->info->letterbox != 0;
    } else {
        yq_import_opt io;
        memset(&io, 0, sizeof io);
        io.width = o->width;
        io.height = o->height;
        io.bn = o->bn_pjreddie ? YQ_BN_PJREDDIE : YQ_BN_ALEXEYAB;
        yq_model_paths mp;
        if (o->cfg_only && !o->weights && !yq_is_onnx(path) && yq_model_resolve(path, NULL, &mp, err) != YQ_OK && mp.cfg[0]) {
            st = read_cfg_alone(mp.cfg, &io, &m->owned, err);    /* its weights not found: the cfg alone */
            m->has_weights = 0;
        } else {
            st = yq_load_model(path, o->weights, &io, &m->owned, err);
        }
        if (st == YQ_OK) m->letterbox = m->owned->letter_box != 0;
    }
    if (st != YQ_OK) {
        yq_model_free(m);
        return st;
    }
    m->g = m->owned;
    *out = m;
    return YQ_OK;
}

yq_status yq_model_open(const char *path, yq_model **out, yq_error *err) { return yq_model_open_opt(path, NULL, out, err); }

yq_status yq_model_open_mem(const void *buf, size_t n, const char *name, yq_model **out, yq_error *err)
{
    if (!buf || !out) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_model_open_mem: no bytes or no output");
    yq_model *m = calloc(1, sizeof *m);
    if (!m) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    yq_status st = yq_package_load_mem(name, buf, n, &m->owned, &m->info, err);
    if (st != YQ_OK) {
        yq_model_free(m);
        return st;
    }
    m->letterbox = m->info->letterbox != 0;
    m->has_weights = 1;
    m->g = m->owned;
    *out = m;
    return YQ_OK;
}

yq_status yq_model_borrow(const yq_graph *g, int letterbox, yq_model **out, yq_error *err)
{
    if (!g || !out) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_model_borrow: no graph");
    yq_model *m = calloc(1, sizeof *m);
    if (!m) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    m->g = g;
    m->letterbox = letterbox ? 1 : 0;
    m->has_weights = 1;
    *out = m;
    return YQ_OK;
}

void yq_model_free(yq_model *m)
{
    if (!m) return;
    yq_graph_free(m->owned);
    yq_package_info_free(m->info);
    free(m);
}

const yq_graph *yq_model_graph(const yq_model *m) { return m->g; }
const yq_package_info *yq_model_info(const yq_model *m) { return m->info; }
int yq_model_is_int8(const yq_model *m) { return m->g->q != NULL; }
int yq_model_letterbox(const yq_model *m) { return m->letterbox; }
int yq_model_has_weights(const yq_model *m) { return m->has_weights; }

void yq_model_input(const yq_model *m, int *c, int *h, int *w)
{
    yq_shape s = m->g->nodes[0].out;
    if (c) *c = s.c;
    if (h) *h = s.h;
    if (w) *w = s.w;
}

int yq_model_classes(const yq_model *m)
{
    for (int i = 0; i < m->g->n_nodes; i++)
        if (yq_op_is_head(m->g->nodes[i].op)) return m->g->nodes[i].p.head.classes;
    return 0;
}

const char *yq_model_class_name(const yq_model *m, int cls)
{
    return cls >= 0 && cls < m->g->n_class_names ? m->g->class_names[cls] : NULL;
}

/* ---- small parsers ------------------------------------------------------------- */

yq_status yq_device_parse(const char *device, int *index, yq_error *err)
{
    if (device && !strcmp(device, "cpu")) { *index = -1; return YQ_OK; }
    if (device && !strcmp(device, "cuda")) { *index = 0; return YQ_OK; }
    if (device && !strncmp(device, "cuda:", 5) && isdigit((unsigned char)device[5])) {
        char *end;
        long v = strtol(device + 5, &end, 10);
        if (!*end && v >= 0 && v < 1024) { *index = (int)v; return YQ_OK; }
    }
    return yq_fail(err, YQ_ERR_INVALID_ARG, "device \"%s\": expected cpu, cuda or cuda:N", device ? device : "(null)");
}

/* "90", "sm_90", "sm90", "9.0" -> 90; 0 if p holds none of these. */
static int parse_sm(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '"') p++;
    if (!strncmp(p, "sm_", 3)) p += 3;
    else if (!strncmp(p, "sm", 2)) p += 2;
    if (!isdigit((unsigned char)*p)) return 0;
    char *end;
    long a = strtol(p, &end, 10);
    if (*end == '.' && isdigit((unsigned char)end[1]) && a < 100) return (int)(a * 10 + (end[1] - '0'));
    if (a >= 10 && a < 1000) return (int)a;
    if (a > 0 && a < 10) return (int)(a * 10);
    return 0;
}

int yq_tuning_sm(const char *j)
{
    static const char *const keys[] = { "\"sm\"", "\"arch\"", "\"sm_arch\"", "\"compute_capability\"" };
    if (!j) return 0;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        for (const char *p = strstr(j, keys[k]); p; p = strstr(p + 1, keys[k])) {
            const char *q = p + strlen(keys[k]);
            while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r') q++;
            if (*q != ':') continue;
            int sm = parse_sm(q + 1);
            if (sm) return sm;
        }
    /* a device description such as "NVIDIA H200 (sm_90, 132 SMs)" */
    for (const char *p = strstr(j, "sm_"); p; p = strstr(p + 1, "sm_"))
        if (isdigit((unsigned char)p[3])) return parse_sm(p);
    return 0;
}

/* ---- sessions ------------------------------------------------------------------ */

yq_session_opt yq_session_defaults(void)
{
    yq_session_opt o = { 0.25f, 0.45f, 100, -1, 1, 0 };
    return o;
}

static void cuda_release(yq_session *s)
{
    if (s->graphs)
        for (int i = 0; i < s->max_batch; i++) yq_cuda_graph_free(s->graphs[i]);
    free(s->graphs);
    s->graphs = NULL;
    yq_gpu_post_free(s->post);
    s->post = NULL;
    yq_cuda_host_free(s->h_res);
    s->h_res = NULL;
}

void yq_session_free(yq_session *s)
{
    if (!s) return;
    if (s->device >= 0) {
        yq_error e;
        if (yq_cuda_set_device(s->device, &e) == YQ_OK) {
            cuda_release(s);
            yq_cuda_host_free(s->h_in);
            yq_cuda_host_free(s->h_wh);
        }
    }
    yq_engine_free(s->eng);
    free(s);
}

/* A failure while setting up or running on the GPU: YQ_ERR_CUDA naming the device
 * (out of GPU memory included), the kind kept for argument and model errors. */
static yq_status cuda_fail(const yq_session *s, yq_status st, yq_error *err)
{
    if (st == YQ_OK || st == YQ_ERR_INVALID_ARG || st == YQ_ERR_UNSUPPORTED) return st;
    yq_cuda_clear_error();
    char why[sizeof err->msg];
    snprintf(why, sizeof why, "%s", err ? err->msg : "");
    return yq_fail(err, YQ_ERR_CUDA, "cuda:%d: %s%s", s->device, st == YQ_ERR_NOMEM ? "out of memory: " : "", why);
}

/* (Re)builds what depends on the options: the post-processing and its result
 * staging; captured graphs are dropped (they hold the old parameters). */
static yq_status post_build(yq_session *s, yq_error *err)
{
    cuda_release(s);
    const float *heads[MAX_HEADS];
    for (int k = 0; k < s->n_heads; k++) {
        int id = s->head_id[k];
        if (yq_node_dtype(s->g, id) != YQ_F32)
            return yq_fail(err, YQ_ERR_UNSUPPORTED, "%s: head input is not float", s->g->nodes[id].name);
        heads[k] = yq_engine_node(s->eng, id);
        if (!heads[k]) return yq_fail(err, YQ_ERR_UNSUPPORTED, "%s: head input not kept by the plan", s->g->nodes[id].name);
    }
    yq_post_opt po = { s->opt.conf, s->opt.nms, s->opt.max_dets };
    yq_status st = yq_gpu_post_new(s->g, heads, s->max_batch, &po, s->opt.letterbox, &s->post, err);
    void *p = NULL;
    if (st == YQ_OK) st = yq_cuda_host_alloc(&p, yq_gpu_post_rec_bytes(s->post) * (size_t)s->max_batch, err);
    s->h_res = p;
    if (st == YQ_OK && !(s->graphs = calloc((size_t)s->max_batch, sizeof *s->graphs)))
        st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    return st;
}

static yq_status cuda_open(yq_session *s, yq_error *err)
{
    const yq_graph *g = s->g;
    if (!g->q)
        return yq_fail(err, YQ_ERR_UNSUPPORTED, "cuda:%d: %s is an FP32 model; the GPU runs int8 models "
                       "(quantize it with `yquant quantize`), FP32 runs on the cpu device", s->device, g->cfg_path);
    int n = yq_cuda_device_count();
    if (n == 0)
        return yq_fail(err, YQ_ERR_CUDA, "cuda:%d: no CUDA device is available (no NVIDIA driver or no GPU); "
                       "the cpu device runs the same model", s->device);
    if (s->device >= n) return yq_fail(err, YQ_ERR_CUDA, "cuda:%d: no such device (%d present)", s->device, n);
    int sm = 0;
    char dn[128] = "";
    yq_status st = yq_cuda_device_sm(s->device, &sm, dn, sizeof dn, err);
    if (st) return cuda_fail(s, st, err);
    const yq_package_info *info = s->m->info;
    int tuned = info && info->tuning_json ? yq_tuning_sm(info->tuning_json) : 0;
    if (tuned && tuned != sm)
        return yq_fail(err, YQ_ERR_CUDA, "cuda:%d: the package was tuned for sm_%d, this GPU (%s) is sm_%d; "
                       "re-tune the package on this GPU, or run it on the cpu device", s->device, tuned, dn, sm);
    snprintf(s->name, sizeof s->name, "cuda:%d (%s, sm_%d)", s->device, dn, sm);
    yq_engine_opt eo = yq_engine_defaults(YQ_ENGINE_CUDA);
    eo.device = s->device;
    if ((st = yq_cuda_set_device(s->device, err)) || (st = yq_engine_new(g, s->max_batch, &eo, &s->eng, err)) ||
        (info && info->n_kernels > 0 &&
         (st = yq_tune_apply(yq_engine_cuda_plan(s->eng), g, s->max_batch, sm, info->kernels, info->n_kernels, &s->tuned,
                             err))))
        return cuda_fail(s, st, err);
    s->stream = yq_engine_stream(s->eng);
    void *a = NULL, *b = NULL;
    st = yq_cuda_host_alloc(&a, sizeof(float) * s->in_floats * (size_t)s->max_batch, err);
    s->h_in = a;
    if (!st) st = yq_cuda_host_alloc(&b, 2 * sizeof(int) * (size_t)s->max_batch, err);
    s->h_wh = b;
    if (!st) st = post_build(s, err);
    return cuda_fail(s, st, err);
}

yq_status yq_session_new(const yq_model *m, const char *device, int max_batch, yq_session **out, yq_error *err)
{
    if (!m || !out) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_session_new: no model");
    if (max_batch < 1 || max_batch > MAX_BATCH)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "max_batch %d outside 1..%d", max_batch, MAX_BATCH);
    int dev;
    yq_status st = yq_device_parse(device, &dev, err);
    if (st) return st;
    if (!m->has_weights)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: no weights (the cfg was read alone): no session can run it",
                       m->g->cfg_path);
    yq_session *s = calloc(1, sizeof *s);
    if (!s) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    const yq_graph *g = m->g;
    s->m = m;
    s->g = g;
    s->device = dev;
    s->max_batch = max_batch;
    s->opt = yq_session_defaults();
    s->opt.letterbox = m->letterbox;
    s->in_floats = (size_t)yq_shape_size(g->nodes[0].out);
    for (int i = 0; i < g->n_nodes; i++)
        if (yq_op_is_head(g->nodes[i].op)) {
            if (s->n_heads == MAX_HEADS) {
                st = yq_fail(err, YQ_ERR_UNSUPPORTED, "more than %d heads", MAX_HEADS);
                goto fail;
            }
            s->head_id[s->n_heads++] = i;
        }
    if (!s->n_heads) {
        st = yq_fail(err, YQ_ERR_UNSUPPORTED, "%s: the model has no [yolo] or [region] head", g->cfg_path);
        goto fail;
    }
    if (dev < 0) {
        snprintf(s->name, sizeof s->name, "cpu");
        yq_engine_opt eo = yq_engine_defaults(YQ_ENGINE_CPU);
        if (!(st = yq_engine_new(g, 1, &eo, &s->eng, err))) s->h_in = yq_engine_host_input(s->eng);
    } else {
        st = cuda_open(s, err);
    }
    if (st) goto fail;
    *out = s;
    return YQ_OK;
fail:
    yq_session_free(s);
    return st;
}

yq_status yq_session_set_options(yq_session *s, const yq_session_opt *o, yq_error *err)
{
    if (!s || !o) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_session_set_options: no session or options");
    if (!(o->conf >= 0 && o->conf < 1) || !(o->nms > 0 && o->nms <= 1) || o->max_dets < 1 || o->max_dets > 1000000 ||
        o->letterbox < -1 || o->letterbox > 1 || o->threads < 0 || o->threads > 1024)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "session options: conf in [0,1), nms in (0,1], max_dets in 1..1000000, "
                       "letterbox -1, 0 or 1, threads 0..1024");
    yq_session_opt n = *o;
    if (n.letterbox < 0) n.letterbox = s->m->letterbox;
    n.cuda_graph = n.cuda_graph ? 1 : 0;
    yq_session_opt old = s->opt;
    s->opt = n;
    if (s->device < 0 && yq_engine_cpu_plan(s->eng)) yq_plan_set_threads(yq_engine_cpu_plan(s->eng), n.threads);
    if (s->device < 0 || (old.conf == n.conf && old.nms == n.nms && old.max_dets == n.max_dets && old.letterbox == n.letterbox))
        return YQ_OK;
    yq_status st = yq_cuda_set_device(s->device, err);
    if (!st) st = post_build(s, err);
    return cuda_fail(s, st, err);
}

yq_session_opt yq_session_options(const yq_session *s) { return s->opt; }
const char *yq_session_device(const yq_session *s) { return s->name; }
int yq_session_max_batch(const yq_session *s) { return s->max_batch; }
const yq_model *yq_session_model(const yq_session *s) { return s->m; }
int yq_session_tuned_convs(const yq_session *s) { return s ? s->tuned : 0; }

/* ---- running -------------------------------------------------------------------- */

/* Writes image i's network input to dst and its original size. */
typedef yq_status (*fill_fn)(void *ctx, const yq_session *s, int i, float *dst, int *w, int *h, yq_error *err);

typedef struct { const char *const *paths; } images_ctx;
static yq_status fill_image(void *ctx, const yq_session *s, int i, float *dst, int *w, int *h, yq_error *err)
{
    const images_ctx *c = ctx;
    yq_image im;
    yq_status st = yq_image_load(c->paths[i], &im, err);
    if (st) return st;
    st = yq_preprocess(s->g, &im, s->opt.letterbox, dst, err);
    *w = im.w;
    *h = im.h;
    yq_image_free(&im);
    return st;
}

typedef struct { const yq_frame *f; } frames_ctx;
static yq_status fill_frame(void *ctx, const yq_session *s, int i, float *dst, int *w, int *h, yq_error *err)
{
    const frames_ctx *c = ctx;
    yq_image im;
    yq_status st = yq_image_from_frame(&c->f[i], &im, err);
    if (st) {
        char m[sizeof err->msg];
        snprintf(m, sizeof m, "%s", err->msg + (strncmp(err->msg, "frame: ", 7) ? 0 : 7));
        return yq_fail(err, st, "frame %d: %s", i, m);
    }
    st = yq_preprocess(s->g, &im, s->opt.letterbox, dst, err);
    *w = im.w;
    *h = im.h;
    yq_image_free(&im);
    return st;
}

typedef struct { const float *x; const int *wh; } tensor_ctx;
static yq_status fill_tensor(void *ctx, const yq_session *s, int i, float *dst, int *w, int *h, yq_error *err)
{
    const tensor_ctx *c = ctx;
    *w = c->wh[2 * i];
    *h = c->wh[2 * i + 1];
    if (*w < 1 || *h < 1) return yq_fail(err, YQ_ERR_INVALID_ARG, "image %d: original size %dx%d", i, *w, *h);
    memcpy(dst, c->x + s->in_floats * (size_t)i, sizeof(float) * s->in_floats);
    return YQ_OK;
}

/* The batch of n images staged in h_in/h_wh: everything on the stream, no waiting. */
static yq_status cuda_enqueue_batch(yq_session *s, int n, yq_error *err)
{
    yq_status st;
    if ((st = yq_engine_upload(s->eng, s->h_in, n, err)) ||
        (st = yq_cuda_h2d_async(yq_gpu_post_wh(s->post), s->h_wh, 2 * sizeof(int) * (size_t)n, s->stream, err)) ||
        (st = yq_engine_enqueue(s->eng, n, err)) ||
        (st = yq_gpu_post_enqueue(s->post, n, s->stream, err)))
        return st;
    return yq_cuda_d2h_async(s->h_res, yq_gpu_post_result(s->post), yq_gpu_post_rec_bytes(s->post) * (size_t)n,
                             s->stream, err);
}

static yq_status cuda_batch(yq_session *s, int n, yq_error *err)
{
    yq_status st = yq_cuda_set_device(s->device, err);
    if (st) return st;
    if (!s->opt.cuda_graph) {
        st = cuda_enqueue_batch(s, n, err);
    } else {
        if (!s->graphs[n - 1]) {
            if ((st = yq_cuda_capture_begin(s->stream, err))) return st;
            st = cuda_enqueue_batch(s, n, err);
            if (st) {
                yq_error e2;
                yq_cuda_capture_end(s->stream, NULL, &e2);     /* discard; the first error is the one to report */
                return st;
            }
            if ((st = yq_cuda_capture_end(s->stream, &s->graphs[n - 1], err))) return st;
        }
        st = yq_cuda_graph_launch(s->graphs[n - 1], s->stream, err);
    }
    if (st) return st;
    return yq_cuda_sync(s->stream, err);
}

static yq_status run(yq_session *s, int n, fill_fn fill, void *ctx, yq_detection *dets, int cap, int *counts, yq_error *err)
{
    if (!s || n < 0 || cap < 0 || (n > 0 && (!dets || !counts)))
        return yq_fail(err, YQ_ERR_INVALID_ARG, "run: bad arguments (n %d, cap %d)", n, cap);
    yq_status st = YQ_OK;
    if (s->device < 0) {
        const float *heads[MAX_HEADS];
        yq_post_opt po = { s->opt.conf, s->opt.nms, s->opt.max_dets };
        for (int i = 0; i < n && st == YQ_OK; i++) {
            int w, h;
            if ((st = fill(ctx, s, i, s->h_in, &w, &h, err)) || (st = yq_engine_upload(s->eng, s->h_in, 1, err)) ||
                (st = yq_engine_enqueue(s->eng, 1, err)))
                break;
            for (int k = 0; k < s->n_heads; k++) heads[k] = yq_engine_node(s->eng, s->head_id[k]);
            int k = yq_postprocess(s->g, heads, 0, w, h, s->opt.letterbox, &po, dets + (size_t)i * cap, cap);
            if (k < 0) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory in post-processing");
            else counts[i] = k;
        }
        return st;
    }
    if (!s->post)
        return yq_fail(err, YQ_ERR_CUDA, "cuda:%d: the session's post-processing could not be rebuilt "
                       "(a failed yq_session_set_options); free the session", s->device);
    for (int i0 = 0; i0 < n && st == YQ_OK; i0 += s->max_batch) {
        int m = n - i0 < s->max_batch ? n - i0 : s->max_batch;
        for (int j = 0; j < m && st == YQ_OK; j++)
            st = fill(ctx, s, i0 + j, s->h_in + s->in_floats * (size_t)j, &s->h_wh[2 * j], &s->h_wh[2 * j + 1], err);
        if (st) break;
        if ((st = cuda_batch(s, m, err))) return cuda_fail(s, st, err);
        for (int j = 0; j < m; j++)
            counts[i0 + j] = yq_gpu_post_unpack(s->post, s->h_res, j, dets + (size_t)(i0 + j) * cap, cap, NULL, NULL);
    }
    return st;
}

yq_status yq_session_run_images(yq_session *s, const char *const *paths, int n, yq_detection *dets,
                                int cap_per_image, int *counts, yq_error *err)
{
    if (n > 0 && !paths) return yq_fail(err, YQ_ERR_INVALID_ARG, "run_images: no paths");
    images_ctx c = { paths };
    return run(s, n, fill_image, &c, dets, cap_per_image, counts, err);
}

yq_status yq_session_run_frames(yq_session *s, const yq_frame *frames, int n, yq_detection *dets, int cap_per_image,
                                int *counts, yq_error *err)
{
    if (n > 0 && !frames) return yq_fail(err, YQ_ERR_INVALID_ARG, "run_frames: no frames");
    frames_ctx c = { frames };
    return run(s, n, fill_frame, &c, dets, cap_per_image, counts, err);
}

yq_status yq_session_run_tensor(yq_session *s, const float *nchw, int n, const int *orig_wh,
                                yq_detection *dets, int cap_per_image, int *counts, yq_error *err)
{
    if (n > 0 && (!nchw || !orig_wh)) return yq_fail(err, YQ_ERR_INVALID_ARG, "run_tensor: no input");
    tensor_ctx c = { nchw, orig_wh };
    return run(s, n, fill_tensor, &c, dets, cap_per_image, counts, err);
}
