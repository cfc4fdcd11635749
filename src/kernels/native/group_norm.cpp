#include "kernels/native/group_norm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/native/decline.h"
#include "kernels/native/float_sums.h"
#include "kernels/native/row_threads.h"
#include "kernels/native/vector_math.h"

namespace refold::native {
namespace {

constexpr const char* kOp = "GroupNormalization";

bool is_channel_vector(const Tensor& t, std::int64_t channels) {
  return t.defined() && t.dtype() == DType::Float32 && t.dim() == 1 && t.numel() == channels &&
         t.is_contiguous();
}

// y[i] = (x[i] − mean[i])·scale[i] + shift[i], i < n (one pixel's channels in NHWC), or with
// the same mean, scale and shift for every i when `broadcast` (one channel's plane in NCHW).
template <bool broadcast>
REFOLD_TARGET_AVX2 void scale_shift(const float* x, float* y, std::int64_t n, const float* mean,
                                    const float* scale, const float* shift) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 m, s, b;
    if constexpr (broadcast) {
      m = _mm256_set1_ps(*mean), s = _mm256_set1_ps(*scale), b = _mm256_set1_ps(*shift);
    } else {
      m = _mm256_loadu_ps(mean + i), s = _mm256_loadu_ps(scale + i), b = _mm256_loadu_ps(shift + i);
    }
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), m), s, b));
  }
  for (; i < n; ++i) {
    const std::int64_t k = broadcast ? 0 : i;
    y[i] = (x[i] - mean[k]) * scale[k] + shift[k];
  }
}

// NCHW: group g of sample n is the contiguous block of its C/G channels' planes. Per (n, g):
//   μ = Σx / m,  σ² = Σ(x − μ)² / m  (m = C/G·HW, float_sums.h),
//   y = (x − μ)·(γ_c/√(σ² + ε)) + β_c  per channel c of the group.
void group_norm_nchw(const float* in, float* out, const float* gamma, const float* beta,
                     std::int64_t batch, std::int64_t channels, std::int64_t plane,
                     std::int64_t groups, double epsilon) {
  const std::int64_t per_group = channels / groups, length = per_group * plane;
  const int threads = row_kernel_threads(batch * channels * plane);
#pragma omp parallel for schedule(static) \
    num_threads(threads) if (threads > 1 && batch * groups > 1)
  for (std::int64_t job = 0; job < batch * groups; ++job) {
    const float* x = in + job * length;
    float* y = out + job * length;
    const double mean = sum(x, length) / static_cast<double>(length);
    const double variance = squared_deviation_sum(x, length, mean) / static_cast<double>(length);
    const double inv_std = 1.0 / std::sqrt(variance + epsilon);
    const auto m = static_cast<float>(mean);
    for (std::int64_t k = 0; k < per_group; ++k) {
      const std::int64_t c = job % groups * per_group + k;
      const auto s = static_cast<float>(inv_std * gamma[c]);
      scale_shift<true>(x + k * plane, y + k * plane, plane, &m, &s, beta + c);
    }
  }
}

// NHWC, one group (GroupNorm(1, C): a LayerNorm over C, H, W): sample n is one contiguous block of
// plane·C values in NHWC too, so its statistics are sums over the block, in registers, split
// over the threads (column sums would read and write an accumulator per element: 4× the time):
//   μ = Σx / m,  σ² = Σ(x − μ)² / m  (m = C·HW, float_sums.h),
// then mean[n][c] = μ and scale[n][c] = γ_c/√(σ² + ε) for the shared normalizing pass.
void one_group_statistics(const float* in, std::int64_t batch, std::int64_t channels,
                          std::int64_t plane, double epsilon, const float* gamma, int threads,
                          std::vector<float>& mean, std::vector<float>& scale) {
  const std::int64_t length = plane * channels;
  const std::int64_t parts = std::min<std::int64_t>(threads, length);
  const std::int64_t part_length = (length + parts - 1) / parts;
  std::vector<double> partial(static_cast<std::size_t>(batch * parts));
  std::vector<double> center(static_cast<std::size_t>(batch));
  const auto block_pass = [&](bool squares) {
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && batch * parts > 1)
    for (std::int64_t job = 0; job < batch * parts; ++job) {
      const std::int64_t n = job / parts, first = job % parts * part_length;
      const std::int64_t count = std::min(part_length, length - first);
      double& total = partial[static_cast<std::size_t>(job)];
      if (count <= 0) {  // more threads than whole parts: this one has none
        total = 0.0;
        continue;
      }
      const float* x = in + n * length + first;
      total = squares ? squared_deviation_sum(x, count, center[static_cast<std::size_t>(n)])
                      : sum(x, count);
    }
    for (std::int64_t n = 0; n < batch; ++n) {
      double total = 0.0;
      for (std::int64_t p = 0; p < parts; ++p)
        total += partial[static_cast<std::size_t>(n * parts + p)];
      const double average = total / static_cast<double>(length);
      if (!squares) center[static_cast<std::size_t>(n)] = average;
      for (std::int64_t c = 0; c < channels; ++c) {
        const auto i = static_cast<std::size_t>(n * channels + c);
        if (!squares)
          mean[i] = static_cast<float>(average);
        else
          scale[i] = static_cast<float>(gamma[c] / std::sqrt(average + epsilon));
      }
    }
  };
  block_pass(false);
  block_pass(true);
}

// NHWC, several groups: sample n is `plane` rows of C channels. The statistics come from
// per-channel column sums (each thread sums a slice of the rows, the slices added up), combined
// per group:
//   μ_g = Σ_{c ∈ g} Σ_p x[p][c] / m,  σ²_g = Σ_{c ∈ g} Σ_p (x[p][c] − μ_g)² / m,
// then mean[n][c] = μ_g and scale[n][c] = γ_c/√(σ²_g + ε) for each c of group g.
void grouped_statistics(const float* in, std::int64_t batch, std::int64_t channels,
                        std::int64_t plane, std::int64_t groups, double epsilon, const float* gamma,
                        int threads, std::vector<float>& mean, std::vector<float>& scale) {
  const std::int64_t per_group = channels / groups;
  const auto count = static_cast<double>(per_group * plane);
  const std::int64_t slices = std::min<std::int64_t>(threads, plane);
  const std::int64_t rows_per_slice = (plane + slices - 1) / slices;
  const auto c_size = static_cast<std::size_t>(channels);
  // Per sample: the column sums of each slice, then the per-channel center.
  std::vector<double> partial(static_cast<std::size_t>(batch * slices) * c_size);
  std::vector<double> center(static_cast<std::size_t>(batch) * c_size);
  const auto column_pass = [&](bool squares) {
    std::fill(partial.begin(), partial.end(), 0.0);
#pragma omp parallel for schedule(static) \
    num_threads(threads) if (threads > 1 && batch * slices > 1)
    for (std::int64_t job = 0; job < batch * slices; ++job) {
      const std::int64_t n = job / slices, first = job % slices * rows_per_slice;
      const std::int64_t rows = std::min(rows_per_slice, plane - first);
      if (rows <= 0) continue;
      const float* x = in + (n * plane + first) * channels;
      double* acc = partial.data() + static_cast<std::size_t>(job) * c_size;
      if (squares)
        add_squared_deviation_columns(x, rows, channels, channels,
                                      center.data() + static_cast<std::size_t>(n) * c_size, acc);
      else
        add_columns(x, rows, channels, channels, acc);
    }
    // The total of each (n, group), spread back over the group's channels as center[n][c].
    for (std::int64_t n = 0; n < batch; ++n) {
      for (std::int64_t g = 0; g < groups; ++g) {
        double total = 0.0;
        for (std::int64_t s = 0; s < slices; ++s)
          for (std::int64_t c = g * per_group; c < (g + 1) * per_group; ++c)
            total += partial[static_cast<std::size_t>((n * slices + s) * channels + c)];
        for (std::int64_t c = g * per_group; c < (g + 1) * per_group; ++c) {
          const auto i = static_cast<std::size_t>(n * channels + c);
          if (!squares) {
            center[i] = total / count;
            mean[i] = static_cast<float>(center[i]);
          } else {
            scale[i] = static_cast<float>(gamma[c] / std::sqrt(total / count + epsilon));
          }
        }
      }
    }
  };
  column_pass(false);
  column_pass(true);
}

// NHWC: the statistics (above), then y[p][c] = (x[p][c] − mean[n][c])·scale[n][c] + β_c.
void group_norm_nhwc(const float* in, float* out, const float* gamma, const float* beta,
                     std::int64_t batch, std::int64_t channels, std::int64_t plane,
                     std::int64_t groups, double epsilon) {
  const int threads = row_kernel_threads(batch * channels * plane);
  const auto c_size = static_cast<std::size_t>(channels);
  std::vector<float> mean(static_cast<std::size_t>(batch) * c_size), scale(mean.size());
  if (groups == 1)
    one_group_statistics(in, batch, channels, plane, epsilon, gamma, threads, mean, scale);
  else
    grouped_statistics(in, batch, channels, plane, groups, epsilon, gamma, threads, mean, scale);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && batch * plane > 1)
  for (std::int64_t row = 0; row < batch * plane; ++row) {
    const auto n = static_cast<std::size_t>(row / plane) * c_size;
    scale_shift<false>(in + row * channels, out + row * channels, channels, mean.data() + n,
                       scale.data() + n, beta);
  }
}

}  // namespace

Tensor group_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, std::int64_t groups,
                  double epsilon, std::string* declined) {
  if (!cpu_has_avx2_fma()) return decline(kOp, "the CPU lacks AVX2/FMA", declined);
  if (!x.defined() || x.dim() < 2) return decline(kOp, "X is not [N, C, …]", declined);
  if (x.dtype() != DType::Float32) return decline(kOp, "X is not float32", declined);
  if (x.numel() == 0) return decline(kOp, "X has no elements", declined);
  const std::int64_t channels = x.size(1);
  if (groups <= 0 || channels % groups != 0)
    return decline(kOp, "the channels do not split into the groups", declined);
  if (!is_channel_vector(scale, channels) || !is_channel_vector(bias, channels))
    return decline(kOp, "scale or bias is not one contiguous float32 value per channel", declined);
  const bool nchw = x.is_contiguous();
  const bool nhwc = !nchw && x.dim() == 4 && x.is_contiguous(MemoryFormat::ChannelsLast);
  if (!nchw && !nhwc)
    return decline(kOp, "X is neither contiguous nor 4-d channels_last", declined);

  Tensor y = empty_like(x, {DType::Float32, MemoryFormat::Preserve});
  const std::int64_t plane = x.numel() / (x.size(0) * channels);
  (nchw ? group_norm_nchw : group_norm_nhwc)(x.data<float>(), y.data<float>(), scale.data<float>(),
                                             bias.data<float>(), x.size(0), channels, plane, groups,
                                             epsilon);
  return y;
}

}  // namespace refold::native
