// native::scatter_nd (kernels/native/scatter_nd.h) against reference::scatter_nd: indices naming
// elements, rows and whole slices, negative and repeated indices (the last write wins), the
// exporters' box of every element's index (merged into a copy per innermost run, or one copy
// where the updates cover the data), updates that are a strided view; its decline and errors;
// and ops::ScatterND keeping the plan of constant indices across runs.
#include "kernels/native/scatter_nd.h"

#include <gtest/gtest.h>

#include <vector>

#include "kernels/reference/tensor_ops.h"
#include "ops/indexing.h"
#include "refold/error.h"
#include "testing/compare.h"
#include "testing/error_table.h"

namespace refold {
namespace {

using testing::Tolerance;

// An int64 tensor of `values`, row-major, of `sizes`.
Tensor int64s(const std::vector<std::int64_t>& values, const Shape& sizes) {
  Tensor t = empty(sizes, DType::Int64);
  EXPECT_EQ(static_cast<std::size_t>(t.numel()), values.size());
  std::copy(values.begin(), values.end(), t.data<std::int64_t>());
  return t;
}

Tensor native_scatter(const Tensor& data, const Tensor& indices, const Tensor& updates) {
  reference::check_scatter_nd(data, indices, updates);
  std::string declined;
  Tensor out =
      native::scatter_nd(data, updates, native::scatter_plan(data.sizes(), indices), &declined);
  EXPECT_TRUE(out.defined()) << declined;
  return out;
}

// The exporters' `data[:, :, a0:a1, b0:b1] = updates`: every element's index, [N, C, h, w, 4].
Tensor box_indices(const Shape& data, std::int64_t a0, std::int64_t a1, std::int64_t b0,
                   std::int64_t b1) {
  std::vector<std::int64_t> v;
  for (std::int64_t n = 0; n < data[0]; ++n)
    for (std::int64_t c = 0; c < data[1]; ++c)
      for (std::int64_t i = a0; i < a1; ++i)
        for (std::int64_t j = b0; j < b1; ++j) v.insert(v.end(), {n, c, i, j});
  return int64s(v, {data[0], data[1], a1 - a0, b1 - b0, 4});
}

TEST(NativeScatterND, MatchesTheReference) {
  const Tensor data = randn({2, 3, 4, 5});
  struct Case {
    const char* what;
    Tensor indices;
  };
  const std::vector<Case> cases = {
      {"whole slices (k = 1), one negative", int64s({1, -2}, {2, 1})},
      {"rows (k = 3), a repeat: the last write wins", int64s({0, 1, 2, 1, 2, 3, 0, 1, 2}, {3, 3})},
      {"single elements (k = 4), out of order",
       int64s({1, 2, 3, 4, 0, 0, 0, 0, 1, 0, 3, 1}, {3, 4})},
      {"rows in a batch of index rows", int64s({0, 0, 1, 1, 1, 2, 0, 2}, {2, 2, 2})},
      {"no rows", empty({0, 2}, DType::Int64)},
  };
  for (const Case& c : cases) {
    Shape updates_sizes(c.indices.sizes().begin(), c.indices.sizes().end() - 1);
    for (std::int64_t d = c.indices.size(-1); d < data.dim(); ++d)
      updates_sizes.push_back(data.size(d));
    const Tensor updates = randn(updates_sizes);
    EXPECT_TRUE(testing::all_close(native_scatter(data, c.indices, updates),
                                   reference::scatter_nd(data, c.indices, updates),
                                   Tolerance::exact()))
        << c.what;
  }
}

TEST(NativeScatterND, TheExportersBoxIsACopyPerInnermostRun) {
  const Shape sizes{1, 2, 6, 7};
  const Tensor data = randn(sizes), indices = box_indices(sizes, 1, 6, 2, 7);
  const Tensor updates = randn({1, 2, 5, 5});
  const native::ScatterPlan plan = native::scatter_plan(sizes, indices);
  EXPECT_EQ(plan.copies.size(), 2u * 5u);  // one per (channel, row) of the box
  EXPECT_FALSE(plan.covers_data);
  EXPECT_TRUE(testing::all_close(native_scatter(data, indices, updates),
                                 reference::scatter_nd(data, indices, updates),
                                 Tolerance::exact()));
}

TEST(NativeScatterND, UpdatesCoveringTheDataAreOneCopy) {
  const Shape sizes{1, 2, 3, 4};
  const Tensor data = randn(sizes), indices = box_indices(sizes, 0, 3, 0, 4);
  const Tensor updates = randn({4, 3, 2, 1}).permute({3, 2, 1, 0});  // a strided view
  const native::ScatterPlan plan = native::scatter_plan(sizes, indices);
  ASSERT_EQ(plan.copies.size(), 1u);
  EXPECT_TRUE(plan.covers_data);
  EXPECT_TRUE(testing::all_close(native_scatter(data, indices, updates), updates.contiguous(),
                                 Tolerance::exact()));
}

TEST(NativeScatterND, DeclinesChannelsLastDataAndNamesABadIndex) {
  const Tensor data = randn({1, 3, 2, 2}).contiguous(MemoryFormat::ChannelsLast);
  const Tensor indices = int64s({0, 1}, {1, 2});
  std::string declined;
  EXPECT_FALSE(native::scatter_nd(data, randn({1, 2, 2}),
                                  native::scatter_plan(data.sizes(), indices), &declined)
                   .defined());
  EXPECT_EQ(declined, "data is channels_last (the reference keeps the format)");
  testing::expect_errors({{"index past the axis",
                           [&] {
                             native::scatter_plan({2, 3}, int64s({0, 3}, {1, 2}));
                           },
                           "scatter_nd: index 3 out of range for axis 1 of size 3"},
                          {"index before the axis",
                           [&] {
                             native::scatter_plan({2, 3}, int64s({-3}, {1, 1}));
                           },
                           "scatter_nd: index -3 out of range for axis 0 of size 2"}});
}

TEST(OpsScatterND, ConstantIndicesKeepTheirPlanAcrossRunsAndSizes) {
  ops::ScatterND op(/*constant_indices=*/true);
  const Tensor indices = int64s({1, 0, -1}, {3, 1});
  for (const Shape& sizes : {Shape{3, 4}, Shape{3, 4}, Shape{5, 2}}) {
    const Tensor data = randn(sizes), updates = randn({3, sizes[1]});
    EXPECT_TRUE(testing::all_close(op.run({data, indices, updates})[0],
                                   reference::scatter_nd(data, indices, updates),
                                   Tolerance::exact()));
  }
}

// The plan is made from the indices' values once: a constant's storage never changes, so a later
// run does not read them again (shown by changing them in place, which a graph constant never
// sees); indices that are not constant are read on every run.
TEST(OpsScatterND, OnlyIndicesThatAreNotConstantAreReadOnEveryRun) {
  const Tensor data = randn({3, 4}), updates = randn({1, 4});
  for (const bool constant : {true, false}) {
    ops::ScatterND op(constant);
    Tensor indices = int64s({0}, {1, 1});
    const Tensor first = reference::scatter_nd(data, indices, updates);
    EXPECT_TRUE(testing::all_close(op.run({data, indices, updates})[0], first, Tolerance::exact()));
    *indices.data<std::int64_t>() = 2;
    const Tensor expected = constant ? first : reference::scatter_nd(data, indices, updates);
    EXPECT_TRUE(
        testing::all_close(op.run({data, indices, updates})[0], expected, Tolerance::exact()))
        << (constant ? "constant" : "not constant");
  }
}

}  // namespace
}  // namespace refold
