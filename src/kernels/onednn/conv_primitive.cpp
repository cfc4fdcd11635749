#include "kernels/onednn/conv_primitive.h"

#include <oneapi/dnnl/dnnl_debug.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/check.h"
#include "kernels/lru_cache.h"
#include "kernels/onednn/activation_eltwise.h"
#include "kernels/onednn/conv2d.h"
#include "kernels/onednn/engine.h"
#include "kernels/onednn/packed_weights.h"
#include "kernels/onednn/threads.h"
#include "kernels/reference/conv_common.h"
#include "kernels/verbose.h"

namespace refold::onednn {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using md = dnnl::memory::desc;

// One cached primitive: what oneDNN built for one problem, or why it could not.
// One entry of the oneDNN post-op chain of a PostOps, in the order oneDNN applies them.
struct ChainEntry {
  // Sum: adds what dst holds (the residual, copied there first). Binary: a binary_mul/add with
  // per-channel `values`, or, with values null, a binary_add of the residual itself (dst's
  // sizes and layout).
  enum class Kind : std::uint8_t { Sum, Eltwise, Binary } kind;
  dnnl::algorithm alg = dnnl::algorithm::undef;
  float alpha = 0.f, beta = 0.f;               // Eltwise
  const std::vector<float>* values = nullptr;  // Binary: one per output channel, or the residual
};

struct Primitive {
  std::uint64_t id = 0;           // names the primitive in the packed-weight keys
  std::vector<ChainEntry> chain;  // the post-ops it was built with (their kinds; no values)
  std::string declined;  // non-empty: oneDNN cannot take this problem (cached, not retried)
  dnnl::primitive primitive;
  md src_desc, weights_desc, bias_desc, dst_desc;
  std::string impl;  // oneDNN's implementation name, e.g. "brg:avx512_core"
};

struct Caches {
  std::mutex mutex;
  LruCache<Primitive> primitives{1024};
  CacheStats stats;  // the primitives' counters (the weights' are packed_weights.h's)
};

// Never destroyed: cached oneDNN objects must not outlive the engine at exit, and a leaked
// static has no destruction order to get wrong.
Caches& caches() {
  static Caches* c = new Caches;
  return *c;
}

dt to_dnnl(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return dt::f32;
    case DType::BFloat16:
      return dt::bf16;
    case DType::Int64:
      break;
  }
  fail("onednn: dtype {} has no oneDNN type", dtype_name(dtype));
}

// Two per-tensor affines in a row are one: α₂(α₁x + β₁) + β₂ = (α₂α₁)x + (α₂β₁ + β₂). oneDNN 2.6's
// channels_last JIT kernels (brgconv, jit_1x1, depthwise; AVX2 and AVX-512) apply the first
// eltwise_linear's α and β to both of two adjacent ones (NFNet's gelu·γ·β came out gelu·γ·γ).
void push_linear(std::vector<ChainEntry>& chain, float alpha, float beta) {
  if (!chain.empty() && chain.back().kind == ChainEntry::Kind::Eltwise &&
      chain.back().alg == dnnl::algorithm::eltwise_linear) {
    ChainEntry& last = chain.back();
    last.beta = alpha * last.beta + beta;
    last.alpha *= alpha;
    return;
  }
  chain.push_back(
      {ChainEntry::Kind::Eltwise, dnnl::algorithm::eltwise_linear, alpha, beta, nullptr});
}

// The activation as eltwise entries (oneDNN applies them in f32 to the accumulator).
void add_activation(std::vector<ChainEntry>& chain, Activation activation, double negative_slope) {
  for (const EltwiseOp& op : activation_eltwise(activation, negative_slope)) {
    if (op.alg == dnnl::algorithm::eltwise_linear)
      push_linear(chain, op.alpha, op.beta);
    else
      chain.push_back({ChainEntry::Kind::Eltwise, op.alg, op.alpha, op.beta, nullptr});
  }
}

// Whether the problem is a 1×1 convolution (every kernel dim 1; not a deconvolution).
bool pointwise(const detail::ConvProblem& p) {
  return !p.transposed &&
         std::all_of(p.weight_dims.end() - static_cast<std::ptrdiff_t>(p.src_dims.size() - 2),
                     p.weight_dims.end(), [](std::int64_t k) { return k == 1; });
}

// y = act(conv + bias + residual), then each step; a step's residual is added where the step
// says, after the activation (HRNet's downsampling convs: relu(conv) + the next branch). The
// residual is a sum post-op (it adds what dst holds when the primitive reaches it) when dst is
// the residual itself (`in_place`, see run_conv) or the kernel is spatial (the residual copied
// into dst first), and a binary_add with the residual as operand for a 1×1 kernel whose dst is
// new memory, or where `residual_operand` asks for it. oneDNN's 1×1 kernels with binary_add took
// 0.62–0.70× the time of their sum form with its copy (ResNet-50's 64→256 at 56², both with
// AVX-512 and capped at AVX2, bench/RESULTS.md), but on AVX-512 a full-size binary operand sends
// them (and the spatial ones) to the older jit kernels, and the sum in place, which copies
// nothing, runs brgconv_1x1: 0.74–0.87× the binary_add's time on ResNet-50's 1×1 convs, and no
// slower with AVX2; a spatial conv with relu + sum runs brgconv in 0.82–0.88× the time of relu
// + binary_add on jit:avx512_core (HRNet's 3×3 stride-2 convs). oneDNN's older JIT convs (all
// of them with AVX2) take a sum only as the first post-op and leave a later one to `ref:any`:
// run_conv then builds the chain again with `residual_operand`. A per-tensor scale or shift is
// eltwise_linear(α·x + β) (merged with an eltwise_linear before it, push_linear), a per-channel
// one a binary mul/add with a [1, C, 1, 1] operand.
std::vector<ChainEntry> post_op_chain(const PostOps& post, const detail::ConvProblem& p,
                                      bool in_place, bool residual_operand = false) {
  std::vector<ChainEntry> chain;
  const ChainEntry residual =
      residual_operand || (pointwise(p) && !in_place)
          ? ChainEntry{ChainEntry::Kind::Binary, dnnl::algorithm::binary_add, 0.f, 0.f, nullptr}
          : ChainEntry{ChainEntry::Kind::Sum};
  const bool late = post.residual_in_steps();
  if (post.residual.defined() && !late) chain.push_back(residual);
  add_activation(chain, post.activation, post.negative_slope);
  using alg = dnnl::algorithm;
  for (const PostStep& step : post.then) {
    const bool uniform_scale = step.scale.size() <= 1, uniform_shift = step.shift.size() <= 1;
    if (uniform_scale && uniform_shift && !(step.scale.empty() && step.shift.empty())) {
      push_linear(chain, step.scale.empty() ? 1.f : step.scale[0],
                  step.shift.empty() ? 0.f : step.shift[0]);
    } else {
      auto affine = [&](const std::vector<float>& v, alg binary, bool scale) {
        if (v.empty()) return;
        if (v.size() == 1) {
          push_linear(chain, scale ? v[0] : 1.f, scale ? 0.f : v[0]);
        } else {
          chain.push_back({ChainEntry::Kind::Binary, binary, 0.f, 0.f, &v});
        }
      };
      affine(step.scale, alg::binary_mul, true);
      affine(step.shift, alg::binary_add, false);
    }
    if (step.add_residual) chain.push_back(residual);
    add_activation(chain, step.activation, step.negative_slope);
  }
  return chain;
}

// A binary entry's operand: its values as [1, C, 1, 1] f32, or the residual (dst's dims, type
// and layout).
md binary_operand_desc(const ChainEntry& entry, const md& dst) {
  if (entry.values == nullptr) return dst;
  dnnl::memory::dims dims(static_cast<std::size_t>(dst.dims().size()), 1);
  dims[1] = static_cast<dnnl::memory::dim>(entry.values->size());
  return md(dims, dt::f32, dims.size() == 5 ? tag::abcde : dims.size() == 3 ? tag::abc : tag::abcd);
}

// Whether the chain adds the residual as a sum post-op (onto what dst holds).
bool has_sum(const std::vector<ChainEntry>& chain) {
  return std::any_of(chain.begin(), chain.end(),
                     [](const ChainEntry& e) { return e.kind == ChainEntry::Kind::Sum; });
}

// "sum+eltwise_relu", "binary_add+eltwise_relu", …; "none" for no entry.
std::string chain_text(const std::vector<ChainEntry>& chain) {
  std::vector<std::string> parts;
  for (const ChainEntry& entry : chain)
    parts.push_back(entry.kind == ChainEntry::Kind::Sum
                        ? "sum"
                        : std::string(dnnl_alg_kind2str(static_cast<dnnl_alg_kind_t>(entry.alg))));
  return parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, "+"));
}

// The activation layout of a conv: NHWC or NCHW in 2-d; 1-d and 3-d tensors are always
// contiguous (NCW, NCDHW: refold has channels_last for 4-d tensors only).
tag activation_tag(MemoryFormat layout, std::size_t rank) {
  if (rank == 3) return tag::ncw;
  if (rank == 5) return tag::ncdhw;
  return layout == MemoryFormat::ChannelsLast ? tag::nhwc : tag::nchw;
}

// Builds the primitive for `p`. Runs outside the cache lock (JIT compilation takes a while).
std::shared_ptr<Primitive> create_primitive(const detail::ConvProblem& p, DType dtype,
                                            MemoryFormat layout, bool has_bias,
                                            const std::vector<ChainEntry>& chain) {
  auto e = std::make_shared<Primitive>();
  e->chain = chain;
  for (ChainEntry& entry : e->chain) entry.values = nullptr;  // the building call's, not kept
  const dt type = to_dnnl(dtype);
  const tag layout_tag = activation_tag(layout, p.src_dims.size());
  const md src_md(p.src_dims, type, layout_tag);
  const md dst_md(p.dst_dims, type, layout_tag);
  // format_tag::any: the primitive picks the weight format it runs fastest with.
  const md weights_md(p.weight_dims, type, tag::any);
  // Bias in f32 also for bf16: it is added to the f32 accumulator.
  const md bias_md({p.dst_dims[1]}, dt::f32, tag::a);
  const dnnl::memory::dims strides(p.strides.begin(), p.strides.end());
  const dnnl::memory::dims dilates(p.dilates.begin(), p.dilates.end());
  const dnnl::memory::dims pad_l(p.pad_l.begin(), p.pad_l.end());
  const dnnl::memory::dims pad_r(p.pad_r.begin(), p.pad_r.end());

  dnnl::post_ops ops;
  for (const ChainEntry& entry : chain) {
    switch (entry.kind) {
      case ChainEntry::Kind::Sum:
        ops.append_sum(1.f);
        break;
      case ChainEntry::Kind::Eltwise:
        ops.append_eltwise(1.f, entry.alg, entry.alpha, entry.beta);
        break;
      case ChainEntry::Kind::Binary:
        ops.append_binary(entry.alg, binary_operand_desc(entry, dst_md));
        break;
    }
  }
  dnnl::primitive_attr attr = user_scratchpad();
  attr.set_post_ops(ops);

  const auto& engine = cpu_engine();
  constexpr auto inference = dnnl::prop_kind::forward_inference;
  try {
    if (!p.transposed) {
      using conv = dnnl::convolution_forward;
      const auto alg = dnnl::algorithm::convolution_direct;
      const conv::desc d = has_bias ? conv::desc(inference, alg, src_md, weights_md, bias_md,
                                                 dst_md, strides, dilates, pad_l, pad_r)
                                    : conv::desc(inference, alg, src_md, weights_md, dst_md,
                                                 strides, dilates, pad_l, pad_r);
      const conv::primitive_desc pd(d, attr, engine);
      e->src_desc = pd.src_desc();
      e->weights_desc = pd.weights_desc();
      e->bias_desc = pd.bias_desc();
      e->dst_desc = pd.dst_desc();
      e->impl = pd.impl_info_str();
      e->primitive = conv(pd);
    } else {
      using deconv = dnnl::deconvolution_forward;
      const auto alg = dnnl::algorithm::deconvolution_direct;
      const deconv::desc d = has_bias ? deconv::desc(inference, alg, src_md, weights_md, bias_md,
                                                     dst_md, strides, dilates, pad_l, pad_r)
                                      : deconv::desc(inference, alg, src_md, weights_md, dst_md,
                                                     strides, dilates, pad_l, pad_r);
      const deconv::primitive_desc pd(d, attr, engine);
      e->src_desc = pd.src_desc();
      e->weights_desc = pd.weights_desc();
      e->bias_desc = pd.bias_desc();
      e->dst_desc = pd.dst_desc();
      e->impl = pd.impl_info_str();
      e->primitive = deconv(pd);
    }
  } catch (const dnnl::error& err) {
    e->declined = fmt::format("oneDNN has no {} primitive for it ({}: {})", p.op,
                              status_name(err.status), err.what());
    return e;
  }
  // oneDNN falls back to its plain-C++ reference kernels where it has no JIT kernel — for bf16
  // that means a CPU without avx512_bf16 (or AVX-512 at all). Not worth running: decline.
  if (dtype == DType::BFloat16 && e->impl.rfind("ref", 0) == 0)
    e->declined = fmt::format(
        "bfloat16 {} needs avx512_bf16; oneDNN has only its reference kernel ({}) on this CPU",
        p.op, e->impl);
  return e;
}

// oneDNN strides of the weight's logical dims (see ConvProblem::weight_dims) within a 4-d or
// 5-d PyTorch weight tensor with strides `s` (k… are the kernel's spatial positions):
//   conv   [O, I/G, k…]: element (g, o, i, k…) sits at (g·O/G + o)·s0 + i·s1 + Σ k·s_spatial
//   deconv [I, O/G, k…]: element (g, o, i, k…) sits at (g·I/G + i)·s0 + o·s1 + Σ k·s_spatial
//          (PyTorch's ConvTranspose layout is oneDNN's iohw / giohw, docs/reliability.md F15)
dnnl::memory::dims weight_strides(const detail::ConvProblem& p, const Shape& sizes,
                                  const Shape& s) {
  const std::int64_t per_group = sizes[0] / p.groups;  // O/G (conv) or I/G (deconv)
  dnnl::memory::dims out;
  if (p.groups > 1) out.push_back(per_group * s[0]);
  if (p.transposed) {
    out.insert(out.end(), {s[1], s[0]});
  } else {
    out.insert(out.end(), {s[0], s[1]});
  }
  out.insert(out.end(), s.begin() + 2, s.end());
  return out;
}

// The weight as oneDNN should read it: strides that oneDNN accepts and that address the same
// elements. Dense weights get the canonical strides of their format (a size-1 dim's stride is
// arbitrary in refold); a weight with a zero stride (an expanded view) is copied first.
Tensor weight_for_reading(const Tensor& weight) {
  if (weight.is_contiguous() || weight.is_contiguous(MemoryFormat::ChannelsLast)) return weight;
  for (std::int64_t d = 0; d < weight.dim(); ++d)
    if (weight.size(d) > 1 && weight.stride(d) <= 0) return weight.contiguous();
  return weight;
}

Shape canonical_strides(const Tensor& w) {
  if (w.is_contiguous()) return contiguous_strides(w.sizes());
  if (w.is_contiguous(MemoryFormat::ChannelsLast)) return channels_last_strides(w.sizes());
  return w.strides();
}

std::string_view isa_name() {
  using isa = dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case isa::sse41:
      return "sse41";
    case isa::avx:
      return "avx";
    case isa::avx2:
      return "avx2";
    case isa::avx512_mic:
    case isa::avx512_mic_4ops:
      return "avx512_mic";
    case isa::avx512_core:
      return "avx512_core";
    case isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "other";
  }
}

Tensor decline(std::string_view op, std::string reason, std::string* declined) {
  if (declined == nullptr) fail("{}: oneDNN declined: {}", op, reason);
  *declined = std::move(reason);
  return {};
}

bool has_zero(const Shape& dims) {
  for (std::int64_t d : dims)
    if (d == 0) return true;
  return false;
}

}  // namespace

namespace detail {

Tensor run_conv(const ConvProblem& p, const Tensor& input, const Tensor& weight, const Tensor& bias,
                const PostOps& post, std::string* declined) {
  // PyTorch's rule decides the conv's (and the output's) layout; the input must already be in
  // it, so that no hidden permute happens here (see conv2d.h).
  const MemoryFormat layout = reference::detail::conv_output_format(input, weight);
  if (!input.is_contiguous(layout))
    return decline(p.op,
                   fmt::format("input {} (strides [{}]) is not contiguous in {}, the conv's "
                               "format (channels_last when the input or the weight suggests "
                               "it); make it contiguous in that format first",
                               input.description(), fmt::join(input.strides(), ", "),
                               memory_format_name(layout)),
                   declined);
  if (has_zero(p.src_dims) || has_zero(p.dst_dims) || has_zero(p.weight_dims))
    return decline(p.op, "a zero-sized dimension", declined);

  const DType dtype = input.dtype();
  if (dtype == DType::BFloat16 && !bf16_supported())
    return decline(p.op,
                   fmt::format("bfloat16 {} needs avx512_bf16, which this CPU lacks (oneDNN ISA: "
                               "{})",
                               p.op, isa_name()),
                   declined);
  const int threads = apply_num_threads();  // oneDNN sizes its blocking for this team
  const bool has_bias = bias.defined();
  // dst is the residual itself, which the sum post-op adds where it lies: no copy, no new memory.
  // (Unless the primitive takes the residual as an operand after all: `summed` below.)
  const bool in_place = post.overwrite_residual && post.residual.defined() &&
                        post.residual.dtype() == dtype && post.residual.sizes() == p.dst_dims &&
                        post.residual.is_contiguous(layout);

  // The primitive depends on everything but the weight's values and strides.
  CacheKey key;
  key.reserve(64);  // one allocation (usually): this runs on every call
  key.insert(key.end(),
             {p.transposed, static_cast<std::int64_t>(dtype), static_cast<std::int64_t>(layout),
              static_cast<std::int64_t>(p.src_dims.size())});
  key.insert(key.end(), p.src_dims.begin(), p.src_dims.end());
  key.insert(key.end(), p.dst_dims.begin(), p.dst_dims.end());
  key.push_back(static_cast<std::int64_t>(p.weight_dims.size()));
  key.insert(key.end(), p.weight_dims.begin(), p.weight_dims.end());
  for (const auto* a : {&p.strides, &p.dilates, &p.pad_l, &p.pad_r})
    key.insert(key.end(), a->begin(), a->end());
  key.push_back(has_bias);
  // The post-op chain, entry by entry (a binary operand's values are bound at run time).
  const std::vector<ChainEntry> chain = post_op_chain(post, p, in_place);
  for (const ChainEntry& entry : chain) {
    key.insert(key.end(),
               {static_cast<std::int64_t>(entry.kind), static_cast<std::int64_t>(entry.alg),
                static_cast<std::int64_t>(std::bit_cast<std::uint32_t>(entry.alpha)),
                static_cast<std::int64_t>(std::bit_cast<std::uint32_t>(entry.beta)),
                entry.values != nullptr ? static_cast<std::int64_t>(entry.values->size()) : 0});
  }
  key.push_back(static_cast<std::int64_t>(chain.size()));
  key.push_back(threads);

  Caches& c = caches();
  std::shared_ptr<Primitive> prim;
  {
    const std::lock_guard<std::mutex> lock(c.mutex);
    prim = c.primitives.find(key);
    if (prim) ++c.stats.primitive_hits;
  }
  if (!prim) {
    prim = create_primitive(p, dtype, layout, has_bias, chain);
    if (post.residual_in_steps() && has_sum(chain) && prim->impl.rfind("ref", 0) == 0) {
      // A sum after other post-ops, which this CPU's kernels leave to ref:any: the residual as
      // a binary operand instead (cached under this problem's key).
      std::shared_ptr<Primitive> operand = create_primitive(
          p, dtype, layout, has_bias, post_op_chain(post, p, in_place, /*residual_operand=*/true));
      if (operand->declined.empty()) prim = std::move(operand);
    }
    const std::lock_guard<std::mutex> lock(c.mutex);
    ++c.stats.primitive_misses;
    prim->id = new_primitive_id();
    c.primitives.insert(key, prim, 1);
    if (verbose())
      log_verbose(
          fmt::format("onednn {}: new primitive {} for src {} {} {}, weights [{}], "
                      "post-ops {} (oneDNN: {}), {} threads{}{}",
                      p.op, prim->impl.empty() ? "(none)" : prim->impl, dtype_name(dtype),
                      memory_format_name(layout), fmt::join(p.src_dims, "x"),
                      fmt::join(p.weight_dims, "x"), post.description(), chain_text(prim->chain),
                      threads, prim->declined.empty() ? "" : ": ", prim->declined));
  }
  if (!prim->declined.empty()) return decline(p.op, prim->declined, declined);
  note_dispatch_detail(prim->impl);

  // The weight: its own bytes when the primitive chose its layout, else packed once
  // (packed_weights.h).
  const Tensor w = weight_for_reading(weight);  // outlives the call when used in place
  const dnnl::memory weights_memory = weight_memory(
      p.op, prim->id, weight, w,
      md(p.weight_dims, to_dnnl(dtype), weight_strides(p, w.sizes(), canonical_strides(w))),
      prim->weights_desc);

  // Bias: f32, dense (a tiny copy when it is not).
  Tensor bias_f32;
  if (has_bias) {
    bias_f32 = bias;
    if (bias.dtype() != DType::Float32 || (bias.size(0) > 1 && bias.stride(0) != 1)) {
      bias_f32 = empty({bias.size(0)}, DType::Float32);
      bias_f32.copy_(bias);
    }
  }

  // The sum post-op accumulates onto dst: dst is the residual itself, or starts as its copy.
  // Else the residual is a binary operand in dst's layout.
  const bool summed = has_sum(prim->chain);
  Tensor output = in_place && summed ? post.residual : empty(p.dst_dims, {dtype, layout});
  Tensor residual_operand;
  if (post.residual.defined() && !(in_place && summed)) {
    if (summed) {
      output.copy_(post.residual);
    } else {
      residual_operand = post.residual.contiguous(layout);
    }
  }

  call(p.op, [&] {
    BoundArgs& args = BoundArgs::of(prim->id);
    args.bind(DNNL_ARG_SRC, prim->src_desc, input.data_ptr());
    args.put(DNNL_ARG_WEIGHTS, weights_memory);
    args.bind(DNNL_ARG_DST, prim->dst_desc, output.data_ptr());
    if (has_bias) args.bind(DNNL_ARG_BIAS, prim->bias_desc, bias_f32.data_ptr());
    // The kinds the primitive was built with (the residual's may differ from `chain`'s), the
    // values of this call.
    for (std::size_t i = 0; i < chain.size(); ++i) {
      if (prim->chain[i].kind != ChainEntry::Kind::Binary) continue;
      const void* data = chain[i].values != nullptr
                             ? static_cast<const void*>(chain[i].values->data())
                             : residual_operand.data_ptr();
      args.bind(DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(i)) | DNNL_ARG_SRC_1,
                binary_operand_desc(chain[i], prim->dst_desc), data);
    }
    dnnl::stream& stream = cpu_stream();
    args.run(prim->primitive, stream);
    stream.wait();
  });
  return output;
}

std::string post_op_chain_text(const PostOps& post, const ConvProblem& problem, bool in_place) {
  return chain_text(post_op_chain(post, problem, in_place));
}

namespace {

// Whether oneDNN's effective ISA is `isa` or one above it: oneDNN's ISA values are nested bit
// sets, each ISA containing all the bits of those below it.
bool isa_at_least(dnnl::cpu_isa isa) {
  const auto have = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto need = static_cast<unsigned>(isa);
  return (have & need) == need;
}

}  // namespace

bool has_avx512_core() {
  static const bool has = isa_at_least(dnnl::cpu_isa::avx512_core);
  return has;
}

}  // namespace detail

bool bf16_supported() {
  static const bool supported = detail::isa_at_least(dnnl::cpu_isa::avx512_core_bf16);
  return supported;
}

CacheStats cache_stats() {
  Caches& c = caches();
  const std::lock_guard<std::mutex> lock(c.mutex);
  CacheStats s = c.stats;
  s.primitives = c.primitives.size();
  const detail::PackedWeightStats w = detail::packed_weight_stats();
  s.weight_hits = w.hits;
  s.weight_packs = w.packs;
  s.weight_direct = w.direct;
  s.packed_weights = w.weights;
  s.packed_bytes = w.bytes;
  return s;
}

void clear_cache() {
  Caches& c = caches();
  const std::lock_guard<std::mutex> lock(c.mutex);
  c.primitives.clear();
  c.stats = {};
  detail::clear_packed_weights();
}

void set_cache_capacity(std::size_t primitives, std::size_t packed_weight_bytes) {
  Caches& c = caches();
  const std::lock_guard<std::mutex> lock(c.mutex);
  c.primitives.set_capacity(primitives);
  detail::set_packed_weight_capacity(packed_weight_bytes);
}

}  // namespace refold::onednn
