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
// The result is a view of the input when the input is contiguous (no copy), as Tensor::reshape,
// and, where the executor takes views (ops::ViewOp), whenever the input's strides can express
// it: NHWC memory [N, H·W, C] viewed as [N, heads, C/heads, H·W] costs nothing. The element
// order is NCHW's, so all four declare accepts_channels_last() == false: the layout plan counts
// a channels_last input as the permute it costs at worst (made contiguous, one counted permute).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ops/view_op.h"
#include "refold/graph/op.h"

namespace refold::ops {

// The sizes Reshape gives an input of `sizes` for the target `shape` (rules above). Throws
// refold::Error (starting with the problem) on a second −1, a value < −1, 0 and −1 together with
// allowzero, a 0 past the input's rank, or an element-count mismatch.
Shape reshape_sizes(const Shape& sizes, const std::vector<std::int64_t>& shape, bool allowzero);
// The checks of reshape_sizes that need only the target (for a constant shape at build time).
void check_reshape_target(const std::vector<std::int64_t>& shape, bool allowzero);

class Reshape : public ViewOp {
 public:
  explicit Reshape(bool allowzero = false) : ViewOp("Reshape"), allowzero_(allowzero) {}
  // inputs: data, shape (int64 1-d)
  bool accepts_channels_last() const override { return false; }
  bool allowzero() const { return allowzero_; }

 protected:
  std::vector<Tensor> moved(const std::vector<Tensor>& inputs, bool views) const override;

 private:
  bool allowzero_;
};

// ONNX Flatten for any axis, rank and dtype. (The importer uses nn::Flatten — torch's
// flatten(1) — for axis 1 on float activations, which gives the same result.)
class Flatten : public ViewOp {
 public:
  explicit Flatten(std::int64_t axis = 1) : ViewOp("Flatten"), axis_(axis) {}
  bool accepts_channels_last() const override { return false; }
  std::int64_t axis() const { return axis_; }

 protected:
  std::vector<Tensor> moved(const std::vector<Tensor>& inputs, bool views) const override;

 private:
  std::int64_t axis_;
};

// Flatten's sizes: [prod(sizes[:axis]), prod(sizes[axis:])], axis ∈ [−rank, rank].
Shape flattened_sizes(const Shape& sizes, std::int64_t axis);

class Squeeze : public ViewOp {
 public:
  // `axes`: the attribute (opset < 13); nullopt reads the optional second input instead.
  explicit Squeeze(std::optional<std::vector<std::int64_t>> axes = std::nullopt)
      : ViewOp("Squeeze"), axes_(std::move(axes)) {}
  bool accepts_channels_last() const override { return false; }

 protected:
  std::vector<Tensor> moved(const std::vector<Tensor>& inputs, bool views) const override;

 private:
  std::optional<std::vector<std::int64_t>> axes_;
};

class Unsqueeze : public ViewOp {
 public:
  // `axes`: the attribute (opset < 13); nullopt reads the second input instead.
  explicit Unsqueeze(std::optional<std::vector<std::int64_t>> axes = std::nullopt)
      : ViewOp("Unsqueeze"), axes_(std::move(axes)) {}
  bool accepts_channels_last() const override { return false; }

 protected:
  std::vector<Tensor> moved(const std::vector<Tensor>& inputs, bool views) const override;

 private:
  std::optional<std::vector<std::int64_t>> axes_;
};

// The output sizes of Squeeze/Unsqueeze (errors name the op and the axes).
Shape squeeze_sizes(const Shape& sizes, const std::vector<std::int64_t>& axes);
Shape unsqueeze_sizes(const Shape& sizes, const std::vector<std::int64_t>& axes);

}  // namespace refold::ops
