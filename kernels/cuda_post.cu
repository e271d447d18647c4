/* [yolo]/[region] decode, per-class NMS and top-k on the GPU: the device version of
 * runtime/postproc.c.  The pipeline, its order and its numerics are described in
 * kernels/cuda_post.h; every expression below mirrors one of postproc.c, in the same
 * order, with __f*_rn intrinsics so that no multiply is fused with an add. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include "kernels/cuda_common.cuh"
extern "C" {
#include "kernels/cuda_post.h"
}

struct SegItem { float score; int cell; };            /* a candidate of one (image, class) */
struct KeptItem { float score; int cls, cell; };      /* a box NMS kept */
struct SItem { float score, cx, cy, w, h; int cell; }; /* shared memory, nms */
struct FItem { float score, cx, cy; int cls, cell; };  /* shared memory, top */

#define NMS_THREADS 512
#define TOP_THREADS 512
#define DEAD -1.f                                      /* live scores are > conf >= 0 */

extern "C" size_t yq_post_seg_item_bytes(void) { return sizeof(SegItem); }
extern "C" size_t yq_post_kept_item_bytes(void) { return sizeof(KeptItem); }

/* expf: correctly rounded but for rare cases; glibc's is within 0.502 ulp (see the header). */
__device__ __forceinline__ float ex(float x) { return (float)exp((double)x); }
__device__ __forceinline__ float logistic(float x) { return __fdiv_rn(1.f, __fadd_rn(1.f, ex(-x))); }

static __device__ __forceinline__ int pow2_at_least(int n)
{
    int p = 1;
    while (p < n) p <<= 1;
    return p;
}

/* ---- 1. decode ----------------------------------------------------------------- */

/* correct_yolo_boxes: network-relative centre form to original-image relative; letterbox 2:
 * Ultralytics' (runtime/postproc.c correct and yq_letterbox_size_ultra, operation for
 * operation). */
__device__ __forceinline__ void correct(const yq_post_dev &d, int b, float &cx, float &cy, float &cw, float &ch)
{
    float netw = (float)d.netw, neth = (float)d.neth;
    int iw = d.orig_wh[2 * b], ih = d.orig_wh[2 * b + 1];
    int new_w = d.netw, new_h = d.neth;
    float px, py;
    if (d.letterbox == 2) {
        float r = fminf(__fdiv_rn(netw, (float)iw), __fdiv_rn(neth, (float)ih));
        int nw = __float2int_rn(__fmul_rn((float)iw, r)), nh = __float2int_rn(__fmul_rn((float)ih, r));
        new_w = nw < 1 ? 1 : nw > d.netw ? d.netw : nw;
        new_h = nh < 1 ? 1 : nh > d.neth ? d.neth : nh;
        px = (float)((d.netw - new_w) / 2);
        py = (float)((d.neth - new_h) / 2);
    } else {
        if (d.letterbox) {
            if (__fdiv_rn(netw, (float)iw) < __fdiv_rn(neth, (float)ih)) { new_w = d.netw; new_h = (ih * d.netw) / iw; }
            else { new_h = d.neth; new_w = (iw * d.neth) / ih; }
        }
        px = __fdiv_rn((float)(d.netw - new_w), 2.f);
        py = __fdiv_rn((float)(d.neth - new_h), 2.f);
    }
    cx = __fdiv_rn(__fsub_rn(cx, __fdiv_rn(px, netw)), __fdiv_rn((float)new_w, netw));
    cy = __fdiv_rn(__fsub_rn(cy, __fdiv_rn(py, neth)), __fdiv_rn((float)new_h, neth));
    cw = __fmul_rn(cw, __fdiv_rn(netw, (float)new_w));
    ch = __fmul_rn(ch, __fdiv_rn(neth, (float)new_h));
}

/* An anchor-free (DFL) head's cell: postproc.c's detect_box and decode_detect, operation for
 * operation (each side's distance the expectation of a softmax over reg_max bins; the box
 * around the cell's centre, times the stride; the classes' sigmoids, no objectness). */
__device__ void decode_detect(const yq_post_dev &d, const yq_post_head *p, int b, int cell, int lane)
{
    int sw = p->w, plane = sw * p->h, loc = cell - p->cell0, rm = p->reg_max;
    const float *x = p->x + (size_t)b * p->c * plane;
    float dist[4];
    for (int k = 0; k < 4; k++) {
        const float *l = x + (size_t)k * rm * plane + loc;
        float m = -INFINITY, sum = 0.f, e = 0.f;
        for (int r = 0; r < rm; r++) m = fmaxf(m, l[(size_t)r * plane]);
        for (int r = 0; r < rm; r++) {
            float v = ex(__fsub_rn(l[(size_t)r * plane], m));
            sum = __fadd_rn(sum, v);
            e = __fadd_rn(e, __fmul_rn(v, (float)r));
        }
        dist[k] = __fdiv_rn(e, sum);
    }
    float ax = __fadd_rn((float)(loc % sw), 0.5f), ay = __fadd_rn((float)(loc / sw), 0.5f), s = (float)p->stride;
    float x1 = __fsub_rn(ax, dist[0]), y1 = __fsub_rn(ay, dist[1]), x2 = __fadd_rn(ax, dist[2]), y2 = __fadd_rn(ay, dist[3]);
    float cx = __fdiv_rn(__fmul_rn(__fdiv_rn(__fadd_rn(x1, x2), 2.f), s), (float)d.netw);
    float cy = __fdiv_rn(__fmul_rn(__fdiv_rn(__fadd_rn(y1, y2), 2.f), s), (float)d.neth);
    float cw = __fdiv_rn(__fmul_rn(__fsub_rn(x2, x1), s), (float)d.netw);
    float ch = __fdiv_rn(__fmul_rn(__fsub_rn(y2, y1), s), (float)d.neth);
    correct(d, b, cx, cy, cw, ch);
    if (lane == 0) ((float4 *)d.boxes)[(size_t)b * d.cells + cell] = make_float4(cx, cy, cw, ch);
    const float *cl = x + (size_t)4 * rm * plane + loc;
    SegItem *seg = (SegItem *)d.seg;
    for (int k = lane; k < p->classes; k += 32) {
        float sc = logistic(cl[(size_t)k * plane]);
        if (sc > d.conf) {
            int list = b * d.classes + k;
            int pos = atomicAdd(&d.counts[list], 1);
            seg[(size_t)list * d.seg_cap + pos] = SegItem{ sc, cell };
        }
    }
}

/* One warp per (image, cell): every lane computes the objectness and the box (the
 * same values; lane 0 stores the box), then the lanes share the classes.  A thread
 * per cell would walk the classes alone, one dependent load after another. */
__global__ void post_decode(yq_post_dev d, int n_img)
{
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x, wi = t >> 5;
    int lane = (int)(t & 31);
    if (wi >= (long)n_img * d.cells) return;            /* whole warps: the block size is a multiple of 32 */
    int b = (int)(wi / d.cells), cell = (int)(wi % d.cells);
    int hk = 0;
    while (hk + 1 < d.n_heads && cell >= d.heads[hk + 1].cell0) hk++;
    const yq_post_head *p = &d.heads[hk];
    if (p->detect) {
        decode_detect(d, p, b, cell, lane);
        return;
    }
    int sw = p->w, sh = p->h, plane = sw * sh;
    int local = cell - p->cell0;
    int n = local / plane, loc = local % plane;
    int j = loc / sw, i = loc % sw;
    int per = p->classes + p->coords + 1;
    const float *a = p->x + (size_t)b * p->c * plane + (size_t)n * per * plane;
    int an = p->mask[n];
    float obj = p->new_coords ? a[4 * plane + loc] : logistic(a[4 * plane + loc]);
    if (obj <= d.conf) return;
    float tx = a[loc], ty = a[plane + loc], tw = a[2 * plane + loc], th = a[3 * plane + loc];
    float sxy = p->scale_x_y, cx, cy, cw, ch;
    float fi = (float)i, fj = (float)j, fsw = (float)sw, fsh = (float)sh;
    float netw = (float)d.netw, neth = (float)d.neth;
    if (!p->yolo) {                 /* region: anchors in grid cells */
        cx = __fdiv_rn(__fadd_rn(fi, logistic(tx)), fsw);
        cy = __fdiv_rn(__fadd_rn(fj, logistic(ty)), fsh);
        cw = __fdiv_rn(__fmul_rn(ex(tw), p->anchors[2 * an]), fsw);
        ch = __fdiv_rn(__fmul_rn(ex(th), p->anchors[2 * an + 1]), fsh);
    } else {
        float half = __fmul_rn(0.5f, __fsub_rn(sxy, 1.f));
        if (p->new_coords) {        /* inputs are already logistic */
            cx = __fdiv_rn(__fsub_rn(__fadd_rn(fi, __fmul_rn(tx, sxy)), half), fsw);
            cy = __fdiv_rn(__fsub_rn(__fadd_rn(fj, __fmul_rn(ty, sxy)), half), fsh);
            cw = __fdiv_rn(__fmul_rn(__fmul_rn(__fmul_rn(tw, tw), 4.f), p->anchors[2 * an]), netw);
            ch = __fdiv_rn(__fmul_rn(__fmul_rn(__fmul_rn(th, th), 4.f), p->anchors[2 * an + 1]), neth);
        } else {
            cx = __fdiv_rn(__fsub_rn(__fadd_rn(fi, __fmul_rn(logistic(tx), sxy)), half), fsw);
            cy = __fdiv_rn(__fsub_rn(__fadd_rn(fj, __fmul_rn(logistic(ty), sxy)), half), fsh);
            cw = __fdiv_rn(__fmul_rn(ex(tw), p->anchors[2 * an]), netw);
            ch = __fdiv_rn(__fmul_rn(ex(th), p->anchors[2 * an + 1]), neth);
        }
    }
    correct(d, b, cx, cy, cw, ch);
    if (lane == 0) ((float4 *)d.boxes)[(size_t)b * d.cells + cell] = make_float4(cx, cy, cw, ch);

    const float *cl = a + 5 * plane + loc;
    float m = -INFINITY, sum = 0.f;
    int soft = !p->yolo && p->softmax;
    if (soft) {                     /* softmax over the classes, as darknet's region layer: in the
                                       CPU's order (a warp reduction would round the sum otherwise) */
        for (int k = 0; k < p->classes; k++) if (cl[k * plane] > m) m = cl[k * plane];
        for (int k = 0; k < p->classes; k++) sum = __fadd_rn(sum, ex(__fsub_rn(cl[k * plane], m)));
    }
    SegItem *seg = (SegItem *)d.seg;
    for (int k = lane; k < p->classes; k += 32) {
        float v = cl[k * plane];
        float pk = soft ? __fdiv_rn(ex(__fsub_rn(v, m)), sum) : p->new_coords ? v : logistic(v);
        float sc = __fmul_rn(obj, pk);
        if (sc > d.conf) {
            int list = b * d.classes + k;
            int pos = atomicAdd(&d.counts[list], 1);
            seg[(size_t)list * d.seg_cap + pos] = SegItem{ sc, cell };
        }
    }
}

/* ---- shared pieces of 2. and 3. -------------------------------------------------- */

/* postproc.c's overlap/iou_c, operation for operation; a is the earlier (kept) box. */
__device__ __forceinline__ float overlap(float x1, float w1, float x2, float w2)
{
    float l = fmaxf(__fsub_rn(x1, __fdiv_rn(w1, 2.f)), __fsub_rn(x2, __fdiv_rn(w2, 2.f)));
    float r = fminf(__fadd_rn(x1, __fdiv_rn(w1, 2.f)), __fadd_rn(x2, __fdiv_rn(w2, 2.f)));
    return __fsub_rn(r, l);
}
__device__ __forceinline__ float iou(float ax, float ay, float aw, float ah, float bx, float by, float bw, float bh)
{
    float w = overlap(ax, aw, bx, bw), h = overlap(ay, ah, by, bh);
    if (w <= 0 || h <= 0) return 0;
    float inter = __fmul_rn(w, h);
    float uni = __fsub_rn(__fadd_rn(__fmul_rn(aw, ah), __fmul_rn(bw, bh)), inter);
    return uni > 0 ? __fdiv_rn(inter, uni) : 0;
}

/* Bitonic sort of n (a power of two) items into the accessor's `before` order; every
 * thread of the block calls it.  Each pair of a stage belongs to one thread. */
template <class A>
__device__ void bitonic(A &a, int n)
{
    for (int k = 2; k <= n; k <<= 1)
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (int i = threadIdx.x; i < n; i += blockDim.x) {
                int l = i ^ j;
                if (l > i && ((i & k) == 0 ? a.before(l, i) : a.before(i, l))) a.swap(i, l);
            }
            __syncthreads();
        }
}

/* Within a class: score descending, then centre x, centre y, decode order. */
__device__ __forceinline__ bool before_cls(float sa, float xa, float ya, int ca, float sb, float xb, float yb, int cb)
{
    if (sa != sb) return sa > sb;
    if (xa != xb) return xa < xb;
    if (ya != yb) return ya < yb;
    return ca < cb;
}

struct SmemSeg {
    SItem *v;
    __device__ bool before(int i, int j) const
    {
        const SItem &a = v[i], &b = v[j];
        return before_cls(a.score, a.cx, a.cy, a.cell, b.score, b.cx, b.cy, b.cell);
    }
    __device__ void swap(int i, int j) const { SItem t = v[i]; v[i] = v[j]; v[j] = t; }
};

/* In place in global memory; padding (score -inf, cell INT_MAX) has no box. */
struct GlobalSeg {
    SegItem *v;
    const float4 *bx;
    __device__ bool before(int i, int j) const
    {
        SegItem a = v[i], b = v[j];
        if (a.score != b.score) return a.score > b.score;
        if (a.cell == INT_MAX || b.cell == INT_MAX) return a.cell < b.cell;
        float4 p = bx[a.cell], q = bx[b.cell];
        return before_cls(a.score, p.x, p.y, a.cell, b.score, q.x, q.y, b.cell);
    }
    __device__ void swap(int i, int j) const { SegItem t = v[i]; v[i] = v[j]; v[j] = t; }
};

/* ---- 2. per (image, class): sort, greedy NMS, append survivors --------------------- */

__global__ void __launch_bounds__(NMS_THREADS) post_nms(yq_post_dev d)
{
    extern __shared__ __align__(16) unsigned char smem[];
    int list = blockIdx.x, b = list / d.classes, c = list % d.classes;
    int s = d.counts[list];
    if (s == 0) return;
    SegItem *seg = (SegItem *)d.seg + (size_t)list * d.seg_cap;
    const float4 *bx = (const float4 *)d.boxes + (size_t)b * d.cells;
    int *kept_count = d.counts + (size_t)d.batch * d.classes + b;
    KeptItem *kept = (KeptItem *)d.kept + (size_t)b * d.kept_cap;
    int np = pow2_at_least(s);
    if (s <= YQ_POST_SMEM_ITEMS) {
        SItem *v = (SItem *)smem;
        for (int i = threadIdx.x; i < np; i += blockDim.x) {
            if (i < s) {
                SegItem e = seg[i];
                float4 q = bx[e.cell];
                v[i] = SItem{ e.score, q.x, q.y, q.z, q.w, e.cell };
            } else {
                v[i] = SItem{ -INFINITY, 0.f, 0.f, 0.f, 0.f, INT_MAX };
            }
        }
        __syncthreads();
        SmemSeg acc = { v };
        bitonic(acc, np);
        for (int i = 0; i < s; i++) {
            if (!(v[i].score > 0)) continue;      /* suppressed: written before the last barrier */
            SItem A = v[i];
            for (int j = i + 1 + threadIdx.x; j < s; j += blockDim.x)
                if (v[j].score > 0 && iou(A.cx, A.cy, A.w, A.h, v[j].cx, v[j].cy, v[j].w, v[j].h) > d.nms)
                    v[j].score = DEAD;
            __syncthreads();
        }
        for (int i = threadIdx.x; i < s; i += blockDim.x)
            if (v[i].score > 0) kept[atomicAdd(kept_count, 1)] = KeptItem{ v[i].score, c, v[i].cell };
    } else {                                   /* long list: the same in global memory */
        for (int i = s + threadIdx.x; i < np; i += blockDim.x) seg[i] = SegItem{ -INFINITY, INT_MAX };
        __syncthreads();
        GlobalSeg acc = { seg, bx };
        bitonic(acc, np);
        for (int i = 0; i < s; i++) {
            SegItem A = seg[i];
            if (!(A.score > 0)) continue;
            float4 pa = bx[A.cell];
            for (int j = i + 1 + threadIdx.x; j < s; j += blockDim.x) {
                SegItem B = seg[j];
                if (!(B.score > 0)) continue;
                float4 pb = bx[B.cell];
                if (iou(pa.x, pa.y, pa.z, pa.w, pb.x, pb.y, pb.z, pb.w) > d.nms) seg[j].score = DEAD;
            }
            __syncthreads();
        }
        for (int i = threadIdx.x; i < s; i += blockDim.x)
            if (seg[i].score > 0) kept[atomicAdd(kept_count, 1)] = KeptItem{ seg[i].score, c, seg[i].cell };
    }
}

/* ---- 3. per image: order the survivors, write the best k in pixels ------------------ */

/* Output order: score descending, class, then as within a class. */
__device__ __forceinline__ bool before_out(float sa, int ka, float xa, float ya, int ca,
                                           float sb, int kb, float xb, float yb, int cb)
{
    if (sa != sb) return sa > sb;
    if (ka != kb) return ka < kb;
    return before_cls(sa, xa, ya, ca, sb, xb, yb, cb);
}

struct SmemTop {
    FItem *v;
    __device__ bool before(int i, int j) const
    {
        const FItem &a = v[i], &b = v[j];
        return before_out(a.score, a.cls, a.cx, a.cy, a.cell, b.score, b.cls, b.cx, b.cy, b.cell);
    }
    __device__ void swap(int i, int j) const { FItem t = v[i]; v[i] = v[j]; v[j] = t; }
};

struct GlobalTop {
    KeptItem *v;
    const float4 *bx;
    __device__ bool before(int i, int j) const
    {
        KeptItem a = v[i], b = v[j];
        if (a.score != b.score) return a.score > b.score;
        if (a.cell == INT_MAX || b.cell == INT_MAX) return a.cell < b.cell;
        float4 p = bx[a.cell], q = bx[b.cell];
        return before_out(a.score, a.cls, p.x, p.y, a.cell, b.score, b.cls, q.x, q.y, b.cell);
    }
    __device__ void swap(int i, int j) const { KeptItem t = v[i]; v[i] = v[j]; v[j] = t; }
};

/* postproc.c's conversion to a clipped pixel box. */
__device__ __forceinline__ yq_detection to_pixels(float4 q, float score, int cls, int iw, int ih)
{
    float fw = (float)iw, fh = (float)ih;
    float x0 = fmaxf(__fmul_rn(__fsub_rn(q.x, __fdiv_rn(q.z, 2.f)), fw), 0.f);
    float y0 = fmaxf(__fmul_rn(__fsub_rn(q.y, __fdiv_rn(q.w, 2.f)), fh), 0.f);
    float x1 = fminf(__fmul_rn(__fadd_rn(q.x, __fdiv_rn(q.z, 2.f)), fw), fw);
    float y1 = fminf(__fmul_rn(__fadd_rn(q.y, __fdiv_rn(q.w, 2.f)), fh), fh);
    yq_detection r;
    r.x = x0;
    r.y = y0;
    r.w = __fsub_rn(x1, x0);
    r.h = __fsub_rn(y1, y0);
    r.score = score;
    r.cls = cls;
    return r;
}

__global__ void __launch_bounds__(TOP_THREADS) post_top(yq_post_dev d)
{
    extern __shared__ __align__(16) unsigned char smem[];
    int b = blockIdx.x;
    long s = d.counts[(size_t)d.batch * d.classes + b];
    if (s > d.kept_cap) s = d.kept_cap;       /* cannot happen: a list never overflows */
    KeptItem *kept = (KeptItem *)d.kept + (size_t)b * d.kept_cap;
    const float4 *bx = (const float4 *)d.boxes + (size_t)b * d.cells;
    yq_post_rec *rec = (yq_post_rec *)(d.result + (size_t)b * yq_post_rec_bytes(d.k));
    yq_detection *out = (yq_detection *)(rec + 1);
    int iw = d.orig_wh[2 * b], ih = d.orig_wh[2 * b + 1];
    int n_out = s < d.k ? (int)s : d.k;
    int np = pow2_at_least((int)s);
    if (threadIdx.x == 0) {
        int cand = 0;
        for (int k = 0; k < d.classes; k++) cand += d.counts[b * d.classes + k];
        rec->count = n_out;
        rec->n_cand = cand;
        rec->n_kept = (int)s;
        rec->pad = 0;
    }
    if (s == 0) return;
    if (s <= YQ_POST_SMEM_ITEMS) {
        FItem *v = (FItem *)smem;
        for (int i = threadIdx.x; i < np; i += blockDim.x) {
            if (i < s) {
                KeptItem e = kept[i];
                float4 q = bx[e.cell];
                v[i] = FItem{ e.score, q.x, q.y, e.cls, e.cell };
            } else {
                v[i] = FItem{ -INFINITY, 0.f, 0.f, INT_MAX, INT_MAX };
            }
        }
        __syncthreads();
        SmemTop acc = { v };
        bitonic(acc, np);
        for (int i = threadIdx.x; i < n_out; i += blockDim.x) out[i] = to_pixels(bx[v[i].cell], v[i].score, v[i].cls, iw, ih);
    } else {
        for (long i = s + threadIdx.x; i < np; i += blockDim.x) kept[i] = KeptItem{ -INFINITY, INT_MAX, INT_MAX };
        __syncthreads();
        GlobalTop acc = { kept, bx };
        bitonic(acc, np);
        for (int i = threadIdx.x; i < n_out; i += blockDim.x) out[i] = to_pixels(bx[kept[i].cell], kept[i].score, kept[i].cls, iw, ih);
    }
}

extern "C" yq_status yq_cuda_post_enqueue(const yq_post_dev *d, int n, void *stream, yq_error *err)
{
    if (n < 1 || n > d->batch) return yq_fail(err, YQ_ERR_INVALID_ARG, "post-processing: %d images, buffers for %d", n, d->batch);
    cudaStream_t s = YQ_STREAM(stream);
    YQ_CUDA_TRY(cudaMemsetAsync(d->counts, 0, sizeof(int) * (size_t)d->batch * (d->classes + 1), s));
    long threads = 32L * n * d->cells;
    post_decode<<<yq_blocks(threads, 256), 256, 0, s>>>(*d, n);
    YQ_CUDA_LAUNCHED();
    post_nms<<<(unsigned)(n * d->classes), NMS_THREADS, YQ_POST_SMEM_ITEMS * sizeof(SItem), s>>>(*d);
    YQ_CUDA_LAUNCHED();
    post_top<<<(unsigned)n, TOP_THREADS, YQ_POST_SMEM_ITEMS * sizeof(FItem), s>>>(*d);
    YQ_CUDA_LAUNCHED();
    return YQ_OK;
}
