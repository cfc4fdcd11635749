// LayerNormalization over contiguous rows: the fast path of reference::layer_norm (the same
// result within Tolerance::op_f32; tested against it) for float32 x whose normalized dims
// [axis, rank) form dense rows in x's logical order (x.is_contiguous()), with scale and bias
// (optional) holding exactly one value per row element. Anything else is declined with a reason
// (kernels/dispatch.h). Rows are split across refold's threads.
#pragma once

#include <cstdint>
#include <string>

#include "refold/tensor.h"

namespace refold::native {

Tensor layer_norm_rows(const Tensor& x, const Tensor& scale, const Tensor& bias, std::int64_t axis,
                       double epsilon, std::string* declined);

}  // namespace refold::native
