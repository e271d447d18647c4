/* datasets/labels: a labelled image set (images + ground-truth boxes) from COCO json or YOLO
 * txt.  The API is public: include/yq_data.h. */
#ifndef YQ_DATASETS_LABELS_H
#define YQ_DATASETS_LABELS_H

#include "include/yq_data.h"

#endif
