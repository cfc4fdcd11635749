#include "onnx/schema.h"

#include <algorithm>
#include <sstream>
#include <unordered_map>

namespace refold::onnx::detail {
namespace {

struct Row {
  const char* op_type;
  int since_version;
  const char* attributes;
  const char* inputs;
  const char* outputs;
  const char* variables;
};

constexpr Row kRows[] = {
#include "onnx/schemas.inc"
};

std::vector<std::string> words(const char* text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// "name:variable<option>", option one of "" "?" "*" "&" (schemas.inc).
std::vector<SchemaParam> parse_params(const char* text) {
  std::vector<SchemaParam> out;
  for (std::string w : words(text)) {
    SchemaParam p;
    switch (w.back()) {
      case '?':
        p.kind = SchemaParam::Kind::Optional;
        break;
      case '*':
        p.kind = SchemaParam::Kind::Variadic;
        break;
      case '&':
        p.kind = SchemaParam::Kind::MixedVariadic;
        break;
      default:
        break;
    }
    if (p.kind != SchemaParam::Kind::Single) w.pop_back();
    const std::size_t colon = w.find(':');
    p.name = w.substr(0, colon);
    p.variable = w.substr(colon + 1);
    out.push_back(std::move(p));
  }
  return out;
}

Schema parse(const Row& row) {
  Schema s{row.op_type,
           row.since_version,
           words(row.attributes),
           parse_params(row.inputs),
           parse_params(row.outputs),
           {}};
  for (const std::string& w : words(row.variables)) {
    const std::size_t eq = w.rfind('=');  // a literal variable's name has '=' in front
    s.allowed[w.substr(0, eq)] = std::stoull(w.substr(eq + 1), nullptr, 16);
  }
  return s;
}

const SchemaParam* param(const std::vector<SchemaParam>& params, std::size_t index) {
  if (index < params.size()) return &params[index];
  if (!params.empty() && params.back().kind != SchemaParam::Kind::Single &&
      params.back().kind != SchemaParam::Kind::Optional) {
    return &params.back();
  }
  return nullptr;
}

}  // namespace

const SchemaParam* Schema::input(std::size_t index) const { return param(inputs, index); }
const SchemaParam* Schema::output(std::size_t index) const { return param(outputs, index); }

bool Schema::has_attribute(const std::string& name) const {
  return std::binary_search(attributes.begin(), attributes.end(), name);
}

const Schema* find_schema(const std::string& op_type, int opset) {
  // Every version of each op, oldest first; parsed once (thread-safe static initialization).
  static const std::unordered_map<std::string, std::vector<Schema>> versions = [] {
    std::unordered_map<std::string, std::vector<Schema>> m;
    for (const Row& row : kRows) m[row.op_type].push_back(parse(row));
    return m;
  }();
  const auto it = versions.find(op_type);
  if (it == versions.end()) return nullptr;
  const Schema* found = nullptr;
  for (const Schema& s : it->second)
    if (s.since_version <= opset) found = &s;
  return found;
}

}  // namespace refold::onnx::detail
