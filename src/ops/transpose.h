// ONNX Transpose and DepthToSpace as graph ops: permutations of elements, exact for every dtype.
//
//   Transpose     out.sizes[k] = in.sizes[perm[k]]; no perm reverses the dimensions. The output
//                 is the input's view through the perm when that view is dense in NCHW or
//                 NHWC order (or, where the executor takes views, always: ops::ViewOp), else
//                 a contiguous copy. So the two Transposes around a
//                 channels-last LayerNorm (ConvNeXt) cost nothing once the layout is NHWC:
//                 NHWC memory read by [0, 2, 3, 1] is contiguous [N, H, W, C], and contiguous
//                 [N, H, W, C] read by [0, 3, 1, 2] is NCHW with channels_last strides.
//   DepthToSpace  [N, C·b², H, W] → [N, C, H·b, W·b]
//                   DCR: out[n, c, h·b + i, w·b + j] = in[n, (i·b + j)·C + c, h, w]
//                   CRD: out[n, c, h·b + i, w·b + j] = in[n, c·b² + i·b + j, h, w]
//                 (the importer runs CRD on float as nn::PixelShuffle, the same map); the output
//                 keeps a channels_last input's format.
// Both read any strides, so both accept channels_last inputs.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/view_op.h"
#include "refold/graph/op.h"

namespace refold::ops {

// Throws refold::Error "perm […] is not a permutation of 0..r-1" (rank r, or any r
// when rank < 0).
void check_perm(const std::vector<std::int64_t>& perm, std::int64_t rank = -1);

// The memory format of a 4-d Transpose's output given its input's (the layout pass's model of
// Transpose::run): channels_last read by [0, 2, 3, 1] is contiguous, contiguous read by
// [0, 3, 1, 2] is channels_last, and any other permutation writes a contiguous copy.
MemoryFormat transposed_format(const std::vector<std::int64_t>& perm, MemoryFormat input);

class Transpose : public ViewOp {
 public:
  explicit Transpose(std::vector<std::int64_t> perm = {});
  const std::vector<std::int64_t>& perm() const { return perm_; }
  // The permutation it applies to a rank-`rank` input: perm(), or without one the dims reversed
  // [rank − 1, …, 0]. Throws refold::Error when perm() is not a permutation of that rank.
  std::vector<std::int64_t> perm_for(std::int64_t rank) const;

 protected:
  std::vector<Tensor> moved(const std::vector<Tensor>& inputs, bool views) const override;

 private:
  std::vector<std::int64_t> perm_;
};

class DepthToSpace : public graph::Op {
 public:
  enum class Mode { DCR, CRD };
  DepthToSpace(std::int64_t blocksize, Mode mode);
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  std::int64_t blocksize() const { return blocksize_; }
  Mode mode() const { return mode_; }

 private:
  std::int64_t blocksize_;
  Mode mode_;
};

}  // namespace refold::ops
