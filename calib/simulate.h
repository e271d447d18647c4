/* Simulated int8 for searches that need many runs: the FP32 CPU engine runs an int8
 * graph's numbers, the int8 convs with their dequantized weights and biases, and every
 * tensor the int8 graph holds in int8 is rounded to its grid (round, saturate) in place
 * as soon as it is computed.  It differs from the exact engine (runtime/exec_int8.c) by
 * float accumulation and the fixed-point requantize: a fraction of one int8 step, far
 * below the rounding it models, at the cost of a float run (about ten times faster than
 * the int8 reference).  A float tensor read by int8 and float consumers alike is left
 * unrounded (the exact engine rounds it for the int8 readers only).
 *
 * It measures the error at the heads (calib/compare.h, yq_head_err) against the FP32
 * outputs for a fixed set of images, and each rounding can be switched and rescaled, so
 * a search can ask "this tensor alone at this scale" without a rewrite.
 *
 *     yq_sim *s;
 *     yq_sim_new(g, inputs, n, &s, &err);   // g an int8 graph; the FP32 heads are computed once
 *     yq_head_err e;
 *     yq_sim_run(s, &e, &err);              // the int8 graph as it is
 *     yq_sim_round(s, id, 0);               // node id's output left in float
 *     yq_sim_set_scale(s, id, 0.5f * g->q[id].scale);
 *     yq_sim_sync(s, g2, &err);             // a new rewrite g2 of the same FP32 graph from here on
 *     yq_sim_free(s);
 *
 * yq_sim_run points the int8 convs' w and b at the dequantized copies while it runs and
 * restores them before it returns: g must not be used by anything else meanwhile. */
#ifndef YQ_CALIB_SIMULATE_H
#define YQ_CALIB_SIMULATE_H

#include "calib/compare.h"

typedef struct yq_sim yq_sim;

/* inputs: n network inputs (C x H x W floats each), borrowed until yq_sim_free. */
yq_status yq_sim_new(yq_graph *g, const float *inputs, int n, yq_sim **out, yq_error *err);
void yq_sim_free(yq_sim *s);                          /* NULL is a no-op */
/* Roundings, scales and dequantized weights from g->q as it is now; g: the graph s was made
 * on, or another rewrite of the same FP32 graph (yq_rewrite), which s simulates from then
 * on (the one before may then be freed). */
yq_status yq_sim_sync(yq_sim *s, yq_graph *g, yq_error *err);
int   yq_sim_rounds(const yq_sim *s, int id);         /* node id's output is rounded */
void  yq_sim_round(yq_sim *s, int id, int on);        /* on: only where the int8 graph rounds */
float yq_sim_scale(const yq_sim *s, int id);
void  yq_sim_set_scale(yq_sim *s, int id, float scale);
/* on (default): the int8 convs run their quantized weights; off: their float weights. */
void  yq_sim_weights(yq_sim *s, int on);
/* Runs the images; *e receives the error at the heads against FP32. */
yq_status yq_sim_run(yq_sim *s, yq_head_err *e, yq_error *err);
/* m runs at once: set(ctx, j) sets run j's roundings and scales, e[j] receives its error;
 * the same results as m calls of yq_sim_run.  With the weights off (yq_sim_weights(s, 0))
 * every node before a run's first rounded node holds the FP32 run's values, so those
 * nodes run once per batch of images and each run starts from a copy of the activations
 * there (one more plan's worth of memory): for one rounded tensor at a time, about half
 * the work. */
yq_status yq_sim_run_many(yq_sim *s, int m, void (*set)(void *ctx, int j), void *ctx, yq_head_err *e, yq_error *err);

#endif
