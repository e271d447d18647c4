/* Quantize a model and validate it through the public API: calibrate on a folder of
 * images, measure COCO mAP of FP32 and of int8 on a labelled set (on the CPU, timed),
 * optionally search which layers stay float for a largest mAP drop, write the int8
 * package, and run it.
 *
 *     make examples
 *     build/examples/quantize MODEL_DIR CALIB_DIR VAL_DIR VAL.json OUT.yqp [key=value ...] [--max-drop P]
 *
 * (keys as `yquant quantize --set`: head=int8, keep_float=2, bits=7, ...; --max-drop P as
 * `yquant quantize --max-drop P`: at most P points of mAP@[.5:.95] lost)  Only include/yq.h
 * and include/yq_quant.h are needed; link with libyq and its libraries. */
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

static void step(void *ctx, const yq_max_drop_step *s)
{
    (void)ctx;
    printf("  step %d: %s", s->k, s->k ? "+ layers" : "every layer int8");
    for (int i = 0; i < s->n_layers; i++) printf("%s%d", i ? "," : " ", s->layers[i]);
    printf(": mAP %.4f, drop %.2f points\n", s->map, s->drop_pts);
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: %s MODEL_DIR CALIB_DIR VAL_DIR VAL.json OUT.yqp [key=value ...] [--max-drop P]\n", argv[0]);
        return 2;
    }
    double max_drop = -1;
    yq_error err;
    yq_qconf *qc = NULL;
    yq_quantizer *q = NULL;
    yq_dataset *val = NULL;
    yq_model *m = NULL;
    yq_session *s = NULL;
    int rc = 1;
    if (yq_qconf_new(&qc, &err) != YQ_OK) goto fail;
    for (int i = 6; i < argc; i++) {
        char key[64], *end;
        if (!strcmp(argv[i], "--max-drop") && i + 1 < argc) {
            max_drop = strtod(argv[++i], &end);
            if (*end || end == argv[i] || !(max_drop >= 0)) {
                fprintf(stderr, "--max-drop %s: expected points of mAP >= 0\n", argv[i]);
                goto done;
            }
            continue;
        }
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
    yq_quant_score fp, q8;
    if (yq_dataset_load_coco(argv[4], argv[3], &val, &err) != YQ_OK ||      /* the labelled set (yq_data.h) */
        yq_quantizer_new(argv[1], &o, &io, &q, &err) != YQ_OK)
        goto fail;
    if (max_drop >= 0) {
        /* the float layers searched on the labelled set: the answer is a new qconfig */
        yq_max_drop_opt mo = { .budget_pts = max_drop, .step = step };
        yq_max_drop_result r;
        yq_qconf *chosen = NULL;
        if (yq_quantizer_max_drop(q, qc, val, &mo, &chosen, &r, &err) != YQ_OK) goto fail;
        printf("--max-drop %.2f: %s, %d layer%s kept float\n", max_drop, r.met ? "met" : "NOT met (the best step kept)",
               r.n_float, r.n_float == 1 ? "" : "s");
        yq_max_drop_result_free(&r);
        yq_qconf_free(qc);
        qc = chosen;
    }
    if (yq_quantizer_score(q, NULL, val, "cpu", &fp, &err) != YQ_OK ||
        yq_quantizer_score(q, qc, val, "cpu", &q8, &err) != YQ_OK ||
        yq_quantizer_save(q, qc, argv[5], &err) != YQ_OK)
        goto fail;
    printf("on %d images:\n", q8.images);
    printf("mAP   FP32 %.4f   int8 %.4f   drop %+.4f\n", fp.map, q8.map, fp.map - q8.map);
    printf("mAP50 FP32 %.4f   int8 %.4f   drop %+.4f\n", fp.map50, q8.map50, fp.map50 - q8.map50);
    printf("CPU ms/img (engine alone)   FP32 %.1f   int8 %.1f (%s)\n", fp.ms_engine, q8.ms_engine, yq_cpu_int8_engine());
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
    yq_dataset_free(val);
    yq_qconf_free(qc);
    return rc;
}
