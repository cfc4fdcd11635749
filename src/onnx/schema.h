// ONNX's own definition of each ai.onnx op version (src/onnx/schemas.inc, generated from the
// onnx package by scripts/gen-onnx-schemas.py): what type_check.cpp checks every node against.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace refold::onnx::detail {

struct SchemaParam {
  enum class Kind { Single, Optional, Variadic, MixedVariadic };
  std::string name;      // "X", "W", "inputs"
  std::string variable;  // the type variable ("T"), or "=tensor(int64)" for a literal type
  Kind kind = Kind::Single;
};

struct Schema {
  std::string op_type;
  int since_version = 0;
  std::vector<std::string> attributes;  // sorted
  std::vector<SchemaParam> inputs;
  std::vector<SchemaParam> outputs;
  // Per type variable, the ONNX data types it allows: bit k set for data_type k (0: no tensor
  // type — a sequence or an optional, which refold does not check).
  std::map<std::string, std::uint64_t> allowed;

  // The formal parameter behind actual input/output `index` (a variadic last one covers the
  // rest), or null when there is none.
  const SchemaParam* input(std::size_t index) const;
  const SchemaParam* output(std::size_t index) const;
  bool has_attribute(const std::string& name) const;
};

// The version of ai.onnx op `op_type` in effect at `opset` (the greatest since_version ≤ opset),
// or null when ONNX defines none.
const Schema* find_schema(const std::string& op_type, int opset);

}  // namespace refold::onnx::detail
