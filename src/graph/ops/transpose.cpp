#include "refold/graph/ops/transpose.h"

#include "core/check.h"
#include "kernels/reference/tensor_ops.h"

namespace refold::graph::ops {

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

Transpose::Transpose(std::vector<std::int64_t> perm) : Op("Transpose"), perm_(std::move(perm)) {
  check_perm(perm_);
}

std::vector<Tensor> Transpose::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(inputs.size() == 1 && inputs[0].defined(), "Transpose: expects 1 input, got {}",
               inputs.size());
  if (!perm_.empty()) check_perm(perm_, inputs[0].dim());
  return {reference::transpose(inputs[0], perm_)};
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

}  // namespace refold::graph::ops
