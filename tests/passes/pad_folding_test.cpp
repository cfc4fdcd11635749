// pad-folding: a Pad by zeros of H and W in front of a Conv becomes the Conv's padding — outputs
// unchanged (testing::apply_pass runs the graph before and after), the pads added per side;
// a Pad that anything else reads stays for it; other Pads are left alone with a note.
#include <gtest/gtest.h>

#include "passes/passes.h"
#include "testing/graph_builder.h"
#include "testing/pass_checks.h"

namespace refold {
namespace {

using testing::GraphBuilder;
using testing::int64s;

// ONNX pads of a 4-d tensor: [N, C, H, W begins, N, C, H, W ends].
std::string pad(GraphBuilder& b, const std::string& x, std::vector<std::int64_t> pads,
                float value = 0.0f) {
  return b.node("Pad", {x, b.constant("pads", int64s(pads)), b.constant("value", full({}, value))});
}

const graph::Node& node_of(const GraphBuilder& b, const char* op_type) {
  for (const graph::Node& n : b.graph().nodes())
    if (n.op_type == op_type) return n;
  throw Error(std::string("no ") + op_type);
}

// HGNetV2's stem: Pad (0, 1, 0, 1) → 2×2 conv; the conv already padded once more.
TEST(PadFolding, AddsThePadToTheConvsPadding) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 4, 9, 8});
  b.output(b.conv(pad(b, x, {0, 0, 0, 0, 0, 0, 1, 1}), 4, 6, 2, {.pads = {1, 0, 0, 2}}));
  const passes::PassReport r = testing::apply_pass(b, passes::fold_pads);
  EXPECT_TRUE(r.changed) << testing::notes_of(r);
  EXPECT_TRUE(testing::has_note(r, "pads [1, 0, 1, 3]")) << testing::notes_of(r);
  const graph::Node& conv = node_of(b, "Conv");
  EXPECT_EQ(conv.inputs[0], "x");
  EXPECT_EQ(conv.attributes.get_ints("pads"), (std::vector<std::int64_t>{1, 0, 1, 3}));
}

// Strided, dilated, grouped convs; two of them reading one Pad, which then feeds nothing.
TEST(PadFolding, EveryConvReadingThePad) {
  GraphBuilder b;
  const std::string x = b.input("x", {2, 4, 7, 7});
  const std::string p = pad(b, x, {0, 0, 2, 1, 0, 0, 0, 3});
  b.output(b.add(b.conv(p, 4, 4, 3, {.stride = 2, .dilation = 2, .groups = 2}),
                 b.conv(p, 4, 4, 5, {.stride = 2, .pads = {1, 0, 0, 1}})));
  const passes::PassReport r = testing::apply_pass(b, passes::fold_pads);
  EXPECT_TRUE(r.changed);
  for (const graph::Node& n : b.graph().nodes()) {
    if (n.op_type == "Conv") {
      EXPECT_EQ(n.inputs[0], "x");
    }
  }
  passes::eliminate_dead_code(b.graph());
  EXPECT_EQ(b.op_counts().count("Pad"), 0u);
}

// A MaxPool reads the Pad too (HGNetV2's stem): the conv folds it, the Pad stays for the pool.
TEST(PadFolding, KeepsThePadForOtherReaders) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 4, 6, 6});
  const std::string p = pad(b, x, {0, 0, 0, 0, 0, 0, 1, 1});
  b.output(b.conv(p, 4, 4, 2));
  b.output(
      b.node("MaxPool", {p}, testing::attrs({{"kernel_shape", std::vector<std::int64_t>{2, 2}}})));
  testing::apply_pass(b, passes::fold_pads);
  EXPECT_EQ(node_of(b, "Conv").inputs[0], "x");
  EXPECT_EQ(node_of(b, "MaxPool").inputs[0], p);
}

TEST(PadFolding, LeavesOtherPadsAlone) {
  {  // a value other than 0
    GraphBuilder b;
    const std::string x = b.input("x", {1, 4, 6, 6});
    b.output(b.conv(pad(b, x, {0, 0, 1, 1, 0, 0, 1, 1}, 0.5f), 4, 4, 3));
    const passes::PassReport r = testing::expect_left_alone(b, passes::fold_pads);
    EXPECT_TRUE(testing::has_note(r, "not 0")) << testing::notes_of(r);
  }
  {  // channels padded
    GraphBuilder b;
    const std::string x = b.input("x", {1, 4, 6, 6});
    b.output(b.conv(pad(b, x, {0, 1, 0, 0, 0, 1, 0, 0}), 6, 4, 3));
    testing::expect_left_alone(b, passes::fold_pads);
  }
  {  // a crop
    GraphBuilder b;
    const std::string x = b.input("x", {1, 4, 6, 6});
    b.output(b.conv(pad(b, x, {0, 0, -1, 0, 0, 0, 0, 0}), 4, 4, 3));
    testing::expect_left_alone(b, passes::fold_pads);
  }
}

}  // namespace
}  // namespace refold
