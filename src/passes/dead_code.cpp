// dead-code: removes what cannot change a graph output, keeping the order of what stays.
//
//   1. Identity nodes: every reader of y = Identity(x) reads x instead, and the node goes —
//      unless y is a graph output (its name is the graph's interface, so it stays).
//   2. Nodes none of whose outputs reaches a graph output. Liveness runs backwards over the
//      topological order: a node is live iff one of its outputs is live, and a live node's
//      inputs are live. Graph outputs are live.
//   3. Constants no remaining node reads (a fused node reads what its parts read) and that are
//      not graph outputs, and the value_info of values that no longer exist.
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "passes/branch_nodes.h"
#include "passes/passes.h"

namespace refold::passes {
namespace {

using detail::describe;

// Renames what `node` reads, `from` → `to`, in its parts too: a fused node's parts read its
// inputs by name, and the exporter writes the parts.
void rename_input(graph::Node& node, const std::string& from, const std::string& to) {
  for (std::string& in : node.inputs)
    if (in == from) in = to;
  for (graph::Node& part : node.parts) rename_input(part, from, to);
}

void remove_identities(graph::Graph& graph, PassReport& report) {
  for (std::size_t i = 0; i < graph.nodes().size();) {
    const graph::Node& n = graph.nodes()[i];
    if (!detail::is_op(n, "Identity") || n.inputs.size() != 1 || n.outputs.size() != 1 ||
        n.inputs[0].empty() || !n.parts.empty()) {
      ++i;
      continue;
    }
    const std::string from = n.outputs[0], to = n.inputs[0];
    if (graph.is_graph_output(from)) {
      report.notes.push_back(
          fmt::format("kept {}: its output '{}' is a graph output", describe(n), from));
      ++i;
      continue;
    }
    for (std::size_t c : graph.consumers(from)) rename_input(graph.node(c), from, to);
    report.notes.push_back(fmt::format("removed {}: its readers now read '{}'", describe(n), to));
    graph.erase_node(i);
    report.changed = true;
  }
}

// What a node reads: its inputs and, for a fused node, what its parts read (the exporter writes
// the parts, so their constants — a GELU's √2 — must stay).
void insert_reads(const graph::Node& n, std::set<std::string>& values) {
  values.insert(n.inputs.begin(), n.inputs.end());
  for (const graph::Node& part : n.parts) insert_reads(part, values);
}

void remove_dead_nodes(graph::Graph& graph, PassReport& report) {
  std::set<std::string> live;
  for (const graph::ValueInfo& v : graph.outputs) live.insert(v.name);
  std::vector<bool> keep(graph.nodes().size());
  for (std::size_t i = graph.nodes().size(); i-- > 0;) {
    const graph::Node& n = graph.nodes()[i];
    keep[i] = std::any_of(n.outputs.begin(), n.outputs.end(),
                          [&](const std::string& v) { return live.count(v) != 0; });
    if (keep[i]) insert_reads(n, live);
  }
  for (std::size_t i = graph.nodes().size(); i-- > 0;) {
    if (keep[i]) continue;
    report.notes.push_back(
        fmt::format("removed {}: no graph output depends on it", describe(graph.nodes()[i])));
    graph.erase_node(i);
    report.changed = true;
  }
}

void remove_unused_values(graph::Graph& graph, PassReport& report) {
  std::set<std::string> used;
  for (const graph::Node& n : graph.nodes()) {
    insert_reads(n, used);
    used.insert(n.outputs.begin(), n.outputs.end());
  }
  for (const graph::ValueInfo& v : graph.outputs) used.insert(v.name);
  for (const graph::ValueInfo& v : graph.inputs) used.insert(v.name);
  std::vector<std::string> dropped;
  for (const std::string& c : graph.constant_names()) {
    if (used.count(c) != 0) continue;
    graph.erase_constant(c);
    dropped.push_back(c);
  }
  if (!dropped.empty()) {
    report.notes.push_back(fmt::format("removed {} unused constant{}: {}", dropped.size(),
                                       dropped.size() == 1 ? "" : "s", fmt::join(dropped, ", ")));
    report.changed = true;
  }
  auto& info = graph.value_info;
  info.erase(std::remove_if(info.begin(), info.end(),
                            [&](const graph::ValueInfo& v) { return used.count(v.name) == 0; }),
             info.end());
}

}  // namespace

PassReport eliminate_dead_code(graph::Graph& graph) {
  PassReport report{"dead-code", false, {}};
  remove_identities(graph, report);
  remove_dead_nodes(graph, report);
  remove_unused_values(graph, report);
  graph.verify();
  return report;
}

}  // namespace refold::passes
