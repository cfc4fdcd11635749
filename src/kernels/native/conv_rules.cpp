// conv_rules.h.
#include "kernels/native/conv_rules.h"

#include "kernels/native/cpu.h"
#include "refold/conv_algorithm.h"

namespace refold::native {

std::string common_decline_reason(const Tensor& input, const reference::detail::Conv2dGeometry& g,
                                  const PostOps& post) {
  if (get_conv_algorithm() == ConvAlgorithm::Direct) return "conv algorithm is 'direct'";
  if (!cpu_has_avx2_fma()) return "needs AVX2 and FMA";
  if (input.dtype() != DType::Float32) return "float32 only";
  if (g.groups != 1) return "groups 1 only";
  if (g.out_channels % 8 != 0) return "output channels must be a multiple of 8";
  if (g.batch == 0 || g.out_h <= 0 || g.out_w <= 0 || g.in_channels == 0) return "empty output";
  if (!input.is_contiguous(MemoryFormat::ChannelsLast)) return "input not channels_last";
  if (post.residual.defined() && !post.residual.is_contiguous(MemoryFormat::ChannelsLast))
    return "residual not channels_last";
  return {};
}

ConvEpilogue::ConvEpilogue(const Tensor& bias, std::int64_t out_channels, const PostOps& post)
    : bias_(reference::detail::bias_values(bias, out_channels)) {
  epilogue_.bias = bias_.data();
  epilogue_.residual = post.residual.defined() ? post.residual.data<float>() : nullptr;
  epilogue_.activation = post.activation;
  epilogue_.negative_slope = static_cast<float>(post.negative_slope);
}

}  // namespace refold::native
