#include "onnx/type_check.h"

#include <fmt/format.h>

#include <bit>
#include <map>
#include <string>
#include <vector>

#include "core/check.h"
#include "onnx/schema.h"
#include "onnx/tensor_proto.h"

namespace refold::onnx::detail {
namespace {

using Types = std::map<std::string, int>;  // value → ONNX data_type (absent: open)

std::string allowed_names(std::uint64_t mask) {
  std::vector<std::string> names;
  for (int t = 0; t < 64; ++t)
    if ((mask >> t) & 1) names.push_back(type_name(t));
  return fmt::format("{}", fmt::join(names, ", "));
}

// "input 1 'w' (W)", for messages.
std::string describe_input(const ::onnx::NodeProto& n, int i, const Schema& schema) {
  return fmt::format("input {} '{}' ({})", i, n.input(i),
                     schema.input(static_cast<std::size_t>(i))->name);
}

// The element type a node's attribute gives its output, where no input does: Cast's `to`,
// the `dtype` of the Random* and EyeLike ops, a Constant's or ConstantOfShape's value.
int type_from_attributes(const ::onnx::NodeProto& n) {
  int type = n.op_type() == "ConstantOfShape" ? ::onnx::TensorProto::FLOAT : 0;
  for (const ::onnx::AttributeProto& a : n.attribute()) {
    const std::string& name = a.name();
    if (name == "to" || name == "dtype") type = static_cast<int>(a.i());
    if (name == "value" && a.has_t()) type = a.t().data_type();
    if (name == "sparse_value") type = a.sparse_tensor().values().data_type();
    if (name == "value_float" || name == "value_floats") type = ::onnx::TensorProto::FLOAT;
    if (name == "value_int" || name == "value_ints") type = ::onnx::TensorProto::INT64;
    if (name == "value_string" || name == "value_strings") type = ::onnx::TensorProto::STRING;
  }
  return type;
}

// `name`: the node's name in messages (describe_node), formatted only for an error.
void check_attributes(const ::onnx::NodeProto& n, const Schema& schema, const std::string& name,
                      int opset) {
  for (const ::onnx::AttributeProto& a : n.attribute()) {
    if (schema.has_attribute(a.name())) continue;
    fail("{}: unknown attribute '{}': {}-{} (in effect at opset {}) has {}", describe_node(name, n),
         a.name(), schema.op_type, schema.since_version, opset,
         schema.attributes.empty() ? std::string("none")
                                   : fmt::format("{}", fmt::join(schema.attributes, ", ")));
  }
}

// Checks the node's inputs against its schema and writes its outputs' types into `types`.
void check_node(const ::onnx::NodeProto& n, const Schema& schema, const std::string& name,
                Types& types) {
  struct Binding {
    int type = 0;
    int by = 0;  // the input that fixed it
  };
  std::map<std::string, Binding> bound;
  for (int i = 0; i < n.input_size(); ++i) {
    const std::string& value = n.input(i);
    const SchemaParam* formal = schema.input(static_cast<std::size_t>(i));
    const auto known = types.find(value);
    if (value.empty() || formal == nullptr || known == types.end()) continue;
    const int type = known->second;
    const std::uint64_t allowed = schema.allowed.at(formal->variable);
    REFOLD_CHECK(allowed == 0 || type >= 64 || ((allowed >> type) & 1) != 0,
                 "{}: {} is {}; {}-{} takes {} as one of {}", describe_node(name, n),
                 describe_input(n, i, schema), type_name(type), schema.op_type,
                 schema.since_version, formal->name, allowed_names(allowed));
    if (formal->kind == SchemaParam::Kind::MixedVariadic) continue;
    const auto [it, fresh] = bound.emplace(formal->variable, Binding{type, i});
    REFOLD_CHECK(fresh || it->second.type == type,
                 "{}: {} is {}, but {} is {}; {}-{} takes both as one type ({})",
                 describe_node(name, n), describe_input(n, i, schema), type_name(type),
                 describe_input(n, it->second.by, schema), type_name(it->second.type),
                 schema.op_type, schema.since_version, formal->variable);
  }
  for (int k = 0; k < n.output_size(); ++k) {
    const SchemaParam* formal = schema.output(static_cast<std::size_t>(k));
    if (n.output(k).empty() || formal == nullptr) continue;
    if (formal->kind == SchemaParam::Kind::MixedVariadic) continue;
    const auto b = bound.find(formal->variable);
    const std::uint64_t allowed = schema.allowed.at(formal->variable);
    int type = 0;
    if (b != bound.end()) {
      type = b->second.type;
    } else if (allowed != 0 && (allowed & (allowed - 1)) == 0) {  // exactly one type allowed
      type = std::countr_zero(allowed);
    } else {
      type = type_from_attributes(n);
    }
    if (type != 0) types[n.output(k)] = type;
  }
}

// A declared tensor's element type, or 0 when it declares none.
int declared_type(const ::onnx::ValueInfoProto& v) {
  return v.type().has_tensor_type() ? v.type().tensor_type().elem_type() : 0;
}

// B11: a graph input whose initializer is its default must declare the initializer's type and
// (where static) dims.
void check_default(const ::onnx::ValueInfoProto& input, const ::onnx::TensorProto& init) {
  const int declared = declared_type(input);
  REFOLD_CHECK(declared == 0 || declared == init.data_type(),
               "graph input '{}' is declared {}, but its initializer (the default value) is {}",
               input.name(), type_name(declared), type_name(init.data_type()));
  if (!input.type().tensor_type().has_shape()) return;
  const auto& shape = input.type().tensor_type().shape();
  bool same = shape.dim_size() == init.dims_size();
  for (int i = 0; same && i < shape.dim_size(); ++i)
    same = !shape.dim(i).has_dim_value() || shape.dim(i).dim_value() == init.dims(i);
  if (same) return;
  std::vector<std::string> declared_dims;
  for (const auto& d : shape.dim())
    declared_dims.push_back(d.has_dim_value() ? std::to_string(d.dim_value())
                                              : (d.dim_param().empty() ? "?" : d.dim_param()));
  fail("graph input '{}' is declared [{}], but its initializer (the default value) is [{}]",
       input.name(), fmt::join(declared_dims, ", "), fmt::join(init.dims(), ", "));
}

}  // namespace

std::map<std::string, int> check_types(const ::onnx::GraphProto& graph, int opset,
                                       const GraphPlan& plan) {
  Types types;
  std::map<std::string, const ::onnx::TensorProto*> initializers;
  for (const ::onnx::TensorProto& t : graph.initializer()) {
    types[t.name()] = t.data_type();
    initializers[t.name()] = &t;
  }
  for (const ::onnx::ValueInfoProto& v : graph.input()) {
    if (const auto init = initializers.find(v.name()); init != initializers.end()) {
      check_default(v, *init->second);
    } else if (const int t = declared_type(v); t != 0) {
      types[v.name()] = t;
    }
  }
  std::map<std::string, std::size_t> producer;  // value → its node's NodeProto index
  for (std::size_t index : plan.order) {
    const ::onnx::NodeProto& n = graph.node(static_cast<int>(index));
    for (const std::string& out : n.output()) producer[out] = index;
    if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
    const Schema* schema = find_schema(n.op_type(), opset);
    if (schema == nullptr) continue;  // an op ONNX does not define: refused as unsupported
    check_attributes(n, *schema, plan.node_names[index], opset);
    check_node(n, *schema, plan.node_names[index], types);
  }
  auto check_declared = [&](const ::onnx::ValueInfoProto& v, const char* kind) {
    const int declared = declared_type(v);
    const auto computed = types.find(v.name());
    if (declared == 0 || computed == types.end() || computed->second == declared) return;
    const auto by = producer.find(v.name());
    fail("{} '{}' is declared {}, but {} computes {}", kind, v.name(), type_name(declared),
         by == producer.end()
             ? std::string("the model")
             : describe_node(plan.node_names[by->second], graph.node(static_cast<int>(by->second))),
         type_name(computed->second));
  };
  for (const ::onnx::ValueInfoProto& v : graph.output()) check_declared(v, "graph output");
  for (const ::onnx::ValueInfoProto& v : graph.value_info()) check_declared(v, "value");
  return types;
}

}  // namespace refold::onnx::detail
