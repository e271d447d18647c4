/* Calibration: run the FP32 graph over images and record, for every node's
 * output tensor, a histogram of |x| (calib/hist.h) and per-channel means (for
 * bias correction).  Observes through the executor's per-node hook.
 *
 *     yq_calib_stats *cs;
 *     yq_calib_observe(g, paths, n, letterbox, &progress, &cs, &err);
 *     float t = yq_thresh(&cs->hist[id], &method, 8);
 *     yq_calib_stats_free(cs);
 */
#ifndef YQ_CALIB_OBSERVE_H
#define YQ_CALIB_OBSERVE_H

#include "calib/hist.h"

#define YQ_CALIB_BINS 2048

typedef struct yq_calib_stats {
    int n_nodes;
    int images, skipped;     /* images observed; unreadable ones skipped */
    yq_hist *hist;           /* per node */
    double **ch_mean;        /* per node: out.c channel means */
    float **ch_max;          /* per node: out.c channel max |x| */
    uint8_t images_sha256[32];  /* of the sorted list of image file names and sizes */
} yq_calib_stats;

/* Unreadable images are skipped with a warning through warn (may be NULL) and counted in
 * (*out)->skipped; the run fails only when more than half of them (or all) cannot be read. */
yq_status yq_calib_observe(const yq_graph *g, char *const *paths, int n, int letterbox,
                           yq_progress_fn progress, void *pctx, yq_warn_fn warn, void *wctx,
                           yq_calib_stats **out, yq_error *err);
yq_status yq_calib_stats_new(int n_nodes, const yq_graph *g, yq_calib_stats **out, yq_error *err);
void yq_calib_stats_free(yq_calib_stats *cs);
/* sha256 over the file names (without folders) and sizes, in order. */
void yq_calib_list_hash(char *const *paths, int n, uint8_t out[32]);

#endif
