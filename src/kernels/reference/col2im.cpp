// reference::col2im (onnx_ops.h; the math in col2im.h): each column element added to its image
// position in double, one rounding per output element.
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

#include "core/check.h"
#include "core/element_access.h"
#include "kernels/reference/conv_common.h"
#include "kernels/reference/onnx_ops.h"

namespace refold::reference {

Col2ImExtent check_col2im(const Tensor& x, const Col2ImParams& p) {
  REFOLD_CHECK(x.defined() && x.dim() == 3, "Col2Im: input must be 3-d [N, C·∏block, L], got {}",
               x.defined() ? x.description() : std::string("undefined"));
  REFOLD_CHECK(is_floating(x.dtype()), "Col2Im: input has dtype {}; expected float32 or bfloat16",
               dtype_name(x.dtype()));
  const std::size_t r = p.image.size();
  REFOLD_CHECK(
      r >= 1 && p.block.size() == r,
      "Col2Im: image_shape [{}] and block_shape [{}] must have the same length, at least 1",
      fmt::join(p.image, ", "), fmt::join(p.block, ", "));
  auto check_length = [&](const char* name, const std::vector<std::int64_t>& v) {
    REFOLD_CHECK(v.size() == r, "Col2Im: {} must have {} values (one per spatial axis), got [{}]",
                 name, r, fmt::join(v, ", "));
  };
  check_length("strides", p.stride);
  check_length("dilations", p.dilation);
  check_length("pads (begins)", p.pad_begin);
  check_length("pads (ends)", p.pad_end);
  Col2ImExtent e;
  std::int64_t blocks_total = 1;
  e.blocks.resize(r);
  for (std::size_t a = 0; a < r; ++a) {
    REFOLD_CHECK(p.image[a] > 0 && p.block[a] > 0,
                 "Col2Im: image_shape [{}] and block_shape [{}] must be positive",
                 fmt::join(p.image, ", "), fmt::join(p.block, ", "));
    REFOLD_CHECK(p.stride[a] > 0 && p.dilation[a] > 0 && p.pad_begin[a] >= 0 && p.pad_end[a] >= 0,
                 "Col2Im: strides [{}] and dilations [{}] must be positive and pads [{}, {}] "
                 "non-negative",
                 fmt::join(p.stride, ", "), fmt::join(p.dilation, ", "),
                 fmt::join(p.pad_begin, ", "), fmt::join(p.pad_end, ", "));
    e.blocks[a] = detail::with_context("Col2Im", fmt::format("spatial axis {}", a), [&] {
      return conv_output_size(p.image[a], p.block[a], p.stride[a], p.pad_begin[a], p.pad_end[a],
                              p.dilation[a]);
    });
    e.taps *= p.block[a];
    e.plane *= p.image[a];
    blocks_total *= e.blocks[a];
  }
  REFOLD_CHECK(x.size(1) % e.taps == 0,
               "Col2Im: input's dim 1 ({}) must be a multiple of the block's {} taps (block_shape "
               "[{}])",
               x.size(1), e.taps, fmt::join(p.block, ", "));
  REFOLD_CHECK(x.size(2) == blocks_total,
               "Col2Im: input has {} blocks (dim 2), image_shape [{}] with block_shape [{}] gives "
               "{} ([{}])",
               x.size(2), fmt::join(p.image, ", "), fmt::join(p.block, ", "), blocks_total,
               fmt::join(e.blocks, ", "));
  e.out_sizes = {x.size(0), x.size(1) / e.taps};
  e.out_sizes.insert(e.out_sizes.end(), p.image.begin(), p.image.end());
  return e;
}

Tensor col2im(const Tensor& x, const Col2ImParams& p) {
  const Col2ImExtent e = check_col2im(x, p);
  Tensor y = empty(e.out_sizes, x.dtype());
  const FloatReader in(x);
  const FloatWriter out(y);
  std::vector<double> sums(static_cast<std::size_t>(e.plane));
  for (std::int64_t n = 0; n < e.out_sizes[0]; ++n)
    for (std::int64_t c = 0; c < e.out_sizes[1]; ++c) {
      std::fill(sums.begin(), sums.end(), 0.0);
      const std::int64_t column = n * in.stride(0) + c * e.taps * in.stride(1);
      detail::for_each_col2im_tap(p, e.blocks,
                                  [&](std::int64_t at, std::int64_t j, std::int64_t l) {
                                    sums[static_cast<std::size_t>(at)] +=
                                        in.at_offset(column + j * in.stride(1) + l * in.stride(2));
                                  });
      const std::int64_t image = (n * e.out_sizes[1] + c) * e.plane;  // y is contiguous
      for (std::int64_t i = 0; i < e.plane; ++i)
        out.set_offset(image + i, round_to_dtype(sums[static_cast<std::size_t>(i)], y.dtype()));
    }
  return y;
}

}  // namespace refold::reference
