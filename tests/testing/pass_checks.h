// Checks shared by the pass tests (tests/passes/): what a report's notes say, and a pass run on
// a GraphBuilder's graph with its outputs compared before and after.
//
//   const passes::PassReport r = testing::apply_pass(b, passes::fold_batch_norms);
//   EXPECT_TRUE(testing::has_note(r, "folded BatchNormalization")) << testing::notes_of(r);
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "passes/node_module.h"
#include "refold/onnx/onnx.h"
#include "refold/passes/pipeline.h"
#include "testing/compare.h"
#include "testing/graph_builder.h"

namespace refold::testing {

// Whether any note of `r` contains `text`.
inline bool has_note(const passes::PassReport& r, const std::string& text) {
  return std::any_of(r.notes.begin(), r.notes.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

// The notes of `r`, a line each (for failure messages).
inline std::string notes_of(const passes::PassReport& r) {
  std::string out;
  for (const std::string& n : r.notes) out += n + "\n";
  return out;
}

// `graph` as another runtime gets it: written as ONNX (fused nodes as their standard parts) and
// read back.
inline std::shared_ptr<graph::Graph> written_back(const graph::Graph& graph) {
  const std::string bytes = onnx::save_to_bytes(graph);
  return onnx::load_from_memory(std::as_bytes(std::span(bytes.data(), bytes.size())), "g.onnx");
}

using Pass = std::function<passes::PassReport(graph::Graph&)>;

// One truth per node (docs/architecture.md): what each node runs is what its data (op type,
// attributes, inputs, constants, parts) says. Every node's module — but those in `unchanged`,
// the modules a graph had before the pass under test (a test may edit a node's data after
// import to see that a pass reads the data) — is swapped for the one passes::module_for makes
// from that data, which must be of the same type; the graph is run on `x` and must give
// `expected` bit for bit; then the modules are put back.
inline void expect_modules_follow_data(graph::Graph& g, const std::vector<Tensor>& x,
                                       const std::vector<Tensor>& expected,
                                       const std::set<const nn::Module*>& unchanged = {}) {
  std::vector<nn::ModulePtr> kept;
  for (std::size_t i = 0; i < g.nodes().size(); ++i) {
    const graph::Node& n = g.nodes()[i];
    kept.push_back(n.module);
    if (unchanged.count(n.module.get()) != 0) continue;
    nn::ModulePtr made;
    try {
      made = passes::module_for(g, n);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "node '" << n.name << "' (" << n.op_type
                    << "): no module from its data: " << e.what() << "\n"
                    << g.dump();
      made = n.module;
    }
    EXPECT_EQ(made->type_name(), n.module->type_name())
        << "node '" << n.name << "' runs a module its data does not say\n"
        << g.dump();
    g.set_module(i, made);
  }
  const std::vector<Tensor> rebuilt = g.run(x);
  for (std::size_t i = 0; i < std::min(rebuilt.size(), expected.size()); ++i) {
    EXPECT_TRUE(all_close(rebuilt[i], expected[i], Tolerance::exact()))
        << "output " << i << " differs when every module is made from its node's data\n"
        << g.dump();
  }
  for (std::size_t i = 0; i < kept.size(); ++i) g.set_module(i, kept[i]);
}

// Runs `pass` on the builder's graph: the graph must still verify and, on random inputs,
// compute what it computed before, within docs/testing.md's re-parameterization tolerance
// (model_close), or bit-identically when `exact`.
inline passes::PassReport apply_pass(GraphBuilder& b, const Pass& pass, bool exact = false) {
  const std::vector<Tensor> x = b.random_inputs();
  const std::vector<Tensor> before = b.run(x);
  std::set<const nn::Module*> modules_before;
  for (const graph::Node& n : b.graph().nodes()) modules_before.insert(n.module.get());
  passes::PassReport report = pass(b.graph());
  b.graph().verify();
  const std::vector<Tensor> after = b.run(x);
  expect_modules_follow_data(b.graph(), x, after, modules_before);
  EXPECT_EQ(after.size(), before.size());
  for (std::size_t i = 0; i < std::min(after.size(), before.size()); ++i) {
    EXPECT_TRUE(exact ? all_close(after[i], before[i], Tolerance::exact())
                      : model_close(after[i], before[i]))
        << "output " << i << "\n"
        << notes_of(report) << b.graph().dump();
  }
  return report;
}

// Runs `pass` on a graph it must leave alone: not changed, the same op counts, bit-identical
// outputs.
inline passes::PassReport expect_left_alone(GraphBuilder& b, const Pass& pass) {
  const auto counts = b.op_counts();
  passes::PassReport report = apply_pass(b, pass, /*exact=*/true);
  EXPECT_FALSE(report.changed) << notes_of(report);
  EXPECT_EQ(b.op_counts(), counts);
  return report;
}

}  // namespace refold::testing
