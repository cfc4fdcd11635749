// The small layers the re-parameterizable blocks are built from, with the names and the
// semantics of the public reference implementations, so that their PyTorch checkpoints load by
// name (Module::load_state_dict):
//
//   NamedSequential        torch.nn.Sequential built with add_module('conv', …): named children
//                          run in order. conv_bn() builds the references' conv+BN branch
//                          ("rbr_dense.conv.weight", "rbr_dense.bn.running_mean", …).
//   ModuleList             torch.nn.ModuleList: children "0", "1", …; holds, never runs.
//   BNAndPad               DBB's BNAndPadLayer: BatchNorm, then a border of `pad_pixels` filled
//                          per channel with the BN's output for a zero input.
//   IdentityBasedConv1x1   DBB's 1×1 conv whose effective kernel is weight + identity.
//
// All accept channels_last and keep their input's memory format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "refold/nn/batchnorm.h"
#include "refold/nn/conv.h"
#include "refold/nn/module.h"
#include "refold/reparam/kernel_algebra.h"

namespace refold::reparam {

class NamedSequential : public nn::Module {
 public:
  // `type_name` is the reference's class name: "Sequential" for conv_bn, "Conv" for
  // ultralytics' Conv (conv → bn → act).
  explicit NamedSequential(std::string type_name = "Sequential") : Module(std::move(type_name)) {}

  // PyTorch's add_module: appends `module` under `name`. Returns *this.
  NamedSequential& add(std::string name, nn::ModulePtr module);
  // Each child in registration order, through Module::operator(). Empty: returns the input.
  Tensor forward(const Tensor& input) override;
};

class ModuleList : public nn::Module {
 public:
  ModuleList() : Module("ModuleList") {}
  // Appends `module` under the name std::to_string(size()).
  void push_back(nn::ModulePtr module);
  std::size_t size() const { return size_; }
  // The child at `index`; throws refold::Error when out of range.
  nn::ModulePtr operator[](std::size_t index) const;
  // A ModuleList is a container, as in PyTorch: calling it throws refold::Error.
  Tensor forward(const Tensor& input) override;

 private:
  std::size_t size_ = 0;
};

// conv (bias forced off) followed by BatchNorm2d(out_channels): children "conv" and "bn", the
// conv_bn() helper of RepVGG, DBB and MobileOne. With `activation`, a third child "act" (the
// layout of ultralytics' Conv, whose type name this then takes).
std::shared_ptr<NamedSequential> conv_bn(const nn::Conv2dOptions& conv,
                                         nn::ModulePtr activation = nullptr);

// BatchNorm, then `pad_pixels` of border on every side holding, per channel, the BN's output for
// a zero input:  pad_values = β − μ·γ/√(σ² + ε)   (−μ/√(σ² + ε) without affine).
// That border is what makes DBB's 1×1 → K×K merge exact at the image border (see
// merge_sequential_1x1_kxk): the next conv sees what a zero input of the merged conv would give.
class BNAndPad : public nn::Module {
 public:
  BNAndPad(std::int64_t pad_pixels, const nn::BatchNorm2dOptions& bn);
  BNAndPad(std::int64_t pad_pixels, std::int64_t num_features)
      : BNAndPad(pad_pixels, nn::BatchNorm2dOptions(num_features)) {}

  Tensor forward(const Tensor& input) override;

  std::int64_t pad_pixels() const { return pad_pixels_; }
  // The child "bn", as registered (replace_child may have swapped it).
  std::shared_ptr<nn::BatchNorm2d> bn() const;
  // [C] in the BN's dtype, computed in double and rounded once.
  Tensor pad_values() const;

 private:
  std::int64_t pad_pixels_;
};

// DBB's IdentityBasedConv1x1: a channels→channels 1×1 conv (no bias, `groups`) whose weight
// starts at zero and whose effective kernel is weight + I, the identity per group
// (identity_kernel). Its parameter is "weight", like a Conv2d's.
class IdentityBasedConv1x1 : public nn::Conv2d {
 public:
  explicit IdentityBasedConv1x1(std::int64_t channels, std::int64_t groups = 1);

  // conv2d(x, weight + I), stride 1, no padding.
  Tensor forward(const Tensor& input) override;
  // weight + I: the kernel this layer applies (the reference's get_actual_kernel).
  ConvKernel actual_kernel() const;
};

}  // namespace refold::reparam
