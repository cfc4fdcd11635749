// winograd::conv2d (conv2d.h): validation, the decline rules, the transformed-weight cache and
// the chunked three-step schedule.
#include "kernels/winograd/conv2d.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "core/check.h"
#include "kernels/lru_cache.h"
#include "kernels/reference/conv_common.h"
#include "kernels/winograd/cpu.h"
#include "kernels/winograd/gemm.h"
#include "kernels/winograd/tiles.h"
#include "refold/conv_algorithm.h"
#include "refold/threads.h"

namespace refold::winograd {

namespace {

namespace ref = reference::detail;

// Scratch per chunk of tiles (V and M, 16 positions × (C_in + C_out) floats per tile): about
// what two cores' L2 caches hold, so a chunk's three steps hit cache.
constexpr std::int64_t kChunkBytes = std::int64_t{2} << 20;

struct WeightCache {
  std::mutex mutex;
  LruCache<std::vector<float>> entries{std::size_t{512} << 20};
  CacheStats stats;
};

WeightCache& weight_cache() {
  static WeightCache cache;
  return cache;
}

std::shared_ptr<std::vector<float>> transformed_weights(const Tensor& weight) {
  CacheKey key{reinterpret_cast<std::int64_t>(weight.data_ptr()),
               static_cast<std::int64_t>(weight.version())};
  for (std::int64_t d = 0; d < 4; ++d) {
    key.push_back(weight.size(d));
    key.push_back(weight.stride(d));
  }
  WeightCache& cache = weight_cache();
  {
    const std::lock_guard lock(cache.mutex);
    if (auto found = cache.entries.find(key)) {
      ++cache.stats.hits;
      return found;
    }
  }
  // Transformed outside the lock; two threads missing at once both transform, one insert wins.
  auto packed = std::make_shared<std::vector<float>>(transform_weights(weight));
  const std::lock_guard lock(cache.mutex);
  ++cache.stats.transforms;
  cache.entries.insert(key, packed, packed->size() * sizeof(float));
  return packed;
}

// Why this kernel does not take a valid problem, or "" when it does.
std::string decline_reason(const Tensor& input, const Conv2dOptions& options,
                           const ref::Conv2dGeometry& g, const PostOps& post) {
  if (get_conv_algorithm() == ConvAlgorithm::Direct) return "conv algorithm is 'direct'";
  if (!cpu_has_avx2_fma()) return "needs AVX2 and FMA";
  if (input.dtype() != DType::Float32) return "float32 only";
  if (g.kh != 3 || g.kw != 3) return "3x3 kernels only";
  if (!(options.stride == Size2d(1)) || !(options.dilation == Size2d(1)))
    return "stride 1 and dilation 1 only";
  if (g.groups != 1) return "groups 1 only";
  if (g.in_channels % 8 != 0 || g.out_channels % 8 != 0)
    return "channel counts must be multiples of 8";
  if (g.batch == 0 || g.out_h <= 0 || g.out_w <= 0) return "empty output";
  if (!input.is_contiguous(MemoryFormat::ChannelsLast)) return "input not channels_last";
  if (post.residual.defined() && !post.residual.is_contiguous(MemoryFormat::ChannelsLast))
    return "residual not channels_last";
  return {};
}

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const Conv2dOptions& options, const PostOps& post, std::string* declined) {
  constexpr std::string_view op = "conv2d";
  const ref::Conv2dGeometry g = ref::check_conv2d(input, weight, bias, options);
  check_post_ops(op, post, {g.batch, g.out_channels, g.out_h, g.out_w}, input.dtype());
  if (std::string why = decline_reason(input, options, g, post); !why.empty()) {
    REFOLD_CHECK(declined != nullptr, "{}: winograd declined: {}", op, why);
    *declined = std::move(why);
    return {};
  }

  TileGeometry t;
  t.height = g.in_h, t.width = g.in_w, t.in_channels = g.in_channels;
  t.out_h = g.out_h, t.out_w = g.out_w, t.out_channels = g.out_channels;
  t.pad_top = g.pads.top, t.pad_left = g.pads.left;
  t.tiles_h = (g.out_h + 1) / 2, t.tiles_w = (g.out_w + 1) / 2;
  const std::int64_t tiles = g.batch * t.tiles_per_image();

  const std::shared_ptr<std::vector<float>> u = transformed_weights(weight);
  const std::vector<float> bias_values = ref::bias_values(bias, g.out_channels);
  Epilogue epilogue;
  epilogue.bias = bias_values.data();
  epilogue.residual = post.residual.defined() ? post.residual.data<float>() : nullptr;
  epilogue.activation = post.activation;
  epilogue.negative_slope = static_cast<float>(post.negative_slope);

  // Chunks of equal size (a multiple of the micro-kernel's 6 rows) within kChunkBytes.
  const std::int64_t bytes_per_tile =
      kPositions * (g.in_channels + g.out_channels) * std::int64_t{sizeof(float)};
  const std::int64_t chunks = std::max<std::int64_t>(1, tiles * bytes_per_tile / kChunkBytes);
  const std::int64_t chunk = (((tiles + chunks - 1) / chunks) + 5) / 6 * 6;
  Tensor v_buffer = empty({kPositions * chunk * g.in_channels});
  Tensor m_buffer = empty({kPositions * chunk * g.out_channels});
  float* v = v_buffer.data<float>();
  float* m = m_buffer.data<float>();
  const std::int64_t v_stride = chunk * g.in_channels;  // between positions ξ
  const std::int64_t m_stride = chunk * g.out_channels;

  Tensor output = empty({g.batch, g.out_channels, g.out_h, g.out_w}, MemoryFormat::ChannelsLast);
  const float* in = input.data<float>();
  float* out = output.data<float>();
  const float* packed = u->data();
  const std::int64_t blocks = (g.out_channels + kBlockWidth - 1) / kBlockWidth;
  const int threads = get_num_threads();

  for (std::int64_t first = 0; first < tiles; first += chunk) {
    const std::int64_t count = std::min(chunk, tiles - first);
#pragma omp parallel num_threads(threads)
    {
#pragma omp for schedule(static)
      for (std::int64_t s = 0; s < count; ++s) transform_input(in, t, first + s, s, v, v_stride);
        // One job per (position ξ, block of 16 output channels): M_ξ[:, block] = V_ξ · U_ξ[:,
        // block]
#pragma omp for schedule(static)
      for (std::int64_t job = 0; job < kPositions * blocks; ++job) {
        const std::int64_t xi = job / blocks, o0 = job % blocks * kBlockWidth;
        const std::int64_t width = std::min(kBlockWidth, g.out_channels - o0);
        gemm_block(count, g.in_channels, v + xi * v_stride, g.in_channels,
                   packed + xi * g.in_channels * g.out_channels + o0 * g.in_channels, width,
                   m + xi * m_stride + o0, g.out_channels);
      }
#pragma omp for schedule(static)
      for (std::int64_t s = 0; s < count; ++s)
        transform_output(m, m_stride, t, first + s, s, epilogue, out);
    }
  }
  return output;
}

CacheStats cache_stats() {
  WeightCache& cache = weight_cache();
  const std::lock_guard lock(cache.mutex);
  CacheStats stats = cache.stats;
  stats.weights = cache.entries.size();
  stats.bytes = cache.entries.cost();
  return stats;
}

void clear_cache() {
  WeightCache& cache = weight_cache();
  const std::lock_guard lock(cache.mutex);
  cache.entries.clear();
  cache.stats = {};
}

}  // namespace refold::winograd
