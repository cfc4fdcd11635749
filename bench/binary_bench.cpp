// Add and Mul of small and large float32 tensors: refold's broadcast loop
// (kernels/native/broadcast_binary.h) against oneDNN's binary primitive as refold calls it
// (kernels/onednn/binary.h: the primitive cache's lookup, oneDNN's threads), alternating pairs
// (paired_timing.h; ratio native / onednn, < 1: native faster). The shapes of a vision
// transformer's small binaries — XCiT's per-head temperature on [1, 4, 32, 32] scores, a
// layer scale and a residual Add on [1, 196, 128] tokens — and larger ones, up to a ResNet
// stage 1 map (800 K elements).
// Run (the exact command is in bench/RESULTS.md):
//   REFOLD_NUM_THREADS=2 build/bench/binary_bench --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "kernels/native/broadcast_binary.h"
#include "kernels/onednn/binary.h"
#include "paired_timing.h"
#include "refold/tensor.h"

namespace {

using namespace refold;

struct Problem {
  std::string name;
  Shape x, v;
};

const std::vector<Problem> kProblems = {
    {"xcit_temperature_1x4x32x32_by_4x1x1", {1, 4, 32, 32}, {4, 1, 1}},
    {"layer_scale_1x196x128_by_128", {1, 196, 128}, {128}},
    {"residual_1x196x128", {1, 196, 128}, {1, 196, 128}},
    {"layer_scale_1x784x256_by_256", {1, 784, 256}, {256}},
    {"residual_1x784x256", {1, 784, 256}, {1, 784, 256}},
    {"residual_1x3136x96", {1, 3136, 96}, {1, 3136, 96}},
    {"layer_scale_1x3136x96_by_96", {1, 3136, 96}, {96}},
    {"residual_1x256x56x56", {1, 256, 56, 56}, {1, 256, 56, 56}},
    {"residual_1x64x112x112", {1, 64, 112, 112}, {1, 64, 112, 112}},
};

void binary(benchmark::State& state, const Problem& p, bool mul) {
  Generator gen(3);
  const Tensor x = randn(p.x, {}, gen), v = randn(p.v, {}, gen);
  bench::time_paired(
      state, "native",
      [&] {
        benchmark::DoNotOptimize(
            native::broadcast_binary(mul ? native::BinaryKind::Mul : native::BinaryKind::Add, x, v,
                                     nullptr)
                .data_ptr());
      },
      "onednn",
      [&] {
        benchmark::DoNotOptimize(
            onednn::binary(mul ? onednn::BinaryOp::Mul : onednn::BinaryOp::Add, x, v, nullptr)
                .data_ptr());
      });
  state.SetBytesProcessed(state.iterations() * 2 * (2 * x.numel() + v.numel()) * 4);
}

}  // namespace

int main(int argc, char** argv) {
  for (const Problem& p : kProblems) {
    for (const bool mul : {false, true}) {
      benchmark::RegisterBenchmark((std::string(mul ? "mul/" : "add/") + p.name).c_str(), binary, p,
                                   mul)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
