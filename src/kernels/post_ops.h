// What a conv does to its result before writing it, fused into the conv where the backend can
// (oneDNN post-ops) and applied afterwards where it cannot (the reference path):
//
//   y = activation(conv(x) + bias + residual)
//
// The residual (the `sum` of ResNet/RepVGG-style blocks) is added before the activation,
// because that is where those blocks put it: relu(bn(conv(x)) + identity).
// Not oneDNN-specific: the dispatch layer builds one PostOps and hands it to whichever kernel
// runs. Activation and PostOps themselves are public (refold/post_ops.h); this header adds the
// internals: validation and the reference's unfused application.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "refold/dtype.h"
#include "refold/post_ops.h"
#include "refold/tensor.h"

namespace refold {

// A known activation, with a finite slope for LeakyReLU; errors start with `op`:
//   Conv2d: unknown activation (42)
void check_activation(std::string_view op, Activation activation, double negative_slope);

// Validates `post` for an op whose output has `output_sizes` and `dtype`; errors start with `op`:
//   conv2d: residual must have the output's sizes [1, 8, 4, 4], got float32[1, 8, 4, 5]
void check_post_ops(std::string_view op, const PostOps& post, const Shape& output_sizes,
                    DType dtype);

namespace reference {

// Applies `post` to an already computed op output (reference conv2d, …): the unfused form of
// what a backend fuses. The result keeps `output`'s layout and dtype. Each step rounds to the
// dtype, so for bfloat16 this rounds up to three times where a fused kernel rounds once.
Tensor apply_post_ops(const Tensor& output, const PostOps& post);
// The same with the residual added by `add_residual(y)`, unchecked: the unfused form of a fused
// graph node whose residual may broadcast (passes/fused_conv.h). The step values broadcast as
// [C, 1, 1], so they apply to axis −3 whatever the result's rank.
Tensor apply_post_ops(const Tensor& output, const PostOps& post,
                      const std::function<Tensor(const Tensor&)>& add_residual);
// activation(x) with the reference kernels.
Tensor apply_activation(const Tensor& x, Activation activation, double negative_slope);

}  // namespace reference
}  // namespace refold
