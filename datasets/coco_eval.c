/* COCO bbox evaluation, a C transcription of pycocotools' COCOeval (evaluate, accumulate,
 * summarize) for iouType "bbox" with the default parameters.
 *
 * Where the numbers depend on details, the details are pycocotools':
 * - thresholds are np.linspace values (i*step + start, last = stop), so that recall 0.57 is
 *   0.5700000000000001 exactly as in the searchsorted that reads the precision envelope;
 * - IoU is maskApi's bbIou expression for expression (crowd: intersection / det area);
 * - every sort is stable (np.argsort kind='mergesort'), ties keep file order;
 * - a det matched to a ground truth whose annotation id is 0 counts as unmatched (dtm == 0);
 * - means are numpy's pairwise sums, so the 12 stats agree to the last bit, not just 1e-4.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ir/fsio.h"
#include "datasets/coco_eval.h"
#include "datasets/fileio.h"
#include "ir/ir.h"

#define NT 10    /* IoU thresholds */
#define NR 101   /* recall points */
#define NA 4     /* area ranges */
#define NM 3     /* max detections */

static const int max_dets[NM] = {1, 10, 100};
static const double area_rng[NA][2] = {{0, 1e10}, {0, 32 * 32}, {32 * 32, 96 * 96}, {96 * 96, 1e10}};

static const char *const stat_names[YQ_COCO_NSTATS] = {
    "AP", "AP50", "AP75", "AP_small", "AP_medium", "AP_large",
    "AR1", "AR10", "AR100", "AR_small", "AR_medium", "AR_large"};

const char *yq_coco_stat_name(int i)
{
    return i >= 0 && i < YQ_COCO_NSTATS ? stat_names[i] : "?";
}

/* np.linspace(a, b, n): arange(n) * ((b - a) / (n - 1)) + a, the last value set to b. */
static void linspace(double a, double b, int n, double *out)
{
    double step = (b - a) / (n - 1);
    for (int i = 0; i < n; i++) out[i] = i * step + a;
    out[n - 1] = b;
}

/* numpy's pairwise summation (8 accumulators, blocks of 128), which np.mean uses. */
static double pairwise_sum(const double *a, size_t n)
{
    if (n < 8) {
        double s = 0.;
        for (size_t i = 0; i < n; i++) s += a[i];
        return s;
    }
    if (n <= 128) {
        double r[8];
        size_t i;
        for (int j = 0; j < 8; j++) r[j] = a[j];
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++) r[j] += a[i + j];
        double s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) s += a[i];
        return s;
    }
    size_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

/* mean of the values > -1, or -1 when there are none (summarize's s[s > -1]) */
static double mean_valid(double *v, size_t n)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i] > -1) v[m++] = v[i];
    return m ? pairwise_sum(v, m) / (double)m : -1.;
}

/* One detection after per-image matching, as accumulate() sees it. */
typedef struct entry {
    double score;
    int rank;                 /* position in its image's score order: maxDet keeps rank < m */
    uint8_t tp[NT], ig[NT];   /* matched (dtm != 0), ignored (dtIg) per IoU threshold */
} entry;

typedef struct elist { entry *v; size_t n, cap; long npig; } elist;

typedef struct sref { double score; size_t pos; } sref;

/* score descending, then the earlier position: what a stable sort on -score gives */
static int cmp_sref(const void *a, const void *b)
{
    const sref *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int cat_index(const yq_dataset *gt, int category_id)
{
    const int *p = bsearch(&category_id, gt->category_ids, (size_t)gt->n_categories, sizeof *p, cmp_int);
    return p ? (int)(p - gt->category_ids) : -1;
}

/* Counting sort of items into cells (k * I + image rank), keeping input order in a cell. */
static int bucket(const int *cell, int n, size_t n_cells, size_t **start, int **items)
{
    *start = calloc(n_cells + 1, sizeof **start);
    *items = malloc(((size_t)n + 1) * sizeof **items);
    if (!*start || !*items) return 0;
    for (int i = 0; i < n; i++)
        if (cell[i] >= 0) (*start)[cell[i] + 1]++;
    for (size_t c = 0; c < n_cells; c++) (*start)[c + 1] += (*start)[c];
    size_t *fill = malloc((n_cells + 1) * sizeof *fill);
    if (!fill) return 0;
    memcpy(fill, *start, (n_cells + 1) * sizeof *fill);
    for (int i = 0; i < n; i++)
        if (cell[i] >= 0) (*items)[fill[cell[i]]++] = i;
    free(fill);
    return 1;
}

/* accumulate() for one category k: precision envelope at the recall points, final recall. */
static int accumulate(elist *list, int K, int k, const double *rec_thr, double *precision,
                      double *recall)
{
    size_t cap = 0;
    for (int a = 0; a < NA; a++) cap = list[a].n > cap ? list[a].n : cap;
    sref *sel = malloc((cap + 1) * sizeof *sel);
    double *rc = malloc((cap + 1) * sizeof *rc), *pr = malloc((cap + 1) * sizeof *pr);
    if (!sel || !rc || !pr) { free(sel); free(rc); free(pr); return 0; }
    for (int a = 0; a < NA; a++) {
        const elist *L = &list[a];
        if (L->npig == 0) continue;   /* no ground truth here: precision and recall stay -1 */
        for (int m = 0; m < NM; m++) {
            size_t nd = 0;
            for (size_t i = 0; i < L->n; i++)
                if (L->v[i].rank < max_dets[m]) sel[nd++] = (sref){L->v[i].score, i};
            qsort(sel, nd, sizeof *sel, cmp_sref);
            for (int t = 0; t < NT; t++) {
                double tp = 0, fp = 0;
                for (size_t i = 0; i < nd; i++) {
                    const entry *e = &L->v[sel[i].pos];
                    if (!e->ig[t]) {
                        if (e->tp[t]) tp += 1;
                        else fp += 1;
                    }
                    rc[i] = tp / (double)L->npig;
                    pr[i] = tp / (fp + tp + DBL_EPSILON);   /* np.spacing(1) */
                }
                recall[((size_t)t * K + k) * NA * NM + a * NM + m] = nd ? rc[nd - 1] : 0;
                for (size_t i = nd; i > 1; i--)   /* the envelope, right to left */
                    if (pr[i - 1] > pr[i - 2]) pr[i - 2] = pr[i - 1];
                /* searchsorted(rc, recThrs, side='left'); past the last det q stays 0 */
                size_t j = 0;
                for (int r = 0; r < NR; r++) {
                    while (j < nd && rc[j] < rec_thr[r]) j++;
                    double q = j < nd ? pr[j] : 0;
                    precision[(((size_t)t * NR + r) * K + k) * NA * NM + a * NM + m] = q;
                }
            }
        }
    }
    free(sel);
    free(rc);
    free(pr);
    return 1;
}

static int push(elist *L, const entry *e)
{
    if (L->n == L->cap) {
        size_t nc = L->cap ? 2 * L->cap : 1024;
        entry *nv = realloc(L->v, nc * sizeof *nv);
        if (!nv) return 0;
        L->v = nv;
        L->cap = nc;
    }
    L->v[L->n++] = *e;
    return 1;
}

/* Scratch for one (image, category) cell, grown as needed. */
typedef struct scratch {
    sref *dord; double *iou; int *gord; uint8_t *gig, *gtm; size_t d_cap, g_cap;
} scratch;

/* d: detections of the cell (all are sorted), g: its ground truth; the IoU matrix only
 * needs the top max_dets of the detections. */
static int grow(scratch *s, size_t D, size_t G)
{
    if (D > s->d_cap || G > s->g_cap || !s->iou) {
        size_t d = D > s->d_cap ? D : s->d_cap, g = G > s->g_cap ? G : s->g_cap;
        size_t di = d < (size_t)max_dets[NM - 1] ? d : (size_t)max_dets[NM - 1];
        free(s->dord); free(s->iou); free(s->gord); free(s->gig); free(s->gtm);
        s->dord = malloc((d + 1) * sizeof *s->dord);
        s->iou = malloc((di * g + 1) * sizeof *s->iou);
        s->gord = malloc((g + 1) * sizeof *s->gord);
        s->gig = malloc(g + 1);
        s->gtm = malloc(g + 1);
        s->d_cap = d;
        s->g_cap = g;
        if (!s->dord || !s->iou || !s->gord || !s->gig || !s->gtm) return 0;
    }
    return 1;
}

/* evaluateImg() for one image and category, all area ranges; appends to list[a]. */
static int evaluate_cell(const yq_dataset *gt, const int *g_items, size_t G, const yq_det *dets,
                         const int *d_items, size_t D_all, const double *iou_thr, scratch *s,
                         elist *list)
{
    size_t D = D_all;
    if (!grow(s, D_all, G)) return 0;
    for (size_t i = 0; i < D_all; i++) s->dord[i] = (sref){dets[d_items[i]].score, (size_t)d_items[i]};
    qsort(s->dord, D_all, sizeof *s->dord, cmp_sref);
    if (D > (size_t)max_dets[NM - 1]) D = (size_t)max_dets[NM - 1];

    /* maskApi bbIou, ious[d][g] with the ground truth in file order */
    for (size_t d = 0; d < D; d++) {
        const double *Db = dets[s->dord[d].pos].bbox;
        double da = Db[2] * Db[3];
        for (size_t g = 0; g < G; g++) {
            const yq_gt_box *gb = &gt->boxes[g_items[g]];
            const double *Gb = gb->bbox;
            double ga = Gb[2] * Gb[3], o = 0;
            double w = fmin(Db[2] + Db[0], Gb[2] + Gb[0]) - fmax(Db[0], Gb[0]);
            if (w > 0) {
                double h = fmin(Db[3] + Db[1], Gb[3] + Gb[1]) - fmax(Db[1], Gb[1]);
                if (h > 0) {
                    double i = w * h, u = gb->iscrowd ? da : da + ga - i;
                    o = i / u;
                }
            }
            s->iou[d * G + g] = o;
        }
    }

    for (int a = 0; a < NA; a++) {
        const double lo = area_rng[a][0], hi = area_rng[a][1];
        size_t ng = 0;
        for (size_t g = 0; g < G; g++) {
            const yq_gt_box *gb = &gt->boxes[g_items[g]];
            s->gig[g] = gb->iscrowd || gb->area < lo || gb->area > hi;
        }
        /* gt sorted with the ignored ones last, stable */
        for (size_t g = 0; g < G; g++) if (!s->gig[g]) s->gord[ng++] = (int)g;
        size_t o = ng;
        for (size_t g = 0; g < G; g++) if (s->gig[g]) s->gord[o++] = (int)g;
        list[a].npig += (long)ng;

        entry *es = calloc(D + 1, sizeof *es);
        if (!es) return 0;
        for (int t = 0; t < NT; t++) {
            memset(s->gtm, 0, G);
            for (size_t d = 0; d < D; d++) {
                double best = iou_thr[t] < 1 - 1e-10 ? iou_thr[t] : 1 - 1e-10;
                long m = -1;
                for (size_t j = 0; j < G; j++) {
                    int g = s->gord[j];
                    const int crowd = gt->boxes[g_items[g]].iscrowd;
                    if (s->gtm[j] && !crowd) continue;
                    /* matched to a regular gt already, and only ignored ones remain */
                    if (m > -1 && !s->gig[s->gord[m]] && s->gig[g]) break;
                    if (s->iou[d * G + (size_t)g] < best) continue;
                    best = s->iou[d * G + (size_t)g];
                    m = (long)j;
                }
                if (m == -1) continue;
                int g = s->gord[m];
                es[d].ig[t] = s->gig[g];
                es[d].tp[t] = gt->boxes[g_items[g]].id != 0;
                s->gtm[m] = 1;
            }
        }
        for (size_t d = 0; d < D; d++) {
            const double *Db = dets[s->dord[d].pos].bbox;
            double da = Db[2] * Db[3];
            int out = da < lo || da > hi;
            for (int t = 0; t < NT; t++)
                if (!es[d].tp[t] && out) es[d].ig[t] = 1;
            es[d].score = s->dord[d].score;
            es[d].rank = (int)d;
            if (!push(&list[a], &es[d])) { free(es); return 0; }
        }
        free(es);
    }
    return 1;
}

yq_status yq_coco_eval(const yq_dataset *gt, const yq_det *dets, int n_dets,
                       double stats[YQ_COCO_NSTATS], double *cat_ap, double *cat_ap50, yq_error *err)
{
    const int I = gt->n_images, K = gt->n_categories;
    const size_t n_cells = (size_t)I * (size_t)K;
    double iou_thr[NT], rec_thr[NR];
    linspace(.5, .95, NT, iou_thr);
    linspace(0., 1., NR, rec_thr);
    if (n_dets < 0 || (n_dets > 0 && !dets))
        return yq_fail(err, YQ_ERR_INVALID_ARG, "coco eval: bad detection array");

    yq_status st = YQ_OK;
    int *rank = malloc(((size_t)I + 1) * sizeof *rank);
    int *g_cell = malloc(((size_t)gt->n_boxes + 1) * sizeof *g_cell);
    int *d_cell = malloc(((size_t)n_dets + 1) * sizeof *d_cell);
    size_t np = (size_t)NT * NR * K * NA * NM + 1, nr = (size_t)NT * K * NA * NM + 1;
    double *precision = malloc(np * sizeof *precision), *recall = malloc(nr * sizeof *recall);
    double *tmp = malloc((np > nr ? np : nr) * sizeof *tmp);
    size_t *g_start = NULL, *d_start = NULL;
    int *g_items = NULL, *d_items = NULL;
    elist list[NA];
    scratch s = {0};
    memset(list, 0, sizeof list);
    if (!rank || !g_cell || !d_cell || !precision || !recall || !tmp) goto nomem;
    if (n_cells > (size_t)INT32_MAX) {   /* cells are indexed by int */
        st = yq_fail(err, YQ_ERR_UNSUPPORTED, "coco eval: %d images x %d categories is too many", I, K);
        goto done;
    }
    for (size_t i = 0; i < np; i++) precision[i] = -1;
    for (size_t i = 0; i < nr; i++) recall[i] = -1;

    /* images are evaluated in id order (sorted(getImgIds())) */
    for (int r = 0; r < I; r++) rank[gt->by_id[r].index] = r;
    for (int i = 0; i < gt->n_boxes; i++) {
        int k = cat_index(gt, gt->boxes[i].category_id);
        g_cell[i] = k < 0 ? -1 : (int)((size_t)k * I + rank[gt->boxes[i].image]);
    }
    for (int i = 0; i < n_dets; i++) {
        const yq_det *d = &dets[i];
        if (!isfinite(d->score) || !isfinite(d->bbox[0]) || !isfinite(d->bbox[1]) ||
            !isfinite(d->bbox[2]) || !isfinite(d->bbox[3])) {
            st = yq_fail(err, YQ_ERR_INVALID_ARG, "detection %d (image %lld): non-finite score or bbox",
                         i, (long long)d->image_id);
            goto done;
        }
        int im = yq_dataset_find_image(gt, d->image_id);
        if (im < 0) {
            st = yq_fail(err, YQ_ERR_INVALID_ARG, "detection %d: image_id %lld is not in the ground truth",
                         i, (long long)d->image_id);
            goto done;
        }
        int k = cat_index(gt, d->category_id);   /* other categories are not evaluated */
        d_cell[i] = k < 0 ? -1 : (int)((size_t)k * I + rank[im]);
    }
    if (!bucket(g_cell, gt->n_boxes, n_cells, &g_start, &g_items) ||
        !bucket(d_cell, n_dets, n_cells, &d_start, &d_items))
        goto nomem;

    for (int k = 0; k < K; k++) {
        for (int a = 0; a < NA; a++) list[a].n = 0, list[a].npig = 0;
        for (int r = 0; r < I; r++) {
            size_t c = (size_t)k * I + r;
            size_t G = g_start[c + 1] - g_start[c], D = d_start[c + 1] - d_start[c];
            if (G == 0 && D == 0) continue;
            if (!evaluate_cell(gt, g_items + g_start[c], G, dets, d_items + d_start[c], D, iou_thr, &s, list))
                goto nomem;
        }
        if (!accumulate(list, K, k, rec_thr, precision, recall)) goto nomem;
    }

    /* summarize(): each stat is the mean of the entries > -1 over its slice, in numpy's
     * C order (t, r, k for precision; t, k for recall) so the pairwise sum matches too. */
    static const struct { int ap, t, a, m; } spec[YQ_COCO_NSTATS] = {
        {1, -1, 0, 2}, {1, 0, 0, 2}, {1, 5, 0, 2}, {1, -1, 1, 2}, {1, -1, 2, 2}, {1, -1, 3, 2},
        {0, -1, 0, 0}, {0, -1, 0, 1}, {0, -1, 0, 2}, {0, -1, 1, 2}, {0, -1, 2, 2}, {0, -1, 3, 2}};
    for (int i = 0; i < YQ_COCO_NSTATS; i++) {
        size_t n = 0;
        int t0 = spec[i].t < 0 ? 0 : spec[i].t, t1 = spec[i].t < 0 ? NT : spec[i].t + 1;
        for (int t = t0; t < t1; t++) {
            if (spec[i].ap) {
                for (int r = 0; r < NR; r++)
                    for (int k = 0; k < K; k++)
                        tmp[n++] = precision[(((size_t)t * NR + r) * K + k) * NA * NM + spec[i].a * NM + spec[i].m];
            } else {
                for (int k = 0; k < K; k++)
                    tmp[n++] = recall[((size_t)t * K + k) * NA * NM + spec[i].a * NM + spec[i].m];
            }
        }
        stats[i] = mean_valid(tmp, n);
    }
    /* per category: the same slices with k fixed (all areas, 100 dets) */
    for (int k = 0; k < K && (cat_ap || cat_ap50); k++) {
        for (int pass = 0; pass < 2; pass++) {
            int nt = pass ? NT : 1;
            size_t n = 0;
            for (int t = 0; t < nt; t++)
                for (int r = 0; r < NR; r++)
                    tmp[n++] = precision[(((size_t)t * NR + r) * K + k) * NA * NM + 0 * NM + 2];
            double v = mean_valid(tmp, n);
            if (pass && cat_ap) cat_ap[k] = v;
            if (!pass && cat_ap50) cat_ap50[k] = v;
        }
    }
    goto done;
nomem:
    st = yq_fail(err, YQ_ERR_NOMEM, "coco eval: out of memory (%d images, %d categories, %d detections)",
                 I, K, n_dets);
done:
    for (int a = 0; a < NA; a++) free(list[a].v);
    free(s.dord); free(s.iou); free(s.gord); free(s.gig); free(s.gtm);
    free(g_start); free(d_start); free(g_items); free(d_items);
    free(rank); free(g_cell); free(d_cell);
    free(precision); free(recall); free(tmp);
    return st;
}

/* ---- results json ---- */

void yq_coco_dets_free(yq_det *dets) { free(dets); }

yq_status yq_coco_dets_load(const char *path, yq_det **out, int *n_out, yq_error *err)
{
    cJSON *root;
    yq_status st = yq_ds_read_json(path, &root, err);
    if (st != YQ_OK) return st;
    if (!cJSON_IsArray(root)) {
        cJSON_Delete(root);
        return yq_fail(err, YQ_ERR_FORMAT, "%s: a results file is a JSON array of detections", path);
    }
    int cnt = cJSON_GetArraySize(root);
    yq_det *d = calloc((size_t)cnt + 1, sizeof *d);
    if (!d) {
        cJSON_Delete(root);
        return yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory for %d detections", path, cnt);
    }
    int i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, root) {
        const cJSON *img = cJSON_GetObjectItemCaseSensitive(it, "image_id");
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(it, "category_id");
        const cJSON *sc = cJSON_GetObjectItemCaseSensitive(it, "score");
        const cJSON *bb = cJSON_GetObjectItemCaseSensitive(it, "bbox");
        int ok = cJSON_IsNumber(img) && cJSON_IsNumber(cat) && cJSON_IsNumber(sc) &&
                 cJSON_IsArray(bb) && cJSON_GetArraySize(bb) == 4 &&
                 img->valuedouble == floor(img->valuedouble) && fabs(img->valuedouble) <= 9007199254740992.0 &&
                 cat->valuedouble == floor(cat->valuedouble) && fabs(cat->valuedouble) <= 2147483647.0 &&
                 isfinite(sc->valuedouble);
        for (int k = 0; ok && k < 4; k++) {
            const cJSON *v = cJSON_GetArrayItem(bb, k);
            ok = cJSON_IsNumber(v) && isfinite(v->valuedouble);
            if (ok) d[i].bbox[k] = v->valuedouble;
        }
        if (!ok) {
            free(d);
            cJSON_Delete(root);
            return yq_fail(err, YQ_ERR_FORMAT,
                           "%s: detection %d: needs integer image_id and category_id, bbox [x,y,w,h], score",
                           path, i);
        }
        d[i].image_id = (int64_t)img->valuedouble;
        d[i].category_id = (int)cat->valuedouble;
        d[i].score = sc->valuedouble;
        i++;
    }
    cJSON_Delete(root);
    *out = d;
    *n_out = i;
    return YQ_OK;
}

/* Shortest of %.15g / %.17g that reads back as the same double. */
static void fmt_num(char *buf, size_t n, double v)
{
    snprintf(buf, n, "%.15g", v);
    if (strtod(buf, NULL) != v) snprintf(buf, n, "%.17g", v);
}

yq_status yq_coco_dets_save(const char *path, const yq_det *dets, int n, yq_error *err)
{
    for (int i = 0; i < n; i++) {
        const yq_det *d = &dets[i];
        if (!isfinite(d->score) || !isfinite(d->bbox[0]) || !isfinite(d->bbox[1]) ||
            !isfinite(d->bbox[2]) || !isfinite(d->bbox[3]))
            return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: detection %d has a non-finite value", path, i);
    }
    yq_outfile o;
    yq_status st = yq_out_begin(&o, path, YQ_OUT_STREAM, err);
    if (st != YQ_OK) return st;
    FILE *f = o.f;
    fputc('[', f);
    for (int i = 0; i < n; i++) {
        const yq_det *d = &dets[i];
        char v[5][32];
        for (int k = 0; k < 4; k++) fmt_num(v[k], sizeof v[k], d->bbox[k]);
        fmt_num(v[4], sizeof v[4], d->score);
        fprintf(f, "%s\n{\"image_id\": %lld, \"category_id\": %d, \"bbox\": [%s, %s, %s, %s], \"score\": %s}",
                i ? "," : "", (long long)d->image_id, d->category_id, v[0], v[1], v[2], v[3], v[4]);
    }
    fputs("\n]\n", f);
    return yq_out_commit(&o, err);
}
