// oneDNN max/avg pooling: the reference's validation and output size, then one pooling_v2
// primitive on the input's own layout (nchw or nhwc), cached per problem.
#include "kernels/onednn/pooling.h"

#include <algorithm>
#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "core/check.h"
#include "kernels/onednn/conv2d.h"
#include "kernels/onednn/engine.h"
#include "kernels/onednn/lru_cache.h"
#include "kernels/onednn/threads.h"

namespace refold::onednn {
namespace {

using tag = dnnl::memory::format_tag;

// The reference's checks and messages (reference/pooling.cpp), in its order.
void check_input(const Tensor& input, const char* op) {
  REFOLD_CHECK(input.defined(), "{}: input is undefined", op);
  REFOLD_CHECK(input.dtype() == DType::Float32 || input.dtype() == DType::BFloat16,
               "{}: input has dtype {}; only float32 and bfloat16 are supported", op,
               dtype_name(input.dtype()));
  REFOLD_CHECK(input.dim() == 3 || input.dim() == 4,
               "{}: input must be 3-d [C, H, W] or 4-d [N, C, H, W], got [{}]", op,
               fmt::join(input.sizes(), ", "));
  const std::int64_t c = input.size(-3), h = input.size(-2), w = input.size(-1);
  REFOLD_CHECK(c > 0 && h > 0 && w > 0,
               "{}: input [{}] must have non-zero channels, height and width", op,
               fmt::join(input.sizes(), ", "));
}

void check_kernel(const char* op, Size2d kernel) {
  REFOLD_CHECK(kernel.h > 0 && kernel.w > 0, "{}: kernel_size ({}, {}) must be positive", op,
               kernel.h, kernel.w);
}

std::int64_t pool_size(const char* op, const char* axis, std::int64_t in, std::int64_t kernel,
                       std::int64_t stride, std::int64_t pad, std::int64_t dilation,
                       bool ceil_mode) {
  try {
    return pool_output_size(in, kernel, stride, pad, dilation, ceil_mode);
  } catch (const Error& e) {
    fail("{}: {}: {}", op, axis, e.message());
  }
}

// One pooling problem in oneDNN's terms.
struct Problem {
  const char* op;
  dnnl::algorithm algorithm;
  Size2d kernel, stride, padding, dilation;
  bool ceil_mode;
  bool divisor_override = false;  // avg_pool2d's divisor_override is set: declined
};

// What oneDNN built for one problem, or why it could not.
struct Primitive {
  std::string declined;  // non-empty: oneDNN cannot take this problem (cached, not retried)
  dnnl::pooling_v2_forward primitive;
};

struct Caches {
  std::mutex mutex;
  LruCache<Primitive> primitives{1024};
  PoolingStats stats;
};

Caches& caches() {
  static Caches c;
  return c;
}

Tensor decline(std::string_view op, std::string reason, std::string* declined) {
  if (declined == nullptr) fail("{}: oneDNN declined: {}", op, reason);
  *declined = std::move(reason);
  return {};
}

// Validates the window (as the reference does), then runs it or declines.
Tensor run(const Problem& p, const Tensor& input, std::string* declined) {
  const Size2d k = p.kernel, s = p.stride, pad = p.padding, d = p.dilation;
  const std::int64_t in_h = input.size(-2), in_w = input.size(-1);
  const std::int64_t out_h = pool_size(p.op, "height", in_h, k.h, s.h, pad.h, d.h, p.ceil_mode);
  const std::int64_t out_w = pool_size(p.op, "width", in_w, k.w, s.w, pad.w, d.w, p.ceil_mode);
  // The right/bottom padding that makes oneDNN's floor((in + pl + pr − span) / s) + 1 equal
  // out: pr = (out − 1)·s + span − in − pl, never below pl (floor mode's dropped tail).
  const auto pad_r = [](std::int64_t out, std::int64_t in, std::int64_t kernel, std::int64_t stride,
                        std::int64_t pl, std::int64_t dilation) {
    return std::max(pl, (out - 1) * stride + (kernel - 1) * dilation + 1 - in - pl);
  };
  const std::int64_t pr_h = pad_r(out_h, in_h, k.h, s.h, pad.h, d.h);
  const std::int64_t pr_w = pad_r(out_w, in_w, k.w, s.w, pad.w, d.w);

  if (p.divisor_override)
    return decline(p.op, "divisor_override has no oneDNN equivalent", declined);
  if (p.algorithm == dnnl::algorithm::pooling_avg_include_padding && (pr_h > pad.h || pr_w > pad.w))
    return decline(p.op,
                   "ceil_mode adds right padding, where PyTorch's include-padding divisor "
                   "stops at the padding and oneDNN's (kh·kw) does not",
                   declined);
  const bool four_d = input.dim() == 4;
  const MemoryFormat format = four_d ? input.suggest_memory_format() : MemoryFormat::Contiguous;
  if (!input.is_contiguous(format))
    return decline(p.op,
                   fmt::format("input {} (strides [{}]) is not contiguous in {}, the format it "
                               "suggests; make it contiguous first",
                               input.description(), fmt::join(input.strides(), ", "),
                               memory_format_name(format)),
                   declined);
  const std::int64_t batch = four_d ? input.size(0) : 1, channels = input.size(-3);
  if (batch == 0) return decline(p.op, "a zero-sized dimension", declined);
  const DType dtype = input.dtype();
  if (dtype == DType::BFloat16 && !bf16_supported())
    return decline(p.op, fmt::format("bfloat16 {} needs avx512_bf16, which this CPU lacks", p.op),
                   declined);
  const int threads = apply_num_threads();
  const bool nhwc = format == MemoryFormat::ChannelsLast;

  CacheKey key{static_cast<std::int64_t>(p.algorithm),
               static_cast<std::int64_t>(dtype),
               nhwc,
               batch,
               channels,
               in_h,
               in_w,
               k.h,
               k.w,
               s.h,
               s.w,
               d.h,
               d.w,
               pad.h,
               pad.w,
               pr_h,
               pr_w,
               threads};

  const auto data_type =
      dtype == DType::Float32 ? dnnl::memory::data_type::f32 : dnnl::memory::data_type::bf16;
  const tag layout = nhwc ? tag::nhwc : tag::nchw;
  const dnnl::memory::desc src_md({batch, channels, in_h, in_w}, data_type, layout);
  const dnnl::memory::desc dst_md({batch, channels, out_h, out_w}, data_type, layout);

  Caches& c = caches();
  std::shared_ptr<Primitive> prim;
  {
    const std::lock_guard<std::mutex> lock(c.mutex);
    prim = c.primitives.find(key);
    if (prim != nullptr) ++c.stats.primitive_hits;
  }
  if (prim == nullptr) {
    // Created outside the lock; two threads racing on one new problem each build one, and the
    // second insert replaces the first — harmless.
    prim = std::make_shared<Primitive>();
    try {
      // oneDNN counts dilation as the gaps between taps: PyTorch's dilation − 1.
      const dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference, p.algorithm,
                                                src_md, dst_md, {s.h, s.w}, {k.h, k.w},
                                                {d.h - 1, d.w - 1}, {pad.h, pad.w}, {pr_h, pr_w});
      prim->primitive =
          dnnl::pooling_v2_forward(dnnl::pooling_v2_forward::primitive_desc(desc, cpu_engine()));
    } catch (const dnnl::error& e) {
      if (e.status != dnnl_unimplemented)
        fail("{}: oneDNN failed in {} (status {})", p.op, e.what(), status_name(e.status));
      prim->declined = "oneDNN has no pooling implementation for this problem";
    }
    const std::lock_guard<std::mutex> lock(c.mutex);
    ++c.stats.primitive_misses;
    c.primitives.insert(key, prim, 1);
  }
  if (!prim->declined.empty()) return decline(p.op, prim->declined, declined);

  // The reference's output: same rank and batch as the input, in the input's format.
  Tensor output = four_d ? empty({batch, channels, out_h, out_w}, {dtype, format})
                         : empty({channels, out_h, out_w}, {dtype});
  call(p.op, [&] {
    // oneDNN only reads the source; const_cast avoids Tensor's writable data_ptr(), which would
    // bump the input's version.
    const dnnl::memory src(src_md, cpu_engine(), const_cast<void*>(input.data_ptr()));
    const dnnl::memory dst(dst_md, cpu_engine(), output.data_ptr());
    dnnl::stream& stream = cpu_stream();
    prim->primitive.execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
    stream.wait();
  });
  {
    const std::lock_guard<std::mutex> lock(c.mutex);
    ++c.stats.runs;
  }
  return output;
}

}  // namespace

Tensor max_pool2d(const Tensor& input, const MaxPool2dOptions& options, std::string* declined) {
  constexpr const char* op = "max_pool2d";
  check_input(input, op);
  check_kernel(op, options.kernel_size);
  return run({op, dnnl::algorithm::pooling_max, options.kernel_size,
              options.stride.value_or(options.kernel_size), options.padding, options.dilation,
              options.ceil_mode, false},
             input, declined);
}

Tensor avg_pool2d(const Tensor& input, const AvgPool2dOptions& options, std::string* declined) {
  constexpr const char* op = "avg_pool2d";
  check_input(input, op);
  check_kernel(op, options.kernel_size);
  REFOLD_CHECK(!options.divisor_override || *options.divisor_override > 0,
               "{}: divisor_override ({}) must be positive", op,
               options.divisor_override.value_or(0));
  const Problem p{op,
                  options.count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                            : dnnl::algorithm::pooling_avg_exclude_padding,
                  options.kernel_size,
                  options.stride.value_or(options.kernel_size),
                  options.padding,
                  1,
                  options.ceil_mode,
                  options.divisor_override.has_value()};
  return run(p, input, declined);
}

PoolingStats pooling_stats() {
  Caches& c = caches();
  const std::lock_guard<std::mutex> lock(c.mutex);
  PoolingStats s = c.stats;
  s.primitives = c.primitives.size();
  return s;
}

void clear_pooling_cache() {
  Caches& c = caches();
  const std::lock_guard<std::mutex> lock(c.mutex);
  c.primitives.clear();
  c.stats = {};
}

}  // namespace refold::onednn
