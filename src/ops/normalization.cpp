// Normalizations whose statistics come from the input: LayerNormalization, GroupNormalization,
// InstanceNormalization (GroupNormalization with one channel per group) and LRN. The math is in
// kernels/reference/normalization.cpp; LayerNormalization over contiguous rows (a transformer or
// ConvNeXt block's channel LayerNorm) runs native::layer_norm_rows, Group/InstanceNormalization
// of an NCHW or NHWC float32 tensor native::group_norm.
#include <cmath>
#include <string>

#include "core/check.h"
#include "kernels/dispatch.h"
#include "kernels/native/group_norm.h"
#include "kernels/native/layer_norm.h"
#include "kernels/reference/onnx_ops.h"
#include "kernels/reference/tensor_ops.h"
#include "ops/op.h"
#include "refold/graph/op.h"

namespace refold::ops {
namespace {

class LayerNormalization : public graph::Op {
 public:
  LayerNormalization(std::int64_t axis, double epsilon, std::size_t outputs)
      : Op("LayerNormalization"), axis_(axis), epsilon_(epsilon), outputs_(outputs) {}

  std::vector<Tensor> run(const std::vector<Tensor>& in) override {
    REFOLD_CHECK(in.size() >= 2 && in.size() <= 3,
                 "LayerNormalization: expects X, Scale and optional B; got {} inputs", in.size());
    const Tensor bias = in.size() > 2 ? in[2] : Tensor();
    if (outputs_ == 1) {
      return {
          dispatch("LayerNormalization",
                   {{"native",
                     [&](std::string* declined) {
                       // Rows strided in memory are made dense first: one copy, where the reference
                       // ran 50× slower (a channels_last [N, H, W, C] normalized over C).
                       return native::layer_norm_rows(in[0].contiguous(), in[1], bias, axis_,
                                                      epsilon_, declined);
                     }}},
                   [&] { return reference::layer_norm(in[0], in[1], bias, axis_, epsilon_).y; })};
    }
    // Mean and InvStdDev wanted too: the reference computes all three.
    reference::LayerNormResult r = reference::layer_norm(in[0], in[1], bias, axis_, epsilon_);
    std::vector<Tensor> out = {r.y, r.mean, r.inv_std_dev};
    out.resize(outputs_);
    return out;
  }

 private:
  std::int64_t axis_;
  double epsilon_;
  std::size_t outputs_;
};

// GroupNormalization and InstanceNormalization (groups = 0: one per channel).
class GroupNormalization : public graph::Op {
 public:
  GroupNormalization(std::string name, std::int64_t groups, double epsilon, bool per_group_affine)
      : Op(std::move(name)),
        groups_(groups),
        epsilon_(epsilon),
        per_group_affine_(per_group_affine) {}

  std::vector<Tensor> run(const std::vector<Tensor>& in) override {
    REFOLD_CHECK(in.size() == 3 && in[0].defined() && in[1].defined() && in[2].defined(),
                 "{}: expects X, scale and bias; got {} inputs", type_name(), in.size());
    const Tensor& x = in[0];
    REFOLD_CHECK(x.dim() >= 2, "{}: X must be at least 2-d [N, C, …], got [{}]", type_name(),
                 fmt::join(x.sizes(), ", "));
    const std::int64_t groups = groups_ == 0 ? x.size(1) : groups_;
    Tensor scale = in[1], bias = in[2];
    if (per_group_affine_) {
      // Opset 18: one scale and bias per group, the same for each of its channels.
      scale = per_channel(scale, groups, x.size(1), "scale");
      bias = per_channel(bias, groups, x.size(1), "bias");
    }
    return {dispatch(type_name(),
                     {{"native",
                       [&](std::string* declined) {
                         return native::group_norm(x, scale, bias, groups, epsilon_, declined);
                       }}},
                     [&] { return reference::group_norm(x, scale, bias, groups, epsilon_); })};
  }

 private:
  Tensor per_channel(const Tensor& t, std::int64_t groups, std::int64_t channels,
                     const char* name) const {
    REFOLD_CHECK(t.dim() == 1 && t.size(0) == groups,
                 "{}: {} must be 1-d of length {} (num_groups, opset 18), got [{}]", type_name(),
                 name, groups, fmt::join(t.sizes(), ", "));
    REFOLD_CHECK(groups > 0 && channels % groups == 0,
                 "{}: {} channels do not split into {} groups", type_name(), channels, groups);
    const std::int64_t per_group = channels / groups;
    return reference::expand(t.reshape({groups, 1}), {groups, per_group}).reshape({channels});
  }

  std::int64_t groups_;
  double epsilon_;
  bool per_group_affine_;
};

class Lrn : public graph::Op {
 public:
  Lrn(std::int64_t size, double alpha, double beta, double bias)
      : Op("LRN"), size_(size), alpha_(alpha), beta_(beta), bias_(bias) {}
  std::vector<Tensor> run(const std::vector<Tensor>& in) override {
    REFOLD_CHECK(in.size() == 1 && in[0].defined(), "LRN: expects 1 input, got {}", in.size());
    return {reference::lrn(in[0], size_, alpha_, beta_, bias_)};
  }

 private:
  std::int64_t size_;
  double alpha_, beta_, bias_;
};

// A required attribute that must be a positive integer (num_groups, LRN's size).
std::int64_t required_positive(const graph::Node& node, const char* name) {
  REFOLD_CHECK(node.attributes.has(name), "the {} attribute is required", name);
  const std::int64_t value = node.attributes.get_int(name, 0);
  REFOLD_CHECK(value > 0, "{} must be positive (got {})", name, value);
  return value;
}

float read_epsilon(const graph::Node& node) {
  const float epsilon = node.attributes.get_float("epsilon", 1e-5f);
  REFOLD_CHECK(std::isfinite(epsilon) && epsilon >= 0.0f,
               "epsilon must be finite and non-negative (got {})", epsilon);
  return epsilon;
}

nn::ModulePtr build_layer_normalization(const BuildContext& context) {
  const graph::Node& node = context.node;
  check_arity(node, 2, 3, 3);
  REFOLD_CHECK(!node.inputs[1].empty(), "Scale is required");
  const std::int64_t stash = node.attributes.get_int("stash_type", 1);
  REFOLD_CHECK(stash == 1 || stash == 11 || stash == 16,
               "stash_type must be an ONNX float type code (1, 11 or 16), got {}", stash);
  std::size_t outputs = node.outputs.size();
  while (outputs > 1 && node.outputs[outputs - 1].empty()) --outputs;
  return std::make_shared<LayerNormalization>(node.attributes.get_int("axis", -1),
                                              read_epsilon(node), outputs);
}

nn::ModulePtr build_group_normalization(const BuildContext& context) {
  const graph::Node& node = context.node;
  check_arity(node, 3, 3, 1);
  const std::int64_t groups = required_positive(node, "num_groups");
  // Opset 21 made scale and bias per channel; 18 has them per group.
  return std::make_shared<GroupNormalization>("GroupNormalization", groups, read_epsilon(node),
                                              context.opset < 21);
}

nn::ModulePtr build_instance_normalization(const BuildContext& context) {
  check_arity(context.node, 3, 3, 1);
  return std::make_shared<GroupNormalization>("InstanceNormalization", 0,
                                              read_epsilon(context.node), false);
}

nn::ModulePtr build_lrn(const BuildContext& context) {
  const graph::Node& node = context.node;
  check_arity(node, 1, 1, 1);
  const std::int64_t size = required_positive(node, "size");
  const float alpha = node.attributes.get_float("alpha", 1e-4f);
  const float beta = node.attributes.get_float("beta", 0.75f);
  const float bias = node.attributes.get_float("bias", 1.0f);
  REFOLD_CHECK(std::isfinite(alpha) && std::isfinite(beta) && std::isfinite(bias),
               "alpha, beta and bias must be finite (got {}, {}, {})", alpha, beta, bias);
  return std::make_shared<Lrn>(size, alpha, beta, bias);
}

}  // namespace

const std::vector<OpDef>& normalization_ops() {
  static const std::vector<OpDef> table = {
      {"LayerNormalization", 17, build_layer_normalization},
      {"GroupNormalization", 18, build_group_normalization},
      {"InstanceNormalization", 6, build_instance_normalization},
      {"LRN", 1, build_lrn},
  };
  return table;
}

}  // namespace refold::ops
