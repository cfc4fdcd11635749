// torch.nn.Linear: y = x · weightᵀ + bias over the last dimension.
//
//   nn::Linear(nn::LinearOptions(512, 10).bias(false))   or   nn::Linear(512, 10)
//
// Parameters "weight" [out_features, in_features] and "bias" [out_features], initialized as
// PyTorch's reset_parameters(): U(−1/√in_features, 1/√in_features) from default_generator().
//
// Fused activation (not in PyTorch's Linear; refold/post_ops.h): set_activation(GELU) makes
// forward() compute gelu(x·weightᵀ + bias) in one oneDNN inner product, and
// forward_with_residual(x, r) computes act(x·weightᵀ + bias + r) — a transformer's MLP and its
// x + proj(y) without a pass over memory each.
//
// Memory format: Linear keeps the default accepts_channels_last() == true. Its input is
// [..., in_features] (in a CNN, the 2-d output of Flatten), which has no channels_last layout,
// and the kernel reads any strides, so declaring it incompatible would change nothing.
#pragma once

#include <cstdint>

#include "refold/nn/module.h"
#include "refold/post_ops.h"

namespace refold::nn {

class LinearOptions {
 public:
  LinearOptions(std::int64_t in_features, std::int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}

  std::int64_t in_features() const { return in_features_; }
  std::int64_t out_features() const { return out_features_; }
  LinearOptions& bias(bool value) {
    bias_ = value;
    return *this;
  }
  bool bias() const { return bias_; }

 private:
  std::int64_t in_features_;
  std::int64_t out_features_;
  bool bias_ = true;
};

class Linear : public Module {
 public:
  explicit Linear(const LinearOptions& options);
  Linear(std::int64_t in_features, std::int64_t out_features)
      : Linear(LinearOptions(in_features, out_features)) {}
  // Over given parameters, registered as they are (no initial values drawn): `weight`
  // [out_features, in_features], `bias` [out_features] when options.bias(), else undefined.
  Linear(const LinearOptions& options, Tensor weight, Tensor bias);

  Tensor forward(const Tensor& input) override;
  // activation(x·weightᵀ + bias + residual) in one primitive; `residual` must have the output's
  // sizes and dtype.
  Tensor forward_with_residual(const Tensor& input, const Tensor& residual);

  // The activation applied to forward()'s result (None by default); negative_slope is
  // LeakyReLU's and must be finite. Throws refold::Error for an unknown activation.
  void set_activation(Activation activation, double negative_slope = 0.01);
  Activation activation() const { return post_.activation; }
  double negative_slope() const { return post_.negative_slope; }

  const LinearOptions& options() const { return options_; }
  Tensor weight() const { return weight_; }
  Tensor bias() const { return bias_; }  // undefined when !has_bias()
  bool has_bias() const { return bias_.defined(); }

 private:
  LinearOptions options_;
  Tensor weight_;
  Tensor bias_;
  PostOps post_;  // the activation only; the residual is per call
};

}  // namespace refold::nn
