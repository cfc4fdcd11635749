// oneDNN linear (matmul on packed weights) and reorder (NCHW ↔ NHWC) against the reference, in both
// layouts, odd sizes, 1 and 2 threads; their declines; and that functional:: runs them on oneDNN.
// (cat: tests/kernels/native_concat_test.cpp.)
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/native/cpu.h"
#include "kernels/onednn/conv2d.h"
#include "kernels/onednn/linear.h"
#include "kernels/onednn/reorder.h"
#include "kernels/post_ops.h"
#include "kernels/verbose.h"
#include "nn/nn_test_helpers.h"
#include "refold/functional.h"
#include "refold/reference.h"
#include "refold/threads.h"
#include "testing/compare.h"
#include "testing/threads.h"

namespace refold {
namespace {

using testing::throws_error;
using testing::Tolerance;
constexpr auto CL = MemoryFormat::ChannelsLast;
constexpr auto NCHW = MemoryFormat::Contiguous;

class OnednnNewOps : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { set_num_threads(GetParam()); }

 private:
  testing::RestoreNumThreads restore_threads_;
};

TEST_P(OnednnNewOps, LinearMatchesReference) {
  Generator gen(11);
  for (const Shape& in_sizes : {Shape{1, 37}, Shape{5, 37}, Shape{2, 3, 37}, Shape{37}}) {
    SCOPED_TRACE(in_sizes.size());
    const Tensor x = randn(in_sizes, {}, gen);
    const Tensor w = randn({13, 37}, {}, gen);
    const Tensor b = randn({13}, {}, gen);
    std::string declined;
    const Tensor y = onednn::linear(x, w, b, {}, &declined);
    ASSERT_TRUE(y.defined()) << declined;
    EXPECT_TRUE(y.is_contiguous());
    EXPECT_TRUE(testing::all_close(y, reference::linear(x, w, b), Tolerance::op_f32()));
    // No bias; a transposed (column-major) weight view.
    const Tensor wt = randn({37, 13}, {}, gen).permute({1, 0});
    const Tensor y2 = onednn::linear(x, wt, {}, {}, &declined);
    ASSERT_TRUE(y2.defined()) << declined;
    EXPECT_TRUE(testing::all_close(y2, reference::linear(x, wt), Tolerance::op_f32()));
  }
}

// A constant weight runs as it lies on its first call and from its second call on in the
// primitive's own format, packed once (kernels/onednn/packed_weights.h); a weight that is new on
// every call (a MatMul by an activation) is never packed. Every call matches the reference.
TEST_P(OnednnNewOps, LinearPacksAConstantWeightOnceAndNeverAComputedOne) {
  Generator gen(5);
  const Tensor x = randn({7, 48}, {}, gen);
  const Tensor w = randn({40, 48}, {}, gen);
  const Tensor b = randn({40}, {}, gen);
  const auto call = [&](const Tensor& weight) {
    const Tensor y = onednn::linear(x, weight, b, {});
    EXPECT_TRUE(testing::all_close(y, reference::linear(x, weight, b), Tolerance::op_f32()));
  };
  const auto packs = [] { return onednn::cache_stats().weight_packs; };
  const auto reads = [] {  // calls that found their weight in the primitive's format
    const onednn::CacheStats s = onednn::cache_stats();
    return s.weight_hits + s.weight_direct;
  };
  const auto packs0 = packs();
  const auto reads0 = reads();
  call(w);
  EXPECT_EQ(packs(), packs0) << "a weight seen for the first time runs as it lies";
  EXPECT_EQ(reads(), reads0 + 1);
  call(w);
  // (Every format oneDNN's matmul picks differs from a row-major W read as Wᵀ [K, O]: plain
  // Wᵀ for its GEMM, blocked for brgemm.)
  const auto packs1 = packs();
  EXPECT_EQ(packs1, packs0 + 1) << "the second call packs the weight";
  EXPECT_EQ(reads(), reads0 + 1);
  call(w);
  call(w);
  EXPECT_EQ(packs(), packs1) << "later calls find the packed copy";
  for (int run = 0; run < 3; ++run) call(randn({40, 48}, {}, gen));
  EXPECT_EQ(packs(), packs1) << "a weight new on every call is never packed";
  // Writing into the weight makes it new: its old packed copy is never used for it.
  Tensor changed = w.clone();
  call(changed);
  call(changed);
  changed.copy_(randn({40, 48}, {}, gen));
  call(changed);
}

TEST_P(OnednnNewOps, LinearDeclinesWhatItCannotTakeAndFunctionalFallsBack) {
  const Tensor x = randn({4, 9});
  const Tensor w = randn({5, 9});
  std::string declined;
  // Non-contiguous input: declined; functional:: copies it once and runs oneDNN.
  const Tensor xt = randn({9, 4}).permute({1, 0});
  EXPECT_FALSE(onednn::linear(xt, w, {}, {}, &declined).defined());
  EXPECT_NE(declined.find("not contiguous"), std::string::npos);
  const auto before = onednn::linear_stats().runs;
  EXPECT_TRUE(
      testing::all_close(functional::linear(xt, w), reference::linear(xt, w), Tolerance::op_f32()));
  EXPECT_EQ(onednn::linear_stats().runs, before + 1);
  // bfloat16: the float32 primitive between a widening and a rounding (bfloat16_boundary.h).
  const Tensor y16 =
      onednn::linear(x.to(DType::BFloat16), w.to(DType::BFloat16), {}, {}, &declined);
  ASSERT_TRUE(y16.defined()) << declined;
  EXPECT_EQ(y16.dtype(), DType::BFloat16);
  EXPECT_TRUE(testing::all_close(y16, reference::linear(x, w), Tolerance::bf16()));
  // Invalid arguments: declined, and functional:: fails with the reference's message.
  EXPECT_FALSE(onednn::linear(x, randn({5, 8}), {}, {}, &declined).defined());
  EXPECT_TRUE(throws_error(
      [&] {
        functional::linear(x, randn({5, 8}));
      },
      "linear: input has 9 features"));
  EXPECT_TRUE(throws_error([&] { onednn::linear(x, randn({5, 8}), {}, {}); }, "oneDNN declined"));
  // Runs on oneDNN through functional::.
  const auto runs = onednn::linear_stats().runs;
  EXPECT_TRUE(
      testing::all_close(functional::linear(x, w), reference::linear(x, w), Tolerance::op_f32()));
  EXPECT_EQ(onednn::linear_stats().runs, runs + 1);
}

// y = act(x·Wᵀ + b + r) in one primitive: each activation, with and without the residual,
// against the reference's unfused steps.
TEST_P(OnednnNewOps, LinearFusesItsActivationAndResidual) {
  Generator gen(17);
  const Tensor x = randn({2, 6, 19}, {}, gen);
  const Tensor w = randn({11, 19}, {}, gen);
  const Tensor b = randn({11}, {}, gen);
  const Tensor r = randn({2, 6, 11}, {}, gen);
  for (int a = 0; a <= static_cast<int>(kLastActivation); ++a) {
    for (bool residual : {false, true}) {
      PostOps post;
      post.activation = static_cast<Activation>(a);
      post.negative_slope = 0.2;
      if (residual) post.residual = r;
      SCOPED_TRACE(post.description());
      std::string declined;
      const Tensor y = onednn::linear(x, w, b, post, &declined);
      ASSERT_TRUE(y.defined()) << declined;
      const Tensor expected = reference::apply_post_ops(reference::linear(x, w, b), post);
      EXPECT_TRUE(testing::all_close(y, expected, Tolerance::op_f32()));
      EXPECT_TRUE(
          testing::all_close(functional::linear(x, w, b, post), expected, Tolerance::op_f32()));
    }
  }
  // Steps are per channel of NCHW: declined here, refused by functional::.
  PostOps steps;
  steps.then.push_back({.scale = {2.f}});
  std::string declined;
  EXPECT_FALSE(onednn::linear(x, w, b, steps, &declined).defined());
  EXPECT_TRUE(throws_error([&] { functional::linear(x, w, b, steps); },
                           "linear: post-op steps (mul[1]) are not supported"));
  // A residual of other sizes: declined, and the reference says which.
  PostOps wrong;
  wrong.residual = randn({2, 6, 10});
  EXPECT_FALSE(onednn::linear(x, w, b, wrong, &declined).defined());
  EXPECT_TRUE(throws_error([&] { functional::linear(x, w, b, wrong); }, "residual"));
  // A non-contiguous residual: declined here; functional:: copies it once and runs oneDNN.
  PostOps strided;
  strided.residual = randn({11, 6, 2}).permute({2, 1, 0});
  EXPECT_FALSE(onednn::linear(x, w, b, strided, &declined).defined());
  EXPECT_NE(declined.find("residual"), std::string::npos);
  const auto runs = onednn::linear_stats().runs;
  EXPECT_TRUE(testing::all_close(functional::linear(x, w, b, strided),
                                 reference::add(reference::linear(x, w, b), strided.residual),
                                 Tolerance::op_f32()));
  EXPECT_EQ(onednn::linear_stats().runs, runs + 1);
}

// GELU (and a residual before it): the product without it, then refold's pass, where the
// CPU has AVX2 (kernels/native/activation_pass.h); the values are the reference's either way.
TEST_P(OnednnNewOps, LinearFinishesGeluWithTheNativePass) {
  Generator gen(19);
  const Tensor x = randn({1, 49, 24}, {}, gen);
  const Tensor w = randn({40, 24}, {}, gen);
  const Tensor b = randn({40}, {}, gen);
  PostOps post;
  post.activation = Activation::GELU;
  post.residual = randn({1, 49, 40}, {}, gen);
  DispatchLog log;
  const Tensor y = functional::linear(x, w, b, post);
  const std::vector<std::string> ran = log.take();
  ASSERT_EQ(ran.size(), 1u);
  const bool pass = native::cpu_has_avx2_fma();
  EXPECT_EQ(ran[0].rfind(pass ? "linear: onednn + native activation" : "linear: onednn", 0), 0u)
      << ran[0];
  EXPECT_TRUE(testing::all_close(y, reference::apply_post_ops(reference::linear(x, w, b), post),
                                 Tolerance::op_f32()));
}

TEST_P(OnednnNewOps, ReorderIsContiguousInTheOtherLayout) {
  Generator gen(13);
  for (const Shape& s : {Shape{1, 13, 7, 9}, Shape{3, 48, 5, 5}, Shape{2, 1, 3, 3}}) {
    for (MemoryFormat from : {NCHW, CL}) {
      for (MemoryFormat to : {NCHW, CL}) {
        for (DType dtype : {DType::Float32, DType::BFloat16}) {
          const Tensor x = randn(s, {}, gen).to(dtype, from);
          std::string declined;
          const Tensor y = onednn::reorder(x, to, &declined);
          ASSERT_TRUE(y.defined()) << declined;
          EXPECT_TRUE(y.is_contiguous(to));
          EXPECT_EQ(y.dtype(), dtype);
          EXPECT_TRUE(testing::all_close(y, x.contiguous(to), Tolerance::exact()));
        }
      }
    }
  }
  // A permuted (dense, neither layout) input.
  const Tensor odd = randn({5, 3, 2, 7}).permute({1, 3, 2, 0});
  EXPECT_TRUE(testing::all_close(onednn::reorder(odd, CL), odd.contiguous(CL), Tolerance::exact()));
  std::string declined;
  EXPECT_FALSE(onednn::reorder(randn({3, 4}), CL, &declined).defined());
  EXPECT_FALSE(onednn::reorder(randn({1, 2, 3, 4}), MemoryFormat::Preserve, &declined).defined());
  const Tensor strided = randn({1, 4, 6, 6}).as_strided({1, 4, 3, 3}, {144, 36, 12, 2}, 0);
  EXPECT_FALSE(onednn::reorder(strided, CL, &declined).defined());
  EXPECT_NE(declined.find("not dense"), std::string::npos);
}

// reorder_into writes into a destination the caller holds, both with any strides: a strided
// view into a slice of a larger tensor (a concat's place for one input), of ranks 1 to 5, in
// both dtypes; the elements around the slice stay as they were.
TEST_P(OnednnNewOps, ReorderIntoWritesAnyStridesIntoAnyStrides) {
  Generator gen(14);
  for (DType dtype : {DType::Float32, DType::BFloat16}) {
    for (const Shape& s :
         {Shape{37}, Shape{6, 5}, Shape{2, 7, 9}, Shape{1, 13, 7, 9}, Shape{2, 3, 4, 5, 6}}) {
      const auto rank = static_cast<std::int64_t>(s.size());
      SCOPED_TRACE(fmt::format("[{}] {}", fmt::join(s, ", "), dtype_name(dtype)));
      // Source: every other element of the last dim, reversed dim order in memory.
      Shape wide = s;
      wide.back() *= 2;
      Shape order(s.size());
      for (std::int64_t d = 0; d < rank; ++d) order[d] = rank - 1 - d;
      const Tensor base = randn(wide, {}, gen).to(dtype).permute(order).contiguous().permute(order);
      Shape src_strides = base.strides();
      src_strides.back() *= 2;
      const Tensor src = base.as_strided(s, src_strides, 1);
      // Destination: the slice at offset 2 of a tensor 3 wider along dim 0, filled with 7.
      Shape outer = s;
      outer[0] += 3;
      Tensor whole = full(outer, 7.0f).to(dtype);
      Tensor dst = whole.as_strided(s, whole.strides(), 2 * whole.stride(0));
      std::string declined;
      ASSERT_TRUE(onednn::reorder_into(src, dst, &declined)) << declined;
      EXPECT_TRUE(testing::all_close(dst, src, Tolerance::exact()));
      const std::vector<float> all = whole.to_vector();
      const std::int64_t before = 2 * whole.stride(0), after = before + dst.numel();
      for (std::int64_t i = 0; i < whole.numel(); ++i) {
        if (i < before || i >= after) {
          ASSERT_EQ(all[static_cast<std::size_t>(i)], 7.0f) << i;
        }
      }
    }
  }
  std::string declined;
  Tensor four = empty({2, 2});
  EXPECT_FALSE(onednn::reorder_into(randn({2, 3}), four, &declined));
  EXPECT_NE(declined.find("differ in size"), std::string::npos) << declined;
  Tensor ints = empty({2, 2}, {DType::Int64});
  EXPECT_FALSE(onednn::reorder_into(empty({2, 2}, {DType::Int64}), ints, &declined));
  Tensor none = empty({2, 0});
  EXPECT_FALSE(onednn::reorder_into(empty({2, 0}), none, &declined));
}

TEST_P(OnednnNewOps, ToFormatUsesTheReorderForLargeFourDimFloatPermutes) {
  const Tensor x = randn({1, 48, 28, 28});  // 37632 elements: over the threshold
  const auto runs = onednn::reorder_stats().runs;
  reset_permute_count();
  const Tensor y = functional::to_format(x, CL);
  EXPECT_EQ(onednn::reorder_stats().runs, runs + 1);
  EXPECT_EQ(permute_count(), 1u);  // still counted as the seed's permute
  EXPECT_TRUE(y.is_contiguous(CL));
  const Tensor back = functional::to_format(y, NCHW);
  EXPECT_EQ(onednn::reorder_stats().runs, runs + 2);
  EXPECT_EQ(permute_count(), 2u);
  EXPECT_TRUE(testing::all_close(back, x, Tolerance::exact()));
  EXPECT_TRUE(functional::to_format(back, NCHW).is_same(back));  // nothing to do: itself
  // Small tensors keep the generic copy, and so does Tensor::contiguous itself: the core
  // calls no backend.
  EXPECT_TRUE(functional::to_format(randn({1, 3, 5, 5}), CL).is_contiguous(CL));
  EXPECT_TRUE(testing::all_close(x.contiguous(CL), y, Tolerance::exact()));
  EXPECT_EQ(onednn::reorder_stats().runs, runs + 2);
  EXPECT_EQ(permute_count(), 4u);
}

INSTANTIATE_TEST_SUITE_P(Threads, OnednnNewOps, ::testing::Values(1, 2));

}  // namespace
}  // namespace refold
