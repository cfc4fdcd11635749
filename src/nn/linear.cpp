#include "refold/nn/linear.h"

#include "core/check.h"
#include "kernels/post_ops.h"
#include "nn/init.h"
#include "refold/error.h"
#include "refold/functional.h"

namespace refold::nn {

Linear::Linear(const LinearOptions& options) : Linear(options, {}, {}) {}

Linear::Linear(const LinearOptions& options, Tensor weight, Tensor bias)
    : Module("Linear"), options_(options) {
  const auto& o = options_;
  REFOLD_CHECK(o.in_features() > 0, "Linear: in_features ({}) must be positive", o.in_features());
  REFOLD_CHECK(o.out_features() > 0, "Linear: out_features ({}) must be positive",
               o.out_features());
  // nn/init.h: kaiming_uniform_(a=√5) and the bias rule both give bound 1/√in_features.
  detail::weight_and_bias("Linear", {o.out_features(), o.in_features()}, o.out_features(), o.bias(),
                          weight, bias);
  weight_ = register_parameter("weight", weight);
  if (bias.defined()) bias_ = register_parameter("bias", bias);
}

Tensor Linear::forward(const Tensor& input) {
  return functional::linear(input, weight_, bias_, post_);
}

Tensor Linear::forward_with_residual(const Tensor& input, const Tensor& residual) {
  REFOLD_CHECK(residual.defined(), "{}: forward_with_residual given an undefined residual",
               type_name());
  PostOps post = post_;
  post.residual = residual;
  try {
    return functional::linear(input, weight_, bias_, post);
  } catch (const Error& e) {
    throw e.with_context(type_name());  // called directly, not through Module::operator()
  }
}

void Linear::set_activation(Activation activation, double negative_slope) {
  check_activation(type_name(), activation, negative_slope);
  post_.activation = activation;
  post_.negative_slope = negative_slope;
}

}  // namespace refold::nn
