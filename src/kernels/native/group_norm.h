// GroupNormalization (and InstanceNormalization, one channel per group) for float32 X [N, C, …]:
// the fast path of reference::group_norm (the same result within Tolerance::op_f32; tested
// against it). Takes X contiguous (NCHW, any rank ≥ 2) or 4-d channels_last (NHWC), scale and
// bias one contiguous float32 value per channel; the output keeps X's layout. Anything else is
// declined with a reason (kernels/dispatch.h).
#pragma once

#include <cstdint>
#include <string>

#include "refold/tensor.h"

namespace refold::native {

Tensor group_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, std::int64_t groups,
                  double epsilon, std::string* declined);

}  // namespace refold::native
