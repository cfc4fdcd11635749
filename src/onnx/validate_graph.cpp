#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <set>

#include <google/protobuf/unknown_field_set.h>

#include "core/check.h"
#include "onnx/validate.h"

namespace refold::onnx::detail {

std::string describe_node(const std::string& name, const ::onnx::NodeProto& node) {
  const std::string& domain = node.domain();
  if (domain.empty() || domain == "ai.onnx")
    return fmt::format("node '{}' ({})", name, node.op_type());
  return fmt::format("node '{}' ({}.{})", name, domain, node.op_type());
}

void check_newer_ir_fields(const ::onnx::NodeProto& node, const std::string& name) {
  constexpr int kOverloadField = 8;  // NodeProto.overload, IR 10
  const google::protobuf::UnknownFieldSet& unknown = node.GetReflection()->GetUnknownFields(node);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField& field = unknown.field(i);
    if (field.number() != kOverloadField) continue;
    const std::string overload =
        field.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED
            ? field.length_delimited()
            : std::string("?");
    if (overload.empty()) continue;
    fail(
        "{}: overload '{}' (IR 10 function overloads) is not supported; refold runs ai.onnx "
        "ops, not model-local functions",
        describe_node(name, node), overload);
  }
}

namespace {

std::vector<std::string> name_nodes(const ::onnx::GraphProto& graph) {
  std::vector<std::string> names;
  std::set<std::string> taken;
  for (const auto& node : graph.node()) {
    if (!node.name().empty()) taken.insert(node.name());
  }
  std::set<std::string> used;
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    REFOLD_CHECK(!node.op_type().empty(), "node #{} '{}': empty op_type", i, node.name());
    // Deterministic: "<OpType>_<index>" for an unnamed node; a clash gets "_1", "_2", …
    std::string base = node.name().empty() ? fmt::format("{}_{}", node.op_type(), i) : node.name();
    std::string name = base;
    for (int k = 1; used.count(name) != 0 || (name != node.name() && taken.count(name) != 0); ++k) {
      name = fmt::format("{}_{}", base, k);
    }
    used.insert(name);
    names.push_back(std::move(name));
  }
  return names;
}

// Nodes of a cycle among the unsorted `left` nodes: every one of them has a predecessor among
// them, so walking predecessors must repeat a node; the walk from that node on is a cycle.
std::vector<std::size_t> find_cycle(const std::vector<std::vector<std::size_t>>& preds,
                                    const std::vector<bool>& left, std::size_t start) {
  std::vector<std::size_t> path;
  std::map<std::size_t, std::size_t> position;
  std::size_t at = start;
  while (position.count(at) == 0) {
    position[at] = path.size();
    path.push_back(at);
    std::size_t next = at;
    for (std::size_t p : preds[at]) {
      if (left[p]) {
        next = p;
        break;
      }
    }
    at = next;
  }
  std::vector<std::size_t> cycle(path.begin() + static_cast<std::ptrdiff_t>(position[at]),
                                 path.end());
  std::reverse(cycle.begin(), cycle.end());  // producer before consumer
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  return cycle;
}

}  // namespace

GraphPlan validate_graph(const ::onnx::GraphProto& graph, std::size_t max_nodes) {
  REFOLD_CHECK(static_cast<std::size_t>(graph.node_size()) <= max_nodes,
               "graph has {} nodes, over the limit of {}", graph.node_size(), max_nodes);
  REFOLD_CHECK(graph.sparse_initializer_size() == 0, "sparse initializers are unsupported ('{}')",
               graph.sparse_initializer(0).values().name());
  GraphPlan plan;
  plan.node_names = name_nodes(graph);
  const auto& names = plan.node_names;
  auto node_text = [&](std::size_t i) {
    return describe_node(names[i], graph.node(static_cast<int>(i)));
  };
  for (std::size_t i = 0; i < names.size(); ++i)
    check_newer_ir_fields(graph.node(static_cast<int>(i)), names[i]);

  std::set<std::string> initializers;
  for (const auto& t : graph.initializer()) {
    REFOLD_CHECK(!t.name().empty(), "an initializer has no name (dims [{}])",
                 fmt::join(t.dims(), ", "));
    REFOLD_CHECK(initializers.insert(t.name()).second, "duplicate initializer '{}'", t.name());
  }
  std::set<std::string> inputs;
  for (const auto& v : graph.input()) {
    REFOLD_CHECK(!v.name().empty(), "a graph input has no name");
    REFOLD_CHECK(inputs.insert(v.name()).second, "duplicate graph input '{}'", v.name());
  }

  // Single assignment: who writes each value.
  std::map<std::string, std::size_t> producer;
  for (std::size_t i = 0; i < names.size(); ++i) {
    for (const std::string& out : graph.node(static_cast<int>(i)).output()) {
      if (out.empty()) continue;  // an optional output left out
      REFOLD_CHECK(inputs.count(out) == 0, "{} writes graph input '{}'", node_text(i), out);
      REFOLD_CHECK(initializers.count(out) == 0, "{} writes initializer '{}'", node_text(i), out);
      const auto [it, fresh] = producer.emplace(out, i);
      REFOLD_CHECK(fresh, "value '{}' is written twice: by {} and by {}", out,
                   node_text(it->second), node_text(i));
    }
  }
  auto defined = [&](const std::string& v) {
    return inputs.count(v) != 0 || initializers.count(v) != 0 || producer.count(v) != 0;
  };
  std::vector<std::vector<std::size_t>> preds(names.size());
  std::vector<std::vector<std::size_t>> succs(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    for (const std::string& in : graph.node(static_cast<int>(i)).input()) {
      if (in.empty()) continue;  // an optional input left out (B8)
      REFOLD_CHECK(defined(in), "{} input '{}' is undefined", node_text(i), in);
      const auto p = producer.find(in);
      if (p != producer.end()) {
        preds[i].push_back(p->second);
        succs[p->second].push_back(i);
      }
    }
  }
  std::set<std::string> outputs;
  for (const auto& v : graph.output()) {
    REFOLD_CHECK(!v.name().empty(), "a graph output has no name");
    REFOLD_CHECK(outputs.insert(v.name()).second, "duplicate graph output '{}'", v.name());
    REFOLD_CHECK(defined(v.name()),
                 "graph output '{}' is not produced by any node, input or initializer", v.name());
  }

  // Kahn's algorithm taking the lowest ready index first: an already sorted graph keeps its
  // order exactly; an unsorted acyclic one gets the order closest to the file's.
  std::vector<std::size_t> missing(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) missing[i] = preds[i].size();
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (missing[i] == 0) ready.push(i);
  }
  while (!ready.empty()) {
    const std::size_t i = ready.top();
    ready.pop();
    plan.order.push_back(i);
    for (std::size_t s : succs[i]) {
      if (--missing[s] == 0) ready.push(s);
    }
  }
  if (plan.order.size() != names.size()) {
    std::vector<bool> left(names.size(), true);
    for (std::size_t i : plan.order) left[i] = false;
    const auto first =
        static_cast<std::size_t>(std::find(left.begin(), left.end(), true) - left.begin());
    // "cycle involving nodes 'a' (Add) -> 'b' (Relu) -> 'a'"
    std::vector<std::string> described;
    const std::vector<std::size_t> cycle = find_cycle(preds, left, first);
    for (std::size_t i : cycle) {
      described.push_back(
          fmt::format("'{}' ({})", names[i], graph.node(static_cast<int>(i)).op_type()));
    }
    fail("cycle involving nodes {} -> '{}'", fmt::join(described, " -> "), names[cycle.front()]);
  }
  return plan;
}

}  // namespace refold::onnx::detail
