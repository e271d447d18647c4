/* For tests/onnx_test.py's Darknet exports: a Darknet model (FP32) or an int8 package of one
 * run by yquant on the CPU on one image, its network input and its heads' inputs written out
 * for onnxruntime to compare with `yquant export`'s model.
 *
 *     heads_dump MODEL|PKG IMAGE OUTDIR [--weights W] [--size N] [--all]
 *
 * --weights, --size: a Darknet model's weights ("synthetic" or "synthetic:SEED" too) and
 * input size.  OUTDIR/input.f32 (C x H x W floats, the image letterboxed or resized as the
 * model says), OUTDIR/head0.f32, ... (each head's input in float: an int8 one dequantized at
 * its scale, graph order) and OUTDIR/shape.txt ("C H W heads").  --all: also every layer's
 * output as computed, OUTDIR/NAME.bin (float32, int8 or uint8), listed in OUTDIR/layers.txt
 * ("NAME f32|s8|u8" a line). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "yq.h"
#include "datasets/image.h"
#include "runtime/detector.h"
#include "runtime/plan.h"
#include "tests/peer/dump.h"
#include "runtime/session.h"

/* --all: each layer's output as computed, and its line in layers.txt */
static const char *g_dir;
static FILE *g_list;
static int g_bad;
static void dump_layer(void *ctx, const yq_graph *g, int id, const void *data, int batch)
{
    (void)ctx;
    const yq_dtype t = yq_node_dtype(g, id);
    char p[1024];
    snprintf(p, sizeof p, "%s/%s.bin", g_dir, g->nodes[id].name);
    FILE *f = fopen(p, "wb");
    const size_t n = (size_t)batch * (size_t)yq_shape_size(g->nodes[id].out) * (size_t)yq_dtype_size(t);
    if (!f || fwrite(data, 1, n, f) != n) g_bad = 1;
    if (f && fclose(f)) g_bad = 1;
    if (fprintf(g_list, "%s %s\n", g->nodes[id].name, t == YQ_F32 ? "f32" : t == YQ_S8 ? "s8" : "u8") < 0) g_bad = 1;
}

int main(int argc, char **argv)
{
    int all = 0;
    const char *pos[3] = { NULL, NULL, NULL };
    int npos = 0, bad_args = 0;
    yq_model_opt mo = yq_model_defaults();
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--all")) all = 1;
        else if (!strcmp(argv[i], "--weights") && i + 1 < argc) mo.weights = argv[++i];
        else if (!strcmp(argv[i], "--size") && i + 1 < argc) mo.width = mo.height = atoi(argv[++i]);
        else if (argv[i][0] != '-' && npos < 3) pos[npos++] = argv[i];
        else bad_args = 1;
    }
    if (bad_args || npos != 3) {
        fprintf(stderr, "usage: heads_dump MODEL|PKG IMAGE OUTDIR [--weights W] [--size N] [--all]\n");
        return 2;
    }
    const int pkg = strlen(pos[0]) > 4 && !strcmp(pos[0] + strlen(pos[0]) - 4, ".yqp");
    yq_error err;
    yq_model *m = NULL;
    yq_plan *p = NULL;
    yq_image im = { 0 };
    float *deq = NULL;
    int rc = 1;
    char lp[1024];
    snprintf(lp, sizeof lp, "%s/layers.txt", pos[2]);
    g_dir = pos[2];
    if (all && !(g_list = fopen(lp, "w"))) goto io;
    if (yq_model_open_opt(pos[0], pkg ? NULL : &mo, &m, &err) != YQ_OK) goto fail;
    const yq_graph *g = yq_model_graph(m);
    if (yq_image_load(pos[1], &im, &err) != YQ_OK || yq_plan_new(g, 1, YQ_PLAN_KEEP_HEADS, &p, &err) != YQ_OK ||
        yq_preprocess(g, &im, yq_model_letterbox(m), yq_plan_input(p), &err) != YQ_OK)
        goto fail;
    yq_shape in = g->nodes[0].out;
    /* (written before the run: the plan reuses the input's buffer) */
    if (write_f32(pos[2], "input.f32", yq_plan_input(p), yq_shape_size(in))) goto io;
    yq_node_hook hk = all ? dump_layer : NULL;
    if ((g->q ? yq_exec_int8(p, NULL, hk, NULL, &err) : yq_exec_fp32(p, NULL, hk, NULL, &err)) != YQ_OK) goto fail;
    if (g_list && (fclose(g_list) || g_bad)) {
        g_list = NULL;
        goto io;
    }
    g_list = NULL;
    int nh = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (!yq_op_is_head(g->nodes[i].op)) continue;
        const int s = g->nodes[i].src[0];
        const long n = yq_shape_size(g->nodes[s].out);
        const float *t = yq_plan_tensor(p, s);
        if (!t) {   /* an int8 head input */
            const int8_t *q = yq_plan_data(p, s);
            free(deq);
            if (!q || !(deq = malloc(sizeof *deq * (size_t)n))) goto io;
            for (long k = 0; k < n; k++) deq[k] = (float)q[k] * g->q[s].scale;
            t = deq;
        }
        char hn[32];
        snprintf(hn, sizeof hn, "head%d.f32", nh++);
        if (write_f32(pos[2], hn, t, n)) goto io;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/shape.txt", pos[2]);
    FILE *f = fopen(path, "w");
    if (!f || fprintf(f, "%d %d %d %d\n", in.c, in.h, in.w, nh) < 0 || fclose(f)) goto io;
    rc = 0;
    goto done;
io:
    fprintf(stderr, "heads_dump: cannot write into %s\n", pos[2]);
    goto done;
fail:
    fprintf(stderr, "heads_dump: %s\n", err.msg);
done:
    if (g_list) fclose(g_list);
    free(deq);
    yq_image_free(&im);
    yq_plan_free(p);
    yq_model_free(m);
    return rc;
}
