#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>

#include "kernels/native/cpu.h"
#include "kernels/verbose.h"
#include "passes/branch_nodes.h"
#include "passes/fused_chain.h"
#include "passes/fused_conv.h"
#include "passes/passes.h"
#include "refold/nn/conv.h"
#include "refold/nn/utils.h"
#include "testing/compare.h"
#include "testing/graph_builder.h"
#include "testing/pass_checks.h"
#include "testing/post_chains.h"

namespace refold {
namespace {

using testing::attrs;
using testing::GraphBuilder;
using testing::has_note;
using testing::kPad1;
using testing::notes_of;

// The brief's bound for a fused vs unfused conv: within 1e-5 relative (oneDNN may apply the
// post-op on its accumulator instead of on the rounded output); atol for values near 0.
const testing::Tolerance kFused{1e-6, 1e-5};

Tensor input(const Shape& sizes, std::uint64_t seed = 7) {
  Generator gen(seed);
  return randn(sizes, {}, gen);
}

struct Case {
  const char* name;
  Activation expected;
  // Adds the activation after value `c`; returns the final value.
  std::function<std::string(GraphBuilder&, const std::string&)> add;
  int parts;  // nodes fused (conv included)
};

std::vector<Case> cases() {
  return {
      {"Relu", Activation::ReLU,
       [](GraphBuilder& b, const std::string& c) { return b.node("Relu", {c}, {}, "act"); }, 2},
      {"Clip06", Activation::ReLU6,
       [](GraphBuilder& b, const std::string& c) {
         const auto lo = b.constant("lo", testing::values({0}, {}));
         const auto hi = b.constant("hi", testing::values({6}, {}));
         return b.node("Clip", {c, lo, hi}, {}, "act");
       },
       2},
      {"Clip0Inf", Activation::ReLU,
       [](GraphBuilder& b, const std::string& c) {
         const auto lo = b.constant("lo", testing::values({0}, {}));
         return b.node("Clip", {c, lo}, {}, "act");
       },
       2},
      {"LeakyRelu", Activation::LeakyReLU,
       [](GraphBuilder& b, const std::string& c) {
         return b.node("LeakyRelu", {c}, attrs({{"alpha", 0.2f}}), "act");
       },
       2},
      {"Sigmoid", Activation::Sigmoid,
       [](GraphBuilder& b, const std::string& c) { return b.node("Sigmoid", {c}, {}, "act"); }, 2},
      {"HardSwish", Activation::HardSwish,
       [](GraphBuilder& b, const std::string& c) { return b.node("HardSwish", {c}, {}, "act"); },
       2},
      {"HardSigmoid", Activation::HardSigmoid,
       [](GraphBuilder& b, const std::string& c) {
         return b.node("HardSigmoid", {c}, attrs({{"alpha", 1.0f / 6}, {"beta", 0.5f}}), "act");
       },
       2},
      {"Gelu", Activation::GELU,
       [](GraphBuilder& b, const std::string& c) { return b.node("Gelu", {c}, {}, "act"); }, 2},
      {"SiLU", Activation::SiLU,
       [](GraphBuilder& b, const std::string& c) {
         const auto s = b.node("Sigmoid", {c}, {}, "sig");
         return b.node("Mul", {c, s}, {}, "act");
       },
       3},
      {"SiLUSwapped", Activation::SiLU,
       [](GraphBuilder& b, const std::string& c) {
         const auto s = b.node("Sigmoid", {c}, {}, "sig");
         return b.node("Mul", {s, c}, {}, "act");
       },
       3},
  };
}

TEST(ActivationFusion, EachActivationFusesIntoTheConvAndKeepsTheValues) {
  for (const Case& k : cases()) {
    SCOPED_TRACE(k.name);
    GraphBuilder b;
    b.set_opset(20);  // Gelu's
    const auto x = b.input("x", {2, 4, 7, 7});
    const auto c = b.conv(x, 4, 6, 3, {.name = "conv", .pads = kPad1});
    const auto y = k.add(b, c);
    b.output(y);
    const Tensor in = input({2, 4, 7, 7});
    const Tensor expected = b.run({in})[0];

    const passes::PassReport report = passes::fuse_activations(b.graph());
    EXPECT_TRUE(report.changed);
    b.graph().verify();
    ASSERT_EQ(b.graph().nodes().size(), 1u) << b.graph().dump();
    const graph::Node& fused = b.graph().nodes()[0];
    EXPECT_EQ(fused.name, "conv");
    EXPECT_EQ(fused.op_type, "Conv");
    EXPECT_EQ(fused.outputs, std::vector<std::string>{y});  // the surviving output name
    EXPECT_EQ(fused.inputs, (std::vector<std::string>{x, "conv.weight", "conv.bias"}));
    ASSERT_EQ(static_cast<int>(fused.parts.size()), k.parts);
    EXPECT_EQ(fused.parts[0].op_type, "Conv");
    EXPECT_EQ(fused.parts.back().outputs, std::vector<std::string>{y});
    auto conv = std::dynamic_pointer_cast<nn::Conv2d>(fused.module);
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->activation(), k.expected);
    EXPECT_TRUE(testing::all_close(b.run({in})[0], expected, kFused));
    testing::expect_modules_follow_data(b.graph(), {in}, b.run({in}));
    // Idempotent: a fused conv is not a candidate again.
    EXPECT_FALSE(passes::fuse_activations(b.graph()).changed);
  }
}

TEST(ActivationFusion, LeakyReluKeepsItsSlope) {
  GraphBuilder b;
  const auto x = b.input("x", {1, 2, 5, 5});
  const auto c = b.conv(x, 2, 3, 3, {.name = "conv", .pads = kPad1});
  b.output(b.node("LeakyRelu", {c}, attrs({{"alpha", 0.3f}}), "act"));
  passes::fuse_activations(b.graph());
  auto conv = std::dynamic_pointer_cast<nn::Conv2d>(b.graph().nodes()[0].module);
  ASSERT_NE(conv, nullptr);
  EXPECT_FLOAT_EQ(static_cast<float>(conv->negative_slope()), 0.3f);
}

// Each precondition, broken once: the graph is left as it was and the note says why.
TEST(ActivationFusion, DeclinedCandidatesAreLeftAloneWithAReason) {
  struct Decline {
    const char* name;
    std::function<void(GraphBuilder&, const std::string&)> build;
    const char* note;
  };
  const std::vector<Decline> declines = {
      {"onnx default hardsigmoid",
       [](GraphBuilder& b, const std::string& c) {
         b.output(b.node("HardSigmoid", {c}, {}, "act"));
       },
       "not PyTorch's 1/6 and 0.5"},
      {"two readers",
       [](GraphBuilder& b, const std::string& c) {
         b.output(b.node("Relu", {c}, {}, "act"));
         b.output(b.node("Sigmoid", {c}, {}, "other"));
       },
       "has 2 readers"},
      {"graph output",
       [](GraphBuilder& b, const std::string& c) {
         b.output(b.node("Relu", {c}, {}, "act"));
         b.output(c);
       },
       "is a graph output"},
      {"clip 0..5",
       [](GraphBuilder& b, const std::string& c) {
         const auto lo = b.constant("lo", testing::values({0}, {}));
         const auto hi = b.constant("hi", testing::values({5}, {}));
         b.output(b.node("Clip", {c, lo, hi}, {}, "act"));
       },
       "neither relu nor relu6"},
      {"constant that is not per channel",
       [](GraphBuilder& b, const std::string& c) {
         const auto k =
             b.constant("k", testing::values(std::vector<float>(15, 0.5f), {1, 1, 5, 3}));
         b.output(b.node("Add", {c, k}, {}, "add"));
       },
       "does not broadcast per channel"},
      {"silu sigmoid used twice",
       [](GraphBuilder& b, const std::string& c) {
         const auto s = b.node("Sigmoid", {c}, {}, "sig");
         b.output(b.node("Mul", {c, s}, {}, "act"));
         b.output(s);
       },
       "also used elsewhere"},
  };
  for (const Decline& d : declines) {
    SCOPED_TRACE(d.name);
    GraphBuilder b;
    const auto x = b.input("x", {1, 2, 5, 5});
    const auto c = b.conv(x, 2, 3, 3, {.name = "conv", .pads = kPad1});
    d.build(b, c);
    const std::string before = b.graph().dump();
    const passes::PassReport report = passes::fuse_activations(b.graph());
    EXPECT_FALSE(report.changed);
    EXPECT_EQ(b.graph().dump(), before);
    EXPECT_TRUE(has_note(report, d.note)) << notes_of(report);
    auto conv = std::dynamic_pointer_cast<nn::Conv2d>(b.graph().nodes()[0].module);
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->activation(), Activation::None);
  }
}

// The elementwise chains graphs write after a conv's activation, each fused whole into one
// conv node: its post-ops say what it computes, its inputs list the steps' constants, its
// parts are the replaced nodes, and the values are the unfused graph's.
TEST(ActivationFusion, ElementwiseChainsAfterTheConvJoinIt) {
  struct Chain {
    const char* name;
    std::function<std::string(GraphBuilder&, const std::string& c, const std::string& x)> add;
    const char* post;  // PostOps::description() of the fused conv
    bool residual;
  };
  auto scalar = [](GraphBuilder& b, const char* name, float v) {
    return b.constant(name, testing::values({v}, {1}));
  };
  const std::vector<Chain> chains = {
      {"LearnableAffineBlock: relu, mul, add by scalars",
       [&](GraphBuilder& b, const std::string& c, const std::string&) {
         const auto r = b.node("Relu", {c}, {}, "act");
         const auto m = b.node("Mul", {r, scalar(b, "s", 0.7f)}, {}, "lab_mul");
         return b.node("Add", {m, scalar(b, "t", -0.2f)}, {}, "lab_add");
       },
       "relu+mul[1]+add[1]", false},
      {"per-channel Sub and Div, then HardSwish",
       [&](GraphBuilder& b, const std::string& c, const std::string&) {
         const auto k = b.constant("k", testing::values({0.5f, -1, 2, 0.1f}, {1, 4, 1, 1}));
         const auto d = b.constant("d", testing::values({2, 4, 0.5f, 8}, {4, 1, 1}));
         const auto sub = b.node("Sub", {c, k}, {}, "sub");
         const auto div = b.node("Div", {sub, d}, {}, "div");
         return b.node("HardSwish", {div}, {}, "act");
       },
       "add[4]+mul[4]+hardswish", false},
      {"SiLU, then the residual (YOLO's bottleneck)",
       [&](GraphBuilder& b, const std::string& c, const std::string& x) {
         const auto s = b.node("Sigmoid", {c}, {}, "sig");
         const auto m = b.node("Mul", {c, s}, {}, "silu");
         return b.node("Add", {x, m}, {}, "shortcut");
       },
       "silu+sum", true},
      {"residual, relu, then a BatchNormalization after the activation",
       [&](GraphBuilder& b, const std::string& c, const std::string& x) {
         const auto a = b.node("Add", {c, x}, {}, "add");
         const auto r = b.node("Relu", {a}, {}, "act");
         return b.bn(r, 4);
       },
       "sum+relu+mul[4]+add[4]", true},
  };
  for (const Chain& k : chains) {
    SCOPED_TRACE(k.name);
    GraphBuilder b;
    const auto x = b.input("x", {2, 4, 7, 7});
    const auto c = b.conv(x, 4, 4, 3, {.name = "conv", .pads = kPad1});
    const auto y = k.add(b, c, x);
    b.output(y);
    const std::size_t nodes_before = b.graph().nodes().size();
    const Tensor in = input({2, 4, 7, 7});
    const Tensor expected = b.run({in})[0];

    const passes::PassReport report = passes::fuse_activations(b.graph());
    EXPECT_TRUE(report.changed) << notes_of(report);
    b.graph().verify();
    ASSERT_EQ(b.graph().nodes().size(), 1u) << b.graph().dump();
    const graph::Node& fused = b.graph().nodes()[0];
    EXPECT_EQ(fused.outputs, std::vector<std::string>{y});
    EXPECT_EQ(fused.parts.size(), nodes_before);
    nn::ModulePtr module = fused.module;
    if (k.residual) {
      auto op = std::dynamic_pointer_cast<passes::FusedConvAdd>(module);
      ASSERT_NE(op, nullptr);
      EXPECT_EQ(fused.inputs[3], x);
      module = op->conv();
    }
    auto conv = std::dynamic_pointer_cast<nn::Conv2d>(module);
    ASSERT_NE(conv, nullptr);
    PostOps post = conv->post_ops();
    if (k.residual) post.residual = in;  // what the description shows with its residual
    EXPECT_EQ(post.description(), k.post);
    // The steps' constants stay inputs of the node (dead-code and export still see them).
    for (const graph::Node& part : fused.parts) {
      for (const std::string& name : part.inputs) {
        if (b.graph().is_constant(name) && name.rfind("conv.", 0) != 0) {
          EXPECT_NE(std::find(fused.inputs.begin(), fused.inputs.end(), name), fused.inputs.end())
              << name;
        }
      }
    }
    EXPECT_TRUE(testing::all_close(b.run({in})[0], expected, kFused));
    testing::expect_modules_follow_data(b.graph(), {in}, b.run({in}));
    // Channels_last, where the native and oneDNN kernels apply the chain in their epilogue.
    nn::utils::convert_conv2d_weight_memory_format(*conv, MemoryFormat::ChannelsLast);
    EXPECT_TRUE(testing::all_close(b.run({in.contiguous(MemoryFormat::ChannelsLast)})[0], expected,
                                   kFused));
    EXPECT_FALSE(passes::fuse_activations(b.graph()).changed);
  }
}

// The chain stops where a node cannot join, and says why; what came before still fuses.
TEST(ActivationFusion, AChainStopsAtTheFirstNodeThatCannotJoin) {
  GraphBuilder b;
  const auto x = b.input("x", {1, 4, 6, 6});
  const auto c = b.conv(x, 4, 4, 3, {.name = "conv", .pads = kPad1});
  const auto r = b.node("Relu", {c}, {}, "act");
  const auto wide = b.constant("wide", testing::values(std::vector<float>(36, 2.0f), {1, 1, 6, 6}));
  b.output(b.node("Mul", {r, wide}, {}, "mul"));
  const passes::PassReport report = passes::fuse_activations(b.graph());
  EXPECT_TRUE(report.changed);
  ASSERT_EQ(b.graph().nodes().size(), 2u) << b.graph().dump();
  EXPECT_EQ(b.graph().nodes()[0].parts.size(), 2u);
  EXPECT_TRUE(has_note(report, "does not broadcast per channel")) << notes_of(report);
}

// An activation written after an op that only moves data — conv → reshape → act, PVT's depthwise
// conv → tokens → GELU — moves before it, next to the conv, and fuses; act(move(c)) is
// move(act(c)) element for element. Not across a Slice (it drops elements), nor when the conv's
// output has another reader.
TEST(ActivationFusion, AnActivationAfterADataMoveMovesToItsConvAndFuses) {
  for (const char* act : {"Relu", "Gelu"}) {
    GraphBuilder b;
    b.set_opset(20);  // Gelu's
    const auto x = b.input("x", {1, 8, 3, 4});
    const auto c = b.conv(x, 8, 8, 3, {.name = "conv", .pads = kPad1});
    const auto tokens =
        b.node("Reshape", {c, b.constant("s", testing::int64s({1, 8, 12}))}, {}, "to_tokens");
    const auto y = b.node(act, {tokens}, {}, "act");
    b.output(y);
    const passes::PassReport report = testing::apply_pass(b, passes::fuse_activations);
    EXPECT_TRUE(has_note(report, "moved " + std::string(act) + " 'act' before Reshape 'to_tokens'"))
        << notes_of(report);
    ASSERT_EQ(b.graph().nodes().size(), 2u) << b.graph().dump();
    EXPECT_EQ(b.graph().nodes()[0].op_type, "Conv");
    EXPECT_EQ(b.graph().nodes()[0].parts.size(), 2u);  // the conv and its activation
    EXPECT_EQ(b.graph().nodes()[1].op_type, "Reshape");
    EXPECT_EQ(b.graph().nodes()[1].outputs[0], y);  // the graph's output keeps its name
  }
  {  // After a Rearrange (tokens from the image), whose parts export writes: renamed there too,
     // so the written file computes the same values.
    GraphBuilder b;
    const auto x = b.input("x", {1, 8, 3, 4});
    const auto c = b.conv(x, 8, 8, 3, {.name = "conv", .pads = kPad1});
    const auto seq = b.node("Reshape", {c, b.constant("s", testing::int64s({1, 8, 12}))});
    const auto tokens =
        b.node("Transpose", {seq}, attrs({{"perm", std::vector<std::int64_t>{0, 2, 1}}}));
    b.output(b.relu(tokens));
    const Tensor in = b.random_input();
    const Tensor before = b.run({in})[0];
    passes::canonicalize(b.graph());
    ASSERT_EQ(b.count("Rearrange"), 1) << b.graph().dump();
    const passes::PassReport report = testing::apply_pass(b, passes::fuse_activations);
    EXPECT_TRUE(has_note(report, "before Rearrange")) << notes_of(report);
    const auto written = testing::written_back(b.graph());
    EXPECT_TRUE(testing::all_close(written->run({in.clone()})[0], before, kFused));
  }
  {  // A Slice keeps half the elements: the activation stays after it.
    GraphBuilder b;
    const auto x = b.input("x", {1, 8, 3, 4});
    const auto c = b.conv(x, 8, 8, 3, {.name = "conv", .pads = kPad1});
    const auto half = b.node(
        "Slice", {c, b.constant("st", testing::int64s({0})), b.constant("en", testing::int64s({4})),
                  b.constant("ax", testing::int64s({1}))});
    b.output(b.relu(half));
    const passes::PassReport report = testing::apply_pass(b, passes::fuse_activations);
    EXPECT_FALSE(has_note(report, "moved")) << notes_of(report);
    EXPECT_EQ(b.count("Relu"), 1);
  }
  {  // The conv's output read twice: moving the activation would not let it fuse.
    GraphBuilder b;
    const auto x = b.input("x", {1, 8, 3, 4});
    const auto c = b.conv(x, 8, 8, 3, {.name = "conv", .pads = kPad1});
    b.output(b.relu(b.node("Reshape", {c, b.constant("s", testing::int64s({1, 8, 12}))})));
    b.output(c);
    const passes::PassReport report = testing::apply_pass(b, passes::fuse_activations);
    EXPECT_FALSE(has_note(report, "moved")) << notes_of(report);
  }
}

// Elementwise chains that no conv heads run as one ElementwiseChain node, one pass over memory,
// with the unfused graph's values — DenseNet's BatchNormalization → Relu, a scale → shift →
// activation, a residual after an activation, a sum of two computed values before one — in
// both layouts; one node alone stays.
TEST(ActivationFusion, ElementwiseChainsWithoutAConvRunAsOnePass) {
  struct Chain {
    const char* name;
    std::function<std::string(GraphBuilder&, const std::string& x, const std::string& z)> add;
    std::size_t parts;
  };
  auto per_channel = [](GraphBuilder& b, const char* name, float start) {
    return b.constant(name, testing::values(testing::channel_ramp(13, start), {1, 13, 1, 1}));
  };
  const std::vector<Chain> chains = {
      {"BatchNormalization, Relu",
       [&](GraphBuilder& b, const std::string& x, const std::string&) {
         return b.node("Relu", {b.bn(x, 13)}, {}, "relu");
       },
       2},
      {"Mul, Add per channel, Sigmoid",
       [&](GraphBuilder& b, const std::string& x, const std::string&) {
         const auto m = b.node("Mul", {per_channel(b, "s", 0.5f), x}, {}, "mul");
         const auto a = b.node("Add", {m, per_channel(b, "t", -0.3f)}, {}, "add");
         return b.node("Sigmoid", {a}, {}, "sig");
       },
       3},
      {"Relu, then a residual",
       [&](GraphBuilder& b, const std::string& x, const std::string& z) {
         return b.node("Add", {b.node("Relu", {x}, {}, "relu"), z}, {}, "add");
       },
       2},
      {"a sum of two values, then Relu",  // HRNet's fuse layers, an FPN's top-down sum
       [&](GraphBuilder& b, const std::string& x, const std::string& z) {
         return b.node("Relu", {b.node("Add", {x, z}, {}, "add")}, {}, "relu");
       },
       2},
  };
  for (const Chain& k : chains) {
    for (MemoryFormat layout : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
      SCOPED_TRACE(fmt::format("{}, {}", k.name, memory_format_name(layout)));
      GraphBuilder b;
      const auto x = b.input("x", {2, 13, 5, 6});
      const auto z = b.input("z", {2, 13, 5, 6});
      b.output(k.add(b, x, z));
      const Tensor in_x = input({2, 13, 5, 6}, 1).contiguous(layout);
      const Tensor in_z = input({2, 13, 5, 6}, 2).contiguous(layout);
      const Tensor expected = b.run({in_x, in_z})[0];
      const passes::PassReport report = passes::fuse_activations(b.graph());
      EXPECT_TRUE(report.changed) << notes_of(report);
      b.graph().verify();
      ASSERT_EQ(b.graph().nodes().size(), 1u) << b.graph().dump();
      EXPECT_EQ(b.graph().nodes()[0].parts.size(), k.parts);
      ASSERT_NE(std::dynamic_pointer_cast<passes::ElementwiseChain>(b.graph().nodes()[0].module),
                nullptr);
      DispatchLog log;
      EXPECT_TRUE(testing::all_close(b.run({in_x, in_z})[0], expected, kFused));
      const std::vector<std::string> ran = log.take();
      testing::expect_modules_follow_data(b.graph(), {in_x, in_z}, b.run({in_x, in_z}));
      EXPECT_NE(std::find(ran.begin(), ran.end(), "elementwise_chain: native"), ran.end())
          << fmt::format("{}", fmt::join(ran, "; "));
    }
  }
  GraphBuilder alone;
  alone.output(alone.node("Relu", {alone.input("x", {1, 4, 3, 3})}, {}, "relu"));
  EXPECT_FALSE(passes::fuse_activations(alone.graph()).changed);
}

// A module that runs two nodes (weight tying) is not changed for one of them.
// A fused node is named after its first part: an ElementwiseChain Relu + Mul (or a fused
// Sigmoid) after a conv is not a Relu (nor SiLU's Sigmoid), and the conv does not fuse it as one.
TEST(ActivationFusion, AFusedChainIsNotReadAsItsFirstOp) {
  for (const char* first : {"Relu", "Sigmoid"}) {
    SCOPED_TRACE(first);
    GraphBuilder b;
    const auto x = b.input("x", {1, 4, 6, 6});
    const auto c = b.conv(x, 4, 8, 3, {.name = "conv", .pads = kPad1});
    const auto act = b.node(first, {c}, {}, "act");
    const auto y = b.node("Mul", {act, b.constant("s", full({1}, 0.5f))}, {}, "scale");
    // SiLU's shape: the conv's output read by the chain and by a Mul with the chain's output.
    const auto out = std::string(first) == "Sigmoid" ? b.node("Mul", {c, y}, {}, "silu") : y;
    b.output(out);
    const Tensor in = input({1, 4, 6, 6});
    const Tensor expected = b.run({in})[0];
    graph::Graph& g = b.graph();
    graph::Node chain;
    chain.name = "act";
    chain.op_type = first;
    chain.inputs = {c, "", "s"};  // x, no residual, the constants (as the pass writes them)
    chain.outputs = {y};
    passes::detail::replace_with_fused(g, {*g.producer(act), *g.producer(y)}, chain);
    ASSERT_NE(std::dynamic_pointer_cast<passes::ElementwiseChain>(g.nodes()[1].module), nullptr)
        << g.dump();
    (void)passes::fuse_activations(g);
    g.verify();
    EXPECT_TRUE(testing::all_close(b.run({in})[0], expected, kFused)) << g.dump();
  }
}

// DenseNet's Concat → BatchNormalization → Relu: a channel Concat read by the chain alone
// joins it as one ConcatChain node, one pass that writes the chain's values, in both layouts.
// A Concat along another axis, or with another reader, stays a node of its own.
TEST(ActivationFusion, AChannelConcatBeforeAChainJoinsIt) {
  for (MemoryFormat layout : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
    SCOPED_TRACE(memory_format_name(layout));
    GraphBuilder b;
    const auto a = b.input("a", {2, 5, 4, 3});
    const auto c = b.input("c", {2, 11, 4, 3});
    const auto cat = b.node("Concat", {a, c}, attrs({{"axis", std::int64_t{-3}}}), "cat");
    b.output(b.node("Relu", {b.bn(cat, 16)}, {}, "relu"));
    const std::vector<Tensor> in = {input({2, 5, 4, 3}, 1).contiguous(layout),
                                    input({2, 11, 4, 3}, 2).contiguous(layout)};
    const Tensor expected = b.run(in)[0];
    const passes::PassReport report = passes::fuse_activations(b.graph());
    EXPECT_TRUE(report.changed) << notes_of(report);
    b.graph().verify();
    ASSERT_EQ(b.graph().nodes().size(), 1u) << b.graph().dump();
    const graph::Node& fused = b.graph().nodes()[0];
    EXPECT_EQ(fused.op_type, "Concat");
    EXPECT_EQ(fused.parts.size(), 3u);
    ASSERT_NE(std::dynamic_pointer_cast<passes::ConcatChain>(fused.module), nullptr);
    DispatchLog log;
    const Tensor y = b.run(in)[0];
    EXPECT_TRUE(testing::all_close(y, expected, kFused));
    EXPECT_EQ(y.suggest_memory_format(), layout);
    const std::vector<std::string> ran = log.take();
    const std::string want = layout == MemoryFormat::ChannelsLast
                                 ? "concat_chain: native"
                                 : "concat_chain: cat, then elementwise_chain";
    EXPECT_NE(std::find(ran.begin(), ran.end(), want), ran.end())
        << fmt::format("{}", fmt::join(ran, "; "));
    testing::expect_modules_follow_data(b.graph(), in, b.run(in));
  }
  for (const char* near_miss : {"axis 2", "a second reader"}) {
    SCOPED_TRACE(near_miss);
    const bool axis2 = std::string(near_miss) == "axis 2";
    GraphBuilder b;
    const auto a = b.input("a", {2, 16, 4, 3});
    const auto cat =
        b.node("Concat", {a, a}, attrs({{"axis", std::int64_t{axis2 ? 2 : 1}}}), "cat");
    const auto y = b.node("Relu", {b.bn(cat, axis2 ? 16 : 32)}, {}, "relu");
    b.output(y);
    if (!axis2) b.output(cat);
    const Tensor in = input({2, 16, 4, 3}, 1);
    const std::vector<Tensor> expected = b.run({in});
    EXPECT_TRUE(passes::fuse_activations(b.graph()).changed);  // BN → Relu still one pass
    ASSERT_EQ(b.graph().nodes().size(), 2u) << b.graph().dump();
    EXPECT_EQ(b.graph().nodes()[0].op_type, "Concat");
    EXPECT_TRUE(b.graph().nodes()[0].parts.empty());
    const std::vector<Tensor> got = b.run({in});
    for (std::size_t k = 0; k < got.size(); ++k)
      EXPECT_TRUE(testing::all_close(got[k], expected[k], kFused));
  }
}

TEST(ActivationFusion, AModuleRunningTwoNodesIsNotFused) {
  GraphBuilder b;
  const auto x = b.input("x", {1, 4, 6, 6});
  const auto c = b.conv(x, 4, 4, 3, {.name = "conv", .pads = kPad1});
  b.output(b.tied("conv", b.node("Relu", {c}, {}, "act"), "conv_again"));
  const passes::PassReport report = passes::fuse_activations(b.graph());
  EXPECT_FALSE(report.changed);
  EXPECT_TRUE(has_note(report, "its module also runs Conv 'conv_again'"));
}

// Conv + Add(c, r) (+ Relu), r the block's input (ResNet's identity shortcut), in both
// operand orders, with and without the activation.
TEST(ActivationFusion, ConvAddActivationBecomesOneResidualNode) {
  for (bool conv_first : {true, false}) {
    for (bool relu : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "conv_first " << conv_first << " relu " << relu);
      GraphBuilder b;
      const auto x = b.input("x", {2, 4, 6, 6});
      const auto r = x;
      const auto c = b.conv(x, 4, 4, 3, {.name = "conv", .pads = kPad1});
      const auto sum = b.node(
          "Add", conv_first ? std::vector<std::string>{c, r} : std::vector<std::string>{r, c}, {},
          "add");
      const auto y = relu ? b.node("Relu", {sum}, {}, "act") : sum;
      b.output(y);
      const Tensor in = input({2, 4, 6, 6});
      const Tensor expected = b.run({in})[0];

      const passes::PassReport report = passes::fuse_activations(b.graph());
      ASSERT_TRUE(report.changed) << notes_of(report);
      b.graph().verify();
      EXPECT_EQ(b.count("Add"), 0);
      EXPECT_EQ(b.count("Relu"), 0);
      const auto index = b.graph().find_node("conv");
      ASSERT_TRUE(index.has_value());
      const graph::Node& fused = b.graph().nodes()[*index];
      EXPECT_EQ(fused.outputs, std::vector<std::string>{y});
      EXPECT_EQ(fused.inputs, (std::vector<std::string>{x, "conv.weight", "conv.bias", r}));
      EXPECT_EQ(fused.parts.size(), relu ? 3u : 2u);
      auto op = std::dynamic_pointer_cast<passes::FusedConvAdd>(fused.module);
      ASSERT_NE(op, nullptr);
      EXPECT_EQ(op->conv_first(), conv_first);
      EXPECT_EQ(op->conv()->activation(), relu ? Activation::ReLU : Activation::None);
      EXPECT_TRUE(testing::all_close(b.run({in})[0], expected, kFused));
      testing::expect_modules_follow_data(b.graph(), {in}, b.run({in}));
      EXPECT_FALSE(passes::fuse_activations(b.graph()).changed);
    }
  }
}

// The residual is computed after the conv (a second branch): the fused node goes where the Add
// was, after the residual's producer; the first conv in graph order takes the Add.
TEST(ActivationFusion, ResidualMadeAfterTheConvIsDefinedBeforeTheFusedNode) {
  GraphBuilder b;
  const auto x = b.input("x", {1, 4, 6, 6});
  const auto c = b.conv(x, 4, 5, 3, {.name = "conv", .pads = kPad1});
  const auto r = b.conv(x, 4, 5, 1, {.name = "branch"});
  const auto y = b.node("Relu", {b.node("Add", {c, r}, {}, "add")}, {}, "act");
  b.output(y);
  const Tensor in = input({1, 4, 6, 6});
  const Tensor expected = b.run({in})[0];
  ASSERT_TRUE(passes::fuse_activations(b.graph()).changed);
  b.graph().verify();
  ASSERT_EQ(b.graph().nodes().size(), 2u) << b.graph().dump();
  EXPECT_EQ(b.graph().nodes()[0].name, "branch");
  EXPECT_EQ(b.graph().nodes()[1].name, "conv");
  EXPECT_EQ(b.graph().nodes()[1].origin, "Conv+Add+Relu");
  EXPECT_TRUE(testing::all_close(b.run({in})[0], expected, kFused));
}

// The executor hands a residual over to the fused node that reads it last (Op::run_consuming),
// and the result is written over it (oneDNN's sum in place) — not when the residual is also a
// graph output, or read again later, whose values must stay. Channels_last and NCHW.
TEST(ActivationFusion, AResidualReadLastByTheFusedNodeIsOverwritten) {
  for (const MemoryFormat layout : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
    for (const std::string kept : {"", "output", "read later"}) {
      SCOPED_TRACE(::testing::Message() << memory_format_name(layout) << " " << kept);
      GraphBuilder b;
      const auto x = b.input("x", {1, 8, 6, 6});
      const auto a = b.node("Relu", {x}, {}, "pre");
      const auto c1 = b.conv(a, 8, 8, 1, {.name = "conv1"});
      const auto c2 = b.conv(c1, 8, 8, 3, {.name = "conv2", .pads = kPad1});
      const auto y = b.node("Relu", {b.node("Add", {c2, a}, {}, "add")}, {}, "act");
      b.output(kept == "read later" ? b.node("Mul", {y, a}, {}, "later") : y);
      if (kept == "output") b.output(a);
      const Tensor in = input({1, 8, 6, 6});
      const std::vector<Tensor> expected = b.run({in});
      ASSERT_TRUE(passes::fuse_activations(b.graph()).changed);
      nn::utils::convert_conv2d_weight_memory_format(b.graph(), layout);
      bool overwritten = false;
      const std::vector<Tensor> got = b.graph().run(
          {in.contiguous(layout)}, [&](const graph::Node& node, const std::vector<Tensor>& read,
                                       const std::vector<Tensor>& wrote) {
            if (node.name == "conv2") overwritten = wrote[0].shares_storage(read[3]);
          });
      EXPECT_EQ(overwritten, kept.empty());
      ASSERT_EQ(got.size(), expected.size());
      for (std::size_t k = 0; k < got.size(); ++k)
        EXPECT_TRUE(testing::all_close(got[k], expected[k], kFused)) << k;
    }
  }
}

// A residual the Add broadcasts ([1, C, 1, 1], a runtime input) cannot be a post-op sum: the
// fused node falls back to the unfused steps and still computes the same values.
TEST(ActivationFusion, BroadcastResidualFallsBackToTheUnfusedSteps) {
  GraphBuilder b;
  const auto x = b.input("x", {2, 3, 5, 5});
  const auto r = b.input("r", {1, 4, 1, 1});
  const auto c = b.conv(x, 3, 4, 3, {.name = "conv", .pads = kPad1});
  const auto y = b.node("Relu", {b.node("Add", {r, c}, {}, "add")}, {}, "act");
  b.output(y);
  const Tensor in = input({2, 3, 5, 5});
  const Tensor bias = input({1, 4, 1, 1}, 9);
  const Tensor expected = b.run({in, bias})[0];
  ASSERT_TRUE(passes::fuse_activations(b.graph()).changed);
  ASSERT_EQ(b.graph().nodes().size(), 1u);
  EXPECT_TRUE(testing::all_close(b.run({in, bias})[0], expected, testing::Tolerance::exact()));
}

// The fused node's conv is reachable from the graph: converting the graph's conv weights
// reaches it, and its output stays right.
TEST(ActivationFusion, FusedConvWeightsStayReachableForLayoutConversion) {
  GraphBuilder b;
  const auto x = b.input("x", {1, 4, 6, 6});
  const auto c = b.conv(x, 4, 4, 3, {.name = "conv", .pads = kPad1});
  b.output(b.node("Relu", {b.node("Add", {c, x}, {}, "add")}, {}, "act"));
  const Tensor in = input({1, 4, 6, 6});
  const Tensor expected = b.run({in})[0];
  ASSERT_TRUE(passes::fuse_activations(b.graph()).changed);
  auto op = std::dynamic_pointer_cast<passes::FusedConvAdd>(b.graph().nodes()[0].module);
  ASSERT_NE(op, nullptr);
  nn::utils::convert_conv2d_weight_memory_format(b.graph(), MemoryFormat::ChannelsLast);
  EXPECT_TRUE(op->conv()->weight().is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(testing::all_close(b.run({in})[0], expected, kFused));
}

}  // namespace
}  // namespace refold
