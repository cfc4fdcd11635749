// Reference add and mul: known values, broadcasting, the output-layout rule, every layout, bf16,
// bad arguments.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/reference/onnx_ops.h"
#include "refold/reference.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"
#include "testing/layouts.h"

namespace refold {
namespace {

using testing::Tolerance;
using testing::values;
constexpr auto CL = MemoryFormat::ChannelsLast;

TEST(ReferenceBinary, KnownValuesSameShape) {
  const Tensor a = values({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor b = values({0.5f, -1, 10, 2, 0, -3}, {2, 3});
  EXPECT_TRUE(testing::all_close(reference::add(a, b), values({1.5f, 1, 13, 6, 5, 3}, {2, 3}),
                                 Tolerance::exact()));
  EXPECT_TRUE(testing::all_close(reference::mul(a, b), values({0.5f, -2, 30, 8, 0, -18}, {2, 3}),
                                 Tolerance::exact()));
}

TEST(ReferenceBinary, BroadcastsLikeNumPy) {
  const Tensor a = values({1, 2, 3, 4, 5, 6}, {2, 3});
  // Row vector [3] repeats over rows; column [2, 1] repeats over columns.
  EXPECT_TRUE(testing::all_close(reference::add(a, values({10, 20, 30}, {3})),
                                 values({11, 22, 33, 14, 25, 36}, {2, 3}), Tolerance::exact()));
  EXPECT_TRUE(testing::all_close(reference::mul(values({2, -1}, {2, 1}), a),
                                 values({2, 4, 6, -4, -5, -6}, {2, 3}), Tolerance::exact()));
  // Both sides grow: [2, 1, 3] + [4, 1] → [2, 4, 3], out[i, j, k] = a[i, 0, k] + b[j, 0].
  const Tensor a3 = values({1, 2, 3, 4, 5, 6}, {2, 1, 3});
  const Tensor b2 = values({100, 200, 300, 400}, {4, 1});
  const Tensor sum = reference::add(a3, b2);
  ASSERT_EQ(sum.sizes(), (Shape{2, 4, 3}));
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 4; ++j)
      for (std::int64_t k = 0; k < 3; ++k)
        EXPECT_EQ(sum.at({i, j, k}), a3.at({i, 0, k}) + b2.at({j, 0}));
  // A 0-d tensor broadcasts to anything.
  EXPECT_TRUE(testing::all_close(reference::mul(full({}, 3.0f), a),
                                 values({3, 6, 9, 12, 15, 18}, {2, 3}), Tolerance::exact()));
  // Zero-size dims broadcast against 1.
  EXPECT_EQ(reference::add(empty({0, 3}), ones({1, 3})).sizes(), (Shape{0, 3}));
}

TEST(ReferenceBinary, OutputTakesTheLayoutOfTheOperandWithTheOutputShape) {
  const Tensor nchw = randn({2, 5, 3, 4});
  const Tensor cl = randn({2, 5, 3, 4}).contiguous(CL);
  const Tensor per_channel = randn({5, 1, 1});
  // a has the output shape and b broadcasts: a's layout.
  EXPECT_TRUE(reference::add(cl, per_channel).is_contiguous(CL));
  EXPECT_TRUE(reference::add(nchw, per_channel).is_contiguous());
  // Both have it: a's, in either kernel (layout_operand).
  EXPECT_TRUE(reference::add(cl, nchw).is_contiguous(CL));
  EXPECT_TRUE(reference::add(nchw, cl).is_contiguous());
  EXPECT_TRUE(reference::arith(nchw, cl, reference::ArithOp::Sub).is_contiguous());
  EXPECT_TRUE(reference::arith(cl, nchw, reference::ArithOp::Div).is_contiguous(CL));
  // Only b has it: b's layout.
  EXPECT_TRUE(reference::mul(per_channel, cl).is_contiguous(CL));
  // Neither has it: contiguous.
  const Tensor y = reference::mul(randn({1, 5, 1, 1}), randn({2, 1, 3, 4}).contiguous(CL));
  EXPECT_EQ(y.sizes(), (Shape{2, 5, 3, 4}));
  EXPECT_TRUE(y.is_contiguous());
}

TEST(ReferenceBinary, EveryLayoutGivesTheSameValues) {
  for (std::int64_t c : {13, 19}) {
    Generator gen(c);
    const Tensor x = randn({2, c, 3, 5}, {}, gen);
    const Tensor other = randn({2, c, 3, 5}, {}, gen);
    const Tensor bias = randn({c, 1, 1}, {}, gen);
    const Tensor expected_add = reference::add(x, bias);
    const Tensor expected_mul = reference::mul(x, other);
    for (const auto& [name, input, suggests] : testing::layouts(x)) {
      SCOPED_TRACE(name + " C=" + std::to_string(c));
      const Tensor y = reference::add(input, bias);
      EXPECT_TRUE(testing::all_close(y, expected_add, Tolerance::exact()));
      EXPECT_TRUE(testing::preserves_format(y, input));  // input has the output's shape
      EXPECT_TRUE(
          testing::all_close(reference::add(bias, input), expected_add, Tolerance::exact()));
      for (const auto& [other_name, other_input, other_suggests] : testing::layouts(other)) {
        SCOPED_TRACE("other " + other_name);
        EXPECT_TRUE(testing::all_close(reference::mul(input, other_input), expected_mul,
                                       Tolerance::exact()));
      }
    }
  }
}

TEST(ReferenceBinary, BFloat16MatchesFloat32WithinBf16Tolerance) {
  // Each bf16 operand carries a rounding error of up to 2^-9 relative and the output is rounded
  // again; exact against the fp32 result is impossible, the bf16 policy bounds it.
  Generator gen(5);
  const Tensor a = randn({2, 13, 3, 3}, {}, gen), b = randn({13, 1, 1}, {}, gen);
  const auto bf = DType::BFloat16;
  for (const auto& [name, op] :
       std::vector<std::pair<std::string, std::function<Tensor(const Tensor&, const Tensor&)>>>{
           {"add", [](const Tensor&x, const Tensor&y) { return reference::add(x, y); }},
           {"mul", [](const Tensor&x, const Tensor&y) { return reference::mul(x, y); }}}) {
    SCOPED_TRACE(name);
    const Tensor y = op(a.to(bf, CL), b.to(bf));
    EXPECT_EQ(y.dtype(), bf);
    EXPECT_TRUE(y.is_contiguous(CL));
    EXPECT_TRUE(testing::all_close(y, op(a, b), Tolerance::bf16()));
  }
}

TEST(ReferenceBinary, BadArguments) {
  const Tensor x = ones({2, 3});
  testing::expect_errors({
      {"incompatible shapes",
       [&] {
         return reference::add(ones({2, 3}), ones({4}));
       },
       "add: shapes [2, 3] and [4] cannot be broadcast (dimension -1: 3 vs 4)"},
      {"incompatible leading dim",
       [&] {
         return reference::mul(ones({2, 5, 1}), ones({3, 1, 7}));
       },
       "mul: shapes [2, 5, 1] and [3, 1, 7] cannot be broadcast (dimension -3: 2 vs 3)"},
      {"zero against three", [&] { return reference::add(empty({0}), ones({3})); },
       "add: shapes [0] and [3] cannot be broadcast"},
      {"undefined a", [&] { return reference::add({}, x); }, "add: a is undefined"},
      {"undefined b", [&] { return reference::mul(x, {}); }, "mul: b is undefined"},
      {"int64",
       [&] {
         return reference::add(x, zeros({2, 3}, {DType::Int64}));
       },
       "add: b has dtype int64"},
      {"mixed dtypes", [&] { return reference::mul(x.to(DType::BFloat16), x); },
       "mul: a has dtype bfloat16 but b has float32"},
  });
}

}  // namespace
}  // namespace refold
