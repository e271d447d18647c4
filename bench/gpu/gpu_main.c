/* yqgpu: the programs the device machine runs, in one binary (make gpu-bench).  Each
 * static OpenBLAS link weighs ~30 MB and what travels to the device is capped, so the
 * whole yquant CLI (images decoded by yquant's own libjpeg/libpng decoders), the GPU test programs
 * and the cuDNN int8 anchor share one. */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "kernels/cuda.h"

int yqgpu_test_cuda(void);
int yqgpu_test_cudnn(void);
int yqgpu_cudnn_int8(int argc, char **argv);
int yqgpu_test_tune(void);
int yqgpu_test_api(void);
int yqgpu_yquant(int argc, char **argv);
int yqgpu_ceilings(void);

int main(int argc, char **argv)
{
    /* yqgpu --no-pdl CMD ...: the wgmma convs launched without programmatic dependent
     * launch (kernels/cuda.h), for measuring what it brings */
    if (argc > 1 && !strcmp(argv[1], "--no-pdl")) {
        yq_cuda_pdl_enable(0);
        argv++;
        argc--;
    }
    const char *cmd = argc > 1 ? argv[1] : "";
    if (!strcmp(cmd, "yquant")) return yqgpu_yquant(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return cmd_bench(argc - 1, argv + 1);   /* (argv[0]: the command's name) */
    if (!strcmp(cmd, "tune")) return cmd_tune(argc - 1, argv + 1);
    if (!strcmp(cmd, "test_tune")) return yqgpu_test_tune();
    if (!strcmp(cmd, "test_api")) return yqgpu_test_api();
    if (!strcmp(cmd, "test_cuda")) return yqgpu_test_cuda();
    if (!strcmp(cmd, "test_cudnn")) return yqgpu_test_cudnn();
    if (!strcmp(cmd, "cudnn_int8")) return yqgpu_cudnn_int8(argc - 1, argv + 1);
    if (!strcmp(cmd, "ceilings")) return yqgpu_ceilings();
    fprintf(stderr, "usage: yqgpu [--no-pdl] yquant COMMAND ARGS | bench ARGS | tune ARGS | test_cuda | test_cudnn | test_tune\n"
                    "             | test_api | cudnn_int8 ARGS | ceilings\n"
                    "  (the same as yquant COMMAND (images from IMAGE.rgb sidecars), yquant bench, yquant tune,\n"
                    "   build/gpu/test_cuda, tests/test_cudnn.c, tests/test_tune.c, tests/test_api.c,\n"
                    "   bench/gpu/cudnn_int8.c, the card's copy bandwidth and int8 mma.sync rate as JSON)\n");
    return 2;
}
