// Conv and ConvTranspose builders (src/onnx/ops/conv_builders.cpp): constant weights become
// nn::Conv2d / nn::ConvTranspose2d sharing the graph's tensors; runtime weights, input-size
// dependent padding and ONNX-only geometry become ops::Conv / ConvTranspose. Every
// result is compared with the reference kernels in NCHW and channels_last, and every
// validation error (docs/reliability.md F1–F15) with its message.
#include <gtest/gtest.h>

#include "onnx/ops_cnn_helpers.h"
#include "onnx/ops_tensor_helpers.h"
#include "ops/conv.h"
#include "refold/memory_format.h"
#include "refold/nn/conv.h"
#include "refold/nn/utils.h"
#include "refold/reference.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"

namespace refold {
namespace {

using testing::OpCase;
using testing::random;
using testing::to_channels_last;
using testing::Tolerance;

// Conv with constant W/B and `pads` = ONNX [top, left, bottom, right].
OpCase conv_case(const Tensor& w, const Tensor& b) {
  OpCase c("Conv", {"x", "W", "B"});
  c.constant("W", w).constant("B", b);
  return c;
}

TEST(OnnxConv, ConstantWeightsBecomeConv2dSharingTheGraphTensors) {
  const Tensor w = random({6, 4, 3, 3}, 1), b = random({6}, 2), x = random({2, 4, 7, 5}, 3);
  OpCase c = conv_case(w, b);
  c.ints("pads", {1, 1, 1, 1}).ints("strides", {2, 1});
  auto conv = std::dynamic_pointer_cast<nn::Conv2d>(c.module());
  ASSERT_NE(conv, nullptr);
  EXPECT_TRUE(conv->weight().is_same(c.graph().constant("W")));  // one handle after binding
  EXPECT_TRUE(conv->bias().is_same(c.graph().constant("B")));
  EXPECT_EQ(conv->weight().data_ptr(), w.data_ptr());  // no copy of the initializer
  const Tensor expected = reference::conv2d(x, w, b, {Size2d(2, 1), 1});
  EXPECT_TRUE(c.close_in_both_layouts(x, expected));
  // The seed's utility converts the module's weight, and the graph's constant with it.
  nn::utils::convert_conv2d_weight_memory_format(*conv, MemoryFormat::ChannelsLast);
  EXPECT_TRUE(c.graph().constant("W").is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(testing::all_close(c.run({x}), expected, Tolerance::op_f32()));
}

TEST(OnnxConv, ImportingDoesNotMoveTheDefaultGenerator) {
  manual_seed(11);
  const double before = default_generator().uniform();
  manual_seed(11);
  OpCase c = conv_case(random({2, 2, 3, 3}, 1), random({2}, 2));
  c.module();
  EXPECT_EQ(default_generator().uniform(), before);
}

TEST(OnnxConv, RuntimeWeightsBecomeAConvOp) {
  const Tensor w = random({6, 2, 3, 3}, 4), b = random({6}, 5), x = random({1, 4, 6, 6}, 6);
  OpCase c("Conv", {"x", "W", "B"});
  c.integer("group", 2).ints("dilations", {2, 1}).ints("pads", {2, 1, 2, 1});
  ASSERT_NE(std::dynamic_pointer_cast<ops::Conv>(c.module()), nullptr);
  const Tensor expected = reference::conv2d(x, w, b, {1, Size2d(2, 1), Size2d(2, 1), 2});
  EXPECT_TRUE(testing::all_close(c.run({x, w, b}), expected, Tolerance::op_f32()));
  EXPECT_TRUE(testing::all_close(c.run({to_channels_last(x), to_channels_last(w), b}), expected,
                                 Tolerance::op_f32()));
}

TEST(OnnxConv, WithoutBias) {
  const Tensor w = random({3, 3, 1, 1}, 7), x = random({1, 3, 4, 4}, 8);
  OpCase c("Conv", {"x", "W"});
  c.constant("W", w);
  auto conv = std::dynamic_pointer_cast<nn::Conv2d>(c.module());
  ASSERT_NE(conv, nullptr);
  EXPECT_FALSE(conv->has_bias());
  EXPECT_TRUE(testing::all_close(c.run({x}), reference::conv2d(x, w), Tolerance::op_f32()));
}

// F8: asymmetric pads, top/left/bottom/right each its own.
TEST(OnnxConv, AsymmetricPads) {
  const Tensor w = random({2, 3, 3, 2}, 9), b = random({2}, 10), x = random({1, 3, 5, 5}, 11);
  OpCase c = conv_case(w, b);
  c.ints("pads", {1, 0, 2, 3});
  const Tensor expected = reference::conv2d(x, w, b, {1, Padding2d::asymmetric(1, 0, 2, 3)});
  EXPECT_EQ(expected.sizes(), (Shape{1, 2, 6, 7}));
  EXPECT_TRUE(c.close_in_both_layouts(x, expected));
}

// F7: out = ceil(in / stride); the odd unit of padding goes at the end for SAME_UPPER and at
// the beginning for SAME_LOWER. Pads worked out by hand for H 5, W 6, k 3, stride 2:
//   H: out 3, total = 2·2 + 3 − 5 = 2 → 1/1;  W: out 3, total = 2·2 + 3 − 6 = 1 → 0/1 or 1/0.
TEST(OnnxConv, SameUpperAndLowerWithStrideResolveAtRunTime) {
  const Tensor w = random({2, 2, 3, 3}, 12), b = random({2}, 13), x = random({1, 2, 5, 6}, 14);
  for (const auto& [mode, pads] : {std::pair{"SAME_UPPER", Padding2d::asymmetric(1, 0, 1, 1)},
                                   std::pair{"SAME_LOWER", Padding2d::asymmetric(1, 1, 1, 0)}}) {
    SCOPED_TRACE(mode);
    OpCase c = conv_case(w, b);
    c.text("auto_pad", mode).ints("strides", {2, 2});
    ASSERT_NE(std::dynamic_pointer_cast<ops::Conv>(c.module()), nullptr);
    const Tensor expected = reference::conv2d(x, w, b, {2, pads});
    EXPECT_EQ(expected.sizes(), (Shape{1, 2, 3, 3}));
    EXPECT_TRUE(c.close_in_both_layouts(x, expected));
  }
}

// With stride 1 the SAME total is dilation·(k − 1): known at build time, so a Conv2d.
// k 4 → total 3: SAME_UPPER 1/2, SAME_LOWER 2/1.
TEST(OnnxConv, SameWithStrideOneIsStatic) {
  const Tensor w = random({2, 2, 4, 4}, 15), b = random({2}, 16), x = random({1, 2, 6, 5}, 17);
  for (const auto& [mode, pads] : {std::pair{"SAME_UPPER", Padding2d::asymmetric(1, 1, 2, 2)},
                                   std::pair{"SAME_LOWER", Padding2d::asymmetric(2, 2, 1, 1)}}) {
    SCOPED_TRACE(mode);
    OpCase c = conv_case(w, b);
    c.text("auto_pad", mode);
    ASSERT_NE(std::dynamic_pointer_cast<nn::Conv2d>(c.module()), nullptr);
    const Tensor y = c.run({x});
    EXPECT_EQ(y.sizes(), (Shape{1, 2, 6, 5}));
    EXPECT_TRUE(testing::all_close(y, reference::conv2d(x, w, b, {1, pads}), Tolerance::op_f32()));
  }
}

TEST(OnnxConv, ValidMeansNoPadding) {
  const Tensor w = random({2, 2, 3, 3}, 18), x = random({1, 2, 5, 5}, 19);
  OpCase c("Conv", {"x", "W"});
  c.constant("W", w).text("auto_pad", "VALID");
  EXPECT_EQ(c.run({x}).sizes(), (Shape{1, 2, 3, 3}));
}

TEST(OnnxConv, AttributeErrors) {
  const Tensor w = random({4, 2, 3, 3}, 20), b = random({4}, 21);
  auto build = [&](auto configure) {
    return [=] {
      OpCase c = conv_case(w, b);
      configure(c);
      c.module();
    };
  };
  testing::expect_errors({
      {"F1 zero strides", build([](OpCase& c) {
         c.ints("strides", {0, 0});
       }),
       "strides must be positive (got [0, 0])"},
      {"F2 negative strides", build([](OpCase& c) {
         c.ints("strides", {1, -1});
       }),
       "strides must be positive (got [1, -1])"},
      {"F3 zero dilations", build([](OpCase& c) {
         c.ints("dilations", {0, 0});
       }),
       "dilations must be positive (got [0, 0])"},
      {"F3 negative dilations", build([](OpCase& c) {
         c.ints("dilations", {-1, 1});
       }),
       "dilations must be positive"},
      {"F4 negative pads", build([](OpCase& c) {
         c.ints("pads", {0, -1, 0, 0});
       }),
       "pads must be non-negative (got [0, -1, 0, 0])"},
      {"F5 pads length", build([](OpCase& c) {
         c.ints("pads", {1, 1});
       }),
       "pads must have 4 values, got 2 ([1, 1])"},
      {"F5 pads length with kernel_shape", build([](OpCase& c) {
         c.ints("kernel_shape", {3, 3}).ints("pads", {1, 1, 1});
       }),
       "pads must have 4 values, got 3"},
      {"F5 strides length 3", build([](OpCase& c) {
         c.ints("strides", {1, 1, 1});
       }),
       "strides must have 2 values, got 3 ([1, 1, 1])"},
      {"F5 dilations length", build([](OpCase& c) {
         c.ints("kernel_shape", {3, 3}).ints("dilations", {1});
       }),
       "dilations must have 2 values, got 1"},
      {"F5 kernel_shape length", build([](OpCase& c) {
         c.ints("kernel_shape", {3, 3, 3});
       }),
       "kernel_shape must have 2 values, got 3"},
      {"F6 auto_pad with pads", build([](OpCase& c) {
         c.text("auto_pad", "SAME_UPPER").ints("pads", {1, 1, 1, 1});
       }),
       "auto_pad SAME_UPPER cannot be used together with pads [1, 1, 1, 1]"},
      {"F7 unknown auto_pad", build([](OpCase& c) { c.text("auto_pad", "SAME"); }),
       "unknown auto_pad 'SAME'"},
      {"F10 kernel_shape vs W", build([](OpCase& c) {
         c.ints("kernel_shape", {5, 5});
       }),
       "kernel_shape [5, 5] does not match W's spatial dims [3, 3]"},
      {"F11 group 0", build([](OpCase& c) { c.integer("group", 0); }),
       "group must be positive (got 0)"},
      {"F11 group not dividing M", build([](OpCase& c) { c.integer("group", 3); }),
       "group (3) must divide W's output channels (4"},
      {"F12 bias length",
       [&] {
         OpCase c = conv_case(w, random({5}, 1));
         c.module();
       },
       "bias B must be 1-d of length 4 (output channels), got [5]"},
      {"1-d Conv weight, 2-d kernel_shape",
       [&] {
         OpCase c("Conv", {"x", "W"});
         c.constant("W", random({4, 2, 3}, 1)).ints("kernel_shape", {3, 3});
         c.module();
       },
       "kernel_shape must have 1 values, got 2 ([3, 3])"},
      {"4-d Conv weight",
       [&] {
         OpCase c("Conv", {"x", "W"});
         c.constant("W", random({4, 2, 3, 3, 3, 3}, 1));
         c.module();
       },
       "unsupported: 4-d Conv"},
      {"int64 weight",
       [&] {
         OpCase c("Conv", {"x", "W"});
         c.constant("W", zeros({4, 2, 3, 3}, DType::Int64));
         c.module();
       },
       "W has dtype int64"},
      {"one input",
       [&] {
         OpCase c("Conv", {"x"});
         c.module();
       },
       "expects 2 to 3 inputs, got 1"},
  });
}

TEST(OnnxConv, RunTimeErrors) {
  const Tensor w = random({4, 2, 3, 3}, 22);
  auto run_op = [&](Tensor x, Tensor weight, Tensor bias, std::int64_t group = 1) {
    return [=] {
      OpCase c("Conv", {"x", "W", "B"});
      c.integer("group", group);
      c.run({x, weight, bias});
    };
  };
  auto run_module = [&](Tensor x) {
    return [=] {
      OpCase c("Conv", {"x", "W"});
      c.constant("W", w);
      c.run({x});
    };
  };
  testing::expect_errors({
      {"F9 kernel larger than the padded input (op)",
       run_op(random({1, 2, 2, 8}, 1), w, random({4}, 2)),
       "output dim <= 0 (in 2, k 3, dilation 1, pads 0/0)"},
      {"F9 kernel larger than the padded input (module)", run_module(random({1, 2, 2, 8}, 1)),
       "conv2d"},
      {"F11 channels vs W", run_op(random({1, 3, 5, 5}, 1), w, random({4}, 2)),
       "X has 3 channels but W [4, 2, 3, 3] with group 1 expects 2"},
      {"F11 group vs M", run_op(random({1, 6, 5, 5}, 1), w, random({4}, 2), 3),
       "group (3) must divide W's output channels (4)"},
      {"F12 bias length", run_op(random({1, 2, 5, 5}, 1), w, random({3}, 2)),
       "bias must be 1-d of length 4"},
      {"4-d X", run_op(random({1, 2, 3, 3, 3, 3}, 1), random({4, 2, 3, 3, 3, 3}, 3), Tensor()),
       "unsupported: 4-d Conv"},
      {"1-d X, 2-d W", run_op(random({1, 2, 5}, 1), w, Tensor()),
       "Conv: X must be 4-d, got [1, 2, 5]"},
  });
}

// ---- ConvTranspose

TEST(OnnxConvTranspose, ConstantWeightsBecomeConvTranspose2d) {
  // F15: W is [C_in, M/group, kh, kw]; group 2 and a non-square stride [3, 2].
  const Tensor w = random({4, 3, 3, 2}, 30), b = random({6}, 31), x = random({1, 4, 3, 4}, 32);
  OpCase c("ConvTranspose", {"x", "W", "B"});
  c.constant("W", w).constant("B", b);
  c.integer("group", 2)
      .ints("strides", {3, 2})
      .ints("pads", {1, 0, 1, 0})
      .ints("output_padding", {2, 1});
  auto up = std::dynamic_pointer_cast<nn::ConvTranspose2d>(c.module());
  ASSERT_NE(up, nullptr);
  EXPECT_TRUE(up->weight().is_same(c.graph().constant("W")));
  const Tensor expected =
      reference::conv_transpose2d(x, w, b, {Size2d(3, 2), Size2d(1, 0), Size2d(2, 1), 2});
  EXPECT_EQ(expected.sizes(), (Shape{1, 6, 3 * 2 + 3 - 2 + 2, 2 * 3 + 2 + 1}));
  EXPECT_TRUE(c.close_in_both_layouts(x, expected));
}

TEST(OnnxConvTranspose, RuntimeWeightsBecomeAnOp) {
  const Tensor w = random({4, 3, 3, 2}, 33), b = random({6}, 34), x = random({1, 4, 3, 4}, 35);
  OpCase c("ConvTranspose", {"x", "W", "B"});
  c.integer("group", 2).ints("strides", {3, 2});
  ASSERT_NE(std::dynamic_pointer_cast<ops::ConvTranspose>(c.module()), nullptr);
  const Tensor expected = reference::conv_transpose2d(x, w, b, {Size2d(3, 2), 0, 0, 2});
  EXPECT_TRUE(testing::all_close(c.run({x, w, b}), expected, Tolerance::op_f32()));
  EXPECT_TRUE(
      testing::all_close(c.run({to_channels_last(x), w, b}), expected, Tolerance::op_f32()));
}

// The full (unpadded) output cropped by hand: rows [top, H − bottom), cols [left, W − right).
Tensor crop(const Tensor& full, const Pads2d& p) {
  const Tensor c = full.contiguous();
  const std::int64_t h = full.size(2) - p.top - p.bottom, w = full.size(3) - p.left - p.right;
  return c
      .as_strided({full.size(0), full.size(1), h, w}, c.strides(),
                  p.top * c.stride(2) + p.left * c.stride(3))
      .contiguous();
}

TEST(OnnxConvTranspose, AsymmetricPadsCropTheFullOutput) {
  const Tensor w = random({2, 3, 3, 3}, 36), b = random({3}, 37), x = random({1, 2, 4, 3}, 38);
  OpCase c("ConvTranspose", {"x", "W", "B"});
  c.constant("W", w).constant("B", b).ints("strides", {2, 2}).ints("pads", {0, 1, 2, 0});
  ASSERT_NE(std::dynamic_pointer_cast<ops::ConvTranspose>(c.module()), nullptr);
  const Tensor full = reference::conv_transpose2d(x, w, b, {2});
  const Tensor expected = crop(full, {0, 1, 2, 0});
  EXPECT_TRUE(c.close_in_both_layouts(x, expected));
}

// F14, the spec's example (test_convtranspose_output_shape): X = 0…8 [1, 1, 3, 3], W ones
// [1, 2, 3, 3], strides [3, 2], output_shape [10, 8]. The full output is [9, 7], so both axes
// gain one row/column of zeros at the end: total padding −1 → begin 0, end −1.
TEST(OnnxConvTranspose, OutputShapeMayExtendTheOutput) {
  const Tensor x = testing::iota({1, 1, 3, 3}), w = ones({1, 2, 3, 3});
  OpCase c("ConvTranspose", {"x", "W"});
  c.constant("W", w).ints("strides", {3, 2}).ints("output_shape", {10, 8});
  const Tensor y = c.run({x});
  ASSERT_EQ(y.sizes(), (Shape{1, 2, 10, 8}));
  const Tensor full = reference::conv_transpose2d(x, w, {}, {Size2d(3, 2)});
  for (std::int64_t ch = 0; ch < 2; ++ch)
    for (std::int64_t i = 0; i < 10; ++i)
      for (std::int64_t j = 0; j < 8; ++j) {
        const float expected = i < 9 && j < 7 ? full.at({0, ch, i, j}) : 0.0f;
        ASSERT_EQ(y.at({0, ch, i, j}), expected) << ch << " " << i << " " << j;
      }
  // The spec's first row: 0 0 1 1 3 2 2 0.
  EXPECT_EQ(y.at({0, 0, 0, 2}), 1.0f);
  EXPECT_EQ(y.at({0, 0, 0, 4}), 3.0f);
  EXPECT_EQ(y.at({0, 0, 0, 7}), 0.0f);
}

// SAME_UPPER / SAME_LOWER: output = in · stride; total = stride·(in − 1) + k − in·stride.
// in 3, k 4, stride 2: total = 4 + 4 − 6 = 2 → 1/1; k 3: total 1 → UPPER 0/1, LOWER 1/0.
TEST(OnnxConvTranspose, SamePadding) {
  const Tensor w = random({1, 1, 3, 4}, 39), x = random({1, 1, 3, 3}, 40);
  const Tensor full = reference::conv_transpose2d(x, w, {}, {2});  // [7, 8]
  for (const auto& [mode, pads] :
       {std::pair{"SAME_UPPER", Pads2d{0, 1, 1, 1}}, std::pair{"SAME_LOWER", Pads2d{1, 1, 0, 1}}}) {
    SCOPED_TRACE(mode);
    OpCase c("ConvTranspose", {"x", "W"});
    c.constant("W", w).ints("strides", {2, 2}).text("auto_pad", mode);
    const Tensor y = c.run({x});
    EXPECT_EQ(y.sizes(), (Shape{1, 1, 6, 6}));
    EXPECT_TRUE(testing::all_close(y, crop(full, pads), Tolerance::op_f32()));
  }
}

TEST(OnnxConvTranspose, Errors) {
  const Tensor w = random({4, 2, 3, 3}, 41);
  auto build = [&](auto configure) {
    return [=] {
      OpCase c("ConvTranspose", {"x", "W"});
      c.constant("W", w);
      configure(c);
      c.module();
    };
  };
  auto run_op = [&](Tensor x, auto configure) {
    return [=] {
      OpCase c("ConvTranspose", {"x", "W"});
      configure(c);
      c.run({x, w});
    };
  };
  testing::expect_errors({
      {"F13 output_padding = stride", build([](OpCase& c) {
         c.ints("strides", {2, 2}).ints("output_padding", {2, 0});
       }),
       "output_padding [2, 0] must be smaller than strides [2, 2]"},
      {"F13 negative output_padding", build([](OpCase& c) {
         c.ints("output_padding", {-1, 0});
       }),
       "output_padding must be non-negative"},
      {"output_padding length", build([](OpCase& c) {
         c.ints("output_padding", {0, 0, 0});
       }),
       "output_padding must have 2 values, got 3"},
      {"output_shape non-positive", build([](OpCase& c) {
         c.ints("output_shape", {0, 4});
       }),
       "output_shape must be positive"},
      {"F11 group vs C_in", build([](OpCase& c) { c.integer("group", 3); }),
       "group (3) must divide W's input channels (4"},
      {"F1 zero strides", build([](OpCase& c) {
         c.ints("strides", {0, 1});
       }),
       "strides must be positive"},
      {"F12 bias length",
       [&] {
         OpCase c("ConvTranspose", {"x", "W", "B"});
         c.constant("W", w).constant("B", random({4}, 1)).integer("group", 2);
         c.module();  // M = 2 · 2 = 4: fine
         OpCase d("ConvTranspose", {"x", "W", "B"});
         d.constant("W", w).constant("B", random({4}, 1));
         d.module();  // M = 2: the bias has 4
       },
       "bias B must be 1-d of length 2"},
      {"F14 output_shape too large",
       run_op(random({1, 4, 3, 3}, 1),
              [](OpCase& c) {
                c.ints("output_shape", {9, 5});
              }),
       "output_shape [9, 5] is inconsistent"},
      {"F15 channels vs W[0]", run_op(random({1, 2, 3, 3}, 1), [](OpCase&) {}),
       "X has 2 channels but W [4, 2, 3, 3] expects 4"},
  });
}

}  // namespace
}  // namespace refold
