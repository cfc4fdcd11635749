// ops::L2Normalize — y = x / max(‖x‖₂ along `axis`, ε): canonicalize's L2Normalize node
// (passes/l2_normalize.h), what exporters write for F.normalize as ReduceL2 → Clip → Div. Float32
// runs native::l2_normalize, anything it declines the three reference ops. It reads views
// (graph::Op::reads_views): q and k picked out of a fused qkv product are normalized where they
// lie instead of being copied out first. Its output is dense in the input's memory order
// (channels_last kept); handed to ops that do not read views, one in no memory format is made
// contiguous.
#pragma once

#include <cstdint>
#include <vector>

#include "refold/graph/op.h"

namespace refold::ops {

class L2Normalize : public graph::Op {
 public:
  L2Normalize(std::int64_t axis, float epsilon)
      : Op("L2Normalize"), axis_(axis), epsilon_(epsilon) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  std::vector<Tensor> run_views(std::vector<Tensor>& inputs) override;
  bool reads_views() const override { return true; }
  bool accepts_channels_last() const override { return true; }

  std::int64_t axis() const { return axis_; }
  float epsilon() const { return epsilon_; }

 private:
  Tensor normalized(const std::vector<Tensor>& inputs) const;

  std::int64_t axis_;
  float epsilon_;
};

}  // namespace refold::ops
