// refold's RNN, GRU and LSTM (kernels/reference/recurrent.h has the math and the sequence loop):
// float32, x·Wᵀ + Wb for every step and direction in one product (oneDNN); each step's H·Rᵀ + Rb
// with AVX2 on refold's micro-kernel, Rᵀ packed once per direction (small_matmul.h's
// multiply_packed: oneDNN's call per step cost as much as the product, Sequencer2D's [32, 48] ·
// [48, 192] ran at 59 GFLOP/s), the two directions of a bidirectional node on two threads (they
// are independent); else through functional::linear. The gates in float, sigmoid and tanh 8 lanes
// at a time with AVX2, 16 where vector_isa() is Avx512 (vector_math.h's exp: sigmoid(v) =
// 1 / (1 + e^−v), tanh(v) = 2·sigmoid(2v) − 1).
// Declines anything but float32 (the reference runs it).
#pragma once

#include <string>

#include "kernels/reference/recurrent.h"

namespace refold::native {

// `e` from reference::check_recurrent(in, p). Undefined y, with *declined set, when it declines.
reference::RecurrentOutputs recurrent(const reference::RecurrentInputs& in,
                                      const reference::RecurrentParams& p,
                                      const reference::RecurrentExtent& e, std::string* declined);

}  // namespace refold::native
