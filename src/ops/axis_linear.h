// ops::AxisLinear — a Linear applied along one axis of x that is not its last:
//   y[…, n @ axis, …] = Σ_k x[…, k @ axis, …] · W[k, n] + b[n]        W [K, N], b [N] optional
// canonicalize's AxisLinear node (passes/axis_linear.h), what exporters write as
// Transpose(x, p) → MatMul(·, W) (→ Add(·, b)) → Transpose(·, p⁻¹) with p moving `axis` last:
// MLP-Mixer's and ResMLP's token mixing and gMLP's spatial gate over [B, tokens, C], CaiT's
// talking heads over the head axis of [B, heads, N, N] scores.
//
// Float32 runs without moving x:
//   * where the axis is innermost in memory (a channels_last x with axis 1), as a linear over
//     its rows, y in x's memory format;
//   * else x (contiguous) seen as [outer, K, inner] and y[o] = Wᵀ · x[o]: for a small W
//     (K·N ≤ native::kMaxChannelMix) native::channel_mix, each block of columns read once;
//     otherwise one batched oneDNN matmul (Wᵀ read through its strides), the bias added per row.
// The transposes the exporter wrote around the MatMul, each a full copy of x or of y, and the
// strided layout they left the tensors in, are gone. Anything else runs the reference.
#pragma once

#include <cstdint>
#include <vector>

#include "refold/graph/op.h"

namespace refold::ops {

class AxisLinear : public graph::Op {
 public:
  explicit AxisLinear(std::int64_t axis) : Op("AxisLinear"), axis_(axis) {}
  // inputs: x, W [K, N], optional b [N]
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  bool accepts_channels_last() const override { return true; }

  std::int64_t axis() const { return axis_; }

 private:
  std::int64_t axis_;  // non-negative, < x's rank
};

}  // namespace refold::ops
