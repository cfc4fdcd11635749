#include <gtest/gtest.h>

#include <set>
#include <string>

#include "refold/error.h"
#include "refold/nn/conv.h"
#include "refold/passes/pipeline.h"
#include "testing/compare.h"
#include "testing/graph_builder.h"
#include "testing/pass_checks.h"

namespace refold {
namespace {

using testing::GraphBuilder;

// One graph on which every pass has something to do:
//   constant-folding  k = a + a feeds a Mul
//   simplify          x · 1 in front of it
//   canonicalize      the mean over H and W at the end (a GlobalAveragePool)
//   pad-folding       a zero Pad in front of conv0
//   dead-code         an Identity nobody reads
//   linear-merging    the classifier: BN of the pooled features → Gemm
//   group-merging     Split → two 1×1 convs → Concat after the block (one conv of 2 groups)
//   bn-folding        conv0 → BN
//   reparameterize    RepVGG block: BN(conv3×3(h)) + BN(conv1×1(h))
//   conv-input-folding the BN after the block's ReLU → two 1×1 convs, multiplied (attention's
//                     q and k: no branch sum for reparameterize)
//   activation-fusion the ReLUs after conv0 and after the block
//   layout            the convs' weights
GraphBuilder build() {
  GraphBuilder b;
  const auto x = b.input("x", {1, 4, 8, 8});
  const auto a = b.constant("a", testing::uniform({1, 4, 1, 1}, 1.0, b.generator()));
  const auto k = b.node("Add", {a, a}, {}, "k");
  const auto one = b.constant("one", testing::values({1.0f}, {1}));
  const auto scaled = b.node("Mul", {b.node("Mul", {x, one}, {}, "times_one"), k}, {}, "scaled");
  b.node("Identity", {scaled}, {}, "unused");
  const auto padded = b.node(
      "Pad", {scaled, b.constant("pads", testing::int64s({0, 0, 1, 1, 0, 0, 1, 1}))}, {}, "pad");
  const auto h = b.node("Relu", {b.bn(b.conv(padded, 4, 8, 3, {.name = "conv0"}), 8)}, {}, "relu0");
  const auto b3 =
      b.bn(b.conv(h, 8, 8, 3, {.name = "dense", .pads = testing::kPad1, .bias = false}), 8);
  const auto b1 = b.bn(b.conv(h, 8, 8, 1, {.name = "one", .bias = false}), 8);
  const auto sum = b.node("Add", {b3, b1}, {}, "sum");
  const auto relu = b.node("Relu", {sum}, {}, "relu");
  const auto normed = b.bn(relu, 8);
  const auto mixed = b.node(
      "Mul", {b.conv(normed, 8, 8, 1, {.name = "query"}), b.conv(normed, 8, 8, 1, {.name = "key"})},
      {}, "qk");
  const auto halves = b.node_with_outputs("Split", {mixed}, 2,
                                          testing::attrs({{"axis", std::int64_t{1}}}), "split");
  const auto grouped = b.node(
      "Concat",
      {b.conv(halves[0], 4, 4, 1, {.name = "g0"}), b.conv(halves[1], 4, 4, 1, {.name = "g1"})},
      testing::attrs({{"axis", std::int64_t{1}}}), "concat");
  const auto mean = b.node("ReduceMean", {grouped},
                           testing::attrs({{"axes", std::vector<std::int64_t>{2, 3}}}), "mean");
  const auto features = b.bn(b.node("Flatten", {mean}, {}, "flatten"), 8);
  b.output(b.node("Gemm",
                  {features, b.constant("fc", testing::uniform({3, 8}, 1.0, b.generator()))},
                  testing::attrs({{"transB", std::int64_t{1}}}), "classifier"));
  return b;
}

TEST(Pipeline, PassNamesInOrder) {
  EXPECT_EQ(passes::pass_names(),
            (std::vector<std::string>{"constant-folding", "simplify", "canonicalize", "pad-folding",
                                      "dead-code", "dead-taps", "linear-merging", "group-merging",
                                      "bn-folding", "reparameterize", "conv-input-folding",
                                      "activation-fusion", "layout"}));
}

TEST(Pipeline, UnknownDisabledNameListsTheValidOnes) {
  GraphBuilder b = build();
  passes::PipelineOptions options;
  options.disabled = {"bn-fold"};
  try {
    passes::optimize(b.graph(), options);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("unknown pass 'bn-fold'"), std::string::npos) << m;
    EXPECT_NE(m.find("constant-folding, simplify, canonicalize, pad-folding, dead-code, dead-taps, "
                     "linear-merging, group-merging, bn-folding, "
                     "reparameterize, conv-input-folding, activation-fusion, layout"),
              std::string::npos)
        << m;
  }
}

TEST(Pipeline, AllPassesShrinkTheGraphAndKeepTheValues) {
  GraphBuilder b = build();
  Generator gen(2);
  const Tensor in = randn({1, 4, 8, 8}, {}, gen);
  const Tensor expected = b.run({in})[0];
  const passes::PipelineReport report = passes::optimize(b.graph());
  b.graph().verify();
  (void)b.run({in});
  // The second run: the steady state the modules rebuilt below run in (a linear's constant
  // weight, seen before, runs packed; with AVX2 its first, unpacked run rounds 1 ulp apart:
  // kernels/onednn/packed_weights.h).
  const Tensor after = b.run({in})[0];
  EXPECT_TRUE(testing::model_close(after, expected));
  testing::expect_modules_follow_data(b.graph(), {in}, {after});
  ASSERT_EQ(report.passes.size(), passes::pass_names().size());
  // Every pass has work here but dead-taps (no conv of this graph has taps that only read
  // padding; tests/passes/dead_taps_test.cpp has its own).
  for (const passes::PassReport& p : report.passes)
    EXPECT_EQ(p.changed, p.pass != "dead-taps") << p.pass;
  EXPECT_EQ(b.count("Conv"), 5) << b.graph().dump();
  EXPECT_EQ(b.count("BatchNormalization"), 0) << b.graph().dump();
  EXPECT_EQ(b.count("Relu"), 0) << b.graph().dump();
  EXPECT_EQ(b.count("Add"), 0) << b.graph().dump();
  EXPECT_EQ(report.op_counts_before.at("Conv"), 7);
  EXPECT_EQ(report.op_counts_after.at("Conv"), 5);

  const std::string line = report.to_string();
  EXPECT_NE(line.find("BatchNormalization 5 → 0"), std::string::npos) << line;
  EXPECT_NE(line.find("Conv 7 → 5"), std::string::npos) << line;
  EXPECT_NE(line.find("Add 2 → 0"), std::string::npos) << line;
  // Relu runs inside the convs but is still written to ONNX: its count does not change.
  EXPECT_EQ(line.find("Relu"), std::string::npos) << line;
  EXPECT_EQ(report.op_counts_after.at("Relu"), 2);
  EXPECT_EQ(line.find('\n'), std::string::npos) << "not verbose: one line";
  const std::string verbose = report.to_string(true);
  for (const std::string& name : passes::pass_names()) {
    if (name == "dead-taps") continue;
    EXPECT_NE(verbose.find(name + ": changed the graph"), std::string::npos) << verbose;
  }
  EXPECT_NE(verbose.find("  layout plan:"), std::string::npos) << verbose;
}

// docs/reliability.md "nothing lost": optimize(optimize(m)) == optimize(m).
TEST(Pipeline, IsIdempotent) {
  GraphBuilder b = build();
  passes::optimize(b.graph());
  const std::string once = b.graph().dump();
  const passes::PipelineReport again = passes::optimize(b.graph());
  for (const passes::PassReport& p : again.passes) EXPECT_FALSE(p.changed) << p.pass;
  EXPECT_EQ(again.op_counts_before, again.op_counts_after);
  EXPECT_EQ(b.graph().dump(), once);
  EXPECT_NE(again.to_string().find("no op count changed"), std::string::npos) << again.to_string();
}

// Disabling a pass leaves exactly its work undone (and the values unchanged).
TEST(Pipeline, DisablingEachPassLeavesItsWorkUndone) {
  Generator gen(2);
  const Tensor in = randn({1, 4, 8, 8}, {}, gen);
  for (const std::string& name : passes::pass_names()) {
    SCOPED_TRACE(name);
    GraphBuilder b = build();
    const Tensor expected = b.run({in})[0];
    passes::PipelineOptions options;
    options.disabled = {name};
    const passes::PipelineReport report = passes::optimize(b.graph(), options);
    b.graph().verify();
    EXPECT_TRUE(testing::model_close(b.run({in})[0], expected));
    for (const passes::PassReport& p : report.passes) {
      if (p.pass == name) {
        EXPECT_FALSE(p.changed);
        EXPECT_EQ(p.notes, std::vector<std::string>{"disabled"});
      }
    }
    if (name == "constant-folding") {
      EXPECT_TRUE(b.graph().find_node("k").has_value());
    } else {
      EXPECT_FALSE(b.graph().find_node("k").has_value());
    }
    EXPECT_EQ(b.graph().find_node("unused").has_value(), name == "dead-code");
    // x · 1 is simplify's alone to remove (later passes may absorb it otherwise).
    for (const passes::PassReport& p : report.passes) {
      if (p.pass != "simplify" || name == "simplify") continue;
      const std::string first = p.notes.empty() ? "" : p.notes[0];
      EXPECT_EQ(first.rfind("simplified Mul 'times_one'", 0), 0u) << first;
    }
    // Conv → BN is the simplest linear region, so reparameterize folds what bn-folding (its
    // fast first pass) leaves; without reparameterize, the block stays three convs. The BN
    // before the classifier is linear-merging's alone; the one before query and key is
    // conv-input-folding's (without it, a post-op of the block's conv, still written to ONNX).
    EXPECT_EQ(b.count("BatchNormalization"), name == "linear-merging" ? 1 : 0);
    EXPECT_EQ(report.op_counts_after.count("BatchNormalization") != 0,
              name == "linear-merging" || name == "conv-input-folding");
    EXPECT_EQ(b.count("Conv"),
              5 + (name == "reparameterize" ? 1 : 0) + (name == "group-merging" ? 1 : 0))
        << b.graph().dump();
    const int relus = name == "activation-fusion" ? 2 : 0;
    EXPECT_EQ(b.count("Relu"), relus) << b.graph().dump();
    bool any_channels_last = false;
    for (const std::string& c : b.graph().constant_names()) {
      const Tensor& t = b.graph().constant(c);
      any_channels_last =
          any_channels_last || (t.dim() == 4 && t.size(2) > 1 &&
                                t.suggest_memory_format() == MemoryFormat::ChannelsLast);
    }
    EXPECT_EQ(any_channels_last, name != "layout") << b.graph().dump();
  }
}

}  // namespace
}  // namespace refold
