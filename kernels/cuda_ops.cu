/* The non-conv ops on the GPU: maxpool, upsample, shortcut, route, type
 * conversions.  Int8 versions work on NHWC4 bytes and write the padding channels
 * as zero; float versions (layers kept in float) read any input type through
 * yq_ld_f and write NCHW floats.  Each int8 result equals kernels/cpu_ref.c's. */
#include <float.h>
#include "kernels/cuda_common.cuh"
#include <type_traits>

#define NT 256

/* Int8 kernels take one thread per byte (or word) of the dense output and write it at
 * the output's own pixel stride: an output may be a view (a source's slice of a concat). */

/* ---- maxpool: darknet's window, starting pad/2 before the image; positions
 * outside the image are skipped (not zeros); of equal floats the first wins. */
/* W bytes (16 or 4) of one output pixel a thread: W/4 words of 4 lanes, each max one
 * __vmaxs4; lanes past the channels zeroed.  Byte by byte, one thread each, yolov4-tiny's
 * three 2x2 maxpools took 908 us at batch 128 on the H200. */
template <int W>
__global__ void maxpool_s8_vec(yq_dtensor in, yq_pool_p p, yq_dtensor out, int pieces, long n)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    constexpr int NW = W / 4;
    const long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const long pix = t / pieces;
    const int c = (int)(t - pix * pieces) * W;
    const long r = pix / out.w;
    const int ox = (int)(pix - r * out.w), oy = (int)(r % out.h), b = (int)(r / out.h);
    const long ips = yq_ps(in);
    const int8_t *base = (const int8_t *)in.p + (long)b * in.h * in.w * ips + c;
    const int off = -p.pad / 2;
    unsigned m[NW];
#pragma unroll
    for (int j = 0; j < NW; j++) m[j] = 0x80808080u;
    /* the window clipped to the image once (no test per tap), the column loop unrolled
     * so that several loads are in flight: the SPP blocks' 9x9 and 13x13 windows were a
     * chain of dependent loads */
    const int y0 = off + oy * p.stride, x0 = off + ox * p.stride;
    const int ya = max(y0, 0), yb = min(y0 + p.size, in.h), xa = max(x0, 0), xb = min(x0 + p.size, in.w);
    for (int y = ya; y < yb; y++) {
#pragma unroll 4
        for (int x = xa; x < xb; x++) {
            const int8_t *q = base + ((long)y * in.w + x) * ips;
            if constexpr (W == 16) {
                const uint4 v = *(const uint4 *)q;
                m[0] = __vmaxs4(m[0], v.x), m[1] = __vmaxs4(m[1], v.y), m[2] = __vmaxs4(m[2], v.z), m[3] = __vmaxs4(m[3], v.w);
            } else {
                m[0] = __vmaxs4(m[0], *(const unsigned *)q);
            }
        }
    }
#pragma unroll
    for (int j = 0; j < NW; j++) {
        const int left = out.c - (c + 4 * j);          /* real channels in this word */
        if (left < 4) m[j] = left <= 0 ? 0u : m[j] & (0xffffffffu >> (8 * (4 - left)));
    }
    int8_t *o = (int8_t *)out.p + pix * yq_ps(out) + c;
    if constexpr (W == 16) *(uint4 *)o = make_uint4(m[0], m[1], m[2], m[3]);
    else *(unsigned *)o = m[0];
}

__global__ void maxpool_f32(yq_dtensor in, yq_pool_p p, yq_dtensor out, long n)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    int ox = (int)(t % out.w), oy = (int)(t / out.w % out.h);
    long bc = t / ((long)out.w * out.h);
    int c = (int)(bc % out.c), b = (int)(bc / out.c);
    int off = -p.pad / 2;
    float m = -FLT_MAX;
    for (int ky = 0; ky < p.size; ky++) {
        int y = off + oy * p.stride + ky;
        if (y < 0 || y >= in.h) continue;
        for (int kx = 0; kx < p.size; kx++) {
            int x = off + ox * p.stride + kx;
            if (x < 0 || x >= in.w) continue;
            float v = yq_ld_f(in, b, c, y, x);
            if (v > m) m = v;
        }
    }
    ((float *)out.p)[t] = m;
}

/* ---- upsample: nearest neighbour; int8 moves whole 4-channel words. */
__global__ void upsample_s8(yq_dtensor in, int s, yq_dtensor out, long n)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    int cw = (out.c + 3) >> 2;
    int w4 = (int)(t % cw);
    long r = t / cw;
    int ox = (int)(r % out.w), oy = (int)(r / out.w % out.h), b = (int)(r / ((long)out.w * out.h));
    ((unsigned *)out.p)[r * (yq_ps(out) >> 2) + w4] =
        ((const unsigned *)in.p)[(((long)b * in.h + oy / s) * in.w + ox / s) * (yq_ps(in) >> 2) + w4];
}

__global__ void upsample_f32(yq_dtensor in, int s, yq_dtensor out, long n)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    int ox = (int)(t % out.w), oy = (int)(t / out.w % out.h);
    long bc = t / ((long)out.w * out.h);
    ((float *)out.p)[t] = yq_ld_f(in, (int)(bc / out.c), (int)(bc % out.c), oy / s, ox / s);
}

/* ---- shortcut */
struct AddQ { float sa, sb, sneg; int32_t qmin, qmax; };

__global__ void shortcut_s8(yq_dtensor a, yq_dtensor b, AddQ q, yq_dtensor out, long n)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    int c4 = (out.c + 3) & ~3, c = (int)(t % c4);
    long pix = t / c4;
    int8_t v = 0;
    if (c < out.c)
        v = (int8_t)yq_add_requant(((const int8_t *)a.p)[pix * yq_ps(a) + c], ((const int8_t *)b.p)[pix * yq_ps(b) + c],
                                   q.sa, q.sb, q.sneg, q.qmin, q.qmax);
    ((int8_t *)out.p)[pix * yq_ps(out) + c] = v;
}

__global__ void shortcut_f32(yq_dtensor a, yq_dtensor b, int act, yq_dtensor out, long n)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    int x = (int)(t % out.w), y = (int)(t / out.w % out.h);
    long bc = t / ((long)out.w * out.h);
    int c = (int)(bc % out.c), bi = (int)(bc / out.c);
    ((float *)out.p)[t] = yq_act_x(__fadd_rn(yq_ld_f(a, bi, c, y, x), yq_ld_f(b, bi, c, y, x)), act);
}

/* ---- route: one launch writes every channel of the output (padding too). */
struct RouteSrc { yq_dtensor t[YQ_MAX_SRC]; int c_end[YQ_MAX_SRC]; int n, part_off[YQ_MAX_SRC]; };

__global__ void route_s8(RouteSrc r, yq_dtensor out, long n)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    int c4 = (out.c + 3) & ~3;
    int c = (int)(t % c4);
    long pix = t / c4;
    int8_t v = 0;
    if (c < out.c) {
        int k = 0, c0 = 0;
        while (c >= r.c_end[k]) c0 = r.c_end[k++];
        const yq_dtensor &s = r.t[k];
        v = ((const int8_t *)s.p)[pix * yq_ps(s) + r.part_off[k] + c - c0];
    }
    ((int8_t *)out.p)[pix * yq_ps(out) + c] = v;
}

/* The same copy W bytes at a time (W = 16 or 4), where every source's slice, offset and
 * pixel stride and the output's are whole W-byte pieces (YOLOv3's concats: 16): a thread
 * per piece.  Byte by byte, one thread each, the copy ran at 0.26 TB/s on the H200. */
template <int W>
__global__ void route_s8_vec(RouteSrc r, yq_dtensor out, int pieces, long n)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    typedef typename std::conditional<W == 16, uint4, unsigned>::type T;
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    long pix = t / pieces;
    int c = (int)(t - pix * pieces) * W;
    int k = 0, c0 = 0;
    while (c >= r.c_end[k]) c0 = r.c_end[k++];
    const yq_dtensor &s = r.t[k];
    T v = *(const T *)((const int8_t *)s.p + pix * yq_ps(s) + r.part_off[k] + c - c0);
    *(T *)((int8_t *)out.p + pix * yq_ps(out) + c) = v;
}

/* The widest piece (16, 4 or 1 bytes) that every slice of the copy is made of. */
static int route_piece(const RouteSrc &r, const yq_dtensor &out)
{
    for (int w = 16; w > 1; w /= 4) {
        bool ok = out.c % w == 0 && yq_ps(out) % w == 0 && (uintptr_t)out.p % w == 0;
        for (int k = 0, c0 = 0; ok && k < r.n; c0 = r.c_end[k++])
            ok = (r.c_end[k] - c0) % w == 0 && r.part_off[k] % w == 0 && yq_ps(r.t[k]) % w == 0 && (uintptr_t)r.t[k].p % w == 0;
        if (ok) return w;
    }
    return 1;
}

__global__ void route_f32(RouteSrc r, yq_dtensor out, long n)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    int x = (int)(t % out.w), y = (int)(t / out.w % out.h);
    long bc = t / ((long)out.w * out.h);
    int c = (int)(bc % out.c), b = (int)(bc / out.c);
    int k = 0, c0 = 0;
    while (c >= r.c_end[k]) c0 = r.c_end[k++];
    ((float *)out.p)[t] = yq_ld_f(r.t[k], b, r.part_off[k] + c - c0, y, x);
}

/* ---- conversions */
__device__ __forceinline__ int32_t quant1(float x, float scale, int32_t qmin, int32_t qmax)
{
    float v = roundf(__fdiv_rn(x, scale));       /* IEEE division, ties away from zero */
    return v != v ? 0 : v < (float)qmin ? qmin : v > (float)qmax ? qmax : (int32_t)v;
}

/* The uint8 image's byte: the same rounding, clamped to 0..255. */
__device__ __forceinline__ unsigned quant_u8(float x, float scale)
{
    float v = roundf(__fdiv_rn(x, scale));
    return (unsigned)(v != v || v < 0 ? 0 : v > 255 ? 255 : (int32_t)v);
}

/* to S8/U8 NHWC4 from anything: one thread per output byte. */
__global__ void to_int8(yq_dtensor in, yq_dtensor out, long n)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    int c4 = (out.c + 3) & ~3;
    int c = (int)(t % c4);
    long r = t / c4;
    int x = (int)(r % out.w), y = (int)(r / out.w % out.h), b = (int)(r / ((long)out.w * out.h));
    long o = r * yq_ps(out) + c;
    if (c >= out.c) {
        ((int8_t *)out.p)[o] = 0;
        return;
    }
    float f = yq_ld_f(in, b, c, y, x);
    if (out.dtype == YQ_U8) {
        ((uint8_t *)out.p)[o] = (uint8_t)quant_u8(f, out.scale);
    } else {
        ((int8_t *)out.p)[o] = (int8_t)quant1(f, out.scale, out.qmin, out.qmax);
    }
}

/* FP32 (NCHW) to S8/U8 NHWC4, one thread per pixel: the pixel's channels read from their
 * planes (each load a warp's 32 consecutive pixels of one channel: coalesced), its bytes
 * written as words, or as 16-byte pieces where the pixel stride allows (V16).  The same
 * rounding as to_int8 byte for byte.  The input conversion of every forward and the
 * float layers' outputs read by int8 layers: to_int8, a thread a byte with 64-bit
 * divisions, took 163 us on YOLOv3's batch-32 image on the H200. */
template <bool V16, bool U8>
__global__ void to_int8_px(yq_dtensor in, yq_dtensor out, int npx)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= npx) return;
    const int hw = out.h * out.w, b = t / hw, pix = t - b * hw, c4 = (out.c + 3) & ~3;
    const float *src = (const float *)in.p + (long)b * out.c * hw + pix;
    unsigned char *dst = (unsigned char *)out.p + (long)t * yq_ps(out);
    auto byte = [&](int c) -> unsigned {
        if (c >= out.c) return 0u;
        const float f = __ldg(src + (long)c * hw);
        if (U8) return quant_u8(f, out.scale);
        return (unsigned)(uint8_t)(int8_t)quant1(f, out.scale, out.qmin, out.qmax);
    };
    for (int c0 = 0; c0 < c4; c0 += V16 ? 16 : 4) {
        unsigned w[V16 ? 4 : 1];
#pragma unroll
        for (int q = 0; q < (V16 ? 4 : 1); q++) {
            const int c = c0 + 4 * q;
            w[q] = byte(c) | byte(c + 1) << 8 | byte(c + 2) << 16 | byte(c + 3) << 24;
        }
        if (V16) *reinterpret_cast<uint4 *>(dst + c0) = make_uint4(w[0], w[1], w[2], w[3]);
        else *reinterpret_cast<unsigned *>(dst + c0) = w[0];
    }
}

__global__ void to_f32(yq_dtensor in, yq_dtensor out, long n)
{
    pdl_trigger();                    /* the next wgmma conv may set up */
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    int x = (int)(t % out.w), y = (int)(t / out.w % out.h);
    long bc = t / ((long)out.w * out.h);
    ((float *)out.p)[t] = yq_ld_f(in, (int)(bc / out.c), (int)(bc % out.c), y, x);
}

/* ---- host side */

static long elems(const yq_dtensor *t, int batch)   /* threads of an output: bytes (int8) or floats */
{
    long hw = (long)t->h * t->w * batch;
    return t->dtype == YQ_F32 ? hw * t->c : hw * ((t->c + 3) & ~3);
}

/* A 1-byte tensor's pixels must hold its channels and be whole, aligned words. */
static yq_status layout_ok(const yq_dtensor *t, const char *op, yq_error *err)
{
    if (t->dtype == YQ_F32) return YQ_OK;
    int ps = yq_dt_ps(t);
    if (ps % 4 || ps < ((t->c + 3) & ~3) || ((uintptr_t)t->p & 3))
        return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: pixel stride %d bytes for %d channels", op, ps, t->c);
    return YQ_OK;
}

static yq_status need_int8(const yq_dtensor *t, const char *op, yq_error *err)
{
    if (t->dtype != YQ_S8) return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: int8 op reads a non-int8 tensor", op);
    return layout_ok(t, op, err);
}

extern "C" yq_status yq_cuda_maxpool(const yq_dtensor *in, const yq_pool_p *p, const yq_dtensor *out, int batch,
                                     void *stream, yq_error *err)
{
    long n = elems(out, batch);
    if (in->c != out->c) return yq_fail(err, YQ_ERR_SHAPE, "maxpool: %d -> %d channels", in->c, out->c);
    yq_status lst;
    if ((lst = layout_ok(in, "maxpool", err)) || (lst = layout_ok(out, "maxpool", err))) return lst;
    if (out->dtype == YQ_F32) {
        maxpool_f32<<<yq_blocks(n, NT), NT, 0, YQ_STREAM(stream)>>>(*in, *p, *out, n);
    } else {
        yq_status st = need_int8(in, "maxpool", err);
        if (st) return st;
        /* 16 bytes a thread where both tensors' pixels allow it, else words (layout_ok:
         * every int8 pixel stride and start is word-aligned) */
        int c4 = (out->c + 3) & ~3;
        bool v16 = c4 % 16 == 0 && yq_ps(*in) % 16 == 0 && yq_ps(*out) % 16 == 0 && (uintptr_t)in->p % 16 == 0 &&
                   (uintptr_t)out->p % 16 == 0;
        long pixels = (long)batch * out->h * out->w;
        /* 16 bytes a thread where that still makes several waves of blocks; else 4 (the SPP
         * blocks' 10 x 10 maps: 75 blocks of 16-byte threads on 132 multiprocessors) */
        if (v16 && pixels * (c4 / 16) < 32L * 1024) v16 = false;
        if (v16) maxpool_s8_vec<16><<<yq_blocks(pixels * (c4 / 16), NT), NT, 0, YQ_STREAM(stream)>>>(*in, *p, *out, c4 / 16, pixels * (c4 / 16));
        else maxpool_s8_vec<4><<<yq_blocks(pixels * (c4 / 4), NT), NT, 0, YQ_STREAM(stream)>>>(*in, *p, *out, c4 / 4, pixels * (c4 / 4));
    }
    YQ_CUDA_LAUNCHED();
    return YQ_OK;
}

extern "C" yq_status yq_cuda_upsample(const yq_dtensor *in, int s, const yq_dtensor *out, int batch, void *stream,
                                      yq_error *err)
{
    if (in->c != out->c || out->h != in->h * s || out->w != in->w * s)
        return yq_fail(err, YQ_ERR_SHAPE, "upsample: shapes do not match stride %d", s);
    yq_status lst;
    if ((lst = layout_ok(in, "upsample", err)) || (lst = layout_ok(out, "upsample", err))) return lst;
    if (out->dtype == YQ_F32) {
        long n = elems(out, batch);
        upsample_f32<<<yq_blocks(n, NT), NT, 0, YQ_STREAM(stream)>>>(*in, s, *out, n);
    } else {
        yq_status st = need_int8(in, "upsample", err);
        if (st) return st;
        long n = elems(out, batch) / 4;
        upsample_s8<<<yq_blocks(n, NT), NT, 0, YQ_STREAM(stream)>>>(*in, s, *out, n);
    }
    YQ_CUDA_LAUNCHED();
    return YQ_OK;
}

extern "C" yq_status yq_cuda_shortcut(const yq_dtensor *a, const yq_dtensor *b, const yq_qnode *q, yq_act act,
                                      const yq_dtensor *out, int batch, void *stream, yq_error *err)
{
    long n = elems(out, batch);
    if (a->c != out->c || b->c != out->c || a->h != out->h || b->h != out->h || a->w != out->w || b->w != out->w)
        return yq_fail(err, YQ_ERR_SHAPE, "shortcut: shapes differ");
    yq_status lst;
    if ((lst = layout_ok(a, "shortcut", err)) || (lst = layout_ok(b, "shortcut", err)) || (lst = layout_ok(out, "shortcut", err)))
        return lst;
    if (out->dtype == YQ_F32) {
        shortcut_f32<<<yq_blocks(n, NT), NT, 0, YQ_STREAM(stream)>>>(*a, *b, (int)act, *out, n);
    } else {
        yq_status st;
        if ((st = need_int8(a, "shortcut", err)) || (st = need_int8(b, "shortcut", err))) return st;
        AddQ aq = { q->sa, q->sb, q->sneg, q->qmin, q->qmax };
        shortcut_s8<<<yq_blocks(n, NT), NT, 0, YQ_STREAM(stream)>>>(*a, *b, aq, *out, n);
    }
    YQ_CUDA_LAUNCHED();
    return YQ_OK;
}

extern "C" yq_status yq_cuda_route(const yq_dtensor *src, int n_src, const yq_route_p *r, const yq_dtensor *out,
                                   int batch, void *stream, yq_error *err)
{
    if (n_src < 1 || n_src > YQ_MAX_SRC) return yq_fail(err, YQ_ERR_INVALID_ARG, "route: %d sources", n_src);
    yq_status lst = layout_ok(out, "route", err);
    if (lst) return lst;
    RouteSrc rs;
    memset(&rs, 0, sizeof rs);
    int c = 0;
    for (int k = 0; k < n_src; k++) {
        int part = src[k].c / r->groups;
        if (src[k].h != out->h || src[k].w != out->w) return yq_fail(err, YQ_ERR_SHAPE, "route: source %d size differs", k);
        if ((lst = layout_ok(&src[k], "route", err))) return lst;
        if (out->dtype != YQ_F32) {
            yq_status st = need_int8(&src[k], "route", err);
            if (st) return st;
        }
        rs.t[k] = src[k];
        rs.part_off[k] = r->group_id * part;
        c += part;
        rs.c_end[k] = c;
    }
    rs.n = n_src;
    if (c != out->c) return yq_fail(err, YQ_ERR_SHAPE, "route: sources give %d channels, output has %d", c, out->c);
    long n = elems(out, batch);
    if (out->dtype == YQ_F32) route_f32<<<yq_blocks(n, NT), NT, 0, YQ_STREAM(stream)>>>(rs, *out, n);
    else {
        int w = route_piece(rs, *out);
        long pixels = (long)batch * out->h * out->w, nv = pixels * (out->c / w);
        if (w == 16) route_s8_vec<16><<<yq_blocks(nv, NT), NT, 0, YQ_STREAM(stream)>>>(rs, *out, out->c / 16, nv);
        else if (w == 4) route_s8_vec<4><<<yq_blocks(nv, NT), NT, 0, YQ_STREAM(stream)>>>(rs, *out, out->c / 4, nv);
        else route_s8<<<yq_blocks(n, NT), NT, 0, YQ_STREAM(stream)>>>(rs, *out, n);
    }
    YQ_CUDA_LAUNCHED();
    return YQ_OK;
}

extern "C" yq_status yq_cuda_convert(const yq_dtensor *in, const yq_dtensor *out, int batch, void *stream, yq_error *err)
{
    if (in->c != out->c || in->h != out->h || in->w != out->w) return yq_fail(err, YQ_ERR_SHAPE, "convert: shapes differ");
    yq_status lst;
    if ((lst = layout_ok(in, "convert", err)) || (lst = layout_ok(out, "convert", err))) return lst;
    long n = elems(out, batch);
    if (out->dtype == YQ_F32) to_f32<<<yq_blocks(n, NT), NT, 0, YQ_STREAM(stream)>>>(*in, *out, n);
    else if (in->dtype == YQ_F32 && (long)batch * out->h * out->w < (1L << 31) / 2) {
        const int npx = batch * out->h * out->w, c4 = (out->c + 3) & ~3;
        const bool v16 = c4 % 16 == 0 && yq_ps(*out) % 16 == 0 && (uintptr_t)out->p % 16 == 0;
        const unsigned g = yq_blocks(npx, NT);
        cudaStream_t st = YQ_STREAM(stream);
        if (out->dtype == YQ_U8) {
            if (v16) to_int8_px<true, true><<<g, NT, 0, st>>>(*in, *out, npx);
            else to_int8_px<false, true><<<g, NT, 0, st>>>(*in, *out, npx);
        } else {
            if (v16) to_int8_px<true, false><<<g, NT, 0, st>>>(*in, *out, npx);
            else to_int8_px<false, false><<<g, NT, 0, st>>>(*in, *out, npx);
        }
    } else to_int8<<<yq_blocks(n, NT), NT, 0, YQ_STREAM(stream)>>>(*in, *out, n);
    YQ_CUDA_LAUNCHED();
    return YQ_OK;
}
