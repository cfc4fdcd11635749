// native::pad (pad.h): rows of the output in memory order, each filled, or copied between fills.
#include "kernels/native/pad.h"

#include <algorithm>
#include <cstring>

#include "kernels/native/decline.h"
#include "kernels/native/row_threads.h"

namespace refold::native {

namespace {

// One dim in memory order: input size, output size, and where the input starts in the output.
struct PadDim {
  std::int64_t in = 0, out = 0, begin = 0;
};

}  // namespace

Tensor pad(const Tensor& input, const std::vector<std::int64_t>& pads, float value,
           std::string* declined) {
  constexpr std::string_view op = "pad";
  const std::int64_t rank = input.dim();
  // Invalid pads are the reference's to report, with its messages.
  if (pads.size() % 2 != 0 || static_cast<std::int64_t>(pads.size()) > 2 * rank || rank == 0)
    return decline(op, "pads the reference reports", declined);
  if (input.dtype() != DType::Float32) return decline(op, "float32 only", declined);
  const MemoryFormat format = rank == 4 ? input.suggest_memory_format() : MemoryFormat::Contiguous;
  if (!input.is_contiguous(format)) return decline(op, "input not dense", declined);

  // Logical dims, then in memory order (channels_last: N, H, W, C).
  std::vector<PadDim> logical(static_cast<std::size_t>(rank));
  for (std::int64_t d = 0; d < rank; ++d) {
    logical[static_cast<std::size_t>(d)] = {input.size(d), input.size(d), 0};
  }
  for (std::size_t k = 0; k < pads.size() / 2; ++k) {
    PadDim& dim = logical[static_cast<std::size_t>(rank) - 1 - k];
    const std::int64_t before = pads[2 * k], after = pads[2 * k + 1];
    if (dim.in + std::min<std::int64_t>(before, 0) + std::min<std::int64_t>(after, 0) < 0)
      return decline(op, "a crop the reference reports", declined);
    dim.begin = before;
    dim.out = dim.in + before + after;
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
  std::int64_t rows = 1;
  for (const PadDim& dim : dims) rows *= dim.out;
  // The copied part of a row: output columns [lo, hi) from input column lo − begin.
  const std::int64_t lo = std::clamp<std::int64_t>(inner.begin, 0, inner.out);
  const std::int64_t hi = std::clamp<std::int64_t>(inner.begin + inner.in, lo, inner.out);

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
        const std::int64_t i = index[d] - dims[d].begin;
        inside = i >= 0 && i < dims[d].in;
        source += i * in_stride[d];
      }
      if (!inside || hi == lo) {
        std::fill_n(o, inner.out, value);
      } else {
        std::fill_n(o, lo, value);
        std::memcpy(o + lo, in + source + (lo - inner.begin),
                    static_cast<std::size_t>(hi - lo) * sizeof(float));
        std::fill_n(o + hi, inner.out - hi, value);
      }
      for (std::size_t d = dims.size(); d-- > 0;) {
        if (++index[d] < dims[d].out) break;
        index[d] = 0;
      }
    }
  }
  return output;
}

}  // namespace refold::native
