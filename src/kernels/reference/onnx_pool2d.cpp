// Reference 2-d max / average pooling with ONNX's semantics: per-side pads, dilations,
// ceil_mode and count_include_pad. See kernels/reference/onnx_ops.h.
#include <cmath>
#include <limits>

#include <fmt/ranges.h>

#include "core/check.h"
#include "core/element_access.h"
#include "kernels/reference/onnx_ops.h"

namespace refold::reference {

std::int64_t onnx_pool_output_size(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                                   std::int64_t dilation, std::int64_t pad_begin,
                                   std::int64_t pad_end, bool ceil_mode) {
  REFOLD_CHECK(kernel > 0 && stride > 0 && dilation > 0,
               "pool: kernel ({}), stride ({}) and dilation ({}) must be positive", kernel, stride,
               dilation);
  REFOLD_CHECK(pad_begin >= 0 && pad_end >= 0, "pool: pads ({}, {}) must be non-negative",
               pad_begin, pad_end);
  // span = the padded input minus one window: (in + pb + pe) − (dilation·(k − 1) + 1)
  const std::int64_t window = dilation * (kernel - 1) + 1;
  const std::int64_t span = in + pad_begin + pad_end - window;
  REFOLD_CHECK(span >= 0, "output dim <= 0 (in {}, kernel {}, dilation {}, pads {}/{})", in, kernel,
               dilation, pad_begin, pad_end);
  const std::int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  // ceil_mode adds a last window that may start beyond the input and its begin padding: the
  // opset ≤ 18 spec keeps it, opset 19 and PyTorch drop it. refold refuses rather than guess.
  REFOLD_CHECK((out - 1) * stride < in + pad_begin,
               "unsupported: ceil_mode=1 with a last window that starts in the end padding "
               "(in {}, kernel {}, stride {}, pads {}/{}; ONNX versions disagree on it)",
               in, kernel, stride, pad_begin, pad_end);
  return out;
}

Tensor pool2d(const Tensor& input, const Pool2dParams& p) {
  const char* op = p.max ? "MaxPool" : "AveragePool";
  REFOLD_CHECK(input.defined(), "{}: input is undefined", op);
  REFOLD_CHECK(is_floating(input.dtype()), "{}: input has dtype {}; expected float32 or bfloat16",
               op, dtype_name(input.dtype()));
  REFOLD_CHECK(input.dim() == 4, "{}: input must be 4-d [N, C, H, W], got [{}]", op,
               fmt::join(input.sizes(), ", "));
  const std::int64_t n = input.size(0), c = input.size(1), h = input.size(2), w = input.size(3);
  const std::int64_t oh = onnx_pool_output_size(h, p.kernel.h, p.stride.h, p.dilation.h, p.pads.top,
                                                p.pads.bottom, p.ceil_mode);
  const std::int64_t ow = onnx_pool_output_size(w, p.kernel.w, p.stride.w, p.dilation.w,
                                                p.pads.left, p.pads.right, p.ceil_mode);
  Tensor output = empty({n, c, oh, ow}, {input.dtype(), input.suggest_memory_format()});
  const FloatReader in(input);
  const FloatWriter out(output);
  for_each_index({n, c, oh, ow}, [&](const Shape& idx) {
    const std::int64_t y0 = idx[2] * p.stride.h - p.pads.top;
    const std::int64_t x0 = idx[3] * p.stride.w - p.pads.left;
    double acc = p.max ? -std::numeric_limits<double>::infinity() : 0.0;
    bool nan = false;
    std::int64_t valid = 0, padded = 0;
    for (std::int64_t i = 0; i < p.kernel.h; ++i) {
      const std::int64_t y = y0 + i * p.dilation.h;
      for (std::int64_t j = 0; j < p.kernel.w; ++j) {
        const std::int64_t x = x0 + j * p.dilation.w;
        // Positions inside the padded input [−pad_begin, in + pad_end) count for
        // count_include_pad; those inside the input are read.
        if (y < h + p.pads.bottom && x < w + p.pads.right) ++padded;
        if (y < 0 || y >= h || x < 0 || x >= w) continue;
        ++valid;
        const double v = in.at_offset(idx[0] * in.stride(0) + idx[1] * in.stride(1) +
                                      y * in.stride(2) + x * in.stride(3));
        if (std::isnan(v)) nan = true;
        acc = p.max ? std::max(acc, v) : acc + v;
      }
    }
    double result = acc;
    if (!p.max) {
      const std::int64_t count = p.count_include_pad ? padded : valid;
      result = count > 0 ? acc / static_cast<double>(count) : 0.0;
    }
    if (nan) result = std::numeric_limits<double>::quiet_NaN();
    out.set_offset(idx[0] * out.stride(0) + idx[1] * out.stride(1) + idx[2] * out.stride(2) +
                       idx[3] * out.stride(3),
                   round_to_dtype(result, input.dtype()));
  });
  return output;
}

}  // namespace refold::reference
