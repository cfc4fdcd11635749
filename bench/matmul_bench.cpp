// refold's small matmul (kernels/native/small_matmul.h) against oneDNN's matmul
// (kernels/onednn/matmul.h, what MatMul ran before) on attention's per-head products, from
// 0.15 to 15 M multiply-adds: alternating pairs (paired_timing.h; ratio native / oneDNN, < 1:
// native faster). The native kernel's size cap is lifted here, to find where oneDNN overtakes.
// Run (the exact command is in bench/RESULTS.md):
//   REFOLD_NUM_THREADS=2 OMP_NUM_THREADS=2 build/bench/matmul_bench --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/native/small_matmul.h"
#include "kernels/onednn/matmul.h"
#include "paired_timing.h"
#include "refold/tensor.h"

namespace {

using namespace refold;

struct Problem {
  std::string name;
  std::int64_t batch, m, k, n;
  bool a_transposed;  // a read through a transposed view (qᵀ · k)
};

const std::vector<Problem> kProblems = {
    {"efficientvit_s0_qk_4x49x16x49", 4, 49, 16, 49, true},
    {"efficientvit_s0_av_4x16x49x49", 4, 16, 49, 49, false},
    {"efficientvit_s2_qk_4x16x16x16", 4, 16, 16, 16, true},
    {"levit_qk_4x196x16x196", 4, 196, 16, 196, false},
    {"levit_av_4x196x196x32", 4, 196, 196, 32, false},
    {"window_qk_8x49x32x49", 8, 49, 32, 49, false},
    {"window_qk_16x49x32x49", 16, 49, 32, 49, false},
    {"tinyvit_window_qk_32x49x32x49", 32, 49, 32, 49, false},
    {"deit_qk_3x197x64x197", 3, 197, 64, 197, false},
    {"swin_window_qk_192x49x32x49", 192, 49, 32, 49, false},
};

void matmul(benchmark::State& state, const Problem& p) {
  Generator gen(3);
  const Tensor a = p.a_transposed ? randn({p.batch, p.k, p.m}, {}, gen).permute({0, 2, 1})
                                  : randn({p.batch, p.m, p.k}, {}, gen);
  const Tensor b = randn({p.batch, p.k, p.n}, {}, gen);
  constexpr auto kUncapped = std::numeric_limits<std::int64_t>::max();
  for (int warm = 0; warm < 3; ++warm) onednn::matmul(a, b, 1.0f);
  bench::time_paired(
      state, "native",
      [&] {
        benchmark::DoNotOptimize(native::small_matmul(a, b, 1.0f, nullptr, kUncapped).data_ptr());
      },
      "onednn", [&] { benchmark::DoNotOptimize(onednn::matmul(a, b, 1.0f).data_ptr()); });
  state.counters["MFLOP"] = 2e-6 * static_cast<double>(p.batch * p.m * p.k * p.n);
  state.counters["native_GFLOP/s"] = state.counters["MFLOP"] * 1e-3 / state.counters["native_us"];
}

}  // namespace

int main(int argc, char** argv) {
  for (const Problem& p : kProblems)
    benchmark::RegisterBenchmark(p.name.c_str(), matmul, p)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
