/* Head decode and NMS, following darknet's get_yolo_detections /
 * get_region_detections / correct_*_boxes / do_nms_sort. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/postproc.h"
#include "yq_data.h"

yq_post_opt yq_post_defaults(void)
{
    yq_post_opt o = { 0.25f, 0.45f, 100 };
    return o;
}

static inline float logistic(float x) { return 1.f / (1.f + expf(-x)); }

typedef struct cand { float x, y, w, h; float score; int cls; } cand;   /* centre form, relative */

typedef struct vec { cand *v; int n, cap; } vec;
static int push(vec *a, cand c)
{
    if (a->n == a->cap) {
        int cap = a->cap ? 2 * a->cap : 256;
        cand *nv = realloc(a->v, (size_t)cap * sizeof *nv);
        if (!nv) return -1;
        a->v = nv;
        a->cap = cap;
    }
    a->v[a->n++] = c;
    return 0;
}

/* Network-relative box -> original-image-relative, as darknet's correct_yolo_boxes; letter 2:
 * Ultralytics' letterbox (yq_letterbox_size_ultra's picture at integer offsets).  The GPU's
 * post-processing (kernels/cuda_post.cu correct) does the same operations. */
static void correct(cand *c, int netw, int neth, int w, int h, int letter)
{
    int new_w = netw, new_h = neth;
    float px, py;
    if (letter == YQ_LB_ULTRALYTICS) {
        yq_letterbox_size_ultra(w, h, netw, neth, &new_w, &new_h);
        px = (float)((netw - new_w) / 2);
        py = (float)((neth - new_h) / 2);
    } else {
        if (letter) {
            if ((float)netw / w < (float)neth / h) { new_w = netw; new_h = (h * netw) / w; }
            else { new_h = neth; new_w = (w * neth) / h; }
        }
        px = (float)(netw - new_w) / 2.f;
        py = (float)(neth - new_h) / 2.f;
    }
    c->x = (c->x - px / netw) / ((float)new_w / netw);
    c->y = (c->y - py / neth) / ((float)new_h / neth);
    c->w *= (float)netw / new_w;
    c->h *= (float)neth / new_h;
}

static int decode_head(const yq_graph *g, const yq_node *hd, const float *x, int img_w, int img_h,
                       int letter, float conf, vec *out)
{
    const yq_head_p *p = &hd->p.head;
    yq_shape s = g->nodes[hd->src[0]].out;
    int netw = g->nodes[0].out.w, neth = g->nodes[0].out.h;
    long plane = (long)s.h * s.w;
    int per = p->classes + p->coords + 1;
    int yolo = hd->op == YQ_OP_YOLO;
    float sxy = p->scale_x_y, *probs = NULL;
    if (!yolo && p->softmax) {
        probs = malloc(sizeof(float) * (size_t)p->classes);
        if (!probs) return -1;
    }
    for (int n = 0; n < p->n_mask; n++) {
        const float *a = x + (long)n * per * plane;
        int an = p->mask[n];
        for (int j = 0; j < s.h; j++)
            for (int i = 0; i < s.w; i++) {
                long loc = (long)j * s.w + i;
                float obj = p->new_coords ? a[4 * plane + loc] : logistic(a[4 * plane + loc]);
                if (obj <= conf) continue;
                float tx = a[loc], ty = a[plane + loc], tw = a[2 * plane + loc], th = a[3 * plane + loc];
                cand c;
                if (!yolo) {            /* region: anchors in grid cells */
                    c.x = (i + logistic(tx)) / s.w;
                    c.y = (j + logistic(ty)) / s.h;
                    c.w = expf(tw) * p->anchors[2 * an] / s.w;
                    c.h = expf(th) * p->anchors[2 * an + 1] / s.h;
                } else if (p->new_coords) {   /* inputs are already logistic */
                    c.x = (i + tx * sxy - 0.5f * (sxy - 1)) / s.w;
                    c.y = (j + ty * sxy - 0.5f * (sxy - 1)) / s.h;
                    c.w = tw * tw * 4 * p->anchors[2 * an] / netw;
                    c.h = th * th * 4 * p->anchors[2 * an + 1] / neth;
                } else {
                    c.x = (i + logistic(tx) * sxy - 0.5f * (sxy - 1)) / s.w;
                    c.y = (j + logistic(ty) * sxy - 0.5f * (sxy - 1)) / s.h;
                    c.w = expf(tw) * p->anchors[2 * an] / netw;
                    c.h = expf(th) * p->anchors[2 * an + 1] / neth;
                }
                correct(&c, netw, neth, img_w, img_h, letter);
                const float *cl = a + 5 * plane + loc;
                if (probs) {            /* softmax over the classes, as darknet's region layer */
                    float m = -INFINITY, sum = 0;
                    for (int k = 0; k < p->classes; k++) if (cl[k * plane] > m) m = cl[k * plane];
                    for (int k = 0; k < p->classes; k++) sum += probs[k] = expf(cl[k * plane] - m);
                    for (int k = 0; k < p->classes; k++) probs[k] /= sum;
                }
                for (int k = 0; k < p->classes; k++) {
                    float pk = probs ? probs[k] : p->new_coords ? cl[k * plane] : logistic(cl[k * plane]);
                    float sc = obj * pk;
                    if (sc > conf) {
                        c.score = sc;
                        c.cls = k;
                        if (push(out, c)) { free(probs); return -1; }
                    }
                }
            }
    }
    free(probs);
    return 0;
}

static float overlap(float x1, float w1, float x2, float w2)
{
    float l = fmaxf(x1 - w1 / 2, x2 - w2 / 2), r = fminf(x1 + w1 / 2, x2 + w2 / 2);
    return r - l;
}
static float iou_c(const cand *a, const cand *b)
{
    float w = overlap(a->x, a->w, b->x, b->w), h = overlap(a->y, a->h, b->y, b->h);
    if (w <= 0 || h <= 0) return 0;
    float inter = w * h, uni = a->w * a->h + b->w * b->h - inter;
    return uni > 0 ? inter / uni : 0;
}

float yq_box_iou(const yq_detection *a, const yq_detection *b)
{
    cand x = { a->x + a->w / 2, a->y + a->h / 2, a->w, a->h, 0, 0 };
    cand y = { b->x + b->w / 2, b->y + b->h / 2, b->w, b->h, 0, 0 };
    return iou_c(&x, &y);
}

/* Class, then score descending; ties keep decode order (stable by index). */
static int by_cls_score(const void *pa, const void *pb)
{
    const cand *a = pa, *b = pb;
    if (a->cls != b->cls) return a->cls - b->cls;
    if (a->score != b->score) return a->score < b->score ? 1 : -1;
    if (a->x != b->x) return a->x < b->x ? -1 : 1;
    return (a->y > b->y) - (a->y < b->y);
}
static int by_score(const void *pa, const void *pb)
{
    const yq_detection *a = pa, *b = pb;
    if (a->score != b->score) return a->score < b->score ? 1 : -1;
    return a->cls - b->cls;
}

/* One scale of an anchor-free (DFL) head: per cell, each side's distance is the expectation
 * of a softmax over reg_max bins; the box spans anchor -/+ distances (anchor at the cell's
 * centre), times the stride; class scores are the sigmoids of the class logits (no
 * objectness), as the Ultralytics Detect head computes them.  box[4] gets cx, cy, w, h in
 * network-input pixels of cell loc. */
static void detect_box(const yq_head_p *p, const float *x, long plane, int w, long loc, float box[4])
{
    float d[4];
    for (int k = 0; k < 4; k++) {
        const float *l = x + (long)k * p->reg_max * plane + loc;
        float m = -INFINITY, sum = 0, e = 0;
        for (int r = 0; r < p->reg_max; r++) m = fmaxf(m, l[r * plane]);
        for (int r = 0; r < p->reg_max; r++) {
            float v = expf(l[r * plane] - m);
            sum += v;
            e += v * (float)r;
        }
        d[k] = e / sum;
    }
    float ax = (float)(loc % w) + 0.5f, ay = (float)(loc / w) + 0.5f, s = (float)p->stride;
    float x1 = ax - d[0], y1 = ay - d[1], x2 = ax + d[2], y2 = ay + d[3];
    box[0] = (x1 + x2) / 2 * s;
    box[1] = (y1 + y2) / 2 * s;
    box[2] = (x2 - x1) * s;
    box[3] = (y2 - y1) * s;
}

static int decode_detect(const yq_graph *g, const yq_node *hd, const float *x, int img_w, int img_h, int letter,
                         float conf, vec *out)
{
    const yq_head_p *p = &hd->p.head;
    yq_shape s = g->nodes[hd->src[0]].out;
    int netw = g->nodes[0].out.w, neth = g->nodes[0].out.h;
    long plane = (long)s.h * s.w;
    const float *cls = x + (long)4 * p->reg_max * plane;
    /* a logit at or below this cannot pass conf (the sigmoid is monotone) */
    float lmin = conf > 0 && conf < 1 ? logf(conf / (1 - conf)) : -INFINITY;
    for (long loc = 0; loc < plane; loc++) {
        int any = 0;
        for (int k = 0; k < p->classes && !any; k++) any = cls[k * plane + loc] > lmin;
        if (!any) continue;
        float box[4];
        detect_box(p, x, plane, s.w, loc, box);
        cand c = { box[0] / netw, box[1] / neth, box[2] / netw, box[3] / neth, 0, 0 };
        correct(&c, netw, neth, img_w, img_h, letter);
        for (int k = 0; k < p->classes; k++) {
            float sc = logistic(cls[k * plane + loc]);
            if (sc > conf) {
                c.score = sc;
                c.cls = k;
                if (push(out, c)) return -1;
            }
        }
    }
    return 0;
}

long yq_detect_raw_cells(const yq_graph *g)
{
    long n = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == YQ_OP_DETECT) n += (long)g->nodes[g->nodes[i].src[0]].out.h * g->nodes[g->nodes[i].src[0]].out.w;
    return n;
}

int yq_detect_raw(const yq_graph *g, const float *const *heads, int b, float *out)
{
    long N = yq_detect_raw_cells(g), at = 0;
    int k = 0, classes = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        const yq_node *hd = &g->nodes[i];
        if (!yq_op_is_head(hd->op)) continue;
        const float *x = heads[k++];
        if (hd->op != YQ_OP_DETECT) return -1;
        const yq_head_p *p = &hd->p.head;
        if (classes >= 0 && p->classes != classes) return -1;
        classes = p->classes;
        yq_shape s = g->nodes[hd->src[0]].out;
        long plane = (long)s.h * s.w;
        x += b * yq_shape_size(s);
        for (long loc = 0; loc < plane; loc++, at++) {
            float box[4];
            detect_box(p, x, plane, s.w, loc, box);
            for (int j = 0; j < 4; j++) out[j * N + at] = box[j];
            for (int c = 0; c < p->classes; c++) out[(4 + c) * N + at] = logistic(x[(4L * p->reg_max + c) * plane + loc]);
        }
    }
    return classes < 0 ? -1 : 4 + classes;
}

int yq_postprocess(const yq_graph *g, const float *const *heads, int b, int img_w, int img_h,
                   int letterbox, const yq_post_opt *o, yq_detection *out, int cap)
{
    letterbox = yq_letterbox_kind(g, letterbox);   /* the model's way */
    vec v = { 0 };
    int k = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const yq_node *hd = &g->nodes[i];
        if (!yq_op_is_head(hd->op)) continue;
        long sz = yq_shape_size(g->nodes[hd->src[0]].out);
        const float *x = heads[k++] + b * sz;
        int bad = hd->op == YQ_OP_DETECT ? decode_detect(g, hd, x, img_w, img_h, letterbox, o->conf, &v)
                                         : decode_head(g, hd, x, img_w, img_h, letterbox, o->conf, &v);
        if (bad) { free(v.v); return -1; }
    }
    if (v.n > 1) qsort(v.v, (size_t)v.n, sizeof *v.v, by_cls_score);   /* v.v is NULL when nothing passed */
    int n = 0;
    for (int i = 0; i < v.n; i++) {
        if (v.v[i].score <= 0) continue;
        for (int j = i + 1; j < v.n && v.v[j].cls == v.v[i].cls; j++)
            if (v.v[j].score > 0 && iou_c(&v.v[i], &v.v[j]) > o->nms) v.v[j].score = 0;
        v.v[n++] = v.v[i];
    }
    yq_detection *all = malloc(sizeof *all * (size_t)(n ? n : 1));
    if (!all) { free(v.v); return -1; }
    for (int i = 0; i < n; i++) {
        const cand *c = &v.v[i];
        float x0 = fmaxf((c->x - c->w / 2) * img_w, 0), y0 = fmaxf((c->y - c->h / 2) * img_h, 0);
        float x1 = fminf((c->x + c->w / 2) * img_w, (float)img_w), y1 = fminf((c->y + c->h / 2) * img_h, (float)img_h);
        all[i] = (yq_detection){ x0, y0, x1 - x0, y1 - y0, c->score, c->cls };
    }
    free(v.v);
    qsort(all, (size_t)n, sizeof *all, by_score);
    if (n > cap) n = cap;
    if (o->max_dets > 0 && n > o->max_dets) n = o->max_dets;
    memcpy(out, all, sizeof *all * (size_t)n);
    free(all);
    return n;
}
