// The shape arithmetic (Shape, Gather, Slice, Expand, ConstantOfShape, Range, ScatterND) and
// Constant, Cast, Equal, Where, built from ONNX nodes and run on int64 and float tensors, with
// every error message; then a torch.onnx-style shape chain through graph::Graph::run.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/reference/tensor_ops.h"
#include "kernels/verbose.h"
#include "onnx/ops_tensor_helpers.h"
#include "ops/indexing.h"
#include "testing/builders.h"
#include "testing/error_table.h"

namespace refold::testing {
namespace {

using I64s = std::vector<std::int64_t>;
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kBig = (std::int64_t{1} << 53) + 1;  // not exactly a float or double

// ---- Shape ----

TEST(OnnxShape, StartEndClampAndChannelsLast) {
  const Tensor x = to_channels_last(zeros({2, 3, 4, 5}));
  EXPECT_EQ(i64_values(OpCase("Shape", {"x"}).run({x})), (I64s{2, 3, 4, 5}));
  EXPECT_EQ(i64_values(OpCase("Shape", {"x"}).integer("start", 1).run({x})), (I64s{3, 4, 5}));
  EXPECT_EQ(i64_values(OpCase("Shape", {"x"}).integer("end", -1).run({x})), (I64s{2, 3, 4}));
  EXPECT_EQ(i64_values(OpCase("Shape", {"x"}).integer("start", -10).integer("end", 10).run({x})),
            (I64s{2, 3, 4, 5}));
  EXPECT_EQ(OpCase("Shape", {"x"}).integer("start", 3).integer("end", 1).run({x}).numel(), 0);
  EXPECT_EQ(OpCase("Shape", {"x"}).run({zeros({})}).sizes(), (Shape{0}));
}

// ---- Gather ----

TEST(OnnxGather, AxesIndicesRankAndNegativeIndices) {
  const Tensor data = iota({3, 2});
  // axis 0, indices [[0, 1], [1, 2]] → [2, 2, 2]
  Tensor y = OpCase("Gather", {"d", "i"}).constant("i", i64({0, 1, 1, 2}, {2, 2})).run({data});
  EXPECT_EQ(y.sizes(), (Shape{2, 2, 2}));
  EXPECT_EQ(y.to_vector(), (std::vector<float>{0, 1, 2, 3, 2, 3, 4, 5}));
  // A 0-d index drops the axis.
  y = OpCase("Gather", {"d", "i"}).constant("i", i64({-1}, {})).run({data});
  EXPECT_EQ(y.sizes(), (Shape{2}));
  EXPECT_EQ(y.to_vector(), (std::vector<float>{4, 5}));
  // axis 1 on int64 data, negative indices; exact.
  OpCase c("Gather", {"d", "i"});
  c.integer("axis", 1);
  y = c.run({i64({kBig, 1, 2, kMin}, {2, 2}), i64({-1, 0, -2})});
  EXPECT_EQ(y.sizes(), (Shape{2, 3}));
  EXPECT_EQ(i64_values(y), (I64s{1, kBig, kBig, kMin, 2, 2}));
  // Gather(Shape(x), 1): a torch.onnx staple.
  y = OpCase("Gather", {"d", "i"}).constant("i", i64({1}, {})).run({i64({8, 3, 224, 224})});
  EXPECT_EQ(i64_values(y), (I64s{3}));
  EXPECT_EQ(y.dim(), 0);
}

// Indices that step evenly upward (one index, or i, i + s, …) slice the axis: a view of the data
// where the executor takes views, one copy where it does not. Any other indices copy rows
// (native; data not dense in logical order made so first). Every path gives the reference's
// bits.
TEST(OnnxGather, EvenStepsAreASliceOtherIndicesCopyRows) {
  const Tensor data = iota({2, 4, 3, 5});
  struct Row {
    const char* name;
    Tensor indices;
    const char* ran;  // with views; without, a slice is a copy
  };
  const Row rows[] = {
      {"one index (qkv[1])", i64({1}, {}), "Gather: view"},
      {"one index, kept as an axis", i64({-1}, {1}), "Gather: view"},
      {"every other", i64({0, 2}), "Gather: view"},
      {"evenly stepped, 2-d", i64({1, 2}, {1, 2}), "Gather: view"},
      {"out of order", i64({2, 0, 3}), "Gather: native"},
      {"repeated", i64({1, 1}), "Gather: native"},
      {"2-d, negative", i64({-1, 0, 2, 1}, {2, 2}), "Gather: native"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const Tensor want = reference::gather(data, row.indices, 1);
    ops::Gather op(1);
    std::vector<Tensor> inputs = {data, row.indices};
    DispatchLog log;
    const Tensor view = op.run_views(inputs).at(0);
    EXPECT_EQ(log.take(), (std::vector<std::string>{row.ran}));
    EXPECT_EQ(view.sizes(), want.sizes());
    EXPECT_EQ(view.to_vector(), want.to_vector());
    EXPECT_EQ(view.shares_storage(data), std::string_view(row.ran) == "Gather: view");
    const Tensor dense = op.run(inputs).at(0);
    EXPECT_TRUE(dense.is_contiguous());
    EXPECT_FALSE(dense.shares_storage(data));
    EXPECT_EQ(dense.to_vector(), want.to_vector());
  }
  // channels_last data is not dense in logical order: made so, then its rows copied (VOLO's
  // unfold of an NHWC activation; the reference took 10× longer).
  const Tensor nhwc = to_channels_last(data);
  ops::Gather op(1);
  std::vector<Tensor> inputs = {nhwc, i64({3, 0})};
  DispatchLog log;
  EXPECT_EQ(op.run(inputs).at(0).to_vector(), reference::gather(data, inputs[1], 1).to_vector());
  EXPECT_EQ(log.take(), (std::vector<std::string>{"Gather: native"}));
}

TEST(OnnxGather, Errors) {
  const Tensor data = iota({3, 2});
  expect_errors({
      {"index 3",
       [&] {
         OpCase("Gather", {"d", "i"}).run({data, i64({0, 3})});
       },
       "gather: index 3 out of range for axis 0 of size 3"},
      {"index -4",
       [&] {
         OpCase("Gather", {"d", "i"}).run({data, i64({-4})});
       },
       "gather: index -4 out of range for axis 0 of size 3"},
      {"float indices",
       [&] {
         OpCase("Gather", {"d", "i"}).run({data, values({0}, {1})});
       },
       "gather: indices have dtype float32; expected int64"},
      {"constant float indices",
       [&] {
         OpCase("Gather", {"d", "i"}).constant("i", values({0}, {1})).module();
       },
       "indices have dtype float32; expected int64"},
      {"axis",
       [&] {
         OpCase("Gather", {"d", "i"}).integer("axis", 2).run({data, i64({0})});
       },
       "gather: axis 2 out of range for a 2-d tensor"},
      {"constant data axis",
       [&] {
         OpCase("Gather", {"d", "i"}).constant("d", data).integer("axis", -3).module();
       },
       "axis -3 out of range for rank 2"},
  });
}

// ---- Slice ----

OpCase slice_case(I64s starts, I64s ends, I64s axes = {}, I64s steps = {}) {
  std::vector<std::string> names = {"x", "starts", "ends"};
  if (!axes.empty() || !steps.empty()) names.push_back(axes.empty() ? "" : "axes");
  if (!steps.empty()) names.push_back("steps");
  OpCase c("Slice", names);
  c.constant("starts", i64(starts)).constant("ends", i64(ends));
  if (!axes.empty()) c.constant("axes", i64(axes));
  if (!steps.empty()) c.constant("steps", i64(steps));
  return c;
}

TEST(OnnxSlice, StartsEndsAxesSteps) {
  // The spec's examples on [[1, 2, 3, 4], [5, 6, 7, 8]].
  const Tensor x = values({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
  EXPECT_EQ(slice_case({1, 0}, {2, 3}, {0, 1}, {1, 2}).run({x}).to_vector(),
            (std::vector<float>{5, 7}));
  EXPECT_EQ(slice_case({0, 1}, {-1, 1000}).run({x}).to_vector(), (std::vector<float>{2, 3, 4}));
  // Negative step: reverse the columns (start INT64_MAX clamps to size − 1, end INT64_MIN to −1).
  EXPECT_EQ(slice_case({kMax}, {kMin}, {1}, {-1}).run({x}).to_vector(),
            (std::vector<float>{4, 3, 2, 1, 8, 7, 6, 5}));
  // step −2 from index 3 down to (excluding) 0: 3, 1.
  EXPECT_EQ(slice_case({-1}, {0}, {-1}, {-2}).run({x}).to_vector(),
            (std::vector<float>{4, 2, 8, 6}));
  // An empty dimension stays empty in both directions.
  EXPECT_EQ(slice_case({0}, {kMax}, {1}, {-1}).run({zeros({2, 0})}).sizes(), (Shape{2, 0}));
  EXPECT_EQ(slice_case({-1}, {kMin}, {1}, {-1}).run({zeros({2, 0})}).sizes(), (Shape{2, 0}));
  // Empty: start past the end.
  EXPECT_EQ(slice_case({5}, {kMax}, {1}).run({x}).sizes(), (Shape{2, 0}));
  // Huge steps do not overflow.
  EXPECT_EQ(slice_case({0}, {kMax}, {1}, {kMax}).run({x}).to_vector(), (std::vector<float>{1, 5}));
  EXPECT_EQ(slice_case({kMax}, {kMin}, {1}, {kMin}).run({x}).to_vector(),
            (std::vector<float>{4, 8}));
}

TEST(OnnxSlice, Int64ChannelsLastRuntimeInputsAndOpset9) {
  EXPECT_EQ(i64_values(slice_case({-2}, {kMax}).run({i64({kBig, 2, 3, kMin})})), (I64s{3, kMin}));
  // Channels of a channels_last activation (a YOLO-style split) stay channels_last.
  const Tensor x = iota({1, 4, 2, 2});
  OpCase c("Slice", {"x", "s", "e", "a"});
  const Tensor y = c.run({to_channels_last(x), i64({1}), i64({3}), i64({1})});
  EXPECT_TRUE(is_channels_last(y));
  EXPECT_EQ(y.to_vector(), (std::vector<float>{4, 5, 6, 7, 8, 9, 10, 11}));
  // opset 9: the attribute form.
  OpCase old("Slice", {"x"});
  old.opset(9).ints("starts", {1}).ints("ends", {3}).ints("axes", {1});
  EXPECT_EQ(old.run({x}).to_vector(), (std::vector<float>{4, 5, 6, 7, 8, 9, 10, 11}));
}

TEST(OnnxSlice, Errors) {
  const Tensor x = iota({2, 4});
  expect_errors({
      {"step 0", [&] { slice_case({0}, {1}, {0}, {0}).module(); }, "steps [0] contain 0"},
      {"lengths",
       [&] {
         slice_case({0, 0}, {1}).module();
       },
       "2 starts but 1 ends"},
      {"axes length",
       [&] {
         slice_case({0}, {1}, {0, 1}).module();
       },
       "1 starts but 2 axes"},
      {"axis range", [&] { slice_case({0}, {1}, {2}).run({x}); }, "axis 2 out of range for rank 2"},
      {"repeated axis",
       [&] {
         slice_case({0, 0}, {1, 1}, {1, -1}).run({x});
       },
       "axis -1 repeated in axes [1, -1]"},
      {"too many starts",
       [&] {
         slice_case({0, 0, 0}, {1, 1, 1}).run({x});
       },
       "3 starts for a 2-d input"},
      {"runtime step 0",
       [&] {
         OpCase("Slice", {"x", "s", "e", "a", "t"})
             .run({x, i64({0}), i64({1}), i64({0}), i64({0})});
       },
       "steps [0] contain 0"},
      {"opset 9 without ends",
       [&] { OpCase("Slice", {"x"}).opset(9).ints("starts", {0}).module(); },
       "the starts and ends attributes are required"},
      {"float starts",
       [&] {
         OpCase("Slice", {"x", "s", "e"}).run({x, values({0}, {1}), i64({1})});
       },
       "Slice: starts has dtype float32; expected int64"},
  });
}

// ---- Expand, ConstantOfShape, Range ----

TEST(OnnxExpand, BroadcastsBothWays) {
  const Tensor x = values({1, 2, 3}, {3, 1});
  Tensor y = OpCase("Expand", {"x", "s"}).constant("s", i64({2, 1, 2})).run({x});
  EXPECT_EQ(y.sizes(), (Shape{2, 3, 2}));
  EXPECT_EQ(y.to_vector(), (std::vector<float>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  // A shape smaller than the input keeps the input's sizes.
  y = OpCase("Expand", {"x", "s"}).constant("s", i64({1})).run({x});
  EXPECT_EQ(y.sizes(), (Shape{3, 1}));
  y = OpCase("Expand", {"x", "s"}).run({i64({kBig}, {}), i64({2})});
  EXPECT_EQ(i64_values(y), (I64s{kBig, kBig}));
  expect_errors({
      {"incompatible",
       [&] {
         OpCase("Expand", {"x", "s"}).run({x, i64({2, 2})});
       },
       "expand: shapes [3, 1] [2, 2] cannot be broadcast (dimension 0: 3 vs 2)"},
      {"negative",
       [&] {
         OpCase("Expand", {"x", "s"}).constant("s", i64({-1})).module();
       },
       "shape [-1] has a negative size"},
  });
}

TEST(OnnxConstantOfShape, ValueAndDefault) {
  OpCase c("ConstantOfShape", {"s"});
  c.node().attributes.set("value", i64({kBig}, {1}));
  Tensor y = c.run({i64({2, 3})});
  EXPECT_EQ(y.sizes(), (Shape{2, 3}));
  EXPECT_EQ(i64_values(y), I64s(6, kBig));
  y = OpCase("ConstantOfShape", {"s"}).run({i64({2})});
  EXPECT_EQ(y.dtype(), DType::Float32);
  EXPECT_EQ(y.to_vector(), (std::vector<float>{0, 0}));
  EXPECT_EQ(OpCase("ConstantOfShape", {"s"}).run({i64({})}).dim(), 0);
  expect_errors({
      {"negative",
       [&] {
         OpCase("ConstantOfShape", {"s"}).constant("s", i64({2, -1})).module();
       },
       "shape [2, -1] has a negative size"},
      {"value size",
       [&] {
         OpCase c2("ConstantOfShape", {"s"});
         c2.node().attributes.set("value", zeros({2}));
         c2.module();
       },
       "value must hold one element, got shape [2]"},
  });
}

TEST(OnnxRange, Int64AndFloat) {
  OpCase c("Range", {"a", "b", "d"});
  EXPECT_EQ(i64_values(c.run({i64({1}, {}), i64({10}, {}), i64({3}, {})})), (I64s{1, 4, 7}));
  EXPECT_EQ(i64_values(c.run({i64({10}, {}), i64({1}, {}), i64({-3}, {})})), (I64s{10, 7, 4}));
  EXPECT_EQ(c.run({i64({5}, {}), i64({1}, {}), i64({1}, {})}).numel(), 0);
  // ceil(span / delta) without overflowing span + delta − 1.
  const std::int64_t half = kMax / 2 + 1;
  EXPECT_EQ(i64_values(c.run({i64({0}, {}), i64({kMax}, {}), i64({half}, {})})), (I64s{0, half}));
  EXPECT_EQ(c.run({values({0}, {}), values({1}, {}), values({0.25f}, {})}).to_vector(),
            (std::vector<float>{0, 0.25f, 0.5f, 0.75f}));
  expect_errors({
      {"delta 0",
       [&] {
         c.run({i64({0}, {}), i64({1}, {}), i64({0}, {})});
       },
       "range: delta must not be 0"},
      {"overflow",
       [&] {
         c.run({i64({kMin}, {}), i64({kMax}, {}), i64({1}, {})});
       },
       "range: limit 9223372036854775807 − start -9223372036854775808 overflows"},
      {"mixed",
       [&] {
         c.run({i64({0}, {}), values({1}, {}), i64({1}, {})});
       },
       "range: limit has dtype float32 but start has int64"},
      {"not scalar",
       [&] {
         c.run({i64({0, 1}), i64({1}, {}), i64({1}, {})});
       },
       "range: start must be a scalar, got shape [2]"},
  });
}

// ---- ScatterND ----

TEST(OnnxScatterND, SpecExampleAndSlices) {
  // The spec's first example: indices address single elements.
  Tensor y = OpCase("ScatterND", {"d", "i", "u"})
                 .run({values({1, 2, 3, 4, 5, 6, 7, 8}, {8}), i64({4, 3, 1, 7}, {4, 1}),
                       values({9, 10, 11, 12}, {4})});
  EXPECT_EQ(y.to_vector(), (std::vector<float>{1, 11, 3, 10, 9, 6, 7, 12}));
  // Rows (k = 1 of rank 2), negative index, int64 exact; data is not modified.
  const Tensor data = i64({0, 0, 0, 0}, {2, 2});
  y = OpCase("ScatterND", {"d", "i", "u"}).run({data, i64({-1}, {1, 1}), i64({kBig, 6}, {1, 2})});
  EXPECT_EQ(i64_values(y), (I64s{0, 0, kBig, 6}));
  EXPECT_EQ(i64_values(data), (I64s{0, 0, 0, 0}));
  expect_errors({
      {"index range",
       [&] {
         OpCase("ScatterND", {"d", "i", "u"}).run({data, i64({2}, {1, 1}), i64({1, 2}, {1, 2})});
       },
       "scatter_nd: index 2 out of range for axis 0 of size 2"},
      {"updates shape",
       [&] {
         OpCase("ScatterND", {"d", "i", "u"}).run({data, i64({1}, {1, 1}), i64({1, 2, 3})});
       },
       "scatter_nd: updates have shape [3]; expected [1, 2] (indices [1, 1], data [2, 2])"},
      {"reduction",
       [&] {
         OpCase("ScatterND", {"d", "i", "u"}).text("reduction", "add").module();
       },
       "unsupported: reduction 'add' (refold implements reduction 'none')"},
  });
}

// ---- Constant, Cast, Equal, Where ----

TEST(OnnxConstant, EveryValueForm) {
  OpCase t("Constant", {});
  t.node().attributes.set("value", i64({kBig, 2}));
  EXPECT_EQ(i64_values(t.run({})), (I64s{kBig, 2}));
  Tensor y = OpCase("Constant", {}).real("value_float", 2.5f).run({});
  EXPECT_EQ(y.dim(), 0);
  EXPECT_EQ(y.item(), 2.5f);
  OpCase fs("Constant", {});
  fs.node().attributes.set("value_floats", std::vector<float>{1, 2});
  EXPECT_EQ(fs.run({}).to_vector(), (std::vector<float>{1, 2}));
  y = OpCase("Constant", {}).integer("value_int", kMin).run({});
  EXPECT_EQ(y.dim(), 0);
  EXPECT_EQ(i64_values(y), (I64s{kMin}));
  EXPECT_EQ(i64_values(OpCase("Constant", {}).ints("value_ints", {3, kMax}).run({})),
            (I64s{3, kMax}));
  expect_errors({
      {"two values",
       [&] { OpCase("Constant", {}).integer("value_int", 1).real("value_float", 1).module(); },
       "expects exactly one value attribute, got 2 ([value_float, value_int])"},
      {"none", [&] { OpCase("Constant", {}).module(); },
       "expects exactly one value attribute, got 0 ([])"},
      {"string", [&] { OpCase("Constant", {}).text("value_string", "a").module(); },
       "unsupported: Constant with value_string"},
      {"unknown", [&] { OpCase("Constant", {}).integer("valu", 1).module(); },
       "unknown attribute 'valu' (expected value, value_float(s) or value_int(s))"},
      {"input", [&] { OpCase("Constant", {"x"}).integer("value_int", 1).module(); },
       "expects 0 to 0 inputs, got 1"},
  });
}

OpCase cast_to(std::int64_t to) {
  OpCase c("Cast", {"x"});
  c.integer("to", to);
  return c;
}

TEST(OnnxCast, FloatIntBoolInt32) {
  const Tensor f = values({1.7f, -1.7f, 0, -0.0f, 2.5e9f}, {5});
  EXPECT_EQ(i64_values(cast_to(7).run({f})), (I64s{1, -1, 0, 0, 2500000000}));
  EXPECT_EQ(i64_values(cast_to(9).run({f})), (I64s{1, 1, 0, 0, 1}));
  // int64 → int32 wraps: 2^32 + 5 → 5, 2^31 → −2^31.
  const Tensor big = i64({(std::int64_t{1} << 32) + 5, std::int64_t{1} << 31, -3});
  EXPECT_EQ(i64_values(cast_to(6).run({big})), (I64s{5, -(std::int64_t{1} << 31), -3}));
  EXPECT_EQ(i64_values(cast_to(9).run({big})), (I64s{1, 1, 1}));
  EXPECT_EQ(cast_to(1).run({i64({3, -4})}).to_vector(), (std::vector<float>{3, -4}));
  const Tensor nan = values({std::nanf("")}, {1});
  EXPECT_EQ(i64_values(cast_to(9).run({nan})), (I64s{1}));
  const Tensor b = cast_to(16).run({values({1.0f + 1.0f / 256}, {1})});
  EXPECT_EQ(b.dtype(), DType::BFloat16);
  EXPECT_EQ(b.item(), 1.0f);  // ties to even
  // Channels_last in, channels_last out.
  EXPECT_TRUE(is_channels_last(cast_to(7).run({to_channels_last(zeros({1, 3, 2, 2}))})));
  expect_errors({
      {"nan to int64", [&] { cast_to(7).run({nan}); }, "cast: value nan does not fit int64"},
      {"int32 range", [&] { cast_to(6).run({f}); }, "cast: value 2500000000 does not fit int32"},
      {"float16", [&] { cast_to(10).module(); },
       "unsupported: Cast to data type 10 (refold casts to float (1), bfloat16 (16), int64 (7), "
       "int32 (6) and bool (9))"},
      {"no to", [&] { OpCase("Cast", {"x"}).module(); }, "the to attribute is required"},
  });
}

TEST(OnnxEqualWhere, BroadcastBooleansAsInt64) {
  Tensor y = OpCase("Equal", {"a", "b"}).run({i64({1, 2, 3}), i64({2, kBig}, {2, 1})});
  EXPECT_EQ(y.sizes(), (Shape{2, 3}));
  EXPECT_EQ(i64_values(y), (I64s{0, 1, 0, 0, 0, 0}));
  y = OpCase("Equal", {"a", "b"})
          .run({values({std::nanf(""), 0.0f}, {2}), values({std::nanf(""), -0.0f}, {2})});
  EXPECT_EQ(i64_values(y), (I64s{0, 1}));
  y = OpCase("Where", {"c", "x", "y"}).run({i64({1, 0, 1}), i64({kBig, 2, 3}), i64({9}, {})});
  EXPECT_EQ(i64_values(y), (I64s{kBig, 9, 3}));
  y = OpCase("Where", {"c", "x", "y"})
          .run({i64({0, 1}, {2, 1}), values({1, 2}, {2}), values({5}, {1})});
  EXPECT_EQ(y.to_vector(), (std::vector<float>{5, 5, 1, 2}));
  expect_errors({
      {"equal dtypes",
       [&] {
         OpCase("Equal", {"a", "b"}).run({i64({1}), values({1}, {1})});
       },
       "Equal: inputs have dtypes int64 and float32; they must match"},
      {"where shapes",
       [&] {
         OpCase("Where", {"c", "x", "y"})
             .run({i64({1, 0, 1}), values({1, 2}, {2}), values({1}, {1})});
       },
       "where: shapes [3] [2] [1] cannot be broadcast (dimension 0: 3 vs 2)"},
      {"where dtypes",
       [&] {
         OpCase("Where", {"c", "x", "y"}).run({i64({1}), values({1}, {1}), i64({1})});
       },
       "where: x has dtype float32 but y has int64"},
  });
}

// The layout plan's FirstInput rule (src/passes/layout.cpp): a 4-d channels_last first input
// keeps its format through Cast, Equal, Where and ScatterND; Gather and Expand write fresh
// contiguous tensors.
TEST(OnnxTensorOps, OutputLayoutFollowsTheFirstInput) {
  const Tensor x = to_channels_last(iota({1, 3, 2, 2}));
  EXPECT_TRUE(is_channels_last(cast_to(7).run({x})));
  EXPECT_TRUE(is_channels_last(OpCase("Equal", {"a", "b"}).run({x, values({4}, {1})})));
  const Tensor cond = to_channels_last(cast_to(9).run({iota({1, 3, 2, 2})}));
  const Tensor w = OpCase("Where", {"c", "x", "y"}).run({cond, x, values({-1}, {1})});
  EXPECT_TRUE(is_channels_last(w));
  std::vector<float> expected = iota(Shape{1, 3, 2, 2}).to_vector();
  expected[0] = -1;
  EXPECT_EQ(w.to_vector(), expected);
  const Tensor s =
      OpCase("ScatterND", {"d", "i", "u"}).run({x, i64({0, 2, 1, 1}, {1, 4}), values({-5}, {1})});
  EXPECT_TRUE(is_channels_last(s));
  expected = iota(Shape{1, 3, 2, 2}).to_vector();
  expected[11] = -5;
  EXPECT_EQ(s.to_vector(), expected);
  EXPECT_FALSE(is_channels_last(OpCase("Expand", {"x", "s"}).run({x, i64({1})})));
}

// ---- a torch.onnx shape chain, run by the executor ----

// x.view(x.size(0), -1) as torch.onnx writes it:
//   s = Shape(x); n = Gather(s, 0); u = Unsqueeze(n, [0]); t = Concat(u, [-1]); y = Reshape(x, t)
TEST(OnnxShapeChain, FlattenThroughTheGraphExecutor) {
  auto g = std::make_shared<graph::Graph>();
  g->inputs.push_back({"x", 1, std::nullopt});
  g->outputs.push_back({"y", 1, std::nullopt});
  g->set_constant("zero", i64({0}, {}));
  g->set_constant("axes0", i64({0}));
  g->set_constant("minus1", i64({-1}));
  auto add = [&](const std::string& name, const std::string& op, std::vector<std::string> in,
                 std::string out, graph::Attributes attrs = {}) {
    graph::Node n;
    n.name = name;
    n.op_type = op;
    n.inputs = std::move(in);
    n.outputs = {std::move(out)};
    n.attributes = std::move(attrs);
    n.module = ops::build_module({n, *g, 13});
    g->add_node(std::move(n));
  };
  graph::Attributes axis0;
  axis0.set("axis", std::int64_t{0});
  add("shape", "Shape", {"x"}, "s");
  add("gather", "Gather", {"s", "zero"}, "n");
  add("unsqueeze", "Unsqueeze", {"n", "axes0"}, "u");
  add("concat", "Concat", {"u", "minus1"}, "t", axis0);
  add("reshape", "Reshape", {"x", "t"}, "y");
  g->verify();
  const Tensor x = iota({2, 3, 2, 2});
  const std::uint64_t before = permute_count();
  const Tensor y = g->run({to_channels_last(x)})[0];
  EXPECT_EQ(y.sizes(), (Shape{2, 12}));
  EXPECT_EQ(y.to_vector(), x.to_vector());
  EXPECT_EQ(permute_count() - before, 1u);  // the one at Reshape, which needs NCHW order
}

}  // namespace
}  // namespace refold::testing
