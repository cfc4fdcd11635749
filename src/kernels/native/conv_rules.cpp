// conv_rules.h.
#include "kernels/native/conv_rules.h"

#include <algorithm>

#include "core/check.h"
#include "kernels/native/cpu.h"
#include "kernels/post_ops.h"
#include "refold/conv_algorithm.h"

namespace refold::native {

namespace {

std::string common_decline_reason(const Tensor& input, const reference::detail::Conv2dGeometry& g,
                                  const PostOps& post) {
  if (get_conv_algorithm() == ConvAlgorithm::Direct) return "conv algorithm is 'direct'";
  if (!cpu_has_avx2_fma()) return "needs AVX2 and FMA";
  if (input.dtype() != DType::Float32) return "float32 only";
  if (g.out_channels % 8 != 0) return "output channels must be a multiple of 8";
  if (g.batch == 0 || g.out_h <= 0 || g.out_w <= 0 || g.in_channels == 0 || g.out_channels == 0)
    return "empty output";
  if (!input.is_contiguous(MemoryFormat::ChannelsLast)) return "input not channels_last";
  if (post.residual.defined() && !post.residual.is_contiguous(MemoryFormat::ChannelsLast))
    return "residual not channels_last";
  return {};
}

}  // namespace

bool accept_conv2d(std::string_view kernel, const Conv2dCall& call, DeclineRule own_rule,
                   std::string* declined) {
  std::string why = common_decline_reason(call.input, call.geometry, call.post);
  if (why.empty()) why = own_rule(call.options, call.geometry);
  if (why.empty()) return true;
  REFOLD_CHECK(declined != nullptr, "conv2d: {} declined: {}", kernel, why);
  *declined = std::move(why);
  return false;
}

Tensor conv_output(const Conv2dCall& call) {
  const reference::detail::Conv2dGeometry& g = call.geometry;
  if (call.post.overwrite_residual && call.post.residual.defined()) return call.post.residual;
  return empty({g.batch, g.out_channels, g.out_h, g.out_w}, MemoryFormat::ChannelsLast);
}

ConvEpilogue::ConvEpilogue(const Tensor& bias, std::int64_t out_channels, const PostOps& post)
    : bias_(reference::detail::bias_values(bias, out_channels)) {
  epilogue_.bias = bias.defined() ? bias_.data() : nullptr;
  epilogue_.residual = post.residual.defined() ? post.residual.data<float>() : nullptr;
  epilogue_.residual_in_steps = post.residual_in_steps();
  epilogue_.activation = post.activation;
  epilogue_.negative_slope = static_cast<float>(post.negative_slope);
  // One value per channel (a per-tensor value repeated); null for an empty scale or shift.
  auto per_channel = [&](const std::vector<float>& v) -> const float* {
    if (v.empty()) return nullptr;
    return values_.emplace_back(v.size() == 1 ? std::vector<float>(out_channels, v[0]) : v).data();
  };
  values_.reserve(2 * post.then.size());  // the pointers taken stay valid
  for (const PostStep& step : post.then) {
    steps_.push_back({per_channel(step.scale), per_channel(step.shift), step.add_residual,
                      step.activation, static_cast<float>(step.negative_slope)});
  }
  epilogue_.steps = steps_.data();
  epilogue_.step_count = static_cast<int>(steps_.size());
}

}  // namespace refold::native
