// Per-op time of global average pooling and Resize on DeepLabV3-MobileNetV3-like shapes: the
// reference kernel (what ran before issue 15) against refold's native AVX2 kernel, NHWC and NCHW.
//   build/bench/pool_resize_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Threads: REFOLD_NUM_THREADS (default: the physical cores).
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "kernels/native/adaptive_pool2d.h"
#include "kernels/native/resize2d.h"
#include "refold/reference.h"

namespace {

using namespace refold;

Tensor input(const Shape& sizes, MemoryFormat format) {
  Generator gen(1);
  return randn(sizes, {}, gen).contiguous(format);
}

MemoryFormat format_of(const benchmark::State& state) {
  return state.range(0) ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
}

void gap(benchmark::State& state, bool native) {
  const Tensor x = input({1, 960, 16, 16}, format_of(state));
  for (auto _ : state) {
    Tensor y =
        native ? native::adaptive_avg_pool2d(x, 1, nullptr) : reference::adaptive_avg_pool2d(x, 1);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * x.numel() * 4);
}

// Resize by sizes (ONNX's sizes input): scale = out / in, length = out.
void resize(benchmark::State& state, bool native, Shape in, std::int64_t out_h, std::int64_t out_w,
            reference::ResizeMode mode) {
  const Tensor x = input(in, format_of(state));
  const Shape out{in[0], in[1], out_h, out_w};
  std::vector<double> scales, lengths;
  for (std::size_t d = 0; d < 4; ++d) {
    scales.push_back(static_cast<double>(out[d]) / static_cast<double>(in[d]));
    lengths.push_back(static_cast<double>(out[d]));
  }
  reference::ResizeParams params;
  params.mode = mode;
  params.coordinates = reference::CoordinateMode::HalfPixel;
  for (auto _ : state) {
    Tensor y = native ? native::resize2d(x, out, scales, lengths, params, nullptr)
                      : reference::resize(x, out, scales, lengths, params);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * in[0] * in[1] * out_h * out_w * 4);
}

constexpr auto kLinear = reference::ResizeMode::Linear;
constexpr auto kNearest = reference::ResizeMode::Nearest;

// Arg 0: NCHW, 1: NHWC.
BENCHMARK_CAPTURE(gap, reference_960x16x16, false)->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(gap, native_960x16x16, true)->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(resize, reference_linear_21x32x32_to_256, false, {1, 21, 32, 32}, 256, 256,
                  kLinear)
    ->Arg(1)
    ->Arg(0)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(resize, native_linear_21x32x32_to_256, true, {1, 21, 32, 32}, 256, 256, kLinear)
    ->Arg(1)
    ->Arg(0)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(resize, reference_linear_128x16x16_x2, false, {1, 128, 16, 16}, 32, 32, kLinear)
    ->Arg(1)
    ->Arg(0)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(resize, native_linear_128x16x16_x2, true, {1, 128, 16, 16}, 32, 32, kLinear)
    ->Arg(1)
    ->Arg(0)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(resize, reference_nearest_128x16x16_x2, false, {1, 128, 16, 16}, 32, 32, kNearest)
    ->Arg(1)
    ->Arg(0)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(resize, native_nearest_128x16x16_x2, true, {1, 128, 16, 16}, 32, 32, kNearest)
    ->Arg(1)
    ->Arg(0)
    ->Unit(benchmark::kMicrosecond);

// GhostNetV2's gates: few channels, a 2× map of 56² to 112² (NHWC: a copy of C floats per pixel).
BENCHMARK_CAPTURE(resize, native_nearest_24x56x56_x2, true, {1, 24, 56, 56}, 112, 112, kNearest)
    ->Arg(1)
    ->Arg(0)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(resize, native_nearest_40x28x28_x2, true, {1, 40, 28, 28}, 56, 56, kNearest)
    ->Arg(1)
    ->Arg(0)
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
