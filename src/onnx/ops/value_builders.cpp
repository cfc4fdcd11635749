// Builders for Constant, Cast, Equal and Where (booleans are int64 0/1: value_ops.h).
#include <span>

#include "core/check.h"
#include "onnx/ops/tensor_builders.h"
#include "onnx/ops/window_attrs.h"
#include "refold/graph/ops/value_ops.h"

namespace refold::onnx::ops {

// Constant: exactly one of value, value_float(s), value_int(s); the sparse and string forms are
// unsupported (refold has no sparse or string tensors).
nn::ModulePtr build_constant(const BuildContext& context) {
  check_arity(context.node, 0, 0, 1);
  const graph::Attributes& a = context.node.attributes;
  for (const char* name : {"sparse_value", "value_string", "value_strings"})
    REFOLD_CHECK(!a.has(name),
                 "unsupported: Constant with {} (refold implements value, "
                 "value_float(s) and value_int(s))",
                 name);
  std::vector<std::string> given;
  for (const auto& [name, v] : a.all()) given.push_back(name);
  REFOLD_CHECK(given.size() == 1, "expects exactly one value attribute, got {} ([{}])",
               given.size(), fmt::join(given, ", "));
  const std::string& name = given[0];
  Tensor value;
  if (name == "value") {
    value = a.get_tensor("value");
  } else if (name == "value_float") {
    value = full({}, a.get_float(name, 0.0f));
  } else if (name == "value_floats") {
    const auto v = a.get_floats(name);
    value = from_values(v, {static_cast<std::int64_t>(v.size())});
  } else if (name == "value_int" || name == "value_ints") {
    const auto v =
        name == "value_int" ? std::vector<std::int64_t>{a.get_int(name, 0)} : a.get_ints(name);
    value = empty(name == "value_int" ? Shape{} : Shape{static_cast<std::int64_t>(v.size())},
                  DType::Int64);
    std::copy(v.begin(), v.end(), value.data<std::int64_t>());
  } else {
    fail("unknown attribute '{}' (expected value, value_float(s) or value_int(s))", name);
  }
  return std::make_shared<graph::ops::Constant>(value);
}

// Cast `to` (TensorProto.DataType): 1 float, 16 bfloat16, 7 int64, 6 int32 and 9 bool (both
// stored as int64).
nn::ModulePtr build_cast(const BuildContext& context) {
  check_arity(context.node, 1, 1, 1);
  const auto& a = context.node.attributes;
  REFOLD_CHECK(a.has("to"), "the to attribute is required");
  using To = graph::ops::Cast::To;
  const std::int64_t to = a.get_int("to", 0);
  switch (to) {
    case 1:
      return std::make_shared<graph::ops::Cast>(To::Float32);
    case 16:
      return std::make_shared<graph::ops::Cast>(To::BFloat16);
    case 7:
      return std::make_shared<graph::ops::Cast>(To::Int64);
    case 6:
      return std::make_shared<graph::ops::Cast>(To::Int32);
    case 9:
      return std::make_shared<graph::ops::Cast>(To::Bool);
    default:
      fail(
          "unsupported: Cast to data type {} (refold casts to float (1), bfloat16 (16), int64 (7), "
          "int32 (6) and bool (9))",
          to);
  }
}

nn::ModulePtr build_equal(const BuildContext& context) {
  check_arity(context.node, 2, 2, 1);
  return std::make_shared<graph::ops::Equal>();
}

nn::ModulePtr build_where(const BuildContext& context) {
  check_arity(context.node, 3, 3, 1);
  return std::make_shared<graph::ops::Where>();
}

}  // namespace refold::onnx::ops
