#include "onnx/static_if.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/check.h"
#include "onnx/validate.h"
#include "passes/constant_folding.h"

namespace refold::onnx::detail {
namespace {

using ::onnx::AttributeProto;
using ::onnx::GraphProto;
using ::onnx::NodeProto;
using Renames = std::map<std::string, std::string>;

bool is_if(const NodeProto& node) {
  return node.op_type() == "If" && (node.domain().empty() || node.domain() == "ai.onnx");
}

bool has_subgraph(const NodeProto& node) {
  for (const AttributeProto& a : node.attribute())
    if (a.type() == AttributeProto::GRAPH || a.type() == AttributeProto::GRAPHS) return true;
  return false;
}

const GraphProto& branch_of(const NodeProto& node, const std::string& attribute,
                            const std::string& what) {
  for (const AttributeProto& a : node.attribute()) {
    if (a.name() != attribute) continue;
    REFOLD_CHECK(a.type() == AttributeProto::GRAPH && a.has_g(),
                 "{}: attribute '{}' must be a graph", what, attribute);
    return a.g();
  }
  fail("{}: attribute '{}' is missing", what, attribute);
}

// The value of If node `k`'s condition: its cone loaded as a model whose one output is the
// condition (through an Identity, since constant folding keeps a graph output's producer), with
// its constants folded.
bool condition(const graph::SourceModel& source, int k, const BuildGraph& build,
               std::size_t max_folded_bytes, const std::string& what) {
  const GraphProto& g = source.model.graph();
  const std::string& cond = g.node(k).input(0);
  std::map<std::string, int> producer;
  for (int i = 0; i < g.node_size(); ++i)
    for (const std::string& out : g.node(i).output())
      if (!out.empty()) producer.emplace(out, i);
  std::vector<bool> in_cone(static_cast<std::size_t>(g.node_size()), false);
  std::set<std::string> seen, leaves;  // leaves: the initializers and graph inputs it reads
  std::vector<std::string> pending{cond};
  while (!pending.empty()) {
    const std::string value = pending.back();
    pending.pop_back();
    if (value.empty() || !seen.insert(value).second) continue;
    const auto p = producer.find(value);
    if (p == producer.end()) {
      leaves.insert(value);
      continue;
    }
    const NodeProto& node = g.node(p->second);
    REFOLD_CHECK(!has_subgraph(node), "{}: its condition '{}' depends on {}, which has a subgraph",
                 what, cond, describe_node(node.name(), node));
    in_cone[static_cast<std::size_t>(p->second)] = true;
    pending.insert(pending.end(), node.input().begin(), node.input().end());
  }

  auto cone = std::make_shared<graph::SourceModel>();
  cone->base_dir = source.base_dir;
  cone->file = source.file;
  ::onnx::ModelProto& model = cone->model;
  model.set_ir_version(source.model.ir_version());
  *model.mutable_opset_import() = source.model.opset_import();
  GraphProto& cg = *model.mutable_graph();
  cg.set_name("condition");
  for (int i = 0; i < g.node_size(); ++i)
    if (in_cone[static_cast<std::size_t>(i)]) *cg.add_node() = g.node(i);
  for (const auto& t : g.initializer())
    if (leaves.count(t.name()) != 0) *cg.add_initializer() = t;
  for (const auto& v : g.input())
    if (leaves.count(v.name()) != 0) *cg.add_input() = v;
  const std::string output = "refold_condition";
  NodeProto& identity = *cg.add_node();
  identity.set_op_type("Identity");
  identity.set_name(output);
  identity.add_input(cond);
  identity.add_output(output);
  cg.add_output()->set_name(output);

  std::shared_ptr<graph::Graph> loaded;
  try {
    loaded = build(cone);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: finding its condition '{}': {}", what, cond, e.what()));
  }
  passes::fold_constants(*loaded, max_folded_bytes);
  REFOLD_CHECK(loaded->is_constant(cond),
               "{}: condition '{}' is not known when the model loads (refold runs an If only "
               "where its condition follows from constants and static input shapes)",
               what, cond);
  const Tensor value = loaded->constant(cond);
  REFOLD_CHECK(value.numel() == 1, "{}: condition '{}' has {} elements (shape [{}]), expected 1",
               what, cond, value.numel(), fmt::join(value.sizes(), ", "));
  return value.to_vector()[0] != 0.0f;
}

std::string renamed(const Renames& renames, const std::string& name) {
  const auto r = renames.find(name);
  return r == renames.end() ? name : r->second;
}

// Applies `renames` to every value name in `g` and the subgraphs it nests (ONNX forbids a
// subgraph to redefine an outer name, so a name means the same value at every depth).
void rename_values(GraphProto& g, const Renames& renames) {
  for (NodeProto& node : *g.mutable_node()) {
    for (std::string& in : *node.mutable_input()) in = renamed(renames, in);
    for (std::string& out : *node.mutable_output()) out = renamed(renames, out);
    for (AttributeProto& a : *node.mutable_attribute()) {
      if (a.has_g()) rename_values(*a.mutable_g(), renames);
      for (GraphProto& nested : *a.mutable_graphs()) rename_values(nested, renames);
    }
  }
  for (auto& t : *g.mutable_initializer()) t.set_name(renamed(renames, t.name()));
  for (auto& v : *g.mutable_output()) v.set_name(renamed(renames, v.name()));
}

// Replaces If node `k` of `g` by `branch` (taken by value: it is renamed here).
void splice(GraphProto& g, int k, GraphProto branch, const std::string& if_name,
            const std::string& what) {
  const NodeProto node = g.node(k);
  REFOLD_CHECK(branch.output_size() == node.output_size(),
               "{}: the branch taken has {} outputs, the node {}", what, branch.output_size(),
               node.output_size());
  REFOLD_CHECK(branch.sparse_initializer_size() == 0,
               "{}: the branch taken has sparse initializers (unsupported)", what);
  std::set<std::string> used;
  for (const auto& v : g.input()) used.insert(v.name());
  for (const auto& t : g.initializer()) used.insert(t.name());
  for (const NodeProto& n : g.node())
    for (const std::string& out : n.output()) used.insert(out);
  Renames renames;
  const auto define = [&](const std::string& name) {
    if (name.empty()) return;
    if (used.insert(name).second) return;  // a name the graph does not use yet
    std::string fresh = fmt::format("{}/{}", if_name, name);
    for (int i = 1; used.count(fresh) != 0; ++i) fresh = fmt::format("{}/{}_{}", if_name, name, i);
    used.insert(fresh);
    renames[name] = fresh;
  };
  for (const NodeProto& n : branch.node())
    for (const std::string& out : n.output()) define(out);
  for (const auto& t : branch.initializer()) define(t.name());
  rename_values(branch, renames);

  google::protobuf::RepeatedPtrField<NodeProto> nodes;
  nodes.Swap(g.mutable_node());
  for (int i = 0; i < k; ++i) g.add_node()->Swap(nodes.Mutable(i));
  for (NodeProto& n : *branch.mutable_node()) g.add_node()->Swap(&n);
  for (int j = 0; j < node.output_size(); ++j) {
    if (node.output(j).empty()) continue;
    NodeProto& identity = *g.add_node();
    identity.set_op_type("Identity");
    identity.set_name(fmt::format("{}/output_{}", if_name, j));
    identity.add_input(branch.output(j).name());
    identity.add_output(node.output(j));
  }
  for (int i = k + 1; i < nodes.size(); ++i) g.add_node()->Swap(nodes.Mutable(i));
  for (auto& t : *branch.mutable_initializer()) g.add_initializer()->Swap(&t);
}

}  // namespace

void inline_static_ifs(graph::SourceModel& source, const BuildGraph& build, std::size_t max_nodes,
                       std::size_t max_folded_bytes) {
  GraphProto& g = *source.model.mutable_graph();
  for (;;) {
    int k = 0;
    while (k < g.node_size() && !is_if(g.node(k))) ++k;
    if (k == g.node_size()) return;
    const NodeProto& node = g.node(k);
    const std::string if_name = node.name().empty() ? fmt::format("If_{}", k) : node.name();
    const std::string what = describe_node(if_name, node);
    REFOLD_CHECK(node.input_size() == 1 && !node.input(0).empty(),
                 "{}: expects 1 input (cond), got {}", what, node.input_size());
    const GraphProto& then_branch = branch_of(node, "then_branch", what);
    const GraphProto& else_branch = branch_of(node, "else_branch", what);
    const bool taken = condition(source, k, build, max_folded_bytes, what);
    splice(g, k, taken ? then_branch : else_branch, if_name, what);
    REFOLD_CHECK(static_cast<std::size_t>(g.node_size()) <= max_nodes,
                 "{} nodes after inlining {}'s branch, over the limit of {}", g.node_size(), what,
                 max_nodes);
  }
}

}  // namespace refold::onnx::detail
