// ReduceMean built from ONNX nodes and run: attribute axes (opset < 18) and input axes (18+),
// keepdims, noop_with_empty_axes, negative axes, channels_last inputs, the global-pool fast path
// against the reference kernel, bfloat16, and every error message. Expected values are worked
// out in the comments; the ONNX backend tests test_reduce_mean_* run in conformance.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/reference/onnx_ops.h"
#include "onnx/ops_tensor_helpers.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"

namespace refold::testing {
namespace {

// x = iota [2, 3, 2]: x[n, c, w] = 6n + 2c + w.
TEST(OnnxReduceMean, AttributeAxesKeepOrDropTheReducedAxes) {
  const Tensor x = iota({2, 3, 2});
  OpCase kept("ReduceMean", {"x"});
  kept.opset(13).ints("axes", {1});
  // mean over c of 6n + 2c + w = 6n + 2 + w.
  EXPECT_TRUE(all_close(kept.run({x}), values({2, 3, 8, 9}, {2, 1, 2}), Tolerance::exact()));
  OpCase dropped("ReduceMean", {"x"});
  dropped.opset(13).ints("axes", {-1, 0}).integer("keepdims", 0);
  // mean over n and w of 6n + 2c + w = 3 + 2c + 0.5.
  EXPECT_TRUE(all_close(dropped.run({x}), values({3.5f, 5.5f, 7.5f}, {3}), Tolerance::exact()));
}

TEST(OnnxReduceMean, NoAxesMeansEveryAxis) {
  const Tensor x = iota({2, 3, 2});  // 0 … 11, mean 5.5
  OpCase attribute("ReduceMean", {"x"});
  attribute.opset(13);
  EXPECT_TRUE(all_close(attribute.run({x}), values({5.5f}, {1, 1, 1}), Tolerance::exact()));
  OpCase input("ReduceMean", {"x"});
  input.opset(18).integer("keepdims", 0);
  const Tensor y = input.run({x});
  EXPECT_EQ(y.dim(), 0);
  EXPECT_FLOAT_EQ(y.item(), 5.5f);
}

TEST(OnnxReduceMean, AxesAsAnInputFromOpset18) {
  const Tensor x = iota({2, 3, 2});
  OpCase constant("ReduceMean", {"x", "axes"});
  constant.opset(18).constant("axes", i64({2}));
  // mean over w of 6n + 2c + w = 6n + 2c + 0.5.
  const Tensor expected = values({0.5f, 2.5f, 4.5f, 6.5f, 8.5f, 10.5f}, {2, 3, 1});
  EXPECT_TRUE(all_close(constant.run({x}), expected, Tolerance::exact()));
  OpCase runtime("ReduceMean", {"x", "axes"});
  runtime.opset(18);
  EXPECT_TRUE(all_close(runtime.run({x, i64({-1})}), expected, Tolerance::exact()));
  // Empty axes with noop_with_empty_axes = 1: the input unchanged.
  OpCase noop("ReduceMean", {"x", "axes"});
  noop.opset(18).integer("noop_with_empty_axes", 1);
  EXPECT_TRUE(all_close(noop.run({x, i64({})}), x, Tolerance::exact()));
}

// The global-pool path (H and W of a 4-d input, kept) and the reference kernel agree, in both
// layouts and for every other axis set.
TEST(OnnxReduceMean, SpatialMeanMatchesTheReferenceInBothLayouts) {
  Generator gen(5);
  const Tensor x = uniform({2, 5, 7, 6}, 3.0, gen);
  for (const std::vector<std::int64_t>& axes :
       std::vector<std::vector<std::int64_t>>{{2, 3}, {-1, -2}, {1}, {1, 2, 3}, {0, 3}}) {
    OpCase c("ReduceMean", {"x"});
    c.opset(13).ints("axes", axes);
    const Tensor expected = reference::reduce(x, axes, true, reference::ReduceOp::Mean);
    EXPECT_TRUE(all_close(c.run({x}), expected, Tolerance::op_f32()));
    EXPECT_TRUE(all_close(c.run({to_channels_last(x)}), expected, Tolerance::op_f32()));
  }
}

TEST(OnnxReduceMean, ReferenceKernelRoundsOnceAndHandlesEmptyAxes) {
  // bfloat16: the mean of [1, 2, 4] is 7/3 = 2.333…, bfloat16 2.328125 (nearest).
  const Tensor x = values({1, 2, 4}, {3}).to(DType::BFloat16);
  EXPECT_FLOAT_EQ(reference::reduce(x, {0}, false, reference::ReduceOp::Mean).item(), 2.328125f);
  // The mean over an empty axis is NaN.
  EXPECT_TRUE(
      std::isnan(reference::reduce(zeros({2, 0}), {1}, false, reference::ReduceOp::Mean).at({1})));
}

TEST(OnnxReduceMean, Errors) {
  expect_errors({
      {"keepdims", [&] { OpCase("ReduceMean", {"x"}).integer("keepdims", 2).module(); },
       "keepdims must be 0 or 1 (got 2)"},
      {"repeated attribute axis",
       [&] {
         OpCase("ReduceMean", {"x"}).opset(13).ints("axes", {1, 1}).module();
       },
       "axes lists axis 1 twice"},
      {"repeated constant axis",
       [&] {
         OpCase("ReduceMean", {"x", "axes"}).opset(18).constant("axes", i64({0, 0})).module();
       },
       "axes lists axis 0 twice"},
      {"attribute at opset 18",
       [&] { OpCase("ReduceMean", {"x"}).opset(18).ints("axes", {1}).module(); },
       "axes is an input from opset 18 on, not an attribute"},
      {"axes input before opset 18",
       [&] {
         OpCase("ReduceMean", {"x", "axes"}).opset(13).module();
       },
       "expects 1 to 1 inputs, got 2"},
      {"axis out of range",
       [&] {
         OpCase("ReduceMean", {"x"}).opset(13).ints("axes", {3}).run({zeros({2, 3})});
       },
       "ReduceMean: axis 3 out of range for a 2-d tensor"},
      {"runtime repeated axis",
       [&] {
         OpCase("ReduceMean", {"x", "axes"}).opset(18).run({zeros({2, 3}), i64({1, -1})});
       },
       "ReduceMean: axis -1 is given twice"},
      {"int64 input",
       [&] {
         reference::reduce(i64({1, 2}), {0}, true, reference::ReduceOp::Mean);
       },
       "ReduceMean: input has dtype int64; expected float32 or bfloat16"},
  });
}

}  // namespace
}  // namespace refold::testing
