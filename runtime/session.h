/* Internal side of the public model/session API (include/yq.h), for the programs in
 * this repository: wrap a graph built in process (the CLI's --weights/--size/--bn,
 * or a graph quantized with --calib) as a model, and reach the graph of a model.
 *
 *     yq_model *m;
 *     yq_model_borrow(g, g->letter_box, &m, &err);   // g stays the caller's
 *     yq_session_new(m, "cuda:0", 8, &s, &err);
 *     ...
 *     yq_session_free(s); yq_model_free(m); yq_graph_free(g);
 */
#ifndef YQ_SESSION_H
#define YQ_SESSION_H

#include "ir/ir.h"
#include "runtime/package.h"

/* A model over a graph the caller keeps (and frees after yq_model_free).  letterbox:
 * the preprocessing a session uses by default. */
yq_status yq_model_borrow(const yq_graph *g, int letterbox, yq_model **out, yq_error *err);
const yq_graph *yq_model_graph(const yq_model *m);
const yq_package_info *yq_model_info(const yq_model *m);    /* NULL unless opened from a .yqp */

const yq_model *yq_session_model(const yq_session *s);

/* Convs of a cuda session that run a package's tuned kernel choice (0 on cpu). */
int yq_session_tuned_convs(const yq_session *s);

/* The sm a package's /tuning record names ("sm": "sm_90", "sm": 90, "arch": "sm_86",
 * "compute_capability": "8.6"), as major*10+minor; 0 when it names none. */
int yq_tuning_sm(const char *tuning_json);

#endif
