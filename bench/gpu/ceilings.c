/* yqgpu ceilings: the card's measured copy bandwidth and int8 mma.sync rate, as JSON on
 * stdout (bench/gpu/run_gpu.sh keeps it beside the logs; bench/gpu/report.py puts each
 * layer against this card's roof as well as the H200's figures the targets name). */
#include <stdio.h>
#include <cuda_runtime_api.h>
#include "kernels/cuda_bench.h"

int main(void)
{
    yq_error err = { 0 };
    double gbs = 0, tops = 0;
    struct cudaDeviceProp pr;
    if (cudaGetDeviceProperties(&pr, 0) != cudaSuccess) {
        fprintf(stderr, "ceilings: no CUDA device\n");
        return 1;
    }
    if (yq_gpu_ceilings(&gbs, &tops, &err) != YQ_OK) {
        fprintf(stderr, "ceilings: %s\n", err.msg);
        return 1;
    }
    printf("{\"gpu\": \"%s\", \"sm\": %d, \"copy_gbs\": %.1f, \"mma_s8_tops\": %.1f}\n", pr.name, pr.major * 10 + pr.minor,
           gbs, tops);
    return 0;
}
