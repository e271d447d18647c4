/* yquant export PKG -o MODEL.qdq.onnx: an int8 package of an ONNX model as a Q/DQ ONNX model
 * (include/yq_quant.h yq_export_qdq), and its scales for other tools. */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "yq_quant.h"

static const char *help =
    "usage: yquant export PKG -o OUT.onnx [--model SRC.onnx] [--trt-cache FILE] [--json FILE|-]\n"
    "\n"
    "Writes the ONNX model the package PKG was made from with QuantizeLinear/DequantizeLinear\n"
    "pairs carrying the package's scales, for ONNX Runtime, TensorRT (which takes int8 only\n"
    "from Q/DQ models since version 10.1) and other runtimes:\n"
    "  - every tensor the package computes in int8 (per tensor, zero point 0) gets a Q/DQ pair;\n"
    "  - every int8 conv reads the package's int8 weights (per output channel) and int32 bias\n"
    "    through DequantizeLinear; layers the package keeps in float have no Q/DQ and the\n"
    "    package's float weights; the detect head's decode stays as in the model;\n"
    "  - the model's metadata gains yquant's (version, qconfig, accuracy, float convs).\n"
    "The package's weights, not the model's: cross-layer equalization may have changed them.\n"
    "\n"
    "  -o, --output FILE   the Q/DQ model (required)\n"
    "  --model FILE        the source .onnx (default: the path the package records); it must\n"
    "                      be the file the package was made from (its sha256 is checked)\n"
    "  --trt-cache FILE    also write the activation scales as a TensorRT calibration cache for\n"
    "                      the original model (refused when equalization changed the weights:\n"
    "                      quantize with --set equalize=off for that)\n"
    "  --json FILE         also write the scales as JSON: tensor name -> scale, weights' per-\n"
    "                      channel scales ('-': standard output)\n";

int cmd_export(int argc, char **argv)
{
    const char *pkg = NULL, *out = NULL;
    yq_export_opt o = yq_export_defaults();
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(help, stdout); return 0; }
        else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && has) out = argv[++i];
        else if (!strcmp(a, "--model") && has) o.model = argv[++i];
        else if (!strcmp(a, "--trt-cache") && has) o.trt_cache = argv[++i];
        else if (!strcmp(a, "--json") && has) o.scales_json = argv[++i];
        else if (a[0] == '-' && a[1]) return cli_usage_error("export: unknown option or missing value: %s", a);
        else if (!pkg) pkg = a;
        else return cli_usage_error("export: one package (got %s and %s)", pkg, a);
    }
    if (!pkg || !out) return cli_usage_error("export: %s", !pkg ? "no package given" : "no output given (-o OUT.onnx)");
    const char *ins[2] = { pkg, o.model };
    if (cli_check_outputs(ins, o.model ? 2 : 1, "-o", out, "--trt-cache", o.trt_cache) ||
        cli_check_outputs(ins, o.model ? 2 : 1, "--json", o.scales_json, NULL, NULL))
        return 1;
    yq_error err;
    yq_model *m = NULL;
    if (yq_model_open(pkg, &m, &err) != YQ_OK) return cli_error(&err);
    yq_status st = yq_export_qdq(m, out, &o, &err);
    yq_model_free(m);
    if (st != YQ_OK) return cli_error(&err);
    if (!o.scales_json || strcmp(o.scales_json, "-"))
        printf("wrote %s%s%s%s%s\n", out, o.trt_cache ? ", " : "", o.trt_cache ? o.trt_cache : "", o.scales_json ? ", " : "",
               o.scales_json ? o.scales_json : "");
    return 0;
}
