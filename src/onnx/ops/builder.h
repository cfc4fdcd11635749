// The op tables behind build_module(): one entry per ONNX op type refold runs.
//
// Each family of ops lives in its own file and exports its table:
//   cnn_ops()     conv_ops.cpp, …   Conv, ConvTranspose, BatchNormalization, activations, pools,
//                                   Add/Sub/Mul/Div, Concat, Gemm, MatMul, Flatten, Pad, …
//   tensor_ops()  tensor_ops.cpp, … Reshape, Transpose, Squeeze, Unsqueeze, Resize, Softmax,
//                                   Constant and the shape arithmetic (Shape, Gather, Slice, …)
// op_registry.cpp looks an op up in both. An entry accepts the op from `min_opset` on (the op
// version refold implements); older versions are reported unsupported.
#pragma once

#include <vector>

#include "onnx/op_registry.h"

namespace refold::onnx::ops {

using Builder = nn::ModulePtr (*)(const BuildContext& context);

struct OpEntry {
  const char* op_type;
  int min_opset;  // the lowest ai.onnx opset whose version of the op is implemented
  Builder build;
};

const std::vector<OpEntry>& cnn_ops();
const std::vector<OpEntry>& tensor_ops();

}  // namespace refold::onnx::ops
