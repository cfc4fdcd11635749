// The machinery shared by oneDNN conv2d and conv_transpose2d: a validated problem in oneDNN's
// terms goes in; the cached primitive, the cached packed weight and the fused post-ops come out
// as one call. conv2d.cpp / conv_transpose2d.cpp validate PyTorch's arguments and fill in the
// problem.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "kernels/post_ops.h"
#include "refold/tensor.h"

namespace refold::onednn::detail {

struct ConvProblem {
  std::string_view op;       // "conv2d" or "conv_transpose2d", for messages
  bool transposed = false;   // oneDNN deconvolution_forward instead of convolution_forward
  Shape src_dims, dst_dims;  // logical [N, C, H, W]
  std::int64_t groups = 1;
  // oneDNN's logical weight dims: {O, I, kh, kw} for groups 1, else {G, O/G, I/G, kh, kw}, where
  // O counts the primitive's output channels and I its input channels (also for deconvolution).
  Shape weight_dims;
  std::array<std::int64_t, 2> strides{1, 1};
  std::array<std::int64_t, 2> dilates{0, 0};  // oneDNN counts the gaps: PyTorch's dilation − 1
  std::array<std::int64_t, 2> pad_l{0, 0};    // (top, left)
  std::array<std::int64_t, 2> pad_r{0, 0};    // (bottom, right); may be negative for deconv
};

// Runs the problem on `input` (dense NCHW or NHWC, see conv2d.h) with the PyTorch-layout
// `weight` ([O, I/G, kh, kw] for conv, [I, O/G, kh, kw] for deconv) and optional `bias` [O].
// Returns an undefined Tensor and sets *declined (or throws, when declined is null) when oneDNN
// cannot take it.
Tensor run_conv(const ConvProblem& problem, const Tensor& input, const Tensor& weight,
                const Tensor& bias, const PostOps& post, std::string* declined);

}  // namespace refold::onednn::detail
