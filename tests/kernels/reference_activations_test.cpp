// Reference activations: known values (NaN included), every layout, bf16, bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "refold/reference.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"
#include "testing/layouts.h"

namespace refold {
namespace {

using testing::Tolerance;
constexpr auto CL = MemoryFormat::ChannelsLast;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

Tensor vec(std::vector<float> v) {
  const auto n = static_cast<std::int64_t>(v.size());
  return from_values(v, {n});
}

// Values from −7 to 7 in steps that hit the kinks of every op (−3, 0, 3, 6) and points between.
Tensor spread(const Shape& sizes) {
  Tensor t = empty(sizes);
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 57) * 0.25f - 7.0f;
  return from_values(v, sizes);
}

const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>>& all_ops() {
  static const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> ops = {
      {"relu", [](const Tensor& x) { return reference::relu(x); }},
      {"relu6", [](const Tensor& x) { return reference::relu6(x); }},
      {"leaky_relu", [](const Tensor& x) { return reference::leaky_relu(x, 0.2); }},
      {"sigmoid", [](const Tensor& x) { return reference::sigmoid(x); }},
      {"silu", [](const Tensor& x) { return reference::silu(x); }},
      {"hardswish", [](const Tensor& x) { return reference::hardswish(x); }},
      {"hardsigmoid", [](const Tensor& x) { return reference::hardsigmoid(x); }},
  };
  return ops;
}

// Values exactly representable in float32 on both sides compare exactly.
TEST(ReferenceActivations, PiecewiseLinearKnownValues) {
  EXPECT_TRUE(testing::all_close(reference::relu(vec({-2, -0.5f, 0, 1.5f, kNaN})),
                                 vec({0, 0, 0, 1.5f, kNaN}), Tolerance::exact()));
  EXPECT_TRUE(testing::all_close(reference::relu6(vec({-1, 3, 6, 7.5f, kNaN})),
                                 vec({0, 3, 6, 6, kNaN}), Tolerance::exact()));
  EXPECT_TRUE(testing::all_close(reference::leaky_relu(vec({-4, -1, 2, kNaN}), 0.25),
                                 vec({-1, -0.25f, 2, kNaN}), Tolerance::exact()));
  EXPECT_TRUE(testing::all_close(reference::leaky_relu(vec({-200, 3})),  // default slope 0.01
                                 vec({-2, 3}), Tolerance::exact()));
  // hardswish: x · relu6(x + 3) / 6:  −1.5 → −1.5·1.5/6 = −0.375,  1.5 → 1.5·4.5/6 = 1.125.
  EXPECT_TRUE(testing::all_close(reference::hardswish(vec({-4, -3, -1.5f, 0, 1.5f, 3, 4, kNaN})),
                                 vec({0, 0, -0.375f, 0, 1.125f, 3, 4, kNaN}), Tolerance::exact()));
  // hardsigmoid: relu6(x + 3) / 6.
  EXPECT_TRUE(testing::all_close(reference::hardsigmoid(vec({-4, -3, 0, 1.5f, 3, 4, kNaN})),
                                 vec({0, 0, 0.5f, 0.75f, 1, 1, kNaN}), Tolerance::exact()));
}

TEST(ReferenceActivations, LogisticKnownValues) {
  // σ(±ln 3) = 1 / (1 + 1/3) = 3/4 and 1/4; σ(0) = 1/2; the tails saturate without overflow.
  // ln 3 itself is rounded to float, so these compare with the fp32 policy.
  const float ln3 = std::log(3.0f);
  EXPECT_TRUE(testing::all_close(reference::sigmoid(vec({0, ln3, -ln3, -1000, 1000, kNaN})),
                                 vec({0.5f, 0.75f, 0.25f, 0, 1, kNaN}), Tolerance::op_f32()));
  // silu(x) = x·σ(x): ln 3 → 0.75·ln 3, −ln 3 → −0.25·ln 3.
  EXPECT_TRUE(testing::all_close(reference::silu(vec({0, ln3, -ln3, -1000, 1000, kNaN})),
                                 vec({0, 0.75f * ln3, -0.25f * ln3, 0, 1000, kNaN}),
                                 Tolerance::op_f32()));
}

TEST(ReferenceActivations, EveryLayoutGivesTheSameValuesAndKeepsItsFormat) {
  for (std::int64_t c : {13, 19}) {
    const Tensor x = spread({2, c, 3, 5});
    for (const auto& [op_name, op] : all_ops()) {
      const Tensor expected = op(x);
      for (const auto& [name, input, suggests] : testing::layouts(x)) {
        SCOPED_TRACE(op_name + " on " + name + " C=" + std::to_string(c));
        const Tensor y = op(input);
        EXPECT_TRUE(testing::all_close(y, expected, Tolerance::exact()));
        EXPECT_TRUE(testing::preserves_format(y, input));
      }
    }
  }
}

TEST(ReferenceActivations, AnyRankWorks) {
  // 0-d and 1-d tensors are element-wise too.
  EXPECT_FLOAT_EQ(reference::relu6(full({}, 9.0f)).item(), 6.0f);
  EXPECT_TRUE(testing::all_close(reference::hardsigmoid(full({2, 3, 1}, 3.0f)),
                                 full({2, 3, 1}, 1.0f), Tolerance::exact()));
}

TEST(ReferenceActivations, BFloat16MatchesFloat32WithinBf16Tolerance) {
  // The bf16 run sees its input rounded to 8 significant bits and rounds its output once more;
  // against the fp32 result that is a relative error of about 2^-8 (times the slope), which only
  // the bf16 policy admits.
  const Tensor x = spread({2, 13, 3, 5});
  for (const auto& [op_name, op] : all_ops()) {
    SCOPED_TRACE(op_name);
    const Tensor y = op(x.to(DType::BFloat16, CL));
    EXPECT_EQ(y.dtype(), DType::BFloat16);
    EXPECT_TRUE(y.is_contiguous(CL));
    EXPECT_TRUE(testing::all_close(y, op(x), Tolerance::bf16()));
  }
}

TEST(ReferenceActivations, BadArguments) {
  const Tensor int64 = zeros({2, 3}, {DType::Int64});
  for (const auto& entry : all_ops()) {
    const auto& op_name = entry.first;  // not a structured binding: clang 14 cannot capture those
    const auto& op = entry.second;
    testing::expect_errors({
        {op_name + " undefined input", [&] { op(Tensor{}); }, op_name + ": input is undefined"},
        {op_name + " int64 input", [&] { op(int64); }, op_name + ": input has dtype int64"},
    });
  }
  EXPECT_TRUE(testing::throws_error([] { reference::leaky_relu(ones({2}), std::nan("")); },
                                    "leaky_relu: negative_slope (nan)"));
}

}  // namespace
}  // namespace refold
