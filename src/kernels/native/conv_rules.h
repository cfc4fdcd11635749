// What refold's own conv kernels (winograd_conv2d.h, direct_conv2d.h) share around the math:
// the decline rules common to both, and the fused epilogue built from a conv's bias and PostOps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/native/epilogue.h"
#include "kernels/reference/conv_common.h"
#include "refold/post_ops.h"
#include "refold/tensor.h"

namespace refold::native {

// Why neither native conv takes a valid problem, or "" when these rules allow it: the conv
// algorithm setting, AVX2/FMA, float32, groups 1, C_out a multiple of 8, a non-empty output,
// a channels_last input and residual.
std::string common_decline_reason(const Tensor& input, const reference::detail::Conv2dGeometry& g,
                                  const PostOps& post);

// The epilogue of one call; owns the bias values it points to.
class ConvEpilogue {
 public:
  ConvEpilogue(const Tensor& bias, std::int64_t out_channels, const PostOps& post);
  ConvEpilogue(const ConvEpilogue&) = delete;
  ConvEpilogue& operator=(const ConvEpilogue&) = delete;
  const Epilogue& get() const { return epilogue_; }

 private:
  std::vector<float> bias_;
  Epilogue epilogue_;
};

}  // namespace refold::native
