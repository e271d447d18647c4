/* Parity with a peer we did not write: Debian's darknet (build/tests/dn_dump).
 *
 * For every shared model with weights and every darknet sample image, the peer
 * letterboxes the image and dumps its input and the tensors feeding each head;
 * we run our FP32 engine on the peer's input (same letterboxed floats) with the
 * peer's batch-norm convention and require, per head,
 *     max |ours - peer| / max |peer| <= 1e-4.
 */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <unistd.h>
#include "tests/test.h"
#include "ir/ir.h"
#include "runtime/detector.h"
#include "runtime/plan.h"

typedef struct dump_t { char name[64]; int c, h, w; float *data; } dump_t;

static int read_dump(const char *path, dump_t *t, int max)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    char magic[4];
    int32_t ver, n;
    if (fread(magic, 1, 4, f) != 4 || memcmp(magic, "YQDN", 4) || fread(&ver, 4, 1, f) != 1 ||
        fread(&n, 4, 1, f) != 1 || ver != 1 || n < 1 || n > max) { fclose(f); return -1; }
    for (int i = 0; i < n; i++) {
        int32_t len, chw[3];
        if (fread(&len, 4, 1, f) != 1 || len < 1 || len >= 64 || fread(t[i].name, 1, (size_t)len, f) != (size_t)len ||
            fread(chw, 4, 3, f) != 3) { fclose(f); return -1; }
        t[i].name[len] = 0;
        t[i].c = chw[0]; t[i].h = chw[1]; t[i].w = chw[2];
        size_t sz = (size_t)chw[0] * chw[1] * chw[2];
        t[i].data = malloc(sz * sizeof(float));
        if (!t[i].data || fread(t[i].data, sizeof(float), sz, f) != sz) { fclose(f); return -1; }
    }
    fclose(f);
    return n;
}

static const char *models[] = { "yolo-fastest-1.0", "yolo-fastest-1.1", "yolo-fastest-1.1-xl",
                                "yolo-fastest-xl-1.0", "yolo-lite-coco-trial6" };

static void parity_model(const char *model)
{
    char dir[1024], samples[1024];
    snprintf(dir, sizeof dir, "%s/models/%s", test_data_dir(), model);
    snprintf(samples, sizeof samples, "%s/datasets/darknet-samples", test_data_dir());
    if (access("build/tests/dn_dump", X_OK)) TEST_SKIP("peer build/tests/dn_dump not built (apt-get install darknet)");
    if (access(dir, R_OK) || access(samples, R_OK)) TEST_SKIP("%s or %s missing (see DATA.md)", dir, samples);

    yq_model_paths mp;
    yq_error err;
    CHECKF(yq_model_resolve(dir, NULL, &mp, &err) == YQ_OK, "%s", err.msg);
    yq_import_opt opt = { .bn = YQ_BN_PJREDDIE };
    yq_graph *g;
    CHECKF(yq_darknet_load(mp.cfg, mp.weights, &opt, &g, &err) == YQ_OK, "%s", err.msg);
    yq_plan *p;
    CHECKF(yq_plan_new(g, 1, YQ_PLAN_KEEP_HEADS, &p, &err) == YQ_OK, "%s", err.msg);

    DIR *d = opendir(samples);
    CHECK(d);
    int images = 0;
    double worst = 0;
    char tmp[] = "/tmp/yq_peer_XXXXXX";
    CHECK(mkdtemp(tmp));
    for (struct dirent *e; (e = readdir(d));) {
        if (!strstr(e->d_name, ".jpg")) continue;
        char cmd[4096], out[1100];
        snprintf(out, sizeof out, "%s/dump.bin", tmp);
        snprintf(cmd, sizeof cmd, "build/tests/dn_dump '%s' '%s' '%s/%s' '%s' >/dev/null 2>&1",
                 mp.cfg, mp.weights, samples, e->d_name, out);
        CHECKF(system(cmd) == 0, "peer failed: %s", cmd);
        dump_t t[8];
        int n = read_dump(out, t, 8);
        CHECKF(n >= 2, "bad dump %s", out);
        yq_shape is = g->nodes[0].out;
        CHECK(t[0].c == is.c && t[0].h == is.h && t[0].w == is.w);
        CHECKF(yq_exec_fp32(p, t[0].data, NULL, NULL, &err) == YQ_OK, "%s", err.msg);
        int heads = 0;
        for (int i = 1; i < g->n_nodes; i++) {
            const yq_node *nd = &g->nodes[i];
            if (!yq_op_is_head(nd->op)) continue;
            heads++;
            CHECKF(heads < n, "%s: peer has fewer heads than ours", model);
            dump_t *pt = &t[heads];
            char want[64];
            snprintf(want, sizeof want, "layer_%d", nd->layer - 1);
            CHECKF(!strcmp(pt->name, want), "%s: peer head %s, ours %s", model, pt->name, want);
            yq_shape s = g->nodes[nd->src[0]].out;
            CHECK(pt->c == s.c && pt->h == s.h && pt->w == s.w);
            const float *ours = yq_plan_tensor(p, nd->src[0]);
            CHECK(ours);
            double md = 0, mp_ = 0;
            for (long k = 0; k < yq_shape_size(s); k++) {
                double dd = fabs((double)ours[k] - (double)pt->data[k]);
                if (dd > md) md = dd;
                if (fabs((double)pt->data[k]) > mp_) mp_ = fabs((double)pt->data[k]);
            }
            double rel = md / (mp_ > 0 ? mp_ : 1);
            if (rel > worst) worst = rel;
            CHECKF(rel <= 1e-4, "%s on %s, head layer %d: max|diff|/max|peer| = %.3g > 1e-4", model, e->d_name, nd->layer, rel);
        }
        CHECKF(heads == n - 1, "%s: %d heads, peer dumped %d", model, heads, n - 1);
        for (int k = 0; k < n; k++) free(t[k].data);
        unlink(out);
        images++;
    }
    closedir(d);
    rmdir(tmp);
    CHECKF(images == 7, "%d sample images, expected 7", images);
    printf("  %s: 7 images, worst head rel diff %.2e\n", model, worst);
    yq_plan_free(p);
    yq_graph_free(g);
}

/* Detections: darknet's `detect` path (dn_dump --dets) against ours with the same
 * preprocessing (letterbox) and batch-norm convention: same classes, boxes within
 * 1 px, confidences within 1e-3.  A detection within 1e-3 of the threshold may fall
 * on either side in one of the two and is not counted.  The shared models set
 * scale_x_y = 1, which darknet 2018 ignores anyway: it computes what we compute. */
typedef struct pdet { int cls; float p, x, y, w, h; int used; } pdet;

static void detections_model(const char *model)
{
    char dir[1024], samples[1024];
    snprintf(dir, sizeof dir, "%s/models/%s", test_data_dir(), model);
    snprintf(samples, sizeof samples, "%s/datasets/darknet-samples", test_data_dir());
    if (access("build/tests/dn_dump", X_OK)) TEST_SKIP("peer build/tests/dn_dump not built (apt-get install darknet)");
    if (access(dir, R_OK) || access(samples, R_OK)) TEST_SKIP("%s or %s missing (see DATA.md)", dir, samples);
    yq_model_paths mp;
    yq_error err;
    CHECKF(yq_model_resolve(dir, NULL, &mp, &err) == YQ_OK, "%s", err.msg);
    yq_import_opt opt = { .bn = YQ_BN_PJREDDIE };
    yq_graph *g;
    CHECKF(yq_darknet_load(mp.cfg, mp.weights, &opt, &g, &err) == YQ_OK, "%s", err.msg);
    yq_detector *d;
    CHECKF(yq_detector_new(g, &d, &err) == YQ_OK, "%s", err.msg);
    yq_post_opt po = yq_post_defaults();
    po.max_dets = 1000;
    DIR *dd = opendir(samples);
    CHECK(dd);
    char tmp[] = "/tmp/yq_peerdet_XXXXXX";
    CHECK(mkdtemp(tmp));
    int images = 0, compared = 0;
    for (struct dirent *e; (e = readdir(dd));) {
        if (!strstr(e->d_name, ".jpg")) continue;
        char cmd[4096], bin[1100], txt[1100], img[1100];
        snprintf(bin, sizeof bin, "%s/d.bin", tmp);
        snprintf(txt, sizeof txt, "%s/d.txt", tmp);
        snprintf(img, sizeof img, "%s/%s", samples, e->d_name);
        snprintf(cmd, sizeof cmd, "build/tests/dn_dump '%s' '%s' '%s' '%s' --dets '%s' >/dev/null 2>&1",
                 mp.cfg, mp.weights, img, bin, txt);
        CHECKF(system(cmd) == 0, "peer failed: %s", cmd);
        pdet peer[512];
        int np = 0;
        FILE *f = fopen(txt, "r");
        CHECK(f);
        while (np < 512 && fscanf(f, "%d %f %f %f %f %f", &peer[np].cls, &peer[np].p, &peer[np].x, &peer[np].y,
                                  &peer[np].w, &peer[np].h) == 6) peer[np++].used = 0;
        fclose(f);
        yq_image im;
        CHECKF(yq_image_load(img, &im, &err) == YQ_OK, "%s", err.msg);
        yq_detection ours[1000];
        int no = 0;
        CHECKF(yq_detector_run(d, &im, 1, &po, ours, 1000, &no, &err) == YQ_OK, "%s", err.msg);
        yq_image_free(&im);
        for (int k = 0; k < no; k++) {
            int hit = 0;
            for (int j = 0; j < np && !hit; j++) {
                pdet *q = &peer[j];
                if (q->used || q->cls != ours[k].cls || fabsf(q->p - ours[k].score) > 1e-3f) continue;
                if (fabsf(q->x - ours[k].x) > 1 || fabsf(q->y - ours[k].y) > 1 || fabsf(q->w - ours[k].w) > 1 ||
                    fabsf(q->h - ours[k].h) > 1) continue;
                q->used = hit = 1;
            }
            CHECKF(hit || fabsf(ours[k].score - po.conf) < 1e-3f, "%s on %s: our class %d %.4f at (%.1f,%.1f,%.1f,%.1f) not in darknet's",
                   model, e->d_name, ours[k].cls, (double)ours[k].score, (double)ours[k].x, (double)ours[k].y,
                   (double)ours[k].w, (double)ours[k].h);
            compared += hit;
        }
        for (int j = 0; j < np; j++)
            CHECKF(peer[j].used || fabsf(peer[j].p - po.conf) < 1e-3f, "%s on %s: darknet's class %d %.4f not in ours",
                   model, e->d_name, peer[j].cls, (double)peer[j].p);
        unlink(bin);
        unlink(txt);
        images++;
    }
    closedir(dd);
    rmdir(tmp);
    CHECK(images == 7);
    CHECKF(compared >= 7, "%s: only %d detections compared", model, compared);
    printf("  %s: 7 images, %d detections equal to darknet's\n", model, compared);
    yq_detector_free(d);
    yq_graph_free(g);
}

static void t_dets_fastest_10(void) { detections_model(models[0]); }
static void t_dets_fastest_11(void) { detections_model(models[1]); }
static void t_dets_fastest_11_xl(void) { detections_model(models[2]); }
static void t_dets_fastest_xl_10(void) { detections_model(models[3]); }
static void t_dets_yolo_lite(void) { detections_model(models[4]); }

static void t_peer_fastest_10(void) { parity_model(models[0]); }
static void t_peer_fastest_11(void) { parity_model(models[1]); }
static void t_peer_fastest_11_xl(void) { parity_model(models[2]); }
static void t_peer_fastest_xl_10(void) { parity_model(models[3]); }
static void t_peer_yolo_lite(void) { parity_model(models[4]); }

int main(void)
{
    TEST(t_peer_fastest_10);
    TEST(t_peer_fastest_11);
    TEST(t_peer_fastest_11_xl);
    TEST(t_peer_fastest_xl_10);
    TEST(t_peer_yolo_lite);
    TEST(t_dets_fastest_10);
    TEST(t_dets_fastest_11);
    TEST(t_dets_fastest_11_xl);
    TEST(t_dets_fastest_xl_10);
    TEST(t_dets_yolo_lite);
    return test_done();
}
