// IsNaN and IsInf (src/ops/values.cpp): bool (int64 0/1) results, detect_negative /
// detect_positive, bfloat16 and int64 inputs, channels_last, and the error messages. The ONNX
// backend tests test_isnan and test_isinf* run in conformance.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "onnx/ops_tensor_helpers.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"

namespace refold::testing {
namespace values_ops {

using I64s = std::vector<std::int64_t>;
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(OnnxIsNaNIsInf, ClassifyEachElement) {
  const Tensor x = values({-1.2f, NAN, kInf, 2.8f, -kInf, kInf}, {6});
  EXPECT_EQ(i64_values(OpCase("IsNaN", {"x"}).run({x})), (I64s{0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(i64_values(OpCase("IsInf", {"x"}).run({x})), (I64s{0, 0, 1, 0, 1, 1}));
  EXPECT_EQ(i64_values(OpCase("IsInf", {"x"}).integer("detect_negative", 0).run({x})),
            (I64s{0, 0, 1, 0, 0, 1}));
  EXPECT_EQ(i64_values(OpCase("IsInf", {"x"}).integer("detect_positive", 0).run({x})),
            (I64s{0, 0, 0, 0, 1, 0}));
  // bfloat16 keeps NaN and Inf; int64 has neither.
  EXPECT_EQ(i64_values(OpCase("IsNaN", {"x"}).run({x.to(DType::BFloat16)})),
            (I64s{0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(i64_values(OpCase("IsInf", {"x"}).run({i64({1, 2})})), (I64s{0, 0}));
  // A channels_last input gives a channels_last result of the same values.
  Tensor y = random({1, 3, 2, 2}, 1);
  y.set({0, 2, 1, 0}, NAN);
  const Tensor r = OpCase("IsNaN", {"x"}).run({to_channels_last(y)});
  EXPECT_TRUE(is_channels_last(r));
  EXPECT_EQ(i64_values(r), i64_values(OpCase("IsNaN", {"x"}).run({y})));
  EXPECT_EQ(i64_values(r)[2 * 4 + 2], 1);
}

TEST(OnnxIsNaNIsInf, Errors) {
  expect_errors({
      {"flag", [] { OpCase("IsInf", {"x"}).integer("detect_positive", 2).module(); },
       "detect_positive must be 0 or 1 (got 2)"},
      {"IsNaN attribute", [] { OpCase("IsNaN", {"x"}).integer("detect_negative", 1).module(); },
       "IsNaN has no attribute detect_negative"},
      {"arity",
       [] {
         OpCase("IsNaN", {"x", "y"}).module();
       },
       "expects 1 to 1 inputs, got 2"},
  });
}

}  // namespace values_ops
}  // namespace refold::testing
