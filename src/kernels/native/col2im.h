// ONNX Col2Im (torch.nn.functional.fold) in float32: every image plane of the output zeroed, then
// each column element added to its position (kernels/reference/col2im.h, the same walk as the
// reference), planes in parallel. Declines anything but float32 with X's blocks contiguous; the
// caller has validated the parameters (reference::check_col2im, which gives `extent`).
// VOLO's outlook attention folds its 3×3 neighbourhoods back with it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/reference/col2im.h"
#include "refold/tensor.h"

namespace refold::native {

Tensor col2im(const Tensor& x, const reference::Col2ImParams& params,
              const reference::Col2ImExtent& extent, std::string* declined);

}  // namespace refold::native
