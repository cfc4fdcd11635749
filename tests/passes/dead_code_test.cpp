// dead-code: Identity nodes rewired away (unless they name a graph output), nodes no output
// depends on dropped, unused constants dropped; what stays keeps its order and its results.
#include <gtest/gtest.h>

#include <string>

#include "passes/passes.h"
#include "testing/graph_builder.h"
#include "testing/pass_checks.h"

namespace refold {
namespace {

using testing::apply_pass;
using testing::GraphBuilder;
using testing::has_note;
using testing::notes_of;

std::vector<std::string> node_names(const graph::Graph& g) {
  std::vector<std::string> names;
  for (const graph::Node& n : g.nodes()) names.push_back(n.name);
  return names;
}

// Runs the pass; outputs must be bit-identical (nothing is computed differently).
passes::PassReport run_and_compare(GraphBuilder& b) {
  return apply_pass(b, passes::eliminate_dead_code, /*exact=*/true);
}

TEST(DeadCode, RemovesNodesNoOutputNeedsAndTheirConstants) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 3, 5, 5});
  const std::string h = b.relu(x);
  // A dead branch: conv → sigmoid, read by nothing that reaches the output.
  b.sigmoid(b.conv(h, 3, 4, 3));
  const std::string dead_conv = "Conv_1";
  b.output(b.relu(h));
  const passes::PassReport r = run_and_compare(b);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(node_names(b.graph()), (std::vector<std::string>{"Relu_1", "Relu_2"}));
  EXPECT_TRUE(b.graph().constant_names().empty());
  EXPECT_TRUE(has_note(r, "removed Conv '" + dead_conv + "'")) << notes_of(r);
  EXPECT_TRUE(has_note(r, "removed Sigmoid 'Sigmoid_1'")) << notes_of(r);
  EXPECT_TRUE(has_note(r, "unused constants")) << notes_of(r);
}

TEST(DeadCode, RewiresIdentityNodes) {
  GraphBuilder b(2);
  const std::string x = b.input("x", {1, 3, 4, 4});
  const std::string i1 = b.identity(x);
  const std::string i2 = b.identity(b.relu(i1));
  b.output(b.add(i2, b.identity(i2)));
  const passes::PassReport r = run_and_compare(b);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(b.count("Identity"), 0);
  EXPECT_EQ(node_names(b.graph()), (std::vector<std::string>{"Relu_1", "Add_1"}));
  const graph::Node& relu = b.graph().nodes()[0];
  EXPECT_EQ(relu.inputs, std::vector<std::string>{x});
  const graph::Node& add = b.graph().nodes()[1];
  EXPECT_EQ(add.inputs, (std::vector<std::string>{relu.outputs[0], relu.outputs[0]}));
  EXPECT_TRUE(has_note(r, "removed Identity 'Identity_1'")) << notes_of(r);
}

TEST(DeadCode, KeepsAnIdentityThatIsAGraphOutput) {
  GraphBuilder b(3);
  const std::string x = b.input("x", {1, 2, 3, 3});
  const std::string y = b.identity(b.relu(x));
  b.output(y);
  const passes::PassReport r = run_and_compare(b);
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(b.count("Identity"), 1);
  EXPECT_TRUE(has_note(r, "kept Identity 'Identity_1': its output '" + y + "' is a graph output"))
      << notes_of(r);
}

TEST(DeadCode, KeepsEverythingLiveInOrder) {
  GraphBuilder b(4);
  const std::string x = b.input("x", {1, 3, 6, 6});
  const std::string a = b.relu(b.conv(x, 3, 3, 3));
  const std::string c = b.sigmoid(x);
  b.output(a);
  b.output(c);
  const std::vector<std::string> before = node_names(b.graph());
  const auto constants = b.graph().constant_names();
  const passes::PassReport r = run_and_compare(b);
  EXPECT_FALSE(r.changed) << notes_of(r);
  EXPECT_EQ(node_names(b.graph()), before);
  EXPECT_EQ(b.graph().constant_names(), constants);
}

TEST(DeadCode, DropsUnusedConstantsAndStaleValueInfo) {
  GraphBuilder b(5);
  const std::string x = b.input("x", {1, 2, 3, 3});
  b.constant("unused", testing::values({1, 2}, {2}));
  b.graph().value_info.push_back({"gone", 1, std::nullopt});
  const std::string y = b.relu(x);
  b.graph().value_info.push_back({y, 1, std::nullopt});
  b.output(y);
  const passes::PassReport r = run_and_compare(b);
  EXPECT_TRUE(r.changed);
  EXPECT_FALSE(b.graph().is_constant("unused"));
  ASSERT_EQ(b.graph().value_info.size(), 1u);
  EXPECT_EQ(b.graph().value_info[0].name, y);
  EXPECT_TRUE(has_note(r, "removed 1 unused constant: unused")) << notes_of(r);
}

// A constant that is itself a graph output is kept.
TEST(DeadCode, KeepsAConstantGraphOutput) {
  GraphBuilder b(6);
  const std::string x = b.input("x", {1, 2, 3, 3});
  const std::string k = b.constant("k", testing::values({1, 2}, {2}));
  b.output(b.relu(x));
  b.output(k);
  passes::PassReport r = passes::eliminate_dead_code(b.graph());
  EXPECT_FALSE(r.changed) << notes_of(r);
  EXPECT_TRUE(b.graph().is_constant(k));
}

}  // namespace
}  // namespace refold
