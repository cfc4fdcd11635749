// refold's ScatterND (reduction none) as block copies. With k = indices.size(−1) and S the
// elements of data's trailing r − k dims, row i of indices names the block of S elements at
// offset o_i = Σ_j indices[i, j] · stride_j of a row-major output, and
//   out = data;  out[o_i : o_i + S] = updates[i·S : (i+1)·S]   for i in order (last write wins).
// Rows whose blocks follow each other in both the output and the updates merge into one copy, so
// the exporters' `x[..., a:b, c:d] = y` — every element's index written out, 4 int64 per float
// (MViTv2's relative positions: 614 K rows) — becomes a copy per run of the innermost sliced
// axis, and a y that covers x in order one copy with no copy of x. The reference
// (kernels/reference/tensor_ops.h) walks every element through its index: 0.8 GB/s, 79 % of
// MViTv2-Tiny's time. A plan depends on data's sizes and the index values only: ops::ScatterND
// keeps it while its indices are a constant of the graph.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "refold/tensor.h"

namespace refold::native {

struct ScatterPlan {
  struct Copy {
    std::int64_t dst = 0, src = 0, count = 0;  // elements
  };
  Shape data_sizes;          // the data the plan was made for
  std::vector<Copy> copies;  // in indices' row order
  bool covers_data = false;  // one copy writes all of data: data itself is never read
};

// The plan for checked arguments (reference::check_scatter_nd); an index out of range is a
// refold::Error naming it.
ScatterPlan scatter_plan(const Shape& data_sizes, const Tensor& indices);

// out per `plan`, row-major, any dtype (a byte copy). Declines a 4-d channels_last data (the
// reference keeps that format).
Tensor scatter_nd(const Tensor& data, const Tensor& updates, const ScatterPlan& plan,
                  std::string* declined);

}  // namespace refold::native
