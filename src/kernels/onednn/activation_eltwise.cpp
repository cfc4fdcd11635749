#include "kernels/onednn/activation_eltwise.h"

namespace refold::onednn {

std::vector<EltwiseOp> activation_eltwise(Activation activation, double negative_slope) {
  using alg = dnnl::algorithm;
  switch (activation) {
    case Activation::None:
      return {};
    case Activation::ReLU:
      return {{alg::eltwise_relu}};
    case Activation::ReLU6:  // clip_v2(x, 0, 6) = min(max(x, 0), 6)
      return {{alg::eltwise_clip_v2, 0.f, 6.f}};
    case Activation::LeakyReLU:  // oneDNN's relu with alpha is leaky: x > 0 ? x : alpha·x
      return {{alg::eltwise_relu, static_cast<float>(negative_slope)}};
    case Activation::Sigmoid:
      return {{alg::eltwise_logistic}};
    case Activation::SiLU:  // swish(x) = x·sigmoid(alpha·x), alpha = 1
      return {{alg::eltwise_swish, 1.f}};
    case Activation::HardSwish:  // oneDNN 2.6: x·relu6(x + 3)/6, alpha and beta ignored
      return {{alg::eltwise_hardswish}};
    case Activation::HardSigmoid:
      // oneDNN 2.6 has no eltwise_hardsigmoid: relu6(x + 3)/6 = clip(x/6 + 1/2, 0, 1).
      return {{alg::eltwise_linear, 1.f / 6.f, 0.5f}, {alg::eltwise_clip_v2, 0.f, 1.f}};
    case Activation::GELU:
      return {{alg::eltwise_gelu_erf}};
    case Activation::GELUTanh:
      return {{alg::eltwise_gelu_tanh}};
  }
  return {};
}

}  // namespace refold::onednn
