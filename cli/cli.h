/* Shared pieces of the yquant commands, on the public API alone (include/): every cli/ file
 * includes public headers and cli/'s own only (tests/cli_boundary_test.py). */
#ifndef YQ_CLI_H
#define YQ_CLI_H

#include <getopt.h>
#include "yq.h"
#include "yq_data.h"
#include "yq_quant.h"

/* How the GPU int8 engine runs float layers: in their exact FP32, as the packages run (only
 * `yquant bench --gpu-float fp16` times them in FP16). */
#define CLI_GPU_FLOAT "fp32"

/* YQ_DATA, default ../shared. */
const char *cli_data_dir(void);
/* SOURCE_DATE_EPOCH (the reproducible-builds convention) as the packages' 'created' time:
 * then the same inputs write the same package bytes; 0 (now) when unset or not a number. */
long long cli_created_unix(void);

/* ---- Options: getopt_long with the commands' conventions ----
 * A command's argv is as main's: argv[0] its name (skipped), then its options and operands
 * in any order (getopt_long permutes them: after the last option the operands are
 * argv[optind..argc-1], in the order given; `--` ends the options; with POSIXLY_CORRECT set
 * they end at the first operand, as in every GNU program).  Each command has one table of
 * long options (ending in a zero entry) with the shared fragments below, and a string of
 * short ones (":ho:": the ':' first makes a missing value an error of its own).  --opt VALUE
 * and --opt=VALUE are the same; a flag given a value (--letterbox=1) is an error; long
 * options are matched by their whole name (getopt_long's abbreviations are refused).
 * Operands named "-" are refused as unknown options (none reads standard input), except
 * export's.
 *
 *     cli_getopt g;
 *     cli_getopt_begin(&g, "detect", argc, argv, ":ho:", options);
 *     for (int c; (c = cli_getopt_next(&g)) != -1;) {
 *         int r = cli_model_arg(&mo, &g, c);        (1: taken, -1: a bad value, printed)
 *         if (r) ...; else switch (c) { case 'h': case CLI_OPT_HELP: ...  default: return 2; }
 *     }
 *     for (int i = optind; i < argc; i++) ...       (the operands)
 *
 * Every long option's code is one of these or a command's own from CLI_OPT_CMD, never a
 * character: an error names a long option as given and a short one by its character. */
enum {
    CLI_OPT_HELP = 0x100,     /* --help (-h: 'h') */
    CLI_OPT_OUTPUT,           /* --output, and --out where a command takes it (-o: 'o') */
    /* the model options (cli_model_arg) */
    CLI_OPT_WEIGHTS, CLI_OPT_SIZE, CLI_OPT_BN, CLI_OPT_MAX_PIXELS,
    /* the quantization flags (cli_quant_arg) */
    CLI_OPT_CALIB, CLI_OPT_CALIB_CACHE, CLI_OPT_CALIB_DEVICE, CLI_OPT_QCONFIG, CLI_OPT_SET, CLI_OPT_PER_TENSOR,
    CLI_OPT_PER_CHANNEL, CLI_OPT_BITS, CLI_OPT_CALIB_METHOD, CLI_OPT_WEIGHT_SCALE, CLI_OPT_SKIP_LAYERS,
    CLI_OPT_ROUNDING, CLI_OPT_HEAD, CLI_OPT_FIRST, CLI_OPT_EQUALIZE, CLI_OPT_BIAS_CORRECTION,
    /* the latency engine's (cli_lat_arg, cli/latency.h) */
    CLI_OPT_LAT_DEVICE, CLI_OPT_TUNE_LOG, CLI_OPT_LAT_BATCH, CLI_OPT_TUNE_BUDGET,
    CLI_OPT_CMD = 0x200       /* a command's own options from here */
};
#define CLI_HELP_OPTION { "help", no_argument, NULL, CLI_OPT_HELP }
/* --weights, --size, --bn, --max-pixels: every command */
#define CLI_MODEL_OPTIONS                                                      \
    { "weights", required_argument, NULL, CLI_OPT_WEIGHTS },                   \
    { "size", required_argument, NULL, CLI_OPT_SIZE },                         \
    { "bn", required_argument, NULL, CLI_OPT_BN },                             \
    { "max-pixels", required_argument, NULL, CLI_OPT_MAX_PIXELS }

typedef struct cli_getopt {
    const char *cmd;          /* the command, for the messages: "detect" */
    int argc;
    char **argv;
    const char *shortopts;
    const struct option *longopts;
    const char *arg;          /* the option's value (NULL for a flag) */
    char name[64];            /* the option as given, without its value: "--conf", "-o" */
} cli_getopt;
/* Starts a parse of argv (getopt's state reset: commands may run one after another). */
void cli_getopt_begin(cli_getopt *g, const char *cmd, int argc, char **argv, const char *shortopts,
                      const struct option *longopts);
/* The next option's code (a short option's character, a long option's val) with g->arg and
 * g->name set; -1 after the last (the operands from optind); '?' for an unknown option, a
 * missing value or a value given to a flag, after one line on stderr (exit status 2). */
int  cli_getopt_next(cli_getopt *g);
/* "yquant: CMD: unknown option A (see --help)" on stderr: 2.  For an operand that reads as
 * an option ("-"). */
int  cli_getopt_unknown(const cli_getopt *g, const char *a);

/* Model options every command takes: MODEL, --weights, --size, --bn. */
typedef struct cli_model_opt {
    const char *model, *weights;
    int width, height;
    int bn_pjreddie;          /* --bn pjreddie */
    int cfg_only;             /* a cfg without weights is fine (inspect) */
} cli_model_opt;

/* Takes option c (cli_getopt_next) if it is one of the model options (CLI_MODEL_OPTIONS): 1 if
 * taken, 0 if not one of them, -1 on a bad value (message printed). */
int  cli_model_arg(cli_model_opt *o, const cli_getopt *g, int c);
/* MODEL as a path: itself when it exists, else a model of that name under $YQ_DATA/models
 * (a folder, or cfg-only/NAME.cfg); an error naming both when neither exists. */
yq_status cli_model_path(const char *model, char *path, size_t cap, yq_error *err);
yq_model_opt cli_model_options(const cli_model_opt *o);
/* MODEL (a .yqp package or a Darknet model, found by cli_model_path) opened with the options. */
yq_status cli_open_model(const cli_model_opt *o, yq_model **m, yq_error *err);
/* Fills err (code and message) as the library does; returns code. */
yq_status cli_fail(yq_error *err, yq_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* "--size 416" or "--size 416x320" */
int  cli_parse_size(const char *s, int *w, int *h);
/* The file name of path: what follows its last '/' (path itself without one). */
const char *cli_base_name(const char *path);
/* Prints "yquant: <msg>" to stderr and returns 1 (the exit status). */
int  cli_error(const yq_error *err);
int  cli_usage_error(const char *fmt, ...);
/* Checked numbers: the whole string a number in [lo, hi], else one line ("yquant: --conf:
 * 'abc' is not a number in [0, 1]") and 2 (the usage exit status); 0 with *out set. */
int  cli_int(const char *opt, const char *s, long lo, long hi, int *out);
int  cli_num(const char *opt, const char *s, double lo, double hi, double *out);
int  cli_numf(const char *opt, const char *s, double lo, double hi, float *out);
/* Outputs against inputs, before any work.  A cli_inputs holds every input file (folders
 * expanded to their files; NULL and missing paths skipped) by device and inode, so that
 * symlinks and hard links count.  cli_check_output refuses an output path (what: "-o",
 * "--json") that is one of them or that cannot be written (missing or read-only folder, a
 * folder itself); cli_check_outdir an output folder (sweep, sensitivity) that is an input
 * folder.  Each prints one line and returns 1; 0 when fine ("-" and NULL are fine).
 * cli_inputs_new prints and returns NULL when out of memory. */
typedef struct cli_inputs cli_inputs;
cli_inputs *cli_inputs_new(const char *const *paths, int n);
void cli_inputs_free(cli_inputs *in);
int  cli_check_output(const char *what, const char *out, const cli_inputs *in);
int  cli_check_outdir(const char *what, const char *dir, const cli_inputs *in);
/* The set made, one or two outputs checked (what2 NULL: one), the set freed. */
int  cli_check_outputs(const char *const *inputs, int n, const char *what1, const char *out1, const char *what2,
                       const char *out2);
/* The same for a report folder (-o, cli_check_outdir) and its --json (sweep, sensitivity). */
int  cli_check_report(const char *const *inputs, int n, const char *dir, const char *json);
/* Writes a cJSON tree and a newline to path ("-": stdout) as an output file (yq_data.h), printed
 * indented or compact; 0 on success, else the error printed and 1. */
struct cJSON;
int  cli_write_json(const char *path, struct cJSON *root);
int  cli_write_json_compact(const char *path, struct cJSON *root);

/* Terminal progress bar; pass cli_progress as a progress callback with &bar as ctx. */
/* -q/--quiet (0), the default (1), -v/--verbose (2): taken out of argv by main wherever
 * they stand.  Quiet: no progress bars, no notes (results, warnings and errors stay).
 * Verbose: each step's start and end as a timed line, also when stderr is not a terminal. */
extern int cli_verbosity;
/* "yquant: note: ..." on stderr, unless quiet. */
void cli_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A session on `device`, or when device is NULL on the GPU where the model runs there (an
 * int8 model, a usable GPU), else the CPU: the default of every command's --device. */
yq_status cli_session_new(const yq_model *m, const char *device, int max_batch, yq_session **out, yq_error *err);
int cli_gpu_default(const yq_model *m);   /* whether a session without --device goes to the GPU */
#define CLI_DEVICE_HELP "the GPU (cuda) when one is usable and the model is int8, else cpu"

typedef struct cli_bar { const char *label; double t0; int tty, last; } cli_bar;
void cli_progress_start(cli_bar *p, const char *label);
void cli_progress(void *ctx, int done, int total);
/* A library warning on stderr ("warning: MSG"), a yq_warn_fn; ctx a cli_bar drawing (its
 * line is cleared first) or NULL. */
void cli_warn(void *ctx, const char *msg);

/* Quantization flags (cli/qflags.c): --calib, --bits, --set ..., parsed into a qconfig. */
#define CLI_QUANT_OPTIONS                                                      \
    { "calib", required_argument, NULL, CLI_OPT_CALIB },                       \
    { "calib-cache", required_argument, NULL, CLI_OPT_CALIB_CACHE },           \
    { "calib-device", required_argument, NULL, CLI_OPT_CALIB_DEVICE },         \
    { "qconfig", required_argument, NULL, CLI_OPT_QCONFIG },                   \
    { "set", required_argument, NULL, CLI_OPT_SET },                           \
    { "per-tensor", no_argument, NULL, CLI_OPT_PER_TENSOR },                   \
    { "per-channel", no_argument, NULL, CLI_OPT_PER_CHANNEL },                 \
    { "bits", required_argument, NULL, CLI_OPT_BITS },                         \
    { "calib-method", required_argument, NULL, CLI_OPT_CALIB_METHOD },         \
    { "weight-scale", required_argument, NULL, CLI_OPT_WEIGHT_SCALE },         \
    { "skip-layers", required_argument, NULL, CLI_OPT_SKIP_LAYERS },           \
    { "rounding", required_argument, NULL, CLI_OPT_ROUNDING },                 \
    { "head", required_argument, NULL, CLI_OPT_HEAD },                         \
    { "first", required_argument, NULL, CLI_OPT_FIRST },                       \
    { "equalize", required_argument, NULL, CLI_OPT_EQUALIZE },                 \
    { "bias-correction", required_argument, NULL, CLI_OPT_BIAS_CORRECTION }
typedef struct cli_quant_opt cli_quant_opt;
cli_quant_opt *cli_quant_new(void);     /* NULL when out of memory (printed) */
void cli_quant_free(cli_quant_opt *q);  /* NULL is a no-op */
int  cli_quant_arg(cli_quant_opt *q, const cli_getopt *g, int c);   /* CLI_QUANT_OPTIONS, as cli_model_arg */
int  cli_quant_any(const cli_quant_opt *q);               /* a qconfig flag was given */
const char *cli_quant_calib_dir(const cli_quant_opt *q);  /* --calib, or NULL */
const yq_qconf *cli_quant_qconf(const cli_quant_opt *q);  /* the flags' qconfig (borrowed) */
/* A top-level key of qc as the qconfig file writes it (yq_qconf_get) into buf; "" if it cannot
 * be read.  Returns buf. */
const char *cli_qconf_get(const yq_qconf *qc, const char *key, char *buf, size_t cap);
extern const char *cli_quant_help;
/* The worst top of n per-layer errors (lowest SQNR first), as a table on stdout. */
void cli_print_layer_errors(const yq_layer_error *r, int n, int images, int top);
/* q's flags and mo's model options as the public quantizer takes them (*qc: yq_qconf_free);
 * letterbox -1: as the cfg says. */
yq_status cli_quant_options(const cli_quant_opt *q, const cli_model_opt *mo, int letterbox, yq_quant_opt *o,
                            yq_qconf **qc, yq_error *err);
/* The quantizer's callbacks on the terminal: a step starts bar (may be NULL: no bar), warnings
 * go through cli_warn, notes are lines on stderr. */
yq_quant_io cli_quant_term_io(cli_bar *bar);

/* Evaluation helpers (cli/cmd_eval.c). */
int cli_print_stats(const double *stats);
yq_status cli_load_dataset(const char *images, const char *ann, const char *labels, yq_dataset **ds, yq_error *err);

/* "1,32": batch sizes in 1..4096 into out; how many, or -1 for a malformed list. */
int cli_parse_batches(const char *s, int *out, int cap);

/* The commands: argv as main's (argv[0] the command's name, skipped); the exit status. */
int cmd_inspect(int argc, char **argv);
int cmd_detect(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_sensitivity(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_export(int argc, char **argv);

#endif
