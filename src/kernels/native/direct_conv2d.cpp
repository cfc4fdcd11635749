// native::direct_conv2d (direct_conv2d.h): validation, declines, weight packing, the job loop.
#include "kernels/native/direct_conv2d.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include <fmt/format.h>

#include "core/check.h"
#include "kernels/native/conv_rules.h"
#include "kernels/native/cpu.h"
#include "kernels/native/micro_kernel.h"
#include "kernels/native/weight_cache.h"
#include "kernels/reference/conv_common.h"
#include "refold/conv_algorithm.h"
#include "refold/threads.h"

namespace refold::native {

namespace {

namespace ref = reference::detail;

// Packed weights up to this size run panel-major (below): half of Zen 2/3's 512 KiB L2.
constexpr std::int64_t kPanelMajorWeightBytes = 256 * 1024;

// w[o][i][ky][kx] → block [o0, o0 + width) at o0·taps·ins, stored [tap][ins][width], where ins
// is a group's input channels (weight.size(1)) and blocks are `block` wide (the last one of
// the weight narrower if it must be); a group's outputs are whole blocks.
std::vector<float> pack_weights(const Tensor& weight, std::int64_t block) {
  const std::int64_t outs = weight.size(0), ins = weight.size(1);
  const std::int64_t taps = weight.size(2) * weight.size(3);
  const std::vector<float> w = weight.to_vector();
  std::vector<float> packed(w.size());
  for (std::int64_t o = 0; o < outs; ++o) {
    const std::int64_t o0 = o / block * block;
    const std::int64_t width = std::min(block, outs - o0);
    for (std::int64_t i = 0; i < ins; ++i)
      for (std::int64_t t = 0; t < taps; ++t)
        packed[static_cast<std::size_t>(o0 * taps * ins + (t * ins + i) * width + (o - o0))] =
            w[static_cast<std::size_t>((o * ins + i) * taps + t)];
  }
  return packed;
}

// Up to kPanelRows consecutive output pixels, in row-major (n, oy, ox) order, from `first`.
struct PixelSpan {
  std::int64_t first, rows;
};

// Along one axis, the outputs [begin, end) whose tap k reads inside the input:
// 0 ≤ o·stride − pad + k·dilation < in.
struct TapRange {
  std::int64_t begin, end;
  bool has(std::int64_t o) const { return o >= begin && o < end; }
};

std::vector<TapRange> tap_ranges(std::int64_t out, std::int64_t in, std::int64_t kernel,
                                 std::int64_t stride, std::int64_t dilation, std::int64_t pad) {
  std::vector<TapRange> ranges;
  for (std::int64_t k = 0; k < kernel; ++k) {
    const std::int64_t low = pad - k * dilation, high = in - 1 + pad - k * dilation;
    const std::int64_t begin = std::min(out, low <= 0 ? 0 : (low + stride - 1) / stride);
    const std::int64_t end = std::min(out, high < 0 ? 0 : high / stride + 1);
    ranges.push_back({begin, std::max(begin, end)});
  }
  return ranges;
}

std::int64_t taps_at(const std::vector<TapRange>& ranges, std::int64_t o) {
  return std::count_if(ranges.begin(), ranges.end(), [&](const TapRange& t) { return t.has(o); });
}

// The panels of a call (direct_conv2d.h: detail::direct_conv2d_tap_products). Either every pixel in
// order, six at a time, or — where that multiplies mostly padding — each output row cut into
// segments of equal live taps along x (between consecutive ends of the tap ranges), each segment
// six pixels at a time: a panel then holds only the taps its pixels read (fill_table leaves out the
// rest), and no tap that reads padding for some of its pixels while it reads the input for others.
// A dilated conv on a small map gains the most: DeepLabV3's 3×3 at dilation 12 over 16×16
// multiplies 9 taps at every pixel in order, 25 % of them on the input; segmented its panels hold
// 37 % of the tap products. The choice compares the two counts of panel × tap products (a panel of
// fewer than six pixels costs about what six cost).
struct PanelPlan {
  std::vector<PixelSpan> spans;
  std::int64_t tap_products;  // Σ over panels of the taps it multiplies (at most)
};

PanelPlan plan_panels(const ref::Conv2dGeometry& g, const Conv2dOptions& options) {
  const std::int64_t pixels = g.batch * g.out_h * g.out_w;
  const std::int64_t in_order = (pixels + kPanelRows - 1) / kPanelRows * g.kh * g.kw;
  const auto ys =
      tap_ranges(g.out_h, g.in_h, g.kh, options.stride.h, options.dilation.h, g.pads.top);
  const auto xs =
      tap_ranges(g.out_w, g.in_w, g.kw, options.stride.w, options.dilation.w, g.pads.left);
  std::vector<std::int64_t> cuts = {0, g.out_w};
  for (const TapRange& t : xs) cuts.insert(cuts.end(), {t.begin, t.end});
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::int64_t segmented = 0;  // per image
  for (std::int64_t oy = 0; oy < g.out_h; ++oy) {
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
      const std::int64_t segment_panels = (cuts[i + 1] - cuts[i] + kPanelRows - 1) / kPanelRows;
      segmented += segment_panels * taps_at(ys, oy) * taps_at(xs, cuts[i]);
    }
  }
  PanelPlan plan;
  if (g.batch * segmented < in_order) {
    plan.tap_products = g.batch * segmented;
    for (std::int64_t row = 0; row < g.batch * g.out_h; ++row)
      for (std::size_t i = 0; i + 1 < cuts.size(); ++i)
        for (std::int64_t x = cuts[i]; x < cuts[i + 1]; x += kPanelRows)
          plan.spans.push_back({row * g.out_w + x, std::min(kPanelRows, cuts[i + 1] - x)});
  } else {
    plan.tap_products = in_order;
    for (std::int64_t p = 0; p < pixels; p += kPanelRows)
      plan.spans.push_back({p, std::min(kPanelRows, pixels - p)});
  }
  return plan;
}

std::string decline_reason(const Conv2dOptions& options, const ref::Conv2dGeometry& g) {
  // Where it beats oneDNN (docs/native-kernels.md): strided, dilated or grouped convs with a
  // spatial kernel over enough input channels. Dilated stride-1 3×3 convs took 0.24× oneDNN's time
  // at dilation 12 over 16² (960 → 256, which oneDNN runs as im2col + GEMM) to 0.84–0.93× at
  // dilation 2 (jit:avx2), paired runs on Zen 1. Undilated stride 1 is Winograd's or oneDNN's;
  // stems (3 input channels), 1×1 downsampling convs and 16–32 input channels (YOLOv8's first
  // strided convs: oneDNN's jit:avx2 1.2–2.1× faster, paired runs) are oneDNN's.
  if (g.groups > 1 && g.out_channels / g.groups % 8 != 0)
    return "output channels per group must be a multiple of 8";
  const bool dilated = options.dilation.h > 1 || options.dilation.w > 1;
  if (options.stride.h < 2 && options.stride.w < 2 && !dilated && g.groups == 1)
    return "stride 1 (Winograd's or oneDNN's)";
  if (get_conv_algorithm() == ConvAlgorithm::Native) return {};  // wherever it runs
  // Where oneDNN has its AVX-512 convs, brgconv:avx512_core is faster than this kernel at every
  // RepVGG-A0 strided shape (48→48 at 112² to 192→1280 at 14², paired runs, bench/RESULTS.md):
  // 1.5–1.7× on a full-rate Xeon (against this kernel's AVX-512 form), 1.07–1.42× on Zen 4,
  // which splits 512-bit ops in two (against its AVX2 form).
  if (onednn_has_avx512_convs()) return "oneDNN's AVX-512 conv is faster on this CPU";
  if (g.kh * g.kw < 9 || g.in_channels < 48)
    return fmt::format("kernel {}x{} over {} input channels is oneDNN's", g.kh, g.kw,
                       g.in_channels);
  // Grouped: groups of 8 outputs (RegNet's), where oneDNN's jit:avx2 has one 8-channel block per
  // group (0.9–1.02× its time alone, 0.55–0.9× in RegNetX-200MF); from 16 outputs per group
  // oneDNN's is faster (1.08–1.33×, ResNeXt-50's 16 and 32, 24 per group).
  const std::int64_t group_ins = g.in_channels / g.groups, group_outs = g.out_channels / g.groups;
  if (g.groups > 1 && (group_outs != 8 || group_ins < 8))
    return fmt::format("{} groups of {} → {} channels are oneDNN's", g.groups, group_ins,
                       group_outs);
  return {};
}

}  // namespace

Tensor direct_conv2d(const Conv2dCall& call, std::string* declined) {
  if (!accept_conv2d("native direct conv", call, decline_reason, declined)) return {};
  const ref::Conv2dGeometry& g = call.geometry;
  const Tensor &input = call.input, &weight = call.weight, &bias = call.bias;
  const Conv2dOptions& options = call.options;
  const PostOps& post = call.post;

  // A group is a conv of its own over its channels: weights packed in blocks that no group
  // shares (16 wide where a group's outputs are a multiple of 16, else 8), each row pointer moved
  // to the group's first input channel (Panel::a_offset), outputs written at the group's first.
  const std::int64_t group_ins = g.in_channels / g.groups, group_outs = g.out_channels / g.groups;
  const std::int64_t block = g.groups == 1 || group_outs % kBlockWidth == 0 ? kBlockWidth : 8;
  const std::int64_t panel_width = block == kBlockWidth ? kPanelWidth : block;
  const auto packed =
      packed_weights(weight, block == kBlockWidth ? Packing::Direct : Packing::DirectBlocksOf8,
                     [block](const Tensor& w) { return pack_weights(w, block); });
  const ConvEpilogue epilogue(bias, g.out_channels, post);
  const std::vector<float> zeros(static_cast<std::size_t>(g.in_channels), 0.0f);
  Tensor output = conv_output(call);

  const float* in = input.data<float>();
  float* out = output.data<float>();
  const std::int64_t c = g.in_channels, taps = g.kh * g.kw;
  const Size2d s = options.stride, d = options.dilation;
  const std::vector<PixelSpan> spans = plan_panels(g, options).spans;
  const std::int64_t panels = static_cast<std::int64_t>(spans.size());
  const std::int64_t group_columns = (group_outs + panel_width - 1) / panel_width;
  const std::int64_t columns = g.groups * group_columns;

  // Job order. When the packed weights fit in half a core's L2 (C_in·C_out·taps ≤ 64 Ki floats:
  // a 3×3 48→96 conv is 162 KiB), a job is one panel of pixels times every channel block: the
  // panel's pointer table is built once and its input rows stay in L1 across the columns.
  // Otherwise a job is one (32 output channels, panel), column-major, so a thread's consecutive
  // jobs reuse one weight panel from cache.
  const bool panel_major =
      static_cast<std::int64_t>(packed->size() * sizeof(float)) <= kPanelMajorWeightBytes;
  const std::int64_t jobs = panel_major ? panels : columns * panels;

#pragma omp parallel num_threads(get_num_threads())
  {
    // This thread's table of one panel: for each tap some row of the panel reads inside the
    // input, its id and its kPanelRows input pointers (a row whose pixel reads padding there
    // points at zeros).
    std::vector<const float*> table(static_cast<std::size_t>(taps * kPanelRows));
    std::vector<std::int64_t> tap_ids(static_cast<std::size_t>(taps));
    std::int64_t live_taps = 0;
    // Fills the table for `span`: (n, oy, ox) of its first pixel by division, then stepped
    // along the row-major pixel order.
    auto fill_table = [&](const PixelSpan& span) {
      std::int64_t n[kPanelRows], iy0[kPanelRows], ix0[kPanelRows];
      std::int64_t pn = span.first / (g.out_h * g.out_w), oy = span.first / g.out_w % g.out_h,
                   ox = span.first % g.out_w;
      for (std::int64_t r = 0; r < span.rows; ++r, ++ox) {
        if (ox == g.out_w) {
          ox = 0;
          if (++oy == g.out_h) oy = 0, ++pn;
        }
        n[r] = pn, iy0[r] = oy * s.h - g.pads.top, ix0[r] = ox * s.w - g.pads.left;
      }
      live_taps = 0;
      for (std::int64_t ky = 0; ky < g.kh; ++ky) {
        for (std::int64_t kx = 0; kx < g.kw; ++kx) {
          const float** rows = table.data() + live_taps * kPanelRows;
          bool live = false;
          for (std::int64_t r = 0; r < span.rows; ++r) {
            const std::int64_t iy = iy0[r] + ky * d.h, ix = ix0[r] + kx * d.w;
            const bool inside = iy >= 0 && iy < g.in_h && ix >= 0 && ix < g.in_w;
            rows[r] = inside ? in + ((n[r] * g.in_h + iy) * g.in_w + ix) * c : zeros.data();
            live = live || inside;
          }
          if (live) tap_ids[static_cast<std::size_t>(live_taps++)] = ky * g.kw + kx;
        }
      }
    };
#pragma omp for schedule(static)
    for (std::int64_t job = 0; job < jobs; ++job) {
      const PixelSpan& span = spans[static_cast<std::size_t>(panel_major ? job : job % panels)];
      fill_table(span);
      Panel p;
      p.rows = span.rows;
      p.a = table.data();
      p.taps = live_taps;
      p.tap_ids = tap_ids.data();
      p.block_taps = taps;
      p.depth = group_ins;
      p.ldc = g.out_channels;
      p.epilogue = &epilogue.get();
      const std::int64_t first_column = panel_major ? 0 : job / panels;
      const std::int64_t last_column = panel_major ? columns : first_column + 1;
      for (std::int64_t column = first_column; column < last_column; ++column) {
        const std::int64_t group = column / group_columns;
        const std::int64_t group_o0 = column % group_columns * panel_width;
        const std::int64_t o0 = group * group_outs + group_o0;
        p.a_offset = group * group_ins;
        p.b = packed->data() + o0 * taps * group_ins;
        p.width = std::min(panel_width, group_outs - group_o0);
        p.c_offset = span.first * g.out_channels + o0;
        p.c = out + p.c_offset;
        p.channel = o0;
        multiply_panel(p);
      }
    }
  }
  return output;
}

namespace detail {

std::int64_t direct_conv2d_tap_products(const Conv2dCall& call) {
  return plan_panels(call.geometry, call.options).tap_products;
}

}  // namespace detail

}  // namespace refold::native
