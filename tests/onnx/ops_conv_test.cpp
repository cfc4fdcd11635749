// 1-d Conv and ConvTranspose (src/ops/conv.cpp: attributes lifted to 2-d over [N, C, 1, L]):
// against the 2-d op on a unit height, constant and runtime weights, pads, strides, dilations,
// groups, auto_pad and output_padding / output_shape read for one axis; 4 spatial axes are
// refused (3-d: ops_conv3d_test.cpp). The ONNX backend tests test_Conv1d* and
// test_convtranspose_1d run in conformance.
#include <gtest/gtest.h>

#include "onnx/ops_tensor_helpers.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"

namespace refold::testing {
namespace conv_ops {

Tensor unit_height(const Tensor& t) { return t.reshape({t.size(0), t.size(1), 1, t.size(2)}); }

// Runs the 1-d node `one` on (x, w, b) and the 2-d node `two` on their unit-height forms, with
// W and B as constants or as runtime inputs.
::testing::AssertionResult same_as_2d(OpCase one, OpCase two, const Tensor& x, const Tensor& w,
                                      const Tensor& b, bool constant_w) {
  Tensor y, expected;
  if (constant_w) {
    one.constant("w", w).constant("b", b);
    two.constant("w", unit_height(w)).constant("b", b);
    y = one.run({x});
    expected = two.run({unit_height(x)});
  } else {
    y = one.run({x, w, b});
    expected = two.run({unit_height(x), unit_height(w), b});
  }
  if (y.dim() != 3) return ::testing::AssertionFailure() << "1-d result is " << y.dim() << "-d";
  return all_close(y, expected.reshape(y.sizes()), Tolerance::op_f32());
}

TEST(OnnxConv1d, MatchesTheTwoDimensionalConvOfUnitHeight) {
  const Tensor x = random({2, 4, 9}, 1), w = random({6, 2, 3}, 2), b = random({6}, 3);
  for (const bool constant_w : {true, false}) {
    OpCase one("Conv", {"x", "w", "b"});
    one.ints("kernel_shape", {3}).ints("pads", {2, 1}).ints("strides", {2});
    one.ints("dilations", {2}).integer("group", 2);
    OpCase two("Conv", {"x", "w", "b"});
    two.ints("kernel_shape", {1, 3}).ints("pads", {0, 2, 0, 1}).ints("strides", {1, 2});
    two.ints("dilations", {1, 2}).integer("group", 2);
    EXPECT_TRUE(same_as_2d(one, two, x, w, b, constant_w)) << constant_w;
    // auto_pad SAME_UPPER with stride 2; and no attribute at all (the rank comes from X and W).
    OpCase same("Conv", {"x", "w", "b"});
    same.ints("strides", {2}).text("auto_pad", "SAME_UPPER").integer("group", 2);
    OpCase same2("Conv", {"x", "w", "b"});
    same2.ints("strides", {1, 2}).text("auto_pad", "SAME_UPPER").integer("group", 2);
    EXPECT_TRUE(same_as_2d(same, same2, x, w, b, constant_w)) << constant_w;
  }
  OpCase bare("Conv", {"x", "w", "b"});
  OpCase bare2("Conv", {"x", "w", "b"});
  const Tensor w1 = random({3, 4, 2}, 4), b1 = random({3}, 5);
  EXPECT_TRUE(same_as_2d(bare, bare2, x, w1, b1, false));
}

TEST(OnnxConvTranspose1d, MatchesTheTwoDimensionalOpOfUnitHeight) {
  // W [C, M/group, k] = [2, 3, 3].
  const Tensor x = random({1, 2, 5}, 6), w = random({2, 3, 3}, 7), b = random({3}, 8);
  for (const bool constant_w : {true, false}) {
    OpCase one("ConvTranspose", {"x", "w", "b"});
    one.ints("strides", {2}).ints("pads", {1, 0}).ints("output_padding", {1});
    OpCase two("ConvTranspose", {"x", "w", "b"});
    two.ints("strides", {1, 2}).ints("pads", {0, 1, 0, 0}).ints("output_padding", {0, 1});
    EXPECT_TRUE(same_as_2d(one, two, x, w, b, constant_w)) << constant_w;
    OpCase shape("ConvTranspose", {"x", "w", "b"});
    shape.ints("strides", {2}).ints("output_shape", {10});
    OpCase shape2("ConvTranspose", {"x", "w", "b"});
    shape2.ints("strides", {1, 2}).ints("output_shape", {1, 10});
    EXPECT_TRUE(same_as_2d(shape, shape2, x, w, b, constant_w)) << constant_w;
  }
}

TEST(OnnxConv1d, Errors) {
  expect_errors({
      {"4-d kernel",
       [] {
         OpCase("Conv", {"x", "w"}).ints("kernel_shape", {3, 3, 3, 3}).module();
       },
       "unsupported: 4-d Conv (refold runs 1-d, 2-d and 3-d Conv)"},
      {"1-d pads length",
       [] {
         OpCase("Conv", {"x", "w"}).ints("kernel_shape", {3}).ints("pads", {1, 1, 1, 1}).module();
       },
       "pads must have 2 values, got 4 ([1, 1, 1, 1])"},
      {"4-d X at run time",
       [] {
         OpCase("Conv", {"x", "w"}).run({zeros({1, 2, 3, 3, 3, 3}), zeros({1, 2, 1, 1, 1, 1})});
       },
       "unsupported: 4-d Conv (X is 6-d"},
      {"1-d X, 2-d W",
       [] {
         OpCase("Conv", {"x", "w"}).run({zeros({1, 2, 5}), zeros({1, 2, 1, 1})});
       },
       "Conv: X must be 4-d, got [1, 2, 5]"},
  });
}

}  // namespace conv_ops
}  // namespace refold::testing
