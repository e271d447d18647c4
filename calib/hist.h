/* Activation histograms and the thresholds computed from them.
 *
 *     yq_hist h;
 *     if (yq_hist_init(&h, 2048, &err) != YQ_OK) ...
 *     yq_hist_add(&h, data, n);            // over every calibration batch
 *     float t = yq_thresh(&h, &method, 8); // then scale = t / 127
 *     yq_hist_free(&h);
 *
 * The histogram is of |x| over [0, range): bins of width range / nbins.  range is
 * a power of two; when a value at or beyond range arrives, range doubles and
 * pairs of bins merge, so no first pass for the maximum is needed.  Merging a
 * pair is exactly what binning at the doubled range would have given (the scale
 * changes by an exact power of two), so the final histogram depends only on the
 * multiset of values: not on their order, the batching, or how workers'
 * histograms (of equal nbins) were merged.  The cost is resolution: the data's
 * maximum lies in the upper half of the range, so the data span between nbins/2
 * and nbins bins.  (KL's smallest candidate is nlevels bins, so at 2048 bins and
 * 8 bits its threshold is at least absmax/16 .. absmax/8: far outliers call for
 * more bins.)
 *
 * NaN and +-Inf are not binned; they are counted in n_nan and n_inf.
 */
#ifndef YQ_CALIB_HIST_H
#define YQ_CALIB_HIST_H

#include "ir/ir.h"

typedef struct yq_hist {
    int nbins;           /* even, in [2, 2^24] */
    double range;        /* upper edge of the last bin; 0 until the first non-zero value */
    double *counts;      /* nbins; owned, freed by yq_hist_free */
    double *lanes;       /* 3 x nbins, inside counts' allocation: yq_hist_add counts into
                            four interleaved copies; all zero between calls */
    double n;            /* finite values seen (zeros included, in bin 0) = sum of counts */
    double n_nan, n_inf; /* values ignored */
    float absmax, min, max;  /* over the finite values; 0 while n == 0 */
} yq_hist;

/* nbins: even, in [2, 2^24].  On failure h is left empty (yq_hist_free is safe). */
yq_status yq_hist_init(yq_hist *h, int nbins, yq_error *err);
void yq_hist_free(yq_hist *h);                       /* NULL or freed: a no-op */
void yq_hist_add(yq_hist *h, const float *x, long n);
/* Adds another histogram (e.g. from a second worker) into h.  With equal nbins
 * the result is exact; with different nbins, o's counts are spread over h's bins
 * in proportion to overlap (uniform within a bin). */
void yq_hist_merge(yq_hist *h, const yq_hist *o);

typedef enum yq_calib_kind { YQ_CALIB_MAX = 0, YQ_CALIB_PERCENTILE, YQ_CALIB_KL, YQ_CALIB_MSE } yq_calib_kind;
typedef struct yq_calib_method { yq_calib_kind kind; double percentile; } yq_calib_method;

/* "max", "percentile:P" (0 < P <= 100), "kl" (or "entropy"), "mse" */
yq_status yq_calib_method_parse(const char *s, yq_calib_method *m, yq_error *err);
void yq_calib_method_str(const yq_calib_method *m, char *buf, size_t cap);

/* The smallest threshold yq_thresh returns: for an empty or all-zero histogram
 * (every value quantizes to 0 at any scale, so only finiteness matters), and as
 * a floor for tensors whose values are all below it. */
#define YQ_THRESH_MIN 1e-6f

/* The clipping threshold for a symmetric quantizer with qmax = 2^(bits-1) - 1
 * (bits is clamped to [2, 16]).  Always finite, in [YQ_THRESH_MIN,
 * max(absmax, YQ_THRESH_MIN)]: a method's answer beyond absmax is cut to absmax.
 *   max          absmax
 *   percentile:P the |x| below which P% of the values lie (linear within a bin)
 *   kl           TensorRT's entropy calibration (see calib/methods.c)
 *   mse          the bin edge t minimising the expected squared error of the
 *                quantize-dequantize round trip (rounding below t, clipping above) */
float yq_thresh(const yq_hist *h, const yq_calib_method *m, int bits);

/* The mean squared error per value of quantizing h's values with threshold t at
 * bits (the quantity mse minimises; values uniform within a bin).  0 when empty. */
double yq_hist_mse(const yq_hist *h, double t, int bits);

#endif
