#include "refold/nn/batchnorm.h"

#include <cmath>

#include "core/check.h"
#include "refold/functional.h"

namespace refold::nn {

BatchNorm2d::BatchNorm2d(const BatchNorm2dOptions& options)
    : BatchNorm2d(options, {}, {}, {}, {}) {}

BatchNorm2d::BatchNorm2d(const BatchNorm2dOptions& options, Tensor weight, Tensor bias,
                         Tensor running_mean, Tensor running_var)
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
  if (!running_mean.defined() && !running_var.defined() && !weight.defined() && !bias.defined()) {
    running_mean = zeros(c);
    running_var = ones(c);
    if (o.affine()) {
      weight = ones(c);
      bias = zeros(c);
    }
  }
  REFOLD_CHECK(weight.defined() == o.affine() && bias.defined() == o.affine(),
               "BatchNorm2d: affine={} but weight and bias are {}given", o.affine(),
               weight.defined() ? "" : "not ");
  const char* names[] = {"weight", "bias", "running_mean", "running_var"};
  const Tensor* given[] = {&weight, &bias, &running_mean, &running_var};
  for (int i = 0; i < 4; ++i) {
    const Tensor& t = *given[i];
    if (!t.defined() && i < 2) continue;
    REFOLD_CHECK(t.defined() && t.sizes() == c && is_floating(t.dtype()) &&
                     t.dtype() == running_mean.dtype(),
                 "BatchNorm2d: {} is {}; expected a float [{}] of running_mean's dtype", names[i],
                 t.defined() ? t.description() : "undefined", o.num_features());
  }
  if (o.affine()) {
    weight_ = register_parameter("weight", weight);
    bias_ = register_parameter("bias", bias);
  }
  running_mean_ = register_buffer("running_mean", running_mean);
  running_var_ = register_buffer("running_var", running_var);
  num_batches_tracked_ = register_buffer("num_batches_tracked", zeros({}, DType::Int64));
}

Tensor BatchNorm2d::forward(const Tensor& input) {
  return functional::batch_norm(input, running_mean_, running_var_, weight_, bias_, options_.eps());
}

}  // namespace refold::nn
