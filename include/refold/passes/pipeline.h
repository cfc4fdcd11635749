// refold::passes — the graph optimizer: one pass per file, run in one fixed order.
//
//   PipelineOptions options;  options.disabled = {"layout"};
//   PipelineReport report = refold::passes::optimize(*graph, options);
//   std::puts(report.to_string().c_str());   // "Conv 44 → 22, BatchNormalization 17 → 0, …"
//
// The passes, in order (names as --disable takes them):
//   constant-folding, simplify, canonicalize, pad-folding, dead-code, dead-taps, linear-merging,
//   group-merging, bn-folding, reparameterize, conv-input-folding, activation-fusion, layout
// A pass that cannot apply somewhere leaves that part of the graph as it was and records why
// (PassReport::notes; printed under --verbose). Every pass leaves graph.verify() true.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "refold/graph/graph.h"

namespace refold::passes {

struct PassReport {
  std::string pass;
  bool changed = false;
  std::vector<std::string> notes;  // what was done or declined, and why
};

struct PipelineOptions {
  std::set<std::string> disabled;
};

struct PipelineReport {
  std::vector<PassReport> passes;
  // op_type → count, as written to ONNX (a fused Conv + Relu node counts as Conv and Relu).
  std::map<std::string, int> op_counts_before;
  std::map<std::string, int> op_counts_after;
  std::string to_string(bool verbose = false) const;
};

// The names above, in pipeline order.
const std::vector<std::string>& pass_names();
// Throws refold::Error listing the valid names when `disabled` holds an unknown one.
PipelineReport optimize(graph::Graph& graph, const PipelineOptions& options = {});

}  // namespace refold::passes
