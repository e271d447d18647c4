/* coco_eval_tool: runs datasets/coco_eval on files, for tests/coco_eval_test.py.
 *
 *   coco_eval_tool [-x] instances.json results.json
 *
 * Prints the 12 COCOeval stats, one per line: %.6f, or with -x %.17g (every bit, to
 * measure the distance to pycocotools). */
#include <stdio.h>
#include <string.h>

#include "datasets/coco_eval.h"

int main(int argc, char **argv)
{
    int exact = argc > 1 && strcmp(argv[1], "-x") == 0;
    if (argc != 3 + exact) {
        fprintf(stderr, "usage: %s [-x] instances.json results.json\n", argv[0]);
        return 2;
    }
    yq_error err;
    yq_dataset *gt;
    yq_det *dets;
    int n;
    double s[YQ_COCO_NSTATS];
    if (yq_dataset_load_coco(argv[1 + exact], NULL, &gt, &err) != YQ_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    if (yq_coco_dets_load(argv[2 + exact], &dets, &n, &err) != YQ_OK ||
        yq_coco_eval(gt, dets, n, s, NULL, NULL, &err) != YQ_OK) {
        fprintf(stderr, "%s\n", err.msg);
        yq_dataset_free(gt);
        return 1;
    }
    for (int i = 0; i < YQ_COCO_NSTATS; i++) printf(exact ? "%.17g\n" : "%.6f\n", s[i]);
    yq_coco_dets_free(dets);
    yq_dataset_free(gt);
    return 0;
}
