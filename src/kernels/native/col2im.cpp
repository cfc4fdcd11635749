// native::col2im (col2im.h).
#include "kernels/native/col2im.h"

#include <algorithm>

#include "kernels/native/decline.h"
#include "kernels/native/row_threads.h"

namespace refold::native {

Tensor col2im(const Tensor& x, const reference::Col2ImParams& p, const reference::Col2ImExtent& e,
              std::string* declined) {
  if (x.dtype() != DType::Float32) return decline("col2im", "not float32", declined);
  if (!x.is_contiguous()) return decline("col2im", "columns not contiguous", declined);
  const std::int64_t count = x.size(2);  // L
  Tensor y = empty(e.out_sizes, DType::Float32);
  const float* in = x.data<float>();
  float* out = y.data<float>();
  const std::int64_t planes = e.out_sizes[0] * e.out_sizes[1];
  const int threads = row_kernel_threads(x.numel());
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (std::int64_t i = 0; i < planes; ++i) {
    float* image = out + i * e.plane;
    // rows c·K … c·K + K − 1 of image i = (n, c)
    const float* columns = in + i * e.taps * count;
    std::fill(image, image + e.plane, 0.0f);
    reference::detail::for_each_col2im_tap(p, e.blocks,
                                           [&](std::int64_t at, std::int64_t j, std::int64_t l) {
                                             image[at] += columns[j * count + l];
                                           });
  }
  return y;
}

}  // namespace refold::native
