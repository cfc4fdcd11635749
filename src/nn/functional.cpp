// The functional API: validation of what only this layer adds, the memory-format rule of the
// seed, then dispatch to an implementation.
//
// Dispatch (kernels/dispatch.h): each op tries its implementations fastest first — for conv2d
// refold's own kernels (kernels/native: a matrix-vector product for a 1×1 conv of one pixel,
// Winograd for 3×3 stride 1, the direct conv for strided convs), then oneDNN, then the reference,
// which never declines; adaptive_avg_pool2d tries refold's native kernel. A decline carries a
// reason; REFOLD_VERBOSE=1 prints which implementation ran and why the others declined. An op
// without a fast kernel yet dispatches to the reference alone, and is logged the same way.
#include "refold/functional.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "core/stand_in.h"
#include "core/tensor_impl.h"
#include "kernels/dispatch.h"
#include "kernels/native/activation_pass.h"
#include "kernels/native/adaptive_pool2d.h"
#include "kernels/native/broadcast_binary.h"
#include "kernels/native/channel_binary.h"
#include "kernels/native/concat.h"
#include "kernels/native/direct_conv2d.h"
#include "kernels/native/pad.h"
#include "kernels/native/pixel_conv2d.h"
#include "kernels/native/winograd_conv2d.h"
#include "kernels/onednn/batch_norm.h"
#include "kernels/onednn/binary.h"
#include "kernels/onednn/conv2d.h"
#include "kernels/onednn/eltwise.h"
#include "kernels/onednn/linear.h"
#include "kernels/onednn/pooling.h"
#include "kernels/onednn/reorder.h"
#include "kernels/post_ops.h"
#include "kernels/reference/conv_common.h"
#include "kernels/reference/onnx_ops.h"
#include "kernels/reference/tensor_ops.h"
#include "kernels/verbose.h"
#include "refold/reference.h"

namespace refold::functional {

namespace {

// The seed's permute: the activation is laid out in the convolution's format. This copy is
// Tensor::contiguous, so it is counted by permute_count(); when the input is already in that
// format it is returned as is and nothing is counted. The weight is NOT permuted per call —
// the kernels read any strides, and converting weights once is
// nn::utils::convert_conv2d_weight_memory_format's job.
Tensor conv_input_in_format(const Tensor& input, MemoryFormat format) {
  // A non-4-d input is left for the kernel to reject with its own message.
  if (input.dim() != 4) return input;
  return to_format(input, format);
}

}  // namespace

// From this many elements a copy that changes the layout runs as a oneDNN reorder, which splits
// it over threads; below, the primitive's call costs more than Tensor::copy_ on one thread.
constexpr std::int64_t kReorderMinElements = 16384;

Tensor to_format(const Tensor& t, MemoryFormat format) {
  REFOLD_CHECK(t.defined(), "to_format: the tensor is undefined");
  if (t.is_contiguous(format)) return t;
  if (t.dim() != 4 || t.numel() < kReorderMinElements || t.dtype() == DType::Int64)
    return t.contiguous(format);
  return dispatch("to_format",
                  {{"onednn",
                    [&](std::string* declined) {
                      Tensor out = onednn::reorder(t, format, declined);
                      if (out.defined() && format != t.suggest_memory_format())
                        detail::count_permute();
                      return out;
                    }}},
                  [&] { return t.contiguous(format); });
}

MemoryFormat conv_memory_format(const Tensor& input, const Tensor& weight) {
  REFOLD_CHECK(input.defined(), "conv_memory_format: input is undefined");
  REFOLD_CHECK(weight.defined(), "conv_memory_format: weight is undefined");
  return reference::detail::conv_output_format(input, weight);
}

namespace {

// oneDNN's conv without the activation, then refold's pass over its output, where oneDNN's fused
// post-op is the slower (kernels/native/activation_pass.h).
Tensor onednn_then_activation(const Conv2dCall& call, std::string* declined) {
  const reference::detail::Conv2dGeometry& g = call.geometry;
  if (std::string why = native::activation_pass_decline(
          call.post, call.input.dtype(), g.batch * g.out_channels * g.out_h * g.out_w);
      !why.empty()) {
    *declined = std::move(why);
    return {};
  }
  PostOps head = call.post;
  head.activation = Activation::None;
  const Conv2dCall without{call.input, call.weight, call.bias, call.options, head, call.geometry};
  Tensor y = onednn::conv2d(without, declined);
  if (y.defined()) native::activation_pass(y, call.post.activation);
  return y;
}

// A depthwise conv over NCHW memory, run on an NHWC copy and copied back. oneDNN has no direct
// kernel for a depthwise conv on plain NCHW (it runs gemm:jit): CoaT's position-encoding convs
// (64 channels, 7×7, 56²) ran at 5 GFLOP/s and took a third of the model; its NHWC depthwise
// kernel with both copies is several times faster (bench/RESULTS.md). The planner keeps a conv
// in NCHW only where its neighbours are, as in an attention block's image ↔ tokens reshapes.
Tensor onednn_depthwise_via_nhwc(const Conv2dCall& call, std::string* declined) {
  const reference::detail::Conv2dGeometry& g = call.geometry;
  const auto refuse = [&](std::string why) {
    *declined = std::move(why);
    return Tensor();
  };
  if (g.groups == 1 || g.groups != g.in_channels) return refuse("not a depthwise conv");
  if (call.input.suggest_memory_format() == MemoryFormat::ChannelsLast)
    return refuse("the input is channels_last already");
  if (call.input.dtype() != DType::Float32) return refuse("not float32");
  if (call.post.residual.defined()) return refuse("a residual (kept in its layout)");
  const Tensor x = to_format(call.input, MemoryFormat::ChannelsLast);
  const Conv2dCall nhwc = validate_conv2d(x, call.weight, call.bias, call.options, call.post);
  // The same choice as over NHWC input: refold's activation pass after oneDNN's conv where that
  // is the faster, else oneDNN's fused post-ops.
  std::string unused;
  Tensor y = onednn_then_activation(nhwc, &unused);
  if (!y.defined()) y = onednn::conv2d(nhwc, declined);
  if (!y.defined()) return y;
  // Back through oneDNN's reorder itself, not to_format's dispatch: the log line that follows
  // is this conv's, with the kernel oneDNN chose.
  const Tensor back = onednn::reorder(y, MemoryFormat::Contiguous, &unused);
  return back.defined() ? back : y.contiguous();
}

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const Conv2dOptions& options) {
  return conv2d(input, weight, bias, options, PostOps{});
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const Conv2dOptions& options, const PostOps& post) {
  REFOLD_CHECK(input.defined(), "conv2d: input is undefined");
  REFOLD_CHECK(weight.defined(), "conv2d: weight is undefined");
  const Tensor src = conv_input_in_format(input, conv_memory_format(input, weight));
  // Validated once; each implementation then only decides whether it takes the problem. The
  // reference, unfused: y = act(conv + bias + residual), one pass per step.
  const Conv2dCall call = validate_conv2d(src, weight, bias, options, post);
  if (StandInRun::active()) {  // shape inference: the output's shape is all it asks for
    const reference::detail::Conv2dGeometry& g = call.geometry;
    return zeros({g.batch, g.out_channels, g.out_h, g.out_w},
                 {src.dtype(), reference::detail::conv_output_format(src, weight)});
  }
  return dispatch(
      "conv2d",
      {{"native pixel",
        [&](std::string* declined) { return native::pixel_conv2d(call, declined); }},
       {"winograd", [&](std::string* declined) { return native::winograd_conv2d(call, declined); }},
       {"native direct",
        [&](std::string* declined) { return native::direct_conv2d(call, declined); }},
       {"onednn depthwise via NHWC",
        [&](std::string* declined) { return onednn_depthwise_via_nhwc(call, declined); }},
       {"onednn + native activation",
        [&](std::string* declined) { return onednn_then_activation(call, declined); }},
       {"onednn", [&](std::string* declined) { return onednn::conv2d(call, declined); }}},
      [&] {
        const Tensor y =
            reference::detail::conv2d_checked(src, weight, bias, options, call.geometry);
        return post.empty() ? y : reference::apply_post_ops(y, post);
      });
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const ConvTranspose2dOptions& options) {
  REFOLD_CHECK(input.defined(), "conv_transpose2d: input is undefined");
  REFOLD_CHECK(weight.defined(), "conv_transpose2d: weight is undefined");
  const Tensor src = conv_input_in_format(input, conv_memory_format(input, weight));
  return dispatch("conv_transpose2d",
                  {{"onednn",
                    [&](std::string* declined) {
                      return onednn::conv_transpose2d(src, weight, bias, options, {}, declined);
                    }}},
                  [&] { return reference::conv_transpose2d(src, weight, bias, options); });
}

// The ops below keep their input's format (reference.h), so they need no layout decision:
// each hands its arguments to the implementations, which validate them (oneDNN's with the
// reference's messages, so an invalid call fails the same way whichever would have run).

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, double eps) {
  return dispatch(
      "batch_norm",
      {{"onednn",
        [&](std::string* declined) {
          return onednn::batch_norm(input, running_mean, running_var, weight, bias, eps, declined);
        }}},
      [&] { return reference::batch_norm(input, running_mean, running_var, weight, bias, eps); });
}

// Activations: oneDNN's eltwise on the input's own strides (kernels/onednn/eltwise.h), the
// reference for what it declines (non-dense input, bfloat16 without avx512_bf16).
namespace {
template <typename Reference>
Tensor activation(onednn::EltwiseOp op, const Tensor& input, double negative_slope,
                  Reference&& reference) {
  return dispatch(onednn::eltwise_name(op),
                  {{"onednn",
                    [&](std::string* declined) {
                      return onednn::eltwise(op, input, negative_slope, declined);
                    }}},
                  reference);
}
}  // namespace

Tensor relu(const Tensor& input) {
  return activation(onednn::EltwiseOp::ReLU, input, 0.0, [&] { return reference::relu(input); });
}
Tensor relu6(const Tensor& input) {
  return activation(onednn::EltwiseOp::ReLU6, input, 0.0, [&] { return reference::relu6(input); });
}
Tensor leaky_relu(const Tensor& input, double negative_slope) {
  return activation(onednn::EltwiseOp::LeakyReLU, input, negative_slope,
                    [&] { return reference::leaky_relu(input, negative_slope); });
}
Tensor sigmoid(const Tensor& input) {
  return activation(onednn::EltwiseOp::Sigmoid, input, 0.0,
                    [&] { return reference::sigmoid(input); });
}
Tensor silu(const Tensor& input) {
  return activation(onednn::EltwiseOp::SiLU, input, 0.0, [&] { return reference::silu(input); });
}
Tensor hardswish(const Tensor& input) {
  return activation(onednn::EltwiseOp::HardSwish, input, 0.0,
                    [&] { return reference::hardswish(input); });
}
Tensor hardsigmoid(const Tensor& input) {
  return activation(onednn::EltwiseOp::HardSigmoid, input, 0.0,
                    [&] { return reference::hardsigmoid(input); });
}

// add/mul/sub/div: refold's broadcast loop (either operand first; kernels/native/
// broadcast_binary.h), then oneDNN's binary for what it declines (bfloat16, a CPU without AVX2,
// an x that is not dense) when one operand has the output's shape (the first, for sub and div;
// kernels/onednn/binary.h) and oneDNN has more than its reference implementation for it; the
// reference for what both decline. The loop took 0.45–0.97× oneDNN's time on every shape
// measured, from a per-head temperature on 4 K scores to an 800 K-element residual
// (build/bench/binary_bench, Xeon, 2 threads). Add and mul by one value per channel of an NHWC
// tensor: refold's channel kernel first (its threads read what the previous kernel wrote on
// them, kernels/native/channel_binary.h).
namespace {

Tensor binary(std::string_view name, std::optional<native::ChannelOp> channel,
              native::BinaryKind kind, onednn::BinaryOp op, const Tensor& a, const Tensor& b,
              FunctionRef<Tensor()> reference) {
  auto per_channel = [&](std::string* d) { return native::channel_binary(*channel, a, b, d); };
  auto loop = [&](std::string* d) { return native::broadcast_binary(kind, a, b, d); };
  auto primitive = [&](std::string* d) { return onednn::binary(op, a, b, d); };
  if (channel)
    return dispatch(name,
                    {{"native", per_channel}, {"native broadcast", loop}, {"onednn", primitive}},
                    reference);
  return dispatch(name, {{"native broadcast", loop}, {"onednn", primitive}}, reference);
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  return binary("add", native::ChannelOp::Add, native::BinaryKind::Add, onednn::BinaryOp::Add, a, b,
                [&] { return reference::add(a, b); });
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return binary("mul", native::ChannelOp::Mul, native::BinaryKind::Mul, onednn::BinaryOp::Mul, a, b,
                [&] { return reference::mul(a, b); });
}
Tensor sub(const Tensor& a, const Tensor& b) {
  return binary("sub", std::nullopt, native::BinaryKind::Sub, onednn::BinaryOp::Sub, a, b,
                [&] { return reference::arith(a, b, reference::ArithOp::Sub); });
}
Tensor div(const Tensor& a, const Tensor& b) {
  return binary("div", std::nullopt, native::BinaryKind::Div, onednn::BinaryOp::Div, a, b,
                [&] { return reference::arith(a, b, reference::ArithOp::Div); });
}

// Pools: oneDNN when the input is contiguous in the format it suggests (kernels/onednn/pooling.h).
Tensor max_pool2d(const Tensor& input, const MaxPool2dOptions& options) {
  return dispatch(
      "max_pool2d",
      {{"onednn",
        [&](std::string* declined) { return onednn::max_pool2d(input, options, declined); }}},
      [&] { return reference::max_pool2d(input, options); });
}
Tensor avg_pool2d(const Tensor& input, const AvgPool2dOptions& options) {
  return dispatch(
      "avg_pool2d",
      {{"onednn",
        [&](std::string* declined) { return onednn::avg_pool2d(input, options, declined); }}},
      [&] { return reference::avg_pool2d(input, options); });
}
// Adaptive average pooling (and so global average pooling): refold's AVX2 kernel on NCHW or NHWC
// float32 (kernels/native/adaptive_pool2d.h), the reference for what it declines.
Tensor adaptive_avg_pool2d(const Tensor& input, Size2d output_size) {
  return dispatch("adaptive_avg_pool2d",
                  {{"native",
                    [&](std::string* declined) {
                      return native::adaptive_avg_pool2d(input, output_size, declined);
                    }}},
                  [&] { return reference::adaptive_avg_pool2d(input, output_size); });
}

// linear: oneDNN's matmul on packed weights for float32, its post-ops fused
// (kernels/onednn/linear.h), or, where refold's activation pass is the faster
// (kernels/native/activation_pass.h: GELU at any size — MatMul → Add → GELU of a transformer's
// MLP took 0.69–0.94× the fused time, 49 to 3136 tokens — and sigmoid/SiLU from its threshold),
// the product without the activation and then the pass. oneDNN declines invalid
// arguments, so the reference rejects them.
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias, const PostOps& post) {
  REFOLD_CHECK(post.then.empty(),
               "linear: post-op steps ({}) are not supported, only an activation and a residual",
               post.description());
  if (StandInRun::active()) {  // shape inference: the output's shape is all it asks for
    return zeros(reference::detail::check_linear(input, weight, bias), input.dtype());
  }
  // oneDNN reads a row-major input and residual: another layout (a channels_last activation) is
  // copied once, not sent to the reference.
  const auto row_major = [](const Tensor& t) {
    const bool copy = t.defined() && t.numel() > 0 && !t.is_contiguous() && is_floating(t.dtype());
    return copy ? t.contiguous() : t;
  };
  const Tensor x = row_major(input);  // once, for whichever oneDNN form runs
  PostOps dense = post;
  dense.residual = row_major(post.residual);
  const auto then_activation = [&](std::string* declined) -> Tensor {
    const std::int64_t elements =
        input.defined() && weight.defined() && weight.dim() == 2 && input.dim() >= 1
            ? input.numel() / std::max<std::int64_t>(input.size(-1), 1) * weight.size(0)
            : 0;
    if (std::string why = native::activation_pass_decline(post, input.dtype(), elements);
        !why.empty()) {
      *declined = std::move(why);
      return {};
    }
    PostOps head = dense;
    head.activation = Activation::None;
    Tensor y = onednn::linear(x, weight, bias, head, declined);
    if (y.defined()) native::activation_pass(y, post.activation);
    return y;
  };
  return dispatch(
      "linear",
      {{"onednn + native activation", then_activation},
       {"onednn",
        [&](std::string* declined) { return onednn::linear(x, weight, bias, dense, declined); }}},
      [&] {
        const Tensor y = reference::linear(input, weight, bias);
        return post.empty() ? y : reference::apply_post_ops(y, post);
      });
}
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  return linear(input, weight, bias, PostOps{});
}
Tensor flatten(const Tensor& input, std::int64_t start_dim, std::int64_t end_dim) {
  return dispatch("flatten", {}, [&] { return reference::flatten(input, start_dim, end_dim); });
}
namespace {

// The dims of size > 1 from the outermost in memory to the innermost (by stride): two tensors
// with different orders are a permute of each other's memory.
std::vector<std::int64_t> memory_order(const Tensor& t) {
  std::vector<std::int64_t> dims;
  for (std::int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 1) dims.push_back(d);
  std::stable_sort(dims.begin(), dims.end(),
                   [&](std::int64_t a, std::int64_t b) { return t.stride(a) > t.stride(b); });
  return dims;
}

}  // namespace

// cat: refold's row copy over the inputs in the output's layout (the reference's rule:
// channels_last when every input suggests it, else contiguous; kernels/native/concat.h); an
// input laid out otherwise — a view from a Slice or a Reshape (ops::Concat reads views), or a
// channel shuffle's NCHW half beside an NHWC one — is copied once straight into its place in
// the output, by a oneDNN reorder when it is large enough to split over threads. Invalid
// arguments are declined to the reference, which rejects them.
Tensor cat(const std::vector<Tensor>& inputs, std::int64_t dim) {
  const native::PlaceInput place = [](const Tensor& input, Tensor& dst) {
    if (memory_order(input) != memory_order(dst))
      detail::count_permute();  // the seed's permute, as to_format counts it
    std::string declined;
    if (input.numel() < kReorderMinElements || !onednn::reorder_into(input, dst, &declined))
      dst.copy_(input);
  };
  return dispatch(
      "cat",
      {{"native",
        [&](std::string* declined) { return native::cat(inputs, dim, declined, place); }}},
      [&] { return reference::cat(inputs, dim); });
}
Tensor pad(const Tensor& input, const std::vector<std::int64_t>& pads, float value) {
  return dispatch(
      "pad",
      {{"native",
        [&](std::string* declined) { return native::pad(input, pads, value, declined); }}},
      [&] { return reference::pad(input, pads, value); });
}
Tensor pixel_shuffle(const Tensor& input, std::int64_t upscale_factor) {
  return dispatch("pixel_shuffle", {},
                  [&] { return reference::pixel_shuffle(input, upscale_factor); });
}

}  // namespace refold::functional
