/* cudnn_int8: cuDNN's own int8 convolutions over a model's conv layers, the anchor
 * for yquant's int8 kernels.  Summed over the network's convs (nothing else of the
 * network runs: no shortcut, route, upsample, no requantize of the outputs).
 *
 *   cudnn_int8 CFG [--size N] [--batch 1,32] [--runs N] [--json FILE]
 *
 * Configurations, each tried on every conv layer (channels padded to the vector
 * width the configuration needs; TOPS are counted on the network's own channels):
 *   int8x32   NCHW_VECT_C, INT8x32 in/out, INT32 compute, IMPLICIT_PRECOMP_GEMM
 *             (the int8 tensor-core path of the legacy API)
 *   int8x4    NCHW_VECT_C, INT8x4 in/out, INT32 compute (dp4a)
 *   nhwc      INT8 NHWC in, INT8 or FLOAT NHWC out, INT32 compute (INT8_CONFIG /
 *             INT8_EXT_CONFIG)
 *   graph     the graph (backend) API: one CONVOLUTION_FORWARD op, INT8 NHWC in,
 *             FLOAT or INT32 out, INT32 compute, engines from heuristic mode A
 * A layer a configuration cannot run (cuDNN refuses it, typically depthwise) is
 * counted as skipped: its sum is then over fewer layers, and says so.  Each layer is
 * timed between CUDA events, median of --runs (default 20) after 3 warm-ups, on
 * random int8 data.  The last lines: RESULT engine=cudnn-int8 config=... . */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include "ir/ir.h"

#define MAX_CONV 512
enum { C_X32, C_X4, C_NHWC, C_GRAPH, C_COUNT };
static const char *cname[C_COUNT] = { "int8x32", "int8x4", "nhwc", "graph" };
static const char *cdesc[C_COUNT] = {
    "legacy API, NCHW_VECT_C INT8x32 (IMMA), IMPLICIT_PRECOMP_GEMM",
    "legacy API, NCHW_VECT_C INT8x4 (dp4a)",
    "legacy API, INT8 NHWC in, INT8/FLOAT NHWC out",
    "graph API, INT8 NHWC in, FLOAT/INT32 out, heuristic engines",
};
static const int cvec[C_COUNT] = { 32, 4, 4, 16 };

typedef struct layer { int id, layer, c, h, w, f, oh, ow, k, s, pad, groups; double flop; } layer;

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static int round_up(int x, int m) { return (x + m - 1) / m * m; }

static cudaStream_t stream;
static int runs = 20;
static char why_buf[256];

/* The median of `runs` timed calls of fn after 3 warm-ups; < 0 on failure. */
typedef int (*launch_fn)(void *ctx);
static float time_median(launch_fn fn, void *ctx)
{
    cudaEvent_t a, b;
    float *ms = malloc(sizeof *ms * (size_t)runs), med = -1;
    if (!ms || cudaEventCreate(&a) != cudaSuccess) { free(ms); return -1; }
    cudaEventCreate(&b);
    int ok = 1;
    for (int i = 0; i < 3 && ok; i++) ok = fn(ctx) == 0;
    if (ok && cudaStreamSynchronize(stream) != cudaSuccess) ok = 0;
    int n = runs;
    for (int i = 0; i < n && ok; i++) {
        cudaEventRecord(a, stream);
        ok = fn(ctx) == 0;
        cudaEventRecord(b, stream);
        if (ok && (cudaEventSynchronize(b) != cudaSuccess || cudaEventElapsedTime(&ms[i], a, b) != cudaSuccess)) ok = 0;
        /* a slow configuration (a fallback kernel) gets fewer runs: about 0.2 s per layer */
        if (ok && i == 0 && ms[0] * (float)n > 200.f) n = ms[0] > 66.f ? 3 : (int)(200.f / ms[0]) | 1;
    }
    if (ok) {
        qsort(ms, (size_t)n, sizeof *ms, cmp_float);
        med = ms[n / 2];
    } else {
        (void)cudaGetLastError();
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    free(ms);
    return med;
}

/* ---- the legacy API ---- */

typedef struct legacy {
    cudnnHandle_t h;
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    cudnnConvolutionFwdAlgo_t algo;
    void *dx, *dw, *dy, *ws;
    size_t ws_bytes;
} legacy;

static int legacy_launch(void *ctx)
{
    legacy *L = ctx;
    const float one = 1.f, zero = 0.f;
    cudnnStatus_t s = cudnnConvolutionForward(L->h, &one, L->x, L->dx, L->w, L->dw, L->conv, L->algo, L->ws, L->ws_bytes,
                                              &zero, L->y, L->dy);
    if (s != CUDNN_STATUS_SUCCESS) snprintf(why_buf, sizeof why_buf, "%s", cudnnGetErrorString(s));
    return s != CUDNN_STATUS_SUCCESS;
}

/* ms of layer l in legacy configuration cfg at batch B, or < 0 (why_buf says why). */
static float run_legacy(cudnnHandle_t h, int cfg, const layer *l, int B, void *dx, void *dw, void *dy, void *ws,
                        size_t ws_cap, char *algo_out)
{
    legacy L = { .h = h, .dx = dx, .dw = dw, .dy = dy, .ws = ws };
    float ms = -1;
    int C = round_up(l->c, cvec[cfg]), F = round_up(l->f, cvec[cfg]);
    if (l->groups > 1) C = l->c / l->groups * l->groups;   /* grouped: no padding (tried as is) */
    cudnnCreateTensorDescriptor(&L.x);
    cudnnCreateTensorDescriptor(&L.y);
    cudnnCreateFilterDescriptor(&L.w);
    cudnnCreateConvolutionDescriptor(&L.conv);
    cudnnStatus_t s;
    int outs = cfg == C_NHWC ? 2 : 1;
    for (int o = 0; o < outs; o++) {
        if (cfg == C_X32 || cfg == C_X4) {
            cudnnDataType_t vt = cfg == C_X32 ? CUDNN_DATA_INT8x32 : CUDNN_DATA_INT8x4;
            s = cudnnSetTensor4dDescriptor(L.x, CUDNN_TENSOR_NCHW_VECT_C, vt, B, C, l->h, l->w);
            if (!s) s = cudnnSetTensor4dDescriptor(L.y, CUDNN_TENSOR_NCHW_VECT_C, vt, B, F, l->oh, l->ow);
            if (!s) s = cudnnSetFilter4dDescriptor(L.w, vt, CUDNN_TENSOR_NCHW_VECT_C, F, C / l->groups, l->k, l->k);
        } else {
            s = cudnnSetTensor4dDescriptor(L.x, CUDNN_TENSOR_NHWC, CUDNN_DATA_INT8, B, C, l->h, l->w);
            if (!s) s = cudnnSetTensor4dDescriptor(L.y, CUDNN_TENSOR_NHWC, o == 0 ? CUDNN_DATA_INT8 : CUDNN_DATA_FLOAT, B,
                                                   F, l->oh, l->ow);
            if (!s) s = cudnnSetFilter4dDescriptor(L.w, CUDNN_DATA_INT8, CUDNN_TENSOR_NHWC, F, C / l->groups, l->k, l->k);
        }
        if (!s) s = cudnnSetConvolution2dDescriptor(L.conv, l->pad, l->pad, l->s, l->s, 1, 1, CUDNN_CROSS_CORRELATION,
                                                    CUDNN_DATA_INT32);
        if (!s) s = cudnnSetConvolutionGroupCount(L.conv, l->groups);
        if (!s) s = cudnnSetConvolutionMathType(L.conv, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION);
        if (s) {
            snprintf(why_buf, sizeof why_buf, "descriptors: %s", cudnnGetErrorString(s));
            continue;
        }
        /* The algorithms cuDNN's heuristic offers, IMPLICIT_PRECOMP_GEMM first (the documented int8 one). */
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT + 1];
        int got = 0;
        perf[0].algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
        if (cudnnGetConvolutionForwardAlgorithm_v7(h, L.x, L.w, L.conv, L.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got,
                                                   perf + 1) != CUDNN_STATUS_SUCCESS)
            got = 0;
        for (int k = 0; k <= got; k++) {
            if (k > 0 && (perf[k].status != CUDNN_STATUS_SUCCESS || perf[k].algo == perf[0].algo)) continue;
            L.algo = perf[k].algo;
            size_t need = 0;
            s = cudnnGetConvolutionForwardWorkspaceSize(h, L.x, L.w, L.conv, L.y, L.algo, &need);
            if (s) { snprintf(why_buf, sizeof why_buf, "workspace: %s", cudnnGetErrorString(s)); continue; }
            if (need > ws_cap) { snprintf(why_buf, sizeof why_buf, "needs %zu bytes of workspace", need); continue; }
            L.ws_bytes = need;
            if (legacy_launch(&L)) continue;
            float t = time_median(legacy_launch, &L);
            if (t > 0 && (ms < 0 || t < ms)) {
                ms = t;
                snprintf(algo_out, 48, "algo %d%s", (int)L.algo, cfg == C_NHWC ? (o ? " f32 out" : " s8 out") : "");
            }
            break;
        }
        if (ms > 0) break;
    }
    cudnnDestroyTensorDescriptor(L.x);
    cudnnDestroyTensorDescriptor(L.y);
    cudnnDestroyFilterDescriptor(L.w);
    cudnnDestroyConvolutionDescriptor(L.conv);
    return ms;
}

/* ---- the graph (backend) API ---- */

#define BK(call) do { cudnnStatus_t s_ = (call); if (s_ != CUDNN_STATUS_SUCCESS) { \
    snprintf(why_buf, sizeof why_buf, "%s: %s", #call, cudnnGetErrorString(s_)); goto done; } } while (0)

static cudnnStatus_t tensor_nhwc(cudnnBackendDescriptor_t *t, int64_t uid, cudnnDataType_t dt, int64_t n, int64_t c,
                                 int64_t h, int64_t w)
{
    int64_t dims[4] = { n, c, h, w }, str[4] = { h * w * c, 1, w * c, c }, align = 16;
    cudnnStatus_t s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, t);
    if (!s) s = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
    if (!s) s = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
    if (!s) s = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, str);
    if (!s) s = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    if (!s) s = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    if (!s) s = cudnnBackendFinalize(*t);
    return s;
}

typedef struct graph_run { cudnnHandle_t h; cudnnBackendDescriptor_t plan, pack; } graph_run;
static int graph_launch(void *ctx)
{
    graph_run *r = ctx;
    cudnnStatus_t s = cudnnBackendExecute(r->h, r->plan, r->pack);
    if (s != CUDNN_STATUS_SUCCESS) snprintf(why_buf, sizeof why_buf, "execute: %s", cudnnGetErrorString(s));
    return s != CUDNN_STATUS_SUCCESS;
}

static float run_graph(cudnnHandle_t h, const layer *l, int B, void *dx, void *dw, void *dy, void *ws, size_t ws_cap,
                       char *algo_out)
{
    float best = -1;
    if (l->groups > 1) { snprintf(why_buf, sizeof why_buf, "grouped conv not tried"); return -1; }
    int C = round_up(l->c, cvec[C_GRAPH]), F = round_up(l->f, cvec[C_GRAPH]);
    static const cudnnDataType_t ytypes[2] = { CUDNN_DATA_FLOAT, CUDNN_DATA_INT32 };
    for (int yt = 0; yt < 2 && best < 0; yt++) {
        cudnnBackendDescriptor_t x = NULL, w = NULL, y = NULL, conv = NULL, op = NULL, og = NULL, heur = NULL;
        cudnnBackendDescriptor_t cfgs[16] = { 0 };
        int64_t ncfg = 0;
        BK(tensor_nhwc(&x, 'x', CUDNN_DATA_INT8, B, C, l->h, l->w));
        BK(tensor_nhwc(&w, 'w', CUDNN_DATA_INT8, F, C, l->k, l->k));
        BK(tensor_nhwc(&y, 'y', ytypes[yt], B, F, l->oh, l->ow));
        {
            cudnnDataType_t ct = CUDNN_DATA_INT32;
            cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
            int64_t nd = 2, dil[2] = { 1, 1 }, st[2] = { l->s, l->s }, pad[2] = { l->pad, l->pad };
            BK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &conv));
            BK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &ct));
            BK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
            BK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &nd));
            BK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil));
            BK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, st));
            BK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
            BK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
            BK(cudnnBackendFinalize(conv));
        }
        {
            float alpha = 1.f, beta = 0.f;
            BK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &op));
            BK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
            BK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w));
            BK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
            BK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv));
            BK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha));
            BK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta));
            BK(cudnnBackendFinalize(op));
        }
        BK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &og));
        BK(cudnnBackendSetAttribute(og, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op));
        BK(cudnnBackendSetAttribute(og, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
        BK(cudnnBackendFinalize(og));
        {
            cudnnBackendHeurMode_t hm = CUDNN_HEUR_MODE_A;
            BK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur));
            BK(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &og));
            BK(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &hm));
            BK(cudnnBackendFinalize(heur));
            for (int i = 0; i < 16; i++) BK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[i]));
            BK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 16, &ncfg, cfgs));
        }
        if (ncfg == 0) snprintf(why_buf, sizeof why_buf, "no engine for %s output", yt ? "INT32" : "FLOAT");
        /* The first few engine configurations that build and run; the fastest counts. */
        for (int i = 0, tried = 0; i < ncfg && tried < 4; i++) {
            cudnnBackendDescriptor_t plan = NULL, pack = NULL;
            int64_t need = 0;
            if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan) ||
                cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h) ||
                cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfgs[i]) ||
                cudnnBackendFinalize(plan) ||
                cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, NULL, &need) ||
                need < 0 || (size_t)need > ws_cap) {
                if (!why_buf[0]) snprintf(why_buf, sizeof why_buf, "engine config %d did not build", i);
                cudnnBackendDestroyDescriptor(plan);
                continue;
            }
            int64_t uids[3] = { 'x', 'w', 'y' };
            void *ptrs[3] = { dx, dw, dy };
            if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack) ||
                cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids) ||
                cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs) ||
                cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws) ||
                cudnnBackendFinalize(pack)) {
                cudnnBackendDestroyDescriptor(plan);
                cudnnBackendDestroyDescriptor(pack);
                continue;
            }
            tried++;
            graph_run r = { h, plan, pack };
            float t = graph_launch(&r) ? -1 : time_median(graph_launch, &r);
            if (t > 0 && (best < 0 || t < best)) {
                best = t;
                snprintf(algo_out, 48, "engine cfg %d, %s out", i, yt ? "s32" : "f32");
            }
            cudnnBackendDestroyDescriptor(plan);
            cudnnBackendDestroyDescriptor(pack);
        }
    done:
        for (int i = 0; i < 16; i++) if (cfgs[i]) cudnnBackendDestroyDescriptor(cfgs[i]);
        if (heur) cudnnBackendDestroyDescriptor(heur);
        if (og) cudnnBackendDestroyDescriptor(og);
        if (op) cudnnBackendDestroyDescriptor(op);
        if (conv) cudnnBackendDestroyDescriptor(conv);
        if (x) cudnnBackendDestroyDescriptor(x);
        if (w) cudnnBackendDestroyDescriptor(w);
        if (y) cudnnBackendDestroyDescriptor(y);
    }
    return best;
}

/* ---- main ---- */

int main(int argc, char **argv)
{
    const char *cfg = NULL, *json = NULL;
    int size = 0, batches[8] = { 1, 32 }, nb = 2;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--size") && i + 1 < argc) size = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) {
            nb = 0;
            for (char *t = strtok(argv[++i], ","); t && nb < 8; t = strtok(NULL, ",")) batches[nb++] = atoi(t);
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: cudnn_int8 CFG [--size N] [--batch 1,32] [--runs N] [--json FILE]\n");
            return 2;
        } else cfg = argv[i];
    }
    if (!cfg || runs < 1 || nb < 1) {
        fprintf(stderr, "usage: cudnn_int8 CFG [--size N] [--batch 1,32] [--runs N] [--json FILE]\n");
        return 2;
    }
    yq_error err;
    yq_import_opt opt = { .width = size, .height = size, .synthetic = 1, .seed = 1 };
    yq_graph *g;
    if (yq_darknet_load(cfg, NULL, &opt, &g, &err) != YQ_OK) {
        fprintf(stderr, "cudnn_int8: %s\n", err.msg);
        return 1;
    }
    layer L[MAX_CONV];
    int nl = 0;
    double total_flop = 0;
    size_t max_x = 0, max_w = 0, max_y = 0;
    int maxb = 0;
    for (int k = 0; k < nb; k++) if (batches[k] > maxb) maxb = batches[k];
    for (int i = 1; i < g->n_nodes && nl < MAX_CONV; i++) {
        const yq_node *n = &g->nodes[i];
        if (n->op != YQ_OP_CONV) continue;
        yq_shape is = yq_node_in_shape(g, n);
        layer *l = &L[nl++];
        *l = (layer){ i, n->layer, is.c, is.h, is.w, n->p.conv.filters, n->out.h, n->out.w, n->p.conv.size,
                      n->p.conv.stride, n->p.conv.pad, n->p.conv.groups, yq_node_flops(g, n) };
        total_flop += l->flop;
        size_t cx = (size_t)round_up(l->c, 32) * l->h * l->w, cw = (size_t)round_up(l->f, 32) * round_up(l->c, 32) * l->k * l->k;
        size_t cy = (size_t)round_up(l->f, 32) * l->oh * l->ow * 4;   /* FLOAT/INT32 outputs */
        if (cx > max_x) max_x = cx;
        if (cw > max_w) max_w = cw;
        if (cy > max_y) max_y = cy;
    }
    max_x *= maxb;
    max_y *= maxb;
    size_t ws_cap = (size_t)512 << 20;
    struct cudaDeviceProp pr;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&pr, dev) != cudaSuccess) {
        fprintf(stderr, "cudnn_int8: no CUDA device\n");
        return 1;
    }
    cudnnHandle_t h;
    if (cudnnCreate(&h) != CUDNN_STATUS_SUCCESS || cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
        cudnnSetStream(h, stream) != CUDNN_STATUS_SUCCESS) {
        fprintf(stderr, "cudnn_int8: cudnnCreate failed\n");
        return 1;
    }
    void *dx, *dw, *dy, *ws;
    if (cudaMalloc(&dx, max_x) || cudaMalloc(&dw, max_w) || cudaMalloc(&dy, max_y) || cudaMalloc(&ws, ws_cap)) {
        fprintf(stderr, "cudnn_int8: out of device memory\n");
        return 1;
    }
    {   /* random int8 in [-8, 8): nothing zero-only, nothing that saturates */
        size_t m = max_x > max_w ? max_x : max_w;
        unsigned char *hb = malloc(m);
        uint32_t s = 2463534242u;
        for (size_t i = 0; hb && i < m; i++) {
            s ^= s << 13; s ^= s >> 17; s ^= s << 5;
            hb[i] = (unsigned char)(int8_t)((int)(s % 16) - 8);
        }
        if (!hb || cudaMemcpy(dx, hb, max_x, cudaMemcpyHostToDevice) || cudaMemcpy(dw, hb, max_w, cudaMemcpyHostToDevice)) {
            fprintf(stderr, "cudnn_int8: upload failed\n");
            return 1;
        }
        free(hb);
    }
    size_t v = cudnnGetVersion();
    printf("model: %s at %dx%d, %d conv layers, %.2f GOP per image\n", cfg, g->nodes[0].out.w, g->nodes[0].out.h, nl,
           total_flop * 1e-9);
    printf("device: %s (sm_%d%d, %d SMs); cuDNN %zu.%zu.%zu; median of %d runs per layer\n", pr.name, pr.major, pr.minor,
           pr.multiProcessorCount, v / 10000, v / 100 % 100, v % 100, runs);
    FILE *jf = json ? fopen(json, "w") : NULL;
    if (jf) fprintf(jf, "{\"model\": \"%s\", \"device\": \"%s\", \"gop_per_image\": %.4f, \"configs\": [", cfg, pr.name,
                    total_flop * 1e-9);
    int first_json = 1;
    for (int bi = 0; bi < nb; bi++) {
        int B = batches[bi];
        for (int c = 0; c < C_COUNT; c++) {
            double sum = 0, flop_ran = 0;
            int ran = 0;
            char first_why[256] = "";
            double *lms = calloc((size_t)nl, sizeof *lms);
            char (*algos)[48] = calloc((size_t)nl, 48);
            for (int i = 0; i < nl; i++) {
                why_buf[0] = 0;
                double ms = c == C_GRAPH ? run_graph(h, &L[i], B, dx, dw, dy, ws, ws_cap, algos[i])
                                        : run_legacy(h, c, &L[i], B, dx, dw, dy, ws, ws_cap, algos[i]);
                lms[i] = ms;
                if (ms > 0) {
                    sum += ms;
                    flop_ran += L[i].flop * B;
                    ran++;
                } else if (!first_why[0]) {
                    snprintf(first_why, sizeof first_why, "layer %d (%dx%dx%d -> %d, %dx%d/%d g%d): %s", L[i].layer, L[i].c,
                             L[i].h, L[i].w, L[i].f, L[i].k, L[i].k, L[i].s, L[i].groups, why_buf[0] ? why_buf : "failed");
                }
                (void)cudaGetLastError();
            }
            printf("\n== %s (%s), batch %d: %d of %d conv layers ran", cname[c], cdesc[c], B, ran, nl);
            if (ran) printf(", sum %.3f ms, %.2f TOPS over them, %.1f img/s if the rest were free", sum,
                            flop_ran / (sum * 1e-3) / 1e12, B / (sum * 1e-3));
            printf("\n");
            if (first_why[0]) printf("   first refusal: %s\n", first_why);
            if (ran) {   /* the 5 slowest layers */
                int idx[MAX_CONV];
                for (int i = 0; i < nl; i++) idx[i] = i;
                for (int a = 0; a < nl; a++)
                    for (int b2 = a + 1; b2 < nl; b2++)
                        if (lms[idx[b2]] > lms[idx[a]]) { int t = idx[a]; idx[a] = idx[b2]; idx[b2] = t; }
                for (int k = 0; k < 5 && k < nl && lms[idx[k]] > 0; k++) {
                    const layer *l = &L[idx[k]];
                    printf("   layer %3d %4dx%3dx%3d -> %4d %dx%d/%d: %8.1f us %7.2f TOPS  (%s)\n", l->layer, l->c, l->h,
                           l->w, l->f, l->k, l->k, l->s, 1e3 * lms[idx[k]], l->flop * B / (lms[idx[k]] * 1e-3) / 1e12,
                           algos[idx[k]]);
                }
            }
            printf("RESULT engine=cudnn-int8 config=%s batch=%d layers=%d/%d sum_ms=%.4f\n", cname[c], B, ran, nl, ran ? sum : -1);
            if (jf) {
                fprintf(jf, "%s\n {\"config\": \"%s\", \"desc\": \"%s\", \"batch\": %d, \"layers_ran\": %d, \"layers\": %d, "
                            "\"sum_ms\": %.5f, \"tops\": %.4f, \"first_refusal\": \"%s\", \"per_layer\": [",
                        first_json ? "" : ",", cname[c], cdesc[c], B, ran, nl, ran ? sum : -1.0,
                        ran ? flop_ran / (sum * 1e-3) / 1e12 : 0.0, first_why[0] ? "see log" : "");
                first_json = 0;
                for (int i = 0; i < nl; i++)
                    fprintf(jf, "%s{\"layer\": %d, \"us\": %.2f, \"gop\": %.5f}", i ? ", " : "", L[i].layer,
                            lms[i] > 0 ? 1e3 * lms[i] : -1.0, L[i].flop * B * 1e-9);
                fprintf(jf, "]}");
            }
            free(lms);
            free(algos);
        }
    }
    if (jf) {
        fprintf(jf, "\n]}\n");
        fclose(jf);
    }
    cudaFree(dx); cudaFree(dw); cudaFree(dy); cudaFree(ws);
    cudnnDestroy(h);
    yq_graph_free(g);
    return 0;
}
