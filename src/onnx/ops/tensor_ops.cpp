// The tensor op table: one line per ONNX op type (op_type, the first opset whose version of the
// op refold implements, builder). The builders are in the files tensor_builders.h lists.
#include "onnx/ops/builder.h"
#include "onnx/ops/tensor_builders.h"

namespace refold::onnx::ops {

const std::vector<OpEntry>& tensor_ops() {
  static const std::vector<OpEntry> table = {
      {"Reshape", 5, build_reshape},  // v5: the shape became an input (v14 adds allowzero)
      {"Flatten", 1, build_flatten},
      {"Squeeze", 1, build_squeeze},      // v13: axes became an input
      {"Unsqueeze", 1, build_unsqueeze},  // v13: axes became an input
      {"Transpose", 1, build_transpose},
      {"Concat", 4, build_concat},                // v4: axis became required
      {"DepthToSpace", 1, build_depth_to_space},  // v11 adds mode (DCR before)
      {"Softmax", 1, build_softmax},              // v13: one axis instead of the 2-d coercion
      {"Resize", 11, build_resize},               // v11: roi/scales/sizes and coordinate modes
      {"Shape", 1, build_shape},                  // v15 adds start/end
      {"Gather", 1, build_gather},
      {"Slice", 1, build_slice},  // v10: starts/ends/axes/steps became inputs
      {"Expand", 8, build_expand},
      {"ConstantOfShape", 9, build_constant_of_shape},
      {"Range", 11, build_range},
      {"ScatterND", 11, build_scatter_nd},  // v16 adds reduction (none only here)
      {"Constant", 1, build_constant},
      {"Cast", 6, build_cast},  // v6: `to` became an int
      {"Equal", 1, build_equal},
      {"Where", 9, build_where},
  };
  return table;
}

}  // namespace refold::onnx::ops
