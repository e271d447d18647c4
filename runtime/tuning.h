/* Inside the library: include/yq_tune.h's options as the tuner takes them (runtime/tuning.c),
 * for the other users of the tuner (runtime/bench.c). */
#ifndef YQ_RUNTIME_TUNING_H
#define YQ_RUNTIME_TUNING_H

#include "yq_tune.h"
#include "runtime/tune.h"

/* o checked and turned into the tuner's options (*t; its log_path is o->log, borrowed),
 * the device index (*dev). */
yq_status yq_tuning_options(const yq_tuning_opt *o, yq_tune_opt *t, int *dev, yq_error *err);
/* yq_tuning_batch_sums over the tuner's tasks. */
yq_tuning_sums yq_tune_batch_sums(const yq_tune_task *t, int n, int batch);

#endif
