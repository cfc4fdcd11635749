// refold's AVX2 adaptive average pooling, global max pooling and Resize (kernels/native) against
// the reference kernels: NCHW and NHWC (and 3-d for the pool), batches > 1, channel counts that
// leave vector tails (1, 3, 13, 19, 21, 37), widths and heights of 1, upscales and downscales,
// overlapping adaptive windows, every nearest mode and coordinate mode, sizes- and scales-given
// geometry, 1 and 2 threads; Inf/NaN inputs; the declines with their reasons; and that the dispatch
// (functional::adaptive_avg_pool2d, the graph ops GlobalMaxPool and Resize) runs them.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/native/adaptive_pool2d.h"
#include "kernels/native/cpu.h"
#include "kernels/native/resize2d.h"
#include "kernels/reference/onnx_ops.h"
#include "kernels/reference/tensor_ops.h"
#include "kernels/verbose.h"
#include "onnx/ops_cnn_helpers.h"
#include "ops/resize.h"
#include "refold/error.h"
#include "refold/functional.h"
#include "refold/reference.h"
#include "refold/threads.h"
#include "testing/compare.h"
#include "testing/layouts.h"
#include "testing/threads.h"

namespace refold {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using testing::Tolerance;

constexpr auto NCHW = MemoryFormat::Contiguous;
constexpr auto NHWC = MemoryFormat::ChannelsLast;

// Skips on CPUs without AVX2/FMA; restores the thread setting.
class NativePoolResize : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!native::cpu_has_avx2_fma()) GTEST_SKIP() << "this CPU has no AVX2/FMA";
  }

 private:
  testing::RestoreNumThreads restore_threads_;
};

Tensor random_input(const Shape& sizes, MemoryFormat format, std::uint64_t seed = 3) {
  Generator gen(seed);
  return testing::laid_out(randn(sizes, {}, gen), format);
}

::testing::AssertionResult same_strides(const Tensor& a, const Tensor& b) {
  if (a.sizes() == b.sizes() && a.strides() == b.strides()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "strides [" << fmt::format("{}", fmt::join(a.strides(), ", "))
         << "] vs the reference's [" << fmt::format("{}", fmt::join(b.strides(), ", ")) << "]";
}

// --- adaptive_avg_pool2d

struct PoolCase {
  Shape input;
  Size2d output;
};

std::vector<PoolCase> pool_cases() {
  return {
      {{1, 960, 16, 16}, 1},  // DeepLabV3-MobileNetV3's head
      {{2, 13, 7, 5}, 1},       {{3, 19, 1, 1}, 1},     {{1, 1, 1, 9}, 1},
      {{2, 37, 9, 1}, 1},       {{1, 3, 224, 224}, 1},  {{2, 13, 7, 5}, {3, 2}},  // overlapping
      {{1, 21, 7, 5}, {7, 5}},                           // identity windows
      {{2, 40, 12, 8}, {4, 2}},                          // even windows
      {{1, 19, 6, 9}, {1, 4}},  {{1, 5, 3, 3}, {5, 4}},  // output larger than the input
  };
}

TEST_F(NativePoolResize, AdaptiveAvgPoolMatchesReference) {
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const PoolCase& c : pool_cases()) {
      for (MemoryFormat format : {NCHW, NHWC}) {
        SCOPED_TRACE(fmt::format("[{}] -> ({}, {}) {}, {} threads", fmt::join(c.input, ", "),
                                 c.output.h, c.output.w, memory_format_name(format), threads));
        const Tensor x = random_input(c.input, format);
        std::string declined;
        const Tensor y = native::adaptive_avg_pool2d(x, c.output, &declined);
        ASSERT_TRUE(y.defined()) << declined;
        const Tensor expected = reference::adaptive_avg_pool2d(x, c.output);
        EXPECT_TRUE(same_strides(y, expected));
        EXPECT_TRUE(testing::all_close(y, expected, Tolerance::op_f32()));
      }
    }
  }
}

// Global pooling in NHWC splits the rows into parts (one job each) that do not depend on the
// thread count: the same bits on 1 and 2 threads, for row counts below, at and above the number
// of parts and not a multiple of it.
TEST_F(NativePoolResize, GlobalAvgPoolNhwcHasTheSameBitsOnAnyThreadCount) {
  for (const Shape& input : {Shape{2, 37, 5, 3}, Shape{1, 40, 8, 8}, Shape{1, 96, 29, 13}}) {
    SCOPED_TRACE(fmt::format("[{}]", fmt::join(input, ", ")));
    const Tensor x = random_input(input, NHWC);
    std::vector<std::vector<float>> results;
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      std::string declined;
      const Tensor y = native::adaptive_avg_pool2d(x, 1, &declined);
      ASSERT_TRUE(y.defined()) << declined;
      EXPECT_TRUE(testing::all_close(y, reference::adaptive_avg_pool2d(x, 1), Tolerance::op_f32()));
      results.push_back(y.to_vector());
    }
    EXPECT_EQ(results[0], results[1]);
  }
}

TEST_F(NativePoolResize, AdaptiveAvgPoolTakesThreeDimensionalInput) {
  const Tensor x = random_input({13, 6, 7}, NCHW);
  const Tensor y = native::adaptive_avg_pool2d(x, {2, 3}, nullptr);
  const Tensor expected = reference::adaptive_avg_pool2d(x, {2, 3});
  EXPECT_TRUE(same_strides(y, expected));
  EXPECT_TRUE(testing::all_close(y, expected, Tolerance::op_f32()));
}

TEST_F(NativePoolResize, AdaptiveAvgPoolPropagatesInfAndNaN) {
  for (MemoryFormat format : {NCHW, NHWC}) {
    Tensor x = random_input({1, 11, 4, 4}, NCHW);
    float* p = x.data<float>();
    p[0] = INFINITY;       // channel 0: +Inf
    p[16 + 5] = NAN;       // channel 1: NaN
    p[32 + 1] = INFINITY;  // channel 2: Inf − Inf = NaN
    p[32 + 2] = -INFINITY;
    x = testing::laid_out(x, format);
    const Tensor y = native::adaptive_avg_pool2d(x, 1, nullptr);
    EXPECT_TRUE(testing::all_close(y, reference::adaptive_avg_pool2d(x, 1), Tolerance::op_f32()));
  }
}

TEST_F(NativePoolResize, AdaptiveAvgPoolDeclinesWithReasons) {
  std::string why;
  const Tensor x = random_input({2, 13, 6, 6}, NHWC);
  // bfloat16 runs the float32 kernel between a widening and a rounding (bfloat16_boundary.h).
  const Tensor y = native::adaptive_avg_pool2d(x.to(DType::BFloat16), 1, &why);
  ASSERT_TRUE(y.defined()) << why;
  EXPECT_EQ(y.dtype(), DType::BFloat16);
  EXPECT_TRUE(testing::all_close(y, reference::adaptive_avg_pool2d(x, 1), Tolerance::bf16()));
  EXPECT_FALSE(native::adaptive_avg_pool2d(testing::every_other_element(x), 1, &why).defined());
  EXPECT_THAT(why, HasSubstr("not dense NCHW or NHWC"));
  EXPECT_FALSE(native::adaptive_avg_pool2d(x, {0, 1}, &why).defined());
  EXPECT_THAT(why, HasSubstr("not positive"));
  EXPECT_FALSE(native::adaptive_avg_pool2d(empty({0, 13, 6, 6}), 1, &why).defined());
  EXPECT_THAT(why, HasSubstr("empty batch"));
  EXPECT_THAT(
      [&] {
        (void)native::adaptive_avg_pool2d(x, {0, 1}, nullptr);
      },
      ::testing::ThrowsMessage<Error>(HasSubstr("adaptive_avg_pool2d: native declined")));
  // Invalid arguments fail with the reference's message.
  EXPECT_THAT(
      [&] {
        (void)native::adaptive_avg_pool2d(empty({2, 3}), 1, &why);
      },
      ::testing::ThrowsMessage<Error>(HasSubstr("must be 3-d [C, H, W] or 4-d")));
}

TEST_F(NativePoolResize, FunctionalAdaptiveAvgPoolRunsNative) {
  DispatchLog log;
  for (MemoryFormat format : {NCHW, NHWC}) {
    const Tensor x = random_input({1, 960, 16, 16}, format);
    (void)functional::adaptive_avg_pool2d(x, 1);
    EXPECT_THAT(log.take(), Contains("adaptive_avg_pool2d: native"));
  }
  const Tensor strided = testing::every_other_element(random_input({1, 8, 4, 4}, NCHW));
  const Tensor y = functional::adaptive_avg_pool2d(strided, 1);
  EXPECT_THAT(log.take(), Contains("adaptive_avg_pool2d: reference"));
  EXPECT_TRUE(
      testing::all_close(y, reference::adaptive_avg_pool2d(strided, 1), Tolerance::exact()));
}

// --- global max pooling (ONNX GlobalMaxPool: the reference is reduce max over H, W, kept)

// GlobalMaxPool runs native::reduce (tests/kernels/native_reduce_test.cpp has its cases).
TEST_F(NativePoolResize, GraphGlobalMaxPoolRunsNative) {
  testing::OpCase global_max("GlobalMaxPool", {"x"});
  DispatchLog log;
  for (MemoryFormat format : {NCHW, NHWC}) {
    const Tensor x = random_input({1, 19, 6, 6}, format);
    const Tensor y = global_max.run_all({x}).at(0);
    EXPECT_THAT(log.take(), Contains("GlobalMaxPool: native"));
    EXPECT_TRUE(testing::all_close(y, reference::reduce(x, {2, 3}, true, reference::ReduceOp::Max),
                                   Tolerance::exact()));
  }
}

// --- Resize

struct ResizeCase {
  Shape input;
  std::int64_t out_h, out_w;
};

std::vector<ResizeCase> resize_cases() {
  return {
      {{1, 21, 4, 4}, 32, 32},                         // DeepLab's final ×8 bilinear, smaller
      {{2, 13, 5, 7}, 11, 3},                          // up in H, down in W, batch 2
      {{1, 3, 1, 1}, 4, 5},                            // from a single pixel
      {{1, 19, 6, 1}, 3, 1},                           // width 1
      {{3, 8, 4, 4}, 8, 8},                            // ×2
      {{1, 37, 9, 6}, 4, 13},  {{1, 1, 7, 9}, 7, 17},  // one channel, H kept
      {{2, 16, 3, 10}, 1, 10},                         // height 1 out
  };
}

reference::ResizeParams params_of(reference::ResizeMode mode, reference::CoordinateMode coords,
                                  reference::NearestMode nearest = {}) {
  reference::ResizeParams p;
  p.mode = mode;
  p.coordinates = coords;
  p.nearest = nearest;
  return p;
}

// The geometry ONNX's sizes input gives: scale = out / in, length = out.
struct Geometry {
  Shape sizes;
  std::vector<double> scales, lengths;
};
Geometry from_sizes(const Shape& in, std::int64_t out_h, std::int64_t out_w) {
  Geometry g{{in[0], in[1], out_h, out_w}, {1, 1, 1, 1}, {}};
  for (std::size_t d = 0; d < 4; ++d) {
    g.scales[d] = static_cast<double>(g.sizes[d]) / static_cast<double>(in[d]);
    g.lengths.push_back(static_cast<double>(g.sizes[d]));
  }
  return g;
}
// …and its scales input: out = ⌊in · scale⌋, length = in · scale.
Geometry from_scales(const Shape& in, double scale_h, double scale_w) {
  Geometry g{in, {1, 1, scale_h, scale_w}, {}};
  for (std::size_t d = 0; d < 4; ++d) {
    g.lengths.push_back(static_cast<double>(in[d]) * g.scales[d]);
    g.sizes[d] = static_cast<std::int64_t>(std::floor(g.lengths[d]));
  }
  return g;
}

// tf_half_pixel_for_nn samples coordinate x of every dimension at x + 0.5, also N and C at scale
// 1: linear and cubic blend neighbouring channels there, and nearest rounding up moves them, which
// the native kernel declines (only H and W are resized) — unless N and C are 1 (clamped: the same).
bool moves_channels(const Tensor& x, const reference::ResizeParams& p) {
  return (x.size(0) > 1 || x.size(1) > 1) &&
         p.coordinates == reference::CoordinateMode::TfHalfPixelForNn &&
         (p.mode == reference::ResizeMode::Linear || p.mode == reference::ResizeMode::Cubic ||
          p.nearest == reference::NearestMode::RoundPreferCeil ||
          p.nearest == reference::NearestMode::Ceil);
}

void expect_resize_matches(const Tensor& x, const Geometry& g,
                           const reference::ResizeParams& params) {
  std::string declined;
  const Tensor y = native::resize2d(x, g.sizes, g.scales, g.lengths, params, &declined);
  if (moves_channels(x, params)) {
    EXPECT_FALSE(y.defined());
    EXPECT_THAT(declined, HasSubstr("only H and W are resized"));
    return;
  }
  ASSERT_TRUE(y.defined()) << declined;
  const Tensor expected = reference::resize(x, g.sizes, g.scales, g.lengths, params);
  EXPECT_TRUE(same_strides(y, expected));
  // Nearest copies elements: bit-identical. Linear and cubic: float32 vs the reference's double.
  EXPECT_TRUE(testing::all_close(
      y, expected,
      params.mode == reference::ResizeMode::Nearest ? Tolerance::exact() : Tolerance::op_f32()));
}

constexpr reference::CoordinateMode kCoordinateModes[] = {
    reference::CoordinateMode::HalfPixel, reference::CoordinateMode::PytorchHalfPixel,
    reference::CoordinateMode::Asymmetric, reference::CoordinateMode::TfHalfPixelForNn,
    reference::CoordinateMode::AlignCorners};
constexpr reference::NearestMode kNearestModes[] = {
    reference::NearestMode::RoundPreferFloor, reference::NearestMode::RoundPreferCeil,
    reference::NearestMode::Floor, reference::NearestMode::Ceil};

TEST_F(NativePoolResize, ResizeLinearMatchesReference) {
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const ResizeCase& c : resize_cases())
      for (MemoryFormat format : {NCHW, NHWC})
        for (auto coords : kCoordinateModes) {
          SCOPED_TRACE(fmt::format("[{}] -> {}x{} {} mode {} {} threads", fmt::join(c.input, ", "),
                                   c.out_h, c.out_w, memory_format_name(format),
                                   static_cast<int>(coords), threads));
          expect_resize_matches(random_input(c.input, format),
                                from_sizes(c.input, c.out_h, c.out_w),
                                params_of(reference::ResizeMode::Linear, coords));
        }
  }
}

// Cubic (Keys' kernel, coefficient A): 4 taps per dimension, up and down, with and without
// exclude_outside (the edge taps' weights renormalized), every coordinate mode.
TEST_F(NativePoolResize, ResizeCubicMatchesReference) {
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const ResizeCase& c : resize_cases())
      for (MemoryFormat format : {NCHW, NHWC})
        for (auto coords : kCoordinateModes)
          for (bool exclude_outside : {false, true}) {
            SCOPED_TRACE(fmt::format("[{}] -> {}x{} {} mode {} exclude {} {} threads",
                                     fmt::join(c.input, ", "), c.out_h, c.out_w,
                                     memory_format_name(format), static_cast<int>(coords),
                                     exclude_outside, threads));
            reference::ResizeParams p = params_of(reference::ResizeMode::Cubic, coords);
            p.exclude_outside = exclude_outside;
            p.cubic_coeff_a = exclude_outside ? -0.5 : -0.75;
            expect_resize_matches(random_input(c.input, format),
                                  from_sizes(c.input, c.out_h, c.out_w), p);
          }
  }
}

TEST_F(NativePoolResize, ResizeNearestIsExact) {
  for (const ResizeCase& c : resize_cases())
    for (MemoryFormat format : {NCHW, NHWC})
      for (auto coords : kCoordinateModes)
        for (auto nearest : kNearestModes) {
          SCOPED_TRACE(fmt::format("[{}] -> {}x{} {} mode {} nearest {}", fmt::join(c.input, ", "),
                                   c.out_h, c.out_w, memory_format_name(format),
                                   static_cast<int>(coords), static_cast<int>(nearest)));
          expect_resize_matches(random_input(c.input, format),
                                from_sizes(c.input, c.out_h, c.out_w),
                                params_of(reference::ResizeMode::Nearest, coords, nearest));
        }
}

TEST_F(NativePoolResize, ResizeFromScalesMatchesReference) {
  // Scales that are not out / in: align_corners and pytorch_half_pixel read the unfloored length.
  const Shape in{2, 19, 5, 7};
  for (auto [sh, sw] : {std::pair{2.0, 2.0}, {0.6, 1.7}, {8.0, 0.5}, {1.0, 3.3}})
    for (MemoryFormat format : {NCHW, NHWC})
      for (auto coords : kCoordinateModes)
        for (auto mode : {reference::ResizeMode::Linear, reference::ResizeMode::Nearest}) {
          SCOPED_TRACE(fmt::format("scales {} {} {} mode {} {}", sh, sw, memory_format_name(format),
                                   static_cast<int>(coords), static_cast<int>(mode)));
          expect_resize_matches(random_input(in, format), from_scales(in, sh, sw),
                                params_of(mode, coords));
        }
}

TEST_F(NativePoolResize, ResizeKeepsInfAndNaNWhereTheReferenceDoes) {
  // Asymmetric ×2: even outputs land on input samples (w1 = 0), where an Inf or NaN neighbour
  // must not turn the output into NaN.
  for (MemoryFormat format : {NCHW, NHWC}) {
    Tensor x = random_input({1, 9, 4, 5}, NCHW);
    float* p = x.data<float>();
    p[1] = INFINITY;
    p[20 + 7] = NAN;
    p[40 + 12] = -INFINITY;
    p[40 + 13] = INFINITY;
    x = testing::laid_out(x, format);
    expect_resize_matches(
        x, from_scales(x.sizes(), 2.0, 2.0),
        params_of(reference::ResizeMode::Linear, reference::CoordinateMode::Asymmetric));
    expect_resize_matches(
        x, from_scales(x.sizes(), 2.0, 2.0),
        params_of(reference::ResizeMode::Nearest, reference::CoordinateMode::HalfPixel));
    expect_resize_matches(
        x, from_scales(x.sizes(), 2.0, 2.0),
        params_of(reference::ResizeMode::Cubic, reference::CoordinateMode::Asymmetric));
  }
}

TEST_F(NativePoolResize, ResizeDeclinesWithReasons) {
  const Tensor x = random_input({1, 13, 4, 4}, NHWC);
  const auto linear =
      params_of(reference::ResizeMode::Linear, reference::CoordinateMode::HalfPixel);
  auto reason = [](const Tensor& input, const Geometry& g, const reference::ResizeParams& p) {
    std::string why;
    EXPECT_FALSE(native::resize2d(input, g.sizes, g.scales, g.lengths, p, &why).defined());
    return why;
  };
  const Geometry up = from_sizes(x.sizes(), 8, 8);
  EXPECT_THAT(reason(x.to(DType::BFloat16), up, linear), HasSubstr("only float32"));
  EXPECT_THAT(reason(testing::every_other_element(x), up, linear),
              HasSubstr("not dense NCHW or NHWC"));
  const Tensor five_d = randn({1, 2, 3, 4, 5});
  EXPECT_THAT(reason(five_d, {{1, 2, 3, 4, 5}, {1, 1, 1, 1, 1}, {1, 2, 3, 4, 5}}, linear),
              HasSubstr("only 4-d"));
  Geometry channels = from_sizes(x.sizes(), 8, 8);
  channels.sizes[1] = 26;
  channels.scales[1] = 2;
  channels.lengths[1] = 26;
  EXPECT_THAT(reason(x, channels, linear), HasSubstr("only H and W are resized"));
  // Scale 1 is not always the identity: tf_half_pixel_for_nn samples C at c + 0.5.
  EXPECT_THAT(
      reason(x, up,
             params_of(reference::ResizeMode::Linear, reference::CoordinateMode::TfHalfPixelForNn)),
      HasSubstr("only H and W are resized"));
  EXPECT_THAT(reason(empty({0, 13, 4, 4}), from_sizes({1, 13, 4, 4}, 8, 8), linear),
              HasSubstr("empty"));
  // Antialiased downsampling reads more inputs an output than the kernel's 4 taps.
  reference::ResizeParams antialias = linear;
  antialias.antialias = true;
  EXPECT_THAT(reason(x, from_sizes(x.sizes(), 2, 4), antialias),
              HasSubstr("antialiased downsampling"));
  EXPECT_TRUE(native::resize2d(x, up.sizes, up.scales, up.lengths, antialias, nullptr).defined());
}

// The graph op Resize (src/ops/resize.cpp) runs through the dispatch: native where it can.
TEST_F(NativePoolResize, GraphResizeRunsNative) {
  ops::ResizeOptions options;
  options.params.mode = ops::ResizeOptions::Mode::Linear;
  options.params.coordinates = ops::ResizeOptions::Coordinates::PytorchHalfPixel;
  ops::Resize resize(options);
  const Tensor scales = from_values(std::vector<float>{1, 1, 2, 2}, {4});
  DispatchLog log;
  for (MemoryFormat format : {NCHW, NHWC}) {
    const Tensor x = random_input({1, 21, 6, 6}, format);
    const Tensor y = resize.run({x, Tensor(), scales}).at(0);
    EXPECT_THAT(log.take(), Contains("resize: native"));
    EXPECT_EQ(y.sizes(), (Shape{1, 21, 12, 12}));
    EXPECT_TRUE(y.is_contiguous(format));
  }
  options.params.mode = ops::ResizeOptions::Mode::Cubic;
  ops::Resize cubic(options);
  (void)cubic.run({random_input({1, 3, 4, 4}, NHWC), Tensor(), scales});
  EXPECT_THAT(log.take(), Contains("resize: native"));
  (void)cubic.run({random_input({1, 3, 4, 4}, NHWC).to(DType::BFloat16), Tensor(), scales});
  EXPECT_THAT(log.take(), Contains("resize: reference"));
}

}  // namespace
}  // namespace refold
