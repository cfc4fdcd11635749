// The reference convolution loops (conv2d, conv_transpose2d, conv_nd, conv_transpose_nd all run
// them) and the N-d entry points of ONNX Conv / ConvTranspose over 1–3 spatial axes: direct loops
// over logical indices, any strides, accumulation in double, one rounding to the output dtype.
#include <fmt/ranges.h>

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "core/element_access.h"
#include "kernels/reference/conv_common.h"
#include "kernels/reference/onnx_ops.h"

namespace refold::reference {
namespace detail {
namespace {

// A tensor of rank 3–5 seen as [N, C, d, h, w]: the spatial axes right-aligned, a missing
// leading one of size 1 (stride 0).
struct Axes5 {
  std::array<std::int64_t, 5> size{1, 1, 1, 1, 1}, stride{0, 0, 0, 0, 0};
};

Axes5 axes5(const Tensor& t) {
  Axes5 a;
  const std::int64_t lead = 5 - t.dim();  // missing spatial axes
  for (std::int64_t k = 0; k < t.dim(); ++k) {
    const std::int64_t to = k < 2 ? k : k + lead;
    a.size[static_cast<std::size_t>(to)] = t.size(k);
    a.stride[static_cast<std::size_t>(to)] = t.stride(k);
  }
  return a;
}

// Runs body(n, oc, offset_of_output_element, spatial position {z, y, x}) for every output
// element, then stores the double it returns rounded once to the output dtype.
template <typename Body>
void for_each_output(Tensor& output, Body&& body) {
  const FloatWriter out(output);
  const Axes5 o = axes5(output);
  const DType dtype = output.dtype();
  for (std::int64_t n = 0; n < o.size[0]; ++n)
    for (std::int64_t c = 0; c < o.size[1]; ++c)
      for (std::int64_t z = 0; z < o.size[2]; ++z)
        for (std::int64_t y = 0; y < o.size[3]; ++y)
          for (std::int64_t x = 0; x < o.size[4]; ++x) {
            const std::array<std::int64_t, 3> at{z, y, x};
            out.set_offset(o.stride[0] * n + o.stride[1] * c + o.stride[2] * z + o.stride[3] * y +
                               o.stride[4] * x,
                           round_to_dtype(body(n, c, at), dtype));
          }
}

}  // namespace

void conv_gather(const Tensor& input, const Tensor& weight, const Tensor& bias,
                 const Window3d& window, Tensor& output) {
  const FloatReader in(input), w(weight);
  const Axes5 is = axes5(input), ws = axes5(weight);
  const std::int64_t out_channels = output.size(1);
  const std::vector<float> b = bias_values(bias, out_channels);
  const std::int64_t group_in = is.size[1] / window.groups;     // Cg: input channels per group
  const std::int64_t group_out = out_channels / window.groups;  // output channels per group
  const auto& s = window.stride;
  const auto& d = window.dilation;
  const auto& p = window.pad_begin;
  for_each_output(
      output, [&](std::int64_t n, std::int64_t oc, const std::array<std::int64_t, 3>& o) {
        // out[n, oc, o] = bias[oc] + Σ_{c < Cg, k}
        //     in[n, g·Cg + c, o·stride − pad_begin + k·dilation] · w[oc, c, k]
        // per spatial axis (o, k and the input position are 3-vectors over d, h, w), where
        // g = oc / (C_out/groups) is oc's group and input positions outside [0, in) read as zero
        // (the padding).
        const std::int64_t g = oc / group_out;
        double acc = b[static_cast<std::size_t>(oc)];
        for (std::int64_t c = 0; c < group_in; ++c) {
          const std::int64_t in_c = is.stride[0] * n + is.stride[1] * (g * group_in + c);
          const std::int64_t w_c = ws.stride[0] * oc + ws.stride[1] * c;
          for (std::int64_t i = 0; i < ws.size[2]; ++i) {
            const std::int64_t iz = o[0] * s[0] - p[0] + i * d[0];
            if (iz < 0 || iz >= is.size[2]) continue;
            for (std::int64_t j = 0; j < ws.size[3]; ++j) {
              const std::int64_t iy = o[1] * s[1] - p[1] + j * d[1];
              if (iy < 0 || iy >= is.size[3]) continue;
              for (std::int64_t l = 0; l < ws.size[4]; ++l) {
                const std::int64_t ix = o[2] * s[2] - p[2] + l * d[2];
                if (ix < 0 || ix >= is.size[4]) continue;
                acc += static_cast<double>(in.at_offset(in_c + is.stride[2] * iz +
                                                        is.stride[3] * iy + is.stride[4] * ix)) *
                       static_cast<double>(w.at_offset(w_c + ws.stride[2] * i + ws.stride[3] * j +
                                                       ws.stride[4] * l));
              }
            }
          }
        }
        return acc;
      });
}

void conv_transpose_gather(const Tensor& input, const Tensor& weight, const Tensor& bias,
                           const Window3d& window, Tensor& output) {
  const FloatReader in(input), w(weight);
  const Axes5 is = axes5(input), ws = axes5(weight);
  const std::int64_t out_channels = output.size(1);
  const std::vector<float> b = bias_values(bias, out_channels);
  const std::int64_t group_in = is.size[1] / window.groups;  // Cig: input channels per group
  const std::int64_t group_out = ws.size[1];                 // Cog: output channels per group
  const auto& s = window.stride;
  const auto& d = window.dilation;
  const auto& p = window.pad_begin;
  // The input position whose tap k lands on output position o along axis a, or −1: the scatter
  // reaches o from x when o = x·stride − pad_begin + k·dilation, i.e. when
  // t = o + pad_begin − k·dilation is a multiple of the stride with t / stride in [0, in).
  auto source = [&](std::size_t a, std::int64_t o, std::int64_t k) -> std::int64_t {
    const std::int64_t t = o + p[a] - k * d[a];
    if (t < 0 || t % s[a] != 0 || t / s[a] >= is.size[a + 2]) return -1;
    return t / s[a];
  };
  for_each_output(output, [&](std::int64_t n, std::int64_t oc,
                              const std::array<std::int64_t, 3>& o) {
    // The scatter definition, per spatial axis,
    //   out[n, g·Cog + m, x·stride − pad_begin + k·dilation] += in[n, g·Cig + c, x]
    //                                                           · w[g·Cig + c, m, k]
    // computed in gather form, one output element at a time (source() above):
    //   out[n, oc, o] = bias[oc] + Σ_{c < Cig, k : source(o, k) valid}
    //                       in[n, g·Cig + c, source(o, k)] · w[g·Cig + c, m, k]
    // with g = oc / Cog, m = oc mod Cog. A negative pad_begin (or a negative pad_end) adds output
    // positions no tap reaches: they hold the bias.
    const std::int64_t g = oc / group_out, m = oc % group_out;
    double acc = b[static_cast<std::size_t>(oc)];
    for (std::int64_t c = 0; c < group_in; ++c) {
      const std::int64_t ic = g * group_in + c;
      const std::int64_t in_c = is.stride[0] * n + is.stride[1] * ic;
      const std::int64_t w_c = ws.stride[0] * ic + ws.stride[1] * m;  // [C_in, C_out/groups, k…]
      for (std::int64_t i = 0; i < ws.size[2]; ++i) {
        const std::int64_t z = source(0, o[0], i);
        if (z < 0) continue;
        for (std::int64_t j = 0; j < ws.size[3]; ++j) {
          const std::int64_t y = source(1, o[1], j);
          if (y < 0) continue;
          for (std::int64_t l = 0; l < ws.size[4]; ++l) {
            const std::int64_t x = source(2, o[2], l);
            if (x < 0) continue;
            acc += static_cast<double>(in.at_offset(in_c + is.stride[2] * z + is.stride[3] * y +
                                                    is.stride[4] * x)) *
                   static_cast<double>(
                       w.at_offset(w_c + ws.stride[2] * i + ws.stride[3] * j + ws.stride[4] * l));
          }
        }
      }
    }
    return acc;
  });
}

namespace {

// The checks both N-d convs start with: input [N, C_in, D_1…D_r] with r in 1…3, weight of the
// same rank and dtype, every per-axis list of r values (output_padding may be empty), stride and
// dilation positive, groups positive and dividing C_in.
void check_nd_operands(std::string_view op, const Tensor& input, const Tensor& weight,
                       const ConvNdParams& p, std::string_view weight_layout) {
  REFOLD_CHECK(input.defined(), "{}: input is undefined", op);
  REFOLD_CHECK(input.dim() >= 3 && input.dim() <= 5,
               "{}: input must be [N, C_in, D_1, …, D_r] with 1 to 3 spatial axes, got {}", op,
               input.description());
  const std::int64_t rank = input.dim() - 2;
  check_operand(op, "input", input, input.dim(), "[N, C_in, D_1, …, D_r]");
  check_operand(op, "weight", weight, input.dim(), weight_layout);
  check_same_dtype(op, "weight", weight, input);
  auto check_length = [&](std::string_view name, const std::vector<std::int64_t>& v,
                          bool may_be_empty) {
    REFOLD_CHECK(static_cast<std::int64_t>(v.size()) == rank || (may_be_empty && v.empty()),
                 "{}: {} must have {} values (one per spatial axis), got [{}]", op, name, rank,
                 fmt::join(v, ", "));
  };
  check_length("stride", p.stride, false);
  check_length("dilation", p.dilation, false);
  check_length("pad_begin", p.pad_begin, false);
  check_length("pad_end", p.pad_end, false);
  check_length("output_padding", p.output_padding, true);
  for (std::int64_t a = 0; a < rank; ++a) {
    const auto k = static_cast<std::size_t>(a);
    REFOLD_CHECK(p.stride[k] > 0 && p.dilation[k] > 0,
                 "{}: stride [{}] and dilation [{}] must be positive", op,
                 fmt::join(p.stride, ", "), fmt::join(p.dilation, ", "));
  }
  REFOLD_CHECK(p.groups > 0, "{}: groups ({}) must be positive", op, p.groups);
  REFOLD_CHECK(input.size(1) % p.groups == 0, "{}: groups ({}) must divide in_channels ({})", op,
               p.groups, input.size(1));
}

// Window3d of an N-d problem: the axes right-aligned (as axes5 aligns the tensors).
Window3d window_3d(const ConvNdParams& p) {
  Window3d w;
  const std::size_t lead = 3 - p.stride.size();
  for (std::size_t a = 0; a < p.stride.size(); ++a) {
    w.stride[lead + a] = p.stride[a];
    w.dilation[lead + a] = p.dilation[a];
    w.pad_begin[lead + a] = p.pad_begin[a];
  }
  w.groups = p.groups;
  return w;
}

}  // namespace

Shape check_conv_nd(const Tensor& input, const Tensor& weight, const Tensor& bias,
                    const ConvNdParams& p) {
  constexpr std::string_view op = "conv_nd";
  check_nd_operands(op, input, weight, p, "[C_out, C_in/groups, k_1, …, k_r]");
  const std::int64_t out_channels = weight.size(0);
  REFOLD_CHECK(out_channels % p.groups == 0, "{}: groups ({}) must divide out_channels ({})", op,
               p.groups, out_channels);
  REFOLD_CHECK(weight.size(1) * p.groups == input.size(1),
               "{}: input has {} channels, weight expects {} (groups {}, weight {})", op,
               input.size(1), weight.size(1) * p.groups, p.groups, weight.description());
  check_bias(op, bias, out_channels, input);
  Shape out{input.size(0), out_channels};
  for (std::size_t a = 0; a < p.stride.size(); ++a) {
    const std::int64_t axis = static_cast<std::int64_t>(a) + 2;
    out.push_back(with_context(op, fmt::format("spatial axis {}", a), [&] {
      return conv_output_size(input.size(axis), weight.size(axis), p.stride[a], p.pad_begin[a],
                              p.pad_end[a], p.dilation[a]);
    }));
  }
  return out;
}

Shape check_conv_transpose_nd(const Tensor& input, const Tensor& weight, const Tensor& bias,
                              const ConvNdParams& p) {
  constexpr std::string_view op = "conv_transpose_nd";
  check_nd_operands(op, input, weight, p, "[C_in, C_out/groups, k_1, …, k_r]");
  REFOLD_CHECK(weight.size(0) == input.size(1),
               "{}: input has {} channels, weight expects {} (weight {} is [C_in, C_out/groups, "
               "k_1, …, k_r])",
               op, input.size(1), weight.size(0), weight.description());
  const std::int64_t out_channels = weight.size(1) * p.groups;
  check_bias(op, bias, out_channels, input);
  Shape out{input.size(0), out_channels};
  for (std::size_t a = 0; a < p.stride.size(); ++a) {
    const std::int64_t axis = static_cast<std::int64_t>(a) + 2;
    const std::int64_t in = input.size(axis), k = weight.size(axis);
    const std::int64_t extra = p.output_padding.empty() ? 0 : p.output_padding[a];
    REFOLD_CHECK(extra >= 0, "{}: output_padding [{}] must be non-negative", op,
                 fmt::join(p.output_padding, ", "));
    // out = stride·(in − 1) + dilation·(k − 1) + 1 + output_padding − pad_begin − pad_end
    const std::int64_t size = p.stride[a] * (in - 1) + p.dilation[a] * (k - 1) + 1 + extra -
                              p.pad_begin[a] - p.pad_end[a];
    REFOLD_CHECK(in > 0 && size > 0,
                 "{}: spatial axis {}: output size would be <= 0 (input {}, kernel {}, stride {}, "
                 "dilation {}, pads {}/{}, output_padding {})",
                 op, a, in, k, p.stride[a], p.dilation[a], p.pad_begin[a], p.pad_end[a], extra);
    out.push_back(size);
  }
  return out;
}

}  // namespace detail

Tensor conv_nd(const Tensor& input, const Tensor& weight, const Tensor& bias,
               const ConvNdParams& params) {
  Tensor output = empty(detail::check_conv_nd(input, weight, bias, params), input.dtype());
  detail::conv_gather(input, weight, bias, detail::window_3d(params), output);
  return output;
}

Tensor conv_transpose_nd(const Tensor& input, const Tensor& weight, const Tensor& bias,
                         const ConvNdParams& params) {
  Tensor output =
      empty(detail::check_conv_transpose_nd(input, weight, bias, params), input.dtype());
  detail::conv_transpose_gather(input, weight, bias, detail::window_3d(params), output);
  return output;
}

}  // namespace refold::reference
