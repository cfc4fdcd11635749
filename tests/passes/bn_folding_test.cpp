// bn-folding: Conv → BatchNormalization, and ConvTranspose / Gemm / MatMul → a per-channel affine
// node (BN, Mul, Add, Sub, Div, Neg), become one layer where that is exact, and stay as they are
// (bit-identical, with a note) where it is not (docs/reliability.md F18–F23).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "passes/passes.h"
#include "refold/nn/utils.h"
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
using testing::kPad1;
using testing::notes_of;

// The pass on a graph it folds: the same outputs within the re-parameterization tolerance.
passes::PassReport fold_and_compare(GraphBuilder& b) {
  return apply_pass(b, passes::fold_batch_norms);
}

// The pass on a graph it must leave alone: same nodes, bit-identical outputs.
passes::PassReport expect_unchanged(GraphBuilder& b) {
  return expect_left_alone(b, passes::fold_batch_norms);
}

TEST(BnFolding, ConvBnReluBecomesConvRelu) {
  GraphBuilder b;
  const std::string x = b.input("x", {2, 3, 9, 9});
  const std::string c = b.conv(x, 3, 8, 3, {.pads = kPad1});
  const std::string conv_name = b.last_node();
  const std::string y = b.bn(c, 8);
  const std::string bn_name = b.last_node();
  b.output(b.relu(y));
  const auto constants_before = b.graph().constant_names();

  const passes::PassReport r = fold_and_compare(b);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.pass, "bn-folding");
  EXPECT_TRUE(has_note(r, "folded BatchNormalization '" + bn_name + "' into Conv '" + conv_name))
      << notes_of(r);
  EXPECT_EQ(b.count("Conv"), 1);
  EXPECT_EQ(b.count("BatchNormalization"), 0);
  EXPECT_EQ(b.count("Relu"), 1);

  const graph::Node& fused = b.graph().nodes()[0];
  EXPECT_EQ(fused.name, conv_name);
  EXPECT_EQ(fused.outputs, std::vector<std::string>{y});  // the BN's output name survives
  EXPECT_EQ(fused.origin, conv_name + " + " + bn_name);
  EXPECT_EQ(fused.source, -1);
  EXPECT_TRUE(fused.parts.empty());
  EXPECT_EQ(fused.attributes.get_ints("pads"), (std::vector<std::int64_t>{1, 1, 1, 1}));
  ASSERT_EQ(fused.inputs.size(), 3u);
  EXPECT_NE(fused.inputs[1].find("_bnfold.weight"), std::string::npos);
  EXPECT_NE(fused.inputs[2].find("_bnfold.bias"), std::string::npos);
  // The node's constants are the module's parameters; the old ones are gone.
  EXPECT_EQ(b.graph().constant_names().size(), 2u);
  for (const std::string& old : constants_before) EXPECT_FALSE(b.graph().is_constant(old)) << old;
}

TEST(BnFolding, ConvWithoutBiasGetsOne) {
  GraphBuilder b(2);
  const std::string x = b.input("x", {1, 4, 7, 7});
  b.output(b.bn(b.conv(x, 4, 6, 1, {.bias = false}), 6));
  const passes::PassReport r = fold_and_compare(b);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(b.graph().nodes().size(), 1u);
  EXPECT_EQ(b.graph().nodes()[0].inputs.size(), 3u);
}

struct ConvCase {
  std::int64_t in, out, groups;
  Size2d kernel, stride, dilation;
  std::vector<std::int64_t> pads;
};

TEST(BnFolding, GeometriesAndGroups) {
  const ConvCase cases[] = {
      {4, 8, 2, 3, 1, 1, {1, 1, 1, 1}},           {6, 6, 6, 3, 2, 1, {1, 1, 1, 1}},
      {4, 6, 1, {3, 5}, {2, 1}, 1, {0, 2, 1, 2}}, {4, 4, 1, 3, 1, 2, {2, 2, 2, 2}},
      {3, 5, 1, 2, 1, 1, {0, 0, 1, 1}},
  };
  std::uint64_t seed = 10;
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << "groups " << c.groups << " kernel " << c.kernel.h << "x" << c.kernel.w);
    GraphBuilder b(seed++);
    const std::string x = b.input("x", {2, c.in, 11, 10});
    b.output(b.bn(
        b.conv(x, c.in, c.out, c.kernel,
               {.stride = c.stride, .pads = c.pads, .dilation = c.dilation, .groups = c.groups}),
        c.out));
    EXPECT_TRUE(fold_and_compare(b).changed);
    EXPECT_EQ(b.count("BatchNormalization"), 0);
  }
}

// ConvTranspose weight [in, out/g, kh, kw]: the BN scale of output channel G·(out/g) + j goes
// along dim 1 within each group; the one-group rule (PyTorch's) is wrong for groups > 1.
TEST(BnFolding, ConvTransposeWithGroups) {
  for (std::int64_t groups : {1, 2, 3}) {
    SCOPED_TRACE(::testing::Message() << "groups " << groups);
    GraphBuilder b(static_cast<std::uint64_t>(20 + groups));
    const std::int64_t in = 2 * groups, out = 3 * groups;
    const std::string x = b.input("x", {1, in, 5, 6});
    const graph::Attributes a = attrs({{"kernel_shape", std::vector<std::int64_t>{3, 3}},
                                       {"strides", std::vector<std::int64_t>{2, 2}},
                                       {"pads", std::vector<std::int64_t>{1, 1, 1, 1}},
                                       {"output_padding", std::vector<std::int64_t>{1, 0}},
                                       {"group", groups}});
    const std::string w =
        b.constant("w", testing::uniform({in, out / groups, 3, 3}, 0.5, b.generator()));
    const std::string bias = b.constant("b", testing::uniform({out}, 0.5, b.generator()));
    const std::string t = b.node("ConvTranspose", {x, w, bias}, a);
    b.output(b.bn(t, out));
    EXPECT_TRUE(fold_and_compare(b).changed);
    ASSERT_EQ(b.graph().nodes().size(), 1u);
    EXPECT_EQ(b.graph().nodes()[0].op_type, "ConvTranspose");
    EXPECT_EQ(b.graph().nodes()[0].attributes.get_ints("output_padding"),
              (std::vector<std::int64_t>{1, 0}));
  }
}

TEST(BnFolding, ChannelsLastWeightsStayChannelsLast) {
  GraphBuilder b(12);
  const std::string x = b.input("x", {1, 4, 6, 6});
  b.output(b.bn(b.conv(x, 4, 6, 3, {.pads = kPad1, .groups = 2}), 6));
  nn::utils::convert_conv2d_weight_memory_format(b.graph(), MemoryFormat::ChannelsLast);
  EXPECT_TRUE(fold_and_compare(b).changed);
  const Tensor& w = b.graph().constant(b.graph().nodes()[0].inputs[1]);
  EXPECT_EQ(w.suggest_memory_format(), MemoryFormat::ChannelsLast);
}

TEST(BnFolding, FoldsEveryPairInAChain) {
  GraphBuilder b(3);
  const std::string x = b.input("x", {1, 3, 8, 8});
  std::string v = b.relu(b.bn(b.conv(x, 3, 4, 3, {.pads = kPad1}), 4));
  v = b.bn(b.conv(v, 4, 4, 1), 4);
  b.output(b.relu(b.bn(b.conv(v, 4, 2, 3, {.stride = 2}), 2)));
  const passes::PassReport r = fold_and_compare(b);
  EXPECT_EQ(b.count("BatchNormalization"), 0);
  EXPECT_EQ(b.count("Conv"), 3);
  EXPECT_EQ(b.count("Relu"), 2);
  EXPECT_EQ(r.notes.size(), 3u) << notes_of(r);
}

TEST(BnFolding, BnNotAfterAConvIsLeftAlone) {
  GraphBuilder b(4);
  const std::string x = b.input("x", {1, 3, 5, 5});
  b.output(b.bn(b.relu(x), 3));
  const passes::PassReport r = expect_unchanged(b);
  EXPECT_TRUE(r.notes.empty()) << notes_of(r);
}

// ---- declines ----

TEST(BnFolding, DeclinesWhenTheConvOutputHasAnotherReader) {
  GraphBuilder b(5);
  const std::string x = b.input("x", {1, 3, 6, 6});
  const std::string c = b.conv(x, 3, 3, 1);
  b.output(b.add(b.bn(c, 3), b.relu(c)));
  const passes::PassReport r = expect_unchanged(b);
  EXPECT_TRUE(has_note(r, "the conv output '" + c + "' has 2 consumers")) << notes_of(r);
}

TEST(BnFolding, DeclinesWhenTheConvOutputIsAGraphOutput) {
  GraphBuilder b(6);
  const std::string x = b.input("x", {1, 3, 6, 6});
  const std::string c = b.conv(x, 3, 3, 1);
  b.output(b.bn(c, 3));
  b.output(c);
  const passes::PassReport r = expect_unchanged(b);
  EXPECT_TRUE(has_note(r, "'" + c + "' is a graph output")) << notes_of(r);
}

TEST(BnFolding, DeclinesRuntimeWeights) {
  GraphBuilder b(7);
  const std::string x = b.input("x", {1, 3, 6, 6});
  const std::string w = b.input("w", {4, 3, 1, 1});
  b.output(
      b.bn(b.node("Conv", {x, w}, attrs({{"kernel_shape", std::vector<std::int64_t>{1, 1}}})), 4));
  const Tensor xv = b.random_input(0), wv = b.random_input(1);
  const Tensor before = b.run({xv, wv})[0];
  const passes::PassReport r = passes::fold_batch_norms(b.graph());
  EXPECT_FALSE(r.changed);
  EXPECT_TRUE(has_note(r, "weight 'w' is not a constant")) << notes_of(r);
  EXPECT_TRUE(testing::all_close(b.run({xv, wv})[0], before, testing::Tolerance::exact()));
}

TEST(BnFolding, DeclinesRuntimeBatchNormParameters) {
  GraphBuilder b(8);
  const std::string x = b.input("x", {1, 3, 6, 6});
  const std::string mean = b.input("mean", {3});
  const std::string c = b.conv(x, 3, 3, 1);
  b.output(b.node("BatchNormalization", {c, b.constant("g", testing::values({1, 2, 3}, {3})),
                                         b.constant("beta", testing::values({0, 1, 0}, {3})), mean,
                                         b.constant("v", testing::values({1, 1, 2}, {3}))}));
  const Tensor xv = b.random_input(0), mv = b.random_input(1);
  const Tensor before = b.run({xv, mv})[0];
  const passes::PassReport r = passes::fold_batch_norms(b.graph());
  EXPECT_FALSE(r.changed);
  EXPECT_TRUE(has_note(r, "input_mean 'mean' is not a constant")) << notes_of(r);
  EXPECT_TRUE(testing::all_close(b.run({xv, mv})[0], before, testing::Tolerance::exact()));
}

TEST(BnFolding, DeclinesTrainingMode) {
  GraphBuilder b(9);
  const std::string x = b.input("x", {1, 3, 6, 6});
  b.output(b.bn(b.conv(x, 3, 3, 1), 3));
  // training_mode=1 normalizes by the batch's own statistics: no constant scale to fold.
  b.graph().node(1).attributes.set("training_mode", std::int64_t{1});
  const passes::PassReport r = expect_unchanged(b);
  EXPECT_TRUE(has_note(r, "training mode")) << notes_of(r);
}

// F18/F19: a negative variance or var + eps == 0 would bake NaN/Inf into the weights. The
// importer rejects both; the statistics are edited afterwards (the module shares the tensor).
TEST(BnFolding, DeclinesBadVarianceNamingTheChannel) {
  struct Case {
    std::vector<float> var;
    double eps;
    std::string expected;
  };
  const Case cases[] = {{{1, 1, -0.5f}, 1e-5, "running_var[2] = -0.5 is negative"},
                        {{1, 0, 1}, 0, "running_var[1] + eps is 0"}};
  for (const Case& c : cases) {
    GraphBuilder b(11);
    const std::string x = b.input("x", {1, 3, 4, 4});
    b.output(b.bn_with(b.conv(x, 3, 3, 1), testing::values({1, 1, 1}, {3}),
                       testing::values({0, 0, 0}, {3}), testing::values({0, 0, 0}, {3}),
                       testing::values({1, 1, 1}, {3}), c.eps));
    Tensor var = b.graph().constant(b.graph().nodes()[1].inputs[4]);
    var.copy_(testing::values(c.var, {3}));
    const passes::PassReport r = passes::fold_batch_norms(b.graph());
    EXPECT_FALSE(r.changed);
    EXPECT_EQ(b.count("BatchNormalization"), 1);
    EXPECT_TRUE(has_note(r, c.expected)) << notes_of(r);
    b.graph().verify();
  }
}

// ---- ConvTranspose, Gemm, MatMul ----

using Counts = std::map<std::string, int>;

// ConvTranspose (groups 2, stride 2) with or without bias.
std::string conv_transpose(GraphBuilder& b, const std::string& x, std::int64_t in, std::int64_t out,
                           bool bias = true) {
  const graph::Attributes a = attrs({{"kernel_shape", std::vector<std::int64_t>{3, 3}},
                                     {"strides", std::vector<std::int64_t>{2, 2}},
                                     {"pads", std::vector<std::int64_t>{1, 1, 1, 1}},
                                     {"group", std::int64_t{2}}});
  std::vector<std::string> ins = {
      x, b.constant("w", testing::uniform({in, out / 2, 3, 3}, 0.5, b.generator()))};
  if (bias) ins.push_back(b.constant("b", testing::uniform({out}, 0.5, b.generator())));
  return b.node("ConvTranspose", ins, a);
}

std::string random_constant(GraphBuilder& b, const Shape& shape) {
  return b.constant("k", testing::uniform(shape, 1, b.generator()));
}

// A decoder's per-channel affine after the transposed conv, in the forms exporters write:
// x·s + t ([1, C, 1, 1] and [C, 1, 1]), t − x, x / s, −x. Every node folds in, one at a time.
TEST(BnFolding, ConvTransposeThenPerChannelArithmetic) {
  GraphBuilder b(40);
  const std::string x = b.input("x", {1, 4, 5, 6});
  std::string v = conv_transpose(b, x, 4, 6, false);
  v = b.mul(v, random_constant(b, {1, 6, 1, 1}));
  v = b.add(random_constant(b, {6, 1, 1}), v);
  v = b.node("Sub", {random_constant(b, {6, 1, 1}), v});
  v = b.node("Div", {v, b.constant("two", testing::values({2.0f}, {}))});
  b.output(b.relu(b.node("Neg", {v})));
  const passes::PassReport r = fold_and_compare(b);
  EXPECT_EQ(b.op_counts(), (Counts{{"ConvTranspose", 1}, {"Relu", 1}})) << notes_of(r);
  EXPECT_TRUE(has_note(r, "folded Mul 'Mul_1' into ConvTranspose 'ConvTranspose_1'"))
      << notes_of(r);
  EXPECT_TRUE(has_note(r, "folded Neg 'Neg_1' into ConvTranspose 'ConvTranspose_1'"));
}

// A constant that is not per channel (per row), and a Mul of two values, stay.
TEST(BnFolding, ConvTransposeThenSpatialConstantStays) {
  GraphBuilder b(41);
  const std::string x = b.input("x", {1, 4, 5, 6});
  b.output(b.mul(conv_transpose(b, x, 4, 6), random_constant(b, {1, 1, 9, 1})));
  const passes::PassReport r = expect_unchanged(b);
  EXPECT_TRUE(has_note(r, "the constant does not broadcast per channel")) << notes_of(r);
}

// nn.Linear → BatchNorm1d on [N, C]: Gemm (transB = 1, C) → BatchNormalization becomes one
// Gemm; also a Gemm without C, with transB = 0, alpha and beta, then Mul and Sub by [C].
TEST(BnFolding, GemmThenBatchNormAndArithmetic) {
  {
    GraphBuilder b(42);
    const std::string x = b.input("x", {3, 8});
    const std::string y = b.node("Gemm",
                                 {x, b.constant("w", testing::uniform({5, 8}, 0.5, b.generator())),
                                  b.constant("c", testing::uniform({5}, 0.5, b.generator()))},
                                 attrs({{"transB", std::int64_t{1}}}));
    b.output(b.bn(y, 5));
    const passes::PassReport r = fold_and_compare(b);
    EXPECT_EQ(b.op_counts(), (Counts{{"Gemm", 1}})) << notes_of(r);
    EXPECT_TRUE(has_note(r, "folded BatchNormalization 'BatchNormalization_1' into Gemm"));
  }
  {
    GraphBuilder b(43);
    const std::string x = b.input("x", {3, 8});
    const std::string y = b.node("Gemm",
                                 {x, b.constant("w", testing::uniform({8, 5}, 0.5, b.generator())),
                                  b.constant("c", testing::uniform({1, 5}, 0.5, b.generator()))},
                                 attrs({{"alpha", 0.5f}, {"beta", 2.0f}}));
    b.output(
        b.node("Sub", {b.mul(b.bn(y, 5), random_constant(b, {5})), random_constant(b, {1, 5})}));
    const passes::PassReport r = fold_and_compare(b);
    EXPECT_EQ(b.op_counts(), (Counts{{"Gemm", 1}})) << notes_of(r);
  }
}

// LeViT's Linear_BN as torch.onnx writes it: MatMul over tokens [B, N, C], Flatten(axis 2) to
// [B·N, C] (the features stay last), BatchNormalization (2-d: it normalizes the features), and
// Reshape back, with the shape as a constant and, for a dynamic batch, read by Shape from the
// MatMul's output (which the fold keeps). The BN becomes the MatMul's scaled weight and an Add of
// its shift.
TEST(BnFolding, LeViTLinearBatchNorm) {
  for (const bool dynamic : {false, true}) {
    SCOPED_TRACE(dynamic ? "dynamic batch" : "static");
    GraphBuilder b(44);
    const std::string x = b.input("x", {dynamic ? -1 : 2, 5, 8});
    const std::string y =
        b.node("MatMul", {x, b.constant("w", testing::uniform({8, 16}, 0.5, b.generator()))});
    const std::string flat = b.node("Flatten", {y}, attrs({{"axis", std::int64_t{2}}}));
    const std::string shape =
        dynamic ? b.node("Shape", {y}) : b.constant("shape", testing::int64s({2, 5, 16}));
    b.output(b.node("Reshape", {b.bn(flat, 16), shape}));
    const Tensor in = testing::uniform({2, 5, 8}, 1, b.generator());
    const Tensor before = b.run({in})[0];
    const passes::PassReport r = passes::fold_batch_norms(b.graph());
    b.graph().verify();
    EXPECT_TRUE(testing::model_close(b.run({in})[0], before));
    Counts expected = {{"MatMul", 1}, {"Add", 1}, {"Flatten", 1}, {"Reshape", 1}};
    if (dynamic) expected["Shape"] = 1;
    EXPECT_EQ(b.op_counts(), expected) << notes_of(r);
    EXPECT_TRUE(has_note(r, "into MatMul 'MatMul_1' and an Add of its shift")) << notes_of(r);
  }
}

// MaxxViT's layer scale after its attention's projection, as torch.onnx writes it: MatMul → Add
// (bias) → Reshape → Transpose (of the tokens) → Reshape → Mul by γ [C], with each Reshape's
// shape a Constant node written just before it, after the MatMul. The folded MatMul takes the
// MatMul's place, so the Reshapes it carries along need their Constants moved up before them.
TEST(BnFolding, ConstantNodesAfterTheLayerMoveUpWithTheChain) {
  GraphBuilder b(47);
  const std::string x = b.input("x", {1, 16, 8});
  const std::string y =
      b.node("Add", {b.node("MatMul", {x, random_constant(b, {8, 8})}), random_constant(b, {8})});
  const auto shape_node = [&](std::vector<std::int64_t> shape) {
    return b.node("Constant", {}, attrs({{"value", testing::int64s(shape)}}));
  };
  const std::string windows = b.node("Reshape", {y, shape_node({1, 4, 4, 8})});
  const std::string moved =
      b.node("Transpose", {windows}, attrs({{"perm", std::vector<std::int64_t>{0, 2, 1, 3}}}));
  const std::string tokens = b.node("Reshape", {moved, shape_node({1, 16, 8})});
  b.output(b.mul(tokens, random_constant(b, {8})));
  const Tensor in = testing::uniform({1, 16, 8}, 1, b.generator());
  const Tensor before = b.run({in})[0];
  const passes::PassReport r = passes::fold_batch_norms(b.graph());
  b.graph().verify();  // every node reads what is written before it
  EXPECT_TRUE(testing::model_close(b.run({in})[0], before));
  EXPECT_EQ(b.op_counts(),
            (Counts{{"MatMul", 1}, {"Add", 1}, {"Reshape", 2}, {"Transpose", 1}, {"Constant", 2}}))
      << notes_of(r);
}

// BatchNorm1d over a sequence after a Linear: `bn(linear(x).transpose(1, 2)).transpose(1, 2)`,
// the features moved to BN's axis 1 ([B, C, L]); also a per-feature constant [C, 1] there.
TEST(BnFolding, LinearThenTransposedBatchNorm) {
  GraphBuilder b(50);
  const std::string x = b.input("x", {2, 7, 8});
  const std::string y =
      b.node("MatMul", {x, b.constant("w", testing::uniform({8, 6}, 0.5, b.generator()))});
  const graph::Attributes swap = attrs({{"perm", std::vector<std::int64_t>{0, 2, 1}}});
  const std::string t = b.node("Transpose", {y}, swap);
  b.output(b.node("Transpose", {b.mul(b.bn(t, 6), random_constant(b, {6, 1}))}, swap));
  const passes::PassReport r = fold_and_compare(b);
  EXPECT_EQ(b.op_counts(), (Counts{{"MatMul", 1}, {"Add", 1}, {"Transpose", 2}})) << notes_of(r);
}

// A Linear with bias on tokens (MatMul → Add) then BN over the flattened tokens: the BN folds
// into the weight and the bias Add; a Mul after it folds there too. A MatMul then a Mul: the
// weight alone. A MatMul then its bias Add: nothing to fold, no note.
TEST(BnFolding, MatMulWithAndWithoutBias) {
  {
    GraphBuilder b(45);
    const std::string x = b.input("x", {10, 8});
    std::string y =
        b.node("MatMul", {x, b.constant("w", testing::uniform({8, 6}, 0.5, b.generator()))});
    y = b.add(y, random_constant(b, {6}));
    b.output(b.mul(b.bn(y, 6), random_constant(b, {1, 6})));
    const passes::PassReport r = fold_and_compare(b);
    EXPECT_EQ(b.op_counts(), (Counts{{"MatMul", 1}, {"Add", 1}})) << notes_of(r);
  }
  {
    GraphBuilder b(46);
    const std::string x = b.input("x", {3, 4, 8});
    const std::string y =
        b.node("MatMul", {x, b.constant("w", testing::uniform({8, 6}, 0.5, b.generator()))});
    b.output(b.mul(y, random_constant(b, {6})));
    fold_and_compare(b);
    EXPECT_EQ(b.op_counts(), (Counts{{"MatMul", 1}}));
  }
  {
    GraphBuilder b(47);
    const std::string x = b.input("x", {3, 8});
    const std::string y =
        b.node("MatMul", {x, b.constant("w", testing::uniform({8, 6}, 0.5, b.generator()))});
    b.output(b.add(y, random_constant(b, {6})));
    const passes::PassReport r = expect_unchanged(b);
    EXPECT_TRUE(r.notes.empty()) << notes_of(r);
  }
}

// A weight another MatMul reads too: the folded MatMul gets its own, the other keeps the
// original.
TEST(BnFolding, SharedMatMulWeightIsDuplicated) {
  GraphBuilder b(48);
  const std::string x = b.input("x", {4, 8});
  const std::string w = b.constant("w", testing::uniform({8, 6}, 0.5, b.generator()));
  const Tensor original = b.graph().constant(w).clone();
  b.output(b.node("Neg", {b.node("MatMul", {x, w})}));
  b.output(b.node("MatMul", {b.relu(x), w}));
  const passes::PassReport r = fold_and_compare(b);
  EXPECT_EQ(b.count("Neg"), 0) << notes_of(r);
  ASSERT_TRUE(b.graph().is_constant(w));
  EXPECT_TRUE(testing::all_close(b.graph().constant(w), original, testing::Tolerance::exact()));
  EXPECT_EQ(b.graph().nodes().back().inputs[1], w);
}

// Where the affine map is not along the features it stays: BatchNorm1d on the tokens [B, L, C]
// normalizes L (axis 1), a constant [L, 1] scales the tokens, a Reshape moves the features
// ([10, 16] → [5, 32]), and a MatMul whose weight is data (attention) is no candidate.
TEST(BnFolding, AffineNotAlongTheFeaturesStays) {
  struct Case {
    const char* what;
    const char* note;  // "" for no note
  };
  for (const Case& c :
       {Case{"BN over the tokens", "normalizes axis 1 of a 3-d value, not its axis 2"},
        Case{"per-token constant", "the constant does not broadcast per channel"},
        Case{"features moved", "Reshape 'Reshape_1' may move the features"},
        Case{"attention", ""}}) {
    SCOPED_TRACE(c.what);
    GraphBuilder b(49);
    const std::string what = c.what;
    if (what == "attention") {
      const std::string q = b.input("q", {2, 5, 8}), k = b.input("k", {2, 8, 5});
      b.output(b.mul(b.node("MatMul", {q, k}), b.constant("s", testing::values({0.5f}, {}))));
      const passes::PassReport r = expect_unchanged(b);
      EXPECT_TRUE(r.notes.empty()) << notes_of(r);
      continue;
    }
    const std::string x = b.input("x", what == "features moved" ? Shape{10, 8} : Shape{2, 16, 8});
    const std::string y =
        b.node("MatMul", {x, b.constant("w", testing::uniform({8, 16}, 0.5, b.generator()))});
    if (what == "BN over the tokens") b.output(b.bn(y, 16));
    if (what == "per-token constant") b.output(b.mul(y, random_constant(b, {16, 1})));
    if (what == "features moved")
      b.output(b.bn(b.node("Reshape", {y, b.constant("s", testing::int64s({5, 32}))}), 32));
    const passes::PassReport r = expect_unchanged(b);
    EXPECT_TRUE(has_note(r, c.note)) << notes_of(r);
  }
}

}  // namespace
}  // namespace refold
