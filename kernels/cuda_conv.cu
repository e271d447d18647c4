/* Int8 convolution on the GPU, the host side: the conv object (yq_cuda_conv: the weights
 * repacked and uploaded once per layout a family reads), the launchers of the dp4a,
 * depthwise, direct and float kernels (kernels/cuda_conv_kernels.cuh, which describes
 * them) and the dispatch to the tensor-core families (kernels/cuda_mma.cu, cuda_halo.cu,
 * cuda_img.cu, cuda_cutlass.cu, cuda_wgmma.cu, cuda_f16.cu), and the configurations the
 * tuner chooses among (candidates, the untuned default, set by name: cuda_conv_names.cu). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_fp16.h>
#include "kernels/cuda_conv_kernels.cuh"

struct yq_cuda_conv {
    int cin, ih, iw, F, k, stride, pad, groups, oh, ow;
    int act, float_op;
    yq_dtype out_t;
    int32_t qmin, qmax;
    int K4;                       /* dp4a: words per filter */
    yq_conv_variant var;          /* the family when cfg is AUTO */
    yq_conv_cfg cfg;              /* fixed configuration, or family AUTO: the heuristic */
    int32_t *ws;                  /* split-K scratch */
    size_t ws_bytes;
    int32_t *w32;                 /* dp4a weights [F][k][k][c4] (as words) */
    int8_t *wq;                   /* [F][cin/groups][k][k], as the graph holds them */
    int32_t *bq;
    float *pos, *neg;
    int8_t *lut;                  /* a table activation (yq_requant_out), or NULL */
    float *deq;
    float *wf, *bf;               /* float_op */
    __half *wh;                   /* float_op, groups == 1: the weights as FP16 (F16 family) */
    int arch, sms;                /* the device's, at creation */
    int cut;                      /* the CUTLASS family can run this conv's shape here */
    int halo;                     /* the halo family can (some of its tiles) */
    int img;                      /* the image family can (its shape; the input's type is checked at run) */
    int wg;                       /* the wgmma family can (channels a multiple of 64, sm_90) */
    int wg1f;                     /* the streaming 1x1 family can, with a float output (a head) */
    struct yq_const_w *cw;        /* dp4a_const's parameters (host), when it can run this conv */
    unsigned *wdw;                /* depthwise: [tap][c4 / 4] words */
    unsigned *wdt;                /* depthwise on dp4a: [tap group][c4] words (dw_dp4a) */
    float *wdf;                   /* float depthwise: the FP32 weights as [tap][F] (f32_dw on int8 inputs) */
    int small;                    /* every accumulator plus bias is within 2^22 in magnitude, whatever
                                     the int8 inputs (from the weights: acc_bound) */
};

static int mma_ok(const yq_cuda_conv *c);

/* The largest |accumulator + bias| an int8 conv can reach: max over filters of
 * 128 sum |w| + |b| (an int8 input is at least -128). */
static long long acc_bound(const int8_t *wq, const int32_t *bq, int F, long K)
{
    long long m = 0;
    for (int o = 0; o < F; o++) {
        long long s = bq[o] < 0 ? -(long long)bq[o] : bq[o];
        for (long i = 0; i < K; i++) s += 128LL * (wq[(size_t)o * K + i] < 0 ? -wq[(size_t)o * K + i] : wq[(size_t)o * K + i]);
        if (s > m) m = s;
    }
    return m;
}
static int f16_ok(const yq_cuda_conv *c);
static int cut_shape_ok(const yq_cuda_conv *c, int tile, int batch);

/* An int8-output kernel launched as the instantiation of its epilogue: with the table
 * (a.lut set) or without (cuda_conv.cuh: rq_out_t); an expression. */
#define YQ_LAUNCH_LUT(K, G, B, SM, ST, ...) \
    (a.lut ? K<__VA_ARGS__, true><<<G, B, SM, ST>>>(a) : K<__VA_ARGS__, false><<<G, B, SM, ST>>>(a))

/* ---- launchers ------------------------------------------------------------ */

/* Which dp4a tile the heuristic runs on a device of sms multiprocessors (the conv's, read
 * when it was made): the large tile when it has enough filters to fill and at least a wave
 * of blocks over the multiprocessors, the K-split one when 64 x 64 tiles would leave
 * multiprocessors idle and K is long enough to split, else the 64 x 64 tile (the tests run
 * every tile on every case through yq_cuda_conv_candidates). */
static int dp4a_tile(long M, int nout, int K4, int sms)
{
    long blocks = (long)((M + TM - 1) / TM) * ((nout + TN - 1) / TN);
    if (nout >= 96 && blocks >= sms) return 128;
    long b64 = (long)((M + BM - 1) / BM) * ((nout + BN - 1) / BN);
    return b64 < sms && K4 >= 64 ? 32 : 64;
}

template <int K, int S>
static void launch_dw_k(const ConvK &a, cudaStream_t st)
{
    /* 16 channels a thread where everything is 16-byte aligned (and F == F4: the
     * per-channel parameters read as vectors) */
    bool v16 = a.F % 16 == 0 && a.IPW % 4 == 0 && a.OPW % 4 == 0 && !((uintptr_t)a.in & 15) &&
               !((uintptr_t)a.out & 15);
    if (v16) {
        unsigned g = yq_blocks((long)a.M * (a.F4 / 16), 256);
        if (a.u8) YQ_LAUNCH_LUT(conv_dw_k16, g, 256, 0, st, K, S, true);
        else YQ_LAUNCH_LUT(conv_dw_k16, g, 256, 0, st, K, S, false);
        return;
    }
    unsigned g = yq_blocks((long)a.M * (a.F4 / 4), 256);
    if (a.u8) YQ_LAUNCH_LUT(conv_dw_k, g, 256, 0, st, K, S, true);
    else YQ_LAUNCH_LUT(conv_dw_k, g, 256, 0, st, K, S, false);
}

template <int K, int S>
static void launch_dw_dp4a(const ConvK &a, cudaStream_t st)
{
    /* 16 channels a thread where loads and stores can be 16 bytes */
    bool v16 = a.F4 % 16 == 0 && a.IPW % 4 == 0 && a.OPW % 4 == 0 && !((uintptr_t)a.in & 15) &&
               !((uintptr_t)a.out & 15) && !((uintptr_t)a.res & 15);
    long n = (long)a.M * (a.F4 / (v16 ? 16 : 4));
    unsigned g = yq_blocks(n, 256);
    if (v16) YQ_LAUNCH_LUT(conv_dw_dp4a, g, 256, 0, st, K, S, 4, false);   /* int8 inputs only (dw_ok) */
    else YQ_LAUNCH_LUT(conv_dw_dp4a, g, 256, 0, st, K, S, 1, false);
}

/* dw_tile's block: a slab of up to 16 words, and as many columns by 2 x DWT_R rows as make
 * about DWT_T threads, the output cut into tiles of equal size. */
struct dw_tile_geom { int cbw, tw, th, tx, ty, slabs; size_t smem; };

static dw_tile_geom dw_tile_shape(const ConvK &a)
{
    dw_tile_geom g;
    const int cw = a.F4 >> 2;
    g.cbw = cw < 16 ? cw : 16;
    g.slabs = (cw + g.cbw - 1) / g.cbw;
    int rgs = 2;                                          /* row groups of DWT_R */
    const int twmax = DWT_T / (g.cbw * rgs);              /* at least 8: cbw <= 16 */
    g.tx = (a.OW + twmax - 1) / twmax;
    g.tw = (a.OW + g.tx - 1) / g.tx;
    if (a.OH <= DWT_R) rgs = 1;
    g.th = rgs * DWT_R;
    g.ty = (a.OH + g.th - 1) / g.th;
    const int ih = (g.th - 1) * a.s + a.k, iw = (g.tw - 1) * a.s + a.k;
    g.smem = (size_t)ih * iw * g.cbw * 4;
    return g;
}

/* Whether dw_tile can take these tensors: 16-byte input pixels, and a grid z (images x
 * slabs) within 65535.  Otherwise dw_dp4a runs (the same bytes). */
static bool dw_tile_fits(const ConvK &a)
{
    return a.IPW % 4 == 0 && !((uintptr_t)a.in & 15) && (long)(a.M / (a.OH * a.OW)) * dw_tile_shape(a).slabs <= 65535;
}

template <int K, int S>
static void launch_dw_tile(const ConvK &a, cudaStream_t st)
{
    const dw_tile_geom g = dw_tile_shape(a);
    const int batch = a.M / (a.OH * a.OW);
    dim3 grid(g.tx, g.ty, batch * g.slabs);
    if (a.lut) conv_dw_tile<K, S, true><<<grid, DWT_T, g.smem, st>>>(a, g.cbw, g.tw, g.th);
    else conv_dw_tile<K, S, false><<<grid, DWT_T, g.smem, st>>>(a, g.cbw, g.tw, g.th);
}

/* Whether dw_col can take these tensors: an image's input within 32-bit word offsets, a
 * row's (column, word) pairs and the (image, segment) pairs within the grid's limits.
 * Otherwise dw_dp4a runs (the same bytes). */
static bool dw_col_fits(const ConvK &a)
{
    const long nseg = (a.OH + DWC_R - 1) / DWC_R, batch = a.M / (a.OH * a.OW);
    return (long)a.IH * a.IW * a.IPW < (1L << 31) && batch * nseg <= 65535 && (long)a.OW * (a.F4 >> 2) < (1L << 30);
}

template <int S>
static void launch_dw_col(const ConvK &a, cudaStream_t st)
{
    const int nseg = (a.OH + DWC_R - 1) / DWC_R;
    const dim3 g(yq_blocks((long)a.OW * (a.F4 >> 2), 256), (unsigned)(a.M / (a.OH * a.OW) * nseg));
    if (a.lut) conv_dw_col<S, true><<<g, 256, 0, st>>>(a, nseg);
    else conv_dw_col<S, false><<<g, 256, 0, st>>>(a, nseg);
}

static int f32_in_type(yq_dtype t) { return t == YQ_F32 ? F32_IN_F : t == YQ_U8 ? F32_IN_U8 : F32_IN_S8; }

/* f32_dw's indices are 32-bit: its output and input below 2^31 elements (an int8 input's
 * pixel stride, at least F, in bytes), else conv_f32 runs. */
static bool f32_dw_fits(const ConvK &a)
{
    const long batch = a.M / (a.OH * a.OW), ps = a.tin.dtype == YQ_F32 ? a.F : yq_ps(a.tin);
    return (long)a.M * a.F < (1L << 31) && batch * a.IH * a.IW * ps < (1L << 31);
}

template <int K, int S>
static void launch_f32_dw(const ConvK &a, cudaStream_t st)
{
    const unsigned g = yq_blocks((long)a.M / a.OW * ((a.OW + DWF_NX - 1) / DWF_NX) * a.F, 256);
    switch (f32_in_type(a.tin.dtype)) {
    case F32_IN_F: conv_f32_dw<K, S, F32_IN_F><<<g, 256, 0, st>>>(a); break;
    case F32_IN_U8: conv_f32_dw<K, S, F32_IN_U8><<<g, 256, 0, st>>>(a); break;
    default: conv_f32_dw<K, S, F32_IN_S8><<<g, 256, 0, st>>>(a); break;
    }
}

template <int KS>
static void launch_f32_px_k(const ConvK &a, cudaStream_t st)
{
    const unsigned g = yq_blocks(a.M, PXF_T);
    const size_t sm = sizeof(float) * PXF_FC * a.C * a.k * a.k;
    switch (f32_in_type(a.tin.dtype)) {
    case F32_IN_F: conv_f32_px<F32_IN_F, KS><<<g, PXF_T, sm, st>>>(a); break;
    case F32_IN_U8: conv_f32_px<F32_IN_U8, KS><<<g, PXF_T, sm, st>>>(a); break;
    default: conv_f32_px<F32_IN_S8, KS><<<g, PXF_T, sm, st>>>(a); break;
    }
}

static void launch_f32_px(const ConvK &a, cudaStream_t st)
{
    if (a.k == 1) launch_f32_px_k<1>(a, st);
    else if (a.k == 3) launch_f32_px_k<3>(a, st);
    else launch_f32_px_k<0>(a, st);
}

template <bool U8, int K, int C4W>
static void launch_const_k(const ConvK &a, cudaStream_t s)
{
    unsigned g = yq_blocks(a.M, 128);
    if (a.F4 <= 8) conv_const<U8, K, C4W, 8><<<g, 128, 0, s>>>(a, *a.cw);
    else if (a.F4 <= 16) conv_const<U8, K, C4W, 16><<<g, 128, 0, s>>>(a, *a.cw);
    else if (a.F4 <= 32) conv_const<U8, K, C4W, 32><<<g, 128, 0, s>>>(a, *a.cw);
    else if (a.F4 <= 48) conv_const<U8, K, C4W, 48><<<g, 128, 0, s>>>(a, *a.cw);   /* 64 slots: a third wasted */
    else conv_const<U8, K, C4W, 64><<<g, 128, 0, s>>>(a, *a.cw);
}

/* The shapes dp4a_const has kernels for (and a.F4 <= 64). */
static int const_shape(int k, int c4w) { return (k == 3 && c4w == 1) || (k == 1 && (c4w == 1 || c4w == 2 || c4w == 4)); }

template <bool U8>
static void launch_const(const ConvK &a, cudaStream_t s)
{
    if (a.k == 3) launch_const_k<U8, 3, 1>(a, s);
    else if (a.C4w == 1) launch_const_k<U8, 1, 1>(a, s);
    else if (a.C4w == 2) launch_const_k<U8, 1, 2>(a, s);
    else launch_const_k<U8, 1, 4>(a, s);
}

/* The dp4a family's tiles: 0 = 64 x 64, 1 = 128 x 128, 2 = 32 x 32 with K split over
 * warps, 3 = one pixel per thread (K4 <= PX_KMAX, weights <= 48 KB), 4 = small convs with
 * their parameters in constant memory (conv_const). */
static void launch_dp4a(const ConvK &a, int tile, cudaStream_t s)
{
    int nout = a.fout ? a.F : a.F4;
    bool vec = a.C4w % 4 == 0 && a.IPW % 4 == 0 && !((uintptr_t)a.in & 15);   /* int4 loads */
    if (tile == 4) {
        if (a.u8) launch_const<true>(a, s);
        else launch_const<false>(a, s);
        return;
    }
    if (tile == 3) {
        size_t sm = sizeof(int) * (size_t)a.F * a.K4 + PX_STAGE_BYTES;
        if (a.u8) YQ_LAUNCH_LUT(conv_dp4a_px, yq_blocks(a.M, PX_T), PX_T, sm, s, true);
        else YQ_LAUNCH_LUT(conv_dp4a_px, yq_blocks(a.M, PX_T), PX_T, sm, s, false);
        return;
    }
    if (tile == 2) {
        dim3 g1(yq_blocks(a.M, KS_T), yq_blocks(nout, KS_T));
        if (a.u8) {
            if (a.fout) vec ? conv_dp4a_ks<true, true, true><<<g1, 256, 0, s>>>(a) : conv_dp4a_ks<true, true, false><<<g1, 256, 0, s>>>(a);
            else vec ? YQ_LAUNCH_LUT(conv_dp4a_ks, g1, 256, 0, s, true, false, true) : YQ_LAUNCH_LUT(conv_dp4a_ks, g1, 256, 0, s, true, false, false);
        } else {
            if (a.fout) vec ? conv_dp4a_ks<false, true, true><<<g1, 256, 0, s>>>(a) : conv_dp4a_ks<false, true, false><<<g1, 256, 0, s>>>(a);
            else vec ? YQ_LAUNCH_LUT(conv_dp4a_ks, g1, 256, 0, s, false, false, true) : YQ_LAUNCH_LUT(conv_dp4a_ks, g1, 256, 0, s, false, false, false);
        }
    } else if (tile == 1) {
        dim3 g2(yq_blocks(a.M, TM), yq_blocks(nout, TN));
        if (a.u8) {
            if (a.fout) vec ? conv_dp4a_128<true, true, true><<<g2, 256, 0, s>>>(a) : conv_dp4a_128<true, true, false><<<g2, 256, 0, s>>>(a);
            else vec ? YQ_LAUNCH_LUT(conv_dp4a_128, g2, 256, 0, s, true, false, true) : YQ_LAUNCH_LUT(conv_dp4a_128, g2, 256, 0, s, true, false, false);
        } else {
            if (a.fout) vec ? conv_dp4a_128<false, true, true><<<g2, 256, 0, s>>>(a) : conv_dp4a_128<false, true, false><<<g2, 256, 0, s>>>(a);
            else vec ? YQ_LAUNCH_LUT(conv_dp4a_128, g2, 256, 0, s, false, false, true) : YQ_LAUNCH_LUT(conv_dp4a_128, g2, 256, 0, s, false, false, false);
        }
    } else {
        dim3 grid(yq_blocks(a.M, BM), yq_blocks(nout, BN));
        if (a.u8 && a.fout) conv_dp4a<true, true><<<grid, 256, 0, s>>>(a);
        else if (a.u8) YQ_LAUNCH_LUT(conv_dp4a, grid, 256, 0, s, true, false);
        else if (a.fout) conv_dp4a<false, true><<<grid, 256, 0, s>>>(a);
        else YQ_LAUNCH_LUT(conv_dp4a, grid, 256, 0, s, false, false);
    }
}
extern "C" void yq_cuda_conv_free(yq_cuda_conv *c)
{
    if (!c) return;
    cudaFree(c->w32);
    cudaFree(c->wq);
    cudaFree(c->bq);
    cudaFree(c->pos);
    cudaFree(c->neg);
    cudaFree(c->lut);
    cudaFree(c->deq);
    cudaFree(c->wf);
    cudaFree(c->bf);
    cudaFree(c->wh);
    cudaFree(c->ws);
    cudaFree(c->wdw);
    cudaFree(c->wdt);
    cudaFree(c->wdf);
    free(c->cw);
    free(c);
}

static yq_status upload(void **d, const void *h, size_t bytes, yq_error *err)
{
    YQ_CUDA_TRY(cudaMalloc(d, bytes ? bytes : 1));
    YQ_CUDA_TRY(cudaMemcpy(*d, h, bytes, cudaMemcpyHostToDevice));
    return YQ_OK;
}

/* n 4-byte values, zero-filled on the device to a multiple of 16: kernels read the
 * per-channel parameters of 4 or 16 channels as vectors, past F included (zero scales and
 * biases requantize to zero). */
static yq_status upload_pad16(void **d, const void *h, int n, yq_error *err)
{
    size_t bytes = (size_t)n * 4, padded = (((size_t)n + 15) & ~(size_t)15) * 4;
    YQ_CUDA_TRY(cudaMalloc(d, padded ? padded : 1));
    YQ_CUDA_TRY(cudaMemset(*d, 0, padded ? padded : 1));
    YQ_CUDA_TRY(cudaMemcpy(*d, h, bytes, cudaMemcpyHostToDevice));
    return YQ_OK;
}

extern "C" yq_status yq_cuda_conv_new(const yq_graph *g, const yq_node *n, const yq_qnode *q, yq_cuda_conv **out,
                                      yq_error *err)
{
    if (n->op != YQ_OP_CONV) return yq_fail(err, YQ_ERR_INVALID_ARG, "%s is not a conv", n->name);
    yq_cuda_conv *c = (yq_cuda_conv *)calloc(1, sizeof *c);
    if (!c) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    yq_shape is = yq_node_in_shape(g, n);
    const yq_conv_p *cp = &n->p.conv;
    c->cin = is.c; c->ih = is.h; c->iw = is.w;
    c->F = cp->filters; c->k = cp->size; c->stride = cp->stride; c->pad = cp->pad; c->groups = cp->groups;
    c->oh = n->out.h; c->ow = n->out.w;
    c->act = n->act;
    c->float_op = !q || q->float_op;
    c->out_t = q ? q->dtype : YQ_F32;
    c->qmin = q ? q->qmin : -127;
    c->qmax = q ? q->qmax : 127;
    c->arch = yq_cuda_arch();
    {
        int d = 0;
        if (cudaGetDevice(&d) != cudaSuccess || cudaDeviceGetAttribute(&c->sms, cudaDevAttrMultiProcessorCount, d) != cudaSuccess)
            c->sms = 80;
        (void)cudaGetLastError();
    }
    int F = c->F, k = c->k, cg = is.c / cp->groups;
    int c4 = (is.c + 3) & ~3;
    yq_status st = YQ_OK;
    if (c->float_op) {
        if (!n->w || !n->b) { st = yq_fail(err, YQ_ERR_INVALID_ARG, "%s: float conv without weights", n->name); goto fail; }
        c->var = YQ_CONV_F32;
        const float *w = yq_conv_weights(n, q);    /* fp16w: the rounded copy, as on the CPU */
        if ((st = upload((void **)&c->wf, w, sizeof(float) * (size_t)n->n_w, err)) ||
            (st = upload((void **)&c->bf, n->b, sizeof(float) * (size_t)F, err)))
            goto fail;
        if (cp->groups == is.c && F == is.c) {     /* f32_dw's transposed copy: [tap][F] */
            float *h = (float *)malloc(sizeof *h * (size_t)F * k * k);
            if (!h) { st = yq_fail(err, YQ_ERR_NOMEM, "out of memory"); goto fail; }
            for (int ch = 0; ch < F; ch++)
                for (int tap = 0; tap < k * k; tap++) h[(size_t)tap * F + ch] = w[(size_t)ch * k * k + tap];
            st = upload((void **)&c->wdf, h, sizeof *h * (size_t)F * k * k, err);
            free(h);
            if (st) goto fail;
        }
        if (cp->groups == 1 && c->arch >= 80) {    /* the FP16 weights, rounded once */
            __half *h = (__half *)malloc(sizeof *h * (size_t)(n->n_w ? n->n_w : 1));
            if (!h) { st = yq_fail(err, YQ_ERR_NOMEM, "out of memory"); goto fail; }
            for (long i = 0; i < n->n_w; i++) h[i] = __float2half_rn(w[i]);
            st = upload((void **)&c->wh, h, sizeof *h * (size_t)n->n_w, err);
            free(h);
            if (st) goto fail;
            /* for yq_cuda_conv_set_variant(c, YQ_CONV_F16): fast, not the exact numerics */
        }
    } else {
        if (!q->wq || !q->bq || !q->rq_pos || !q->rq_neg || !q->deq) {
            st = yq_fail(err, YQ_ERR_INVALID_ARG, "%s: int8 conv without quantized parameters", n->name);
            goto fail;
        }
        size_t nw = (size_t)F * cg * k * k;
        if ((st = upload((void **)&c->wq, q->wq, nw, err)) ||
            (st = upload_pad16((void **)&c->bq, q->bq, F, err)) ||
            (st = upload_pad16((void **)&c->pos, q->rq_pos, F, err)) ||
            (st = upload_pad16((void **)&c->neg, q->rq_neg, F, err)) ||
            (st = upload((void **)&c->deq, q->deq, sizeof(float) * F, err)) ||
            (q->lut && c->out_t == YQ_S8 && (st = upload((void **)&c->lut, q->lut, YQ_LUT_N, err))))
            goto fail;
        c->small = acc_bound(q->wq, q->bq, F, cg * k * k) < (1 << 22);
        if (cp->groups == 1) {
            c->K4 = k * k * c4 / 4;
            size_t bytes = (size_t)F * k * k * c4;
            int8_t *h = (int8_t *)calloc(bytes, 1);
            if (!h) { st = yq_fail(err, YQ_ERR_NOMEM, "out of memory"); goto fail; }
            for (int o = 0; o < F; o++)
                for (int ci = 0; ci < is.c; ci++)
                    for (int ky = 0; ky < k; ky++)
                        for (int kx = 0; kx < k; kx++)
                            h[(((size_t)o * k + ky) * k + kx) * c4 + ci] = q->wq[(((size_t)o * is.c + ci) * k + ky) * k + kx];
            st = upload((void **)&c->w32, h, bytes, err);
            if (!st && const_shape(k, c4 / 4) && F <= YQ_CONST_MAXF && c->out_t == YQ_S8 && !c->lut) {
                /* dp4a_const's parameters: [filter][K4] words, as uploaded */
                c->cw = (struct yq_const_w *)calloc(1, sizeof *c->cw);
                if (!c->cw) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
                for (int o = 0; c->cw && o < F; o++) {
                    memcpy(c->cw->w + o * c->K4, h + (size_t)o * c->K4 * 4, (size_t)c->K4 * 4);
                    c->cw->bq[o] = q->bq[o];
                    c->cw->pos[o] = q->rq_pos[o];
                    c->cw->neg[o] = q->rq_neg[o];
                }
            }
            free(h);
            if (st) goto fail;
            c->var = YQ_CONV_DP4A;
            if (mma_ok(c)) {
                if ((st = yq_mma_prepare(err))) goto fail;
                c->var = YQ_CONV_MMA;
            }
            c->cut = mma_ok(c) && c->out_t == YQ_S8 && is.c % 16 == 0 && F % 16 == 0 && yq_cut_built();
            if (c->cut && (st = yq_cut_prepare(err))) goto fail;
            for (int t = 0; t < YQ_HALO_TILES && mma_ok(c) && c->out_t == YQ_S8 && yq_halo_built(); t++)
                c->halo |= yq_halo_shape_ok(t, c4, k, cp->stride, cp->groups, F);
            if (c->halo && (st = yq_halo_prepare(err))) goto fail;
            c->wg = mma_ok(c) && c->out_t == YQ_S8 && is.c % 64 == 0 && F % 16 == 0 && c->arch == 90 && yq_wg_built();
            if (c->wg && ((st = yq_wg_prepare(err)) || (st = yq_wgh_prepare(err)) || (st = yq_wg1_prepare(err)))) goto fail;
            c->wg1f = mma_ok(c) && c->out_t == YQ_F32 && is.c % 64 == 0 && k == 1 && c->arch == 90 && yq_wg_built();
            if (c->wg1f && (st = yq_wg1_prepare(err))) goto fail;
            c->img = !c->float_op && c->out_t == YQ_S8 && yq_img_shape_ok(is.c, k, cp->stride, cp->groups, F) &&
                     c->arch >= 80 && yq_img_built();
        } else if (cp->groups == is.c && F == is.c) {
            c->var = YQ_CONV_DW;
            /* [tap][c4] bytes: one word holds a tap's weights of 4 channels */
            size_t bytes = (size_t)k * k * c4;
            int8_t *h = (int8_t *)calloc(bytes, 1);
            if (!h) { st = yq_fail(err, YQ_ERR_NOMEM, "out of memory"); goto fail; }
            for (int ch = 0; ch < F; ch++)
                for (int tap = 0; tap < k * k; tap++) h[(size_t)tap * c4 + ch] = q->wq[(size_t)ch * k * k + tap];
            st = upload((void **)&c->wdw, h, bytes, err);
            free(h);
            if (st) goto fail;
            /* dw_dp4a's: [group][c4] words, word (g, ch) = channel ch's taps 4g..4g+3 */
            int groups4 = (k * k + 3) / 4;
            bytes = (size_t)groups4 * c4 * 4;
            h = (int8_t *)calloc(bytes, 1);
            if (!h) { st = yq_fail(err, YQ_ERR_NOMEM, "out of memory"); goto fail; }
            for (int ch = 0; ch < F; ch++)
                for (int tap = 0; tap < k * k; tap++)
                    h[((size_t)(tap / 4) * c4 + ch) * 4 + tap % 4] = q->wq[(size_t)ch * k * k + tap];
            st = upload((void **)&c->wdt, h, bytes, err);
            free(h);
            if (st) goto fail;
        } else {
            c->var = YQ_CONV_DIRECT;
        }
    }
    *out = c;
    return YQ_OK;
fail:
    yq_cuda_conv_free(c);
    return st;
}

extern "C" yq_status yq_cuda_conv_set_variant(yq_cuda_conv *c, yq_conv_variant v, yq_error *err)
{
    int ok = c->float_op ? v == YQ_CONV_F32 || v == YQ_CONV_AUTO || (v == YQ_CONV_F16 && f16_ok(c))
           : v == YQ_CONV_DIRECT || v == YQ_CONV_AUTO || (v == YQ_CONV_DP4A && c->w32) ||
             (v == YQ_CONV_MMA && mma_ok(c)) || (v == YQ_CONV_CUTLASS && c->cut) ||
             (v == YQ_CONV_DW && c->groups == c->cin && c->F == c->cin);
    if (!ok) return yq_fail(err, YQ_ERR_UNSUPPORTED, "conv variant %d cannot run this conv", (int)v);
    if (v == YQ_CONV_AUTO)
        v = c->float_op ? YQ_CONV_F32 : mma_ok(c) ? YQ_CONV_MMA : c->w32 ? YQ_CONV_DP4A
          : (c->groups == c->cin && c->F == c->cin) ? YQ_CONV_DW : YQ_CONV_DIRECT;
    c->var = v;
    c->cfg.family = YQ_CONV_AUTO;
    return YQ_OK;
}

extern "C" int yq_cuda_conv_small(const yq_cuda_conv *c) { return c && c->small; }

yq_conv_variant yq_cuda_conv_variant(const yq_cuda_conv *c) { return c->var; }

static yq_status conv_run(const yq_cuda_conv *c, const yq_dtensor *in, const yq_dtensor *res, const yq_qnode *sq,
                          int res_first, const yq_dtensor *out, int batch, void *stream, yq_error *err);

extern "C" yq_status yq_cuda_conv_run(const yq_cuda_conv *c, const yq_dtensor *in, const yq_dtensor *out, int batch,
                                      void *stream, yq_error *err)
{
    return conv_run(c, in, NULL, NULL, 0, out, batch, stream, err);
}

extern "C" yq_status yq_cuda_conv_run_add(const yq_cuda_conv *c, const yq_dtensor *in, const yq_dtensor *res,
                                          const yq_qnode *sq, int res_first, const yq_dtensor *out, int batch,
                                          void *stream, yq_error *err)
{
    if (c->float_op || c->out_t != YQ_S8 || res->dtype != YQ_S8 || out->dtype != YQ_S8 || res->c != c->F ||
        res->h != c->oh || res->w != c->ow)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "conv + shortcut: int8 conv, int8 residual of the conv's shape and int8 output only");
    if (yq_dt_ps(res) != ((res->c + 3) & ~3) || yq_dt_ps(out) != ((out->c + 3) & ~3))
        return yq_fail(err, YQ_ERR_INVALID_ARG, "conv + shortcut: dense tensors only (not a view into a concat)");
    return conv_run(c, in, res, sq, res_first, out, batch, stream, err);
}

static yq_status conv_run(const yq_cuda_conv *c, const yq_dtensor *in, const yq_dtensor *res, const yq_qnode *sq,
                          int res_first, const yq_dtensor *out, int batch, void *stream, yq_error *err)
{
    if (in->c != c->cin || in->h != c->ih || in->w != c->iw || out->c != c->F || out->h != c->oh || out->w != c->ow)
        return yq_fail(err, YQ_ERR_SHAPE, "conv: tensors %dx%dx%d -> %dx%dx%d for a %dx%dx%d -> %dx%dx%d conv",
                       in->c, in->h, in->w, out->c, out->h, out->w, c->cin, c->ih, c->iw, c->F, c->oh, c->ow);
    if (!c->float_op && in->dtype == YQ_F32)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "int8 conv: float input (convert it first)");
    if (out->dtype != c->out_t)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "conv: output type %d, the conv writes %d", (int)out->dtype, (int)c->out_t);
    ConvK a;
    memset(&a, 0, sizeof a);
    a.in = in->p; a.out = out->p;
    a.IH = c->ih; a.IW = c->iw; a.C = c->cin; a.C4w = (c->cin + 3) / 4;
    a.OH = c->oh; a.OW = c->ow; a.F = c->F; a.F4 = (c->F + 3) & ~3;
    a.k = c->k; a.s = c->stride; a.pad = c->pad; a.groups = c->groups;
    a.M = batch * c->oh * c->ow; a.K4 = c->K4;
    a.w32 = c->w32; a.wq = c->wq; a.bq = c->bq; a.pos = c->pos; a.neg = c->neg; a.deq = c->deq; a.lut = c->lut;
    a.wf = c->wf; a.bf = c->bf;
    a.cw = c->cw;
    a.wdw = c->wdw;
    a.wdt = c->wdt;
    a.wdf = c->wdf;
    a.qmin = c->qmin; a.qmax = c->qmax; a.act = c->act; a.small = c->small;
    a.u8 = in->dtype == YQ_U8;
    a.fout = c->out_t == YQ_F32;
    a.tin = *in;
    if (in->dtype != YQ_F32) {
        int ps = yq_dt_ps(in);
        if (ps % 4 || ps < ((in->c + 3) & ~3) || ((uintptr_t)in->p & 3))
            return yq_fail(err, YQ_ERR_INVALID_ARG, "conv: input pixel stride %d bytes for %d channels", ps, in->c);
        a.IPW = ps / 4;
    }
    if (!a.fout) {
        int ps = yq_dt_ps(out);
        if (ps % 4 || ps < a.F4 || ((uintptr_t)out->p & 3))
            return yq_fail(err, YQ_ERR_INVALID_ARG, "conv: output pixel stride %d bytes for %d channels", ps, out->c);
        a.OPW = ps / 4;
    }
    if (res) {
        a.res = (const int8_t *)res->p;
        a.res_first = res_first;
        a.ssa = sq->sa; a.ssb = sq->sb; a.ssneg = sq->sneg; a.sqmin = sq->qmin; a.sqmax = sq->qmax;
    }
    cudaStream_t s = YQ_STREAM(stream);
    yq_conv_cfg cfg = c->cfg.family == YQ_CONV_AUTO ? yq_cuda_conv_default_cfg(c, batch) : c->cfg;
    if ((cfg.family == YQ_CONV_MMA || cfg.family == YQ_CONV_CUTLASS || cfg.family == YQ_CONV_HALO ||
         cfg.family == YQ_CONV_WGMMA || cfg.family == YQ_CONV_WGH || cfg.family == YQ_CONV_WG1) && a.u8) {   /* the uint8 image: the dp4a kernels read it */
        cfg = { YQ_CONV_DP4A, 0, 1, 0 };
        cfg.tile = yq_cuda_conv_default_cfg(c, batch).tile;
        if (c->var != YQ_CONV_DP4A) {
            int t = dp4a_tile(a.M, a.fout ? a.F : a.F4, a.K4, c->sms);
            cfg.tile = (uint8_t)(t == 128 ? 1 : t == 32 ? 2 : 0);
        }
    }
    if (cfg.split_k > 1 && (size_t)cfg.split_k * a.M * a.F4 * sizeof(int32_t) > c->ws_bytes) {
        if (c->cfg.family != YQ_CONV_AUTO)
            return yq_fail(err, YQ_ERR_INVALID_ARG, "conv: batch %d above the one its configuration was set for", batch);
        cfg.split_k = 1;           /* the heuristic's split without scratch: the unsplit tile */
    }
    switch ((yq_conv_variant)cfg.family) {
    case YQ_CONV_DP4A:
        launch_dp4a(a, cfg.tile, s);
        break;
    case YQ_CONV_MMA: {
        yq_status st = yq_mma_launch(a, cfg.tile, cfg.split_k, c->ws, s, err);
        if (st) return st;
        break;
    }
    case YQ_CONV_CUTLASS: {
        /* tensors the family cannot take (views not 16-byte aligned): the MMA family's
         * 64 x 64 tile, unsplit (the same bytes) */
        yq_status st = yq_cut_ok(a, cfg.tile) ? yq_cut_launch(a, cfg.tile, s, err)
                                              : yq_mma_launch(a, 3, 1, NULL, s, err);
        if (st) return st;
        break;
    }
    case YQ_CONV_WGMMA: {
        /* tensors it cannot take (views not 16-byte aligned): as the CUTLASS family */
        yq_status st = yq_wg_ok(a, cfg.tile) ? yq_wg_launch(a, cfg.tile, cfg.split_k, c->ws, s, err)
                                             : yq_mma_launch(a, 3, 1, NULL, s, err);
        if (st) return st;
        break;
    }
    case YQ_CONV_WGH: {
        /* tensors it cannot take (views not 16-byte aligned): as the CUTLASS family */
        yq_status st = yq_wgh_ok(a, cfg.tile) ? yq_wgh_launch(a, cfg.tile, s, err) : yq_mma_launch(a, 3, 1, NULL, s, err);
        if (st) return st;
        break;
    }
    case YQ_CONV_WG1: {
        /* tensors it cannot take (views not 16-byte aligned): as the CUTLASS family */
        yq_status st = yq_wg1_ok(a, cfg.tile) ? yq_wg1_launch(a, cfg.tile, c->sms, s, err) : yq_mma_launch(a, 3, 1, NULL, s, err);
        if (st) return st;
        break;
    }
    case YQ_CONV_HALO: {
        /* tensors it cannot take (input pixels not 16-byte aligned): as the CUTLASS family */
        yq_status st = yq_halo_ok(a, cfg.tile) ? yq_halo_launch(a, cfg.tile, c->sms, s, err)
                                               : yq_mma_launch(a, 3, 1, NULL, s, err);
        if (st) return st;
        break;
    }
    case YQ_CONV_IMG: {
        /* an input that is not the uint8 image (or an output the kernel cannot write): the
         * dp4a default (the image's convs are the DP4A variant: their default family) */
        if (!yq_img_ok(a)) {
            launch_dp4a(a, yq_cuda_conv_default_cfg(c, batch).tile, s);
            break;
        }
        yq_status st = yq_img_launch(a, c->sms, s, err);
        if (st) return st;
        break;
    }
    case YQ_CONV_DW:
        if (cfg.tile == 3 && !a.u8 && !a.fout && a.k == 3 && dw_col_fits(a)) {   /* dw_col (cfg_ok: its shapes) */
            if (a.s == 1) launch_dw_col<1>(a, s);
            else launch_dw_col<2>(a, s);
            break;
        }
        if (cfg.tile == 2 && !a.u8 && !a.fout && dw_tile_fits(a)) {   /* dw_tile (cfg_ok: its shapes) */
            if (a.k == 3 && a.s == 1) launch_dw_tile<3, 1>(a, s);
            else if (a.k == 3) launch_dw_tile<3, 2>(a, s);
            else if (a.s == 1) launch_dw_tile<5, 1>(a, s);
            else launch_dw_tile<5, 2>(a, s);
            break;
        }
        if (cfg.tile >= 1 && !a.u8 && !a.fout) {   /* dw_dp4a (cfg_ok: the shapes below); dw_tile's
                                                      on tensors it cannot take (the same bytes) */
            if (a.k == 3 && a.s == 1) launch_dw_dp4a<3, 1>(a, s);
            else if (a.k == 3) launch_dw_dp4a<3, 2>(a, s);
            else if (a.s == 1) launch_dw_dp4a<5, 1>(a, s);
            else launch_dw_dp4a<5, 2>(a, s);
            break;
        }
        if (!a.fout && a.wdw && a.k == 3 && a.s == 1) launch_dw_k<3, 1>(a, s);
        else if (!a.fout && a.wdw && a.k == 3 && a.s == 2) launch_dw_k<3, 2>(a, s);
        else if (!a.fout && a.wdw && a.k == 5 && a.s == 1) launch_dw_k<5, 1>(a, s);
        else if (!a.fout && a.wdw && a.k == 5 && a.s == 2) launch_dw_k<5, 2>(a, s);
        else conv_dw<<<yq_blocks((long)a.M * (a.F4 / 4), 256), 256, 0, s>>>(a);
        break;
    case YQ_CONV_DIRECT:
        conv_direct<<<yq_blocks((long)a.M * (a.fout ? a.F : a.F4), 256), 256, 0, s>>>(a);
        break;
    case YQ_CONV_F32:
        if (cfg.tile == 2) {                       /* f32_px (cfg_ok: groups 1, K <= PXF_KMAX) */
            launch_f32_px(a, s);
        } else if (cfg.tile == 3 && f32_dw_fits(a)) {   /* f32_dw (cfg_ok: its shapes) */
            if (a.k == 3 && a.s == 1) launch_f32_dw<3, 1>(a, s);
            else if (a.k == 3) launch_f32_dw<3, 2>(a, s);
            else if (a.s == 1) launch_f32_dw<5, 1>(a, s);
            else launch_f32_dw<5, 2>(a, s);
        } else if (a.groups == 1 && cfg.tile == 1) {
            dim3 g3(yq_blocks(a.M, FB), yq_blocks(a.F, FB), 1);
            conv_f32_big<<<g3, 256, 0, s>>>(a);
        } else if (a.groups == 1) {
            dim3 g3(yq_blocks(a.M, FT), yq_blocks(a.F, FT), 1);
            conv_f32_tiled<<<g3, 256, 0, s>>>(a);
        } else {
            conv_f32<<<yq_blocks((long)a.M * a.F, 256), 256, 0, s>>>(a);
        }
        break;
    case YQ_CONV_F16:
        a.wh = c->wh;
        yq_f16_launch(a, cfg.split_k, (float *)c->ws, s);
        if (cfg.split_k > 1) {
            YQ_CUDA_LAUNCHED();
            f32_reduce<<<yq_blocks((long)a.M * a.F, 256), 256, 0, s>>>(a, (const float *)c->ws, cfg.split_k);
        }
        break;
    case YQ_CONV_AUTO:
        return yq_fail(err, YQ_ERR_INVALID_ARG, "conv: no variant chosen");
    }
    YQ_CUDA_LAUNCHED();
    return YQ_OK;
}

/* ---- configurations ---------------------------------------------------------- */

extern "C" int yq_cuda_arch(void)
{
    int d = 0, major = 0, minor = 0;
    if (cudaGetDevice(&d) != cudaSuccess || cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return major * 10 + minor;
}


/* dw_dp4a's shapes: 3x3 and 5x5, stride 1 or 2, int8 output (an image input, uint8, runs
 * tile 0 instead: yq_cuda_conv_run) */
static int dw_dp4a_ok(const yq_cuda_conv *c)
{
    return c->wdt && (c->k == 3 || c->k == 5) && (c->stride == 1 || c->stride == 2) && c->out_t == YQ_S8;
}

/* The tensor-core family runs groups == 1 int8 convs whose input pixels are whole
 * 16-byte chunks (channels a multiple of 16), on sm_80 and newer. */
static int mma_ok(const yq_cuda_conv *c)
{
    return !c->float_op && c->w32 && c->arch >= 80 && ((c->cin + 3) & ~3) % 16 == 0;
}

/* The CUTLASS family: tile t of yq_cut_tiles on this conv's shape at this batch (dense
 * tensors; conv_run checks the real ones). */
static int cut_shape_ok(const yq_cuda_conv *c, int tile, int batch)
{
    if (!c->cut) return 0;
    ConvK a;
    memset(&a, 0, sizeof a);
    a.IH = c->ih; a.IW = c->iw; a.C = c->cin; a.C4w = c->cin / 4;
    a.OH = c->oh; a.OW = c->ow; a.F = c->F; a.F4 = c->F;
    a.k = c->k; a.s = c->stride; a.pad = c->pad; a.groups = c->groups;
    a.M = batch * c->oh * c->ow;
    a.IPW = c->cin / 4; a.OPW = c->F / 4;
    return yq_cut_ok(a, tile);
}

/* The exact FP32 family's pixel kernel (f32_px): groups == 1, its K x 16 weights in shared
 * memory; and its depthwise kernel (f32_dw): 3x3 and 5x5, stride 1 or 2. */
static int f32_px_ok(const yq_cuda_conv *c) { return c->groups == 1 && c->cin * c->k * c->k <= PXF_KMAX; }
static int f32_dw_ok(const yq_cuda_conv *c)
{
    return c->wdf && c->groups == c->cin && c->F == c->cin && (c->k == 3 || c->k == 5) && (c->stride == 1 || c->stride == 2);
}

/* The FP16 family: float layers with groups == 1 (their FP16 weights uploaded) on sm_80+. */
static int f16_ok(const yq_cuda_conv *c) { return c->float_op && c->wh && c->arch >= 80; }

/* A float family's K split (tile: its square output tile, kc: its K chunk): only while
 * the unsplit grid leaves multiprocessors idle, with 4 chunks or more per split. */
static int float_split_ok(const yq_cuda_conv *c, int split, int batch, int tile, int kc)
{
    if (split == 1) return 1;
    long M = (long)batch * c->oh * c->ow, K = (long)c->cin * c->k * c->k;
    long blocks = ((M + tile - 1) / tile) * ((c->F + tile - 1) / tile);
    return c->groups == 1 && K / split >= 4 * kc && blocks < c->sms && blocks * split <= 4L * c->sms;
}

/* A tensor-core family's K split of tile t: only while the unsplit grid leaves
 * multiprocessors idle, at most 4 blocks a multiprocessor, 2 K steps or more a split. */
static int tc_split_ok(const yq_cuda_conv *c, const yq_mma_tile &t, int split, int batch)
{
    long chunks = ((long)c->K4 * 4 + t.bk - 1) / t.bk;
    long M = (long)batch * c->oh * c->ow;
    long blocks = ((M + t.bm - 1) / t.bm) * ((((c->F + 3) & ~3) + t.bn - 1) / t.bn);
    return chunks / split >= 2 && blocks < c->sms && blocks * split <= 4L * c->sms;
}

static int cfg_ok(const yq_cuda_conv *c, yq_conv_cfg g, int batch)
{
    if (g.split_k < 1) return 0;
    switch ((yq_conv_variant)g.family) {
    case YQ_CONV_AUTO: return 1;
    /* a float conv runs the family its plan chose (c->var), never the other; the FP32
     * family unsplit (a split would change the summation order, which is defined) */
    case YQ_CONV_F32:
        return c->float_op && c->var == YQ_CONV_F32 && g.split_k == 1 &&
               (g.tile == 0 || (g.tile == 1 && c->groups == 1) || (g.tile == 2 && f32_px_ok(c)) || (g.tile == 3 && f32_dw_ok(c)));
    case YQ_CONV_F16:
        return f16_ok(c) && c->var == YQ_CONV_F16 && g.tile == 0 &&
               float_split_ok(c, g.split_k, batch, YQ_F16_TILE, YQ_F16_K);
    case YQ_CONV_DIRECT: return !c->float_op && g.tile == 0 && g.split_k == 1;
    case YQ_CONV_DW:
        return !c->float_op && c->groups == c->cin && c->F == c->cin && g.split_k == 1 &&
               (g.tile == 0 || (g.tile == 1 && dw_dp4a_ok(c)) || (g.tile == 2 && dw_dp4a_ok(c) && c->cin % 16 == 0) ||
                (g.tile == 3 && dw_dp4a_ok(c) && c->k == 3));
    case YQ_CONV_DP4A:
        return !c->float_op && c->w32 && g.split_k == 1 &&
               (g.tile < 3 || (g.tile == 3 && c->K4 <= PX_KMAX && (size_t)c->F * c->K4 * 4 + PX_STAGE_BYTES <= 48 * 1024) ||
                (g.tile == 4 && c->cw));
    case YQ_CONV_CUTLASS: return g.split_k == 1 && cut_shape_ok(c, g.tile, batch);
    case YQ_CONV_HALO:
        return c->halo && g.split_k == 1 && yq_halo_shape_ok(g.tile, (c->cin + 3) & ~3, c->k, c->stride, c->groups, c->F);
    case YQ_CONV_IMG: return c->img && g.tile == 0 && g.split_k == 1;
    case YQ_CONV_WGMMA:
        if (!c->wg || g.tile >= YQ_WG_TILES || c->cin % yq_wg_tiles[g.tile].bk) return 0;
        return g.split_k == 1 || (yq_wg_can_split(g.tile, g.split_k) && tc_split_ok(c, yq_wg_tiles[g.tile], g.split_k, batch));
    case YQ_CONV_WGH:
        return c->wg && g.split_k == 1 && yq_wgh_shape_ok(g.tile, c->cin, c->k, c->stride, c->pad, c->groups, c->F, c->ow);
    case YQ_CONV_WG1:
        return (c->wg || c->wg1f) && g.split_k == 1 &&
               yq_wg1_shape_ok(g.tile, c->cin, c->k, c->stride, c->pad, c->groups, c->F, c->out_t == YQ_F32);
    case YQ_CONV_MMA:
        if (!mma_ok(c) || g.tile >= YQ_MMA_TILES) return 0;
        return g.split_k == 1 || tc_split_ok(c, yq_mma_tiles[g.tile], g.split_k, batch);
    }
    return 0;
}

extern "C" int yq_cuda_conv_candidates(const yq_cuda_conv *c, int batch, yq_conv_cfg *out, int cap)
{
    int n = 0;
    auto add = [&](int fam, int tile, int split) {
        yq_conv_cfg g = { (uint8_t)fam, (uint8_t)tile, (uint8_t)split, 0 };
        if (!cfg_ok(c, g, batch)) return;
        if (n < cap) out[n] = g;
        n++;
    };
    if (c->float_op) {
        for (int t = 0; t < YQ_F32_TILES; t++)
            for (unsigned k = 0; k < YQ_SPLIT_OPTS; k++) add(c->var, t, yq_split_opts[k]);
        return n;
    }
    for (int t = 0; t < YQ_MMA_TILES; t++)
        for (unsigned k = 0; k < YQ_SPLIT_OPTS; k++) add(YQ_CONV_MMA, t, yq_split_opts[k]);
    for (int t = 0; t < YQ_CUT_TILES; t++) add(YQ_CONV_CUTLASS, t, 1);
    for (int t = 0; t < YQ_HALO_TILES; t++) add(YQ_CONV_HALO, t, 1);
    for (int t = 0; t < YQ_WG_TILES; t++)
        for (unsigned k = 0; k < YQ_SPLIT_OPTS; k++) add(YQ_CONV_WGMMA, t, yq_split_opts[k]);
    for (int t = 0; t < YQ_WGH_TILES; t++) add(YQ_CONV_WGH, t, 1);
    for (int t = 0; t < YQ_WG1_TILES; t++) add(YQ_CONV_WG1, t, 1);
    add(YQ_CONV_IMG, 0, 1);
    for (int t = 0; t < YQ_DP4A_TILES; t++) add(YQ_CONV_DP4A, t, 1);
    for (int t = 0; t < YQ_DW_TILES; t++) add(YQ_CONV_DW, t, 1);
    if (!c->w32 && !(c->groups == c->cin && c->F == c->cin)) add(YQ_CONV_DIRECT, 0, 1);
    return n;
}

extern "C" yq_conv_cfg yq_cuda_conv_default_cfg(const yq_cuda_conv *c, int batch)
{
    yq_conv_cfg g = { (uint8_t)c->var, 0, 1, 0 };
    if (c->var == YQ_CONV_DW && dw_dp4a_ok(c)) {
        /* 3x3: dw_col (H200, yolo-fastest-1.1-xl and -1.1 at batch 32 and 128: the fastest
         * on 36 of their 40 3x3 layers, 8x160x160 47.1 against dw_dp4a's 81.4 us at batch
         * 128, 192x40x40 62.3 against dw_tile's 82.7; the other four, stride 2 over 32 and
         * 136 channels, within 2 us).  Else (5x5) dw_tile at stride 1 over 48 channels or
         * more (the 5x5 layers); else dw_dp4a */
        if (c->k == 3) g.tile = 3;
        else g.tile = c->stride == 1 && c->cin >= 48 && c->cin % 16 == 0 ? 2 : 1;
        return g;
    }
    if (c->cw) {
        /* the image's conv, 1x1s over 4-16 channels: their own kernel, whatever the family
         * (16-channel 1x1s would default to the tensor cores: 72 against 15 us for
         * yolo-fastest-1.1-xl's 16x160x160 -> 16 at batch 32 on the H200) */
        g.family = YQ_CONV_DP4A;
        g.tile = 4;
        return g;
    }
    if (c->var == YQ_CONV_F32 && f32_dw_ok(c)) {
        g.tile = 3;                   /* f32_dw */
    } else if (c->var == YQ_CONV_F32 && c->groups == 1 && c->F <= 32 && f32_px_ok(c)) {
        g.tile = 2;                   /* f32_px: a 64- or 128-filter tile would be mostly padding */
    } else if (c->var == YQ_CONV_F32 && c->groups == 1) {   /* the 128 x 128 tile where its grid fills the SMs */
        long M = (long)batch * c->oh * c->ow;
        if (((M + FB - 1) / FB) * ((c->F + FB - 1) / FB) >= c->sms) g.tile = 1;
    } else if (c->var == YQ_CONV_F16) {  /* the smallest K split that fills the SMs */
        int tile = YQ_F16_TILE;
        long M = (long)batch * c->oh * c->ow, blocks = ((M + tile - 1) / tile) * ((c->F + tile - 1) / tile);
        for (unsigned k = 1; k < YQ_SPLIT_OPTS && blocks * g.split_k < c->sms; k++) {
            yq_conv_cfg s2 = g;
            s2.split_k = (uint8_t)yq_split_opts[k];
            if (!cfg_ok(c, s2, batch)) break;
            g = s2;
        }
    } else if (c->var == YQ_CONV_DP4A) {
        long M = (long)batch * c->oh * c->ow;
        int nout = c->out_t == YQ_F32 ? c->F : (c->F + 3) & ~3;
        int t = dp4a_tile(M, nout, c->K4, c->sms);
        g.tile = t == 128 ? 1 : t == 32 ? 2 : 0;
        /* dp4a_px (a pixel per thread) is left to the tuner: on the H200 it measured slower
         * than the 64 x 64 tile on the first conv (60 against 46 us at batch 1) */
    } else if (c->var == YQ_CONV_MMA) {
        long M = (long)batch * c->oh * c->ow;
        int nout = c->out_t == YQ_F32 ? c->F : (c->F + 3) & ~3;
        /* sm_90: the wgmma family's 128 x 128 tile wherever it fills the multiprocessors
         * (on the H200 it beat the CUTLASS and MMA tiles on every YOLOv3 shape at batch 8
         * and 32, 1x1s included: bench/results/int8_gpu_wgmma_2026-12-02.md) */
        if (c->wg1f) {
            /* a head's dequantized 1x1 (float output): the streaming 1x1 tile of 128 filters
             * where two filter blocks of its pixel tiles fill the multiprocessors (the 128-byte
             * K steps over 512 channels or more), else of 32 filters where that grid fills a
             * quarter of them; below that the MMA family's K splits (on the H200, YOLOv3's
             * three heads at batch 1 to 128: 1.25-2.0x the best MMA tile but on 13x13 at
             * batch 1; bench/results/gpu_2026-12-05_h200_K.md) */
            long tiles = (M + 127) / 128;
            yq_conv_cfg w1 = { YQ_CONV_WG1, 0, 1, 0 };
            if (tiles * 2 >= c->sms) w1.tile = c->cin >= 512 && c->cin % 128 == 0 ? 3 : 2;
            if ((tiles * 2 >= c->sms || tiles * ((c->F + 31) / 32) * 4 >= c->sms) && cfg_ok(c, w1, batch)) return w1;
        }
        if (c->wg) {
            /* stride-1 1x1s of at most 64 filters over at most 128 channels (bound by
             * memory): the streaming 1x1 tile of their width where there are half as many
             * tiles as multiprocessors or more (on the H200, YOLOv3's 64 -> 32 at 208x208
             * and 128 -> 64 at 104x104, batch 8 and 32: 1.34-1.73x the best other tile;
             * bench/results/int8_gpu_wg1_2026-12-05.md) */
            yq_conv_cfg w1 = { YQ_CONV_WG1, (uint8_t)(c->F <= 32 ? 0 : 1), 1, 0 };
            if (c->F <= 64 && c->cin <= 128 && (M + 127) / 128 * 2 >= c->sms && cfg_ok(c, w1, batch)) return w1;
            /* stride-1 3x3 over multiples of 128 channels: the halo tile of 256 pixels where
             * its grid fills most multiprocessors (on the H200 it beat every other tile on
             * YOLOv3's 52x52 and 26x26 layers at batch 8 to 128, by up to 1.25x:
             * bench/results/int8_gpu_wgh_2026-12-05.md); over 128 channels (one halo slot)
             * the 128-pixel tile of two blocks a multiprocessor (YOLOv3's 52x52 layers at
             * batch 8 and 32: 1.03-1.19x the 256-pixel one) */
            yq_conv_cfg h = { YQ_CONV_WGH, 0, 1, 0 }, h2 = { YQ_CONV_WGH, 3, 1, 0 };
            long tiles = ((long)c->oh * (c->ow + 2) + yq_wgh_tiles[0].bm - 1) / yq_wgh_tiles[0].bm;
            if (batch * tiles * ((c->F + 127) / 128) * 10 >= 7L * c->sms) {
                if (c->cin == 128 && cfg_ok(c, h2, batch)) return h2;
                if (cfg_ok(c, h, batch)) return h;
            }
            yq_conv_cfg w = { YQ_CONV_WGMMA, (uint8_t)(c->cin % 128 == 0 ? 0 : 3), 1, 0 };
            if (((M + 127) / 128) * ((nout + 127) / 128) >= c->sms && cfg_ok(c, w, batch)) return w;
        }
        /* the largest tile that still fills the multiprocessors; else 64 x 64 with the
         * smallest K split that does */
        static const int order[] = { 0, 1, 3 };
        g.tile = 3;
        for (int i = 0; i < 3; i++) {
            const yq_mma_tile &t = yq_mma_tiles[order[i]];
            if (t.bn > 64 && nout <= 64) continue;          /* half the tile would be padding */
            if (((M + t.bm - 1) / t.bm) * ((nout + t.bn - 1) / t.bn) >= c->sms) { g.tile = (uint8_t)order[i]; return g; }
        }
        for (unsigned k = 1; k < YQ_SPLIT_OPTS; k++) {
            yq_conv_cfg s2 = g;
            s2.split_k = (uint8_t)yq_split_opts[k];
            if (!cfg_ok(c, s2, batch)) break;
            g = s2;
            const yq_mma_tile &t = yq_mma_tiles[g.tile];
            if (((M + t.bm - 1) / t.bm) * ((nout + t.bn - 1) / t.bn) * g.split_k >= c->sms) break;
        }
    }
    return g;
}

extern "C" yq_status yq_cuda_conv_set_cfg(yq_cuda_conv *c, yq_conv_cfg cfg, int max_batch, yq_error *err)
{
    char name[64];
    yq_conv_cfg_name(cfg, name, sizeof name);
    if (max_batch < 1) return yq_fail(err, YQ_ERR_INVALID_ARG, "conv: batch %d", max_batch);
    if (!cfg_ok(c, cfg, max_batch))
        return yq_fail(err, YQ_ERR_UNSUPPORTED, "conv configuration %s cannot run this conv on this device", name);
    if (cfg.split_k > 1) {    /* (int32 or FP32 partial sums: 4 bytes each) */
        size_t need = (size_t)cfg.split_k * max_batch * c->oh * c->ow * ((c->F + 3) & ~3) * sizeof(int32_t);
        if (need > c->ws_bytes) {
            cudaFree(c->ws);
            c->ws = NULL;
            c->ws_bytes = 0;
            YQ_CUDA_TRY(cudaMalloc((void **)&c->ws, need));
            c->ws_bytes = need;
        }
    }
    c->cfg = cfg;
    return YQ_OK;
}

extern "C" yq_conv_cfg yq_cuda_conv_get_cfg(const yq_cuda_conv *c) { return c->cfg; }

static const char *dtype_tag(yq_dtype t) { return t == YQ_F32 ? "f32" : t == YQ_U8 ? "u8" : "s8"; }

extern "C" void yq_cuda_conv_key(const yq_cuda_conv *c, yq_dtype in_dtype, int fused, int batch, char *buf, size_t cap)
{
    /* "t": a table activation's epilogue, "r": a fused shortcut's (each its own timings) */
    snprintf(buf, cap, "c%dx%dx%d-f%d-k%ds%dp%d-g%d-%s%s%s%s-b%d", c->cin, c->ih, c->iw, c->F, c->k, c->stride, c->pad,
             c->groups, dtype_tag(in_dtype), dtype_tag(c->out_t), c->lut ? "t" : "", fused ? "r" : "", batch);
}

extern "C" double yq_cuda_conv_ops(const yq_cuda_conv *c, int batch)
{
    return 2.0 * batch * c->oh * c->ow * (double)c->F * (c->cin / c->groups) * c->k * c->k;
}
