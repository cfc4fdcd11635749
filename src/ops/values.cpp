// Builders for Constant, Cast, the comparisons (Equal, Less, …, And, Or, Xor, Not), Where and
// IsNaN / IsInf
// (booleans are int64 0/1: value_ops.h).
#include "ops/values.h"

#include <span>

#include "core/check.h"
#include "kernels/reference/tensor_ops.h"
#include "ops/op.h"
#include "ops/window.h"

namespace refold::ops {

Constant::Constant(Tensor value) : Op("Constant"), value_(std::move(value)) {
  REFOLD_CHECK(value_.defined(), "Constant: value is undefined");
}

std::vector<Tensor> Constant::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(inputs.empty(), "Constant: expects no inputs, got {}", inputs.size());
  return {value_};
}

std::vector<Tensor> Cast::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(!inputs.empty() && inputs.size() <= 2 && inputs[0].defined(),
               "{}: expects 1 input, got {}", type_name(), inputs.size());
  if (!to_) {  // CastLike: the type of the second input
    REFOLD_CHECK(inputs.size() == 2 && inputs[1].defined(), "CastLike: target_type is missing");
    const DType like = inputs[1].dtype();
    return {reference::cast(inputs[0], like == DType::Float32    ? reference::CastTarget::Float32
                                       : like == DType::BFloat16 ? reference::CastTarget::BFloat16
                                                                 : reference::CastTarget::Int64)};
  }
  return {reference::cast(inputs[0], *to_)};
}

std::vector<Tensor> Compare::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(inputs.size() == 2, "{}: expects 2 inputs, got {}", type_name(), inputs.size());
  return {reference::compare(inputs[0], inputs[1], op_)};
}

std::vector<Tensor> Not::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(inputs.size() == 1, "Not: expects 1 input, got {}", inputs.size());
  return {reference::logical_not(inputs[0])};
}

std::vector<Tensor> Where::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(inputs.size() == 3, "Where: expects 3 inputs, got {}", inputs.size());
  return {reference::where(inputs[0], inputs[1], inputs[2])};
}

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
  return std::make_shared<Constant>(value);
}

// Cast `to` (TensorProto.DataType): 1 float, 16 bfloat16, 7 int64, 6 int32 and 9 bool (both
// stored as int64).
nn::ModulePtr build_cast(const BuildContext& context) {
  check_arity(context.node, 1, 1, 1);
  const auto& a = context.node.attributes;
  REFOLD_CHECK(a.has("to"), "the to attribute is required");
  using To = reference::CastTarget;
  const std::int64_t to = a.get_int("to", 0);
  switch (to) {
    case 1:
      return std::make_shared<Cast>(To::Float32);
    case 16:
      return std::make_shared<Cast>(To::BFloat16);
    case 7:
      return std::make_shared<Cast>(To::Int64);
    case 6:
      return std::make_shared<Cast>(To::Int32);
    case 9:
      return std::make_shared<Cast>(To::Bool);
    default:
      fail(
          "unsupported: Cast to data type {} (refold casts to float (1), bfloat16 (16), int64 (7), "
          "int32 (6) and bool (9))",
          to);
  }
}

// CastLike (opset 15): casts to the second input's dtype (float32, bfloat16, or int64 for the
// integer and bool types refold stores as int64).
nn::ModulePtr build_cast_like(const BuildContext& context) {
  check_arity(context.node, 2, 2, 1);
  return std::make_shared<Cast>(std::nullopt);
}

// IsNaN / IsInf: bool (int64 0/1) per element; IsInf's detect_negative / detect_positive
// (default 1) choose which infinities count.
class Classify : public graph::Op {
 public:
  Classify(std::string op, bool negative, bool positive)
      : Op(std::move(op)), negative_(negative), positive_(positive) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    REFOLD_CHECK(inputs.size() == 1 && inputs[0].defined(), "{}: expects 1 input, got {}",
                 type_name(), inputs.size());
    return {type_name() == "IsNaN" ? reference::is_nan(inputs[0])
                                   : reference::is_inf(inputs[0], negative_, positive_)};
  }

 private:
  bool negative_, positive_;
};

nn::ModulePtr build_classify(const BuildContext& context) {
  const graph::Node& node = context.node;
  check_arity(node, 1, 1, 1);
  bool detect[2] = {true, true};
  const char* names[2] = {"detect_negative", "detect_positive"};
  for (int i = 0; i < 2; ++i) {
    const std::int64_t v = node.attributes.get_int(names[i], 1);
    REFOLD_CHECK(v == 0 || v == 1, "{} must be 0 or 1 (got {})", names[i], v);
    REFOLD_CHECK(node.op_type == "IsInf" || !node.attributes.has(names[i]),
                 "IsNaN has no attribute {}", names[i]);
    detect[i] = v == 1;
  }
  return std::make_shared<Classify>(node.op_type, detect[0], detect[1]);
}

template <reference::CompareOp op>
nn::ModulePtr build_compare(const BuildContext& context) {
  check_arity(context.node, 2, 2, 1);
  return std::make_shared<Compare>(op);
}

nn::ModulePtr build_not(const BuildContext& context) {
  check_arity(context.node, 1, 1, 1);
  return std::make_shared<Not>();
}

nn::ModulePtr build_where(const BuildContext& context) {
  check_arity(context.node, 3, 3, 1);
  return std::make_shared<Where>();
}

const std::vector<OpDef>& values_ops() {
  static const std::vector<OpDef> table = {
      {"Constant", 1, build_constant, LayoutRule::Fresh},
      {"Cast", 6, build_cast},  // v6: `to` became an int
      {"CastLike", 15, build_cast_like},
      // Comparisons and logic: bool results (int64 0/1); v7 onwards broadcast.
      {"Equal", 7, build_compare<reference::CompareOp::Equal>},
      {"Less", 7, build_compare<reference::CompareOp::Less>},
      {"Greater", 7, build_compare<reference::CompareOp::Greater>},
      {"LessOrEqual", 12, build_compare<reference::CompareOp::LessOrEqual>},
      {"GreaterOrEqual", 12, build_compare<reference::CompareOp::GreaterOrEqual>},
      {"And", 7, build_compare<reference::CompareOp::And>},
      {"Or", 7, build_compare<reference::CompareOp::Or>},
      {"Xor", 7, build_compare<reference::CompareOp::Xor>},
      {"Not", 1, build_not},
      {"Where", 9, build_where},
      {"IsNaN", 9, build_classify},
      {"IsInf", 10, build_classify},
  };
  return table;
}

}  // namespace refold::ops
