/* dn_dump: run Debian's darknet (pjreddie darknet 2018, the peer) on one image and dump the
 * tensors our FP32 graph is compared with.
 *
 *   dn_dump CFG WEIGHTS IMAGE OUT.bin [--size WxH]
 *
 * The image is read with load_image_color(path, 0, 0), letterboxed to the network's w x h with
 * letterbox_image, and run through network_predict with batch 1.  --size overrides the [net]
 * width/height of the cfg (done by loading a rewritten copy of the cfg, because darknet's
 * resize_network exits on layer types it cannot resize, such as [dropout]).
 *
 * OUT.bin format, version 1 (all values little-endian, no padding):
 *
 *   char[4]  magic "YQDN"
 *   int32    version (1)
 *   int32    n_tensors
 *   n_tensors records:
 *     int32    name_len
 *     char[]   name (name_len bytes, no terminating NUL)
 *     int32    c, h, w
 *     float32  data[c*h*w]      (CHW, darknet's layout)
 *
 * Tensor 0 is the letterboxed input ("input", 3 x net.h x net.w, values in [0,1]).
 * Then, for every layer i of type YOLO or REGION in network order, the tensor that feeds it:
 * the output of layer i-1, named "layer_<i-1>", shaped out_c x out_h x out_w of that layer.
 * These are raw head inputs (before darknet's logistic activation inside the head), so they do
 * not depend on how a head decodes (darknet 2018 ignores scale_x_y, for instance).
 *
 * One line on stdout per run: the shapes written and the load/predict times.  darknet's layer
 * table goes to stderr.  Any failure prints one "dn_dump: ..." line and exits with status 1
 * (2 for a usage error).  darknet itself may exit() on a malformed cfg, and it does not check
 * reads of the weights file (a truncated file loads as garbage): this is the peer, not the
 * validator.  An image darknet cannot decode is caught (see load_image_checked).  The output is
 * written to OUT.bin.tmp and renamed when complete, so a failed run leaves no half-written dump.
 */
#include <darknet.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DN_DUMP_VERSION 1

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("dn_dump: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- little-endian writer: every write checked, the first failure names the file ---- */

typedef struct {
    FILE *f;
    const char *path;
} out_file;

/* A failed write removes the partial file before exiting. */
static void out_fail(out_file *o, const char *what)
{
    int e = errno;
    fclose(o->f);
    unlink(o->path);
    die("%s: %s failed: %s", o->path, what, strerror(e));
}

static void put_bytes(out_file *o, const void *p, size_t n)
{
    if (n && fwrite(p, 1, n, o->f) != n) out_fail(o, "write");
}

static void put_u32(out_file *o, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    put_bytes(o, b, 4);
}

static void put_i32(out_file *o, int32_t v) { put_u32(o, (uint32_t)v); }

static void put_floats(out_file *o, const float *x, size_t n)
{
    unsigned char buf[4096];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        buf[k++] = (unsigned char)u;
        buf[k++] = (unsigned char)(u >> 8);
        buf[k++] = (unsigned char)(u >> 16);
        buf[k++] = (unsigned char)(u >> 24);
        if (k == sizeof buf) {
            put_bytes(o, buf, k);
            k = 0;
        }
    }
    put_bytes(o, buf, k);
}

static void put_tensor(out_file *o, const char *name, int c, int h, int w, const float *values)
{
    size_t len = strlen(name);
    put_i32(o, (int32_t)len);
    put_bytes(o, name, len);
    put_i32(o, c);
    put_i32(o, h);
    put_i32(o, w);
    put_floats(o, values, (size_t)c * (size_t)h * (size_t)w);
}

/* ---- --size: copy the cfg with [net] width/height replaced ---- */

static int is_net_header(const char *line)
{
    while (*line == ' ' || *line == '\t') line++;
    return strncmp(line, "[net]", 5) == 0 || strncmp(line, "[network]", 9) == 0;
}

/* 1 if the line sets `key` (darknet strips all whitespace before splitting at '='). */
static int sets_key(const char *line, const char *key)
{
    char k[64];
    size_t n = 0;
    for (const char *p = line; *p && *p != '=' && *p != '\n'; p++) {
        if (*p == ' ' || *p == '\t' || *p == '\r') continue;
        if (n + 1 >= sizeof k) return 0;
        k[n++] = *p;
    }
    k[n] = 0;
    return strchr(line, '=') != NULL && strcmp(k, key) == 0;
}

/* Writes a temporary copy of cfg_path whose [net] section has width=w, height=h.
 * Returns the temporary path (caller unlinks and frees it). */
static char *rewrite_cfg_size(const char *cfg_path, int w, int h)
{
    FILE *in = fopen(cfg_path, "r");
    if (!in) die("%s: cannot open cfg: %s", cfg_path, strerror(errno));

    const char *tmpdir = getenv("TMPDIR");
    if (!tmpdir || !*tmpdir) tmpdir = "/tmp";
    size_t plen = strlen(tmpdir) + 32;
    char *tmp = malloc(plen);
    if (!tmp) die("out of memory");
    snprintf(tmp, plen, "%s/dn_dump_XXXXXX", tmpdir);
    int fd = mkstemp(tmp);
    if (fd < 0) die("%s: cannot create temporary cfg: %s", tmp, strerror(errno));
    FILE *out = fdopen(fd, "w");
    if (!out) die("%s: fdopen failed: %s", tmp, strerror(errno));

    char line[4096];
    int in_net = 0, seen_net = 0;
    while (fgets(line, sizeof line, in)) {
        const char *s = line;
        while (*s == ' ' || *s == '\t') s++;
        if (*s == '[') in_net = 0;
        if (is_net_header(line)) {
            in_net = seen_net = 1;
            if (fprintf(out, "%swidth=%d\nheight=%d\n", line, w, h) < 0)
                die("%s: write failed", tmp);
            continue;
        }
        if (in_net && (sets_key(line, "width") || sets_key(line, "height"))) continue;
        if (fputs(line, out) == EOF) die("%s: write failed", tmp);
    }
    if (ferror(in)) die("%s: read error", cfg_path);
    fclose(in);
    if (fclose(out) != 0) die("%s: write failed: %s", tmp, strerror(errno));
    if (!seen_net) {
        unlink(tmp);
        die("%s: no [net] section to set --size in", cfg_path);
    }
    return tmp;
}

/* darknet's OpenCV loader reports an undecodable image only by printing a line, running
 * `echo PATH >> bad.list` in the working directory, and returning a blank 10x10 image.  So the
 * image is loaded from inside an empty temporary directory: a bad.list appearing there is the
 * failure signal, and nothing is left behind in the caller's directory. */
static image load_image_checked(const char *img_path)
{
    char *abs_img = realpath(img_path, NULL);
    if (!abs_img) die("%s: %s", img_path, strerror(errno));

    const char *tmpdir = getenv("TMPDIR");
    if (!tmpdir || !*tmpdir) tmpdir = "/tmp";
    char dir[4096], bad[4200];
    if (snprintf(dir, sizeof dir, "%s/dn_dump_img_XXXXXX", tmpdir) >= (int)sizeof dir)
        die("TMPDIR too long");
    if (!mkdtemp(dir)) die("%s: cannot create temporary directory: %s", dir, strerror(errno));
    snprintf(bad, sizeof bad, "%s/bad.list", dir);

    int cwd = open(".", O_RDONLY | O_DIRECTORY);
    if (cwd < 0) die("cannot open the working directory: %s", strerror(errno));
    if (chdir(dir) != 0) die("%s: chdir failed: %s", dir, strerror(errno));
    image im = load_image_color(abs_img, 0, 0);
    if (fchdir(cwd) != 0) die("cannot return to the working directory: %s", strerror(errno));
    close(cwd);

    int failed = access(bad, F_OK) == 0;
    unlink(bad);
    rmdir(dir);
    free(abs_img);
    if (failed || !im.data || im.w <= 0 || im.h <= 0 || im.c != 3)
        die("%s: darknet cannot decode this image", img_path);
    return im;
}

static void parse_size(const char *s, int *w, int *h)
{
    char extra;
    if (sscanf(s, "%dx%d%c", w, h, &extra) != 2 || *w <= 0 || *h <= 0 || *w > 16384 || *h > 16384)
        die("--size: expected WxH with positive integers, got '%s'", s);
}

static void usage(void)
{
    fprintf(stderr, "usage: dn_dump CFG WEIGHTS IMAGE OUT.bin [--size WxH] [--dets FILE]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *pos[4];
    int npos = 0, sw = 0, sh = 0;
    const char *dets_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--dets") == 0) {
            if (++i >= argc) usage();
            dets_path = argv[i];
        } else if (strcmp(argv[i], "--size") == 0) {
            if (++i >= argc) usage();
            parse_size(argv[i], &sw, &sh);
        } else if (strncmp(argv[i], "--size=", 7) == 0) {
            parse_size(argv[i] + 7, &sw, &sh);
        } else if (argv[i][0] == '-' && argv[i][1] == '-') {
            usage();
        } else {
            if (npos == 4) usage();
            pos[npos++] = argv[i];
        }
    }
    if (npos != 4) usage();
    const char *cfg = pos[0], *weights = pos[1], *img_path = pos[2], *out_path = pos[3];

    /* darknet reports a missing file by exit(0) (file_error), so check readability first. */
    const char *inputs[3] = {cfg, weights, img_path};
    for (int i = 0; i < 3; i++)
        if (access(inputs[i], R_OK) != 0) die("%s: %s", inputs[i], strerror(errno));

    char *tmp_cfg = sw ? rewrite_cfg_size(cfg, sw, sh) : NULL;

    double t0 = now_s();
    network *net = load_network(tmp_cfg ? tmp_cfg : (char *)cfg, (char *)weights, 0);
    if (tmp_cfg) {
        unlink(tmp_cfg);
        free(tmp_cfg);
    }
    if (!net) die("%s: load_network failed", cfg);
    set_batch_network(net, 1);
    double t_load = now_s() - t0;
    if (net->c != 3 || net->w <= 0 || net->h <= 0)
        die("%s: unsupported network input %dx%dx%d (need 3 channels)", cfg, net->w, net->h, net->c);

    image im = load_image_checked(img_path);
    image sized = letterbox_image(im, net->w, net->h);
    if (!sized.data) die("%s: letterbox_image failed", img_path);

    t0 = now_s();
    network_predict(net, sized.data);
    double t_pred = now_s() - t0;

    int n_heads = 0;
    for (int i = 0; i < net->n; i++) {
        LAYER_TYPE t = net->layers[i].type;
        if (t != YOLO && t != REGION) continue;
        if (i == 0) die("%s: head at layer 0 has no producer", cfg);
        layer p = net->layers[i - 1];
        if (!p.output || (long)p.out_c * p.out_h * p.out_w != p.outputs || p.outputs <= 0)
            die("%s: layer %d (feeding head %d) has no usable output (%dx%dx%d, outputs %d)", cfg,
                i - 1, i, p.out_c, p.out_h, p.out_w, p.outputs);
        n_heads++;
    }
    if (n_heads == 0) die("%s: no [yolo] or [region] layer", cfg);

    size_t tlen = strlen(out_path) + 5;
    char *tmp_out = malloc(tlen);
    if (!tmp_out) die("out of memory");
    snprintf(tmp_out, tlen, "%s.tmp", out_path);
    out_file o = {fopen(tmp_out, "wb"), tmp_out};
    if (!o.f) die("%s: cannot create: %s", tmp_out, strerror(errno));

    put_bytes(&o, "YQDN", 4);
    put_i32(&o, DN_DUMP_VERSION);
    put_i32(&o, 1 + n_heads);
    put_tensor(&o, "input", 3, net->h, net->w, sized.data);

    printf("%s: input 3x%dx%d", out_path, net->h, net->w);
    for (int i = 0; i < net->n; i++) {
        LAYER_TYPE t = net->layers[i].type;
        if (t != YOLO && t != REGION) continue;
        layer p = net->layers[i - 1];
        char name[32];
        snprintf(name, sizeof name, "layer_%d", i - 1);
        put_tensor(&o, name, p.out_c, p.out_h, p.out_w, p.output);
        printf(", %s %dx%dx%d (%s)", name, p.out_c, p.out_h, p.out_w, t == YOLO ? "yolo" : "region");
    }
    if (fflush(o.f) != 0 || ferror(o.f)) out_fail(&o, "write");
    if (fclose(o.f) != 0) {
        int e = errno;
        unlink(tmp_out);
        die("%s: close failed: %s", tmp_out, strerror(e));
    }
    if (rename(tmp_out, out_path) != 0) {
        int e = errno;
        unlink(tmp_out);
        die("%s: cannot rename to %s: %s", tmp_out, out_path, strerror(e));
    }
    printf("; load %.1f ms, predict %.1f ms\n", t_load * 1e3, t_pred * 1e3);
    free(tmp_out);

    /* --dets: darknet's own detections, as `darknet detect` makes them (thresh .25,
     * hier .5, letterboxed boxes mapped back, do_nms_sort at .45): one line per
     * (box, class) with prob > .25: "class prob x y w h", pixels, top-left, clipped. */
    if (dets_path) {
        int nboxes = 0, classes = net->layers[net->n - 1].classes;
        detection *dets = get_network_boxes(net, im.w, im.h, .25f, .5f, 0, 1, &nboxes);
        do_nms_sort(dets, nboxes, classes, .45f);
        FILE *df = fopen(dets_path, "w");
        if (!df) die("%s: cannot create: %s", dets_path, strerror(errno));
        for (int i = 0; i < nboxes; i++)
            for (int k = 0; k < classes; k++) {
                if (!(dets[i].prob[k] > .25f)) continue;
                box b = dets[i].bbox;
                float x0 = (b.x - b.w / 2) * im.w, y0 = (b.y - b.h / 2) * im.h;
                float x1 = (b.x + b.w / 2) * im.w, y1 = (b.y + b.h / 2) * im.h;
                if (x0 < 0) x0 = 0;
                if (y0 < 0) y0 = 0;
                if (x1 > im.w) x1 = im.w;
                if (y1 > im.h) y1 = im.h;
                fprintf(df, "%d %.7f %.3f %.3f %.3f %.3f\n", k, dets[i].prob[k], x0, y0, x1 - x0, y1 - y0);
            }
        if (fclose(df) != 0) die("%s: write failed", dets_path);
        free_detections(dets, nboxes);
    }

    free_image(sized);
    free_image(im);
    free_network(net);
    return 0;
}
