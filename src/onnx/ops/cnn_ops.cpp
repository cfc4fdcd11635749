// The CNN op table: one line per ONNX op type (op_type, the first opset whose version of the op
// refold implements, builder). The builders are in the *_builders.cpp files (cnn_builders.h).
#include "onnx/ops/builder.h"
#include "onnx/ops/cnn_builders.h"

namespace refold::onnx::ops {

const std::vector<OpEntry>& cnn_ops() {
  static const std::vector<OpEntry> table = {
      // Convolutions: the attributes are unchanged since opset 1 (v11 only documents defaults).
      {"Conv", 1, build_conv},
      {"ConvTranspose", 1, build_conv_transpose},
      // v7 onwards: no is_test/consumed_inputs; `spatial` (v7–v8) defaults to the same meaning.
      {"BatchNormalization", 7, build_batch_normalization},
      {"Relu", 6, build_relu},
      {"Clip", 11, build_clip},  // v11: min/max became inputs
      {"LeakyRelu", 6, build_leaky_relu},
      {"Sigmoid", 6, build_sigmoid},
      {"HardSigmoid", 6, build_hard_sigmoid},
      {"HardSwish", 14, build_hard_swish},
      {"Identity", 1, build_identity},
      // v7 onwards: NumPy broadcasting (v6 had the `broadcast`/`axis` attributes).
      {"Add", 7, build_add},
      {"Sub", 7, build_sub},
      {"Mul", 7, build_mul},
      {"Div", 7, build_div},
      {"MaxPool", 1, build_max_pool},
      {"AveragePool", 1, build_average_pool},
      {"GlobalAveragePool", 1, build_global_average_pool},
      {"Gemm", 7, build_gemm},  // v7: C broadcasts (v6 had `broadcast`)
      {"MatMul", 1, build_mat_mul},
      {"Pad", 11, build_pad},  // v11: pads and constant_value became inputs
  };
  return table;
}

}  // namespace refold::onnx::ops
