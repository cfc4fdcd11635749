// torch.nn.Conv2d and torch.nn.ConvTranspose2d (PyTorch 1.13 names, shapes and defaults).
//
//   auto conv = std::make_shared<nn::Conv2d>(nn::Conv2dOptions(8, 4, 3).stride(2).padding(1));
//   conv->weight();  // [out_channels, in_channels / groups, kh, kw]
//
//   auto up = std::make_shared<nn::ConvTranspose2d>(
//       nn::ConvTranspose2dOptions(8, 4, 3).stride(2).output_padding(1));
//   up->weight();    // [in_channels, out_channels / groups, kh, kw] — note the swapped axes
//
// Parameters: "weight", and "bias" [out_channels] unless bias(false). Both start as PyTorch's
// reset_parameters() makes them: U(−1/√fan_in, 1/√fan_in) with fan_in = weight.size(1)·kh·kw,
// drawn from refold::default_generator() (call manual_seed() for a reproducible model).
// Only zero padding (padding_mode="zeros") exists.
//
// Memory format: both accept channels_last. functional::conv2d computes in channels_last when
// the input or the weight suggests it, so converting the weight once
// (nn::utils::convert_conv2d_weight_memory_format) makes every call run channels_last.
//
// Options are validated when the module is built and throw refold::Error, e.g.
//   Conv2d: groups (3) must divide in_channels (8)
//
// Fused activation (not in PyTorch's Conv2d; refold/post_ops.h): set_activation(ReLU) makes
// forward() compute relu(conv(x) + b) inside the conv's primitive, with no second pass over the
// output. nn::utils::fuse_conv_activations sets it for every Conv2d that a Sequential follows
// with an activation. forward_with_residual(x, r) computes act(conv(x) + b + r), the residual
// sum of ResNet/RepVGG blocks, in the same primitive. Neither changes parameters or
// state_dict().
#pragma once

#include <cstdint>
#include <string>

#include "refold/nn/module.h"
#include "refold/op_options.h"
#include "refold/post_ops.h"

namespace refold::nn {

class Conv2dOptions {
 public:
  Conv2dOptions(std::int64_t in_channels, std::int64_t out_channels, Size2d kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}

  std::int64_t in_channels() const { return in_channels_; }
  std::int64_t out_channels() const { return out_channels_; }
  Size2d kernel_size() const { return kernel_size_; }

  // Builder setters (PyTorch defaults: stride 1, padding 0, dilation 1, groups 1, bias true).
  // padding takes an int, a pair, Padding2d::asymmetric(…), Padding2d::same() or ::valid().
  Conv2dOptions& stride(Size2d value) {
    stride_ = value;
    return *this;
  }
  Conv2dOptions& padding(Padding2d value) {
    padding_ = value;
    return *this;
  }
  Conv2dOptions& dilation(Size2d value) {
    dilation_ = value;
    return *this;
  }
  Conv2dOptions& groups(std::int64_t value) {
    groups_ = value;
    return *this;
  }
  Conv2dOptions& bias(bool value) {
    bias_ = value;
    return *this;
  }

  Size2d stride() const { return stride_; }
  const Padding2d& padding() const { return padding_; }
  Size2d dilation() const { return dilation_; }
  std::int64_t groups() const { return groups_; }
  bool bias() const { return bias_; }

  // The operator options (refold/op_options.h) that functional::conv2d takes.
  refold::Conv2dOptions op_options() const { return {stride_, padding_, dilation_, groups_}; }

 private:
  std::int64_t in_channels_;
  std::int64_t out_channels_;
  Size2d kernel_size_;
  Size2d stride_ = 1;
  Padding2d padding_ = 0;
  Size2d dilation_ = 1;
  std::int64_t groups_ = 1;
  bool bias_ = true;
};

class Conv2d : public Module {
 public:
  explicit Conv2d(const Conv2dOptions& options);
  Conv2d(std::int64_t in_channels, std::int64_t out_channels, Size2d kernel_size)
      : Conv2d(Conv2dOptions(in_channels, out_channels, kernel_size)) {}
  // A conv over given parameters, registered as they are (the same handles, no initial values
  // drawn): `weight` [out, in/groups, kh, kw] in any layout, `bias` [out] when options.bias(),
  // else undefined. What an imported graph's Conv node runs, its handles the graph's constants.
  Conv2d(const Conv2dOptions& options, Tensor weight, Tensor bias);

  // activation(conv2d(input) + bias), the activation fused (None by default).
  Tensor forward(const Tensor& input) override;
  // activation(conv2d(input) + bias + residual) in one primitive. `residual` must have the
  // output's sizes and the input's dtype (any layout); errors name this module's type. With
  // `overwrite_residual` the result may be written over the residual's memory
  // (PostOps::overwrite_residual: only for a residual nothing else holds or reads again).
  Tensor forward_with_residual(const Tensor& input, const Tensor& residual,
                               bool overwrite_residual = false);

  // The activation applied to forward()'s result; negative_slope is LeakyReLU's and must be
  // finite. Throws refold::Error for an unknown activation.
  void set_activation(Activation activation, double negative_slope = 0.01);
  Activation activation() const { return post_.activation; }
  double negative_slope() const { return post_.negative_slope; }
  // The whole chain forward() applies: the activation and the steps after it (PostOps::then,
  // a Mul/Add by constants, another activation — what activation-fusion takes from a graph).
  // `post.residual` must be undefined (forward_with_residual gives it per call); the steps are
  // checked as check_post_ops does when the conv runs. Throws refold::Error.
  void set_post_ops(const PostOps& post);
  const PostOps& post_ops() const { return post_; }

  const Conv2dOptions& options() const { return options_; }
  // The registered handles: copies share the tensor, so weight().set_data(…) converts the
  // module's parameter in place.
  Tensor weight() const { return weight_; }
  Tensor bias() const { return bias_; }  // undefined when !has_bias()
  bool has_bias() const { return bias_.defined(); }

 protected:
  // For subclasses that want their own type name in errors (still converted by
  // convert_conv2d_weight_memory_format, which finds them by dynamic_cast).
  Conv2d(std::string type_name, const Conv2dOptions& options, Tensor weight = {}, Tensor bias = {});

 private:
  Conv2dOptions options_;
  Tensor weight_;
  Tensor bias_;
  PostOps post_;  // activation and steps; the residual is per call
};

class ConvTranspose2dOptions {
 public:
  ConvTranspose2dOptions(std::int64_t in_channels, std::int64_t out_channels, Size2d kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}

  std::int64_t in_channels() const { return in_channels_; }
  std::int64_t out_channels() const { return out_channels_; }
  Size2d kernel_size() const { return kernel_size_; }

  // PyTorch defaults: stride 1, padding 0, output_padding 0, groups 1, bias true, dilation 1.
  // output_padding must be smaller than stride or dilation (per axis).
  ConvTranspose2dOptions& stride(Size2d value) {
    stride_ = value;
    return *this;
  }
  ConvTranspose2dOptions& padding(Size2d value) {
    padding_ = value;
    return *this;
  }
  ConvTranspose2dOptions& output_padding(Size2d value) {
    output_padding_ = value;
    return *this;
  }
  ConvTranspose2dOptions& groups(std::int64_t value) {
    groups_ = value;
    return *this;
  }
  ConvTranspose2dOptions& bias(bool value) {
    bias_ = value;
    return *this;
  }
  ConvTranspose2dOptions& dilation(Size2d value) {
    dilation_ = value;
    return *this;
  }

  Size2d stride() const { return stride_; }
  Size2d padding() const { return padding_; }
  Size2d output_padding() const { return output_padding_; }
  std::int64_t groups() const { return groups_; }
  bool bias() const { return bias_; }
  Size2d dilation() const { return dilation_; }

  // The operator options that functional::conv_transpose2d takes.
  refold::ConvTranspose2dOptions op_options() const {
    return {stride_, padding_, output_padding_, groups_, dilation_};
  }

 private:
  std::int64_t in_channels_;
  std::int64_t out_channels_;
  Size2d kernel_size_;
  Size2d stride_ = 1;
  Size2d padding_ = 0;
  Size2d output_padding_ = 0;
  std::int64_t groups_ = 1;
  bool bias_ = true;
  Size2d dilation_ = 1;
};

class ConvTranspose2d : public Module {
 public:
  explicit ConvTranspose2d(const ConvTranspose2dOptions& options);
  ConvTranspose2d(std::int64_t in_channels, std::int64_t out_channels, Size2d kernel_size)
      : ConvTranspose2d(ConvTranspose2dOptions(in_channels, out_channels, kernel_size)) {}
  // Over given parameters, as Conv2d's: `weight` [in, out/groups, kh, kw], `bias` [out].
  ConvTranspose2d(const ConvTranspose2dOptions& options, Tensor weight, Tensor bias);

  Tensor forward(const Tensor& input) override;

  const ConvTranspose2dOptions& options() const { return options_; }
  Tensor weight() const { return weight_; }  // [in, out/groups, kh, kw]
  Tensor bias() const { return bias_; }      // undefined when !has_bias()
  bool has_bias() const { return bias_.defined(); }

 protected:
  ConvTranspose2d(std::string type_name, const ConvTranspose2dOptions& options, Tensor weight = {},
                  Tensor bias = {});

 private:
  ConvTranspose2dOptions options_;
  Tensor weight_;
  Tensor bias_;
};

}  // namespace refold::nn
