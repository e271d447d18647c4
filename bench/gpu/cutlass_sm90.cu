// Anchor: CUTLASS 3.x's sm90 int8 conv fprop (wgmma, TMA im2col; conv supports the non-persistent
// warp-specialized schedule only in CUTLASS 4.2), stock epilogue (int8 output, float alpha), YOLOv3-416
// shapes at batch 32, random data, median of 30 runs.  It measured whether yquant's main loop should
// move to it (bench/results/int8_gpu_epilogues_2026-12-02.md: no, slower than the 2.x sm80 kernels).
//
//   make gpu-anchors B=build/dev NVCC_ARCHS="-gencode arch=compute_90,code=sm_90"   (here)
//   build/dev/gpu/cutlass_sm90                                                      (on an sm_90 GPU)
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include "cutlass/cutlass.h"
#include "cute/tensor.hpp"
#include "cutlass/conv/device/conv_universal_adapter.hpp"
#include "cutlass/conv/kernel/conv_universal.hpp"
#include "cutlass/conv/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
using namespace cute;

template <class TileMNK, class Cluster, class KS, class ES>
struct Cfg {
  using Epi = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileMNK, Cluster,
      cutlass::epilogue::collective::EpilogueTileAuto, int32_t, float,
      void, cutlass::layout::TensorNHWC, 16, int8_t, cutlass::layout::TensorNHWC, 16, ES>::CollectiveOp;
  using Main = typename cutlass::conv::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, cutlass::conv::Operator::kFprop,
      int8_t, cutlass::layout::TensorNHWC, 16, int8_t, cutlass::layout::TensorNHWC, 16, int32_t,
      TileMNK, Cluster,
      cutlass::conv::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epi::SharedStorage))>,
      KS>::CollectiveOp;
  using PS = cutlass::conv::ConvProblemShape<Main::DispatchPolicy::ConvOp, Main::DispatchPolicy::NumSpatialDimensions>;
  using Kernel = cutlass::conv::kernel::ConvUniversal<PS, Main, Epi>;
  using Op = cutlass::conv::device::ConvUniversalAdapter<Kernel>;
};

struct Shape4 { int C, H, W, K, R, s; };

template <class CF>
double run(int N, Shape4 sh, const int8_t *a, const int8_t *b, int8_t *c) {
  int pad = sh.R / 2, P = (sh.H + 2 * pad - sh.R) / sh.s + 1, Q = (sh.W + 2 * pad - sh.R) / sh.s + 1;
  typename CF::PS ps(cutlass::conv::Mode::kCrossCorrelation, {N, sh.H, sh.W, sh.C}, {sh.K, sh.R, sh.R, sh.C},
                     {pad, pad}, {pad, pad}, {sh.s, sh.s}, {1, 1}, 1);
  typename CF::Op::Arguments args{ps, {a, b}, {{}, nullptr, {}, c, {}}};
  args.epilogue.thread.alpha = 0.01f;
  args.epilogue.thread.beta = 0.0f;
  // output strides (NHWC packed): the epilogue's StrideD from the problem
  { auto &d = args.epilogue.dD; cute::get<0>(cute::get<0>(d)) = sh.K; cute::get<1>(cute::get<0>(d)) = (int64_t)Q * sh.K; cute::get<2>(cute::get<0>(d)) = (int64_t)P * Q * sh.K; }
  typename CF::Op op;
  if (op.can_implement(args) != cutlass::Status::kSuccess) return -2;
  size_t ws = CF::Op::get_workspace_size(args);
  void *w = nullptr; if (ws) cudaMalloc(&w, ws);
  if (op.initialize(args, w) != cutlass::Status::kSuccess) return -3;
  for (int i = 0; i < 5; i++) op.run();
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  std::vector<float> t;
  for (int i = 0; i < 30; i++) { cudaEventRecord(e0); op.run(); cudaEventRecord(e1); cudaEventSynchronize(e1); float x; cudaEventElapsedTime(&x, e0, e1); t.push_back(x); }
  std::sort(t.begin(), t.end());
  if (w) cudaFree(w);
  if (cudaGetLastError() != cudaSuccess) return -4;
  (void)P; (void)Q;
  return t[t.size() / 2];
}

using KC = cutlass::conv::KernelImplicitTmaWarpSpecializedSm90;
using EC = cutlass::epilogue::TmaWarpSpecialized;
using C1 = Cfg<Shape<_128, _128, Shape<_128>>, Shape<_1, _1, _1>, KC, EC>;
using C2 = Cfg<Shape<_128, _256, Shape<_128>>, Shape<_1, _1, _1>, KC, EC>;
using C3 = Cfg<Shape<_256, _128, Shape<_128>>, Shape<_1, _1, _1>, KC, EC>;
using C4 = Cfg<Shape<_64, _128, Shape<_128>>, Shape<_1, _1, _1>, KC, EC>;
using C5 = Cfg<Shape<_128, _64, Shape<_128>>, Shape<_2, _1, _1>, KC, EC>;

int main() {
  Shape4 v3[] = {{32, 208, 208, 64, 3, 1}, {64, 208, 208, 128, 3, 2}, {64, 104, 104, 128, 3, 1}, {128, 52, 52, 256, 3, 1},
                 {256, 26, 26, 512, 3, 1}, {512, 13, 13, 1024, 3, 1}, {256, 52, 52, 128, 1, 1}, {512, 26, 26, 256, 1, 1},
                 {1024, 13, 13, 512, 1, 1}, {64, 208, 208, 32, 1, 1}, {32, 416, 416, 64, 3, 2}};
  size_t big = (size_t)32 * 416 * 416 * 64;
  int8_t *a, *b, *c;
  cudaMalloc(&a, big); cudaMalloc(&b, 1 << 24); cudaMalloc(&c, big);
  { std::vector<int8_t> h(big); unsigned x = 12345; for (auto &v : h) { x = x * 1103515245u + 12345u; v = (int8_t)((x >> 16) % 255 - 127); }
    cudaMemcpy(a, h.data(), big, cudaMemcpyHostToDevice); cudaMemcpy(b, h.data(), 1 << 24, cudaMemcpyHostToDevice); }
  int N = 32;
  printf("sm90 wgmma int8 conv (CUTLASS 3.x), batch %d, random data, median of 30; us and TOPS\n", N);
  printf("%-26s %16s %16s %16s %16s %16s\n", "shape", "128x128x128", "128x256x128", "256x128x128", "64x128x128", "128x64x128 2x1");
  for (auto sh : v3) {
    int pad = sh.R / 2, P = (sh.H + 2 * pad - sh.R) / sh.s + 1, Q = (sh.W + 2 * pad - sh.R) / sh.s + 1;
    double ops = 2.0 * N * P * Q * sh.K * sh.R * sh.R * sh.C;
    char lab[64]; snprintf(lab, 64, "%dx%d %d->%d %dx%d/%d", sh.H, sh.W, sh.C, sh.K, sh.R, sh.R, sh.s);
    printf("%-26s", lab);
    for (int k = 0; k < 5; k++) {
      double ms = k == 0 ? run<C1>(N, sh, a, b, c) : k == 1 ? run<C2>(N, sh, a, b, c) : k == 2 ? run<C3>(N, sh, a, b, c) : k == 3 ? run<C4>(N, sh, a, b, c) : run<C5>(N, sh, a, b, c);
      if (ms > 0) printf("  %7.1fus %5.0fT", ms * 1e3, ops / (ms * 1e-3) / 1e12); else printf("  %16s", ms == -2 ? "cannot" : "fail");
    }
    printf("\n");
  }
  return 0;
}
