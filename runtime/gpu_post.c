/* Sizing and one device allocation for the GPU post-processing (kernels/cuda_post.cu). */
#include <stdlib.h>
#include <string.h>
#include "kernels/cuda.h"
#include "kernels/cuda_post.h"
#include "runtime/gpu_post.h"

struct yq_gpu_post {
    yq_post_dev d;
    void *mem;                 /* the one device allocation */
    size_t bytes, rec_bytes;
};

static size_t up(size_t n) { return (n + 255) & ~(size_t)255; }
static long pow2_at_least(long n)
{
    long p = 1;
    while (p < n) p <<= 1;
    return p;
}

void yq_gpu_post_free(yq_gpu_post *gp)
{
    if (!gp) return;
    yq_cuda_free(gp->mem);
    free(gp);
}

yq_status yq_gpu_post_new(const yq_graph *g, const float *const *d_heads, int batch, const yq_post_opt *o,
                          int letterbox, yq_gpu_post **out, yq_error *err)
{
    if (batch < 1) return yq_fail(err, YQ_ERR_INVALID_ARG, "batch %d must be >= 1", batch);
    if (o->max_dets < 1) return yq_fail(err, YQ_ERR_INVALID_ARG, "GPU post-processing needs max_dets >= 1 (got %d)", o->max_dets);
    if (!(o->conf >= 0)) return yq_fail(err, YQ_ERR_INVALID_ARG, "conf %g must be >= 0", (double)o->conf);
    yq_post_head heads[YQ_POST_MAX_HEADS];
    memset(heads, 0, sizeof heads);
    int nh = 0, classes = 0;
    long cells = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const yq_node *hd = &g->nodes[i];
        if (!yq_op_is_head(hd->op)) continue;
        if (nh == YQ_POST_MAX_HEADS) return yq_fail(err, YQ_ERR_UNSUPPORTED, "more than %d heads", YQ_POST_MAX_HEADS);
        const yq_head_p *p = &hd->p.head;
        yq_shape s = g->nodes[hd->src[0]].out;
        if (hd->op == YQ_OP_DETECT) {
            if (p->classes < 1 || p->reg_max < 1 || p->stride < 1 || s.c != 4 * p->reg_max + p->classes)
                return yq_fail(err, YQ_ERR_UNSUPPORTED, "%s: detect head with %d classes, %d bins over %d channels", hd->name,
                               p->classes, p->reg_max, s.c);
            yq_post_head *h = &heads[nh];
            h->x = d_heads[nh];
            h->c = s.c;
            h->h = s.h;
            h->w = s.w;
            h->detect = 1;
            h->reg_max = p->reg_max;
            h->stride = p->stride;
            h->classes = p->classes;
            h->coords = 4;
            h->n_mask = 1;
            h->scale_x_y = 1;
            h->cell0 = (int)cells;
            cells += (long)s.h * s.w;
            if (p->classes > classes) classes = p->classes;
            nh++;
            continue;
        }
        if (p->classes < 1 || p->coords != 4 || p->n_mask < 1 || s.c < p->n_mask * (p->classes + 5))
            return yq_fail(err, YQ_ERR_UNSUPPORTED, "%s: head with %d classes, %d coords, %d anchors over %d channels",
                           hd->name, p->classes, p->coords, p->n_mask, s.c);
        yq_post_head *h = &heads[nh];
        h->x = d_heads[nh];
        h->c = s.c;
        h->h = s.h;
        h->w = s.w;
        h->yolo = hd->op == YQ_OP_YOLO;
        h->classes = p->classes;
        h->coords = p->coords;
        h->n_mask = p->n_mask;
        h->new_coords = p->new_coords;
        h->softmax = p->softmax;
        h->scale_x_y = p->scale_x_y;
        h->cell0 = (int)cells;
        memcpy(h->mask, p->mask, sizeof h->mask);
        memcpy(h->anchors, p->anchors, sizeof h->anchors);
        cells += (long)p->n_mask * s.h * s.w;
        if (p->classes > classes) classes = p->classes;
        nh++;
    }
    if (!nh) return yq_fail(err, YQ_ERR_UNSUPPORTED, "%s: the model has no [yolo] or [region] head", g->cfg_path);
    if (cells > (1L << 26)) return yq_fail(err, YQ_ERR_UNSUPPORTED, "%ld head cells per image: too many", cells);

    yq_gpu_post *gp = calloc(1, sizeof *gp);
    if (!gp) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    yq_post_dev *d = &gp->d;
    d->batch = batch;
    d->n_heads = nh;
    d->classes = classes;
    d->cells = (int)cells;
    d->netw = g->nodes[0].out.w;
    d->neth = g->nodes[0].out.h;
    d->letterbox = yq_letterbox_kind(g, letterbox);   /* the model's way (postproc.c correct) */
    d->conf = o->conf;
    d->nms = o->nms;
    d->k = o->max_dets;
    d->seg_cap = (int)pow2_at_least(cells);
    d->kept_cap = pow2_at_least((long)classes * cells);
    gp->rec_bytes = yq_post_rec_bytes(d->k);

    size_t B = (size_t)batch;
    size_t o_heads = 0;
    size_t o_wh = o_heads + up(sizeof(yq_post_head) * (size_t)nh);
    size_t o_boxes = o_wh + up(2 * sizeof(int) * B);
    size_t o_counts = o_boxes + up(4 * sizeof(float) * (size_t)cells * B);
    size_t o_seg = o_counts + up(sizeof(int) * B * (size_t)(classes + 1));
    size_t o_kept = o_seg + up(yq_post_seg_item_bytes() * (size_t)d->seg_cap * (size_t)classes * B);
    size_t o_res = o_kept + up(yq_post_kept_item_bytes() * (size_t)d->kept_cap * B);
    gp->bytes = o_res + up(gp->rec_bytes * B);
    yq_status st = yq_cuda_malloc(&gp->mem, gp->bytes, err);
    if (st) { free(gp); return st; }
    unsigned char *m = gp->mem;
    d->heads = (const yq_post_head *)(m + o_heads);
    d->orig_wh = (const int *)(m + o_wh);
    d->boxes = (float *)(m + o_boxes);
    d->counts = (int *)(m + o_counts);
    d->seg = m + o_seg;
    d->kept = m + o_kept;
    d->result = m + o_res;
    if ((st = yq_cuda_h2d(m + o_heads, heads, sizeof(yq_post_head) * (size_t)nh, err)) ||
        (st = yq_cuda_memset(m + o_wh, 0, 2 * sizeof(int) * B, err))) {
        yq_gpu_post_free(gp);
        return st;
    }
    *out = gp;
    return YQ_OK;
}

int *yq_gpu_post_wh(yq_gpu_post *gp) { return (int *)gp->d.orig_wh; }
const void *yq_gpu_post_result(const yq_gpu_post *gp) { return gp->d.result; }
size_t yq_gpu_post_rec_bytes(const yq_gpu_post *gp) { return gp->rec_bytes; }
size_t yq_gpu_post_bytes(const yq_gpu_post *gp) { return gp->bytes; }

yq_status yq_gpu_post_enqueue(yq_gpu_post *gp, int n, void *stream, yq_error *err)
{
    return yq_cuda_post_enqueue(&gp->d, n, stream, err);
}

int yq_gpu_post_unpack(const yq_gpu_post *gp, const void *host_block, int b, yq_detection *dets, int cap,
                       int *cand, int *kept)
{
    const unsigned char *r = (const unsigned char *)host_block + (size_t)b * gp->rec_bytes;
    yq_post_rec rec;
    memcpy(&rec, r, sizeof rec);
    int n = rec.count;
    if (n < 0) n = 0;
    if (n > gp->d.k) n = gp->d.k;
    if (n > cap) n = cap;
    if (n > 0) memcpy(dets, r + sizeof rec, sizeof *dets * (size_t)n);
    if (cand) *cand = rec.n_cand;
    if (kept) *kept = rec.n_kept;
    return n;
}

yq_status yq_gpu_post_run(yq_gpu_post *gp, int n, const int *wh, yq_detection *dets, int cap, int *counts,
                          yq_error *err)
{
    if (n < 1 || n > gp->d.batch) return yq_fail(err, YQ_ERR_INVALID_ARG, "%d images, buffers for %d", n, gp->d.batch);
    size_t bytes = gp->rec_bytes * (size_t)n;
    unsigned char *host = malloc(bytes);
    if (!host) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    yq_status st;
    if (!(st = yq_cuda_h2d(yq_gpu_post_wh(gp), wh, 2 * sizeof(int) * (size_t)n, err)) &&
        !(st = yq_gpu_post_enqueue(gp, n, NULL, err)) &&
        !(st = yq_cuda_sync(NULL, err)) &&
        !(st = yq_cuda_d2h(host, gp->d.result, bytes, err)))
        for (int b = 0; b < n; b++) counts[b] = yq_gpu_post_unpack(gp, host, b, dets + (size_t)b * cap, cap, NULL, NULL);
    free(host);
    return st;
}
