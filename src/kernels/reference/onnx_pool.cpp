// Reference max / average pooling of any spatial rank with ONNX's semantics: per-side pads,
// dilations, ceil_mode, count_include_pad and MaxPool's Indices. See kernels/reference/onnx_ops.h.
#include <algorithm>
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

Tensor pool(const Tensor& input, const PoolParams& p, Tensor* indices, bool column_major) {
  const char* op = p.max ? "MaxPool" : "AveragePool";
  REFOLD_CHECK(input.defined(), "{}: input is undefined", op);
  REFOLD_CHECK(is_floating(input.dtype()), "{}: input has dtype {}; expected float32 or bfloat16",
               op, dtype_name(input.dtype()));
  const std::size_t r = p.kernel.size();
  REFOLD_CHECK(r >= 1 && p.stride.size() == r && p.dilation.size() == r &&
                   p.pad_begin.size() == r && p.pad_end.size() == r,
               "{}: kernel, stride, dilation and pads must have one value per spatial axis", op);
  REFOLD_CHECK(input.dim() == static_cast<std::int64_t>(r) + 2,
               "{}: input must be {}-d [N, C, {} spatial], got [{}]", op, r + 2, r,
               fmt::join(input.sizes(), ", "));
  REFOLD_CHECK(indices == nullptr || p.max, "AveragePool: has no indices");
  const Shape& in_sizes = input.sizes();
  Shape sizes = {in_sizes[0], in_sizes[1]};
  for (std::size_t k = 0; k < r; ++k)
    sizes.push_back(onnx_pool_output_size(in_sizes[k + 2], p.kernel[k], p.stride[k], p.dilation[k],
                                          p.pad_begin[k], p.pad_end[k], p.ceil_mode));
  const MemoryFormat format =
      input.dim() == 4 ? input.suggest_memory_format() : MemoryFormat::Contiguous;
  Tensor output = empty(sizes, {input.dtype(), format});
  if (indices) *indices = empty(sizes, {DType::Int64, format});
  // The flat index of a spatial position: row-major or column-major over D_1 … D_r.
  Shape place(r);
  std::int64_t spatial = 1;
  for (std::size_t k = 0; k < r; ++k) {
    const std::size_t axis = column_major ? k : r - 1 - k;
    place[axis] = spatial;
    spatial *= in_sizes[axis + 2];
  }
  const FloatReader in(input);
  const FloatWriter out(output);
  const Shape window(p.kernel.begin(), p.kernel.end());
  Shape pos(r);
  for_each_index(sizes, [&](const Shape& idx) {
    double acc = p.max ? -std::numeric_limits<double>::infinity() : 0.0;
    bool nan = false;
    std::int64_t valid = 0, padded = 0, best = -1;
    const std::int64_t base = idx[0] * in.stride(0) + idx[1] * in.stride(1);
    for_each_index(window, [&](const Shape& j) {
      bool inside = true, in_padded = true;
      std::int64_t off = base, flat = 0;
      for (std::size_t k = 0; k < r; ++k) {
        pos[k] = idx[k + 2] * p.stride[k] - p.pad_begin[k] + j[k] * p.dilation[k];
        // Positions inside the padded input [−pad_begin, in + pad_end) count for
        // count_include_pad; those inside the input are read.
        in_padded = in_padded && pos[k] < in_sizes[k + 2] + p.pad_end[k];
        inside = inside && pos[k] >= 0 && pos[k] < in_sizes[k + 2];
        off += pos[k] * in.stride(k + 2);
        flat += pos[k] * place[k];
      }
      if (in_padded) ++padded;
      if (!inside) return;
      ++valid;
      const double v = in.at_offset(off);
      if (std::isnan(v)) nan = true;
      if (!p.max) {
        acc += v;
      } else if (best < 0 || v > acc) {  // the first maximum wins a tie
        acc = v;
        best = flat;
      }
    });
    double result = acc;
    if (!p.max) {
      const std::int64_t count = p.count_include_pad ? padded : valid;
      result = count > 0 ? acc / static_cast<double>(count) : 0.0;
    }
    if (nan) result = std::numeric_limits<double>::quiet_NaN();
    out.set_offset(offset_of(idx, out.strides()), round_to_dtype(result, input.dtype()));
    if (indices) {
      const std::int64_t plane = (idx[0] * in_sizes[1] + idx[1]) * spatial;
      indices->data<std::int64_t>()[offset_of(idx, indices->strides())] =
          best < 0 ? -1 : plane + best;
    }
  });
  return output;
}

}  // namespace refold::reference
