/* Writes the seed packages of fuzz_package into the folder given (fuzz/corpus/package):
 * random bytes stop at the HDF5 signature, so the fuzzer needs real packages to mutate.
 * tests/fixtures/tiny.cfg with synthetic weights, quantized without calibration
 * (thresholds 1.0) in four qconfig variants, as tests/test_package.c makes them, and
 * tests/fixtures/tiny_table.cfg (mish and logistic convs: activation tables); plus a
 * truncated copy.  Each package is a few tens of KB.  Built with the normal compiler
 * (no sanitizers) by `make -f fuzz/Makefile seeds`; run from the repository root.
 *
 * (Format versions 1 and 2, the 64-bit requantize, are refused at the version check
 * since format 3; their seeds were removed with it.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir/ir.h"
#include "tests/test_rewrite.h"
#include "runtime/package.h"

#define TINY "tests/fixtures/tiny.cfg"

typedef struct variant {
    const char *file;
    const char *key[2], *val[2];
    int meta;                     /* 0: meta NULL and no class names (the optional parts absent) */
    const char *cfg;              /* NULL: TINY */
} variant;

static const variant variants[] = {
    { "default.h5", { NULL, NULL }, { NULL, NULL }, 1 },
    { "minimal.h5", { NULL, NULL }, { NULL, NULL }, 0 },
    { "layer2_float.h5", { "skip_layers", NULL }, { "2", NULL }, 1 },
    { "head_int8_first_float.h5", { "head", "first" }, { "int8", "float" }, 1 },
    { "tables.h5", { NULL, NULL }, { NULL, NULL }, 1, "tests/fixtures/tiny_table.cfg" },
};

static void die(const char *what, const yq_error *err)
{
    fprintf(stderr, "make_seeds: %s: %s\n", what, err ? err->msg : "failed");
    exit(1);
}

static void write_variant(const char *dir, const variant *v)
{
    yq_import_opt opt = { 0 };
    opt.synthetic = 1;
    opt.seed = 7;
    yq_graph *g = NULL;
    yq_error err = { 0 };
    const char *cfg = v->cfg ? v->cfg : TINY;
    if (yq_darknet_load(cfg, NULL, &opt, &g, &err) != YQ_OK) die(cfg, &err);
    static yq_qconfig qc;
    yq_qconfig_defaults(&qc);
    for (int k = 0; k < 2; k++)
        if (v->key[k] && yq_qconfig_set(&qc, v->key[k], v->val[k], "make_seeds", &err) != YQ_OK) die(v->file, &err);
    if (test_rewrite(&g, NULL, &qc, &err) != YQ_OK) die(v->file, &err);
    char *qtext = yq_qconfig_text(&qc);
    if (!qtext) die("out of memory", NULL);

    /* One kernel choice per conv, of the conv's kind (conv_cfg.c's names). */
    yq_tuned_kernel kern[16];
    int nk = 0;
    for (int i = 1; i < g->n_nodes && nk < 16; i++)
        if (g->nodes[i].op == YQ_OP_CONV) {
            yq_tuned_kernel *k = &kern[nk++];
            memset(k, 0, sizeof *k);
            k->node = i;
            k->batch = 1 + i % 2;
            k->sm = 90;
            snprintf(k->cfg, sizeof k->cfg, "%s", g->q[i].float_op ? "f32" : i % 2 ? "dp4a_64x64" : "direct");
            k->us = 10.f + (float)i;
            k->default_us = 12.f + (float)i;
        }
    static const char *names[2] = { "person", "bicycle" };
    yq_package_meta m = { 0 };
    m.qconfig_text = qtext;
    m.accuracy_json = "{\"fp32\":{\"map50\":0.51},\"int8\":{\"map50\":0.5}}";
    m.calib_method = "percentile:99.99";
    m.tuning_json = "{\"conv_0\":\"ref\"}";
    m.kernels = kern;
    m.n_kernels = nk;
    for (int i = 0; i < 32; i++) m.calib_images_sha256[i] = (uint8_t)(0xa0 + i);
    m.calib_images = 80;
    m.letterbox = 1;
    if (v->meta) {
        g->class_names = (char **)names;
        g->n_class_names = 2;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, v->file);
    if (yq_package_write(path, g, v->meta ? &m : NULL, &err) != YQ_OK) die(path, &err);
    g->class_names = NULL;
    g->n_class_names = 0;
    free(qtext);
    yq_graph_free(g);
}

/* The first n bytes of src as dst. */
static void truncated_copy(const char *src, const char *dst, long n)
{
    FILE *a = fopen(src, "rb"), *b = fopen(dst, "wb");
    char *buf = malloc((size_t)n);
    size_t got = a && buf ? fread(buf, 1, (size_t)n, a) : 0;
    if (!b || !got || fwrite(buf, 1, got, b) != got || fclose(b) != 0) die(dst, NULL);
    fclose(a);
    free(buf);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s FOLDER   (run from the repository root)\n", argv[0]);
        return 2;
    }
    for (size_t i = 0; i < sizeof variants / sizeof *variants; i++) write_variant(argv[1], &variants[i]);
    char src[1024], dst[1024];
    snprintf(src, sizeof src, "%s/minimal.h5", argv[1]);
    snprintf(dst, sizeof dst, "%s/truncated.h5", argv[1]);
    truncated_copy(src, dst, 4096);
    return 0;
}
