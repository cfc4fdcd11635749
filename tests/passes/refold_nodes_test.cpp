// The nodes of domain "refold" that passes create (PatchShuffle, ChannelRoute, ScaledMatMul,
// AddSoftmax, L2Normalize, GroupSum, Rearrange) are rebuilt from their attributes by
// passes::module_for whenever a graph is copied or re-planned. The importer refuses the domain, so
// only a pass can write one; these tests feed module_for the malformed nodes a buggy pass (or a
// hand-edited graph) could make: each gets a refold::Error that names the node and what is wrong,
// never a crash or a module that computes something else.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/reference/onnx_ops.h"
#include "kernels/reference/tensor_ops.h"
#include "passes/node_module.h"
#include "refold/error.h"
#include "refold/graph/graph.h"
#include "refold/graph/op.h"
#include "refold/tensor.h"
#include "testing/compare.h"

namespace refold {
namespace {

using Ints = std::vector<std::int64_t>;

graph::Node refold_node(const std::string& op_type, std::vector<std::string> inputs) {
  graph::Node n;
  n.name = "fused_" + op_type;
  n.op_type = op_type;
  n.domain = "refold";
  n.inputs = std::move(inputs);
  n.outputs = {"y"};
  return n;
}

// A Rearrange node: a transpose of [2, 3, 4] by `perm`, then a reshape to `shape`.
graph::Node rearrange(const Ints& perm, const Ints& shape) {
  graph::Node n = refold_node("Rearrange", {"x"});
  n.attributes.set("input_shape", Ints{2, 3, 4});
  n.attributes.set("transposes", Ints{1, 0});
  n.attributes.set("step_lengths", Ints{static_cast<std::int64_t>(perm.size()),
                                        static_cast<std::int64_t>(shape.size())});
  Ints values = perm;
  values.insert(values.end(), shape.begin(), shape.end());
  n.attributes.set("step_values", values);
  return n;
}

// module_for(node) throws a refold::Error whose message holds the node's name and `what`.
void expect_refused(const graph::Node& node, const std::string& what) {
  const graph::Graph g;
  try {
    passes::module_for(g, node);
    ADD_FAILURE() << node.op_type << " '" << node.name << "' was built; expected: " << what;
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(node.name), std::string::npos) << message;
    EXPECT_NE(message.find(what), std::string::npos) << message;
  }
}

TEST(RefoldNodes, AWellFormedRearrangeComputesItsChain) {
  const graph::Graph g;
  const nn::ModulePtr m = passes::module_for(g, rearrange({2, 0, 1}, {4, 6}));
  const Tensor x = randn({2, 3, 4});
  const Tensor y = (*m)(x);
  const Tensor expected = x.permute({2, 0, 1}).contiguous().reshape({4, 6});
  EXPECT_TRUE(testing::all_close(y, expected, testing::Tolerance::exact()));
}

TEST(RefoldNodes, AMalformedRearrangeIsRefusedByName) {
  graph::Node missing = rearrange({2, 0, 1}, {4, 6});
  missing.attributes = {};
  expect_refused(missing, "input_shape, transposes, step_lengths and step_values");

  graph::Node overrun = rearrange({2, 0, 1}, {4, 6});
  overrun.attributes.set("step_lengths", Ints{3, 9});
  expect_refused(overrun, "overrun");

  graph::Node uneven = rearrange({2, 0, 1}, {4, 6});
  uneven.attributes.set("transposes", Ints{1});
  expect_refused(uneven, "1 transposes for 2 step lengths");

  expect_refused(rearrange({2, 0, 5}, {4, 6}), "perm");              // not a permutation
  expect_refused(rearrange({2, 0, 1}, {5, 6}), "cannot");            // 30 elements from 24
  expect_refused(rearrange({2, 0, 1}, {4, 2}), "fewer elements");    // 8 from 24
  expect_refused(rearrange({2, 0, 1}, {4, 6, 2}), "more elements");  // 48 from 24
  expect_refused(rearrange({2, 0, 1}, {0, 6}), "at least 1");        // an empty dim
  graph::Node ends_transposed = rearrange({2, 0, 1}, {4, 6});
  ends_transposed.attributes.set("transposes", Ints{1, 1});
  expect_refused(ends_transposed, "end with a reshape");
}

TEST(RefoldNodes, AMalformedScaledMatMulIsRefusedByName) {
  graph::Node good = refold_node("ScaledMatMul", {"a", "b"});
  good.attributes.set("alpha", 0.5f);
  const graph::Graph g;
  const nn::ModulePtr m = passes::module_for(g, good);
  EXPECT_NE(m, nullptr);

  graph::Node no_alpha = refold_node("ScaledMatMul", {"a", "b"});
  expect_refused(no_alpha, "alpha attribute");
  graph::Node one_input = good;
  one_input.inputs = {"a"};
  expect_refused(one_input, "expects 2 inputs");
  graph::Node not_finite = good;
  not_finite.attributes.set("alpha", std::numeric_limits<float>::infinity());
  expect_refused(not_finite, "not finite");
  graph::Node repeated_dim = good;
  repeated_dim.attributes.set("perm", Ints{0, 1, 1});
  expect_refused(repeated_dim, "perm [0, 1, 1] is not a permutation");
  graph::Node out_of_range = good;
  out_of_range.attributes.set("perm", Ints{0, 3, 1});
  expect_refused(out_of_range, "perm [0, 3, 1] is not a permutation");
}

TEST(RefoldNodes, AnAddSoftmaxComputesTheSoftmaxOfItsSumAndAMalformedOneIsRefused) {
  graph::Node good = refold_node("AddSoftmax", {"x", "c"});
  good.attributes.set("axis", std::int64_t{-1});
  const graph::Graph g;
  const nn::ModulePtr m = passes::module_for(g, good);
  const Tensor x = randn({2, 3, 7}), c = randn({3, 7});
  auto* op = dynamic_cast<graph::Op*>(m.get());
  ASSERT_NE(op, nullptr);
  const Tensor y = op->run({x, c})[0];
  const Tensor sum = reference::arith(x, c, reference::ArithOp::Add);
  EXPECT_TRUE(testing::all_close(y, reference::softmax(sum, -1, reference::SoftmaxKind::Softmax),
                                 testing::Tolerance::op_f32()));

  graph::Node one_input = good;
  one_input.inputs = {"x"};
  expect_refused(one_input, "expects 2 inputs");
  graph::Node other_axis = good;
  other_axis.attributes.set("axis", std::int64_t{1});
  expect_refused(other_axis, "axis 1 is not -1");
  graph::Node no_axis = refold_node("AddSoftmax", {"x", "c"});
  expect_refused(no_axis, "axis 0 is not -1");
}

TEST(RefoldNodes, AnL2NormalizeDividesByTheBoundedNormAndAMalformedOneIsRefused) {
  graph::Node good = refold_node("L2Normalize", {"x"});
  good.attributes.set("axis", std::int64_t{1});
  good.attributes.set("epsilon", 2.0f);
  const graph::Graph g;
  const nn::ModulePtr m = passes::module_for(g, good);
  const Tensor x = randn({2, 3, 7});  // norms of 3 values: some below ε
  auto* op = dynamic_cast<graph::Op*>(m.get());
  ASSERT_NE(op, nullptr);
  const Tensor norm = reference::reduce(x, {1}, true, reference::ReduceOp::L2);
  const Tensor expected =
      reference::arith(x, reference::clip(norm, 2.0, std::nullopt), reference::ArithOp::Div);
  EXPECT_TRUE(testing::all_close(op->run({x})[0], expected, testing::Tolerance::op_f32()));

  graph::Node two_inputs = good;
  two_inputs.inputs = {"x", "c"};
  expect_refused(two_inputs, "expects 1 input");
  graph::Node no_axis = refold_node("L2Normalize", {"x"});
  expect_refused(no_axis, "has no axis");
  graph::Node not_finite = good;
  not_finite.attributes.set("epsilon", std::numeric_limits<float>::quiet_NaN());
  expect_refused(not_finite, "is not finite");
}

TEST(RefoldNodes, AGroupSumSumsTheWeightedChannelGroupsAndAMalformedOneIsRefused) {
  graph::Node good = refold_node("GroupSum", {"x", "a"});
  good.attributes.set("groups", std::int64_t{3});
  const graph::Graph g;
  const nn::ModulePtr m = passes::module_for(g, good);
  const Tensor x = randn({2, 6, 4, 5}), a = randn({2, 3, 2, 1, 1});
  auto* op = dynamic_cast<graph::Op*>(m.get());
  ASSERT_NE(op, nullptr);
  const Tensor terms = reference::arith(x.view({2, 3, 2, 4, 5}), a, reference::ArithOp::Mul);
  EXPECT_TRUE(testing::all_close(op->run({x, a})[0],
                                 reference::reduce(terms, {1}, false, reference::ReduceOp::Sum),
                                 testing::Tolerance::op_f32()));

  graph::Node three_inputs = good;
  three_inputs.inputs = {"x", "a", "b"};
  expect_refused(three_inputs, "expects 1 or 2 inputs");
  graph::Node no_groups = refold_node("GroupSum", {"x"});
  expect_refused(no_groups, "groups 0 is not positive");
}

TEST(RefoldNodes, AMalformedChannelRouteIsRefusedByName) {
  graph::Node n = refold_node("ChannelRoute", {"a", "b"});
  expect_refused(n, "'input_channels'");
  n.attributes.set("input_channels", Ints{4, 4});
  n.attributes.set("output_channels", Ints{2});
  n.attributes.set("sources", Ints{0, 1});
  expect_refused(n, "needs 2 sources per output channel (4), got 2");
  n.attributes.set("sources", Ints{0, 1, 1, 4});
  expect_refused(n, "source (input 1, channel 4) is not one of the inputs' channels [4, 4]");
  n.attributes.set("output_channels", Ints{0, 2});
  expect_refused(n, "output_channels [0, 2] must be positive");
}

TEST(RefoldNodes, AMalformedPatchShuffleIsRefusedByName) {
  graph::Node n = refold_node("PatchShuffle", {"x"});
  n.attributes.set("input_shape", Ints{1, 8, 4, 4});
  expect_refused(n, "'middle_shape'");
}

}  // namespace
}  // namespace refold
