// An activation (refold/post_ops.h) as the oneDNN eltwise operations that compute it, in the
// order oneDNN applies them to an f32 accumulator: the post-ops of a conv (conv_primitive.cpp)
// and of a linear (linear.cpp) append them alike.
#pragma once

#include <vector>

#include "kernels/onednn/engine.h"
#include "refold/post_ops.h"

namespace refold::onednn {

struct EltwiseOp {
  dnnl::algorithm alg = dnnl::algorithm::undef;
  float alpha = 0.f, beta = 0.f;
};

// Empty for Activation::None; one entry for most activations, two for HardSigmoid.
std::vector<EltwiseOp> activation_eltwise(Activation activation, double negative_slope);

}  // namespace refold::onednn
