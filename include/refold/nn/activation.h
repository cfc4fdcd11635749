// Activation modules (torch.nn names). None has parameters; all accept channels_last and keep
// their input's memory format (they act element by element, so memory order is irrelevant).
//
//   ReLU         max(x, 0)
//   ReLU6        min(max(x, 0), 6)
//   LeakyReLU    x ≥ 0 ? x : negative_slope · x        (negative_slope 0.01)
//   Sigmoid      1 / (1 + e^−x)
//   SiLU         x · sigmoid(x)
//   Hardswish    x · relu6(x + 3) / 6
//   Hardsigmoid  relu6(x + 3) / 6
//
// PyTorch's `inplace` flag has no meaning here (refold's ops return new tensors) and is omitted.
#pragma once

#include "refold/nn/module.h"

namespace refold::nn {

class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& input) override;
};

class ReLU6 : public Module {
 public:
  ReLU6() : Module("ReLU6") {}
  Tensor forward(const Tensor& input) override;
};

class LeakyReLUOptions {
 public:
  LeakyReLUOptions() = default;
  LeakyReLUOptions& negative_slope(double value) {
    negative_slope_ = value;
    return *this;
  }
  double negative_slope() const { return negative_slope_; }

 private:
  double negative_slope_ = 0.01;
};

class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(const LeakyReLUOptions& options = {});
  Tensor forward(const Tensor& input) override;
  const LeakyReLUOptions& options() const { return options_; }

 private:
  LeakyReLUOptions options_;
};

class Sigmoid : public Module {
 public:
  Sigmoid() : Module("Sigmoid") {}
  Tensor forward(const Tensor& input) override;
};

class SiLU : public Module {
 public:
  SiLU() : Module("SiLU") {}
  Tensor forward(const Tensor& input) override;
};

class Hardswish : public Module {
 public:
  Hardswish() : Module("Hardswish") {}
  Tensor forward(const Tensor& input) override;
};

class Hardsigmoid : public Module {
 public:
  Hardsigmoid() : Module("Hardsigmoid") {}
  Tensor forward(const Tensor& input) override;
};

}  // namespace refold::nn
