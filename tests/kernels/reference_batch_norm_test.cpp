// Reference batch_norm (inference): known values, every layout, bf16, and the bad-argument table.
#include <gtest/gtest.h>

#include <string>
#include <vector>

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

TEST(ReferenceBatchNorm, KnownValues) {
  // Channel 0: mean 1, var 4 (std 2), weight 2, bias 0.5:  1 → 0.5,  2 → 1/2·2 + 0.5 = 1.5.
  // Channel 1: mean 3, var 0.25 (std 0.5), weight −1, bias 1:  3 → 1,  5 → −(2/0.5) + 1 = −3.
  const Tensor x = values({1, 2, 3, 5}, {1, 2, 1, 2});
  const Tensor y = reference::batch_norm(x, values({1, 3}, {2}), values({4, 0.25f}, {2}),
                                         values({2, -1}, {2}), values({0.5f, 1}, {2}), 0.0);
  EXPECT_TRUE(testing::all_close(y, values({0.5f, 1.5f, 1, -3}, {1, 2, 1, 2}), Tolerance::exact()));
}

TEST(ReferenceBatchNorm, AffineFalseAndEps) {
  // No weight or bias: (x − mean) / sqrt(var + eps); var 3 + eps 1 → std 2.
  const Tensor x = values({4, 8, -2}, {3, 1});
  const Tensor y = reference::batch_norm(x, values({2}, {1}), values({3}, {1}), {}, {}, 1.0);
  EXPECT_TRUE(testing::all_close(y, values({1, 3, -2}, {3, 1}), Tolerance::exact()));
}

TEST(ReferenceBatchNorm, ChannelIsDimOneForEveryRank) {
  // [N, C] and [N, C, L] (BatchNorm1d shapes): each element uses the stats of its dim-1 index.
  const Tensor mean = values({10, 20}, {2}), var = values({1, 1}, {2});
  const Tensor y2 = reference::batch_norm(values({11, 22, 13, 24}, {2, 2}), mean, var, {}, {}, 0);
  EXPECT_TRUE(testing::all_close(y2, values({1, 2, 3, 4}, {2, 2}), Tolerance::exact()));
  const Tensor y3 =
      reference::batch_norm(values({11, 12, 21, 22}, {1, 2, 2}), mean, var, {}, {}, 0);
  EXPECT_TRUE(testing::all_close(y3, values({1, 2, 1, 2}, {1, 2, 2}), Tolerance::exact()));
}

TEST(ReferenceBatchNorm, EveryLayoutGivesTheSameValuesAndKeepsItsFormat) {
  for (std::int64_t c : {13, 19}) {
    Generator gen(7 + c);
    const Tensor x = randn({2, c, 5, 3}, {}, gen);
    const Tensor mean = randn({c}, {}, gen), weight = randn({c}, {}, gen),
                 bias = randn({c}, {}, gen);
    const Tensor var = rand({c}, {}, gen);
    const Tensor expected = reference::batch_norm(x, mean, var, weight, bias);
    for (const auto& [name, input, suggests] : testing::layouts(x)) {
      SCOPED_TRACE(name + " C=" + std::to_string(c));
      const Tensor y = reference::batch_norm(input, mean, var, weight, bias);
      EXPECT_TRUE(testing::all_close(y, expected, Tolerance::exact()));
      EXPECT_TRUE(testing::preserves_format(y, input));
    }
  }
}

TEST(ReferenceBatchNorm, BFloat16MatchesFloat32WithinBf16Tolerance) {
  // The bf16 run sees inputs and parameters rounded to 8 significant bits and rounds its output
  // once more, so it can only match the fp32 result within the bf16 policy, not exactly.
  Generator gen(3);
  const Tensor x = randn({2, 13, 4, 4}, {}, gen);
  const Tensor mean = randn({13}, {}, gen), var = rand({13}, {}, gen),
               weight = randn({13}, {}, gen), bias = randn({13}, {}, gen);
  const Tensor expected = reference::batch_norm(x, mean, var, weight, bias);
  const auto bf = DType::BFloat16;
  const Tensor y =
      reference::batch_norm(x.to(bf, CL), mean.to(bf), var.to(bf), weight.to(bf), bias.to(bf));
  EXPECT_EQ(y.dtype(), bf);
  EXPECT_TRUE(y.is_contiguous(CL));
  EXPECT_TRUE(testing::all_close(y, expected, Tolerance::bf16()));
}

TEST(ReferenceBatchNorm, BadArguments) {
  const Tensor x = ones({2, 4, 3, 3});
  const Tensor p4 = ones({4});
  const Tensor var_neg = values({1, 1, 1, -0.5f}, {4});
  const Tensor var_zero = values({1, 0, 1, 1}, {4});
  testing::expect_errors({
      {"undefined input", [&] { return reference::batch_norm({}, p4, p4, p4, p4); },
       "batch_norm: input is undefined"},
      {"undefined running_mean", [&] { return reference::batch_norm(x, {}, p4, p4, p4); },
       "batch_norm: running_mean is undefined"},
      {"rank 1", [&] { return reference::batch_norm(ones({4}), p4, p4, p4, p4); },
       "at least 2 dimensions"},
      {"mean too short", [&] { return reference::batch_norm(x, ones({3}), p4, p4, p4); },
       "batch_norm: running_mean has shape [3], expected [4]"},
      {"weight too long", [&] { return reference::batch_norm(x, p4, p4, ones({5}), p4); },
       "batch_norm: weight has shape [5], expected [4]"},
      {"bias 2-d",
       [&] {
         return reference::batch_norm(x, p4, p4, p4, ones({1, 4}));
       },
       "batch_norm: bias has shape [1, 4], expected [4]"},
      {"negative variance", [&] { return reference::batch_norm(x, p4, var_neg, p4, p4); },
       "batch_norm: running_var[3] = -0.5 is negative"},
      {"zero variance, zero eps", [&] { return reference::batch_norm(x, p4, var_zero, {}, {}, 0); },
       "batch_norm: running_var[1] + eps is 0"},
      {"negative eps", [&] { return reference::batch_norm(x, p4, p4, p4, p4, -1e-5); },
       "batch_norm: eps (-1e-05) must be finite and non-negative"},
      {"int64 input",
       [&] {
         return reference::batch_norm(zeros({2, 4, 3, 3}, {DType::Int64}), p4, p4, p4, p4);
       },
       "batch_norm: input has dtype int64"},
      {"mixed dtypes", [&] { return reference::batch_norm(x, p4.to(DType::BFloat16), p4, p4, p4); },
       "batch_norm: running_mean has dtype bfloat16 but the input has float32"},
  });
}

}  // namespace
}  // namespace refold
