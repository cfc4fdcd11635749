// native::reduce (src/kernels/native/reduce.cpp) against reference::reduce: Sum, Mean, Max, Min,
// L1, L2, SumSquare (and LogSum of positive data) over every subset of the axes of tensors of rank
// 1 to 5 (size-1 dims, lengths off the vector width, batches), with positive and negative axes,
// keepdims 0 and 1, contiguous, channels_last and a dense permutation; which of them it must take;
// NaN; its declines; and that Reduce* nodes run it.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "kernels/native/cpu.h"
#include "kernels/native/reduce.h"
#include "kernels/reference/onnx_ops.h"
#include "kernels/verbose.h"
#include "onnx/ops_tensor_helpers.h"
#include "refold/error.h"
#include "refold/threads.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/layouts.h"

namespace refold::testing {
namespace {

using reference::ReduceOp;

class NativeReduce : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!native::cpu_has_avx2_fma()) GTEST_SKIP() << "needs AVX2 and FMA";
  }
};

// True when the dims of size > 1, in memory order, are kept, then reduced, then kept: the
// forms native::reduce promises to take.
bool one_reduced_block(const Tensor& x, const std::vector<bool>& reduced) {
  Shape order;
  for (std::int64_t d = 0; d < x.dim(); ++d)
    if (x.size(d) > 1) order.push_back(d);
  std::sort(order.begin(), order.end(),
            [&](std::int64_t a, std::int64_t b) { return x.stride(a) > x.stride(b); });
  int phase = 0;
  for (const std::int64_t d : order) {
    const bool r = reduced[static_cast<std::size_t>(d)];
    if (phase == 0 && r) phase = 1;
    if (phase == 1 && !r) phase = 2;
    if (phase == 2 && r) return false;
  }
  return true;
}

// Contiguous, and for 4-d also channels_last and a dense permutation (N, W, C, H in memory).
std::vector<LayoutVariant> reduce_layouts(const Tensor& x) {
  if (x.dim() != 4) return {{"contiguous", x, MemoryFormat::Contiguous}};
  return {{"contiguous", x, MemoryFormat::Contiguous},
          {"channels_last", laid_out(x, MemoryFormat::ChannelsLast), MemoryFormat::ChannelsLast},
          {"permuted", with_storage_order(x, {0, 3, 1, 2}), MemoryFormat::Contiguous}};
}

TEST_F(NativeReduce, EveryAxisSetMatchesTheReference) {
  const std::vector<Shape> shapes = {{37},         {3, 17},        {2, 3, 5, 7},  {1, 9, 1, 13},
                                     {4, 1, 6, 1}, {2, 19, 3, 70}, {1, 96, 7, 7}, {2, 3, 4, 5, 2}};
  Generator gen(5);
  int taken = 0;
  for (const Shape& sizes : shapes) {
    const Tensor x = uniform(sizes, 4.0, gen);
    const auto rank = static_cast<std::int64_t>(sizes.size());
    const std::vector<LayoutVariant> inputs = reduce_layouts(x);
    for (std::int64_t mask = 0; mask < (std::int64_t{1} << rank); ++mask) {
      std::vector<std::int64_t> axes;
      std::vector<bool> reduced(static_cast<std::size_t>(rank), false);
      for (std::int64_t d = 0; d < rank; ++d) {
        if ((mask >> d & 1) == 0) continue;
        reduced[static_cast<std::size_t>(d)] = true;
        axes.push_back(mask % 3 == 0 ? d - rank : d);  // negative axes for every third set
      }
      for (const auto& [layout, input, suggests] : inputs) {
        for (const ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min,
                                  ReduceOp::L1, ReduceOp::L2, ReduceOp::SumSquare}) {
          for (const bool keepdims : {true, false}) {
            SCOPED_TRACE(fmt::format("{} [{}] {} axes [{}] keepdims {}", reference::reduce_name(op),
                                     fmt::join(sizes, ", "), layout, fmt::join(axes, ", "),
                                     keepdims));
            std::string declined;
            const Tensor y = native::reduce(input, axes, keepdims, op, &declined);
            if (one_reduced_block(input, reduced)) {
              ASSERT_TRUE(y.defined()) << declined;
            } else {
              EXPECT_FALSE(y.defined());
              EXPECT_FALSE(declined.empty());
              continue;
            }
            ++taken;
            const Tensor expected = reference::reduce(input, axes, keepdims, op);
            const bool exact = op == ReduceOp::Max || op == ReduceOp::Min;
            EXPECT_TRUE(all_close(y, expected, exact ? Tolerance::exact() : Tolerance::op_f32()));
            EXPECT_TRUE(y.is_contiguous());
          }
        }
      }
    }
  }
  EXPECT_GT(taken, 1000);
}

// Tensors past kernels/native/row_threads.h's threshold run on 2 threads (rows, or chunks of
// columns): every form the kernel takes, against the reference.
TEST_F(NativeReduce, LargeTensorsOnTwoThreads) {
  const ThreadCountScope scope(2);
  Generator gen(41);
  const Tensor x = uniform({3, 40, 30, 23}, 1.0, gen);
  const std::vector<std::vector<std::int64_t>> axes_sets = {{3}, {2, 3}, {0}, {0, 1}, {1, 2}};
  for (const auto& [layout, input, suggests] : reduce_layouts(x)) {
    for (const std::vector<std::int64_t>& axes : axes_sets) {
      for (const ReduceOp op : {ReduceOp::Mean, ReduceOp::Max, ReduceOp::L2}) {
        std::string declined;
        const Tensor y = native::reduce(input, axes, true, op, &declined);
        if (!y.defined()) continue;  // a form this layout does not take (tested above)
        EXPECT_TRUE(all_close(y, reference::reduce(input, axes, true, op), Tolerance::op_f32()))
            << layout << " axes " << fmt::format("{}", fmt::join(axes, ", "));
      }
    }
  }
}

// LogSum is the log of the sum: positive data, rows and columns.
TEST_F(NativeReduce, LogSumOfPositiveData) {
  std::vector<float> v(4 * 19 * 10);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.5f + static_cast<float>(i % 37) / 16.0f;
  const Tensor x = values(v, {4, 19, 10});
  for (const std::vector<std::int64_t>& axes : {std::vector<std::int64_t>{2}, {1}, {0, 1}}) {
    const Tensor y = native::reduce(x, axes, false, ReduceOp::LogSum, nullptr);
    ASSERT_TRUE(y.defined());
    EXPECT_TRUE(
        all_close(y, reference::reduce(x, axes, false, ReduceOp::LogSum), Tolerance::op_f32()));
  }
}

TEST_F(NativeReduce, NanWinsInMaxAndMin) {
  for (const std::int64_t at : {0, 5, 17}) {  // in a vector's lanes, and in the scalar tail
    Tensor x = iota({2, 18});
    x.set({1, at}, NAN);
    for (const ReduceOp op : {ReduceOp::Max, ReduceOp::Min}) {
      for (const std::vector<std::int64_t>& axes :
           {std::vector<std::int64_t>{1}, std::vector<std::int64_t>{0}}) {
        const Tensor y = native::reduce(x, axes, true, op, nullptr);
        EXPECT_TRUE(all_close(y, reference::reduce(x, axes, true, op), Tolerance::exact()))
            << reference::reduce_name(op) << " NaN at " << at;
      }
    }
  }
}

TEST_F(NativeReduce, DeclinesWhatItDoesNotTake) {
  Generator gen(7);
  const Tensor x = uniform({2, 3, 4, 5}, 1.0, gen);
  const auto reason = [](const Tensor& input, std::vector<std::int64_t> axes, ReduceOp op) {
    std::string declined;
    EXPECT_FALSE(native::reduce(input, axes, true, op, &declined).defined());
    return declined;
  };
  EXPECT_EQ(reason(x, {1}, ReduceOp::Prod), "Prod and LogSumExp have no native kernel");
  EXPECT_EQ(reason(x, {1}, ReduceOp::LogSumExp), "Prod and LogSumExp have no native kernel");
  EXPECT_EQ(reason(x.to(DType::BFloat16), {1}, ReduceOp::Sum), "X is not float32");
  EXPECT_EQ(reason(every_other_element(x), {1}, ReduceOp::Sum), "X is not dense (a strided view)");
  EXPECT_EQ(reason(x, {1, 3}, ReduceOp::Sum), "the reduced axes are not one block in memory");
  EXPECT_EQ(reason(x, {4}, ReduceOp::Sum), "an axis is out of range");
  EXPECT_EQ(reason(x, {1, -3}, ReduceOp::Sum), "an axis is given twice");
  EXPECT_THROW(native::reduce(x, {1, 3}, true, ReduceOp::Sum, nullptr), Error);
}

// Reduce* nodes dispatch to it: an NHWC spatial sum, a channel mean, a row max, an NHWC sum over
// W (MobileViTv2's attention: kept N, H, C in memory, N, C, H in the output) and the
// GlobalMaxPool that is a ReduceMax.
TEST_F(NativeReduce, NodesRunIt) {
  Generator gen(9);
  const Tensor x = uniform({2, 12, 5, 6}, 1.0, gen);
  OpCase sum("ReduceSum", {"x", "axes"});
  sum.opset(13).constant("axes", i64({2, 3}));
  OpCase mean("ReduceMean", {"x"});
  mean.opset(13).ints("axes", {1}).integer("keepdims", 0);
  OpCase max("ReduceMax", {"x"});
  max.opset(13).ints("axes", {-1});
  OpCase last("ReduceSum", {"x", "axes"});
  last.opset(13).constant("axes", i64({-1}));
  OpCase global("GlobalMaxPool", {"x"});
  for (const auto& [name, c, input] :
       {std::tuple{"ReduceSum", &sum, to_channels_last(x)}, std::tuple{"ReduceMean", &mean, x},
        std::tuple{"ReduceMax", &max, x}, std::tuple{"ReduceSum", &last, to_channels_last(x)},
        std::tuple{"GlobalMaxPool", &global, to_channels_last(x)}}) {
    DispatchLog log;
    const Tensor y = c->run({input});
    EXPECT_EQ(log.take(), (std::vector<std::string>{std::string(name) + ": native"}));
    EXPECT_TRUE(all_close(y, c->run({input.contiguous()}), Tolerance::op_f32())) << name;
  }
}

}  // namespace
}  // namespace refold::testing
