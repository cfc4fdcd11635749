// activation(y) over a dense float32 tensor, in place, in one pass split across refold's threads:
// the activations that oneDNN 2.6 computes slowly as a conv post-op. Its fused eltwise_swish and
// eltwise_logistic cost ≈ 0.4 ns an element on two cores with AVX-512 (Xeon: a 16→96 1×1 conv at
// 112² takes 0.21 ms without SiLU and 0.65 ms with it; a depthwise 3×3 conv 2–2.5× its time
// without) and ≈ 0.6 with AVX2, where this pass takes ≈ 0.28 and ≈ 0.4. So the conv dispatch
// runs oneDNN's conv without the activation and then this pass ("onednn + native activation",
// nn/functional.cpp): conv + pass took 0.78–0.93× the fused conv's time with AVX2 on every layer
// measured (EfficientNet-B0's 1×1 and depthwise shapes, 14² to 112²), and 0.83–0.93× with
// AVX-512 from 188 k output elements up, but 1.08–1.13× at 131 k (112→672 at 14²), where the
// pass's fixed cost shows: with AVX-512 it takes outputs of at least kAvx512MinElements.
// oneDNN's eltwise_gelu_erf is slower still: 0.41–0.68 ns an element on the Xeon (a 3×3
// depthwise conv of 128 channels at 56² took 89 µs without GELU, 263 µs with it), and conv +
// pass took 0.69–0.89× the fused conv's time on every layer measured, 7² to 56², 37 k to 401 k
// elements (EfficientFormerV2's and ConvNeXt's 1×1 and depthwise shapes): GELU takes every size.
// So does GELU's tanh approximation: as oneDNN's eltwise_gelu_tanh post-op, EfficientViT-L1 took
// 1.125× the time of a separate pass.
//
//   sigmoid(x) = 1 / (1 + e^−x)       SiLU(x) = x · sigmoid(x)     GELU(x) = ½x·(1 + erf(x/√2))
//   GELU's tanh form ½x·(1 + tanh(z)) = x · sigmoid(2z),  z = √(2/π)·(x + 0.044715·x³)
//
// e^−x is the vector exp (vector_math.h); with AVX-512, 16 lanes, and the reciprocal is rcp14
// refined by one Newton step, r ← r·(2 − d·r) (relative error ≈ 2^−28, a few ulp like the
// division); erf is vector_math.h's rational approximation; with AVX2, 8 lanes through the conv
// epilogue's activate() (epilogue.h). NaN stays NaN.
#pragma once

#include <cstdint>
#include <string>

#include "refold/post_ops.h"
#include "refold/tensor.h"

namespace refold::native {

inline constexpr std::int64_t kAvx512MinElements = 160 * 1024;

// Why this pass does not finish a oneDNN conv whose chain is `post`, with an output of
// `elements` elements of `dtype` ("" when it does): the chain must be one of these activations
// alone (a residual before it allowed, no step after it), on float32, on a CPU with AVX2 and FMA,
// the conv algorithm not "direct" (oneDNN only), and, where oneDNN runs its AVX-512 convs, at
// least kAvx512MinElements (sigmoid and SiLU; GELU at any size).
std::string activation_pass_decline(const PostOps& post, DType dtype, std::int64_t elements);

// y = activation(y) over all of y's elements, in place. y: float32, dense (any strides that
// cover its storage span without gaps); `activation` Sigmoid, SiLU or GELU. Call only where
// cpu_has_avx2_fma().
void activation_pass(Tensor& y, Activation activation);

}  // namespace refold::native
