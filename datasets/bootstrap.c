#include <stdlib.h>
#include <string.h>
#include "datasets/bootstrap.h"
#include "ir/ir.h"

/* Detections grouped by image index of ds. */
typedef struct by_image { int *start, *count; yq_det *sorted; } by_image;

static int cmp_det_image(const void *x, const void *y)
{
    const yq_det *a = x, *b = y;
    return (a->image_id > b->image_id) - (a->image_id < b->image_id);
}

static yq_status group(const yq_dataset *ds, const yq_det *d, int n, by_image *g, yq_error *err)
{
    g->start = calloc((size_t)ds->n_images + 1, sizeof *g->start);
    g->count = calloc((size_t)ds->n_images + 1, sizeof *g->count);
    g->sorted = malloc(sizeof *d * ((size_t)n + 1));
    if (!g->start || !g->count || !g->sorted) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    memcpy(g->sorted, d, sizeof *d * (size_t)n);
    qsort(g->sorted, (size_t)n, sizeof *d, cmp_det_image);   /* order within an image kept? scores decide */
    for (int i = 0; i < n; i++) {
        int im = yq_dataset_find_image(ds, g->sorted[i].image_id);
        if (im < 0) return yq_fail(err, YQ_ERR_INVALID_ARG, "detection for unknown image id %lld", (long long)g->sorted[i].image_id);
        if (!g->count[im]) g->start[im] = i;
        g->count[im]++;
    }
    return YQ_OK;
}

static void group_free(by_image *g)
{
    free(g->start);
    free(g->count);
    free(g->sorted);
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The detections of the picked images, renumbered to the picked dataset's ids. */
static int gather(const by_image *g, const int *pick, int n, yq_det *out)
{
    int m = 0;
    for (int k = 0; k < n; k++)
        for (int j = 0; j < g->count[pick[k]]; j++) {
            out[m] = g->sorted[g->start[pick[k]] + j];
            out[m++].image_id = k + 1;
        }
    return m;
}

yq_status yq_bootstrap_drop(const yq_dataset *ds, const yq_det *a, int na, const yq_det *b, int nb,
                            int resamples, uint64_t seed, double ci[2][2], yq_error *err)
{
    int n = ds->n_images;
    by_image ga = { 0 }, gb = { 0 };
    int *pick = malloc(sizeof *pick * ((size_t)n + 1));
    yq_ds_pick *pk = malloc(sizeof *pk * ((size_t)n + 1));
    yq_det *da = malloc(sizeof *da * ((size_t)na * 2 + 1)), *db = malloc(sizeof *db * ((size_t)nb * 2 + 1));
    double *dmap = malloc(sizeof *dmap * ((size_t)resamples + 1)), *dmap50 = malloc(sizeof *dmap50 * ((size_t)resamples + 1));
    yq_status st = YQ_OK;
    if (!pick || !pk || !da || !db || !dmap || !dmap50) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    if (st == YQ_OK) st = group(ds, a, na, &ga, err);
    if (st == YQ_OK) st = group(ds, b, nb, &gb, err);
    yq_dataset *const parts[1] = { (yq_dataset *)ds };
    for (int r = 0; r < resamples && st == YQ_OK; r++) {
        int ma = 0, mb = 0;
        for (int k = 0; k < n; k++) {
            pick[k] = (int)(next(&seed) % (uint64_t)n);
            pk[k] = (yq_ds_pick){ 0, pick[k] };
            ma += ga.count[pick[k]];
            mb += gb.count[pick[k]];
        }
        if (ma > 2 * na || mb > 2 * nb) {   /* rare: grow the buffers */
            yq_det *x = realloc(da, sizeof *da * (size_t)ma + 1), *y = realloc(db, sizeof *db * (size_t)mb + 1);
            if (x) da = x;
            if (y) db = y;
            if (!x || !y) { st = yq_fail(err, YQ_ERR_NOMEM, "out of memory"); break; }
        }
        yq_dataset *rs;
        if ((st = yq_dataset_pick(parts, pk, n, &rs, err)) != YQ_OK) break;
        double sa[YQ_COCO_NSTATS], sb[YQ_COCO_NSTATS];
        int ka = gather(&ga, pick, n, da), kb = gather(&gb, pick, n, db);
        st = yq_coco_eval(rs, da, ka, sa, NULL, NULL, err);
        if (st == YQ_OK) st = yq_coco_eval(rs, db, kb, sb, NULL, NULL, err);
        yq_dataset_free(rs);
        dmap[r] = sa[YQ_COCO_AP] - sb[YQ_COCO_AP];
        dmap50[r] = sa[YQ_COCO_AP50] - sb[YQ_COCO_AP50];
    }
    if (st == YQ_OK) {
        qsort(dmap, (size_t)resamples, sizeof *dmap, cmp_double);
        qsort(dmap50, (size_t)resamples, sizeof *dmap50, cmp_double);
        int lo = (int)(0.025 * resamples), hi = (int)(0.975 * resamples);
        if (hi >= resamples) hi = resamples - 1;
        ci[0][0] = dmap[lo];
        ci[0][1] = dmap[hi];
        ci[1][0] = dmap50[lo];
        ci[1][1] = dmap50[hi];
    }
    group_free(&ga);
    group_free(&gb);
    free(pick);
    free(pk);
    free(da);
    free(db);
    free(dmap);
    free(dmap50);
    return st;
}
