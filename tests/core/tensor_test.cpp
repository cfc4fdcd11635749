#include "refold/tensor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "refold/error.h"
#include "refold/threads.h"
#include "testing/builders.h"
#include "testing/compare.h"

namespace refold {
namespace {

constexpr auto CL = MemoryFormat::ChannelsLast;
constexpr auto NCHW = MemoryFormat::Contiguous;

TEST(Tensor, SizesAreLogicalInBothFormats) {
  const Tensor a = empty({2, 3, 4, 5});
  const Tensor b = empty({2, 3, 4, 5}, CL);
  EXPECT_EQ(a.sizes(), b.sizes());
  EXPECT_EQ(a.strides(), (Shape{60, 20, 5, 1}));
  EXPECT_EQ(b.strides(), (Shape{60, 1, 15, 3}));
  EXPECT_TRUE(a.is_contiguous());
  EXPECT_FALSE(a.is_contiguous(CL));
  EXPECT_TRUE(b.is_contiguous(CL));
  EXPECT_FALSE(b.is_contiguous());
  EXPECT_EQ(a.suggest_memory_format(), NCHW);
  EXPECT_EQ(b.suggest_memory_format(), CL);
}

TEST(Tensor, StorageIs64ByteAligned) {
  for (std::int64_t n : {1, 3, 17, 1000}) {
    Tensor t = empty({n});
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.data_ptr()) % 64, 0u);
  }
}

TEST(Tensor, ContiguousKeepsValuesAndCountsPermutes) {
  const Tensor a = randn({2, 3, 4, 5});
  reset_permute_count();
  const Tensor b = a.contiguous(CL);
  EXPECT_EQ(permute_count(), 1u);
  EXPECT_TRUE(testing::all_close(b, a, testing::Tolerance::exact()));
  EXPECT_TRUE(b.contiguous(CL).is_same(b));  // already channels_last: no copy
  EXPECT_EQ(permute_count(), 1u);
  const Tensor c = b.contiguous();
  EXPECT_EQ(permute_count(), 2u);
  EXPECT_EQ(c.to_vector(), a.to_vector());
}

// Note [Ambiguous memory formats] in tensor.cpp: PyTorch's answers for size-1 dimensions.
TEST(Tensor, AmbiguousSingleChannelIsContiguousInBothFormats) {
  const Tensor a = empty({2, 1, 4, 4});
  EXPECT_TRUE(a.is_contiguous(NCHW));
  EXPECT_TRUE(a.is_contiguous(CL));
  reset_permute_count();
  EXPECT_TRUE(a.contiguous(CL).is_same(a));
  EXPECT_EQ(permute_count(), 0u);
  // torch.empty(2,1,4,4).suggest_memory_format() is contiguous; the channels_last-made one
  // has strides (16, 1, 4, 1) and suggests channels_last.
  EXPECT_EQ(a.suggest_memory_format(), NCHW);
  const Tensor b = empty({2, 1, 4, 4}, CL);
  EXPECT_EQ(b.strides(), (Shape{16, 1, 4, 1}));
  EXPECT_EQ(b.suggest_memory_format(), CL);
}

TEST(Tensor, AmbiguousOneByOneSpatial) {
  const Tensor a = empty({2, 8, 1, 1});
  const Tensor b = empty({2, 8, 1, 1}, CL);
  EXPECT_TRUE(a.is_contiguous(CL));
  EXPECT_TRUE(b.is_contiguous(NCHW));
  EXPECT_EQ(a.suggest_memory_format(), NCHW);  // strides (8, 1, 1, 1)
  EXPECT_EQ(b.suggest_memory_format(), CL);    // strides (8, 1, 8, 8)
}

TEST(Tensor, AmbiguousN111DefaultsToContiguous) {
  EXPECT_EQ(empty({4, 1, 1, 1}).suggest_memory_format(), NCHW);
  EXPECT_EQ(empty({4, 1, 1, 1}, CL).suggest_memory_format(), NCHW);
  EXPECT_EQ(empty({1, 1, 1, 1}, CL).suggest_memory_format(), NCHW);
}

TEST(Tensor, ExpandedChannelAndZeroSizeSuggestContiguous) {
  const Tensor base = empty({2, 1, 3, 3});
  const Tensor expanded = base.as_strided({2, 5, 3, 3}, {9, 0, 3, 1}, 0);
  EXPECT_EQ(expanded.suggest_memory_format(), NCHW);
  EXPECT_EQ(empty({0, 3, 4, 4}, CL).suggest_memory_format(), NCHW);
  EXPECT_TRUE(empty({0, 3, 4, 4}).is_contiguous(CL));
}

TEST(Tensor, PermutedViewIsChannelsLast) {
  // An NHWC buffer viewed as NCHW by permute(0, 3, 1, 2) is exactly channels_last.
  const Tensor nhwc = randn({2, 4, 5, 3});
  const Tensor view = nhwc.permute({0, 3, 1, 2});
  EXPECT_EQ(view.sizes(), (Shape{2, 3, 4, 5}));
  EXPECT_TRUE(view.is_contiguous(CL));
  EXPECT_TRUE(view.shares_storage(nhwc));
  EXPECT_EQ(view.at({1, 2, 3, 4}), nhwc.at({1, 3, 4, 2}));
}

TEST(Tensor, ToDtypeRoundsToBFloat16AndBack) {
  const Tensor a = from_values(std::vector<float>{1.0f, 1.00390625f, 3.14159265f, -2.5f}, {4});
  const Tensor b = a.to(DType::BFloat16);
  EXPECT_EQ(b.dtype(), DType::BFloat16);
  EXPECT_EQ(b.at({0}), 1.0f);
  EXPECT_EQ(b.at({1}), 1.0f);  // tie rounds to even
  EXPECT_EQ(b.at({2}), 3.140625f);
  EXPECT_EQ(b.at({3}), -2.5f);
  EXPECT_TRUE(a.to(DType::Float32).is_same(a));
}

TEST(Tensor, ToDtypePreservesChannelsLast) {
  const Tensor a = randn({1, 3, 2, 2}, CL);
  const Tensor b = a.to(DType::BFloat16);
  EXPECT_EQ(b.strides(), a.strides());
}

TEST(BFloat16, RoundingEdgeCases) {
  EXPECT_EQ(BFloat16(0.0f).bits, 0x0000);
  EXPECT_EQ(BFloat16(-0.0f).bits, 0x8000);
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3F80);
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(std::nanf("")))));
  EXPECT_TRUE(std::isinf(static_cast<float>(BFloat16(INFINITY))));
  EXPECT_TRUE(std::isinf(static_cast<float>(BFloat16(3.4e38f))));  // rounds up past the max
}

TEST(Tensor, FactoriesFillAndRandomIsDeterministicAcrossFormats) {
  EXPECT_EQ(zeros({2, 2}).to_vector(), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(ones({3}).to_vector(), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(full({2}, 7.5f).to_vector(), (std::vector<float>{7.5f, 7.5f}));
  Generator g1(42), g2(42);
  const Tensor a = randn({2, 3, 4, 4}, NCHW, g1);
  const Tensor b = randn({2, 3, 4, 4}, CL, g2);
  EXPECT_EQ(a.to_vector(), b.to_vector());
  for (float v : rand({1000}).to_vector()) {
    EXPECT_GE(v, 0.0f);
    EXPECT_LT(v, 1.0f);
  }
}

TEST(Tensor, ElementAccessIsBoundsChecked) {
  Tensor t = zeros({2, 3});
  t.set({1, 2}, 5.0f);
  EXPECT_EQ(t.at({1, 2}), 5.0f);
  EXPECT_THROW(t.at({2, 0}), Error);
  EXPECT_THROW(t.at({0}), Error);
  EXPECT_THROW(Tensor{}.sizes(), Error);
}

TEST(Tensor, SizeArithmeticIsOverflowChecked) {
  EXPECT_THROW(empty({std::int64_t{1} << 62, 4, 1, 1}), Error);
  EXPECT_THROW(empty({-4, 3, 3, 3}), Error);
  EXPECT_THROW(empty({std::int64_t{1} << 40, std::int64_t{1} << 40}), Error);
}

TEST(Tensor, ChannelsLastNeedsFourDims) {
  EXPECT_THROW(empty({2, 3, 4}, CL), Error);
  EXPECT_THROW(empty({2, 3}, MemoryFormat::Preserve), Error);
}

TEST(Tensor, ReshapeAndSetData) {
  const Tensor a = randn({2, 3, 4});
  const Tensor b = a.reshape({6, -1});
  EXPECT_EQ(b.sizes(), (Shape{6, 4}));
  EXPECT_TRUE(b.shares_storage(a));
  EXPECT_THROW(a.reshape({5, -1}), Error);
  Tensor handle = a;
  Tensor copy = handle;
  handle.set_data(zeros({1}));
  EXPECT_EQ(copy.sizes(), (Shape{1}));  // every handle of the impl sees the new data
}

TEST(Tensor, ZeroDimTensorHasOneElement) {
  Tensor t = full({}, 3.0f);
  EXPECT_EQ(t.numel(), 1);
  EXPECT_EQ(t.item(), 3.0f);
}

}  // namespace
}  // namespace refold

namespace refold {
namespace {

TEST(Tensor, CopyBetweenArbitraryLayoutsKeepsLogicalValues) {
  const Tensor base = randn({3, 4, 5});
  const Tensor permuted = base.permute({2, 0, 1});  // [5, 3, 4], non-contiguous
  const Tensor dense = permuted.contiguous();
  for (std::int64_t i = 0; i < 5; ++i)
    for (std::int64_t j = 0; j < 3; ++j)
      for (std::int64_t k = 0; k < 4; ++k) EXPECT_EQ(dense.at({i, j, k}), base.at({j, k, i}));
  Tensor bf = empty({5, 3, 4}, DType::BFloat16);
  bf.copy_(permuted);
  EXPECT_EQ(bf.at({4, 2, 3}), static_cast<float>(BFloat16(base.at({2, 3, 4}))));
  Tensor i64 = empty({5, 3, 4}, DType::Int64);
  EXPECT_THROW(i64.copy_(permuted), Error);
}

// A source broadcast along its innermost dims (stride 0, as Expand copies it) fills each run with
// its one value: every element of the copy is the source element it repeats.
// Also one large enough to be split between threads (2¹⁶ elements or more), whose broadcast dim
// is where it splits (a source slab of stride 0).
TEST(Tensor, CopyOfABroadcastRepeatsEachValue) {
  const ThreadCountScope threads(2);
  const Tensor base = randn({3, 4});
  for (const Shape& sizes : {Shape{3, 4, 5, 19}, Shape{3, 4, 80, 90}}) {
    const Tensor view = base.as_strided(sizes, {4, 1, 0, 0}, 0);
    const Tensor dense = view.contiguous();
    for (std::int64_t a = 0; a < 3; ++a)
      for (std::int64_t b = 0; b < 4; ++b)
        for (std::int64_t h = 0; h < sizes[2]; ++h)
          for (std::int64_t w = 0; w < sizes[3]; ++w)
            ASSERT_EQ(dense.at({a, b, h, w}), base.at({a, b}));
  }
  const Tensor rows = base.as_strided({2, 3, 4, 3000}, {0, 4, 1, 0}, 0).contiguous();
  for (std::int64_t n = 0; n < 2; ++n) ASSERT_EQ(rows.at({n, 2, 3, 2999}), base.at({2, 3}));
}

// Every permutation of a 5-d tensor with short and long dims copied contiguous, in float32 and
// into bfloat16: the copy merges dims that are one run in both tensors and may run along a dim
// other than the innermost (a short innermost dim beside a src-contiguous one, as in a channel
// shuffle); every element must still land where its logical index says.
TEST(Tensor, CopyOfEveryPermutationKeepsLogicalValues) {
  const Shape sizes = {2, 3, 1, 17, 2};
  const Tensor base = randn(sizes);
  std::vector<std::int64_t> perm = {0, 1, 2, 3, 4};
  int permutations = 0;
  do {
    SCOPED_TRACE(::testing::Message()
                 << "perm " << perm[0] << perm[1] << perm[2] << perm[3] << perm[4]);
    const Tensor view = base.permute(perm);
    const Tensor dense = view.contiguous();
    Tensor bf = empty(view.sizes(), DType::BFloat16);
    bf.copy_(view);
    std::vector<std::int64_t> i(5, 0);
    for (i[0] = 0; i[0] < view.size(0); ++i[0])
      for (i[1] = 0; i[1] < view.size(1); ++i[1])
        for (i[2] = 0; i[2] < view.size(2); ++i[2])
          for (i[3] = 0; i[3] < view.size(3); ++i[3])
            for (i[4] = 0; i[4] < view.size(4); ++i[4]) {
              Shape original(5);
              for (std::size_t k = 0; k < 5; ++k)
                original[static_cast<std::size_t>(perm[k])] = i[k];
              const float expected =
                  base.at({original[0], original[1], original[2], original[3], original[4]});
              ASSERT_EQ(dense.at({i[0], i[1], i[2], i[3], i[4]}), expected);
              ASSERT_EQ(bf.at({i[0], i[1], i[2], i[3], i[4]}),
                        static_cast<float>(BFloat16(expected)));
            }
    ++permutations;
  } while (std::next_permutation(perm.begin(), perm.end()));
  EXPECT_EQ(permutations, 120);
}

}  // namespace
}  // namespace refold

namespace refold {
namespace {

TEST(Tensor, VersionChangesOnEveryWriteThroughAnyView) {
  Tensor w = randn({4, 3, 3, 3});
  const std::uint64_t v0 = w.version();
  EXPECT_EQ(std::as_const(w).data_ptr(), w.data_ptr());  // the non-const call bumps
  const std::uint64_t v1 = w.version();
  EXPECT_NE(v1, v0);
  EXPECT_EQ(w.version(), v1);  // reading does not bump
  Tensor view = w.permute({0, 2, 3, 1});
  view.fill_(1.0f);
  EXPECT_NE(w.version(), v1);
  const std::uint64_t v2 = w.version();
  w.set_data(w.contiguous(MemoryFormat::ChannelsLast));
  EXPECT_NE(w.version(), v2);
  EXPECT_NE(randn({4}).version(), randn({4}).version());
}

// A channel shuffle in NHWC memory: per pixel, [groups, C/groups] channels read as [C/groups,
// groups] (the copy's small-transpose blocks, one per pixel), for group counts with and without
// a dedicated loop, in every dtype and converting into bfloat16.
// Transposes with both dims 16 or longer go in tiles: every element lands where its logical
// index says, for float32, bfloat16 and a channels_last destination. The last two cases are
// split between two threads (2¹⁶ elements or more): past a leading dim of 1, and into uneven
// slabs (3 over 2 threads).
TEST(Tensor, CopyOfALargeTransposeKeepsLogicalValues) {
  const ThreadCountScope threads(2);
  const std::vector<std::pair<Shape, Shape>> cases = {{{2, 37, 45}, {0, 2, 1}},
                                                      {{1, 4, 33, 20}, {0, 3, 2, 1}},
                                                      {{3, 18, 5, 40}, {0, 3, 1, 2}},
                                                      {{2, 16, 16, 3}, {0, 2, 1, 3}},
                                                      // a middle dim continues dst's rows
                                                      {{1, 4, 40, 64}, {0, 3, 2, 1}},
                                                      // dst rows 4 KiB apart: 8 × 8 tiles
                                                      {{1, 32, 32, 128}, {0, 3, 1, 2}},
                                                      {{3, 150, 5, 40}, {0, 3, 1, 2}}};
  for (const auto& [sizes, perm] : cases) {
    const Tensor base = randn(sizes);
    const Tensor view = base.permute(perm);
    const Tensor f32 = view.contiguous();
    Tensor bf_copy = empty(view.sizes(), DType::BFloat16);
    bf_copy.copy_(view);
    const Tensor& bf = bf_copy;
    const Tensor nhwc = view.dim() == 4 ? view.contiguous(MemoryFormat::ChannelsLast) : f32;
    // The element at a logical index, read through the tensor's strides.
    const auto element = [](const Tensor& t, const Shape& index) {
      std::int64_t offset = 0;
      for (std::size_t d = 0; d < index.size(); ++d)
        offset += index[d] * t.stride(static_cast<std::int64_t>(d));
      return t.dtype() == DType::BFloat16
                 ? static_cast<float>(static_cast<const BFloat16*>(t.data_ptr())[offset])
                 : static_cast<const float*>(t.data_ptr())[offset];
    };
    for (const Tensor* copy_of : {&f32, &bf, &nhwc}) {
      const Tensor& copy = *copy_of;
      SCOPED_TRACE(copy.description());
      Shape index(static_cast<std::size_t>(view.dim()), 0);
      for (std::int64_t k = 0; k < view.numel(); ++k) {
        for (std::int64_t d = view.dim() - 1, rest = k; d >= 0; --d) {
          index[static_cast<std::size_t>(d)] = rest % view.size(d);
          rest /= view.size(d);
        }
        const float expected = element(view, index);
        ASSERT_EQ(element(copy, index), copy.dtype() == DType::BFloat16
                                            ? static_cast<float>(BFloat16(expected))
                                            : expected);
      }
    }
  }
}

// Short runs contiguous in both tensors (8 or 16 bytes) are copied as one wider element: every
// value lands where it belongs, for each dtype, and where the run's size does not divide the
// other strides (no widening) too.
TEST(Tensor, CopyOfShortContiguousRunsKeepsLogicalValues) {
  struct Permute {
    Shape sizes, perm;
  };
  const std::vector<Permute> cases = {{{6, 2, 17, 2}, {0, 2, 1, 3}},  // MobileViT's 2 × 2 patches
                                      {{6, 17, 2, 2}, {0, 2, 1, 3}},
                                      {{5, 3, 4}, {1, 0, 2}},
                                      {{3, 4, 5, 8}, {0, 2, 1, 3}},
                                      {{2, 3, 16}, {1, 0, 2}}};
  for (const Permute& c : cases) {
    for (DType dtype : {DType::Float32, DType::BFloat16, DType::Int64}) {
      // 0, 1, 2, … 250, 0, … in memory order: exact in every dtype.
      Tensor base = empty(c.sizes, dtype);
      for (std::int64_t k = 0; k < base.numel(); ++k) {
        const auto value = k % 251;
        if (dtype == DType::Int64) {
          base.data<std::int64_t>()[k] = value;
        } else if (dtype == DType::BFloat16) {
          base.data<BFloat16>()[k] = BFloat16(static_cast<float>(value));
        } else {
          base.data<float>()[k] = static_cast<float>(value);
        }
      }
      const Tensor view = base.permute(c.perm);
      SCOPED_TRACE(view.description());
      const Tensor copy = view.contiguous();
      ASSERT_TRUE(copy.is_contiguous());
      EXPECT_EQ(copy.to_vector(), view.to_vector());
    }
  }
  // A run of 2 whose size does not divide the other stride (5): copied element by element.
  const Tensor base = randn({4, 5});
  const Tensor odd = base.as_strided({3, 2}, {5, 1}, 1);
  const Tensor copy = odd.contiguous();
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t j = 0; j < 2; ++j) EXPECT_EQ(copy.at({i, j}), base.at({i, j + 1}));
}

TEST(Tensor, CopyOfAChannelShuffleKeepsLogicalValues) {
  for (std::int64_t groups : {2, 3, 4, 5, 15}) {
    for (std::int64_t per_group : {16, 19}) {
      SCOPED_TRACE(::testing::Message() << groups << " groups of " << per_group);
      const Tensor base = randn({3, 4, groups, per_group});  // [pixels…, groups, C/groups]
      const Tensor shuffled = base.permute({0, 1, 3, 2});
      Tensor bf = empty(shuffled.sizes(), DType::BFloat16);
      bf.copy_(shuffled);
      const Tensor f32 = shuffled.contiguous();
      const Tensor bf_again = bf.permute({0, 1, 3, 2}).contiguous().permute({0, 1, 3, 2});
      Tensor i64_source = empty(base.sizes(), DType::Int64);
      for (std::int64_t k = 0; k < base.numel(); ++k)
        static_cast<std::int64_t*>(i64_source.data_ptr())[k] = k;
      const Tensor i64 = i64_source.permute({0, 1, 3, 2}).contiguous();
      for (std::int64_t a = 0; a < 3; ++a)
        for (std::int64_t b = 0; b < 4; ++b)
          for (std::int64_t i = 0; i < per_group; ++i)
            for (std::int64_t g = 0; g < groups; ++g) {
              const float expected = base.at({a, b, g, i});
              ASSERT_EQ(f32.at({a, b, i, g}), expected);
              ASSERT_EQ(bf.at({a, b, i, g}), static_cast<float>(BFloat16(expected)));
              ASSERT_EQ(bf_again.at({a, b, i, g}), static_cast<float>(BFloat16(expected)));
              const std::int64_t offset = ((a * 4 + b) * groups + g) * per_group + i;
              ASSERT_EQ(static_cast<const std::int64_t*>(
                            i64.data_ptr())[((a * 4 + b) * per_group + i) * groups + g],
                        offset);
            }
    }
  }
}

}  // namespace
}  // namespace refold
