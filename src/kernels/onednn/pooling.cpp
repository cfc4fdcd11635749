// oneDNN max/avg pooling: the reference's validation and output size, then one pooling_v2
// primitive on the input's own layout (nchw or nhwc), cached per problem.
#include "kernels/onednn/pooling.h"

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "core/check.h"
#include "kernels/onednn/conv2d.h"
#include "kernels/onednn/engine.h"
#include "kernels/onednn/primitive_cache.h"
#include "kernels/onednn/threads.h"
#include "kernels/reference/pooling_checks.h"

namespace refold::onednn {
namespace {

using tag = dnnl::memory::format_tag;

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

PrimitiveCache<Primitive, PrimitiveStats>& cache() {
  static PrimitiveCache<Primitive, PrimitiveStats> c(1024);
  return c;
}

// Validates the window (as the reference does), then runs it or declines.
Tensor run(const Problem& p, const Tensor& input, std::string* declined) {
  const Size2d k = p.kernel, s = p.stride, pad = p.padding, d = p.dilation;
  const std::int64_t in_h = input.size(-2), in_w = input.size(-1);
  const std::int64_t out_h =
      reference::detail::pool_size(p.op, "height", in_h, k.h, s.h, pad.h, d.h, p.ceil_mode);
  const std::int64_t out_w =
      reference::detail::pool_size(p.op, "width", in_w, k.w, s.w, pad.w, d.w, p.ceil_mode);
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

  const auto data_type = data_type_of(dtype);
  const tag layout = nhwc ? tag::nhwc : tag::nchw;
  const dnnl::memory::desc src_md({batch, channels, in_h, in_w}, data_type, layout);
  const dnnl::memory::desc dst_md({batch, channels, out_h, out_w}, data_type, layout);

  const std::shared_ptr<Primitive> prim = cache().find_or_make(key, [&] {
    auto made = std::make_shared<Primitive>();
    made->declined = try_build(p.op, "pooling", [&] {
      // oneDNN counts dilation as the gaps between taps: PyTorch's dilation − 1.
      const dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference, p.algorithm,
                                                src_md, dst_md, {s.h, s.w}, {k.h, k.w},
                                                {d.h - 1, d.w - 1}, {pad.h, pad.w}, {pr_h, pr_w});
      made->primitive = dnnl::pooling_v2_forward(
          dnnl::pooling_v2_forward::primitive_desc(desc, user_scratchpad(), cpu_engine()));
    });
    return made;
  });
  if (!prim->declined.empty()) return decline(p.op, prim->declined, declined);

  // The reference's output: same rank and batch as the input, in the input's format.
  Tensor output = four_d ? empty({batch, channels, out_h, out_w}, {dtype, format})
                         : empty({channels, out_h, out_w}, {dtype});
  cache().execute(p.op, [&](dnnl::stream& stream) {
    // oneDNN only reads the source; const_cast avoids Tensor's writable data_ptr(), which would
    // bump the input's version.
    const dnnl::memory src(src_md, cpu_engine(), const_cast<void*>(input.data_ptr()));
    const dnnl::memory dst(dst_md, cpu_engine(), output.data_ptr());
    execute(prim->primitive, stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  });
  return output;
}

}  // namespace

Tensor max_pool2d(const Tensor& input, const MaxPool2dOptions& options, std::string* declined) {
  constexpr const char* op = "max_pool2d";
  reference::detail::check_pool_input(input, op);
  reference::detail::check_pool_kernel(op, options.kernel_size);
  return run({op, dnnl::algorithm::pooling_max, options.kernel_size,
              options.stride.value_or(options.kernel_size), options.padding, options.dilation,
              options.ceil_mode, false},
             input, declined);
}

Tensor avg_pool2d(const Tensor& input, const AvgPool2dOptions& options, std::string* declined) {
  constexpr const char* op = "avg_pool2d";
  reference::detail::check_pool_input(input, op);
  reference::detail::check_pool_kernel(op, options.kernel_size);
  reference::detail::check_divisor_override(op, options);
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

PrimitiveStats pooling_stats() { return cache().stats(); }

void clear_pooling_cache() { cache().clear(); }

}  // namespace refold::onednn
