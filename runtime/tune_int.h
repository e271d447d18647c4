/* Internal to runtime/tune.c (tasks, cost model, search, the run), runtime/tune_log.c (the
 * JSON-lines log: the store and the file) and runtime/tune_gpu.c (the measurement on the GPU):
 * what they share.  Not a public header. */
#ifndef YQ_TUNE_INT_H
#define YQ_TUNE_INT_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "runtime/tune.h"

static inline int same_cfg(yq_conv_cfg a, yq_conv_cfg b)
{
    return a.family == b.family && a.tile == b.tile && a.split_k == b.split_k;
}

static inline void cfg_str(yq_conv_cfg c, char *buf, size_t cap) { yq_conv_cfg_name(c, buf, cap); }

static inline double tops(const yq_tune_task *t, double us) { return us > 0 ? t->ops / us * 1e-6 : 0; }

static inline uint32_t rng_next(uint32_t *s)
{
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

static inline uint32_t rng_seed(uint32_t seed, const char *key)
{
    uint32_t h = 2166136261u ^ seed;
    for (const char *p = key; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
    return h ? h : 0x9e3779b9u;
}

/* ---- shapes from keys (the log holds keys only) */
typedef struct kshape { int cin, h, w, f, k, s, p, g, b; char types[16]; } kshape;

static inline int parse_key(const char *key, kshape *s)
{
    int used = 0;
    memset(s, 0, sizeof *s);
    if (sscanf(key, "c%dx%dx%d-f%d-k%ds%dp%d-g%d-%15[a-z0-9]-b%d%n", &s->cin, &s->h, &s->w, &s->f, &s->k, &s->s, &s->p,
               &s->g, s->types, &s->b, &used) != 10 || key[used] || s->cin < 1 || s->h < 1 || s->w < 1 || s->f < 1 ||
        s->k < 1 || s->s < 1 || s->p < 0 || s->g < 1 || s->b < 1)
        return -1;
    return 0;
}

static inline int group_kind(const kshape *s) { return s->g == 1 ? 0 : s->g == s->cin && s->f == s->cin ? 1 : 2; }

/* ---- the log (runtime/tune_log.c) */
typedef struct lkey {
    char key[96], arch[16];
    kshape s;
    int has_shape;
    int has_best;
    yq_conv_cfg best;
    double best_us;
    int done;
    yq_conv_cfg done_best, def;
    double done_us, def_us;
    int has_def;
} lkey;

typedef struct ltrial {
    int key;
    yq_conv_cfg cfg;
    int ok;
    double us;
    char why[96];
} ltrial;

struct yq_tune_log {
    lkey *k;
    int nk, capk;
    ltrial *t;
    int nt, capt;
    int read_trials;
};

typedef struct logw { FILE *f; const char *path; const char *tuner; } logw;

int yq_tl_key_find(const yq_tune_log *l, const char *key, const char *arch);
int yq_tl_key_get(yq_tune_log *l, const char *key, const char *arch);
int yq_tl_add_trial(yq_tune_log *l, const char *key, const char *arch, yq_conv_cfg cfg, int ok, double us, const char *why);
int yq_tl_add_done(yq_tune_log *l, const char *key, const char *arch, yq_conv_cfg best, double us, int has_def, yq_conv_cfg def, double def_us);
int yq_tl_known(const yq_tune_log *l, int ki, yq_conv_cfg cfg, yq_trial *out);
int yq_tl_arch_ok(const char *a);
yq_status yq_tl_trial(logw *w, const yq_tune_task *t, const char *arch, yq_conv_cfg cfg, const yq_trial *r, int is_default, yq_error *err);
yq_status yq_tl_done(logw *w, const yq_tune_task *t, const char *arch, yq_error *err);

#endif
