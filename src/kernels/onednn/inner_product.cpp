// oneDNN inner product for linear: src [N, K] (nc), weights [O, K] with the weight's own strides,
// bias [O] (x), dst [N, O] (nc); N = the product of the input's leading dims.
#include "kernels/onednn/inner_product.h"

#include <memory>
#include <utility>

#include <fmt/format.h>

#include "core/check.h"
#include "kernels/native/bfloat16_boundary.h"
#include "kernels/onednn/engine.h"
#include "kernels/onednn/primitive_cache.h"
#include "kernels/onednn/threads.h"

namespace refold::onednn {
namespace {

struct Primitive {
  std::string declined;  // non-empty: oneDNN cannot take this problem (cached, not retried)
  dnnl::inner_product_forward primitive;
  dnnl::memory::desc src, weights, bias, dst;
};

PrimitiveCache<Primitive, PrimitiveStats>& cache() {
  static PrimitiveCache<Primitive, PrimitiveStats> c(1024);
  return c;
}

// Why oneDNN does not take these arguments, or "" when it does. Invalid arguments are declined
// too: the reference then rejects them with its messages.
std::string reason_to_decline(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  if (!input.defined() || !weight.defined()) return "an undefined operand";
  if (input.dtype() != DType::Float32 || weight.dtype() != DType::Float32 ||
      (bias.defined() && bias.dtype() != DType::Float32))
    return "oneDNN linear runs float32 only";
  if (input.dim() < 1 || weight.dim() != 2 || weight.size(1) != input.size(-1))
    return "arguments the reference will check";
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != weight.size(0)))
    return "arguments the reference will check";
  if (input.numel() == 0 || weight.numel() == 0) return "a zero-sized dimension";
  if (!weight.is_non_overlapping_and_dense())
    return fmt::format("weight {} is not dense", weight.description());
  if (!input.is_contiguous()) return fmt::format("input {} is not contiguous", input.description());
  if (bias.defined() && bias.stride(0) != 1 && bias.size(0) > 1) return "bias is not contiguous";
  return {};
}

}  // namespace

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias,
              std::string* declined) {
  constexpr std::string_view op = "linear";
  if (input.defined() && input.dtype() == DType::BFloat16)  // native/bfloat16_boundary.h
    return native::rounded(
        linear(native::widened(input), native::widened(weight), native::widened(bias), declined));
  if (std::string reason = reason_to_decline(input, weight, bias); !reason.empty())
    return decline(op, std::move(reason), declined);
  const int threads = apply_num_threads();
  // y[n, o] = b[o] + Σ_k x[n, k] · W[o, k],   n over the flattened leading dims.
  const std::int64_t k = input.size(-1);
  const std::int64_t n = input.numel() / k;
  const std::int64_t o = weight.size(0);

  const CacheKey key{n, k, o, weight.stride(0), weight.stride(1), bias.defined() ? 1 : 0, threads};
  const std::shared_ptr<Primitive> prim = cache().find_or_make(key, [&] {
    auto made = std::make_shared<Primitive>();
    made->declined = try_build(op, "inner product", [&] {
      using dt = dnnl::memory::data_type;
      made->src = dnnl::memory::desc({n, k}, dt::f32, dnnl::memory::dims{k, 1});
      made->weights = dnnl::memory::desc({o, k}, dt::f32,
                                         dnnl::memory::dims{weight.stride(0), weight.stride(1)});
      made->bias = dnnl::memory::desc({o}, dt::f32, dnnl::memory::dims{1});
      made->dst = dnnl::memory::desc({n, o}, dt::f32, dnnl::memory::dims{o, 1});
      const auto desc =
          bias.defined()
              ? dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_inference, made->src,
                                                  made->weights, made->bias, made->dst)
              : dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_inference, made->src,
                                                  made->weights, made->dst);
      made->primitive = dnnl::inner_product_forward(
          dnnl::inner_product_forward::primitive_desc(desc, user_scratchpad(), cpu_engine()));
    });
    return made;
  });
  if (!prim->declined.empty()) return decline(op, prim->declined, declined);

  Shape out_sizes(input.sizes().begin(), input.sizes().end() - 1);
  out_sizes.push_back(o);
  Tensor output = empty(out_sizes, DType::Float32);
  cache().execute(op, [&](dnnl::stream& stream) {
    // oneDNN only reads the operands; const_cast avoids Tensor's writable data_ptr(), which
    // would bump their versions.
    const dnnl::memory src(prim->src, cpu_engine(), const_cast<void*>(input.data_ptr()));
    const dnnl::memory w(prim->weights, cpu_engine(), const_cast<void*>(weight.data_ptr()));
    const dnnl::memory dst(prim->dst, cpu_engine(), output.data_ptr());
    if (bias.defined()) {
      const dnnl::memory b(prim->bias, cpu_engine(), const_cast<void*>(bias.data_ptr()));
      execute(
          prim->primitive, stream,
          {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, dst}});
    } else {
      execute(prim->primitive, stream,
              {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, dst}});
    }
  });
  return output;
}

PrimitiveStats inner_product_stats() { return cache().stats(); }

}  // namespace refold::onednn
