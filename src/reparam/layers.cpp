// The building layers of the re-parameterizable blocks; see refold/reparam/layers.h.
#include "refold/reparam/layers.h"

#include <utility>

#include "core/check.h"
#include "refold/functional.h"
#include "refold/reparam/module_kernels.h"

namespace refold::reparam {

// ---- NamedSequential, ModuleList ------------------------------------------------------------

NamedSequential& NamedSequential::add(std::string name, nn::ModulePtr module) {
  register_module(std::move(name), std::move(module));
  return *this;
}

Tensor NamedSequential::forward(const Tensor& input) {
  Tensor x = input;
  for (const auto& [name, module] : named_children()) x = (*module)(x);
  return x;
}

void ModuleList::push_back(nn::ModulePtr module) {
  REFOLD_CHECK(module != nullptr, "ModuleList: push_back given a null module (index {})", size_);
  register_module(std::to_string(size_), std::move(module));
  ++size_;
}

nn::ModulePtr ModuleList::operator[](std::size_t index) const {
  REFOLD_CHECK(index < size_, "ModuleList: index {} out of range (size {})", index, size_);
  return child(std::to_string(index));
}

Tensor ModuleList::forward(const Tensor&) {
  fail("ModuleList: a ModuleList is a container and cannot be called; call its children");
}

std::shared_ptr<NamedSequential> conv_bn(const nn::Conv2dOptions& conv, nn::ModulePtr activation) {
  nn::Conv2dOptions options = conv;
  options.bias(false);
  auto branch = std::make_shared<NamedSequential>(activation ? "Conv" : "Sequential");
  branch->add("conv", std::make_shared<nn::Conv2d>(options));
  branch->add("bn", std::make_shared<nn::BatchNorm2d>(conv.out_channels()));
  if (activation) branch->add("act", std::move(activation));
  return branch;
}

// ---- BNAndPad --------------------------------------------------------------------------------

BNAndPad::BNAndPad(std::int64_t pad_pixels, const nn::BatchNorm2dOptions& bn)
    : Module("BNAndPadLayer"), pad_pixels_(pad_pixels) {
  REFOLD_CHECK(pad_pixels >= 0, "BNAndPadLayer: pad_pixels ({}) must be non-negative", pad_pixels);
  register_module("bn", std::make_shared<nn::BatchNorm2d>(bn));
}

std::shared_ptr<nn::BatchNorm2d> BNAndPad::bn() const {
  auto bn = std::dynamic_pointer_cast<nn::BatchNorm2d>(child("bn"));
  REFOLD_CHECK(bn != nullptr, "BNAndPadLayer: child 'bn' is a {}, expected BatchNorm2d",
               child("bn")->type_name());
  return bn;
}

// The BN's output for a zero input is the bias a bias-free conv gets when the BN folds into it:
// (0 − μ)·s + β with s = γ/√(σ² + ε). fold_batch_norm computes exactly that (and validates σ²).
Tensor BNAndPad::pad_values() const {
  const auto norm = bn();
  const Tensor mean = norm->running_mean();
  const ConvKernel zero{zeros({mean.size(0), 1, 1, 1}, {mean.dtype()}), Tensor{}, 1};
  return fold_batch_norm(zero, params_of(*norm)).bias;
}

Tensor BNAndPad::forward(const Tensor& input) {
  Tensor out = (*bn())(input);
  const std::int64_t p = pad_pixels_;
  if (p == 0) return out;
  out = functional::pad(out, {p, p, p, p});
  // Overwrite the zero border with each channel's pad value: the top and bottom p rows in full,
  // the left and right p columns of the rows between.
  const std::vector<float> values = pad_values().to_vector();
  const std::int64_t n = out.size(0), c = out.size(1), h = out.size(2), w = out.size(3);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t ch = 0; ch < c; ++ch) {
      const float v = values[static_cast<std::size_t>(ch)];
      const auto fill = [&](std::int64_t y, std::int64_t begin, std::int64_t end) {
        for (std::int64_t x = begin; x < end; ++x) out.set({i, ch, y, x}, v);
      };
      for (std::int64_t y = 0; y < h; ++y) {
        if (y < p || y >= h - p) {
          fill(y, 0, w);
        } else {
          fill(y, 0, p);
          fill(y, w - p, w);
        }
      }
    }
  return out;
}

// ---- IdentityBasedConv1x1 --------------------------------------------------------------------

IdentityBasedConv1x1::IdentityBasedConv1x1(std::int64_t channels, std::int64_t groups)
    : nn::Conv2d("IdentityBasedConv1x1",
                 nn::Conv2dOptions(channels, channels, 1).groups(groups).bias(false)) {
  // The reference zero-initializes the learned part: the layer starts as the identity.
  weight().fill_(0.0f);
}

ConvKernel IdentityBasedConv1x1::actual_kernel() const {
  const ConvKernel learned = kernel_of(*this);
  return sum_branches({learned, identity_kernel(options().in_channels(), options().groups(), 1,
                                                learned.weight.dtype())});
}

Tensor IdentityBasedConv1x1::forward(const Tensor& input) {
  Tensor kernel = actual_kernel().weight;
  // Keep the parameter's layout (a channels_last model stays channels_last) without a counted
  // permute: copy into a tensor of that format.
  const MemoryFormat format = weight().suggest_memory_format();
  if (format != MemoryFormat::Contiguous) {
    Tensor laid_out = empty(kernel.sizes(), {kernel.dtype(), format});
    laid_out.copy_(kernel);
    kernel = laid_out;
  }
  return functional::conv2d(input, kernel, Tensor{}, options().op_options());
}

}  // namespace refold::reparam
