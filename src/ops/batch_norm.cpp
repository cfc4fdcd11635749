// BatchNormalization (inference): nn::BatchNorm2d over the graph's constant parameters, else
// BatchNormalization; with training_mode=1, BatchNormalizationOfBatch (the input's own
// statistics: weight standardization in NF-Nets and BiT's StdConv, exported that way).
#include "ops/batch_norm.h"

#include <fmt/ranges.h>

#include <cmath>

#include "core/check.h"
#include "kernels/reference/onnx_ops.h"
#include "ops/op.h"
#include "ops/window.h"
#include "refold/functional.h"
#include "refold/nn/batchnorm.h"

namespace refold::ops {

BatchNormalization::BatchNormalization(double epsilon)
    : Op("BatchNormalization"), epsilon_(epsilon) {}

std::vector<Tensor> BatchNormalization::run(const std::vector<Tensor>& in) {
  REFOLD_CHECK(in.size() == 5, "BatchNormalization: expects 5 inputs, got {}", in.size());
  const char* names[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (std::size_t i = 0; i < 5; ++i)
    REFOLD_CHECK(in[i].defined(), "BatchNormalization: {} is required", names[i]);
  const Tensor& x = in[0];
  REFOLD_CHECK(x.dim() >= 2, "BatchNormalization: X must be at least 2-d [N, C, …], got [{}]",
               fmt::join(x.sizes(), ", "));
  for (std::size_t i = 1; i < 5; ++i) {
    REFOLD_CHECK(in[i].dim() == 1 && in[i].size(0) == x.size(1),
                 "BatchNormalization: {} must be 1-d of length {} (X's channels), got [{}]",
                 names[i], x.size(1), fmt::join(in[i].sizes(), ", "));
    REFOLD_CHECK(in[i].dtype() == x.dtype(), "BatchNormalization: {} has dtype {} but X has {}",
                 names[i], dtype_name(in[i].dtype()), dtype_name(x.dtype()));
  }
  return {functional::batch_norm(x, in[3], in[4], in[1], in[2], epsilon_)};
}

namespace {

// BatchNormalization with training_mode=1 (opset 14+): x normalized by its own statistics per
// channel, then scaled and shifted; outputs 1 and 2, when asked for, are the running statistics
// the step would carry on (kernels/reference/onnx_ops.h). PyTorch exports F.batch_norm(…,
// training=True) so — timm's StdConv2d and ScaledStdConv2d standardize their conv weights with
// it, and the weight is a constant, so constant folding runs this once at load.
class BatchNormalizationOfBatch : public graph::Op {
 public:
  BatchNormalizationOfBatch(double epsilon, double momentum, std::size_t outputs)
      : Op("BatchNormalization"), epsilon_(epsilon), momentum_(momentum), outputs_(outputs) {}

  std::vector<Tensor> run(const std::vector<Tensor>& in) override {
    REFOLD_CHECK(in.size() == 5, "BatchNormalization: expects 5 inputs, got {}", in.size());
    reference::BatchNormTrainingResult r =
        reference::batch_norm_training(in[0], in[1], in[2], in[3], in[4], epsilon_, momentum_);
    std::vector<Tensor> out = {r.y, r.running_mean, r.running_var};
    out.resize(outputs_);
    return out;
  }

 private:
  double epsilon_, momentum_;
  std::size_t outputs_;
};

}  // namespace

nn::ModulePtr build_batch_normalization(const BuildContext& context) {
  const graph::Node& node = context.node;
  const graph::Attributes& a = node.attributes;
  const double eps = a.get_float("epsilon", 1e-5f);
  REFOLD_CHECK(std::isfinite(eps) && eps >= 0, "epsilon must be finite and non-negative (got {})",
               eps);
  // training_mode=1 (opset 14+): the batch's own statistics, and up to two running-statistics
  // outputs (F21: computed, never folded into a conv).
  const std::int64_t training = a.get_int("training_mode", 0);
  REFOLD_CHECK(training == 0 || training == 1, "training_mode must be 0 or 1 (got {})", training);
  if (training == 1) {
    check_arity(node, 5, 5, 3);
    const double momentum = a.get_float("momentum", 0.9f);
    REFOLD_CHECK(std::isfinite(momentum), "momentum must be finite (got {})", momentum);
    std::size_t outputs = node.outputs.size();
    while (outputs > 1 && node.outputs[outputs - 1].empty()) --outputs;
    return std::make_shared<BatchNormalizationOfBatch>(eps, momentum, outputs);
  }
  // Before opset 14 training had no attribute: the mean/var (and saved_mean/saved_var) outputs
  // asked for it. Their meaning differs between opsets — refold runs inference only there.
  for (std::size_t i = 1; i < node.outputs.size(); ++i)
    REFOLD_CHECK(node.outputs[i].empty(),
                 "unsupported: output {} ('{}') is a training output without training_mode=1 "
                 "(refold computes the running statistics only for training_mode=1, opset 14+)",
                 i, node.outputs[i]);
  check_arity(node, 5, 5, 1);

  bool all_const = true;
  for (std::size_t i = 1; i < 5; ++i)
    all_const = all_const && is_constant_input(context.graph, node, i);
  if (!all_const) return std::make_shared<BatchNormalization>(eps);

  // F20: four 1-d parameters of one length C and one floating dtype.
  const char* names[] = {"X", "scale", "B", "input_mean", "input_var"};
  const Tensor& scale = context.graph.constant(node.inputs[1]);
  for (std::size_t i = 1; i < 5; ++i) {
    const Tensor& t = context.graph.constant(node.inputs[i]);
    check_floating(t, names[i]);
    REFOLD_CHECK(t.dim() == 1 && t.numel() > 0, "{} must be 1-d and non-empty, got [{}]", names[i],
                 fmt::join(t.sizes(), ", "));
    REFOLD_CHECK(t.size(0) == scale.size(0), "{} has {} values but scale has {}", names[i],
                 t.size(0), scale.size(0));
    REFOLD_CHECK(t.dtype() == scale.dtype(), "{} has dtype {} but scale has {}", names[i],
                 dtype_name(t.dtype()), dtype_name(scale.dtype()));
  }
  // F18/F19: √(var + eps) must be real and non-zero.
  const std::vector<float> var = context.graph.constant(node.inputs[4]).to_vector();
  for (std::size_t c = 0; c < var.size(); ++c) {
    REFOLD_CHECK(!(var[c] < 0), "input_var is negative at channel {} ({})", c, var[c]);
    REFOLD_CHECK(var[c] + eps > 0, "input_var + epsilon is 0 at channel {} (division by zero)", c);
  }

  const std::int64_t channels = scale.size(0);
  const graph::Graph& g = context.graph;
  return std::make_shared<nn::BatchNorm2d>(nn::BatchNorm2dOptions(channels).eps(eps), scale,
                                           g.constant(node.inputs[2]), g.constant(node.inputs[3]),
                                           g.constant(node.inputs[4]));
}

const std::vector<OpDef>& batch_norm_ops() {
  static const std::vector<OpDef> table = {
      // v7 onwards: no is_test/consumed_inputs; `spatial` (v7–v8) defaults to the same meaning.
      {"BatchNormalization", 7, build_batch_normalization},
  };
  return table;
}

}  // namespace refold::ops
