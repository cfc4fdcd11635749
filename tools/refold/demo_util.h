// Helpers shared by the sections of `refold demo`.
#pragma once

#include "refold/refold.h"

namespace refold::cli {

// BatchNorm statistics far from the identity (as RepVGG's own equivalence check does), drawn
// from a fixed generator so that every run prints the same numbers.
inline void randomize(nn::BatchNorm2d& bn, Generator& gen) {
  const Shape c{bn.options().num_features()};
  Tensor var = rand(c, {}, gen);
  for (std::int64_t i = 0; i < c[0]; ++i) var.set({i}, var.at({i}) + 0.5f);
  bn.running_mean().copy_(randn(c, {}, gen));
  bn.running_var().copy_(var);
  bn.weight().copy_(randn(c, {}, gen));
  bn.bias().copy_(randn(c, {}, gen));
}

}  // namespace refold::cli
