/* The tuning log (runtime/tune.h): its store in memory, and the JSON-lines file read and
 * appended to.
 *
 * Log lines (one JSON object each; unknown fields are ignored, so later versions
 * may add some):
 *   a trial   {"key": K, "arch": "sm_90", "cfg": NAME, "ok": true, "us": 41.2, "tops": 412.5,
 *              "default": true (the baseline), "tuner": "model", "time": "2026-..Z"}
 *             {"key": K, "arch": ..., "cfg": NAME, "ok": false, "why": "mismatch: ..."}
 *   a task    {"key": K, "arch": ..., "done": true, "best": NAME, "us": 38.0,
 *              "default": NAME, "default_us": 52.1, "trials": 31}
 * "done" is written only when a search ends by itself (candidates, --trials, early
 * stopping), not when the budget cuts it: the next run resumes such a task, reusing
 * the trials logged so far. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cjson/cJSON.h>
#include "runtime/tune_int.h"

/* ---- the log store ------------------------------------------------------------- */

int yq_tl_key_find(const yq_tune_log *l, const char *key, const char *arch)
{
    for (int i = 0; i < l->nk; i++)
        if (!strcmp(l->k[i].key, key) && !strcmp(l->k[i].arch, arch)) return i;
    return -1;
}

int yq_tl_key_get(yq_tune_log *l, const char *key, const char *arch)
{
    int i = yq_tl_key_find(l, key, arch);
    if (i >= 0) return i;
    if (l->nk == l->capk) {
        int nc = l->capk ? 2 * l->capk : 64;
        lkey *p = realloc(l->k, sizeof *p * (size_t)nc);
        if (!p) return -1;
        l->k = p;
        l->capk = nc;
    }
    lkey *k = &l->k[l->nk];
    memset(k, 0, sizeof *k);
    snprintf(k->key, sizeof k->key, "%s", key);
    snprintf(k->arch, sizeof k->arch, "%s", arch);
    k->has_shape = parse_key(key, &k->s) == 0;
    return l->nk++;
}

int yq_tl_add_trial(yq_tune_log *l, const char *key, const char *arch, yq_conv_cfg cfg, int ok, double us,
                         const char *why)
{
    int ki = yq_tl_key_get(l, key, arch);
    if (ki < 0) return -1;
    if (l->nt == l->capt) {
        int nc = l->capt ? 2 * l->capt : 256;
        ltrial *p = realloc(l->t, sizeof *p * (size_t)nc);
        if (!p) return -1;
        l->t = p;
        l->capt = nc;
    }
    ltrial *t = &l->t[l->nt++];
    memset(t, 0, sizeof *t);
    t->key = ki;
    t->cfg = cfg;
    t->ok = ok;
    t->us = us;
    if (why) snprintf(t->why, sizeof t->why, "%s", why);
    lkey *k = &l->k[ki];
    if (ok && (!k->has_best || us < k->best_us)) {
        k->has_best = 1;
        k->best = cfg;
        k->best_us = us;
    }
    return 0;
}

int yq_tl_add_done(yq_tune_log *l, const char *key, const char *arch, yq_conv_cfg best, double us, int has_def,
                        yq_conv_cfg def, double def_us)
{
    int ki = yq_tl_key_get(l, key, arch);
    if (ki < 0) return -1;
    lkey *k = &l->k[ki];
    k->done = 1;
    k->done_best = best;
    k->done_us = us;
    if (has_def) {
        k->has_def = 1;
        k->def = def;
        k->def_us = def_us;
    }
    if (!k->has_best || us < k->best_us) {
        k->has_best = 1;
        k->best = best;
        k->best_us = us;
    }
    return 0;
}

/* A logged trial of cfg on key: 1 and its result (the fastest correct one, else a failure). */
int yq_tl_known(const yq_tune_log *l, int ki, yq_conv_cfg cfg, yq_trial *out)
{
    int found = 0;
    for (int i = 0; i < l->nt; i++) {
        const ltrial *t = &l->t[i];
        if (t->key != ki || !same_cfg(t->cfg, cfg)) continue;
        if (t->ok && (!found || out->status != YQ_TRIAL_OK || t->us < out->us)) {
            out->status = YQ_TRIAL_OK;
            out->us = t->us;
            out->why[0] = 0;
        } else if (!t->ok && !found) {
            out->status = YQ_TRIAL_ERROR;
            out->us = 0;
            snprintf(out->why, sizeof out->why, "%s", t->why);
        }
        found = 1;
    }
    return found;
}

void yq_tune_log_free(yq_tune_log *l)
{
    if (!l) return;
    free(l->k);
    free(l->t);
    free(l);
}

int yq_tune_log_trials(const yq_tune_log *l) { return l ? l->read_trials : 0; }

int yq_tune_log_best(const yq_tune_log *l, const char *key, const char *arch, yq_conv_cfg *cfg, double *us)
{
    int i = l ? yq_tl_key_find(l, key, arch) : -1;
    if (i < 0 || !l->k[i].has_best) return 0;
    if (cfg) *cfg = l->k[i].best;
    if (us) *us = l->k[i].best_us;
    return 1;
}

int yq_tune_log_done(const yq_tune_log *l, const char *key, const char *arch)
{
    int i = l ? yq_tl_key_find(l, key, arch) : -1;
    return i >= 0 && l->k[i].done;
}

static double lratio(double a, double b) { return fabs(log(a / b)); }

int yq_tune_log_similar(const yq_tune_log *l, const char *key, const char *arch, char *similar, size_t cap,
                        yq_conv_cfg *cfg)
{
    kshape s;
    if (!l || parse_key(key, &s)) return 0;
    int best = -1;
    double bd = 0;
    for (int i = 0; i < l->nk; i++) {
        const lkey *k = &l->k[i];
        if (!k->has_best || !k->has_shape || strcmp(k->arch, arch) || !strcmp(k->key, key)) continue;
        const kshape *o = &k->s;
        if (o->k != s.k || o->s != s.s || o->p != s.p || group_kind(o) != group_kind(&s) || strcmp(o->types, s.types))
            continue;
        double d = lratio(o->cin, s.cin) + lratio(o->f, s.f) +
                   lratio((double)o->b * o->h * o->w, (double)s.b * s.h * s.w);
        if (best < 0 || d < bd) {
            best = i;
            bd = d;
        }
    }
    if (best < 0) return 0;
    if (similar) snprintf(similar, cap, "%s", l->k[best].key);
    if (cfg) *cfg = l->k[best].best;
    return 1;
}

/* ---- the log file ----------------------------------------------------------------- */

int yq_tl_arch_ok(const char *a)
{
    if (strncmp(a, "sm_", 3) || !isdigit((unsigned char)a[3])) return 0;
    for (const char *p = a + 3; *p; p++)
        if (!isdigit((unsigned char)*p)) return 0;
    return strlen(a) < 16;
}

/* A configuration name (a JSON string) into cfg: 0, or -1 with the message in why. */
static int cfg_of(const cJSON *name, yq_conv_cfg *cfg, char *why, size_t cap)
{
    if (!yq_conv_cfg_parse(name->valuestring, cfg)) return 0;
    snprintf(why, cap, "unknown kernel configuration '%.40s' (written by another yquant version?)", name->valuestring);
    return -1;
}

/* One line of the log into l; a message in why on failure. */
static int parse_line(yq_tune_log *l, const char *line, char *why, size_t cap)
{
    cJSON *j = cJSON_Parse(line);
    int rc = -1;
    if (!cJSON_IsObject(j)) {
        snprintf(why, cap, "not a JSON object");
        goto done;
    }
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(j, "key"), *arch = cJSON_GetObjectItemCaseSensitive(j, "arch");
    kshape ks;
    if (!cJSON_IsString(key) || parse_key(key->valuestring, &ks) || strlen(key->valuestring) >= 96) {
        snprintf(why, cap, "no \"key\" naming a conv shape (such as \"c256x52x52-f512-k3s2p1-g1-s8s8-b32\")");
        goto done;
    }
    if (!cJSON_IsString(arch) || !yq_tl_arch_ok(arch->valuestring)) {
        snprintf(why, cap, "no \"arch\" such as \"sm_90\"");
        goto done;
    }
    const cJSON *done = cJSON_GetObjectItemCaseSensitive(j, "done");
    const cJSON *us = cJSON_GetObjectItemCaseSensitive(j, "us");
    yq_conv_cfg cfg, def = { 0, 0, 1, 0 };
    if (cJSON_IsTrue(done)) {
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(j, "best"), *d = cJSON_GetObjectItemCaseSensitive(j, "default");
        const cJSON *du = cJSON_GetObjectItemCaseSensitive(j, "default_us");
        if (!cJSON_IsString(b)) {
            snprintf(why, cap, "a \"done\" line without \"best\"");
            goto done;
        }
        if (cfg_of(b, &cfg, why, cap)) goto done;
        if (!cJSON_IsNumber(us) || !isfinite(us->valuedouble) || us->valuedouble <= 0) {
            snprintf(why, cap, "\"us\" must be a time > 0");
            goto done;
        }
        int has_def = cJSON_IsString(d);
        if (has_def && cfg_of(d, &def, why, cap)) goto done;
        double dus = cJSON_IsNumber(du) && isfinite(du->valuedouble) && du->valuedouble > 0 ? du->valuedouble : 0;
        if (yq_tl_add_done(l, key->valuestring, arch->valuestring, cfg, us->valuedouble, has_def, def, dus)) {
            snprintf(why, cap, "out of memory");
            goto done;
        }
        rc = 0;
        goto done;
    }
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, "cfg"), *ok = cJSON_GetObjectItemCaseSensitive(j, "ok");
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "why");
    if (!cJSON_IsString(c)) {
        snprintf(why, cap, "neither a trial (\"cfg\") nor a finished task (\"done\")");
        goto done;
    }
    if (cfg_of(c, &cfg, why, cap)) goto done;
    if (!cJSON_IsBool(ok)) {
        snprintf(why, cap, "a trial without \"ok\": true or false");
        goto done;
    }
    if (cJSON_IsTrue(ok) && (!cJSON_IsNumber(us) || !isfinite(us->valuedouble) || us->valuedouble <= 0)) {
        snprintf(why, cap, "a correct trial needs \"us\", a time > 0");
        goto done;
    }
    if (yq_tl_add_trial(l, key->valuestring, arch->valuestring, cfg, cJSON_IsTrue(ok), cJSON_IsTrue(ok) ? us->valuedouble : 0,
                      cJSON_IsString(w) ? w->valuestring : "failed")) {
        snprintf(why, cap, "out of memory");
        goto done;
    }
    l->read_trials++;
    rc = 0;
done:
    cJSON_Delete(j);
    return rc;
}

yq_status yq_tune_log_read(const char *path, yq_tune_log **out, yq_error *err)
{
    *out = NULL;
    yq_tune_log *l = calloc(1, sizeof *l);
    if (!l) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f) {
        if (path && errno != ENOENT) {
            yq_status st = yq_fail(err, YQ_ERR_IO, "%s: cannot read the tuning log: %s", path, strerror(errno));
            yq_tune_log_free(l);
            return st;
        }
        *out = l;
        return YQ_OK;
    }
    char *line = NULL, why[160];
    size_t cap = 0;
    ssize_t len;
    int no = 0;
    yq_status st = YQ_OK;
    while ((len = getline(&line, &cap, f)) >= 0) {
        no++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        const char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) continue;
        if (strlen(line) != (size_t)len) {
            st = yq_fail(err, YQ_ERR_FORMAT, "%s:%d: a NUL byte in the line (not a tuning log?)", path, no);
            break;
        }
        if (parse_line(l, p, why, sizeof why)) {
            st = yq_fail(err, YQ_ERR_FORMAT, "%s:%d: %s", path, no, why);
            break;
        }
    }
    if (st == YQ_OK && ferror(f)) st = yq_fail(err, YQ_ERR_IO, "%s: read error", path);
    free(line);
    fclose(f);
    if (st) {
        yq_tune_log_free(l);
        return st;
    }
    *out = l;
    return YQ_OK;
}

static void now_iso(char *buf, size_t cap)
{
    time_t t = time(NULL);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm)) snprintf(buf, cap, "unknown");
}

static yq_status log_put(logw *w, cJSON *j, yq_error *err)
{
    char ts[32];
    now_iso(ts, sizeof ts);
    cJSON_AddStringToObject(j, "time", ts);
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    int ok = s && fputs(s, w->f) >= 0 && fputc('\n', w->f) >= 0 && fflush(w->f) == 0;
    cJSON_free(s);
    return ok ? YQ_OK : yq_fail(err, YQ_ERR_IO, "%s: cannot append to the tuning log: %s", w->path, strerror(errno));
}

yq_status yq_tl_trial(logw *w, const yq_tune_task *t, const char *arch, yq_conv_cfg cfg, const yq_trial *r,
                           int is_default, yq_error *err)
{
    if (!w->f) return YQ_OK;
    char name[64];
    cfg_str(cfg, name, sizeof name);
    cJSON *j = cJSON_CreateObject();
    if (!j) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    cJSON_AddStringToObject(j, "key", t->key);
    cJSON_AddStringToObject(j, "arch", arch);
    cJSON_AddStringToObject(j, "cfg", name);
    cJSON_AddBoolToObject(j, "ok", r->status == YQ_TRIAL_OK);
    if (r->status == YQ_TRIAL_OK) {
        cJSON_AddNumberToObject(j, "us", round(r->us * 1000) / 1000);
        cJSON_AddNumberToObject(j, "tops", round(t->ops / r->us * 1e-6 * 100) / 100);
    } else {
        cJSON_AddStringToObject(j, "why", r->why);
    }
    if (is_default) cJSON_AddBoolToObject(j, "default", 1);
    cJSON_AddStringToObject(j, "tuner", w->tuner);
    return log_put(w, j, err);
}

yq_status yq_tl_done(logw *w, const yq_tune_task *t, const char *arch, yq_error *err)
{
    if (!w->f) return YQ_OK;
    char b[64], d[64];
    cfg_str(t->best, b, sizeof b);
    cfg_str(t->def, d, sizeof d);
    cJSON *j = cJSON_CreateObject();
    if (!j) return yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    cJSON_AddStringToObject(j, "key", t->key);
    cJSON_AddStringToObject(j, "arch", arch);
    cJSON_AddBoolToObject(j, "done", 1);
    cJSON_AddStringToObject(j, "best", b);
    cJSON_AddNumberToObject(j, "us", round(t->best_us * 1000) / 1000);
    cJSON_AddStringToObject(j, "default", d);
    cJSON_AddNumberToObject(j, "default_us", round(t->default_us * 1000) / 1000);
    cJSON_AddNumberToObject(j, "trials", t->trials);
    cJSON_AddStringToObject(j, "tuner", w->tuner);
    return log_put(w, j, err);
}

