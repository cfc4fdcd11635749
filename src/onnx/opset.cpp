#include "onnx/opset.h"

#include "onnx/source_model.h"

namespace refold::onnx {

int ai_onnx_opset(const graph::Graph& graph) {
  if (graph.source == nullptr) return kDefaultOpset;
  for (const auto& o : graph.source->model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") return static_cast<int>(o.version());
  }
  return kDefaultOpset;
}

}  // namespace refold::onnx
