// Reductions: ReduceMean.
//
// ReduceMean(data[, axes]) → the mean over `axes`, each in [−rank, rank), none repeated:
//   opset 1–17: axes is an attribute; absent = every axis.
//   opset 18+:  axes is an optional int64 input; absent or empty = every axis, or, with
//               noop_with_empty_axes = 1, no axis (the input unchanged).
//   keepdims (default 1) keeps each reduced axis as size 1, else drops it.
// The mean over H and W of a 4-d input, kept (a squeeze-excite block's pooling), runs as the
// global average pool it is (functional::adaptive_avg_pool2d, oneDNN where it can); any other
// reduction runs the reference kernel. Layout: the result is new and contiguous (Fresh).
#include <algorithm>
#include <optional>
#include <vector>

#include "core/check.h"
#include "kernels/reference/onnx_ops.h"
#include "ops/op.h"
#include "ops/tensor_values.h"
#include "refold/functional.h"
#include "refold/graph/op.h"

namespace refold::ops {
namespace {

class ReduceMean : public graph::Op {
 public:
  // `axes`: the attribute (opset < 18); nullopt reads the optional second input instead.
  ReduceMean(std::optional<std::vector<std::int64_t>> axes, bool keepdims,
             bool noop_with_empty_axes)
      : Op("ReduceMean"),
        axes_(std::move(axes)),
        keepdims_(keepdims),
        noop_with_empty_axes_(noop_with_empty_axes) {}

  std::vector<Tensor> run(const std::vector<Tensor>& in) override {
    REFOLD_CHECK(!in.empty() && in.size() <= 2 && in[0].defined(),
                 "ReduceMean: expects data and optional axes; got {} inputs", in.size());
    const Tensor& x = in[0];
    std::vector<std::int64_t> axes = axes_.value_or(std::vector<std::int64_t>{});
    if (!axes_ && in.size() > 1 && in[1].defined())
      axes = int64_vector(in[1], "ReduceMean", "axes");
    if (axes.empty()) {
      if (noop_with_empty_axes_) return {x};
      for (std::int64_t d = 0; d < x.dim(); ++d) axes.push_back(d);
    }
    if (keepdims_ && is_global_spatial(axes, x.dim()))
      return {functional::adaptive_avg_pool2d(x, Size2d(1))};
    return {reference::reduce_mean(x, axes, keepdims_)};
  }

 private:
  // {2, 3} (or {−2, −1}, in any order) of a 4-d tensor: H and W.
  static bool is_global_spatial(std::vector<std::int64_t> axes, std::int64_t rank) {
    if (rank != 4 || axes.size() != 2) return false;
    for (std::int64_t& a : axes) a = a < 0 ? a + rank : a;
    std::sort(axes.begin(), axes.end());
    return axes[0] == 2 && axes[1] == 3;
  }

  std::optional<std::vector<std::int64_t>> axes_;
  bool keepdims_;
  bool noop_with_empty_axes_;
};

bool read_flag(const graph::Node& node, const char* name, std::int64_t fallback) {
  const std::int64_t v = node.attributes.get_int(name, fallback);
  REFOLD_CHECK(v == 0 || v == 1, "{} must be 0 or 1 (got {})", name, v);
  return v == 1;
}

void check_axes(const std::vector<std::int64_t>& axes) {
  std::vector<std::int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  const auto repeated = std::adjacent_find(sorted.begin(), sorted.end());
  REFOLD_CHECK(repeated == sorted.end(), "axes lists axis {} twice", *repeated);
}

nn::ModulePtr build_reduce_mean(const BuildContext& context) {
  const graph::Node& node = context.node;
  const bool axes_input = context.opset >= 18;  // v18: axes moved from attribute to input
  check_arity(node, 1, axes_input ? 2 : 1, 1);
  const int elem_type = declared_elem_type(context, 0);
  REFOLD_CHECK(elem_type == 0 || elem_type == 1 || elem_type == 16,
               "unsupported: input '{}' has ONNX element type {} (refold's ReduceMean takes "
               "float32 and bfloat16)",
               node.inputs[0], elem_type);
  const bool keepdims = read_flag(node, "keepdims", 1);
  const bool noop = axes_input && read_flag(node, "noop_with_empty_axes", 0);
  std::optional<std::vector<std::int64_t>> axes;
  if (axes_input) {
    REFOLD_CHECK(!node.attributes.has("axes"),
                 "axes is an input from opset 18 on, not an attribute");
    if (const auto constant = constant_ints(context, 1, "axes")) check_axes(*constant);
  } else {
    axes = node.attributes.get_ints("axes");
    check_axes(*axes);
  }
  return std::make_shared<ReduceMean>(std::move(axes), keepdims, noop);
}

}  // namespace

const std::vector<OpDef>& reduce_ops() {
  static const std::vector<OpDef> table = {
      {"ReduceMean", 1, build_reduce_mean, LayoutRule::Fresh},  // v18: axes became an input
  };
  return table;
}

}  // namespace refold::ops
