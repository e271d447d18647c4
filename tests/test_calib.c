/* calib/: the |x| histogram and the max / percentile / KL / MSE thresholds.
 *
 * Histogram cases are checked against hand-computed bins and against a brute-force
 * binning at the final range (the doubling must reproduce it exactly).  KL is
 * checked against a naive transcription of the TensorRT toolkit's loop (explicit
 * P and Q arrays) on random histograms; MSE against quantizing the raw samples.
 * YQ_TEST_VERBOSE=1 prints the thresholds observed.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "calib/hist.h"
#include "tests/test.h"

#define EMSG "%.400s"

static int verbose(void)
{
    const char *v = getenv("YQ_TEST_VERBOSE");
    return v && *v && strcmp(v, "0");
}
#define NOTE(...) do { if (verbose()) { printf("#   "); printf(__VA_ARGS__); printf("\n"); } } while (0)

/* --- data -------------------------------------------------------------- */

static uint64_t rng_state;
static void rng_seed(uint64_t s) { rng_state = s; }
static uint64_t rng_next(void)              /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double rng_u01(void) { return ((rng_next() >> 11) + 0.5) * (1.0 / 9007199254740992.0); } /* (0,1) */
static double rng_gauss(void)
{
    return sqrt(-2 * log(rng_u01())) * cos(6.283185307179586 * rng_u01());
}
static double rng_laplace(void)               /* scale 1 */
{
    double u = rng_u01() - 0.5;
    return u < 0 ? log(1 + 2 * u) : -log(1 - 2 * u);
}

static float *gen(long n, int kind, uint64_t seed)
{
    float *x = malloc((size_t)n * sizeof *x);
    if (!x) return NULL;
    rng_seed(seed);
    for (long i = 0; i < n; i++) {
        double v;
        switch (kind) {
        case 0: v = rng_gauss(); break;
        case 1: v = 2 * rng_u01() - 1; break;          /* U(-1, 1) */
        case 2: v = rng_laplace(); break;
        default: { double g = rng_gauss(); v = g > 0 ? g : 0; } /* ReLU(N(0,1)) */
        }
        x[i] = (float)v;
    }
    return x;
}
enum { GAUSS = 0, UNIFORM = 1, LAPLACE = 2, RELU = 3 };

static yq_hist mkhist(int nbins, const float *x, long n)
{
    yq_hist h;
    yq_error err;
    if (yq_hist_init(&h, nbins, &err) != YQ_OK) {
        snprintf(test_msg_, sizeof test_msg_, "yq_hist_init(%d): " EMSG, nbins, err.msg);
        longjmp(test_jmp_, 1);
    }
    yq_hist_add(&h, x, n);
    return h;
}

/* double: the float threshold, exactly, without -Wdouble-promotion noise */
static double thresh_of(const yq_hist *h, const char *method, int bits)
{
    yq_calib_method m;
    yq_error err;
    if (yq_calib_method_parse(method, &m, &err) != YQ_OK) {
        snprintf(test_msg_, sizeof test_msg_, "parse %s: " EMSG, method, err.msg);
        longjmp(test_jmp_, 1);
    }
    return yq_thresh(h, &m, bits);
}

static double sum_counts(const yq_hist *h)
{
    double s = 0;
    for (int k = 0; k < h->nbins; k++) s += h->counts[k];
    return s;
}

/* The histogram binning at the final range would give, computed directly. */
static void brute_counts(const float *x, long n, int nbins, double range, double *out)
{
    memset(out, 0, (size_t)nbins * sizeof *out);
    for (long i = 0; i < n; i++) {
        double a = fabs((double)x[i]);
        if (!isfinite(a)) continue;
        long b = (long)floor(a / range * nbins);
        out[b < nbins ? b : nbins - 1] += 1;
    }
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Mean squared error of quantizing the raw samples at threshold t. */
static double sim_mse(const float *x, long n, double t, int bits)
{
    double qmax = (1 << (bits - 1)) - 1, s = t / qmax, e = 0;
    for (long i = 0; i < n; i++) {
        double q = round((double)x[i] / s);
        q = q > qmax ? qmax : q < -qmax ? -qmax : q;
        double d = (double)x[i] - q * s;
        e += d * d;
    }
    return e / n;
}

/* --- histogram ------------------------------------------------------------ */

static void t_hist_init_errors(void)
{
    yq_hist h;
    yq_error err;
    int bad[] = { 0, 1, 3, -2, 2047, (1 << 24) + 2 };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.msg[0] = 0;
        CHECKF(yq_hist_init(&h, bad[i], &err) == YQ_ERR_INVALID_ARG, "nbins %d accepted", bad[i]);
        CHECKF(strstr(err.msg, "bins") != NULL, "message: " EMSG, err.msg);
        CHECK(h.counts == NULL);
        yq_hist_free(&h);                      /* a failed init frees safely */
    }
    CHECK(yq_hist_init(&h, 2, &err) == YQ_OK);
    yq_hist_free(&h);
    yq_hist_free(&h);                          /* twice: a no-op */
    yq_hist_free(NULL);
}

/* Hand-checked bins: 0.5 sets range 1; 1.5 doubles it to 2; 3.9 to 4 (w = 0.5). */
static void t_hist_bins(void)
{
    const float x[] = { 0.0f, 0.5f, 1.5f, -1.5f, 3.9f, 0.26f, -0.0f };
    yq_hist h = mkhist(8, x, 7);
    CHECKF(h.range == 4.0, "range %g", h.range);
    const double want[8] = { 3, 1, 0, 2, 0, 0, 0, 1 };   /* 0, 0.26, -0 | 0.5 | 1.5 x2 | 3.9 */
    for (int k = 0; k < 8; k++) CHECKF(h.counts[k] == want[k], "bin %d: %g, want %g", k, h.counts[k], want[k]);
    CHECK(h.n == 7 && h.n_nan == 0 && h.n_inf == 0);
    CHECK(h.min == -1.5f && h.max == 3.9f && h.absmax == 3.9f);
    CHECK(thresh_of(&h, "max", 8) == (double)3.9f);

    /* value by value, and reversed: the same histogram */
    yq_hist g, r;
    yq_error err;
    CHECK(yq_hist_init(&g, 8, &err) == YQ_OK && yq_hist_init(&r, 8, &err) == YQ_OK);
    for (int i = 0; i < 7; i++) yq_hist_add(&g, &x[i], 1);
    for (int i = 6; i >= 0; i--) yq_hist_add(&r, &x[i], 1);
    CHECK(g.range == 4.0 && r.range == 4.0);
    CHECK(!memcmp(g.counts, h.counts, 8 * sizeof *h.counts));
    CHECK(!memcmp(r.counts, h.counts, 8 * sizeof *h.counts));
    CHECK(g.absmax == 3.9f && r.min == -1.5f && g.n == 7);
    /* range is a power of two above the first value: 3 -> 4, 4 -> 8 */
    yq_hist a = mkhist(8, (const float[]){ 3.0f }, 1), b = mkhist(8, (const float[]){ -4.0f }, 1);
    CHECKF(a.range == 4 && a.counts[6] == 1, "range %g", a.range);
    CHECKF(b.range == 8 && b.counts[4] == 1 && b.absmax == 4 && b.min == -4, "range %g", b.range);
    yq_hist_free(&a);
    yq_hist_free(&b);
    yq_hist_free(&g);
    yq_hist_free(&r);
    yq_hist_free(&h);
}

/* Many doublings (1e-3 up to 1000) keep every count; each bin is what binning
 * at the final range gives; order and batching do not matter (lanes included). */
static void t_hist_doubling(void)
{
    const long n = 300000;
    const int nb = 2048;
    float *x = gen(n, LAPLACE, 7);
    double *ref = malloc(nb * sizeof *ref);
    CHECK(x && ref);
    x[0] = 1e-3f;                              /* first: a tiny range to start */
    x[n / 2] = -1000.0f;                       /* mid-call: many doublings at once */
    yq_hist h = mkhist(nb, x, n);              /* one call: the lanes path */
    CHECKF(h.range == 1024.0, "range %g", h.range);
    CHECK(h.n == n && sum_counts(&h) == n);
    CHECK(h.absmax == 1000.0f && h.min == -1000.0f);
    brute_counts(x, n, nb, h.range, ref);
    for (int k = 0; k < nb; k++) CHECKF(h.counts[k] == ref[k], "bin %d: %g vs %g", k, h.counts[k], ref[k]);

    /* uneven chunks, reversed order */
    float *y = malloc((size_t)n * sizeof *y);
    CHECK(y);
    for (long i = 0; i < n; i++) y[i] = x[n - 1 - i];
    yq_hist c;
    yq_error err;
    CHECK(yq_hist_init(&c, nb, &err) == YQ_OK);
    rng_seed(3);
    for (long i = 0; i < n;) {
        long len = 1 + (long)(rng_next() % 40000);
        if (len > n - i) len = n - i;
        yq_hist_add(&c, y + i, len);
        i += len;
    }
    CHECK(c.range == h.range && c.n == h.n && c.min == h.min && c.max == h.max);
    CHECK(!memcmp(c.counts, h.counts, nb * sizeof *h.counts));
    for (int l = 0; l < 3 * nb; l++) CHECK(c.lanes[l] == 0 && h.lanes[l] == 0);
    /* nbins not a power of two: the range still doubles exactly, binning is the same */
    yq_hist d = mkhist(2000, y, n);
    CHECK(d.range == h.range);
    brute_counts(x, n, 2000, d.range, ref);
    CHECK(!memcmp(d.counts, ref, 2000 * sizeof *ref));
    yq_hist_free(&d);
    yq_hist_free(&c);
    yq_hist_free(&h);
    free(y);
    free(ref);
    free(x);
}

static void t_hist_nan_inf(void)
{
    const long n = 100000;
    float *x = gen(n, GAUSS, 11);
    float *clean = malloc((size_t)n * sizeof *clean);
    CHECK(x && clean);
    memcpy(clean, x, (size_t)n * sizeof *x);
    for (long i = 0; i < n; i += 97) x[i] = NAN;
    for (long i = 5; i < n; i += 1001) x[i] = (i & 1) ? INFINITY : -INFINITY;
    x[1] = NAN;                                /* before the range exists */
    x[2] = INFINITY;
    long m = 0, nn = 0, ni = 0;                /* the finite values alone */
    for (long i = 0; i < n; i++) {
        if (isfinite(x[i])) clean[m++] = x[i];
        nn += isnan(x[i]) != 0;
        ni += isinf(x[i]) != 0;
    }
    yq_hist h = mkhist(2048, x, n), c = mkhist(2048, clean, m);
    CHECKF(h.n_nan == nn && h.n_inf == ni, "nan %g/%ld inf %g/%ld", h.n_nan, nn, h.n_inf, ni);
    CHECK(h.n == m && sum_counts(&h) == m);
    CHECK(isfinite(h.range) && isfinite(h.absmax) && isfinite(h.min) && isfinite(h.max));
    CHECK(h.range == c.range && h.absmax == c.absmax && h.min == c.min && h.max == c.max);
    CHECK(!memcmp(h.counts, c.counts, 2048 * sizeof *h.counts));
    /* only NaN and Inf: an empty histogram */
    float bad[5] = { NAN, INFINITY, -INFINITY, NAN, -NAN };
    yq_hist e = mkhist(64, bad, 5);
    CHECK(e.n == 0 && e.range == 0 && e.absmax == 0 && e.n_nan == 3 && e.n_inf == 2);
    yq_hist_free(&e);
    yq_hist_free(&c);
    yq_hist_free(&h);
    free(clean);
    free(x);
}

static void t_hist_merge(void)
{
    const long n = 200000;
    float *x = gen(n, GAUSS, 5);
    CHECK(x);
    for (long i = 0; i < n / 2; i++) x[i] *= 0.01f;   /* first half: a much smaller range */
    x[n - 1] = NAN;
    yq_hist all = mkhist(2048, x, n);
    yq_hist a = mkhist(2048, x, n / 2), b = mkhist(2048, x + n / 2, n - n / 2);
    CHECK(a.range < b.range);
    yq_hist a2 = mkhist(2048, x, n / 2);

    yq_hist_merge(&a, &b);                     /* small range absorbs large */
    CHECK(a.range == all.range && a.n == all.n && a.n_nan == 1);
    CHECK(a.min == all.min && a.max == all.max && a.absmax == all.absmax);
    CHECK(!memcmp(a.counts, all.counts, 2048 * sizeof *a.counts));
    yq_hist_merge(&b, &a2);                    /* large range absorbs small */
    CHECK(b.range == all.range && b.n == all.n && b.min == all.min);
    CHECK(!memcmp(b.counts, all.counts, 2048 * sizeof *a.counts));

    /* into an empty histogram, and an all-zero one (range 0) both ways */
    yq_hist e, z = mkhist(2048, (const float[]){ 0, 0, 0 }, 3);
    yq_error err;
    CHECK(yq_hist_init(&e, 2048, &err) == YQ_OK);
    yq_hist_merge(&e, &all);
    CHECK(e.range == all.range && e.n == all.n && e.min == all.min && e.max == all.max);
    CHECK(!memcmp(e.counts, all.counts, 2048 * sizeof *a.counts));
    yq_hist_merge(&e, &z);
    CHECK(e.n == all.n + 3 && e.counts[0] == all.counts[0] + 3 && e.range == all.range);
    yq_hist_merge(&z, &all);
    CHECK(z.n == all.n + 3 && z.counts[0] == all.counts[0] + 3 && z.range == all.range);
    CHECK(z.min == all.min && z.max == all.max);

    /* different nbins: spread by overlap; total kept, quantiles within a bin */
    yq_hist c;
    CHECK(yq_hist_init(&c, 512, &err) == YQ_OK);
    yq_hist_merge(&c, &all);
    CHECK(c.range == all.range && c.n == all.n);
    CHECKF(fabs(sum_counts(&c) - all.n) < 1e-6 * all.n, "sum %g vs %g", sum_counts(&c), all.n);
    double w = c.range / 512;
    double p1 = thresh_of(&c, "percentile:99", 8), p2 = thresh_of(&all, "percentile:99", 8);
    CHECKF(fabs(p1 - p2) <= w, "p99 %g vs %g (w %g)", p1, p2, w);
    yq_hist_free(&c);
    yq_hist_free(&e);
    yq_hist_free(&z);
    yq_hist_free(&a);
    yq_hist_free(&a2);
    yq_hist_free(&b);
    yq_hist_free(&all);
    free(x);
}

/* --- methods ----------------------------------------------------------- */

static void t_method_parse(void)
{
    yq_calib_method m;
    yq_error err;
    char buf[64];
    CHECK(yq_calib_method_parse("max", &m, &err) == YQ_OK && m.kind == YQ_CALIB_MAX);
    CHECK(yq_calib_method_parse("kl", &m, &err) == YQ_OK && m.kind == YQ_CALIB_KL);
    CHECK(yq_calib_method_parse("entropy", &m, &err) == YQ_OK && m.kind == YQ_CALIB_KL);
    CHECK(yq_calib_method_parse("mse", &m, &err) == YQ_OK && m.kind == YQ_CALIB_MSE);
    CHECK(yq_calib_method_parse("percentile:99.99", &m, &err) == YQ_OK);
    CHECK(m.kind == YQ_CALIB_PERCENTILE && m.percentile == 99.99);
    yq_calib_method_str(&m, buf, sizeof buf);
    CHECKF(!strcmp(buf, "percentile:99.99"), "str %s", buf);
    CHECK(yq_calib_method_parse("percentile:100", &m, &err) == YQ_OK && m.percentile == 100);
    const char *names[] = { "max", "kl", "mse", "percentile:99.9", "percentile:50" };
    for (size_t i = 0; i < 5; i++) {           /* str then parse: the same method */
        yq_calib_method a, b;
        CHECK(yq_calib_method_parse(names[i], &a, &err) == YQ_OK);
        yq_calib_method_str(&a, buf, sizeof buf);
        CHECKF(!strcmp(buf, names[i]) || a.kind == YQ_CALIB_KL, "%s -> %s", names[i], buf);
        CHECK(yq_calib_method_parse(buf, &b, &err) == YQ_OK && b.kind == a.kind && b.percentile == a.percentile);
    }
    const char *bad[] = { "", "foo", "MAX", "max ", "percentile", "percentile:", "percentile:0",
                          "percentile:-5", "percentile:100.5", "percentile:abc", "percentile:99x",
                          "percentile:nan", "percentile:inf", "kl:3" };
    m.kind = YQ_CALIB_MSE;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.msg[0] = 0;
        CHECKF(yq_calib_method_parse(bad[i], &m, &err) == YQ_ERR_INVALID_ARG, "'%s' accepted", bad[i]);
        CHECKF(err.code == YQ_ERR_INVALID_ARG, "code for '%s'", bad[i]);
        if (*bad[i]) CHECKF(strstr(err.msg, bad[i]) != NULL, "'%s' not named: " EMSG, bad[i], err.msg);
        CHECKF(strstr(err.msg, "percentile:P") && strstr(err.msg, "mse") && strstr(err.msg, "kl"),
               "valid ones not listed: " EMSG, err.msg);
        CHECK(!strchr(err.msg, '\n'));
        CHECK(m.kind == YQ_CALIB_MSE);         /* untouched on error */
    }
    CHECK(yq_calib_method_parse(NULL, &m, &err) == YQ_ERR_INVALID_ARG);
}

static void t_max(void)
{
    float *x = gen(10000, GAUSS, 2);
    CHECK(x);
    x[77] = -7.25f;
    yq_hist h = mkhist(2048, x, 10000);
    CHECK(thresh_of(&h, "max", 8) == (double)7.25f && h.min == -7.25f);
    CHECK(yq_thresh(&h, NULL, 8) == 7.25f);   /* no method: max */
    CHECK(thresh_of(&h, "max", 4) == (double)7.25f);
    yq_hist_free(&h);
    free(x);
}

static void t_percentile_uniform(void)
{
    const long n = 1000000;
    float *x = gen(n, UNIFORM, 3);
    float *s = malloc((size_t)n * sizeof *s);
    CHECK(x && s);
    yq_hist h = mkhist(2048, x, n);
    CHECK(h.range == 1.0);
    for (long i = 0; i < n; i++) s[i] = fabsf(x[i]);
    qsort(s, (size_t)n, sizeof *s, cmp_float);
    double w = h.range / h.nbins;
    const double ps[] = { 50, 90, 99, 99.9, 99.99 };
    for (int i = 0; i < 5; i++) {
        char name[32];
        snprintf(name, sizeof name, "percentile:%g", ps[i]);
        double t = thresh_of(&h, name, 8);
        float exact = s[(long)(ps[i] / 100 * n) - 1];
        NOTE("U(-1,1) %s: %.6f (sorted samples %.6f, expected %.4f)", name, t, (double)exact, ps[i] / 100);
        /* uniform within a bin, so interpolation leaves only sampling noise */
        CHECKF(fabs(t - (double)exact) <= 0.25 * w, "%s: %g vs sample quantile %g (w %g)", name, t, (double)exact, w);
        CHECKF(fabs(t - ps[i] / 100) <= w + 0.001, "%s: %g", name, t);
    }
    CHECK(thresh_of(&h, "percentile:100", 8) == (double)h.absmax);
    yq_hist_free(&h);
    free(s);
    free(x);
}

/* The toolkit's loop transcribed literally: explicit P and Q per candidate. */
static int naive_kl_bins(const double *counts, int nb, int nl)
{
    double *b = malloc(nb * sizeof *b), *P = malloc(nb * sizeof *P), *Q = malloc(nb * sizeof *Q);
    double *gs = malloc(nl * sizeof *gs), *gn = malloc(nl * sizeof *gn);
    memcpy(b, counts, nb * sizeof *b);
    b[0] = b[1];
    double best = INFINITY;
    int best_i = -1;
    for (int i = nl; i <= nb; i++) {
        double out = 0;
        for (int j = i; j < nb; j++) out += b[j];
        for (int j = 0; j < i; j++) P[j] = b[j];
        P[i - 1] += out;
        for (int g = 0; g < nl; g++) gs[g] = gn[g] = 0;
        for (int j = 0; j < i; j++) {
            int g = (int)((long)j * nl / i);
            if (b[j] > 0) { gs[g] += b[j]; gn[g] += 1; }
        }
        for (int j = 0; j < i; j++) {
            int g = (int)((long)j * nl / i);
            Q[j] = b[j] > 0 ? gs[g] / gn[g] : 0;
        }
        if (P[i - 1] > 0 && Q[i - 1] == 0) Q[i - 1] = 1e-4;
        double sp = 0, sq = 0, kl = 0;
        for (int j = 0; j < i; j++) { sp += P[j]; sq += Q[j]; }
        if (!(sq > 0)) continue;
        for (int j = 0; j < i; j++)
            if (P[j] > 0) kl += P[j] / sp * log((P[j] / sp) / (Q[j] / sq));
        if (kl <= best) { best = kl; best_i = i; }
    }
    free(b); free(P); free(Q); free(gs); free(gn);
    return best_i;
}

static void t_kl_matches_naive(void)
{
    struct { int nb, bits, kind; } cases[] = {
        { 256, 8, GAUSS }, { 512, 8, LAPLACE }, { 300, 6, RELU }, { 128, 4, LAPLACE },
        { 64, 3, GAUSS }, { 1024, 8, RELU },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        long n = 20000 + 5000 * (long)c;
        float *x = gen(n, cases[c].kind, 100 + c);
        CHECK(x);
        for (int k = 0; k < 5; k++) x[k] *= 8;   /* a few outliers */
        yq_hist h = mkhist(cases[c].nb, x, n);
        int nl = 1 << (cases[c].bits - 1);
        int bi = naive_kl_bins(h.counts, h.nbins, nl);
        double want = bi * h.range / h.nbins;
        if (want > (double)h.absmax) want = (double)h.absmax;
        double t = thresh_of(&h, "kl", cases[c].bits);
        CHECKF(fabs(t - want) <= 1e-6 * want, "case %zu: kl %g, naive %g (bin %d)", c, t, want, bi);
        yq_hist_free(&h);
        free(x);
    }
}

static void t_kl_gauss(void)
{
    const long n = 1000000;
    float *x = gen(n, GAUSS, 42);
    CHECK(x);
    yq_hist clean = mkhist(2048, x, n);
    double t0 = thresh_of(&clean, "kl", 8);
    for (int k = 0; k < 10; k++) x[k * 1000] = (k & 1) ? 40.0f : -40.0f;  /* huge outliers */
    yq_hist h = mkhist(2048, x, n);
    double t = thresh_of(&h, "kl", 8);
    NOTE("N(0,1) 1e6: kl8 %.4f (absmax %.3f); with 10 outliers at 40: kl8 %.4f (range %g, w %.4f)",
         t0, (double)clean.absmax, t, h.range, h.range / 2048);
    CHECKF(t0 >= 3.0 && t0 <= 5.0, "kl threshold %g for N(0,1)", t0);
    CHECKF(t0 < (double)clean.absmax, "kl %g, absmax %g", t0, (double)clean.absmax);
    CHECKF(t >= 3.0 && t <= 6.0, "kl threshold %g with outliers (absmax %g)", t, (double)h.absmax);
    /* ReLU zeros: bin 0 is set to bin 1, so the spike of zeros changes nothing much */
    float *r = gen(n, RELU, 42);
    CHECK(r);
    yq_hist hr = mkhist(2048, r, n);
    double tr = thresh_of(&hr, "kl", 8);
    NOTE("ReLU(N(0,1)) 1e6 (half zeros): kl8 %.4f", tr);
    CHECKF(fabs(tr - t0) < 0.1 * t0, "relu kl %g vs |N(0,1)| kl %g", tr, t0);
    yq_hist_free(&hr);
    yq_hist_free(&h);
    yq_hist_free(&clean);
    free(r);
    free(x);
}

static void t_mse_uniform(void)
{
    const long n = 1000000;
    float *x = gen(n, UNIFORM, 9);
    CHECK(x);
    yq_hist h = mkhist(2048, x, n);
    double t = thresh_of(&h, "mse", 8);
    /* |x| ~ U(0,1): MSE(t) = t (t/qmax)^2 / 12 + (1-t)^3 / 3, least at t = 2qmax/(2qmax+1)
     * = 254/255 = 0.99608; the flat minimum lets sampling noise move it a bin or two. */
    NOTE("U(-1,1) 1e6: mse8 %.5f (absmax %.5f; analytic optimum %.5f)", t, (double)h.absmax, 254.0 / 255);
    CHECKF(t >= 0.99 && t <= (double)h.absmax, "mse threshold %g", t);
    CHECKF(fabs(t - 254.0 / 255) < 3.0 / 2048, "mse threshold %g, analytic %g", t, 254.0 / 255);
    yq_hist_free(&h);
    free(x);
}

static void t_mse_laplace(void)
{
    const long n = 1000000;
    float *x = gen(n, LAPLACE, 13);
    CHECK(x);
    yq_hist h = mkhist(2048, x, n);
    const int bits_list[] = { 8, 6, 4 };
    for (int bi = 0; bi < 3; bi++) {
        int bits = bits_list[bi];
        double t = thresh_of(&h, "mse", bits);
        CHECKF(t > 0 && t < (double)h.absmax, "mse%d %g, absmax %g", bits, t, (double)h.absmax);
        /* the histogram's own error: t beats absmax and its neighbours */
        double e = yq_hist_mse(&h, t, bits);
        const double others[] = { h.absmax, 0.5 * t, 0.8 * t, 1.25 * t, 2.0 * t };
        for (int k = 0; k < 5; k++)
            CHECKF(e <= yq_hist_mse(&h, others[k], bits) * (1 + 1e-9), "bits %d: mse(%g) %g > mse(%g) %g",
                   bits, t, e, others[k], yq_hist_mse(&h, others[k], bits));
        /* independently: quantize the samples over a grid of thresholds */
        double best = INFINITY, best_t = 0;
        for (int g = 0; g <= 60; g++) {
            double tg = t * (0.5 + g * 0.025);    /* 0.5t .. 2t, t itself at g = 20 */
            double m = sim_mse(x, n, tg, bits);
            if (m < best) { best = m; best_t = tg; }
        }
        double mt = sim_mse(x, n, t, bits), mmax = sim_mse(x, n, h.absmax, bits);
        NOTE("Laplace(1) 1e6: mse%d %.4f (absmax %.3f); simulated mse %.4g, grid best %.4g at %.4f, at absmax %.4g;"
             " histogram mse %.4g", bits, t, (double)h.absmax, mt, best, best_t, mmax, e);
        CHECKF(mt <= 1.02 * best, "bits %d: simulated mse at %g is %g, grid best %g at %g", bits, t, mt, best, best_t);
        CHECKF(mt < mmax, "bits %d: simulated mse %g at t, %g at absmax", bits, mt, mmax);
        CHECKF(fabs(e - mt) < 0.01 * mt, "bits %d: histogram mse %g vs simulated %g", bits, e, mt);
    }
    /* ACIQ (Banner et al.): for Laplace(b) the MSE-optimal clip is ~9.89b at 8 bits, ~5.03b at 4 */
    double t8 = thresh_of(&h, "mse", 8), t4 = thresh_of(&h, "mse", 4);
    CHECKF(t8 > 8.5 && t8 < 11.5, "mse8 %g", t8);
    CHECKF(t4 > 4.0 && t4 < 6.0, "mse4 %g", t4);
    yq_hist_free(&h);
    free(x);
}

/* The search returns the bin edge where yq_hist_mse (checked against simulation
 * above) is least: every edge evaluated independently. */
static void t_mse_matches_brute(void)
{
    const struct { int nb, bits, kind; } cases[] = {
        { 256, 8, LAPLACE }, { 200, 4, GAUSS }, { 128, 2, LAPLACE }, { 512, 6, RELU },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        float *x = gen(50000, cases[c].kind, 300 + c);
        CHECK(x);
        yq_hist h = mkhist(cases[c].nb, x, 50000);
        double w = h.range / h.nbins, best = INFINITY, best_t = 0;
        for (int k = 1; k <= h.nbins; k++) {
            double e = yq_hist_mse(&h, k * w, cases[c].bits);
            if (e < best * (1 - 1e-12)) { best = e; best_t = k * w; }
        }
        if (best_t > (double)h.absmax) best_t = h.absmax;
        double t = thresh_of(&h, "mse", cases[c].bits);
        CHECKF(fabs(t - best_t) <= 1e-6 * best_t, "case %zu: mse %g, brute %g", c, t, best_t);
        yq_hist_free(&h);
        free(x);
    }
}

/* Fewer levels: KL and MSE clip harder on heavy-tailed data. */
static void t_bits(void)
{
    const long n = 500000;
    float *x = gen(n, LAPLACE, 17);
    CHECK(x);
    yq_hist h = mkhist(2048, x, n);
    const char *ms[] = { "kl", "mse" };
    for (int i = 0; i < 2; i++) {
        double t8 = thresh_of(&h, ms[i], 8), t6 = thresh_of(&h, ms[i], 6), t4 = thresh_of(&h, ms[i], 4);
        NOTE("Laplace(1) 5e5, %s: bits 8 %.4f, 6 %.4f, 4 %.4f (absmax %.3f)", ms[i], t8, t6, t4, (double)h.absmax);
        CHECKF(t4 > 0 && t4 < t6 && t6 < t8 && t8 <= (double)h.absmax, "%s: %g %g %g", ms[i], t4, t6, t8);
        CHECKF(t4 > 1.0, "%s: 4-bit threshold %g", ms[i], t4);
    }
    /* 16 bits: more levels than KL's 2048 bins can resolve: absmax */
    CHECK(thresh_of(&h, "kl", 16) == (double)h.absmax);
    CHECK(thresh_of(&h, "kl", 12) == (double)h.absmax);   /* nlevels == nbins: P == Q */
    /* out-of-range bits are clamped, never a bad threshold */
    double a = thresh_of(&h, "mse", 0), b = thresh_of(&h, "mse", 40);
    CHECK(isfinite(a) && a > 0 && isfinite(b) && b > 0 && b <= (double)h.absmax);
    CHECK(a == thresh_of(&h, "mse", 2) && b == thresh_of(&h, "mse", 16));
    yq_hist_free(&h);
    free(x);
}

static void check_all_methods(const yq_hist *h, float want, const char *what)
{
    const char *ms[] = { "max", "percentile:99.99", "percentile:50", "kl", "mse" };
    const int bits[] = { 8, 4, 2, 16 };
    for (int i = 0; i < 5; i++)
        for (int b = 0; b < 4; b++) {
            double t = thresh_of(h, ms[i], bits[b]);
            CHECKF(isfinite(t) && t > 0, "%s, %s, %d bits: %g", what, ms[i], bits[b], (double)t);
            if (want > 0.0f) CHECKF(t == (double)want, "%s, %s, %d bits: %g, want %g", what, ms[i], bits[b], (double)t, (double)want);
        }
}

static void t_guards(void)
{
    yq_hist e;
    yq_error err;
    CHECK(yq_hist_init(&e, 2048, &err) == YQ_OK);
    check_all_methods(&e, YQ_THRESH_MIN, "empty");
    CHECK(yq_thresh(NULL, NULL, 8) == YQ_THRESH_MIN);
    float zeros[1000] = { 0 };
    yq_hist z = mkhist(2048, zeros, 1000);
    CHECK(z.n == 1000 && z.counts[0] == 1000 && z.range == 0 && z.absmax == 0);
    check_all_methods(&z, YQ_THRESH_MIN, "all zeros");
    float nans[8] = { NAN, NAN, NAN, NAN, NAN, INFINITY, NAN, NAN };
    yq_hist nn = mkhist(2048, nans, 8);
    check_all_methods(&nn, YQ_THRESH_MIN, "NaN/Inf only");
    float tiny[4] = { 1e-30f, -3e-38f, 1e-45f, 0 };   /* below the floor, one denormal */
    yq_hist ti = mkhist(2048, tiny, 4);
    check_all_methods(&ti, YQ_THRESH_MIN, "tiny values");
    float huge[6] = { 3e38f, -3.4e38f, 1.0f, 0, FLT_MAX, -1e30f };
    yq_hist hu = mkhist(2048, huge, 6);
    CHECK(isfinite(hu.range) && hu.absmax == FLT_MAX);
    check_all_methods(&hu, 0, "huge values");
    float one = -2.5f;
    yq_hist o = mkhist(2048, &one, 1);
    check_all_methods(&o, 0, "one value");
    CHECK(thresh_of(&o, "max", 8) == (double)2.5f && thresh_of(&o, "kl", 8) <= 2.5);
    yq_hist_free(&e);
    yq_hist_free(&z);
    yq_hist_free(&nn);
    yq_hist_free(&ti);
    yq_hist_free(&hu);
    yq_hist_free(&o);
}

/* YQ_CALIB_PERF=1: throughput of yq_hist_add and the cost of each method (prints
 * only; tests never assert on time).  Calls of 692224 values are one 52x52x256
 * activation. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void perf(void)
{
    const long n = 1L << 24, call = 692224;
    const char *names[] = { "N(0,1)", "ReLU(N(0,1))", "Laplace" };
    const int kinds[] = { GAUSS, RELU, LAPLACE };
    for (int d = 0; d < 3; d++) {
        float *x = gen(n, kinds[d], 1);
        if (!x) return;
        yq_hist h = mkhist(2048, x, n);
        double best = INFINITY;
        for (int r = 0; r < 10; r++) {
            double t0 = now_s();
            for (long i = 0; i < n; i += call) yq_hist_add(&h, x + i, n - i < call ? n - i : call);
            double dt = now_s() - t0;
            if (dt < best) best = dt;
        }
        printf("# perf %-13s yq_hist_add %.0f Mvalues/s (best of 10, calls of %ld)\n",
               names[d], n / best / 1e6, call);
        const char *ms[] = { "percentile:99.99", "kl", "mse" };
        for (int m = 0; m < 3; m++) {
            double t0 = now_s(), t = thresh_of(&h, ms[m], 8);
            printf("# perf %-13s yq_thresh %-16s %.3f ms (t = %.4f)\n", names[d], ms[m],
                   (now_s() - t0) * 1e3, t);
        }
        yq_hist_free(&h);
        free(x);
    }
}

int main(void)
{
    const char *p = getenv("YQ_CALIB_PERF");
    if (p && *p && strcmp(p, "0")) {
        perf();
        return 0;
    }
    TEST(t_hist_init_errors);
    TEST(t_hist_bins);
    TEST(t_hist_doubling);
    TEST(t_hist_nan_inf);
    TEST(t_hist_merge);
    TEST(t_method_parse);
    TEST(t_max);
    TEST(t_percentile_uniform);
    TEST(t_kl_matches_naive);
    TEST(t_kl_gauss);
    TEST(t_mse_uniform);
    TEST(t_mse_laplace);
    TEST(t_mse_matches_brute);
    TEST(t_bits);
    TEST(t_guards);
    return test_done();
}
