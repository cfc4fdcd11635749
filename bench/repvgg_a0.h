// RepVGG-A0 for the benchmarks: the library's training-form model (refold/models/repvgg.h:
// deterministic weights, randomized BN statistics) plus the deploy-form fusion and the largest
// activation, which only the benchmarks need.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

#include "refold/models/repvgg.h"
#include "refold/nn/activation.h"
#include "refold/nn/basic.h"
#include "refold/nn/batchnorm.h"
#include "refold/nn/container.h"
#include "refold/nn/conv.h"
#include "refold/nn/linear.h"
#include "refold/nn/pooling.h"
#include "refold/nn/utils.h"
#include "refold/reparam/repvgg.h"
#include "refold/tensor.h"

namespace refold::bench {

// The model lives in the library (refold/models/repvgg.h); these names keep the benchmarks'.
using RepVGGA0 = models::RepVGG;

// Training-form RepVGG-A0: same seed, same model.
inline std::shared_ptr<RepVGGA0> make_repvgg_a0(std::uint64_t seed = 0) {
  return models::repvgg_a0(seed);
}

// Post-op fusion for the deploy form. A deployed RepVGGBlock computes
// nonlinearity(se(rbr_reparam(x))); with se an Identity and nonlinearity a ReLU, the ReLU is
// moved into the conv (Conv2d::set_activation) and the "nonlinearity" child becomes an Identity
// (names kept, so state_dict() is unchanged). Then nn::utils::fuse_conv_activations does the same
// for every Sequential (RepVGG-A0 has no conv → activation pair inside one; kept for other
// models). Returns the number of convs that took an activation.
inline std::size_t fuse_deployed_activations(nn::Module& model) {
  std::size_t fused = 0;
  model.apply([&fused](nn::Module& m) {
    const auto conv = std::dynamic_pointer_cast<nn::Conv2d>(m.child("rbr_reparam"));
    const auto se = m.child("se");
    const auto act = m.child("nonlinearity");
    if (!conv || !se || !act || typeid(*conv) != typeid(nn::Conv2d)) return;
    if (!dynamic_cast<nn::Identity*>(se.get()) || !dynamic_cast<nn::ReLU*>(act.get())) return;
    if (conv->activation() != Activation::None) return;
    conv->set_activation(Activation::ReLU);
    m.replace_child("nonlinearity", std::make_shared<nn::Identity>());
    ++fused;
  });
  return fused + nn::utils::fuse_conv_activations(model);
}

// The largest single activation of `model` on `input`, in bytes: the input and the output of
// every leaf step, where a Sequential (and the RepVGG root, whose forward runs its children in
// order) is walked into and anything else is one step. Runs the model once.
inline std::size_t largest_activation_bytes(nn::Module& model, const Tensor& input) {
  auto bytes = [](const Tensor& t) {
    return static_cast<std::size_t>(t.numel()) * t.element_size();
  };
  std::size_t largest = bytes(input);
  Tensor x = input;
  std::function<void(nn::Module&)> walk = [&](nn::Module& m) {
    if (dynamic_cast<nn::Sequential*>(&m) || dynamic_cast<RepVGGA0*>(&m)) {
      for (const auto& [name, child] : m.named_children()) walk(*child);
      return;
    }
    x = m(x);
    largest = std::max(largest, bytes(x));
  };
  walk(model);
  return largest;
}

}  // namespace refold::bench
