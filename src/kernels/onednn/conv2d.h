// oneDNN convolution and transposed convolution, with fused post-ops (bias, residual sum,
// activation) and cached primitives and packed weights.
//
// Entry points for the dispatch layer. What the caller must guarantee:
//   * `input` is contiguous in the conv's layout, which is PyTorch's rule (the reference's
//     too): channels_last (NHWC) when the input or the weight suggests channels_last, else
//     contiguous (NCHW) — reference::detail::conv_output_format(input, weight). Call
//     input.contiguous(that format) first; an input not contiguous in it is declined (no hidden
//     permutes, no blocked activation formats). The output is in that layout: the input's.
//   * `weight` and `bias` may have any strides; they are read once, when packed.
//   * Tensors must not be written while a call runs.
// conv2d takes a call validated once by the dispatch (kernels/conv2d_call.h); conv_transpose2d
// validates its arguments exactly as the reference does (same refold::Error messages).
// Valid arguments that oneDNN cannot take are *declined*: the result is an undefined Tensor and
// `*declined` says why (input not contiguous in the conv's layout, a zero-sized dim, no bf16
// support in this CPU, no oneDNN implementation); with declined == nullptr a decline throws
// refold::Error.
//
// Caches (process-wide, thread-safe, least-recently-used):
//   primitives    keyed by (op, input sizes, layout, dtype, weight sizes, options, bias or not,
//                 post-ops, threads) — the primitive oneDNN built for exactly that problem;
//   packed weights keyed by (primitive, weight.version(), storage offset, sizes, strides) —
//                 the weight reordered once into the format the primitive chose
//                 (format_tag::any). Writing to a weight bumps its version, so the next call
//                 repacks; stale entries age out.
// Precision: float32 throughout; bfloat16 input and weight run a bf16 kernel with f32
// accumulation and f32 bias, writing bfloat16, only where oneDNN has a native (non-reference)
// bf16 implementation for this CPU (avx512_bf16), else declined.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/conv2d_call.h"
#include "kernels/post_ops.h"
#include "refold/op_options.h"
#include "refold/tensor.h"

namespace refold::onednn {

// y = post.activation(conv2d(input, weight) + bias + post.residual); PyTorch's conv2d layout:
// input [N, C_in, H, W], weight [C_out, C_in/groups, kh, kw], bias [C_out] or undefined.
Tensor conv2d(const Conv2dCall& call, std::string* declined);

// The same on arguments not yet validated (tests, benchmarks): validate_conv2d, then the kernel.
inline Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                     const Conv2dOptions& options, const PostOps& post = {},
                     std::string* declined = nullptr) {
  return conv2d(validate_conv2d(input, weight, bias, options, post), declined);
}

// The same for PyTorch's conv_transpose2d: weight [C_in, C_out/groups, kh, kw].
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const ConvTranspose2dOptions& options, const PostOps& post = {},
                        std::string* declined = nullptr);

// True where this CPU has avx512_bf16, i.e. where bfloat16 convs run (not declined).
bool bf16_supported();

struct CacheStats {
  std::uint64_t primitive_hits = 0;
  std::uint64_t primitive_misses = 0;  // each miss creates a primitive (or records a decline)
  std::uint64_t weight_hits = 0;
  std::uint64_t weight_packs = 0;   // reorders of a weight into the primitive's format
  std::uint64_t weight_direct = 0;  // calls whose weight was already in the chosen format
  std::size_t primitives = 0;       // entries now cached
  std::size_t packed_weights = 0;
  std::size_t packed_bytes = 0;
};
CacheStats cache_stats();
// Drops every cached primitive and packed weight and zeroes the counters.
void clear_cache();
// Defaults: 1024 primitives, 1 GiB of packed weights.
void set_cache_capacity(std::size_t primitives, std::size_t packed_weight_bytes);

}  // namespace refold::onednn
