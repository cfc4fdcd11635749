// refold::rounding_sensitivity and optimize_model's verification past the tolerance: an
// ill-conditioned model is computed only to its own rounding sensitivity in float32, so a
// rewrite that moves its outputs by about that much is accepted (and says so); a well-conditioned
// model's sensitivity is far below the tolerance and rescues nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <span>
#include <vector>

#include "refold/model_inputs.h"
#include "refold/onnx/onnx.h"
#include "refold/optimize.h"
#include "testing/graph_builder.h"

namespace refold {
namespace {

using testing::GraphBuilder;

constexpr std::int64_t kChannels = 8;
constexpr std::int64_t kTaps = kChannels * 3 * 3;  // weights per output channel

std::vector<float> normal_values(std::size_t n, float scale, Generator& gen) {
  std::vector<float> v(n);
  for (float& e : v) e = static_cast<float>(gen.normal()) * scale;
  return v;
}

// y = BN(conv_a(x)) − conv_b(x), conv_b being conv_a with the BN folded in, computed here: y is 0
// but for rounding, and conv_a's weights are large (|conv| ≈ 1e4), so float32 leaves y ≈ 1e-3 —
// ten times the tolerance of a model whose max |y| is below 1. Folding the BN into conv_a (as
// refold's passes do) rounds differently, by about as much.
void cancelling_model(GraphBuilder& b) {
  const std::string x = b.input("x", {1, kChannels, 6, 6});
  const std::vector<float> w = normal_values(kChannels * kTaps, 1000.0f, b.generator());
  const std::vector<float> bias = normal_values(kChannels, 1.0f, b.generator());
  std::vector<float> gamma, beta, mean, var;
  for (std::int64_t c = 0; c < kChannels; ++c) {
    gamma.push_back(0.7f + 0.1f * static_cast<float>(c));
    beta.push_back(-0.3f + 0.05f * static_cast<float>(c));
    mean.push_back(0.2f - 0.1f * static_cast<float>(c));
    var.push_back(0.6f + 0.2f * static_cast<float>(c));
  }
  // The fold: s = γ / √(σ² + ε), w' = w·s per output channel, b' = (b − μ)·s + β.
  std::vector<float> folded_w(w.size()), folded_b(kChannels);
  for (std::size_t c = 0; c < static_cast<std::size_t>(kChannels); ++c) {
    const float s = gamma[c] / std::sqrt(var[c] + 1e-5f);
    for (std::size_t k = 0; k < static_cast<std::size_t>(kTaps); ++k)
      folded_w[c * kTaps + k] = w[c * kTaps + k] * s;
    folded_b[c] = (bias[c] - mean[c]) * s + beta[c];
  }
  const auto conv = [&](const std::string& name, const std::vector<float>& weight,
                        const std::vector<float>& b_) {
    return b.node("Conv",
                  {x, b.constant(name + ".w", from_values(weight, {kChannels, kChannels, 3, 3})),
                   b.constant(name + ".b", from_values(b_, {kChannels}))},
                  testing::attrs({{"pads", std::vector<std::int64_t>{1, 1, 1, 1}}}), name);
  };
  const auto vec = [](const std::vector<float>& v) { return from_values(v, {kChannels}); };
  const std::string a =
      b.bn_with(conv("conv_a", w, bias), vec(gamma), vec(beta), vec(mean), vec(var));
  b.output(b.node("Sub", {a, conv("conv_b", folded_w, folded_b)}));
}

OptimizedModel optimize_verified(GraphBuilder& b) {
  const std::string bytes = onnx::save_to_bytes(b.graph());
  OptimizeOptions options;
  options.verify = true;
  return optimize_model(std::as_bytes(std::span(bytes.data(), bytes.size())), "model.onnx", {},
                        options);
}

TEST(RoundingSensitivity, IsLargeForACancellingModelAndTinyForAPlainOne) {
  GraphBuilder ill;
  cancelling_model(ill);
  const std::vector<Tensor> in = random_inputs(ill.graph(), 1, false);
  const std::vector<Tensor> out = ill.graph().run(in);
  const double ill_delta = rounding_sensitivity(ill.graph(), in, out);
  EXPECT_GT(ill_delta, 1e-4);  // past the tolerance of an output below 1

  GraphBuilder plain;
  const std::string x = plain.input("x", {1, kChannels, 6, 6});
  plain.output(plain.relu(plain.bn(plain.conv(x, kChannels, kChannels, {3, 3}), kChannels)));
  const std::vector<Tensor> pin = random_inputs(plain.graph(), 1, false);
  const double plain_delta = rounding_sensitivity(plain.graph(), pin, plain.graph().run(pin));
  EXPECT_LT(plain_delta * OutputDiff::kRoundingMargin, 1e-4 / 10);
}

TEST(RoundingSensitivity, OptimizeAcceptsRoundingOfAnIllConditionedModelAndSaysSo) {
  GraphBuilder b;
  cancelling_model(b);
  const OptimizedModel m = optimize_verified(b);
  const Verification& v = *m.report.verification;
  // Past the plain tolerance, within the rounding margin.
  EXPECT_GT(v.max_abs_error, OutputDiff::kModelTolerance * std::max(1.0, v.reference_max_abs));
  ASSERT_TRUE(v.rounding_sensitivity.has_value());
  EXPECT_LE(v.max_abs_error, OutputDiff::kRoundingMargin * *v.rounding_sensitivity);
  EXPECT_NE(m.report.to_string().find("rounding sensitivity"), std::string::npos);
  EXPECT_NE(m.report.to_json().find("\"rounding_sensitivity\""), std::string::npos);
}

TEST(RoundingSensitivity, AWellConditionedModelIsNotMeasured) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, kChannels, 6, 6});
  b.output(b.relu(b.bn(b.conv(x, kChannels, kChannels, {3, 3}), kChannels)));
  const OptimizedModel m = optimize_verified(b);
  EXPECT_FALSE(m.report.verification->rounding_sensitivity.has_value());
  EXPECT_NE(m.report.to_string().find("tolerance 1e-4 * max(1, max|IN|): ok"), std::string::npos);
}

TEST(RoundingSensitivity, AnErrorBeyondTheMarginIsStillRefused) {
  OutputDiff d;
  d.max_abs = 1e-3;
  d.reference_max_abs = 0.5;
  EXPECT_FALSE(d.within_model_tolerance());
  EXPECT_TRUE(d.within_rounding(1e-4));   // 1e-3 ≤ 16 · 1e-4
  EXPECT_FALSE(d.within_rounding(5e-5));  // 1e-3 > 16 · 5e-5
  EXPECT_FALSE(d.within_rounding(0));     // no measure rescues nothing
}

}  // namespace
}  // namespace refold
