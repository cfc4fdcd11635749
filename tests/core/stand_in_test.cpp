// core/stand_in.h: while a StandInRun lives, a conv, a linear or a batched MatMul gives its
// output's shape, type and format without computing it and every other dispatched op runs
// refold's own kernels or its reference, so the optimizer's static shape inference builds no
// oneDNN primitive and packs no weight.
#include "core/stand_in.h"

#include <gtest/gtest.h>

#include "kernels/onednn/batch_norm.h"
#include "kernels/onednn/binary.h"
#include "kernels/onednn/conv2d.h"
#include "kernels/onednn/eltwise.h"
#include "kernels/onednn/linear.h"
#include "kernels/onednn/matmul.h"
#include "kernels/onednn/pooling.h"
#include "kernels/onednn/reorder.h"
#include "kernels/verbose.h"
#include "ops/gemm.h"
#include "passes/known_values.h"
#include "refold/functional.h"
#include "refold/reference.h"
#include "testing/compare.h"
#include "testing/graph_builder.h"

namespace refold {
namespace {

TEST(StandInRun, AConvGivesItsOutputWithoutDispatching) {
  const Tensor x = randn({1, 8, 9, 11}).contiguous(MemoryFormat::ChannelsLast);
  const Tensor w = randn({16, 8, 3, 3});
  Conv2dOptions options;
  options.stride = 2;
  options.padding = 1;
  const std::uint64_t before = dispatch_count();
  Tensor y;
  {
    const StandInRun stand_in;
    EXPECT_TRUE(StandInRun::active());
    y = functional::conv2d(x, w, Tensor(), options);
    // An invalid conv still fails as it would run: the call is validated first.
    EXPECT_THROW(functional::conv2d(x, randn({16, 4, 3, 3}), Tensor(), options), Error);
  }
  EXPECT_FALSE(StandInRun::active());
  EXPECT_EQ(dispatch_count(), before);  // no implementation was chosen
  EXPECT_EQ(y.sizes(), (Shape{1, 16, 5, 6}));
  EXPECT_TRUE(y.is_contiguous(MemoryFormat::ChannelsLast));
  // Outside the scope the same call computes.
  EXPECT_TRUE(testing::all_close(functional::conv2d(x, w, Tensor(), options),
                                 reference::conv2d(x, w, Tensor(), options),
                                 testing::Tolerance::op_f32()));
}

// A linear too: its reference is a double-precision loop that took 64 s of Swin-T's load.
TEST(StandInRun, ALinearGivesItsOutputWithoutComputingIt) {
  const Tensor x = randn({2, 49, 96}), w = randn({288, 96}), bias = randn({288});
  const std::uint64_t before = dispatch_count();
  Tensor y;
  {
    const StandInRun stand_in;
    y = functional::linear(x, w, bias);
    EXPECT_THROW(functional::linear(x, randn({288, 95}), bias), Error);
  }
  EXPECT_EQ(dispatch_count(), before);
  EXPECT_EQ(y.sizes(), (Shape{2, 49, 288}));
  EXPECT_EQ(y.to_vector(), std::vector<float>(2 * 49 * 288, 0.0f));  // not even the bias
  EXPECT_TRUE(testing::all_close(functional::linear(x, w, bias), reference::linear(x, w, bias),
                                 testing::Tolerance::op_f32()));
}

// Every oneDNN primitive built so far, by every op's cache (a decline counts too: it is a try).
std::uint64_t onednn_primitives_built() {
  std::uint64_t built = onednn::cache_stats().primitive_misses;
  for (const onednn::PrimitiveStats& s :
       {onednn::batch_norm_stats(), onednn::binary_stats(), onednn::eltwise_stats(),
        onednn::linear_stats(), onednn::matmul_stats(), onednn::pooling_stats(),
        onednn::reorder_stats()})
    built += s.primitive_misses;
  return built;
}

TEST(StandInRun, OtherOpsRunRefoldsKernelsNeverOneDnns) {
  const Tensor a = randn({2, 8, 6, 5}).contiguous(MemoryFormat::ChannelsLast);
  const Tensor b = randn({2, 8, 6, 5}).contiguous(MemoryFormat::ChannelsLast);
  const Tensor q = randn({2, 3, 7, 16}), k = randn({2, 3, 16, 7});
  MaxPool2dOptions pool;
  pool.kernel_size = 2;
  const std::uint64_t built = onednn_primitives_built();
  DispatchLog log;
  Tensor sum, pooled, scores;
  {
    const StandInRun stand_in;
    sum = functional::add(a, b);               // refold's own loop
    pooled = functional::max_pool2d(a, pool);  // oneDNN's only: the reference
    scores = ops::matmul(q, k);                // batched: zeros of the product's shape
  }
  EXPECT_EQ(log.take(),
            (std::vector<std::string>{"add: native broadcast", "max_pool2d: reference"}));
  EXPECT_EQ(onednn_primitives_built(), built);
  EXPECT_TRUE(testing::all_close(sum, reference::add(a, b), testing::Tolerance::exact()));
  EXPECT_TRUE(
      testing::all_close(pooled, reference::max_pool2d(a, pool), testing::Tolerance::exact()));
  EXPECT_EQ(scores.sizes(), (Shape{2, 3, 7, 7}));
  EXPECT_EQ(scores.to_vector(), std::vector<float>(2 * 3 * 7 * 7, 0.0f));
}

TEST(StandInRun, ShapeInferenceBuildsNoConvPrimitive) {
  testing::GraphBuilder b;
  const std::string x = b.input("x", {1, 8, 20, 20});
  const std::string y = b.relu(b.conv(x, 8, 16, {3, 3}));
  b.output(y);
  onednn::clear_cache();
  passes::detail::StaticShapes shapes(b.graph(), /*strict=*/true);
  EXPECT_EQ(shapes.shape(y), (Shape{1, 16, 18, 18}));
  const onednn::CacheStats stats = onednn::cache_stats();
  EXPECT_EQ(stats.primitive_misses, 0u);
  EXPECT_EQ(stats.primitives, 0u);
}

}  // namespace
}  // namespace refold
