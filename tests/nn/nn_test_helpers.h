// Small helpers shared by the nn tests.
#pragma once

#include <gtest/gtest.h>

#include "refold/error.h"
#include "refold/nn/batchnorm.h"
#include "refold/tensor.h"
#include "testing/error_table.h"  // throws_error(fn, expected)

namespace refold::testing {

// BatchNorm statistics that make it far from an identity map (RepVGG's own check does the
// same): mean ~ N(0, 1), var ~ U(0.5, 1.5), weight ~ U(0.5, 1.5), bias ~ N(0, 1).
inline void randomize(nn::BatchNorm2d& bn, Generator& gen) {
  const Shape c{bn.options().num_features()};
  bn.running_mean().copy_(randn(c, {}, gen));
  Tensor var = rand(c, {}, gen);
  for (std::int64_t i = 0; i < c[0]; ++i) var.set({i}, var.at({i}) + 0.5f);
  bn.running_var().copy_(var);
  if (bn.options().affine()) {
    Tensor w = rand(c, {}, gen);
    for (std::int64_t i = 0; i < c[0]; ++i) w.set({i}, w.at({i}) + 0.5f);
    bn.weight().copy_(w);
    bn.bias().copy_(randn(c, {}, gen));
  }
}

}  // namespace refold::testing
