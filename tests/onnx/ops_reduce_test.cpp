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

// ---- TopK (v1: k attribute; v10: K input; v11: largest) ----

TEST(OnnxTopK, SpecExampleLargestAndSmallest) {
  // X = iota [3, 4]; k = 3 along axis 1 (also the default −1).
  const Tensor x = iota({3, 4});
  OpCase c("TopK", {"x", "k"}, {"values", "indices"});
  c.opset(11).constant("k", i64({3})).integer("axis", 1);
  std::vector<Tensor> y = c.run_all({x});
  EXPECT_EQ(y[0].to_vector(), (std::vector<float>{3, 2, 1, 7, 6, 5, 11, 10, 9}));
  EXPECT_EQ(i64_values(y[1]), (std::vector<std::int64_t>{3, 2, 1, 3, 2, 1, 3, 2, 1}));
  OpCase smallest("TopK", {"x", "k"}, {"values", "indices"});
  smallest.opset(11).constant("k", i64({3})).integer("largest", 0);
  y = smallest.run_all({x});
  EXPECT_EQ(y[0].to_vector(), (std::vector<float>{0, 1, 2, 4, 5, 6, 8, 9, 10}));
  EXPECT_EQ(i64_values(y[1]), (std::vector<std::int64_t>{0, 1, 2, 0, 1, 2, 0, 1, 2}));
}

TEST(OnnxTopK, TiesNanOpsetsAndLayouts) {
  // Ties keep the lower index first; NaN is above every number.
  OpCase ties("TopK", {"x", "k"}, {"values", "indices"});
  std::vector<Tensor> y = ties.opset(11).run_all({values({1, 3, 3, 2}, {4}), i64({2})});
  EXPECT_EQ(y[0].to_vector(), (std::vector<float>{3, 3}));
  EXPECT_EQ(i64_values(y[1]), (std::vector<std::int64_t>{1, 2}));
  OpCase nan("TopK", {"x", "k"}, {"values", "indices"});
  y = nan.opset(11).run_all({values({1, NAN, 2}, {3}), i64({1})});
  EXPECT_TRUE(std::isnan(y[0].item()));
  EXPECT_EQ(i64_values(y[1]), (std::vector<std::int64_t>{1}));
  // Opset 1: k is an attribute; int64 data exactly.
  OpCase v1("TopK", {"x"}, {"values", "indices"});
  v1.opset(1).integer("k", 2);
  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  y = v1.run_all({i64({big, big - 1, -big})});
  EXPECT_EQ(i64_values(y[0]), (std::vector<std::int64_t>{big, big - 1}));
  // Only the values used; a channels_last input, axis 1, matches the NCHW result.
  const Tensor x = random({2, 5, 3, 2}, 11);
  OpCase cl("TopK", {"x", "k"}, {"values"});
  cl.opset(11).constant("k", i64({2})).integer("axis", 1);
  EXPECT_TRUE(all_close(cl.run({to_channels_last(x)}), cl.run({x}), Tolerance::exact()));
  EXPECT_EQ(cl.run({x}).sizes(), (Shape{2, 2, 3, 2}));
}

TEST(OnnxTopK, Errors) {
  expect_errors({
      {"k too large",
       [] {
         OpCase("TopK", {"x", "k"}, {"v", "i"}).opset(11).run_all({zeros({3}), i64({4})});
       },
       "top_k: k (4) must be in [0, 3] (the size of axis -1)"},
      {"negative constant K",
       [] {
         OpCase("TopK", {"x", "k"}, {"v", "i"}).opset(11).constant("k", i64({-1})).module();
       },
       "K must be non-negative (got -1)"},
      {"two K",
       [] {
         OpCase("TopK", {"x", "k"}, {"v", "i"}).opset(11).constant("k", i64({1, 2})).module();
       },
       "K must hold one value, got 2"},
      {"runtime K values",
       [] {
         OpCase("TopK", {"x", "k"}, {"v", "i"}).opset(11).run_all({zeros({3}), i64({1, 2})});
       },
       "TopK: K must hold one value, got 2"},
      {"negative k attribute",
       [] {
         OpCase("TopK", {"x"}, {"v", "i"}).opset(1).integer("k", -1).module();
       },
       "k must be non-negative (got -1)"},
      {"no k attribute",
       [] {
         OpCase("TopK", {"x"}, {"v", "i"}).opset(1).module();
       },
       "the k attribute is required"},
      {"largest",
       [] {
         OpCase("TopK", {"x", "k"}, {"v", "i"}).opset(11).integer("largest", 2).module();
       },
       "largest must be 0 or 1 (got 2)"},
      {"axis",
       [] {
         OpCase("TopK", {"x", "k"}, {"v", "i"})
             .opset(11)
             .integer("axis", 1)
             .run_all({zeros({3}), i64({1})});
       },
       "top_k: axis 1 out of range for a 1-d tensor"},
  });
}

// ---- CumSum ----

TEST(OnnxCumSum, ExclusiveReverseAxes) {
  const Tensor x = values({1, 2, 3, 4, 5}, {5});
  auto cum = [&](std::int64_t exclusive, std::int64_t reverse) {
    OpCase c("CumSum", {"x", "axis"});
    c.constant("axis", i64({0}, {})).integer("exclusive", exclusive).integer("reverse", reverse);
    return c.run({x}).to_vector();
  };
  EXPECT_EQ(cum(0, 0), (std::vector<float>{1, 3, 6, 10, 15}));
  EXPECT_EQ(cum(1, 0), (std::vector<float>{0, 1, 3, 6, 10}));
  EXPECT_EQ(cum(0, 1), (std::vector<float>{15, 14, 12, 9, 5}));
  EXPECT_EQ(cum(1, 1), (std::vector<float>{14, 12, 9, 5, 0}));
  // 2-d: axis 0 and −1 (a runtime axis); int64 exactly; channels_last keeps its layout.
  const Tensor m = values({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(OpCase("CumSum", {"x", "a"}).run({m, i64({0})}).to_vector(),
            (std::vector<float>{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(OpCase("CumSum", {"x", "a"}).run({m, i64({-1}, {})}).to_vector(),
            (std::vector<float>{1, 3, 6, 4, 9, 15}));
  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  EXPECT_EQ(i64_values(OpCase("CumSum", {"x", "a"}).run({i64({big, 1}), i64({0})})),
            (std::vector<std::int64_t>{big, big + 1}));
  const Tensor x4 = random({1, 3, 2, 2}, 12);
  OpCase cl("CumSum", {"x", "a"});
  cl.constant("a", i64({1}));
  const Tensor y = cl.run({to_channels_last(x4)});
  EXPECT_TRUE(is_channels_last(y));
  EXPECT_TRUE(all_close(y, cl.run({x4}), Tolerance::exact()));
}

TEST(OnnxCumSum, Errors) {
  expect_errors({
      {"axis values",
       [] {
         OpCase("CumSum", {"x", "a"}).constant("a", i64({0, 1})).module();
       },
       "axis must hold one value, got 2"},
      {"exclusive",
       [] {
         OpCase("CumSum", {"x", "a"}).integer("exclusive", 3).module();
       },
       "exclusive must be 0 or 1 (got 3)"},
      {"runtime axis values",
       [] {
         OpCase("CumSum", {"x", "a"}).run({zeros({2}), i64({0, 0})});
       },
       "CumSum: axis must hold one value, got 2"},
      {"axis range",
       [] {
         OpCase("CumSum", {"x", "a"}).run({zeros({2}), i64({1})});
       },
       "cum_sum: axis 1 out of range for a 1-d tensor"},
  });
}

}  // namespace
}  // namespace refold::testing
