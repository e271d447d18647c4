/* yquant: the command-line front end. */
#include <hdf5.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/par.h"
#include "yq_data.h"

static const char *usage =
    "yquant " YQ_VERSION ": INT8 quantization and calibration for YOLO detectors\n"
    "\n"
    "usage: yquant COMMAND [options]      (yquant COMMAND --help for each)\n"
    "\n"
    "commands:\n"
    "  inspect MODEL        layers, shapes, parameters and GFLOPs of a Darknet model\n"
    "  detect MODEL IMG...  detections: printed, drawn (--out DIR), COCO JSON (--json F)\n"
    "  eval MODEL ...       COCO mAP on labelled images (FP32, or int8 with --calib DIR)\n"
    "  quantize MODEL --calib DIR   calibrate, rewrite to int8, validate, write a .yqp package\n"
    "  bench MODEL|PKG      latency and throughput: FP32/FP16 (cuDNN), int8 (ours), GPU or CPU\n"
    "  sweep MODEL --grid G mAP against latency over a grid of qconfigs: CSV, Pareto chart, HTML\n"
    "  sensitivity MODEL    per-layer int8 sensitivity: one layer int8 / one layer float at a time\n"
    "  tune PKG             per-layer kernel tuning on the GPU; the choices are stored in the package\n"
    "  export MODEL|PKG -o F.onnx   a model as ONNX, a package as a Q/DQ ONNX model (ONNX Runtime, TensorRT)\n"
    "\n"
    "  yquant --calib DIR [--bits 8] ...   quantize the default model (yolo-fastest-1.1-xl)\n"
    "\n"
    "MODEL is a folder with one .cfg and one .weights (and optionally .names), a .cfg\n"
    "with --weights FILE|synthetic[:SEED], or a model name under $YQ_DATA/models\n"
    "(YQ_DATA defaults to ../shared).\n"
    "\n"
    "Every option takes its value as --opt VALUE or --opt=VALUE.  Every command takes\n"
    "  -q, --quiet       no progress bars and no notes (results, warnings and errors stay)\n"
    "  -v, --verbose     each step's start and end as a timed line, on a terminal or not\n"
    "and, where it has them, the same names for the same things:\n"
    "  -o, --output      its main output (the package, the drawn images, a folder of reports)\n"
    "  --json FILE|-     its results as JSON ('-': stdout, the JSON alone)\n"
    "  --device D        cpu, cuda or cuda:N; default the GPU when one is usable for the model\n"
    "yquant --version prints the version.  eval and sweep also run over MPI ranks\n"
    "(mpirun -np N yquant eval|sweep ...; see their --help).\n";

/* Ctrl-C or a kill: the temporaries of writes in progress removed, then the default action
 * (so the exit status says which signal). */
static void on_signal(int sig)
{
    yq_out_remove_pending();
    signal(sig, SIG_DFL);
    raise(sig);
}

static int run(int argc, char **argv);

/* Over MPI (cli/par.h): every rank runs the command; rank 0 prints the results and writes the
 * outputs (the others' standard output goes nowhere, their progress bars are off; their
 * warnings and errors stay).  A rank that fails names itself and stops the job. */
int main(int argc, char **argv)
{
    cli_par_init(&argc, &argv);
    const int rank = cli_par_rank(), size = cli_par_size();
    if (size > 1 && rank > 0) {
        cli_verbosity = 0;
        if (!freopen("/dev/null", "w", stdout)) fprintf(stderr, "yquant: rank %d: /dev/null: cannot open\n", rank);
    }
    /* the commands that split their work over ranks; any other is refused, once, by rank 0 */
    const char *cmd = "";   /* the first word that is not -q / -v */
    for (int i = 1; i < argc && !*cmd; i++)
        if (strcmp(argv[i], "-q") && strcmp(argv[i], "--quiet") && strcmp(argv[i], "-v") && strcmp(argv[i], "--verbose"))
            cmd = argv[i];
    int max_drop = 0;   /* quantize splits only its --max-drop search */
    for (int i = 1; i < argc; i++) max_drop |= !strncmp(argv[i], "--max-drop", 10);
    if (size > 1 && strcmp(cmd, "eval") && strcmp(cmd, "sweep") && strcmp(cmd, "sensitivity") &&
        !(!strcmp(cmd, "quantize") && max_drop)) {
        if (rank == 0)
            fprintf(stderr, "yquant: %s does not run over MPI ranks (eval, sweep, sensitivity and quantize --max-drop do): run it as one process\n",
                    cmd);
        cli_par_finalize();
        return 2;
    }
    int rc = run(argc, argv);
    if (size > 1 && rc != 0) {
        fprintf(stderr, "yquant: rank %d of %d failed (exit status %d): stopping the job\n", rank, size, rc);
        cli_par_abort(rc);
    }
    cli_par_finalize();
    return rc;
}

static int run(int argc, char **argv)
{
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    /* No HDF5 exit handler in this program: every file yquant opens is closed before it
     * returns, and a damaged package can leave HDF5's own decoder state unclosable, which
     * its handler reports at exit ("infinite loop closing library") or worse. */
    H5dont_atexit();
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        fputs(usage, stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version")) { puts("yquant " YQ_VERSION); return 0; }
    /* -q / -v wherever they stand (after the command too): taken out, the last one wins */
    int kept = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) cli_verbosity = 0;
        else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) cli_verbosity = 2;
        else if (!strncmp(a, "--quiet=", 8) || !strncmp(a, "--verbose=", 10))   /* flags, as the commands' */
            return cli_usage_error("%.*s takes no value (%s)", (int)(strchr(a, '=') - a), a, a);
        else argv[kept++] = argv[i];
    }
    argv[kept] = NULL;
    argc = kept;
    if (argc < 2) {
        fputs(usage, stdout);
        return 2;
    }
    if (getenv("YQ_GPU_FLOAT"))   /* read by earlier versions: the library takes no switch from the environment */
        cli_note("YQ_GPU_FLOAT is not read (float layers run their exact FP32 everywhere; "
                 "`yquant bench --gpu-float fp16` measures them on FP16 tensor cores)");
    /* each command takes its argv as main's: argv[0] its name (as getopt_long wants it) */
    const char *cmd = argv[1];
    if (cmd[0] == '-') return cmd_quantize(argc, argv);   /* yquant --calib DIR --bits 8 */
    if (!strcmp(cmd, "inspect")) return cmd_inspect(argc - 1, argv + 1);
    if (!strcmp(cmd, "detect")) return cmd_detect(argc - 1, argv + 1);
    if (!strcmp(cmd, "eval")) return cmd_eval(argc - 1, argv + 1);
    if (!strcmp(cmd, "quantize")) return cmd_quantize(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return cmd_bench(argc - 1, argv + 1);
    if (!strcmp(cmd, "sweep")) return cmd_sweep(argc - 1, argv + 1);
    if (!strcmp(cmd, "sensitivity")) return cmd_sensitivity(argc - 1, argv + 1);
    if (!strcmp(cmd, "tune")) return cmd_tune(argc - 1, argv + 1);
    if (!strcmp(cmd, "export")) return cmd_export(argc - 1, argv + 1);
    fprintf(stderr, "yquant: unknown command '%s' (see yquant --help)\n", cmd);
    return 2;
}
