/* datasets/chart: the charts of the sweep and sensitivity reports, drawn on a yq_canvas
 * with anti-aliased shapes and text (datasets/paint.c: cairo), written by libpng.  The
 * API is public: include/yq_draw.h. */
#ifndef YQ_DATASETS_CHART_H
#define YQ_DATASETS_CHART_H

#include "include/yq_draw.h"

#endif
