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
  REFOLD_CHECK(opset > 0, "no opset_import for the ai.onnx domain (\"\"); {} imports: {{{}}}",
               model.opset_import_size(), fmt::join(domains, ", "));
  return opset;
}

}  // namespace refold::onnx::detail
