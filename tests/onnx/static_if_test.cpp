// If nodes resolved at load (src/onnx/static_if.h): the branch taken by a condition computed
// from static shapes is spliced in and runs; everything else is a clear error naming the node.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "onnx/ops_tensor_helpers.h"
#include "refold/functional.h"
#include "refold/onnx/onnx.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"
#include "testing/onnx_builder.h"

namespace refold::onnx {
namespace {

using testing::OnnxBuilder;
using testing::TempDir;

::onnx::GraphProto& add_branch(::onnx::NodeProto& node, const std::string& attribute) {
  auto* a = node.add_attribute();
  a->set_name(attribute);
  a->set_type(::onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name(attribute);
  return *a->mutable_g();
}

::onnx::NodeProto& add_node(::onnx::GraphProto& g, const std::string& op,
                            const std::vector<std::string>& inputs,
                            const std::vector<std::string>& outputs) {
  auto* n = g.add_node();
  n->set_op_type(op);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return *n;
}

// y = If(H > 3, then: Relu(x) · k with k a branch initializer, else: Neg(x)) + t, t = x, where H
// is x's dim 2 (Shape → Gather → Greater: how exporters branch on a size). Both branches write a
// value named "t", which the main graph also defines: the splice renames the branch's.
OnnxBuilder shape_if(const std::vector<testing::DimSpec>& x_dims) {
  OnnxBuilder b;
  b.input("x", x_dims).output("y");
  b.initializer("two", testing::i64({2}, {}));
  b.initializer("three", testing::i64({3}, {}));
  b.initializer("one", full({}, 1.0f));
  b.node("Shape", {"x"}, {"shape"}, "shape");
  b.node("Gather", {"shape", "two"}, {"h"}, "gather");
  b.node("Greater", {"h", "three"}, {"cond"}, "greater");
  b.node("Identity", {"x"}, {"t"}, "main_t");
  auto& node = b.node("If", {"cond"}, {"branched"}, "if").proto();
  ::onnx::GraphProto& then_branch = add_branch(node, "then_branch");
  add_node(then_branch, "Relu", {"x"}, {"relu"});
  *then_branch.add_initializer() = testing::tensor_proto("k", full({}, 3.0f));
  add_node(then_branch, "Mul", {"relu", "k"}, {"t"});
  then_branch.add_output()->set_name("t");
  ::onnx::GraphProto& else_branch = add_branch(node, "else_branch");
  add_node(else_branch, "Neg", {"x"}, {"t"});
  else_branch.add_output()->set_name("t");
  b.node("Add", {"branched", "t"}, {"y"}, "add");
  return b;
}

std::shared_ptr<graph::Graph> load_builder(const OnnxBuilder& b) {
  TempDir dir;
  return load(b.save(dir / "model.onnx"));
}

void expect_load_error(const OnnxBuilder& b, const std::string& message,
                       const LoadOptions& options = {}) {
  EXPECT_TRUE(testing::load_fails_with(b, message, options)) << message;
}

bool has_if(const graph::Graph& g) {
  for (const auto& node : g.nodes())
    if (node.op_type == "If") return true;
  return false;
}

TEST(StaticIf, TheBranchTheShapesChooseRuns) {
  Generator gen(3);
  for (std::int64_t h : {2, 5}) {
    const Tensor x = testing::uniform({1, 2, h, 3}, 1.0, gen);
    const auto g = load_builder(shape_if({1, 2, h, 3}));
    EXPECT_FALSE(has_if(*g));
    const Tensor branched =
        functional::mul(h > 3 ? functional::relu(x) : x, full({}, h > 3 ? 3.0f : -1.0f));
    EXPECT_TRUE(testing::all_close(g->run({x})[0], functional::add(branched, x),
                                   testing::Tolerance::exact()));
  }
}

TEST(StaticIf, AnIfInsideTheTakenBranchIsResolvedToo) {
  OnnxBuilder b = shape_if({1, 1, 4, 4});
  // then: If(cond, then: Sigmoid(x), else: Relu(x)) — the inner one reads the outer condition.
  ::onnx::GraphProto& then_branch = *b.graph().mutable_node(4)->mutable_attribute(0)->mutable_g();
  then_branch.Clear();
  then_branch.set_name("then_branch");
  auto& inner = add_node(then_branch, "If", {"cond"}, {"inner"});
  inner.set_name("inner_if");
  add_node(add_branch(inner, "then_branch"), "Sigmoid", {"x"}, {"s"});
  inner.mutable_attribute(0)->mutable_g()->add_output()->set_name("s");
  add_node(add_branch(inner, "else_branch"), "Relu", {"x"}, {"r"});
  inner.mutable_attribute(1)->mutable_g()->add_output()->set_name("r");
  then_branch.add_output()->set_name("inner");
  const auto g = load_builder(b);
  EXPECT_FALSE(has_if(*g));
  Generator gen(5);
  const Tensor x = testing::uniform({1, 1, 4, 4}, 1.0, gen);
  EXPECT_TRUE(testing::all_close(g->run({x})[0], functional::add(functional::sigmoid(x), x),
                                 testing::Tolerance::exact()));
}

TEST(StaticIf, ConditionsNotKnownAtLoadAreErrors) {
  // A symbolic dimension: the condition waits for the input.
  expect_load_error(shape_if({1, 2, "H", 3}),
                    "node 'if' (If): condition 'cond' is not known when the model loads (refold "
                    "runs an If only where its condition follows from constants and static input "
                    "shapes)");
  // A condition read from the input's values: Greater(x, 1).
  OnnxBuilder b = shape_if({1, 2, 4, 3});
  b.graph().mutable_node(2)->set_input(0, "x");
  b.graph().mutable_node(2)->set_input(1, "one");
  expect_load_error(b, "node 'if' (If): condition 'cond' is not known when the model loads");
}

// The condition's constants fold within LoadOptions::max_folded_bytes (docs/reliability.md G2):
// here it reads a 1000-element ConstantOfShape, 4000 bytes.
TEST(StaticIf, TheConditionFoldsWithinTheLoadBudget) {
  OnnxBuilder b = shape_if({1, 2, 5, 3});
  b.initializer("count", testing::i64({1000}));
  b.node("ConstantOfShape", {"count"}, {"ones"}, "ones").attr_tensor("value", full({1}, 1.0f));
  b.node("ReduceMax", {"ones"}, {"largest"}, "largest").attr_int("keepdims", 0);
  b.graph().mutable_node(2)->set_input(0, "largest");
  b.graph().mutable_node(2)->set_input(1, "one");
  EXPECT_NO_THROW(load_builder(b));  // 1 > 1 is false: the else branch
  LoadOptions small;
  small.max_folded_bytes = 1024;
  expect_load_error(b, "node 'if' (If): condition 'cond' is not known when the model loads", small);
}

TEST(StaticIf, MalformedIfsAreErrors) {
  {
    OnnxBuilder b = shape_if({1, 2, 5, 3});
    b.graph().mutable_node(4)->mutable_attribute(0)->mutable_g()->add_output()->set_name("x");
    expect_load_error(b, "node 'if' (If): the branch taken has 2 outputs, the node 1");
  }
  {
    OnnxBuilder b = shape_if({1, 2, 5, 3});
    b.graph().mutable_node(4)->mutable_attribute()->RemoveLast();
    expect_load_error(b, "node 'if' (If): attribute 'else_branch' is missing");
  }
  {
    OnnxBuilder b = shape_if({1, 2, 5, 3});
    b.graph().mutable_node(4)->add_input("cond");
    expect_load_error(b, "node 'if' (If): expects 1 input (cond), got 2");
  }
  {
    // The condition has 2 elements.
    OnnxBuilder b = shape_if({1, 2, 5, 3});
    b.graph().mutable_node(1)->set_input(1, "pair");
    b.initializer("pair", testing::i64({2, 3}));
    expect_load_error(b, "node 'if' (If): condition 'cond' has 2 elements (shape [2]), expected 1");
  }
}

}  // namespace
}  // namespace refold::onnx
