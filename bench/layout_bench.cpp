// What a permute costs: Tensor::contiguous between NCHW and NHWC for the activation shapes of
// RepVGG-A0 at 224×224, batch 1 (the copies the memory-format seed says a conv pays once).
// Reports bytes moved per second (read + write). Beside each generic copy (Tensor::contiguous,
// BM_Permute) the same permute as one oneDNN reorder primitive (kernels/onednn/reorder.h,
// BM_Reorder), to decide which one Tensor::contiguous should use. BM_Transpose: the permutes of
// attention and of MobileViT's patch unfold/fold, which only Tensor::contiguous copies.
//   build/bench/layout_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <iterator>

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

// {channels, spatial} of a 224² RGB input (what every stem conv reads) and RepVGG-A0's stage
// outputs.
void RepVggShapes(benchmark::internal::Benchmark* b) {
  for (auto [c, hw] : {std::pair{3, 224}, {48, 112}, {48, 56}, {96, 28}, {192, 14}, {1280, 7}})
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

// MobileViT-XXS's Transposes (256² input) and two NHWC ↔ NCHW copies whose rows are 4 KiB apart:
// 2 × 2 patches (8-byte runs copied as one wider element), [P, N, C] → [C, N, P] (a middle dim
// continues dst's rows), attention's head split, XCiT's channel attention (q, k, v as
// [heads, d, N]: tokens become the rows).
struct PermuteCase {
  const char* name;
  refold::Shape sizes, perm;
};
const PermuteCase kPermutes[] = {
    {"patches [1024,2,16,2] (0,2,1,3)", {1024, 2, 16, 2}, {0, 2, 1, 3}},
    {"patches [1024,16,2,2] (0,2,1,3)", {1024, 16, 2, 2}, {0, 2, 1, 3}},
    {"fold [1,4,256,64] (0,3,2,1)", {1, 4, 256, 64}, {0, 3, 2, 1}},
    {"unfold [1,64,256,4] (0,3,2,1)", {1, 64, 256, 4}, {0, 3, 2, 1}},
    {"qkv [4,256,3,4,16] (2,0,3,1,4)", {4, 256, 3, 4, 16}, {2, 0, 3, 1, 4}},
    {"heads [4,4,256,16] (0,2,1,3)", {4, 4, 256, 16}, {0, 2, 1, 3}},
    {"keys [4,4,256,16] (0,1,3,2)", {4, 4, 256, 16}, {0, 1, 3, 2}},
    {"nhwc->nchw [1,32,32,128]", {1, 32, 32, 128}, {0, 3, 1, 2}},
    {"nchw->nhwc [1,128,32,32]", {1, 128, 32, 32}, {0, 2, 3, 1}},
    {"xcit qkv [1,197,3,4,32] (2,0,3,4,1)", {1, 197, 3, 4, 32}, {2, 0, 3, 4, 1}},
};

void BM_Transpose(benchmark::State& state) {
  const PermuteCase& c = kPermutes[state.range(0)];
  state.SetLabel(c.name);
  const refold::Tensor x = refold::randn(c.sizes).permute(c.perm);
  for (auto _ : state) {
    refold::Tensor y = x.contiguous();
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * x.numel() * 4 * 2);
}
BENCHMARK(BM_Transpose)->DenseRange(0, std::size(kPermutes) - 1);

// XCiT's q alone, as the executor hands it to its Squeeze: [1, 1, heads, d, N] of the qkv
// linear's output [1, N, 3·heads·d], tokens strided by 3·heads·d (a Split of the permuted view).
void BM_XcitQuery(benchmark::State& state) {
  const std::int64_t n = 197, heads = 4, d = 32;
  const refold::Tensor qkv = refold::randn({1, n, 3 * heads * d});
  const refold::Tensor q =
      qkv.as_strided({1, 1, heads, d, n}, {heads * d, n * 3 * heads * d, d, 1, 3 * heads * d}, 0);
  for (auto _ : state) {
    refold::Tensor y = q.contiguous();
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * q.numel() * 4 * 2);
}
BENCHMARK(BM_XcitQuery);

}  // namespace

BENCHMARK_MAIN();
