// ONNX Reshape, Flatten, Squeeze and Unsqueeze as graph ops: a new shape over the same elements
// in row-major (NCHW) order.
//
//   Reshape    (data, shape int64[k]):  0 copies the input's size at that position (unless
//              allowzero, where 0 is a size); one −1 is inferred from the element count.
//   Flatten    axis a ∈ [−r, r]: [prod(sizes[:a]), prod(sizes[a:])].
//   Squeeze    (data, axes?) or the `axes` attribute: drops the listed size-1 dims, all of them
//              when no axes are given.
//   Unsqueeze  (data, axes) or the `axes` attribute: inserts size-1 dims at `axes` of the output.
//
// The result is a view of the input when the input is contiguous (no copy), as Tensor::reshape.
// The element order is NCHW's, so all four declare accepts_channels_last() == false: a
// channels_last activation is made contiguous (one counted permute) before them, where the
// layout plan can see it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "refold/graph/op.h"

namespace refold::ops {

// The sizes Reshape gives an input of `sizes` for the target `shape` (rules above). Throws
// refold::Error (starting with the problem) on a second −1, a value < −1, 0 and −1 together with
// allowzero, a 0 past the input's rank, or an element-count mismatch.
Shape reshape_sizes(const Shape& sizes, const std::vector<std::int64_t>& shape, bool allowzero);
// The checks of reshape_sizes that need only the target (for a constant shape at build time).
void check_reshape_target(const std::vector<std::int64_t>& shape, bool allowzero);

class Reshape : public graph::Op {
 public:
  explicit Reshape(bool allowzero = false) : Op("Reshape"), allowzero_(allowzero) {}
  // inputs: data, shape (int64 1-d)
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  bool accepts_channels_last() const override { return false; }
  bool allowzero() const { return allowzero_; }

 private:
  bool allowzero_;
};

// ONNX Flatten for any axis, rank and dtype. (The importer uses nn::Flatten — torch's
// flatten(1) — for axis 1 on float activations, which gives the same result.)
class Flatten : public graph::Op {
 public:
  explicit Flatten(std::int64_t axis = 1) : Op("Flatten"), axis_(axis) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  bool accepts_channels_last() const override { return false; }
  std::int64_t axis() const { return axis_; }

 private:
  std::int64_t axis_;
};

// [prod(sizes[:axis]), prod(sizes[axis:])], axis ∈ [−rank, rank]; a view when contiguous.
Tensor flatten_2d(const Tensor& input, std::int64_t axis);

class Squeeze : public graph::Op {
 public:
  // `axes`: the attribute (opset < 13); nullopt reads the optional second input instead.
  explicit Squeeze(std::optional<std::vector<std::int64_t>> axes = std::nullopt)
      : Op("Squeeze"), axes_(std::move(axes)) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  bool accepts_channels_last() const override { return false; }

 private:
  std::optional<std::vector<std::int64_t>> axes_;
};

class Unsqueeze : public graph::Op {
 public:
  // `axes`: the attribute (opset < 13); nullopt reads the second input instead.
  explicit Unsqueeze(std::optional<std::vector<std::int64_t>> axes = std::nullopt)
      : Op("Unsqueeze"), axes_(std::move(axes)) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  bool accepts_channels_last() const override { return false; }

 private:
  std::optional<std::vector<std::int64_t>> axes_;
};

// The output sizes of Squeeze/Unsqueeze (errors name the op and the axes).
Shape squeeze_sizes(const Shape& sizes, const std::vector<std::int64_t>& axes);
Shape unsqueeze_sizes(const Shape& sizes, const std::vector<std::int64_t>& axes);

}  // namespace refold::ops
