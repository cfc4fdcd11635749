#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

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
using testing::kPad1;

// An int64 scalar constant.
std::string int64_scalar(GraphBuilder& b, const std::string& name, std::int64_t v) {
  Tensor t = empty({}, DType::Int64);
  *t.data<std::int64_t>() = v;
  return b.constant(name, t);
}

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
  EXPECT_FALSE(b.graph().is_constant(s));  // read only by the folded Mul: gone with it
  EXPECT_EQ(b.graph().constant(m).to_vector(), (std::vector<float>{5, 24, -14, 8, 36, -20}));
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
  const auto y = b.node("Add", {x, r}, {}, "add");
  // `a` is read by a node that stays too, so it stays beside its reshaped view.
  b.output(b.node("Mul", {b.node("Transpose", {y}, {}, "t"), a}, {}, "out"));
  ASSERT_TRUE(passes::fold_constants(b.graph()).changed);
  ASSERT_TRUE(b.graph().is_constant(r));
  ASSERT_TRUE(b.graph().is_constant(a));
  EXPECT_FALSE(b.graph().constant(r).shares_storage(b.graph().constant(a)));
  EXPECT_EQ(b.graph().constant(r).sizes(), (Shape{3, 2}));
  EXPECT_FLOAT_EQ(b.graph().constant(r).at({2, 1}), 5.0f);
}

// A constant whose last reader folds goes with it (the load's peak would otherwise hold every
// intermediate of a folded chain); a reshape that was its last reader takes its storage, and a
// slice of it, only part of it, gets storage of its own.
TEST(ConstantFolding, AConstantGoesWithItsLastReader) {
  GraphBuilder b;
  const auto x = b.input("x", {3, 2});
  const auto a = b.constant("a", testing::iota({2, 3}));
  const Tensor a_storage = b.graph().constant(a);
  const auto r = b.node("Reshape", {a, b.constant("shape", int64s({3, 2}))}, {}, "reshape");
  const auto c = b.constant("c", testing::iota({4, 2}));
  const Tensor c_storage = b.graph().constant(c);
  const auto part =
      b.node("Slice", {c, b.constant("starts", int64s({1})), b.constant("ends", int64s({4}))}, {},
             "slice");
  const auto d = b.constant("d", testing::iota({3, 2}));
  const auto e = b.node("Neg", {d}, {}, "neg");
  const auto f = b.node("Abs", {e}, {}, "abs");
  const auto y = b.node("Mul", {b.node("Add", {x, r}, {}, "add"), part}, {}, "mul");
  b.output(b.node("Sub", {y, f}, {}, "out"));
  const Tensor in = b.random_input();
  const Tensor expected = b.run({in})[0];

  ASSERT_TRUE(passes::fold_constants(b.graph()).changed);
  b.graph().verify();
  for (const auto& gone : {a, c, d, e}) EXPECT_FALSE(b.graph().is_constant(gone)) << gone;
  ASSERT_TRUE(b.graph().is_constant(r));  // the whole of `a`, reshaped: `a`'s storage
  EXPECT_TRUE(b.graph().constant(r).shares_storage(a_storage));
  ASSERT_TRUE(b.graph().is_constant(part));  // a slice, only part of `c`: storage of its own
  EXPECT_FALSE(b.graph().constant(part).shares_storage(c_storage));
  EXPECT_TRUE(b.graph().is_constant(f));
  EXPECT_TRUE(testing::all_close(b.run({in})[0], expected, testing::Tolerance::exact()));
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

// The index arithmetic an exporter writes around a tensor of a fixed size (torch.onnx's slice
// assignment reads Shape of the padded value) folds when the graph input's shape is static:
// a Shape or Size of a computed value runs on a stand-in of its shape, found through the
// producers (a strided Conv, an asymmetric Pad).
TEST(ConstantFolding, ShapeOfAValueWithAStaticShapeFolds) {
  GraphBuilder b;
  const auto x = b.input("x", {1, 3, 8, 6});
  const auto c = b.conv(x, 3, 4, 3, {.stride = 2, .pads = kPad1});  // [1, 4, 4, 3]
  const auto padded =
      b.node("Pad", {c, b.constant("pads", int64s({0, 0, 1, 2, 0, 0, 1, 2}))}, {}, "pad");
  const auto shape = b.node("Shape", {padded}, {}, "shape");
  const auto size = b.node("Size", {padded}, {}, "size");
  const auto one = b.constant("one", testing::values({1.0f}, {1}));
  const auto ones = b.node("Expand", {one, shape}, {}, "expand");
  const auto h = b.node("Gather", {shape, int64_scalar(b, "two", 2)}, {}, "h");
  const auto scale = b.node("Cast", {b.node("Mul", {size, h}, {}, "mul_sizes")},
                            attrs({{"to", std::int64_t{1}}}), "cast");
  b.output(b.node("Mul", {b.node("Add", {padded, ones}, {}, "add"), scale}, {}, "out"));
  const Tensor in = b.random_input();
  const Tensor expected = b.run({in})[0];

  const passes::PassReport report = passes::fold_constants(b.graph());
  b.graph().verify();
  EXPECT_TRUE(has_note(report, "folded Shape 'shape'")) << testing::notes_of(report);
  EXPECT_TRUE(has_note(report, "folded Size 'size'")) << testing::notes_of(report);
  // The shape and the size were read only by nodes that folded too: they went with them.
  EXPECT_FALSE(b.graph().is_constant(shape));
  EXPECT_FALSE(b.graph().is_constant(size));
  ASSERT_TRUE(b.graph().is_constant(ones));
  EXPECT_EQ(b.graph().constant(ones).sizes(), (Shape{1, 4, 6, 7}));
  ASSERT_TRUE(b.graph().is_constant(scale));
  EXPECT_FLOAT_EQ(b.graph().constant(scale).to_vector().at(0), 168.0f * 6.0f);
  // What is left reads the data: the Conv, the Pad, the Add and the Mul.
  EXPECT_EQ(b.op_counts(),
            (std::map<std::string, int>{{"Conv", 1}, {"Pad", 1}, {"Add", 1}, {"Mul", 1}}));
  EXPECT_TRUE(testing::all_close(b.run({in})[0], expected, testing::Tolerance::exact()));
}

// A dim that is not known (a symbolic batch), and a shape that depends on a floating-point
// value (a Range whose limit is data: ops::ShapeRule::ReadsFloatValues — a zero stand-in would
// give it 0 elements) keep their Shape nodes; a Shape of a static value beside them folds.
TEST(ConstantFolding, ShapeOfAValueWithoutAStaticShapeStays) {
  GraphBuilder b;
  const auto x = b.input("x", {-1, 3});
  const auto n = b.input("n", {});
  const auto z = b.input("z", {2, 5});
  const auto range = b.node("Range",
                            {b.constant("start", testing::values({0.0f}, {})), n,
                             b.constant("delta", testing::values({1.0f}, {}))},
                            {}, "range");
  const auto rx = b.relu(x);
  b.output(b.node("Reshape", {rx, b.node("Shape", {rx}, {}, "shape_of_batch")}));
  b.output(b.node("Expand", {b.constant("one", testing::values({1.0f}, {1})),
                             b.node("Shape", {range}, {}, "shape_of_range")}));
  b.output(b.node("Reshape", {z, b.node("Shape", {b.relu(z)}, {}, "shape_of_static")}));
  const passes::PassReport report = passes::fold_constants(b.graph());
  b.graph().verify();
  EXPECT_TRUE(has_note(report, "folded Shape 'shape_of_static'")) << testing::notes_of(report);
  EXPECT_EQ(b.count("Shape"), 2) << testing::notes_of(report);
  EXPECT_TRUE(b.graph().find_node("shape_of_batch").has_value());
  EXPECT_TRUE(b.graph().find_node("shape_of_range").has_value());
  EXPECT_TRUE(
      has_note(report, "kept Shape 'shape_of_batch': the shape of '" + rx + "' is not static"))
      << testing::notes_of(report);
  EXPECT_TRUE(
      has_note(report, "kept Shape 'shape_of_range': the shape of '" + range + "' is not static"))
      << testing::notes_of(report);
  const std::vector<Tensor> out =
      b.run({testing::iota({4, 3}), testing::values({3.0f}, {}), testing::iota({2, 5})});
  EXPECT_EQ(out[0].sizes(), (Shape{4, 3}));
  EXPECT_EQ(out[1].sizes(), (Shape{3}));
}

// A conv whose weight and bias come from Constant / Identity nodes (torchvision's DeepLab
// export writes its folded biases so) runs the dynamic-weight op at import; once folding makes
// them constants the node is built again as an nn::Conv2d, so a RepVGG block of such convs
// merges and convert_conv2d_weight_memory_format reaches it.
TEST(ConstantFolding, AConvWhoseWeightsBecameConstantsIsRebuiltAsAConv2d) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 4, 6, 6});
  Generator gen(3);
  auto conv_from_nodes = [&](std::int64_t k, const std::vector<std::int64_t>& pads) {
    const std::string w = b.node("Constant", {}, attrs({{"value", randn({4, 4, k, k}, {}, gen)}}));
    const std::string bias = b.node("Identity", {b.constant("bias", randn({4}, {}, gen))});
    return b.node("Conv", {x, w, bias},
                  attrs({{"kernel_shape", std::vector<std::int64_t>{k, k}}, {"pads", pads}}));
  };
  b.output(b.relu(b.add(conv_from_nodes(3, kPad1), conv_from_nodes(1, {0, 0, 0, 0}))));
  for (const graph::Node& n : b.graph().nodes()) {
    if (n.op_type != "Conv") continue;
    EXPECT_EQ(n.module->type_name(), "Conv");  // the dynamic-weight op
  }
  const passes::PassReport r =
      testing::apply_pass(b, [](graph::Graph& g) { return passes::fold_constants(g); });
  EXPECT_TRUE(has_note(r, "over its now constant inputs: runs Conv2d")) << testing::notes_of(r);
  for (const graph::Node& n : b.graph().nodes()) {
    if (n.op_type != "Conv") continue;
    EXPECT_EQ(n.module->type_name(), "Conv2d");
  }
  testing::apply_pass(b, passes::reparameterize_branches);
  EXPECT_EQ(b.count("Conv"), 1) << b.graph().dump();
}

}  // namespace
}  // namespace refold
