// Shape and plumbing modules: torch.nn.Flatten, Identity and PixelShuffle.
//
//   Flatten       [N, C, H, W] -> [N, C·H·W] (start_dim 1, end_dim −1 by default)
//   Identity      returns its input (the same tensor handle)
//   PixelShuffle  [N, C·r², H, W] -> [N, C, H·r, W·r]
//
// Memory format: Flatten declares accepts_channels_last() == false. Its output is defined by
// the NCHW element order (feature c·H·W + h·W + w), and the 2-d result has no channels_last
// form, so a channels_last input must be permuted to NCHW somewhere; declaring it makes that
// permute happen in Module::operator(), where permute_count() sees it and a layout plan can
// name it, rather than hidden inside the kernel. Identity and PixelShuffle accept channels_last
// (PixelShuffle keeps the input's format).
#pragma once

#include <cstdint>

#include "refold/nn/module.h"

namespace refold::nn {

class FlattenOptions {
 public:
  FlattenOptions() = default;
  FlattenOptions& start_dim(std::int64_t value) {
    start_dim_ = value;
    return *this;
  }
  FlattenOptions& end_dim(std::int64_t value) {
    end_dim_ = value;
    return *this;
  }
  std::int64_t start_dim() const { return start_dim_; }
  std::int64_t end_dim() const { return end_dim_; }

 private:
  std::int64_t start_dim_ = 1;
  std::int64_t end_dim_ = -1;
};

class Flatten : public Module {
 public:
  explicit Flatten(const FlattenOptions& options = {}) : Module("Flatten"), options_(options) {}
  Tensor forward(const Tensor& input) override;
  bool accepts_channels_last() const override { return false; }
  const FlattenOptions& options() const { return options_; }

 private:
  FlattenOptions options_;
};

class Identity : public Module {
 public:
  Identity() : Module("Identity") {}
  Tensor forward(const Tensor& input) override { return input; }
};

class PixelShuffleOptions {
 public:
  explicit PixelShuffleOptions(std::int64_t upscale_factor) : upscale_factor_(upscale_factor) {}
  std::int64_t upscale_factor() const { return upscale_factor_; }

 private:
  std::int64_t upscale_factor_;
};

class PixelShuffle : public Module {
 public:
  explicit PixelShuffle(const PixelShuffleOptions& options);
  explicit PixelShuffle(std::int64_t upscale_factor)
      : PixelShuffle(PixelShuffleOptions(upscale_factor)) {}
  Tensor forward(const Tensor& input) override;
  const PixelShuffleOptions& options() const { return options_; }

 private:
  PixelShuffleOptions options_;
};

}  // namespace refold::nn
