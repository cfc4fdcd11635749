// Per-op time of a channel Concat in NHWC — the shapes of GhostNet's ghost modules (two halves of
// 16 to 480 channels) and a DenseNet-like join of a wide map with a narrow one — refold's native
// row copy against the reference, the two implementations functional::cat has. (oneDNN's concat
// primitive, which ran before, was 1.7–2.9× slower than the native copy on these shapes:
// bench/RESULTS.md, "Native Concat".) And inputs that are views or in the other layout (a roll's
// slices, a detection head's maps, a channel shuffle's halves) copied straight into their place
// against made dense first (concat_views).
//   build/bench/concat_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Threads: REFOLD_NUM_THREADS (default: the physical cores).
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "kernels/native/concat.h"
#include "kernels/native/elementwise_chain.h"
#include "kernels/reference/tensor_ops.h"
#include "paired_timing.h"
#include "refold/functional.h"
#include "refold/reference.h"

namespace {

using namespace refold;

// Arg 0: channels of each of the two inputs; args 1, 2: H, W.
void concat(benchmark::State& state, bool native, std::int64_t second_channels) {
  Generator gen(1);
  const std::int64_t c = state.range(0), h = state.range(1), w = state.range(2);
  const std::int64_t c2 = second_channels > 0 ? second_channels : c;
  const std::vector<Tensor> in = {
      randn({1, c, h, w}, {}, gen).contiguous(MemoryFormat::ChannelsLast),
      randn({1, c2, h, w}, {}, gen).contiguous(MemoryFormat::ChannelsLast)};
  for (auto _ : state) {
    Tensor y = native ? native::cat(in, 1, nullptr) : reference::cat(in, 1);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  // Read once, written once.
  state.SetBytesProcessed(state.iterations() * 2 * (c + c2) * h * w * 4);
}

void ghost_shapes(benchmark::internal::Benchmark* b) {
  b->Args({16, 112, 112})
      ->Args({36, 56, 56})
      ->Args({60, 28, 28})
      ->Args({240, 14, 14})
      ->Args({480, 7, 7});
  b->Unit(benchmark::kMicrosecond);
}

// SqueezeNet's Fire modules and Inception's joins: two halves of 64 to 256 channels.
void fire_shapes(benchmark::internal::Benchmark* b) {
  b->Args({64, 55, 55})->Args({128, 27, 27})->Args({256, 13, 13});
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK_CAPTURE(concat, reference_ghost, false, 0)->Apply(ghost_shapes);
BENCHMARK_CAPTURE(concat, native_ghost, true, 0)->Apply(ghost_shapes);
BENCHMARK_CAPTURE(concat, native_fire, true, 0)->Apply(fire_shapes);
// DenseNet: the running features (C) and one layer's 32 new channels.
BENCHMARK_CAPTURE(concat, reference_dense_plus32, false, 32)
    ->Args({256, 28, 28})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(concat, native_dense_plus32, true, 32)
    ->Args({256, 28, 28})
    ->Unit(benchmark::kMicrosecond);

// DenseNet's fused Concat → BatchNormalization → Relu (native::concat_chain): a first input of
// 64 channels and range(0) layers of 32, over range(1)² pixels, against the same concat alone.
void dense_chain(benchmark::State& state, bool chain) {
  Generator gen(2);
  const std::int64_t layers = state.range(0), size = state.range(1);
  std::vector<Tensor> in = {
      randn({1, 64, size, size}, {}, gen).contiguous(MemoryFormat::ChannelsLast)};
  for (std::int64_t k = 0; k < layers; ++k)
    in.push_back(randn({1, 32, size, size}, {}, gen).contiguous(MemoryFormat::ChannelsLast));
  const std::int64_t channels = 64 + 32 * layers;
  PostOps post;
  PostStep bn;
  for (std::int64_t c = 0; c < channels; ++c) {
    bn.scale.push_back(1.0f + 0.01f * static_cast<float>(c % 7));
    bn.shift.push_back(0.1f * static_cast<float>(c % 5) - 0.2f);
  }
  bn.activation = Activation::ReLU;
  post.then.push_back(bn);
  for (auto _ : state) {
    Tensor y = chain ? native::concat_chain(in, post, nullptr) : native::cat(in, 1, nullptr);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * 2 * channels * size * size * 4);
}

void dense_shapes(benchmark::internal::Benchmark* b) {
  b->Args({6, 40})->Args({12, 20})->Args({24, 10})->Args({16, 5});
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK_CAPTURE(dense_chain, concat_only, false)->Apply(dense_shapes);
BENCHMARK_CAPTURE(dense_chain, concat_bn_relu, true)->Apply(dense_shapes);

// Inputs that are views or in the other layout, as the graph hands them to Concat (which reads
// views): functional::cat copying each straight into its place ("placed") against making each
// dense first, as the ops before it did, then the row copy ("dense_first"); alternating pairs
// (bench/paired_timing.h).
void concat_views(benchmark::State& state, const std::vector<Tensor>& inputs, std::int64_t dim) {
  std::int64_t elements = 0;
  for (const Tensor& t : inputs) elements += t.numel();
  bench::time_paired(
      state, "placed", [&] { benchmark::DoNotOptimize(functional::cat(inputs, dim).data_ptr()); },
      "dense_first",
      [&] {
        const MemoryFormat format = reference::cat_output_format(inputs);
        std::vector<Tensor> dense;
        for (const Tensor& t : inputs) dense.push_back(functional::to_format(t, format));
        benchmark::DoNotOptimize(native::cat(dense, dim, nullptr).data_ptr());
      });
  state.SetBytesProcessed(state.iterations() * 2 * elements * 4);
}

// torch.roll along W of Swin-T's stage-1 tokens [1, 56, 56, 96] by 3: two slices.
std::vector<Tensor> roll_slices() {
  const Tensor x = randn({1, 56, 56, 96});
  return {x.as_strided({1, 56, 3, 96}, x.strides(), 53 * 96),
          x.as_strided({1, 56, 53, 96}, x.strides(), 0)};
}
// YOLOv8's head: three NHWC maps of 144 channels read as [1, 144, H·W] and joined over H·W.
std::vector<Tensor> head_maps() {
  std::vector<Tensor> maps;
  for (const std::int64_t size : {80, 40, 20})
    maps.push_back(randn({1, 144, size, size})
                       .contiguous(MemoryFormat::ChannelsLast)
                       .view({1, 144, size * size}));
  return maps;
}
// A channel shuffle's halves, ShuffleNetV2-1.0 stage 2: one NCHW, one NHWC.
std::vector<Tensor> shuffle_halves() {
  return {randn({1, 58, 28, 28}), randn({1, 58, 28, 28}).contiguous(MemoryFormat::ChannelsLast)};
}

BENCHMARK_CAPTURE(concat_views, swin_roll, roll_slices(), 2)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(concat_views, yolo_head, head_maps(), 2)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(concat_views, shuffle_halves, shuffle_halves(), 1)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
