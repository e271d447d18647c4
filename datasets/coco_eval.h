/* datasets/coco_eval: COCO bbox mAP, computed as pycocotools' COCOeval computes it.  The
 * API is public: include/yq_data.h.  tests/coco_eval_test.py compares all 12 numbers with
 * pycocotools on real annotations. */
#ifndef YQ_DATASETS_COCO_EVAL_H
#define YQ_DATASETS_COCO_EVAL_H

#include "include/yq_data.h"

#endif
