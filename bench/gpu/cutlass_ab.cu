// Diagnostic: yquant's CUTLASS family (kernels/cuda_cutlass.cu: CUTLASS 2.x's sm80 main loop, yquant's
// requantize epilogue) against CUTLASS's own kernel with its stock LinearCombinationClamp epilogue,
// the same tiles, the same random int8 data, YOLOv3-416 shapes at batch 32.  Median of 30 runs (CUDA
// events).  It measured the epilogue costs that bench/results/int8_gpu_epilogues_2026-12-02.md reports.
//
//   make gpu-anchors B=build/dev NVCC_ARCHS="-gencode arch=compute_90,code=sm_90"   (here)
//   build/dev/gpu/cutlass_ab                                                        (on the GPU)
#include "kernels/cuda_cutlass.cu"
#include <algorithm>
#include <functional>
#include <vector>
#include "cutlass/conv/device/implicit_gemm_convolution.h"

namespace {

struct Stock {
    using L = cutlass::layout::TensorNHWC;
    using Epi = cutlass::epilogue::thread::LinearCombinationClamp<int8_t, 16, int32_t, float>;
    using Kernel = typename cutlass::conv::kernel::DefaultConv2dFprop<
        int8_t, L, int8_t, L, int8_t, L, int32_t, cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80,
        cutlass::gemm::GemmShape<128, 128, 64>, cutlass::gemm::GemmShape<64, 64, 64>, cutlass::gemm::GemmShape<16, 8, 32>,
        Epi, cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<1>, 3, cutlass::arch::OpMultiplyAddSaturate,
        cutlass::conv::IteratorAlgorithm::kOptimized>::Kernel;
    using Op = cutlass::conv::device::ImplicitGemmConvolution<Kernel>;
};

struct Shape { int C, H, W, K, R, s; };

float median_us(std::function<void()> f)
{
    for (int i = 0; i < 5; i++) f();
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    std::vector<float> t;
    for (int i = 0; i < 30; i++) {
        cudaEventRecord(e0);
        f();
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float x;
        cudaEventElapsedTime(&x, e0, e1);
        t.push_back(x);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    std::sort(t.begin(), t.end());
    return t[t.size() / 2] * 1e3f;
}

int out_size(int n, int k, int s) { return (n + 2 * (k / 2) - k) / s + 1; }

float stock(int N, Shape sh, int8_t *a, int8_t *b, int8_t *c)
{
    int pad = sh.R / 2, P = out_size(sh.H, sh.R, sh.s), Q = out_size(sh.W, sh.R, sh.s);
    cutlass::conv::Conv2dProblemSize ps(N, sh.H, sh.W, sh.C, sh.K, sh.R, sh.R, P, Q, pad, pad, sh.s, sh.s, 1, 1,
                                        cutlass::conv::Mode::kCrossCorrelation, 1);
    using L = cutlass::layout::TensorNHWC;
    cutlass::TensorRef<int8_t, L> ta(a, L::packed({ N, sh.H, sh.W, sh.C })), tb(b, L::packed({ sh.K, sh.R, sh.R, sh.C })),
        tc(c, L::packed({ N, P, Q, sh.K }));
    Stock::Op::Arguments args(ps, ta, tb, tc, tc, { 0.01f, 0.0f });
    Stock::Op op;
    if (op.can_implement(args) != cutlass::Status::kSuccess || op.initialize(args, nullptr) != cutlass::Status::kSuccess)
        return -1;
    return median_us([&] { op(); });
}

/* one of yquant's tiles (Cut<...>), with a residual when res is set */
template <class C>
float ours(int N, Shape sh, int8_t *a, int8_t *b, int8_t *c, const int32_t *bq, const float *pos, const int8_t *res)
{
    ConvK k;
    memset(&k, 0, sizeof k);
    int P = out_size(sh.H, sh.R, sh.s), Q = out_size(sh.W, sh.R, sh.s);
    k.in = a; k.out = c; k.IH = sh.H; k.IW = sh.W; k.C = sh.C; k.C4w = sh.C / 4; k.OH = P; k.OW = Q;
    k.F = sh.K; k.F4 = sh.K; k.k = sh.R; k.s = sh.s; k.pad = sh.R / 2; k.groups = 1; k.M = N * P * Q;
    k.K4 = sh.R * sh.R * sh.C / 4; k.IPW = sh.C / 4; k.OPW = sh.K / 4;
    k.w32 = (const int *)b; k.bq = bq; k.pos = pos; k.neg = pos; k.qmin = -127; k.qmax = 127;
    k.res = res; k.ssa = 0.5f; k.ssb = 0.25f; k.ssneg = 1.0f; k.sqmin = -127; k.sqmax = 127;
    yq_error e;
    if (Runner<C>::prepare(&e) || !Runner<C>::can(k)) return -1;
    return median_us([&] { Runner<C>::launch(k, 0, &e); });
}

} // namespace

int main()
{
    const Shape v[] = { { 128, 52, 52, 256, 3, 1 }, { 256, 26, 26, 512, 3, 1 }, { 64, 104, 104, 128, 3, 1 },
                        { 256, 52, 52, 128, 1, 1 }, { 32, 208, 208, 64, 3, 1 } };
    const int N = 32;
    size_t big = (size_t)N * 208 * 208 * 64;
    int8_t *a, *b, *c, *r;
    int32_t *bq;
    float *pos;
    if (cudaMalloc(&a, big) || cudaMalloc(&b, 1 << 22) || cudaMalloc(&c, big) || cudaMalloc(&r, big) ||
        cudaMalloc(&bq, 4096 * 4) || cudaMalloc(&pos, 4096 * 4)) {
        fprintf(stderr, "cutlass_ab: cudaMalloc failed\n");
        return 1;
    }
    std::vector<int8_t> h(big);
    unsigned x = 1;
    for (auto &q : h) {
        x = x * 1103515245u + 12345u;
        q = (int8_t)((x >> 16) % 255 - 127);
    }
    cudaMemcpy(a, h.data(), big, cudaMemcpyHostToDevice);
    cudaMemcpy(b, h.data(), 1 << 22, cudaMemcpyHostToDevice);
    cudaMemcpy(r, h.data(), big, cudaMemcpyHostToDevice);
    cudaMemset(bq, 0, 4096 * 4);
    std::vector<float> hp(4096, 0.001f);
    cudaMemcpy(pos, hp.data(), 4096 * 4, cudaMemcpyHostToDevice);
    printf("batch %d, median us: CUTLASS stock 128x128x64_s3 | yquant 128x128x64_s3, +residual | 128x64x64_s4, +residual\n", N);
    for (const Shape &sh : v) {
        using T0n = Cut<128, 128, 64, 64, 64, 3, 16, false, false>;
        using T0r = Cut<128, 128, 64, 64, 64, 3, 16, false, true>;
        using T5n = Cut<128, 64, 64, 64, 32, 4, 8, false, false>;
        using T5r = Cut<128, 64, 64, 64, 32, 4, 8, false, true>;
        printf("%3dx%-3d %4d->%-4d %dx%d/%d: %8.1f | %8.1f %8.1f | %8.1f %8.1f\n", sh.H, sh.W, sh.C, sh.K, sh.R, sh.R, sh.s,
               stock(N, sh, a, b, c), ours<T0n>(N, sh, a, b, c, bq, pos, nullptr), ours<T0r>(N, sh, a, b, c, bq, pos, r),
               ours<T5n>(N, sh, a, b, c, bq, pos, nullptr), ours<T5r>(N, sh, a, b, c, bq, pos, r));
    }
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
        fprintf(stderr, "cutlass_ab: %s\n", cudaGetErrorString(err));
        return 1;
    }
    return 0;
}
