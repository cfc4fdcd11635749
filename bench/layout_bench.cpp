// What a permute costs: Tensor::contiguous between NCHW and NHWC for the activation shapes of
// RepVGG-A0 at 224×224, batch 1 (the copies the memory-format seed says a conv pays once).
// Reports bytes moved per second (read + write). Beside each generic copy (Tensor::contiguous,
// BM_Permute) the same permute as one oneDNN reorder primitive (kernels/onednn/reorder.h,
// BM_Reorder), to decide which one Tensor::contiguous should use.
//   build/bench/layout_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include "kernels/onednn/reorder.h"
#include "refold/tensor.h"

namespace {

using refold::MemoryFormat;

void BM_Permute(benchmark::State& state, MemoryFormat from, MemoryFormat to) {
  const refold::Shape shape{1, state.range(0), state.range(1), state.range(1)};
  const refold::Tensor x = refold::randn(shape, from);
  for (auto _ : state) {
    refold::Tensor y = x.contiguous(to);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * x.numel() * 4 * 2);
}

void BM_Reorder(benchmark::State& state, MemoryFormat from, MemoryFormat to) {
  const refold::Shape shape{1, state.range(0), state.range(1), state.range(1)};
  const refold::Tensor x = refold::randn(shape, from);
  for (auto _ : state) {
    refold::Tensor y = refold::onednn::reorder(x, to);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * x.numel() * 4 * 2);
}

// {channels, spatial} of RepVGG-A0's stage outputs.
void RepVggShapes(benchmark::internal::Benchmark* b) {
  for (auto [c, hw] : {std::pair{48, 112}, {48, 56}, {96, 28}, {192, 14}, {1280, 7}})
    b->Args({c, hw});
}

BENCHMARK_CAPTURE(BM_Permute, nchw_to_nhwc, MemoryFormat::Contiguous, MemoryFormat::ChannelsLast)
    ->Apply(RepVggShapes);
BENCHMARK_CAPTURE(BM_Permute, nhwc_to_nchw, MemoryFormat::ChannelsLast, MemoryFormat::Contiguous)
    ->Apply(RepVggShapes);
BENCHMARK_CAPTURE(BM_Reorder, nchw_to_nhwc, MemoryFormat::Contiguous, MemoryFormat::ChannelsLast)
    ->Apply(RepVggShapes);
BENCHMARK_CAPTURE(BM_Reorder, nhwc_to_nchw, MemoryFormat::ChannelsLast, MemoryFormat::Contiguous)
    ->Apply(RepVggShapes);

}  // namespace

BENCHMARK_MAIN();
