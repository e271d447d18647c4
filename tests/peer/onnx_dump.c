/* For tests/onnx_test.py: an ONNX model imported by yquant and run in FP32 on the CPU on one
 * image, its network input and its decoded output written out for onnxruntime to compare.
 *
 *     onnx_dump MODEL.onnx IMAGE OUTDIR
 *
 * OUTDIR/input.f32 (C x H x W floats, the letterboxed image), OUTDIR/output.f32 ((4 +
 * classes) x N floats, as the export's output0; YOLOv5's anchor heads: N x (5 + classes)), OUTDIR/dets.txt (one detection a line: class
 * score x y w h, in image pixels, conf 0.25, NMS 0.45) and OUTDIR/shape.txt ("C H W rows N"). */
#include <stdio.h>
#include <stdlib.h>
#include "datasets/image.h"
#include "runtime/detector.h"
#include "runtime/plan.h"
#include "tests/peer/dump.h"
#include "runtime/postproc.h"

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: onnx_dump MODEL.onnx IMAGE OUTDIR\n");
        return 2;
    }
    yq_error err;
    yq_graph *g = NULL;
    yq_plan *p = NULL;
    yq_image im = { 0 };
    float *out = NULL;
    int rc = 1;
    /* (the input is written before the run: the plan reuses its buffer) */
    if (yq_onnx_load(argv[1], NULL, &g, &err) != YQ_OK || yq_image_load(argv[2], &im, &err) != YQ_OK ||
        yq_plan_new(g, 1, YQ_PLAN_KEEP_HEADS, &p, &err) != YQ_OK ||
        yq_preprocess(g, &im, 1, yq_plan_input(p), &err) != YQ_OK) {
        fprintf(stderr, "onnx_dump: %s\n", err.msg);
        goto done;
    }
    yq_shape in = g->nodes[0].out;
    if (write_f32(argv[3], "input.f32", yq_plan_input(p), yq_shape_size(in))) {
        fprintf(stderr, "onnx_dump: cannot write into %s\n", argv[3]);
        goto done;
    }
    if (yq_exec_fp32(p, NULL, NULL, NULL, &err) != YQ_OK) {
        fprintf(stderr, "onnx_dump: %s\n", err.msg);
        goto done;
    }
    const float *heads[16];
    int nh = 0;
    for (int i = 0; i < g->n_nodes && nh < 16; i++)
        if (yq_op_is_head(g->nodes[i].op)) heads[nh++] = yq_plan_tensor(p, g->nodes[i].src[0]);
    long N;
    int rows;
    if (nh && g->nodes[g->n_nodes - 1].op == YQ_OP_YOLO) {
        /* YOLOv5's output0, N x (5 + classes), written here from YOLOv5's definition (not
         * yquant's post-processing): per scale (finest first), anchor a, cell (j, i) of the
         * logistic head input s: x, y = (2 s + (i, j) - 0.5) stride, w, h = (2 s)^2
         * anchor, then s of the objectness and the classes */
        N = 0;
        for (int i = 0; i < g->n_nodes; i++)
            if (g->nodes[i].op == YQ_OP_YOLO)
                N += (long)g->nodes[i].p.head.n_mask * g->nodes[g->nodes[i].src[0]].out.h * g->nodes[g->nodes[i].src[0]].out.w;
        rows = (int)N;
        N = 5 + g->nodes[g->n_nodes - 1].p.head.classes;
        out = malloc(sizeof *out * (size_t)(rows * N));
        float *o = out;
        for (int i = 0, k = 0; out && i < g->n_nodes; i++) {
            if (g->nodes[i].op != YQ_OP_YOLO) continue;
            const yq_head_p *h = &g->nodes[i].p.head;
            yq_shape s = g->nodes[g->nodes[i].src[0]].out;
            const float *x = heads[k++];
            const float stride = (float)in.w / (float)s.w;
            const long plane = (long)s.h * s.w;
            for (int a = 0; a < h->n_mask; a++)
                for (int y = 0; y < s.h; y++)
                    for (int xx = 0; xx < s.w; xx++, o += N) {
                        const float *v = x + (long)a * N * plane + (long)y * s.w + xx;
                        const float *anc = h->anchors + 2 * h->mask[a];
                        o[0] = (v[0] * 2 + ((float)xx - 0.5f)) * stride;
                        o[1] = (v[plane] * 2 + ((float)y - 0.5f)) * stride;
                        o[2] = (v[2 * plane] * 2) * (v[2 * plane] * 2) * anc[0];
                        o[3] = (v[3 * plane] * 2) * (v[3 * plane] * 2) * anc[1];
                        for (long c = 4; c < N; c++) o[c] = v[c * plane];
                    }
        }
        if (!out) goto done;
    } else {
        N = yq_detect_raw_cells(g);
        rows = 4 + g->nodes[g->n_nodes - 1].p.head.classes;
        out = malloc(sizeof *out * (size_t)(rows * N));
        if (!out || yq_detect_raw(g, heads, 0, out) != rows) {
            fprintf(stderr, "onnx_dump: no detect heads\n");
            goto done;
        }
    }
    if (write_f32(argv[3], "output.f32", out, rows * N)) {
        fprintf(stderr, "onnx_dump: cannot write into %s\n", argv[3]);
        goto done;
    }
    for (int k = 0; k < nh; k++) {   /* the heads' inputs: head0.f32, ... */
        char hn[32];
        snprintf(hn, sizeof hn, "head%d.f32", k);
        int id = -1;
        for (int i = 0, j = 0; i < g->n_nodes; i++)
            if (yq_op_is_head(g->nodes[i].op) && j++ == k) id = g->nodes[i].src[0];
        if (write_f32(argv[3], hn, heads[k], yq_shape_size(g->nodes[id].out))) goto done;
    }
    yq_post_opt po = yq_post_defaults();
    yq_detection dets[300];
    int n = yq_postprocess(g, heads, 0, im.w, im.h, 1, &po, dets, 300);
    char path[1024];
    snprintf(path, sizeof path, "%s/dets.txt", argv[3]);
    FILE *f = fopen(path, "w");
    for (int k = 0; f && k < n; k++)
        fprintf(f, "%d %.6f %.3f %.3f %.3f %.3f\n", dets[k].cls, (double)dets[k].score, (double)dets[k].x, (double)dets[k].y,
                (double)dets[k].w, (double)dets[k].h);
    if (f) fclose(f);
    snprintf(path, sizeof path, "%s/shape.txt", argv[3]);
    f = fopen(path, "w");
    if (f) {
        fprintf(f, "%d %d %d %d %ld %d %d\n", in.c, in.h, in.w, rows, N, im.w, im.h);
        fclose(f);
    }
    rc = n < 0 || !f;
done:
    free(out);
    yq_image_free(&im);
    yq_plan_free(p);
    yq_graph_free(g);
    return rc;
}
