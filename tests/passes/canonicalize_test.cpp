// canonicalize: a spatial ReduceMean/ReduceMax becomes a global pool, GELU written out with Erf
// becomes one Gelu node, Reshape → InstanceNormalization → Reshape one GroupNormalization (their
// parts the original nodes) — with the values kept; the near misses stay as they are.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numbers>
#include <string>
#include <vector>

#include "kernels/verbose.h"
#include "passes/passes.h"
#include "refold/nn/conv.h"
#include "testing/compare.h"
#include "testing/graph_builder.h"
#include "testing/pass_checks.h"

namespace refold {
namespace {

using testing::apply_pass;
using testing::attrs;
using testing::expect_left_alone;
using testing::GraphBuilder;
using testing::has_note;
using testing::int64s;
using testing::notes_of;

TEST(Canonicalize, SpatialReduceMeanAndMaxBecomeGlobalPools) {
  struct Case {
    const char* name;
    const char* op;
    int opset;
    std::vector<std::int64_t> axes;
    const char* expected;
  };
  for (const Case& k : std::vector<Case>{
           {"mean, attribute axes", "ReduceMean", 13, {2, 3}, "GlobalAveragePool"},
           {"mean, negative axes", "ReduceMean", 13, {-1, -2}, "GlobalAveragePool"},
           {"mean, axes input (opset 18)", "ReduceMean", 18, {3, 2}, "GlobalAveragePool"},
           {"max", "ReduceMax", 13, {2, 3}, "GlobalMaxPool"},
       }) {
    SCOPED_TRACE(k.name);
    GraphBuilder b;
    b.set_opset(k.opset);
    const auto x = b.input("x", {2, 5, 6, 7});
    const auto y = k.opset >= 18 ? b.node(k.op, {x, b.constant("axes", int64s(k.axes))}, {}, "se")
                                 : b.node(k.op, {x}, attrs({{"axes", k.axes}}), "se");
    b.output(y);
    const passes::PassReport r = apply_pass(b, passes::canonicalize);
    EXPECT_TRUE(r.changed) << notes_of(r);
    EXPECT_EQ(b.count(k.expected), 1) << b.graph().dump();
    EXPECT_EQ(b.count(k.op), 0);
    EXPECT_EQ(b.graph().nodes()[0].name, "se");
    EXPECT_EQ(b.graph().nodes()[0].outputs, std::vector<std::string>{y});
    EXPECT_TRUE(has_note(r, std::string("as ") + k.expected)) << notes_of(r);
  }
}

TEST(Canonicalize, OtherReductionsStay) {
  struct Case {
    const char* name;
    Shape shape;
    std::vector<std::int64_t> axes;
    std::int64_t keepdims;
  };
  for (const Case& k : std::vector<Case>{
           {"keepdims 0", {1, 4, 5, 5}, {2, 3}, 0},
           {"channels and H", {1, 4, 5, 5}, {1, 2}, 1},
           {"only H", {1, 4, 5, 5}, {2}, 1},
           {"a 3-d input", {4, 5, 5}, {1, 2}, 1},
       }) {
    SCOPED_TRACE(k.name);
    GraphBuilder b;
    b.set_opset(13);
    const auto x = b.input("x", k.shape);
    b.output(
        b.node("ReduceMean", {x}, attrs({{"axes", k.axes}, {"keepdims", k.keepdims}}), "mean"));
    expect_left_alone(b, passes::canonicalize);
  }
}

// The forms GELU is written in, ½x·(1 + erf(x/√2)).
struct GeluForm {
  const char* name;
  std::function<std::string(GraphBuilder&, const std::string&)> build;
  int nodes;
};

std::vector<GeluForm> gelu_forms() {
  auto scalar = [](GraphBuilder& b, const std::string& name, double v) {
    return b.constant(name, testing::values({static_cast<float>(v)}, {}));
  };
  auto erf_plus_one = [=](GraphBuilder& b, const std::string& t) {
    const auto e = b.node("Erf", {t});
    return b.node("Add", {scalar(b, "one", 1.0), e});  // 1 + erf, the other operand order
  };
  return {
      {"torch.onnx: ((x·(1 + erf(x/√2)))·0.5",
       [=](GraphBuilder& b, const std::string& x) {
         const auto t = b.node("Div", {x, scalar(b, "sqrt2", std::numbers::sqrt2)});
         const auto m = b.node("Mul", {x, erf_plus_one(b, t)});
         return b.node("Mul", {m, scalar(b, "half", 0.5)}, {}, "gelu_out");
       },
       5},
      {"x·((1 + erf(x·(1/√2)))·0.5)",
       [=](GraphBuilder& b, const std::string& x) {
         const auto t = b.node("Mul", {scalar(b, "rsqrt2", 1 / std::numbers::sqrt2), x});
         const auto h = b.node("Mul", {erf_plus_one(b, t), scalar(b, "half", 0.5)});
         return b.node("Mul", {h, x}, {}, "gelu_out");
       },
       5},
      {"(x·0.5)·(1 + erf(x/√2))",
       [=](GraphBuilder& b, const std::string& x) {
         const auto half = b.node("Mul", {x, scalar(b, "half", 0.5)});
         const auto t = b.node("Div", {x, scalar(b, "sqrt2", std::numbers::sqrt2)});
         return b.node("Mul", {half, erf_plus_one(b, t)}, {}, "gelu_out");
       },
       5},
      // The tanh approximation, ½x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), as torch.onnx writes
      // gelu(approximate="tanh") (EfficientViT-L's), and with Pow.
      {"torch.onnx tanh: x·(x·x), then ((x·(1 + tanh(…)))·0.5",
       [=](GraphBuilder& b, const std::string& x) {
         const auto cube = b.node("Mul", {x, b.node("Mul", {x, x})});
         const auto u = b.node("Add", {x, b.node("Mul", {scalar(b, "k", 0.044715), cube})});
         const auto e = b.node("Tanh", {b.node("Mul", {scalar(b, "c", 0.7978845608), u})});
         const auto m = b.node("Mul", {x, b.node("Add", {e, scalar(b, "one", 1.0)})});
         return b.node("Mul", {m, scalar(b, "half", 0.5)}, {}, "gelu_out");
       },
       9},
      {"tanh with Pow(x, 3): (x·0.5)·(1 + tanh(…))",
       [=](GraphBuilder& b, const std::string& x) {
         const auto cube = b.node("Pow", {x, scalar(b, "three", 3.0)});
         const auto u = b.node("Add", {b.node("Mul", {cube, scalar(b, "k", 0.044715)}), x});
         const auto e = b.node("Tanh", {b.node("Mul", {u, scalar(b, "c", 0.7978845608)})});
         const auto half = b.node("Mul", {x, scalar(b, "half", 0.5)});
         return b.node("Mul", {half, b.node("Add", {scalar(b, "one", 1.0), e})}, {}, "gelu_out");
       },
       8},
  };
}

TEST(Canonicalize, EachGeluFormBecomesOneGeluNode) {
  for (const GeluForm& form : gelu_forms()) {
    SCOPED_TRACE(form.name);
    GraphBuilder b;
    const auto x = b.input("x", {2, 3, 4, 5});
    const auto y = form.build(b, x);
    b.output(b.node("Relu", {y}, {}, "after"));  // a reader after the pattern
    const passes::PassReport r = apply_pass(b, passes::canonicalize);
    EXPECT_TRUE(r.changed) << notes_of(r);
    ASSERT_EQ(b.graph().nodes().size(), 2u) << b.graph().dump();
    const graph::Node& gelu = b.graph().nodes()[0];
    EXPECT_EQ(gelu.op_type, "Gelu");
    EXPECT_EQ(gelu.name, "gelu_out");
    EXPECT_EQ(gelu.inputs, std::vector<std::string>{x});
    EXPECT_EQ(gelu.outputs, std::vector<std::string>{y});
    EXPECT_EQ(static_cast<int>(gelu.parts.size()), form.nodes);  // export writes these back
    EXPECT_EQ(gelu.attributes.get_string("approximate", "none"), form.nodes > 5 ? "tanh" : "none");
    EXPECT_FALSE(passes::canonicalize(b.graph()).changed);
    // dead-code keeps the constants the parts read: the exporter writes the parts with them.
    apply_pass(b, passes::eliminate_dead_code, /*exact=*/true);
    for (const graph::Node& part : b.graph().nodes()[0].parts) {
      for (const std::string& name : part.inputs) {
        if (name != x && name.find("_out") == std::string::npos) {
          EXPECT_TRUE(b.graph().is_constant(name)) << name;
        }
      }
    }
  }
}

TEST(Canonicalize, NearMissesOfGeluStay) {
  auto scalar = [](GraphBuilder& b, const std::string& name, float v) {
    return b.constant(name, testing::values({v}, {}));
  };
  struct Case {
    const char* name;
    std::function<void(GraphBuilder&, const std::string&)> build;
  };
  for (const Case& k : std::vector<Case>{
           {"divides by 1.5, not √2",
            [&](GraphBuilder&b, const std::string&x) {
              const auto t = b.node("Div", {x, scalar(b, "c", 1.5f)});
              const auto a = b.node("Add", {b.node("Erf", {t}), scalar(b, "one", 1)});
              b.output(b.node("Mul", {b.node("Mul", {x, a}), scalar(b, "half", 0.5f)}));
            }},
           {"adds 2, not 1",
            [&](GraphBuilder&b, const std::string&x) {
              const auto t = b.node("Div", {x, scalar(b, "c", 1.41421356f)});
              const auto a = b.node("Add", {b.node("Erf", {t}), scalar(b, "two", 2)});
              b.output(b.node("Mul", {b.node("Mul", {x, a}), scalar(b, "half", 0.5f)}));
            }},
           {"erf(x/√2) is also a graph output",
            [&](GraphBuilder&b, const std::string&x) {
              const auto t = b.node("Div", {x, scalar(b, "c", 1.41421356f)});
              const auto e = b.node("Erf", {t});
              const auto a = b.node("Add", {e, scalar(b, "one", 1)});
              b.output(b.node("Mul", {b.node("Mul", {x, a}), scalar(b, "half", 0.5f)}));
              b.output(e);
            }},
           {"tanh form with 0.05, not 0.044715",
            [&](GraphBuilder&b, const std::string&x) {
              const auto cube = b.node("Mul", {x, b.node("Mul", {x, x})});
              const auto u = b.node("Add", {x, b.node("Mul", {scalar(b, "k", 0.05f), cube})});
              const auto e = b.node("Tanh", {b.node("Mul", {scalar(b, "c", 0.7978846f), u})});
              const auto m = b.node("Mul", {x, b.node("Add", {e, scalar(b, "one", 1)})});
              b.output(b.node("Mul", {m, scalar(b, "half", 0.5f)}));
            }},
           {"tanh form cubing another value",
            [&](GraphBuilder&b, const std::string&x) {
              const auto z = b.input("z", {2, 3, 4, 5});
              const auto cube = b.node("Mul", {z, b.node("Mul", {x, x})});
              const auto u = b.node("Add", {x, b.node("Mul", {scalar(b, "k", 0.044715f), cube})});
              const auto e = b.node("Tanh", {b.node("Mul", {scalar(b, "c", 0.7978846f), u})});
              const auto m = b.node("Mul", {x, b.node("Add", {e, scalar(b, "one", 1)})});
              b.output(b.node("Mul", {m, scalar(b, "half", 0.5f)}));
            }},
           {"multiplies by another value than x",
            [&](GraphBuilder&b, const std::string&x) {
              const auto z = b.input("z", {2, 3, 4, 5});
              const auto t = b.node("Div", {x, scalar(b, "c", 1.41421356f)});
              const auto a = b.node("Add", {b.node("Erf", {t}), scalar(b, "one", 1)});
              b.output(b.node("Mul", {b.node("Mul", {z, a}), scalar(b, "half", 0.5f)}));
            }},
       }) {
    SCOPED_TRACE(k.name);
    GraphBuilder b;
    const auto x = b.input("x", {2, 3, 4, 5});
    k.build(b, x);
    expect_left_alone(b, passes::canonicalize);
  }
}

// Conv → GELU (as torch.onnx writes it before opset 20): canonicalize makes the Gelu, and
// activation-fusion takes it into the conv, which then computes the whole chain.
TEST(Canonicalize, AGeluAfterAConvJoinsTheConv) {
  GraphBuilder b;
  const auto x = b.input("x", {1, 4, 6, 6});
  const auto c = b.conv(x, 4, 8, 3, {.name = "conv", .pads = testing::kPad1});
  b.output(gelu_forms()[0].build(b, c));
  apply_pass(b, [](graph::Graph& g) {
    passes::PassReport r = passes::canonicalize(g);
    passes::fuse_activations(g);
    return r;
  });
  ASSERT_EQ(b.graph().nodes().size(), 1u) << b.graph().dump();
  auto conv = std::dynamic_pointer_cast<nn::Conv2d>(b.graph().nodes()[0].module);
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->activation(), Activation::GELU);
  // The parts: the conv, then the Gelu node holding the five original nodes.
  ASSERT_EQ(b.graph().nodes()[0].parts.size(), 2u);
  EXPECT_EQ(b.graph().nodes()[0].parts[1].parts.size(), 5u);
}

// GroupNorm as torch.onnx writes it before opset 18: Reshape(x, [N, G, -1]) →
// InstanceNormalization(scale, bias of length G) → Reshape(·, `back`).
std::string group_norm_pattern(GraphBuilder& b, const std::string& x, std::int64_t groups,
                               const Shape& back, const std::string& name) {
  Generator gen(11);
  const auto r = b.node("Reshape", {x, b.constant(name + ".groups", int64s({0, groups, -1}))}, {},
                        name + ".reshape");
  const auto n = b.node("InstanceNormalization",
                        {r, b.constant(name + ".scale", randn({groups}, {}, gen)),
                         b.constant(name + ".bias", randn({groups}, {}, gen))},
                        attrs({{"epsilon", 1e-3f}}), name);
  return b.node("Reshape", {n, b.constant(name + ".back", int64s(back))}, {}, name + ".back");
}

TEST(Canonicalize, GroupNormBetweenReshapesBecomesOneGroupNormalization) {
  struct Case {
    const char* name;
    Shape x;
    std::int64_t groups;
  };
  for (const Case& k : std::vector<Case>{
           {"one group (timm's GroupNorm1)", {2, 6, 4, 5}, 1},
           {"three groups", {2, 6, 4, 5}, 3},
           {"a group per channel", {1, 6, 3, 3}, 6},
           {"3-d input", {2, 4, 7}, 2},
       }) {
    {
      SCOPED_TRACE(k.name);
      GraphBuilder b;
      const auto x = b.input("x", k.x);
      const auto y = group_norm_pattern(b, x, k.groups, k.x, "gn");
      b.output(b.node("Relu", {y}, {}, "after"));
      const passes::PassReport r = apply_pass(b, passes::canonicalize);
      EXPECT_TRUE(r.changed) << notes_of(r);
      EXPECT_TRUE(has_note(r, "as GroupNormalization")) << notes_of(r);
      ASSERT_EQ(b.graph().nodes().size(), 2u) << b.graph().dump();
      const graph::Node& gn = b.graph().nodes()[0];
      EXPECT_EQ(gn.op_type, "GroupNormalization");
      EXPECT_EQ(gn.name, "gn");
      EXPECT_EQ(gn.inputs, (std::vector<std::string>{x, "gn.scale", "gn.bias"}));
      EXPECT_EQ(gn.outputs, std::vector<std::string>{y});
      EXPECT_EQ(gn.attributes.get_int("num_groups", 0), k.groups);
      EXPECT_EQ(gn.parts.size(), 3u);  // export writes these back
      EXPECT_FALSE(passes::canonicalize(b.graph()).changed);
    }
  }
}

// The fused node keeps its input's layout: a channels_last input gives a channels_last output
// with the values of the NCHW run (the Reshapes it replaces wrote fresh NCHW tensors).
TEST(Canonicalize, TheGroupNormalizationKeepsChannelsLast) {
  GraphBuilder b;
  const Shape shape = {2, 6, 4, 5};
  const auto x = b.input("x", shape);
  b.output(group_norm_pattern(b, x, 2, shape, "gn"));
  apply_pass(b, passes::canonicalize);
  ASSERT_EQ(b.graph().nodes().size(), 1u) << b.graph().dump();
  Generator gen(4);
  const Tensor in = randn(shape, {}, gen);
  const Tensor nchw = b.graph().run({in})[0];
  const Tensor nhwc = b.graph().run({in.contiguous(MemoryFormat::ChannelsLast)})[0];
  EXPECT_TRUE(nhwc.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(testing::all_close(nhwc, nchw, testing::Tolerance::op_f32()));
}

// dead-code's Identity removal renames what a fused node's parts read too (the exporter
// writes the parts: they must read values that exist).
TEST(Canonicalize, APatternAfterAnIdentityReadsItsInputOnceDeadCodeRemovesIt) {
  GraphBuilder b;
  const Shape shape = {1, 4, 3, 3};
  const auto x = b.input("x", shape);
  const auto id = b.node("Identity", {x}, {}, "id");
  b.output(group_norm_pattern(b, id, 2, shape, "gn"));
  apply_pass(b, passes::canonicalize);
  apply_pass(b, passes::eliminate_dead_code, /*exact=*/true);
  ASSERT_EQ(b.graph().nodes().size(), 1u) << b.graph().dump();
  const graph::Node& gn = b.graph().nodes()[0];
  EXPECT_EQ(gn.inputs[0], x);
  ASSERT_EQ(gn.parts.size(), 3u);
  EXPECT_EQ(gn.parts[0].inputs[0], x);  // the first Reshape, as export writes it
}

TEST(Canonicalize, NearMissesOfGroupNormStay) {
  struct Case {
    const char* name;
    std::function<void(GraphBuilder&, const std::string&)> build;
  };
  for (const Case& k : std::vector<Case>{
           {"groups that split a channel (6 channels, 4 groups)",
            [](GraphBuilder&b, const std::string&x) {
              b.output(group_norm_pattern(b, x, 4, {2, 6, 4, 4}, "gn"));
            }},
           {"the Reshape back writes another shape",
            [](GraphBuilder&b, const std::string&x) {
              b.output(group_norm_pattern(b, x, 2, {2, 6, 16}, "gn"));
            }},
           {"the normalized rows are also a graph output",
            [](GraphBuilder&b, const std::string&x) {
              b.output(group_norm_pattern(b, x, 2, {2, 6, 4, 4}, "gn"));
              b.output("gn_out");
            }},
           {"the reshaped input is read twice",
            [](GraphBuilder&b, const std::string&x) {
              b.output(group_norm_pattern(b, x, 2, {2, 6, 4, 4}, "gn"));
              b.output(b.node("Relu", {"gn.reshape_out"}, {}, "other"));
            }},
       }) {
    SCOPED_TRACE(k.name);
    GraphBuilder b;
    const auto x = b.input("x", {2, 6, 4, 4});
    k.build(b, x);
    expect_left_alone(b, passes::canonicalize);
  }
}

// MobileViT's unfold of [N, C, H, W] into 2×2 patches, [N, C, 4, H·W/4], and the fold back:
// Reshape → Transpose → Reshape.
std::string unfold(GraphBuilder& b, const std::string& x, const Shape& s, const std::string& name,
                   const std::vector<std::int64_t>& perm = {0, 1, 3, 5, 2, 4}) {
  const auto r = b.node(
      "Reshape", {x, b.constant(name + ".split", int64s({s[0], s[1], s[2] / 2, 2, s[3] / 2, 2}))},
      {}, name + ".r");
  const auto t = b.node("Transpose", {r}, attrs({{"perm", perm}}), name);
  return b.node("Reshape", {t, b.constant(name + ".merge", int64s({s[0], s[1], 4, -1}))}, {},
                name + ".back");
}
std::string fold(GraphBuilder& b, const std::string& x, const Shape& s, const std::string& name) {
  const auto r = b.node(
      "Reshape", {x, b.constant(name + ".split", int64s({s[0], s[1], 2, 2, s[2] / 2, s[3] / 2}))},
      {}, name + ".r");
  const auto t = b.node("Transpose", {r},
                        attrs({{"perm", std::vector<std::int64_t>{0, 1, 4, 2, 5, 3}}}), name);
  return b.node("Reshape", {t, b.constant(name + ".merge", int64s(s))}, {}, name + ".back");
}

TEST(Canonicalize, PatchUnfoldAndFoldBecomePatchShufflesInBothLayouts) {
  const Shape s = {2, 3, 4, 6};
  GraphBuilder b;
  const auto x = b.input("x", s);
  const auto u = unfold(b, x, s, "unfold");
  const auto y = fold(b, b.node("Relu", {u}, {}, "mid"), s, "fold");
  b.output(y);
  Generator gen(8);
  const Tensor in = randn(s, {}, gen);
  const Tensor before = b.graph().run({in})[0];
  const passes::PassReport r = apply_pass(b, passes::canonicalize, /*exact=*/true);
  EXPECT_EQ(b.count("PatchShuffle"), 2) << b.graph().dump();
  EXPECT_EQ(b.count("Reshape") + b.count("Transpose"), 0) << b.graph().dump();
  EXPECT_TRUE(has_note(r, "as a PatchShuffle")) << notes_of(r);
  for (const graph::Node& n : b.graph().nodes()) {
    if (n.op_type == "PatchShuffle") {
      EXPECT_EQ(n.parts.size(), 3u);  // export writes these
    }
  }
  EXPECT_FALSE(passes::canonicalize(b.graph()).changed);
  // An NHWC input: the same values, NHWC throughout (the unfolded value too), no permute.
  reset_permute_count();
  std::map<std::string, Tensor> seen;
  const Tensor after =
      b.graph().run({in.contiguous(MemoryFormat::ChannelsLast)},
                    [&](const graph::Node& node, const std::vector<Tensor>&,
                        const std::vector<Tensor>& out) { seen[node.name] = out[0]; })[0];
  EXPECT_EQ(permute_count(), 1u);  // the test's own conversion of the input
  EXPECT_TRUE(seen.at("unfold").is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(after.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(testing::all_close(after, before, testing::Tolerance::exact()));
}

// Rearrangements that move channels too: ShuffleNet's channel shuffle, space-to-depth
// (PixelUnshuffle), depth-to-space (PixelShuffle), an unfold that also swaps C with a patch
// axis. Each is one PatchShuffle, exact in both layouts, NHWC throughout.
TEST(Canonicalize, ChannelShufflesAndSpaceToDepthBecomePatchShuffles) {
  struct Case {
    const char* name;
    Shape x, middle;
    std::vector<std::int64_t> perm;
    Shape y;
  };
  for (const Case& k : std::vector<Case>{
           {"channel shuffle, 2 groups",
            {2, 6, 3, 5},
            {2, 2, 3, 3, 5},
            {0, 2, 1, 3, 4},
            {2, 6, 3, 5}},
           {"space to depth", {1, 2, 4, 6}, {1, 2, 2, 2, 3, 2}, {0, 1, 3, 5, 2, 4}, {1, 8, 2, 3}},
           {"depth to space", {1, 8, 2, 3}, {1, 2, 2, 2, 2, 3}, {0, 1, 4, 2, 5, 3}, {1, 2, 4, 6}},
           {"unfold swapping C with a patch axis",
            {1, 2, 4, 4},
            {1, 2, 2, 2, 2, 2},
            {0, 3, 1, 5, 2, 4},
            {1, 2, 4, 4}},
       }) {
    SCOPED_TRACE(k.name);
    GraphBuilder b;
    const auto x = b.input("x", k.x);
    const auto r = b.node("Reshape", {x, b.constant("split", int64s(k.middle))}, {}, "r");
    const auto t = b.node("Transpose", {r}, attrs({{"perm", k.perm}}), "shuffle");
    b.output(b.node("Reshape", {t, b.constant("merge", int64s(k.y))}, {}, "back"));
    Generator gen(9);
    const Tensor in = randn(k.x, {}, gen);
    const Tensor before = b.graph().run({in})[0];
    apply_pass(b, passes::canonicalize, /*exact=*/true);
    ASSERT_EQ(b.count("PatchShuffle"), 1) << b.graph().dump();
    reset_permute_count();
    DispatchLog log;
    const Tensor after = b.graph().run({in.contiguous(MemoryFormat::ChannelsLast)})[0];
    EXPECT_EQ(permute_count(), 1u);  // the test's own conversion of the input
    EXPECT_TRUE(after.is_contiguous(MemoryFormat::ChannelsLast));
    EXPECT_TRUE(testing::all_close(after, before, testing::Tolerance::exact()));
    // Its one copy is named as a Rearrange's is (the profiler's implementation column).
    EXPECT_THAT(log.take(), ::testing::Contains("PatchShuffle: copy"));
  }
}

TEST(Canonicalize, ReshapeTransposeReshapeThatMergesAxesStays) {
  struct Case {
    const char* name;
    std::function<void(GraphBuilder&, const std::string&)> build;
  };
  const Shape s = {1, 2, 4, 4};
  for (const Case& k : std::vector<Case>{
           {"the Reshape merges C with part of H",
            [&](GraphBuilder&b, const std::string&x) {
              const auto r = b.node("Reshape", {x, b.constant("a", int64s({1, 4, 2, 4, 1}))});
              const auto t = b.node("Transpose", {r},
                                    attrs({{"perm", std::vector<std::int64_t>{0, 1, 3, 2, 4}}}));
              b.output(b.node("Reshape", {t, b.constant("c", int64s(s))}));
            }},
           {"the Transpose moves the batch",
            [&](GraphBuilder&b, const std::string&x) {
              b.output(unfold(b, x, s, "u", {1, 0, 3, 5, 2, 4}));
            }},
           {"the transposed value is also a graph output",
            [&](GraphBuilder&b, const std::string&x) {
              b.output(unfold(b, x, s, "u"));
              b.output("u_out");
            }},
           {"a 4-d middle",
            [&](GraphBuilder&b, const std::string&x) {
              const auto r = b.node("Reshape", {x, b.constant("a", int64s({1, 2, 2, 8}))});
              const auto t = b.node("Transpose", {r},
                                    attrs({{"perm", std::vector<std::int64_t>{0, 1, 3, 2}}}));
              b.output(b.node("Reshape", {t, b.constant("c", int64s(s))}));
            }},
       }) {
    SCOPED_TRACE(k.name);
    GraphBuilder b;
    const auto x = b.input("x", s);
    k.build(b, x);
    expect_left_alone(b, passes::canonicalize);
  }
}

}  // namespace
}  // namespace refold

namespace refold {
namespace {

// Attention's scale, written the ways exporters write it, folds into one ScaledMatMul whose
// alpha is the product of the factors; export writes the parts back.
TEST(Canonicalize, ScalarFactorsOfAMatMulBecomeItsAlpha) {
  using testing::GraphBuilder;
  auto scalar = [](GraphBuilder& b, const std::string& name, float v) {
    return b.constant(name, testing::values({v}, {}));
  };
  struct Case {
    const char* name;
    std::function<std::string(GraphBuilder&, const std::string&, const std::string&)> build;
    float alpha;
    std::size_t parts;
  };
  const std::vector<Case> cases = {
      {"sdpa: (q·√s)(kᵀ·√s)",
       [&](GraphBuilder& b, const std::string& q, const std::string& k) {
         const auto qs = b.node("Mul", {q, scalar(b, "sq", 0.5f)});
         const auto ks = b.node("Mul", {scalar(b, "sk", 0.25f), k});
         return b.node("MatMul", {qs, ks}, {}, "scores");
       },
       0.125f, 3},
      {"(q·kᵀ)/√d",
       [&](GraphBuilder& b, const std::string& q, const std::string& k) {
         const auto s = b.node("MatMul", {q, k});
         return b.node("Div", {s, scalar(b, "sqrt_d", 4.0f)}, {}, "scores");
       },
       0.25f, 2},
      {"(q/2)·kᵀ·3",
       [&](GraphBuilder& b, const std::string& q, const std::string& k) {
         const auto qs = b.node("Div", {q, scalar(b, "two", 2.0f)});
         const auto s = b.node("MatMul", {qs, k});
         return b.node("Mul", {s, scalar(b, "three", 3.0f)}, {}, "scores");
       },
       1.5f, 3},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    GraphBuilder b;
    const auto q = b.input("q", {2, 3, 16, 8});
    const auto k = b.input("k", {2, 3, 8, 16});
    const auto y = c.build(b, q, k);
    b.output(b.node("Softmax", {y}, testing::attrs({{"axis", std::int64_t{-1}}}), "after"));
    const passes::PassReport r = testing::apply_pass(b, passes::canonicalize);
    EXPECT_TRUE(r.changed) << testing::notes_of(r);
    ASSERT_EQ(b.graph().nodes().size(), 2u) << b.graph().dump();
    const graph::Node& mm = b.graph().nodes()[0];
    EXPECT_EQ(mm.op_type, "ScaledMatMul");
    EXPECT_EQ(mm.domain, "refold");
    EXPECT_EQ(mm.inputs, (std::vector<std::string>{q, k}));
    EXPECT_EQ(mm.outputs, std::vector<std::string>{y});
    EXPECT_FLOAT_EQ(mm.attributes.get_float("alpha", 0.0f), c.alpha);
    EXPECT_EQ(mm.parts.size(), c.parts);
    EXPECT_FALSE(passes::canonicalize(b.graph()).changed);
  }
}

// A softmax along the last axis of a sum — attention's position bias after its scaled scores
// (LeViT, TinyViT: a constant [heads, N, N] broadcast over the batch), a computed mask, a bias
// written first, a softmax with axis rank − 1 or no axis at all (opset 13's −1), and an addend
// that enlarges the sum — becomes one AddSoftmax of x (the operand of the sum's shape) and c;
// apply_pass checks the values.
TEST(Canonicalize, ASoftmaxOfASumBecomesOneAddSoftmax) {
  using testing::GraphBuilder;
  struct Case {
    const char* name;
    Shape addend;
    bool constant, addend_first;
    std::optional<std::int64_t> axis;
  };
  const std::vector<Case> cases = {
      {"constant bias [heads, N, N]", {3, 16, 16}, true, false, -1},
      {"computed mask of the sum's shape, axis 3", {2, 3, 16, 16}, false, false, 3},
      {"constant [N] bias written first, no axis", {16}, true, true, std::nullopt},
      {"an addend that enlarges the sum", {4, 2, 1, 16, 1}, false, false, -1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    GraphBuilder b;
    const auto q = b.input("q", {2, 3, 16, 8});
    const auto k = b.input("k", {2, 3, 8, 16});
    const auto bias = c.constant ? b.constant("bias", randn(c.addend)) : b.input("bias", c.addend);
    const auto scores =
        b.node("Mul", {b.node("MatMul", {q, k}), b.constant("s", testing::values({0.25f}, {}))});
    const auto sum =
        b.node("Add", c.addend_first ? std::vector{bias, scores} : std::vector{scores, bias});
    graph::Attributes attributes;
    if (c.axis) attributes = testing::attrs({{"axis", *c.axis}});
    const auto y = b.node("Softmax", {sum}, attributes, "softmax");
    b.output(b.node("Relu", {y}));
    const passes::PassReport r = testing::apply_pass(b, passes::canonicalize);
    EXPECT_TRUE(testing::has_note(r, "as one AddSoftmax")) << testing::notes_of(r);
    ASSERT_EQ(b.count("AddSoftmax"), 1) << b.graph().dump();
    EXPECT_EQ(b.count("Add") + b.count("Softmax"), 0) << b.graph().dump();
    const graph::Node& n = b.graph().nodes()[1];
    EXPECT_EQ(n.op_type, "AddSoftmax");
    EXPECT_EQ(n.domain, "refold");
    EXPECT_EQ(n.inputs, (std::vector<std::string>{scores, bias}));
    EXPECT_EQ(n.outputs, std::vector<std::string>{y});
    EXPECT_EQ(n.parts.size(), 2u);
    EXPECT_FALSE(passes::canonicalize(b.graph()).changed);
  }
}

// Swin's shifted windows: the scores [B·W, heads, N, N] plus their position bias, viewed as
// [B, W, heads, N, N] for the mask [W, 1, N, N], viewed back (here in two reshapes), softmaxed.
// The mask's Add and the Softmax become one AddSoftmax with the reshapes between after it (one
// last dim N throughout);
// the values are the same, and so are those of the file it exports (the parts written back).
TEST(Canonicalize, ReshapesBetweenTheSumAndItsSoftmaxMoveAfterTheAddSoftmax) {
  using testing::GraphBuilder;
  const std::int64_t windows = 4, heads = 3, n = 16;
  GraphBuilder b;
  const auto q = b.input("q", {windows, heads, n, 8});
  const auto k = b.input("k", {windows, heads, 8, n});
  const auto scores = b.node("MatMul", {q, k});
  const auto biased = b.node("Add", {scores, b.constant("bias", randn({heads, n, n}))});
  const auto split =
      b.node("Reshape", {biased, b.constant("s5", testing::int64s({1, windows, heads, n, n}))});
  const auto masked = b.node("Add", {split, b.constant("mask", randn({windows, 1, n, n}))});
  const auto flat =
      b.node("Reshape", {masked, b.constant("s3", testing::int64s({windows * heads, n, n}))});
  const auto merged =
      b.node("Reshape", {flat, b.constant("s4", testing::int64s({windows, heads, n, n}))});
  const auto y = b.node("Softmax", {merged}, testing::attrs({{"axis", std::int64_t{-1}}}), "sm");
  b.output(b.node("MatMul", {y, b.input("v", {windows, heads, n, 8})}));
  const std::vector<Tensor> in = b.random_inputs();
  const Tensor before = b.graph().run(in)[0];
  const passes::PassReport r = testing::apply_pass(b, passes::canonicalize);
  EXPECT_TRUE(testing::has_note(r, "the 2 reshapes between moved after it"))
      << testing::notes_of(r);
  ASSERT_EQ(b.count("AddSoftmax"), 1) << b.graph().dump();
  EXPECT_EQ(b.count("Softmax"), 0) << b.graph().dump();
  EXPECT_EQ(b.count("Add"), 1) << b.graph().dump();  // the bias, read by a reshape
  EXPECT_EQ(b.count("Reshape"), 3) << b.graph().dump();
  const auto fused = b.graph().find_node("sm");
  ASSERT_TRUE(fused.has_value());
  const graph::Node& n_fused = b.graph().nodes()[*fused];
  EXPECT_EQ(n_fused.op_type, "AddSoftmax");
  EXPECT_EQ(n_fused.inputs, (std::vector<std::string>{split, "mask"}));
  EXPECT_EQ(b.graph().consumers(n_fused.outputs[0]).size(), 1u);

  const auto written = testing::written_back(b.graph());
  EXPECT_TRUE(testing::model_close(written->run(in)[0], before));
}

// A softmax along another axis, of a sum that something else reads too or that is a graph
// output, or behind a reshape that changes the last dim (its rows are not the sum's), stays a
// Softmax of an Add.
TEST(Canonicalize, ASoftmaxOfASumItCannotTakeStays) {
  using testing::GraphBuilder;
  for (const int variant : {0, 1, 2, 3}) {
    SCOPED_TRACE(variant);
    GraphBuilder b;
    const auto x = b.input("x", {1, 2, 4, 4});
    const auto sum = b.node("Add", {x, b.constant("bias", randn({2, 4, 4}))});
    const auto read =
        variant == 3 ? b.node("Reshape", {sum, b.constant("s", testing::int64s({1, 2, 16}))}) : sum;
    b.output(
        b.node("Softmax", {read}, testing::attrs({{"axis", std::int64_t{variant == 0 ? 1 : -1}}})));
    if (variant == 1) b.output(b.node("Relu", {sum}));
    if (variant == 2) b.output(sum);
    testing::expect_left_alone(b, passes::canonicalize);
  }
}

// F.normalize as exporters write it — ReduceL2 keeping its axis, then Clip(min ε) (torch.onnx),
// Max with ε on either side, or no bound; the axes as an attribute or an input (opset 18) —
// becomes one L2Normalize of x, and XCiT's form, x a transposed view, is read where it lies.
// apply_pass checks the values; the exported file writes the parts back.
TEST(Canonicalize, FNormalizeBecomesOneL2Normalize) {
  using testing::GraphBuilder;
  enum class Bound { Clip, MaxEpsilonFirst, None };
  struct Case {
    const char* name;
    Bound bound;
    std::int64_t axis;
    bool axes_input, transposed;
  };
  const std::vector<Case> cases = {
      {"Clip, the last axis", Bound::Clip, -1, false, false},
      {"Max(ε, n), axis 1", Bound::MaxEpsilonFirst, 1, false, false},
      {"no bound, axes an input", Bound::None, 2, true, false},
      {"XCiT: the tokens of a transposed view", Bound::Clip, -1, false, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    GraphBuilder b;
    if (c.axes_input) b.set_opset(18);
    const auto input = b.input("x", {2, 3, 5, 20});
    const auto x = c.transposed
                       ? b.node("Transpose", {input},
                                testing::attrs({{"perm", std::vector<std::int64_t>{0, 1, 3, 2}}}))
                       : input;
    const auto norm =
        c.axes_input
            ? b.node("ReduceL2", {x, b.constant("axes", testing::int64s({c.axis}))}, {}, "norm")
            : b.node("ReduceL2", {x}, testing::attrs({{"axes", std::vector<std::int64_t>{c.axis}}}),
                     "norm");
    const auto epsilon = b.constant("eps", testing::values({1e-12f}, {}));
    const auto bounded = c.bound == Bound::Clip              ? b.node("Clip", {norm, epsilon})
                         : c.bound == Bound::MaxEpsilonFirst ? b.node("Max", {epsilon, norm})
                                                             : norm;
    const auto y = b.node("Div", {x, bounded}, {}, "normalized");
    b.output(b.node("Relu", {y}));
    const std::vector<Tensor> in = b.random_inputs();
    const Tensor before = b.graph().run(in)[0];
    const passes::PassReport r = testing::apply_pass(b, passes::canonicalize);
    EXPECT_TRUE(testing::has_note(r, "as one L2Normalize")) << testing::notes_of(r);
    ASSERT_EQ(b.count("L2Normalize"), 1) << b.graph().dump();
    EXPECT_EQ(b.count("ReduceL2") + b.count("Clip") + b.count("Max") + b.count("Div"), 0)
        << b.graph().dump();
    const auto fused = b.graph().find_node("normalized");
    ASSERT_TRUE(fused.has_value());
    const graph::Node& n = b.graph().nodes()[*fused];
    EXPECT_EQ(n.domain, "refold");
    EXPECT_EQ(n.inputs, std::vector<std::string>{x});
    EXPECT_EQ(n.attributes.get_int("axis", 0), c.axis);
    EXPECT_FLOAT_EQ(n.attributes.get_float("epsilon", -1.0f),
                    c.bound == Bound::None ? 0.0f : 1e-12f);
    EXPECT_EQ(n.parts.size(), c.bound == Bound::None ? 2u : 3u);
    EXPECT_FALSE(passes::canonicalize(b.graph()).changed);

    if (c.axes_input) continue;  // a graph built in C++ is written as opset 17
    const auto written = testing::written_back(b.graph());
    EXPECT_EQ(std::count_if(written->nodes().begin(), written->nodes().end(),
                            [](const graph::Node& w) { return w.op_type == "ReduceL2"; }),
              1);
    EXPECT_TRUE(testing::model_close(written->run(in)[0], before));
  }
}

// Not F.normalize, or not one the node computes: the norm of another tensor, over two axes, or
// without its axis kept (x / n then broadcasts along another dim); a Clip with an upper bound
// or a computed ε; a norm something else reads too.
TEST(Canonicalize, DivisionsByANormItCannotTakeStay) {
  using testing::GraphBuilder;
  for (const int variant : {0, 1, 2, 3, 4, 5}) {
    SCOPED_TRACE(variant);
    GraphBuilder b;
    const auto x = b.input("x", {4, 4});
    const auto other = b.input("other", {4, 4});
    graph::Attributes attributes = testing::attrs({{"axes", std::vector<std::int64_t>{1}}});
    if (variant == 1) attributes = testing::attrs({{"axes", std::vector<std::int64_t>{0, 1}}});
    if (variant == 2)
      attributes =
          testing::attrs({{"axes", std::vector<std::int64_t>{0}}, {"keepdims", std::int64_t{0}}});
    const auto norm = b.node("ReduceL2", {variant == 0 ? other : x}, attributes);
    const auto epsilon =
        variant == 4 ? b.input("eps", {}) : b.constant("eps", testing::values({1e-12f}, {}));
    std::vector<std::string> clip_inputs = {norm, epsilon};
    if (variant == 3) clip_inputs.push_back(b.constant("hi", testing::values({10.0f}, {})));
    const auto bounded = b.node("Clip", clip_inputs);
    b.output(b.node("Div", {x, bounded}));
    if (variant == 5) b.output(b.node("Relu", {norm}));
    testing::expect_left_alone(b, passes::canonicalize);
  }
}

// Attention's heads merged back, (attn · v).transpose(1, 2).reshape(B, N, C), and XCiT's
// permute(0, 3, 1, 2): the Transpose joins the product as its perm (written in that order), so
// the Reshape after it reads a contiguous tensor; export writes the Transpose back.
TEST(Canonicalize, ATransposeOfAProductBecomesTheOrderItIsWrittenIn) {
  using testing::GraphBuilder;
  struct Case {
    Shape a, b;
    std::vector<std::int64_t> perm, merged;
    bool scaled;
  };
  const std::vector<Case> cases = {
      {{1, 3, 10, 10}, {1, 3, 10, 8}, {0, 2, 1, 3}, {1, 10, 24}, false},
      {{2, 4, 6, 6}, {2, 4, 6, 10}, {0, 3, 1, 2}, {2, 10, 24}, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("perm [{}]", fmt::join(c.perm, ", ")));
    GraphBuilder b;
    const auto attn = b.input("attn", c.a);
    const auto v = b.input("v", c.b);
    std::string y = b.node("MatMul", {attn, v});
    if (c.scaled) y = b.node("Mul", {y, b.constant("s", testing::values({0.5f}, {}))});
    const auto t = b.node("Transpose", {y}, testing::attrs({{"perm", c.perm}}), "heads_last");
    b.output(b.node("Reshape", {t, b.constant("shape", testing::int64s(c.merged))}, {}, "merge"));
    const passes::PassReport r = testing::apply_pass(b, passes::canonicalize);
    EXPECT_TRUE(r.changed) << testing::notes_of(r);
    ASSERT_EQ(b.graph().nodes().size(), 2u) << b.graph().dump();
    const graph::Node& mm = b.graph().nodes()[0];
    EXPECT_EQ(mm.op_type, "ScaledMatMul");
    EXPECT_EQ(mm.outputs, std::vector<std::string>{t});
    EXPECT_EQ(mm.attributes.get_ints("perm", {}), c.perm);
    EXPECT_FLOAT_EQ(mm.attributes.get_float("alpha", 0.0f), c.scaled ? 0.5f : 1.0f);
    EXPECT_EQ(mm.parts.size(), c.scaled ? 3u : 2u);
    EXPECT_EQ(b.graph().nodes()[1].op_type, "Reshape");
    EXPECT_FALSE(passes::canonicalize(b.graph()).changed);

    const auto written = testing::written_back(b.graph());
    const auto count = [&](const char* op) {
      return std::count_if(written->nodes().begin(), written->nodes().end(),
                           [&](const graph::Node& w) { return w.op_type == op; });
    };
    EXPECT_EQ(count("Transpose"), 1);
    EXPECT_EQ(count("MatMul"), 1);
    const std::vector<Tensor> in = {randn(c.a), randn(c.b)};
    EXPECT_TRUE(testing::model_close(written->run(in)[0], b.run(in)[0]));
  }
}

// Transposes a product cannot be written in, or that something else reads, stay.
TEST(Canonicalize, TransposesOfAProductItCannotWriteStay) {
  using testing::GraphBuilder;
  {  // The batch dim innermost: neither the product's rows nor its columns are contiguous.
    GraphBuilder b;
    const auto a = b.input("a", {2, 3, 4, 5});
    const auto v = b.input("v", {2, 3, 5, 6});
    const auto y = b.node("MatMul", {a, v});
    b.output(b.node("Transpose", {y},
                    testing::attrs({{"perm", std::vector<std::int64_t>{0, 3, 2, 1}}})));
    testing::expect_left_alone(b, passes::canonicalize);
  }
  {  // The product read by another node too.
    GraphBuilder b;
    const auto a = b.input("a", {2, 3, 4, 5});
    const auto v = b.input("v", {2, 3, 5, 6});
    const auto y = b.node("MatMul", {a, v});
    b.output(b.node("Transpose", {y},
                    testing::attrs({{"perm", std::vector<std::int64_t>{0, 2, 1, 3}}})));
    b.output(b.node("Relu", {y}));
    testing::expect_left_alone(b, passes::canonicalize);
  }
}

TEST(Canonicalize, FactorsThatAreNotOneConstantValueStay) {
  using testing::GraphBuilder;
  {  // A per-head temperature [heads, 1, 1] (EdgeNeXt's) is not one value.
    GraphBuilder b;
    const auto q = b.input("q", {1, 2, 4, 8});
    const auto k = b.input("k", {1, 2, 8, 4});
    const auto t = b.constant("t", testing::values({0.5f, 2.0f}, {2, 1, 1}));
    b.output(b.node("Mul", {b.node("MatMul", {q, k}), t}));
    testing::expect_left_alone(b, passes::canonicalize);
  }
  {  // A scaled operand read by another node too.
    GraphBuilder b;
    const auto q = b.input("q", {1, 2, 4, 8});
    const auto k = b.input("k", {1, 2, 8, 4});
    const auto qs = b.node("Mul", {q, b.constant("s", testing::values({0.5f}, {}))});
    b.output(b.node("MatMul", {qs, k}));
    b.output(b.node("Relu", {qs}));
    testing::expect_left_alone(b, passes::canonicalize);
  }
}

}  // namespace
}  // namespace refold

namespace refold {
namespace {

// MobileViT's patch unfold, [N, C, H, W] → [N·ph·pw, nh·nw, C], as timm writes it: five nodes
// that copy at each of their three Reshapes.
std::string mobilevit_unfold(testing::GraphBuilder& b, const std::string& x, const Shape& s) {
  const std::int64_t n = s[0], c = s[1], h = s[2], w = s[3], p = 2;
  auto perm = [](std::vector<std::int64_t> v) { return testing::attrs({{"perm", v}}); };
  auto r = b.node("Reshape", {x, b.constant("s1", testing::int64s({n * c * h / p, p, w / p, p}))});
  auto t = b.node("Transpose", {r}, perm({0, 2, 1, 3}));
  r = b.node("Reshape", {t, b.constant("s2", testing::int64s({n, c, h * w / (p * p), p * p}))});
  t = b.node("Transpose", {r}, perm({0, 3, 2, 1}));
  return b.node("Reshape", {t, b.constant("s3", testing::int64s({n * p * p, h * w / (p * p), c}))},
                {}, "unfold");
}

TEST(Canonicalize, AChainOfReshapesAndTransposesBecomesOneRearrange) {
  const Shape s = {1, 6, 4, 8};
  testing::GraphBuilder b;
  const auto x = b.input("x", s);
  b.output(b.node("Relu", {mobilevit_unfold(b, x, s)}, {}, "after"));
  const Tensor in = randn(s);
  const Tensor before = b.graph().run({in})[0];
  const passes::PassReport r = testing::apply_pass(b, passes::canonicalize, /*exact=*/true);
  EXPECT_TRUE(testing::has_note(r, "as one Rearrange")) << testing::notes_of(r);
  ASSERT_EQ(b.count("Rearrange"), 1) << b.graph().dump();
  EXPECT_EQ(b.count("Reshape") + b.count("Transpose"), 0) << b.graph().dump();
  for (const graph::Node& n : b.graph().nodes()) {
    if (n.op_type == "Rearrange") {
      EXPECT_EQ(n.domain, "refold");
      EXPECT_EQ(n.parts.size(), 5u);  // export writes these back
    }
  }
  EXPECT_FALSE(passes::canonicalize(b.graph()).changed);
  // From NHWC memory too: the same values, one copy (the Relu's input is dense, not a view).
  std::map<std::string, Tensor> seen;
  const Tensor after =
      b.graph().run({in.contiguous(MemoryFormat::ChannelsLast)},
                    [&](const graph::Node& node, const std::vector<Tensor>& inputs,
                        const std::vector<Tensor>&) { seen[node.name] = inputs[0]; })[0];
  EXPECT_TRUE(testing::all_close(after, before, testing::Tolerance::exact()));
  EXPECT_TRUE(seen.at("after").is_contiguous());
}

// The fold back, [N·ph·pw, nh·nw, C] → [N, C, H, W]: an image for the convs after it, written
// channels_last (the layout plan's Rule::Image), the same values.
TEST(Canonicalize, APatchFoldBecomesOneRearrangeWritingChannelsLast) {
  const std::int64_t n = 1, c = 6, h = 4, w = 8, p = 2;
  testing::GraphBuilder b;
  const auto x = b.input("tokens", {n * p * p, h * w / (p * p), c});
  auto perm = [](std::vector<std::int64_t> v) { return testing::attrs({{"perm", v}}); };
  auto r =
      b.node("Reshape", {x, b.constant("s1", testing::int64s({n, p * p, h * w / (p * p), c}))});
  auto t = b.node("Transpose", {r}, perm({0, 3, 2, 1}));
  r = b.node("Reshape", {t, b.constant("s2", testing::int64s({n * c * h / p, w / p, p, p}))});
  t = b.node("Transpose", {r}, perm({0, 2, 1, 3}));
  b.output(b.node("Reshape", {t, b.constant("s3", testing::int64s({n, c, h, w}))}, {}, "fold"));
  const passes::PassReport r_ = testing::apply_pass(b, passes::canonicalize, /*exact=*/true);
  ASSERT_EQ(b.count("Rearrange"), 1) << testing::notes_of(r_);
  const Tensor y = b.graph().run({randn({n * p * p, h * w / (p * p), c})})[0];
  EXPECT_TRUE(y.is_contiguous(MemoryFormat::ChannelsLast));
}

// Swin's window reverse, windows [N·nh·nw, wh·ww, C] → [N, H, W, C]: the channels stay the
// innermost dim, so y is written contiguous and a LayerNorm over C reads dense rows (written
// channels_last, its rows were strided: the reference LayerNorm took 10 ms of each of
// torchvision Swin-V2-T's first blocks).
TEST(Canonicalize, AWindowReverseKeepsTheChannelsInnermost) {
  const std::int64_t n = 1, c = 6, nh = 2, nw = 3, wh = 2, ww = 2;
  testing::GraphBuilder b;
  const auto x = b.input("windows", {n * nh * nw, wh * ww, c});
  auto perm = [](std::vector<std::int64_t> v) { return testing::attrs({{"perm", v}}); };
  auto r = b.node("Reshape", {x, b.constant("s1", testing::int64s({n, nh, nw, wh, ww, c}))});
  auto t = b.node("Transpose", {r}, perm({0, 1, 3, 2, 4, 5}));
  r = b.node("Reshape", {t, b.constant("s2", testing::int64s({n, nh * wh, nw * ww, c}))});
  t = b.node("Transpose", {r}, perm({0, 2, 1, 3}));
  b.output(b.node("Reshape", {t, b.constant("s3", testing::int64s({n, nw * ww, nh * wh, c}))}, {},
                  "reverse"));
  const Tensor in = randn({n * nh * nw, wh * ww, c});
  const Tensor before = b.graph().run({in})[0];
  const passes::PassReport r_ = testing::apply_pass(b, passes::canonicalize, /*exact=*/true);
  ASSERT_EQ(b.count("Rearrange"), 1) << testing::notes_of(r_);
  const Tensor y = b.graph().run({in})[0];
  EXPECT_TRUE(y.is_contiguous());
  EXPECT_TRUE(testing::all_close(y, before, testing::Tolerance::exact()));
}

// Tokens [N, L, C] read as an image [N, C, H, W] for a depthwise conv and back (PVT's and
// SegFormer's MixFFN, here with a residual Add of the tokens): each conversion is one Transpose and
// one reshape, and becomes a Rearrange. The image is planned channels_last — the tokens' own memory
// order — so neither conversion copies, and the conv runs NHWC (it ran NCHW behind two copies:
// PVT-v2-B0's depthwise convs took 18 of its 35 ms).
TEST(Canonicalize, TokensReadAsAnImageAndBackCopyNothing) {
  const std::int64_t n = 1, c = 8, h = 3, w = 4;
  testing::GraphBuilder b;
  const auto x = b.input("tokens", {n, h * w, c});
  auto perm = [](std::vector<std::int64_t> v) { return testing::attrs({{"perm", v}}); };
  auto t = b.node("Transpose", {x}, perm({0, 2, 1}));
  const auto image = b.node("Reshape", {t, b.constant("s1", testing::int64s({n, c, h, w}))});
  const auto y = b.conv(image, c, c, {3, 3}, {.name = "dw", .pads = {1, 1, 1, 1}, .groups = c});
  const auto seq = b.node("Reshape", {y, b.constant("s2", testing::int64s({n, c, h * w}))});
  b.output(b.node("Add", {b.node("Transpose", {seq}, perm({0, 2, 1})), x}, {}, "after"));
  const Tensor in = randn({n, h * w, c});
  const Tensor before = b.graph().run({in})[0];
  // Not bit for bit: the conv reads its input in another memory order after the pass, and with
  // AVX2 oneDNN runs another depthwise kernel for it (1 ulp apart on Zen 2).
  const passes::PassReport r = testing::apply_pass(b, passes::canonicalize);
  EXPECT_EQ(b.count("Rearrange"), 2) << testing::notes_of(r) << b.graph().dump();
  EXPECT_EQ(b.count("Reshape") + b.count("Transpose"), 0) << b.graph().dump();

  passes::optimize(b.graph());
  std::map<std::string, std::pair<Tensor, Tensor>> seen;  // node → (input 0, output 0)
  const Tensor after =
      b.graph().run({in}, [&](const graph::Node& node, const std::vector<Tensor>& inputs,
                              const std::vector<Tensor>& outputs) {
        seen[node.op_type] = {inputs[0], outputs[0]};
      })[0];
  EXPECT_TRUE(testing::all_close(after, before, testing::Tolerance::op_f32()));
  ASSERT_EQ(seen.count("Conv"), 1u) << b.graph().dump();
  const auto& [conv_in, conv_out] = seen.at("Conv");
  EXPECT_TRUE(conv_in.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(conv_in.shares_storage(in));  // the tokens themselves
  EXPECT_TRUE(seen.at("Add").first.shares_storage(conv_out));
}

TEST(Canonicalize, ChainsThatDoNotComposeOrNeedNoCopyStay) {
  {  // One Transpose between reshapes: it copies once already.
    testing::GraphBuilder b;
    const auto x = b.input("x", {2, 6, 4});
    const auto t =
        b.node("Transpose", {x}, testing::attrs({{"perm", std::vector<std::int64_t>{0, 2, 1}}}));
    b.output(b.node("Reshape", {t, b.constant("s", testing::int64s({2, 24}))}));
    testing::expect_left_alone(b, passes::canonicalize);
  }
  {  // A value inside the chain read twice: the chain breaks there, into two with one Transpose.
    testing::GraphBuilder b;
    const Shape s = {1, 6, 4, 8};
    const auto x = b.input("x", s);
    auto perm = [](std::vector<std::int64_t> v) { return testing::attrs({{"perm", v}}); };
    auto r = b.node("Reshape", {x, b.constant("s1", testing::int64s({12, 2, 4, 2}))});
    const auto t = b.node("Transpose", {r}, perm({0, 2, 1, 3}));
    b.output(b.node("Relu", {t}));
    r = b.node("Reshape", {t, b.constant("s2", testing::int64s({1, 6, 8, 4}))});
    const auto t2 = b.node("Transpose", {r}, perm({0, 3, 2, 1}));
    b.output(b.node("Reshape", {t2, b.constant("s3", testing::int64s({4, 8, 6, 1}))}));
    testing::apply_pass(b, passes::canonicalize, /*exact=*/true);
    EXPECT_EQ(b.count("Rearrange"), 0) << b.graph().dump();
  }
}

// Split attention as ResNeSt exports it: x [N, r·C, H, W] viewed as [N, r, C, H, W] (one Reshape
// read by both sums), the groups summed, pooled, turned into per-group weights by a 1×1 conv and
// a softmax over the groups, and the weighted groups summed. Both ReduceSums become GroupSum
// nodes; the Reshape of x is left with no reader for dead-code; the written file computes the
// same.
TEST(Canonicalize, SplitAttentionSumsBecomeGroupSums) {
  struct Case {
    const char* name;
    bool weights_first;    // Mul(a, x5) instead of Mul(x5, a)
    bool shared_constant;  // a is a constant [1, r, C, 1, 1], not computed per sample
  };
  for (const Case& c :
       {Case{"computed weights after", false, false}, Case{"computed weights before", true, false},
        Case{"a constant shared by every sample", false, true}}) {
    SCOPED_TRACE(c.name);
    GraphBuilder b;
    const std::string x = b.input("x", {2, 8, 5, 6});  // r = 2 groups of C = 4
    const std::string x5 =
        b.node("Reshape", {x, b.constant("split", int64s({2, 2, 4, 5, 6}))}, {}, "split");
    const std::string axis = b.constant("axis", int64s({1}));
    const std::string s =
        b.node("ReduceSum", {x5, axis}, attrs({{"keepdims", std::int64_t{0}}}), "groups_sum");
    std::string a;
    if (c.shared_constant) {
      a = b.constant("a", randn({1, 2, 4, 1, 1}));
    } else {
      const std::string logits = b.conv(b.node("GlobalAveragePool", {s}), 4, 8, 1);
      a = b.node("Softmax",
                 {b.node("Reshape", {logits, b.constant("to_groups", int64s({2, 2, 4, 1, 1}))})},
                 attrs({{"axis", std::int64_t{1}}}));
    }
    const std::string weighted =
        b.node("Mul", c.weights_first ? std::vector{a, x5} : std::vector{x5, a});
    const std::string y = b.node("ReduceSum", {weighted, axis},
                                 attrs({{"keepdims", std::int64_t{0}}}), "weighted_sum");
    b.output(y);
    if (c.shared_constant) b.output(b.node("Relu", {s}));
    const std::vector<Tensor> in = b.random_inputs();
    const std::vector<Tensor> before = b.graph().run(in);
    const passes::PassReport r = apply_pass(b, passes::canonicalize);
    EXPECT_TRUE(has_note(r, "of the 2 channel groups of 'x', weighted by")) << notes_of(r);
    EXPECT_EQ(b.count("GroupSum"), 2) << b.graph().dump();
    EXPECT_EQ(b.count("ReduceSum") + b.count("Mul"), 0) << b.graph().dump();
    const auto fused = b.graph().find_node("weighted_sum");
    ASSERT_TRUE(fused.has_value());
    const graph::Node& n = b.graph().nodes()[*fused];
    EXPECT_EQ(n.domain, "refold");
    EXPECT_EQ(n.inputs, (std::vector<std::string>{x, a}));
    EXPECT_EQ(n.attributes.get_int("groups", 0), 2);
    EXPECT_EQ(n.parts.size(), 3u);
    EXPECT_TRUE(b.graph().consumers(x5).empty());
    EXPECT_FALSE(passes::canonicalize(b.graph()).changed);
    EXPECT_TRUE(passes::eliminate_dead_code(b.graph()).changed);
    EXPECT_FALSE(b.graph().find_node("split").has_value());

    const auto written = testing::written_back(b.graph());
    EXPECT_EQ(std::count_if(written->nodes().begin(), written->nodes().end(),
                            [](const graph::Node& w) { return w.op_type == "ReduceSum"; }),
              2);
    const std::vector<Tensor> after = written->run(in);
    for (std::size_t i = 0; i < before.size(); ++i)
      EXPECT_TRUE(testing::model_close(after[i], before[i]));
    // The written file, read back, fuses again: its parts' names are taken by then.
    EXPECT_TRUE(passes::canonicalize(*written).changed);
    const std::vector<Tensor> again = written->run(in);
    for (std::size_t i = 0; i < before.size(); ++i)
      EXPECT_TRUE(testing::model_close(again[i], before[i]));
  }
}

// Not a sum over channel groups, or not one the node computes: the sum kept as [N, 1, C, H, W],
// over another axis, of a Reshape that splits W, weights that vary over H and W, or a product
// something else reads too.
TEST(Canonicalize, SumsThatAreNotOverChannelGroupsStay) {
  enum class Miss { KeepDims, OtherAxis, SplitsWidth, PerPixelWeights, ProductReadTwice };
  for (const Miss miss : {Miss::KeepDims, Miss::OtherAxis, Miss::SplitsWidth, Miss::PerPixelWeights,
                          Miss::ProductReadTwice}) {
    SCOPED_TRACE(static_cast<int>(miss));
    GraphBuilder b;
    const std::string x = b.input("x", {1, 8, 5, 6});
    const Shape split = miss == Miss::SplitsWidth ? Shape{1, 8, 5, 2, 3} : Shape{1, 2, 4, 5, 6};
    const std::string x5 = b.node("Reshape", {x, b.constant("split", int64s(split))});
    const std::string a = b.constant(
        "a", randn(miss == Miss::PerPixelWeights ? Shape{1, 2, 4, 5, 6} : Shape{1, 2, 4, 1, 1}));
    const std::string weighted = miss == Miss::SplitsWidth ? x5 : b.node("Mul", {x5, a});
    const std::int64_t keep = miss == Miss::KeepDims ? 1 : 0;
    b.output(b.node(
        "ReduceSum",
        {weighted, b.constant("axis", int64s({miss == Miss::OtherAxis ? std::int64_t{2} : 1}))},
        attrs({{"keepdims", keep}})));
    if (miss == Miss::ProductReadTwice) b.output(b.node("Relu", {weighted}));
    expect_left_alone(b, passes::canonicalize);
  }
}

}  // namespace
}  // namespace refold
