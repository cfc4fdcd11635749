// The builders behind cnn_ops() (cnn_ops.cpp), one family per file:
//   conv_builders.cpp        Conv, ConvTranspose
//   norm_builders.cpp        BatchNormalization
//   activation_builders.cpp  Relu, Clip, LeakyRelu, Sigmoid, HardSigmoid, HardSwish, Identity
//   arith_builders.cpp       Add, Sub, Mul, Div
//   pool_builders.cpp        MaxPool, AveragePool, GlobalAveragePool
//   gemm_builders.cpp        Gemm, MatMul, Pad
// Each validates the node (docs/reliability.md section F) and returns a plain nn module holding
// the constant weights (the graph's own tensors, shared through set_data) or a graph::Op
// (src/graph/ops/).
#pragma once

#include "onnx/ops/builder.h"
#include "refold/tensor.h"

namespace refold::onnx::ops {

nn::ModulePtr build_conv(const BuildContext& context);
nn::ModulePtr build_conv_transpose(const BuildContext& context);
nn::ModulePtr build_batch_normalization(const BuildContext& context);
nn::ModulePtr build_relu(const BuildContext& context);
nn::ModulePtr build_clip(const BuildContext& context);
nn::ModulePtr build_leaky_relu(const BuildContext& context);
nn::ModulePtr build_sigmoid(const BuildContext& context);
nn::ModulePtr build_hard_sigmoid(const BuildContext& context);
nn::ModulePtr build_hard_swish(const BuildContext& context);
nn::ModulePtr build_identity(const BuildContext& context);
nn::ModulePtr build_add(const BuildContext& context);
nn::ModulePtr build_sub(const BuildContext& context);
nn::ModulePtr build_mul(const BuildContext& context);
nn::ModulePtr build_div(const BuildContext& context);
nn::ModulePtr build_max_pool(const BuildContext& context);
nn::ModulePtr build_average_pool(const BuildContext& context);
nn::ModulePtr build_global_average_pool(const BuildContext& context);
nn::ModulePtr build_gemm(const BuildContext& context);
nn::ModulePtr build_mat_mul(const BuildContext& context);
nn::ModulePtr build_pad(const BuildContext& context);

// Makes a module whose constructor draws random initial parameters (nn::Conv2d, nn::Linear, …)
// without moving refold::default_generator(): importing a model must not change the random
// stream a program sees afterwards. The parameters are then replaced by the graph's constants.
template <typename M, typename... Args>
std::shared_ptr<M> make_module_keeping_rng(Args&&... args) {
  const Generator saved = default_generator();
  auto module = std::make_shared<M>(std::forward<Args>(args)...);
  default_generator() = saved;
  return module;
}

// Points a module's parameter handle at the graph constant (same storage, sizes, strides).
inline void share(Tensor parameter, const Tensor& constant) { parameter.set_data(constant); }

}  // namespace refold::onnx::ops
