// Reading the small int64/float tensors that parameterize ops at run time (Reshape's shape,
// Unsqueeze's axes, Resize's scales, Slice's starts, …): exact, rank ≤ 1, errors naming the op
// and the input. Also used by the ONNX builders for constant inputs.
#pragma once

#include <cstdint>
#include <vector>

#include "refold/tensor.h"

namespace refold::ops {

// An int64 tensor of rank ≤ 1 as its values, exactly.
std::vector<std::int64_t> int64_vector(const Tensor& t, const char* op, const char* what);
// A float32/bfloat16 tensor of rank ≤ 1 as its values.
std::vector<double> float_vector(const Tensor& t, const char* op, const char* what);

}  // namespace refold::ops
