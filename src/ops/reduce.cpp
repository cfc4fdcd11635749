// Reductions: ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
// ReduceSumSquare, ReduceLogSum, ReduceLogSumExp (kernels/reference/onnx_ops.h has the math),
// GlobalAveragePool / GlobalMaxPool, ArgMax / ArgMin, TopK and CumSum.
//
// Reduce*(data[, axes]) → ⊕ over `axes`, each in [−rank, rank), none repeated:
//   before opset 18 (ReduceSum: 13): axes is an attribute; absent = every axis.
//   from then on: axes is an optional int64 input; absent or empty = every axis, or, with
//               noop_with_empty_axes = 1, no axis (the input unchanged).
//   keepdims (default 1) keeps each reduced axis as size 1, else drops it.
// The mean over H and W of a 4-d input, kept (a squeeze-excite block's pooling), runs as the
// global average pool it is (functional::adaptive_avg_pool2d, native where it can); a float32
// reduction but Prod and LogSumExp over axes that form one block in memory (innermost, outermost,
// or a channels_last tensor's H and W — GlobalMaxPool's too) runs native::reduce; the rest the
// reference kernel. Layout: the result is new and contiguous (Fresh).
#include <algorithm>

#include <fmt/ranges.h>
#include <optional>
#include <vector>

#include "core/check.h"
#include "kernels/dispatch.h"
#include "kernels/native/reduce.h"
#include "kernels/reference/onnx_ops.h"
#include "kernels/reference/tensor_ops.h"
#include "ops/op.h"
#include "ops/tensor_values.h"
#include "refold/functional.h"
#include "refold/graph/op.h"

namespace refold::ops {
namespace {

class Reduce : public graph::Op {
 public:
  // `axes`: the attribute (before axes became an input); nullopt reads the optional second
  // input instead.
  Reduce(reference::ReduceOp op, std::optional<std::vector<std::int64_t>> axes, bool keepdims,
         bool noop_with_empty_axes)
      : Op(reference::reduce_name(op)),
        op_(op),
        axes_(std::move(axes)),
        keepdims_(keepdims),
        noop_with_empty_axes_(noop_with_empty_axes) {}

  // A global pool (GlobalMaxPool): `op` over every spatial axis, kept as size 1.
  Reduce(std::string global_pool, reference::ReduceOp op)
      : Op(std::move(global_pool)),
        op_(op),
        axes_(std::vector<std::int64_t>{}),
        keepdims_(true),
        noop_with_empty_axes_(false),
        spatial_(true) {}

  std::vector<Tensor> run(const std::vector<Tensor>& in) override {
    REFOLD_CHECK(!in.empty() && in.size() <= 2 && in[0].defined(),
                 "{}: expects data and optional axes; got {} inputs", type_name(), in.size());
    const Tensor& x = in[0];
    std::vector<std::int64_t> axes = axes_.value_or(std::vector<std::int64_t>{});
    if (spatial_) {  // Global*Pool: every axis after N and C
      REFOLD_CHECK(x.dim() >= 3, "{}: X must be [N, C, spatial…], got [{}]", type_name(),
                   fmt::join(x.sizes(), ", "));
      for (std::int64_t d = 2; d < x.dim(); ++d) axes.push_back(d);
    }
    if (!axes_ && in.size() > 1 && in[1].defined())
      axes = int64_vector(in[1], type_name().c_str(), "axes");
    if (axes.empty()) {
      if (noop_with_empty_axes_) return {x};
      for (std::int64_t d = 0; d < x.dim(); ++d) axes.push_back(d);
    }
    if (op_ == reference::ReduceOp::Mean && keepdims_ && is_global_spatial(axes, x.dim()))
      return {functional::adaptive_avg_pool2d(x, Size2d(1))};
    return {dispatch(type_name(),
                     {{"native",
                       [&](std::string* declined) {
                         return native::reduce(x, axes, keepdims_, op_, declined);
                       }}},
                     [&] { return reference::reduce(x, axes, keepdims_, op_); })};
  }

 private:
  // {2, 3} (or {−2, −1}, in any order) of a 4-d tensor: H and W.
  static bool is_global_spatial(std::vector<std::int64_t> axes, std::int64_t rank) {
    if (rank != 4 || axes.size() != 2) return false;
    for (std::int64_t& a : axes) a = a < 0 ? a + rank : a;
    std::sort(axes.begin(), axes.end());
    return axes[0] == 2 && axes[1] == 3;
  }

  reference::ReduceOp op_;
  std::optional<std::vector<std::int64_t>> axes_;
  bool keepdims_;
  bool noop_with_empty_axes_;
  bool spatial_ = false;
};

// ArgMax / ArgMin along one axis (an attribute in every version).
class ArgReduce : public graph::Op {
 public:
  ArgReduce(bool max, std::int64_t axis, bool keepdims, bool select_last)
      : Op(max ? "ArgMax" : "ArgMin"),
        max_(max),
        axis_(axis),
        keepdims_(keepdims),
        select_last_(select_last) {}
  std::vector<Tensor> run(const std::vector<Tensor>& in) override {
    REFOLD_CHECK(in.size() == 1 && in[0].defined(), "{}: expects 1 input, got {}", type_name(),
                 in.size());
    return {reference::arg_reduce(in[0], axis_, keepdims_, select_last_, max_)};
  }

 private:
  bool max_;
  std::int64_t axis_;
  bool keepdims_, select_last_;
};

// TopK(X[, K]) → (Values, Indices) along `axis`: k the attribute before opset 10, then a
// one-element int64 input.
class TopK : public graph::Op {
 public:
  TopK(std::optional<std::int64_t> k, std::int64_t axis, bool largest)
      : Op("TopK"), k_(k), axis_(axis), largest_(largest) {}
  std::vector<Tensor> run(const std::vector<Tensor>& in) override {
    REFOLD_CHECK(!in.empty() && in.size() <= 2 && in[0].defined(),
                 "TopK: expects X and optional K; got {} inputs", in.size());
    std::int64_t k = k_.value_or(0);
    if (!k_) {
      REFOLD_CHECK(in.size() == 2 && in[1].defined(), "TopK: K is missing");
      const auto values = int64_vector(in[1], "TopK", "K");
      REFOLD_CHECK(values.size() == 1, "TopK: K must hold one value, got {}", values.size());
      k = values[0];
    }
    reference::TopKResult r = reference::top_k(in[0], k, axis_, largest_);
    return {r.values, r.indices};
  }

 private:
  std::optional<std::int64_t> k_;
  std::int64_t axis_;
  bool largest_;
};

// CumSum(x, axis): axis an int64 scalar (or one-element 1-d) input.
class CumSum : public graph::Op {
 public:
  CumSum(bool exclusive, bool reverse) : Op("CumSum"), exclusive_(exclusive), reverse_(reverse) {}
  std::vector<Tensor> run(const std::vector<Tensor>& in) override {
    REFOLD_CHECK(in.size() == 2 && in[0].defined() && in[1].defined(),
                 "CumSum: expects x and axis; got {} inputs", in.size());
    const auto axis = int64_vector(in[1], "CumSum", "axis");
    REFOLD_CHECK(axis.size() == 1, "CumSum: axis must hold one value, got {}", axis.size());
    return {reference::cum_sum(in[0], axis[0], exclusive_, reverse_)};
  }

 private:
  bool exclusive_, reverse_;
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

// `axes_input_from`: the opset from which axes is an input (ReduceSum 13, the others 18).
template <reference::ReduceOp op, int axes_input_from = 18>
nn::ModulePtr build_reduce(const BuildContext& context) {
  const graph::Node& node = context.node;
  const bool axes_input = context.opset >= axes_input_from;
  check_arity(node, 1, axes_input ? 2 : 1, 1);
  const int elem_type = declared_elem_type(context, 0);
  const bool int_ok = op == reference::ReduceOp::Sum || op == reference::ReduceOp::Prod ||
                      op == reference::ReduceOp::Max || op == reference::ReduceOp::Min;
  REFOLD_CHECK(elem_type == 0 || elem_type == 1 || elem_type == 16 || (int_ok && elem_type == 7),
               "unsupported: input '{}' has ONNX element type {} (refold's {} takes float32 and "
               "bfloat16{})",
               node.inputs[0], elem_type, node.op_type, int_ok ? ", and int64" : "");
  const bool keepdims = read_flag(node, "keepdims", 1);
  const bool noop = axes_input && read_flag(node, "noop_with_empty_axes", 0);
  std::optional<std::vector<std::int64_t>> axes;
  if (axes_input) {
    REFOLD_CHECK(!node.attributes.has("axes"),
                 "axes is an input from opset {} on, not an attribute", axes_input_from);
    if (const auto constant = constant_ints(context, 1, "axes")) check_axes(*constant);
  } else {
    axes = node.attributes.get_ints("axes");
    check_axes(*axes);
  }
  return std::make_shared<Reduce>(op, std::move(axes), keepdims, noop);
}

// GlobalAveragePool / GlobalMaxPool over every spatial axis, of any rank (a video model's 5-d
// [N, C, T, H, W] too); over a 4-d input's H and W the average runs as the global average pool.
template <reference::ReduceOp op>
nn::ModulePtr build_global_pool(const BuildContext& context) {
  check_arity(context.node, 1, 1, 1);
  return std::make_shared<Reduce>(context.node.op_type, op);
}

template <bool max>
nn::ModulePtr build_arg_reduce(const BuildContext& context) {
  const graph::Node& node = context.node;
  check_arity(node, 1, 1, 1);
  return std::make_shared<ArgReduce>(max, node.attributes.get_int("axis", 0),
                                     read_flag(node, "keepdims", 1),
                                     read_flag(node, "select_last_index", 0));
}

// TopK-1: k attribute; TopK-10: K input; TopK-11: largest and sorted (sorted = 0 leaves the
// order free, so refold sorts in every case).
nn::ModulePtr build_top_k(const BuildContext& context) {
  const graph::Node& node = context.node;
  std::optional<std::int64_t> k;
  if (context.opset < 10) {
    check_arity(node, 1, 1, 2);
    REFOLD_CHECK(node.attributes.has("k"), "the k attribute is required");
    k = node.attributes.get_int("k", 0);
    REFOLD_CHECK(*k >= 0, "k must be non-negative (got {})", *k);
  } else {
    check_arity(node, 2, 2, 2);
    if (auto constant = constant_ints(context, 1, "K")) {
      REFOLD_CHECK(constant->size() == 1, "K must hold one value, got {}", constant->size());
      REFOLD_CHECK((*constant)[0] >= 0, "K must be non-negative (got {})", (*constant)[0]);
    }
  }
  const bool largest = read_flag(node, "largest", 1);
  read_flag(node, "sorted", 1);
  return std::make_shared<TopK>(k, node.attributes.get_int("axis", -1), largest);
}

nn::ModulePtr build_cum_sum(const BuildContext& context) {
  const graph::Node& node = context.node;
  check_arity(node, 2, 2, 1);
  if (auto axis = constant_ints(context, 1, "axis"))
    REFOLD_CHECK(axis->size() == 1, "axis must hold one value, got {}", axis->size());
  return std::make_shared<CumSum>(read_flag(node, "exclusive", 0), read_flag(node, "reverse", 0));
}

}  // namespace

const std::vector<OpDef>& reduce_ops() {
  static const std::vector<OpDef> table = {
      {"ReduceMean", 1, build_reduce<reference::ReduceOp::Mean>, LayoutRule::Fresh},
      {"ReduceSum", 1, build_reduce<reference::ReduceOp::Sum, 13>, LayoutRule::Fresh},
      {"ReduceMax", 1, build_reduce<reference::ReduceOp::Max>, LayoutRule::Fresh},
      {"ReduceMin", 1, build_reduce<reference::ReduceOp::Min>, LayoutRule::Fresh},
      {"ReduceProd", 1, build_reduce<reference::ReduceOp::Prod>, LayoutRule::Fresh},
      {"ReduceL1", 1, build_reduce<reference::ReduceOp::L1>, LayoutRule::Fresh},
      {"ReduceL2", 1, build_reduce<reference::ReduceOp::L2>, LayoutRule::Fresh},
      {"ReduceSumSquare", 1, build_reduce<reference::ReduceOp::SumSquare>, LayoutRule::Fresh},
      {"ReduceLogSum", 1, build_reduce<reference::ReduceOp::LogSum>, LayoutRule::Fresh},
      {"ReduceLogSumExp", 1, build_reduce<reference::ReduceOp::LogSumExp>, LayoutRule::Fresh},
      {"GlobalMaxPool", 1, build_global_pool<reference::ReduceOp::Max>, LayoutRule::Fresh},
      {"GlobalAveragePool", 1, build_global_pool<reference::ReduceOp::Mean>},
      {"ArgMax", 1, build_arg_reduce<true>, LayoutRule::Fresh},
      {"ArgMin", 1, build_arg_reduce<false>, LayoutRule::Fresh},
      {"TopK", 1, build_top_k, LayoutRule::Fresh},  // v10: K became an input; v11 largest
      {"CumSum", 11, build_cum_sum},                // the output keeps x's format
  };
  return table;
}

}  // namespace refold::ops
