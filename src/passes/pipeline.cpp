// The optimizer's one pipeline list (docs/conventions.md rule 2): the passes in order, each
// disable-able by name, and the report that counts ops before and after.
#include "refold/passes/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/check.h"
#include "passes/passes.h"

namespace refold::passes {
namespace {

struct PassEntry {
  const char* name;
  PassReport (*run)(graph::Graph&);
};

const std::vector<PassEntry>& pass_list() {
  static const std::vector<PassEntry> list = {
      {"constant-folding", &fold_constants},
      {"simplify", &simplify_algebra},
      {"canonicalize", &canonicalize},
      {"pad-folding", &fold_pads},
      {"dead-code", &eliminate_dead_code},
      {"dead-taps", &drop_dead_taps},
      {"linear-merging", &merge_linear_layers},
      {"group-merging", &merge_grouped_convs},
      {"bn-folding", &fold_batch_norms},
      {"reparameterize", &reparameterize_branches},
      {"conv-input-folding", &fold_conv_inputs},
      {"activation-fusion", &fuse_activations},
      {"layout", &plan_layout},
  };
  return list;
}

// The ops the graph writes to ONNX: a fused node (Conv + Relu run as one) counts as its parts.
void count_node(const graph::Node& node, std::map<std::string, int>& counts) {
  if (node.parts.empty()) {
    ++counts[node.op_type];
    return;
  }
  for (const graph::Node& part : node.parts) count_node(part, counts);
}

std::map<std::string, int> count_ops(const graph::Graph& graph) {
  std::map<std::string, int> counts;
  for (const graph::Node& node : graph.nodes()) count_node(node, counts);
  return counts;
}

}  // namespace

const std::vector<std::string>& pass_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const PassEntry& entry : pass_list()) out.emplace_back(entry.name);
    return out;
  }();
  return names;
}

PipelineReport optimize(graph::Graph& graph, const PipelineOptions& options) {
  const std::vector<std::string>& names = pass_names();
  for (const std::string& name : options.disabled) {
    REFOLD_CHECK(std::find(names.begin(), names.end(), name) != names.end(),
                 "optimize: unknown pass '{}' to disable; the passes are {}", name,
                 fmt::join(names, ", "));
  }
  PipelineReport report;
  report.op_counts_before = count_ops(graph);
  for (const PassEntry& entry : pass_list()) {
    if (options.disabled.count(entry.name) != 0) {
      PassReport skipped;
      skipped.pass = entry.name;
      skipped.notes.push_back("disabled");
      report.passes.push_back(std::move(skipped));
      continue;
    }
    PassReport pass = entry.run(graph);
    pass.pass = entry.name;
    // Every pass promises a valid graph; a broken promise is a refold bug, named here.
    try {
      graph.verify();
    } catch (const Error& e) {
      fail("optimize: the graph is invalid after pass '{}': {}", entry.name, e.what());
    }
    report.passes.push_back(std::move(pass));
  }
  report.op_counts_after = count_ops(graph);
  return report;
}

// "Conv 44 → 22, BatchNormalization 17 → 0, Add 39 → 0" — the op types whose count changed,
// in order of their count before (ties by name), then the new ones; "no op count changed"
// when none did. Verbose: one line per pass with its notes indented under it.
std::string PipelineReport::to_string(bool verbose) const {
  std::vector<std::pair<std::string, std::pair<int, int>>> changed;
  auto count_in = [](const std::map<std::string, int>& counts, const std::string& op) {
    auto it = counts.find(op);
    return it == counts.end() ? 0 : it->second;
  };
  std::map<std::string, int> all = op_counts_before;
  for (const auto& [op, n] : op_counts_after) all.emplace(op, 0);
  for (const auto& [op, ignored] : all) {
    const int before = count_in(op_counts_before, op);
    const int after = count_in(op_counts_after, op);
    if (before != after) changed.push_back({op, {before, after}});
  }
  std::stable_sort(changed.begin(), changed.end(),
                   [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  std::vector<std::string> parts;
  for (const auto& [op, counts] : changed) {
    parts.push_back(fmt::format("{} {} → {}", op, counts.first, counts.second));
  }
  int nodes_before = 0, nodes_after = 0;
  for (const auto& [op, n] : op_counts_before) nodes_before += n;
  for (const auto& [op, n] : op_counts_after) nodes_after += n;
  std::string out = parts.empty() ? std::string("no op count changed")
                                  : fmt::format("{}", fmt::join(parts, ", "));
  out += fmt::format(" (nodes {} → {})", nodes_before, nodes_after);
  if (!verbose) return out;
  out += "\n";
  for (const PassReport& pass : passes) {
    out += fmt::format("{}: {}\n", pass.pass, pass.changed ? "changed the graph" : "no change");
    for (const std::string& note : pass.notes) {
      // A multi-line note (the layout plan) stays indented under its pass.
      std::string indented = "  ";
      for (char c : note) {
        indented += c;
        if (c == '\n') indented += "  ";
      }
      while (!indented.empty() && (indented.back() == ' ' || indented.back() == '\n'))
        indented.pop_back();
      out += indented + "\n";
    }
  }
  return out;
}

}  // namespace refold::passes
