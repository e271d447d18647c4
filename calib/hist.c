/* Histogram of |x| with a doubling power-of-two range (see calib/hist.h).
 *
 * yq_hist_add is on the calibration hot path (every activation of every image).
 * Per value the work is a compare, a multiply, an increment and a min/max; all
 * that is unusual (the first non-zero value, a value past the range, NaN, Inf)
 * leaves the loop through the one compare `a < lim`.  Values go four at a time
 * into four copies of the counts ("lanes"): a run of values in one bin (the zeros
 * after a ReLU) would otherwise chain every increment on the previous one's
 * store.  The lanes are folded into counts before each doubling and at the end
 * of every call, so outside yq_hist_add counts is the whole histogram.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calib/hist.h"

#define HIST_MAX_BINS (1 << 24)
#define HIST_LANES 3              /* besides counts itself */

yq_status yq_hist_init(yq_hist *h, int nbins, yq_error *err)
{
    if (!h) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_hist_init: NULL histogram");
    memset(h, 0, sizeof *h);
    if (nbins < 2 || nbins > HIST_MAX_BINS || nbins % 2)
        return yq_fail(err, YQ_ERR_INVALID_ARG,
                       "histogram bins %d: must be even and in [2, %d] (2048 is usual)",
                       nbins, HIST_MAX_BINS);
    h->counts = calloc((size_t)nbins * (1 + HIST_LANES), sizeof *h->counts);
    if (!h->counts)
        return yq_fail(err, YQ_ERR_NOMEM, "histogram of %d bins: out of memory", nbins);
    h->lanes = h->counts + nbins;
    h->nbins = nbins;
    return YQ_OK;
}

void yq_hist_free(yq_hist *h)
{
    if (!h) return;
    free(h->counts);
    memset(h, 0, sizeof *h);
}

static void hist_fold(yq_hist *h)
{
    for (int l = 0; l < HIST_LANES; l++) {
        double *c = h->lanes + (size_t)l * h->nbins;
        for (int k = 0; k < h->nbins; k++) {
            h->counts[k] += c[k];
            c[k] = 0;
        }
    }
}

/* Raise the range by 2^m: old bin k lands in bin k >> m, which is exactly where
 * binning at the new range puts every value of bin k (widths are powers of two
 * apart).  Targets are below k, so one ascending in-place pass suffices. */
static void hist_double(yq_hist *h, int m)
{
    if (m <= 0) return;
    hist_fold(h);
    double *c = h->counts;
    if (m > 30) m = 30;                       /* nbins <= 2^24: everything in bin 0 */
    for (int k = 1; k < h->nbins; k++) {
        double v = c[k];
        if (v == 0) continue;
        c[k] = 0;
        c[k >> m] += v;
    }
}

/* Make a < range (a > 0 finite). */
static void hist_grow(yq_hist *h, double a)
{
    if (h->range == 0) {                      /* counts hold only zeros, all in bin 0 */
        int e;
        frexp(a, &e);                         /* 2^(e-1) <= a < 2^e */
        h->range = ldexp(1.0, e);
        return;
    }
    int m = 0;
    double r = h->range;
    while (a >= r) { r *= 2; m++; }
    h->range = r;
    hist_double(h, m);
}

/* The fast path's bounds: a < lim is "binnable now"; with no range yet only an
 * exact zero is (inv_w = 0 sends it to bin 0). */
static void hist_lim(const yq_hist *h, double *lim, double *inv_w)
{
    if (h->range > 0) {
        *lim = h->range;
        *inv_w = h->nbins / h->range;
    } else {
        *lim = DBL_TRUE_MIN;
        *inv_w = 0;
    }
}

/* One value the general way, straight into counts.  Returns 1 if ignored. */
static int hist_one(yq_hist *h, float v, float *lo, float *hi)
{
    double a = fabs((double)v);
    if (isnan(a)) { h->n_nan++; return 1; }
    if (isinf(a)) { h->n_inf++; return 1; }
    if (!(a < h->range) && a > 0) hist_grow(h, a);
    long b = h->range > 0 ? (long)(a * (h->nbins / h->range)) : 0;
    if (b > h->nbins - 1) b = h->nbins - 1;
    h->counts[b] += 1;
    if (v < *lo) *lo = v;
    if (v > *hi) *hi = v;
    return 0;
}

void yq_hist_add(yq_hist *h, const float *x, long n)
{
    if (!h || !h->counts || !x || n <= 0) return;
    const long last = h->nbins - 1;
    /* A short call would spend more folding the lanes than it saves. */
    int use_lanes = n >= 8L * h->nbins;
    double *c0 = h->counts;
    double *c1 = use_lanes ? h->lanes : c0;
    double *c2 = use_lanes ? h->lanes + h->nbins : c0;
    double *c3 = use_lanes ? h->lanes + 2L * h->nbins : c0;
    double lim, inv_w;
    hist_lim(h, &lim, &inv_w);
    float lo0 = INFINITY, lo1 = INFINITY, hi0 = -INFINITY, hi1 = -INFINITY;
    long skipped = 0, i = 0;
    for (; i + 4 <= n; i += 4) {
        float v0 = x[i], v1 = x[i + 1], v2 = x[i + 2], v3 = x[i + 3];
        double a0 = fabs((double)v0), a1 = fabs((double)v1);
        double a2 = fabs((double)v2), a3 = fabs((double)v3);
        if ((a0 < lim) & (a1 < lim) & (a2 < lim) & (a3 < lim)) {   /* one branch, NaN fails it */
            long b0 = (long)(a0 * inv_w), b1 = (long)(a1 * inv_w);
            long b2 = (long)(a2 * inv_w), b3 = (long)(a3 * inv_w);
            /* a < range, so only rounding (nbins not a power of two) can reach nbins */
            b0 = b0 > last ? last : b0;
            b1 = b1 > last ? last : b1;
            b2 = b2 > last ? last : b2;
            b3 = b3 > last ? last : b3;
            c0[b0] += 1;
            c1[b1] += 1;
            c2[b2] += 1;
            c3[b3] += 1;
            lo0 = v0 < lo0 ? v0 : lo0;
            lo1 = v1 < lo1 ? v1 : lo1;
            hi0 = v0 > hi0 ? v0 : hi0;
            hi1 = v1 > hi1 ? v1 : hi1;
            lo0 = v2 < lo0 ? v2 : lo0;
            lo1 = v3 < lo1 ? v3 : lo1;
            hi0 = v2 > hi0 ? v2 : hi0;
            hi1 = v3 > hi1 ? v3 : hi1;
        } else {
            for (int k = 0; k < 4; k++) skipped += hist_one(h, x[i + k], &lo0, &hi0);
            hist_lim(h, &lim, &inv_w);
        }
    }
    for (; i < n; i++) skipped += hist_one(h, x[i], &lo0, &hi0);
    if (use_lanes) hist_fold(h);
    if (n == skipped) return;
    float lo = fminf(lo0, lo1), hi = fmaxf(hi0, hi1);
    if (h->n == 0) {
        h->min = lo;
        h->max = hi;
    } else {
        if (lo < h->min) h->min = lo;
        if (hi > h->max) h->max = hi;
    }
    h->absmax = fmaxf(fabsf(h->min), fabsf(h->max));
    h->n += (double)(n - skipped);
}

/* o's counts spread over h's bins by overlap; h->range >= o->range > 0. */
static void hist_spread(yq_hist *h, const yq_hist *o)
{
    double wo = o->range / o->nbins, wh = h->range / h->nbins;
    for (int k = 0; k < o->nbins; k++) {
        double v = o->counts[k];
        if (v == 0) continue;
        double a = k * wo, b = a + wo;
        int j = (int)(a / wh);
        if (j > h->nbins - 1) j = h->nbins - 1;
        /* j rises every step and the last bin takes the rest, so this ends */
        for (; a < b; j++) {
            double e = j == h->nbins - 1 ? b : fmax(a, fmin((j + 1) * wh, b));
            h->counts[j] += v * (e - a) / wo;
            a = e;
        }
    }
}

void yq_hist_merge(yq_hist *h, const yq_hist *o)
{
    if (!h || !h->counts || !o || !o->counts || h == o) {
        if (h && h == o && h->counts) {       /* merging with itself: double every count */
            for (int k = 0; k < h->nbins; k++) h->counts[k] *= 2;
            h->n *= 2; h->n_nan *= 2; h->n_inf *= 2;
        }
        return;
    }
    h->n_nan += o->n_nan;
    h->n_inf += o->n_inf;
    if (!(o->n > 0)) return;
    if (o->range > h->range) hist_grow(h, o->range / 2);  /* ranges are powers of two */
    if (o->range == 0) {
        h->counts[0] += o->counts[0];
    } else if (o->nbins == h->nbins) {
        int eh, eo;
        frexp(h->range, &eh);
        frexp(o->range, &eo);
        int m = eh - eo;
        if (m > 30) m = 30;
        for (int k = 0; k < o->nbins; k++) h->counts[k >> m] += o->counts[k];
    } else {
        hist_spread(h, o);
    }
    if (h->n == 0) {
        h->min = o->min;
        h->max = o->max;
    } else {
        if (o->min < h->min) h->min = o->min;
        if (o->max > h->max) h->max = o->max;
    }
    h->absmax = fmaxf(fabsf(h->min), fabsf(h->max));
    h->n += o->n;
}
