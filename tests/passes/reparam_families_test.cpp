// Structural re-parameterization, hard cases: every known training-time block family (RepVGG,
// ACNet, DBB, MobileOne, QARepVGG, YOLO's RepConv, RepGhost, FastViT's RepMixer, RepViT's
// RepVggDw, ExpandNets' linear sequences), each written in the ways real code and exporters
// write it (branch order, Add nesting, a variadic Sum, Sub, constants in the sum, an affine
// after it, what comes before and after the block), run through the whole optimizer
// (passes::optimize less activation-fusion and layout, so the op counts stay plain ONNX). A linear
// region over one input must end as one Conv computing the same (docs/testing.md's
// re-parameterization tolerance); what is not linear, not exact, or would cost more multiply-adds
// when merged keeps its convs, and still computes the same.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "refold/passes/pipeline.h"
#include "testing/compare.h"
#include "testing/graph_builder.h"

namespace refold {
namespace {

using testing::attrs;
using testing::ConvSpec;
using testing::GraphBuilder;
using testing::kPad1;
using Counts = std::map<std::string, int>;

// ---- helpers ----

// The optimizer less activation-fusion and layout on the builder's graph: it must still verify
// and, on random inputs, compute what it computed before (model_close).
passes::PipelineReport optimize_and_compare(GraphBuilder& b) {
  const std::vector<Tensor> x = b.random_inputs();
  const std::vector<Tensor> before = b.run(x);
  passes::PipelineOptions options;
  options.disabled = {"activation-fusion", "layout"};
  passes::PipelineReport report = passes::optimize(b.graph(), options);
  b.graph().verify();
  const std::vector<Tensor> after = b.run(x);
  EXPECT_EQ(after.size(), before.size());
  for (std::size_t i = 0; i < std::min(after.size(), before.size()); ++i) {
    EXPECT_TRUE(testing::model_close(after[i], before[i])) << "output " << i << "\n"
                                                           << report.to_string(true) << "\n"
                                                           << b.graph().dump();
  }
  return report;
}

// Optimized, the graph holds exactly the ops `expected`.
void expect_optimized_to(GraphBuilder& b, const Counts& expected) {
  const passes::PipelineReport report = optimize_and_compare(b);
  EXPECT_EQ(b.op_counts(), expected) << report.to_string(true);
}

// Optimized, the graph keeps its Conv count and exactly `kept` of each op listed.
void expect_convs_kept(GraphBuilder& b, const Counts& kept) {
  const int convs = b.count("Conv");
  const passes::PipelineReport report = optimize_and_compare(b);
  EXPECT_EQ(b.count("Conv"), convs) << report.to_string(true);
  for (const auto& [op, n] : kept)
    EXPECT_EQ(b.count(op), n) << op << "\n" << report.to_string(true);
}

// Conv without bias → BatchNormalization.
std::string conv_bn(GraphBuilder& b, const std::string& x, std::int64_t in, std::int64_t out,
                    Size2d kernel, ConvSpec spec = {}) {
  spec.bias = false;
  return b.bn(b.conv(x, in, out, kernel, spec), out);
}

// Depthwise conv without bias → BatchNormalization.
std::string dw_bn(GraphBuilder& b, const std::string& x, std::int64_t c, Size2d kernel,
                  ConvSpec spec = {}) {
  spec.groups = c;
  return conv_bn(b, x, c, c, kernel, spec);
}

std::string sub(GraphBuilder& b, const std::string& x, const std::string& y) {
  return b.node("Sub", {x, y});
}
std::string divide(GraphBuilder& b, const std::string& x, const std::string& y) {
  return b.node("Div", {x, y});
}
// One variadic ONNX Sum.
std::string sum_node(GraphBuilder& b, const std::vector<std::string>& values) {
  return b.node("Sum", values);
}
// Add(v0, Add(v1, Add(v2, …))).
std::string right_nested(GraphBuilder& b, const std::vector<std::string>& values) {
  std::string acc = values.back();
  for (std::size_t i = values.size() - 1; i-- > 0;) acc = b.add(values[i], acc);
  return acc;
}

// A constant of `shape` holding `v` everywhere ({} is a scalar).
std::string filled(GraphBuilder& b, const std::string& name, float v, const Shape& shape = {}) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return b.constant(name,
                    testing::values(std::vector<float>(static_cast<std::size_t>(n), v), shape));
}
// A random constant of `shape` (a per-channel scale or bias: [1, C, 1, 1] or [C, 1, 1]).
std::string random_constant(GraphBuilder& b, const std::string& name, const Shape& shape) {
  return b.constant(name, testing::uniform(shape, 1, b.generator()));
}
// An ONNX Constant node holding the scalar `v` (what torch.onnx writes for a Python number).
std::string constant_node(GraphBuilder& b, float v) {
  return b.node("Constant", {}, attrs({{"value", testing::values({v}, {})}}));
}

std::string max_pool(GraphBuilder& b, const std::string& x) {
  return b.node("MaxPool", {x},
                attrs({{"kernel_shape", std::vector<std::int64_t>{3, 3}},
                       {"strides", std::vector<std::int64_t>{2, 2}},
                       {"pads", std::vector<std::int64_t>{1, 1, 1, 1}}}));
}

// Pad(x) with zeros, p on each side of H and W.
std::string zero_pad(GraphBuilder& b, const std::string& x, std::int64_t p) {
  return b.node("Pad", {x, b.constant("pads", testing::int64s({0, 0, p, p, 0, 0, p, p}))});
}

// SiLU as torch.onnx writes it below opset 22: y · Sigmoid(y).
std::string silu(GraphBuilder& b, const std::string& y) { return b.mul(y, b.sigmoid(y)); }

// RepVGG's three branches of x: BN(conv3×3), BN(conv1×1) and, when in == out at stride 1, BN(x).
struct RepVGGBranches {
  std::string dense, one, identity;
};
RepVGGBranches repvgg_branches(GraphBuilder& b, const std::string& x, std::int64_t in,
                               std::int64_t out, Size2d stride = 1, std::int64_t groups = 1) {
  RepVGGBranches r;
  r.dense = conv_bn(b, x, in, out, 3, {.stride = stride, .pads = kPad1, .groups = groups});
  r.one = conv_bn(b, x, in, out, 1, {.stride = stride, .groups = groups});
  if (in == out && stride == Size2d(1)) r.identity = b.bn(x, out);
  return r;
}

// ACNet's three branches: BN(3×3), BN(1×3 pads (0, 1)), BN(3×1 pads (1, 0)).
struct ACNetBranches {
  std::string square, hor, ver;
};
ACNetBranches acnet_branches(GraphBuilder& b, const std::string& x, std::int64_t in,
                             std::int64_t out, Size2d stride = 1, std::int64_t groups = 1) {
  return {
      conv_bn(b, x, in, out, 3, {.stride = stride, .pads = kPad1, .groups = groups}),
      conv_bn(b, x, in, out, {1, 3}, {.stride = stride, .pads = {0, 1, 0, 1}, .groups = groups}),
      conv_bn(b, x, in, out, {3, 1}, {.stride = stride, .pads = {1, 0, 1, 0}, .groups = groups})};
}

// DBB's four branches (DiverseBranchBlock, K×K with K = 2p + 1):
//   origin   BN(conv K×K)
//   one      BN(conv 1×1)
//   avg      conv 1×1 (no bias) → AveragePool 3×3 pad 1 (counting the padding) → BN
//   one_kxk  conv 1×1 (no bias) → conv K×K (no bias) → BN
struct DBBBranches {
  std::string origin, one, avg, one_kxk;
};
DBBBranches dbb_branches(GraphBuilder& b, const std::string& x, std::int64_t c, std::int64_t p = 1,
                         Size2d stride = 1, std::int64_t groups = 1) {
  const Size2d k = 2 * p + 1;
  const std::vector<std::int64_t> pads = ConvSpec::same(p);
  DBBBranches r;
  r.origin = conv_bn(b, x, c, c, k, {.stride = stride, .pads = pads, .groups = groups});
  r.one = conv_bn(b, x, c, c, 1, {.stride = stride, .groups = groups});
  r.avg =
      b.bn(b.avg_pool(b.conv(x, c, c, 1, {.groups = groups, .bias = false}), 3, stride, kPad1), c);
  r.one_kxk = conv_bn(b, b.conv(x, c, c, 1, {.groups = groups, .bias = false}), c, c, k,
                      {.stride = stride, .pads = pads, .groups = groups});
  return r;
}

// MobileOne's branches (timm MobileOneBlock, depthwise): k × BN(dw conv3×3), the scale branch
// BN(dw conv1×1), and the skip BN(x) when `identity`.
struct MobileOneBranches {
  std::vector<std::string> kxk;
  std::string scale, identity;
};
MobileOneBranches mobileone_branches(GraphBuilder& b, const std::string& x, std::int64_t c, int k,
                                     Size2d stride = 1, bool identity = true) {
  MobileOneBranches r;
  if (identity) r.identity = b.bn(x, c);
  r.scale = dw_bn(b, x, c, 1, {.stride = stride});
  for (int i = 0; i < k; ++i) r.kxk.push_back(dw_bn(b, x, c, 3, {.stride = stride, .pads = kPad1}));
  return r;
}
// timm's MobileOneBlock.forward over the branches: `scale_out + identity_out`, then
// `out += conv(x)` per K×K branch.
std::string mobileone_timm_sum(GraphBuilder& b, const MobileOneBranches& r,
                               const std::string& missing_identity) {
  std::string out = b.add(r.scale, r.identity.empty() ? missing_identity : r.identity);
  for (const std::string& v : r.kxk) out = b.add(out, v);
  return out;
}

// ---- RepVGG ----

// Official RepVGG: `relu(rbr_dense(x) + rbr_1x1(x) + id_out)`, exported with its BNs unfolded.
TEST(ReparamFamilies, RepVGGLeftNested) {
  GraphBuilder b(101);
  const std::string x = b.input("x", {2, 8, 10, 10});
  const RepVGGBranches r = repvgg_branches(b, x, 8, 8);
  b.output(b.relu(b.sum({r.dense, r.one, r.identity})));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// `dense + (one + identity)`: code that sums the cheap branches first.
TEST(ReparamFamilies, RepVGGRightNested) {
  GraphBuilder b(102);
  const std::string x = b.input("x", {1, 6, 9, 9});
  const RepVGGBranches r = repvgg_branches(b, x, 6, 6);
  b.output(b.relu(right_nested(b, {r.dense, r.one, r.identity})));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// timm's RepVggBlock: `x = conv_1x1(x) + conv_kxk(x); x += identity`.
TEST(ReparamFamilies, RepVGGTimmOrder) {
  GraphBuilder b(103);
  const std::string x = b.input("x", {1, 8, 12, 12});
  const RepVGGBranches r = repvgg_branches(b, x, 8, 8);
  b.output(b.relu(b.sum({r.one, r.dense, r.identity})));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// A hand-written `id_out + dense + one`, the skip first.
TEST(ReparamFamilies, RepVGGIdentityFirst) {
  GraphBuilder b(104);
  const std::string x = b.input("x", {1, 4, 7, 8});
  const RepVGGBranches r = repvgg_branches(b, x, 4, 4);
  b.output(b.relu(b.sum({r.identity, r.dense, r.one})));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// Keras `layers.Add()([dense, one, identity])` through tf2onnx: one variadic Sum.
TEST(ReparamFamilies, RepVGGVariadicSum) {
  GraphBuilder b(105);
  const std::string x = b.input("x", {2, 8, 9, 10});
  const RepVGGBranches r = repvgg_branches(b, x, 8, 8);
  b.output(b.relu(sum_node(b, {r.dense, r.one, r.identity})));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// `(dense + identity) - (-1.0 * one)`: a branch flipped by a scalar and subtracted.
TEST(ReparamFamilies, RepVGGSubOfNegatedBranch) {
  GraphBuilder b(106);
  const std::string x = b.input("x", {1, 6, 10, 11});
  const RepVGGBranches r = repvgg_branches(b, x, 6, 6);
  const std::string negated = b.mul(filled(b, "minus_one", -1.0f), r.one);
  b.output(b.relu(sub(b, b.add(r.dense, r.identity), negated)));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// `out = 0; for branch in branches: out = out + branch(x)`: torch traces `0 + t` as Add(t, 0).
TEST(ReparamFamilies, RepVGGSumFromZero) {
  GraphBuilder b(107);
  const std::string x = b.input("x", {1, 8, 8, 8});
  const RepVGGBranches r = repvgg_branches(b, x, 8, 8);
  std::string out = b.add(r.dense, filled(b, "zero", 0.0f));
  out = b.add(out, r.one);
  b.output(b.relu(b.add(out, r.identity)));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// A learnable bias added after the sum: `relu(dense + one + identity + self.bias)`, [1, C, 1, 1].
TEST(ReparamFamilies, RepVGGPlusChannelBiasAfterSum) {
  GraphBuilder b(108);
  const std::string x = b.input("x", {2, 6, 9, 8});
  const RepVGGBranches r = repvgg_branches(b, x, 6, 6);
  const std::string bias = random_constant(b, "bias", {1, 6, 1, 1});
  b.output(b.relu(b.add(b.sum({r.dense, r.one, r.identity}), bias)));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// The bias in the middle of the sum, shaped [C, 1, 1] (an nn.Parameter(torch.zeros(C, 1, 1))):
// `dense + bias + (one + identity)`.
TEST(ReparamFamilies, RepVGGChannelBiasInsideSum) {
  GraphBuilder b(109);
  const std::string x = b.input("x", {1, 8, 11, 11});
  const RepVGGBranches r = repvgg_branches(b, x, 8, 8);
  const std::string bias = random_constant(b, "bias", {8, 1, 1});
  b.output(b.relu(b.add(b.add(r.dense, bias), b.add(r.one, r.identity))));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// A linear stem (conv + BN, act=Identity) feeding the block: the block's input has three
// readers, and the stem conv must stay a conv of its own.
TEST(ReparamFamilies, RepVGGAfterConvWithoutActivation) {
  GraphBuilder b(110);
  const std::string x = b.input("x", {1, 4, 10, 10});
  const std::string h = conv_bn(b, x, 4, 8, 3, {.pads = kPad1});
  const RepVGGBranches r = repvgg_branches(b, h, 8, 8);
  b.output(b.relu(b.sum({r.dense, r.one, r.identity})));
  expect_optimized_to(b, {{"Conv", 2}, {"Relu", 1}});
}

// A ResNet-style stem's MaxPool 3×3 stride 2 in front of the block.
TEST(ReparamFamilies, RepVGGAfterMaxPool) {
  GraphBuilder b(111);
  const std::string x = b.input("x", {1, 6, 14, 13});
  const std::string h = max_pool(b, x);
  const RepVGGBranches r = repvgg_branches(b, h, 6, 6);
  b.output(b.relu(b.sum({r.dense, r.one, r.identity})));
  expect_optimized_to(b, {{"Conv", 1}, {"MaxPool", 1}, {"Relu", 1}});
}

// The last block of a feature extractor without activation (act=Identity): the sum is the
// graph output.
TEST(ReparamFamilies, RepVGGSumIsGraphOutput) {
  GraphBuilder b(112);
  const std::string x = b.input("x", {1, 8, 7, 7});
  const RepVGGBranches r = repvgg_branches(b, x, 8, 8);
  b.output(b.sum({r.dense, r.one, r.identity}));
  expect_optimized_to(b, {{"Conv", 1}});
}

// A neck that taps the pre-activation features as well: the sum is a graph output and read by
// the ReLU.
TEST(ReparamFamilies, RepVGGSumIsGraphOutputAndRead) {
  GraphBuilder b(113);
  const std::string x = b.input("x", {1, 8, 10, 9});
  const RepVGGBranches r = repvgg_branches(b, x, 8, 8);
  const std::string s = b.sum({r.dense, r.one, r.identity});
  b.output(s);
  b.output(b.relu(s));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// RepVGG-A/B's grouped layers (groups 2, `optional_groupwise_layers`).
TEST(ReparamFamilies, RepVGGGrouped) {
  GraphBuilder b(114);
  const std::string x = b.input("x", {2, 8, 9, 9});
  const RepVGGBranches r = repvgg_branches(b, x, 8, 8, 1, 2);
  b.output(b.relu(b.sum({r.dense, r.one, r.identity})));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// A depthwise RepVGG block (groups = channels), as in RepVGG-style MobileNet stages.
TEST(ReparamFamilies, RepVGGDepthwise) {
  GraphBuilder b(115);
  const std::string x = b.input("x", {1, 8, 10, 10});
  const RepVGGBranches r = repvgg_branches(b, x, 8, 8, 1, 8);
  b.output(b.relu(b.sum({r.dense, r.one, r.identity})));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// The first block of a stage: stride 2, in ≠ out, no identity; odd and even sizes.
TEST(ReparamFamilies, RepVGGStride2) {
  for (std::int64_t size : {11, 12}) {
    SCOPED_TRACE(::testing::Message() << "size " << size);
    GraphBuilder b(static_cast<std::uint64_t>(116 + size));
    const std::string x = b.input("x", {1, 4, size, size - 2});
    const RepVGGBranches r = repvgg_branches(b, x, 4, 8, 2);
    b.output(b.relu(b.add(r.dense, r.one)));
    expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
  }
}

// A dilated RepVGG block (segmentation backbones): 3×3 dilation 2 pads 2 + 1×1 + identity.
TEST(ReparamFamilies, RepVGGDilated) {
  GraphBuilder b(117);
  const std::string x = b.input("x", {1, 6, 11, 12});
  const std::string dense = conv_bn(b, x, 6, 6, 3, {.pads = ConvSpec::same(2), .dilation = 2});
  const std::string one = conv_bn(b, x, 6, 6, 1);
  b.output(b.relu(b.sum({dense, one, b.bn(x, 6)})));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// A per-channel layer scale after the sum (`(dense + one + identity) * self.gamma`,
// gamma [1, C, 1, 1]) before the activation.
TEST(ReparamFamilies, RepVGGLayerScaleAfterSum) {
  GraphBuilder b(118);
  const std::string x = b.input("x", {2, 6, 8, 9});
  const RepVGGBranches r = repvgg_branches(b, x, 6, 6);
  const std::string gamma = random_constant(b, "gamma", {1, 6, 1, 1});
  b.output(b.relu(b.mul(b.sum({r.dense, r.one, r.identity}), gamma)));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// ReZero-style `identity + alpha * (dense + one)` with a one-element alpha ([1]).
TEST(ReparamFamilies, RepVGGScalarScaledBranches) {
  GraphBuilder b(119);
  const std::string x = b.input("x", {1, 8, 9, 12});
  const RepVGGBranches r = repvgg_branches(b, x, 8, 8);
  const std::string alpha = filled(b, "alpha", 0.37f, {1});
  b.output(b.relu(b.add(r.identity, b.mul(alpha, b.add(r.dense, r.one)))));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// Branches averaged: `(dense + one + identity) / 3`, a scalar Div.
TEST(ReparamFamilies, RepVGGAveragedBranches) {
  GraphBuilder b(120);
  const std::string x = b.input("x", {1, 4, 10, 7});
  const RepVGGBranches r = repvgg_branches(b, x, 4, 4);
  b.output(b.relu(divide(b, b.sum({r.dense, r.one, r.identity}), filled(b, "three", 3.0f))));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// timm's `padding='same'` for a dynamic pad: F.pad(x) with zeros, then the 3×3 with pads 0.
TEST(ReparamFamilies, RepVGGDensePaddedByPadNode) {
  GraphBuilder b(121);
  const std::string x = b.input("x", {1, 6, 9, 10});
  const std::string dense = conv_bn(b, zero_pad(b, x, 1), 6, 6, 3);
  const std::string one = conv_bn(b, x, 6, 6, 1);
  b.output(b.relu(b.sum({dense, one, b.bn(x, 6)})));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// A RepVGG stage: a stride-2 block, then two blocks with identity.
TEST(ReparamFamilies, RepVGGStage) {
  GraphBuilder b(122);
  const std::string x = b.input("x", {1, 4, 12, 12});
  RepVGGBranches r = repvgg_branches(b, x, 4, 8, 2);
  std::string v = b.relu(b.add(r.dense, r.one));
  for (int i = 0; i < 2; ++i) {
    r = repvgg_branches(b, v, 8, 8);
    v = b.relu(b.sum({r.dense, r.one, r.identity}));
  }
  b.output(v);
  expect_optimized_to(b, {{"Conv", 3}, {"Relu", 3}});
}

// ---- ACNet ----

// ACBlock: `square + vertical + horizontal`, each conv with its BN.
TEST(ReparamFamilies, ACNetLeftNested) {
  GraphBuilder b(201);
  const std::string x = b.input("x", {2, 4, 8, 7});
  const ACNetBranches r = acnet_branches(b, x, 4, 6);
  b.output(b.relu(b.sum({r.square, r.ver, r.hor})));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// The asymmetric branches summed first: `ver + (hor + square)`.
TEST(ReparamFamilies, ACNetRightNestedPermuted) {
  GraphBuilder b(202);
  const std::string x = b.input("x", {1, 6, 10, 9});
  const ACNetBranches r = acnet_branches(b, x, 6, 6);
  b.output(b.relu(right_nested(b, {r.ver, r.hor, r.square})));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// Keras `layers.Add()` of the three branches through tf2onnx: one variadic Sum.
TEST(ReparamFamilies, ACNetVariadicSum) {
  GraphBuilder b(203);
  const std::string x = b.input("x", {1, 4, 9, 12});
  const ACNetBranches r = acnet_branches(b, x, 4, 8);
  b.output(b.relu(sum_node(b, {r.hor, r.square, r.ver})));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// ACBlock as a downsampling layer: stride 2 on every branch; odd and even sizes.
TEST(ReparamFamilies, ACNetStride2) {
  for (std::int64_t size : {11, 12}) {
    SCOPED_TRACE(::testing::Message() << "size " << size);
    GraphBuilder b(static_cast<std::uint64_t>(204 + size));
    const std::string x = b.input("x", {1, 4, size, 9});
    const ACNetBranches r = acnet_branches(b, x, 4, 8, 2);
    b.output(b.relu(b.sum({r.square, r.ver, r.hor})));
    expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
  }
}

// ACBlock with groups = channels (ACNet applied to MobileNet's depthwise convs).
TEST(ReparamFamilies, ACNetDepthwise) {
  GraphBuilder b(205);
  const std::string x = b.input("x", {1, 8, 9, 9});
  const ACNetBranches r = acnet_branches(b, x, 8, 8, 1, 8);
  b.output(b.relu(b.sum({r.square, r.ver, r.hor})));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// ACBlock with `use_last_bn`: a BN after the sum as well.
TEST(ReparamFamilies, ACNetLastBN) {
  GraphBuilder b(206);
  const std::string x = b.input("x", {2, 6, 8, 8});
  const ACNetBranches r = acnet_branches(b, x, 6, 6);
  b.output(b.relu(b.bn(b.sum({r.square, r.ver, r.hor}), 6)));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// An ACBlock right after a conv without activation: the stem conv stays its own conv.
TEST(ReparamFamilies, ACNetAfterConvWithoutActivation) {
  GraphBuilder b(207);
  const std::string x = b.input("x", {1, 3, 10, 11});
  const std::string h = conv_bn(b, x, 3, 6, 3, {.pads = kPad1});
  const ACNetBranches r = acnet_branches(b, h, 6, 6);
  b.output(b.relu(b.sum({r.square, r.ver, r.hor})));
  expect_optimized_to(b, {{"Conv", 2}, {"Relu", 1}});
}

// ---- DBB ----

// DiverseBranchBlock.forward: `out = dbb_origin(x); out += dbb_1x1(x); out += dbb_avg(x);
// out += dbb_1x1_kxk(x)`.
TEST(ReparamFamilies, DBBLeftNested) {
  GraphBuilder b(301);
  const std::string x = b.input("x", {2, 6, 9, 9});
  const DBBBranches r = dbb_branches(b, x, 6);
  b.output(b.relu(b.sum({r.origin, r.one, r.avg, r.one_kxk})));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// The same branches summed right to left, in another order: `avg + (one_kxk + (origin + one))`.
TEST(ReparamFamilies, DBBRightNestedPermuted) {
  GraphBuilder b(302);
  const std::string x = b.input("x", {1, 4, 10, 10});
  const DBBBranches r = dbb_branches(b, x, 4);
  b.output(b.relu(right_nested(b, {r.avg, r.one_kxk, r.origin, r.one})));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// A Keras port summing the four branches with one `layers.Add()`: a variadic Sum.
TEST(ReparamFamilies, DBBVariadicSum) {
  GraphBuilder b(303);
  const std::string x = b.input("x", {1, 8, 8, 11});
  const DBBBranches r = dbb_branches(b, x, 8);
  b.output(b.relu(sum_node(b, {r.one_kxk, r.origin, r.avg, r.one})));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// DBB with groups 2 (its ResNeXt-style use).
TEST(ReparamFamilies, DBBGrouped) {
  GraphBuilder b(304);
  const std::string x = b.input("x", {1, 8, 9, 10});
  const DBBBranches r = dbb_branches(b, x, 8, 1, 1, 2);
  b.output(b.relu(b.sum({r.origin, r.one, r.avg, r.one_kxk})));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// DBB around a 5×5 (kernel_size=5): the 3×3 pool centred inside the 5×5.
TEST(ReparamFamilies, DBBKernel5) {
  GraphBuilder b(305);
  const std::string x = b.input("x", {1, 4, 11, 12});
  const DBBBranches r = dbb_branches(b, x, 4, 2);
  b.output(b.relu(b.sum({r.origin, r.one, r.avg, r.one_kxk})));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// DBB as a downsampling layer: stride 2 on the K×K, the 1×1, the pool and the 1×1 → K×K's K×K;
// odd and even sizes.
TEST(ReparamFamilies, DBBStride2) {
  for (std::int64_t size : {9, 10}) {
    SCOPED_TRACE(::testing::Message() << "size " << size);
    GraphBuilder b(static_cast<std::uint64_t>(306 + size));
    const std::string x = b.input("x", {1, 6, size, size});
    const DBBBranches r = dbb_branches(b, x, 6, 1, 2);
    b.output(b.relu(b.sum({r.origin, r.one, r.avg, r.one_kxk})));
    expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
  }
}

// A DBB after a MaxPool (DBB-ResNet's first stage).
TEST(ReparamFamilies, DBBAfterMaxPool) {
  GraphBuilder b(307);
  const std::string x = b.input("x", {1, 6, 16, 15});
  const DBBBranches r = dbb_branches(b, max_pool(b, x), 6);
  b.output(b.relu(b.sum({r.origin, r.one, r.avg, r.one_kxk})));
  expect_optimized_to(b, {{"Conv", 1}, {"MaxPool", 1}, {"Relu", 1}});
}

// A DBB right after a conv without activation: the stem conv stays its own conv.
TEST(ReparamFamilies, DBBAfterConvWithoutActivation) {
  GraphBuilder b(308);
  const std::string x = b.input("x", {1, 3, 9, 9});
  const DBBBranches r = dbb_branches(b, conv_bn(b, x, 3, 6, 3, {.pads = kPad1}), 6);
  b.output(b.relu(b.sum({r.origin, r.one, r.avg, r.one_kxk})));
  expect_optimized_to(b, {{"Conv", 2}, {"Relu", 1}});
}

// ---- DBB as its authors wrote it: BNAndPadLayer ----

// What DBB's BNAndPadLayer pads with: the BN's output for a zero input,
// `bn.bias - bn.running_mean * bn.weight / torch.sqrt(bn.running_var + bn.eps)`, in float32 as
// PyTorch computes it — so it may differ from the region's constant part in the last bits, as
// in a real export.
std::vector<float> bn_pad_values(const GraphBuilder& b, const std::string& bn_out) {
  const graph::Graph& g = b.graph();
  const graph::Node& n = g.nodes()[*g.producer(bn_out)];
  const std::vector<float> gamma = g.constant(n.inputs[1]).to_vector(),
                           beta = g.constant(n.inputs[2]).to_vector(),
                           mean = g.constant(n.inputs[3]).to_vector(),
                           var = g.constant(n.inputs[4]).to_vector();
  const float eps = n.attributes.get_float("epsilon", 1e-5f);
  std::vector<float> v(gamma.size());
  for (std::size_t c = 0; c < v.size(); ++c)
    v[c] = beta[c] - mean[c] * gamma[c] / std::sqrt(var[c] + eps);
  return v;
}

// How a pad with one value per channel is written in ONNX (ONNX's Pad takes one value).
enum class BorderForm {
  ScatterND,           // torch.onnx's `out = F.pad(out, [p] * 4); out[:, :, 0:p, :] = v; …`:
                       // a zero Pad, then ScatterND writing the top, bottom, left, right sides
                       // (indices and updates constant, as constant folding leaves them)
  ScatterNDPermuted,   // the same four writes in another order: left, bottom, right, top
  ScatterNDFromShape,  // each side's updates expanded to Shape(the side's Slice), as the export
                       // computes them: constants only once the static shapes fold
  AddConstant,         // Pad(0) + a constant that is 0 inside and v[c] on the border
  SubPadAdd,           // Pad(y − v) + v, with v [1, C, 1, 1]
  PadOneMul,           // Pad(y, 1) · a constant that is 1 inside and v[c] on the border
};

// The four sides of a value [n, c, h, w] padded by p: rows [r0, r1) × columns [c0, c1).
struct Side {
  std::int64_t r0, r1, c0, c1;
};
std::vector<Side> sides(std::int64_t h, std::int64_t w, std::int64_t p) {
  return {{0, p, 0, w}, {h - p, h, 0, w}, {0, h, 0, p}, {0, h, w - p, w}};
}

// ScatterND(data, indices, updates) writing `v[c]` + `offset[c]` over rows × columns of every
// (n, c) of a value of `shape`.
std::string scatter_side(GraphBuilder& b, const std::string& data, const Shape& shape,
                         const Side& s, const std::vector<float>& v, bool updates_from_shape) {
  const std::int64_t n = shape[0], c = shape[1], rows = s.r1 - s.r0, cols = s.c1 - s.c0;
  Tensor indices = empty({n, c, rows, cols, 4}, DType::Int64);
  std::int64_t* at = indices.data<std::int64_t>();
  std::vector<float> u;
  for (std::int64_t in = 0; in < n; ++in)
    for (std::int64_t ic = 0; ic < c; ++ic)
      for (std::int64_t i = s.r0; i < s.r1; ++i)
        for (std::int64_t j = s.c0; j < s.c1; ++j) {
          for (std::int64_t e : {in, ic, i, j}) *at++ = e;
          u.push_back(v[static_cast<std::size_t>(ic)]);
        }
  std::string updates = b.constant("updates", testing::values(u, {n, c, rows, cols}));
  if (updates_from_shape) {
    const std::string side =
        b.node("Slice", {data, b.constant("starts", testing::int64s({s.r0, s.c0})),
                         b.constant("ends", testing::int64s({s.r1, s.c1})),
                         b.constant("axes", testing::int64s({2, 3}))});
    updates = b.node("Expand",
                     {b.constant("v", testing::values(v, {1, c, 1, 1})), b.node("Shape", {side})});
  }
  return b.node("ScatterND", {data, b.constant("indices", indices), updates});
}

// [1, C, H, W] holding `inside` inside the border p and v[c] on it.
Tensor border_constant(const Shape& shape, std::int64_t p, float inside,
                       const std::vector<float>& v) {
  const std::int64_t c = shape[1], h = shape[2], w = shape[3];
  std::vector<float> e;
  for (std::int64_t ic = 0; ic < c; ++ic)
    for (std::int64_t i = 0; i < h; ++i)
      for (std::int64_t j = 0; j < w; ++j)
        e.push_back(i >= p && i < h - p && j >= p && j < w - p ? inside
                                                               : v[static_cast<std::size_t>(ic)]);
  return testing::values(e, {1, c, h, w});
}

// y of static shape [n, c, h, w] padded by p on each side with v[c] in channel c.
std::string pad_per_channel(GraphBuilder& b, const std::string& y, const Shape& shape,
                            std::int64_t p, const std::vector<float>& v, BorderForm form) {
  const Shape padded = {shape[0], shape[1], shape[2] + 2 * p, shape[3] + 2 * p};
  const auto pad = [&](const std::string& in, float value) {
    return b.node("Pad", {in, b.constant("pads", testing::int64s({0, 0, p, p, 0, 0, p, p})),
                          b.constant("value", testing::values({value}, {}))});
  };
  const std::string per_channel = b.constant("v", testing::values(v, {1, shape[1], 1, 1}));
  switch (form) {
    case BorderForm::AddConstant:
      return b.add(pad(y, 0), b.constant("border", border_constant(padded, p, 0, v)));
    case BorderForm::SubPadAdd:
      return b.add(pad(sub(b, y, per_channel), 0), per_channel);
    case BorderForm::PadOneMul:
      return b.mul(pad(y, 1), b.constant("border", border_constant(padded, p, 1, v)));
    default:
      break;
  }
  std::vector<Side> order = sides(padded[2], padded[3], p);
  if (form == BorderForm::ScatterNDPermuted) order = {order[2], order[1], order[3], order[0]};
  std::string out = pad(y, 0);
  for (const Side& s : order)
    out = scatter_side(b, out, padded, s, v, form == BorderForm::ScatterNDFromShape);
  return out;
}

// BNAndPadLayer on `x` [n, c, h, w]: BN, then the border filled with the BN's zero response.
std::string bn_and_pad(GraphBuilder& b, const std::string& x, const Shape& shape, std::int64_t p,
                       BorderForm form) {
  const std::string y = b.bn(x, shape[1]);
  return pad_per_channel(b, y, shape, p, bn_pad_values(b, y), form);
}

// DiverseBranchBlock as its authors wrote it (DingXiaoH/DiverseBranchBlock, groups 1): each
// conv with its BN; the avg branch conv 1×1 → BNAndPad → AvgPool K×K (no padding) → BN; the
// 1×1 → K×K branch conv 1×1 (to `internal` channels) → BNAndPad → conv K×K (no padding) → BN.
std::string dbb_bn_and_pad(GraphBuilder& b, const std::string& x, const Shape& shape,
                           std::int64_t p, std::int64_t internal, BorderForm form,
                           Size2d stride = 1) {
  const std::int64_t c = shape[1];
  const Size2d k = 2 * p + 1;
  const Shape mid = {shape[0], c, shape[2], shape[3]},
              wide = {shape[0], internal, shape[2], shape[3]};
  const std::string origin = conv_bn(b, x, c, c, k, {.stride = stride, .pads = ConvSpec::same(p)});
  const std::string one = conv_bn(b, x, c, c, 1, {.stride = stride});
  const std::string avg =
      b.bn(b.avg_pool(bn_and_pad(b, b.conv(x, c, c, 1, {.bias = false}), mid, p, form), k, stride,
                      {0, 0, 0, 0}),
           c);
  const std::string one_kxk =
      conv_bn(b, bn_and_pad(b, b.conv(x, c, internal, 1, {.bias = false}), wide, p, form), internal,
              c, k, {.stride = stride});
  return b.relu(b.sum({origin, one, avg, one_kxk}));
}

// The reparameterize pass's notes in the optimizer's report.
std::string reparameterize_notes(const passes::PipelineReport& r) {
  std::string out;
  for (const passes::PassReport& p : r.passes)
    if (p.pass == "reparameterize")
      for (const std::string& n : p.notes) out += n + "\n";
  return out;
}

// The whole block becomes one Conv in every form, for pad 1 (3×3) and 2 (5×5), with the
// internal width equal to the input's (DBB's idconv1 case) and twice it.
TEST(ReparamFamilies, DBBWithBNAndPadEveryForm) {
  for (const BorderForm form :
       {BorderForm::ScatterND, BorderForm::ScatterNDPermuted, BorderForm::ScatterNDFromShape,
        BorderForm::AddConstant, BorderForm::SubPadAdd, BorderForm::PadOneMul}) {
    for (const std::int64_t p : {1, 2}) {
      SCOPED_TRACE(::testing::Message() << "form " << static_cast<int>(form) << ", pad " << p);
      GraphBuilder b(static_cast<std::uint64_t>(320 + 10 * static_cast<int>(form) + p));
      const Shape shape = {1, 4, 7, 8};
      const std::string x = b.input("x", shape);
      b.output(dbb_bn_and_pad(b, x, shape, p, p == 1 ? 4 : 8, form));
      expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
    }
  }
}

// Batch 2 and stride 2 on the K×K, the 1×1 and the pool, odd and even sizes.
TEST(ReparamFamilies, DBBWithBNAndPadStride2) {
  for (const std::int64_t size : {9, 10}) {
    SCOPED_TRACE(::testing::Message() << "size " << size);
    GraphBuilder b(static_cast<std::uint64_t>(340 + size));
    const Shape shape = {2, 3, size, size};
    const std::string x = b.input("x", shape);
    b.output(dbb_bn_and_pad(b, x, shape, 1, 6, BorderForm::ScatterND, 2));
    expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
  }
}

// conv 1×1 → BNAndPad whose border is not the BN's zero response everywhere → conv 3×3 (no
// padding), summed with a conv 3×3 of x: the merged conv would read the zero response there,
// so the writes stay (and the note says where), and the output is the same. (A zero Pad and
// the four right writes after the 1×1 conv are that conv padded — its border holds its bias —
// so where only a write inside is wrong, the four go into the conv and that one stays.)
TEST(ReparamFamilies, BNAndPadBorderThatIsNotTheZeroResponseStays) {
  struct Case {
    const char* what;
    int side_off;       // a side whose value is shifted in channel 1, or −1
    bool skip_last;     // write only three sides
    bool write_inside;  // one more ScatterND of the zero response into the inside
    const char* note;
    int writes_kept;
  };
  const Case cases[] = {
      {"one value off", 1, false, false, "in channel 1 where the merged conv would read", 4},
      {"three sides", -1, true, false, "holds 0 in channel 0 where the merged conv would read", 3},
      {"a write inside", -1, false, true, "writes inside the border of Pad", 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    GraphBuilder b(351);
    const Shape shape = {1, 4, 6, 6}, padded = {1, 4, 8, 8};
    const std::string x = b.input("x", shape);
    const std::string y = b.bn(b.conv(x, 4, 4, 1, {.bias = false}), 4);
    const std::vector<float> v = bn_pad_values(b, y);
    std::vector<Side> order = sides(8, 8, 1);
    if (c.skip_last) order.pop_back();
    std::string out =
        b.node("Pad", {y, b.constant("pads", testing::int64s({0, 0, 1, 1, 0, 0, 1, 1}))});
    for (std::size_t k = 0; k < order.size(); ++k) {
      std::vector<float> w = v;
      if (static_cast<int>(k) == c.side_off) w[1] += 0.25f;
      out = scatter_side(b, out, padded, order[k], w, false);
    }
    if (c.write_inside) out = scatter_side(b, out, padded, {3, 4, 3, 5}, v, false);
    b.output(b.add(b.conv(x, 4, 4, 3, {.pads = kPad1}), b.conv(out, 4, 4, 3)));
    const passes::PipelineReport report = optimize_and_compare(b);
    EXPECT_EQ(b.count("ScatterND"), c.writes_kept) << report.to_string(true);
    EXPECT_NE(reparameterize_notes(report).find(c.note), std::string::npos)
        << reparameterize_notes(report);
  }
}

// Pad(0) + a constant that is not 0 everywhere inside the border changes the inside: not a
// border write.
TEST(ReparamFamilies, BorderConstantThatChangesTheInsideStays) {
  GraphBuilder b(352);
  const Shape shape = {1, 4, 6, 6};
  const std::string x = b.input("x", shape);
  const std::string y = b.bn(b.conv(x, 4, 4, 1, {.bias = false}), 4);
  Tensor border = border_constant({1, 4, 8, 8}, 1, 0, bn_pad_values(b, y));
  border.set({0, 2, 4, 4}, 0.5f);
  const std::string padded =
      b.add(b.node("Pad", {y, b.constant("pads", testing::int64s({0, 0, 1, 1, 0, 0, 1, 1}))}),
            b.constant("border", border));
  b.output(b.add(b.conv(x, 4, 4, 3, {.pads = kPad1}), b.conv(padded, 4, 4, 3)));
  const passes::PipelineReport report = optimize_and_compare(b);
  EXPECT_EQ(b.count("Pad"), 1) << report.to_string(true);
  EXPECT_NE(reparameterize_notes(report).find("the constant is 0.5 inside the border of Pad"),
            std::string::npos)
      << reparameterize_notes(report);
}

// ---- MobileOne ----

// timm MobileOneBlock's sum starting from a Python 0 (`scale_out = 0`), exported as an ONNX
// Constant node: Add(Constant 0, scale), then the skip and each K×K branch (`out += rc(x)`).
TEST(ReparamFamilies, MobileOneSumFromConstantZero) {
  GraphBuilder b(401);
  const std::string x = b.input("x", {1, 6, 8, 8});
  const MobileOneBranches r = mobileone_branches(b, x, 6, 3);
  std::string out = b.add(constant_node(b, 0.0f), r.scale);
  out = b.add(out, r.identity);
  for (const std::string& v : r.kxk) out = b.add(out, v);
  b.output(b.relu(out));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// timm MobileOneBlock with every branch: `out = scale_out + identity_out; out += conv(x)`.
TEST(ReparamFamilies, MobileOneTimmOrder) {
  GraphBuilder b(402);
  const std::string x = b.input("x", {2, 8, 9, 10});
  const MobileOneBranches r = mobileone_branches(b, x, 8, 3);
  b.output(b.relu(mobileone_timm_sum(b, r, "")));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// MobileOne's downsampling block: stride 2, no skip, so `scale_out + 0` (identity_out = 0)
// as an initializer; odd and even sizes.
TEST(ReparamFamilies, MobileOneStride2) {
  for (std::int64_t size : {9, 12}) {
    SCOPED_TRACE(::testing::Message() << "size " << size);
    GraphBuilder b(static_cast<std::uint64_t>(403 + size));
    const std::string x = b.input("x", {1, 6, size, 11});
    const MobileOneBranches r = mobileone_branches(b, x, 6, 2, 2, false);
    b.output(b.relu(mobileone_timm_sum(b, r, filled(b, "zero", 0.0f))));
    expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
  }
}

// A port writing the branches into one `torch.sum(torch.stack(...))` / Keras Add: variadic Sum.
TEST(ReparamFamilies, MobileOneVariadicSum) {
  GraphBuilder b(404);
  const std::string x = b.input("x", {1, 8, 7, 7});
  const MobileOneBranches r = mobileone_branches(b, x, 8, 4);
  std::vector<std::string> all = r.kxk;
  all.push_back(r.identity);
  all.push_back(r.scale);
  b.output(b.relu(sum_node(b, all)));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// MobileOne's pointwise block (kernel 1: no scale branch): k × BN(conv1×1) + BN(x).
TEST(ReparamFamilies, MobileOnePointwise) {
  GraphBuilder b(405);
  const std::string x = b.input("x", {1, 6, 10, 9});
  std::string out = b.add(filled(b, "zero", 0.0f), b.bn(x, 6));
  for (int i = 0; i < 3; ++i) out = b.add(out, conv_bn(b, x, 6, 6, 1));
  b.output(b.relu(out));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// A MobileOne stage unit: the depthwise block, ReLU, the pointwise block, ReLU.
TEST(ReparamFamilies, MobileOneDepthwiseThenPointwise) {
  GraphBuilder b(406);
  const std::string x = b.input("x", {1, 6, 8, 9});
  const std::string h = b.relu(mobileone_timm_sum(b, mobileone_branches(b, x, 6, 3), ""));
  std::string out = b.add(filled(b, "zero", 0.0f), b.bn(h, 6));
  for (int i = 0; i < 3; ++i) out = b.add(out, conv_bn(b, h, 6, 6, 1));
  b.output(b.relu(out));
  expect_optimized_to(b, {{"Conv", 2}, {"Relu", 2}});
}

// ---- QARepVGG ----

// YOLOv6's QARepVGGBlock: `relu(bn(rbr_dense(x) + rbr_1x1(x) + x))`, the 1×1 without bias or BN.
TEST(ReparamFamilies, QARepVGGLeftNested) {
  GraphBuilder b(501);
  const std::string x = b.input("x", {2, 6, 9, 9});
  const std::string dense = conv_bn(b, x, 6, 6, 3, {.pads = kPad1});
  const std::string one = b.conv(x, 6, 6, 1, {.bias = false});
  b.output(b.relu(b.bn(b.sum({dense, one, x}), 6)));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// The same with the skip added first and right-nested: `bn(x + (one + dense))`.
TEST(ReparamFamilies, QARepVGGRightNestedPermuted) {
  GraphBuilder b(502);
  const std::string x = b.input("x", {1, 8, 10, 8});
  const std::string dense = conv_bn(b, x, 8, 8, 3, {.pads = kPad1});
  const std::string one = b.conv(x, 8, 8, 1, {.bias = false});
  b.output(b.relu(b.bn(right_nested(b, {x, one, dense}), 8)));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// QARepVGGBlock with in ≠ out and stride 2: no skip, `bn(dense + one)`.
TEST(ReparamFamilies, QARepVGGStride2) {
  GraphBuilder b(503);
  const std::string x = b.input("x", {1, 4, 11, 10});
  const std::string dense = conv_bn(b, x, 4, 8, 3, {.stride = 2, .pads = kPad1});
  const std::string one = b.conv(x, 4, 8, 1, {.stride = 2, .bias = false});
  b.output(b.relu(b.bn(b.add(dense, one), 8)));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// ---- YOLO RepConv ----

// Ultralytics RepConv (bn=False): `act(conv1(x) + conv2(x) + id_out)` with id_out = 0, SiLU.
TEST(ReparamFamilies, YoloRepConvPlusZeroThenSiLU) {
  GraphBuilder b(601);
  const std::string x = b.input("x", {1, 4, 9, 9});
  const std::string c3 = conv_bn(b, x, 4, 8, 3, {.pads = kPad1});
  const std::string c1 = conv_bn(b, x, 4, 8, 1);
  b.output(silu(b, b.add(b.add(c3, c1), filled(b, "zero", 0.0f))));
  expect_optimized_to(b, {{"Conv", 1}, {"Sigmoid", 1}, {"Mul", 1}});
}

// RepConv with bn=True (in == out): `conv1(x) + conv2(x) + bn(x)`.
TEST(ReparamFamilies, YoloRepConvWithIdentityBN) {
  GraphBuilder b(602);
  const std::string x = b.input("x", {2, 6, 10, 12});
  const std::string c3 = conv_bn(b, x, 6, 6, 3, {.pads = kPad1});
  const std::string c1 = conv_bn(b, x, 6, 6, 1);
  b.output(silu(b, b.sum({c3, c1, b.bn(x, 6)})));
  expect_optimized_to(b, {{"Conv", 1}, {"Sigmoid", 1}, {"Mul", 1}});
}

// YOLOv6/v7 RepConv as a downsampling layer: stride 2, no identity.
TEST(ReparamFamilies, YoloRepConvStride2) {
  GraphBuilder b(603);
  const std::string x = b.input("x", {1, 4, 12, 11});
  const std::string c3 = conv_bn(b, x, 4, 8, 3, {.stride = 2, .pads = kPad1});
  const std::string c1 = conv_bn(b, x, 4, 8, 1, {.stride = 2});
  b.output(silu(b, b.add(c3, c1)));
  expect_optimized_to(b, {{"Conv", 1}, {"Sigmoid", 1}, {"Mul", 1}});
}

// ---- RepGhost ----

// RepGhostModule with relu=False (ghost2 of RepGhostBottleneck): x1 = BN(conv1×1(x)), no
// activation; `cheap_operation(x1) + fusion_bn(x1)`. The 1×1 stays its own conv (merging it
// would not be exact: its bias meets the 3×3's zero padding), the rest is one depthwise conv.
TEST(ReparamFamilies, RepGhostWithoutActivation) {
  GraphBuilder b(701);
  const std::string x = b.input("x", {1, 8, 9, 9});
  const std::string y = conv_bn(b, x, 8, 6, 1);
  b.output(b.add(dw_bn(b, y, 6, 3, {.pads = kPad1}), b.bn(y, 6)));
  expect_optimized_to(b, {{"Conv", 2}});
}

// RepGhostModule with relu=True (ghost1): ReLU after the primary conv and after the sum.
TEST(ReparamFamilies, RepGhostWithActivation) {
  GraphBuilder b(702);
  const std::string x = b.input("x", {1, 4, 10, 10});
  const std::string y = b.relu(conv_bn(b, x, 4, 8, 1));
  b.output(b.relu(b.add(dw_bn(b, y, 8, 3, {.pads = kPad1}), b.bn(y, 8))));
  expect_optimized_to(b, {{"Conv", 2}, {"Relu", 2}});
}

// The fusion BN added first: `fusion_bn(x1) + cheap_operation(x1)`.
TEST(ReparamFamilies, RepGhostFusionFirst) {
  GraphBuilder b(703);
  const std::string x = b.input("x", {1, 6, 8, 11});
  const std::string y = conv_bn(b, x, 6, 8, 1);
  const std::string fusion = b.bn(y, 8);
  b.output(b.add(fusion, dw_bn(b, y, 8, 3, {.pads = kPad1})));
  expect_optimized_to(b, {{"Conv", 2}});
}

// ---- FastViT RepMixer ----

// Apple's ml-fastvit RepMixer: `x + self.layer_scale * (self.mixer(x) - self.norm(x))`,
// layer_scale an nn.Parameter of shape [C, 1, 1]; mixer a depthwise 3×3 + BN, norm a BN.
TEST(ReparamFamilies, RepMixerLayerScaleFirst) {
  GraphBuilder b(801);
  const std::string x = b.input("x", {1, 8, 9, 9});
  const std::string mixer = dw_bn(b, x, 8, 3, {.pads = kPad1});
  const std::string norm = b.bn(x, 8);
  const std::string layer_scale = random_constant(b, "layer_scale", {8, 1, 1});
  b.output(b.add(x, b.mul(layer_scale, sub(b, mixer, norm))));
  expect_optimized_to(b, {{"Conv", 1}});
}

// timm's RepMixer: `x + self.layer_scale(self.mixer(x) - self.norm(x))`, LayerScale2d
// multiplying by gamma.view(1, -1, 1, 1) on the right.
TEST(ReparamFamilies, RepMixerTimmLayerScale2d) {
  GraphBuilder b(802);
  const std::string x = b.input("x", {2, 6, 10, 8});
  const std::string mixer = dw_bn(b, x, 6, 3, {.pads = kPad1});
  const std::string norm = b.bn(x, 6);
  const std::string gamma = random_constant(b, "gamma", {1, 6, 1, 1});
  b.output(b.add(x, b.mul(sub(b, mixer, norm), gamma)));
  expect_optimized_to(b, {{"Conv", 1}});
}

// RepMixer whose mixer and norm are the MobileOneBlocks timm builds (use_act=False): mixer =
// `scale + identity`, `+= dw3×3`; norm (no conv or scale branch) = `0 + bn(x)`.
TEST(ReparamFamilies, RepMixerWithMobileOneBlocks) {
  GraphBuilder b(803);
  const std::string x = b.input("x", {1, 8, 12, 12});
  const std::string mixer = mobileone_timm_sum(b, mobileone_branches(b, x, 8, 1), "");
  const std::string norm = b.add(filled(b, "zero", 0.0f), b.bn(x, 8));
  const std::string gamma = random_constant(b, "gamma", {1, 8, 1, 1});
  b.output(b.add(x, b.mul(sub(b, mixer, norm), gamma)));
  expect_optimized_to(b, {{"Conv", 1}});
}

// ---- RepViT RepVggDw ----

// timm RepViT RepVggDw (legacy=False): `self.bn(self.conv(x) + self.conv1(x) + x)`, conv a
// depthwise 3×3 + BN, conv1 a plain depthwise 1×1 with bias.
TEST(ReparamFamilies, RepViTRepVggDw) {
  GraphBuilder b(901);
  const std::string x = b.input("x", {1, 8, 10, 11});
  const std::string conv = dw_bn(b, x, 8, 3, {.pads = kPad1});
  const std::string conv1 = b.conv(x, 8, 8, 1, {.groups = 8});
  b.output(b.bn(b.sum({conv, conv1, x}), 8));
  expect_optimized_to(b, {{"Conv", 1}});
}

// RepVggDw with legacy=True: conv1 is a depthwise 1×1 + BN and there is no BN after the sum.
TEST(ReparamFamilies, RepViTRepVggDwLegacy) {
  GraphBuilder b(902);
  const std::string x = b.input("x", {2, 6, 7, 7});
  const std::string conv = dw_bn(b, x, 6, 3, {.pads = kPad1});
  const std::string conv1 = dw_bn(b, x, 6, 1);
  b.output(b.sum({conv, conv1, x}));
  expect_optimized_to(b, {{"Conv", 1}});
}

// ---- linear sequences ----

// DBB's 1×1 → K×K branch on its own: a 1×1 (no bias) expanding to 2C, then a 3×3 pad 1 back
// to C — one 3×3 costs less.
TEST(ReparamFamilies, SequenceOneByOneThenKxK) {
  GraphBuilder b(1001);
  const std::string x = b.input("x", {1, 4, 9, 10});
  const std::string mid = b.conv(x, 4, 8, 1, {.bias = false});
  b.output(b.relu(b.conv(mid, 8, 4, 3, {.pads = kPad1})));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// A K×K expanding to 4C, then a 1×1 back to C (an inverted bottleneck without activation):
// one 3×3 C → C costs less.
TEST(ReparamFamilies, SequenceKxKThenOneByOne) {
  GraphBuilder b(1002);
  const std::string x = b.input("x", {1, 4, 8, 8});
  const std::string mid = conv_bn(b, x, 4, 16, 3, {.pads = kPad1});
  b.output(b.relu(conv_bn(b, mid, 16, 4, 1)));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// ExpandNets: a 3×3 trained as 1×1 (C → 4C, no bias) → 3×3 (4C → 4C) → 1×1 (4C → C).
TEST(ReparamFamilies, SequenceExpandNets) {
  GraphBuilder b(1003);
  const std::string x = b.input("x", {1, 4, 11, 9});
  const std::string a = b.conv(x, 4, 16, 1, {.bias = false});
  const std::string c = b.conv(a, 16, 16, 3, {.pads = kPad1});
  b.output(b.relu(b.conv(c, 16, 4, 1)));
  expect_optimized_to(b, {{"Conv", 1}, {"Relu", 1}});
}

// ---- left unmerged ----

// A RepVGG variant with a ReLU on the 1×1 branch (`dense + relu(one) + id`): not linear; every
// conv stays.
TEST(ReparamFamilies, ReluInsideBranchStays) {
  GraphBuilder b(1101);
  const std::string x = b.input("x", {1, 6, 9, 9});
  const RepVGGBranches r = repvgg_branches(b, x, 6, 6);
  b.output(b.relu(b.sum({r.dense, b.relu(r.one), r.identity})));
  expect_convs_kept(b, {{"Relu", 2}});
}

// A branch that also feeds a side output (a neck reading the 1×1 branch, `feats.append(one)`):
// that branch's conv must stay for its other reader, and both outputs stay right.
TEST(ReparamFamilies, BranchWithAnotherReaderStays) {
  GraphBuilder b(1102);
  const std::string x = b.input("x", {1, 8, 10, 10});
  const RepVGGBranches r = repvgg_branches(b, x, 8, 8);
  b.output(b.relu(b.sum({r.dense, r.one, r.identity})));
  b.output(b.relu(r.one));
  expect_convs_kept(b, {{"Relu", 2}});
}

// F.pad(x, value=x.mean()) before the 3×3: the pad value is computed from the input, not a
// constant, so the branch is no conv of x.
TEST(ReparamFamilies, PadValueFromInputStays) {
  GraphBuilder b(1103);
  const std::string x = b.input("x", {1, 4, 8, 9});
  const std::string mean = b.node("ReduceMean", {x}, attrs({{"keepdims", std::int64_t{0}}}));
  const std::string padded =
      b.node("Pad", {x, b.constant("pads", testing::int64s({0, 0, 1, 1, 0, 0, 1, 1})), mean});
  b.output(b.relu(b.add(conv_bn(b, padded, 4, 4, 3), conv_bn(b, x, 4, 4, 1))));
  expect_convs_kept(b, {{"Pad", 1}, {"Relu", 1}});
}

// A gated block (`dense(x) * one(x)`, GLU-like): a product of branches is not linear.
TEST(ReparamFamilies, MulOfTwoBranchesStays) {
  GraphBuilder b(1104);
  const std::string x = b.input("x", {1, 6, 9, 8});
  const std::string dense = conv_bn(b, x, 6, 6, 3, {.pads = kPad1});
  const std::string one = conv_bn(b, x, 6, 6, 1);
  b.output(b.relu(b.mul(dense, one)));
  expect_convs_kept(b, {{"Mul", 1}, {"Relu", 1}});
}

// Two stacked 3×3 pad 1 convs without activation between (a VGG pair with the ReLU dropped):
// the inner zero padding makes one 5×5 inexact at the border, even though one 5×5 would cost
// fewer multiply-adds here (8 → 16 → 2 channels).
TEST(ReparamFamilies, TwoPaddedKxKInSequenceStay) {
  GraphBuilder b(1105);
  const std::string x = b.input("x", {1, 8, 9, 10});
  const std::string mid = b.conv(x, 8, 16, 3, {.pads = kPad1, .bias = false});
  b.output(b.relu(b.conv(mid, 16, 2, 3, {.pads = kPad1})));
  expect_convs_kept(b, {{"Relu", 1}});
}

// The same pair as a branch of a block beside a 1×1: `conv3×3(conv3×3(x)) + conv1×1(x)`.
TEST(ReparamFamilies, TwoPaddedKxKBranchStays) {
  GraphBuilder b(1106);
  const std::string x = b.input("x", {1, 8, 8, 8});
  const std::string mid = b.conv(x, 8, 16, 3, {.pads = kPad1, .bias = false});
  const std::string deep = b.conv(mid, 16, 2, 3, {.pads = kPad1});
  b.output(b.relu(b.add(deep, b.conv(x, 8, 2, 1))));
  expect_convs_kept(b, {{"Relu", 1}});
}

// A 3×3 C → C then a 1×1 expansion to 4C (an MBConv-like expansion without activation): exact,
// but one 3×3 C → 4C costs more than the pair, so both stay.
TEST(ReparamFamilies, KxKThenExpandingOneByOneStays) {
  GraphBuilder b(1107);
  const std::string x = b.input("x", {1, 8, 9, 9});
  const std::string mid = conv_bn(b, x, 8, 8, 3, {.pads = kPad1});
  b.output(b.relu(b.conv(mid, 8, 32, 1)));
  expect_convs_kept(b, {{"Relu", 1}});
}

}  // namespace
}  // namespace refold
