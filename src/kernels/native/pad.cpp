// native::onnx_pad and native::pad (pad.h): rows of the output in memory order, each filled, or
// its kept input row copied between its border columns.
#include "kernels/native/pad.h"

#include <algorithm>
#include <cstring>

#include "kernels/native/decline.h"
#include "kernels/native/row_threads.h"

namespace refold::native {

namespace {

using reference::PadMode;

// One dim: the input's size, where its kept elements start in the input (after the crop), how
// many, where they start in the output, and the output's size.
struct PadDim {
  std::int64_t in = 0, first = 0, kept = 0, before = 0, out = 0;
};

}  // namespace

Tensor onnx_pad(const Tensor& input, const std::vector<std::int64_t>& begin,
                const std::vector<std::int64_t>& end, PadMode mode, float value,
                std::string* declined) {
  constexpr std::string_view op = "pad";
  const std::int64_t rank = input.dim();
  if (rank == 0 || begin.size() != static_cast<std::size_t>(rank) || end.size() != begin.size())
    return decline(op, "pads the reference reports", declined);
  if (input.dtype() != DType::Float32) return decline(op, "float32 only", declined);
  const MemoryFormat format = rank == 4 ? input.suggest_memory_format() : MemoryFormat::Contiguous;
  if (!input.is_contiguous(format)) return decline(op, "input not dense", declined);

  std::vector<PadDim> logical(static_cast<std::size_t>(rank));
  for (std::size_t d = 0; d < logical.size(); ++d) {
    const std::int64_t size = input.sizes()[d];
    const std::int64_t crop_begin = std::max<std::int64_t>(-begin[d], 0);
    const std::int64_t crop_end = std::max<std::int64_t>(-end[d], 0);
    PadDim& dim = logical[d];
    dim.in = size;
    dim.first = crop_begin;
    dim.kept = size - crop_begin - crop_end;
    dim.before = std::max<std::int64_t>(begin[d], 0);
    dim.out = dim.kept + dim.before + std::max<std::int64_t>(end[d], 0);
    if (dim.kept < 0 || (mode != PadMode::Constant && dim.kept == 0 && dim.out > 0))
      return decline(op, "pads the reference reports", declined);
  }
  Shape sizes;
  for (const PadDim& dim : logical) sizes.push_back(dim.out);
  Tensor output = empty(sizes, {DType::Float32, format});
  if (output.numel() == 0) return output;

  std::vector<PadDim> dims = logical;
  if (format == MemoryFormat::ChannelsLast) dims = {logical[0], logical[2], logical[3], logical[1]};
  const PadDim inner = dims.back();
  dims.pop_back();
  // Input strides of the outer dims in memory order (dense: the product of the inner sizes).
  std::vector<std::int64_t> in_stride(dims.size());
  std::int64_t stride = inner.in;
  for (std::size_t d = dims.size(); d-- > 0;) {
    in_stride[d] = stride;
    stride *= dims[d].in;
  }
  // Each output column's source column in the input row (−1: the value), for the border columns;
  // the kept columns [before, before + kept) are one memcpy.
  std::vector<std::int64_t> column(static_cast<std::size_t>(inner.out));
  for (std::int64_t c = 0; c < inner.out; ++c) {
    const std::int64_t p = reference::pad_source(c - inner.before, inner.kept, mode);
    column[static_cast<std::size_t>(c)] = p < 0 ? -1 : p + inner.first;
  }
  std::int64_t rows = 1;
  for (const PadDim& dim : dims) rows *= dim.out;
  const std::int64_t lo = inner.before, hi = inner.before + inner.kept;

  const float* in = input.data<float>();
  float* out = output.data<float>();
  const int threads = copy_kernel_threads(output.numel());
  // One chunk of rows per thread; each starts its odometer with divisions, then steps it.
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (std::int64_t chunk = 0; chunk < threads; ++chunk) {
    const std::int64_t first = rows * chunk / threads, last = rows * (chunk + 1) / threads;
    // The outer index of row `first` (an odometer from there on), in memory order.
    std::vector<std::int64_t> index(dims.size());
    std::int64_t rest = first;
    for (std::size_t d = dims.size(); d-- > 0; rest /= dims[d].out) index[d] = rest % dims[d].out;
    for (std::int64_t row = first; row < last; ++row) {
      float* o = out + row * inner.out;
      bool inside = true;
      std::int64_t source = 0;
      for (std::size_t d = 0; d < dims.size() && inside; ++d) {
        const std::int64_t p = reference::pad_source(index[d] - dims[d].before, dims[d].kept, mode);
        inside = p >= 0;
        source += (p + dims[d].first) * in_stride[d];
      }
      if (!inside) {
        std::fill_n(o, inner.out, value);
      } else {
        const float* i = in + source;
        const auto at = [&](std::int64_t c) {
          const std::int64_t from = column[static_cast<std::size_t>(c)];
          return from < 0 ? value : i[from];
        };
        for (std::int64_t c = 0; c < lo; ++c) o[c] = at(c);
        std::memcpy(o + lo, i + inner.first, static_cast<std::size_t>(hi - lo) * sizeof(float));
        for (std::int64_t c = hi; c < inner.out; ++c) o[c] = at(c);
      }
      for (std::size_t d = dims.size(); d-- > 0;) {
        if (++index[d] < dims[d].out) break;
        index[d] = 0;
      }
    }
  }
  return output;
}

Tensor pad(const Tensor& input, const std::vector<std::int64_t>& pads, float value,
           std::string* declined) {
  const std::int64_t rank = input.dim();
  // Invalid pads are the reference's to report, with its messages.
  if (pads.size() % 2 != 0 || static_cast<std::int64_t>(pads.size()) > 2 * rank || rank == 0)
    return decline("pad", "pads the reference reports", declined);
  std::vector<std::int64_t> begin(static_cast<std::size_t>(rank), 0), end = begin;
  for (std::size_t k = 0; k < pads.size() / 2; ++k) {
    begin[static_cast<std::size_t>(rank) - 1 - k] = pads[2 * k];
    end[static_cast<std::size_t>(rank) - 1 - k] = pads[2 * k + 1];
  }
  return onnx_pad(input, begin, end, PadMode::Constant, value, declined);
}

}  // namespace refold::native
