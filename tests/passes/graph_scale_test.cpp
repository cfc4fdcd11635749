// Passes walk graphs without recursing as deep as the graph: an Add chain as long as a real
// model is deep (and longer) must not overflow the stack (docs/architecture.md, "cost linear in
// the graph's size"). The timing side of the same property is bench/graph_scale_bench.cpp.
#include <gtest/gtest.h>

#include <string>

#include "passes/branch_match.h"
#include "refold/tensor.h"
#include "testing/graph_builder.h"

namespace refold {
namespace {

TEST(GraphScale, AddTreeOfAChainAsLongAsTheStackCannotHoldIsCollected) {
  constexpr int kAdds = 200000;  // recursion one frame per Add overflowed an 8 MiB stack here
  testing::GraphBuilder b;
  std::string sum = b.input("x", {1, 4});
  const std::string one = b.constant("one", ones({1, 4}));
  for (int i = 0; i < kAdds; ++i) sum = b.add(sum, one);
  b.output(sum);

  const passes::detail::AddTree tree = passes::detail::collect_add_tree(b.graph(), kAdds - 1);
  ASSERT_EQ(tree.adds.size(), static_cast<std::size_t>(kAdds));
  ASSERT_EQ(tree.leaves.size(), static_cast<std::size_t>(kAdds) + 1);
  // Depth first, inputs in order: the chain's start "x" first, then each Add's constant from the
  // innermost Add out.
  EXPECT_EQ(tree.leaves.front(), "x");
  EXPECT_EQ(tree.leaf_adds.front(), 0u);
  EXPECT_EQ(tree.leaves.back(), one);
  EXPECT_EQ(tree.leaf_adds.back(), static_cast<std::size_t>(kAdds - 1));
}

}  // namespace
}  // namespace refold
