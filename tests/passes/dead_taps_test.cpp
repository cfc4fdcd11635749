// dead-taps: convs whose taps only ever read padding at the declared input size shrink to the
// taps that read the input — outputs unchanged, the kernel, pads and dilation as the rule in
// src/passes/dead_taps.cpp says; everything else is left alone.
#include <gtest/gtest.h>

#include "passes/passes.h"
#include "testing/graph_builder.h"
#include "testing/pass_checks.h"

namespace refold {
namespace {

using testing::ConvSpec;
using testing::GraphBuilder;

const graph::Node& only_conv(const GraphBuilder& b) {
  for (const graph::Node& n : b.graph().nodes())
    if (n.op_type == "Conv") return n;
  throw Error("no Conv");
}

std::vector<std::int64_t> ints(const graph::Node& n, const char* name) {
  return n.attributes.get_ints(name);
}

// DeepLab's ASPP branch: 3×3, dilation 6, padding 6 over a 6×6 map is exactly a 1×1 conv.
TEST(DeadTaps, DilatedConvOverASmallMapBecomesOneByOne) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 8, 6, 6});
  b.output(b.relu(b.conv(x, 8, 4, 3, {.pads = ConvSpec::same(6), .dilation = 6})));
  const passes::PassReport r = testing::apply_pass(b, passes::drop_dead_taps);
  EXPECT_TRUE(r.changed);
  EXPECT_TRUE(testing::has_note(r, "3×3 taps → 1×1")) << testing::notes_of(r);
  const graph::Node& c = only_conv(b);
  EXPECT_EQ(ints(c, "kernel_shape"), (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(ints(c, "pads"), (std::vector<std::int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(ints(c, "dilations"), (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(b.graph().constant(c.inputs[1]).sizes(), (Shape{4, 8, 1, 1}));
}

// A 7×7 "same" conv over a 2×2 map: only the middle 3×3 taps ever read the input.
TEST(DeadTaps, LargeKernelOverATinyMapKeepsTheMiddleTaps) {
  GraphBuilder b;
  const std::string x = b.input("x", {2, 4, 2, 2});
  b.output(b.conv(x, 4, 6, 7, {.pads = ConvSpec::same(3)}));
  testing::apply_pass(b, passes::drop_dead_taps);
  const graph::Node& c = only_conv(b);
  EXPECT_EQ(ints(c, "kernel_shape"), (std::vector<std::int64_t>{3, 3}));
  EXPECT_EQ(ints(c, "pads"), (std::vector<std::int64_t>{1, 1, 1, 1}));
}

// Each axis on its own, with stride 2, grouped, asymmetric pads, no bias.
TEST(DeadTaps, AxesStridesGroupsAndAsymmetricPads) {
  for (const Size2d stride : {Size2d{1, 1}, Size2d{2, 1}, Size2d{2, 2}}) {
    GraphBuilder b;
    const std::string x = b.input("x", {1, 4, 3, 9});
    b.output(b.conv(
        x, 4, 8, {3, 3},
        {.stride = stride, .pads = {5, 1, 5, 1}, .dilation = {5, 1}, .groups = 2, .bias = false}));
    const passes::PassReport r = testing::apply_pass(b, passes::drop_dead_taps);
    EXPECT_TRUE(r.changed) << testing::notes_of(r);
    const graph::Node& c = only_conv(b);
    EXPECT_EQ(ints(c, "kernel_shape")[0], 1) << testing::notes_of(r);
    EXPECT_EQ(ints(c, "kernel_shape")[1], 3);  // every W tap reads the input
    EXPECT_EQ(c.attributes.get_int("group", 1), 2);
  }
}

TEST(DeadTaps, LeavesConvsWhoseTapsAllReadTheInput) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 4, 3, 3});
  // 3×3, dilation 2, pads 2 over 3×3: the corner outputs reach the far rows through taps 0, 2.
  b.output(b.conv(x, 4, 4, 3, {.pads = ConvSpec::same(2), .dilation = 2}));
  testing::expect_left_alone(b, passes::drop_dead_taps);
}

TEST(DeadTaps, LeavesConvsOverAnInputOfUnknownSize) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 8, 6, 6});
  b.output(b.conv(x, 8, 4, 3, {.pads = ConvSpec::same(6), .dilation = 6}));
  b.graph().inputs[0].shape->at(2) = {-1, "H"};  // declared after building: H is symbolic
  const passes::PassReport r = passes::drop_dead_taps(b.graph());
  EXPECT_FALSE(r.changed) << testing::notes_of(r);
  EXPECT_EQ(ints(only_conv(b), "kernel_shape"), (std::vector<std::int64_t>{3, 3}));
}

TEST(DeadTaps, KeepsAndSaysWhyWhereTheSmallerConvWouldNeedNegativePads) {
  GraphBuilder b;
  // n = 2, k = 3, d = 2, pads (1, 2): output 0 reads row 1 through tap 1 only; dropping tap 0
  // would need a top pad of 1 − 2 = −1.
  const std::string x = b.input("x", {1, 2, 2, 2});
  b.output(b.conv(x, 2, 2, {3, 1}, {.pads = {1, 0, 2, 0}, .dilation = {2, 1}}));
  const passes::PassReport r = testing::expect_left_alone(b, passes::drop_dead_taps);
  EXPECT_TRUE(testing::has_note(r, "would need negative padding")) << testing::notes_of(r);
}

// Through the whole pipeline: it runs before reparameterize, so a dilated branch that is really
// 1×1 then merges with a 3×3 branch beside it (a RepVGG block in disguise).
TEST(DeadTaps, RunsInThePipeline) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 8, 5, 5});
  const std::string y1 = b.conv(x, 8, 4, 3, {.pads = ConvSpec::same(12), .dilation = 12});
  const std::string y2 = b.conv(x, 8, 4, 3, {.pads = ConvSpec::same(1)});
  b.output(b.add(y1, y2));
  const auto pipeline = [](graph::Graph& g) {
    passes::PassReport all{"pipeline", false, {}};
    for (const passes::PassReport& p : passes::optimize(g).passes) {
      if (p.pass == "dead-taps") all = p;
    }
    return all;
  };
  const passes::PassReport r = testing::apply_pass(b, pipeline);
  EXPECT_TRUE(r.changed) << testing::notes_of(r);
  EXPECT_EQ(b.op_counts(), (std::map<std::string, int>{{"Conv", 1}})) << b.graph().dump();
}

}  // namespace
}  // namespace refold
