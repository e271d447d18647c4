/* calib/cache: the HDF5 calibration cache.
 *
 * Statistics are made on a small graph (tests/fixtures/tiny.cfg with synthetic
 * weights, or the same net embedded here) from deterministic data, stored and
 * loaded back: every field must come back bit for bit (memcmp of the counts and
 * the per-channel arrays).  Misses (no file, another key) are YQ_OK with NULL;
 * a truncated file, a foreign HDF5 file, a file that is not HDF5 and an entry
 * edited to be inconsistent are errors with a message that says so, and store
 * leaves such files alone.  The key must follow the weights (one ulp of one
 * weight), the stage, the preprocessing, the images and the input size.
 *
 * Run from the repository root (tests/run.sh does).  Files go to a mkdtemp
 * folder, removed at the end.  YQ_TEST_VERBOSE=1 prints the messages.
 */
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include "calib/cache.h"
#include "tests/test.h"

#define TINY "tests/fixtures/tiny.cfg"

/* tiny.cfg's net, for a checkout without the fixture. */
static const char tiny_cfg[] =
    "[net]\nwidth=32\nheight=32\nchannels=3\n"
    "[convolutional]\nbatch_normalize=1\nfilters=4\nsize=3\nstride=1\npad=1\nactivation=leaky\n"
    "[maxpool]\nsize=2\nstride=2\n"
    "[convolutional]\nfilters=4\nsize=1\nstride=1\npad=1\nactivation=linear\n"
    "[shortcut]\nfrom=-2\nactivation=linear\n"
    "[route]\nlayers=-1,-3\n"
    "[upsample]\nstride=2\n"
    "[convolutional]\nfilters=21\nsize=1\nstride=1\npad=1\nactivation=linear\n"
    "[yolo]\nmask=0,1,2\nanchors=10,14, 23,27, 37,58\nclasses=2\nnum=3\n";

static char dir[256];

/* YQ_TEST_VERBOSE=1 shows the error messages the tests provoke. */
static void note(const char *what, const char *msg)
{
    const char *v = getenv("YQ_TEST_VERBOSE");
    if (v && *v && strcmp(v, "0")) printf("#   %s: %s\n", what, msg);
}

static void path_in(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "%s/%s", dir, name); }

static long file_size(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 ? (long)sb.st_size : -1;
}

static int exists(const char *p) { return file_size(p) >= 0; }

/* The tiny graph with synthetic weights.  The cfg is checked to parse as text
 * first, so a broken fixture reads as such, not as a cache failure. */
static yq_graph *tiny_graph(int width)
{
    yq_error err;
    yq_import_opt opt = { .synthetic = 1, .seed = 7, .width = width, .height = width };
    char cfg[300];
    snprintf(cfg, sizeof cfg, "%s", TINY);
    if (!exists(TINY)) {
        path_in(cfg, sizeof cfg, "tiny.cfg");
        FILE *f = fopen(cfg, "w");
        CHECK(f && fwrite(tiny_cfg, 1, sizeof tiny_cfg - 1, f) == sizeof tiny_cfg - 1);
        fclose(f);
    }
    FILE *f = fopen(cfg, "rb");
    CHECK(f);
    static char text[8192];
    size_t len = fread(text, 1, sizeof text, f);
    fclose(f);
    yq_graph *g = NULL;
    CHECKF(yq_darknet_parse_cfg(text, len, cfg, &opt, &g, &err) == YQ_OK, "%s", err.msg);
    yq_graph_free(g);
    g = NULL;
    CHECKF(yq_darknet_load(cfg, NULL, &opt, &g, &err) == YQ_OK, "%s", err.msg);
    return g;
}

/* Deterministic statistics: every node gets its own values, a few of them large
 * (the range doubles), some nodes a NaN and an Inf, one node nothing at all. */
static yq_calib_stats *fake_stats(const yq_graph *g, int seed)
{
    yq_calib_stats *cs = NULL;
    yq_error err;
    CHECKF(yq_calib_stats_new(g->n_nodes, g, &cs, &err) == YQ_OK, "%s", err.msg);
    static float x[40000];
    for (int i = 0; i < g->n_nodes; i++) {
        if (i == 2) continue;                           /* an empty histogram */
        long n = 1000 + 997L * i;
        for (long k = 0; k < n; k++) {
            double v = sin(0.37 * (double)k + 7.0 * i + seed) * (1 + i);
            if (k % 13 == 0) v *= 10;
            if (i % 3 == 0 && k % 5 == 0) v = v > 0 ? v : 0;   /* zeros, as after a ReLU */
            x[k] = (float)v;
        }
        if (i % 2) { x[17] = NAN; x[23] = INFINITY; }
        yq_hist_add(&cs->hist[i], x, n);
        for (int c = 0; c < g->nodes[i].out.c; c++) {
            cs->ch_mean[i][c] = cos(0.1 * c + i + seed) / 3.0;
            cs->ch_max[i][c] = (float)(1.5 + c + i + seed);
        }
    }
    cs->images = 40 + seed;
    cs->skipped = seed % 3;
    for (int k = 0; k < 32; k++) cs->images_sha256[k] = (uint8_t)(k * 7 + seed);
    return cs;
}

static void check_same(const yq_graph *g, const yq_calib_stats *a, const yq_calib_stats *b)
{
    CHECK(b && a->n_nodes == b->n_nodes);
    CHECKF(a->images == b->images && a->skipped == b->skipped, "images %d/%d skipped %d/%d",
           a->images, b->images, a->skipped, b->skipped);
    CHECK(!memcmp(a->images_sha256, b->images_sha256, 32));
    for (int i = 0; i < a->n_nodes; i++) {
        const yq_hist *x = &a->hist[i], *y = &b->hist[i];
        CHECKF(x->nbins == y->nbins, "node %d: nbins %d vs %d", i, x->nbins, y->nbins);
        CHECKF(!memcmp(x->counts, y->counts, sizeof *x->counts * (size_t)x->nbins), "node %d: counts differ", i);
        CHECKF(!memcmp(&x->range, &y->range, sizeof x->range) && !memcmp(&x->n, &y->n, sizeof x->n) &&
               !memcmp(&x->n_nan, &y->n_nan, sizeof x->n_nan) && !memcmp(&x->n_inf, &y->n_inf, sizeof x->n_inf),
               "node %d: range/n/n_nan/n_inf differ", i);
        CHECKF(!memcmp(&x->absmax, &y->absmax, sizeof x->absmax) && !memcmp(&x->min, &y->min, sizeof x->min) &&
               !memcmp(&x->max, &y->max, sizeof x->max), "node %d: absmax/min/max differ", i);
        int c = g->nodes[i].out.c;
        CHECKF(!memcmp(a->ch_mean[i], b->ch_mean[i], sizeof **a->ch_mean * (size_t)c), "node %d: ch_mean differ", i);
        CHECKF(!memcmp(a->ch_max[i], b->ch_max[i], sizeof **a->ch_max * (size_t)c), "node %d: ch_max differ", i);
    }
}

static void key_of(const yq_graph *g, int stage, uint8_t key[32])
{
    uint8_t isha[32];
    memset(isha, 0xab, sizeof isha);
    yq_calib_key(g, isha, 1, stage, key);
}

static void store_ok(const char *path, const uint8_t key[32], const yq_graph *g, const yq_calib_stats *cs)
{
    yq_error err;
    CHECKF(yq_calib_cache_store(path, key, g, cs, &err) == YQ_OK, "store: %s", err.msg);
}

static yq_calib_stats *load_ok(const char *path, const uint8_t key[32], const yq_graph *g)
{
    yq_error err;
    yq_calib_stats *cs = (yq_calib_stats *)1;
    CHECKF(yq_calib_cache_load(path, key, g, &cs, &err) == YQ_OK, "load: %s", err.msg);
    return cs;
}

/* ---- tests ------------------------------------------------------------------ */

static void t_roundtrip(void)
{
    char p[300];
    path_in(p, sizeof p, "rt.h5");
    yq_graph *g = tiny_graph(0);
    yq_calib_stats *a = fake_stats(g, 1);
    CHECK(a->hist[1].n_nan == 1 && a->hist[1].n_inf == 1 && a->hist[2].n == 0);
    uint8_t key[32];
    key_of(g, 0, key);
    store_ok(p, key, g, a);
    char tmp[320];
    snprintf(tmp, sizeof tmp, "%s.tmp", p);
    CHECKF(!exists(tmp), "%s left behind", tmp);
    yq_calib_stats *b = load_ok(p, key, g);
    CHECK(b);
    check_same(g, a, b);
    /* The loaded histograms are live ones: more data gives the same bits as in
     * the original (the scratch lanes were restored empty). */
    static float x[40000];
    for (int k = 0; k < 40000; k++) x[k] = (float)(k % 101) * 0.5f;
    for (int i = 0; i < g->n_nodes; i++) {
        yq_hist_add(&a->hist[i], x, 40000);
        yq_hist_add(&b->hist[i], x, 40000);
    }
    check_same(g, a, b);
    yq_calib_stats_free(a);
    yq_calib_stats_free(b);
    yq_graph_free(g);
}

static void t_miss(void)
{
    char p[300];
    path_in(p, sizeof p, "miss.h5");
    yq_graph *g = tiny_graph(0);
    uint8_t k0[32], k1[32];
    key_of(g, 0, k0);
    key_of(g, 1, k1);
    CHECK(load_ok(p, k0, g) == NULL);               /* no file */
    CHECK(!exists(p));                              /* a load creates nothing */
    yq_calib_stats *a = fake_stats(g, 2);
    store_ok(p, k0, g, a);
    CHECK(load_ok(p, k1, g) == NULL);               /* another key */
    yq_calib_stats *b = load_ok(p, k0, g);
    check_same(g, a, b);
    yq_calib_stats_free(a);
    yq_calib_stats_free(b);
    yq_graph_free(g);
}

static void t_two_keys(void)
{
    char p[300];
    path_in(p, sizeof p, "two.h5");
    yq_graph *g = tiny_graph(0);
    uint8_t k0[32], k1[32];
    key_of(g, 0, k0);
    key_of(g, 1, k1);
    yq_calib_stats *a = fake_stats(g, 3), *b = fake_stats(g, 4);
    store_ok(p, k0, g, a);
    store_ok(p, k1, g, b);
    yq_calib_stats *la = load_ok(p, k0, g), *lb = load_ok(p, k1, g);
    check_same(g, a, la);
    check_same(g, b, lb);
    CHECK(memcmp(la->hist[5].counts, lb->hist[5].counts, sizeof(double) * YQ_CALIB_BINS));  /* really two */
    yq_calib_stats_free(a);
    yq_calib_stats_free(b);
    yq_calib_stats_free(la);
    yq_calib_stats_free(lb);
    yq_graph_free(g);
}

static void t_replace(void)
{
    char p[300];
    path_in(p, sizeof p, "replace.h5");
    yq_graph *g = tiny_graph(0);
    uint8_t k0[32], k1[32];
    key_of(g, 0, k0);
    key_of(g, 1, k1);
    yq_calib_stats *a = fake_stats(g, 5), *b = fake_stats(g, 6), *c = fake_stats(g, 7);
    store_ok(p, k1, g, c);
    store_ok(p, k0, g, a);
    long size1 = file_size(p);
    store_ok(p, k0, g, b);
    long size2 = file_size(p);
    yq_calib_stats *l0 = load_ok(p, k0, g), *l1 = load_ok(p, k1, g);
    check_same(g, b, l0);                           /* the new entry */
    check_same(g, c, l1);                           /* the other one kept */
    /* The replaced entry's space is not kept (the file is rewritten). */
    CHECKF(size2 < size1 + size1 / 5, "file grew from %ld to %ld bytes on a replacement", size1, size2);
    yq_calib_stats_free(a);
    yq_calib_stats_free(b);
    yq_calib_stats_free(c);
    yq_calib_stats_free(l0);
    yq_calib_stats_free(l1);
    yq_graph_free(g);
}

static void t_truncated(void)
{
    char p[300];
    path_in(p, sizeof p, "trunc.h5");
    yq_graph *g = tiny_graph(0);
    uint8_t key[32];
    key_of(g, 0, key);
    yq_calib_stats *a = fake_stats(g, 8);
    store_ok(p, key, g, a);
    long size = file_size(p);
    CHECK(size > 1000 && truncate(p, size / 2) == 0);
    yq_error err;
    yq_calib_stats *b = (yq_calib_stats *)1;
    yq_status st = yq_calib_cache_load(p, key, g, &b, &err);
    CHECKF(st != YQ_OK && b == NULL, "a truncated cache loaded (status %d)", st);
    CHECKF(strstr(err.msg, "damaged") && strstr(err.msg, p), "unclear message: %s", err.msg);
    note("truncated", err.msg);
    /* store refuses to replace it, and leaves it as it was */
    CHECK(yq_calib_cache_store(p, key, g, a, &err) != YQ_OK);
    CHECKF(strstr(err.msg, "damaged"), "unclear message: %s", err.msg);
    CHECK(file_size(p) == size / 2);
    yq_calib_stats_free(a);
    yq_graph_free(g);
}

static void t_foreign(void)
{
    char p[300], q[300];
    path_in(p, sizeof p, "foreign.h5");
    path_in(q, sizeof q, "text.h5");
    yq_graph *g = tiny_graph(0);
    uint8_t key[32];
    key_of(g, 0, key);
    /* an HDF5 file of someone else's: a dataset, no format attribute */
    hid_t f = H5Fcreate(p, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(f >= 0);
    hsize_t d[1] = { 4 };
    double v[4] = { 1, 2, 3, 4 };
    hid_t sp = H5Screate_simple(1, d, NULL);
    hid_t ds = H5Dcreate2(f, "data", H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(ds >= 0 && H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
    H5Dclose(ds);
    H5Sclose(sp);
    H5Fclose(f);
    long size = file_size(p);
    yq_error err;
    yq_calib_stats *b = (yq_calib_stats *)1;
    CHECK(yq_calib_cache_load(p, key, g, &b, &err) == YQ_ERR_FORMAT && b == NULL);
    CHECKF(strstr(err.msg, "not a yquant calibration cache") && strstr(err.msg, "format"), "unclear: %s", err.msg);
    note("foreign", err.msg);
    yq_calib_stats *a = fake_stats(g, 9);
    CHECK(yq_calib_cache_store(p, key, g, a, &err) == YQ_ERR_FORMAT);
    CHECK(file_size(p) == size);                    /* not overwritten */
    /* not HDF5 at all */
    FILE *t = fopen(q, "w");
    CHECK(t);
    fputs("threshold conv_0 1.5\n", t);
    fclose(t);
    CHECK(yq_calib_cache_load(q, key, g, &b, &err) == YQ_ERR_FORMAT && b == NULL);
    CHECKF(strstr(err.msg, "not an HDF5 file"), "unclear: %s", err.msg);
    CHECK(yq_calib_cache_store(q, key, g, a, &err) == YQ_ERR_FORMAT);
    CHECK(file_size(q) == 21);
    yq_calib_stats_free(a);
    yq_graph_free(g);
}

/* Rewrites one value of a dataset of the entry (checksums stay valid). */
static void poke(const char *p, const uint8_t key[32], const char *name, hsize_t at, double value)
{
    char hex[65];
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", key[i]);
    hid_t f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
    CHECK(f >= 0);
    hid_t grp = H5Gopen2(f, hex, H5P_DEFAULT);
    hid_t ds = grp >= 0 ? H5Dopen2(grp, name, H5P_DEFAULT) : -1;
    CHECK(ds >= 0);
    hid_t fs = H5Dget_space(ds);
    hsize_t one[1] = { 1 }, start[1] = { at };
    hid_t ms = H5Screate_simple(1, one, NULL);
    CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, one, NULL) >= 0);
    CHECK(H5Dwrite(ds, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, &value) >= 0);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(ds);
    H5Gclose(grp);
    H5Fclose(f);
}

static void t_inconsistent(void)
{
    char p[300];
    path_in(p, sizeof p, "edited.h5");
    yq_graph *g = tiny_graph(0);
    uint8_t key[32];
    key_of(g, 0, key);
    yq_calib_stats *a = fake_stats(g, 10);
    static const struct { const char *ds; int at; double v; const char *says; } edits[] = {
        { "n", 3, 12345, "sum to n" },
        { "channels", 1, 5, "channels" },
        { "range", 4, 3.0, "power of two" },
    };
    for (size_t e = 0; e < sizeof edits / sizeof *edits; e++) {
        store_ok(p, key, g, a);
        poke(p, key, edits[e].ds, (hsize_t)edits[e].at, edits[e].v);
        yq_error err;
        yq_calib_stats *b = (yq_calib_stats *)1;
        CHECKF(yq_calib_cache_load(p, key, g, &b, &err) == YQ_ERR_FORMAT && b == NULL,
               "an entry with %s edited loaded", edits[e].ds);
        CHECKF(strstr(err.msg, "damaged") && strstr(err.msg, edits[e].says), "unclear: %s", err.msg);
        note(edits[e].ds, err.msg);
        /* store replaces a bad entry: the file itself is sound */
        store_ok(p, key, g, a);
        b = load_ok(p, key, g);
        check_same(g, a, b);
        yq_calib_stats_free(b);
    }
    yq_calib_stats_free(a);
    yq_graph_free(g);
}

static void t_key(void)
{
    yq_graph *g = tiny_graph(0), *g64 = tiny_graph(64);
    uint8_t k0[32], k[32], isha[32];
    key_of(g, 0, k0);
    key_of(g, 0, k);
    CHECK(!memcmp(k0, k, 32));                      /* deterministic */
    key_of(g, 1, k);
    CHECK(memcmp(k0, k, 32));                       /* stage */
    memset(isha, 0xab, sizeof isha);
    yq_calib_key(g, isha, 0, 0, k);
    CHECK(memcmp(k0, k, 32));                       /* letterbox */
    isha[31] ^= 1;
    yq_calib_key(g, isha, 1, 0, k);
    CHECK(memcmp(k0, k, 32));                       /* images */
    key_of(g64, 0, k);
    CHECK(memcmp(k0, k, 32));                       /* input size */
    /* the letterbox as it runs: Ultralytics' (an ONNX model's) is not darknet's; no letterbox
     * is none whatever the model's */
    uint8_t kd[32], ku[32], kd0[32], ku0[32];
    memset(isha, 0xab, sizeof isha);
    yq_calib_key(g, isha, 1, 0, kd);
    yq_calib_key(g, isha, 0, 0, kd0);
    const int lb0 = g->letter_box;
    g->letter_box = 2;
    yq_calib_key(g, isha, 1, 0, ku);
    yq_calib_key(g, isha, 0, 0, ku0);
    g->letter_box = lb0;
    CHECK(lb0 != 2 && memcmp(kd, ku, 32) && !memcmp(kd0, ku0, 32));
    int c = 1;
    while (c < g->n_nodes && (g->nodes[c].op != YQ_OP_CONV || !g->nodes[c].w)) c++;
    CHECK(c < g->n_nodes);
    float *w = &g->nodes[c].w[g->nodes[c].n_w / 2];
    float saved = *w;
    *w = nextafterf(*w, INFINITY);                  /* one ulp of one weight, as CLE would change it */
    key_of(g, 0, k);
    CHECK(memcmp(k0, k, 32));
    *w = saved;
    key_of(g, 0, k);
    CHECK(!memcmp(k0, k, 32));
    g->nodes[c].b[0] += 1;                          /* a bias */
    key_of(g, 0, k);
    CHECK(memcmp(k0, k, 32));
    yq_graph_free(g);
    yq_graph_free(g64);
}

/* Histograms of another resolution come back at their own. */
static void t_other_bins(void)
{
    char p[300];
    path_in(p, sizeof p, "bins.h5");
    yq_graph *g = tiny_graph(0);
    yq_calib_stats *a = fake_stats(g, 11);
    static float x[5000];
    for (int i = 0; i < g->n_nodes; i++) {
        yq_error err;
        yq_hist_free(&a->hist[i]);
        CHECK(yq_hist_init(&a->hist[i], 64, &err) == YQ_OK);
        for (int k = 0; k < 5000; k++) x[k] = (float)sin(k * 0.01 + i);
        yq_hist_add(&a->hist[i], x, 5000);
    }
    uint8_t key[32];
    key_of(g, 0, key);
    store_ok(p, key, g, a);
    yq_calib_stats *b = load_ok(p, key, g);
    check_same(g, a, b);
    yq_calib_stats_free(a);
    yq_calib_stats_free(b);
    yq_graph_free(g);
}

static void t_unwritable(void)
{
    char f[300], p[340];
    path_in(f, sizeof f, "plainfile");
    FILE *t = fopen(f, "w");
    CHECK(t);
    fclose(t);
    snprintf(p, sizeof p, "%s/calib.h5", f);        /* a folder that is a file: even root cannot */
    yq_graph *g = tiny_graph(0);
    uint8_t key[32];
    key_of(g, 0, key);
    yq_calib_stats *a = fake_stats(g, 12);
    yq_error err;
    CHECK(yq_calib_cache_store(p, key, g, a, &err) == YQ_ERR_IO);
    CHECKF(strstr(err.msg, "calib.h5.tmp"), "unclear: %s", err.msg);
    yq_calib_stats *b = (yq_calib_stats *)1;
    CHECK(yq_calib_cache_load(p, key, g, &b, &err) == YQ_ERR_IO && b == NULL);   /* not a plain miss */
    yq_calib_stats_free(a);
    yq_graph_free(g);
}

/* A cache path that is a symlink: the target is replaced, the link stays; a device is
 * refused, never replaced by a regular file. */
static void t_symlink_device(void)
{
    char target[300], link_p[300];
    path_in(target, sizeof target, "real.h5");
    path_in(link_p, sizeof link_p, "link.h5");
    unlink(link_p);
    CHECK(symlink("real.h5", link_p) == 0);
    yq_graph *g = tiny_graph(0);
    uint8_t key[32];
    key_of(g, 0, key);
    yq_calib_stats *a = fake_stats(g, 3);
    store_ok(link_p, key, g, a);
    struct stat sb;
    CHECK(lstat(link_p, &sb) == 0 && S_ISLNK(sb.st_mode) && stat(target, &sb) == 0 && S_ISREG(sb.st_mode));
    yq_calib_stats *b = load_ok(target, key, g);
    CHECK(b);
    check_same(g, a, b);
    yq_calib_stats_free(b);
    yq_error err;
    CHECK(yq_calib_cache_store("/dev/null", key, g, a, &err) == YQ_ERR_IO && strstr(err.msg, "not a regular file"));
    CHECK(stat("/dev/null", &sb) == 0 && S_ISCHR(sb.st_mode));
    yq_calib_stats_free(a);
    yq_graph_free(g);
}

/* A full disk while storing (RLIMIT_FSIZE): one error line, the old cache intact, no
 * temporary, and the process exits cleanly (HDF5's exit handler runs). */
static void t_disk_full(void)
{
    char p[300], tmp[320];
    path_in(p, sizeof p, "full.h5");
    snprintf(tmp, sizeof tmp, "%s.tmp", p);
    yq_graph *g = tiny_graph(0);
    uint8_t key[32];
    key_of(g, 0, key);
    yq_calib_stats *a = fake_stats(g, 4);
    pid_t pid = test_fork_fsize(2048);
    if (pid == 0) {
        yq_error err;
        yq_status st = yq_calib_cache_store(p, key, g, a, &err);
        int ok = st == YQ_ERR_IO && !strchr(err.msg, '\n') && !exists(p) && !exists(tmp);
        if (!ok) fprintf(stderr, "disk full: status %d: %s\n", st, err.msg);
        yq_calib_stats_free(a);
        yq_graph_free(g);
        exit(ok ? 0 : 3);
    }
    TEST_CHILD_OK(pid);
    yq_calib_stats_free(a);
    yq_graph_free(g);
}

static void rm_dir(void)
{
    static const char *names[] = { "rt.h5", "miss.h5", "two.h5", "replace.h5", "trunc.h5", "foreign.h5",
                                   "text.h5", "edited.h5", "bins.h5", "plainfile", "tiny.cfg", "real.h5", "link.h5", "full.h5" };
    char p[300];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        path_in(p, sizeof p, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

int main(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/yq_cache_XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(dir)) { printf("FAIL test_cache: mkdtemp %s\n", dir); return 1; }
    TEST(t_roundtrip);
    TEST(t_miss);
    TEST(t_two_keys);
    TEST(t_replace);
    TEST(t_truncated);
    TEST(t_foreign);
    TEST(t_inconsistent);
    TEST(t_key);
    TEST(t_other_bins);
    TEST(t_unwritable);
    TEST(t_symlink_device);
    TEST(t_disk_full);
    rm_dir();
    return test_done();
}
