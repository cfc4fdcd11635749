// oneDNN matmul for linear: src [N, K] row-major, weights Wᵀ [K, O] in the primitive's own
// format (packed once, packed_weights.h), bias [1, O], dst [N, O] row-major; N = the product of
// the input's leading dims. Post-ops: the residual as binary_add of an [N, O] operand, then the
// activation's eltwise ops.
//
// Why matmul and not inner product: with the weight format left to it, oneDNN's matmul runs
// brgemm on packed weights on every shape measured, where the inner product either reads plain
// weights through its GEMM or, given format any, runs a brgemm that is slower on odd token counts
// (197: DeiT's). Xeon family 6 model 167, 2 threads (bench/RESULTS.md, session 45): 0.72–0.92×
// the plain inner product's time on transformer shapes (49–3136 rows, K 64–768), equal on
// a classifier's single row; with AVX2 both run gemm:jit on the plain layout, at equal speed.
#include "kernels/onednn/linear.h"

#include <bit>
#include <memory>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "core/check.h"
#include "kernels/native/bfloat16_boundary.h"
#include "kernels/onednn/activation_eltwise.h"
#include "kernels/onednn/engine.h"
#include "kernels/onednn/packed_weights.h"
#include "kernels/onednn/primitive_cache.h"
#include "kernels/onednn/threads.h"

namespace refold::onednn {
namespace {

struct Primitive {
  std::string declined;  // non-empty: oneDNN cannot take this problem (cached, not retried)
  std::uint64_t id = 0;  // names the primitive in the packed-weight keys
  dnnl::matmul primitive;
  dnnl::memory::desc src, weights, bias, dst;  // weights: packed, or the weight as it lies
};

PrimitiveCache<Primitive, PrimitiveStats>& cache() {
  static PrimitiveCache<Primitive, PrimitiveStats> c(1024);
  return c;
}

// Why oneDNN does not take these arguments, or "" when it does. Invalid arguments are declined
// too: the reference then rejects them with its messages.
std::string reason_to_decline(const Tensor& input, const Tensor& weight, const Tensor& bias,
                              const PostOps& post) {
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
  if (!post.then.empty()) return "linear post-ops take no steps";
  if (const Tensor& r = post.residual; r.defined()) {
    const bool sizes = r.dim() == input.dim() &&
                       std::equal(r.sizes().begin(), r.sizes().end() - 1, input.sizes().begin()) &&
                       r.size(-1) == weight.size(0);
    if (!sizes || r.dtype() != DType::Float32) return "arguments the reference will check";
    if (!r.is_contiguous()) return fmt::format("residual {} is not contiguous", r.description());
  }
  return {};
}

}  // namespace

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias, const PostOps& post,
              std::string* declined) {
  constexpr std::string_view op = "linear";
  if (input.defined() && input.dtype() == DType::BFloat16) {  // native/bfloat16_boundary.h
    PostOps wide = post;
    wide.residual = native::widened(post.residual);
    return native::rounded(linear(native::widened(input), native::widened(weight),
                                  native::widened(bias), wide, declined));
  }
  if (std::string reason = reason_to_decline(input, weight, bias, post); !reason.empty())
    return decline(op, std::move(reason), declined);
  const int threads = apply_num_threads();
  // y[n, o] = act(b[o] + Σ_k x[n, k] · W[o, k] + r[n, o]),   n over the flattened leading dims.
  const std::int64_t k = input.size(-1);
  const std::int64_t n = input.numel() / k;
  const std::int64_t o = weight.size(0);

  // Wᵀ [K, O] as the weight's memory holds it: element (k, o) at W's (o, k). A dense weight
  // with a size-1 dim is one run of memory whatever that dim's (arbitrary) stride says.
  const dnnl::memory::dims user_strides =
      k == 1 || o == 1 ? dnnl::memory::dims{o, 1}
                       : dnnl::memory::dims{weight.stride(1), weight.stride(0)};
  const dnnl::memory::desc user_weights = call(op, [&] {
    return dnnl::memory::desc({k, o}, dnnl::memory::data_type::f32, user_strides);
  });
  // A weight read before (a constant) in the primitive's own format, else as it lies
  // (packed_weights.h: an operand computed on every run is never packed).
  const bool packed = detail::seen_before(weight);

  const bool residual = post.residual.defined();
  const CacheKey key{n,
                     k,
                     o,
                     packed ? 0 : user_strides[0],
                     packed ? 0 : user_strides[1],
                     bias.defined() ? 1 : 0,
                     residual ? 1 : 0,
                     static_cast<std::int64_t>(post.activation),
                     std::bit_cast<std::int64_t>(post.negative_slope),
                     threads};
  const std::shared_ptr<Primitive> prim = cache().find_or_make(key, [&] {
    auto made = std::make_shared<Primitive>();
    made->id = detail::new_primitive_id();
    made->declined = try_build(op, "matmul", [&] {
      using dt = dnnl::memory::data_type;
      using tag = dnnl::memory::format_tag;
      made->src = dnnl::memory::desc({n, k}, dt::f32, tag::ab);
      made->bias = dnnl::memory::desc({1, o}, dt::f32, tag::ab);
      made->dst = dnnl::memory::desc({n, o}, dt::f32, tag::ab);
      dnnl::post_ops ops;
      if (residual) ops.append_binary(dnnl::algorithm::binary_add, made->dst);
      for (const EltwiseOp& e : activation_eltwise(post.activation, post.negative_slope))
        ops.append_eltwise(1.f, e.alg, e.alpha, e.beta);
      dnnl::primitive_attr attr = user_scratchpad();
      attr.set_post_ops(ops);
      const dnnl::memory::desc weights =
          packed ? dnnl::memory::desc({k, o}, dt::f32, tag::any) : user_weights;
      const auto desc = bias.defined()
                            ? dnnl::matmul::desc(made->src, weights, made->bias, made->dst)
                            : dnnl::matmul::desc(made->src, weights, made->dst);
      const dnnl::matmul::primitive_desc pd(desc, attr, cpu_engine());
      made->weights = pd.weights_desc();
      made->primitive = dnnl::matmul(pd);
    });
    return made;
  });
  if (!prim->declined.empty()) return decline(op, prim->declined, declined);

  const dnnl::memory w =
      detail::weight_memory(op, prim->id, weight, weight, user_weights, prim->weights);
  Shape out_sizes(input.sizes().begin(), input.sizes().end() - 1);
  out_sizes.push_back(o);
  Tensor output = empty(out_sizes, DType::Float32);
  cache().execute(op, [&](dnnl::stream& stream) {
    BoundArgs& args = BoundArgs::of(prim->id);
    args.bind(DNNL_ARG_SRC, prim->src, input.data_ptr());
    args.put(DNNL_ARG_WEIGHTS, w);
    args.bind(DNNL_ARG_DST, prim->dst, output.data_ptr());
    if (bias.defined()) args.bind(DNNL_ARG_BIAS, prim->bias, bias.data_ptr());
    if (residual)  // post-op 0: the binary_add
      args.bind(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, prim->dst,
                post.residual.data_ptr());
    args.run(prim->primitive, stream);
  });
  return output;
}

PrimitiveStats linear_stats() { return cache().stats(); }

}  // namespace refold::onednn
