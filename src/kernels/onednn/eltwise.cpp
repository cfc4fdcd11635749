// oneDNN eltwise: each refold activation as one or two oneDNN eltwise steps on the input's own
// memory descriptor (its sizes and strides), cached per problem.
#include "kernels/onednn/eltwise.h"

#include <bit>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/check.h"
#include "kernels/onednn/conv2d.h"
#include "kernels/onednn/engine.h"
#include "kernels/onednn/primitive_cache.h"
#include "kernels/onednn/threads.h"

namespace refold::onednn {
namespace {

using alg = dnnl::algorithm;

// One oneDNN eltwise step: d = f(s; alpha, beta).
struct Step {
  alg algorithm = alg::eltwise_relu;
  float alpha = 0.0f;
  float beta = 0.0f;
};

// The steps of each op, in oneDNN 2.6's algorithms (which has no hardsigmoid):
//   relu(x)        = relu(x; α = 0)
//   relu6(x)       = clip_v2(x; 0, 6)
//   leaky_relu(x)  = relu(x; α = negative_slope)          (x > 0 ? x : α·x)
//   sigmoid(x)     = logistic(x)
//   silu(x)        = swish(x; α = 1)                      (x · σ(α·x))
//   hardswish(x)   = hardswish(x)                         (x · relu6(x + 3) / 6)
//   hardsigmoid(x) = clip_v2(linear(x; 1/6, 1/2); 0, 1)   ((x + 3)/6 clamped to [0, 1]; the
//                    second step runs in place on the output)
std::vector<Step> steps_of(EltwiseOp op, double negative_slope) {
  switch (op) {
    case EltwiseOp::ReLU:
      return {{alg::eltwise_relu, 0.0f, 0.0f}};
    case EltwiseOp::ReLU6:
      return {{alg::eltwise_clip_v2, 0.0f, 6.0f}};
    case EltwiseOp::LeakyReLU:
      return {{alg::eltwise_relu, static_cast<float>(negative_slope), 0.0f}};
    case EltwiseOp::Sigmoid:
      return {{alg::eltwise_logistic, 0.0f, 0.0f}};
    case EltwiseOp::SiLU:
      return {{alg::eltwise_swish, 1.0f, 0.0f}};
    case EltwiseOp::HardSwish:
      return {{alg::eltwise_hardswish, 0.0f, 0.0f}};
    case EltwiseOp::HardSigmoid:
      return {{alg::eltwise_linear, 1.0f / 6.0f, 0.5f}, {alg::eltwise_clip_v2, 0.0f, 1.0f}};
  }
  fail("eltwise: unknown op {}", static_cast<int>(op));
}

// What oneDNN built for one problem, or why it could not.
struct Primitive {
  std::string declined;  // non-empty: oneDNN cannot take this problem (cached, not retried)
  std::vector<dnnl::eltwise_forward> steps;
};

PrimitiveCache<Primitive, PrimitiveStats>& cache() {
  static PrimitiveCache<Primitive, PrimitiveStats> c(1024);
  return c;
}

// Builds the steps for `desc`; a problem oneDNN has no implementation for is a decline.
std::shared_ptr<Primitive> create(std::string_view op, const std::vector<Step>& steps,
                                  const dnnl::memory::desc& desc) {
  auto prim = std::make_shared<Primitive>();
  prim->declined = try_build(op, "eltwise", [&] {
    for (const Step& s : steps) {
      const dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, s.algorithm, desc,
                                          s.alpha, s.beta);
      const dnnl::eltwise_forward::primitive_desc pd(d, user_scratchpad(), cpu_engine());
      prim->steps.emplace_back(pd);
    }
  });
  if (!prim->declined.empty()) prim->steps.clear();
  return prim;
}

}  // namespace

std::string_view eltwise_name(EltwiseOp op) {
  switch (op) {
    case EltwiseOp::ReLU:
      return "relu";
    case EltwiseOp::ReLU6:
      return "relu6";
    case EltwiseOp::LeakyReLU:
      return "leaky_relu";
    case EltwiseOp::Sigmoid:
      return "sigmoid";
    case EltwiseOp::SiLU:
      return "silu";
    case EltwiseOp::HardSwish:
      return "hardswish";
    case EltwiseOp::HardSigmoid:
      return "hardsigmoid";
  }
  return "eltwise";
}

namespace {

// Runs `steps` on the input's own memory descriptor. `op_key` tells the ops apart in the cache
// (the steps' parameters are part of the key too).
Tensor run_steps(std::string_view name, std::int64_t op_key, const std::vector<Step>& steps,
                 const Tensor& input, std::string* declined) {
  REFOLD_CHECK(input.defined(), "{}: input is undefined", name);
  const DType dtype = input.dtype();
  REFOLD_CHECK(dtype == DType::Float32 || dtype == DType::BFloat16,
               "{}: input has dtype {}; only float32 and bfloat16 are supported", name,
               dtype_name(dtype));

  if (!input.is_non_overlapping_and_dense())
    return decline(name,
                   fmt::format("input {} (strides [{}]) is not dense; oneDNN eltwise takes "
                               "dense tensors only",
                               input.description(), fmt::join(input.strides(), ", ")),
                   declined);
  if (input.numel() == 0) return decline(name, "a zero-sized dimension", declined);
  if (input.dim() > DNNL_MAX_NDIMS)
    return decline(name, fmt::format("{} dims, more than oneDNN's {}", input.dim(), DNNL_MAX_NDIMS),
                   declined);
  if (dtype == DType::BFloat16 && !bf16_supported())
    return decline(name, fmt::format("bfloat16 {} needs avx512_bf16, which this CPU lacks", name),
                   declined);
  const int threads = apply_num_threads();

  // A 0-d tensor is one element: oneDNN sees it as [1].
  const Shape dims = input.dim() == 0 ? Shape{1} : input.sizes();
  const Shape strides = input.dim() == 0 ? Shape{1} : input.strides();

  CacheKey key;
  key.reserve(8 + 2 * steps.size() + 2 * dims.size());
  key.insert(key.end(), {op_key, static_cast<std::int64_t>(dtype), threads});
  for (const Step& s : steps) {
    key.push_back(std::bit_cast<std::int32_t>(s.alpha));
    key.push_back(std::bit_cast<std::int32_t>(s.beta));
  }
  key.push_back(static_cast<std::int64_t>(dims.size()));
  key.insert(key.end(), dims.begin(), dims.end());
  key.insert(key.end(), strides.begin(), strides.end());

  const dnnl::memory::desc desc = call(name, [&] {
    return dnnl::memory::desc(dnnl::memory::dims(dims.begin(), dims.end()), data_type_of(dtype),
                              dnnl::memory::dims(strides.begin(), strides.end()));
  });

  const std::shared_ptr<Primitive> prim =
      cache().find_or_make(key, [&] { return create(name, steps, desc); });
  if (!prim->declined.empty()) return decline(name, prim->declined, declined);

  Tensor output = empty_like(input, {dtype, MemoryFormat::Preserve});
  REFOLD_CHECK(output.strides() == input.strides() || input.dim() == 0,
               "{}: internal: output strides [{}] differ from the input's [{}]", name,
               fmt::join(output.strides(), ", "), fmt::join(input.strides(), ", "));
  cache().execute(name, [&](dnnl::stream& stream) {
    // oneDNN only reads the source; const_cast avoids Tensor's writable data_ptr(), which would
    // bump the input's version.
    const dnnl::memory src(desc, cpu_engine(), const_cast<void*>(input.data_ptr()));
    const dnnl::memory dst(desc, cpu_engine(), output.data_ptr());
    for (std::size_t i = 0; i < prim->steps.size(); ++i)
      execute(prim->steps[i], stream, {{DNNL_ARG_SRC, i == 0 ? src : dst}, {DNNL_ARG_DST, dst}});
  });
  return output;
}

// The oneDNN steps of an ONNX function, or none when oneDNN 2.6 has no algorithm for it:
// (not Log: oneDNN's is off by ~1e-6 absolute near x = 1, where the exact result is 0)
//   Abs = abs, Neg = linear(−1, 0), Sqrt, Exp, Tanh, Round (halves to even), Mish,
//   Softplus = soft_relu, Gelu = gelu_erf, GeluTanh = gelu_tanh, Elu = elu(α),
//   Selu = linear(γ, 0)∘elu(α), Reciprocal = pow(1, −1), Pow = pow(1, α).
std::vector<Step> unary_steps(reference::UnaryOp op, double alpha, double beta) {
  using reference::UnaryOp;
  const auto a = static_cast<float>(alpha);
  switch (op) {
    case UnaryOp::Abs:
      return {{alg::eltwise_abs}};
    case UnaryOp::Neg:
      return {{alg::eltwise_linear, -1.0f, 0.0f}};
    case UnaryOp::Sqrt:
      return {{alg::eltwise_sqrt}};
    case UnaryOp::Exp:
      return {{alg::eltwise_exp}};
    case UnaryOp::Tanh:
      return {{alg::eltwise_tanh}};
    case UnaryOp::Round:
      return {{alg::eltwise_round}};
    case UnaryOp::Mish:
      return {{alg::eltwise_mish}};
    case UnaryOp::Softplus:
      return {{alg::eltwise_soft_relu}};
    case UnaryOp::Gelu:
      return {{alg::eltwise_gelu_erf}};
    case UnaryOp::GeluTanh:
      return {{alg::eltwise_gelu_tanh}};
    case UnaryOp::Elu:
      return {{alg::eltwise_elu, a, 0.0f}};
    case UnaryOp::Selu:
      return {{alg::eltwise_elu, a, 0.0f}, {alg::eltwise_linear, static_cast<float>(beta), 0.0f}};
    case UnaryOp::Reciprocal:
      return {{alg::eltwise_pow, 1.0f, -1.0f}};
    case UnaryOp::Pow:
      return {{alg::eltwise_pow, 1.0f, a}};
    default:
      return {};
  }
}

}  // namespace

Tensor eltwise(EltwiseOp op, const Tensor& input, double negative_slope, std::string* declined) {
  // The reference's checks and messages (reference/activations.cpp).
  if (op == EltwiseOp::LeakyReLU)
    REFOLD_CHECK(std::isfinite(negative_slope), "leaky_relu: negative_slope ({}) must be finite",
                 negative_slope);
  return run_steps(eltwise_name(op), static_cast<std::int64_t>(op), steps_of(op, negative_slope),
                   input, declined);
}

Tensor unary(reference::UnaryOp op, const Tensor& input, double alpha, double beta,
             std::string* declined) {
  const std::string_view name = reference::unary_name(op);
  const std::vector<Step> steps = unary_steps(op, alpha, beta);
  if (steps.empty()) {
    REFOLD_CHECK(input.defined(), "{}: input is undefined", name);
    return decline(name, fmt::format("oneDNN has no algorithm for {}", name), declined);
  }
  if (input.defined() && input.dtype() == DType::Int64)  // Abs and Neg: the exact int64 loop
    return decline(name, "int64 input; oneDNN eltwise takes floating point", declined);
  // 100 + op: apart from EltwiseOp's keys.
  return run_steps(name, 100 + static_cast<std::int64_t>(op), steps, input, declined);
}

PrimitiveStats eltwise_stats() { return cache().stats(); }

void clear_eltwise_cache() { cache().clear(); }

}  // namespace refold::onednn
