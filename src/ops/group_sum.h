// ops::GroupSum — y = Σ_k x[:, k·C + c] · a[:, k, c] over the r channel groups of a 4-d x, `a`
// optional: canonicalize's GroupSum node (passes/group_sum.h), split attention's
// ReduceSum(Reshape(x, [N, r, C, H, W]), axis 1) and ReduceSum(Mul(Reshape(x, …), a), axis 1).
// Float32 runs native::group_sum; anything it declines runs the reference ops the exporter wrote
// (Reshape, Mul, ReduceSum). The output keeps x's memory format (accepts channels_last), so a
// channels_last x is neither copied into NCHW order for the 5-d reshape nor left NCHW after it.
#pragma once

#include <cstdint>
#include <vector>

#include "refold/graph/op.h"

namespace refold::ops {

class GroupSum : public graph::Op {
 public:
  explicit GroupSum(std::int64_t groups) : Op("GroupSum"), groups_(groups) {}
  // inputs: x [N, r·C, H, W], optional a with r·C values per n ([N|1, r, C, 1, 1])
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  bool accepts_channels_last() const override { return true; }

  std::int64_t groups() const { return groups_; }

 private:
  std::int64_t groups_;
};

}  // namespace refold::ops
