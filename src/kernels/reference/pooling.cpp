// Reference 2-d pooling: max, average and adaptive average, over input [C, H, W] or
// [N, C, H, W] with any strides. A 3-d input is read as a 4-d view with N = 1, so one loop
// serves both. A 4-d output takes the format the input suggests (channels_last stays
// channels_last); a 3-d one is contiguous.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "core/check.h"
#include "core/checked_math.h"
#include "core/element_access.h"
#include "kernels/reference/pooling_checks.h"
#include "refold/reference.h"

namespace refold::reference {
namespace {

// [C, H, W] → [1, C, H, W] over the same storage; 4-d tensors are returned as they are.
Tensor as_4d(const Tensor& t) {
  if (t.dim() == 4) return t;
  const Shape& s = t.sizes();
  const Shape& st = t.strides();
  return t.as_strided({1, s[0], s[1], s[2]}, {0, st[0], st[1], st[2]}, t.storage_offset());
}

// The output for pooled planes of oh × ow: same rank and batch as the input.
Tensor make_output(const Tensor& input, std::int64_t oh, std::int64_t ow) {
  if (input.dim() == 3) return empty({input.size(0), oh, ow}, {input.dtype()});
  return empty({input.size(0), input.size(1), oh, ow},
               {input.dtype(), input.suggest_memory_format()});
}

// The sliding window of max and average pooling and the output size it gives.
struct Window {
  Size2d k, s, p;  // kernel, stride (the kernel when unset), padding
  std::int64_t out_h, out_w;
};

Window sliding_window(const char* op, const Tensor& input, Size2d kernel,
                      std::optional<Size2d> stride, Size2d padding, Size2d dilation,
                      bool ceil_mode) {
  const Size2d s = stride.value_or(kernel);
  return {kernel, s, padding,
          detail::pool_size(op, "height", input.size(-2), kernel.h, s.h, padding.h, dilation.h,
                            ceil_mode),
          detail::pool_size(op, "width", input.size(-1), kernel.w, s.w, padding.w, dilation.w,
                            ceil_mode)};
}

// One input plane (n, c), of height × width elements.
struct Plane {
  const FloatReader& in;
  std::int64_t base, stride_h, stride_w;  // the offset of (n, c, 0, 0) and the plane's strides
  std::int64_t height, width;

  float at(std::int64_t h, std::int64_t w) const {
    return in.at_offset(base + h * stride_h + w * stride_w);
  }
  // Σ in[h, w] over [h0, h1) × [w0, w1), in double.
  double sum(std::int64_t h0, std::int64_t h1, std::int64_t w0, std::int64_t w1) const {
    double total = 0;
    for (std::int64_t h = h0; h < h1; ++h)
      for (std::int64_t w = w0; w < w1; ++w) total += at(h, w);
    return total;
  }
};

// Makes the output of out_h × out_w planes (make_output) and sets every element (n, c, oh, ow)
// to value(plane, oh, ow), `plane` being the input plane (n, c).
template <typename Fn>
Tensor pool(const Tensor& input, std::int64_t out_h, std::int64_t out_w, Fn&& value) {
  Tensor output = make_output(input, out_h, out_w);
  const Tensor in4 = as_4d(input);
  Tensor out4 = as_4d(output);
  const FloatReader in(in4);
  const FloatWriter out(out4);
  const Shape& is = in4.strides();
  const Shape& os = out4.strides();
  for (std::int64_t n = 0; n < out4.size(0); ++n)
    for (std::int64_t c = 0; c < out4.size(1); ++c) {
      const Plane plane{in, n * is[0] + c * is[1], is[2], is[3], in4.size(2), in4.size(3)};
      for (std::int64_t oh = 0; oh < out_h; ++oh)
        for (std::int64_t ow = 0; ow < out_w; ++ow)
          out.set_offset(n * os[0] + c * os[1] + oh * os[2] + ow * os[3], value(plane, oh, ow));
    }
  return output;
}

}  // namespace

Tensor max_pool2d(const Tensor& input, const MaxPool2dOptions& options) {
  constexpr const char* op = "max_pool2d";
  detail::check_pool_input(input, op);
  detail::check_pool_kernel(op, options.kernel_size);
  const Size2d d = options.dilation;
  const Window win = sliding_window(op, input, options.kernel_size, options.stride, options.padding,
                                    d, options.ceil_mode);
  const Size2d k = win.k, s = win.s, p = win.p;
  // out[oh, ow] = max over taps (i, j) of in[oh·s − p + i·d, ow·s − p + j·d]; taps in the
  // padding count as −inf, i.e. they are skipped. NaN wins, as in PyTorch.
  return pool(input, win.out_h, win.out_w, [&](const Plane& in, std::int64_t oh, std::int64_t ow) {
    float best = -std::numeric_limits<float>::infinity();
    for (std::int64_t i = 0; i < k.h; ++i) {
      const std::int64_t h = oh * s.h - p.h + i * d.h;
      if (h < 0 || h >= in.height) continue;
      for (std::int64_t j = 0; j < k.w; ++j) {
        const std::int64_t w = ow * s.w - p.w + j * d.w;
        if (w < 0 || w >= in.width) continue;
        const float v = in.at(h, w);
        if (v > best || std::isnan(v)) best = v;
        if (std::isnan(best)) break;
      }
    }
    return best;
  });
}

Tensor avg_pool2d(const Tensor& input, const AvgPool2dOptions& options) {
  constexpr const char* op = "avg_pool2d";
  detail::check_pool_input(input, op);
  detail::check_pool_kernel(op, options.kernel_size);
  detail::check_divisor_override(op, options);
  const Window win = sliding_window(op, input, options.kernel_size, options.stride, options.padding,
                                    1, options.ceil_mode);
  const Size2d k = win.k, s = win.s, p = win.p;
  const DType dtype = input.dtype();
  return pool(input, win.out_h, win.out_w, [&](const Plane& in, std::int64_t oh, std::int64_t ow) {
    // PyTorch's divisor rule. The window [h0, h1) is cut at the end of the right padding, not
    // at the kernel's end, so a ceil_mode window hanging past H + p does not count its overhang:
    //   h0 = oh·s − p,  h1 = min(h0 + k, H + p),  pool_area = (h1 − h0)·(w1 − w0)  (padding in)
    // then the window is clipped to the input, [max(h0, 0), min(h1, H)), and
    //   divisor = divisor_override  or  count_include_pad ? pool_area : elements in the clip.
    std::int64_t h0 = oh * s.h - p.h, w0 = ow * s.w - p.w;
    std::int64_t h1 = std::min(h0 + k.h, in.height + p.h), w1 = std::min(w0 + k.w, in.width + p.w);
    const std::int64_t pool_area = (h1 - h0) * (w1 - w0);
    h0 = std::max<std::int64_t>(h0, 0);
    w0 = std::max<std::int64_t>(w0, 0);
    h1 = std::min(h1, in.height);
    w1 = std::min(w1, in.width);
    const std::int64_t divisor = options.divisor_override    ? *options.divisor_override
                                 : options.count_include_pad ? pool_area
                                                             : (h1 - h0) * (w1 - w0);
    return round_to_dtype(in.sum(h0, h1, w0, w1) / static_cast<double>(divisor), dtype);
  });
}

Tensor adaptive_avg_pool2d(const Tensor& input, Size2d output_size) {
  constexpr const char* op = "adaptive_avg_pool2d";
  detail::check_pool_input(input, op);
  REFOLD_CHECK(output_size.h >= 0 && output_size.w >= 0,
               "{}: output_size ({}, {}) must be non-negative", op, output_size.h, output_size.w);
  const DType dtype = input.dtype();
  const Size2d o = output_size;
  return pool(input, o.h, o.w, [&](const Plane& in, std::int64_t oh, std::int64_t ow) {
    const auto [h0, h1] = detail::adaptive_window(op, oh, in.height, o.h);
    const auto [w0, w1] = detail::adaptive_window(op, ow, in.width, o.w);
    return round_to_dtype(in.sum(h0, h1, w0, w1) / static_cast<double>((h1 - h0) * (w1 - w0)),
                          dtype);
  });
}

}  // namespace refold::reference
