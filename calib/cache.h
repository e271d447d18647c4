/* Calibration cache: the statistics of a calibration run (calib/observe.h) kept
 * in an HDF5 file, so that another calibration method, bit width or qconfig on
 * the same model and images does not run the FP32 model again.
 *
 *     uint8_t key[32];
 *     yq_calib_list_hash(paths, n, list_sha);              // no image decoded
 *     yq_calib_key(g, list_sha, letterbox, 0, key);
 *     if (yq_calib_cache_load(path, key, g, &cs, &err) != YQ_OK) ...  // damaged file
 *     if (!cs) {                                           // a miss
 *         yq_calib_observe(g, paths, n, letterbox, NULL, NULL, &cs, &err);
 *         yq_calib_cache_store(path, key, g, cs, &err);
 *     }
 *
 * The key covers everything the statistics depend on: the graph (model hash, the
 * current float weights and biases of every conv, so an equalized graph differs
 * from the one loaded; node ops and shapes, so the input size counts), the image
 * list, the preprocessing and a caller's stage number (0: raw, 1: after
 * equalization).  A loaded entry is bit-identical to the stored one, so
 * whatever is computed from it (equalization, thresholds) is as well.
 *
 * File layout (format "yquant-calib-cache", version YQ_CALIB_CACHE_VERSION):
 *   /                     attributes format (string), version (int)
 *   /<key, 64 hex>/       one group per entry; attributes key (hex), n_nodes,
 *                         nbins, images, skipped (int), images_sha256 (hex),
 *                         created (UTC, ISO 8601)
 *     counts    f64 [n_nodes][nbins]   histogram bins (calib/hist.h)
 *     range, n, n_nan, n_inf           f64 [n_nodes]
 *     absmax, min, max                 f32 [n_nodes]
 *     channels  i32 [n_nodes]          output channels per node
 *     ch_mean   f64 [sum channels]     per node, concatenated in node order
 *     ch_max    f32 [sum channels]
 * Datasets are chunked with a Fletcher-32 checksum (and shuffle + deflate where
 * the library has them), so a damaged chunk fails to read instead of loading
 * wrong numbers.
 */
#ifndef YQ_CALIB_CACHE_H
#define YQ_CALIB_CACHE_H

#include "calib/observe.h"

#define YQ_CALIB_CACHE_FORMAT  "yquant-calib-cache"
#define YQ_CALIB_CACHE_VERSION 1

/* sha256 over (graph identity, image list hash, letterbox (as it runs: none, darknet's or
 * Ultralytics'), stage).  The graph
 * identity is g->model_sha256, every conv's current w and b, and every node's op
 * and output shape (nodes[0].out is the input size). */
void yq_calib_key(const yq_graph *g, const uint8_t images_sha256[32], int letterbox, int stage,
                  uint8_t key[32]);

/* Looks key up in the cache at path.  YQ_OK with *out NULL is a miss: no file, or
 * no entry for key.  YQ_OK with *out set is a hit: the statistics as stored
 * (owned by the caller; yq_calib_stats_free).  An error means the file is not a
 * cache (not HDF5, no format attribute, another version) or is damaged (cannot
 * be opened or read; an entry that does not fit g, whose key matched). */
yq_status yq_calib_cache_load(const char *path, const uint8_t key[32], const yq_graph *g,
                              yq_calib_stats **out, yq_error *err);

/* Adds the entry for key, replacing one with the same key.  g supplies the
 * channel counts (yq_calib_stats does not record them); cs must have been made
 * for g.  Atomic: the new file is written as path.tmp (the other entries copied
 * over) and renamed onto path, so a failure leaves path as it was.  A file at
 * path that is not a cache is an error and is not overwritten. */
yq_status yq_calib_cache_store(const char *path, const uint8_t key[32], const yq_graph *g,
                               const yq_calib_stats *cs, yq_error *err);

#endif
