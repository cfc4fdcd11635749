// The functional API (torch.nn.functional): what modules call. Each op picks an
// implementation — today the reference kernels; the oneDNN backend joins here, fastest first,
// reference last — and applies the memory-format rule of the seed: a convolution runs in
// channels_last when its input or weight suggests channels_last, so an NCHW input is permuted
// once (to_format, counted by permute_count()) and the result stays channels_last.
// Signatures and semantics are those of refold/reference.h.
#pragma once

#include <vector>

#include "refold/op_options.h"
#include "refold/post_ops.h"
#include "refold/tensor.h"

namespace refold::functional {

// `t` laid out contiguously in `format` (Contiguous or ChannelsLast): `t` itself when it already
// is, else a copy — the permute of the memory-format seed, counted by permute_count(). A 4-d
// float permute of at least 16384 elements runs as one oneDNN reorder (1.5–2.5× the generic
// copy's throughput on RepVGG-A0's activations, bench/layout_bench); smaller ones, where
// oneDNN's fixed per-call cost dominates, and anything it declines run Tensor::contiguous's
// element loop. Every layout change on the run path goes through here, never through a
// backend called from Tensor.
Tensor to_format(const Tensor& t, MemoryFormat format);

// The format a convolution computes in: channels_last if the input or the weight suggests it
// (PyTorch's mkldnn_conv_use_channels_last rule), else contiguous.
MemoryFormat conv_memory_format(const Tensor& input, const Tensor& weight);

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              const Conv2dOptions& options = {});
// y = post.activation(conv2d(input, weight, bias) + post.residual) (refold/post_ops.h), in one
// oneDNN primitive where oneDNN runs the conv; the reference applies the same steps unfused.
// The residual must have the output's sizes and the input's dtype, in any layout.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const Conv2dOptions& options, const PostOps& post);
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                        const ConvTranspose2dOptions& options = {});
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, double eps = 1e-5);
Tensor relu(const Tensor& input);
Tensor relu6(const Tensor& input);
Tensor leaky_relu(const Tensor& input, double negative_slope = 0.01);
Tensor sigmoid(const Tensor& input);
Tensor silu(const Tensor& input);
Tensor hardswish(const Tensor& input);
Tensor hardsigmoid(const Tensor& input);
Tensor add(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);  // a − b
Tensor div(const Tensor& a, const Tensor& b);  // a / b
Tensor max_pool2d(const Tensor& input, const MaxPool2dOptions& options);
Tensor avg_pool2d(const Tensor& input, const AvgPool2dOptions& options);
Tensor adaptive_avg_pool2d(const Tensor& input, Size2d output_size);
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {});
// y = post.activation(linear(input, weight, bias) + post.residual), in one oneDNN inner product
// where oneDNN runs it (a transformer's MatMul → Add(bias) → GELU, or x + proj(y)). The residual
// must have the output's sizes and dtype; post.then must be empty (its steps are per channel of
// NCHW, not per feature).
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias, const PostOps& post);
Tensor flatten(const Tensor& input, std::int64_t start_dim = 1, std::int64_t end_dim = -1);
Tensor cat(const std::vector<Tensor>& inputs, std::int64_t dim = 0);
Tensor pad(const Tensor& input, const std::vector<std::int64_t>& pads, float value = 0.0f);
Tensor pixel_shuffle(const Tensor& input, std::int64_t upscale_factor);

}  // namespace refold::functional
