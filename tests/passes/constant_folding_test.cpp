#include <gtest/gtest.h>

#include <string>

#include "passes/constant_folding.h"
#include "passes/passes.h"
#include "refold/error.h"
#include "testing/compare.h"
#include "testing/graph_builder.h"
#include "testing/pass_checks.h"

namespace refold {
namespace {

using testing::attrs;
using testing::GraphBuilder;
using testing::has_note;
using testing::int64s;

// x + ((a + b) · c): the constant subtree folds in one sweep, the Add reading x stays.
TEST(ConstantFolding, FoldsAConstantChainInOneSweepAndKeepsTheOutput) {
  GraphBuilder b;
  const auto x = b.input("x", {2, 3});
  const auto a = b.constant("a", testing::iota({2, 3}));
  const auto c1 = b.constant("b", testing::iota({2, 3}, 10));
  const auto c2 = b.constant("c", testing::values({0.5f, 2.0f, -1.0f}, {3}));
  const auto s = b.node("Add", {a, c1}, {}, "sum");
  const auto m = b.node("Mul", {s, c2}, {}, "scale");
  const auto y = b.node("Add", {x, m}, {}, "out");
  b.output(y);
  const Tensor in = testing::iota({2, 3}, -3);
  const Tensor expected = b.run({in})[0];

  const passes::PassReport report = passes::fold_constants(b.graph());
  EXPECT_TRUE(report.changed);
  b.graph().verify();
  ASSERT_EQ(b.graph().nodes().size(), 1u);
  EXPECT_EQ(b.graph().nodes()[0].name, "out");
  EXPECT_TRUE(b.graph().is_constant(m));
  EXPECT_TRUE(has_note(report, "folded Add 'sum'"));
  EXPECT_EQ(b.graph().constant(s).to_vector(), (std::vector<float>{10, 12, 14, 16, 18, 20}));
  EXPECT_TRUE(testing::all_close(b.run({in})[0], expected, testing::Tolerance::exact()));
  // The fixed point: a second sweep finds nothing.
  EXPECT_FALSE(passes::fold_constants(b.graph()).changed);
}

TEST(ConstantFolding, ResultOverTheByteBudgetStaysANodeWithANote) {
  GraphBuilder b;
  const auto x = b.input("x", {4, 256});
  const auto one = b.constant("one", testing::values({1.0f}, {1}));
  const auto shape = b.constant("shape", int64s({4, 256}));
  const auto big = b.node("Expand", {one, shape}, {}, "expand");
  const auto y = b.node("Add", {x, big}, {}, "out");
  b.output(y);
  // 4·256 floats = 4096 bytes: over a 1 KiB budget, under the default one.
  const passes::PassReport report = passes::fold_constants(b.graph(), 1024);
  EXPECT_FALSE(report.changed);
  EXPECT_EQ(b.graph().nodes().size(), 2u);
  EXPECT_TRUE(has_note(report, "Expand 'expand'")) << report.notes.size();
  EXPECT_TRUE(has_note(report, "4096 bytes, over the folding budget of 1024"));

  EXPECT_TRUE(passes::fold_constants(b.graph()).changed);
  EXPECT_EQ(b.graph().nodes().size(), 1u);
  EXPECT_GE(passes::kMaxFoldedBytes, std::size_t{64} << 20);
}

// A huge result is declined from the constant shape alone: folding ConstantOfShape([2^40])
// or Expand to [2^20, 2^20] must not try to allocate 4 TiB.
TEST(ConstantFolding, HugeShapesAreDeclinedBeforeAnythingIsAllocated) {
  GraphBuilder b;
  const auto x = b.input("x", {1});
  const auto huge = b.constant("huge", int64s({std::int64_t{1} << 40}));
  const auto filled = b.node("ConstantOfShape", {huge}, {}, "fill");
  const auto one = b.constant("one", testing::values({1.0f}, {1, 1}));
  const auto square = b.constant("square", int64s({std::int64_t{1} << 20, std::int64_t{1} << 20}));
  const auto expanded = b.node("Expand", {one, square}, {}, "expand");
  b.output(b.node("Add", {x, filled}, {}, "a"));
  b.output(b.node("Add", {x, expanded}, {}, "b"));
  passes::PassReport report;
  ASSERT_NO_THROW(report = passes::fold_constants(b.graph()));
  EXPECT_FALSE(report.changed);
  EXPECT_TRUE(
      has_note(report, "kept ConstantOfShape 'fill': its output would be 4398046511104 bytes"));
  EXPECT_TRUE(has_note(report, "kept Expand 'expand': its output would be 4398046511104 bytes"));
}

TEST(ConstantFolding, ANodeWritingAGraphOutputIsKept) {
  GraphBuilder b;
  b.input("x", {1});
  const auto a = b.constant("a", testing::values({1, 2}, {2}));
  const auto y = b.node("Add", {a, a}, {}, "double");
  b.output(y);
  const passes::PassReport report = passes::fold_constants(b.graph());
  EXPECT_FALSE(report.changed);
  EXPECT_EQ(b.graph().nodes().size(), 1u);
  EXPECT_TRUE(has_note(report, "writes graph output 'double_out'"));
}

TEST(ConstantFolding, AFoldedViewGetsItsOwnStorage) {
  GraphBuilder b;
  const auto x = b.input("x", {3, 2});
  const auto a = b.constant("a", testing::iota({2, 3}));
  const auto shape = b.constant("shape", int64s({3, 2}));
  const auto r = b.node("Reshape", {a, shape}, {}, "reshape");
  const auto y = b.node("Add", {x, r}, {}, "out");
  b.output(y);
  ASSERT_TRUE(passes::fold_constants(b.graph()).changed);
  ASSERT_TRUE(b.graph().is_constant(r));
  EXPECT_FALSE(b.graph().constant(r).shares_storage(b.graph().constant(a)));
  EXPECT_EQ(b.graph().constant(r).sizes(), (Shape{3, 2}));
  EXPECT_FLOAT_EQ(b.graph().constant(r).at({2, 1}), 5.0f);
}

TEST(ConstantFolding, ConstantNodeWithNoInputsFolds) {
  GraphBuilder b;
  const auto x = b.input("x", {2});
  const auto k = b.node("Constant", {}, attrs({{"value", testing::values({3, 4}, {2})}}), "k");
  const auto y = b.node("Mul", {x, k}, {}, "out");
  b.output(y);
  ASSERT_TRUE(passes::fold_constants(b.graph()).changed);
  EXPECT_TRUE(b.graph().is_constant(k));
  const Tensor out = b.run({testing::values({1, 2}, {2})})[0];
  EXPECT_EQ(out.to_vector(), (std::vector<float>{3, 8}));
}

TEST(ConstantFolding, ANodeThatFailsIsKeptForRunTimeToReport) {
  GraphBuilder b;
  const auto x = b.input("x", {2, 3});
  const auto a = b.constant("a", testing::iota({2, 3}));
  const auto shape = b.constant("shape", int64s({4, 4}));  // 6 elements cannot be 16
  const auto r = b.node("Reshape", {a, shape}, {}, "bad_reshape");
  const auto y = b.node("Add", {x, r}, {}, "out");
  b.output(y);
  passes::PassReport report;
  ASSERT_NO_THROW(report = passes::fold_constants(b.graph()));
  EXPECT_FALSE(report.changed);
  EXPECT_TRUE(has_note(report, "kept Reshape 'bad_reshape': running it failed"));
  EXPECT_THROW(b.run({testing::iota({2, 3})}), Error);
}

}  // namespace
}  // namespace refold
