#include "onnx/ops/builder.h"

namespace refold::onnx::ops {

const std::vector<OpEntry>& tensor_ops() {
  static const std::vector<OpEntry> table = {};
  return table;
}

}  // namespace refold::onnx::ops
