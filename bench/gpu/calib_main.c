/* yqcal: the GPU calibration programs for the device machine, in one static binary
 * (make gpu-calib; one static OpenBLAS link each would not fit what travels there):
 *   yqcal test          tests/test_calib_cuda.c
 *   yqcal bench ARGS    bench/calib_gpu.c */
#include <stdio.h>
#include <string.h>

int yqgpu_test_calib_cuda(void);
int yqgpu_calib_gpu(int argc, char **argv);

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : "";
    if (!strcmp(cmd, "test")) return yqgpu_test_calib_cuda();
    if (!strcmp(cmd, "bench")) return yqgpu_calib_gpu(argc - 1, argv + 1);
    fprintf(stderr, "usage: yqcal test | bench ARGS  (tests/test_calib_cuda.c, bench/calib_gpu.c)\n");
    return 2;
}
