// Post-op chains (refold/post_ops.h) that every conv kernel's tests run: the elementwise chains
// graphs write after a conv, as activation-fusion builds them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "refold/post_ops.h"
#include "refold/tensor.h"

namespace refold::testing {

struct PostChainCase {
  std::string name;
  PostOps post;  // the residual, where one is used, has the output's sizes (NCHW)
};

// Per-channel values c·0.1 − 0.3, c = 0 … channels − 1 (distinct, some negative).
inline std::vector<float> channel_ramp(std::int64_t channels, float start = -0.3f) {
  std::vector<float> v(static_cast<std::size_t>(channels));
  for (std::int64_t c = 0; c < channels; ++c) v[c] = start + 0.1f * static_cast<float>(c % 11);
  return v;
}

inline std::vector<PostChainCase> post_chain_cases(const Shape& out_sizes, std::uint64_t seed = 5) {
  const std::int64_t channels = out_sizes[1];
  Generator gen(seed);
  const Tensor residual = randn(out_sizes, {}, gen);
  std::vector<PostChainCase> cases;
  auto add = [&](std::string name, Activation head, std::vector<PostStep> then,
                 bool with_residual = false) {
    PostOps post;
    post.activation = head;
    post.then = std::move(then);
    if (with_residual) post.residual = residual;
    cases.push_back({std::move(name), std::move(post)});
  };
  // timm's LearnableAffineBlock (HGNetV2): relu, then a per-tensor scale and shift.
  add("relu+mul[1]+add[1]", Activation::ReLU, {{.scale = {0.7f}, .shift = {-0.2f}}});
  // A per-channel affine after the activation (a BatchNorm after it), then a second one.
  add("silu+mul[C]+add[C]+sigmoid", Activation::SiLU,
      {{.scale = channel_ramp(channels, 0.5f),
        .shift = channel_ramp(channels),
        .activation = Activation::Sigmoid}});
  // A scale on the raw conv, then the residual and an activation (a later step adds it).
  add("mul[C]+sum+relu", Activation::None,
      {{.scale = channel_ramp(channels, 0.2f)},
       {.add_residual = true, .activation = Activation::ReLU}},
      true);
  // YOLO's bottleneck: x + silu(conv(x)).
  add("silu+sum", Activation::SiLU, {{.add_residual = true}}, true);
  // The head's residual, then a shift, then a LeakyReLU of its own slope.
  add("sum+hardswish+add[1]+leaky_relu", Activation::HardSwish,
      {{.shift = {0.25f}}, {.activation = Activation::LeakyReLU, .negative_slope = 0.2}}, true);
  // NFNet's pre-activation after the shortcut's sum: gelu, then its gain γ, then the next
  // block's β, each a per-tensor scale of its own step.
  add("sum+gelu+mul[1]+mul[1]", Activation::GELU, {{.scale = {1.7f}}, {.scale = {0.9f}}}, true);
  add("relu+mul[1]+mul[1]", Activation::ReLU, {{.scale = {1.7f}}, {.scale = {0.9f}}});
  // A shift, then hardsigmoid (oneDNN writes it as a linear step and a clip).
  add("add[1]+hardsigmoid", Activation::None,
      {{.shift = {0.3f}, .activation = Activation::HardSigmoid}});
  return cases;
}

}  // namespace refold::testing
