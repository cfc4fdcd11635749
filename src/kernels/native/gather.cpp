// native::gather (gather.h): rows of `inner` elements copied from their gathered place.
#include "kernels/native/gather.h"

#include <cstddef>
#include <cstring>
#include <functional>
#include <numeric>

#include "kernels/native/decline.h"
#include "kernels/native/row_threads.h"

namespace refold::native {

Tensor gather(const Tensor& data, std::span<const std::int64_t> index, std::int64_t axis,
              const Shape& out_sizes, std::string* declined) {
  if (!data.is_contiguous())
    return decline("gather", "data is not dense in logical order", declined);
  const Shape& sizes = data.sizes();
  const auto a = static_cast<std::ptrdiff_t>(axis);
  const std::int64_t outer =
      std::accumulate(sizes.begin(), sizes.begin() + a, std::int64_t{1}, std::multiplies<>());
  const std::int64_t inner =
      std::accumulate(sizes.begin() + a + 1, sizes.end(), std::int64_t{1}, std::multiplies<>());
  const std::int64_t size = sizes[static_cast<std::size_t>(a)];
  const auto count = static_cast<std::int64_t>(index.size());
  Tensor out = empty(out_sizes, data.dtype());
  const std::size_t element = data.element_size();
  const auto row_bytes = static_cast<std::size_t>(inner) * element;
  const auto* in = static_cast<const std::byte*>(data.data_ptr());
  auto* dst = static_cast<std::byte*>(out.data_ptr());
  const std::int64_t rows = outer * count;
  const int threads = copy_kernel_threads(rows * inner);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t o = r / count, j = r % count;
    std::memcpy(
        dst + static_cast<std::size_t>(r) * row_bytes,
        in + static_cast<std::size_t>(o * size + index[static_cast<std::size_t>(j)]) * row_bytes,
        row_bytes);
  }
  return out;
}

}  // namespace refold::native
