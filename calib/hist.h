/* Activation histograms and the thresholds computed from them.
 *
 *     yq_hist h;
 *     yq_hist_init(&h, 2048);
 *     yq_hist_add(&h, data, n);            // over every calibration batch
 *     float t = yq_thresh(&h, &method, 8); // then scale = t / 127
 *     yq_hist_free(&h);
 *
 * The histogram is of |x| over [0, range): bins of width range / nbins.  When a
 * value at or beyond range arrives, range doubles and pairs of bins merge, so no
 * first pass for the maximum is needed and counts are never re-binned lossily
 * beyond a factor of two per doubling.
 */
#ifndef YQ_CALIB_HIST_H
#define YQ_CALIB_HIST_H

#include "ir/ir.h"

typedef struct yq_hist {
    int nbins;
    double range;        /* upper edge of the last bin; 0 until the first non-zero value */
    double *counts;      /* nbins */
    double n;            /* values seen (zeros included, in bin 0) */
    float absmax, min, max;
} yq_hist;

yq_status yq_hist_init(yq_hist *h, int nbins, yq_error *err);
void yq_hist_free(yq_hist *h);
void yq_hist_add(yq_hist *h, const float *x, long n);
/* Adds another histogram (e.g. from a second worker) into h. */
void yq_hist_merge(yq_hist *h, const yq_hist *o);

typedef enum yq_calib_kind { YQ_CALIB_MAX = 0, YQ_CALIB_PERCENTILE, YQ_CALIB_KL, YQ_CALIB_MSE } yq_calib_kind;
typedef struct yq_calib_method { yq_calib_kind kind; double percentile; } yq_calib_method;

/* "max", "percentile:99.99", "kl", "mse" */
yq_status yq_calib_method_parse(const char *s, yq_calib_method *m, yq_error *err);
void yq_calib_method_str(const yq_calib_method *m, char *buf, size_t cap);

/* The clipping threshold for a symmetric quantizer with qmax = 2^(bits-1) - 1.
 * Never 0 or non-finite: an all-zero tensor gets a small positive threshold. */
float yq_thresh(const yq_hist *h, const yq_calib_method *m, int bits);

#endif
