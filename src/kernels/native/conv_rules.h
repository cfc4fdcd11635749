// What refold's own conv kernels (winograd_conv2d.h, direct_conv2d.h) share around the math:
// validation and the decline rules common to both, and the fused epilogue built from a conv's bias
// and PostOps.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/conv2d_call.h"
#include "kernels/native/epilogue.h"
#include "kernels/reference/conv_common.h"
#include "refold/op_options.h"
#include "refold/post_ops.h"
#include "refold/tensor.h"

namespace refold::native {

// A kernel's own rule: why it does not take a valid problem, or "" when it does.
using DeclineRule = std::string (*)(const Conv2dOptions& options,
                                    const reference::detail::Conv2dGeometry& g);

// The start of every native conv2d, on a call validated by the dispatch (kernels/conv2d_call.h):
// applies the shared decline rules (the conv algorithm setting, AVX2/FMA, float32,
// C_out a multiple of 8, a non-empty output, channels_last input and residual) and the kernel's
// own. True when the kernel takes the problem; else false with *declined saying why, or, when
// declined is null, refold::Error "conv2d: <kernel> declined: …".
bool accept_conv2d(std::string_view kernel, const Conv2dCall& call, DeclineRule own_rule,
                   std::string* declined);

// The channels_last tensor a native conv writes its result to: the residual itself where the
// caller lets it be overwritten (PostOps::overwrite_residual) — the epilogue reads each residual
// element just before it writes the output element at the same place — else new memory.
Tensor conv_output(const Conv2dCall& call);

// The epilogue of one call; owns the bias and step values it points to (each step's scale and
// shift expanded to one value per output channel). No bias: null.
class ConvEpilogue {
 public:
  ConvEpilogue(const Tensor& bias, std::int64_t out_channels, const PostOps& post);
  ConvEpilogue(const ConvEpilogue&) = delete;
  ConvEpilogue& operator=(const ConvEpilogue&) = delete;
  const Epilogue& get() const { return epilogue_; }

 private:
  std::vector<float> bias_;
  std::vector<std::vector<float>> values_;
  std::vector<EpilogueStep> steps_;
  Epilogue epilogue_;
};

}  // namespace refold::native
