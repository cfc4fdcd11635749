// The tolerance policy of docs/testing.md, in one place. Tests name a policy, never a number.
//   EXPECT_TRUE(testing::all_close(actual, expected, testing::Tolerance::op_f32()));
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "refold/tensor.h"

namespace refold::testing {

struct Tolerance {
  double atol = 0;
  double rtol = 0;
  // fp32 op vs reference: |a − b| ≤ 1e-4 + 1e-4·|ref|.
  static Tolerance op_f32() { return {1e-4, 1e-4}; }
  // bf16 result vs the fp32 reference: |a − b| ≤ 5e-2 + 2e-2·|ref| (8 mantissa bits, so one
  // rounding of each input and of the output is ≈ 2^-8 relative, accumulated over a dot product).
  static Tolerance bf16() { return {5e-2, 2e-2}; }
  // A pure restructuring (no arithmetic changed): bit-identical.
  static Tolerance exact() { return {0, 0}; }
};

// Compares sizes, then every element: |actual − expected| ≤ atol + rtol·|expected|. NaNs must
// match NaNs. On failure the message names the first bad index and the worst error.
::testing::AssertionResult all_close(const Tensor& actual, const Tensor& expected,
                                     Tolerance tolerance);

// Re-parameterized vs original (docs/testing.md): max|a − b| ≤ 1e-4 · max(1, max|ref|).
::testing::AssertionResult model_close(const Tensor& actual, const Tensor& expected);

double max_abs_diff(const Tensor& a, const Tensor& b);

}  // namespace refold::testing
