/* Calibration thresholds from a histogram of |x|: max, percentile, KL, MSE.
 *
 * Every method works on the histogram alone (bin k holds [k*w, (k+1)*w), w =
 * range / nbins, values taken as uniform within a bin), and every answer goes
 * through thresh_final: cut to absmax, floored at YQ_THRESH_MIN, never 0/NaN/Inf.
 *
 * KL follows TensorRT's entropy calibration as NVIDIA's pytorch-quantization
 * (the TensorRT toolkit's HistogramCalibrator, method "entropy") implements it,
 * with the number of levels taken from bits instead of fixed at 128:
 *   - the zero bin is replaced by bin 1's count before anything else: a spike of
 *     exact zeros (ReLU) is represented exactly by any scale and would otherwise
 *     dominate the divergence;
 *   - for i = nlevels .. nbins (nlevels = qmax + 1 = 2^(bits-1)): P = bins[0:i]
 *     with the outliers sum(bins[i:]) added to P[i-1]; Q = bins[0:i] merged into
 *     nlevels groups (bin j joins group floor(j * nlevels / i), as np.linspace +
 *     np.digitize spread the remainder), each group's sum shared evenly by its
 *     non-empty bins and zero on its empty ones; KL(P || Q) after normalising both;
 *   - the last i of minimal KL wins and the threshold is its upper edge, i * w
 *     (bin_edges[i] in the toolkit; TVM and MXNet also take the upper edge, not
 *     the (i + 0.5) * w of the GTC 2017 slides).
 * Q is zero where P is not only at P[i-1], when bin i-1 is empty but outliers
 * exist; there Q gets MXNet's smoothing epsilon (1e-4 counts), a large finite
 * divergence rather than scipy's infinity.  MXNet's matching 1e-4 shift of every
 * other bin is left out: it changes no divergence by more than ~1e-4 / count.
 * Because Q is constant over a group's non-empty bins, sum P log Q is one term
 * per group, and sum P log P a prefix sum, so a candidate costs O(nlevels) and
 * the search O(nbins * nlevels) logs.
 *
 * MSE is exact for the histogram: for each candidate edge t = k*w the expected
 * squared error of x -> clamp(round(x/s), 0, qmax) * s, s = t / qmax, is
 * integrated over each bin (uniform within the bin), the rounding part with the
 * closed form of the sawtooth integral, the clipping part (x - t)^2 from suffix
 * sums of the bin moments.  O(nbins^2 / 2) sawtooth terms.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib/hist.h"

#define KL_EPS 1e-4

static const char method_list[] =
    "max, percentile:P (0 < P <= 100, e.g. percentile:99.99), kl (or entropy), mse";

yq_status yq_calib_method_parse(const char *s, yq_calib_method *m, yq_error *err)
{
    if (!m) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_calib_method_parse: NULL method");
    if (!s || !*s)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "empty calibration method; valid: %s", method_list);
    yq_calib_method r = { YQ_CALIB_MAX, 0 };
    if (!strcmp(s, "max")) {
        r.kind = YQ_CALIB_MAX;
    } else if (!strcmp(s, "kl") || !strcmp(s, "entropy")) {
        r.kind = YQ_CALIB_KL;
    } else if (!strcmp(s, "mse")) {
        r.kind = YQ_CALIB_MSE;
    } else if (!strncmp(s, "percentile:", 11)) {
        const char *p = s + 11;
        char *end;
        double v = strtod(p, &end);
        if (end == p || *end || !(v > 0 && v <= 100))
            return yq_fail(err, YQ_ERR_INVALID_ARG,
                           "calibration method '%.64s': P must be a number with 0 < P <= 100; valid: %s",
                           s, method_list);
        r.kind = YQ_CALIB_PERCENTILE;
        r.percentile = v;
    } else {
        return yq_fail(err, YQ_ERR_INVALID_ARG, "unknown calibration method '%.64s'; valid: %s",
                       s, method_list);
    }
    *m = r;
    return YQ_OK;
}

void yq_calib_method_str(const yq_calib_method *m, char *buf, size_t cap)
{
    if (!buf || cap == 0) return;
    if (!m) { snprintf(buf, cap, "?"); return; }
    switch (m->kind) {
    case YQ_CALIB_MAX: snprintf(buf, cap, "max"); return;
    case YQ_CALIB_PERCENTILE:
        /* the shortest text that reads back as the same double (a package stores it) */
        snprintf(buf, cap, "percentile:%.15g", m->percentile);
        if (strtod(buf + 11, NULL) != m->percentile) snprintf(buf, cap, "percentile:%.17g", m->percentile);
        return;
    case YQ_CALIB_KL: snprintf(buf, cap, "kl"); return;
    case YQ_CALIB_MSE: snprintf(buf, cap, "mse"); return;
    }
    snprintf(buf, cap, "?");
}

/* --- the methods: each returns a threshold in data units, or < 0 for "use absmax" */

static double thresh_percentile(const yq_hist *h, double pct)
{
    const double *c = h->counts;
    double total = 0;
    for (int k = 0; k < h->nbins; k++) total += c[k];
    double w = h->range / h->nbins, target = pct / 100 * total, cum = 0;
    for (int k = 0; k < h->nbins; k++) {
        if (c[k] > 0 && cum + c[k] >= target) {
            double f = (target - cum) / c[k];
            return (k + (f > 0 ? f : 0)) * w;
        }
        cum += c[k];
    }
    return -1;
}

static double xlogx(double v) { return v > 0 ? v * log(v) : 0; }

static double thresh_kl(const yq_hist *h, int nlevels)
{
    const int nb = h->nbins;
    if (nb < nlevels || nb < 2) return -1;   /* cannot resolve the levels */
    /* prefix sums over the zero-fixed bins: S counts, Z non-empty bins, L b log b */
    double *S = malloc(3 * ((size_t)nb + 1) * sizeof *S);
    if (!S) return -1;                        /* no memory: fall back to max */
    double *Z = S + nb + 1, *L = Z + nb + 1;
    S[0] = Z[0] = L[0] = 0;
    for (int k = 0; k < nb; k++) {
        double b = k == 0 ? h->counts[1] : h->counts[k];
        S[k + 1] = S[k] + b;
        Z[k + 1] = Z[k] + (b > 0);
        L[k + 1] = L[k] + xlogx(b);
    }
    const double N = S[nb];
    double best = INFINITY;
    int best_i = -1;
    for (int i = nlevels; i <= nb && N > 0; i++) {
        const double QT0 = S[i];              /* Q's mass: bins[0:i], no outliers */
        if (!(QT0 > 0)) continue;             /* Q all zero: no distribution */
        const int lastb = i - 1;
        const double blast = S[i] - S[i - 1], out = N - S[i];
        double sPlogP = L[lastb] + xlogx(blast + out);
        double sPlogQ = 0, QT = QT0;
        /* group g is bins [ceil(g*i/nlevels), ceil((g+1)*i/nlevels)) */
        for (int g = 0, st = 0; g < nlevels; g++) {
            int en = (int)(((long)(g + 1) * i + nlevels - 1) / nlevels);
            double sg = S[en] - S[st];
            if (sg > 0) sPlogQ += sg * log(sg / (Z[en] - Z[st]));
            st = en;
        }
        if (out > 0) {
            double qlast;
            if (blast > 0) {
                int g = (int)((long)lastb * nlevels / i);
                int st = (int)(((long)g * i + nlevels - 1) / nlevels);
                int en = (int)(((long)(g + 1) * i + nlevels - 1) / nlevels);
                qlast = (S[en] - S[st]) / (Z[en] - Z[st]);
            } else {
                qlast = KL_EPS;
                QT += KL_EPS;
            }
            sPlogQ += out * log(qlast);
        }
        /* sum p log(p/q), p = P/N, q = Q/QT */
        double kl = (sPlogP - sPlogQ) / N - log(N) + log(QT);
        if (kl <= best) {                     /* ties: the larger i, as the toolkit */
            best = kl;
            best_i = i;
        }
    }
    free(S);
    return best_i < 0 ? -1 : best_i * (h->range / nb);
}

/* integral from 0 to x of (y - s*round(y/s))^2 dy, x >= 0 */
static double saw_int(double x, double s)
{
    double k = floor(x / s + 0.5), v = x - k * s;
    return k * s * s * s / 12 + v * v * v / 3;
}

static int clamp_bits(int bits) { return bits < 2 ? 2 : bits > 16 ? 16 : bits; }

double yq_hist_mse(const yq_hist *h, double t, int bits)
{
    if (!h || !h->counts || !(h->range > 0) || !(t > 0)) return 0;
    int qmax = (1 << (clamp_bits(bits) - 1)) - 1;
    double w = h->range / h->nbins, s = t / qmax, e = 0, n = 0;
    for (int k = 0; k < h->nbins; k++) {
        double c = h->counts[k];
        if (c == 0) continue;
        double a = k * w, b = a + w, sum = 0;
        if (a < t) sum += saw_int(fmin(b, t), s) - saw_int(a, s);
        if (b > t) {
            double lo = fmax(a, t) - t, hi = b - t;
            sum += (hi * hi * hi - lo * lo * lo) / 3;
        }
        e += c * sum / w;
        n += c;
    }
    return n > 0 ? e / n : 0;
}

static double thresh_mse(const yq_hist *h, int qmax)
{
    const int nb = h->nbins;
    const double *c = h->counts, w = h->range / nb;
    int kmax = 0;                             /* one past the last non-empty bin */
    for (int k = 0; k < nb; k++) if (c[k] > 0) kmax = k + 1;
    if (kmax == 0) return -1;
    /* suffix moments of the bins from k up: counts, sum of x, sum of x^2 */
    double *M = malloc(3 * ((size_t)nb + 1) * sizeof *M);
    if (!M) return -1;
    double *M1 = M + nb + 1, *M2 = M1 + nb + 1;
    M[nb] = M1[nb] = M2[nb] = 0;
    for (int k = nb - 1; k >= 0; k--) {
        double m = (k + 0.5) * w;
        M[k] = M[k + 1] + c[k];
        M1[k] = M1[k + 1] + c[k] * m;
        M2[k] = M2[k + 1] + c[k] * (m * m + w * w / 12);
    }
    double best = INFINITY;
    int best_k = kmax;
    for (int k = 1; k <= kmax; k++) {
        double t = k * w, s = t / qmax;
        double clip = M2[k] - 2 * t * M1[k] + t * t * M[k];
        double round_err = 0, f0 = 0;         /* saw_int(0) = 0 */
        for (int j = 0; j < k; j++) {
            double f1 = saw_int((j + 1) * w, s);
            round_err += c[j] * (f1 - f0);
            f0 = f1;
        }
        double e = round_err / w + (clip > 0 ? clip : 0);
        if (e < best) {
            best = e;
            best_k = k;
        }
    }
    free(M);
    return best_k * w;
}

/* Cut to absmax (nothing lies beyond it), floor at YQ_THRESH_MIN; a method
 * without an answer (< 0, NaN) gives absmax. */
static float thresh_final(const yq_hist *h, double t)
{
    double amax = h->absmax;
    if (!(t > 0) || !(t < amax)) t = amax;    /* also catches NaN and Inf */
    if (!(t >= (double)YQ_THRESH_MIN)) t = (double)YQ_THRESH_MIN;
    return (float)t;
}

float yq_thresh(const yq_hist *h, const yq_calib_method *m, int bits)
{
    if (!h || !h->counts || !(h->n > 0) || !(h->range > 0) || !(h->absmax > 0) ||
        !isfinite(h->absmax))
        return YQ_THRESH_MIN;                 /* empty or all zero: any scale maps 0 to 0 */
    int qmax = (1 << (clamp_bits(bits) - 1)) - 1;
    double t = -1;
    switch (m ? m->kind : YQ_CALIB_MAX) {
    case YQ_CALIB_MAX: t = h->absmax; break;
    case YQ_CALIB_PERCENTILE: t = thresh_percentile(h, m->percentile); break;
    case YQ_CALIB_KL: t = thresh_kl(h, qmax + 1); break;
    case YQ_CALIB_MSE: t = thresh_mse(h, qmax); break;
    }
    return thresh_final(h, t);
}
