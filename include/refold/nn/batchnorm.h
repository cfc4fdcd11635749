// torch.nn.BatchNorm2d, inference only (PyTorch 1.13 names, shapes and defaults).
//
//   y = (x − running_mean) / √(running_var + eps) · weight + bias      per channel (dim 1)
//
// State (in state_dict order): parameters "weight" = 1 and "bias" = 0 [num_features] (absent
// when affine(false)); buffers "running_mean" = 0, "running_var" = 1 [num_features] and
// "num_batches_tracked" — an int64 0-d tensor = 0, kept only so PyTorch checkpoints load and
// save unchanged. refold never trains, so forward always uses the running statistics and
// momentum is stored but unused; track_running_stats(false) (batch statistics at inference)
// is rejected.
//
// Memory format: accepts channels_last (a per-channel affine map does not care about order);
// the output keeps the input's format.
#pragma once

#include <cstdint>

#include "refold/nn/module.h"

namespace refold::nn {

class BatchNorm2dOptions {
 public:
  explicit BatchNorm2dOptions(std::int64_t num_features) : num_features_(num_features) {}

  std::int64_t num_features() const { return num_features_; }

  // PyTorch defaults: eps 1e-5, momentum 0.1, affine true, track_running_stats true.
  BatchNorm2dOptions& eps(double value) {
    eps_ = value;
    return *this;
  }
  BatchNorm2dOptions& momentum(double value) {
    momentum_ = value;
    return *this;
  }
  BatchNorm2dOptions& affine(bool value) {
    affine_ = value;
    return *this;
  }
  BatchNorm2dOptions& track_running_stats(bool value) {
    track_ = value;
    return *this;
  }

  double eps() const { return eps_; }
  double momentum() const { return momentum_; }
  bool affine() const { return affine_; }
  bool track_running_stats() const { return track_; }

 private:
  std::int64_t num_features_;
  double eps_ = 1e-5;
  double momentum_ = 0.1;
  bool affine_ = true;
  bool track_ = true;
};

class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(const BatchNorm2dOptions& options);
  explicit BatchNorm2d(std::int64_t num_features) : BatchNorm2d(BatchNorm2dOptions(num_features)) {}
  // Over given statistics and affine parameters, registered as they are (the same handles):
  // four [num_features] tensors of one floating dtype; `weight` and `bias` undefined when not
  // options.affine().
  BatchNorm2d(const BatchNorm2dOptions& options, Tensor weight, Tensor bias, Tensor running_mean,
              Tensor running_var);

  Tensor forward(const Tensor& input) override;

  const BatchNorm2dOptions& options() const { return options_; }
  // The registered handles (copies share the tensor). weight/bias are undefined when
  // !options().affine().
  Tensor weight() const { return weight_; }
  Tensor bias() const { return bias_; }
  Tensor running_mean() const { return running_mean_; }
  Tensor running_var() const { return running_var_; }
  Tensor num_batches_tracked() const { return num_batches_tracked_; }

 private:
  BatchNorm2dOptions options_;
  Tensor weight_;
  Tensor bias_;
  Tensor running_mean_;
  Tensor running_var_;
  Tensor num_batches_tracked_;
};

}  // namespace refold::nn
