/* datasets/bootstrap: the paired bootstrap of an mAP difference.  The API is public:
 * include/yq_data.h. */
#ifndef YQ_DATASETS_BOOTSTRAP_H
#define YQ_DATASETS_BOOTSTRAP_H

#include "include/yq_data.h"

#endif
