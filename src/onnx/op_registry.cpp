#include "onnx/op_registry.h"

#include <fmt/format.h>

#include "core/check.h"
#include "onnx/ops/builder.h"

namespace refold::onnx {
namespace {

const ops::OpEntry* find_entry(const std::string& op_type) {
  for (const auto* table : {&ops::cnn_ops(), &ops::tensor_ops()}) {
    for (const ops::OpEntry& entry : *table) {
      if (op_type == entry.op_type) return &entry;
    }
  }
  return nullptr;
}

}  // namespace

std::optional<std::string> unsupported_reason(const graph::Node& node, int opset) {
  if (!node.domain.empty() && node.domain != "ai.onnx") {
    return fmt::format("domain '{}' (op {}) is not supported; refold runs ai.onnx ops", node.domain,
                       node.op_type);
  }
  const ops::OpEntry* entry = find_entry(node.op_type);
  if (entry == nullptr) return fmt::format("{} is not implemented", node.op_type);
  if (opset < entry->min_opset) {
    return fmt::format("{} at opset {} is not implemented (refold implements it from opset {})",
                       node.op_type, opset, entry->min_opset);
  }
  return std::nullopt;
}

nn::ModulePtr build_module(const BuildContext& context) {
  if (auto reason = unsupported_reason(context.node, context.opset)) fail("{}", *reason);
  return find_entry(context.node.op_type)->build(context);
}

}  // namespace refold::onnx
