#include "refold/graph/graph.h"

#include <gtest/gtest.h>

#include "graph/plan.h"
#include "refold/error.h"
#include "refold/functional.h"
#include "refold/graph/op.h"
#include "refold/memory.h"
#include "refold/memory_format.h"
#include "refold/nn/activation.h"
#include "refold/nn/conv.h"
#include "refold/nn/utils.h"
#include "testing/compare.h"
#include "testing/error_table.h"

namespace refold::graph {
namespace {

// a + b, taking channels_last.
class AddOp : public Op {
 public:
  AddOp() : Op("AddOp") {}
  std::vector<Tensor> run(const std::vector<Tensor>& in) override {
    return {functional::add(in.at(0), in.at(1))};
  }
};

// Records whether its input arrived contiguous; refuses channels_last.
class NchwOnly : public Op {
 public:
  NchwOnly() : Op("NchwOnly") {}
  bool accepts_channels_last() const override { return false; }
  std::vector<Tensor> run(const std::vector<Tensor>& in) override {
    saw_contiguous = in.at(0).is_contiguous();
    return {in.at(0)};
  }
  bool saw_contiguous = false;
};

Node make(std::string name, std::string op, std::vector<std::string> in,
          std::vector<std::string> out, nn::ModulePtr module) {
  Node n;
  n.name = std::move(name);
  n.op_type = std::move(op);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.module = std::move(module);
  return n;
}

// x -> Conv -> y1 ; Relu(y1) -> y2 ; Add(y1, y2) -> out
std::shared_ptr<Graph> conv_relu_add() {
  manual_seed(7);
  auto g = std::make_shared<Graph>();
  g->inputs = {{"x", 1, std::vector<Dim>{{1, ""}, {3, ""}, {-1, "h"}, {-1, "w"}}}};
  g->outputs = {{"out", 1, std::nullopt}};
  auto conv = std::make_shared<nn::Conv2d>(nn::Conv2dOptions(3, 4, 3).padding(1));
  g->set_constant("W", conv->weight());
  g->set_constant("B", conv->bias());
  g->add_node(make("conv.0", "Conv", {"x", "W", "B"}, {"y1"}, conv));
  g->add_node(make("relu", "Relu", {"y1"}, {"y2"}, std::make_shared<nn::ReLU>()));
  g->add_node(make("add", "Add", {"y1", "y2"}, {"out"}, std::make_shared<AddOp>()));
  return g;
}

TEST(Graph, RunsNodesInOrderAndMatchesTheModules) {
  auto g = conv_relu_add();
  g->verify();
  Tensor x = randn({1, 3, 5, 6});
  Tensor y1 = functional::conv2d(x, g->constant("W"), g->constant("B"), {1, 1});
  Tensor expected = functional::add(y1, functional::relu(y1));
  EXPECT_TRUE(testing::all_close(g->run({x})[0], expected, testing::Tolerance::op_f32()));
  EXPECT_TRUE(testing::all_close(g->forward(x), expected, testing::Tolerance::op_f32()));
}

// docs/reliability.md G1: a run that would go past the memory limit fails naming the node (op
// type and name; for a plain module also its type), and frees every value it had computed.
TEST(Graph, MemoryLimitErrorsNameTheNodeAndFreeTheRun) {
  auto g = conv_relu_add();
  const Tensor x = randn({1, 3, 64, 64});
  g->run({x});  // warm: weight caches filled outside the measurement
  const std::size_t before = memory_stats().current_bytes;
  const std::size_t activation = 4 * 64 * 64 * 4;  // y1, y2 and out: 64 KiB each
  struct Case {
    std::size_t room;
    std::string message;
  };
  for (const Case& c : {Case{activation + activation / 2,
                             "Relu 'relu' (ReLU): would allocate 64.0 "
                             "KiB (float32[1, 4, 64, 64]) with "},
                        Case{2 * activation + activation / 2,
                             "Add 'add': would allocate 64.0 KiB (float32[1, 4, 64, 64]) with "}}) {
    set_memory_limit(before + c.room);
    EXPECT_TRUE(testing::throws_error([&] { g->run({x}); }, c.message)) << c.message;
    set_memory_limit(0);
    EXPECT_EQ(memory_stats().current_bytes, before) << c.message;
  }
  // Any other module error is renamed the same way.
  Graph h;
  h.inputs = {{"x", 1, std::nullopt}};
  h.outputs = {{"y", 1, std::nullopt}};
  h.add_node(make("conv.1", "Conv", {"x"}, {"y"},
                  std::make_shared<nn::Conv2d>(nn::Conv2dOptions(3, 4, 3))));
  EXPECT_TRUE(testing::throws_error(
      [&] {
        h.run({randn({1, 5, 8, 8})});
      },
      "Conv 'conv.1' (Conv2d): "));
}

TEST(Graph, NodeModulesAreChildrenSoTheSeedUtilityReachesThem) {
  auto g = conv_relu_add();
  Tensor x = randn({1, 3, 5, 6});
  Tensor before = g->run({x})[0];
  nn::utils::convert_conv2d_weight_memory_format(*g, MemoryFormat::ChannelsLast);
  EXPECT_TRUE(g->constant("W").is_contiguous(MemoryFormat::ChannelsLast));  // same handle
  Tensor after = g->run({x})[0];
  EXPECT_TRUE(after.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(testing::all_close(after, before, testing::Tolerance::op_f32()));
  EXPECT_EQ(g->state_dict().size(), 2u);  // conv_0.weight, conv_0.bias
}

TEST(Graph, OpThatRefusesChannelsLastGetsAContiguousInput) {
  auto g = conv_relu_add();
  auto fence = std::make_shared<NchwOnly>();
  g->outputs = {{"z", 1, std::nullopt}};
  g->add_node(make("fence", "Fence", {"out"}, {"z"}, fence));
  nn::utils::convert_conv2d_weight_memory_format(*g, MemoryFormat::ChannelsLast);
  g->run({randn({1, 3, 4, 4})});
  EXPECT_TRUE(fence->saw_contiguous);
}

TEST(Graph, ProducerConsumersAndUniqueNames) {
  auto g = conv_relu_add();
  EXPECT_EQ(g->producer("y1"), std::optional<std::size_t>(0));
  EXPECT_FALSE(g->producer("x"));
  EXPECT_EQ(g->consumers("y1"), (std::vector<std::size_t>{1, 2}));
  EXPECT_TRUE(g->is_graph_output("out"));
  EXPECT_TRUE(g->is_graph_input("x"));
  EXPECT_EQ(g->unique_name("y1"), "y1_1");
  EXPECT_EQ(g->unique_name("fresh"), "fresh");
  g->erase_node(2);
  EXPECT_FALSE(g->child("add"));
  EXPECT_THROW(g->verify(), refold::Error);  // output "out" no longer produced
}

// producer(), consumers(), find_node() and unique_name() answer from an index the graph builds on
// demand: every way of changing the graph must be seen by the next query.
TEST(Graph, QueriesFollowEveryChange) {
  auto g = conv_relu_add();
  ASSERT_EQ(g->find_node("add"), std::optional<std::size_t>(2));
  ASSERT_EQ(g->consumers("y2"), std::vector<std::size_t>{2});

  // Rewiring through node(): the Add now reads y1 twice (listed once) and y2 has no reader.
  g->node(2).inputs[1] = "y1";
  EXPECT_EQ(g->consumers("y1"), (std::vector<std::size_t>{1, 2}));
  EXPECT_TRUE(g->consumers("y2").empty());

  // Inserting shifts the later nodes' indices.
  g->insert_node(1, make("neg", "Neg", {"y1"}, {"y3"}, std::make_shared<nn::ReLU>()));
  EXPECT_EQ(g->find_node("add"), std::optional<std::size_t>(3));
  EXPECT_EQ(g->producer("y3"), std::optional<std::size_t>(1));
  EXPECT_EQ(g->consumers("y1"), (std::vector<std::size_t>{1, 2, 3}));
  EXPECT_EQ(g->unique_name("y3"), "y3_1");
  EXPECT_EQ(g->unique_name("neg"), "neg_1");
  EXPECT_THROW(g->add_node(make("neg", "Neg", {"y1"}, {"y9"}, std::make_shared<nn::ReLU>())),
               refold::Error);  // the name is taken

  // Erasing frees the name and the values it wrote.
  g->erase_node(1);
  EXPECT_FALSE(g->find_node("neg"));
  EXPECT_FALSE(g->producer("y3"));
  EXPECT_EQ(g->unique_name("y3"), "y3");
  EXPECT_EQ(g->find_node("add"), std::optional<std::size_t>(2));
  g->add_node(make("neg", "Neg", {"y1"}, {"y3"}, std::make_shared<nn::ReLU>()));
  EXPECT_EQ(g->find_node("neg"), std::optional<std::size_t>(3));
  g->verify();
}

// run() compiles its plan once and reuses it; every change to what the plan resolved (a node,
// a constant, the inputs or outputs it binds) makes the next run compile again and compute
// the changed graph.
TEST(Graph, RunReusesItsPlanUntilTheGraphChanges) {
  auto g = conv_relu_add();
  const Tensor x = randn({1, 3, 5, 6});
  const Tensor y1 = functional::conv2d(x, g->constant("W"), g->constant("B"), {1, 1});
  const auto tolerance = testing::Tolerance::op_f32();
  auto compiles = [&](const Tensor& expected) {
    const std::uint64_t before = ExecutionPlan::compiled_count();
    EXPECT_TRUE(testing::all_close(g->run({x})[0], expected, tolerance));
    EXPECT_TRUE(testing::all_close(g->run({x})[0], expected, tolerance));
    return ExecutionPlan::compiled_count() - before;
  };
  EXPECT_EQ(compiles(functional::add(y1, functional::relu(y1))), 1u);
  EXPECT_EQ(compiles(functional::add(y1, functional::relu(y1))), 0u);

  g->node(2).inputs[1] = "y1";  // out = y1 + y1
  EXPECT_EQ(compiles(functional::add(y1, y1)), 1u);

  g->outputs[0].name = "y2";  // the graph's output is now the ReLU's
  EXPECT_EQ(compiles(functional::relu(y1)), 1u);
  EXPECT_EQ(compiles(functional::relu(y1)), 0u);

  // An Op reads the constant the plan resolved: a new tensor under its name is read next run.
  g->set_constant("C", ones({1, 4, 1, 1}));
  g->add_node(make("plus", "Add", {"y2", "C"}, {"z"}, std::make_shared<AddOp>()));
  g->outputs[0].name = "z";
  EXPECT_EQ(compiles(functional::add(functional::relu(y1), ones({1, 4, 1, 1}))), 1u);
  g->set_constant("C", full({1, 4, 1, 1}, 2.0f));
  EXPECT_EQ(compiles(functional::add(functional::relu(y1), full({1, 4, 1, 1}, 2.0f))), 1u);
}

TEST(Graph, VerifyNamesTheBrokenInvariant) {
  auto g = conv_relu_add();
  g->node(1).inputs = {"nope"};
  EXPECT_TRUE(testing::throws_error([&] { g->verify(); }, "node 'relu' (Relu) reads 'nope'"));
  g = conv_relu_add();
  g->node(2).outputs = {"y1"};
  EXPECT_TRUE(testing::throws_error([&] { g->verify(); }, "value 'y1' is defined twice"));
  g = conv_relu_add();
  EXPECT_TRUE(testing::throws_error(
      [&] { g->add_node(make("relu", "Relu", {"x"}, {"q"}, std::make_shared<nn::ReLU>())); },
      "node name 'relu' is taken"));
}

TEST(Graph, RunChecksTheFeeds) {
  auto g = conv_relu_add();
  EXPECT_TRUE(testing::throws_error([&] { g->run({}); }, "0 inputs given, the graph takes 1"));
  EXPECT_TRUE(testing::throws_error(
      [&] {
        g->run({randn({2, 3, 4, 4})});
      },
      "input 'x' is declared [1, 3, h, w]"));
}

TEST(Graph, ErrorsInsideANodeNameIt) {
  auto bad = conv_relu_add();
  bad->inputs[0].shape.reset();
  // The node's op type and its own name ("conv.0", not the module name "conv_0"), then what the
  // module said, without its own prefix.
  EXPECT_TRUE(testing::throws_error(
      [&] {
        bad->run({randn({1, 5, 4, 4})});
      },
      "Conv 'conv.0' (Conv2d): conv2d: input has 5 channels"));
}

TEST(Graph, DumpListsNodes) {
  auto g = conv_relu_add();
  const std::string text = g->dump();
  EXPECT_NE(text.find("conv.0: Conv(x, W, B) -> y1  [Conv2d]"), std::string::npos) << text;
  EXPECT_NE(text.find("input  x [1, 3, h, w]"), std::string::npos) << text;
}

}  // namespace
}  // namespace refold::graph
