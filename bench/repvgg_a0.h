// RepVGG-A0 in training form, built from refold's RepVGGBlocks as DingXiaoH/RepVGG's
// create_RepVGG_A0 builds it (repvgg.py): width multipliers a = 0.75, b = 2.5,
//   stage0  1 block   3 → min(64, 64a) = 48, stride 2
//   stage1  2 blocks  → 64a  = 48,  first stride 2
//   stage2  4 blocks  → 128a = 96,  first stride 2
//   stage3 14 blocks  → 256a = 192, first stride 2
//   stage4  1 block   → 512b = 1280, stride 2
//   gap (AdaptiveAvgPool2d(1)), Flatten, linear (1280 → 1000).
// The children are named as in the reference (stage0 … stage4, gap, linear), so a PyTorch
// checkpoint of RepVGG-A0 would load by name; Flatten has no parameters and takes the place of
// the reference's `out.view(out.size(0), -1)`.
//
// Weights: PyTorch's default initialization drawn from refold's default generator after
// manual_seed(seed), so every build with the same seed is the same model. Every BatchNorm then
// gets random statistics (as RepVGG's own equivalence check does: running_mean ~ N(0, 1),
// running_var ~ U(0.5, 1.5), γ ~ U(0.5, 1.5), β ~ N(0, 1)); with the fresh-module defaults
// (mean 0, var 1, γ 1, β 0) every BN is nearly the identity and fusing them proves little.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

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

// A Sequential whose children are named like RepVGG's attributes (Sequential::push_back only
// gives "0", "1", …).
class RepVGGA0 : public nn::Module {
 public:
  RepVGGA0() : Module("RepVGG") {
    constexpr double a = 0.75, b = 2.5;
    const std::int64_t stage0_width = std::min<std::int64_t>(64, static_cast<std::int64_t>(64 * a));
    const std::vector<std::int64_t> num_blocks{2, 4, 14, 1};
    const std::vector<std::int64_t> widths{
        static_cast<std::int64_t>(64 * a), static_cast<std::int64_t>(128 * a),
        static_cast<std::int64_t>(256 * a), static_cast<std::int64_t>(512 * b)};
    using reparam::RepVGGBlock;
    using reparam::RepVGGBlockOptions;
    std::int64_t in = stage0_width;
    stages_.push_back(register_module(
        "stage0", std::make_shared<RepVGGBlock>(RepVGGBlockOptions(3, stage0_width).stride(2))));
    for (std::size_t s = 0; s < num_blocks.size(); ++s) {
      auto stage = std::make_shared<nn::Sequential>();
      for (std::int64_t i = 0; i < num_blocks[s]; ++i) {
        stage->push_back(std::make_shared<RepVGGBlock>(
            RepVGGBlockOptions(in, widths[s]).stride(i == 0 ? 2 : 1)));
        in = widths[s];
      }
      stages_.push_back(register_module("stage" + std::to_string(s + 1), stage));
    }
    stages_.push_back(register_module("gap", std::make_shared<nn::AdaptiveAvgPool2d>(1)));
    stages_.push_back(register_module("flatten", std::make_shared<nn::Flatten>()));
    stages_.push_back(register_module("linear", std::make_shared<nn::Linear>(in, 1000)));
  }

  Tensor forward(const Tensor& input) override {
    Tensor x = input;
    for (const nn::ModulePtr& m : stages_) x = (*m)(x);
    return x;
  }

 private:
  std::vector<nn::ModulePtr> stages_;
};

// Statistics as described above, drawn in logical order from `gen`.
inline void randomize_batch_norm(nn::BatchNorm2d& bn, Generator& gen) {
  const Shape c{bn.options().num_features()};
  auto uniform_half_to_three_halves = [&] {
    Tensor t = rand(c, {}, gen);
    for (std::int64_t i = 0; i < c[0]; ++i) t.set({i}, t.at({i}) + 0.5f);
    return t;
  };
  bn.running_mean().copy_(randn(c, {}, gen));
  bn.running_var().copy_(uniform_half_to_three_halves());
  bn.weight().copy_(uniform_half_to_three_halves());
  bn.bias().copy_(randn(c, {}, gen));
}

// Training-form RepVGG-A0: same seed, same model.
inline std::shared_ptr<RepVGGA0> make_repvgg_a0(std::uint64_t seed = 0) {
  manual_seed(seed);
  auto model = std::make_shared<RepVGGA0>();
  Generator gen(seed + 1);
  model->apply([&](nn::Module& m) {
    if (auto* bn = dynamic_cast<nn::BatchNorm2d*>(&m)) randomize_batch_norm(*bn, gen);
  });
  return model;
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
