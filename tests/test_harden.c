/* Regression tests of the hardening work (issue 15), each failing before its fix:
 *  - the qconfig text of a model with every per-layer key set on 600 layers: complete,
 *    never past its buffer (guard bytes), and read back to the same text;
 *  - a qconfig line longer than the reader's limit is an error naming its line, never a
 *    setting parsed from its tail; a NUL byte in a line is an error;
 *  - an error message is one line even when a file name in it holds a newline;
 *  - output files (ir/fsio.h): a symlink is followed and stays a link, a device is written
 *    in place and never replaced, a folder or a missing folder is refused before any byte,
 *    a failed write (RLIMIT_FSIZE: as a full disk) leaves the old file and no temporary,
 *    temporaries have unique names;
 *  - images: a JPEG with data cut out of its middle (libjpeg warns, OpenCV decoded it) is
 *    an error naming the file, nothing printed; a tiny JPEG or PNG declaring 180 Mpx is
 *    refused from its header; the libjpeg decoder gives OpenCV's pixels on every shared
 *    JPEG and on the fuzzer's seeds (grey, progressive, CMYK; memcmp of the floats). */
#define _GNU_SOURCE      /* memmem */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>
#include "tests/test.h"
#include "datasets/fileio.h"
#include "datasets/image.h"
#include "datasets/image_jpeg.h"
#include "ir/fsio.h"
#include "quant/qconfig.h"
#include "tests/peer/opencv_decode.h"

static char tmpdir[64];

static const char *tpath(const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static void write_file(const char *path, const char *text, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(text, 1, n, f) == n && fclose(f) == 0);
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return buf;
}

static int count_tmp(void) { return test_count_tmp(tmpdir); }

/* ---- qconfig ------------------------------------------------------------ */

static yq_qconfig qc, back;

static void t_qconfig_text_large(void)
{
    yq_error err;
    yq_qconfig_defaults(&qc);
    char k[64], v[64];
    /* every per-layer key on 600 layers: beyond the 64 KiB the callers once allocated */
    for (int i = 0; i < 600; i++) {
        static const char *keys[] = { "bits", "weights", "weight_scale", "calib", "skip", "thresh" };
        static const char *vals[] = { "6", "per_tensor", "power2", "percentile:99.9", "off", "0.125" };
        for (int j = 0; j < 6; j++) {
            snprintf(k, sizeof k, "layer.%d.%s", i, keys[j]);
            snprintf(v, sizeof v, "%s", vals[j]);
            CHECKF(yq_qconfig_set(&qc, k, v, "t", &err) == YQ_OK, "%s", err.msg);
        }
    }
    size_t need = yq_qconfig_str(&qc, NULL, 0);
    CHECKF(need > 65536, "text of %zu bytes", need);
    /* a short buffer: cut and terminated, the guard after it untouched */
    char small[1000 + 16];
    memset(small, 0x5a, sizeof small);
    size_t r = yq_qconfig_str(&qc, small, 1000);
    CHECK(r == need && small[999] == 0 && strlen(small) == 999);
    for (int i = 1000; i < (int)sizeof small; i++) CHECKF((unsigned char)small[i] == 0x5a, "byte %d past the buffer written", i);
    char *t = yq_qconfig_text(&qc);
    CHECK(t && strlen(t) == need);
    CHECK(strstr(t, "layer.599.thresh = 0.125\n"));
    /* read back: the same text */
    write_file(tpath("big.qc"), t, strlen(t));
    yq_qconfig_defaults(&back);
    CHECKF(yq_qconfig_load(&back, tpath("big.qc"), &err) == YQ_OK, "%s", err.msg);
    char *t2 = yq_qconfig_text(&back);
    CHECK(t2 && !strcmp(t, t2));
    free(t);
    free(t2);
}

/* values that once changed on the way through the text: a threshold a float cannot hold,
 * a percentile printed with too few digits */
static void t_qconfig_exact(void)
{
    yq_error err;
    yq_qconfig_defaults(&qc);
    CHECK(yq_qconfig_set(&qc, "layer.3.thresh", "1e-50", "t", &err) == YQ_ERR_INVALID_ARG);
    CHECK(yq_qconfig_set(&qc, "layer.3.thresh", "1e-40", "t", &err) == YQ_OK && yq_qc_thresh(&qc, 3) > 0);
    CHECK(yq_qconfig_set(&qc, "calib", "percentile:99.9999999999", "t", &err) == YQ_OK);
    char *t = yq_qconfig_text(&qc);
    CHECK(t && strstr(t, "calib = percentile:99.9999999999\n"));
    write_file(tpath("exact.qc"), t, strlen(t));
    yq_qconfig_defaults(&back);
    CHECKF(yq_qconfig_load(&back, tpath("exact.qc"), &err) == YQ_OK, "%s", err.msg);
    CHECK(back.calib.percentile == qc.calib.percentile && yq_qc_thresh(&back, 3) == yq_qc_thresh(&qc, 3));
    free(t);
}

static void t_qconfig_long_line(void)
{
    yq_error err;
    /* line 2: a comment of 5000 bytes whose tail reads "bits = 2" */
    size_t n = 0;
    static char text[8192];
    n += (size_t)snprintf(text + n, sizeof text - n, "bits = 8\n# ");
    while (n < 5000) text[n++] = 'x';
    n += (size_t)snprintf(text + n, sizeof text - n, " bits = 2\nweights = per_tensor\n");
    write_file(tpath("long.qc"), text, n);
    yq_qconfig_defaults(&qc);
    yq_status st = yq_qconfig_load(&qc, tpath("long.qc"), &err);
    CHECKF(st == YQ_ERR_INVALID_ARG, "status %d: a %zu-byte line was accepted", st, n);
    CHECKF(strstr(err.msg, "long.qc:2:") && strstr(err.msg, "longer than"), "%s", err.msg);
    CHECK(qc.bits == 8);
    /* at the limit: accepted (the newline not counted) */
    n = 0;
    n += (size_t)snprintf(text + n, sizeof text - n, "bits = 6 #");
    while (n < YQ_QC_MAX_LINE) text[n++] = 'y';
    text[n++] = '\n';
    write_file(tpath("edge.qc"), text, n);
    yq_qconfig_defaults(&qc);
    CHECKF(yq_qconfig_load(&qc, tpath("edge.qc"), &err) == YQ_OK, "%s", err.msg);
    CHECK(qc.bits == 6);
    /* a NUL byte hides the rest of a line from C strings: refused */
    write_file(tpath("nul.qc"), "bits = 8\nweights = per_tensor\0bits = 2\n", 39);
    CHECK(yq_qconfig_load(&qc, tpath("nul.qc"), &err) == YQ_ERR_INVALID_ARG);
    CHECKF(strstr(err.msg, "nul.qc:2:") && strstr(err.msg, "NUL"), "%s", err.msg);
    /* the line numbers of errors after long lines are right */
    n = 0;
    for (int i = 0; i < 3; i++) {
        n += (size_t)snprintf(text + n, sizeof text - n, "# ");
        for (int j = 0; j < 1500; j++) text[n++] = 'z';
        text[n++] = '\n';
    }
    n += (size_t)snprintf(text + n, sizeof text - n, "bits = 99\n");
    write_file(tpath("num.qc"), text, n);
    CHECK(yq_qconfig_load(&qc, tpath("num.qc"), &err) == YQ_ERR_INVALID_ARG);
    CHECKF(strstr(err.msg, "num.qc:4:"), "%s", err.msg);
}

/* an error is one line whatever its arguments hold; its own message may be an argument */
static void t_error_one_line(void)
{
    yq_error err;
    CHECK(yq_fail(&err, YQ_ERR_FORMAT, "%s: image '%s' missing", "ann.json", "a\nb\rc\x1b.jpg") == YQ_ERR_FORMAT);
    CHECKF(!strcmp(err.msg, "ann.json: image 'a\\nb\\rc\\x1b.jpg' missing"), "%s", err.msg);
    CHECK(err.code == YQ_ERR_FORMAT);
    yq_fail(&err, YQ_ERR_IO, "outer: %s", err.msg);
    CHECKF(!strcmp(err.msg, "outer: ann.json: image 'a\\nb\\rc\\x1b.jpg' missing"), "%s", err.msg);
    /* a message at the buffer's end: cut, terminated, never a half escape */
    char big[600];
    memset(big, '\n', sizeof big - 1);
    big[sizeof big - 1] = 0;
    yq_fail(&err, YQ_ERR_IO, "%s", big);
    CHECK(strlen(err.msg) < sizeof err.msg && !strchr(err.msg, '\n') && strlen(err.msg) % 2 == 0);
}

/* ---- output files ------------------------------------------------------- */

static void t_out_symlink(void)
{
    yq_error err;
    write_file(tpath("target.json"), "old\n", 4);
    unlink(tpath("link.json"));
    CHECK(symlink("target.json", tpath("link.json")) == 0);     /* relative, as users make them */
    CHECKF(yq_out_write_text(tpath("link.json"), "new\n", &err) == YQ_OK, "%s", err.msg);
    struct stat sb;
    CHECK(lstat(tpath("link.json"), &sb) == 0 && S_ISLNK(sb.st_mode));
    CHECK(!strcmp(read_all(tpath("target.json")), "new\n"));
    /* a dangling link: its target is created */
    unlink(tpath("dangle.json"));
    CHECK(symlink("made.json", tpath("dangle.json")) == 0);
    CHECKF(yq_out_write_text(tpath("dangle.json"), "x\n", &err) == YQ_OK, "%s", err.msg);
    CHECK(lstat(tpath("dangle.json"), &sb) == 0 && S_ISLNK(sb.st_mode) && !strcmp(read_all(tpath("made.json")), "x\n"));
    CHECK(count_tmp() == 0);
}

static void t_out_device(void)
{
    yq_error err;
    struct stat sb;
    /* written in place: /dev/null stays a device */
    CHECKF(yq_out_write_text("/dev/null", "{}\n", &err) == YQ_OK, "%s", err.msg);
    CHECK(stat("/dev/null", &sb) == 0 && S_ISCHR(sb.st_mode));
    /* /dev/full: the write error is reported, the device is not replaced */
    if (stat("/dev/full", &sb) == 0) {
        CHECK(yq_out_write_text("/dev/full", "{}\n", &err) == YQ_ERR_IO);
        CHECKF(strstr(err.msg, "/dev/full") && !strchr(err.msg, '\n'), "%s", err.msg);
        CHECK(stat("/dev/full", &sb) == 0 && S_ISCHR(sb.st_mode));
    }
    /* a FIFO: written in place, read back by a child */
    const char *fifo = tpath("pipe");
    unlink(fifo);
    CHECK(mkfifo(fifo, 0600) == 0);
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        FILE *f = fopen(fifo, "r");
        char b[16] = { 0 };
        size_t n = f ? fread(b, 1, sizeof b - 1, f) : 0;
        _exit(n == 5 && !strcmp(b, "fifo\n") ? 0 : 1);
    }
    CHECKF(yq_out_write_text(fifo, "fifo\n", &err) == YQ_OK, "%s", err.msg);
    int ws = 0;
    CHECK(waitpid(pid, &ws, 0) == pid && WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    CHECK(stat(fifo, &sb) == 0 && S_ISFIFO(sb.st_mode));
    /* a package (HDF5 by name) onto a device: refused */
    yq_outfile o;
    CHECK(yq_out_begin(&o, "/dev/null", YQ_OUT_NAMED, &err) == YQ_ERR_IO && strstr(err.msg, "not a regular file"));
    CHECK(count_tmp() == 0);
}

static void t_out_refused_early(void)
{
    yq_error err;
    CHECK(yq_out_check(tmpdir, &err) == YQ_ERR_IO && strstr(err.msg, "is a folder"));
    CHECK(yq_out_check(tpath("no/such/x.yqp"), &err) == YQ_ERR_IO && strstr(err.msg, "does not exist"));
    CHECK(yq_out_check(tpath("fine.yqp"), &err) == YQ_OK);
    CHECK(yq_out_check("-", &err) == YQ_OK && yq_out_check("/dev/null", &err) == YQ_OK);
    CHECK(yq_out_write_text(tpath("no/such/x.json"), "x", &err) == YQ_ERR_IO && strstr(err.msg, "does not exist"));
    CHECK(count_tmp() == 0);
    /* same file: through a link, and a hard link */
    write_file(tpath("a.jpg"), "a", 1);
    unlink(tpath("b.jpg"));
    unlink(tpath("c.jpg"));
    CHECK(symlink("a.jpg", tpath("b.jpg")) == 0 && link(tpath("a.jpg"), tpath("c.jpg")) == 0);
    CHECK(yq_same_file(tpath("a.jpg"), tpath("b.jpg")) && yq_same_file(tpath("a.jpg"), tpath("c.jpg")));
    CHECK(!yq_same_file(tpath("a.jpg"), tpath("target.json")) && !yq_same_file(tpath("a.jpg"), tpath("nothing")));
}

static void t_out_failed_write(void)
{
    write_file(tpath("keep.json"), "precious\n", 9);
    pid_t pid = test_fork_fsize(4096);
    if (pid == 0) {
        static char big[20000];
        memset(big, 'q', sizeof big - 1);
        yq_error err;
        yq_status st = yq_out_write_text(tpath("keep.json"), big, &err);
        _exit(st == YQ_ERR_IO && strstr(err.msg, "keep.json") && !strchr(err.msg, '\n') ? 0 : 1);
    }
    TEST_CHILD_OK(pid);
    CHECK(!strcmp(read_all(tpath("keep.json")), "precious\n"));
    CHECK(count_tmp() == 0);
    /* two writers at once get two temporaries */
    yq_outfile a, b;
    yq_error err;
    CHECK(yq_out_begin(&a, tpath("same.json"), YQ_OUT_STREAM, &err) == YQ_OK);
    CHECK(yq_out_begin(&b, tpath("same.json"), YQ_OUT_STREAM, &err) == YQ_OK);
    CHECK(strcmp(a.tmp, b.tmp) && count_tmp() == 2);
    fputs("a", a.f);
    fputs("b", b.f);
    CHECK(yq_out_commit(&a, &err) == YQ_OK);
    yq_out_abort(&b);
    CHECK(!strcmp(read_all(tpath("same.json")), "a") && count_tmp() == 0);
    /* what a SIGINT handler calls: the temporaries in flight are gone, the target untouched */
    CHECK(yq_out_begin(&a, tpath("same.json"), YQ_OUT_STREAM, &err) == YQ_OK);
    CHECK(yq_out_begin(&b, tpath("other.json"), YQ_OUT_NAMED, &err) == YQ_OK && count_tmp() == 2);
    yq_out_remove_pending();
    CHECK(count_tmp() == 0 && !strcmp(read_all(tpath("same.json")), "a"));
    yq_out_abort(&a);
    yq_out_abort(&b);
    /* the new file gets the old one's permissions */
    CHECK(chmod(tpath("same.json"), 0640) == 0);
    CHECK(yq_out_write_text(tpath("same.json"), "c", &err) == YQ_OK);
    struct stat sb;
    CHECK(stat(tpath("same.json"), &sb) == 0 && (sb.st_mode & 0777) == 0640);
}

/* ---- images ------------------------------------------------------------- */

static const char *data_dir(void) { const char *d = getenv("YQ_DATA"); return d && *d ? d : "../shared"; }

/* yq_image_load with fd 2 going to a file: *printed is what reached stderr (the image,
 * when it loads, is freed) */
static yq_status load_quietly(const char *path, yq_error *err, const char **printed)
{
    fflush(stderr);
    int saved = dup(2);
    FILE *cap = fopen(tpath("stderr.txt"), "w");
    CHECK(saved >= 0 && cap && dup2(fileno(cap), 2) >= 0);
    yq_image im;
    yq_status st = yq_image_load(path, &im, err);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fclose(cap);
    if (st == YQ_OK) yq_image_free(&im);
    *printed = read_all(tpath("stderr.txt"));
    return st;
}

static void t_image_corrupt(void)
{
    char dog[512];
    snprintf(dog, sizeof dog, "%s/datasets/darknet-samples/dog.jpg", data_dir());
    unsigned char *b;
    size_t n;
    yq_error err;
    if (yq_ds_read_file(dog, &b, &n, &err) != YQ_OK) TEST_SKIP("%s", err.msg);
    CHECK(n > 60000);
    /* 20 KB cut out of the entropy-coded data: the markers still walk to EOI */
    size_t cut = n / 3, len = 20000;
    memmove(b + cut, b + cut + len, n - cut - len);
    write_file(tpath("cut.jpg"), (const char *)b, n - len);
    free(b);
    const char *printed;
    yq_status st = load_quietly(tpath("cut.jpg"), &err, &printed);
    CHECKF(st == YQ_ERR_FORMAT, "status %d: a damaged JPEG decoded", st);
    CHECKF(strstr(err.msg, "cut.jpg") && strstr(err.msg, "corrupt JPEG") && !strchr(err.msg, '\n'), "%s", err.msg);
    CHECKF(!*printed, "printed: %s", printed);
}

/* a JPEG whose decoding fails midway (found by fuzz_image: the buffers allocated before the
 * failure were lost across libjpeg's longjmp); under make test-asan a leak fails this */
static void t_image_error_midway(void)
{
    yq_image im;
    yq_error err;
    const char *p = "fuzz/corpus/image/adobe-error-midway.bin";
    if (access(p, R_OK) != 0) TEST_SKIP("%s not found (run from the repository root)", p);
    yq_status st = yq_image_load(p, &im, &err);
    if (st == YQ_OK) yq_image_free(&im);
    CHECKF(st == YQ_ERR_FORMAT && strstr(err.msg, "corrupt JPEG") && !strchr(err.msg, '\n'), "status %d: %s", st, err.msg);
}

static void t_image_bomb(void)
{
    /* a baseline JPEG header (SOI, SOF0 12116x14895, SOS) with a few bytes of scan and EOI */
    static const unsigned char jpg[] = {
        0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x11, 0x08, 0x3A, 0x2F, 0x2F, 0x54, 0x03,
        0x01, 0x22, 0x00, 0x02, 0x11, 0x01, 0x03, 0x11, 0x01,
        0xFF, 0xDA, 0x00, 0x0C, 0x03, 0x01, 0x00, 0x02, 0x11, 0x03, 0x11, 0x00, 0x3F, 0x00,
        0x12, 0x34, 0xFF, 0xD9 };
    write_file(tpath("bomb.jpg"), (const char *)jpg, sizeof jpg);
    yq_image im;
    yq_error err;
    int w, h;
    CHECK(yq_image_size(tpath("bomb.jpg"), &w, &h, &err) == YQ_ERR_UNSUPPORTED);
    CHECKF(strstr(err.msg, "bomb.jpg") && strstr(err.msg, "megapixels"), "%s", err.msg);
    CHECK(yq_image_load(tpath("bomb.jpg"), &im, &err) == YQ_ERR_UNSUPPORTED);
    /* a PNG: IHDR 16000x16000, IEND */
    static const unsigned char png[] = {
        0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n',
        0, 0, 0, 13, 'I', 'H', 'D', 'R', 0, 0, 0x3E, 0x80, 0, 0, 0x3E, 0x80, 8, 2, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82 };
    write_file(tpath("bomb.png"), (const char *)png, sizeof png);
    CHECK(yq_image_load(tpath("bomb.png"), &im, &err) == YQ_ERR_UNSUPPORTED && strstr(err.msg, "megapixels"));
    /* the limit can be raised */
    yq_image_set_max_pixels(256L << 20);
    CHECK(yq_image_size(tpath("bomb.png"), &w, &h, &err) == YQ_OK && w == 16000);
    yq_image_set_max_pixels(0);
    CHECK(yq_image_max_pixels() == YQ_IMAGE_MAX_PIXELS_DEFAULT);
}

/* every JPEG and PNG under YQ_DATA/datasets and among the image fuzzer's seeds (grey,
 * progressive, restart markers, CMYK; palette, 16-bit, alpha, interlaced): yquant's
 * decoders (libjpeg, libpng) give OpenCV's pixels, memcmp of the floats */
static void t_decode_equals_opencv(void)
{
    static const char *sets[] = { "darknet-samples", "coco-mini/val2017/images", "coco-mini/val2017_unlabelled/images",
                                  "coco-mini/train2017/images" };
    int n_img[2] = { 0, 0 };
    for (size_t k = 0; k <= sizeof sets / sizeof *sets; k++) {
        char dir[512];
        if (k == sizeof sets / sizeof *sets) snprintf(dir, sizeof dir, "fuzz/corpus/image");
        else snprintf(dir, sizeof dir, "%s/datasets/%s", data_dir(), sets[k]);
        DIR *d = opendir(dir);
        for (struct dirent *e; d && (e = readdir(d));) {
            size_t l = strlen(e->d_name);
            int png = l > 4 && !strcmp(e->d_name + l - 4, ".png");
            if (!png && (l < 5 || strcmp(e->d_name + l - 4, ".jpg"))) continue;
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unsigned char *b;
            size_t n;
            yq_error err;
            int w, h;
            CHECKF(yq_ds_read_file(path, &b, &n, &err) == YQ_OK && yq_image_size(path, &w, &h, &err) == YQ_OK, "%s", err.msg);
            yq_image a, c;
            CHECKF(yq_image_load(path, &a, &err) == YQ_OK, "%s", err.msg);
            CHECKF(peer_opencv_decode(b, n, path, w, h, &c, &err) == YQ_OK, "%s", err.msg);
            CHECKF(!memcmp(a.data, c.data, sizeof(float) * 3 * (size_t)w * h), "%s: pixels differ from OpenCV's", path);
            yq_image_free(&a);
            yq_image_free(&c);
            free(b);
            n_img[png]++;
        }
        if (d) closedir(d);
    }
    if (!n_img[0] && !n_img[1]) TEST_SKIP("no JPEG or PNG under %s/datasets", data_dir());
    CHECKF(n_img[1] >= 5, "only %d PNGs (the fuzzer's seeds have more)", n_img[1]);
    printf("     %d JPEGs and %d PNGs: yquant's pixels equal OpenCV's\n", n_img[0], n_img[1]);
}

/* a damaged PNG (bad compressed data, too little of it) is one error line, nothing printed */
static void t_png_corrupt(void)
{
    const char *p = "fuzz/corpus/image/rgb.png";
    unsigned char *b;
    size_t n;
    yq_error err;
    if (yq_ds_read_file(p, &b, &n, &err) != YQ_OK) TEST_SKIP("%s", err.msg);
    /* the IDAT's data: flip a byte of it and fix the chunk's CRC, so zlib is what fails */
    unsigned char *idat = memmem(b, n, "IDAT", 4);
    CHECK(idat && idat - b >= 4);
    unsigned len = (unsigned)idat[-4] << 24 | (unsigned)idat[-3] << 16 | (unsigned)idat[-2] << 8 | idat[-1];
    CHECK(len > 8 && (size_t)(idat - b) + 8 + len <= n);
    idat[4 + 3] ^= 0xA5;
    unsigned long crc = crc32(0, idat, len + 4);
    unsigned char *c = idat + 4 + len;
    c[0] = (unsigned char)(crc >> 24), c[1] = (unsigned char)(crc >> 16), c[2] = (unsigned char)(crc >> 8), c[3] = (unsigned char)crc;
    write_file(tpath("bad.png"), (const char *)b, n);
    free(b);
    const char *printed;
    yq_status st = load_quietly(tpath("bad.png"), &err, &printed);
    CHECKF(st == YQ_ERR_FORMAT && strstr(err.msg, "bad.png") && strstr(err.msg, "corrupt PNG") && !strchr(err.msg, '\n'),
           "status %d: %s", st, err.msg);
    CHECKF(!*printed, "printed: %s", printed);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/yq_harden_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        printf("FAIL test_harden: mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    TEST(t_qconfig_text_large);
    TEST(t_qconfig_exact);
    TEST(t_qconfig_long_line);
    TEST(t_error_one_line);
    TEST(t_out_symlink);
    TEST(t_out_device);
    TEST(t_out_refused_early);
    TEST(t_out_failed_write);
    TEST(t_image_corrupt);
    TEST(t_image_error_midway);
    TEST(t_image_bomb);
    TEST(t_png_corrupt);
    TEST(t_decode_equals_opencv);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) printf("note: could not remove %s\n", tmpdir);
    return test_done();
}
