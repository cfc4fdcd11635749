#include "refold/nn/activation.h"

#include <cmath>

#include "core/check.h"
#include "refold/functional.h"

namespace refold::nn {

Tensor ReLU::forward(const Tensor& input) { return functional::relu(input); }
Tensor ReLU6::forward(const Tensor& input) { return functional::relu6(input); }

LeakyReLU::LeakyReLU(const LeakyReLUOptions& options) : Module("LeakyReLU"), options_(options) {
  REFOLD_CHECK(std::isfinite(options_.negative_slope()),
               "LeakyReLU: negative_slope ({}) must be finite", options_.negative_slope());
}
Tensor LeakyReLU::forward(const Tensor& input) {
  return functional::leaky_relu(input, options_.negative_slope());
}

Tensor Sigmoid::forward(const Tensor& input) { return functional::sigmoid(input); }
Tensor SiLU::forward(const Tensor& input) { return functional::silu(input); }
Tensor Hardswish::forward(const Tensor& input) { return functional::hardswish(input); }
Tensor Hardsigmoid::forward(const Tensor& input) { return functional::hardsigmoid(input); }

}  // namespace refold::nn
