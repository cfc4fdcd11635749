// Checks shared by the pass tests (tests/passes/): what a report's notes say, and a pass run on
// a GraphBuilder's graph with its outputs compared before and after.
//
//   const passes::PassReport r = testing::apply_pass(b, passes::fold_batch_norms);
//   EXPECT_TRUE(testing::has_note(r, "folded BatchNormalization")) << testing::notes_of(r);
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

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

using Pass = std::function<passes::PassReport(graph::Graph&)>;

// Runs `pass` on the builder's graph: the graph must still verify and, on random inputs,
// compute what it computed before, within docs/testing.md's re-parameterization tolerance
// (model_close), or bit-identically when `exact`.
inline passes::PassReport apply_pass(GraphBuilder& b, const Pass& pass, bool exact = false) {
  const std::vector<Tensor> x = b.random_inputs();
  const std::vector<Tensor> before = b.run(x);
  passes::PassReport report = pass(b.graph());
  b.graph().verify();
  const std::vector<Tensor> after = b.run(x);
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
