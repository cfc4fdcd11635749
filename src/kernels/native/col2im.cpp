// native::col2im (col2im.h).
#include "kernels/native/col2im.h"

#include <algorithm>

#include "kernels/native/decline.h"
#include "kernels/native/row_threads.h"

namespace refold::native {

Tensor col2im(const Tensor& x, const reference::Col2ImParams& p,
              const std::vector<std::int64_t>& blocks, std::string* declined) {
  if (x.dtype() != DType::Float32) return decline("col2im", "not float32", declined);
  if (!x.is_contiguous()) return decline("col2im", "columns not contiguous", declined);
  std::int64_t taps = 1, plane = 1;
  for (std::size_t a = 0; a < p.image.size(); ++a) {
    taps *= p.block[a];
    plane *= p.image[a];
  }
  const std::int64_t count = x.size(2);  // L
  Shape out_sizes{x.size(0), x.size(1) / taps};
  out_sizes.insert(out_sizes.end(), p.image.begin(), p.image.end());
  Tensor y = empty(out_sizes, DType::Float32);
  const float* in = x.data<float>();
  float* out = y.data<float>();
  const std::int64_t planes = out_sizes[0] * out_sizes[1];
  const int threads = row_kernel_threads(x.numel());
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (std::int64_t i = 0; i < planes; ++i) {
    float* image = out + i * plane;
    const float* columns = in + i * taps * count;  // rows c·K … c·K + K − 1 of image i = (n, c)
    std::fill(image, image + plane, 0.0f);
    reference::detail::for_each_col2im_tap(p, blocks,
                                           [&](std::int64_t at, std::int64_t j, std::int64_t l) {
                                             image[at] += columns[j * count + l];
                                           });
  }
  return y;
}

}  // namespace refold::native
