/* Quantize a model and validate it through the public API: calibrate on a folder of
 * images, measure COCO mAP of FP32 and of int8 on a labelled set (on the CPU), write the
 * int8 package, and run it.
 *
 *     make examples
 *     build/examples/quantize MODEL_DIR CALIB_DIR VAL_DIR VAL.json OUT.yqp [key=value ...]
 *
 * (keys as `yquant quantize --set`: head=int8, keep_float=2, bits=7, ...)  Only
 * include/yq.h and include/yq_quant.h are needed; link with libyq and its libraries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "yq.h"
#include "yq_quant.h"

static void stage(void *ctx, const char *label)
{
    (void)ctx;
    fprintf(stderr, "%s...\n", label);
}

static void warn(void *ctx, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "warning: %s\n", msg);
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: %s MODEL_DIR CALIB_DIR VAL_DIR VAL.json OUT.yqp [key=value ...]\n", argv[0]);
        return 2;
    }
    yq_error err;
    yq_qconf *qc = NULL;
    yq_quantizer *q = NULL;
    yq_model *m = NULL;
    yq_session *s = NULL;
    int rc = 1;
    if (yq_qconf_new(&qc, &err) != YQ_OK) goto fail;
    for (int i = 6; i < argc; i++) {
        char key[64];
        const char *eq = strchr(argv[i], '=');
        if (!eq || eq == argv[i] || (size_t)(eq - argv[i]) >= sizeof key) {
            fprintf(stderr, "%s: expected key=value\n", argv[i]);
            goto done;
        }
        snprintf(key, sizeof key, "%.*s", (int)(eq - argv[i]), argv[i]);
        if (yq_qconf_set(qc, key, eq + 1, &err) != YQ_OK) goto fail;
    }
    yq_quant_opt o = yq_quant_defaults();
    o.calib = argv[2];
    yq_quant_io io = { .stage = stage, .warn = warn };
    double fp[2], q8[2];
    if (yq_quantizer_new(argv[1], &o, &io, &q, &err) != YQ_OK ||
        yq_quantizer_evaluate(q, NULL, argv[3], argv[4], fp, &err) != YQ_OK ||
        yq_quantizer_evaluate(q, qc, argv[3], argv[4], q8, &err) != YQ_OK ||
        yq_quantizer_save(q, qc, argv[5], &err) != YQ_OK)
        goto fail;
    printf("mAP   FP32 %.4f   int8 %.4f   drop %+.4f\n", fp[0], q8[0], fp[0] - q8[0]);
    printf("mAP50 FP32 %.4f   int8 %.4f   drop %+.4f\n", fp[1], q8[1], fp[1] - q8[1]);
    printf("wrote %s\n", argv[5]);
    /* the package is a model like any other (include/yq.h): a session on the CPU */
    if (yq_model_open(argv[5], &m, &err) != YQ_OK || yq_session_new(m, "cpu", 1, &s, &err) != YQ_OK) goto fail;
    printf("%s: int8 %s, %d classes, session on %s\n", argv[5], yq_model_is_int8(m) ? "yes" : "no", yq_model_classes(m),
           yq_session_device(s));
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "%s\n", err.msg);
done:
    yq_session_free(s);
    yq_model_free(m);
    yq_quantizer_free(q);
    yq_qconf_free(qc);
    return rc;
}
