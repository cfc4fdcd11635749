// native::cat (concat.h): rows of the output in memory order, each the inputs' rows side by side.
#include "kernels/native/concat.h"

#include <cstddef>
#include <cstring>

#include "kernels/native/decline.h"
#include "kernels/native/row_threads.h"
#include "kernels/reference/tensor_ops.h"

namespace refold::native {

namespace {

// Sizes in memory order: logical for contiguous, (N, H, W, C) for channels_last.
Shape physical_sizes(const Tensor& t, MemoryFormat format) {
  if (format != MemoryFormat::ChannelsLast) return t.sizes();
  return {t.size(0), t.size(2), t.size(3), t.size(1)};
}

}  // namespace

Tensor cat(const std::vector<Tensor>& inputs, std::int64_t dim, std::string* declined) {
  constexpr std::string_view op = "cat";
  if (inputs.empty() || !inputs[0].defined() || inputs[0].dim() == 0)
    return decline(op, "inputs the reference reports", declined);
  const Tensor& first = inputs[0];
  const std::int64_t rank = first.dim();
  if (dim < -rank || dim >= rank) return decline(op, "a dim the reference reports", declined);
  const std::int64_t d = dim < 0 ? dim + rank : dim;
  const MemoryFormat format = reference::cat_output_format(inputs);
  // The physical axis of d: channels_last's memory order is N, H, W, C.
  constexpr std::int64_t kNhwcAxis[] = {0, 3, 1, 2};
  const std::int64_t q = format == MemoryFormat::ChannelsLast ? kNhwcAxis[d] : d;

  Shape out_sizes = first.sizes();
  out_sizes[static_cast<std::size_t>(d)] = 0;
  const Shape first_physical = physical_sizes(first, format);
  std::int64_t outer = 1;
  for (std::int64_t a = 0; a < q; ++a) outer *= first_physical[static_cast<std::size_t>(a)];
  std::vector<std::int64_t> inner(inputs.size());
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& t = inputs[k];
    if (!t.defined() || t.dim() != rank || t.dtype() != first.dtype())
      return decline(op, "inputs the reference reports", declined);
    for (std::int64_t a = 0; a < rank; ++a) {
      if (a != d && t.size(a) != first.size(a))
        return decline(op, "sizes the reference reports", declined);
    }
    if (t.numel() > 0 && !t.is_contiguous(format))
      return decline(op, "an input not dense", declined);
    const Shape physical = physical_sizes(t, format);
    inner[k] = 1;
    for (std::int64_t a = q; a < rank; ++a) inner[k] *= physical[static_cast<std::size_t>(a)];
    out_sizes[static_cast<std::size_t>(d)] += t.size(d);
  }
  Tensor output = empty(out_sizes, {first.dtype(), format});
  if (output.numel() == 0) return output;

  const std::size_t element = first.element_size();
  const std::int64_t row = output.numel() / outer;  // Σ inner_k
  std::vector<const std::byte*> sources(inputs.size());
  for (std::size_t k = 0; k < inputs.size(); ++k)
    sources[k] = static_cast<const std::byte*>(inputs[k].data_ptr());
  auto* out = static_cast<std::byte*>(output.data_ptr());
  const int threads = row_kernel_threads(output.numel());
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (std::int64_t o = 0; o < outer; ++o) {
    std::byte* dst = out + static_cast<std::size_t>(o * row) * element;
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const std::size_t bytes = static_cast<std::size_t>(inner[k]) * element;
      std::memcpy(dst, sources[k] + static_cast<std::size_t>(o) * bytes, bytes);
      dst += bytes;
    }
  }
  return output;
}

}  // namespace refold::native
