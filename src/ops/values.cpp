// Builders for Constant, Cast, the comparisons (Equal, Less, …, And, Or, Xor, Not), Where,
// IsNaN / IsInf and QuantizeLinear / DequantizeLinear
// (booleans are int64 0/1: value_ops.h).
#include "ops/values.h"

#include <limits>
#include <span>
#include <utility>

#include "core/check.h"
#include "kernels/reference/quantize.h"
#include "kernels/reference/tensor_ops.h"
#include "onnx/source_model.h"
#include "onnx/tensor_proto.h"
#include "ops/op.h"
#include "ops/window.h"

namespace refold::ops {

Constant::Constant(Tensor value) : Op("Constant") {
  REFOLD_CHECK(value.defined(), "Constant: value is undefined");
  // A buffer, so that Module::to(dtype) converts it with the graph's constants: a bfloat16 run
  // of an imported graph otherwise mixed it, float32, into bfloat16 arithmetic (GELU's x / √2).
  value_ = register_buffer("value", std::move(value));
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

// Cast `to`: an ONNX element type reference::cast_target_of knows.
nn::ModulePtr build_cast(const BuildContext& context) {
  check_arity(context.node, 1, 1, 1);
  const auto& a = context.node.attributes;
  REFOLD_CHECK(a.has("to"), "the to attribute is required");
  const std::int64_t to = a.get_int("to", 0);
  const std::optional<reference::CastTarget> target = reference::cast_target_of(to);
  REFOLD_CHECK(target.has_value(),
               "unsupported: Cast to data type {} (refold casts to float (1), bfloat16 (16), "
               "int64 (7), int32 (6) and bool (9))",
               to);
  return std::make_shared<Cast>(*target);
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

// ---- QuantizeLinear / DequantizeLinear (QDQ models) ----
//
// Computed in float with ONNX's exact semantics; the quantized side is int64 holding the values
// of its ONNX integer type (refold/dtype.h). QuantizeLinear saturates to the range of its
// output type, which is y_zero_point's ONNX data type, found in this order: the type the graph
// declares for it (graph input, value_info), else the data type of the initializer or of the
// Constant node's tensor it comes from in the ONNX file (refold's constant holds int64 by
// then); without a zero point, output_dtype (opset 21) or else uint8. Scale decides the form at
// run time: one element → per-tensor, else per-axis along `axis` (opset 13; default 1), or
// blocked with block_size (opset 21). Float8, int4 and float4 types are refused by name.

namespace {

// The ONNX data type of input `i`, or 0 when neither a declaration nor the file tells.
int onnx_elem_type(const BuildContext& context, std::size_t i) {
  if (const int declared = declared_elem_type(context, i)) return declared;
  const std::string name = input_name(context.node, i);
  if (name.empty() || !context.graph.source) return 0;
  const ::onnx::GraphProto& file = context.graph.source->model.graph();
  const int initializer = context.graph.constant_source(name);
  if (initializer >= 0 && initializer < file.initializer_size())
    return file.initializer(initializer).data_type();
  if (const auto producer = context.graph.producer(name)) {
    const graph::Node& node = context.graph.nodes()[*producer];
    if (node.op_type == "Constant" && node.source >= 0 && node.source < file.node_size()) {
      for (const auto& attribute : file.node(node.source).attribute())
        if (attribute.name() == "value") return attribute.t().data_type();
    }
  }
  return 0;
}

// The saturation range of an ONNX integer type refold quantizes to; refuses the others.
std::pair<std::int64_t, std::int64_t> integer_range(int elem_type, const std::string& what) {
  using TP = ::onnx::TensorProto;
  switch (elem_type) {
    case TP::UINT8:
      return {0, 255};
    case TP::INT8:
      return {-128, 127};
    case TP::UINT16:
      return {0, 65535};
    case TP::INT16:
      return {-32768, 32767};
    case TP::INT32:
      return {std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()};
    default: {
      // ONNX's data types 17–20 are the float8s, 21/22 uint4/int4 and 23 float4e2m1 (newer
      // than the ONNX headers refold builds with).
      const std::string type =
          elem_type >= 17 && elem_type <= 20 ? fmt::format("float8 (data type {})", elem_type)
          : elem_type >= 21 && elem_type <= 23
              ? fmt::format("{} (data type {})", elem_type == 23 ? "float4" : "4-bit integer",
                            elem_type)
              : onnx::detail::type_name(elem_type);
      fail(
          "unsupported: {} of type {} (refold quantizes to uint8, int8, uint16, int16 and int32; "
          "not float8, int4 or float4)",
          what, type);
    }
  }
}

struct QuantAttributes {
  std::int64_t axis = 1;
  std::int64_t block_size = 0;
};

QuantAttributes quant_attributes(const BuildContext& context) {
  const graph::Attributes& a = context.node.attributes;
  QuantAttributes q;
  REFOLD_CHECK(context.opset >= 13 || !a.has("axis"),
               "axis needs opset 13 (the model's opset is {})", context.opset);
  REFOLD_CHECK(context.opset >= 21 || !a.has("block_size"),
               "block_size needs opset 21 (the model's opset is {})", context.opset);
  q.axis = a.get_int("axis", 1);
  q.block_size = a.get_int("block_size", 0);
  REFOLD_CHECK(q.block_size >= 0, "block_size must be ≥ 0 (got {})", q.block_size);
  const std::int64_t saturate = a.get_int("saturate", 1);
  REFOLD_CHECK(saturate == 0 || saturate == 1, "saturate must be 0 or 1 (got {})", saturate);
  REFOLD_CHECK(!a.has("precision"),
               "unsupported: the precision attribute (refold implements QuantizeLinear and "
               "DequantizeLinear up to opset 21)");
  return q;
}

// The scale's form, decided from its shape: one element → per-tensor, else per-axis, or blocked
// when block_size is set.
reference::QuantAxis quant_axis(const Tensor& x, const Tensor& scale, const QuantAttributes& q,
                                const std::string& op) {
  if (q.block_size == 0 && scale.dim() <= 1 && scale.numel() == 1) return {};
  const std::int64_t rank = x.dim();
  REFOLD_CHECK(q.axis >= -rank && q.axis < rank, "{}: axis {} is out of range for x of rank {}", op,
               q.axis, rank);
  return {q.axis < 0 ? q.axis + rank : q.axis, q.block_size};
}

class QuantizeLinear : public graph::Op {
 public:
  QuantizeLinear(QuantAttributes q, std::int64_t lo, std::int64_t hi)
      : Op("QuantizeLinear"), q_(q), lo_(lo), hi_(hi) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    REFOLD_CHECK(inputs.size() >= 2 && inputs.size() <= 3 && inputs[0].defined(),
                 "QuantizeLinear: expects 2 or 3 inputs, got {}", inputs.size());
    const Tensor zero_point = inputs.size() == 3 ? inputs[2] : Tensor();
    return {reference::quantize_linear(inputs[0], inputs[1], zero_point,
                                       quant_axis(inputs[0], inputs[1], q_, type_name()), lo_,
                                       hi_)};
  }

 private:
  QuantAttributes q_;
  std::int64_t lo_, hi_;
};

class DequantizeLinear : public graph::Op {
 public:
  explicit DequantizeLinear(QuantAttributes q) : Op("DequantizeLinear"), q_(q) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    REFOLD_CHECK(inputs.size() >= 2 && inputs.size() <= 3 && inputs[0].defined(),
                 "DequantizeLinear: expects 2 or 3 inputs, got {}", inputs.size());
    const Tensor zero_point = inputs.size() == 3 ? inputs[2] : Tensor();
    return {reference::dequantize_linear(inputs[0], inputs[1], zero_point,
                                         quant_axis(inputs[0], inputs[1], q_, type_name()))};
  }

 private:
  QuantAttributes q_;
};

}  // namespace

nn::ModulePtr build_quantize_linear(const BuildContext& context) {
  check_arity(context.node, 2, 3, 1);
  const QuantAttributes q = quant_attributes(context);
  const std::int64_t output_dtype = context.node.attributes.get_int("output_dtype", 0);
  REFOLD_CHECK(context.opset >= 21 || output_dtype == 0,
               "output_dtype needs opset 21 (the model's opset is {})", context.opset);
  const std::string zero_point = input_name(context.node, 2);
  int elem_type = static_cast<int>(output_dtype);
  if (!zero_point.empty()) {
    const int zero_point_type = onnx_elem_type(context, 2);
    REFOLD_CHECK(zero_point_type != 0,
                 "unsupported: y_zero_point '{}' has no known ONNX type (declare it in "
                 "value_info, or make it an initializer)",
                 zero_point);
    REFOLD_CHECK(output_dtype == 0 || output_dtype == zero_point_type,
                 "output_dtype {} differs from y_zero_point '{}''s type {}", output_dtype,
                 zero_point, onnx::detail::type_name(zero_point_type));
    elem_type = zero_point_type;
  }
  if (elem_type == 0) elem_type = ::onnx::TensorProto::UINT8;
  const auto [lo, hi] =
      integer_range(elem_type, zero_point.empty() ? std::string("output_dtype")
                                                  : fmt::format("y_zero_point '{}'", zero_point));
  return std::make_shared<QuantizeLinear>(q, lo, hi);
}

nn::ModulePtr build_dequantize_linear(const BuildContext& context) {
  check_arity(context.node, 2, 3, 1);
  const QuantAttributes q = quant_attributes(context);
  REFOLD_CHECK(context.node.attributes.get_int("output_dtype", 0) == 0,
               "unsupported: output_dtype (refold implements DequantizeLinear up to opset 21)");
  for (std::size_t i : {std::size_t{0}, std::size_t{2}}) {
    const int elem_type = onnx_elem_type(context, i);
    if (elem_type != 0 && elem_type != ::onnx::TensorProto::INT64)
      integer_range(elem_type, fmt::format("{} '{}'", i == 0 ? "x" : "x_zero_point",
                                           input_name(context.node, i)));
  }
  return std::make_shared<DequantizeLinear>(q);
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
      {"QuantizeLinear", 10, build_quantize_linear},
      {"DequantizeLinear", 10, build_dequantize_linear},
  };
  return table;
}

}  // namespace refold::ops
