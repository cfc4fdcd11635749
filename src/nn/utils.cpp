#include "refold/nn/utils.h"

#include "core/check.h"
#include "nn/layout.h"
#include "refold/nn/activation.h"
#include "refold/nn/basic.h"
#include "refold/nn/container.h"
#include "refold/nn/conv.h"

#include <memory>
#include <optional>
#include <string>
#include <typeinfo>
#include <utility>

namespace refold::nn::utils {

Module& convert_conv2d_weight_memory_format(Module& module, MemoryFormat format) {
  REFOLD_CHECK(format != MemoryFormat::Preserve,
               "convert_conv2d_weight_memory_format: 'preserve' is not a target format (use "
               "contiguous or channels_last)");
  // dynamic_cast so that subclasses of the two conv modules are converted too, like PyTorch's
  // isinstance check. set_data swaps what the registered handle points to: the parameter
  // object, its name and every copy of it stay the same.
  return module.apply([format](Module& m) {
    Tensor weight;
    if (const auto* conv = dynamic_cast<const Conv2d*>(&m))
      weight = conv->weight();
    else if (const auto* deconv = dynamic_cast<const ConvTranspose2d*>(&m))
      weight = deconv->weight();
    if (!weight.defined()) return;
    // nn/layout.h: also restrides an ambiguous 1×1 kernel, as PyTorch does.
    const Tensor converted = detail::to_memory_format(weight, format);
    if (!converted.is_same(weight)) weight.set_data(converted);
  });
}

namespace {

// The fused form of an activation module, or nullopt when `m` is not one.
std::optional<std::pair<Activation, double>> activation_of(const Module& m) {
  if (dynamic_cast<const ReLU*>(&m)) return std::pair{Activation::ReLU, 0.0};
  if (dynamic_cast<const ReLU6*>(&m)) return std::pair{Activation::ReLU6, 0.0};
  if (const auto* leaky = dynamic_cast<const LeakyReLU*>(&m))
    return std::pair{Activation::LeakyReLU, leaky->options().negative_slope()};
  if (dynamic_cast<const Sigmoid*>(&m)) return std::pair{Activation::Sigmoid, 0.0};
  if (dynamic_cast<const SiLU*>(&m)) return std::pair{Activation::SiLU, 0.0};
  if (dynamic_cast<const Hardswish*>(&m)) return std::pair{Activation::HardSwish, 0.0};
  if (dynamic_cast<const Hardsigmoid*>(&m)) return std::pair{Activation::HardSigmoid, 0.0};
  return std::nullopt;
}

}  // namespace

std::size_t fuse_conv_activations(Module& module) {
  std::size_t fused = 0;
  module.apply([&fused](Module& m) {
    auto* sequential = dynamic_cast<Sequential*>(&m);
    if (sequential == nullptr) return;
    // Sequential::forward runs named_children() in order, so "directly followed" is the next
    // entry of that list; replace_child keeps the name and the position.
    const std::vector<NamedModule> children = sequential->named_children();
    for (std::size_t i = 0; i + 1 < children.size(); ++i) {
      Module& first = *children[i].second;
      if (typeid(first) != typeid(Conv2d)) continue;  // exactly a Conv2d, not a subclass
      auto& conv = static_cast<Conv2d&>(first);
      if (!conv.post_ops().empty()) continue;
      const auto activation = activation_of(*children[i + 1].second);
      if (!activation) continue;
      conv.set_activation(activation->first, activation->second);
      sequential->replace_child(children[i + 1].first, std::make_shared<Identity>());
      ++fused;
      ++i;  // the Identity cannot start a pair
    }
  });
  return fused;
}

}  // namespace refold::nn::utils
