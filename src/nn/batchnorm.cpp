#include "refold/nn/batchnorm.h"

#include <cmath>

#include "core/check.h"
#include "refold/functional.h"

namespace refold::nn {

BatchNorm2d::BatchNorm2d(const BatchNorm2dOptions& options)
    : Module("BatchNorm2d"), options_(options) {
  const auto& o = options_;
  REFOLD_CHECK(o.num_features() > 0, "BatchNorm2d: num_features ({}) must be positive",
               o.num_features());
  // eps keeps √(var + eps) away from 0; a negative eps could make it imaginary.
  REFOLD_CHECK(std::isfinite(o.eps()) && o.eps() >= 0,
               "BatchNorm2d: eps ({}) must be finite and non-negative", o.eps());
  REFOLD_CHECK(o.track_running_stats(),
               "BatchNorm2d: track_running_stats=false is not supported (inference uses the "
               "running statistics)");
  const Shape c{o.num_features()};
  if (o.affine()) {
    weight_ = register_parameter("weight", ones(c));
    bias_ = register_parameter("bias", zeros(c));
  }
  running_mean_ = register_buffer("running_mean", zeros(c));
  running_var_ = register_buffer("running_var", ones(c));
  num_batches_tracked_ = register_buffer("num_batches_tracked", zeros({}, DType::Int64));
}

Tensor BatchNorm2d::forward(const Tensor& input) {
  return functional::batch_norm(input, running_mean_, running_var_, weight_, bias_, options_.eps());
}

}  // namespace refold::nn
