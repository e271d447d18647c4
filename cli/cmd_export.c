/* yquant export MODEL|PKG -o OUT.onnx: a model or an int8 package as ONNX (include/yq_quant.h
 * yq_export_onnx), and a package's scales for other tools. */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "yq_quant.h"

static const char *help =
    "usage: yquant export MODEL|PKG -o OUT.onnx [--weights FILE|synthetic[:SEED]] [--size N|WxH]\n"
    "                     [--model SRC.onnx] [--trt-cache FILE] [--json FILE|-]\n"
    "\n"
    "Writes an ONNX model for ONNX Runtime, TensorRT (which takes int8 only from Q/DQ models since\n"
    "version 10.1) and other runtimes:\n"
    "  - a Darknet model (a folder, a .cfg or a shared model's name): its FP32 graph, batch-norm\n"
    "    folded; input 'images' (N x 3 x H x W, RGB in [0, 1]), one output per yolo/region head\n"
    "    named after it (its input, undecoded: the anchors, masks and strides are in the\n"
    "    metadata's yquant_heads, the class names in 'names');\n"
    "  - an int8 package of a Darknet model: the same graph as the package computes it, with\n"
    "    QuantizeLinear/DequantizeLinear pairs at its scales on every tensor it holds in int8\n"
    "    (per tensor, zero point 0), its int8 weights (per output channel) and int32 biases\n"
    "    behind DequantizeLinear, its float layers in float;\n"
    "  - an int8 package of an ONNX model: the ONNX model it was made from with the same Q/DQ\n"
    "    pairs (the detect head's decode stays as in the model).\n"
    "A package's export carries its weights, not the model's (cross-layer equalization may have\n"
    "changed them), and its record in the metadata (version, qconfig, accuracy, float convs).\n"
    "\n"
    "  -o, --output FILE   the ONNX model (required)\n"
    "  --weights, --size, --bn   a Darknet model's weights and input size (as for detect)\n"
    "  --model FILE        a package of an ONNX model: the source .onnx (default: the path the\n"
    "                      package records); it must be the file the package was made from\n"
    "  --trt-cache FILE    a package: also write the activation scales as a TensorRT calibration\n"
    "                      cache for the FP32 model (the source .onnx, or a Darknet model's FP32\n"
    "                      export); refused when equalization changed the weights: quantize\n"
    "                      with --set equalize=off for that\n"
    "  --json FILE         a package: also write the scales as JSON: tensor name -> scale,\n"
    "                      weights' per-channel scales ('-': standard output)\n";

enum { OPT_MODEL = CLI_OPT_CMD, OPT_TRT_CACHE, OPT_JSON };
static const struct option options[] = {
    CLI_HELP_OPTION, CLI_MODEL_OPTIONS,
    { "output", required_argument, NULL, CLI_OPT_OUTPUT },
    { "model", required_argument, NULL, OPT_MODEL },
    { "trt-cache", required_argument, NULL, OPT_TRT_CACHE },
    { "json", required_argument, NULL, OPT_JSON },
    { NULL, 0, NULL, 0 },
};

int cmd_export(int argc, char **argv)
{
    const char *out = NULL;
    cli_model_opt mo = { 0 };
    yq_export_opt o = yq_export_defaults();
    cli_getopt g;
    cli_getopt_begin(&g, "export", argc, argv, ":ho:", options);
    for (int c; (c = cli_getopt_next(&g)) != -1;) {
        int r = cli_model_arg(&mo, &g, c);
        if (r) {
            if (r < 0) return 2;
            continue;
        }
        switch (c) {
        case 'h': case CLI_OPT_HELP: fputs(help, stdout); return 0;
        case 'o': case CLI_OPT_OUTPUT: out = g.arg; break;
        case OPT_MODEL: o.model = g.arg; break;
        case OPT_TRT_CACHE: o.trt_cache = g.arg; break;
        case OPT_JSON: o.scales_json = g.arg; break;
        default: return 2;   /* '?': cli_getopt_next said why */
        }
    }
    for (int i = optind; i < argc; i++) {
        if (!mo.model) mo.model = argv[i];
        else return cli_usage_error("export: one model or package (got %s and %s)", mo.model, argv[i]);
    }
    if (!mo.model || !out) return cli_usage_error("export: %s", !mo.model ? "no model or package given" : "no output given (-o OUT.onnx)");
    const char *ins[3] = { mo.model, o.model, mo.weights };
    if (cli_check_outputs(ins, 3, "-o", out, "--trt-cache", o.trt_cache) ||
        cli_check_outputs(ins, 3, "--json", o.scales_json, NULL, NULL))
        return 1;
    yq_error err;
    yq_model *m = NULL;
    if (cli_open_model(&mo, &m, &err) != YQ_OK) return cli_error(&err);
    yq_status st = yq_export_onnx(m, out, &o, &err);
    yq_model_free(m);
    if (st != YQ_OK) return cli_error(&err);
    if (!o.scales_json || strcmp(o.scales_json, "-"))
        printf("wrote %s%s%s%s%s\n", out, o.trt_cache ? ", " : "", o.trt_cache ? o.trt_cache : "", o.scales_json ? ", " : "",
               o.scales_json ? o.scales_json : "");
    return 0;
}
