// MaxPool, AveragePool, GlobalAveragePool, Gemm, MatMul and Pad builders: which module each
// becomes, values against the reference kernels or hand-computed results (NCHW and
// channels_last), and the validation errors (docs/reliability.md F16, F17, F28).
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "kernels/reference/onnx_ops.h"
#include "onnx/ops_cnn_helpers.h"
#include "onnx/ops_tensor_helpers.h"
#include "ops/gemm.h"
#include "ops/pool.h"
#include "refold/nn/linear.h"
#include "refold/nn/pooling.h"
#include "refold/reference.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"

namespace refold {
namespace {

using testing::i64;
using testing::OpCase;
using testing::random;
using testing::to_channels_last;
using testing::Tolerance;

// A naive pool over one plane for hand checks: pads per side, ONNX's rules.
float naive_pool(const Tensor& x, std::int64_t n, std::int64_t c, std::int64_t oy, std::int64_t ox,
                 bool max, Size2d k, Size2d s, Pads2d p, bool include_pad) {
  double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
  std::int64_t count = 0;
  for (std::int64_t i = 0; i < k.h; ++i)
    for (std::int64_t j = 0; j < k.w; ++j) {
      const std::int64_t y = oy * s.h - p.top + i, xx = ox * s.w - p.left + j;
      const bool inside = y >= 0 && y < x.size(2) && xx >= 0 && xx < x.size(3);
      const bool in_padded = y < x.size(2) + p.bottom && xx < x.size(3) + p.right;
      if (include_pad ? in_padded : inside) ++count;
      if (!inside) continue;
      const double v = x.at({n, c, y, xx});
      acc = max ? std::max(acc, v) : acc + v;
    }
  return static_cast<float>(max ? acc : acc / static_cast<double>(count));
}

void expect_pool(const Tensor& y, const Tensor& x, bool max, Size2d k, Size2d s, Pads2d p,
                 bool include_pad) {
  for (std::int64_t n = 0; n < y.size(0); ++n)
    for (std::int64_t c = 0; c < y.size(1); ++c)
      for (std::int64_t i = 0; i < y.size(2); ++i)
        for (std::int64_t j = 0; j < y.size(3); ++j)
          ASSERT_NEAR(y.at({n, c, i, j}), naive_pool(x, n, c, i, j, max, k, s, p, include_pad),
                      1e-5)
              << n << " " << c << " " << i << " " << j;
}

TEST(OnnxPool, SymmetricPadsBecomeTorchModules) {
  const Tensor x = random({2, 3, 7, 6}, 1);
  OpCase max("MaxPool", {"x"});
  max.ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1});
  EXPECT_NE(std::dynamic_pointer_cast<nn::MaxPool2d>(max.module()), nullptr);
  const Tensor expected = reference::max_pool2d(x, {3, Size2d(2), 1});
  EXPECT_TRUE(max.close_in_both_layouts(x, expected));

  for (const bool include : {false, true}) {
    OpCase avg("AveragePool", {"x"});
    avg.ints("kernel_shape", {3, 2})
        .ints("strides", {3, 2})
        .ints("pads", {1, 1, 1, 1})
        .integer("count_include_pad", include ? 1 : 0);
    EXPECT_NE(std::dynamic_pointer_cast<nn::AvgPool2d>(avg.module()), nullptr);
    const Tensor y = avg.run({to_channels_last(x)});
    EXPECT_EQ(y.sizes(), (Shape{2, 3, 3, 4}));
    expect_pool(y, x, false, {3, 2}, {3, 2}, {1, 1, 1, 1}, include);
  }
}

// F17: count_include_pad with asymmetric pads and ceil_mode runs the ONNX op.
TEST(OnnxPool, AsymmetricPadsAndCeilModeRunTheOnnxOp) {
  const Tensor x = random({1, 2, 6, 7}, 2);
  for (const bool max : {true, false})
    for (const bool include : {false, true}) {
      SCOPED_TRACE(std::string(max ? "max" : "avg") + (include ? " include" : ""));
      OpCase c(max ? "MaxPool" : "AveragePool", {"x"});
      c.ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).ints("pads", {0, 1, 0, 0});
      c.integer("ceil_mode", 1);
      if (!max) c.integer("count_include_pad", include ? 1 : 0);
      EXPECT_NE(std::dynamic_pointer_cast<ops::Pool>(c.module()), nullptr);
      // H: (6 − 3) / 2 = 1.5 → ceil 2 (+1) = 3, the last window over rows 4, 5 and one past the
      // end; W: (7 + 1 − 3) / 2 = 2.5 → 4.
      const Tensor y = c.run({x}), y_cl = c.run({to_channels_last(x)});
      EXPECT_EQ(y.sizes(), (Shape{1, 2, 3, 4}));
      EXPECT_TRUE(y_cl.is_contiguous(MemoryFormat::ChannelsLast));
      expect_pool(y, x, max, 3, 2, {0, 1, 0, 0}, include);
      expect_pool(y_cl, x, max, 3, 2, {0, 1, 0, 0}, include);
    }
}

// Symmetric pads with ceil_mode: the op runs PyTorch's pools (both rules agree once the ONNX
// size check passed). H 6 / W 7, k 3, s 2, pads 1: 4 × 4 windows, the last ones overhanging the
// padded end (which count_include_pad does not count).
TEST(OnnxPool, CeilModeWithSymmetricPadsMatchesOnnxCounts) {
  const Tensor x = random({1, 3, 6, 7}, 20);
  for (const bool max : {true, false})
    for (const bool include : {false, true}) {
      SCOPED_TRACE(std::string(max ? "max" : "avg") + (include ? " include" : ""));
      OpCase c(max ? "MaxPool" : "AveragePool", {"x"});
      c.ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1});
      c.integer("ceil_mode", 1).integer("count_include_pad", include ? 1 : 0);
      if (max) c.node().attributes.erase("count_include_pad");
      const Tensor y = c.run({to_channels_last(x)});
      EXPECT_EQ(y.sizes(), (Shape{1, 3, 4, 4}));
      expect_pool(y, x, max, 3, 2, {1, 1, 1, 1}, include);
    }
}

// SAME_UPPER on H 5, k 2, stride 2: out 3, total 1 → 0/1; SAME_LOWER → 1/0.
TEST(OnnxPool, SamePaddingResolvesFromTheInput) {
  const Tensor x = random({1, 1, 5, 5}, 3);
  for (const auto& [mode, pads] :
       {std::pair{"SAME_UPPER", Pads2d{0, 0, 1, 1}}, std::pair{"SAME_LOWER", Pads2d{1, 1, 0, 0}}}) {
    SCOPED_TRACE(mode);
    OpCase c("AveragePool", {"x"});
    c.ints("kernel_shape", {2, 2}).ints("strides", {2, 2}).text("auto_pad", mode);
    const Tensor y = c.run({x});
    EXPECT_EQ(y.sizes(), (Shape{1, 1, 3, 3}));
    expect_pool(y, x, false, 2, 2, pads, false);
  }
}

TEST(OnnxPool, GlobalAveragePoolIsAdaptiveAvgPoolOn4dAndAMeanOnAnyRank) {
  const Tensor x = random({2, 3, 4, 5}, 4);
  OpCase c("GlobalAveragePool", {"x"});
  EXPECT_TRUE(testing::all_close(c.run({to_channels_last(x)}), reference::adaptive_avg_pool2d(x, 1),
                                 Tolerance::op_f32()));
  // A video model's [N, C, T, H, W] (torchvision r3d_18's AdaptiveAvgPool3d) and a 1-d signal.
  for (const Shape& shape : {Shape{1, 2, 3, 4, 5}, Shape{2, 3, 7}}) {
    const Tensor v = random(shape, 5);
    OpCase g("GlobalAveragePool", {"x"});
    std::vector<std::int64_t> spatial;
    for (std::size_t d = 2; d < shape.size(); ++d) spatial.push_back(static_cast<std::int64_t>(d));
    EXPECT_TRUE(testing::all_close(g.run({v}),
                                   reference::reduce(v, spatial, true, reference::ReduceOp::Mean),
                                   Tolerance::op_f32()));
  }
}

TEST(OnnxPool, Errors) {
  auto build = [](const char* op, auto configure) {
    return [=] {
      OpCase c(op, {"x"});
      c.ints("kernel_shape", {2, 2});
      configure(c);
      c.module();
    };
  };
  auto run = [](Tensor x, auto configure) {
    return [=] {
      OpCase c("MaxPool", {"x"});
      configure(c);
      c.run({x});
    };
  };
  testing::expect_errors({
      {"F16 storage_order", build("MaxPool", [](OpCase& c) { c.integer("storage_order", 2); }),
       "storage_order must be 0 or 1 (got 2)"},
      {"F16 a third output",
       build("MaxPool",
             [](OpCase& c) {
               c.node().outputs = {"y", "idx", "extra"};
             }),
       "unsupported: output 2 ('extra') is not implemented"},
      {"kernel_shape missing",
       [] {
         OpCase c("AveragePool", {"x"});
         c.module();
       },
       "kernel_shape is required"},
      {"ceil_mode 2", build("MaxPool", [](OpCase& c) { c.integer("ceil_mode", 2); }),
       "ceil_mode must be 0 or 1 (got 2)"},
      {"count_include_pad 3",
       build("AveragePool", [](OpCase& c) { c.integer("count_include_pad", 3); }),
       "count_include_pad must be 0 or 1"},
      {"F1 strides",
       build("MaxPool",
             [](OpCase& c) {
               c.ints("strides", {0, 1});
             }),
       "strides must be positive"},
      {"F4 pads",
       build("AveragePool",
             [](OpCase& c) {
               c.ints("pads", {-1, 0, 0, 0});
             }),
       "pads must be non-negative"},
      {"1-d kernel, 2-d strides",
       [] {
         OpCase c("MaxPool", {"x"});
         c.ints("kernel_shape", {3}).ints("strides", {1, 1});
         c.module();
       },
       "strides must have 1 values, got 2 ([1, 1])"},
      // H 5, k 2, stride 4, pads 0/3, ceil: windows at 0 and 4 — then (5 + 3 − 2) / 4 = 1.5 →
      // 2 + 1 = 3 windows, the third starting at 8, inside the end padding.
      {"F16 ceil_mode window in the end padding",
       run(random({1, 1, 5, 5}, 5),
           [](OpCase& c) {
             c.ints("kernel_shape", {2, 2}).ints("strides", {4, 4}).ints("pads", {0, 0, 3, 3});
             c.integer("ceil_mode", 1);
           }),
       "unsupported: ceil_mode=1 with a last window that starts in the end padding"},
      {"F9 kernel larger than the input",
       run(random({1, 1, 2, 2}, 5),
           [](OpCase& c) {
             c.ints("kernel_shape", {3, 3}).text("auto_pad", "VALID").integer("ceil_mode", 1);
           }),
       "output dim <= 0 (in 2, kernel 3"},
  });
}

// ---- Gemm, MatMul

TEST(OnnxGemm, LinearFormBecomesNnLinearSharingB) {
  const Tensor a = random({3, 5}, 6), b = random({4, 5}, 7), bias = random({4}, 8);
  OpCase c("Gemm", {"a", "B", "C"});
  c.constant("B", b).constant("C", bias).integer("transB", 1);
  auto fc = std::dynamic_pointer_cast<nn::Linear>(c.module());
  ASSERT_NE(fc, nullptr);
  EXPECT_TRUE(fc->weight().is_same(c.graph().constant("B")));
  EXPECT_TRUE(fc->bias().is_same(c.graph().constant("C")));
  EXPECT_TRUE(testing::all_close(c.run({a}), reference::linear(a, b, bias), Tolerance::op_f32()));
}

TEST(OnnxGemm, GeneralFormIsTheGemmOp) {
  const Tensor a = random({5, 3}, 9), b = random({5, 4}, 10), bias = random({1, 4}, 11);
  OpCase c("Gemm", {"a", "B", "C"});
  c.constant("B", b)
      .constant("C", bias)
      .integer("transA", 1)
      .real("alpha", 0.5f)
      .real("beta", 2.0f);
  ASSERT_NE(std::dynamic_pointer_cast<ops::Gemm>(c.module()), nullptr);
  const Tensor y = c.run({a});
  ASSERT_EQ(y.sizes(), (Shape{3, 4}));
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t j = 0; j < 4; ++j) {
      double acc = 0;
      for (std::int64_t k = 0; k < 5; ++k) acc += double{a.at({k, i})} * b.at({k, j});
      EXPECT_NEAR(y.at({i, j}), 0.5 * acc + 2.0 * bias.at({0, j}), 1e-5);
    }
}

TEST(OnnxGemm, Errors) {
  testing::expect_errors({
      {"F28 K mismatch at run time",
       [] {
         OpCase c("Gemm", {"a", "b"});
         c.integer("transB", 1);
         c.run({zeros({2, 3}), zeros({4, 5})});
       },
       "Gemm: inner dimensions differ: A' is [2, 3] and B' is [5, 4]"},
      {"F28 K mismatch, constants",
       [] {
         OpCase c("Gemm", {"a", "b"});
         c.constant("a", zeros({2, 3})).constant("b", zeros({4, 5}));
         c.module();
       },
       "inner dimensions differ: A' has K = 3 but B' has K = 4"},
      {"B not 2-d",
       [] {
         OpCase c("Gemm", {"a", "b"});
         c.constant("b", zeros({4}));
         c.module();
       },
       "B must be 2-d, got [4]"},
      {"transA 2",
       [] {
         OpCase c("Gemm", {"a", "b"});
         c.integer("transA", 2);
         c.module();
       },
       "transA must be 0 or 1"},
      {"C does not broadcast",
       [] {
         OpCase c("Gemm", {"a", "b", "c"});
         c.run({zeros({2, 3}), zeros({3, 4}), zeros({3})});
       },
       "cannot be broadcast"},
      {"MatMul inner dims",
       [] {
         OpCase c("MatMul", {"a", "b"});
         c.run({zeros({2, 3}), zeros({4, 5})});
       },
       "MatMul: A [2, 3] and B [4, 5] have different inner dimensions"},
  });
}

TEST(OnnxMatMul, BatchBroadcastAndVectors) {
  const Tensor a = random({2, 1, 3, 4}, 12), b = random({3, 4, 2}, 13);
  OpCase c("MatMul", {"a", "b"});
  const Tensor y = c.run({a, b});
  ASSERT_EQ(y.sizes(), (Shape{2, 3, 3, 2}));
  for (std::int64_t n = 0; n < 2; ++n)
    for (std::int64_t m = 0; m < 3; ++m)
      for (std::int64_t i = 0; i < 3; ++i)
        for (std::int64_t j = 0; j < 2; ++j) {
          double acc = 0;
          for (std::int64_t k = 0; k < 4; ++k) acc += double{a.at({n, 0, i, k})} * b.at({m, k, j});
          ASSERT_NEAR(y.at({n, m, i, j}), acc, 1e-5);
        }
  // [K] · [K, N] → [N]; [M, K] · [K] → [M]; the 2-d B path (linear) on a 3-d A.
  OpCase v("MatMul", {"a", "b"});
  EXPECT_EQ(v.run({random({4}, 14), random({4, 3}, 15)}).sizes(), (Shape{3}));
  EXPECT_EQ(v.run({random({2, 4}, 14), random({4}, 15)}).sizes(), (Shape{2}));
  const Tensor a3 = random({2, 3, 4}, 16), b2 = random({4, 5}, 17);
  EXPECT_TRUE(testing::all_close(v.run({a3, b2}), reference::matmul(a3, b2), Tolerance::op_f32()));
}

// ---- Pad

TEST(OnnxPad, ConstantModeWithAxesAndCrops) {
  const Tensor x = random({1, 2, 3, 4}, 18);
  OpCase c("Pad", {"x", "pads", "value"});
  // [x1_begin … x4_begin, x1_end … x4_end]: H +1/+0, W −1/+2.
  c.constant("pads", i64({0, 0, 1, -1, 0, 0, 0, 2})).constant("value", full({}, 7.0f));
  const Tensor y = c.run({x}), y_cl = c.run({to_channels_last(x)});
  ASSERT_EQ(y.sizes(), (Shape{1, 2, 4, 5}));
  for (std::int64_t ch = 0; ch < 2; ++ch)
    for (std::int64_t i = 0; i < 4; ++i)
      for (std::int64_t j = 0; j < 5; ++j) {
        const std::int64_t si = i - 1, sj = j + 1;
        const float expected = si >= 0 && sj < 4 ? x.at({0, ch, si, sj}) : 7.0f;
        ASSERT_EQ(y.at({0, ch, i, j}), expected);
        ASSERT_EQ(y_cl.at({0, ch, i, j}), expected);
      }
  // opset 18 axes: pads only the listed axes (negative counts from the end).
  OpCase axes("Pad", {"x", "pads", "", "axes"});
  axes.constant("pads", i64({1, 0, 1, 2})).constant("axes", i64({-1, 2}));
  axes.opset(18);
  EXPECT_EQ(axes.run({x}).sizes(), (Shape{1, 2, 3 + 0 + 2, 4 + 1 + 1}));
}

TEST(OnnxPad, Errors) {
  testing::expect_errors({
      {"unknown mode",
       [] {
         OpCase c("Pad", {"x", "pads"});
         c.text("mode", "symmetric").module();
       },
       "unknown Pad mode 'symmetric' (expected constant, reflect, edge or wrap)"},
      {"pads length",
       [] {
         OpCase c("Pad", {"x", "pads"});
         c.run({zeros({1, 2}), i64({1, 1})});
       },
       "Pad: pads has 2 values; expected 4"},
      {"float pads",
       [] {
         OpCase c("Pad", {"x", "pads"});
         c.constant("pads", zeros({4}));
         c.module();
       },
       "pads must be a 1-d int64 tensor of even length"},
      {"axis out of range",
       [] {
         OpCase c("Pad", {"x", "pads", "", "axes"});
         c.run({zeros({1, 2}), i64({1, 1}), i64({2})});
       },
       "Pad: axis 2 is out of range for rank 2"},
  });
}

}  // namespace
}  // namespace refold
