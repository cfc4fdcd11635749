// native::ChannelRouter (channel_route.h): segments cut once, then one pass per call.
#include "kernels/native/channel_route.h"

#include <immintrin.h>

#include <cstring>

#include "core/check.h"
#include "core/cpu_features.h"
#include "kernels/native/cpu.h"
#include "kernels/native/row_threads.h"

namespace refold::native {

namespace {

using Segment = ChannelRouter::Segment;

// Output `route` cut into segments, greedily from its first channel: a copy where the next
// channel continues the run, else two interleaved runs where at least two pairs continue both,
// else a copy of one channel.
std::vector<Segment> cut(const std::vector<ChannelSource>& route) {
  const auto size = static_cast<std::int64_t>(route.size());
  auto at = [&](std::int64_t c) { return route[static_cast<std::size_t>(c)]; };
  auto follows = [](ChannelSource s, ChannelSource start, std::int64_t i) {
    return s.input == start.input && s.channel == start.channel + i;
  };
  std::vector<Segment> segments;
  for (std::int64_t c = 0; c < size;) {
    std::int64_t run = 1;
    while (c + run < size && follows(at(c + run), at(c), run)) ++run;
    std::int64_t pairs = 0;
    if (run == 1) {
      while (c + 2 * pairs + 1 < size && follows(at(c + 2 * pairs), at(c), pairs) &&
             follows(at(c + 2 * pairs + 1), at(c + 1), pairs))
        ++pairs;
    }
    if (pairs >= 2) {
      segments.push_back({c, pairs, 2, {at(c), at(c + 1)}});
      c += 2 * pairs;
    } else {
      segments.push_back({c, run, 1, {at(c), {}}});
      c += run;
    }
  }
  return segments;
}

// y[2i] = a[i], y[2i + 1] = b[i] for i < n.
inline void interleave_scalar(float* y, const float* a, const float* b, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    y[2 * i] = a[i];
    y[2 * i + 1] = b[i];
  }
}

#if REFOLD_HAVE_X86_KERNELS
REFOLD_TARGET_AVX2 void interleave_avx2(float* y, const float* a, const float* b, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 va = _mm256_loadu_ps(a + i), vb = _mm256_loadu_ps(b + i);
    const __m256 low = _mm256_unpacklo_ps(va, vb);   // a0 b0 a1 b1 | a4 b4 a5 b5
    const __m256 high = _mm256_unpackhi_ps(va, vb);  // a2 b2 a3 b3 | a6 b6 a7 b7
    _mm256_storeu_ps(y + 2 * i, _mm256_permute2f128_ps(low, high, 0x20));
    _mm256_storeu_ps(y + 2 * i + 8, _mm256_permute2f128_ps(low, high, 0x31));
  }
  interleave_scalar(y + 2 * i, a + i, b + i, n - i);
}
#endif

using Interleave = void (*)(float*, const float*, const float*, std::int64_t);

Interleave interleave_kernel() {
#if REFOLD_HAVE_X86_KERNELS
  if (cpu_has_avx2_fma()) return interleave_avx2;
#endif
  return interleave_scalar;
}

}  // namespace

ChannelRouter::ChannelRouter(ChannelRoutes routes) : routes_(std::move(routes)) {
  for (std::size_t j = 0; j < routes_.size(); ++j) {
    REFOLD_CHECK(!routes_[j].empty(), "ChannelRoute: output {} has no channels", j);
    segments_.push_back(cut(routes_[j]));
  }
}

std::vector<Tensor> ChannelRouter::run(const std::vector<Tensor>& given,
                                       MemoryFormat format) const {
  std::vector<Tensor> inputs;
  for (const Tensor& x : given) inputs.push_back(x.contiguous(format));
  const Tensor& first = inputs.front();
  const std::int64_t batch = first.size(0), plane = first.size(2) * first.size(3);
  std::vector<Tensor> outputs;
  std::int64_t elements = 0;
  for (const auto& route : routes_) {
    outputs.push_back(empty(
        {batch, static_cast<std::int64_t>(route.size()), first.size(2), first.size(3)}, format));
    elements += outputs.back().numel();
  }
  const int threads = copy_kernel_threads(elements);
  std::vector<const float*> x;
  std::vector<std::int64_t> x_channels;
  for (const Tensor& t : inputs) x.push_back(t.data<float>()), x_channels.push_back(t.size(1));
  std::vector<float*> y;
  for (Tensor& t : outputs) y.push_back(t.data<float>());
  if (format == MemoryFormat::ChannelsLast) {
    // Each pixel's channels are a row of every tensor: the segments per pixel.
    const Interleave interleave = interleave_kernel();
    const std::int64_t pixels = batch * plane;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (std::int64_t p = 0; p < pixels; ++p) {
      for (std::size_t j = 0; j < outputs.size(); ++j) {
        float* to = y[j] + p * static_cast<std::int64_t>(routes_[j].size());
        auto row = [&](const ChannelSource& s) {
          const auto k = static_cast<std::size_t>(s.input);
          return x[k] + p * x_channels[k] + s.channel;
        };
        for (const Segment& s : segments_[j]) {
          if (s.lanes == 1) {
            std::memcpy(to + s.first, row(s.from[0]),
                        static_cast<std::size_t>(s.length) * sizeof(float));
          } else {
            interleave(to + s.first, row(s.from[0]), row(s.from[1]), s.length);
          }
        }
      }
    }
    return outputs;
  }
  // NCHW: each output channel is a plane of one input channel.
  for (std::size_t j = 0; j < outputs.size(); ++j) {
    const std::int64_t width = outputs[j].size(1);
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (std::int64_t nc = 0; nc < batch * width; ++nc) {
      const std::int64_t n = nc / width, c = nc % width;
      const ChannelSource s = routes_[j][static_cast<std::size_t>(c)];
      const auto k = static_cast<std::size_t>(s.input);
      std::memcpy(y[j] + nc * plane, x[k] + (n * x_channels[k] + s.channel) * plane,
                  static_cast<std::size_t>(plane) * sizeof(float));
    }
  }
  return outputs;
}

}  // namespace refold::native
