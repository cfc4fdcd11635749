// ONNX Conv and ConvTranspose as graph ops: the weight (and bias) arrive at run time, as in the
// ONNX node tests, or the padding depends on the input size (auto_pad SAME with stride > 1), or
// ConvTranspose needs what nn::ConvTranspose2d cannot express (asymmetric pads, output_shape).
// Constant weights with static padding become nn::Conv2d / nn::ConvTranspose2d instead
// (src/onnx/ops/conv_builders.cpp).
//
// Inputs: X [N, C, H, W], W, optional B [M]: 2-d (4-d tensors), or 1-d (X [N, C, L] and a 3-d
// W), run as the 2-d op of [N, C, 1, L] with the attributes lifted (lift_1d_window), or 3-d
// (X [N, C, D, H, W], a 5-d W): Conv3d / ConvTranspose3d below, on reference::conv_nd and
// conv_transpose_nd with oneDNN's 3-d primitives as the fast path.
//   Conv           W [M, C/group, kh, kw]            (3-d: [M, C/group, kd, kh, kw])
//   ConvTranspose  W [C, M/group, kh, kw] (the ONNX and PyTorch layout, axes swapped vs Conv)
// A node's spatial rank comes from its constant W, else its window attributes (conv_rank); a
// node with neither (run-time W, default attributes) takes it from X at run time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ops/op.h"
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

// The attributes of a 3-d Conv / ConvTranspose, one value per spatial axis (d, h, w).
struct Conv3dAttributes {
  WindowNd window;  // kernel_shape (checked against W when given), strides, dilations, pads
  std::int64_t groups = 1;
  std::vector<std::int64_t> output_padding{0, 0, 0};      // ConvTranspose
  std::optional<std::vector<std::int64_t>> output_shape;  // ConvTranspose: spatial (D, H, W)
};

class Conv3d : public graph::Op {
 public:
  explicit Conv3d(const Conv3dAttributes& attributes);
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  const Conv3dAttributes& attributes() const { return attributes_; }

 private:
  Conv3dAttributes attributes_;
};

class ConvTranspose3d : public graph::Op {
 public:
  explicit ConvTranspose3d(const Conv3dAttributes& attributes);
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  const Conv3dAttributes& attributes() const { return attributes_; }

 private:
  Conv3dAttributes attributes_;
};

// `rank_3d`: the op a 5-d X runs on, for a node whose rank only X tells (conv_rank 0).
class Conv : public graph::Op {
 public:
  explicit Conv(const ConvAttributes& attributes, std::shared_ptr<Conv3d> rank_3d = nullptr);
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  const ConvAttributes& attributes() const { return attributes_; }

 private:
  ConvAttributes attributes_;
  std::shared_ptr<Conv3d> rank_3d_;
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
  explicit ConvTranspose(const ConvTransposeAttributes& attributes,
                         std::shared_ptr<ConvTranspose3d> rank_3d = nullptr);
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  const ConvTransposeAttributes& attributes() const { return attributes_; }

 private:
  ConvTransposeAttributes attributes_;
  std::shared_ptr<ConvTranspose3d> rank_3d_;
};

// ConvTranspose's pads from output_shape or auto_pad SAME (the ONNX spec), for one axis:
//   full  = stride·(in − 1) + output_padding + dilation·(k − 1) + 1
//   total = full − out           (out = output_shape, or in·stride for SAME)
//   SAME_UPPER: begin = ⌊total/2⌋, end = total − begin; otherwise end = ⌊total/2⌋, begin = the rest
// A negative total extends the output at that side (zeros plus bias), as the ONNX reference does.
void conv_transpose_pads(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                         std::int64_t dilation, std::int64_t output_padding, std::int64_t out,
                         bool same_upper, std::int64_t& begin, std::int64_t& end);

// ---- shared by conv.cpp (1-d, 2-d) and conv3d.cpp (3-d) ----

// The run-time checks both ops start with: 2 or 3 inputs, X and W defined, floating and of
// `rank` dims (4 for 2-d, 5 for 3-d).
void check_conv_operands(const char* op, const std::vector<Tensor>& in, std::int64_t rank);
// An optional run-time bias: 1-d of `out_channels`.
void check_conv_bias(const char* op, const Tensor& bias, std::int64_t out_channels);
// in + pad_begin + pad_end must hold one dilated kernel (docs/reliability.md F9).
void check_conv_fits(const char* op, std::int64_t in, std::int64_t k, std::int64_t d,
                     std::int64_t pb, std::int64_t pe);
// The checks a constant W allows before any input is seen: `rank` + 2 dims, floating,
// non-empty, kernel_shape (when given) equal to W's spatial dims (F10).
void check_constant_weight(const Tensor& w, std::size_t rank, const std::string& op,
                           const std::optional<std::vector<std::int64_t>>& kernel_shape);
// A constant bias: 1-d of `m` values with W's dtype (F12).
void check_constant_bias(const Tensor& b, std::int64_t m, const Tensor& w);
// The group attribute, positive (F11).
std::int64_t read_group(const graph::Node& node);

// The 3-d builders (conv3d.cpp); build_conv / build_conv_transpose call them for rank 3.
nn::ModulePtr build_conv_3d(const BuildContext& context);
nn::ModulePtr build_conv_transpose_3d(const BuildContext& context);
// Conv3dAttributes of a node read for 3 spatial axes (no constant W checks).
Conv3dAttributes read_conv3d_attributes(const graph::Node& node, bool transposed);

}  // namespace refold::ops
