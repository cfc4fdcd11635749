// refold::verify: the errors it reports are the true ones (hand-computed), NaNs are handled, and
// bad arguments are refused.
#include "refold/verify.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "nn/nn_test_helpers.h"
#include "refold/nn/conv.h"

namespace refold {
namespace {

using testing::throws_error;

// A 2 → 2 1×1 conv without bias, every weight `value`.
std::shared_ptr<nn::Conv2d> constant_conv(float value, Size2d stride = 1) {
  auto conv = std::make_shared<nn::Conv2d>(nn::Conv2dOptions(2, 2, 1).stride(stride).bias(false));
  conv->weight().fill_(value);
  return conv;
}

TEST(Verify, ReportsTheLargestErrors) {
  const auto original = constant_conv(1.0f);
  const auto changed = constant_conv(1.0f);
  changed->weight().set({0, 1, 0, 0}, 1.5f);  // output channel 0 gains 0.5·x[1]
  // All-ones input: the original gives 2 everywhere, the changed model 2.5 on channel 0.
  const VerifyResult r =
      verify(*original, *changed, {ones({1, 2, 3, 3}), full({1, 2, 2, 2}, 2.0f)});
  ASSERT_EQ(r.outputs.size(), 2u);
  EXPECT_DOUBLE_EQ(r.outputs[0].max_abs_error, 0.5);
  EXPECT_DOUBLE_EQ(r.outputs[0].reference_max_abs, 2.0);
  EXPECT_DOUBLE_EQ(r.outputs[0].max_rel_error, 0.25);
  EXPECT_DOUBLE_EQ(r.outputs[1].max_abs_error, 1.0);  // input 2: 5 vs 4
  EXPECT_DOUBLE_EQ(r.max_abs_error(), 1.0);
  EXPECT_DOUBLE_EQ(r.max_rel_error(), 0.25);
  // docs/testing.md's criterion max|a − b| ≤ tol·max(1, max|ref|): 0.5 ≤ 0.3·2 but 1.0 > 0.2·4.
  EXPECT_TRUE(r.outputs[0].within(0.3));
  EXPECT_FALSE(r.outputs[1].within(0.2));
  EXPECT_FALSE(r.within());
  EXPECT_NE(r.to_string().find("output 1: max abs error 1"), std::string::npos) << r.to_string();

  const VerifyResult same = verify(*original, *original, {randn({1, 2, 4, 4})});
  EXPECT_EQ(same.max_abs_error(), 0.0);
  EXPECT_TRUE(same.within());
}

TEST(Verify, NaNs) {
  const auto a = constant_conv(1.0f);
  const auto b = constant_conv(1.0f);
  Tensor x = ones({1, 2, 1, 1});
  x.set({0, 0, 0, 0}, std::numeric_limits<float>::quiet_NaN());
  // NaN in both outputs at the same place agrees.
  EXPECT_EQ(verify(*a, *b, {x}).max_abs_error(), 0.0);
  // NaN in one only is an infinite error.
  b->weight().set({1, 1, 0, 0}, std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isinf(verify(*a, *b, {ones({1, 2, 1, 1})}).max_abs_error()));
}

TEST(Verify, BadArguments) {
  const auto a = constant_conv(1.0f);
  const auto strided = constant_conv(1.0f, 2);
  EXPECT_TRUE(throws_error([&] { verify(*a, *a, {}); }, "verify: no inputs to run"));
  EXPECT_TRUE(throws_error(
      [&] {
        verify(*a, *a, {ones({1, 2, 2, 2}), Tensor{}});
      },
      "verify: input 1 is undefined"));
  EXPECT_TRUE(throws_error(
      [&] {
        verify(*a, *strided, {ones({1, 2, 4, 4})});
      },
      "verify: input 0: the outputs differ in shape: original [1, 2, 4, 4], "
      "transformed [1, 2, 2, 2]"));
}

}  // namespace
}  // namespace refold
