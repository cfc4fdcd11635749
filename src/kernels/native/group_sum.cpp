#include "kernels/native/group_sum.h"

#include "kernels/native/cpu.h"
#include "kernels/native/decline.h"
#include "kernels/native/row_threads.h"

namespace refold::native {
namespace {

constexpr const char* kOp = "GroupSum";

// One pixel of NHWC (or one plane of NCHW, `width` = H·W, each group's weight one value): y[j] =
// Σ_k x[k·group_stride + j] · a_k[j], k < groups. The loops vectorize over j; `a` null is a
// weight of 1.
REFOLD_TARGET_AVX2 void weighted_group_sum(const float* x, std::int64_t group_stride,
                                           const float* a, std::int64_t a_stride,
                                           bool a_per_element, std::int64_t groups,
                                           std::int64_t width, float* y) {
  for (std::int64_t k = 0; k < groups; ++k) {
    const float* xk = x + k * group_stride;
    if (a == nullptr) {
      if (k == 0)
        for (std::int64_t j = 0; j < width; ++j) y[j] = xk[j];
      else
        for (std::int64_t j = 0; j < width; ++j) y[j] += xk[j];
    } else if (a_per_element) {
      const float* ak = a + k * a_stride;
      if (k == 0)
        for (std::int64_t j = 0; j < width; ++j) y[j] = xk[j] * ak[j];
      else
        for (std::int64_t j = 0; j < width; ++j) y[j] += xk[j] * ak[j];
    } else {
      const float ak = a[k * a_stride];
      if (k == 0)
        for (std::int64_t j = 0; j < width; ++j) y[j] = xk[j] * ak;
      else
        for (std::int64_t j = 0; j < width; ++j) y[j] += xk[j] * ak;
    }
  }
}

}  // namespace

Tensor group_sum(const Tensor& x, const Tensor& a, std::int64_t groups, std::string* declined) {
  if (!cpu_has_avx2_fma()) return decline(kOp, "the CPU lacks AVX2/FMA", declined);
  if (!x.defined() || x.dtype() != DType::Float32 || x.dim() != 4)
    return decline(kOp, "X is not 4-d float32", declined);
  const bool channels_last = !x.is_contiguous() && x.is_contiguous(MemoryFormat::ChannelsLast);
  if (!x.is_contiguous() && !channels_last)
    return decline(kOp, "X is neither contiguous nor channels_last", declined);
  const std::int64_t n = x.size(0), total = x.size(1), h = x.size(2), w = x.size(3);
  if (groups < 1 || total % groups != 0)
    return decline(kOp, "X's channels do not split into the groups", declined);
  const std::int64_t c = total / groups, pixels = h * w;
  Tensor weights;
  std::int64_t weight_batch = 0;
  if (a.defined()) {
    if (a.dtype() != DType::Float32) return decline(kOp, "A is not float32", declined);
    if (a.numel() != groups * c && a.numel() != n * groups * c)
      return decline(kOp, "A does not hold r·C values for one or every n", declined);
    weights = a.contiguous();
    weight_batch = a.numel() == groups * c ? 0 : groups * c;  // the stride between n's weights
  }
  Tensor y =
      empty({n, c, h, w}, channels_last ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous);
  if (y.numel() == 0) return y;
  const float* in = x.data<float>();
  const float* wt = weights.defined() ? weights.data<float>() : nullptr;
  float* out = y.data<float>();
  const int threads = row_kernel_threads(x.numel());
  if (channels_last) {
    // Each pixel: [r·C] in, [C] out, a's C values of group k k·C apart.
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
    for (std::int64_t p = 0; p < n * pixels; ++p) {
      const float* ap = wt == nullptr ? nullptr : wt + p / pixels * weight_batch;
      weighted_group_sum(in + p * total, c, ap, c, true, groups, c, out + p * c);
    }
  } else {
    // Each output plane (n, channel): the r input planes C·H·W apart, each its own weight.
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
    for (std::int64_t plane = 0; plane < n * c; ++plane) {
      const std::int64_t b = plane / c, channel = plane % c;
      const float* ap = wt == nullptr ? nullptr : wt + b * weight_batch + channel;
      weighted_group_sum(in + (b * total + channel) * pixels, c * pixels, ap, c, false, groups,
                         pixels, out + plane * pixels);
    }
  }
  return y;
}

}  // namespace refold::native
