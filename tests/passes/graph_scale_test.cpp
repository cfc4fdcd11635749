// Passes walk graphs without recursing as deep as the graph: a chain as long as a real model is
// deep (and longer) must not overflow the stack (docs/architecture.md, "cost linear in the
// graph's size"). The timing side of the same property is bench/graph_scale_bench.cpp.
#include <gtest/gtest.h>

#include <string>

#include "passes/passes.h"
#include "refold/tensor.h"
#include "testing/graph_builder.h"
#include "testing/pass_checks.h"

namespace refold {
namespace {

TEST(GraphScale, LinearRegionLongerThanTheStackCouldRecurseIsMergedIntoOneConv) {
  constexpr int kAdds = 4000;  // far deeper than a recursion per node should go
  testing::GraphBuilder b;
  std::string sum = b.conv(b.input("x", {1, 4, 3, 3}), 4, 4, 1);
  const std::string bias = b.constant("bias", full({4, 1, 1}, 0.001f));
  for (int i = 0; i < kAdds; ++i) sum = b.add(sum, bias);
  b.output(b.relu(sum));

  const passes::PassReport r = testing::apply_pass(b, passes::reparameterize_branches);
  EXPECT_TRUE(r.changed) << testing::notes_of(r);
  EXPECT_EQ(b.op_counts(), (std::map<std::string, int>{{"Conv", 1}, {"Relu", 1}}));
}

}  // namespace
}  // namespace refold
