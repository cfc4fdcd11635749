// The machinery shared by oneDNN conv2d and conv_transpose2d: a validated problem in oneDNN's
// terms goes in; the cached primitive, the cached packed weight and the fused post-ops come out
// as one call. conv2d.cpp / conv_transpose2d.cpp validate PyTorch's arguments and fill in the
// problem.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/post_ops.h"
#include "refold/tensor.h"

namespace refold::onednn::detail {

// A conv of 2 or 3 spatial axes; the per-axis lists have one value per spatial axis.
struct ConvProblem {
  std::string_view op;       // "conv2d", "conv_transpose2d", "conv_nd", …, for messages
  bool transposed = false;   // oneDNN deconvolution_forward instead of convolution_forward
  Shape src_dims, dst_dims;  // logical [N, C, H, W] or [N, C, D, H, W]
  std::int64_t groups = 1;
  // oneDNN's logical weight dims: {O, I, k…} for groups 1, else {G, O/G, I/G, k…}, where O
  // counts the primitive's output channels and I its input channels (also for deconvolution).
  Shape weight_dims;
  std::vector<std::int64_t> strides{1, 1};
  std::vector<std::int64_t> dilates{0, 0};  // oneDNN counts the gaps: PyTorch's dilation − 1
  std::vector<std::int64_t> pad_l{0, 0};    // (top, left) in 2-d
  std::vector<std::int64_t> pad_r{0, 0};    // (bottom, right); may be negative for deconv
};

// Runs the problem on `input` (dense NCHW or NHWC, or dense NCDHW, see conv2d.h) with the
// PyTorch-layout `weight` ([O, I/G, k…] for conv, [I, O/G, k…] for deconv) and optional `bias`
// [O].
// Returns an undefined Tensor and sets *declined (or throws, when declined is null) when oneDNN
// cannot take it.
Tensor run_conv(const ConvProblem& problem, const Tensor& input, const Tensor& weight,
                const Tensor& bias, const PostOps& post, std::string* declined);

// Whether oneDNN runs its AVX-512 (avx512_core or newer) kernels on this CPU: an ISA it was
// not capped below with ONEDNN_MAX_CPU_ISA.
bool has_avx512_core();

// The oneDNN post-op chain run_conv builds for `post` on `problem`, as text ("sum+eltwise_relu",
// "binary_add+eltwise_relu"; "none" when empty): the REFOLD_VERBOSE line of a new primitive
// gives it. `in_place`: the output is written over the residual (PostOps::overwrite_residual,
// where the residual is dense in the output's layout).
std::string post_op_chain_text(const PostOps& post, const ConvProblem& problem,
                               bool in_place = false);

}  // namespace refold::onednn::detail
