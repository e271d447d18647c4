/* The per-layer kernel tuner (runtime/tune.h).
 *
 * Without a GPU: the search strategies (grid, random, ga, model) driven by a mock
 * cost, --trials, --early-stopping and --budget (a fake clock), failing candidates
 * (mismatch, error, timeout: logged and skipped; a fatal one ends the run), the
 * JSON-lines log (round trip, a second run measures nothing, an interrupted run
 * resumes without measuring anything twice, a new shape starts from the most
 * similar logged one, bad lines and unknown configuration names are errors naming
 * file and line), configuration names (parse o name = identity), tasks of YOLOv3,
 * and the package's /kernels/choices (round trip, backward compatibility, an
 * unknown name or a bad row refused with one line).
 * With a GPU (else SKIP): yq_tune_gpu on a real model (every candidate equals the
 * default byte for byte), the choices applied to a plan give the same outputs, and
 * a session on a tuned package uses them.
 * GPU latency (runtime/latency.h, what yquant sweep and quantize --max-drop report):
 * bad arguments are refused before the device is touched; without a GPU the answer is
 * YQ_ERR_UNSUPPORTED and no log is written; with one (else SKIP), the first call tunes
 * every shape and logs it, a second call (and one for a graph sharing shapes) reads the
 * log without measuring a kernel, the log alone gives the same choices, no log gives
 * the heuristic, another batch tunes its own shapes.  Run from the repository root.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tests/test.h"
#include "ir/ir.h"
#include "kernels/cuda.h"
#include "quant/qconfig.h"
#include "tests/test_rewrite.h"
#include "runtime/exec_cuda.h"
#include "runtime/latency.h"
#include "runtime/package.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "runtime/tune.h"
#include "yq_tune.h"

#define TINY "tests/fixtures/tiny.cfg"

static yq_error err;
static char tmpdir[64];

#define OK(x) do { yq_status s_ = (x); CHECKF(s_ == YQ_OK, "%s: %s", #x, err.msg); } while (0)

static const char *tpath(const char *name)
{
    static char buf[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0);
}

static int count_lines(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[2048];
    int n = 0;
    while (fgets(line, sizeof line, f)) n += !needle || strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

static yq_conv_cfg cfg_of(const char *name)
{
    yq_conv_cfg c;
    memset(&c, 0, sizeof c);
    if (yq_conv_cfg_parse(name, &c)) c.family = 255;
    return c;
}

static void name_of(yq_conv_cfg c, char *buf) { yq_conv_cfg_name(c, buf, 64); }

static int same(yq_conv_cfg a, yq_conv_cfg b) { return a.family == b.family && a.tile == b.tile && a.split_k == b.split_k; }

/* ---- a synthetic task and a mock device -------------------------------------------- */

/* Every mma tile with splits 1, 2, 4 and the three dp4a tiles; the default dp4a_64x64. */
static void make_task(yq_tune_task *t, const char *key)
{
    memset(t, 0, sizeof *t);
    snprintf(t->key, sizeof t->key, "%s", key);
    CHECK(sscanf(key, "c%dx%dx%d-f%d-k%ds%dp%d-g%d", &t->cin, &t->ih, &t->iw, &t->f, &t->k, &t->stride, &t->pad,
                 &t->groups) == 8);
    const char *b = strstr(key, "-b");
    CHECK(b);
    t->batch = atoi(b + 2);
    t->oh = (t->ih + 2 * t->pad - t->k) / t->stride + 1;
    t->ow = (t->iw + 2 * t->pad - t->k) / t->stride + 1;
    t->in_t = t->out_t = YQ_S8;
    t->ops = 2.0 * t->batch * t->oh * t->ow * (double)t->f * t->cin * t->k * t->k;
    t->node = 1;
    t->n_nodes = 1;
    char name[64];
    for (int tile = 0; tile < 32; tile++)
        for (int s = 1; s <= 4; s *= 2) {
            yq_conv_cfg c = { YQ_CONV_MMA, (uint8_t)tile, (uint8_t)s, 0 };
            name_of(c, name);
            if (strchr(name, '?')) continue;
            t->cand[t->n_cand++] = c;
        }
    for (int tile = 0; tile < 3; tile++) t->cand[t->n_cand++] = (yq_conv_cfg){ YQ_CONV_DP4A, (uint8_t)tile, 1, 0 };
    t->def = cfg_of("dp4a_64x64");
    CHECK(t->n_cand >= 9 && t->def.family == YQ_CONV_DP4A);
}

typedef struct mock {
    double now;                   /* the fake clock, seconds */
    double step;                  /* seconds each measurement takes */
    int calls, begins, ends;
    char order[512][64];          /* "key|cfg" of each measurement */
    double (*cost)(const yq_tune_task *t, yq_conv_cfg c);
    char fail[4][64];             /* names that fail ... */
    yq_trial_status fail_as[4];   /* ... as this */
    int n_fail;
} mock;

static double mock_clock(void *ctx) { return ((mock *)ctx)->now; }

/* Separable: tile (a permutation of the mma tiles) + split (best at 2); dp4a far behind. */
static double cost_sep(const yq_tune_task *t, yq_conv_cfg c)
{
    (void)t;
    if (c.family == YQ_CONV_DP4A) return 500 + 10 * c.tile;
    double s = fabs(log2((double)c.split_k) - 1);
    return 100 + 10 * ((c.tile * 5 + 3) % 8) + 7 * s + 0.5 * c.tile;
}

static void mock_measure(void *ctx, const yq_tune_task *t, yq_conv_cfg c, yq_trial *out)
{
    mock *m = ctx;
    char name[64];
    name_of(c, name);
    if (m->calls < 512) snprintf(m->order[m->calls], sizeof m->order[0], "%.40s|%s", t->key, name);
    m->calls++;
    m->now += m->step;
    for (int i = 0; i < m->n_fail; i++)
        if (!strcmp(m->fail[i], name)) {
            out->status = m->fail_as[i];
            snprintf(out->why, sizeof out->why, "injected failure of %s", name);
            return;
        }
    out->status = YQ_TRIAL_OK;
    out->us = m->cost(t, c);
}

static yq_status mock_begin(void *ctx, yq_tune_task *t, yq_error *e)
{
    (void)t; (void)e;
    ((mock *)ctx)->begins++;
    return YQ_OK;
}
static void mock_end(void *ctx, yq_tune_task *t)
{
    (void)t;
    ((mock *)ctx)->ends++;
}

static void mock_init(mock *m, double (*cost)(const yq_tune_task *, yq_conv_cfg))
{
    memset(m, 0, sizeof *m);
    m->cost = cost;
    m->step = 0.001;
}

static yq_tune_opt opts(mock *m, yq_tuner tuner, int trials, int early, double budget, const char *log)
{
    yq_tune_opt o = yq_tune_defaults();
    o.tuner = tuner;
    o.trials = trials;
    o.early_stopping = early;
    o.budget_s = budget;
    o.log_path = log;
    o.clock = mock_clock;
    o.clock_ctx = m;
    return o;
}

static yq_status run(yq_tune_task *t, int n, const yq_tune_opt *o, mock *m, yq_tune_summary *sum)
{
    yq_tune_device d = { m, mock_begin, mock_measure, mock_end };
    return yq_tune_run(t, n, "sm_90", o, &d, sum, &err);
}

static int argmin(const yq_tune_task *t, double (*cost)(const yq_tune_task *, yq_conv_cfg))
{
    int b = 0;
    for (int i = 1; i < t->n_cand; i++)
        if (cost(t, t->cand[i]) < cost(t, t->cand[b])) b = i;
    return b;
}

static const char *K1 = "c256x26x26-f512-k3s1p1-g1-s8s8-b1";

/* ---- configuration names ------------------------------------------------------------ */

static void t_cfg_names(void)
{
    char name[64];
    int n = 0, mma = 0, cut = 0, halo = 0, wg = 0, wgh = 0, wg1 = 0;
    for (int fam = YQ_CONV_DP4A; fam <= YQ_CONV_LAST; fam++)
        for (int tile = 0; tile < 32; tile++) {
            static const int splits[] = { 1, 2, 3, 4, 6, 8, 12, 16 };
            for (unsigned k = 0; k < sizeof splits / sizeof *splits; k++) {
                yq_conv_cfg c = { (uint8_t)fam, (uint8_t)tile, (uint8_t)splits[k], 0 }, back;
                name_of(c, name);
                int float_fam = fam == YQ_CONV_F32 || fam == YQ_CONV_F16;   /* one tile, K splits */
                int tiled = fam == YQ_CONV_MMA || fam == YQ_CONV_DP4A || fam == YQ_CONV_CUTLASS || fam == YQ_CONV_HALO ||
                            fam == YQ_CONV_WGMMA || fam == YQ_CONV_WGH || fam == YQ_CONV_WG1;
                if (strchr(name, '?') || (!tiled && (tile || (splits[k] > 1 && !float_fam))))
                    continue;
                CHECKF(yq_conv_cfg_parse(name, &back) == 0, "%s does not parse", name);
                CHECKF(same(back, c), "%s parses to another configuration", name);
                n++;
                mma += fam == YQ_CONV_MMA;
                cut += fam == YQ_CONV_CUTLASS && splits[k] == 1;
                halo += fam == YQ_CONV_HALO && splits[k] == 1;
                wg += fam == YQ_CONV_WGMMA && splits[k] == 1;
                wgh += fam == YQ_CONV_WGH && splits[k] == 1;
                wg1 += fam == YQ_CONV_WG1 && splits[k] == 1;
            }
        }
    CHECKF(n > 20 && mma >= 8 && cut == 7 && halo == 3 && wg == 8 && wgh == 4 && wg1 == 6,
           "%d names, %d mma, %d cutlass, %d halo, %d wgmma, %d wgh, %d wg1", n, mma, cut, halo, wg, wgh, wg1);
    yq_conv_cfg c;
    CHECK(yq_conv_cfg_parse("cutlass_128x128x64_s3", &c) == 0 && c.family == YQ_CONV_CUTLASS && c.tile == 0);
    CHECK(yq_conv_cfg_parse("halo_16x16x64", &c) == 0 && c.family == YQ_CONV_HALO && c.tile == 1);
    CHECK(yq_conv_cfg_parse("dp4a_const", &c) == 0 && c.family == YQ_CONV_DP4A && c.tile == 4);
    CHECK(yq_conv_cfg_parse("dw", &c) == 0 && c.family == YQ_CONV_DW && c.tile == 0);
    CHECK(yq_conv_cfg_parse("dw_dp4a", &c) == 0 && c.family == YQ_CONV_DW && c.tile == 1);
    CHECK(yq_conv_cfg_parse("dw_tile", &c) == 0 && c.family == YQ_CONV_DW && c.tile == 2);
    CHECK(yq_conv_cfg_parse("dw_col", &c) == 0 && c.family == YQ_CONV_DW && c.tile == 3);
    CHECK(yq_conv_cfg_parse("img_mma", &c) == 0 && c.family == YQ_CONV_IMG && c.tile == 0);
    CHECK(yq_conv_cfg_parse("wgmma_128x256x128_s4", &c) == 0 && c.family == YQ_CONV_WGMMA && c.tile == 2);
    CHECK(yq_conv_cfg_parse("wgmma_128x128x64_s6", &c) == 0 && c.family == YQ_CONV_WGMMA && c.tile == 3);
    CHECK(yq_conv_cfg_parse("wgmma_64x128x64_s6_k4", &c) == 0 && c.family == YQ_CONV_WGMMA && c.tile == 7 && c.split_k == 4);
    CHECK(yq_conv_cfg_parse("wgh_256x128x128_s4", &c) == 0 && c.family == YQ_CONV_WGH && c.tile == 0);
    CHECK(yq_conv_cfg_parse("wgh_128x128x128_s4_b2", &c) == 0 && c.family == YQ_CONV_WGH && c.tile == 3);
    CHECK(yq_conv_cfg_parse("wg1_128x32x64_s8", &c) == 0 && c.family == YQ_CONV_WG1 && c.tile == 0);
    CHECK(yq_conv_cfg_parse("wg1_128x128x128_s4", &c) == 0 && c.family == YQ_CONV_WG1 && c.tile == 3);
    CHECK(yq_conv_cfg_parse("wg1_128x128x64_s16", &c) == 0 && c.family == YQ_CONV_WG1 && c.tile == 4);
    CHECK(yq_conv_cfg_parse("wg1_128x128x128_s8", &c) == 0 && c.family == YQ_CONV_WG1 && c.tile == 5);
    CHECK(yq_conv_cfg_parse("dp4a_64x64", &c) == 0 && c.family == YQ_CONV_DP4A && c.split_k == 1);
    CHECK(yq_conv_cfg_parse("f16_k4", &c) == 0 && c.family == YQ_CONV_F16 && c.split_k == 4);
    CHECK(yq_conv_cfg_parse("f16", &c) == 0 && c.family == YQ_CONV_F16 && c.split_k == 1);
    static const char *const bad[] = { "", "dp4a", "dp4a_65x64", "mma_1x1x1_s1", "MMA_128x128x64_s3", "dw_k2x", "auto ", "?" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) CHECKF(yq_conv_cfg_parse(bad[i], &c) == -1, "'%s' parsed", bad[i]);
    yq_tuner tn;
    CHECK(yq_tuner_parse("ga", &tn) == 0 && tn == YQ_TUNER_GA && !strcmp(yq_tuner_name(tn), "ga"));
    CHECK(yq_tuner_parse("xgb", &tn) == -1);
}

/* ---- strategies ------------------------------------------------------------------- */

static void t_grid(void)
{
    static yq_tune_task t;
    make_task(&t, K1);
    mock m;
    mock_init(&m, cost_sep);
    yq_tune_opt o = opts(&m, YQ_TUNER_GRID, 0, 0, 0, NULL);
    yq_tune_summary s;
    OK(run(&t, 1, &o, &m, &s));
    int di = -1;
    for (int i = 0; i < t.n_cand; i++) if (same(t.cand[i], t.def)) di = i;
    CHECK(di >= 0);
    CHECKF(m.calls == t.n_cand, "%d measurements for %d candidates", m.calls, t.n_cand);
    /* the default first, then the candidates as enumerated */
    char name[64];
    name_of(t.def, name);
    CHECK(strstr(m.order[0], name));
    for (int i = 0, k = 1; i < t.n_cand; i++) {
        if (i == di) continue;
        name_of(t.cand[i], name);
        CHECKF(!strcmp(strchr(m.order[k], '|') + 1, name), "trial %d is %s, expected %s", k, m.order[k], name);
        k++;
    }
    int b = argmin(&t, cost_sep);
    CHECK(same(t.best, t.cand[b]) && t.best_us == cost_sep(&t, t.cand[b]));
    CHECK(t.default_us == cost_sep(&t, t.def) && t.state == YQ_TUNE_SEARCHED);
    CHECK(t.trials == t.n_cand - 1 && t.measured == t.n_cand && t.failed == 0);
    CHECK(t.family_us[YQ_CONV_DP4A] == 500 && t.family_us[YQ_CONV_MMA] == t.best_us);
    CHECK(m.begins == 1 && m.ends == 1 && s.searched == 1 && s.trials == t.n_cand - 1);
}

static void random_order(uint32_t seed, char out[][64], int *n)
{
    static yq_tune_task t;
    make_task(&t, K1);
    mock m;
    mock_init(&m, cost_sep);
    yq_tune_opt o = opts(&m, YQ_TUNER_RANDOM, 0, 0, 0, NULL);
    o.seed = seed;
    OK(run(&t, 1, &o, &m, NULL));
    CHECK(same(t.best, t.cand[argmin(&t, cost_sep)]));
    *n = m.calls;
    for (int i = 0; i < m.calls; i++) memcpy(out[i], m.order[i], 64);
}

static void t_random(void)
{
    static char a[128][64], b[128][64], c[128][64];
    int na, nb, nc;
    random_order(7, a, &na);
    random_order(7, b, &nb);
    random_order(8, c, &nc);
    static yq_tune_task t;
    make_task(&t, K1);
    CHECK(na == t.n_cand && nb == na && nc == na);
    int same_ab = 1, same_ac = 1, grid = 1;
    for (int i = 0; i < na; i++) {
        same_ab &= !strcmp(a[i], b[i]);
        same_ac &= !strcmp(a[i], c[i]);
    }
    /* not the enumeration order */
    char name[64];
    for (int i = 0, k = 1; i < t.n_cand && k < na; i++) {
        if (same(t.cand[i], t.def)) continue;
        name_of(t.cand[i], name);
        grid &= !strcmp(strchr(a[k++], '|') + 1, name);
    }
    CHECKF(same_ab, "the same seed gave two orders");
    CHECKF(!same_ac, "seeds 7 and 8 gave the same order");
    CHECKF(!grid, "random is the grid order");
}

/* Rising along the enumeration; the default (a dp4a tile) slowest of all. */
static double cost_rising(const yq_tune_task *t, yq_conv_cfg c)
{
    if (c.family == YQ_CONV_DP4A) return 1000 + c.tile;
    for (int i = 0; i < t->n_cand; i++)
        if (same(t->cand[i], c)) return 100 + i;
    return 5000;
}

static void t_trials_and_early_stopping(void)
{
    static yq_tune_task t;
    make_task(&t, K1);
    mock m;
    mock_init(&m, cost_rising);
    yq_tune_opt o = opts(&m, YQ_TUNER_GRID, 5, 0, 0, NULL);
    OK(run(&t, 1, &o, &m, NULL));
    CHECKF(t.trials == 5 && m.calls == 6, "--trials 5: %d trials, %d measurements", t.trials, m.calls);
    CHECK(t.state == YQ_TUNE_SEARCHED);
    /* the first candidate beats the default, then nothing does: early stopping 4
     * ends the task after 1 + 4 trials */
    mock_init(&m, cost_rising);
    o = opts(&m, YQ_TUNER_GRID, 0, 4, 0, NULL);
    OK(run(&t, 1, &o, &m, NULL));
    CHECKF(t.trials == 5 && m.calls == 6, "early stopping 4: %d trials", t.trials);
    CHECK(same(t.best, t.cand[0]) && t.state == YQ_TUNE_SEARCHED);
    /* both: whichever comes first */
    mock_init(&m, cost_rising);
    o = opts(&m, YQ_TUNER_GRID, 3, 4, 0, NULL);
    OK(run(&t, 1, &o, &m, NULL));
    CHECK(t.trials == 3);
}

static double model_cost(const yq_tune_task *t, yq_conv_cfg c) { return yq_tune_model_us(t, c, 132); }

static void t_model(void)
{
    /* the cost model's sense: a large layer wants a big mma tile without a split, and
     * mma beats dp4a; a small grid (13x13 at batch 1) fills the machine with more,
     * smaller blocks; a tiny grid with a long K (7x7x1024 -> 64) splits K */
    static yq_tune_task big, small, tiny;
    make_task(&big, "c256x52x52-f256-k3s1p1-g1-s8s8-b32");
    make_task(&small, "c512x13x13-f1024-k3s1p1-g1-s8s8-b1");
    make_task(&tiny, "c1024x7x7-f64-k3s1p1-g1-s8s8-b1");
    int bb = 0, bs = 0, bt = 0, huge = -1;
    char n1[64], n2[64], n3[64];
    for (int i = 0; i < big.n_cand; i++) {
        if (yq_tune_model_us(&big, big.cand[i], 132) < yq_tune_model_us(&big, big.cand[bb], 132)) bb = i;
        if (yq_tune_model_us(&small, small.cand[i], 132) < yq_tune_model_us(&small, small.cand[bs], 132)) bs = i;
        if (yq_tune_model_us(&tiny, tiny.cand[i], 132) < yq_tune_model_us(&tiny, tiny.cand[bt], 132)) bt = i;
        name_of(big.cand[i], n1);
        if (!strcmp(n1, "mma_256x128x64_s3")) huge = i;
    }
    name_of(big.cand[bb], n1);
    name_of(small.cand[bs], n2);
    name_of(tiny.cand[bt], n3);
    printf("# the model's first: %s for %s, %s for %s, %s for %s\n", n1, big.key, n2, small.key, n3, tiny.key);
    CHECKF(big.cand[bb].family == YQ_CONV_MMA && big.cand[bb].split_k == 1, "big layer: the model ranks %s first", n1);
    int bm, bn;
    CHECK(sscanf(n1, "mma_%dx%d", &bm, &bn) == 2 && bm * bn >= 128 * 64);
    for (int i = 0; i < big.n_cand; i++)
        if (big.cand[i].family == YQ_CONV_DP4A)
            CHECK(yq_tune_model_us(&big, big.cand[i], 132) > yq_tune_model_us(&big, big.cand[bb], 132));
    CHECK(sscanf(n2, "mma_%dx%d", &bm, &bn) == 2);
    double blocks = ceil(169.0 / bm) * ceil(1024.0 / bn) * small.cand[bs].split_k;
    CHECKF(blocks >= 64, "small grid: the model's first (%s) has %.0f blocks", n2, blocks);
    if (huge >= 0) CHECK(yq_tune_model_us(&small, small.cand[huge], 132) > yq_tune_model_us(&small, small.cand[bs], 132));
    CHECKF(tiny.cand[bt].family == YQ_CONV_MMA && tiny.cand[bt].split_k > 1, "tiny grid, long K: the model ranks %s first", n3);

    /* measured = the model's own figure: the best comes within the first trials; the
     * first two trials are the two families' best-ranked */
    static yq_tune_task t;
    make_task(&t, "c512x13x13-f1024-k3s1p1-g1-s8s8-b1");
    mock m;
    mock_init(&m, model_cost);
    yq_tune_opt o = opts(&m, YQ_TUNER_MODEL, 3, 0, 0, NULL);
    o.sms = 132;
    OK(run(&t, 1, &o, &m, NULL));
    int b = argmin(&t, m.cost);
    CHECKF(same(t.best, t.cand[b]), "model tuner with 3 trials missed the best");
    CHECK(t.trials == 3 && m.calls == 4);
    CHECK(strstr(m.order[1], "|mma_") && strstr(m.order[2], "|dp4a_"));
}

/* Rank (0 = the best) of what a tuner found with a few trials, summed over seeds. */
static int found_rank_sum(yq_tuner tuner, int trials, int seeds)
{
    static yq_tune_task t;
    make_task(&t, K1);
    double costs[YQ_CONV_MAX_CFGS];
    for (int i = 0; i < t.n_cand; i++) costs[i] = cost_sep(&t, t.cand[i]);
    int sum = 0;
    for (int s = 1; s <= seeds; s++) {
        mock m;
        mock_init(&m, cost_sep);
        yq_tune_opt o = opts(&m, tuner, trials, 0, 0, NULL);
        o.seed = (uint32_t)s * 7919u;
        if (run(&t, 1, &o, &m, NULL)) return -1;
        /* never the same candidate twice */
        for (int i = 0; i < m.calls; i++)
            for (int j = 0; j < i; j++)
                if (!strcmp(m.order[i], m.order[j])) return -2;
        if (t.trials != trials) return -3;
        int r = 0;
        for (int i = 0; i < t.n_cand; i++) r += costs[i] < t.best_us;
        sum += r;
    }
    return sum;
}

static void t_ga(void)
{
    int ga = found_rank_sum(YQ_TUNER_GA, 10, 30), rnd = found_rank_sum(YQ_TUNER_RANDOM, 10, 30);
    CHECKF(ga >= 0 && rnd >= 0, "ga %d, random %d (negative: a candidate measured twice or the trials not kept)", ga, rnd);
    printf("# ranks of the best found with 10 trials, summed over 30 seeds: ga %d, random %d\n", ga, rnd);
    CHECKF(ga < rnd, "ga (%d) no better than random (%d) on a separable landscape", ga, rnd);
    /* with every trial allowed it finds the best */
    static yq_tune_task t;
    make_task(&t, K1);
    mock m;
    mock_init(&m, cost_sep);
    yq_tune_opt o = opts(&m, YQ_TUNER_GA, 0, 0, 0, NULL);
    OK(run(&t, 1, &o, &m, NULL));
    CHECK(same(t.best, t.cand[argmin(&t, cost_sep)]) && m.calls == t.n_cand);
}

/* ---- failures ------------------------------------------------------------------- */

static void t_failures(void)
{
    static yq_tune_task t;
    make_task(&t, K1);
    mock m;
    mock_init(&m, cost_sep);
    /* the three fastest fail: a mismatch, an error, a timeout */
    double c[YQ_CONV_MAX_CFGS];
    int idx[YQ_CONV_MAX_CFGS];
    for (int i = 0; i < t.n_cand; i++) { c[i] = cost_sep(&t, t.cand[i]); idx[i] = i; }
    for (int i = 1; i < t.n_cand; i++)
        for (int j = i; j > 0 && c[idx[j]] < c[idx[j - 1]]; j--) { int x = idx[j]; idx[j] = idx[j - 1]; idx[j - 1] = x; }
    yq_trial_status as[3] = { YQ_TRIAL_MISMATCH, YQ_TRIAL_ERROR, YQ_TRIAL_TIMEOUT };
    for (int k = 0; k < 3; k++) {
        name_of(t.cand[idx[k]], m.fail[k]);
        m.fail_as[k] = as[k];
    }
    m.n_fail = 3;
    const char *log = tpath("fail.jsonl");
    remove(log);
    yq_tune_opt o = opts(&m, YQ_TUNER_GRID, 0, 0, 0, log);
    OK(run(&t, 1, &o, &m, NULL));
    CHECKF(same(t.best, t.cand[idx[3]]), "the fastest correct candidate should win");
    CHECK(t.failed == 3 && t.trials == t.n_cand - 1);
    CHECK(count_lines(log, "\"ok\":false") == 3 && count_lines(log, "injected failure") == 3);
    CHECK(count_lines(log, "\"done\":true") == 1);
    /* a fatal one ends the run with the reason */
    mock_init(&m, cost_sep);
    name_of(t.cand[3], m.fail[0]);
    m.fail_as[0] = YQ_TRIAL_FATAL;
    m.n_fail = 1;
    remove(log);
    o = opts(&m, YQ_TUNER_GRID, 0, 0, 0, log);
    yq_status st = run(&t, 1, &o, &m, NULL);
    CHECKF(st == YQ_ERR_CUDA && strstr(err.msg, m.fail[0]) && strstr(err.msg, "injected"), "fatal: %s", err.msg);
    CHECK(m.ends == 1);   /* the task was released */
    CHECK(count_lines(log, "\"ok\":true") == 4 && count_lines(log, "\"done\"") == 0);
    /* the default failing is fatal too: there is no reference */
    mock_init(&m, cost_sep);
    snprintf(m.fail[0], sizeof m.fail[0], "dp4a_64x64");
    m.fail_as[0] = YQ_TRIAL_ERROR;
    m.n_fail = 1;
    o = opts(&m, YQ_TUNER_GRID, 0, 0, 0, NULL);
    st = run(&t, 1, &o, &m, NULL);
    CHECKF(st != YQ_OK && strstr(err.msg, "default"), "%s", err.msg);
    remove(log);
}

/* ---- budget ---------------------------------------------------------------------- */

static void t_budget(void)
{
    static yq_tune_task t[4];
    static const char *keys[4] = { "c64x104x104-f128-k3s1p1-g1-s8s8-b1", "c128x52x52-f256-k3s1p1-g1-s8s8-b1",
                                   "c256x26x26-f512-k3s1p1-g1-s8s8-b1", "c512x13x13-f1024-k3s1p1-g1-s8s8-b1" };
    for (int i = 0; i < 4; i++) make_task(&t[i], keys[i]);
    mock m;
    mock_init(&m, cost_sep);
    m.step = 1.0;   /* each measurement: one fake second */
    const char *log = tpath("budget.jsonl");
    remove(log);
    yq_tune_opt o = opts(&m, YQ_TUNER_GRID, 0, 0, 20, log);
    yq_tune_summary s;
    OK(run(t, 4, &o, &m, &s));
    CHECKF(m.calls <= 21, "%d measurements within a 20 s budget", m.calls);
    for (int i = 0; i < 4; i++) {
        CHECKF(t[i].state == YQ_TUNE_PARTIAL, "task %d: state %d", i, t[i].state);
        CHECKF(t[i].measured >= 4 && t[i].measured <= 7, "task %d measured %d times (a fair share is 5)", i, t[i].measured);
    }
    CHECK(s.partial == 4 && count_lines(log, "\"done\"") == 0);
    /* the next run, without a budget, resumes: nothing is measured twice */
    mock m2;
    mock_init(&m2, cost_sep);
    o = opts(&m2, YQ_TUNER_GRID, 0, 0, 0, log);
    OK(run(t, 4, &o, &m2, &s));
    int total = 0;
    for (int i = 0; i < 4; i++) {
        total += t[i].n_cand;
        CHECK(t[i].state == YQ_TUNE_SEARCHED && same(t[i].best, t[i].cand[argmin(&t[i], cost_sep)]));
    }
    CHECKF(m.calls + m2.calls == total, "%d + %d measurements for %d candidates", m.calls, m2.calls, total);
    for (int i = 0; i < m2.calls; i++)
        for (int j = 0; j < m.calls; j++) CHECKF(strcmp(m2.order[i], m.order[j]), "%s measured twice", m2.order[i]);
    CHECK(count_lines(log, "\"done\"") == 4);
    /* a budget spent before a task begins: the task keeps the default, measured nothing */
    mock_init(&m, cost_sep);
    m.step = 1.0;
    o = opts(&m, YQ_TUNER_GRID, 0, 0, 2, NULL);
    OK(run(t, 4, &o, &m, &s));
    CHECK(t[0].state == YQ_TUNE_PARTIAL && t[1].state == YQ_TUNE_PARTIAL);
    CHECK(t[2].state == YQ_TUNE_SKIPPED && t[3].state == YQ_TUNE_SKIPPED && t[3].measured == 0);
    CHECK(same(t[3].best, t[3].def) && s.skipped == 2);
    remove(log);
}

/* ---- the log ----------------------------------------------------------------------- */

static void t_log_reuse(void)
{
    static yq_tune_task t[3];
    static const char *keys[3] = { "c64x104x104-f128-k3s1p1-g1-s8s8-b1", "c128x52x52-f64-k1s1p0-g1-s8s8-b1",
                                   "c256x26x26-f512-k3s2p1-g1-s8s8-b32" };
    for (int i = 0; i < 3; i++) make_task(&t[i], keys[i]);
    const char *log = tpath("reuse.jsonl");
    remove(log);
    mock m;
    mock_init(&m, cost_sep);
    yq_tune_opt o = opts(&m, YQ_TUNER_MODEL, 8, 0, 0, log);
    OK(run(t, 3, &o, &m, NULL));
    yq_conv_cfg best[3];
    double bus[3], dus[3];
    for (int i = 0; i < 3; i++) { best[i] = t[i].best; bus[i] = t[i].best_us; dus[i] = t[i].default_us; }
    int first = m.calls;
    CHECK(first == 3 * 9 && count_lines(log, NULL) == 3 * 9 + 3);
    /* the log read back: the best per (key, arch) */
    yq_tune_log *l;
    OK(yq_tune_log_read(log, &l, &err));
    CHECK(yq_tune_log_trials(l) == 27);
    for (int i = 0; i < 3; i++) {
        yq_conv_cfg c;
        double us;
        CHECK(yq_tune_log_best(l, keys[i], "sm_90", &c, &us) && same(c, best[i]) && fabs(us - bus[i]) < 1e-3);
        CHECK(yq_tune_log_done(l, keys[i], "sm_90") && !yq_tune_log_done(l, keys[i], "sm_80"));
        CHECK(!yq_tune_log_best(l, keys[i], "sm_86", &c, &us));
    }
    yq_tune_log_free(l);
    /* a second run measures nothing and decides the same */
    mock_init(&m, cost_sep);
    yq_tune_summary s;
    OK(run(t, 3, &o, &m, &s));
    CHECKF(m.calls == 0 && m.begins == 0, "the second run measured %d times", m.calls);
    for (int i = 0; i < 3; i++)
        CHECK(t[i].state == YQ_TUNE_LOGGED && same(t[i].best, best[i]) && fabs(t[i].default_us - dus[i]) < 1e-3);
    CHECK(s.logged == 3 && count_lines(log, NULL) == 30);
    /* --retune searches again, but every trial it repeats comes from the log */
    mock_init(&m, cost_sep);
    o.retune = 1;
    OK(run(t, 3, &o, &m, &s));
    CHECK(m.calls == 0 && s.searched == 3 && t[0].trials == 8);
    /* another architecture is another task */
    mock_init(&m, cost_sep);
    o.retune = 0;
    yq_tune_device d = { &m, mock_begin, mock_measure, mock_end };
    OK(yq_tune_run(t, 1, "sm_80", &o, &d, &s, &err));
    CHECK(m.calls == 9 && t[0].state == YQ_TUNE_SEARCHED);
    remove(log);
}

static double cost_other(const yq_tune_task *t, yq_conv_cfg c)
{
    /* a landscape whose best is mma tile 4, split 4 */
    (void)t;
    if (c.family == YQ_CONV_DP4A) return 900;
    return 200 + 15 * abs(c.tile - 4) + 3 * abs(c.split_k - 4);
}

static void t_similar(void)
{
    static yq_tune_task a, b, far;
    make_task(&a, "c256x52x52-f128-k3s1p1-g1-s8s8-b1");
    make_task(&b, "c256x52x52-f256-k3s1p1-g1-s8s8-b1");
    make_task(&far, "c256x52x52-f256-k1s1p0-g1-s8s8-b1");
    const char *log = tpath("similar.jsonl");
    remove(log);
    mock m;
    mock_init(&m, cost_other);
    yq_tune_opt o = opts(&m, YQ_TUNER_GRID, 0, 0, 0, log);
    OK(run(&a, 1, &o, &m, NULL));
    char abest[64], name[64];
    name_of(a.best, abest);
    CHECK(strstr(abest, "_k4"));
    /* the similar shape tries a's best right after its default */
    mock_init(&m, cost_sep);
    o = opts(&m, YQ_TUNER_GRID, 3, 0, 0, log);
    OK(run(&b, 1, &o, &m, NULL));
    CHECKF(!strcmp(strchr(m.order[1], '|') + 1, abest), "second trial %s, expected %s", m.order[1], abest);
    CHECK(!strcmp(b.similar, a.key));
    /* a 1x1 conv is not similar to a 3x3 one: the grid order stands */
    mock_init(&m, cost_sep);
    OK(run(&far, 1, &o, &m, NULL));
    name_of(far.cand[0], name);
    CHECK(!strcmp(strchr(m.order[1], '|') + 1, name) && far.similar[0] == 0);
    yq_tune_log *l;
    OK(yq_tune_log_read(log, &l, &err));
    char sim[96];
    yq_conv_cfg c;
    CHECK(yq_tune_log_similar(l, "c128x52x52-f128-k3s1p1-g1-s8s8-b1", "sm_90", sim, sizeof sim, &c));
    CHECK(!strcmp(sim, a.key) || !strcmp(sim, b.key));
    CHECK(!yq_tune_log_similar(l, "c128x52x52-f128-k3s1p1-g1-s8s8-b1", "sm_80", sim, sizeof sim, &c));
    CHECK(!yq_tune_log_similar(l, "c128x52x52-f128-k5s1p2-g1-s8s8-b1", "sm_90", sim, sizeof sim, &c));
    CHECK(!yq_tune_log_similar(l, "c128x52x52-f128-k3s1p1-g1-u8s8-b1", "sm_90", sim, sizeof sim, &c));
    yq_tune_log_free(l);
    remove(log);
}

static void expect_bad_log(const char *text, int line, const char *what)
{
    const char *p = tpath("bad.jsonl");
    write_text(p, text);
    yq_tune_log *l = NULL;
    yq_status st = yq_tune_log_read(p, &l, &err);
    char where[600];
    snprintf(where, sizeof where, "%s:%d: ", p, line);
    CHECKF(st == YQ_ERR_FORMAT && !l && strstr(err.msg, where) && strstr(err.msg, what), "%s -> status %d: %s", text,
           (int)st, err.msg);
    /* the tuner refuses to run on it, before measuring anything */
    static yq_tune_task t;
    make_task(&t, K1);
    mock m;
    mock_init(&m, cost_sep);
    yq_tune_opt o = opts(&m, YQ_TUNER_GRID, 0, 0, 0, p);
    CHECK(run(&t, 1, &o, &m, NULL) == YQ_ERR_FORMAT && m.calls == 0);
}

static void t_log_bad(void)
{
    const char *good = "{\"key\":\"c3x416x416-f32-k3s1p1-g1-u8s8-b1\",\"arch\":\"sm_90\",\"cfg\":\"dp4a_64x64\",\"ok\":true,\"us\":12.5}\n";
    char text[2048];
    expect_bad_log("not json\n", 1, "not a JSON object");
    snprintf(text, sizeof text, "%s\n%s{\"key\":\"c3x416x416-f32-k3s1p1-g1-u8s8-b1\",\"arch\":\"sm_90\",\"cfg\":\"mma_7x7x7_s9\","
             "\"ok\":true,\"us\":3}\n", good, good);
    expect_bad_log(text, 4, "unknown kernel configuration 'mma_7x7x7_s9'");
    snprintf(text, sizeof text, "%s{\"arch\":\"sm_90\",\"cfg\":\"dp4a_64x64\",\"ok\":true,\"us\":3}\n", good);
    expect_bad_log(text, 2, "\"key\"");
    expect_bad_log("{\"key\":\"conv_12\",\"arch\":\"sm_90\",\"cfg\":\"dp4a_64x64\",\"ok\":true,\"us\":3}\n", 1, "\"key\"");
    expect_bad_log("{\"key\":\"c3x416x416-f32-k3s1p1-g1-u8s8-b1\",\"arch\":\"90\",\"cfg\":\"dp4a_64x64\",\"ok\":true,\"us\":3}\n", 1,
                   "\"arch\"");
    expect_bad_log("{\"key\":\"c3x416x416-f32-k3s1p1-g1-u8s8-b1\",\"arch\":\"sm_90\",\"cfg\":\"dp4a_64x64\",\"ok\":true}\n", 1, "\"us\"");
    expect_bad_log("{\"key\":\"c3x416x416-f32-k3s1p1-g1-u8s8-b1\",\"arch\":\"sm_90\",\"cfg\":\"dp4a_64x64\",\"us\":3}\n", 1, "\"ok\"");
    expect_bad_log("{\"key\":\"c3x416x416-f32-k3s1p1-g1-u8s8-b1\",\"arch\":\"sm_90\",\"done\":true,\"best\":\"xyz\",\"us\":3}\n", 1,
                   "unknown kernel configuration 'xyz'");
    expect_bad_log("{\"key\":\"c3x416x416-f32-k3s1p1-g1-u8s8-b1\",\"arch\":\"sm_90\",\"ok\":true,\"us\":3}\n", 1, "neither");
    /* blank lines, a failed trial without a time, unknown extra fields: fine; a missing file is an empty log */
    const char *p = tpath("fine.jsonl");
    snprintf(text, sizeof text, "\n%s\n  \n{\"key\":\"c3x416x416-f32-k3s1p1-g1-u8s8-b1\",\"arch\":\"sm_90\",\"cfg\":\"dp4a_128x128\","
             "\"ok\":false,\"why\":\"mismatch\",\"future\":[1,2]}\n", good);
    write_text(p, text);
    yq_tune_log *l;
    OK(yq_tune_log_read(p, &l, &err));
    yq_conv_cfg c;
    double us;
    CHECK(yq_tune_log_trials(l) == 2 && yq_tune_log_best(l, "c3x416x416-f32-k3s1p1-g1-u8s8-b1", "sm_90", &c, &us) && us == 12.5);
    CHECK(same(c, cfg_of("dp4a_64x64")) && !yq_tune_log_done(l, "c3x416x416-f32-k3s1p1-g1-u8s8-b1", "sm_90"));
    yq_tune_log_free(l);
    remove(p);
    OK(yq_tune_log_read(tpath("missing.jsonl"), &l, &err));
    CHECK(yq_tune_log_trials(l) == 0);
    yq_tune_log_free(l);
    remove(tpath("bad.jsonl"));
}

/* ---- tasks of a real model -------------------------------------------------------------- */

static yq_graph *load_quantized(const char *cfg, int size, int head_int8)
{
    yq_import_opt io;
    memset(&io, 0, sizeof io);
    io.synthetic = 1;
    io.seed = 3;
    io.width = io.height = size;
    yq_graph *g = NULL;
    if (yq_darknet_load(cfg, NULL, &io, &g, &err)) return NULL;
    static yq_qconfig qc;
    yq_qconfig_defaults(&qc);
    qc.head_float = !head_int8;
    if (test_rewrite(&g, NULL, &qc, &err)) {
        yq_graph_free(g);
        return NULL;
    }
    return g;
}

static void t_tasks_yolov3(void)
{
    char cfg[512];
    snprintf(cfg, sizeof cfg, "%s/models/cfg-only/yolov3.cfg", test_data_dir());
    if (access(cfg, R_OK)) TEST_SKIP("%s not found (set YQ_DATA)", cfg);
    yq_graph *g = load_quantized(cfg, 416, 0);
    CHECKF(g, "%s", err.msg);
    int batches[2] = { 1, 32 };
    yq_tune_task *t;
    int n;
    yq_status st = yq_tune_tasks(g, batches, 2, &t, &n, &err);
    int convs = 0, floats = 0;
    for (int i = 1; i < g->n_nodes; i++) {
        convs += g->nodes[i].op == YQ_OP_CONV;
        floats += g->nodes[i].op == YQ_OP_CONV && g->q[i].float_op;
    }
    int nodes = 0, per_b[2] = { 0, 0 }, keys_ok = 1, fused_tasks = 0, fused_convs = 0;
    for (int i = 1; i < g->n_nodes; i++) fused_convs += yq_plan_fused_shortcut(g, i, NULL) > 0;
    for (int i = 0; st == YQ_OK && i < n; i++) {
        nodes += t[i].n_nodes;
        per_b[t[i].batch == 32]++;
        /* a conv the plan fuses with its shortcut: measured with it, under its own key */
        int rf = 0, j = yq_plan_fused_shortcut(g, t[i].node, &rf);
        keys_ok &= j == (t[i].res_node > 0 ? t[i].res_node : -1) && (j < 0 || rf == t[i].res_first);
        keys_ok &= (strstr(t[i].key, "r-b") != NULL) == (j > 0);
        fused_tasks += j > 0;
        char key[96];
        keys_ok &= yq_tune_node_key(g, t[i].node, t[i].batch, key, sizeof key) == 0 && !strcmp(key, t[i].key);
        keys_ok &= t[i].ops > 0 && strstr(t[i].key, t[i].batch == 32 ? "-b32" : "-b1") != NULL;
    }
    printf("# yolov3-416: %d convs (%d kept in float), %d shapes per batch\n", convs, floats, per_b[0]);
    yq_tune_tasks_free(t);
    yq_graph_free(g);
    OK(st);
    CHECK(keys_ok);
    CHECKF(nodes == 2 * (convs - floats), "tasks cover %d conv runs, expected %d", nodes, 2 * (convs - floats));
    /* 23 distinct conv shapes; the three head convs (distinct shapes) stay float by default;
     * the 3x3 convs of Darknet-53's 23 residual blocks fuse their shortcut: 5 shapes, of which
     * 3 also run unfused in the heads (their own tasks) */
    CHECKF(fused_convs == 23 && fused_tasks == 2 * 5, "%d convs fused, %d fused tasks", fused_convs, fused_tasks);
    CHECKF(per_b[0] == per_b[1] && per_b[0] == 23 && floats == 3, "%d / %d shapes, %d float", per_b[0], per_b[1], floats);
    g = load_quantized(cfg, 416, 1);
    CHECKF(g, "%s", err.msg);
    st = yq_tune_tasks(g, batches, 1, &t, &n, &err);
    yq_tune_tasks_free(t);
    yq_graph_free(g);
    OK(st);
    CHECKF(n == 26, "int8 heads: %d shapes at batch 1", n);
    /* an FP32 graph has nothing to tune */
    yq_graph *f = NULL;
    yq_import_opt io;
    memset(&io, 0, sizeof io);
    io.synthetic = 1;
    OK(yq_darknet_load(cfg, NULL, &io, &f, &err));
    st = yq_tune_tasks(f, batches, 2, &t, &n, &err);
    yq_graph_free(f);
    CHECK(st == YQ_ERR_INVALID_ARG && strstr(err.msg, "int8"));
}

/* ---- the package ---------------------------------------------------------------- */

/* yolo-fastest puts a [dropout] between each block's last conv and its [shortcut]: the
 * rule looks through it (the dropout is the identity), so all 18 adds fuse, each residual
 * the shortcut's other source; a dropout read twice stops it. */
static void t_fuse_through_dropout(void)
{
    char cfg[512];
    snprintf(cfg, sizeof cfg, "%s/models/yolo-fastest-1.1-xl/yolo-fastest-1.1-xl.cfg", test_data_dir());
    if (access(cfg, R_OK)) TEST_SKIP("%s not found (set YQ_DATA)", cfg);
    yq_graph *g = load_quantized(cfg, 320, 0);
    CHECKF(g, "%s", err.msg);
    int fused = 0, through = 0, right = 1;
    for (int i = 1; i < g->n_nodes; i++) {
        int rf = -1, j = yq_plan_fused_shortcut(g, i, &rf);
        if (j < 0) continue;
        fused++;
        const yq_node *s = &g->nodes[j];
        int mine = s->src[rf ? 1 : 0], res = s->src[rf ? 0 : 1];
        through += g->nodes[mine].op == YQ_OP_DROPOUT;
        right &= s->op == YQ_OP_SHORTCUT && yq_plan_pass_source(g, mine) == i && res < i &&
                 yq_plan_pass_source(g, res) != i;
    }
    CHECKF(fused == 18 && through == 18 && right, "%d adds fused (%d through a dropout, placement %s)", fused, through,
           right ? "right" : "wrong");
    /* a second reader of one dropout: that conv no longer fuses */
    int d = -1;
    for (int i = 1; i < g->n_nodes && d < 0; i++)
        if (g->nodes[i].op == YQ_OP_DROPOUT && yq_plan_fused_shortcut(g, g->nodes[i].src[0], NULL) >= 0) d = i;
    CHECK(d > 0);
    int conv = g->nodes[d].src[0], reader = -1;
    for (int m = d + 2; m < g->n_nodes && reader < 0; m++)
        if (g->nodes[m].op == YQ_OP_CONV && g->nodes[m].n_src == 1) reader = m;
    CHECK(reader > 0);
    int keep = g->nodes[reader].src[0];
    g->nodes[reader].src[0] = d;
    CHECKF(yq_plan_fused_shortcut(g, conv, NULL) < 0, "conv %d fused though its dropout has two readers", conv);
    g->nodes[reader].src[0] = keep;
    yq_graph_free(g);
}

static void t_choices_and_merge(void)
{
    yq_graph *g = load_quantized(TINY, 0, 1);
    CHECKF(g, "%s", err.msg);
    int batches[2] = { 1, 4 };
    yq_tune_task *t;
    int n;
    OK(yq_tune_tasks(g, batches, 2, &t, &n, &err));
    CHECK(n == 6);   /* three convs, all different, two batches */
    for (int i = 0; i < n; i++) {
        t[i].state = i == 5 ? YQ_TUNE_SKIPPED : YQ_TUNE_SEARCHED;
        t[i].def = cfg_of("dp4a_64x64");
        t[i].best = i % 2 ? cfg_of("dp4a_128x128") : cfg_of("dp4a_32x32ks");
        t[i].best_us = 10 + i;
        t[i].default_us = 20 + i;
        if (i < 2) {
            t[i].family_us[YQ_CONV_DP4A] = 11;
            t[i].family_best[YQ_CONV_DP4A] = cfg_of("dp4a_128x128");
        }
    }
    yq_tuned_kernel *k = NULL, *fk = NULL;
    int nk, nf;
    OK(yq_tune_choices(g, t, n, 90, -1, &k, &nk, &err));
    OK(yq_tune_choices(g, t, n, 90, YQ_CONV_DP4A, &fk, &nf, &err));
    yq_tune_tasks_free(t);
    CHECK(nk == 5 && nf == 2);
    CHECK(k[0].batch == 1 && k[0].sm == 90 && g->nodes[k[0].node].op == YQ_OP_CONV && !strcmp(k[0].cfg, "dp4a_32x32ks"));
    CHECK(k[0].us == 10 && k[0].default_us == 20 && !strcmp(fk[0].cfg, "dp4a_128x128") && fk[0].us == 11);
    /* merge: same (node, batch, sm) replaced, others appended */
    yq_tuned_kernel add[2] = { k[0], k[0] };
    snprintf(add[0].cfg, sizeof add[0].cfg, "dp4a_64x64");
    add[1].sm = 80;
    OK(yq_tune_merge(&k, &nk, add, 2, &err));
    CHECK(nk == 6 && !strcmp(k[0].cfg, "dp4a_64x64") && k[5].sm == 80);
    free(k);
    free(fk);
    yq_graph_free(g);
}

/* Replaces the bytes `from` with `to` (same length) in a file; 1 if found. */
static int patch_file(const char *path, const char *from, const char *to)
{
    FILE *f = fopen(path, "r+b");
    if (!f) return 0;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n);
    int found = 0;
    if (b && fread(b, 1, (size_t)n, f) == (size_t)n) {
        size_t l = strlen(from);
        for (long i = 0; i + (long)l <= n && !found; i++)
            if (!memcmp(b + i, from, l)) {
                memcpy(b + i, to, l);
                found = 1;
            }
        fseek(f, 0, SEEK_SET);
        if (found && fwrite(b, 1, (size_t)n, f) != (size_t)n) found = 0;
    }
    free(b);
    fclose(f);
    return found;
}

static void t_package_kernels(void)
{
    yq_graph *g = load_quantized(TINY, 0, 1);
    CHECKF(g, "%s", err.msg);
    int convs[3], nc = 0;
    for (int i = 1; i < g->n_nodes && nc < 3; i++)
        if (g->nodes[i].op == YQ_OP_CONV) convs[nc++] = i;
    CHECK(nc == 3);
    yq_tuned_kernel k[4] = {
        { convs[0], 1, 90, "dp4a_64x64", 12.5f, 15.0f }, { convs[1], 1, 90, "dp4a_128x128", 3.0f, 3.5f },
        { convs[1], 32, 90, "dp4a_32x32ks", 30.0f, 41.0f }, { convs[2], 1, 80, "dp4a_64x64", 2.0f, 2.0f },
    };
    yq_package_meta meta;
    memset(&meta, 0, sizeof meta);
    meta.kernels = k;
    meta.n_kernels = 4;
    meta.tuning_json = "{\"note\":\"free-form\"}";
    const char *p = tpath("k.yqp");
    OK(yq_package_write(p, g, &meta, &err));
    yq_graph *h = NULL;
    yq_package_info *info = NULL;
    OK(yq_package_load(p, &h, &info, &err));
    CHECK(info->n_kernels == 4 && info->kernels && !strcmp(info->tuning_json, "{\"note\":\"free-form\"}"));
    for (int i = 0; i < 4; i++)
        CHECKF(info->kernels[i].node == k[i].node && info->kernels[i].batch == k[i].batch && info->kernels[i].sm == k[i].sm &&
               !strcmp(info->kernels[i].cfg, k[i].cfg) && info->kernels[i].us == k[i].us &&
               info->kernels[i].default_us == k[i].default_us, "row %d differs", i);
    yq_package_info_free(info);
    yq_graph_free(h);
    /* a name changed in the file's bytes: the package's checksums refuse it, naming the table */
    CHECK(patch_file(p, "dp4a_128x128", "dp4a_129x128"));
    h = NULL;
    yq_status st = yq_package_load(p, &h, &info, &err);
    CHECKF(st == YQ_ERR_FORMAT && !h && strstr(err.msg, p) && strstr(err.msg, "/kernels/choices does not match its checksum") &&
           !strchr(err.msg, '\n'), "status %d: %s", (int)st, err.msg);
    /* a package without choices still loads (and has none) */
    OK(yq_package_write(p, g, NULL, &err));
    OK(yq_package_load(p, &h, &info, &err));
    CHECK(info->n_kernels == 0 && info->kernels == NULL);
    yq_package_info_free(info);
    yq_graph_free(h);
    /* rows the loader refuses are not written (the writer loads its file back) */
    struct { yq_tuned_kernel row; const char *why; } bad[] = {
        { { 0, 1, 90, "dp4a_64x64", 1, 1 }, "not a conv" },
        { { convs[0] + 1, 1, 90, "dp4a_64x64", 1, 1 }, "not a conv" },
        { { convs[0], 0, 90, "dp4a_64x64", 1, 1 }, "batch 0" },
        { { convs[0], 1, 9, "dp4a_64x64", 1, 1 }, "sm 9" },
        { { convs[0], 1, 90, "f32", 1, 1 }, "cannot run" },
        { { convs[0], 1, 90, "auto", 1, 1 }, "cannot run" },
        { { convs[0], 1, 90, "dp4a_64x64", -1, 1 }, "times" },
        { { convs[0], 1, 90, "zz", 1, 1 }, "unknown kernel configuration 'zz'" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        if (bad[i].row.node == convs[0] + 1 && g->nodes[convs[0] + 1].op == YQ_OP_CONV) continue;
        meta.kernels = &bad[i].row;
        meta.n_kernels = 1;
        const char *q = tpath("bad.yqp");
        st = yq_package_write(q, g, &meta, &err);
        CHECKF(st != YQ_OK && strstr(err.msg, bad[i].why) && access(q, F_OK) != 0, "row %zu: %s", i, err.msg);
    }
    yq_tuned_kernel dup[2] = { k[0], k[0] };
    dup[1].us = 99;
    meta.kernels = dup;
    meta.n_kernels = 2;
    st = yq_package_write(tpath("dup.yqp"), g, &meta, &err);
    CHECKF(st != YQ_OK && strstr(err.msg, "two rows"), "%s", err.msg);
    remove(p);
    yq_graph_free(g);
}

/* ---- on the GPU --------------------------------------------------------------------- */

static void need_gpu(void)
{
    if (yq_cuda_device_count() == 0) TEST_SKIP("no CUDA device");
}

/* Runs plan p (batch b, input x) and downloads every head input into out (concatenated). */
static void run_heads(yq_cuda_plan *p, const yq_graph *g, int b, const float *x, unsigned char *out, size_t *len)
{
    OK(yq_cuda_run(p, x, &err));
    size_t off = 0;
    for (int i = 1; i < g->n_nodes; i++) {
        if (!yq_op_is_head(g->nodes[i].op)) continue;
        int s = g->nodes[i].src[0];
        size_t bytes = (size_t)yq_shape_size(g->nodes[s].out) * (size_t)yq_dtype_size(yq_node_dtype(g, s)) * (size_t)b;
        OK(yq_cuda_download(p, s, out + off, &err));
        off += bytes;
    }
    *len = off;
}

static void t_gpu_tune(void)
{
    need_gpu();
    char cfg[512];
    snprintf(cfg, sizeof cfg, "%s/models/cfg-only/yolov3-tiny.cfg", test_data_dir());
    if (access(cfg, R_OK)) TEST_SKIP("%s not found (set YQ_DATA)", cfg);
    yq_graph *g = load_quantized(cfg, 160, 1);
    CHECKF(g, "%s", err.msg);
    int batches[2] = { 1, 3 };
    yq_tune_task *t;
    int n;
    OK(yq_tune_tasks(g, batches, 2, &t, &n, &err));
    const char *log = tpath("gpu.jsonl");
    remove(log);
    yq_tune_opt o = yq_tune_defaults();
    o.tuner = YQ_TUNER_GRID;
    o.trials = 0;
    o.early_stopping = 0;
    o.budget_s = 0;
    o.log_path = log;
    yq_tune_summary s;
    yq_status st = yq_tune_gpu(g, t, n, &o, &s, &err);
    int failed = 0, searched = 0, cands = 0;
    char why[300] = "";
    for (int i = 0; st == YQ_OK && i < n; i++) {
        failed += t[i].failed;
        searched += t[i].state == YQ_TUNE_SEARCHED;
        cands += t[i].n_cand;
        if (t[i].default_us <= 0 || t[i].best_us <= 0 || t[i].best_us > t[i].default_us)
            snprintf(why, sizeof why, "%s: default %.1f us, best %.1f us", t[i].key, t[i].default_us, t[i].best_us);
    }
    printf("# %d tasks, %d candidates, %d trials in %.1f s\n", n, cands, s.trials, s.seconds);
    CHECKF(st == YQ_OK, "%s", err.msg);
    CHECKF(failed == 0, "%d candidates differ from the default or failed (see %s)", failed, log);
    CHECKF(searched == n && !why[0], "%s", why);
    /* a second run measures nothing */
    yq_tune_summary again;
    OK(yq_tune_gpu(g, t, n, &o, &again, &err));
    CHECK(again.measured == 0 && again.logged == n);
    /* the choices on plans of both batches give the bytes of the untuned plans */
    yq_tuned_kernel *k;
    int nk;
    int sm = yq_cuda_arch();
    OK(yq_tune_choices(g, t, n, sm, -1, &k, &nk, &err));
    yq_tune_tasks_free(t);
    for (int bi = 0; bi < 2; bi++) {
        int b = batches[bi];
        yq_shape is = g->nodes[0].out;
        size_t nin = (size_t)yq_shape_size(is) * (size_t)b;
        float *x = malloc(sizeof *x * nin);
        unsigned char *a = malloc(64 << 20), *c = malloc(64 << 20);
        CHECK(x && a && c);
        for (size_t i = 0; i < nin; i++) x[i] = (float)((i * 7919) % 256) / 255.f;
        yq_cuda_plan *p0, *p1;
        OK(yq_cuda_plan_new(g, b, 0, &p0, &err));
        OK(yq_cuda_plan_new(g, b, 0, &p1, &err));
        int applied = 0;
        OK(yq_tune_apply(p1, g, b, sm, k, nk, &applied, &err));
        size_t la, lc;
        run_heads(p0, g, b, x, a, &la);
        run_heads(p1, g, b, x, c, &lc);
        int eq = la == lc && !memcmp(a, c, la);
        yq_cuda_plan_free(p0);
        yq_cuda_plan_free(p1);
        free(x);
        free(a);
        free(c);
        CHECKF(applied > 0, "batch %d: no choice applied", b);
        CHECKF(eq, "batch %d: the tuned plan's head inputs differ from the untuned plan's", b);
    }
    /* a session on a package with the choices uses them; another architecture's are ignored */
    const char *pk = tpath("tuned.yqp");
    yq_package_meta meta;
    memset(&meta, 0, sizeof meta);
    meta.kernels = k;
    meta.n_kernels = nk;
    OK(yq_package_write(pk, g, &meta, &err));
    for (int i = 0; i < nk; i++) k[i].sm = sm == 75 ? 86 : 75;
    const char *pk2 = tpath("tuned_other.yqp");
    OK(yq_package_write(pk2, g, &meta, &err));
    free(k);
    yq_graph_free(g);
    yq_model *m = NULL, *m2 = NULL;
    yq_session *ss = NULL, *s2 = NULL;
    OK(yq_model_open(pk, &m, &err));
    OK(yq_model_open(pk2, &m2, &err));
    st = yq_session_new(m, "cuda:0", 2, &ss, &err);   /* batch 2: the nearest tuned batch's choices */
    yq_status st2 = st ? st : yq_session_new(m2, "cuda:0", 1, &s2, &err);
    int tuned = ss ? yq_session_tuned_convs(ss) : -1, tuned2 = s2 ? yq_session_tuned_convs(s2) : -1;
    yq_session_free(ss);
    yq_session_free(s2);
    yq_model_free(m);
    yq_model_free(m2);
    remove(pk);
    remove(pk2);
    remove(log);
    CHECKF(st == YQ_OK && st2 == YQ_OK, "%s", err.msg);
    CHECKF(tuned > 0 && tuned2 == 0, "sessions: %d convs tuned (this sm), %d (another sm)", tuned, tuned2);
}

static void t_gpu_none(void)
{
    if (yq_cuda_device_count() > 0) TEST_SKIP("a CUDA device is present (t_gpu_tune covers it)");
    yq_graph *g = load_quantized(TINY, 0, 1);
    CHECKF(g, "%s", err.msg);
    int b = 1;
    yq_tune_task *t;
    int n;
    OK(yq_tune_tasks(g, &b, 1, &t, &n, &err));
    yq_status st = yq_tune_gpu(g, t, n, NULL, NULL, &err);
    yq_tune_tasks_free(t);
    yq_graph_free(g);
    CHECKF(st == YQ_ERR_CUDA && strstr(err.msg, "no CUDA device"), "status %d: %s", (int)st, err.msg);
}

/* ---- GPU latency (runtime/latency.h) ---------------------------------------------- */

static void t_latency_args(void)
{
    yq_import_opt io;
    memset(&io, 0, sizeof io);
    io.synthetic = 1;
    yq_graph *f = NULL;
    OK(yq_darknet_load(TINY, NULL, &io, &f, &err));
    yq_latency r;
    yq_status st = yq_latency_gpu(f, NULL, &r, &err);      /* a float graph */
    yq_graph_free(f);
    CHECKF(st == YQ_ERR_INVALID_ARG && strstr(err.msg, "int8"), "float graph: status %d: %s", (int)st, err.msg);
    yq_graph *g = load_quantized(TINY, 0, 1);
    CHECKF(g, "%s", err.msg);
    yq_latency_opt o = yq_latency_defaults();
    CHECK(o.batch == 1 && o.tune == 1 && o.tune_budget_s > 0 && o.runs > 0 && !o.tune_log);
    o.batch = 0;
    st = yq_latency_gpu(g, &o, &r, &err);
    yq_graph_free(g);
    CHECKF(st == YQ_ERR_INVALID_ARG && strstr(err.msg, "batch"), "batch 0: status %d: %s", (int)st, err.msg);
}

static void t_latency_no_gpu(void)
{
    if (yq_cuda_device_count() > 0) TEST_SKIP("a CUDA device is present (t_gpu_latency covers it)");
    yq_graph *g = load_quantized(TINY, 0, 1);
    CHECKF(g, "%s", err.msg);
    yq_latency_opt o = yq_latency_defaults();
    const char *log = tpath("lat_none.jsonl");
    remove(log);
    o.tune_log = log;
    yq_latency r, before;
    memset(&r, 0x5a, sizeof r);
    before = r;
    yq_status st = yq_latency_gpu(g, &o, &r, &err);
    yq_graph_free(g);
    CHECKF(st == YQ_ERR_UNSUPPORTED && strstr(err.msg, "no CUDA device"), "status %d: %s", (int)st, err.msg);
    CHECK(!memcmp(&r, &before, sizeof r));                 /* *out untouched on failure */
    CHECK(access(log, F_OK) != 0);                         /* and no log written */
}

static void t_gpu_latency(void)
{
    need_gpu();
    char cfg[512];
    snprintf(cfg, sizeof cfg, "%s/models/cfg-only/yolov3-tiny.cfg", test_data_dir());
    if (access(cfg, R_OK)) TEST_SKIP("%s not found (set YQ_DATA)", cfg);
    yq_graph *g = load_quantized(cfg, 160, 1);
    CHECKF(g, "%s", err.msg);
    const char *log = tpath("lat.jsonl");
    remove(log);
    yq_latency_opt o = yq_latency_defaults();
    o.tune_log = log;
    o.tune_budget_s = 300;            /* no shape cut by the budget: every one searched */
    o.runs = 50;
    yq_latency a, b, c, d, e, h;
    OK(yq_latency_gpu(g, &o, &a, &err));
    printf("# %s: %.3f ms per forward (graph %d, eager %.3f ms), %d/%d convs tuned, %d shapes in %.1f s (%d measured)\n",
           a.gpu, a.ms, a.graph, a.eager_ms, a.tuned_convs, a.int8_convs, a.tune.tasks, a.tune_s, a.tune.measured);
    CHECKF(a.ms > 0 && isfinite(a.ms) && a.ms_min <= a.ms && a.ms_mean > 0 && a.eager_ms > 0, "times %g %g %g %g", a.ms,
           a.ms_min, a.ms_mean, a.eager_ms);
    CHECKF(a.graph == 1, "the forward was not captured in a CUDA graph");
    CHECK(a.batch == 1 && a.runs == 50 && a.sm == yq_cuda_arch() && a.gpu[0] && a.gpu_name[0] && !strstr(a.gpu_name, " ("));
    CHECKF(a.tune.tasks > 0 && a.tune.searched == a.tune.tasks && a.tune.logged == 0 && a.tune.measured > 0,
           "tasks %d searched %d logged %d measured %d", a.tune.tasks, a.tune.searched, a.tune.logged, a.tune.measured);
    CHECKF(a.int8_convs > 0 && a.tuned_convs == a.int8_convs, "%d of %d int8 convs run a tuned choice", a.tuned_convs,
           a.int8_convs);
    int done_lines = count_lines(log, "\"done\"");
    CHECKF(done_lines == a.tune.tasks, "%d done lines in the log for %d shapes", done_lines, a.tune.tasks);
    int lines = count_lines(log, "\"key\"");
    /* again: every shape from the log, nothing measured, the same choices */
    OK(yq_latency_gpu(g, &o, &b, &err));
    CHECKF(b.tune.measured == 0 && b.tune.logged == b.tune.tasks && b.tuned_convs == a.tuned_convs && b.ms > 0,
           "second call: measured %d, logged %d of %d, %d convs tuned", b.tune.measured, b.tune.logged, b.tune.tasks,
           b.tuned_convs);
    /* the log alone (no tuning): the same choices, nothing measured or written */
    o.tune = 0;
    OK(yq_latency_gpu(g, &o, &c, &err));
    CHECKF(c.tune.logged == c.tune.tasks && c.tuned_convs == a.tuned_convs && c.tune.measured == 0 && c.ms > 0,
           "log only: logged %d of %d, %d convs tuned", c.tune.logged, c.tune.tasks, c.tuned_convs);
    /* neither tuning nor log: the heuristic */
    o.tune_log = NULL;
    OK(yq_latency_gpu(g, &o, &d, &err));
    CHECKF(d.tuned_convs == 0 && d.tune.tasks == 0 && d.ms > 0, "no log: %d convs tuned", d.tuned_convs);
    CHECK(count_lines(log, "\"key\"") == lines);
    /* a graph sharing its shapes (the heads in float, as a sweep's other point): read, not tuned again */
    yq_graph *g2 = load_quantized(cfg, 160, 0);
    CHECKF(g2, "%s", err.msg);
    o.tune = 1;
    o.tune_log = log;
    yq_status st = yq_latency_gpu(g2, &o, &h, &err);
    yq_graph_free(g2);
    CHECKF(st == YQ_OK, "%s", err.msg);
    CHECKF(h.tune.logged > 0 && h.tune.logged + h.tune.searched == h.tune.tasks && h.int8_convs < a.int8_convs,
           "float heads: logged %d + searched %d of %d, %d int8 convs", h.tune.logged, h.tune.searched, h.tune.tasks,
           h.int8_convs);
    /* another batch: its own shapes, tuned and logged */
    o.batch = 2;
    OK(yq_latency_gpu(g, &o, &e, &err));
    printf("# batch 2: %.3f ms per forward, %d shapes tuned in %.1f s\n", e.ms, e.tune.searched, e.tune_s);
    CHECKF(e.batch == 2 && e.ms > 0 && e.tune.logged == 0 && e.tune.searched == e.tune.tasks && e.tuned_convs == e.int8_convs,
           "batch 2: logged %d, searched %d of %d, %d/%d convs tuned", e.tune.logged, e.tune.searched, e.tune.tasks,
           e.tuned_convs, e.int8_convs);
    CHECK(count_lines(log, "\"done\"") > done_lines);
    yq_graph_free(g);
    remove(log);
}

/* include/yq_tune.h: the options checked alone, naming the bad one; a malformed log is
 * reported before the GPU is looked for; without a GPU the tuning says so; with one, a
 * package's convs are tuned (progress seen, every task measured), the choices stored in
 * the package and read back through yq_model_kernel, and an FP32 model (quantized without
 * calibration) tunes but has no package to store into. */
typedef struct tprog { int calls, finished; } tprog;
static void on_tprog(void *ctx, const yq_tuning_progress *p)
{
    tprog *t = ctx;
    t->calls++;
    t->finished += p->finished;
}

static void t_tuning_api(void)
{
    yq_tuning_opt o = yq_tuning_defaults();
    OK(yq_tuning_check(&o, &err));
    CHECK(o.n_batches == 1 && o.batches[0] == 1 && o.trials > 0 && o.budget_s > 0);
    struct { const char *tuner, *families, *device; int nb; const char *why; } bad[] = {
        { "xgb", NULL, NULL, 1, "xgb" }, { NULL, "dp4a,foo", NULL, 1, "dp4a,foo" }, { NULL, NULL, "cpu", 1, "cpu" },
        { NULL, NULL, "cuda:x", 1, "cuda:x" }, { NULL, NULL, NULL, 0, "batch" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        yq_tuning_opt b = yq_tuning_defaults();
        b.tuner = bad[i].tuner;
        b.families = bad[i].families;
        b.device = bad[i].device;
        b.n_batches = bad[i].nb;
        yq_status st = yq_tuning_check(&b, &err);
        CHECKF(st == YQ_ERR_INVALID_ARG && strstr(err.msg, bad[i].why), "case %zu: status %d: %s", i, (int)st, err.msg);
    }
    /* a package of the tiny network */
    yq_graph *g = load_quantized(TINY, 0, 1);
    CHECKF(g, "%s", err.msg);
    const char *pkg = tpath("api.yqp");
    OK(yq_package_write(pkg, g, NULL, &err));
    yq_graph_free(g);
    yq_model *m = NULL;
    OK(yq_model_open(pkg, &m, &err));
    const char *badlog = tpath("api_bad.jsonl");
    FILE *f = fopen(badlog, "w");
    CHECK(f);
    fputs("{\"v\":1,\"arch\":\"sm_90\",\"key\":\"c16x8x8-f16-k3s1p1-g1-s8s8-b1\",\"cfg\":\"mma_9x9x9_s9\",\"us\":1}\n", f);
    fclose(f);
    yq_tuning *t = (yq_tuning *)1;
    o.log = badlog;
    yq_status st = yq_tuning_new(m, &o, &t, &err);
    CHECKF(st == YQ_ERR_FORMAT && !t && strstr(err.msg, badlog), "a bad log: status %d: %s", (int)st, err.msg);
    const char *log = tpath("api.jsonl");
    remove(log);
    o.log = log;
    if (yq_cuda_device_count() == 0) {
        st = yq_tuning_new(m, &o, &t, &err);
        CHECKF(st == YQ_ERR_UNSUPPORTED && !t && strstr(err.msg, "no CUDA device"), "no GPU: status %d: %s", (int)st, err.msg);
        yq_model_free(m);
        TEST_SKIP("no CUDA device (the options and the log were checked)");
    }
    tprog tp = { 0, 0 };
    o.progress = on_tprog;
    o.ctx = &tp;
    o.budget_s = 120;
    OK(yq_tuning_new(m, &o, &t, &err));
    yq_tuning_info info;
    yq_tuning_describe(t, &info);
    CHECKF(info.tasks > 0 && info.convs > 0 && info.sm > 0 && strstr(info.gpu, "sm_") && info.log_trials == 0,
           "%d tasks, %d convs, sm %d, %s", info.tasks, info.convs, info.sm, info.gpu);
    yq_tune_summary sum;
    OK(yq_tuning_run(t, &sum, &err));
    CHECKF(sum.tasks == info.tasks && sum.searched == info.tasks && tp.finished == info.tasks && tp.calls >= info.tasks,
           "%d tasks, %d searched, progress %d calls %d finished", sum.tasks, sum.searched, tp.calls, tp.finished);
    for (int i = 0; i < info.tasks; i++) {
        yq_tuning_task k;
        OK(yq_tuning_task_get(t, i, &k, &err));
        CHECKF(k.default_us > 0 && k.best_us > 0 && k.best_us <= k.default_us && !strcmp(k.state, "tuned") && k.best_cfg[0],
               "task %d %s: %s, %g / %g us", i, k.key, k.state, k.default_us, k.best_us);
    }
    int stored = 0, nk = yq_tuning_choices(t);
    OK(yq_tuning_save(t, pkg, 0, &stored, &err));
    CHECKF(nk == info.convs && stored == nk, "%d choices, %d stored, %d convs", nk, stored, info.convs);
    yq_tuning_free(t);
    yq_model_free(m);
    OK(yq_model_open(pkg, &m, &err));
    yq_model_about a;
    yq_model_describe(m, &a);
    yq_kernel_choice kc;
    CHECKF(a.n_kernels == stored && yq_model_kernel(m, 0, &kc, &err) == YQ_OK && kc.sm == info.sm && kc.batch == 1,
           "reopened: %d kernels", a.n_kernels);
    yq_model_free(m);
    /* an FP32 model: tuned, nothing to store into */
    yq_model_opt mo = yq_model_defaults();
    mo.weights = "synthetic";
    OK(yq_model_open_opt(TINY, &mo, &m, &err));
    OK(yq_tuning_new(m, &o, &t, &err));
    OK(yq_tuning_run(t, NULL, &err));
    st = yq_tuning_save(t, pkg, 0, NULL, &err);
    CHECKF(st == YQ_ERR_INVALID_ARG && strstr(err.msg, "not a package"), "status %d: %s", (int)st, err.msg);
    yq_tuning_free(t);
    yq_model_free(m);
    remove(pkg);
    remove(log);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/yq_test_tune_%d", (int)getpid());
    char cmd[128];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", tmpdir);
    if (system(cmd) != 0) return 1;
    TEST(t_cfg_names);
    TEST(t_grid);
    TEST(t_random);
    TEST(t_trials_and_early_stopping);
    TEST(t_model);
    TEST(t_ga);
    TEST(t_failures);
    TEST(t_budget);
    TEST(t_log_reuse);
    TEST(t_similar);
    TEST(t_log_bad);
    TEST(t_tasks_yolov3);
    TEST(t_fuse_through_dropout);
    TEST(t_choices_and_merge);
    TEST(t_package_kernels);
    TEST(t_gpu_none);
    TEST(t_gpu_tune);
    TEST(t_latency_args);
    TEST(t_latency_no_gpu);
    TEST(t_gpu_latency);
    TEST(t_tuning_api);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) return 1;
    return test_done();
}
