/* yquant detect MODEL IMAGE...: detections printed, drawn into PNGs, and
 * written as COCO results JSON. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cjson/cJSON.h>
#include "cli/cli.h"
#include "yq_data.h"
#include "yq_draw.h"

#define MAX_DETS 1000000   /* per image: far beyond any detector's candidates */

static const char *help =
    "usage: yquant detect MODEL IMAGE|DIR... [options]\n"
    "\n"
    "Runs the detector on each image: one line per detection (class, confidence, box\n"
    "x,y,w,h in pixels).  MODEL is a Darknet model or an Ultralytics .onnx export (FP32, cpu\n"
    "only), or an int8 package (.yqp).\n"
    "  --device D        cpu, cuda or cuda:N (int8 packages; decode and NMS on the GPU);\n"
    "                    default " CLI_DEVICE_HELP "\n"
    "  --conf P          confidence threshold (default 0.25)\n"
    "  --nms T           per-class NMS IoU threshold (default 0.45)\n"
    "  --max-dets N      detections kept per image (default 100)\n"
    "  --letterbox       letterbox the image (aspect kept, grey padding)\n"
    "  --no-letterbox    plain resize (default unless the cfg sets letter_box=1)\n"
    "  -o, --output DIR  write DIR/<image>.png with the boxes and class names drawn (--out: the same)\n"
    "  --json FILE       COCO results JSON: image_id, category_id, bbox [x,y,w,h], score, and the\n"
    "                    image's file_name ('-': standard output, the listing then on standard error)\n"
    "  --weights, --size, --bn  as for inspect\n"
    "  --max-pixels M   refuse images over M megapixels, from their header (default 64)\n";

/* COCO file names are the image id ("000000000139.jpg" -> 139); others count from 1. */
static long image_id(const char *path, long fallback)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    char *end;
    long v = strtol(b, &end, 10);
    return end != b && *end == '.' ? v : fallback;
}

/* The PNG that --out DIR draws image path into: DIR/STEM.png. */
static void png_name(const char *dir, const char *path, char *out, size_t cap)
{
    char stem[512];
    snprintf(stem, sizeof stem, "%s", cli_base_name(path));
    char *dot = strrchr(stem, '.');
    if (dot) *dot = 0;
    snprintf(out, cap, "%s/%s.png", dir, stem);
}

static yq_status draw_png(const yq_model *m, const yq_image *im, const yq_detection *d, int n,
                          const char *dir, const char *path, yq_error *err)
{
    yq_canvas cv;
    yq_status st = yq_canvas_from_chw(im->data, im->c, im->w, im->h, &cv, err);
    if (st != YQ_OK) return st;
    /* labels sized for the picture and placed best first so that none covers another */
    int thick, scale;
    yq_label_style(im->w, im->h, &scale, &thick);
    char (*label)[96] = malloc(sizeof *label * (size_t)(n > 0 ? n : 1));
    float *box = malloc(sizeof *box * 4 * (size_t)(n > 0 ? n : 1));
    int *lw = malloc(sizeof *lw * 4 * (size_t)(n > 0 ? n : 1)), *lh = lw + n, *lx = lh + n, *ly = lx + n;
    if (!label || !box || !lw) {
        free(label);
        free(box);
        free(lw);
        yq_canvas_free(&cv);
        return cli_fail(err, YQ_ERR_NOMEM, "out of memory drawing %s", path);
    }
    for (int i = 0; i < n; i++) {
        const char *name = yq_model_class_name(m, d[i].cls);
        if (name) snprintf(label[i], sizeof label[i], "%s %.0f%%", name, 100.0 * (double)d[i].score);
        else snprintf(label[i], sizeof label[i], "class %d %.0f%%", d[i].cls, 100.0 * (double)d[i].score);
        yq_label_size(label[i], scale, &lw[i], &lh[i]);
        box[4 * i] = d[i].x, box[4 * i + 1] = d[i].y, box[4 * i + 2] = d[i].w, box[4 * i + 3] = d[i].h;
    }
    yq_label_place(box, lw, lh, n, cv.w, cv.h, lx, ly);
    for (int i = n - 1; i >= 0; i--) {         /* best drawn last, on top */
        uint8_t rgb[3];
        yq_class_color(d[i].cls, rgb);
        yq_draw_box(&cv, d[i].x, d[i].y, d[i].w, d[i].h, thick, rgb[0], rgb[1], rgb[2]);
    }
    for (int i = n - 1; i >= 0; i--) {         /* the labels over every box */
        uint8_t rgb[3];
        yq_class_color(d[i].cls, rgb);
        yq_draw_label_at(&cv, lx[i], ly[i], label[i], scale, rgb[0], rgb[1], rgb[2]);
    }
    free(label);
    free(box);
    free(lw);
    char out[1024];
    png_name(dir, path, out, sizeof out);
    st = yq_png_write(out, &cv, err);
    yq_canvas_free(&cv);
    return st;
}

enum { OPT_CONF = CLI_OPT_CMD, OPT_NMS, OPT_MAX_DETS, OPT_JSON, OPT_DEVICE, OPT_LETTERBOX, OPT_NO_LETTERBOX };
static const struct option options[] = {
    CLI_HELP_OPTION, CLI_MODEL_OPTIONS,
    { "conf", required_argument, NULL, OPT_CONF },
    { "nms", required_argument, NULL, OPT_NMS },
    { "max-dets", required_argument, NULL, OPT_MAX_DETS },
    { "output", required_argument, NULL, CLI_OPT_OUTPUT },
    { "out", required_argument, NULL, CLI_OPT_OUTPUT },
    { "json", required_argument, NULL, OPT_JSON },
    { "device", required_argument, NULL, OPT_DEVICE },
    { "letterbox", no_argument, NULL, OPT_LETTERBOX },
    { "no-letterbox", no_argument, NULL, OPT_NO_LETTERBOX },
    { NULL, 0, NULL, 0 },
};

int cmd_detect(int argc, char **argv)
{
    cli_model_opt mo = { 0 };
    yq_session_opt po = yq_session_defaults();
    const char *out_dir = NULL, *json = NULL, *device = NULL;
    int letterbox = -1;
    cli_getopt g;
    cli_getopt_begin(&g, "detect", argc, argv, ":ho:", options);
    for (int c; (c = cli_getopt_next(&g)) != -1;) {
        int r = cli_model_arg(&mo, &g, c);
        if (r) {
            if (r < 0) return 2;
            continue;
        }
        switch (c) {
        case 'h': case CLI_OPT_HELP: fputs(help, stdout); return 0;
        case OPT_CONF: if (cli_numf(g.name, g.arg, 0, 1, &po.conf)) return 2; break;
        case OPT_NMS: if (cli_numf(g.name, g.arg, 0, 1, &po.nms)) return 2; break;
        case OPT_MAX_DETS: if (cli_int(g.name, g.arg, 1, 100000, &po.max_dets)) return 2; break;
        case 'o': case CLI_OPT_OUTPUT: out_dir = g.arg; break;
        case OPT_JSON: json = g.arg; break;
        case OPT_DEVICE: device = g.arg; break;
        case OPT_LETTERBOX: letterbox = 1; break;
        case OPT_NO_LETTERBOX: letterbox = 0; break;
        default: return 2;   /* '?': cli_getopt_next said why */
        }
    }
    /* the operands: MODEL, then the images and folders */
    for (int i = optind; i < argc; i++)
        if (!strcmp(argv[i], "-")) return cli_getopt_unknown(&g, argv[i]);
    if (optind < argc) mo.model = argv[optind];
    char *const *inputs = argv + optind + 1;
    const int n_inputs = argc - optind - 1;
    if (!mo.model || n_inputs < 1) return cli_usage_error("detect: needs MODEL and at least one IMAGE");
    if (!(po.conf >= 0 && po.conf < 1) || !(po.nms > 0 && po.nms <= 1) || po.max_dets < 1 || po.max_dets > MAX_DETS)
        return cli_usage_error("detect: --conf in [0,1), --nms in (0,1], --max-dets in 1..%d", MAX_DETS);

    yq_error err;
    yq_model *model = NULL;
    yq_session *sess = NULL;
    yq_model_about about;
    cJSON *results = json ? cJSON_CreateArray() : NULL;
    char **paths = NULL;
    int n_paths = 0, rc = 1, failed = 0, total = 0;
    yq_detection *dets = malloc(sizeof *dets * (size_t)po.max_dets);
    float *input = NULL;
    if (!dets) { fprintf(stderr, "yquant: detect: out of memory for %d detections\n", po.max_dets); goto done; }
    if (cli_open_model(&mo, &model, &err) != YQ_OK || cli_session_new(model, device, 1, &sess, &err) != YQ_OK) {
        cli_error(&err);
        goto done;
    }
    yq_model_describe(model, &about);
    int in_c, in_h, in_w;
    yq_model_input(model, &in_c, &in_h, &in_w);
    if (letterbox < 0) letterbox = yq_model_letterbox(model);
    yq_session_opt so = yq_session_defaults();
    so.conf = po.conf;
    so.nms = po.nms;
    so.max_dets = po.max_dets;
    so.letterbox = letterbox;
    if (yq_session_set_options(sess, &so, &err) != YQ_OK) { cli_error(&err); goto done; }
    if (!(input = malloc(sizeof(float) * (size_t)in_c * (size_t)in_h * (size_t)in_w))) {
        fprintf(stderr, "yquant: detect: out of memory\n");
        goto done;
    }
    if (out_dir && mkdir(out_dir, 0777) && errno != EEXIST) {
        fprintf(stderr, "yquant: %s: %s\n", out_dir, strerror(errno));
        goto done;
    }
    /* Expand folders into their images. */
    for (int i = 0; i < n_inputs; i++) {
        struct stat sb;
        char **list = NULL;
        int n = 0, skipped = 0;
        if (stat(inputs[i], &sb) == 0 && S_ISDIR(sb.st_mode)) {
            if (yq_list_images(inputs[i], &list, &n, &skipped, cli_warn, NULL, &err) != YQ_OK) { cli_error(&err); goto done; }
        } else {
            list = malloc(sizeof *list);
            if (!list || !(list[0] = strdup(inputs[i]))) { free(list); goto done; }
            n = 1;
        }
        char **np = realloc(paths, sizeof *np * (size_t)(n_paths + n));
        if (!np) { yq_list_images_free(list, n); goto done; }
        paths = np;
        memcpy(paths + n_paths, list, sizeof *list * (size_t)n);
        n_paths += n;
        free(list);
    }
    {
        /* outputs against inputs, before any image is read: --json, and each PNG --out draws */
        const char **ins = malloc(sizeof *ins * (size_t)(n_paths + 3));
        if (!ins) goto done;
        int ni = 0;
        for (int i = 0; i < n_paths; i++) ins[ni++] = paths[i];
        ins[ni++] = mo.model;
        ins[ni++] = about.cfg;
        ins[ni++] = about.weights;
        cli_inputs *in = cli_inputs_new(ins, ni);
        free(ins);
        int bad = !in || cli_check_output("--json", json, in);
        for (int i = 0; out_dir && !bad && i < n_paths; i++) {
            char png[1024];
            png_name(out_dir, paths[i], png, sizeof png);
            bad = cli_check_output("--out", png, in);
        }
        cli_inputs_free(in);
        if (bad) goto done;
    }
    fprintf(stderr, "%s, %s, %dx%d, %s, conf %.2f, nms %.2f, %s\n", mo.model, yq_model_is_int8(model) ? "int8" : "fp32",
            in_w, in_h, letterbox ? "letterbox" : "plain resize", (double)po.conf,
            (double)po.nms, yq_session_device(sess));
    for (int i = 0; i < n_paths; i++) {
        yq_image im;
        int n;
        if (yq_image_load(paths[i], &im, &err) != YQ_OK) {
            fprintf(stderr, "yquant: %s\n", err.msg);
            failed++;
            continue;
        }
        int wh[2] = { im.w, im.h };
        if (yq_model_preprocess(model, &im, letterbox, input, &err) != YQ_OK ||
            yq_session_run_tensor(sess, input, 1, wh, dets, po.max_dets, &n, &err) != YQ_OK) {
            yq_image_free(&im);
            cli_error(&err);
            goto done;
        }
        /* --json -: the JSON alone on standard output (the listing on standard error) */
        FILE *txt = json && !strcmp(json, "-") ? stderr : stdout;
        fprintf(txt, "%s: %d detection%s\n", paths[i], n, n == 1 ? "" : "s");
        for (int k = 0; k < n; k++) {
            const char *name = yq_model_class_name(model, dets[k].cls);
            if (!name) name = "?";
            fprintf(txt, "  %-14s %5.1f%%  x=%.0f y=%.0f w=%.0f h=%.0f\n", name, 100.0 * (double)dets[k].score,
                   (double)dets[k].x, (double)dets[k].y, (double)dets[k].w, (double)dets[k].h);
            if (results) {
                cJSON *r = cJSON_CreateObject();
                cJSON_AddNumberToObject(r, "image_id", (double)image_id(paths[i], i + 1));
                int cat = yq_coco_category_id(dets[k].cls);
                cJSON_AddNumberToObject(r, "category_id", cat > 0 ? cat : dets[k].cls);
                double bb[4] = { dets[k].x, dets[k].y, dets[k].w, dets[k].h };
                cJSON_AddItemToObject(r, "bbox", cJSON_CreateDoubleArray(bb, 4));
                cJSON_AddNumberToObject(r, "score", (double)dets[k].score);
                cJSON_AddStringToObject(r, "file_name", cli_base_name(paths[i]));   /* (COCO readers ignore it) */
                cJSON_AddItemToArray(results, r);
            }
        }
        total += n;
        if (out_dir && draw_png(model, &im, dets, n, out_dir, paths[i], &err) != YQ_OK) {
            yq_image_free(&im);
            cli_error(&err);
            goto done;
        }
        yq_image_free(&im);
    }
    if (results && cli_write_json_compact(json, results)) goto done;
    if (failed) fprintf(stderr, "yquant: %d of %d images could not be read\n", failed, n_paths);
    rc = failed ? 1 : 0;      /* an image that could not be read (damaged, too large) fails the run */
    (void)total;
done:
    cJSON_Delete(results);
    for (int i = 0; i < n_paths; i++) free(paths[i]);
    free(paths);
    free(dets);
    free(input);
    yq_session_free(sess);
    yq_model_free(model);
    return rc;
}
