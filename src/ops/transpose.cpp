#include "ops/transpose.h"

#include <algorithm>
#include <numeric>

#include "core/check.h"
#include "kernels/reference/tensor_ops.h"
#include "ops/concat.h"
#include "ops/op.h"
#include "ops/reshape.h"
#include "ops/softmax.h"
#include "ops/window.h"
#include "refold/nn/basic.h"

namespace refold::ops {

void check_perm(const std::vector<std::int64_t>& perm, std::int64_t rank) {
  const auto n = static_cast<std::int64_t>(perm.size());
  REFOLD_CHECK(rank < 0 || n == rank, "perm [{}] has {} entries for a {}-d input",
               fmt::join(perm, ", "), n, rank);
  std::vector<bool> seen(perm.size(), false);
  for (std::int64_t p : perm) {
    REFOLD_CHECK(p >= 0 && p < n && !seen[static_cast<std::size_t>(p)],
                 "perm [{}] is not a permutation of 0..{}", fmt::join(perm, ", "), n - 1);
    seen[static_cast<std::size_t>(p)] = true;
  }
}

Transpose::Transpose(std::vector<std::int64_t> perm) : ViewOp("Transpose"), perm_(std::move(perm)) {
  check_perm(perm_);
}

std::vector<std::int64_t> Transpose::perm_for(std::int64_t rank) const {
  if (!perm_.empty()) {
    check_perm(perm_, rank);
    return perm_;
  }
  std::vector<std::int64_t> reversed(static_cast<std::size_t>(rank));
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  return reversed;
}

std::vector<Tensor> Transpose::moved(const std::vector<Tensor>& inputs, bool views) const {
  REFOLD_CHECK(inputs.size() == 1 && inputs[0].defined(), "Transpose: expects 1 input, got {}",
               inputs.size());
  const Tensor& x = inputs[0];
  const Shape perm = perm_for(x.dim());
  Tensor view = x.permute(perm);
  if (views) return {view};
  if (view.is_contiguous() || (view.dim() == 4 && view.is_contiguous(MemoryFormat::ChannelsLast)))
    return {with_format_strides(view)};
  return {reference::transpose(x, perm)};
}

MemoryFormat transposed_format(const std::vector<std::int64_t>& perm, MemoryFormat input) {
  // (channels_last by [0, 2, 3, 1] gives a contiguous view, as every copy is contiguous.)
  const bool nhwc_memory_read_as_nchw = perm == std::vector<std::int64_t>{0, 3, 1, 2};
  return input == MemoryFormat::Contiguous && nhwc_memory_read_as_nchw ? MemoryFormat::ChannelsLast
                                                                       : MemoryFormat::Contiguous;
}

DepthToSpace::DepthToSpace(std::int64_t blocksize, Mode mode)
    : Op("DepthToSpace"), blocksize_(blocksize), mode_(mode) {
  REFOLD_CHECK(blocksize > 0, "DepthToSpace: blocksize ({}) must be positive", blocksize);
}

std::vector<Tensor> DepthToSpace::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(inputs.size() == 1 && inputs[0].defined(), "DepthToSpace: expects 1 input, got {}",
               inputs.size());
  return {reference::depth_to_space(inputs[0], blocksize_, mode_ == Mode::DCR)};
}

namespace {

// SpaceToDepth: [N, C, H, W] → [N, C·b², H/b, W/b] (reference::space_to_depth).
class SpaceToDepth : public graph::Op {
 public:
  explicit SpaceToDepth(std::int64_t blocksize) : Op("SpaceToDepth"), blocksize_(blocksize) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    REFOLD_CHECK(inputs.size() == 1 && inputs[0].defined(), "SpaceToDepth: expects 1 input, got {}",
                 inputs.size());
    return {reference::space_to_depth(inputs[0], blocksize_)};
  }

 private:
  std::int64_t blocksize_;
};

// The blocksize attribute DepthToSpace and SpaceToDepth require.
std::int64_t read_blocksize(const graph::Node& node) {
  REFOLD_CHECK(node.attributes.has("blocksize"), "the blocksize attribute is required");
  const std::int64_t b = node.attributes.get_int("blocksize", 0);
  REFOLD_CHECK(b > 0, "blocksize must be positive, got {}", b);
  return b;
}

}  // namespace

nn::ModulePtr build_transpose(const BuildContext& context) {
  check_arity(context.node, 1, 1, 1);
  const auto perm = context.node.attributes.get_ints("perm", {});
  check_perm(perm);
  return std::make_shared<Transpose>(perm);
}

nn::ModulePtr build_depth_to_space(const BuildContext& context) {
  check_arity(context.node, 1, 1, 1);
  const auto& attrs = context.node.attributes;
  const std::int64_t b = read_blocksize(context.node);
  const std::string mode = attrs.get_string("mode", "DCR");
  REFOLD_CHECK(mode == "DCR" || mode == "CRD", "unknown mode '{}' (expected DCR or CRD)", mode);
  if (mode == "CRD") return std::make_shared<nn::PixelShuffle>(b);
  return std::make_shared<DepthToSpace>(b, DepthToSpace::Mode::DCR);
}

nn::ModulePtr build_space_to_depth(const BuildContext& context) {
  check_arity(context.node, 1, 1, 1);
  return std::make_shared<SpaceToDepth>(read_blocksize(context.node));
}

// Softmax-13: along `axis` (default −1); before 13: over the 2-d coercion at `axis` (default 1).

const std::vector<OpDef>& transpose_ops() {
  static const std::vector<OpDef> table = {
      {"Transpose", 1, build_transpose, LayoutRule::Permutation},
      {"DepthToSpace", 1, build_depth_to_space},  // v11 adds mode (DCR before)
      {"SpaceToDepth", 1, build_space_to_depth},
  };
  return table;
}

}  // namespace refold::ops
