// MaxPool and AveragePool over 1-d and 3-d windows and MaxPool's Indices output
// (src/ops/pool.cpp, reference::pool): worked examples, 3-d against the 2-d path on a unit
// depth, storage_order, channels_last, and the error messages. The ONNX backend tests
// test_maxpool_*, test_averagepool_*, test_MaxPool1d/3d*, test_AvgPool3d* run in conformance.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernels/reference/onnx_ops.h"
#include "kernels/verbose.h"
#include "onnx/ops_tensor_helpers.h"
#include "ops/pool.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"

namespace refold::testing {
namespace pool_ops {

using F32s = std::vector<float>;
using I64s = std::vector<std::int64_t>;

TEST(OnnxPoolNd, OneDimensionalWindows) {
  const Tensor x = values({1, 3, 2, 5, 4}, {1, 1, 5});
  OpCase max("MaxPool", {"x"});
  max.ints("kernel_shape", {2});
  EXPECT_EQ(max.run({x}).to_vector(), (F32s{3, 3, 5, 5}));
  // Windows [-1, 1], [0, 2], …, [3, 5] counting only positions inside the input.
  OpCase avg("AveragePool", {"x"});
  avg.ints("kernel_shape", {3}).ints("pads", {1, 1});
  EXPECT_TRUE(all_close(avg.run({x}), values({2, 2, 10.0f / 3, 11.0f / 3, 4.5f}, {1, 1, 5}),
                        Tolerance::op_f32()));
  // strides, dilations and SAME_UPPER read for one axis.
  OpCase same("MaxPool", {"x"});
  same.ints("kernel_shape", {2}).ints("strides", {2}).text("auto_pad", "SAME_UPPER");
  EXPECT_EQ(same.run({x}).to_vector(), (F32s{3, 5, 4}));
  OpCase dilated("MaxPool", {"x"});
  dilated.ints("kernel_shape", {2}).ints("dilations", {2});
  EXPECT_EQ(dilated.run({x}).to_vector(), (F32s{2, 5, 4}));
}

// A 1-d pool runs as the 2-d one over [N, C, 1, L]: PyTorch's pools (oneDNN), not the reference
// loops, for contiguous input and for tokens transposed to [N, C, L] (NextViT's AvgPool1d over
// x.transpose(1, 2)); the numbers are the reference's. Asymmetric pads stay on the reference.
TEST(OnnxPoolNd, OneDimensionalWindowsRunThePoolsFastPath) {
  const Tensor contiguous = random({2, 24, 49}, 3);
  const Tensor transposed = random({2, 49, 24}, 4).permute({0, 2, 1});
  for (const Tensor& x : {contiguous, transposed}) {
    for (const bool max : {true, false}) {
      OpCase c(max ? "MaxPool" : "AveragePool", {"x"});
      c.ints("kernel_shape", {3}).ints("strides", {2}).ints("pads", {1, 1});
      reference::PoolParams p{max, {3}, {2}, {1}, {1}, {1}, false, false};
      DispatchLog log;
      const Tensor y = c.run({x});
      EXPECT_THAT(log.take(), ::testing::Contains(::testing::HasSubstr("onednn"))) << max;
      EXPECT_EQ(y.sizes(), (Shape{2, 24, 25}));
      EXPECT_TRUE(all_close(y, reference::pool(x, p), Tolerance::op_f32())) << max;
    }
  }
  OpCase asymmetric("AveragePool", {"x"});
  asymmetric.ints("kernel_shape", {2}).ints("pads", {0, 1});
  reference::PoolParams p{false, {2}, {1}, {1}, {0}, {1}, false, false};
  DispatchLog log;
  EXPECT_TRUE(
      all_close(asymmetric.run({contiguous}), reference::pool(contiguous, p), Tolerance::exact()));
  EXPECT_THAT(log.take(), ::testing::Not(::testing::Contains(::testing::HasSubstr("onednn"))));
}

TEST(OnnxPoolNd, ThreeDimensionalWindowsOfUnitDepthMatchTheTwoDimensionalPath) {
  const Tensor x = random({2, 3, 6, 7}, 1);
  const Tensor x5 = x.reshape({2, 3, 1, 6, 7});
  for (const char* op : {"MaxPool", "AveragePool"}) {
    OpCase two(op, {"x"});
    two.ints("kernel_shape", {3, 2}).ints("strides", {2, 1}).ints("pads", {1, 0, 1, 1});
    OpCase three(op, {"x"});
    three.ints("kernel_shape", {1, 3, 2})
        .ints("strides", {1, 2, 1})
        .ints("pads", {0, 1, 0, 0, 1, 1});
    const Tensor expected = two.run({x});
    const Tensor y = three.run({x5});
    EXPECT_EQ(y.sizes(), (Shape{2, 3, 1, expected.size(2), expected.size(3)})) << op;
    EXPECT_TRUE(all_close(y.reshape(expected.sizes()), expected, Tolerance::op_f32())) << op;
  }
  // A real 3-d window: the max of a 2×2×2 cube of iota is its last corner.
  OpCase cube("MaxPool", {"x"});
  cube.ints("kernel_shape", {2, 2, 2});
  const Tensor y = cube.run({iota({1, 1, 2, 2, 3})});
  EXPECT_EQ(y.to_vector(), (F32s{10, 11}));
}

TEST(OnnxPoolNd, MaxPoolIndices) {
  // [[1, 4], [3, 2]] and [[5, 1], [1, 1]] (batch 2): the maxima sit at flat 1 and 4 + 0.
  const Tensor x = values({1, 4, 3, 2, 5, 1, 1, 1}, {2, 1, 2, 2});
  OpCase c("MaxPool", {"x"}, {"y", "z"});
  c.ints("kernel_shape", {2, 2});
  EXPECT_NE(std::dynamic_pointer_cast<ops::Pool>(c.module()), nullptr);
  std::vector<Tensor> out = c.run_all({x});
  EXPECT_EQ(out[0].to_vector(), (F32s{4, 5}));
  EXPECT_EQ(i64_values(out[1]), (I64s{1, 4}));
  // storage_order 1: the spatial position counted column-major, (0, 1) → 0 + 1·2.
  OpCase col("MaxPool", {"x"}, {"y", "z"});
  col.ints("kernel_shape", {2, 2}).integer("storage_order", 1);
  EXPECT_EQ(i64_values(col.run_all({x})[1]), (I64s{2, 4}));
  // Padding does not shift the indices; ties keep the first; channels_last gives the same.
  const Tensor t = values({2, 2, 2, 2}, {1, 1, 2, 2});
  OpCase padded("MaxPool", {"x"}, {"y", "z"});
  padded.ints("kernel_shape", {2, 2}).ints("pads", {1, 1, 0, 0});
  EXPECT_EQ(i64_values(padded.run_all({t})[1]), (I64s{0, 0, 0, 0}));
  const Tensor r = random({1, 3, 5, 4}, 2);
  OpCase cl("MaxPool", {"x"}, {"y", "z"});
  cl.ints("kernel_shape", {3, 2}).ints("strides", {2, 1});
  const std::vector<Tensor> a = cl.run_all({r}), b = cl.run_all({to_channels_last(r)});
  EXPECT_TRUE(all_close(a[0], b[0], Tolerance::exact()));
  EXPECT_EQ(i64_values(a[1]), i64_values(b[1]));
  // 1-d indices.
  OpCase one("MaxPool", {"x"}, {"y", "z"});
  one.ints("kernel_shape", {2});
  EXPECT_EQ(i64_values(one.run_all({values({1, 3, 2, 5, 4}, {1, 1, 5})})[1]), (I64s{1, 1, 3, 3}));
}

TEST(OnnxPoolNd, Errors) {
  expect_errors({
      {"storage_order",
       [] {
         OpCase("MaxPool", {"x"}).ints("kernel_shape", {2, 2}).integer("storage_order", 2).module();
       },
       "storage_order must be 0 or 1 (got 2)"},
      {"no kernel_shape", [] { OpCase("MaxPool", {"x"}).module(); }, "kernel_shape is required"},
      {"strides length",
       [] {
         OpCase("MaxPool", {"x"}).ints("kernel_shape", {2, 2, 2}).ints("strides", {1, 1}).module();
       },
       "strides must have 3 values, got 2 ([1, 1])"},
      {"rank",
       [] {
         OpCase("MaxPool", {"x"}).ints("kernel_shape", {2}).run({zeros({1, 1, 4, 4})});
       },
       "MaxPool: X must be 3-d [N, C, 1 spatial] for kernel_shape [2], got [1, 1, 4, 4]"},
      {"average indices",
       [] {
         OpCase("AveragePool", {"x"}, {"y", "z"}).ints("kernel_shape", {2}).module();
       },
       "unsupported: output 1 ('z') is not implemented"},
      {"kernel too large",
       [] {
         OpCase("AveragePool", {"x"}).ints("kernel_shape", {3, 1, 1}).run({zeros({1, 1, 2, 2, 2})});
       },
       "output dim <= 0 (in 2, kernel 3, dilation 1, pads 0/0)"},
  });
}

}  // namespace pool_ops
}  // namespace refold::testing
