#include "refold/graph/graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <unordered_map>

#include "core/check.h"
#include "graph/plan.h"
#include "refold/graph/op.h"

namespace refold::graph {

std::string module_child_name(const std::string& node_name) {
  std::string name = node_name;
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

namespace {

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    if (!out.empty()) out += ", ";
    out += n.empty() ? "\"\"" : n;
  }
  return out;
}

}  // namespace

// ---- Attributes ----

namespace {

template <typename T>
const T* attribute_as(const std::map<std::string, AttributeValue>& values, const std::string& name,
                      const char* expected) {
  auto it = values.find(name);
  if (it == values.end()) return nullptr;
  if (const T* value = std::get_if<T>(&it->second)) return value;
  fail("attribute '{}' has another type, expected {}", name, expected);
}

}  // namespace

std::int64_t Attributes::get_int(const std::string& name, std::int64_t fallback) const {
  const auto* v = attribute_as<std::int64_t>(values_, name, "an int");
  return v ? *v : fallback;
}

float Attributes::get_float(const std::string& name, float fallback) const {
  const auto* v = attribute_as<float>(values_, name, "a float");
  return v ? *v : fallback;
}

std::string Attributes::get_string(const std::string& name, const std::string& fallback) const {
  const auto* v = attribute_as<std::string>(values_, name, "a string");
  return v ? *v : fallback;
}

std::vector<std::int64_t> Attributes::get_ints(const std::string& name,
                                               const std::vector<std::int64_t>& fallback) const {
  const auto* v = attribute_as<std::vector<std::int64_t>>(values_, name, "ints");
  return v ? *v : fallback;
}

std::vector<float> Attributes::get_floats(const std::string& name,
                                          const std::vector<float>& fallback) const {
  const auto* v = attribute_as<std::vector<float>>(values_, name, "floats");
  return v ? *v : fallback;
}

std::vector<std::string> Attributes::get_strings(const std::string& name,
                                                 const std::vector<std::string>& fallback) const {
  const auto* v = attribute_as<std::vector<std::string>>(values_, name, "strings");
  return v ? *v : fallback;
}

Tensor Attributes::get_tensor(const std::string& name) const {
  const auto* v = attribute_as<Tensor>(values_, name, "a tensor");
  return v ? *v : Tensor();
}

// ---- Op ----

Tensor Op::forward(const Tensor& input) {
  std::vector<Tensor> out = run({input});
  REFOLD_CHECK(out.size() == 1, "{}: used as a one-output module but gives {} outputs", type_name(),
               out.size());
  return out[0];
}

// ---- nodes ----

Node& Graph::node(std::size_t index) {
  REFOLD_CHECK(index < nodes_.size(), "Graph: node index {} out of range ({} nodes)", index,
               nodes_.size());
  changed();  // the caller may rewire the node
  return nodes_[index];
}

void Graph::changed() {
  index_.reset();
  plan_.reset();
}

Node& Graph::insert_node(std::size_t index, Node node) {
  REFOLD_CHECK(index <= nodes_.size(), "Graph: insert position {} out of range ({} nodes)", index,
               nodes_.size());
  REFOLD_CHECK(!node.name.empty(), "Graph: a {} node has no name", node.op_type);
  REFOLD_CHECK(node_names_.count(node.name) == 0, "Graph: node name '{}' is taken", node.name);
  REFOLD_CHECK(node.module != nullptr, "Graph: node '{}' ({}) has no module", node.name,
               node.op_type);
  const std::string child = module_child_name(node.name);
  REFOLD_CHECK(!this->child(child), "Graph: node '{}' maps to module name '{}', which is taken",
               node.name, child);
  register_module(child, node.module);
  node_names_.insert(node.name);
  // Appending (an importer, a builder) extends the index; inserting before others shifts them.
  plan_.reset();
  if (index_ && index == nodes_.size()) {
    index_node(*index_, node, index);
  } else {
    index_.reset();
  }
  return *nodes_.insert(nodes_.begin() + static_cast<std::ptrdiff_t>(index), std::move(node));
}

void Graph::erase_node(std::size_t index) {
  Node& n = node(index);
  unregister_module(module_child_name(n.name));
  node_names_.erase(n.name);
  changed();
  nodes_.erase(nodes_.begin() + static_cast<std::ptrdiff_t>(index));
}

void Graph::set_module(std::size_t index, nn::ModulePtr module) {
  Node& n = node(index);
  REFOLD_CHECK(module != nullptr, "Graph: set_module on node '{}' given a null module", n.name);
  replace_child(module_child_name(n.name), module);
  n.module = std::move(module);
}

std::optional<std::size_t> Graph::find_node(const std::string& name) const {
  const auto& node_of = index().node_of;
  const auto it = node_of.find(name);
  return it == node_of.end() ? std::nullopt : std::optional<std::size_t>(it->second);
}

// ---- constants ----

bool Graph::is_constant(const std::string& value) const { return constants_.count(value) != 0; }

const Tensor& Graph::constant(const std::string& value) const {
  auto it = constants_.find(value);
  REFOLD_CHECK(it != constants_.end(), "Graph: '{}' is not a constant", value);
  return it->second.first;
}

void Graph::set_constant(const std::string& value, Tensor tensor, int source_index) {
  REFOLD_CHECK(!value.empty(), "Graph: a constant needs a name");
  REFOLD_CHECK(tensor.defined(), "Graph: constant '{}' is undefined", value);
  auto it = constants_.find(value);
  if (it == constants_.end()) constant_order_.push_back(value);
  constants_[value] = {std::move(tensor), source_index};
  plan_.reset();
}

void Graph::erase_constant(const std::string& value) {
  if (constants_.erase(value) == 0) return;
  plan_.reset();
  constant_order_.erase(std::find(constant_order_.begin(), constant_order_.end(), value));
}

std::vector<std::string> Graph::constant_names() const { return constant_order_; }

int Graph::constant_source(const std::string& value) const {
  auto it = constants_.find(value);
  return it == constants_.end() ? -1 : it->second.second;
}

// ---- who uses what ----

void Graph::index_node(Index& ix, const Node& n, std::size_t i) {
  ix.node_of.emplace(n.name, i);
  for (const std::string& out : n.outputs)
    if (!out.empty()) ix.producer.emplace(out, i);  // the first writer, as verify() wants one
  for (const std::string& in : n.inputs) {
    if (in.empty()) continue;
    std::vector<std::size_t>& readers = ix.consumers[in];
    if (readers.empty() || readers.back() != i) readers.push_back(i);  // once per node
  }
}

const Graph::Index& Graph::index() const {
  if (index_) return *index_;
  Index& ix = index_.emplace();
  for (std::size_t i = 0; i < nodes_.size(); ++i) index_node(ix, nodes_[i], i);
  return ix;
}

std::optional<std::size_t> Graph::producer(const std::string& value) const {
  const auto& producer = index().producer;
  const auto it = producer.find(value);
  return it == producer.end() ? std::nullopt : std::optional<std::size_t>(it->second);
}

std::vector<std::size_t> Graph::consumers(const std::string& value) const {
  const auto& consumers = index().consumers;
  const auto it = consumers.find(value);
  return it == consumers.end() ? std::vector<std::size_t>{} : it->second;
}

bool Graph::is_graph_output(const std::string& value) const {
  return std::any_of(outputs.begin(), outputs.end(),
                     [&](const ValueInfo& v) { return v.name == value; });
}

bool Graph::is_graph_input(const std::string& value) const {
  return std::any_of(inputs.begin(), inputs.end(),
                     [&](const ValueInfo& v) { return v.name == value; });
}

std::string Graph::unique_name(std::string_view base) const {
  const Index& ix = index();
  auto named = [&](const std::string& name) {
    return [&](const ValueInfo& v) { return v.name == name; };
  };
  auto taken = [&](const std::string& name) {
    return node_names_.count(name) != 0 || constants_.count(name) != 0 ||
           ix.producer.count(name) != 0 || ix.consumers.count(name) != 0 ||
           std::any_of(inputs.begin(), inputs.end(), named(name)) ||
           std::any_of(outputs.begin(), outputs.end(), named(name)) ||
           std::any_of(value_info.begin(), value_info.end(), named(name));
  };
  std::string name(base);
  for (int i = 1; taken(name); ++i) name = fmt::format("{}_{}", base, i);
  return name;
}

// ---- checks and listing ----

void Graph::verify() const {
  std::set<std::string> defined;  // values readable so far
  std::set<std::string> node_names;
  auto define = [&](const std::string& value, const std::string& by) {
    REFOLD_CHECK(defined.insert(value).second, "Graph: value '{}' is defined twice (again by {})",
                 value, by);
  };
  for (const ValueInfo& v : inputs) define(v.name, "graph input");
  for (const std::string& c : constant_order_) define(c, "constant");
  for (const Node& n : nodes_) {
    REFOLD_CHECK(!n.name.empty(), "Graph: a {} node has no name", n.op_type);
    REFOLD_CHECK(node_names.insert(n.name).second, "Graph: node name '{}' is used twice", n.name);
    REFOLD_CHECK(n.module != nullptr, "Graph: node '{}' ({}) has no module", n.name, n.op_type);
    for (const std::string& in : n.inputs) {
      REFOLD_CHECK(in.empty() || defined.count(in) != 0,
                   "Graph: node '{}' ({}) reads '{}' before anything defines it", n.name, n.op_type,
                   in);
    }
    for (const std::string& out : n.outputs) {
      if (!out.empty()) define(out, fmt::format("node '{}' ({})", n.name, n.op_type));
    }
  }
  for (const ValueInfo& v : outputs) {
    REFOLD_CHECK(defined.count(v.name) != 0, "Graph: output '{}' is not produced", v.name);
  }
}

std::string Graph::dump() const {
  std::string out;
  auto describe = [](const ValueInfo& v) {
    std::string dims;
    if (v.shape) {
      for (const Dim& d : *v.shape) {
        if (!dims.empty()) dims += ", ";
        dims += d.is_static() ? std::to_string(d.value) : (d.param.empty() ? "?" : d.param);
      }
    }
    return fmt::format("{} [{}]", v.name, v.shape ? dims : "rank ?");
  };
  for (const ValueInfo& v : inputs) out += "input  " + describe(v) + "\n";
  for (const std::string& c : constant_order_) {
    out += fmt::format("const  {}: {}\n", c, constant(c).description());
  }
  for (const Node& n : nodes_) {
    out += fmt::format("{}: {}({}) -> {}  [{}]", n.name, n.op_type, join(n.inputs), join(n.outputs),
                       n.module ? n.module->type_name() : "no module");
    if (!n.parts.empty()) {
      std::vector<std::string> parts;
      for (const Node& p : n.parts) parts.push_back(p.op_type);
      out += " fused " + join(parts);
    }
    if (!n.origin.empty()) out += " from " + n.origin;
    out += "\n";
  }
  for (const ValueInfo& v : outputs) out += "output " + describe(v) + "\n";
  return out;
}

// ---- running ----

namespace {

std::vector<std::string> names_of(const std::vector<ValueInfo>& values) {
  std::vector<std::string> names;
  names.reserve(values.size());
  for (const ValueInfo& v : values) names.push_back(v.name);
  return names;
}

// Whether `values` are named `names`, in order (no allocation: this runs on every run()).
bool named(const std::vector<ValueInfo>& values, const std::vector<std::string>& names) {
  return std::equal(values.begin(), values.end(), names.begin(), names.end(),
                    [](const ValueInfo& v, const std::string& name) { return v.name == name; });
}

}  // namespace

std::vector<Tensor> Graph::run(const std::vector<Tensor>& feeds, const NodeObserver& observe) {
  if (!plan_ || !named(inputs, plan_inputs_) || !named(outputs, plan_outputs_)) {
    plan_.reset();
    plan_ = std::make_shared<const ExecutionPlan>(*this);
    plan_inputs_ = names_of(inputs);
    plan_outputs_ = names_of(outputs);
  }
  const std::shared_ptr<const ExecutionPlan> plan = plan_;  // a module run may change the graph
  return plan->run(feeds, observe);
}

nn::Module& Graph::to(DType dtype) {
  nn::Module::to(dtype);
  plan_.reset();
  for (auto& [name, entry] : constants_) {
    Tensor& t = entry.first;
    if (is_floating(t.dtype()) && t.dtype() != dtype) {
      t = t.to(dtype);
      entry.second = -1;  // changed: export writes it anew
    }
  }
  // ONNX element types: 1 float32, 16 bfloat16.
  const int declared = dtype == DType::BFloat16 ? 16 : 1;
  for (auto* list : {&inputs, &outputs})
    for (ValueInfo& v : *list)
      if (v.elem_type == 1 || v.elem_type == 16) v.elem_type = declared;
  return *this;
}

Tensor Graph::forward(const Tensor& input) {
  REFOLD_CHECK(inputs.size() == 1 && outputs.size() == 1,
               "Graph: forward() takes one input and gives one output; this graph has {} and {} "
               "(use run())",
               inputs.size(), outputs.size());
  return run({input})[0];
}

}  // namespace refold::graph
