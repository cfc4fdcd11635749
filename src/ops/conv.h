// ONNX Conv and ConvTranspose as graph ops: the weight (and bias) arrive at run time, as in the
// ONNX node tests, or the padding depends on the input size (auto_pad SAME with stride > 1), or
// ConvTranspose needs what nn::ConvTranspose2d cannot express (asymmetric pads, output_shape).
// Constant weights with static padding become nn::Conv2d / nn::ConvTranspose2d instead
// (src/onnx/ops/conv_builders.cpp).
//
// Inputs: X [N, C, H, W], W, optional B [M]: 2-d (4-d tensors), or 1-d (X [N, C, L] and a 3-d
// W), run as the 2-d op of [N, C, 1, L] with the attributes lifted (lift_1d_window).
//   Conv           W [M, C/group, kh, kw]
//   ConvTranspose  W [C, M/group, kh, kw] (the ONNX and PyTorch layout, axes swapped vs Conv)
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ops/window.h"
#include "refold/graph/op.h"
#include "refold/op_options.h"

namespace refold::ops {

struct ConvAttributes {
  std::optional<Size2d> kernel_shape;  // checked against W when given
  Size2d stride = 1;
  Size2d dilation = 1;
  WindowPadding padding;
  std::int64_t groups = 1;
};

class Conv : public graph::Op {
 public:
  explicit Conv(const ConvAttributes& attributes);
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  const ConvAttributes& attributes() const { return attributes_; }

 private:
  ConvAttributes attributes_;
};

struct ConvTransposeAttributes {
  std::optional<Size2d> kernel_shape;
  Size2d stride = 1;
  Size2d dilation = 1;
  WindowPadding padding;
  std::int64_t groups = 1;
  Size2d output_padding = 0;
  std::optional<Size2d> output_shape;  // spatial (H, W); overrides pads as the spec says
};

class ConvTranspose : public graph::Op {
 public:
  explicit ConvTranspose(const ConvTransposeAttributes& attributes);
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  const ConvTransposeAttributes& attributes() const { return attributes_; }

 private:
  ConvTransposeAttributes attributes_;
};

// ConvTranspose's pads from output_shape or auto_pad SAME (the ONNX spec), for one axis:
//   full  = stride·(in − 1) + output_padding + dilation·(k − 1) + 1
//   total = full − out           (out = output_shape, or in·stride for SAME)
//   SAME_UPPER: begin = ⌊total/2⌋, end = total − begin; otherwise end = ⌊total/2⌋, begin = the rest
// A negative total extends the output at that side (zeros plus bias), as the ONNX reference does.
void conv_transpose_pads(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                         std::int64_t dilation, std::int64_t output_padding, std::int64_t out,
                         bool same_upper, std::int64_t& begin, std::int64_t& end);

}  // namespace refold::ops
