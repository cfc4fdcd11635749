// reparameterize: the training-time blocks of RepVGG, ACNet, DBB, MobileOne, QARepVGG and
// YOLO's RepConv, built as ONNX graphs with randomized BN statistics, become one Conv that
// computes the same (docs/testing.md's re-parameterization tolerance); every geometry the kernel
// algebra cannot make exact is declined with "branch mismatch: …" and the graph is untouched.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <string>

#include "passes/passes.h"
#include "refold/nn/utils.h"
#include "testing/compare.h"
#include "testing/graph_builder.h"
#include "testing/pass_checks.h"

namespace refold {
namespace {

using testing::apply_pass;
using testing::ConvSpec;
using testing::expect_left_alone;
using testing::GraphBuilder;
using testing::has_note;
using testing::kPad1;
using testing::notes_of;

// The pass on a graph it merges: the same outputs within the re-parameterization tolerance.
passes::PassReport merge_and_compare(GraphBuilder& b) {
  passes::PassReport report = apply_pass(b, passes::reparameterize_branches);
  EXPECT_TRUE(report.changed) << notes_of(report);
  return report;
}

// The pass on a graph it must leave alone: same nodes, bit-identical outputs.
passes::PassReport expect_unchanged(GraphBuilder& b) {
  return expect_left_alone(b, passes::reparameterize_branches);
}

// One Conv and the listed ops remain; no BN, no Add.
void expect_one_conv(const GraphBuilder& b, std::map<std::string, int> others = {}) {
  others["Conv"] = 1;
  EXPECT_EQ(b.op_counts(), others);
}

// RepVGG as un-folded training export: BN(conv3×3) + BN(conv1×1) + BN(x), then ReLU.
std::string repvgg_block(GraphBuilder& b, const std::string& x, std::int64_t in, std::int64_t out,
                         Size2d stride = 1, std::int64_t groups = 1) {
  std::vector<std::string> branches = {
      b.bn(
          b.conv(x, in, out, 3, {.stride = stride, .pads = kPad1, .groups = groups, .bias = false}),
          out),
      b.bn(b.conv(x, in, out, 1, {.stride = stride, .groups = groups, .bias = false}), out)};
  if (in == out && stride == Size2d(1)) branches.push_back(b.bn(x, out));
  return b.relu(b.sum(branches));
}

TEST(ReparamPass, RepVGGBlockWithIdentityBecomesOneConv) {
  GraphBuilder b;
  const std::string x = b.input("x", {2, 8, 10, 10});
  const std::string y = repvgg_block(b, x, 8, 8);
  b.output(y);
  const std::string sum = b.graph().nodes()[b.graph().nodes().size() - 2].outputs[0];
  const passes::PassReport r = merge_and_compare(b);
  expect_one_conv(b, {{"Relu", 1}});
  EXPECT_TRUE(has_note(r, "merged 3 branches of 'x' into one 3x3 Conv")) << notes_of(r);
  const graph::Node& conv = b.graph().nodes()[0];
  EXPECT_EQ(conv.outputs, std::vector<std::string>{sum});  // the last Add's name survives
  EXPECT_EQ(conv.name, "Conv_1");
  EXPECT_NE(conv.origin.find("Conv_2"), std::string::npos) << conv.origin;
  EXPECT_NE(conv.origin.find("BatchNormalization_3"), std::string::npos) << conv.origin;
  EXPECT_EQ(conv.attributes.get_ints("kernel_shape"), (std::vector<std::int64_t>{3, 3}));
  EXPECT_EQ(conv.attributes.get_ints("pads"), kPad1);
  EXPECT_EQ(conv.attributes.get_int("group", 0), 1);
  // Only the merged conv's parameters are left.
  EXPECT_EQ(b.graph().constant_names().size(), 2u);
}

TEST(ReparamPass, RepVGGBlockWithoutIdentityStride2) {
  GraphBuilder b(2);
  const std::string x = b.input("x", {1, 4, 11, 9});
  b.output(repvgg_block(b, x, 4, 8, 2));
  merge_and_compare(b);
  expect_one_conv(b, {{"Relu", 1}});
  EXPECT_EQ(b.graph().nodes()[0].attributes.get_ints("strides"), (std::vector<std::int64_t>{2, 2}));
}

TEST(ReparamPass, GroupedAndDepthwiseRepVGG) {
  for (std::int64_t groups : {2, 4, 12}) {
    SCOPED_TRACE(::testing::Message() << "groups " << groups);
    GraphBuilder b(static_cast<std::uint64_t>(groups));
    const std::string x = b.input("x", {1, 12, 7, 8});
    b.output(repvgg_block(b, x, 12, 12, 1, groups));
    merge_and_compare(b);
    expect_one_conv(b, {{"Relu", 1}});
    EXPECT_EQ(b.graph().nodes()[0].attributes.get_int("group", 0), groups);
  }
}

// What PyTorch's exporter writes for an eval-mode RepVGG block: each conv's own BN folded into
// the conv, the identity BN left: Add(Add(Conv3×3(x), Conv1×1(x)), BatchNormalization(x)).
TEST(ReparamPass, ExportedRepVGGWithFoldedConvs) {
  GraphBuilder b(3);
  const std::string x = b.input("x", {2, 6, 9, 9});
  const std::string y =
      b.add(b.add(b.conv(x, 6, 6, 3, {.pads = kPad1}), b.conv(x, 6, 6, 1)), b.bn(x, 6));
  b.output(b.relu(y));
  merge_and_compare(b);
  expect_one_conv(b, {{"Relu", 1}});
}

TEST(ReparamPass, StageOfBlocks) {
  GraphBuilder b(4);
  const std::string x = b.input("x", {1, 3, 12, 12});
  std::string v = repvgg_block(b, x, 3, 8, 2);
  v = repvgg_block(b, v, 8, 8);
  v = repvgg_block(b, v, 8, 8);
  b.output(v);
  const passes::PassReport r = merge_and_compare(b);
  EXPECT_EQ(b.op_counts(), (std::map<std::string, int>{{"Conv", 3}, {"Relu", 3}}));
  EXPECT_EQ(r.notes.size(), 3u) << notes_of(r);
}

// ACNet: 3×3 + 1×3 (pads 0, 1) + 3×1 (pads 1, 0), each with BN.
TEST(ReparamPass, ACNetAsymmetricKernels) {
  GraphBuilder b(5);
  const std::string x = b.input("x", {2, 4, 8, 7});
  b.output(
      b.relu(b.sum({b.bn(b.conv(x, 4, 6, 3, {.pads = kPad1, .bias = false}), 6),
                    b.bn(b.conv(x, 4, 6, {1, 3}, {.pads = {0, 1, 0, 1}, .bias = false}), 6),
                    b.bn(b.conv(x, 4, 6, {3, 1}, {.pads = {1, 0, 1, 0}, .bias = false}), 6)})));
  merge_and_compare(b);
  expect_one_conv(b, {{"Relu", 1}});
}

// ACNet without the square kernel: the merged 3×3 is built from 1×3 and 3×1 alone.
TEST(ReparamPass, CrossKernelsOnly) {
  GraphBuilder b(6);
  const std::string x = b.input("x", {1, 3, 6, 6});
  b.output(b.add(b.conv(x, 3, 3, {1, 3}, {.stride = 2, .pads = {0, 1, 0, 1}}),
                 b.conv(x, 3, 3, {3, 1}, {.stride = 2, .pads = {1, 0, 1, 0}})));
  merge_and_compare(b);
  expect_one_conv(b);
  EXPECT_EQ(b.graph().nodes()[0].attributes.get_ints("kernel_shape"),
            (std::vector<std::int64_t>{3, 3}));
}

// DBB: K×K + 1×1 + (1×1 → K×K) + (AveragePool → BN), for groups 1 and 2. The 1×1 of the
// sequential branch has no bias or BN (its output for a zero input is zero, so the K×K's zero
// padding is what BNAndPad would have written).
TEST(ReparamPass, DiverseBranchBlock) {
  for (std::int64_t groups : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << "groups " << groups);
    GraphBuilder b(static_cast<std::uint64_t>(7 + groups));
    const std::string x = b.input("x", {2, 4, 9, 9});
    const std::string mid = b.conv(x, 4, 4, 1, {.groups = groups, .bias = false});
    b.output(b.relu(b.sum({
        b.bn(b.conv(x, 4, 4, 3, {.pads = kPad1, .groups = groups, .bias = false}), 4),
        b.bn(b.conv(x, 4, 4, 1, {.groups = groups, .bias = false}), 4),
        b.bn(b.conv(mid, 4, 4, 3, {.pads = kPad1, .groups = groups, .bias = false}), 4),
        b.bn(b.avg_pool(x, 3, 1, kPad1), 4),
    })));
    const passes::PassReport r = merge_and_compare(b);
    expect_one_conv(b, {{"Relu", 1}});
    EXPECT_TRUE(has_note(r, "merged 4 branches")) << notes_of(r);
  }
}

// 1×1 (+BN, so a non-zero output for a zero input) → K×K without padding: exact, merged.
TEST(ReparamPass, Sequential1x1ThenKxKWithoutPadding) {
  GraphBuilder b(10);
  const std::string x = b.input("x", {1, 3, 8, 8});
  const std::string mid = b.bn(b.conv(x, 3, 5, 1), 5);
  b.output(b.add(b.conv(x, 3, 4, 3, {.stride = 2}), b.bn(b.conv(mid, 5, 4, 3, {.stride = 2}), 4)));
  merge_and_compare(b);
  expect_one_conv(b);
}

// A pooling branch with stride 2 next to a strided conv.
TEST(ReparamPass, AvgPoolBranchStride2) {
  GraphBuilder b(11);
  const std::string x = b.input("x", {1, 6, 10, 10});
  b.output(b.add(b.conv(x, 6, 6, 3, {.stride = 2, .pads = kPad1, .groups = 3}),
                 b.avg_pool(x, 3, 2, kPad1)));
  merge_and_compare(b);
  expect_one_conv(b);
}

// MobileOne: k over-parameterized K×K conv+BN branches, a 1×1 "scale" conv+BN, a skip BN.
TEST(ReparamPass, MobileOneDepthwiseAndPointwise) {
  GraphBuilder b(12);
  const std::string x = b.input("x", {1, 6, 8, 8});
  std::vector<std::string> dw;
  for (int i = 0; i < 3; ++i)
    dw.push_back(b.bn(b.conv(x, 6, 6, 3, {.pads = kPad1, .groups = 6, .bias = false}), 6));
  dw.push_back(b.bn(b.conv(x, 6, 6, 1, {.groups = 6, .bias = false}), 6));
  dw.push_back(b.bn(x, 6));
  const std::string h = b.relu(b.sum(dw));
  std::vector<std::string> pw;
  for (int i = 0; i < 3; ++i) pw.push_back(b.bn(b.conv(h, 6, 6, 1, {.bias = false}), 6));
  pw.push_back(b.bn(h, 6));
  b.output(b.relu(b.sum(pw)));
  merge_and_compare(b);
  EXPECT_EQ(b.op_counts(), (std::map<std::string, int>{{"Conv", 2}, {"Relu", 2}}));
}

// QARepVGG: BN(BN(conv3×3(x)) + conv1×1(x) + x) — the BN after the sum folds too.
TEST(ReparamPass, QARepVGGWithPostSumBatchNorm) {
  GraphBuilder b(13);
  const std::string x = b.input("x", {2, 5, 7, 7});
  const std::string y = b.bn(b.sum({b.bn(b.conv(x, 5, 5, 3, {.pads = kPad1, .bias = false}), 5),
                                    b.conv(x, 5, 5, 1, {.bias = false}), x}),
                             5);
  b.output(b.relu(y));
  const passes::PassReport r = merge_and_compare(b);
  expect_one_conv(b, {{"Relu", 1}});
  EXPECT_EQ(b.graph().nodes()[0].outputs, std::vector<std::string>{y});
  EXPECT_TRUE(has_note(r, "merged 3 branches of 'x' into one 3x3 Conv")) << notes_of(r);
  EXPECT_TRUE(has_note(r, "Add 'Add_2', BatchNormalization 'BatchNormalization_2'")) << notes_of(r);
}

// YOLO RepConv (no identity; in ≠ out), followed by SiLU written as x·sigmoid(x).
TEST(ReparamPass, YoloRepConvThenSiLU) {
  GraphBuilder b(14);
  const std::string x = b.input("x", {1, 4, 9, 9});
  const std::string y = b.add(b.bn(b.conv(x, 4, 8, 3, {.pads = kPad1, .bias = false}), 8),
                              b.bn(b.conv(x, 4, 8, 1, {.bias = false}), 8));
  b.output(b.mul(y, b.sigmoid(y)));
  merge_and_compare(b);
  expect_one_conv(b, {{"Sigmoid", 1}, {"Mul", 1}});
}

TEST(ReparamPass, DilatedBranchesWithPointwise) {
  GraphBuilder b(15);
  const std::string x = b.input("x", {1, 4, 11, 11});
  b.output(b.add(b.conv(x, 4, 4, 3, {.pads = ConvSpec::same(2), .dilation = 2}),
                 b.add(b.conv(x, 4, 4, 1, {.dilation = 3}), x)));
  merge_and_compare(b);
  expect_one_conv(b);
  EXPECT_EQ(b.graph().nodes()[0].attributes.get_ints("dilations"),
            (std::vector<std::int64_t>{2, 2}));
}

// ---- left alone ----

// A ResNet block after bn-folding: conv(h) + x is two inputs, nothing to merge, nothing to say.
TEST(ReparamPass, ResidualAddOfDifferentInputsIsNotABlock) {
  GraphBuilder b(16);
  const std::string x = b.input("x", {1, 4, 6, 6});
  const std::string h = b.relu(b.bn(b.conv(x, 4, 4, 3, {.pads = kPad1}), 4));
  b.output(b.relu(b.add(b.bn(b.conv(h, 4, 4, 3, {.pads = kPad1}), 4), x)));
  passes::fold_batch_norms(b.graph());
  const passes::PassReport r = expect_unchanged(b);
  EXPECT_TRUE(r.notes.empty()) << notes_of(r);
}

struct Decline {
  std::string name;
  std::string expected;  // in the note
};

void expect_declined(GraphBuilder& b, const std::string& expected) {
  const passes::PassReport r = expect_unchanged(b);
  EXPECT_TRUE(has_note(r, "branch mismatch: ")) << notes_of(r);
  EXPECT_TRUE(has_note(r, expected)) << notes_of(r);
}

TEST(ReparamPassDeclines, StrideMismatch) {
  // 5×5 stride 1 and 1×1 stride 2 both make 9×9 → 5×5, but read different pixels.
  GraphBuilder b(20);
  const std::string x = b.input("x", {1, 3, 9, 9});
  b.output(b.add(b.conv(x, 3, 3, 5), b.conv(x, 3, 3, 1, {.stride = 2})));
  expect_declined(b, "stride 1x1 vs 2x2");
}

// A window that is not centred still merges when it lands on the merged conv's grid: the 1×1
// at pads 0 reads the 3×3's (2, 1) tap, and both outputs are 4×6 for a 6×6 input.
TEST(ReparamPass, AsymmetricPaddingLandsOnTheGrid) {
  GraphBuilder b(21);
  const std::string x = b.input("x", {1, 3, 6, 6});
  b.output(b.add(b.conv(x, 3, 3, 3, {.pads = {2, 1, 0, 1}}), b.conv(x, 3, 3, 1)));
  merge_and_compare(b);
  expect_one_conv(b);
  EXPECT_EQ(b.graph().nodes()[0].attributes.get_ints("pads"),
            (std::vector<std::int64_t>{2, 1, 0, 1}));
}

// Grouped + dense: both are block-diagonal with gcd(2, 1) = 1 blocks, so the sum is dense.
TEST(ReparamPass, GroupedPlusDenseIsDense) {
  GraphBuilder b(22);
  const std::string x = b.input("x", {1, 4, 6, 6});
  b.output(b.add(b.conv(x, 4, 4, 3, {.pads = kPad1, .groups = 2}), b.conv(x, 4, 4, 1)));
  merge_and_compare(b);
  expect_one_conv(b);
  EXPECT_EQ(b.graph().nodes()[0].attributes.get_int("group", 0), 1);
}

// Dilation 2 and 1 meet on the grid of gcd 1: a 5×5 whose odd taps come from the dilated
// conv. Cheaper than two convs and an Add at 4 channels; at 64 it would do 39 % more
// multiply-adds, so the branches stay.
TEST(ReparamPass, MixedDilationsMergeOnlyWhenCheaper) {
  for (std::int64_t channels : {4, 64}) {
    SCOPED_TRACE(::testing::Message() << channels << " channels");
    GraphBuilder b(23);
    const std::string x = b.input("x", {1, channels, 8, 8});
    b.output(b.add(b.conv(x, channels, channels, 3, {.pads = ConvSpec::same(2), .dilation = 2}),
                   b.conv(x, channels, channels, 3, {.pads = kPad1})));
    if (channels == 4) {
      merge_and_compare(b);
      expect_one_conv(b);
      EXPECT_EQ(b.graph().nodes()[0].attributes.get_ints("kernel_shape"),
                (std::vector<std::int64_t>{5, 5}));
    } else {
      const passes::PassReport r = expect_unchanged(b);
      EXPECT_TRUE(has_note(r, "one conv would cost")) << notes_of(r);
    }
  }
}

// A depthwise 7×7 into a dense 1×1 (FastViT's ConvFFN) composes into a dense 7×7 that costs
// C_out·C_in·49 multiply-adds per pixel, far more than the two apart: the cost rule keeps them
// apart, and the pass must decide so without building that map (here 1024·256·49 doubles,
// 103 MB): the process's peak resident memory grows by far less.
TEST(ReparamPass, ACostlyLargeCompositionIsNeverBuilt) {
  GraphBuilder b(29);
  const std::string x = b.input("x", {1, 256, 8, 8});
  b.output(
      b.conv(b.conv(x, 256, 256, 7, {.pads = ConvSpec::same(3), .groups = 256}), 256, 1024, 1));
  const auto peak_kib = [] {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;  // KiB on Linux
  };
  const long before = peak_kib();
  expect_unchanged(b);
  EXPECT_LT(peak_kib() - before, 50 * 1024) << "KiB more at the peak";
}

TEST(ReparamPassDeclines, OutChannelsMismatch) {
  // [1, 1, H, W] + [1, 4, H, W] broadcasts; the convs cannot be one.
  GraphBuilder b(24);
  const std::string x = b.input("x", {1, 4, 6, 6});
  b.output(b.add(b.conv(x, 4, 4, 3, {.pads = kPad1}), b.conv(x, 4, 1, 1)));
  expect_declined(b, "Add 'Add_1' sums 4 and 1 channels");
}

TEST(ReparamPassDeclines, IdentityWithDifferentChannels) {
  GraphBuilder b(25);
  const std::string x = b.input("x", {1, 1, 6, 6});
  b.output(b.add(b.conv(x, 1, 4, 3, {.pads = kPad1}), x));
  expect_declined(b, "Add 'Add_1' sums 4 and 1 channels");
}

TEST(ReparamPassDeclines, IdentityWithStride) {
  GraphBuilder b(26);
  const std::string x = b.input("x", {1, 4, 1, 1});
  b.output(b.add(b.conv(x, 4, 4, 1, {.stride = 2}), x));
  expect_declined(b, "stride 2x2 vs 1x1");
}

TEST(ReparamPassDeclines, IntermediateValueWithAnotherReader) {
  GraphBuilder b(27);
  const std::string x = b.input("x", {1, 4, 6, 6});
  const std::string c1 = b.conv(x, 4, 4, 1);
  b.output(b.add(b.conv(x, 4, 4, 3, {.pads = kPad1}), b.bn(c1, 4)));
  b.output(b.relu(c1));
  expect_declined(b, "'" + c1 + "' has 2 consumers");
}

TEST(ReparamPass, BranchThatIsAGraphOutputStaysApart) {
  GraphBuilder b(28);
  const std::string x = b.input("x", {1, 4, 6, 6});
  const std::string c1 = b.bn(b.conv(x, 4, 4, 1), 4);
  b.output(b.add(b.conv(x, 4, 4, 3, {.pads = kPad1}), c1));
  b.output(c1);
  // c1's own Conv → BN folds; the Add keeps reading it.
  const passes::PassReport r = merge_and_compare(b);
  EXPECT_EQ(b.op_counts(), (std::map<std::string, int>{{"Conv", 2}, {"Add", 1}}));
  EXPECT_TRUE(has_note(r, "branch mismatch: '" + c1 + "' is a graph output")) << notes_of(r);
}

TEST(ReparamPassDeclines, RuntimeWeights) {
  GraphBuilder b(29);
  const std::string x = b.input("x", {1, 4, 6, 6});
  const std::string w = b.input("w", {4, 4, 1, 1});
  b.output(b.add(
      b.conv(x, 4, 4, 3, {.pads = kPad1}),
      b.node("Conv", {x, w}, testing::attrs({{"kernel_shape", std::vector<std::int64_t>{1, 1}}}))));
  expect_declined(b, "weight 'w' is not a constant");
}

// 1×1 with a BN shift → 3×3 with zero padding: the border would change (DBB pads with the BN
// output for zero, which a plain ONNX Conv does not).
TEST(ReparamPass, SequentialWithBiasIntoZeroPaddingIsCut) {
  GraphBuilder b(30);
  const std::string x = b.input("x", {1, 4, 6, 6});
  const std::string mid = b.bn(b.conv(x, 4, 4, 1, {.bias = false}), 4);
  b.output(b.add(b.conv(x, 4, 4, 3, {.pads = kPad1}), b.conv(mid, 4, 4, 3, {.pads = kPad1})));
  // The head's own Conv → BN still folds, cut off from the block.
  const passes::PassReport r = merge_and_compare(b);
  EXPECT_EQ(b.op_counts(), (std::map<std::string, int>{{"Conv", 3}, {"Add", 1}}));
  EXPECT_TRUE(has_note(r, "pads with 0 where the merged conv would read")) << notes_of(r);
}

TEST(ReparamPassDeclines, AvgPoolNotCountingPadding) {
  GraphBuilder b(31);
  const std::string x = b.input("x", {1, 4, 6, 6});
  b.output(b.add(b.conv(x, 4, 4, 3, {.pads = kPad1}), b.avg_pool(x, 3, 1, kPad1, false)));
  expect_declined(b, "AveragePool");
}

// ((conv3×3(x) + conv1×1(x)) + z): the tree as a whole is not a block of x, its inner Add is.
TEST(ReparamPass, LeafFromElsewhereLeavesTheInnerBlockToMerge) {
  GraphBuilder b(32);
  const std::string x = b.input("x", {1, 4, 6, 6});
  const std::string z = b.input("z", {1, 4, 6, 6});
  b.output(b.sum({b.conv(x, 4, 4, 3, {.pads = kPad1}), b.conv(x, 4, 4, 1), z}));
  const passes::PassReport r = merge_and_compare(b);
  EXPECT_TRUE(has_note(r, "merged 3 branches of 'z', 'x' into 1 Conv and 1 Add")) << notes_of(r);
  expect_one_conv(b, {{"Add", 1}});
}

// (((BN(conv3×3) + conv1×1) + x) + AveragePool not counting its padding) → BN: the pool is
// not a conv, so the inner three branches merge and the pool and the BN stay.
TEST(ReparamPass, InnerBranchesMergeAroundABadOne) {
  GraphBuilder b(34);
  const std::string x = b.input("x", {2, 5, 7, 7});
  b.output(b.relu(
      b.bn(b.sum({b.bn(b.conv(x, 5, 5, 3, {.pads = kPad1, .bias = false}), 5),
                  b.conv(x, 5, 5, 1, {.bias = false}), x, b.avg_pool(x, 3, 1, kPad1, false)}),
           5)));
  const passes::PassReport r = merge_and_compare(b);
  // The BN after the sum scales the pool's output: a depthwise 1×1 conv on it.
  EXPECT_EQ(b.op_counts(),
            (std::map<std::string, int>{{"Conv", 2}, {"AveragePool", 1}, {"Add", 1}, {"Relu", 1}}));
  EXPECT_TRUE(has_note(r, "branch mismatch: AveragePool 'AveragePool_1': only an AveragePool"))
      << notes_of(r);
}

// A post-sum BN that cannot fold stays; the branches still merge.
TEST(ReparamPass, PostSumBatchNormInTrainingModeStays) {
  GraphBuilder b(33);
  const std::string x = b.input("x", {1, 4, 6, 6});
  b.output(b.bn(b.add(b.conv(x, 4, 4, 3, {.pads = kPad1}), b.conv(x, 4, 4, 1)), 4));
  b.graph().node(b.graph().nodes().size() - 1).attributes.set("training_mode", std::int64_t{1});
  const passes::PassReport r = merge_and_compare(b);
  expect_one_conv(b, {{"BatchNormalization", 1}});
  EXPECT_TRUE(has_note(r, "merged 2 branches")) << notes_of(r);
}

std::string zero_pad(GraphBuilder& b, const std::string& x, std::int64_t p) {
  const std::string pads = b.constant("pads", testing::int64s({0, 0, p, p, 0, 0, p, p}));
  return b.node("Pad", {x, pads});
}

// DBB written the export-friendly way (BNAndPad as a padded 1×1 conv): the 1×1 takes the
// padding, so its border holds its bias, which is what the merged conv assumes; then the K×K
// and the AvgPool read it unpadded. Plus the AvgPool on x itself exported as Pad → AveragePool.
TEST(ReparamPass, DiverseBranchBlockPaddedHeads) {
  for (std::int64_t groups : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << "groups " << groups);
    GraphBuilder b(static_cast<std::uint64_t>(40 + groups));
    const std::string x = b.input("x", {2, 4, 9, 9});
    const ConvSpec head = {.pads = kPad1, .groups = groups};
    b.output(b.relu(b.sum({
        b.conv(x, 4, 6, 3, {.pads = kPad1, .groups = groups}),
        b.conv(x, 4, 6, 1, {.groups = groups}),
        b.bn(b.avg_pool(zero_pad(b, b.bn(b.conv(x, 4, 6, 1, head), 6), 0), 3, 1, {0, 0, 0, 0}), 6),
        b.conv(b.bn(b.conv(x, 4, 8, 1, head), 8), 8, 6, 3, {.groups = groups}),
    })));
    const passes::PassReport r = merge_and_compare(b);
    expect_one_conv(b, {{"Relu", 1}});
    EXPECT_TRUE(has_note(r, "merged 4 branches")) << notes_of(r);
  }
}

TEST(ReparamPass, PaddedAvgPoolOnXDepthwise) {
  GraphBuilder b(43);
  const std::string x = b.input("x", {1, 8, 7, 7});
  const std::string mid = b.bn(b.conv(x, 8, 16, 1, {.pads = kPad1, .groups = 8}), 16);
  b.output(b.relu(b.sum({
      b.conv(x, 8, 8, 3, {.pads = kPad1, .groups = 8}),
      b.bn(b.avg_pool(zero_pad(b, x, 1), 3, 1, {0, 0, 0, 0}), 8),
      b.bn(b.conv(mid, 16, 8, 3, {.groups = 8}), 8),
  })));
  merge_and_compare(b);
  expect_one_conv(b, {{"Relu", 1}});
}

// A zero Pad after a biased 1×1 cannot move in front of it; cut there, the Pad still folds into
// the 3×3 after it as that conv's padding.
TEST(ReparamPass, ZeroPadAfterABiasedHeadIsCut) {
  GraphBuilder b(44);
  const std::string x = b.input("x", {1, 4, 6, 6});
  b.output(b.add(b.conv(x, 4, 4, 3, {.pads = kPad1}),
                 b.conv(zero_pad(b, b.conv(x, 4, 4, 1), 1), 4, 4, 3)));
  const passes::PassReport r = merge_and_compare(b);
  EXPECT_EQ(b.op_counts(), (std::map<std::string, int>{{"Conv", 3}, {"Add", 1}}));
  EXPECT_TRUE(has_note(r, "Pad 'Pad_1' pads with 0 where the merged conv would read"))
      << notes_of(r);
}

TEST(ReparamPassDeclines, PadWithANonZeroValue) {
  GraphBuilder b(45);
  const std::string x = b.input("x", {1, 4, 6, 6});
  const std::string pads = b.constant("pads", testing::int64s({0, 0, 1, 1, 0, 0, 1, 1}));
  const std::string padded = b.node("Pad", {x, pads, b.constant("v", testing::values({0.5f}, {}))});
  b.output(b.add(b.conv(x, 4, 4, 3, {.pads = kPad1}), b.avg_pool(padded, 3, 1, {0, 0, 0, 0})));
  expect_declined(b, "Pad 'Pad_1' pads with 0.5 where the merged conv would read 0");
}

// x[:, :, :, c:-c] (or rows) as ONNX Slice with constant starts/ends/axes/steps.
std::string crop(GraphBuilder& b, const std::string& x, std::int64_t axis, std::int64_t c,
                 std::int64_t end) {
  const auto i64 = [&](const char* name, std::int64_t v) {
    return b.constant(name, testing::int64s({v}));
  };
  return b.node("Slice",
                {x, i64("starts", c), i64("ends", end), i64("axes", axis), i64("steps", 1)});
}

// ACNet at padding 0: the 3×1 conv reads x cropped by a column each side, the 1×3 by a row;
// both windows still center in the 3×3, so the block is one 3×3 conv with padding 0.
TEST(ReparamPass, ACNetWithCroppedInputs) {
  for (std::int64_t stride : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << "stride " << stride);
    GraphBuilder b(static_cast<std::uint64_t>(50 + stride));
    const std::string x = b.input("x", {1, 3, 11, 10});
    b.output(b.relu(b.sum({b.conv(x, 3, 5, 3, {.stride = stride}),
                           b.conv(crop(b, x, 3, 1, -1), 3, 5, {3, 1}, {.stride = stride}),
                           b.conv(crop(b, x, -2, 1, -1), 3, 5, {1, 3}, {.stride = stride})})));
    merge_and_compare(b);
    expect_one_conv(b, {{"Relu", 1}});
    EXPECT_EQ(b.graph().nodes()[0].attributes.get_ints("pads"),
              (std::vector<std::int64_t>{0, 0, 0, 0}));
  }
}

TEST(ReparamPassDeclines, CropThenZeroPadding) {
  GraphBuilder b(53);
  const std::string x = b.input("x", {1, 3, 8, 8});
  b.output(b.add(b.conv(x, 3, 3, 3),
                 b.conv(crop(b, x, 3, 2, -2), 3, 3, {3, 1}, {.pads = {0, 1, 0, 1}})));
  expect_declined(b, "zeros padded on the left of a crop");
}

TEST(ReparamPassDeclines, CropThatDependsOnTheInputSize) {
  GraphBuilder b(54);
  const std::string x = b.input("x", {1, 3, 8, 8});
  b.output(b.add(b.conv(x, 3, 3, 3), b.conv(crop(b, x, 3, 1, 7), 3, 3, {3, 1})));
  expect_declined(b, "depends on the input size");
}

// A graph whose conv weights are already channels_last (convert_conv2d_weight_memory_format,
// or a layout pass) stays so: the merged conv's weight keeps the format, and the result holds.
TEST(ReparamPass, ChannelsLastWeightsStayChannelsLast) {
  GraphBuilder b(60);
  const std::string x = b.input("x", {1, 6, 8, 8});
  b.output(repvgg_block(b, x, 6, 6, 1, 2));
  nn::utils::convert_conv2d_weight_memory_format(b.graph(), MemoryFormat::ChannelsLast);
  merge_and_compare(b);
  expect_one_conv(b, {{"Relu", 1}});
  const Tensor& w = b.graph().constant(b.graph().nodes()[0].inputs[1]);
  EXPECT_EQ(w.suggest_memory_format(), MemoryFormat::ChannelsLast);
}

// Every pass the optimizer runs on a block, in its order, ends at one conv.
TEST(ReparamPass, AfterBnFoldingAndBeforeDeadCode) {
  GraphBuilder b(61);
  const std::string x = b.input("x", {2, 4, 7, 7});
  b.output(repvgg_block(b, b.identity(x), 4, 4));
  const Tensor in = b.random_input();
  const Tensor before = b.run({in})[0];
  passes::eliminate_dead_code(b.graph());
  passes::fold_batch_norms(b.graph());
  const passes::PassReport r = passes::reparameterize_branches(b.graph());
  passes::eliminate_dead_code(b.graph());
  b.graph().verify();
  EXPECT_TRUE(testing::model_close(b.run({in})[0], before)) << notes_of(r);
  expect_one_conv(b, {{"Relu", 1}});
}

}  // namespace
}  // namespace refold
