#include <algorithm>
#include <set>

#include "core/check.h"
#include "onnx/validate.h"

namespace refold::onnx::detail {

int validate_header(const ::onnx::ModelProto& model) {
  // A0-byte file or "08 07" parses as a ModelProto with nothing in it.
  REFOLD_CHECK(model.has_graph(), "not an ONNX model: no graph (ir_version {}, {} opset imports)",
               model.ir_version(), model.opset_import_size());
  const std::int64_t ir = model.ir_version();
  REFOLD_CHECK(ir >= kMinIrVersion && ir <= kMaxIrVersion,
               "IR version {} unsupported (min {}, max {})", ir, kMinIrVersion, kMaxIrVersion);
  int opset = -1;
  std::set<std::string> domains;
  for (const auto& import : model.opset_import()) {
    const std::string domain = import.domain() == "ai.onnx" ? "" : import.domain();
    REFOLD_CHECK(domains.insert(domain).second, "opset_import lists domain '{}' twice",
                 import.domain());
    if (domain.empty()) {
      REFOLD_CHECK(import.version() >= kMinOpset && import.version() <= kMaxOpset,
                   "opset {} unsupported; supported {} ≤ opset ≤ {}", import.version(), kMinOpset,
                   kMaxOpset);
      opset = static_cast<int>(import.version());
    }
  }
  // Only a model with an ai.onnx node needs the ai.onnx import (A7); one whose nodes all belong
  // to other domains (ai.onnx.preview.training, com.microsoft) loads as far as the op listing,
  // which names each node and its unsupported domain.
  const auto& nodes = model.graph().node();
  const bool uses_ai_onnx = std::any_of(nodes.begin(), nodes.end(), [](const auto& n) {
    return n.domain().empty() || n.domain() == "ai.onnx";
  });
  REFOLD_CHECK(opset > 0 || !uses_ai_onnx,
               "no opset_import for the ai.onnx domain (\"\"); {} imports: {{{}}}",
               model.opset_import_size(), fmt::join(domains, ", "));
  return std::max(opset, 0);
}

}  // namespace refold::onnx::detail
