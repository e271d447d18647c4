/* Calibration cache in HDF5 (layout in calib/cache.h).
 *
 * HDF5 prints its error stack to stderr by default; library code must not print,
 * so every entry point runs its HDF5 calls inside H5E_BEGIN_TRY / H5E_END_TRY
 * (which saves and restores the library's reporting) and turns the innermost
 * HDF5 message into the one line of yq_error.
 *
 * A store is a read-modify-write of the whole file: the other entries are copied
 * (H5Ocopy, which also drops the space a replaced entry held) into path.tmp, the
 * new entry is added, and path.tmp is renamed onto path.  Two processes storing
 * at once (a sweep run in parallel) are serialised by an flock on path.tmp, so
 * the second one copies the first one's entry instead of losing it.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>
#include <openssl/evp.h>

#include "calib/cache.h"
#include "ir/fsio.h"
#include "runtime/h5mem.h"
#include "runtime/h5util.h"

/* v2: statistics of the exact FP32 chains (calib/observe.h), the same on every device; a v1
 * entry (OpenBLAS or cuDNN sums) is a miss, not a silently different package. */
#define KEY_TAG "yquant calib key v2"
#define MAX_BINS (1 << 24)                /* as yq_hist_init accepts */
#define CHUNK_BYTES (256 * 1024)

/* --- key ------------------------------------------------------------------ */

void yq_calib_key(const yq_graph *g, const uint8_t images_sha256[32], int letterbox, int stage,
                  uint8_t key[32])
{
    memset(key, 0, 32);
    EVP_MD_CTX *mc = EVP_MD_CTX_new();
    unsigned int len = 0;
    if (!mc || !EVP_DigestInit_ex(mc, EVP_sha256(), NULL)) { EVP_MD_CTX_free(mc); return; }
    /* Fixed-width fields in a fixed order; the bin count is in because a cached
     * histogram of another resolution would not be what observe makes now. */
    /* the preprocessing as it runs: a letterbox is the model's (darknet's 1, Ultralytics' 2) */
    int32_t lb = yq_letterbox_kind(g, letterbox);
    int32_t head[5] = { lb, stage, YQ_CALIB_BINS, g ? g->n_nodes : -1, 0 };
    EVP_DigestUpdate(mc, KEY_TAG, sizeof KEY_TAG);
    EVP_DigestUpdate(mc, head, sizeof head);
    EVP_DigestUpdate(mc, images_sha256, 32);
    if (g) {
        /* model_sha256 is zero for synthetic weights: the weights hashed below
         * and the node records still tell graphs apart. */
        EVP_DigestUpdate(mc, g->model_sha256, 32);
        for (int i = 0; i < g->n_nodes; i++) {
            const yq_node *n = &g->nodes[i];
            int32_t rec[8 + YQ_MAX_SRC] = { n->op, n->act, n->out.c, n->out.h, n->out.w, n->n_src,
                                            n->op == YQ_OP_CONV ? n->p.conv.filters : 0, 0 };
            for (int k = 0; k < n->n_src && k < YQ_MAX_SRC; k++) rec[8 + k] = n->src[k];
            EVP_DigestUpdate(mc, rec, sizeof rec);
            if (n->op != YQ_OP_CONV) continue;
            int64_t nw = n->w ? n->n_w : -1;
            EVP_DigestUpdate(mc, &nw, sizeof nw);
            if (n->w) EVP_DigestUpdate(mc, n->w, sizeof *n->w * (size_t)n->n_w);
            if (n->b) EVP_DigestUpdate(mc, n->b, sizeof *n->b * (size_t)n->p.conv.filters);
        }
    }
    if (!EVP_DigestFinal_ex(mc, key, &len)) memset(key, 0, 32);
    EVP_MD_CTX_free(mc);
}

/* --- HDF5 helpers of the cache's own (the shared ones: runtime/h5util.h) ---- */

static void h5_close(hid_t *id)
{
    if (*id < 0) return;
    switch (H5Iget_type(*id)) {
    case H5I_FILE: H5Fclose(*id); break;
    case H5I_GROUP: H5Gclose(*id); break;
    case H5I_DATASET: H5Dclose(*id); break;
    case H5I_ATTR: H5Aclose(*id); break;
    case H5I_DATASPACE: H5Sclose(*id); break;
    case H5I_DATATYPE: H5Tclose(*id); break;
    case H5I_GENPROP_LST: H5Pclose(*id); break;
    default: break;
    }
    *id = H5I_INVALID_HID;
}

static hid_t fapl_new(int locking)
{
    hid_t fa = H5Pcreate(H5P_FILE_ACCESS);
    if (fa < 0) return fa;
    /* Locking where the file system has it; where it has not (some NFS), read anyway. */
    H5Pset_file_locking(fa, locking ? 1 : 0, 1);
    /* H5Fclose then really closes (and flushes) the file before it is renamed. */
    H5Pset_fclose_degree(fa, H5F_CLOSE_STRONG);
    return fa;
}

/* Opens a one-value attribute of class cls: 1 opened, 0 absent, -1 malformed. */
static int attr_open(hid_t loc, const char *name, H5T_class_t cls, hid_t *a, hid_t *t)
{
    *a = *t = H5I_INVALID_HID;
    htri_t ex = H5Aexists(loc, name);
    if (ex == 0) return 0;
    if (ex < 0) return -1;
    hid_t sp = H5I_INVALID_HID;
    *a = H5Aopen(loc, name, H5P_DEFAULT);
    if (*a >= 0) *t = H5Aget_type(*a);
    if (*a >= 0) sp = H5Aget_space(*a);
    int ok = *t >= 0 && sp >= 0 && H5Tget_class(*t) == cls && H5Sget_simple_extent_npoints(sp) == 1;
    h5_close(&sp);
    if (!ok) { h5_close(t); h5_close(a); }
    return ok ? 1 : -1;
}

/* A string attribute (runtime/h5util.h's reader) into buf: 1 read, 0 absent, -1 not one
 * string, longer than cap - 1 bytes or unreadable. */
static int attr_get_str(hid_t loc, const char *name, char *buf, size_t cap)
{
    hid_t a, t;
    int r = attr_open(loc, name, H5T_STRING, &a, &t);
    if (r != 1) return r;
    char *s = NULL;
    r = yq_h5_str_read(a, 1, 0, cap - 1, &s) == 1 ? 1 : -1;
    if (r == 1) memcpy(buf, s, strlen(s) + 1);
    free(s);
    h5_close(&t);
    h5_close(&a);
    return r;
}

/* A chunked dataset with a checksum, compressed where the library can. */
static int ds_put(hid_t loc, const char *name, hid_t ftype, hid_t mtype, int rank,
                  const hsize_t *dims, const void *buf)
{
    hid_t sp = H5Screate_simple(rank, dims, NULL), dc = H5Pcreate(H5P_DATASET_CREATE), d = H5I_INVALID_HID;
    int ok = sp >= 0 && dc >= 0;
    hsize_t chunk[2] = { dims[0], rank > 1 ? dims[1] : 1 };
    size_t row = H5Tget_size(ftype) * (rank > 1 ? (size_t)dims[1] : 1);
    hsize_t rows = row ? CHUNK_BYTES / row : 1;
    if (rows < 1) rows = 1;
    if (chunk[0] > rows) chunk[0] = rows;
    if (ok && dims[0] > 0 && chunk[1] > 0) {
        ok = H5Pset_chunk(dc, rank, chunk) >= 0;
        if (ok && H5Zfilter_avail(H5Z_FILTER_SHUFFLE) > 0) ok = H5Pset_shuffle(dc) >= 0;
        if (ok && H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0) ok = H5Pset_deflate(dc, 4) >= 0;
        if (ok) ok = H5Pset_fletcher32(dc) >= 0;      /* last: it checks what is stored */
    }
    if (ok) d = H5Dcreate2(loc, name, ftype, sp, H5P_DEFAULT, dc, H5P_DEFAULT);
    ok = ok && d >= 0 && H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0;
    h5_close(&d);
    h5_close(&dc);
    h5_close(&sp);
    return ok ? 0 : -1;
}

/* Reads dataset name of class cls and exactly dims into buf; on failure says why. */
static int ds_get(hid_t loc, const char *name, H5T_class_t cls, hid_t mtype, int rank,
                  const hsize_t *dims, void *buf, char *why, size_t cap)
{
    hid_t d = H5I_INVALID_HID, sp = H5I_INVALID_HID, t = H5I_INVALID_HID;
    int r = -1;
    htri_t ex = H5Lexists(loc, name, H5P_DEFAULT);
    if (ex <= 0) {
        snprintf(why, cap, "dataset %s is missing", name);
        return -1;
    }
    d = H5Dopen2(loc, name, H5P_DEFAULT);
    if (d >= 0) { sp = H5Dget_space(d); t = H5Dget_type(d); }
    if (d < 0 || sp < 0 || t < 0) {
        char w[YQ_H5_WHY];
        snprintf(why, cap, "dataset %s cannot be opened (%s)", name, yq_h5_why(w));
        goto done;
    }
    hsize_t got[2] = { 0, 0 };
    int rk = H5Sget_simple_extent_ndims(sp);
    if (rk != rank || H5Sget_simple_extent_dims(sp, got, NULL) != rank ||
        got[0] != dims[0] || (rank > 1 && got[1] != dims[1])) {
        if (rank == 1)
            snprintf(why, cap, "dataset %s has %s%llu values, expected %llu", name, rk == 1 ? "" : "not 1-D, ",
                     (unsigned long long)got[0], (unsigned long long)dims[0]);
        else
            snprintf(why, cap, "dataset %s is %s%llux%llu, expected %llux%llu", name, rk == 2 ? "" : "not 2-D, ",
                     (unsigned long long)got[0], (unsigned long long)got[1],
                     (unsigned long long)dims[0], (unsigned long long)dims[1]);
        goto done;
    }
    if (H5Tget_class(t) != cls) {
        snprintf(why, cap, "dataset %s is not %s", name, cls == H5T_FLOAT ? "floating point" : "integer");
        goto done;
    }
    if (dims[0] > 0 && H5Dread(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        char w[YQ_H5_WHY];
        snprintf(why, cap, "dataset %s cannot be read (%s)", name, yq_h5_why(w));
        goto done;
    }
    r = 0;
done:
    h5_close(&t);
    h5_close(&sp);
    h5_close(&d);
    return r;
}

static yq_status check_format(hid_t f, const char *path, yq_error *err)
{
    char fmt[64];
    int ver = 0;
    int r = attr_get_str(f, "format", fmt, sizeof fmt);
    if (r == 0)
        return yq_fail(err, YQ_ERR_FORMAT, "%s: an HDF5 file, but not a yquant calibration cache (no format attribute)", path);
    if (r < 0 || strcmp(fmt, YQ_CALIB_CACHE_FORMAT))
        return yq_fail(err, YQ_ERR_FORMAT, "%s: an HDF5 file, but not a yquant calibration cache (format is not \"%s\")",
                       path, YQ_CALIB_CACHE_FORMAT);
    if (yq_h5_attr_get_int(f, "version", &ver) != 1)
        return yq_fail(err, YQ_ERR_FORMAT, "%s: damaged calibration cache: no readable version attribute", path);
    if (ver != YQ_CALIB_CACHE_VERSION)
        return yq_fail(err, YQ_ERR_UNSUPPORTED, "%s: calibration cache version %d; this yquant reads version %d"
                       " (delete the file to rebuild it)", path, ver, YQ_CALIB_CACHE_VERSION);
    return YQ_OK;
}

/* Opens an existing cache read-only after checking that it is one. */
static yq_status open_cache(const char *path, hid_t *f, yq_error *err)
{
    *f = H5I_INVALID_HID;
    if (H5Fis_hdf5(path) <= 0)
        return yq_fail(err, YQ_ERR_FORMAT, "%s: not an HDF5 file (a damaged or foreign calibration cache)", path);
    hid_t fa = fapl_new(1);
    *f = H5Fopen(path, H5F_ACC_RDONLY, fa);
    char w[YQ_H5_WHY] = "";
    yq_status st = YQ_OK;
    if (*f < 0)
        st = yq_fail(err, YQ_ERR_FORMAT, "%s: damaged calibration cache: HDF5 cannot open it (%s)", path, yq_h5_why(w));
    h5_close(&fa);
    if (st == YQ_OK) st = check_format(*f, path, err);
    if (st != YQ_OK) h5_close(f);
    return st;
}

/* --- load ------------------------------------------------------------------- */

static yq_status damaged(yq_error *err, const char *path, const char *hex, const char *why)
{
    return yq_fail(err, YQ_ERR_FORMAT, "%s: damaged calibration cache: entry %.12s...: %s", path, hex, why);
}

/* Range 0 or a power of two; counts finite, >= 0, summing to n; min/max/absmax as yq_hist_add leaves them. */
static const char *hist_check(const double *c, int nbins, double range, double n, double n_nan, double n_inf,
                              float absmax, float mn, float mx)
{
    int e;
    if (!(range == 0 || (isfinite(range) && range > 0 && frexp(range, &e) == 0.5))) return "range is not 0 or a power of two";
    if (!(isfinite(n) && n >= 0 && isfinite(n_nan) && n_nan >= 0 && isfinite(n_inf) && n_inf >= 0))
        return "a count is negative or not finite";
    double sum = 0;
    for (int k = 0; k < nbins; k++) {
        if (!(isfinite(c[k]) && c[k] >= 0)) return "a bin count is negative or not finite";
        if (range == 0 && k > 0 && c[k] != 0) return "values beyond bin 0 with range 0";
        sum += c[k];
    }
    if (fabs(sum - n) > 1e-9 * fmax(1.0, n)) return "the bin counts do not sum to n";
    if (absmax != fmaxf(fabsf(mn), fabsf(mx)) || (n == 0 && (mn != 0 || mx != 0)) || mn > mx)
        return "min, max and absmax disagree";
    return NULL;
}

static yq_status read_entry(hid_t grp, const char *path, const char *hex, const yq_graph *g,
                            yq_calib_stats **out, yq_error *err)
{
    char why[300], s[80];
    int n_nodes = 0, nbins = 0, images = 0, skipped = 0;
    uint8_t isha[32];
    if (attr_get_str(grp, "key", s, sizeof s) != 1 || strcmp(s, hex))
        return damaged(err, path, hex, "its key attribute is missing or differs from its name");
    if (yq_h5_attr_get_int(grp, "n_nodes", &n_nodes) != 1 || yq_h5_attr_get_int(grp, "nbins", &nbins) != 1 ||
        yq_h5_attr_get_int(grp, "images", &images) != 1 || yq_h5_attr_get_int(grp, "skipped", &skipped) != 1)
        return damaged(err, path, hex, "attribute n_nodes, nbins, images or skipped is missing or not an integer");
    if (attr_get_str(grp, "images_sha256", s, sizeof s) != 1 || !yq_hex_decode(s, isha, 32))
        return damaged(err, path, hex, "attribute images_sha256 is missing or not 64 hex digits");
    if (n_nodes != g->n_nodes) {
        snprintf(why, sizeof why, "%d nodes, the graph has %d", n_nodes, g->n_nodes);
        return damaged(err, path, hex, why);
    }
    if (nbins < 2 || nbins > MAX_BINS || nbins % 2) {
        snprintf(why, sizeof why, "nbins %d (must be even, in [2, %d])", nbins, MAX_BINS);
        return damaged(err, path, hex, why);
    }
    if (images < 0 || skipped < 0) return damaged(err, path, hex, "a negative image count");

    size_t N = (size_t)n_nodes;
    hsize_t d1[1] = { N }, d2[2] = { N, (hsize_t)nbins };
    int32_t *chan = malloc(N * sizeof *chan);
    double *sc = malloc(4 * N * sizeof *sc);          /* range, n, n_nan, n_inf */
    float *fc = malloc(3 * N * sizeof *fc);           /* absmax, min, max */
    double *counts = malloc(N * (size_t)nbins * sizeof *counts);
    double *ch_mean = NULL;
    float *ch_max = NULL;
    yq_calib_stats *cs = NULL;
    yq_status st = YQ_OK;
    if (!chan || !sc || !fc || !counts) { st = yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory reading the cache", path); goto done; }

    if (ds_get(grp, "channels", H5T_INTEGER, H5T_NATIVE_INT32, 1, d1, chan, why, sizeof why)) {
        st = damaged(err, path, hex, why);
        goto done;
    }
    long sumc = 0;
    for (int i = 0; i < n_nodes; i++) {
        if (chan[i] != g->nodes[i].out.c) {
            snprintf(why, sizeof why, "node %d (%s) has %d channels, the graph %d", i, g->nodes[i].name,
                     (int)chan[i], g->nodes[i].out.c);
            st = damaged(err, path, hex, why);
            goto done;
        }
        sumc += chan[i];
    }
    hsize_t dc[1] = { (hsize_t)sumc };
    ch_mean = malloc((size_t)(sumc ? sumc : 1) * sizeof *ch_mean);
    ch_max = malloc((size_t)(sumc ? sumc : 1) * sizeof *ch_max);
    if (!ch_mean || !ch_max) { st = yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory reading the cache", path); goto done; }

    static const char *const dnames[4] = { "range", "n", "n_nan", "n_inf" };
    static const char *const fnames[3] = { "absmax", "min", "max" };
    int bad = ds_get(grp, "counts", H5T_FLOAT, H5T_NATIVE_DOUBLE, 2, d2, counts, why, sizeof why);
    for (int k = 0; k < 4 && !bad; k++)
        bad = ds_get(grp, dnames[k], H5T_FLOAT, H5T_NATIVE_DOUBLE, 1, d1, sc + k * N, why, sizeof why);
    for (int k = 0; k < 3 && !bad; k++)
        bad = ds_get(grp, fnames[k], H5T_FLOAT, H5T_NATIVE_FLOAT, 1, d1, fc + k * N, why, sizeof why);
    if (!bad) bad = ds_get(grp, "ch_mean", H5T_FLOAT, H5T_NATIVE_DOUBLE, 1, dc, ch_mean, why, sizeof why);
    if (!bad) bad = ds_get(grp, "ch_max", H5T_FLOAT, H5T_NATIVE_FLOAT, 1, dc, ch_max, why, sizeof why);
    if (bad) { st = damaged(err, path, hex, why); goto done; }

    for (int i = 0; i < n_nodes; i++) {
        const char *w = hist_check(counts + (size_t)i * nbins, nbins, sc[i], sc[N + i], sc[2 * N + i], sc[3 * N + i],
                                   fc[i], fc[N + i], fc[2 * N + i]);
        if (w) {
            snprintf(why, sizeof why, "node %d (%s): %s", i, g->nodes[i].name, w);
            st = damaged(err, path, hex, why);
            goto done;
        }
    }

    st = yq_calib_stats_new(n_nodes, g, &cs, err);
    if (st != YQ_OK) goto done;
    cs->images = images;
    cs->skipped = skipped;
    memcpy(cs->images_sha256, isha, 32);
    long off = 0;
    for (int i = 0; i < n_nodes && st == YQ_OK; i++) {
        yq_hist *h = &cs->hist[i];
        if (h->nbins != nbins) {           /* stats_new made YQ_CALIB_BINS */
            yq_hist_free(h);
            st = yq_hist_init(h, nbins, err);
            if (st != YQ_OK) break;
        }
        /* init left the scratch lanes zero, as yq_hist_add expects between calls */
        memcpy(h->counts, counts + (size_t)i * nbins, (size_t)nbins * sizeof *counts);
        h->range = sc[i];
        h->n = sc[N + i];
        h->n_nan = sc[2 * N + i];
        h->n_inf = sc[3 * N + i];
        h->absmax = fc[i];
        h->min = fc[N + i];
        h->max = fc[2 * N + i];
        memcpy(cs->ch_mean[i], ch_mean + off, (size_t)chan[i] * sizeof *ch_mean);
        memcpy(cs->ch_max[i], ch_max + off, (size_t)chan[i] * sizeof *ch_max);
        off += chan[i];
    }
done:
    if (st == YQ_OK) *out = cs;
    else yq_calib_stats_free(cs);
    free(chan);
    free(sc);
    free(fc);
    free(counts);
    free(ch_mean);
    free(ch_max);
    return st;
}

static yq_status load_file(const char *path, const uint8_t key[32], const yq_graph *g,
                           yq_calib_stats **out, yq_error *err)
{
    hid_t f, grp = H5I_INVALID_HID;
    yq_status st = open_cache(path, &f, err);
    if (st != YQ_OK) return st;
    char hex[65];
    yq_hex_encode(key, 32, hex);
    char w[YQ_H5_WHY] = "";
    htri_t ex = H5Lexists(f, hex, H5P_DEFAULT);
    if (ex < 0) {
        st = yq_fail(err, YQ_ERR_FORMAT, "%s: damaged calibration cache: cannot look up entry %.12s... (%s)",
                     path, hex, yq_h5_why(w));
    } else if (ex > 0) {
        grp = H5Gopen2(f, hex, H5P_DEFAULT);
        if (grp < 0) st = damaged(err, path, hex, "not a group");
        else st = read_entry(grp, path, hex, g, out, err);
    }                                         /* else: a miss */
    h5_close(&grp);
    h5_close(&f);
    return st;
}

yq_status yq_calib_cache_load(const char *path, const uint8_t key[32], const yq_graph *g,
                              yq_calib_stats **out, yq_error *err)
{
    if (out) *out = NULL;
    if (!path || !key || !g || !out) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_calib_cache_load: NULL argument");
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno == ENOENT) return YQ_OK;    /* no cache yet: a miss */
        return yq_fail(err, YQ_ERR_IO, "%s: %s", path, strerror(errno));
    }
    if (!S_ISREG(sb.st_mode)) return yq_fail(err, YQ_ERR_IO, "%s: not a regular file", path);
    yq_status st;
    H5E_BEGIN_TRY {
        st = load_file(path, key, g, out, err);
    } H5E_END_TRY;
    return st;
}

/* --- store ------------------------------------------------------------------ */

typedef struct copy_ctx { hid_t dst; const char *skip; char failed[80]; char w[YQ_H5_WHY]; } copy_ctx;

static herr_t copy_cb(hid_t loc, const char *name, const H5L_info_t *info, void *ctx)
{
    copy_ctx *c = ctx;
    (void)info;
    if (!strcmp(name, c->skip)) return 0;     /* the entry being replaced */
    if (H5Ocopy(loc, name, c->dst, name, H5P_DEFAULT, H5P_DEFAULT) < 0) {
        snprintf(c->failed, sizeof c->failed, "%s", name);
        yq_h5_why(c->w);
        return -1;
    }
    return 0;
}

static yq_status write_entry(hid_t f, const char *tmp, const char *hex, const yq_graph *g,
                             const yq_calib_stats *cs, yq_error *err)
{
    size_t N = (size_t)cs->n_nodes;
    int nbins = cs->hist[0].nbins;
    long sumc = 0;
    for (int i = 0; i < cs->n_nodes; i++) sumc += g->nodes[i].out.c;
    int32_t *chan = malloc(N * sizeof *chan);
    double *sc = malloc(4 * N * sizeof *sc);
    float *fc = malloc(3 * N * sizeof *fc);
    double *counts = malloc(N * (size_t)nbins * sizeof *counts);
    double *ch_mean = malloc((size_t)(sumc ? sumc : 1) * sizeof *ch_mean);
    float *ch_max = malloc((size_t)(sumc ? sumc : 1) * sizeof *ch_max);
    hid_t grp = H5I_INVALID_HID;
    yq_status st = YQ_OK;
    if (!chan || !sc || !fc || !counts || !ch_mean || !ch_max) {
        st = yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory writing the cache", tmp);
        goto done;
    }
    long off = 0;
    for (size_t i = 0; i < N; i++) {
        const yq_hist *h = &cs->hist[i];
        int c = g->nodes[i].out.c;
        chan[i] = c;
        memcpy(counts + i * (size_t)nbins, h->counts, (size_t)nbins * sizeof *counts);
        sc[i] = h->range;
        sc[N + i] = h->n;
        sc[2 * N + i] = h->n_nan;
        sc[3 * N + i] = h->n_inf;
        fc[i] = h->absmax;
        fc[N + i] = h->min;
        fc[2 * N + i] = h->max;
        memcpy(ch_mean + off, cs->ch_mean[i], (size_t)c * sizeof *ch_mean);
        memcpy(ch_max + off, cs->ch_max[i], (size_t)c * sizeof *ch_max);
        off += c;
    }
    char isha[65], created[32];
    yq_hex_encode(cs->images_sha256, 32, isha);
    time_t now = time(NULL);
    struct tm tm;
    if (!gmtime_r(&now, &tm) || !strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(created, sizeof created, "unknown");

    hsize_t d1[1] = { N }, d2[2] = { N, (hsize_t)nbins }, dc[1] = { (hsize_t)sumc };
    static const char *const dnames[4] = { "range", "n", "n_nan", "n_inf" };
    static const char *const fnames[3] = { "absmax", "min", "max" };
    grp = H5Gcreate2(f, hex, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    char w[YQ_H5_WHY] = "";           /* an attribute's failure: HDF5's message, taken then */
    int bad = grp < 0 || yq_h5_attr_put_str(grp, "key", hex, w) || yq_h5_attr_put_int(grp, "n_nodes", cs->n_nodes, w) ||
              yq_h5_attr_put_int(grp, "nbins", nbins, w) || yq_h5_attr_put_int(grp, "images", cs->images, w) ||
              yq_h5_attr_put_int(grp, "skipped", cs->skipped, w) || yq_h5_attr_put_str(grp, "images_sha256", isha, w) ||
              yq_h5_attr_put_str(grp, "created", created, w) ||
              ds_put(grp, "counts", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, d2, counts) ||
              ds_put(grp, "channels", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, d1, chan) ||
              ds_put(grp, "ch_mean", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 1, dc, ch_mean) ||
              ds_put(grp, "ch_max", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, dc, ch_max);
    for (int k = 0; k < 4 && !bad; k++) bad = ds_put(grp, dnames[k], H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 1, d1, sc + k * N);
    for (int k = 0; k < 3 && !bad; k++) bad = ds_put(grp, fnames[k], H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, d1, fc + k * N);
    if (bad) st = yq_fail(err, YQ_ERR_IO, "%s: cannot write the cache entry (%s)", tmp, w[0] ? w : yq_h5_why(w));
done:
    h5_close(&grp);
    free(chan);
    free(sc);
    free(fc);
    free(counts);
    free(ch_mean);
    free(ch_max);
    return st;
}

/* The new cache is made in memory (runtime/h5mem.h) and its bytes written into tmp
 * through fd, the locked descriptor: a full disk is then a write error here, never an
 * HDF5 file left half-closed. */
static yq_status store_file(const char *path, const char *tmp, int fd, int have_old, const uint8_t key[32],
                            const yq_graph *g, const yq_calib_stats *cs, yq_error *err)
{
    hid_t old = H5I_INVALID_HID, f = H5I_INVALID_HID, fa = H5I_INVALID_HID;
    char hex[65];
    yq_hex_encode(key, 32, hex);
    char w[YQ_H5_WHY] = "";
    yq_h5mem mem = { NULL, 0 };
    yq_status st = have_old ? open_cache(path, &old, err) : YQ_OK;
    if (st != YQ_OK) return st;               /* not ours to overwrite */
    fa = yq_h5mem_fapl(&mem);
    if (fa >= 0) H5Pset_fclose_degree(fa, H5F_CLOSE_STRONG);
    f = fa < 0 ? H5I_INVALID_HID : H5Fcreate(YQ_H5MEM_NAME, H5F_ACC_TRUNC, H5P_DEFAULT, fa);
    if (f < 0) {
        st = yq_fail(err, YQ_ERR_IO, "%s: cannot create (%s)", tmp, yq_h5_why(w));
        goto done;
    }
    if (yq_h5_attr_put_str(f, "format", YQ_CALIB_CACHE_FORMAT, w) ||
        yq_h5_attr_put_int(f, "version", YQ_CALIB_CACHE_VERSION, w)) {
        st = yq_fail(err, YQ_ERR_IO, "%s: cannot write (%s)", tmp, w);
        goto done;
    }
    if (old >= 0) {
        copy_ctx c = { .dst = f, .skip = hex };
        if (H5Literate(old, H5_INDEX_NAME, H5_ITER_INC, NULL, copy_cb, &c) < 0) {
            if (c.failed[0])
                st = yq_fail(err, YQ_ERR_FORMAT, "%s: damaged calibration cache: entry %.12s... cannot be copied (%s)",
                             path, c.failed, c.w);
            else
                st = yq_fail(err, YQ_ERR_FORMAT, "%s: damaged calibration cache: cannot list its entries (%s)",
                             path, yq_h5_why(w));
            goto done;
        }
    }
    st = write_entry(f, tmp, hex, g, cs, err);
    if (st == YQ_OK && H5Fclose(f) < 0) st = yq_fail(err, YQ_ERR_IO, "%s: cannot write (%s)", tmp, yq_h5_why(w));
    f = H5I_INVALID_HID;
    if (st == YQ_OK) {
        size_t n = yq_h5mem_image(&mem), done_n = 0;
        if (!n) st = yq_fail(err, YQ_ERR_IO, "%s: HDF5 returned no file image", tmp);
        else if (ftruncate(fd, 0) != 0) st = yq_fail(err, YQ_ERR_IO, "%s: %s", tmp, strerror(errno));
        while (st == YQ_OK && done_n < n) {
            ssize_t k = pwrite(fd, (const char *)mem.kept + done_n, n - done_n, (off_t)done_n);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) st = yq_fail(err, YQ_ERR_IO, "%s: write failed: %s", tmp, k < 0 ? strerror(errno) : "no progress");
            else done_n += (size_t)k;
        }
    }
done:
    h5_close(&f);
    h5_close(&fa);
    h5_close(&old);
    yq_h5mem_free(&mem);
    return st;
}

/* Opens and flocks tmp.  After the lock is granted, tmp must still name the file
 * locked: a previous writer may have renamed it onto path meanwhile. */
static yq_status lock_tmp(const char *tmp, int *fd, yq_error *err)
{
    for (int tries = 0; tries < 100; tries++) {
        *fd = open(tmp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (*fd < 0) return yq_fail(err, YQ_ERR_IO, "%s: cannot create (%s)", tmp, strerror(errno));
        if (flock(*fd, LOCK_EX) != 0) {
            int e = errno;
            close(*fd);
            *fd = -1;
            return yq_fail(err, YQ_ERR_IO, "%s: cannot lock (%s)", tmp, strerror(e));
        }
        struct stat a, b;
        if (fstat(*fd, &a) == 0 && stat(tmp, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) return YQ_OK;
        close(*fd);
        *fd = -1;
    }
    return yq_fail(err, YQ_ERR_IO, "%s: cannot lock (it keeps being replaced)", tmp);
}

yq_status yq_calib_cache_store(const char *path, const uint8_t key[32], const yq_graph *g,
                               const yq_calib_stats *cs, yq_error *err)
{
    if (!path || !key || !g || !cs) return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_calib_cache_store: NULL argument");
    if (cs->n_nodes != g->n_nodes || cs->n_nodes < 1 || !cs->hist || !cs->ch_mean || !cs->ch_max)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_calib_cache_store: statistics of %d nodes for a graph of %d",
                       cs->n_nodes, g->n_nodes);
    for (int i = 0; i < cs->n_nodes; i++)
        if (!cs->hist[i].counts || cs->hist[i].nbins != cs->hist[0].nbins || !cs->ch_mean[i] || !cs->ch_max[i])
            return yq_fail(err, YQ_ERR_INVALID_ARG, "yq_calib_cache_store: node %d: histogram or channel "
                           "statistics missing, or its bins differ from node 0's", i);
    /* A symlink's target is the file replaced (the link stays); a device or FIFO is refused. */
    char target[YQ_PATH_MAX];
    yq_status rs = yq_resolve_target(path, target, sizeof target, err);
    if (rs != YQ_OK) return rs;
    struct stat tb;
    if (stat(target, &tb) == 0 && !S_ISREG(tb.st_mode))
        return yq_fail(err, YQ_ERR_IO, "%s: not a regular file (a calibration cache is replaced as a whole)", path);
    path = target;
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "calibration cache path too long: %.200s...", path);

    int fd;
    yq_status st = lock_tmp(tmp, &fd, err);
    if (st != YQ_OK) return st;
    /* Read path only under the lock: an entry stored meanwhile is then copied, not lost. */
    struct stat sb;
    int have_old = stat(path, &sb) == 0;
    if (!have_old && errno != ENOENT) st = yq_fail(err, YQ_ERR_IO, "%s: %s", path, strerror(errno));
    if (st == YQ_OK) {
        H5E_BEGIN_TRY {
            st = store_file(path, tmp, fd, have_old, key, g, cs, err);
        } H5E_END_TRY;
    }
    if (st == YQ_OK && fsync(fd) != 0) st = yq_fail(err, YQ_ERR_IO, "%s: %s", tmp, strerror(errno));
    if (st == YQ_OK && rename(tmp, path) != 0)
        st = yq_fail(err, YQ_ERR_IO, "%s: cannot rename %s onto it (%s)", path, tmp, strerror(errno));
    if (st != YQ_OK) unlink(tmp);
    close(fd);                                /* releases the lock, after the rename */
    return st;
}
