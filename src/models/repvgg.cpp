#include "refold/models/repvgg.h"

#include <algorithm>
#include <string>

#include "refold/nn/basic.h"
#include "refold/nn/batchnorm.h"
#include "refold/nn/container.h"
#include "refold/nn/linear.h"
#include "refold/nn/pooling.h"
#include "refold/reparam/repvgg.h"

namespace refold::models {

RepVGG::RepVGG(const RepVGGConfig& config) : Module("RepVGG") {
  const auto scaled = [](double base, double multiplier) {
    return static_cast<std::int64_t>(base * multiplier);
  };
  const std::vector<std::int64_t> widths{scaled(64, config.width_a), scaled(128, config.width_a),
                                         scaled(256, config.width_a), scaled(512, config.width_b)};
  using reparam::RepVGGBlock;
  using reparam::RepVGGBlockOptions;
  std::int64_t in = std::min<std::int64_t>(64, scaled(64, config.width_a));
  stages_.push_back(register_module(
      "stage0", std::make_shared<RepVGGBlock>(RepVGGBlockOptions(3, in).stride(2))));
  for (std::size_t s = 0; s < config.num_blocks.size() && s < widths.size(); ++s) {
    auto stage = std::make_shared<nn::Sequential>();
    for (std::int64_t i = 0; i < config.num_blocks[s]; ++i) {
      stage->push_back(
          std::make_shared<RepVGGBlock>(RepVGGBlockOptions(in, widths[s]).stride(i == 0 ? 2 : 1)));
      in = widths[s];
    }
    stages_.push_back(register_module("stage" + std::to_string(s + 1), stage));
  }
  stages_.push_back(register_module("gap", std::make_shared<nn::AdaptiveAvgPool2d>(1)));
  stages_.push_back(register_module("flatten", std::make_shared<nn::Flatten>()));
  stages_.push_back(
      register_module("linear", std::make_shared<nn::Linear>(in, config.num_classes)));
}

Tensor RepVGG::forward(const Tensor& input) {
  Tensor x = input;
  for (const nn::ModulePtr& m : stages_) x = (*m)(x);
  return x;
}

void randomize_batch_norms(nn::Module& module, std::uint64_t seed) {
  Generator gen(seed);
  std::vector<nn::BatchNorm2d*> bns;
  // BatchNorms are leaves, so apply() meets them in module order (named_modules()).
  module.apply([&](nn::Module& m) {
    if (auto* bn = dynamic_cast<nn::BatchNorm2d*>(&m)) bns.push_back(bn);
  });
  for (nn::BatchNorm2d* bn : bns) {
    const Shape c{bn->options().num_features()};
    auto half_to_three_halves = [&] {
      Tensor t = rand(c, {}, gen);
      for (std::int64_t i = 0; i < c[0]; ++i) t.set({i}, t.at({i}) + 0.5f);
      return t;
    };
    bn->running_mean().copy_(randn(c, {}, gen));
    bn->running_var().copy_(half_to_three_halves());
    bn->weight().copy_(half_to_three_halves());
    bn->bias().copy_(randn(c, {}, gen));
  }
}

std::shared_ptr<RepVGG> repvgg_a0(std::uint64_t seed) {
  manual_seed(seed);
  auto model = std::make_shared<RepVGG>();
  randomize_batch_norms(*model, seed + 1);
  return model;
}

}  // namespace refold::models
