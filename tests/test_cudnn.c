/* The cuDNN float engine (kernels/cudnn_fp.h) against the CPU FP32 engine
 * (runtime/plan.h, yq_exec_fp32).
 *
 * Float results are compared by relative error per tensor: max |gpu - cpu| over
 * max |cpu|.  Bounds, per head input: FP32 1e-4 (cuDNN with CUDNN_FMA_MATH sums in
 * another order than OpenBLAS, nothing else differs), FP16 2e-2 (every tensor
 * stored in half, 11 bits of mantissa, through 20 to 160 layers).  A NaN or Inf
 * where the CPU has none fails.  Fresh seeded random input for every check.
 * The exact FP32 plan (YQ_PLAN_EXACT: yquant's FP32 conv kernels, the exact activation;
 * what calibration runs) against the CPU's exact plan: every node's output equal by
 * memcmp, on every model here.  Every test is skipped without a GPU or without cuDNN in
 * the build. */
#include <string.h>
#include <math.h>
#include "ir/ir.h"
#include "kernels/cuda.h"
#include "kernels/cudnn_fp.h"
#include "tests/test_rewrite.h"
#include "runtime/plan.h"
#include "tests/test.h"

#define FP32_BOUND 1e-4
#define FP16_BOUND 2e-2

static yq_error err;
#define OK(call) do { yq_status st_ = (call); CHECKF(st_ == YQ_OK, "%s: %s", #call, err.msg); } while (0)

static void need_gpu(void)
{
    if (!yq_cudnn_available()) TEST_SKIP("built without cuDNN");
    if (yq_cuda_device_count() == 0) TEST_SKIP("no CUDA device");
}

static uint32_t rng_state = 1;
static float rnd_unit(void)
{
    uint32_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    rng_state = x;
    return (float)(x >> 8) / 16777216.f;
}

static double rel_err(const float *ref, const float *got, long n)
{
    double mx = 0, d = 0;
    for (long i = 0; i < n; i++) {
        if (!isfinite(got[i]) && isfinite(ref[i])) return INFINITY;
        if (fabs((double)ref[i]) > mx) mx = fabs((double)ref[i]);
        if (fabs((double)ref[i] - (double)got[i]) > d) d = fabs((double)ref[i] - (double)got[i]);
    }
    return mx > 0 ? d / mx : d;
}

/* Each precision and layout through the default path (graph-API engines where they
 * win, the legacy API elsewhere), and the legacy API alone. */
typedef struct gconf { const char *name; yq_cudnn_prec prec; yq_cudnn_layout layout; int legacy; double bound; } gconf;
static const gconf confs[] = {
    { "FP32 NCHW", YQ_CUDNN_FP32, YQ_CUDNN_NCHW, 0, FP32_BOUND },
    { "FP32 NHWC", YQ_CUDNN_FP32, YQ_CUDNN_NHWC, 0, FP32_BOUND },
    { "FP16 NHWC", YQ_CUDNN_FP16, YQ_CUDNN_NHWC, 0, FP16_BOUND },
    { "FP16 NCHW", YQ_CUDNN_FP16, YQ_CUDNN_NCHW, 0, FP16_BOUND },
    { "FP32 NCHW legacy", YQ_CUDNN_FP32, YQ_CUDNN_NCHW, 1, FP32_BOUND },
    { "FP16 NHWC legacy", YQ_CUDNN_FP16, YQ_CUDNN_NHWC, 1, FP16_BOUND },
};
#define NCONF ((int)(sizeof confs / sizeof confs[0]))

/* Runs g on the CPU and on every GPU configuration; compares the heads' inputs
 * (every node with all_nodes).  Fills why[] on the first failure. */
static void compare_graph(const char *label, const yq_graph *g, int B, int all_nodes, int nconf, char *why, size_t cap)
{
    yq_shape is = g->nodes[0].out;
    long in_n = yq_shape_size(is) * B;
    float *x = malloc(4 * (size_t)in_n);
    if (!x) { snprintf(why, cap, "out of memory"); return; }
    for (long i = 0; i < in_n; i++) x[i] = rnd_unit();
    int flags = all_nodes ? YQ_PLAN_KEEP_ALL : YQ_PLAN_KEEP_HEADS;
    yq_plan *cp = NULL;
    if (yq_plan_new(g, B, flags | (g->q ? YQ_PLAN_FLOAT : 0), &cp, &err) || yq_exec_fp32(cp, x, NULL, NULL, &err)) {
        snprintf(why, cap, "%s: cpu: %s", label, err.msg);
        yq_plan_free(cp);
        free(x);
        return;
    }
    char line[1600];
    int k = snprintf(line, sizeof line, "# %s, batch %d, %dx%d:", label, B, is.w, is.h);
    for (int c = 0; c < nconf && !why[0]; c++) {
        yq_cudnn_opt o = yq_cudnn_defaults(confs[c].prec);
        o.layout = confs[c].layout;
        o.legacy = confs[c].legacy;
        o.flags = flags;
        yq_cudnn_plan *gp = NULL;
        if (yq_cudnn_plan_new(g, B, &o, &gp, &err) || yq_cudnn_run(gp, x, &err)) {
            snprintf(why, cap, "%s %s: %s", label, confs[c].name, err.msg);
            yq_cudnn_plan_free(gp);
            break;
        }
        double worst = 0;
        int worst_id = -1, checked = 0;
        for (int i = 1; i < g->n_nodes && !why[0]; i++) {
            const yq_node *n = &g->nodes[i];
            int head = yq_op_is_head(n->op);
            if (!head && !all_nodes) continue;
            long nn = yq_shape_size(n->out) * B;
            float *got = malloc(4 * (size_t)(nn ? nn : 1));
            const float *ref = yq_plan_tensor(cp, i);
            if (!got || !ref) { snprintf(why, cap, "%s: node %d: no data", label, i); free(got); break; }
            if (yq_cudnn_download(gp, i, got, &err)) {
                snprintf(why, cap, "%s %s: download %d: %s", label, confs[c].name, i, err.msg);
                free(got);
                break;
            }
            double e = rel_err(ref, got, nn);
            checked++;
            if (e > worst || worst_id < 0) { worst = e; worst_id = i; }
            if (!(e <= confs[c].bound))
                snprintf(why, cap, "%s %s: node %d (%s %s) relative error %.3g > %.1g", label, confs[c].name, i,
                         n->name, yq_op_name(n->op), e, confs[c].bound);
            free(got);
        }
        if (k > 0 && (size_t)k < sizeof line)
            k += snprintf(line + k, sizeof line - (size_t)k, "\n#   %-17s max rel err %.2g (%d %s; %s, %.0f MB)", confs[c].name,
                          worst, checked, all_nodes ? "nodes" : "heads", yq_cudnn_plan_desc(gp), yq_cudnn_plan_bytes(gp) / 1e6);
        yq_cudnn_plan_free(gp);
    }
    if (!why[0]) printf("%s\n", line);
    yq_plan_free(cp);
    free(x);
}

/* The exact plans, CPU and GPU, every node compared byte for byte.  Fills why[] on the
 * first difference. */
static void compare_exact(const char *label, const yq_graph *g, int B, char *why, size_t cap)
{
    yq_shape is = g->nodes[0].out;
    long in_n = yq_shape_size(is) * B;
    float *x = malloc(4 * (size_t)in_n);
    if (!x) { snprintf(why, cap, "out of memory"); return; }
    for (long i = 0; i < in_n; i++) x[i] = rnd_unit();
    const int flags = YQ_PLAN_KEEP_ALL | YQ_PLAN_EXACT | (g->q ? YQ_PLAN_FLOAT : 0);
    yq_plan *cp = NULL;
    yq_cudnn_plan *gp = NULL;
    yq_cudnn_opt o = yq_cudnn_defaults(YQ_CUDNN_FP32);
    o.layout = YQ_CUDNN_NCHW;
    o.flags = flags;
    if (yq_plan_new(g, B, flags, &cp, &err) || yq_exec_fp32(cp, x, NULL, NULL, &err))
        snprintf(why, cap, "%s: cpu exact: %s", label, err.msg);
    else if (yq_cudnn_plan_new(g, B, &o, &gp, &err) || yq_cudnn_run(gp, x, &err))
        snprintf(why, cap, "%s: gpu exact: %s", label, err.msg);
    int checked = 0;
    for (int i = 1; i < g->n_nodes && !why[0]; i++) {
        const yq_node *n = &g->nodes[i];
        long nn = yq_shape_size(n->out) * B;
        float *got = malloc(4 * (size_t)(nn ? nn : 1));
        const float *ref = yq_plan_tensor(cp, i);
        if (!got || !ref) {
            snprintf(why, cap, "%s: node %d: no data", label, i);
        } else if (yq_cudnn_download(gp, i, got, &err)) {
            snprintf(why, cap, "%s exact: download %d: %s", label, i, err.msg);
        } else if (memcmp(ref, got, 4 * (size_t)nn)) {
            long k = 0;
            while (k < nn && !memcmp(ref + k, got + k, 4)) k++;
            snprintf(why, cap, "%s exact: node %d (%s %s) differs from the CPU's exact plan at %ld: %.9g, CPU %.9g "
                     "(relative error of the tensor %.3g)", label, i, n->name, yq_op_name(n->op), k, (double)got[k],
                     (double)ref[k], rel_err(ref, got, nn));
        }
        checked++;
        free(got);
    }
    if (!why[0]) printf("#   %-17s every node equal by memcmp (%d nodes; %s)\n", "FP32 exact", checked, yq_cudnn_plan_desc(gp));
    yq_cudnn_plan_free(gp);
    yq_plan_free(cp);
    free(x);
}

static void model_case(const char *label, const char *cfg, const char *weights, int size, int B, int all_nodes, int nconf)
{
    yq_import_opt opt = { .width = size, .height = size, .synthetic = weights == NULL, .seed = 1 };
    yq_graph *g;
    OK(yq_darknet_load(cfg, weights, &opt, &g, &err));
    char why[700] = "";
    compare_graph(label, g, B, all_nodes, nconf, why, sizeof why);
    if (!why[0]) compare_exact(label, g, B, why, sizeof why);
    yq_graph_free(g);
    CHECKF(!why[0], "%s", why);
}

static void shared_model(const char *folder, int size, int B, int all_nodes)
{
    need_gpu();
    char path[1024];
    snprintf(path, sizeof path, "%s/models/%s", test_data_dir(), folder);
    yq_model_paths mp;
    if (yq_model_resolve(path, NULL, &mp, &err) != YQ_OK) TEST_SKIP("%s: %s", folder, err.msg);
    model_case(folder, mp.cfg, mp.weights, size, B, all_nodes, NCONF);
}

static void cfg_only(const char *file, int size, int B, int all_nodes)
{
    need_gpu();
    char path[1024];
    snprintf(path, sizeof path, "%s/models/cfg-only/%s", test_data_dir(), file);
    FILE *f = fopen(path, "r");
    if (!f) TEST_SKIP("%s not found", path);
    fclose(f);
    model_case(file, path, NULL, size, B, all_nodes, NCONF);
}

static void t_version(void)
{
    char v[128];
    yq_cudnn_version(v, sizeof v);
    printf("# %s\n", v);
    need_gpu();
    char name[256];
    OK(yq_cuda_device_name(name, sizeof name, &err));
    printf("# device: %s\n", name);
}

/* Every node (KEEP_ALL): convs with depthwise groups, dropout, route, maxpool, upsample. */
static void t_fastest_xl_all_nodes(void) { rng_state = 11; shared_model("yolo-fastest-1.1-xl", 0, 2, 1); }
static void t_fastest_11(void) { rng_state = 12; shared_model("yolo-fastest-1.1", 0, 3, 0); }
static void t_fastest_10(void) { rng_state = 13; shared_model("yolo-fastest-1.0", 0, 1, 0); }
static void t_lite_trial6(void) { rng_state = 14; shared_model("yolo-lite-coco-trial6", 0, 2, 0); }
/* route groups (group_id), maxpool 2/2 */
static void t_yolov4_tiny_all_nodes(void) { rng_state = 15; cfg_only("yolov4-tiny.cfg", 160, 2, 1); }
/* maxpool size 2 stride 1 (asymmetric darknet padding) */
static void t_yolov3_tiny(void) { rng_state = 16; cfg_only("yolov3-tiny.cfg", 160, 2, 0); }
/* 75 convs, 23 shortcuts, upsample */
static void t_yolov3(void) { rng_state = 17; cfg_only("yolov3.cfg", 160, 2, 0); }
/* mish, SPP maxpools 5/9/13 */
static void t_yolov4(void) { rng_state = 18; cfg_only("yolov4.cfg", 128, 1, 0); }
/* logistic heads, many routes */
static void t_yolov7_tiny(void) { rng_state = 19; cfg_only("yolov7-tiny.cfg", 160, 2, 0); }

/* An int8 graph runs its float original; two runs give identical bytes. */
static void t_int8_graph_and_determinism(void)
{
    need_gpu();
    char path[1024];
    snprintf(path, sizeof path, "%s/models/yolo-fastest-1.1", test_data_dir());
    yq_model_paths mp;
    if (yq_model_resolve(path, NULL, &mp, &err) != YQ_OK) TEST_SKIP("yolo-fastest-1.1: %s", err.msg);
    yq_import_opt opt = { 0 };
    yq_graph *g;
    OK(yq_darknet_load(mp.cfg, mp.weights, &opt, &g, &err));
    yq_qconfig qc;
    yq_qconfig_defaults(&qc);
    yq_status st = test_rewrite(&g, NULL, &qc, &err);
    char why[700] = "";
    if (st) snprintf(why, sizeof why, "quantize: %s", err.msg);
    rng_state = 21;
    if (!why[0]) compare_graph("yolo-fastest-1.1 quantized (float original)", g, 2, 0, 1, why, sizeof why);
    /* determinism, FP16 */
    if (!why[0]) {
        yq_shape is = g->nodes[0].out;
        long in_n = yq_shape_size(is) * 2;
        float *x = malloc(4 * (size_t)in_n);
        int head = -1;
        for (int i = 0; i < g->n_nodes; i++) if (g->nodes[i].op == YQ_OP_YOLO) head = i;
        long hn = yq_shape_size(g->nodes[head].out) * 2;
        float *a = malloc(4 * (size_t)hn), *b = malloc(4 * (size_t)hn);
        yq_cudnn_opt o = yq_cudnn_defaults(YQ_CUDNN_FP16);
        yq_cudnn_plan *p = NULL;
        if (!x || !a || !b) snprintf(why, sizeof why, "out of memory");
        else {
            for (long i = 0; i < in_n; i++) x[i] = rnd_unit();
            if (yq_cudnn_plan_new(g, 2, &o, &p, &err) || yq_cudnn_run(p, x, &err) || yq_cudnn_download(p, head, a, &err) ||
                yq_cudnn_run(p, x, &err) || yq_cudnn_download(p, head, b, &err))
                snprintf(why, sizeof why, "fp16 plan: %s", err.msg);
            else if (memcmp(a, b, 4 * (size_t)hn))
                snprintf(why, sizeof why, "two FP16 runs on the same input differ");
        }
        yq_cudnn_plan_free(p);
        free(x); free(a); free(b);
    }
    yq_graph_free(g);
    CHECKF(!why[0], "%s", why);
}

static void t_errors(void)
{
    need_gpu();
    /* a cfg without weights: convs have no float weights */
    static const char cfg[] = "[net]\nwidth=64\nheight=64\nchannels=3\n\n[convolutional]\nfilters=8\nsize=3\nstride=1\npad=1\nactivation=leaky\n";
    yq_import_opt opt = { 0 };
    yq_graph *g;
    OK(yq_darknet_parse_cfg(cfg, sizeof cfg - 1, "inline.cfg", &opt, &g, &err));
    yq_cudnn_opt o = yq_cudnn_defaults(YQ_CUDNN_FP32);
    yq_cudnn_plan *p = NULL;
    yq_status st = yq_cudnn_plan_new(g, 1, &o, &p, &err);
    int no_weights = st == YQ_ERR_INVALID_ARG && p == NULL && strstr(err.msg, "weights") != NULL;
    st = yq_cudnn_plan_new(g, 0, &o, &p, &err);
    int bad_batch = st == YQ_ERR_INVALID_ARG && p == NULL;
    yq_cudnn_opt oh = yq_cudnn_defaults(YQ_CUDNN_FP16);
    oh.flags |= YQ_PLAN_EXACT;
    st = yq_cudnn_plan_new(g, 1, &oh, &p, &err);
    int exact_fp16 = st == YQ_ERR_INVALID_ARG && p == NULL && strstr(err.msg, "exact") != NULL;
    yq_graph_free(g);
    CHECKF(no_weights, "a conv without weights was not refused with a message");
    CHECKF(bad_batch, "batch 0 was not refused");
    CHECKF(exact_fp16, "an exact FP16 plan was not refused with a message");
}

int main(void)
{
    TEST(t_version);
    TEST(t_errors);
    TEST(t_fastest_xl_all_nodes);
    TEST(t_fastest_11);
    TEST(t_fastest_10);
    TEST(t_lite_trial6);
    TEST(t_yolov4_tiny_all_nodes);
    TEST(t_yolov3_tiny);
    TEST(t_yolov3);
    TEST(t_yolov4);
    TEST(t_yolov7_tiny);
    TEST(t_int8_graph_and_determinism);
    return test_done();
}
