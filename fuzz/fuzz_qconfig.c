/* libFuzzer harness: arbitrary bytes as a qconfig file, and its lines as flags.
 *
 * Any input must give YQ_OK or an error with a one-line message, never a crash,
 * undefined behaviour or a leak.  A config that loads must have every effective
 * setting in range, and its text (yq_qconfig_text, what a package stores) must
 * load again and give the same text: the text is the config's only record.
 * Each line of the input also goes through yq_qconfig_set as `key=value` (split
 * at the first '=', nothing trimmed), the path the command-line flags take.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz/fuzz.h"
#include "quant/qconfig.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *in_path, *text_path;
static yq_qconfig qc, qc2;                 /* 100+ KB each: not on the stack */
static char strbuf[1 << 20];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_dir_init("qconfig");
    in_path = fuzz_path("in.qconfig");
    text_path = fuzz_path("text.qconfig");
    return 0;
}

static void check_settings(const yq_qconfig *c)
{
    if (c->n_layers < 0 || c->n_layers > YQ_QC_MAX_LAYERS) abort();
    for (int i = -1; i <= c->n_layers; i++) {   /* -1 and n_layers: the global values */
        int b = yq_qc_bits(c, i);
        yq_wscale w = yq_qc_wscale(c, i);
        yq_calib_method m = yq_qc_calib(c, i);
        float t = yq_qc_thresh(c, i);
        if (b < 2 || b > 8 || (w != YQ_WSCALE_MAX && w != YQ_WSCALE_POWER2 && w != YQ_WSCALE_MSE)) abort();
        if (yq_qc_per_channel(c, i) < 0 || yq_qc_per_channel(c, i) > 1 || yq_qc_skip(c, i) < 0 || yq_qc_skip(c, i) > 1) abort();
        if (m.kind == YQ_CALIB_PERCENTILE && !(m.percentile > 0 && m.percentile <= 100)) abort();
        if (!(t >= 0) || !isfinite(t)) abort();
    }
}

/* The text of c: yq_qconfig_text, which must equal yq_qconfig_str's into a big buffer. */
static char *text_of(const yq_qconfig *c)
{
    char *t = yq_qconfig_text(c);
    if (!t) abort();
    size_t n = yq_qconfig_str(c, strbuf, sizeof strbuf);
    if (n != strlen(t) || (n < sizeof strbuf && strcmp(t, strbuf))) abort();
    return t;
}

static void round_trip(void)
{
    char *t = text_of(&qc);
    fuzz_write(text_path, t, strlen(t));
    yq_error err = { 0 };
    yq_qconfig_defaults(&qc2);
    yq_status st = yq_qconfig_load(&qc2, text_path, &err);
    if (st != YQ_OK) {
        fprintf(stderr, "fuzz: the text of a loaded qconfig does not load: %s\n--- text:\n%s", err.msg, t);
        abort();
    }
    char *t2 = text_of(&qc2);
    if (strcmp(t, t2)) {
        fprintf(stderr, "fuzz: qconfig text changes on a round trip\n--- first:\n%s--- second:\n%s", t, t2);
        abort();
    }
    free(t2);
    free(t);
}

/* Every line as key=value through yq_qconfig_set, into one config. */
static void set_lines(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) abort();
    memcpy(s, data, size);
    s[size] = 0;
    yq_qconfig_defaults(&qc2);
    for (char *line = s, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        char *eq = strchr(line, '=');
        if (!eq) continue;
        *eq = 0;
        yq_error err = { 0 };
        fuzz_check_error(yq_qconfig_set(&qc2, line, eq + 1, "--fuzz", &err), &err);
    }
    check_settings(&qc2);
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_write(in_path, data, size);
    yq_error err = { 0 };
    yq_qconfig_defaults(&qc);
    yq_status st = yq_qconfig_load(&qc, in_path, &err);
    fuzz_check_error(st, &err);
    if (st == YQ_OK) {
        check_settings(&qc);
        round_trip();
    }
    set_lines(data, size);
    return 0;
}
