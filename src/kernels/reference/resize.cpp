// Reference Resize (ONNX, modes nearest, linear and cubic). Per dimension, each output coordinate
// is mapped to input taps once (a table); the output loop then reads taps through the input's
// strides. Nearest copies elements bit for bit (any dtype); linear computes in double.
#include <algorithm>
#include <cmath>

#include "kernels/reference/resize_taps.h"
#include "kernels/reference/tensor_ops.h"
#include "kernels/reference/typed_elements.h"

namespace refold::reference {
namespace detail {

double resize_source_coordinate(std::int64_t x, std::int64_t in, std::int64_t out, double length,
                                double scale, CoordinateMode mode) {
  const auto xd = static_cast<double>(x);
  switch (mode) {
    case CoordinateMode::HalfPixel:
      return (xd + 0.5) / scale - 0.5;
    case CoordinateMode::PytorchHalfPixel:
      return length > 1 ? (xd + 0.5) / scale - 0.5 : -0.5;
    case CoordinateMode::Asymmetric:
      return xd / scale;
    case CoordinateMode::TfHalfPixelForNn:
      return (xd + 0.5) / scale;
    case CoordinateMode::AlignCorners:
      return length > 1 ? xd * static_cast<double>(in - 1) / (length - 1) : 0.0;
    case CoordinateMode::HalfPixelSymmetric: {
      const double adjustment = static_cast<double>(out) / length;
      return static_cast<double>(in) / 2 * (1 - adjustment) + (xd + 0.5) / scale - 0.5;
    }
  }
  return 0.0;
}

std::int64_t resize_round_nearest(double x, NearestMode mode) {
  const double f = std::floor(x);
  switch (mode) {
    case NearestMode::RoundPreferFloor:
      return static_cast<std::int64_t>(x - f == 0.5 ? f : std::round(x));
    case NearestMode::RoundPreferCeil:
      return static_cast<std::int64_t>(x - f == 0.5 ? f + 1 : std::round(x));
    case NearestMode::Floor:
      return static_cast<std::int64_t>(f);
    case NearestMode::Ceil:
      return static_cast<std::int64_t>(std::ceil(x));
  }
  return 0;
}

std::vector<ResizeTap> resize_taps(std::int64_t in, std::int64_t out, double scale, double length,
                                   const ResizeParams& params) {
  std::vector<ResizeTap> taps(static_cast<std::size_t>(out));
  const double last = static_cast<double>(in - 1);
  for (std::int64_t x = 0; x < out; ++x) {
    // Coordinates are clamped to [0, in − 1]: the ONNX reference pads by edge replication.
    // NaN (0 / 0 cannot occur: scale > 0) is not expected; std::clamp keeps finite values.
    const double c = resize_source_coordinate(x, in, out, length, scale, params.coordinates);
    ResizeTap& t = taps[static_cast<std::size_t>(x)];
    if (params.mode == ResizeMode::Nearest) {
      const double r = static_cast<double>(
          resize_round_nearest(std::clamp(c, -1.0, last + 1.0), params.nearest));
      t.i0 = t.i1 = static_cast<std::int64_t>(std::clamp(r, 0.0, last));
      continue;
    }
    const double cc = std::clamp(c, 0.0, last);
    const double f = std::floor(cc);
    t.i0 = static_cast<std::int64_t>(f);
    t.i1 = std::min<std::int64_t>(t.i0 + 1, in - 1);
    t.w1 = cc - f;
    t.w0 = 1.0 - t.w1;
  }
  return taps;
}

// The ONNX reference's filtered modes. For a coordinate c, with ratio = c − ⌈c⌉ + 1 ∈ (0, 1]
// and left = ⌈c⌉ − 1 (an integer c has ratio 1: the input before it is `left`), input left + i
// has weight f(s · (i − ratio)), for the i whose weight can be non-zero: i = first … −first + 1
// with first = ⌊−support / s⌋ + 1. f is Keys' cubic (support 2) or the triangle 1 − |x| (support
// 1, antialiased linear); s = min(scale, 1) with antialias (the filter stretched by 1 / scale
// when the dimension shrinks), else 1 — which gives cubic's four taps left − 1 … left + 2.
// Indices outside [0, in) read the edge; with exclude_outside their weight is 0. With antialias
// or exclude_outside the weights are then normalized to sum 1.
FilterTaps resize_filter_taps(std::int64_t in, std::int64_t out, double scale, double length,
                              const ResizeParams& params) {
  FilterTaps taps(static_cast<std::size_t>(out));
  const bool cubic = params.mode == ResizeMode::Cubic;
  const double support = cubic ? 2 : 1;
  const double s = params.antialias ? std::min(scale, 1.0) : 1.0;
  const auto first = static_cast<std::int64_t>(std::floor(-support / s)) + 1;
  std::vector<std::pair<std::int64_t, double>> picked;
  for (std::int64_t x = 0; x < out; ++x) {
    const double c = resize_source_coordinate(x, in, out, length, scale, params.coordinates);
    const double left = std::ceil(c) - 1;
    const double ratio = c - left;
    double total = 0;
    picked.clear();
    for (std::int64_t i = first; i <= 1 - first; ++i) {
      const double d = s * (static_cast<double>(i) - ratio);
      const double f = cubic ? keys_cubic(d, params.cubic_coeff_a) : std::max(0.0, 1 - std::abs(d));
      const auto index = static_cast<std::int64_t>(left) + i;
      const bool outside = index < 0 || index >= in;
      picked.emplace_back(std::clamp<std::int64_t>(index, 0, in - 1),
                          outside && params.exclude_outside ? 0.0 : f);
      total += picked.back().second;
    }
    const bool normalize = (params.antialias || params.exclude_outside) && total != 0;
    for (auto [i, weight] : picked) {
      if (normalize) weight /= total;
      if (weight != 0) taps[static_cast<std::size_t>(x)].emplace_back(i, weight);
    }
  }
  return taps;
}

bool resize_antialias_stretches(const ResizeParams& params, const std::vector<double>& scales) {
  return params.antialias && params.mode != ResizeMode::Nearest &&
         std::any_of(scales.begin(), scales.end(), [](double s) { return s < 1; });
}

bool resize_uses_filter(const ResizeParams& params, const std::vector<double>& scales) {
  return params.mode == ResizeMode::Cubic || resize_antialias_stretches(params, scales);
}

}  // namespace detail

namespace {

using detail::FilterTaps;
using detail::resize_source_coordinate;
using Tap = detail::ResizeTap;

// out[idx] = Σ over one tap per dimension of Π weights · in[taps], in double, rounded once.
void resize_filtered(const Tensor& input, Tensor& output, const std::vector<double>& scales,
                     const std::vector<double>& lengths, const ResizeParams& params) {
  const std::size_t rank = static_cast<std::size_t>(input.dim());
  std::vector<FilterTaps> taps(rank);
  for (std::size_t d = 0; d < rank; ++d)
    taps[d] = detail::resize_filter_taps(input.sizes()[d], output.sizes()[d], scales[d], lengths[d],
                                         params);
  const FloatReader in(input);
  const FloatWriter out(output);
  Shape counts(rank);
  for_each_index(output.sizes(), [&](const Shape& idx) {
    for (std::size_t d = 0; d < rank; ++d)
      counts[d] = static_cast<std::int64_t>(taps[d][static_cast<std::size_t>(idx[d])].size());
    double value = 0;
    for_each_index(counts, [&](const Shape& t) {
      double w = 1;
      std::int64_t off = 0;
      for (std::size_t d = 0; d < rank; ++d) {
        const auto& [i, weight] =
            taps[d][static_cast<std::size_t>(idx[d])][static_cast<std::size_t>(t[d])];
        w *= weight;
        off += i * in.stride(d);
      }
      value += w * static_cast<double>(in.at_offset(off));
    });
    out.set_offset(offset_of(idx, out.strides()), round_to_dtype(value, input.dtype()));
  });
}

}  // namespace

Tensor resize(const Tensor& input, const Shape& out_sizes, const std::vector<double>& scales,
              const std::vector<double>& lengths, const ResizeParams& params) {
  REFOLD_CHECK(input.defined(), "resize: input is undefined");
  const auto rank = static_cast<std::size_t>(input.dim());
  REFOLD_CHECK(out_sizes.size() == rank && scales.size() == rank && lengths.size() == rank,
               "resize: {} output sizes, {} scales and {} lengths for a {}-d input",
               out_sizes.size(), scales.size(), lengths.size(), rank);
  REFOLD_CHECK(params.mode == ResizeMode::Nearest || is_floating(input.dtype()),
               "resize: linear and cubic modes need a float input, got {}",
               dtype_name(input.dtype()));
  for (std::size_t d = 0; d < rank; ++d) {
    REFOLD_CHECK(std::isfinite(scales[d]) && scales[d] > 0,
                 "resize: scale {} of dimension {} must be positive and finite", scales[d], d);
    REFOLD_CHECK(out_sizes[d] >= 0, "resize: negative output size {} in dimension {}", out_sizes[d],
                 d);
    REFOLD_CHECK(input.sizes()[d] > 0 || out_sizes[d] == 0,
                 "resize: dimension {} has size 0 and cannot be resized to {}", d, out_sizes[d]);
  }
  checked_mul(checked_numel(out_sizes, "resize"), static_cast<std::int64_t>(input.element_size()),
              "resize");
  const bool channels_last =
      rank == 4 && input.suggest_memory_format() == MemoryFormat::ChannelsLast;
  Tensor output = empty(out_sizes, {input.dtype(), channels_last ? MemoryFormat::ChannelsLast
                                                                 : MemoryFormat::Contiguous});
  if (output.numel() == 0) return output;
  if (detail::resize_uses_filter(params, scales)) {
    resize_filtered(input, output, scales, lengths, params);
    return output;
  }

  std::vector<std::vector<Tap>> taps(rank);
  std::vector<std::size_t> blended;  // dimensions where some output mixes two inputs
  for (std::size_t d = 0; d < rank; ++d) {
    taps[d] = detail::resize_taps(input.sizes()[d], out_sizes[d], scales[d], lengths[d], params);
    for (const Tap& t : taps[d]) {
      if (t.w1 == 0) continue;
      blended.push_back(d);
      break;
    }
  }
  const Shape& is = input.strides();
  const Shape& os = output.strides();
  // Rows along the dimension the output stores innermost (W in NCHW, C in NHWC); every other
  // dimension's input offset is summed once per row.
  std::size_t inner = rank - 1;
  for (std::size_t d = 0; d < rank; ++d)
    if (os[d] < os[inner] && out_sizes[d] > 1) inner = d;
  const std::int64_t n_inner = out_sizes[inner];
  const std::vector<Tap>& inner_taps = taps[inner];
  Shape rows = out_sizes;
  rows[inner] = 1;
  std::vector<std::int64_t> inner_offsets;  // input offset of each inner tap i0
  for (const Tap& t : inner_taps) inner_offsets.push_back(t.i0 * is[inner]);
  if (blended.empty()) {  // nearest, or linear landing on input samples: a gather
    detail::visit_storage_type(input.dtype(), [&]<typename T>(T) {
      const T* in = static_cast<const T*>(input.data_ptr());
      T* out = static_cast<T*>(output.data_ptr());
      for_each_index(rows, [&](const Shape& idx) {
        std::int64_t src = 0;
        for (std::size_t d = 0; d < rank; ++d)
          if (d != inner) src += taps[d][static_cast<std::size_t>(idx[d])].i0 * is[d];
        T* dst = out + detail::offset_in(idx, os);
        const T* row = in + src;
        const std::int64_t step = os[inner];
        for (std::int64_t k = 0; k < n_inner; ++k)
          dst[k * step] = row[inner_offsets[static_cast<std::size_t>(k)]];
      });
    });
    return output;
  }
  // n-linear: Σ over the 2^m corners of the m blended dimensions of Π weights · input, in one
  // canonical order (corner bits and weight products in dimension order), so NCHW and NHWC give
  // bit-identical results: with weights like 0.25/0.75 the exact value often sits on a float
  // rounding tie, where the last bit of the double sum decides.
  const void* in = input.data_ptr();
  void* out = output.data_ptr();
  const DType dtype = input.dtype();
  const std::size_t corners = std::size_t{1} << blended.size();
  // Fast path, same order: when the inner dimension is not blended or is the last blended one,
  // the canonical sum is Σ over the outer corners (inner tap 0), then again (inner tap 1).
  if (blended.back() == inner || !std::count(blended.begin(), blended.end(), inner)) {
    const bool inner_blended = blended.back() == inner;
    const std::vector<std::size_t> outer(blended.begin(), blended.end() - (inner_blended ? 1 : 0));
    std::vector<std::pair<std::int64_t, double>> terms(std::size_t{1} << outer.size());
    for_each_index(rows, [&](const Shape& idx) {
      std::int64_t base = 0;
      for (std::size_t d = 0; d < rank; ++d)
        if (d != inner) base += taps[d][static_cast<std::size_t>(idx[d])].i0 * is[d];
      for (std::size_t mask = 0; mask < terms.size(); ++mask) {
        double w = 1;
        std::int64_t off = base;
        for (std::size_t k = 0; k < outer.size(); ++k) {
          const Tap& t = taps[outer[k]][static_cast<std::size_t>(idx[outer[k]])];
          w *= (mask >> k) & 1 ? t.w1 : t.w0;
          if ((mask >> k) & 1) off += (t.i1 - t.i0) * is[outer[k]];
        }
        terms[mask] = {off, w};
      }
      const std::int64_t dst = detail::offset_in(idx, os);
      // float32 read directly; bfloat16 through load_as_float.
      const float* in_f32 = dtype == DType::Float32 ? static_cast<const float*>(in) : nullptr;
      auto load = [&](std::int64_t o) -> double {
        return in_f32 ? in_f32[o] : load_as_float(in, dtype, o);
      };
      for (std::int64_t x = 0; x < n_inner; ++x) {
        const Tap& it = inner_taps[static_cast<std::size_t>(x)];
        double value = 0;
        for (int side = 0; side < (inner_blended ? 2 : 1); ++side) {
          const double wi = side == 0 ? it.w0 : it.w1;
          const std::int64_t oi = (side == 0 ? it.i0 : it.i1) * is[inner];
          for (const auto& [off, w] : terms) {
            const double ww = inner_blended ? w * wi : w;
            // A zero weight must not turn an Inf/NaN neighbour into NaN.
            if (ww != 0) value += ww * load(off + oi);
          }
        }
        const std::int64_t o = dst + x * os[inner];
        if (in_f32)
          static_cast<float*>(out)[o] = static_cast<float>(value);
        else
          store_from_float(out, dtype, o, round_to_dtype(value, dtype));
      }
    });
    return output;
  }
  std::vector<const Tap*> row_taps(blended.size());
  for_each_index(rows, [&](const Shape& idx) {
    std::int64_t base = 0;
    for (std::size_t d = 0; d < rank; ++d)
      if (d != inner) base += taps[d][static_cast<std::size_t>(idx[d])].i0 * is[d];
    for (std::size_t k = 0; k < blended.size(); ++k)
      if (blended[k] != inner)
        row_taps[k] = &taps[blended[k]][static_cast<std::size_t>(idx[blended[k]])];
    const std::int64_t dst = detail::offset_in(idx, os);
    for (std::int64_t x = 0; x < n_inner; ++x) {
      const Tap& it = inner_taps[static_cast<std::size_t>(x)];
      for (std::size_t k = 0; k < blended.size(); ++k)
        if (blended[k] == inner) row_taps[k] = &it;
      double value = 0;
      for (std::size_t mask = 0; mask < corners; ++mask) {
        double w = 1;
        std::int64_t off = base + it.i0 * is[inner];
        for (std::size_t k = 0; k < blended.size(); ++k) {
          const Tap& t = *row_taps[k];
          if ((mask >> k) & 1) {
            w *= t.w1;
            off += (t.i1 - t.i0) * is[blended[k]];
          } else {
            w *= t.w0;
          }
        }
        // A zero weight must not turn an Inf/NaN neighbour into NaN.
        if (w != 0) value += w * static_cast<double>(load_as_float(in, dtype, off));
      }
      store_from_float(out, dtype, dst + x * os[inner], round_to_dtype(value, dtype));
    }
  });
  return output;
}

}  // namespace refold::reference
