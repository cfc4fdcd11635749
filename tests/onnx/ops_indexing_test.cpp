// Tile, GatherElements, ScatterElements (and Scatter), Trilu, EyeLike (src/ops/indexing.cpp) built
// from ONNX nodes and run: the spec's worked examples, int64 data exactly, channels_last inputs,
// negative indices and axes, every reduction, and every error message. The ONNX backend tests
// test_tile*, test_gather_elements_*, test_scatter_elements_*, test_scatter_*, test_tri[lu]_*
// run in conformance.
#include <gtest/gtest.h>

#include "kernels/reference/tensor_ops.h"
#include "onnx/ops_tensor_helpers.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"

namespace refold::testing {
namespace indexing_ops {

using F32s = std::vector<float>;
using I64s = std::vector<std::int64_t>;

// ---- Tile ----

TEST(OnnxTile, RepeatsEachDimension) {
  // [[1, 2], [3, 4]] tiled [2, 3] → rows 1 2 1 2 1 2 / 3 4 3 4 3 4, twice.
  const Tensor x = values({1, 2, 3, 4}, {2, 2});
  OpCase c("Tile", {"x", "r"});
  c.constant("r", i64({2, 3}));
  const Tensor y = c.run({x});
  EXPECT_EQ(y.sizes(), (Shape{4, 6}));
  EXPECT_EQ(y.to_vector(), (F32s{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4,  //
                                 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}));
  // Repeats as a runtime input; int64 data exactly; a zero repeat empties the dimension.
  OpCase runtime("Tile", {"x", "r"});
  EXPECT_EQ(i64_values(runtime.run({i64({7, -8}), i64({2})})), (I64s{7, -8, 7, -8}));
  EXPECT_EQ(OpCase("Tile", {"x", "r"}).run({x, i64({0, 1})}).sizes(), (Shape{0, 2}));
}

TEST(OnnxTile, ChannelsLastInputKeepsItsLayout) {
  const Tensor x = random({1, 3, 2, 2}, 1);
  OpCase c("Tile", {"x", "r"});
  c.constant("r", i64({2, 1, 1, 2}));
  const Tensor expected = c.run({x});
  const Tensor y = c.run({to_channels_last(x)});
  EXPECT_TRUE(is_channels_last(y));
  EXPECT_TRUE(all_close(y, expected, Tolerance::exact()));
  // y[1, c, h, 2 + w] = x[0, c, h, w]
  EXPECT_FLOAT_EQ(y.at({1, 2, 1, 3}), x.at({0, 2, 1, 1}));
}

TEST(OnnxTile, Errors) {
  expect_errors({
      {"negative constant",
       [] {
         OpCase("Tile", {"x", "r"}).constant("r", i64({1, -1})).module();
       },
       "repeats [1, -1] has a negative value"},
      {"constant rank",
       [] {
         OpCase("Tile", {"x", "r"}).constant("x", zeros({2})).constant("r", i64({1, 1})).module();
       },
       "repeats [1, 1] has 2 values for a 1-d input"},
      {"runtime negative",
       [] {
         OpCase("Tile", {"x", "r"}).run({zeros({2}), i64({-2})});
       },
       "tile: repeats [-2] has a negative value"},
      {"runtime rank",
       [] {
         OpCase("Tile", {"x", "r"}).run({zeros({2, 2}), i64({2})});
       },
       "tile: repeats [2] has 1 values for a 2-d input"},
      {"float repeats",
       [] {
         OpCase("Tile", {"x", "r"}).run({zeros({2}), values({2}, {1})});
       },
       "repeats"},
  });
}

// ---- GatherElements ----

TEST(OnnxGatherElements, SpecExamples) {
  // axis 1: [[1, 2], [3, 4]], indices [[0, 0], [1, 0]] → [[1, 1], [4, 3]].
  OpCase c("GatherElements", {"d", "i"});
  c.integer("axis", 1);
  EXPECT_EQ(c.run({values({1, 2, 3, 4}, {2, 2}), i64({0, 0, 1, 0}, {2, 2})}).to_vector(),
            (F32s{1, 1, 4, 3}));
  // axis 0 (the default) with negative indices: [[1, 2, 3], [4, 5, 6], [7, 8, 9]],
  // indices [[-1, 0, 2], [1, -3, 0]] → [[7, 2, 9], [4, 2, 3]].
  const Tensor data = values({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  const Tensor y =
      OpCase("GatherElements", {"d", "i"}).run({data, i64({-1, 0, 2, 1, -3, 0}, {2, 3})});
  EXPECT_EQ(y.sizes(), (Shape{2, 3}));
  EXPECT_EQ(y.to_vector(), (F32s{7, 2, 9, 4, 2, 3}));
  // int64 data, and a channels_last 4-d input read by logical index.
  EXPECT_EQ(i64_values(OpCase("GatherElements", {"d", "i"}).run({i64({5, 6}), i64({1, 1, 0})})),
            (I64s{6, 6, 5}));
  const Tensor x = random({1, 3, 2, 2}, 2);
  const Tensor idx = i64({2, 0, 1, 1}, {1, 1, 2, 2});
  OpCase nhwc("GatherElements", {"d", "i"});
  nhwc.integer("axis", 1);
  EXPECT_TRUE(
      all_close(nhwc.run({to_channels_last(x), idx}), nhwc.run({x, idx}), Tolerance::exact()));
  EXPECT_FLOAT_EQ(nhwc.run({x, idx}).at({0, 0, 0, 0}), x.at({0, 2, 0, 0}));
}

TEST(OnnxGatherElements, Errors) {
  const Tensor data = zeros({2, 2});
  expect_errors({
      {"index",
       [&] {
         OpCase("GatherElements", {"d", "i"}).run({data, i64({0, 2}, {1, 2})});
       },
       "gather_elements: index 2 out of range for axis 0 of size 2"},
      {"rank",
       [&] {
         OpCase("GatherElements", {"d", "i"}).run({data, i64({0})});
       },
       "gather_elements: indices [1] must have the rank of data [2, 2]"},
      {"wider",
       [&] {
         OpCase("GatherElements", {"d", "i"}).run({data, i64({0, 0, 0}, {1, 3})});
       },
       "gather_elements: indices [1, 3] exceed data [2, 2] in dimension 1"},
      {"axis",
       [&] {
         OpCase("GatherElements", {"d", "i"}).integer("axis", 2).run({data, i64({0}, {1, 1})});
       },
       "gather_elements: axis 2 out of range for a 2-d tensor"},
      {"constant axis",
       [&] {
         OpCase("GatherElements", {"d", "i"}).constant("d", data).integer("axis", -3).module();
       },
       "axis -3 out of range for rank 2"},
      {"float indices",
       [&] {
         OpCase("GatherElements", {"d", "i"}).constant("i", values({0}, {1, 1})).module();
       },
       "indices have dtype float32; expected int64"},
  });
}

// ---- ScatterElements / Scatter ----

TEST(OnnxScatterElements, SpecExamplesAndReductions) {
  // axis 1: data [[1, 2, 3, 4, 5]], indices [[1, 3]], updates [[1.1, 2.1]] → [[1, 1.1, 3, 2.1, 5]].
  const Tensor data = values({1, 2, 3, 4, 5}, {1, 5});
  const Tensor idx = i64({1, 3}, {1, 2});
  const Tensor upd = values({1.1f, 2.1f}, {1, 2});
  OpCase c("ScatterElements", {"d", "i", "u"});
  c.integer("axis", 1);
  EXPECT_EQ(c.run({data, idx, upd}).to_vector(), (F32s{1, 1.1f, 3, 2.1f, 5}));
  // Duplicate indices [[1, 1]] with updates [[1.1, 2.1]]: none keeps the last write, add sums
  // 2 + 1.1 + 2.1, mul 2 · 1.1 · 2.1, max and min pick.
  const Tensor dup = i64({1, 1}, {1, 2});
  auto with = [&](const char* reduction) {
    OpCase r("ScatterElements", {"d", "i", "u"});
    r.integer("axis", 1).text("reduction", reduction);
    return r.run({data, dup, upd}).to_vector()[1];
  };
  EXPECT_FLOAT_EQ(with("none"), 2.1f);
  EXPECT_FLOAT_EQ(with("add"), 5.2f);
  EXPECT_FLOAT_EQ(with("mul"), 2.0f * 1.1f * 2.1f);
  EXPECT_FLOAT_EQ(with("max"), 2.1f);
  EXPECT_FLOAT_EQ(with("min"), 1.1f);
  // Negative indices along axis 0 (the default); int64 data exactly; the opset 9 name.
  OpCase neg("ScatterElements", {"d", "i", "u"});
  EXPECT_EQ(i64_values(neg.run({i64({1, 2, 3}), i64({-1}), i64({9})})), (I64s{1, 2, 9}));
  OpCase old("Scatter", {"d", "i", "u"});
  old.opset(9).integer("axis", 1);
  EXPECT_EQ(old.run({data, idx, upd}).to_vector(), (F32s{1, 1.1f, 3, 2.1f, 5}));
  // channels_last data keeps its layout.
  const Tensor x = random({1, 2, 2, 2}, 3);
  OpCase cl("ScatterElements", {"d", "i", "u"});
  cl.integer("axis", 1);
  const Tensor i4 = i64({1, 0}, {1, 1, 1, 2}), u4 = values({7, 8}, {1, 1, 1, 2});
  const Tensor y = cl.run({to_channels_last(x), i4, u4});
  EXPECT_TRUE(is_channels_last(y));
  EXPECT_TRUE(all_close(y, cl.run({x, i4, u4}), Tolerance::exact()));
  EXPECT_FLOAT_EQ(y.at({0, 1, 0, 0}), 7);
  EXPECT_FLOAT_EQ(y.at({0, 0, 0, 1}), 8);
}

TEST(OnnxScatterElements, Errors) {
  const Tensor data = zeros({2, 2});
  expect_errors({
      {"reduction",
       [] {
         OpCase("ScatterElements", {"d", "i", "u"}).text("reduction", "avg").module();
       },
       "unknown reduction 'avg' (expected none, add, mul, max or min)"},
      {"index",
       [&] {
         OpCase("ScatterElements", {"d", "i", "u"}).run({data, i64({2}, {1, 1}), zeros({1, 1})});
       },
       "scatter_elements: index 2 out of range for axis 0 of size 2"},
      {"updates shape",
       [&] {
         OpCase("ScatterElements", {"d", "i", "u"}).run({data, i64({0}, {1, 1}), zeros({1, 2})});
       },
       "scatter_elements: updates [1, 2] must have the shape of indices [1, 1]"},
      {"dtype",
       [&] {
         OpCase("ScatterElements", {"d", "i", "u"}).run({data, i64({0}, {1, 1}), i64({0}, {1, 1})});
       },
       "scatter_elements: updates have dtype int64 but data has float32"},
      {"arity",
       [] {
         OpCase("ScatterElements", {"d", "i"}).module();
       },
       "expects 3 to 3 inputs, got 2"},
  });
}

// ---- Trilu ----

TEST(OnnxTrilu, UpperLowerAndK) {
  // x = iota [3, 4]: x[i, j] = 4i + j.
  const Tensor x = iota({3, 4});
  EXPECT_EQ(OpCase("Trilu", {"x"}).run({x}).to_vector(),
            (F32s{0, 1, 2, 3, 0, 5, 6, 7, 0, 0, 10, 11}));
  OpCase lower("Trilu", {"x", "k"});
  lower.integer("upper", 0).constant("k", i64({-1}, {}));
  EXPECT_EQ(lower.run({x}).to_vector(), (F32s{0, 0, 0, 0, 4, 0, 0, 0, 8, 9, 0, 0}));
  OpCase upper("Trilu", {"x", "k"});
  EXPECT_EQ(upper.run({x, i64({2}, {})}).to_vector(), (F32s{0, 0, 2, 3, 0, 0, 0, 7, 0, 0, 0, 0}));
  // k far outside: everything kept or nothing.
  EXPECT_EQ(OpCase("Trilu", {"x", "k"}).run({x, i64({-100}, {})}).to_vector(), x.to_vector());
  // Batched over leading dims, channels_last, int64.
  const Tensor b = random({2, 3, 3, 3}, 4);
  OpCase batched("Trilu", {"x"});
  const Tensor y = batched.run({to_channels_last(b)});
  EXPECT_TRUE(is_channels_last(y));
  EXPECT_TRUE(all_close(y, batched.run({b}), Tolerance::exact()));
  EXPECT_FLOAT_EQ(y.at({1, 2, 2, 0}), 0);
  EXPECT_FLOAT_EQ(y.at({1, 2, 0, 2}), b.at({1, 2, 0, 2}));
  EXPECT_EQ(i64_values(OpCase("Trilu", {"x"}).integer("upper", 0).run({i64({1, 2, 3, 4}, {2, 2})})),
            (I64s{1, 0, 3, 4}));
}

TEST(OnnxTrilu, Errors) {
  expect_errors({
      {"upper", [] { OpCase("Trilu", {"x"}).integer("upper", 2).module(); },
       "upper must be 0 or 1 (got 2)"},
      {"k values",
       [] {
         OpCase("Trilu", {"x", "k"}).constant("k", i64({1, 2})).module();
       },
       "k must be a scalar, got 2 values"},
      {"runtime k values",
       [] {
         OpCase("Trilu", {"x", "k"}).run({zeros({2, 2}), i64({1, 2})});
       },
       "Trilu: k must be a scalar, got 2 values"},
      {"rank", [] { OpCase("Trilu", {"x"}).run({zeros({3})}); },
       "trilu: input must have at least 2 dimensions, got [3]"},
  });
}

// ---- EyeLike ----

TEST(OnnxEyeLike, DiagonalsAndDtypes) {
  // [3, 4]: ones at (i, i + k).
  EXPECT_EQ(OpCase("EyeLike", {"x"}).run({zeros({3, 4})}).to_vector(),
            (F32s{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0}));
  EXPECT_EQ(OpCase("EyeLike", {"x"}).integer("k", 2).run({zeros({3, 4})}).to_vector(),
            (F32s{0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(OpCase("EyeLike", {"x"}).integer("k", -1).run({zeros({3, 2})}).to_vector(),
            (F32s{0, 0, 1, 0, 0, 1}));
  // A diagonal outside the matrix: all zeros.
  EXPECT_EQ(OpCase("EyeLike", {"x"}).integer("k", 4).run({zeros({2, 4})}).to_vector(),
            (F32s(8, 0.0f)));
  // The input's dtype, or the dtype attribute's (int64 from float, bool as int64, bfloat16).
  EXPECT_EQ(i64_values(OpCase("EyeLike", {"x"}).run({i64({5, 6, 7, 8}, {2, 2})})),
            (I64s{1, 0, 0, 1}));
  EXPECT_EQ(i64_values(OpCase("EyeLike", {"x"}).integer("dtype", 9).run({zeros({2, 2})})),
            (I64s{1, 0, 0, 1}));
  const Tensor bf = OpCase("EyeLike", {"x"}).integer("dtype", 16).run({zeros({2, 2})});
  EXPECT_EQ(bf.dtype(), DType::BFloat16);
  EXPECT_EQ(bf.to_vector(), (F32s{1, 0, 0, 1}));
}

TEST(OnnxEyeLike, Errors) {
  expect_errors({
      {"dtype", [] { OpCase("EyeLike", {"x"}).integer("dtype", 11).module(); },
       "unsupported: dtype 11 (refold makes float (1), bfloat16 (16), int64 (7), int32 (6) and "
       "bool (9))"},
      {"rank",
       [] {
         OpCase("EyeLike", {"x"}).run({zeros({2, 2, 2})});
       },
       "EyeLike: the input must be 2-d, got shape [2, 2, 2]"},
  });
}

}  // namespace indexing_ops
}  // namespace refold::testing

namespace refold::testing {
namespace gather_nd_ops {

// The examples of the ONNX GatherND specification, then batch_dims, negative indices, errors.
TEST(OnnxGatherND, SpecificationExamples) {
  const Tensor d2 = values({0, 1, 2, 3}, {2, 2});
  auto gather = [](const Tensor& data, const Tensor& indices, std::int64_t batch_dims = 0) {
    OpCase c("GatherND", {"data", "indices"});
    if (batch_dims != 0) c.integer("batch_dims", batch_dims);
    return c.run({data, indices});
  };
  EXPECT_EQ(gather(d2, i64({0, 0, 1, 1}, {2, 2})).to_vector(), (std::vector<float>{0, 3}));
  const Tensor rows = gather(d2, i64({1, 0}, {2, 1}));
  EXPECT_EQ(rows.sizes(), (Shape{2, 2}));
  EXPECT_EQ(rows.to_vector(), (std::vector<float>{2, 3, 0, 1}));
  const Tensor d3 = values({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  EXPECT_EQ(gather(d3, i64({0, 1, 1, 0}, {2, 2})).to_vector(), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_EQ(gather(d3, i64({0, 1, 1, 0}, {2, 1, 2})).sizes(), (Shape{2, 1, 2}));
  // batch_dims 1: row n indexes data[n].
  const Tensor batched = gather(d3, i64({1, 0}, {2, 1}), 1);
  EXPECT_EQ(batched.sizes(), (Shape{2, 2}));
  EXPECT_EQ(batched.to_vector(), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_EQ(gather(d2, i64({-1, -1}, {1, 2})).to_vector(), (std::vector<float>{3}));
}

TEST(OnnxGatherND, Errors) {
  const Tensor d2 = values({0, 1, 2, 3}, {2, 2});
  auto run = [&](const Tensor& indices, std::int64_t batch_dims) {
    return [=] {
      OpCase c("GatherND", {"data", "indices"});
      c.integer("batch_dims", batch_dims);
      c.run({d2, indices});
    };
  };
  EXPECT_TRUE(throws_error(run(i64({2, 0}, {1, 2}), 0),
                           "gather_nd: index 2 out of range for axis 0 of size 2"));
  EXPECT_TRUE(throws_error(
      run(i64({0, 0, 0}, {1, 3}), 0),
      "gather_nd: indices' last dimension 3 must be in [1, 2] (data rank 2 − batch_dims 0)"));
  EXPECT_TRUE(throws_error(run(i64({0, 0, 0}, {3, 1}), 1),
                           "gather_nd: batch dim 0 is 3 in indices but 2 in data"));
  EXPECT_TRUE(throws_error(
      [] {
        OpCase("GatherND", {"data", "indices"}).integer("batch_dims", -1).module();
      },
      "batch_dims must be non-negative (got -1)"));
}

}  // namespace gather_nd_ops
}  // namespace refold::testing
