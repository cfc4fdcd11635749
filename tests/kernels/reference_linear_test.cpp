// Tests of refold::reference::linear: out[..., o] = bias[o] + sum_k in[..., k] · w[o, k].
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "refold/reference.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"
#include "testing/layouts.h"

namespace refold {
namespace {

using reference::linear;
using testing::Tolerance;
using testing::values;

// The definition as a hand loop in double over a flattened [rows, in] view of `x`.
Tensor hand_linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  const std::int64_t in = w.size(1), out = w.size(0);
  const std::vector<float> xs = x.to_vector();  // logical row-major order
  const std::int64_t rows = x.numel() / in;
  std::vector<float> result;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t o = 0; o < out; ++o) {
      double acc = b.defined() ? b.at({o}) : 0.0;
      for (std::int64_t k = 0; k < in; ++k)
        acc += static_cast<double>(xs[static_cast<std::size_t>(r * in + k)]) * w.at({o, k});
      result.push_back(static_cast<float>(acc));
    }
  }
  Shape sizes = x.sizes();
  sizes.back() = out;
  return from_values(result, sizes);
}

TEST(ReferenceLinear, HandComputed) {
  // x = [[1, 2, 3], [4, 5, 6]], w = [[1, 0, −1], [0.5, 0.5, 0.5]], b = [10, −1]:
  // row 0: 1 − 3 + 10 = 8,  0.5·6 − 1 = 2;   row 1: 4 − 6 + 10 = 8,  0.5·15 − 1 = 6.5
  const Tensor x = values({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor w = values({1, 0, -1, 0.5f, 0.5f, 0.5f}, {2, 3});
  const Tensor out = linear(x, w, values({10, -1}, {2}));
  EXPECT_TRUE(testing::all_close(out, values({8, 2, 8, 6.5f}, {2, 2}), Tolerance::exact()));
  EXPECT_TRUE(
      testing::all_close(linear(x, w), values({-2, 3, -2, 7.5f}, {2, 2}), Tolerance::exact()));
}

TEST(ReferenceLinear, MatchesHandLoopForEveryInputRank) {
  // Odd feature counts (13 in, 19 out) and leading dims of rank 0..3.
  Generator gen(31);
  const Tensor w = randn({19, 13}, {}, gen);
  const Tensor b = randn({19}, {}, gen);
  for (const Shape& sizes : {Shape{13}, Shape{5, 13}, Shape{2, 3, 13}, Shape{2, 1, 3, 13}}) {
    SCOPED_TRACE(::testing::Message() << "input rank " << sizes.size());
    const Tensor x = randn(sizes, {}, gen);
    const Tensor out = linear(x, w, b);
    Shape expected_sizes = sizes;
    expected_sizes.back() = 19;
    EXPECT_EQ(out.sizes(), expected_sizes);
    EXPECT_TRUE(out.is_contiguous());
    EXPECT_TRUE(testing::all_close(out, hand_linear(x, w, b), Tolerance::op_f32()));
    EXPECT_TRUE(testing::all_close(linear(x, w), hand_linear(x, w, Tensor{}), Tolerance::op_f32()));
  }
}

TEST(ReferenceLinear, NonContiguousOperandsGiveIdenticalValuesAndAContiguousOutput) {
  Generator gen(32);
  const Tensor x = randn({3, 4, 13}, {}, gen);
  const Tensor w = randn({19, 13}, {}, gen);
  const Tensor b = randn({19}, {}, gen);
  const Tensor expected = linear(x, w, b);
  // x as a permuted view: stored [13, 4, 3], read back as [3, 4, 13].
  const Tensor xp = testing::with_storage_order(x, {2, 1, 0});
  // w as its transpose's view (the [in, out] storage a column-major GEMM would use).
  const Tensor wt = testing::with_storage_order(w, {1, 0});
  // A sliced window and a stride-2 view inside NaN buffers: a read outside shows as NaN.
  const Tensor xs = testing::window_in_nan_buffer(x);
  const Tensor bs = testing::every_other_element(b);
  for (const auto& [name, xv, wv, bv] :
       {std::tuple{"permuted input", xp, w, b}, std::tuple{"transposed weight", x, wt, b},
        std::tuple{"sliced input and strided bias", xs, wt, bs}}) {
    SCOPED_TRACE(name);
    const Tensor out = linear(xv, wv, bv);
    EXPECT_TRUE(out.is_contiguous());
    EXPECT_TRUE(testing::all_close(out, expected, Tolerance::exact()));
  }
}

TEST(ReferenceLinear, BFloat16MatchesFloat32WithinBf16Tolerance) {
  // bf16 keeps 8 significant bits: rounding each input, weight and output costs ≈ 2^-8
  // relative per term, so the bf16 result is held to the bf16 policy against fp32
  // (docs/testing.md). Weights use PyTorch's default scale 1/sqrt(in_features) so outputs stay
  // O(1).
  Generator gen(33);
  const std::int64_t in = 19, out_features = 13;
  const Tensor w = testing::pytorch_init({out_features, in}, in, gen);
  const Tensor b = randn({out_features}, {}, gen);
  const Tensor x = randn({2, 5, in}, {}, gen);
  const Tensor out = linear(x.to(DType::BFloat16), w.to(DType::BFloat16), b.to(DType::BFloat16));
  EXPECT_EQ(out.dtype(), DType::BFloat16);
  EXPECT_TRUE(testing::all_close(out, linear(x, w, b), Tolerance::bf16()));
}

TEST(ReferenceLinear, RejectsBadArgumentsWithMessagesNamingTheValue) {
  const Tensor x = randn({2, 5});
  const Tensor w = randn({3, 5});
  const std::vector<testing::ErrorCase> rows = {
      {"in_features mismatch",
       [&] {
         return linear(x, randn({3, 4}));
       },
       "input has 5 features (last dim of float32[2, 5]), weight expects 4"},
      {"1-d weight", [&] { return linear(x, randn({5})); }, "weight must be 2-d"},
      {"3-d weight",
       [&] {
         return linear(x, randn({1, 3, 5}));
       },
       "weight must be 2-d"},
      {"bias wrong length", [&] { return linear(x, w, randn({4})); },
       "bias must be 1-d with out_features (3) elements"},
      {"2-d bias",
       [&] {
         return linear(x, w, randn({1, 3}));
       },
       "bias must be 1-d with out_features (3) elements"},
      {"0-d input", [&] { return linear(randn({}), w); }, "input must have at least 1 dimension"},
      {"weight bf16, input f32", [&] { return linear(x, w.to(DType::BFloat16)); },
       "weight dtype bfloat16 does not match input dtype float32"},
      {"bias bf16, input f32", [&] { return linear(x, w, randn({3}).to(DType::BFloat16)); },
       "bias dtype bfloat16 does not match input dtype float32"},
      {"int64 input",
       [&] {
         return linear(empty({2, 5}, DType::Int64), empty({3, 5}, DType::Int64));
       },
       "input dtype int64 is not supported"},
      {"undefined input", [&] { return linear(Tensor{}, w); }, "input is undefined"},
      {"undefined weight", [&] { return linear(x, Tensor{}); }, "weight is undefined"},
  };
  testing::expect_errors(rows, "linear: ");
}

}  // namespace
}  // namespace refold
