#include <gtest/gtest.h>

#include <set>
#include <string>

#include "passes/graph_builder.h"
#include "refold/error.h"
#include "refold/nn/conv.h"
#include "refold/passes/pipeline.h"
#include "testing/compare.h"

namespace refold {
namespace {

using testing::GraphBuilder;

std::string batch_norm(GraphBuilder& b, const std::string& x, std::int64_t c,
                       const std::string& name) {
  const auto scale = b.constant(name + ".scale", testing::uniform({c}, 1.0, b.gen));
  const auto shift = b.constant(name + ".shift", testing::uniform({c}, 1.0, b.gen));
  const auto mean = b.constant(name + ".mean", testing::uniform({c}, 1.0, b.gen));
  Tensor var = testing::uniform({c}, 0.5, b.gen);
  for (std::int64_t i = 0; i < c; ++i) var.set({i}, var.at({i}) + 1.0f);
  const auto v = b.constant(name + ".var", var);
  return b.node("BatchNormalization", {x, scale, shift, mean, v}, {}, name);
}

// One graph on which every pass has something to do:
//   constant-folding  k = a + a feeds a Mul
//   dead-code         an Identity nobody reads
//   bn-folding        conv0 → BN
//   reparameterize    RepVGG block: BN(conv3×3(h)) + BN(conv1×1(h))
//   activation-fusion the ReLUs after conv0 and after the block
//   layout            the convs' weights
std::shared_ptr<graph::Graph> build() {
  GraphBuilder b;
  const auto x = b.input("x", {1, 4, 8, 8});
  const auto a = b.constant("a", testing::uniform({1, 4, 1, 1}, 1.0, b.gen));
  const auto k = b.node("Add", {a, a}, {}, "k");
  const auto scaled = b.node("Mul", {x, k}, {}, "scaled");
  b.node("Identity", {scaled}, {}, "unused");
  const auto h =
      b.node("Relu", {batch_norm(b, b.conv("conv0", scaled, 4, 8, 3), 8, "bn0")}, {}, "relu0");
  const auto b3 = batch_norm(b, b.conv("dense", h, 8, 8, 3, false), 8, "bn_dense");
  const auto b1 = batch_norm(b, b.conv("one", h, 8, 8, 1, false), 8, "bn_one");
  const auto sum = b.node("Add", {b3, b1}, {}, "sum");
  b.output(b.node("Relu", {sum}, {}, "relu"));
  return b.graph;
}

TEST(Pipeline, PassNamesInOrder) {
  EXPECT_EQ(passes::pass_names(),
            (std::vector<std::string>{"constant-folding", "dead-code", "bn-folding",
                                      "reparameterize", "activation-fusion", "layout"}));
}

TEST(Pipeline, UnknownDisabledNameListsTheValidOnes) {
  auto g = build();
  passes::PipelineOptions options;
  options.disabled = {"bn-fold"};
  try {
    passes::optimize(*g, options);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("unknown pass 'bn-fold'"), std::string::npos) << m;
    EXPECT_NE(m.find("constant-folding, dead-code, bn-folding, reparameterize, "
                     "activation-fusion, layout"),
              std::string::npos)
        << m;
  }
}

TEST(Pipeline, AllPassesShrinkTheGraphAndKeepTheValues) {
  auto g = build();
  Generator gen(2);
  const Tensor in = randn({1, 4, 8, 8}, {}, gen);
  const Tensor expected = testing::run_graph(*g, {in})[0];
  const passes::PipelineReport report = passes::optimize(*g);
  g->verify();
  EXPECT_TRUE(testing::model_close(testing::run_graph(*g, {in})[0], expected));
  ASSERT_EQ(report.passes.size(), 6u);
  for (const passes::PassReport& p : report.passes) EXPECT_TRUE(p.changed) << p.pass;
  const auto counts = testing::count_ops(*g);
  EXPECT_EQ(counts.at("Conv"), 2) << g->dump();
  EXPECT_EQ(counts.count("BatchNormalization"), 0u) << g->dump();
  EXPECT_EQ(counts.count("Relu"), 0u) << g->dump();
  EXPECT_EQ(counts.count("Add"), 0u) << g->dump();
  EXPECT_EQ(report.op_counts_before.at("Conv"), 3);
  EXPECT_EQ(report.op_counts_after.at("Conv"), 2);

  const std::string line = report.to_string();
  EXPECT_NE(line.find("BatchNormalization 3 → 0"), std::string::npos) << line;
  EXPECT_NE(line.find("Conv 3 → 2"), std::string::npos) << line;
  EXPECT_NE(line.find("Add 2 → 0"), std::string::npos) << line;
  // Relu runs inside the convs but is still written to ONNX: its count does not change.
  EXPECT_EQ(line.find("Relu"), std::string::npos) << line;
  EXPECT_EQ(report.op_counts_after.at("Relu"), 2);
  EXPECT_EQ(line.find('\n'), std::string::npos) << "not verbose: one line";
  const std::string verbose = report.to_string(true);
  for (const std::string& name : passes::pass_names()) {
    EXPECT_NE(verbose.find(name + ": changed the graph"), std::string::npos) << verbose;
  }
  EXPECT_NE(verbose.find("  layout plan:"), std::string::npos) << verbose;
}

// RELIABILITY "nothing lost": optimize(optimize(m)) == optimize(m).
TEST(Pipeline, IsIdempotent) {
  auto g = build();
  passes::optimize(*g);
  const std::string once = g->dump();
  const passes::PipelineReport again = passes::optimize(*g);
  for (const passes::PassReport& p : again.passes) EXPECT_FALSE(p.changed) << p.pass;
  EXPECT_EQ(again.op_counts_before, again.op_counts_after);
  EXPECT_EQ(g->dump(), once);
  EXPECT_NE(again.to_string().find("no op count changed"), std::string::npos) << again.to_string();
}

// Disabling a pass leaves exactly its work undone (and the values unchanged).
TEST(Pipeline, DisablingEachPassLeavesItsWorkUndone) {
  Generator gen(2);
  const Tensor in = randn({1, 4, 8, 8}, {}, gen);
  for (const std::string& name : passes::pass_names()) {
    SCOPED_TRACE(name);
    auto g = build();
    const Tensor expected = testing::run_graph(*g, {in})[0];
    passes::PipelineOptions options;
    options.disabled = {name};
    const passes::PipelineReport report = passes::optimize(*g, options);
    g->verify();
    EXPECT_TRUE(testing::model_close(testing::run_graph(*g, {in})[0], expected));
    for (const passes::PassReport& p : report.passes) {
      if (p.pass == name) {
        EXPECT_FALSE(p.changed);
        EXPECT_EQ(p.notes, std::vector<std::string>{"disabled"});
      }
    }
    const auto counts = testing::count_ops(*g);
    auto count = [&](const char* op) { return counts.count(op) ? counts.at(op) : 0; };
    if (name == "constant-folding") {
      EXPECT_TRUE(g->find_node("k").has_value());
    } else {
      EXPECT_FALSE(g->find_node("k").has_value());
    }
    EXPECT_EQ(g->find_node("unused").has_value(), name == "dead-code");
    if (name == "bn-folding") {
      EXPECT_EQ(count("BatchNormalization"), 1);  // bn0; the block's BNs fold with the block
    } else {
      EXPECT_EQ(count("BatchNormalization"), 0);
    }
    EXPECT_EQ(count("Conv"), name == "reparameterize" ? 3 : 2) << g->dump();
    // Unfolded, bn0 stands between conv0 and its ReLU, which then cannot fuse.
    const int relus = name == "activation-fusion" ? 2 : name == "bn-folding" ? 1 : 0;
    EXPECT_EQ(count("Relu"), relus) << g->dump();
    bool any_channels_last = false;
    for (const std::string& c : g->constant_names()) {
      const Tensor& t = g->constant(c);
      any_channels_last =
          any_channels_last || (t.dim() == 4 && t.size(2) > 1 &&
                                t.suggest_memory_format() == MemoryFormat::ChannelsLast);
    }
    EXPECT_EQ(any_channels_last, name != "layout") << g->dump();
  }
}

}  // namespace
}  // namespace refold
