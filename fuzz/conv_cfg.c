/* A CPU-only stand-in for yq_conv_cfg_parse (kernels/cuda_conv.cu, built by nvcc), the
 * one CUDA-side symbol the package loader calls: it checks the kernel names in
 * /kernels/choices.  The real parser compares against every name of every tile table;
 * this one knows one name per family, which is all that the loader's own checks tell
 * apart (a known name; a float or an int8 family; not auto).  make_seeds writes only
 * these names, so the seeds load here and in a real build alike. */
#include <string.h>
#include "kernels/cuda.h"

int yq_conv_cfg_parse(const char *name, yq_conv_cfg *cfg)
{
    static const struct { const char *name; yq_conv_variant family; } known[] = {
        { "auto", YQ_CONV_AUTO }, { "dp4a_64x64", YQ_CONV_DP4A }, { "dw", YQ_CONV_DW },
        { "direct", YQ_CONV_DIRECT }, { "f32", YQ_CONV_F32 }, { "mma_128x128x64_s3", YQ_CONV_MMA },
        { "f16", YQ_CONV_F16 },
    };
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (!strcmp(name, known[i].name)) {
            *cfg = (yq_conv_cfg){ (uint8_t)known[i].family, 0, 1, 0 };
            return 0;
        }
    return -1;
}
