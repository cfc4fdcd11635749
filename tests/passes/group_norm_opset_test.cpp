// The GroupNormalization canonicalize makes from Reshape → InstanceNormalization → Reshape
// follows the op version it is built at: scale and bias per group at opsets 18–20, per channel
// from 21 (expanded, each group's value over its channels). On imported models, whose opset
// the graph knows.
#include "testing/onnx_builder.h"  // first: it sets the ONNX_ML definitions

#include <gtest/gtest.h>

#include "passes/passes.h"
#include "refold/onnx/onnx.h"
#include "testing/compare.h"
#include "testing/graph_builder.h"
#include "testing/pass_checks.h"

namespace refold {
namespace {

TEST(Canonicalize, GroupNormGetsScaleAndBiasForTheVersionItIsBuiltAt) {
  const Shape shape = {2, 6, 4, 5};
  for (const int opset : {17, 21}) {
    SCOPED_TRACE(opset);
    testing::TempDir dir;
    testing::OnnxBuilder b(opset);
    b.input("x", {2, 6, 4, 5}).output("y", {2, 6, 4, 5});
    Generator gen(3);
    b.initializer("groups", testing::int64s({0, 3, -1}));
    b.initializer("back", testing::int64s({2, 6, 4, 5}));
    b.initializer("scale", randn({3}, {}, gen));
    b.initializer("bias", randn({3}, {}, gen));
    b.node("Reshape", {"x", "groups"}, {"r"}, "reshape");
    b.node("InstanceNormalization", {"r", "scale", "bias"}, {"n"}, "gn");
    b.node("Reshape", {"n", "back"}, {"y"}, "back");
    auto g = onnx::load(b.save(dir / "gn.onnx"));
    const Tensor in = randn(shape, {}, gen);
    const Tensor expected = g->run({in})[0];
    ASSERT_TRUE(passes::canonicalize(*g).changed);
    ASSERT_EQ(g->nodes().size(), 1u) << g->dump();
    const graph::Node& gn = g->nodes()[0];
    EXPECT_EQ(gn.op_type, "GroupNormalization");
    EXPECT_EQ(g->constant(gn.inputs[1]).numel(), opset >= 21 ? 6 : 3);
    EXPECT_EQ(g->constant(gn.inputs[2]).numel(), opset >= 21 ? 6 : 3);
    const Tensor after = g->run({in})[0];
    EXPECT_TRUE(testing::all_close(after, expected, testing::Tolerance::op_f32()));
    testing::expect_modules_follow_data(*g, {in}, {after});
  }
}

}  // namespace
}  // namespace refold
