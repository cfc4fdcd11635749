// The algebra of conv maps; the math of each operation is in conv_map.h.
#include "reparam/conv_map.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "core/check.h"
#include "core/element_access.h"
#include "refold/error.h"

namespace refold::reparam {
namespace {

std::size_t size_of(std::int64_t i) { return static_cast<std::size_t>(i); }

ConvMap zeros_like_geometry(const ConvMap& like, std::int64_t groups, Size2d kernel) {
  ConvMap m = like;
  m.groups = groups;
  m.kernel = kernel;
  m.weight.assign(size_of(m.out_channels * (m.in_channels / groups) * kernel.h * kernel.w), 0.0);
  return m;
}

// gcd over the values that are > 0; 1 when there are none.
std::int64_t gcd_of(std::initializer_list<std::int64_t> values) {
  std::int64_t g = 0;
  for (std::int64_t v : values)
    if (v > 0) g = std::gcd(g, v);
  return g == 0 ? 1 : g;
}

// A depthwise 1×1 stride-1 map: a per-channel scale, whatever its pads.
bool is_channel_scale(const ConvMap& m) {
  return m.pointwise() && m.groups == m.in_channels && m.in_channels == m.out_channels;
}

// Where two maps' taps land on one axis of their sum: the merged top pad, dilation and kernel
// size, and each map's offset on the merged grid.
struct AxisPlan {
  std::int64_t pad_begin = 0, pad_end = 0, dilation = 1, kernel = 1, offset_a = 0, offset_b = 0;
};

AxisPlan plan_axis(const char* axis, std::int64_t ka, std::int64_t da, std::int64_t pa0,
                   std::int64_t pa1, std::int64_t kb, std::int64_t db, std::int64_t pb0,
                   std::int64_t pb1) {
  // The output size is ⌊(H + P0 + P1 − D·(K − 1) − 1)/S⌋ + 1: equal for every H iff the
  // extents agree.
  const std::int64_t extent_a = pa0 + pa1 - da * (ka - 1), extent_b = pb0 + pb1 - db * (kb - 1);
  if (extent_a != extent_b)
    fail(
        "branch mismatch: the branches' outputs differ in {} (a {}-tap window with pads {}, {} "
        "vs a {}-tap window with pads {}, {})",
        axis, ka, pa0, pa1, kb, pb0, pb1);
  AxisPlan p;
  p.pad_begin = std::max(pa0, pb0);
  p.offset_a = p.pad_begin - pa0;
  p.offset_b = p.pad_begin - pb0;
  p.dilation = gcd_of({ka > 1 ? da : 0, kb > 1 ? db : 0, p.offset_a, p.offset_b});
  p.kernel = std::max(p.offset_a + (ka - 1) * da, p.offset_b + (kb - 1) * db) / p.dilation + 1;
  p.pad_end = extent_a + p.dilation * (p.kernel - 1) - p.pad_begin;
  return p;
}

// Adds `src` into `dst` (same channels and groups) with src's tap (i, j) at dst's
// ((off_h + i·D_src)/D_dst, (off_w + j·D_src)/D_dst) per axis.
void accumulate(ConvMap& dst, const ConvMap& src, std::int64_t off_h, std::int64_t off_w) {
  const std::int64_t per_group = dst.in_channels / dst.groups;
  for (std::int64_t o = 0; o < dst.out_channels; ++o)
    for (std::int64_t c = 0; c < per_group; ++c)
      for (std::int64_t i = 0; i < src.kernel.h; ++i)
        for (std::int64_t j = 0; j < src.kernel.w; ++j)
          dst.at(o, c, (off_h + i * src.dilation.h) / dst.dilation.h,
                 (off_w + j * src.dilation.w) / dst.dilation.w) += src.at(o, c, i, j);
}

}  // namespace

std::size_t ConvMap::index(std::int64_t o, std::int64_t c, std::int64_t i, std::int64_t j) const {
  return size_of(((o * (in_channels / groups) + c) * kernel.h + i) * kernel.w + j);
}
double& ConvMap::at(std::int64_t o, std::int64_t c, std::int64_t i, std::int64_t j) {
  return weight[index(o, c, i, j)];
}
double ConvMap::at(std::int64_t o, std::int64_t c, std::int64_t i, std::int64_t j) const {
  return weight[index(o, c, i, j)];
}

ConvMap identity_map(std::int64_t channels) {
  ConvMap m;
  m.out_channels = m.in_channels = m.groups = channels;
  m.weight.assign(size_of(channels), 1.0);
  return m;
}

ConvMap conv_map(const ConvKernel& kernel, Size2d stride, const Pads2d& pads, Size2d dilation) {
  ConvMap m;
  m.out_channels = kernel.out_channels();
  m.in_channels = kernel.in_channels();
  m.groups = kernel.groups;
  m.kernel = kernel.kernel_size();
  m.stride = stride;
  m.dilation = dilation;
  m.pads = pads;
  const std::vector<float> w = kernel.weight.to_vector();
  m.weight.assign(w.begin(), w.end());
  return m;
}

ConvMap avg_pool_map(std::int64_t channels, Size2d kernel, Size2d stride, const Pads2d& pads) {
  ConvMap m;
  m.out_channels = m.in_channels = m.groups = channels;
  m.kernel = kernel;
  m.stride = stride;
  m.pads = pads;
  m.weight.assign(size_of(channels * kernel.h * kernel.w),
                  1.0 / static_cast<double>(kernel.h * kernel.w));
  return m;
}

ConvMap padded(const ConvMap& map, const Pads2d& pads) {
  ConvMap m = map;
  const auto side = [&](const char* name, std::int64_t q, std::int64_t& pad, std::int64_t stride) {
    if (q > 0 && (map.kernel != Size2d(1, 1) || pad < 0))
      fail(
          "branch mismatch: zeros padded on the {} of a {} would not be what the merged conv "
          "reads there",
          name, pad < 0 ? "crop" : fmt::format("{}x{} window", map.kernel.h, map.kernel.w));
    pad += q * stride;
  };
  side("top", pads.top, m.pads.top, map.stride.h);
  side("left", pads.left, m.pads.left, map.stride.w);
  side("bottom", pads.bottom, m.pads.bottom, map.stride.h);
  side("right", pads.right, m.pads.right, map.stride.w);
  return m;
}

ConvMap scaled(const ConvMap& map, const std::vector<double>& scale) {
  REFOLD_CHECK(static_cast<std::int64_t>(scale.size()) == map.out_channels,
               "scaled: {} scales for {} channels", scale.size(), map.out_channels);
  ConvMap m = map;
  const std::size_t per_out = m.weight.size() / size_of(m.out_channels);
  for (std::size_t k = 0; k < m.weight.size(); ++k) m.weight[k] *= scale[k / per_out];
  return m;
}

ConvMap regrouped(const ConvMap& map, std::int64_t groups) {
  if (groups == map.groups) return map;
  REFOLD_CHECK(groups > 0 && map.groups % groups == 0, "regrouped: {} groups from {}", groups,
               map.groups);
  ConvMap m = zeros_like_geometry(map, groups, map.kernel);
  const std::int64_t old_in = map.in_channels / map.groups, new_in = map.in_channels / groups;
  const std::int64_t old_out = map.out_channels / map.groups, new_out = map.out_channels / groups;
  for (std::int64_t o = 0; o < map.out_channels; ++o) {
    const std::int64_t first = (o / old_out) * old_in - (o / new_out) * new_in;
    for (std::int64_t c = 0; c < old_in; ++c)
      for (std::int64_t i = 0; i < map.kernel.h; ++i)
        for (std::int64_t j = 0; j < map.kernel.w; ++j)
          m.at(o, first + c, i, j) = map.at(o, c, i, j);
  }
  return m;
}

ConvMap compact_groups(const ConvMap& map) {
  const std::int64_t limit = std::gcd(map.in_channels, map.out_channels);
  for (std::int64_t g = limit; g > map.groups; --g) {
    if (limit % g != 0 || g % map.groups != 0) continue;
    // Block-diagonal with g blocks: output o reads only input channels of block o / (O/g).
    const std::int64_t in_per = map.in_channels / map.groups,
                       old_out = map.out_channels / map.groups;
    const std::int64_t new_in = map.in_channels / g, new_out = map.out_channels / g;
    bool block = true;
    for (std::int64_t o = 0; o < map.out_channels && block; ++o) {
      const std::int64_t base = (o / old_out) * in_per, lo = (o / new_out) * new_in;
      for (std::int64_t c = 0; c < in_per && block; ++c) {
        if (base + c >= lo && base + c < lo + new_in) continue;
        for (std::int64_t i = 0; i < map.kernel.h && block; ++i)
          for (std::int64_t j = 0; j < map.kernel.w && block; ++j)
            block = map.at(o, c, i, j) == 0.0;
      }
    }
    if (!block) continue;
    ConvMap m = zeros_like_geometry(map, g, map.kernel);
    for (std::int64_t o = 0; o < map.out_channels; ++o) {
      const std::int64_t shift = (o / new_out) * new_in - (o / old_out) * in_per;
      for (std::int64_t c = 0; c < new_in; ++c)
        for (std::int64_t i = 0; i < map.kernel.h; ++i)
          for (std::int64_t j = 0; j < map.kernel.w; ++j)
            m.at(o, c, i, j) = map.at(o, c + shift, i, j);
    }
    return m;
  }
  return map;
}

namespace {

// The groups, dilation and kernel of the general composition b ∘ a (then(), below).
struct Composed {
  std::int64_t groups;
  Size2d dilation = 1, kernel = 1;
};

Composed composed(const ConvMap& a, const ConvMap& b) {
  // Each in its own groups, so that a depthwise map is not expanded: output o reads the mids
  // of its group in `b`, each mid m the inputs of its group in `a`; both structures nest in
  // gcd(G_a, G_b) blocks, the result's groups.
  Composed c;
  c.groups = std::gcd(a.groups, b.groups);
  // Tap ai of a and tap bi of b read x at ai·D + bi·d2·S (per axis), on the grid
  // gcd(D, d2·S) of the taps that exist.
  const std::int64_t step_h = b.dilation.h * a.stride.h, step_w = b.dilation.w * a.stride.w;
  c.dilation = {gcd_of({a.kernel.h > 1 ? a.dilation.h : 0, b.kernel.h > 1 ? step_h : 0}),
                gcd_of({a.kernel.w > 1 ? a.dilation.w : 0, b.kernel.w > 1 ? step_w : 0})};
  c.kernel = {((a.kernel.h - 1) * a.dilation.h + (b.kernel.h - 1) * step_h) / c.dilation.h + 1,
              ((a.kernel.w - 1) * a.dilation.w + (b.kernel.w - 1) * step_w) / c.dilation.w + 1};
  return c;
}

}  // namespace

double then_macs(const ConvMap& first, const ConvMap& second) {
  // The two shortcuts of then(): a per-channel scale keeps the other map's geometry (padding
  // changes no weight count).
  if (is_channel_scale(second) && second.stride == Size2d(1, 1)) return first.macs();
  if (is_channel_scale(first) && first.stride == Size2d(1, 1)) return second.macs();
  const Composed c = composed(first, second);
  return static_cast<double>(second.out_channels) *
         static_cast<double>(first.in_channels / c.groups) *
         static_cast<double>(c.kernel.h * c.kernel.w);
}

ConvMap then(const ConvMap& first, const ConvMap& second) {
  REFOLD_CHECK(first.out_channels == second.in_channels,
               "then: {} channels into a map that reads {}", first.out_channels,
               second.in_channels);
  const ConvMap f = second.pads == Pads2d{} ? first : padded(first, second.pads);
  if (is_channel_scale(second) && second.stride == Size2d(1, 1)) {
    return scaled(f, second.weight);  // depthwise 1×1: its weights are the per-channel scales
  }
  ConvMap out;
  out.out_channels = second.out_channels;
  out.in_channels = f.in_channels;
  out.stride = {f.stride.h * second.stride.h, f.stride.w * second.stride.w};
  out.pads = f.pads;
  if (is_channel_scale(f) && f.stride == Size2d(1, 1)) {
    // A per-channel scale then a conv: the conv's weight with its input channels scaled.
    out.groups = second.groups;
    out.kernel = second.kernel;
    out.dilation = second.dilation;
    out.weight = second.weight;
    const std::int64_t per = second.in_channels / second.groups;
    const std::int64_t out_per = second.out_channels / second.groups;
    for (std::int64_t o = 0; o < out.out_channels; ++o)
      for (std::int64_t c = 0; c < per; ++c)
        for (std::int64_t i = 0; i < out.kernel.h; ++i)
          for (std::int64_t j = 0; j < out.kernel.w; ++j)
            out.at(o, c, i, j) *= f.weight[size_of((o / out_per) * per + c)];
    return out;
  }
  const ConvMap& a = f;
  const ConvMap& b = second;
  const Composed shape = composed(a, b);
  const std::int64_t g = shape.groups;
  const Size2d kernel = shape.kernel;
  out.dilation = shape.dilation;
  const std::int64_t step_h = b.dilation.h * a.stride.h, step_w = b.dilation.w * a.stride.w;
  out = zeros_like_geometry(out, g, kernel);
  const std::int64_t b_mid = b.in_channels / b.groups, b_out = b.out_channels / b.groups;
  const std::int64_t a_in = a.in_channels / a.groups, a_out = a.out_channels / a.groups;
  const std::int64_t out_in = out.in_channels / g, out_out = out.out_channels / g;
  // Tap (ai, bi) lands on result tap ai·ra + bi·rb (per axis): the dilation divides both steps
  // of the taps that exist, and a 1-tap axis contributes 0.
  const auto ratio = [](std::int64_t taps, std::int64_t step, std::int64_t d) {
    return taps > 1 ? step / d : 0;
  };
  const std::int64_t ra_h = ratio(a.kernel.h, a.dilation.h, out.dilation.h);
  const std::int64_t ra_w = ratio(a.kernel.w, a.dilation.w, out.dilation.w);
  const std::int64_t rb_h = ratio(b.kernel.h, step_h, out.dilation.h);
  const std::int64_t rb_w = ratio(b.kernel.w, step_w, out.dilation.w);
  const std::int64_t a_taps = a.kernel.h * a.kernel.w, out_taps = kernel.h * kernel.w;
  // W_out[o, c0 + c, tap] += W_b[o, ml, bi, bj] · W_a[m, c, ai, aj]. Each result element sums
  // its terms in the order of (ml, bi, bj, ai, aj); the input channel c, which only picks the
  // element, is the innermost loop (an axpy over c, contiguous for 1×1 maps).
  for (std::int64_t o = 0; o < out.out_channels; ++o) {
    const std::int64_t first_in = (o / out_out) * out_in;  // the result group's first input
    double* out_o = out.weight.data() + out.index(o, 0, 0, 0);
    for (std::int64_t ml = 0; ml < b_mid; ++ml) {
      const std::int64_t m = (o / b_out) * b_mid + ml;
      const std::int64_t c0 = (m / a_out) * a_in - first_in;  // a's inputs, result-local
      const double* a_m = a.weight.data() + a.index(m, 0, 0, 0);
      for (std::int64_t bi = 0; bi < b.kernel.h; ++bi)
        for (std::int64_t bj = 0; bj < b.kernel.w; ++bj) {
          const double w2 = b.at(o, ml, bi, bj);
          if (w2 == 0.0) continue;
          for (std::int64_t ai = 0; ai < a.kernel.h; ++ai)
            for (std::int64_t aj = 0; aj < a.kernel.w; ++aj) {
              const double* a_tap = a_m + ai * a.kernel.w + aj;
              double* out_tap = out_o + c0 * out_taps + (bi * rb_h + ai * ra_h) * kernel.w +
                                bj * rb_w + aj * ra_w;
              for (std::int64_t c = 0; c < a_in; ++c)
                out_tap[c * out_taps] += w2 * a_tap[c * a_taps];
            }
        }
    }
  }
  return out;
}

ConvMap plus(const ConvMap& a, const ConvMap& b) {
  REFOLD_CHECK(a.in_channels == b.in_channels && a.out_channels == b.out_channels,
               "plus: maps {} -> {} and {} -> {} channels", a.in_channels, a.out_channels,
               b.in_channels, b.out_channels);
  if (a.stride != b.stride)
    fail("branch mismatch: stride {}x{} vs {}x{}", a.stride.h, a.stride.w, b.stride.h, b.stride.w);
  const AxisPlan h = plan_axis("height", a.kernel.h, a.dilation.h, a.pads.top, a.pads.bottom,
                               b.kernel.h, b.dilation.h, b.pads.top, b.pads.bottom);
  const AxisPlan w = plan_axis("width", a.kernel.w, a.dilation.w, a.pads.left, a.pads.right,
                               b.kernel.w, b.dilation.w, b.pads.left, b.pads.right);
  const std::int64_t g = std::gcd(a.groups, b.groups);
  ConvMap out = zeros_like_geometry(a, g, {h.kernel, w.kernel});
  out.dilation = {h.dilation, w.dilation};
  out.pads = {h.pad_begin, w.pad_begin, h.pad_end, w.pad_end};
  accumulate(out, regrouped(a, g), h.offset_a, w.offset_a);
  accumulate(out, regrouped(b, g), h.offset_b, w.offset_b);
  return out;
}

std::vector<double> apply_to_constant(const ConvMap& map, const std::vector<double>& value) {
  REFOLD_CHECK(static_cast<std::int64_t>(value.size()) == map.in_channels,
               "apply_to_constant: {} values for {} channels", value.size(), map.in_channels);
  std::vector<double> out(size_of(map.out_channels), 0.0);
  const std::int64_t per = map.in_channels / map.groups, out_per = map.out_channels / map.groups;
  for (std::int64_t o = 0; o < map.out_channels; ++o)
    for (std::int64_t c = 0; c < per; ++c) {
      const double v = value[size_of((o / out_per) * per + c)];
      if (v == 0.0) continue;
      for (std::int64_t i = 0; i < map.kernel.h; ++i)
        for (std::int64_t j = 0; j < map.kernel.w; ++j) out[size_of(o)] += map.at(o, c, i, j) * v;
    }
  return out;
}

ConvKernel to_kernel(const ConvMap& map, const std::vector<double>& bias, DType dtype) {
  const auto rounded = [&](const std::vector<double>& v) {
    std::vector<float> r(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) r[i] = round_to_dtype(v[i], dtype);
    return r;
  };
  ConvKernel k;
  k.groups = map.groups;
  k.weight = from_values(
      rounded(map.weight),
      {map.out_channels, map.in_channels / map.groups, map.kernel.h, map.kernel.w}, {dtype});
  if (!bias.empty()) k.bias = from_values(rounded(bias), {map.out_channels}, {dtype});
  return k;
}

std::string geometry_text(const ConvMap& map) {
  return fmt::format("{}x{} stride {}x{} pads ({}, {}, {}, {}) dilation {}x{} groups {}",
                     map.kernel.h, map.kernel.w, map.stride.h, map.stride.w, map.pads.top,
                     map.pads.left, map.pads.bottom, map.pads.right, map.dilation.h, map.dilation.w,
                     map.groups);
}

}  // namespace refold::reparam
