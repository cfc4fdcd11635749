#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "passes/fused_chain.h"
#include "passes/layout_model.h"
#include "passes/passes.h"
#include "refold/passes/layout.h"
#include "testing/compare.h"
#include "testing/graph_builder.h"

namespace refold {
namespace {

using testing::attrs;
using testing::GraphBuilder;
using testing::int64s;
using testing::kPad1;
using testing::values;

// An NCHW-only op (accepts_channels_last() == false) that keeps the value 4-d, so a conv can
// follow it: an opset-11 Softmax over axis 1, which flattens [N, C·H·W] in NCHW order. (Not a
// Reshape: a reshape is a view where its readers read views, and a reshape to the same sizes
// then hands them the NHWC tensor itself, which no longer stands for an NCHW-only op.)
std::string nchw_only(GraphBuilder& b, const std::string& x, const std::string& name) {
  b.set_opset(11);
  const auto y = b.node("Softmax", {x}, attrs({{"axis", std::int64_t{1}}}), name);
  b.set_opset(17);
  return y;
}

// GroupNorm(2 groups) over a [1, 4, 6, 6] value, written as torch.onnx writes it before
// opset 18: Reshape → InstanceNormalization → Reshape.
std::string group_norm_between_reshapes(GraphBuilder& b, const std::string& x) {
  const auto r = b.node("Reshape", {x, b.constant("gn.groups", int64s({0, 2, -1}))}, {}, "gn.r");
  const auto n = b.node("InstanceNormalization",
                        {r, b.constant("gn.scale", values({0.5f, 2.0f}, {2})),
                         b.constant("gn.bias", values({0.25f, -1.0f}, {2}))},
                        {}, "gn");
  return b.node("Reshape", {n, b.constant("gn.back", int64s({1, 4, 6, 6}))}, {}, "gn.back");
}

// Reshape(x, middle) → Transpose(perm) → Reshape(·, out).
std::string patch_shuffle(GraphBuilder& b, const std::string& x, const Shape& middle,
                          const std::vector<std::int64_t>& perm, const Shape& out,
                          const std::string& name) {
  const auto r = b.node("Reshape", {x, b.constant(name + ".split", int64s(middle))});
  const auto t = b.node("Transpose", {r}, attrs({{"perm", perm}}), name);
  return b.node("Reshape", {t, b.constant(name + ".merge", int64s(out))});
}

struct Net {
  const char* name;
  std::function<void(GraphBuilder&)> build;
  Shape input;
};

// Small graphs covering each rule of the model. Shapes avoid C = 1 and H = W = 1, whose
// conversions are free (tested separately).
std::vector<Net> nets() {
  return {
      // The seed: conv → BN → ReLU → NCHW-only → conv.
      {"seed",
       [](GraphBuilder& b) {
         const auto x = b.input("x", {1, 3, 8, 8});
         auto v = b.conv(x, 3, 8, 3, {.name = "conv1", .pads = kPad1});
         v = b.node("Relu", {b.bn(v, 8)}, {}, "relu");
         v = nchw_only(b, v, "nchw");
         b.output(b.conv(v, 8, 4, 3, {.name = "conv2", .pads = kPad1}));
       },
       {1, 3, 8, 8}},
      // The brief's example: a conv on the NCHW input whose only reader is NCHW-only.
      {"lonely conv",
       [](GraphBuilder& b) {
         const auto x = b.input("x", {1, 3, 8, 8});
         b.output(nchw_only(b, b.conv(x, 3, 4, 3, {.name = "conv1", .pads = kPad1}), "nchw"));
       },
       {1, 3, 8, 8}},
      // A chain of convs: all channels_last, one permute at the first.
      {"chain",
       [](GraphBuilder& b) {
         const auto x = b.input("x", {1, 4, 6, 6});
         auto v = b.node("Relu", {b.conv(x, 4, 4, 3, {.name = "conv1", .pads = kPad1})}, {}, "r1");
         v = b.node("Relu", {b.conv(v, 4, 4, 3, {.name = "conv2", .pads = kPad1})}, {}, "r2");
         b.output(b.conv(v, 4, 4, 1, {.name = "conv3"}));
       },
       {1, 4, 6, 6}},
      // Residual Add, Concat (NHWC iff every input is), an NCHW-only tail.
      {"residual concat",
       [](GraphBuilder& b) {
         const auto x = b.input("x", {1, 4, 6, 6});
         const auto r1 =
             b.node("Relu", {b.conv(x, 4, 4, 3, {.name = "conv1", .pads = kPad1})}, {}, "r1");
         const auto a =
             b.node("Add", {b.conv(r1, 4, 4, 3, {.name = "conv2", .pads = kPad1}), r1}, {}, "add");
         const auto c3 = b.conv(a, 4, 4, 1, {.name = "conv3"});
         const graph::Attributes axis = attrs({{"axis", std::int64_t{1}}});
         const auto cat = b.node("Concat", {c3, x}, axis, "cat");
         b.output(nchw_only(b, cat, "nchw"));
       },
       {1, 4, 6, 6}},
      // A channels-last LayerNorm between Transposes (ConvNeXt): with NHWC convs around it
      // both Transposes are views (ops::transposed_format), so only the input permutes.
      // GroupNorm as exported before opset 18, which canonicalize makes one channels_last
      // GroupNormalization: all NHWC, one permute (the input).
      {"group norm between convs",
       [](GraphBuilder& b) {
         const auto x = b.input("x", {1, 4, 6, 6});
         b.output(b.conv(
             group_norm_between_reshapes(b, b.conv(x, 4, 4, 3, {.name = "conv1", .pads = kPad1})),
             4, 4, 1, {.name = "conv2"}));
         passes::canonicalize(b.graph());
       },
       {1, 4, 6, 6}},
      // MobileViT's patch unfold and fold (Reshape → Transpose → Reshape) around a conv, which
      // canonicalize makes PatchShuffles that keep NHWC: one permute (the input).
      {"patch unfold and fold between convs",
       [](GraphBuilder& b) {
         const auto x = b.input("x", {1, 4, 4, 6});
         const auto c1 = b.conv(x, 4, 4, 3, {.name = "conv1", .pads = kPad1});
         const auto u =
             patch_shuffle(b, c1, {1, 4, 2, 2, 2, 3}, {0, 1, 3, 5, 2, 4}, {1, 4, 4, 6}, "unfold");
         const auto c2 = b.conv(u, 4, 4, 1, {.name = "conv2"});
         const auto f =
             patch_shuffle(b, c2, {1, 4, 2, 2, 2, 3}, {0, 1, 4, 2, 5, 3}, {1, 4, 4, 6}, "fold");
         b.output(b.conv(f, 4, 4, 3, {.name = "conv3", .pads = kPad1}));
         passes::canonicalize(b.graph());
       },
       {1, 4, 4, 6}},
      {"layernorm between transposes",
       [](GraphBuilder& b) {
         const auto x = b.input("x", {1, 4, 6, 6});
         const auto c1 = b.conv(x, 4, 4, 3, {.name = "conv1", .pads = kPad1});
         const auto t1 = b.node("Transpose", {c1},
                                attrs({{"perm", std::vector<std::int64_t>{0, 2, 3, 1}}}), "t1");
         const auto ln =
             b.node("LayerNormalization",
                    {t1, b.constant("ln.scale", ones({4})), b.constant("ln.bias", zeros({4}))},
                    attrs({{"axis", std::int64_t{-1}}}), "ln");
         const auto t2 = b.node("Transpose", {ln},
                                attrs({{"perm", std::vector<std::int64_t>{0, 3, 1, 2}}}), "t2");
         b.output(b.conv(t2, 4, 4, 1, {.name = "conv2"}));
       },
       {1, 4, 6, 6}},
      // Two branches from the input; one goes NCHW-only before they meet.
      {"branches",
       [](GraphBuilder& b) {
         const auto x = b.input("x", {1, 4, 6, 6});
         const auto c1 = b.conv(x, 4, 4, 3, {.name = "conv1", .pads = kPad1});
         const auto n = nchw_only(b, b.conv(x, 4, 4, 3, {.name = "conv2", .pads = kPad1}), "nchw");
         const graph::Attributes axis = attrs({{"axis", std::int64_t{1}}});
         const auto cat = b.node("Concat", {c1, n}, axis, "cat");
         const auto c3 = b.conv(cat, 8, 4, 3, {.name = "conv3", .pads = kPad1});
         b.output(nchw_only(b, b.node("Sigmoid", {c3}, {}, "sig"), "tail"));
       },
       {1, 4, 6, 6}},
      // A conv reading an NCHW-only result, read twice more by NCHW-only ops.
      {"two nchw readers",
       [](GraphBuilder& b) {
         const auto x = b.input("x", {1, 4, 6, 6});
         const auto c1 = b.conv(x, 4, 4, 3, {.name = "conv1", .pads = kPad1});
         const auto n1 = nchw_only(b, c1, "n1");
         const auto n2 = nchw_only(b, c1, "n2");
         const auto c2 =
             b.conv(b.node("Add", {n1, n2}, {}, "add"), 4, 4, 3, {.name = "conv2", .pads = kPad1});
         b.output(b.node("Mul", {c2, c2}, {}, "sq"));
       },
       {1, 4, 6, 6}},
      // Pools, Pad, Resize and a channel Slice between convs, then a classifier head
      // (GlobalAveragePool's [N, C, 1, 1] converts for free; Flatten and Gemm are 2-d).
      {"ops zoo",
       [](GraphBuilder& b) {
         const auto x = b.input("x", {1, 3, 8, 8});
         const graph::Attributes pool = attrs({{"kernel_shape", std::vector<std::int64_t>{2, 2}},
                                               {"strides", std::vector<std::int64_t>{2, 2}}});
         auto v = b.node("MaxPool", {b.conv(x, 3, 6, 3, {.name = "conv1", .pads = kPad1})}, pool,
                         "pool");
         const auto pads = b.constant("pads", int64s({0, 0, 1, 1, 0, 0, 1, 1}));
         v = b.node("Pad", {v, pads}, {}, "pad");  // [1, 6, 6, 6]
         v = b.conv(v, 6, 6, 3, {.name = "conv2", .pads = kPad1});
         const auto scales = b.constant("scales", testing::values({1, 1, 2, 2}, {4}));
         v = b.node("Resize", {v, "", scales}, {}, "resize");  // [1, 6, 12, 12]
         const auto starts = b.constant("starts", int64s({0}));
         const auto ends = b.constant("ends", int64s({4}));
         const auto axes = b.constant("axes", int64s({1}));
         v = b.node("Slice", {v, starts, ends, axes}, {}, "slice");  // [1, 4, 12, 12]
         v = b.node("GlobalAveragePool", {b.conv(v, 4, 5, 3, {.name = "conv3", .pads = kPad1})}, {},
                    "gap");
         const graph::Attributes axis = attrs({{"axis", std::int64_t{1}}});
         v = b.node("Flatten", {v}, axis, "flatten");
         const auto w = b.constant("fc.w", testing::uniform({3, 5}, 0.5, b.generator()));
         b.output(b.node("Gemm", {v, w}, attrs({{"transB", std::int64_t{1}}}), "fc"));
       },
       {1, 3, 8, 8}},
      // Softmax over channels (opset 13: per axis, accepts channels_last) and an opset-11
      // Softmax (the 2-d coercion: NCHW-only).
      {"softmaxes",
       [](GraphBuilder& b) {
         const auto x = b.input("x", {1, 4, 6, 6});
         const graph::Attributes axis = attrs({{"axis", std::int64_t{1}}});
         auto v = b.node("Softmax", {b.conv(x, 4, 4, 3, {.name = "conv1", .pads = kPad1})}, axis,
                         "sm13");
         v = b.conv(v, 4, 4, 3, {.name = "conv2", .pads = kPad1});
         b.set_opset(11);
         v = b.node("Softmax", {v}, axis, "sm11");
         b.set_opset(17);
         b.output(b.conv(v, 4, 4, 1, {.name = "conv3"}));
       },
       {1, 4, 6, 6}},
      // DenseNet's Concat → BatchNormalization → Relu, fused into one ConcatChain node whose
      // inputs are the concat's and the chain's 1-d constants (which have no layout).
      {"concat_chain",
       [](GraphBuilder& b) {
         const auto x = b.input("x", {1, 4, 6, 6});
         const auto c1 = b.conv(x, 4, 4, 3, {.name = "conv1", .pads = kPad1});
         const auto c2 = b.conv(x, 4, 8, 1, {.name = "conv2"});
         const auto cat = b.node("Concat", {c1, c2, x}, attrs({{"axis", std::int64_t{1}}}), "cat");
         b.output(b.conv(b.node("Relu", {b.bn(cat, 16)}, {}, "relu"), 16, 4, 1, {.name = "conv3"}));
         (void)passes::fuse_activations(b.graph());
       },
       {1, 4, 6, 6}},
      // EfficientViT's cascaded heads: an attention output (NCHW: a Reshape back from tokens)
      // plus a conv's activation, then a conv, in either operand order (layout_operand: the
      // first's format); a fused chain Add → Relu whose operands differ (one permuted); a conv
      // with a fused residual in the other format (permuted).
      {"attention output meets a conv",
       [](GraphBuilder& b) {
         const auto x = b.input("x", {1, 4, 6, 6});
         const auto c1 = b.conv(x, 4, 4, 3, {.name = "conv1", .pads = kPad1});
         const auto tokens = b.node("Reshape", {c1, b.constant("s1", int64s({1, 4, 36}))});
         const auto back = b.node(
             "Reshape", {b.node("Sigmoid", {tokens}), b.constant("s2", int64s({1, 4, 6, 6}))});
         const auto a = b.node("Add", {back, c1}, {}, "add");
         const auto c2 = b.conv(a, 4, 4, 1, {.name = "conv2"});
         const auto s = b.node("Sub", {c1, back}, {}, "sub");
         const auto r = b.node("Relu", {b.node("Add", {back, s}, {}, "add2")}, {}, "relu");
         b.output(b.conv(b.node("Mul", {c2, r}, {}, "mul"), 4, 4, 1, {.name = "conv3"}));
         (void)passes::fuse_activations(b.graph());
         const auto& nodes = b.graph().nodes();
         EXPECT_TRUE(std::any_of(nodes.begin(), nodes.end(), [](const graph::Node& n) {
           return dynamic_cast<const passes::ElementwiseChain*>(n.module.get()) != nullptr;
         })) << b.graph().dump();
       },
       {1, 4, 6, 6}},
      // Attention's reshapes of NHWC convs into tokens: read as views where every reader reads
      // views (Transpose, MatMul) and the strides express the shape, permuted where a reader
      // does not (Relu) — the model's views_nhwc against the executor's views.
      {"attention reshapes read as views",
       [](GraphBuilder& b) {
         const auto x = b.input("x", {1, 4, 6, 6});
         auto tokens = [&](const std::string& conv, const std::vector<std::int64_t>& shape) {
           const auto c = b.conv(x, 4, 8, 1, {.name = conv});
           return b.node("Reshape", {c, b.constant(conv + ".shape", int64s(shape))});
         };
         const auto q = tokens("conv1", {1, 8, 36});
         const auto k = tokens("conv2", {1, 2, 4, 36});  // two heads
         const auto v = tokens("conv3", {1, 8, 36});
         const auto qt =
             b.node("Transpose", {q}, attrs({{"perm", std::vector<std::int64_t>{0, 2, 1}}}), "qt");
         const auto k8 = b.node("Reshape", {k, b.constant("k8", int64s({1, 8, 36}))});
         const auto scores = b.node("MatMul", {qt, k8}, {}, "scores");  // [1, 36, 36]
         const auto vr = b.node("Relu", {v}, {}, "vr");                 // reads no views
         b.output(b.node("MatMul", {vr, scores}, {}, "out"));
       },
       {1, 4, 6, 6}},
      // ConvTranspose follows the conv rule (its weight [C_in, C_out, k, k] suggests the
      // format too).
      {"deconv",
       [](GraphBuilder& b) {
         const auto x = b.input("x", {1, 4, 5, 5});
         const auto c1 =
             b.node("Relu", {b.conv(x, 4, 6, 3, {.name = "conv1", .pads = kPad1})}, {}, "relu");
         const auto w =
             b.constant("up.weight", testing::pytorch_init({6, 3, 2, 2}, 12, b.generator()));
         const graph::Attributes up = attrs({{"kernel_shape", std::vector<std::int64_t>{2, 2}},
                                             {"strides", std::vector<std::int64_t>{2, 2}}});
         const auto u = b.node("ConvTranspose", {c1, w}, up, "up");  // [1, 3, 10, 10]
         b.output(nchw_only(b, u, "nchw"));
       },
       {1, 4, 5, 5}},
  };
}

struct Measured {
  std::uint64_t permutes = 0;
  int nchw_convs = 0;
  std::vector<Tensor> outputs;
};

// Runs the graph once, counting permutes and the convs whose output is NCHW.
Measured measure(graph::Graph& g, const Tensor& in, const std::set<std::string>& convs) {
  Measured m;
  const Tensor feed = in.clone();
  reset_permute_count();
  m.outputs = g.run({feed}, [&](const graph::Node& node, const std::vector<Tensor>&,
                                const std::vector<Tensor>& outputs) {
    if (convs.count(node.name) != 0 &&
        outputs[0].suggest_memory_format() == MemoryFormat::Contiguous) {
      ++m.nchw_convs;
    }
  });
  m.permutes = permute_count();
  return m;
}

std::vector<std::string> conv_names(const graph::Graph& g) {
  std::vector<std::string> out;
  for (const graph::Node& n : g.nodes())
    if (n.op_type == "Conv" || n.op_type == "ConvTranspose") out.push_back(n.name);
  return out;
}

// The model against real runs, for every choice of weight formats; and the planner's choice
// against the brute-force minimum.
TEST(LayoutPlan, ModelMatchesRunsAndThePlanIsTheBruteForceMinimum) {
  for (const Net& net : nets()) {
    SCOPED_TRACE(net.name);
    GraphBuilder b;
    net.build(b);
    graph::Graph& g = b.graph();
    const std::vector<std::string> convs = conv_names(g);
    const std::set<std::string> conv_set(convs.begin(), convs.end());
    Generator gen(3);
    const Tensor in = randn(net.input, {}, gen);
    const Tensor reference = measure(g, in, conv_set).outputs[0];  // all weights NCHW

    int best = 1 << 30;
    for (std::uint32_t mask = 0; mask < (1u << convs.size()); ++mask) {
      std::set<std::string> nhwc;
      for (std::size_t k = 0; k < convs.size(); ++k)
        if ((mask >> k) & 1u) nhwc.insert(convs[k]);
      const passes::LayoutPlan predicted = passes::evaluate_layout(g, nhwc);
      passes::apply_layout_plan(g, predicted);
      const Measured m = measure(g, in, conv_set);
      SCOPED_TRACE(predicted.to_string());
      EXPECT_EQ(m.permutes, predicted.permutes.size());
      EXPECT_EQ(m.nchw_convs, predicted.nchw_convs);
      EXPECT_TRUE(testing::all_close(m.outputs[0], reference, testing::Tolerance::op_f32()));
      best = std::min(best, static_cast<int>(m.permutes) + m.nchw_convs);
    }
    const passes::LayoutPlan plan = passes::make_layout_plan(g);
    passes::apply_layout_plan(g, plan);
    const Measured m = measure(g, in, conv_set);
    EXPECT_EQ(static_cast<int>(m.permutes) + m.nchw_convs, best) << plan.to_string();
    EXPECT_EQ(plan.cost(), best) << plan.to_string();
  }
}

TEST(LayoutPlan, SeedGraphKeepsTheFirstConvNchwAndPermutesOnce) {
  GraphBuilder b;
  nets()[0].build(b);
  const passes::LayoutPlan plan = passes::make_layout_plan(b.graph());
  ASSERT_EQ(plan.permutes.size(), 1u) << plan.to_string();
  EXPECT_EQ(plan.permutes[0].value, "nchw_out");
  EXPECT_EQ(plan.permutes[0].node, "conv2");
  EXPECT_EQ(plan.permutes[0].to, MemoryFormat::ChannelsLast);
  EXPECT_EQ(plan.nchw_convs, 1);
  // The seed's own rule (every conv channels_last) pays 3: in, out at the NCHW-only op, in.
  const passes::LayoutPlan seed = passes::evaluate_layout(b.graph(), {"conv1", "conv2"});
  EXPECT_EQ(seed.permutes.size(), 3u);
  EXPECT_GT(seed.cost(), plan.cost());

  const std::string text = plan.to_string();
  EXPECT_NE(text.find("layout plan: 1 of 2 convs with channels_last weights, 1 permute, 1 conv "
                      "computing NCHW (cost 2)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("conv2: Conv  nchw_out NCHW→NHWC"), std::string::npos) << text;
  EXPECT_NE(text.find("permute nchw_out NCHW→NHWC at conv2"), std::string::npos) << text;
}

TEST(LayoutPlan, PassConvertsExactlyThePlannedWeightsAndIsIdempotent) {
  GraphBuilder b;
  nets()[0].build(b);
  const passes::PassReport report = passes::plan_layout(b.graph());
  EXPECT_TRUE(report.changed);
  ASSERT_EQ(report.notes.size(), 1u);
  EXPECT_NE(report.notes[0].find("layout plan:"), std::string::npos);
  EXPECT_TRUE(b.graph().constant("conv2.weight").is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_EQ(b.graph().constant("conv1.weight").suggest_memory_format(), MemoryFormat::Contiguous);
  EXPECT_FALSE(passes::plan_layout(b.graph()).changed);
}

// Declared shapes with C = 1 or H = W = 1 convert for free; the plan counts no permute there.
TEST(LayoutPlan, AmbiguousShapesConvertForFree) {
  GraphBuilder b;
  const auto x = b.input("x", {1, 4, 6, 6});
  const auto c1 = b.conv(x, 4, 1, 3, {.name = "conv1", .pads = kPad1});  // [1, 1, 6, 6]: C = 1
  graph::ValueInfo info;
  info.name = c1;
  info.shape = std::vector<graph::Dim>{{1, ""}, {1, ""}, {6, ""}, {6, ""}};
  b.graph().value_info.push_back(info);
  b.output(nchw_only(b, c1, "nchw"));
  Generator gen(5);
  const Tensor in = randn({1, 4, 6, 6}, {}, gen);
  const passes::LayoutPlan all = passes::evaluate_layout(b.graph(), {"conv1"});
  passes::apply_layout_plan(b.graph(), all);
  const Measured m = measure(b.graph(), in, {"conv1"});
  EXPECT_EQ(m.permutes, all.permutes.size()) << all.to_string();
  EXPECT_EQ(all.permutes.size(), 1u) << all.to_string();  // the input only
}

TEST(LayoutPlan, TransposesAroundAChannelsLastLayerNormAreViews) {
  for (const Net& net : nets()) {
    if (std::string(net.name) != "layernorm between transposes") continue;
    GraphBuilder b;
    net.build(b);
    const passes::LayoutPlan plan = passes::make_layout_plan(b.graph());
    EXPECT_EQ(plan.permutes.size(), 1u) << plan.to_string();  // the input only
    passes::apply_layout_plan(b.graph(), plan);
    std::map<std::string, const void*> data;
    b.graph().run({randn(net.input)}, [&](const graph::Node& node, const std::vector<Tensor>&,
                                          const std::vector<Tensor>& outputs) {
      data[node.name] = outputs[0].data_ptr();
    });
    EXPECT_EQ(data.at("t1"), data.at("conv1"));  // NHWC memory read as [N, H, W, C]
    EXPECT_EQ(data.at("t2"), data.at("ln"));     // [N, H, W, C] read as NCHW, channels_last
  }
}

// The GroupNorm written between Reshapes: the Reshapes write fresh NCHW tensors, so the best
// plan pays a permute or an NCHW conv around it (cost 2); as canonicalize's GroupNormalization
// it keeps the conv's NHWC (cost 1: the input's permute).
TEST(LayoutPlan, AGroupNormBetweenReshapesStaysChannelsLastOnceCanonical) {
  GraphBuilder b;
  const auto x = b.input("x", {1, 4, 6, 6});
  b.output(
      b.conv(group_norm_between_reshapes(b, b.conv(x, 4, 4, 3, {.name = "conv1", .pads = kPad1})),
             4, 4, 1, {.name = "conv2"}));
  EXPECT_EQ(passes::make_layout_plan(b.graph()).cost(), 2);
  passes::canonicalize(b.graph());
  const passes::LayoutPlan plan = passes::make_layout_plan(b.graph());
  EXPECT_EQ(plan.cost(), 1) << plan.to_string();
  ASSERT_EQ(plan.permutes.size(), 1u) << plan.to_string();
  EXPECT_EQ(plan.permutes[0].node, "conv1");
  EXPECT_NE(plan.to_string().find("gn: GroupNormalization  conv1_out NHWC"), std::string::npos)
      << plan.to_string();
}

TEST(LayoutPlan, PatchShufflesKeepChannelsLast) {
  for (const Net& net : nets()) {
    if (std::string(net.name) != "patch unfold and fold between convs") continue;
    GraphBuilder b;
    net.build(b);
    EXPECT_EQ(b.count("PatchShuffle"), 2) << b.graph().dump();
    const passes::LayoutPlan plan = passes::make_layout_plan(b.graph());
    EXPECT_EQ(plan.cost(), 1) << plan.to_string();  // the input's permute only
    EXPECT_NE(plan.to_string().find("unfold: PatchShuffle  conv1_out NHWC"), std::string::npos)
        << plan.to_string();
  }
}

// A region with more convs than the planner enumerates (12): the one-flip search from the
// seed's plan. A chain of 14 convs: everything channels_last, one permute at the first.
TEST(LayoutPlan, LargeRegionsAreSearchedFromTheSeedPlan) {
  GraphBuilder b;
  auto v = b.input("x", {1, 4, 6, 6});
  for (int i = 0; i < 14; ++i) {
    v = b.node("Relu", {b.conv(v, 4, 4, 3, {.name = "conv" + std::to_string(i), .pads = kPad1})},
               {}, "relu" + std::to_string(i));
  }
  b.output(nchw_only(b, v, "nchw"));  // one more permute at the end
  const passes::LayoutPlan plan = passes::make_layout_plan(b.graph());
  EXPECT_EQ(plan.channels_last_weights, 14) << plan.to_string();
  EXPECT_EQ(plan.permutes.size(), 2u) << plan.to_string();
  EXPECT_EQ(plan.cost(), 2);
  passes::apply_layout_plan(b.graph(), plan);
  Generator gen(4);
  const Measured m = measure(b.graph(), randn({1, 4, 6, 6}, {}, gen), {});
  EXPECT_EQ(m.permutes, 2u);
}

// Two conv nodes run by one module (a weight-tied net built in C++) get one format, where
// alone the first would stay NCHW and the second go channels_last.
TEST(LayoutPlan, ConvsSharingAWeightDecideTogether) {
  GraphBuilder b;
  const auto x = b.input("x", {1, 4, 6, 6});
  const auto c1 = b.conv(x, 4, 4, 3, {.name = "conv1", .pads = kPad1});
  const auto n = nchw_only(b, c1, "nchw");
  b.output(b.tied("conv1", b.node("Relu", {n}, {}, "relu"), "conv2"));
  const passes::LayoutPlan plan = passes::make_layout_plan(b.graph());
  ASSERT_EQ(plan.nodes.size(), 4u);
  EXPECT_EQ(plan.nodes[0].weights, plan.nodes[3].weights) << plan.to_string();
  // Jointly: NCHW costs 2 (two NCHW convs), NHWC costs 3 (in, out at the Softmax, in again).
  EXPECT_EQ(plan.cost(), 2) << plan.to_string();
}

// docs/reliability.md F29: sizes stay logical, so ops with an axis compute the same values whether
// their input arrives channels_last or not. Every conv channels_last vs every conv NCHW.
TEST(LayoutPlan, AxisOpsGiveTheSameValuesUnderAnyPlan) {
  struct AxisCase {
    const char* name;
    std::function<std::string(GraphBuilder&, const std::string&)> tail;
  };
  const std::vector<AxisCase> tails = {
      {"Concat axis 1",
       [](GraphBuilder& b, const std::string& v) {
         const auto other = b.conv("x", 3, 5, 1, {.name = "conv_b"});
         return b.node("Concat", {v, other}, attrs({{"axis", std::int64_t{1}}}), "cat");
       }},
      {"Concat axis -1",
       [](GraphBuilder& b, const std::string& v) {
         return b.node("Concat", {v, v}, attrs({{"axis", std::int64_t{-1}}}), "cat");
       }},
      {"Softmax axis 1",
       [](GraphBuilder& b, const std::string& v) {
         return b.node("Softmax", {v}, attrs({{"axis", std::int64_t{1}}}), "softmax");
       }},
      {"Softmax axis 3",
       [](GraphBuilder& b, const std::string& v) {
         return b.node("Softmax", {v}, attrs({{"axis", std::int64_t{3}}}), "softmax");
       }},
      {"Flatten",
       [](GraphBuilder& b, const std::string& v) {
         return b.node("Flatten", {v}, attrs({{"axis", std::int64_t{1}}}), "flatten");
       }},
      {"Reshape",
       [](GraphBuilder& b, const std::string& v) {
         const auto s = b.constant("s", int64s({1, 6, 2, 25}));
         return b.node("Reshape", {v, s}, {}, "reshape");
       }},
      {"Transpose",
       [](GraphBuilder& b, const std::string& v) {
         return b.node("Transpose", {v}, attrs({{"perm", std::vector<std::int64_t>{0, 2, 3, 1}}}),
                       "transpose");
       }},
  };
  for (const AxisCase& t : tails) {
    SCOPED_TRACE(t.name);
    GraphBuilder b;
    const auto x = b.input("x", {1, 3, 5, 5});
    const auto c =
        b.node("Relu", {b.conv(x, 3, 12, 3, {.name = "conv_a", .pads = kPad1})}, {}, "relu");
    const auto y = t.tail(b, c);
    // A conv after the axis op where the result is still 4-d with 12+ channels is not needed:
    // the tail's output is the graph output, returned in whatever format.
    b.output(y);
    Generator gen(11);
    const Tensor in = randn({1, 3, 5, 5}, {}, gen);
    const Tensor nchw = b.run({in})[0];
    std::set<std::string> all;
    for (const std::string& n : conv_names(b.graph())) all.insert(n);
    const passes::LayoutPlan plan = passes::evaluate_layout(b.graph(), all);
    passes::apply_layout_plan(b.graph(), plan);
    bool saw_nhwc = false;
    const std::vector<Tensor> nhwc =
        b.graph().run({in.clone()}, [&](const graph::Node& node, const std::vector<Tensor>& inputs,
                                        const std::vector<Tensor>&) {
          if (node.op_type != "Conv" && node.op_type != "Relu" && !inputs.empty() &&
              inputs[0].suggest_memory_format() == MemoryFormat::ChannelsLast) {
            saw_nhwc = true;
          }
        });
    EXPECT_TRUE(saw_nhwc) << "the axis op never saw a channels_last input";
    EXPECT_TRUE(testing::all_close(nhwc[0], nchw, testing::Tolerance::op_f32()));
  }
}

}  // namespace
}  // namespace refold
