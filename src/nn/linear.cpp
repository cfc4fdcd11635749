#include "refold/nn/linear.h"

#include "core/check.h"
#include "nn/init.h"
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
  const double bound = detail::default_init_bound(o.in_features());
  if (!weight.defined()) {
    REFOLD_CHECK(!bias.defined(), "Linear: a bias is given without a weight");
    weight = detail::uniform({o.out_features(), o.in_features()}, bound);
    if (o.bias()) bias = detail::uniform({o.out_features()}, bound);
  }
  REFOLD_CHECK(
      weight.sizes() == Shape({o.out_features(), o.in_features()}) && is_floating(weight.dtype()),
      "Linear: the weight given is {}; its options need a float [{}, {}]", weight.description(),
      o.out_features(), o.in_features());
  REFOLD_CHECK(o.bias() == bias.defined(), "Linear: the options say bias={} but a bias is {}",
               o.bias(), bias.defined() ? "given" : "not given");
  if (bias.defined())
    REFOLD_CHECK(bias.sizes() == Shape({o.out_features()}) && bias.dtype() == weight.dtype(),
                 "Linear: the bias given is {}; its options need a [{}] of the weight's dtype {}",
                 bias.description(), o.out_features(), dtype_name(weight.dtype()));
  weight_ = register_parameter("weight", weight);
  if (bias.defined()) bias_ = register_parameter("bias", bias);
}

Tensor Linear::forward(const Tensor& input) { return functional::linear(input, weight_, bias_); }

}  // namespace refold::nn
