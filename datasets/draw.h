/* datasets/draw: boxes and labels on an RGB8 canvas, written out as PNG.  The API is
 * public: include/yq_draw.h. */
#ifndef YQ_DATASETS_DRAW_H
#define YQ_DATASETS_DRAW_H

#include "include/yq_draw.h"

#endif
