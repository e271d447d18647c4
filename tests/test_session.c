/* The model/session API (include/yq.h) and the GPU post-processing.
 *
 * CPU: a session gives the detector path's detections byte for byte (FP32 Darknet
 * model and int8 package, images and tensors, batches split), its options and its
 * errors; without a GPU, asking for cuda is a clean YQ_ERR_CUDA.
 * GPU (skipped without a device): decode + NMS on the GPU against yq_postprocess on
 * the same head tensors (every shared model, conf 0.25 and 0.005, letterbox on and
 * off, synthetic heads with huge candidate lists and exact score ties); the cuda
 * session against the cpu session on the int8 package at batch 1 and 4; CUDA-graph
 * replay against kernel-by-kernel launches (identical bytes); GPU faults (bad index,
 * out of memory, a package tuned for another architecture) as YQ_ERR_CUDA with the
 * CPU still working.  YQ_SESSION_PERF=1 times decode+NMS and whole batches.
 *
 * Float results are compared as kernels/cuda_post.h states: same count, same classes,
 * same order, boxes and scores within REL (relative, of max(|v|, 1)); detections whose
 * (score, class) tie exactly may come in another order (counted, reported).
 *
 * `test_session --write-raw IMAGE...` writes IMAGE.rgb (the decoded pixels), which
 * bench/gpu/sidecars.py compares with the GPU machine's OpenCV. */
#include <math.h>
#include <time.h>
#include <unistd.h>
#include "datasets/image.h"
#include "kernels/cuda.h"
#include "kernels/cuda_post.h"
#include "calib/observe.h"
#include "quant/rewrite.h"
#include "runtime/detector.h"
#include "runtime/gpu_post.h"
#include "runtime/package.h"
#include "runtime/session.h"
#include "tests/test.h"

#define REL 1e-4
/* Detections from the same head tensors (every layer bit-exact, float layers included):
 * scores and boxes agree to the decode's float rounding, REL of max(|v|, 1). */
static const double rel_bound = REL, box_floor = 1;
#define N_SAMPLES 7
#define CAP 100

static yq_error err;
#define OK(call) do { yq_status st_ = (call); CHECKF(st_ == YQ_OK, "%s: %s", #call, err.msg); } while (0)

static const char *const sample_names[N_SAMPLES] = { "dog", "eagle", "giraffe", "horses", "kite", "person", "scream" };
static char sample_buf[N_SAMPLES][1024];
static const char *samples[N_SAMPLES];

static void need_samples(void)
{
    for (int i = 0; i < N_SAMPLES; i++) {
        snprintf(sample_buf[i], sizeof sample_buf[i], "%s/datasets/darknet-samples/%s.jpg", test_data_dir(), sample_names[i]);
        samples[i] = sample_buf[i];
        if (access(samples[i], R_OK)) TEST_SKIP("%s not found (set YQ_DATA)", samples[i]);
    }
}

static void need_gpu(void)
{
    if (yq_cuda_device_count() == 0) TEST_SKIP("no CUDA device");
}

static const char *model_dir(const char *name)
{
    static char p[1024];
    snprintf(p, sizeof p, "%s/models/%s", test_data_dir(), name);
    return p;
}

/* The int8 package: $YQ_TEST_PACKAGE, .data/xl.yqp (made by `yquant quantize
 * yolo-fastest-1.1-xl --calib ... -o .data/xl.yqp`), or else one quantized here,
 * calibrated on the sample images, and written to a temporary file. */
static char pkg_path[1024];
static const char *package(void)
{
    if (pkg_path[0]) return pkg_path;
    const char *e = getenv("YQ_TEST_PACKAGE");
    if (e && *e && !access(e, R_OK)) return snprintf(pkg_path, sizeof pkg_path, "%s", e), pkg_path;
    if (!access(".data/xl.yqp", R_OK)) return snprintf(pkg_path, sizeof pkg_path, ".data/xl.yqp"), pkg_path;
    yq_model *m;
    if (yq_model_open(model_dir("yolo-fastest-1.1-xl"), &m, &err) != YQ_OK) TEST_SKIP("%s", err.msg);
    const yq_graph *g = yq_model_graph(m);
    yq_qconfig qc;
    yq_qconfig_defaults(&qc);
    snprintf(pkg_path, sizeof pkg_path, "/tmp/yq_test_session_%d.yqp", (int)getpid());
    need_samples();
    yq_calib_stats *cs = NULL;
    yq_status st = yq_calib_observe(g, (char *const *)samples, N_SAMPLES, g->letter_box, NULL, NULL, NULL, NULL, &cs,
                                    &err);
    yq_graph *q = NULL;               /* (g is the model's: the rewrite borrows it) */
    if (!st) st = yq_rewrite(g, cs, &qc, &q, &err);
    yq_calib_stats_free(cs);
    if (!st) st = yq_package_write(pkg_path, q, NULL, &err);
    yq_graph_free(q);
    yq_model_free(m);
    if (st) pkg_path[0] = 0;
    CHECKF(st == YQ_OK, "making a package: %s", err.msg);
    return pkg_path;
}

/* ---- comparing detections ------------------------------------------------------ */

typedef struct cmp_stats { long dets, identical, tie_moves; double max_rel; } cmp_stats;

static int close_f(float a, float b, double floor_, double *worst)
{
    double d = fabs((double)a - (double)b), m = fmax(fmax(fabs((double)a), fabs((double)b)), floor_);
    if (isnan(a) || isnan(b)) d = INFINITY;
    if (d / m > *worst) *worst = d / m;
    return d / m <= rel_bound;
}

static int det_close(const yq_detection *a, const yq_detection *b, double *worst)
{
    double w = 0;
    int ok = a->cls == b->cls;
    ok &= close_f(a->score, b->score, 1, &w);
    ok &= close_f(a->x, b->x, box_floor, &w);
    ok &= close_f(a->y, b->y, box_floor, &w);
    ok &= close_f(a->w, b->w, box_floor, &w);
    ok &= close_f(a->h, b->h, box_floor, &w);
    if (ok && w > *worst) *worst = w;
    return ok;
}

/* cpu (the spec) against gpu for one image; 0 and a message in why when they differ. */
static int cmp_dets(const yq_detection *c, int nc, const yq_detection *g, int ng, cmp_stats *s, char *why, size_t cap)
{
    if (nc != ng) {
        snprintf(why, cap, "%d detections on the cpu, %d on the gpu", nc, ng);
        return 0;
    }
    unsigned char used[4096] = { 0 };
    if (nc > (int)sizeof used) nc = ng = (int)sizeof used;
    for (int i = 0; i < ng; i++) {
        double w = 0;
        int j = -1;
        if (!used[i] && det_close(&c[i], &g[i], &w)) j = i;
        for (int k = 0; j < 0 && k < nc; k++)       /* an exact (score, class) tie in another order */
            if (!used[k] && c[k].score == c[i].score && c[k].cls == c[i].cls && det_close(&c[k], &g[i], &w)) j = k;
        if (j < 0) {
            snprintf(why, cap, "detection %d: cpu cls %d %.7g (%.3f %.3f %.3f %.3f), gpu cls %d %.7g (%.3f %.3f %.3f %.3f)",
                     i, c[i].cls, (double)c[i].score, (double)c[i].x, (double)c[i].y, (double)c[i].w, (double)c[i].h,
                     g[i].cls, (double)g[i].score, (double)g[i].x, (double)g[i].y, (double)g[i].w, (double)g[i].h);
            return 0;
        }
        used[j] = 1;
        if (j != i) s->tie_moves++;
        if (w > s->max_rel) s->max_rel = w;
        if (!memcmp(&c[j], &g[i], sizeof *g)) s->identical++;
        s->dets++;
    }
    return 1;
}

/* ---- CPU: the session is the detector path ------------------------------------------ */

/* The detector (runtime/detector.c) on each sample image, as yquant detect ran it. */
static void detector_dets(const yq_graph *g, int letterbox, const yq_post_opt *po, yq_detection *dets, int *counts)
{
    yq_detector *d;
    OK(yq_detector_new(g, &d, &err));
    for (int i = 0; i < N_SAMPLES; i++) {
        yq_image im;
        yq_status st = yq_image_load(samples[i], &im, &err);
        if (!st) st = yq_detector_run(d, &im, letterbox, po, dets + i * CAP, CAP, &counts[i], &err);
        yq_image_free(&im);
        if (st) yq_detector_free(d);
        CHECKF(st == YQ_OK, "detector: %s", err.msg);
    }
    yq_detector_free(d);
}

static void preprocess_all(const yq_graph *g, int letterbox, float *x, int *wh)
{
    size_t n = (size_t)yq_shape_size(g->nodes[0].out);
    for (int i = 0; i < N_SAMPLES; i++) {
        yq_image im;
        OK(yq_image_load(samples[i], &im, &err));
        wh[2 * i] = im.w;
        wh[2 * i + 1] = im.h;
        yq_status st = yq_preprocess(g, &im, letterbox, x + n * i, &err);
        yq_image_free(&im);
        OK(st);
    }
}

static void session_equals_detector(const char *path)
{
    need_samples();
    yq_model *m;
    OK(yq_model_open(path, &m, &err));
    const yq_graph *g = yq_model_graph(m);
    static yq_detection want[N_SAMPLES * CAP], got[N_SAMPLES * CAP];
    int wc[N_SAMPLES], gc[N_SAMPLES];
    yq_post_opt po = yq_post_defaults();
    for (int lb = 0; lb < 2; lb++) {
        detector_dets(g, lb, &po, want, wc);
        yq_session *s;
        OK(yq_session_new(m, "cpu", 3, &s, &err));   /* 7 images in batches of 3 */
        yq_session_opt o = yq_session_defaults();
        o.letterbox = lb;
        o.threads = 1 + lb;   /* the int8 engine on 1, then 2 threads: the same bytes */
        yq_status st = yq_session_set_options(s, &o, &err);
        memset(got, 0xA5, sizeof got);
        if (!st) st = yq_session_run_images(s, samples, N_SAMPLES, got, CAP, gc, &err);
        int total = 0;
        for (int i = 0; i < N_SAMPLES && !st; i++) {
            total += wc[i];
            if (wc[i] != gc[i] || memcmp(want + i * CAP, got + i * CAP, sizeof *got * (size_t)wc[i])) st = YQ_ERR_SHAPE;
        }
        /* the same through run_tensor */
        size_t in_n = (size_t)yq_shape_size(g->nodes[0].out);
        float *x = malloc(sizeof *x * in_n * N_SAMPLES);
        int wh[2 * N_SAMPLES];
        if (x && !st) {
            preprocess_all(g, lb, x, wh);
            memset(got, 0x5A, sizeof got);
            st = yq_session_run_tensor(s, x, N_SAMPLES, wh, got, CAP, gc, &err);
            for (int i = 0; i < N_SAMPLES && !st; i++)
                if (wc[i] != gc[i] || memcmp(want + i * CAP, got + i * CAP, sizeof *got * (size_t)wc[i])) st = YQ_ERR_FORMAT;
        }
        free(x);
        yq_session_free(s);
        if (st) yq_model_free(m);
        CHECKF(st != YQ_ERR_SHAPE, "letterbox %d: run_images differs from the detector", lb);
        CHECKF(st != YQ_ERR_FORMAT, "letterbox %d: run_tensor differs from the detector", lb);
        CHECKF(st == YQ_OK, "%s", err.msg);
        CHECKF(total > 0, "no detections at all");
        printf("# %s, letterbox %d: %d detections on %d images, identical to the detector\n", path, lb, total, N_SAMPLES);
    }
    yq_model_free(m);
}

static void t_cpu_fp32_equals_detector(void) { session_equals_detector(model_dir("yolo-fastest-1.1-xl")); }
static void t_cpu_int8_equals_detector(void) { need_samples(); session_equals_detector(package()); }

static void t_cpu_options(void)
{
    need_samples();
    yq_model *m;
    OK(yq_model_open(model_dir("yolo-fastest-1.1-xl"), &m, &err));
    CHECK(!yq_model_is_int8(m) && yq_model_classes(m) == 80);
    CHECK(yq_model_class_name(m, 16) && !strcmp(yq_model_class_name(m, 16), "dog"));
    CHECK(yq_model_class_name(m, 80) == NULL && yq_model_class_name(m, -1) == NULL);
    int c, h, w;
    yq_model_input(m, &c, &h, &w);
    CHECK(c == 3 && h == 320 && w == 320);
    yq_session *s;
    OK(yq_session_new(m, "cpu", 1, &s, &err));
    CHECK(!strcmp(yq_session_device(s), "cpu"));
    yq_detection d[N_SAMPLES * CAP];
    int n[N_SAMPLES], n2[N_SAMPLES];
    yq_status st = yq_session_run_images(s, samples, 1, d, CAP, n, &err);
    /* cap_per_image and max_dets both cut; best first either way */
    yq_detection d2[3];
    if (!st) st = yq_session_run_images(s, samples, 1, d2, 2, n2, &err);
    int cut_ok = !st && n[0] >= 3 && n2[0] == 2 && !memcmp(d, d2, 2 * sizeof *d);
    yq_session_opt o = yq_session_defaults();
    o.max_dets = 1;
    if (!st) st = yq_session_set_options(s, &o, &err);
    if (!st) st = yq_session_run_images(s, samples, 1, d2, 3, n2, &err);
    cut_ok &= !st && n2[0] == 1 && !memcmp(d, d2, sizeof *d);
    o = yq_session_defaults();
    o.conf = 0.9f;
    if (!st) st = yq_session_set_options(s, &o, &err);
    if (!st) st = yq_session_run_images(s, samples, 1, d2, 3, n2, &err);
    int conf_ok = !st && n2[0] < n[0];
    for (int k = 0; k < n2[0]; k++) conf_ok &= d2[k].score > 0.9f;
    /* bad options and arguments */
    yq_session_opt bad = yq_session_defaults();
    bad.nms = 0;
    yq_status e1 = yq_session_set_options(s, &bad, &err);
    bad = yq_session_defaults();
    bad.max_dets = 0;
    yq_status e2 = yq_session_set_options(s, &bad, &err);
    bad = yq_session_defaults();
    bad.threads = -1;
    if (yq_session_set_options(s, &bad, &err) != YQ_ERR_INVALID_ARG) e2 = YQ_OK;
    yq_status e3 = yq_session_run_images(s, samples, 1, NULL, CAP, n, &err);
    const char *missing[1] = { "/nonexistent/x.jpg" };
    yq_status e4 = yq_session_run_images(s, missing, 1, d, CAP, n, &err);
    int e4_names = strstr(err.msg, "/nonexistent/x.jpg") != NULL;
    int wh0[2] = { 0, 10 };
    float x0[1] = { 0 };
    yq_status e5 = yq_session_run_tensor(s, x0, 1, wh0, d, CAP, n, &err);
    yq_session_free(s);
    yq_model_free(m);
    CHECKF(st == YQ_OK, "%s", err.msg);
    CHECK(cut_ok);
    CHECK(conf_ok);
    CHECK(e1 == YQ_ERR_INVALID_ARG && e2 == YQ_ERR_INVALID_ARG && e3 == YQ_ERR_INVALID_ARG);
    CHECK(e4 == YQ_ERR_IO && e4_names);
    CHECK(e5 == YQ_ERR_INVALID_ARG);
}

static void t_open_errors(void)
{
    yq_model *m = (yq_model *)&err;               /* must stay untouched on failure */
    CHECK(yq_model_open("/nonexistent/model", &m, &err) != YQ_OK && m == (yq_model *)&err);
    CHECK(strstr(err.msg, "/nonexistent/model") != NULL);
    CHECK(yq_model_open(NULL, &m, &err) == YQ_ERR_INVALID_ARG);
    /* a .yqp that is no package: a format or i/o error naming it */
    char p[64];
    snprintf(p, sizeof p, "/tmp/yq_test_session_bad_%d.yqp", (int)getpid());
    FILE *f = fopen(p, "w");
    CHECK(f && fputs("not hdf5\n", f) >= 0 && fclose(f) == 0);
    yq_status st = yq_model_open(p, &m, &err);
    remove(p);
    CHECKF(st == YQ_ERR_FORMAT || st == YQ_ERR_IO, "status %s: %s", yq_status_str(st), err.msg);
    CHECK(strstr(err.msg, p) != NULL);
    yq_session *s = NULL;
    CHECK(yq_session_new(NULL, "cpu", 1, &s, &err) == YQ_ERR_INVALID_ARG && s == NULL);
}

static void t_device_parse(void)
{
    int d;
    CHECK(yq_device_parse("cpu", &d, &err) == YQ_OK && d == -1);
    CHECK(yq_device_parse("cuda", &d, &err) == YQ_OK && d == 0);
    CHECK(yq_device_parse("cuda:3", &d, &err) == YQ_OK && d == 3);
    static const char *const bad[] = { "gpu", "cuda:", "cuda:-1", "cuda:1x", "CPU", "", "cuda:99999" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECKF(yq_device_parse(bad[i], &d, &err) == YQ_ERR_INVALID_ARG, "\"%s\" accepted", bad[i]);
    CHECK(yq_device_parse(NULL, &d, &err) == YQ_ERR_INVALID_ARG);
    CHECK(yq_tuning_sm("{\"sm\": \"sm_90\"}") == 90);
    CHECK(yq_tuning_sm("{\"sm\":86}") == 86);
    CHECK(yq_tuning_sm("{\"device\": {\"arch\": \"sm_75\"}}") == 75);
    CHECK(yq_tuning_sm("{\"compute_capability\": \"8.9\"}") == 89);
    CHECK(yq_tuning_sm("{\"gpu\": \"NVIDIA H200 (sm_90, 132 SMs)\"}") == 90);
    CHECK(yq_tuning_sm("{\"layers\": []}") == 0);
    CHECK(yq_tuning_sm(NULL) == 0);
}

/* Without a GPU, cuda is a clean YQ_ERR_CUDA at once; the same model then runs on the CPU. */
static void t_no_gpu(void)
{
    if (yq_cuda_device_count() > 0) TEST_SKIP("a CUDA device is present (t_gpu_faults covers it)");
    need_samples();
    yq_model *m;
    OK(yq_model_open(package(), &m, &err));
    yq_session *s = NULL;
    yq_status st = yq_session_new(m, "cuda:0", 4, &s, &err);
    int named = strstr(err.msg, "no CUDA device") != NULL;
    yq_status st2 = yq_session_new(m, "cuda:1", 1, &s, &err);
    yq_session *c = NULL;
    yq_detection d[CAP];
    int n = 0;
    yq_status st3 = yq_session_new(m, "cpu", 1, &c, &err);
    if (!st3) st3 = yq_session_run_images(c, samples, 1, d, CAP, &n, &err);
    yq_session_free(c);
    yq_model_free(m);
    CHECKF(st == YQ_ERR_CUDA && named && s == NULL, "cuda without a GPU: status %s: %s", yq_status_str(st), err.msg);
    CHECK(st2 == YQ_ERR_CUDA);
    CHECKF(st3 == YQ_OK && n > 0, "the cpu after a failed cuda session: %s", err.msg);
}

/* A package with a /tuning record: written from a loaded package, the record comes
 * back, and the CPU runs it whatever architecture it names. */
static void t_tuned_package(void)
{
    need_samples();
    yq_model *m, *t = NULL;
    OK(yq_model_open(package(), &m, &err));
    char tp[128];
    snprintf(tp, sizeof tp, "/tmp/yq_test_session_tuned_%d.yqp", (int)getpid());
    yq_package_meta meta = { 0 };
    meta.tuning_json = "{\"sm\": \"sm_75\", \"convs\": []}";
    meta.letterbox = yq_model_letterbox(m);
    yq_status st = yq_package_write(tp, yq_model_graph(m), &meta, &err);
    if (!st) st = yq_model_open(tp, &t, &err);
    remove(tp);
    yq_model_free(m);
    CHECKF(st == YQ_OK, "%s", err.msg);
    const yq_package_info *info = yq_model_info(t);
    int sm = info && info->tuning_json ? yq_tuning_sm(info->tuning_json) : -1;
    yq_session *s = NULL;
    yq_detection d[CAP];
    int n = 0;
    st = yq_session_new(t, "cpu", 1, &s, &err);
    if (!st) st = yq_session_run_images(s, samples, 1, d, CAP, &n, &err);
    yq_session_free(s);
    yq_model_free(t);
    CHECKF(sm == 75, "tuning record read back as sm %d", sm);
    CHECKF(st == YQ_OK && n > 0, "cpu session of a tuned package: %s", err.msg);
}

static void t_fp32_on_cuda(void)
{
    yq_model *m;
    if (yq_model_open(model_dir("yolo-fastest-1.1"), &m, &err)) TEST_SKIP("%s", err.msg);
    yq_session *s = NULL;
    yq_status st = yq_session_new(m, "cuda:0", 1, &s, &err);
    yq_model_free(m);
    /* no GPU: YQ_ERR_CUDA would also be clear, but the model is checked first */
    CHECKF(st == YQ_ERR_UNSUPPORTED && strstr(err.msg, "FP32"), "status %s: %s", yq_status_str(st), err.msg);
}

/* ---- GPU post-processing against yq_postprocess on the same head tensors -------------- */

typedef struct post_case { float conf; int max_dets; } post_case;

/* Runs g's heads (host, batch nb images, image sizes wh) through the GPU post-processing
 * and yq_postprocess; compares. */
static void compare_post(const char *label, const yq_graph *g, const float *const *heads, int nb, const int *wh,
                         int letterbox, const post_case *pc, cmp_stats *cs)
{
    int nh = 0;
    const float *dh[YQ_POST_MAX_HEADS];
    void *mem[YQ_POST_MAX_HEADS];
    for (int i = 0; i < g->n_nodes; i++) {
        if (!yq_op_is_head(g->nodes[i].op)) continue;
        size_t bytes = sizeof(float) * (size_t)yq_shape_size(g->nodes[g->nodes[i].src[0]].out) * nb;
        OK(yq_cuda_malloc(&mem[nh], bytes, &err));
        OK(yq_cuda_h2d(mem[nh], heads[nh], bytes, &err));
        dh[nh] = mem[nh];
        nh++;
    }
    yq_post_opt po = yq_post_defaults();
    po.conf = pc->conf;
    po.max_dets = pc->max_dets;
    int cap = pc->max_dets;
    yq_detection *cd = malloc(sizeof *cd * (size_t)cap), *gd = malloc(sizeof *gd * (size_t)cap * nb);
    int *gc = malloc(sizeof *gc * (size_t)nb);
    yq_gpu_post *gp = NULL;
    yq_status st = cd && gd && gc ? yq_gpu_post_new(g, dh, nb, &po, letterbox, &gp, &err) : YQ_ERR_NOMEM;
    if (!st) st = yq_gpu_post_run(gp, nb, wh, gd, cap, gc, &err);
    char why[600] = "";
    for (int b = 0; b < nb && !st && !why[0]; b++) {
        int n = yq_postprocess(g, heads, b, wh[2 * b], wh[2 * b + 1], letterbox, &po, cd, cap);
        char w2[512];
        if (n < 0) snprintf(why, sizeof why, "cpu post-processing failed");
        else if (!cmp_dets(cd, n, gd + (size_t)b * cap, gc[b], cs, w2, sizeof w2))
            snprintf(why, sizeof why, "%s, conf %g, letterbox %d, image %d: %s", label, (double)pc->conf, letterbox, b, w2);
    }
    yq_gpu_post_free(gp);
    for (int k = 0; k < nh; k++) yq_cuda_free(mem[k]);
    free(cd);
    free(gd);
    free(gc);
    CHECKF(st == YQ_OK, "%s: %s", label, err.msg);
    CHECKF(!why[0], "%s", why);
}

/* The heads of g on the sample images (CPU engine: FP32, or the int8 reference). */
static void post_on_model(const char *label, const yq_graph *g, cmp_stats *cs, int *cases)
{
    static const post_case pcs[] = { { 0.25f, 100 }, { 0.005f, 100 }, { 0.005f, 1000 } };
    int nb = N_SAMPLES;
    yq_plan *p;
    OK(yq_plan_new(g, nb, YQ_PLAN_KEEP_HEADS, &p, &err));
    size_t in_n = (size_t)yq_shape_size(g->nodes[0].out);
    int wh[2 * N_SAMPLES];
    const float *heads[YQ_POST_MAX_HEADS];
    for (int lb = 0; lb < 2; lb++) {
        float *x = malloc(sizeof *x * in_n * nb);
        CHECK(x);
        preprocess_all(g, lb, x, wh);
        yq_status st = g->q ? yq_exec_int8(p, x, NULL, NULL, &err) : yq_exec_fp32(p, x, NULL, NULL, &err);
        free(x);
        if (st) yq_plan_free(p);
        CHECKF(st == YQ_OK, "%s: %s", label, err.msg);
        int nh = 0;
        for (int i = 0; i < g->n_nodes; i++)
            if (yq_op_is_head(g->nodes[i].op)) heads[nh++] = yq_plan_tensor(p, i);
        jmp_buf save;
        memcpy(save, test_jmp_, sizeof save);
        volatile int failed = 0;
        for (volatile size_t k = 0; k < sizeof pcs / sizeof pcs[0] && !failed; k++) {
            if (setjmp(test_jmp_) == 0) {
                compare_post(label, g, heads, nb, wh, lb, &pcs[k], cs);
                (*cases)++;
            } else {
                failed = 1;
            }
        }
        memcpy(test_jmp_, save, sizeof save);
        if (failed) {
            yq_plan_free(p);
            longjmp(test_jmp_, 1);
        }
    }
    yq_plan_free(p);
}

/* post_on_model on the model at path, which is freed whether the comparison passes or fails;
 * 0 when it cannot be opened (say so, skipped), else 1. */
static int post_on_path(const char *label, const char *path, cmp_stats *cs, int *cases)
{
    yq_model *m;
    if (yq_model_open(path, &m, &err)) {
        printf("# %s: %s (skipped)\n", label, err.msg);
        return 0;
    }
    jmp_buf save;
    memcpy(save, test_jmp_, sizeof save);
    if (setjmp(test_jmp_) == 0) {
        post_on_model(label, yq_model_graph(m), cs, cases);
        memcpy(test_jmp_, save, sizeof save);
        yq_model_free(m);
    } else {
        memcpy(test_jmp_, save, sizeof save);
        yq_model_free(m);
        longjmp(test_jmp_, 1);
    }
    return 1;
}

static void t_gpu_post_models(void)
{
    need_gpu();
    need_samples();
    static const char *const names[] = { "yolo-fastest-1.0", "yolo-fastest-1.1", "yolo-fastest-1.1-xl",
                                         "yolo-fastest-xl-1.0", "yolo-lite-coco-trial6" };
    cmp_stats cs = { 0 };
    int cases = 0, models = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) models += post_on_path(names[i], model_dir(names[i]), &cs, &cases);
    /* an ONNX import's anchor-free (DFL) heads, when the shared export is there */
    char onnx[700];
    snprintf(onnx, sizeof onnx, "%s/models/onnx/yolov8n-640/yolov8n.onnx", test_data_dir());
    models += post_on_path("yolov8n (ONNX, detect heads)", onnx, &cs, &cases);
    /* the int8 package's heads (the int8 CPU reference) */
    CHECKF(post_on_path("int8 package", package(), &cs, &cases), "%s", err.msg);
    CHECK(models > 0 && cs.dets > 0);
    printf("# gpu post vs yq_postprocess: %d models + the int8 package, %d cases, %ld detections: %ld bit-identical, "
           "max rel diff %.3g, %ld exact-tie reorders\n", models, cases, cs.dets, cs.identical, cs.max_rel, cs.tie_moves);
}

static uint32_t rng = 1;
static float rnd_unit(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return (float)(rng >> 8) / 16777216.f;
}

/* Synthetic heads on a cfg's shapes: huge candidate lists (the global-memory paths),
 * coarse values (exact score ties, broken by centre and decode order), new_coords. */
static void t_gpu_post_synthetic(void)
{
    need_gpu();
    static const struct { const char *cfg; int size; float step; float conf; int max_dets; } cs_[] = {
        { "yolov3-tiny.cfg", 416, 0.f, 0.005f, 100 },    /* every cell and class: lists > 2048 */
        { "yolov3-tiny.cfg", 416, 0.f, 0.005f, 4000 },
        { "yolov3-tiny.cfg", 320, 0.5f, 0.01f, 2000 },   /* values on a 0.5 grid: exact ties */
        { "yolov4-tiny.cfg", 320, 0.f, 0.25f, 100 },     /* scale_x_y */
        { "yolov4-tiny.cfg", 320, 0.25f, 0.1f, 1000 },
        { "yolov7-tiny.cfg", 320, 0.f, 0.1f, 300 },      /* new_coords */
    };
    cmp_stats st = { 0 };
    int ran = 0;
    const char *only = getenv("YQ_SYNTH_CASE");      /* one configuration (under compute-sanitizer) */
    for (size_t c = 0; c < sizeof cs_ / sizeof cs_[0]; c++) {
        if (only && *only && atoi(only) != (int)c) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/models/cfg-only/%s", test_data_dir(), cs_[c].cfg);
        FILE *f = fopen(path, "rb");
        if (!f) {
            printf("# %s not found (skipped)\n", path);
            continue;
        }
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        fseek(f, 0, SEEK_SET);
        char *text = malloc((size_t)len + 1);
        CHECK(text && fread(text, 1, (size_t)len, f) == (size_t)len);
        fclose(f);
        yq_import_opt io = { .width = cs_[c].size, .height = cs_[c].size };
        yq_graph *g;
        yq_status s0 = yq_darknet_parse_cfg(text, (size_t)len, path, &io, &g, &err);
        free(text);
        CHECKF(s0 == YQ_OK, "%s: %s", path, err.msg);
        int nb = 3, wh[6] = { 640, 480, 333, 500, 1024, 1024 };
        const float *heads[YQ_POST_MAX_HEADS];
        float *own[YQ_POST_MAX_HEADS];
        int nh = 0;
        rng = 1234 + (uint32_t)c;
        for (int i = 0; i < g->n_nodes; i++) {
            const yq_node *hd = &g->nodes[i];
            if (!yq_op_is_head(hd->op)) continue;
            yq_shape s = g->nodes[hd->src[0]].out;
            long n = yq_shape_size(s) * nb, plane = (long)s.h * s.w;
            float *x = malloc(sizeof *x * (size_t)n);
            CHECK(x);
            int per = hd->p.head.classes + 5;
            for (long t = 0; t < n; t++) {
                int ch = (int)(t / plane % s.c) % per;
                float v = ch < 2 ? 6 * rnd_unit() - 3 : ch < 4 ? 2 * rnd_unit() - 1 : ch == 4 ? 4 * rnd_unit() - 1
                        : 4 * rnd_unit() - 2;
                if (hd->p.head.new_coords) v = rnd_unit();          /* already logistic */
                if (cs_[c].step > 0) v = roundf(v / cs_[c].step) * cs_[c].step;
                x[t] = v;
            }
            own[nh] = x;
            heads[nh++] = x;
        }
        post_case pc = { cs_[c].conf, cs_[c].max_dets };
        char label[128];
        snprintf(label, sizeof label, "%s at %d (step %g)", cs_[c].cfg, cs_[c].size, (double)cs_[c].step);
        jmp_buf save;
        memcpy(save, test_jmp_, sizeof save);
        volatile int failed = 0;
        if (setjmp(test_jmp_) == 0) {
            compare_post(label, g, heads, nb, wh, (int)(c & 1), &pc, &st);
            compare_post(label, g, heads, nb, wh, (int)!(c & 1), &pc, &st);
        } else {
            failed = 1;
        }
        memcpy(test_jmp_, save, sizeof save);
        for (int k = 0; k < nh; k++) free(own[k]);
        yq_graph_free(g);
        if (failed) longjmp(test_jmp_, 1);
        ran++;
    }
    if (!ran) TEST_SKIP("no cfg under %s/models/cfg-only", test_data_dir());
    printf("# gpu post, synthetic heads: %d configurations, %ld detections: %ld bit-identical, max rel diff %.3g, "
           "%ld exact-tie reorders\n", ran, st.dets, st.identical, st.max_rel, st.tie_moves);
}

/* ---- GPU sessions ------------------------------------------------------------------- */

static void run_session(const yq_model *m, const char *dev, int batch, int graph, yq_detection *d, int *n)
{
    yq_session *s;
    OK(yq_session_new(m, dev, batch, &s, &err));
    yq_session_opt o = yq_session_defaults();
    o.cuda_graph = graph;
    yq_status st = yq_session_set_options(s, &o, &err);
    memset(d, 0xA5, sizeof *d * N_SAMPLES * CAP);
    if (!st) st = yq_session_run_images(s, samples, N_SAMPLES, d, CAP, n, &err);
    if (!st && graph) {          /* replay: the captured graphs again */
        static yq_detection d2[N_SAMPLES * CAP];
        int n2[N_SAMPLES];
        memset(d2, 0xA5, sizeof d2);
        st = yq_session_run_images(s, samples, N_SAMPLES, d2, CAP, n2, &err);
        if (!st && (memcmp(n, n2, sizeof n2) || memcmp(d, d2, sizeof d2))) st = YQ_ERR_SHAPE;
    }
    yq_session_free(s);
    CHECKF(st != YQ_ERR_SHAPE, "%s batch %d: a replay differs from the first run", dev, batch);
    CHECKF(st == YQ_OK, "%s batch %d: %s", dev, batch, err.msg);
}

static void t_gpu_session(void)
{
    need_gpu();
    need_samples();
    yq_model *m;
    OK(yq_model_open(package(), &m, &err));
    static yq_detection cpu[N_SAMPLES * CAP], gpu[N_SAMPLES * CAP], nog[N_SAMPLES * CAP];
    int nc[N_SAMPLES], ng[N_SAMPLES], nn[N_SAMPLES];
    char why[600] = "";
    cmp_stats cs = { 0 };
    int total = 0;
    jmp_buf save;
    memcpy(save, test_jmp_, sizeof save);
    if (setjmp(test_jmp_) == 0) {
        run_session(m, "cpu", 1, 0, cpu, nc);
        for (int i = 0; i < N_SAMPLES; i++) total += nc[i];
        /* the float heads in their exact FP32 (every layer the CPU's bytes), within REL (the
         * decode's float rounding), at two batch sizes, graph replay against kernel by kernel */
        static const int batches[] = { 1, 4 };
        for (int bi = 0; bi < 2 && !why[0]; bi++) {
            run_session(m, "cuda:0", batches[bi], 1, gpu, ng);
            run_session(m, "cuda:0", batches[bi], 0, nog, nn);
            for (int i = 0; i < N_SAMPLES && !why[0]; i++) {
                char w2[512];
                if (!cmp_dets(cpu + i * CAP, nc[i], gpu + i * CAP, ng[i], &cs, w2, sizeof w2))
                    snprintf(why, sizeof why, "batch %d, %s: %s", batches[bi], sample_names[i], w2);
                else if (nn[i] != ng[i] || memcmp(gpu + i * CAP, nog + i * CAP, sizeof *gpu * (size_t)ng[i]))
                    snprintf(why, sizeof why, "batch %d, %s: graph replay and kernel-by-kernel runs differ", batches[bi],
                             sample_names[i]);
            }
        }
        memcpy(test_jmp_, save, sizeof save);
    } else {
        memcpy(test_jmp_, save, sizeof save);
        yq_model_free(m);
        longjmp(test_jmp_, 1);
    }
    yq_model_free(m);
    CHECKF(!why[0], "%s", why);
    CHECK(total > 0);
    printf("# %s: cuda:0 = cpu on %d images (%d detections), float heads in their exact FP32 at batch 1 and 4: %ld of %ld "
           "bit-identical, max rel diff %.3g, %ld exact-tie reorders; graph replay = kernel by kernel, byte for byte\n",
           package(), N_SAMPLES, total, cs.identical, cs.dets, cs.max_rel, cs.tie_moves);
    for (int i = 0; i < N_SAMPLES; i++) {
        printf("#   %-8s %d:", sample_names[i], ng[i]);
        for (int k = 0; k < ng[i] && k < 4; k++)
            printf(" cls %d %.3f (%.1f %.1f %.1f %.1f)", gpu[i * CAP + k].cls, (double)gpu[i * CAP + k].score,
                   (double)gpu[i * CAP + k].x, (double)gpu[i * CAP + k].y, (double)gpu[i * CAP + k].w,
                   (double)gpu[i * CAP + k].h);
        printf("\n");
    }
}

static void t_gpu_faults(void)
{
    need_gpu();
    need_samples();
    yq_model *m;
    OK(yq_model_open(package(), &m, &err));
    const yq_graph *g = yq_model_graph(m);
    yq_session *s = NULL, *c = NULL;
    char why[700] = "";
    yq_detection d[CAP];
    int n = 0;
    /* a device index out of range */
    yq_status st = yq_session_new(m, "cuda:999", 1, &s, &err);
    if (st != YQ_ERR_CUDA || s) snprintf(why, sizeof why, "cuda:999: status %s: %s", yq_status_str(st), err.msg);
    /* out of GPU memory: take nearly all of it first */
    void *hog[512];
    int nhog = 0;
    for (size_t chunk = (size_t)1 << 30; chunk >= ((size_t)1 << 20) && nhog < 512;) {
        yq_error e2;
        if (yq_cuda_malloc(&hog[nhog], chunk, &e2) == YQ_OK) nhog++;
        else chunk >>= 1;
    }
    st = yq_session_new(m, "cuda:0", 64, &s, &err);
    if (!why[0] && (st != YQ_ERR_CUDA || s || !strstr(err.msg, "memory")))
        snprintf(why, sizeof why, "out of GPU memory: status %s: %s", yq_status_str(st), err.msg);
    else printf("# out of memory, as reported: %s\n", err.msg);
    yq_session_free(s);
    s = NULL;
    for (int k = 0; k < nhog; k++) yq_cuda_free(hog[k]);
    /* the CPU engine and a new cuda session still work */
    st = yq_session_new(m, "cpu", 1, &c, &err);
    if (!st) st = yq_session_run_images(c, samples, 1, d, CAP, &n, &err);
    if (!why[0] && (st || n < 1)) snprintf(why, sizeof why, "cpu after the faults: %s", err.msg);
    st = yq_session_new(m, "cuda:0", 1, &s, &err);
    if (!st) st = yq_session_run_images(s, samples, 1, d, CAP, &n, &err);
    if (!why[0] && (st || n < 1)) snprintf(why, sizeof why, "cuda after the faults: %s", err.msg);
    yq_session_free(s);
    yq_session_free(c);
    s = c = NULL;
    /* a package tuned for another architecture, and one tuned for this one */
    int sm = 0;
    char dn[128];
    OK(yq_cuda_device_sm(0, &sm, dn, sizeof dn, &err));
    for (int pass = 0; pass < 2 && !why[0]; pass++) {
        char tp[128], tj[64];
        snprintf(tp, sizeof tp, "/tmp/yq_test_session_tuned_%d_%d.yqp", (int)getpid(), pass);
        snprintf(tj, sizeof tj, "{\"sm\": \"sm_%d\", \"convs\": []}", pass ? sm : (sm == 75 ? 86 : 75));
        yq_package_meta meta = { 0 };
        meta.tuning_json = tj;
        meta.letterbox = yq_model_letterbox(m);
        yq_model *t = NULL;
        st = yq_package_write(tp, g, &meta, &err);
        if (!st) st = yq_model_open(tp, &t, &err);
        remove(tp);
        if (st) { snprintf(why, sizeof why, "writing %s: %s", tp, err.msg); break; }
        st = yq_session_new(t, "cuda:0", 1, &s, &err);
        if (pass == 0 && (st != YQ_ERR_CUDA || !strstr(err.msg, "tuned for sm_")))
            snprintf(why, sizeof why, "tuned for another sm: status %s: %s", yq_status_str(st), err.msg);
        if (pass == 0 && !why[0]) printf("# wrong architecture, as reported: %s\n", err.msg);
        if (pass == 1 && st) snprintf(why, sizeof why, "tuned for this sm: %s", err.msg);
        yq_session_free(s);
        s = NULL;
        st = yq_session_new(t, "cpu", 1, &c, &err);
        if (!st) st = yq_session_run_images(c, samples, 1, d, CAP, &n, &err);
        if (!why[0] && (st || n < 1)) snprintf(why, sizeof why, "cpu session of the tuned package: %s", err.msg);
        yq_session_free(c);
        c = NULL;
        yq_model_free(t);
    }
    yq_model_free(m);
    CHECKF(!why[0], "%s", why);
}

/* ---- timing (YQ_SESSION_PERF=1; printed, never asserted) ------------------------------ */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

typedef struct post_timing { yq_gpu_post *gp; int n; void *stream, *graph; } post_timing;
static yq_status post_timed(void *ctx)
{
    post_timing *t = ctx;
    return t->graph ? yq_cuda_graph_launch(t->graph, t->stream, &err) : yq_gpu_post_enqueue(t->gp, t->n, t->stream, &err);
}

static void t_perf(void)
{
    need_gpu();
    need_samples();
    yq_model *m;
    OK(yq_model_open(package(), &m, &err));
    const yq_graph *g = yq_model_graph(m);
    size_t in_n = (size_t)yq_shape_size(g->nodes[0].out);
    int lb = yq_model_letterbox(m);
    float *x = malloc(sizeof *x * in_n * N_SAMPLES);
    int wh[2 * N_SAMPLES];
    CHECK(x);
    preprocess_all(g, lb, x, wh);
    /* decode + NMS alone, batch 1, on the package's real heads of dog.jpg */
    yq_plan *p;
    OK(yq_plan_new(g, 1, YQ_PLAN_KEEP_HEADS, &p, &err));
    OK(yq_exec_int8(p, x, NULL, NULL, &err));
    const float *dh[YQ_POST_MAX_HEADS];
    void *mem[YQ_POST_MAX_HEADS];
    int nh = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (!yq_op_is_head(g->nodes[i].op)) continue;
        size_t bytes = sizeof(float) * (size_t)yq_shape_size(g->nodes[g->nodes[i].src[0]].out);
        OK(yq_cuda_malloc(&mem[nh], bytes, &err));
        OK(yq_cuda_h2d(mem[nh], yq_plan_tensor(p, i), bytes, &err));
        dh[nh] = mem[nh];
        nh++;
    }
    yq_plan_free(p);
    static const float confs[] = { 0.25f, 0.005f };
    for (int k = 0; k < 2; k++) {
        yq_post_opt po = yq_post_defaults();
        po.conf = confs[k];
        yq_gpu_post *gp;
        OK(yq_gpu_post_new(g, dh, 1, &po, lb, &gp, &err));
        OK(yq_cuda_h2d(yq_gpu_post_wh(gp), wh, 2 * sizeof(int), &err));
        float ms[100], gms[100];
        post_timing pt = { gp, 1, NULL, NULL };
        yq_status st = yq_cuda_time_each(NULL, 100, post_timed, &pt, ms, &err);
        /* the same four operations as one CUDA graph, as a session replays them */
        if (!st) st = yq_cuda_stream_new_async(&pt.stream, &err);
        if (!st) st = yq_cuda_capture_begin(pt.stream, &err);
        if (!st) {
            st = yq_gpu_post_enqueue(gp, 1, pt.stream, &err);
            yq_status s2 = yq_cuda_capture_end(pt.stream, st ? NULL : &pt.graph, &err);
            if (!st) st = s2;
        }
        if (!st) st = yq_cuda_time_each(pt.stream, 100, post_timed, &pt, gms, &err);
        yq_cuda_graph_free(pt.graph);
        yq_cuda_stream_free(pt.stream);
        yq_detection d[CAP];
        int n = 0, cand = 0, kept = 0;
        unsigned char *res = malloc(yq_gpu_post_rec_bytes(gp));
        if (!st && res) st = yq_cuda_d2h(res, yq_gpu_post_result(gp), yq_gpu_post_rec_bytes(gp), &err);
        if (!st && res) n = yq_gpu_post_unpack(gp, res, 0, d, CAP, &cand, &kept);
        free(res);
        yq_gpu_post_free(gp);
        OK(st);
        qsort(ms, 100, sizeof *ms, cmp_float);
        qsort(gms, 100, sizeof *gms, cmp_float);
        printf("# perf decode+NMS, batch 1, conf %.3f (%d candidates, %d kept, %d out): median %.1f us "
               "(min %.1f, p90 %.1f) launched on a stream, median %.1f us (min %.1f, p90 %.1f) as a CUDA graph "
               "(CUDA events, 100 runs each)\n", (double)confs[k], cand, kept, n, 1e3 * (double)ms[50],
               1e3 * (double)ms[0], 1e3 * (double)ms[90], 1e3 * (double)gms[50], 1e3 * (double)gms[0],
               1e3 * (double)gms[90]);
    }
    for (int k = 0; k < nh; k++) yq_cuda_free(mem[k]);
    /* whole batches through the session: graph replay vs kernel by kernel (host clock) */
    static const int batches[] = { 1, 4 };
    for (int bi = 0; bi < 2; bi++)
        for (int graph = 1; graph >= 0; graph--) {
            int B = batches[bi];
            yq_session *s;
            OK(yq_session_new(m, "cuda:0", B, &s, &err));
            yq_session_opt o = yq_session_defaults();
            o.cuda_graph = graph;
            yq_detection d[4 * CAP];
            int n[4];
            yq_status st = yq_session_set_options(s, &o, &err);
            double t[100];
            for (int r = -3; r < 100 && !st; r++) {
                double t0 = now_ms();
                st = yq_session_run_tensor(s, x, B, wh, d, CAP, n, &err);
                if (r >= 0) t[r] = now_ms() - t0;
            }
            yq_session_free(s);
            OK(st);
            for (int i = 1; i < 100; i++)
                for (int j = i; j > 0 && t[j] < t[j - 1]; j--) { double u = t[j]; t[j] = t[j - 1]; t[j - 1] = u; }
            printf("# perf session cuda:0 batch %d, %s: median %.3f ms per batch (%.3f ms per image), min %.3f "
                   "(host clock, upload to detections on the host, 100 runs)\n", B, graph ? "CUDA graph" : "kernel by kernel",
                   t[50], t[50] / B, t[0]);
        }
    free(x);
    yq_model_free(m);
}

/* ---- raw images for the GPU build ------------------------------------------------------ */

static int write_raw(int n, char **paths)
{
    int bad = 0;
    for (int i = 0; i < n; i++) {
        if (yq_image_write_raw(paths[i], &err) != YQ_OK) {
            fprintf(stderr, "%s\n", err.msg);
            bad++;
        }
    }
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--write-raw")) return write_raw(argc - 2, argv + 2);
    TEST(t_device_parse);
    TEST(t_open_errors);
    TEST(t_cpu_fp32_equals_detector);
    TEST(t_cpu_int8_equals_detector);
    TEST(t_cpu_options);
    TEST(t_tuned_package);
    TEST(t_fp32_on_cuda);
    TEST(t_no_gpu);
    TEST(t_gpu_post_models);
    TEST(t_gpu_post_synthetic);
    TEST(t_gpu_session);
    TEST(t_gpu_faults);
    const char *pm = getenv("YQ_SESSION_PERF");
    if (pm && *pm == '1' && yq_cuda_device_count() > 0) TEST(t_perf);
    if (pkg_path[0] && !strncmp(pkg_path, "/tmp/yq_test_session_", 21)) remove(pkg_path);
    return test_done();
}
