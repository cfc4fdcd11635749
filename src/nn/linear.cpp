#include "refold/nn/linear.h"

#include "core/check.h"
#include "nn/init.h"
#include "refold/functional.h"

namespace refold::nn {

Linear::Linear(const LinearOptions& options) : Module("Linear"), options_(options) {
  const auto& o = options_;
  REFOLD_CHECK(o.in_features() > 0, "Linear: in_features ({}) must be positive", o.in_features());
  REFOLD_CHECK(o.out_features() > 0, "Linear: out_features ({}) must be positive",
               o.out_features());
  // nn/init.h: kaiming_uniform_(a=√5) and the bias rule both give bound 1/√in_features.
  const double bound = detail::default_init_bound(o.in_features());
  weight_ =
      register_parameter("weight", detail::uniform({o.out_features(), o.in_features()}, bound));
  if (o.bias()) bias_ = register_parameter("bias", detail::uniform({o.out_features()}, bound));
}

Tensor Linear::forward(const Tensor& input) { return functional::linear(input, weight_, bias_); }

}  // namespace refold::nn
