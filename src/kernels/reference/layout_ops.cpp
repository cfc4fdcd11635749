// Reference concat, transpose, depth_to_space, space_to_depth, tile, ONNX pad and trilu for any
// dtype: each output element is a bit copy of one input element, or a constant (see
// tensor_ops.h).
#include <algorithm>
#include <numeric>

#include "kernels/reference/tensor_ops.h"
#include "kernels/reference/typed_elements.h"

namespace refold::reference {
namespace {

bool suggests_channels_last(const Tensor& t) {
  return t.dim() == 4 && t.suggest_memory_format() == MemoryFormat::ChannelsLast;
}

}  // namespace

// Input k lands at offset Σ_{j<k} inputs[j].size(axis) along `axis`.
Tensor concat(const std::vector<Tensor>& inputs, std::int64_t axis) {
  REFOLD_CHECK(!inputs.empty(), "concat: no inputs");
  for (std::size_t k = 0; k < inputs.size(); ++k)
    REFOLD_CHECK(inputs[k].defined(), "concat: input {} is undefined", k);
  const Tensor& first = inputs[0];
  REFOLD_CHECK(first.dim() > 0, "concat: input 0 is 0-d; scalars cannot be joined");
  const std::int64_t d = detail::wrap_axis(axis, first.dim(), "concat");
  Shape sizes = first.sizes();
  sizes[d] = 0;
  bool all_channels_last = true;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& t = inputs[k];
    REFOLD_CHECK(t.dtype() == first.dtype(), "concat: input {} has dtype {} but input 0 has {}", k,
                 dtype_name(t.dtype()), dtype_name(first.dtype()));
    bool same = t.dim() == first.dim();
    for (std::int64_t i = 0; same && i < t.dim(); ++i) same = i == d || t.size(i) == first.size(i);
    REFOLD_CHECK(same,
                 "concat: input {} has shape [{}] but input 0 has [{}]; they must match in every "
                 "dimension except axis {}",
                 k, fmt::join(t.sizes(), ", "), fmt::join(first.sizes(), ", "), d);
    sizes[d] = checked_add(sizes[d], t.size(d), "concat");
    all_channels_last = all_channels_last && suggests_channels_last(t);
  }
  Tensor output = empty(sizes, {first.dtype(), all_channels_last ? MemoryFormat::ChannelsLast
                                                                 : MemoryFormat::Contiguous});
  // Input k is copied into the view of the output at offset Σ_{j<k} size_j along `axis`.
  const Shape& os = output.strides();
  std::int64_t base = output.storage_offset();
  for (const Tensor& t : inputs) {
    output.as_strided(t.sizes(), os, base).copy_(t);
    base += t.size(d) * os[static_cast<std::size_t>(d)];
  }
  return output;
}

// out[i_0, …] = in[…] with out dimension k = in dimension perm[k]: read through the permuted
// strides, write contiguously.
Tensor transpose(const Tensor& input, const Shape& perm_in) {
  REFOLD_CHECK(input.defined(), "transpose: input is undefined");
  const std::int64_t rank = input.dim();
  Shape perm = perm_in;
  if (perm.empty()) {
    perm.resize(static_cast<std::size_t>(rank));
    std::iota(perm.rbegin(), perm.rend(), 0);  // reverse: [rank − 1, …, 0]
  }
  REFOLD_CHECK(static_cast<std::int64_t>(perm.size()) == rank,
               "transpose: perm [{}] has {} entries for a {}-d input", fmt::join(perm_in, ", "),
               perm.size(), rank);
  std::vector<bool> seen(perm.size(), false);
  Shape sizes(perm.size()), strides(perm.size());
  for (std::size_t k = 0; k < perm.size(); ++k) {
    REFOLD_CHECK(perm[k] >= 0 && perm[k] < rank && !seen[static_cast<std::size_t>(perm[k])],
                 "transpose: perm [{}] is not a permutation of 0..{}", fmt::join(perm, ", "),
                 rank - 1);
    seen[static_cast<std::size_t>(perm[k])] = true;
    sizes[k] = input.sizes()[static_cast<std::size_t>(perm[k])];
    strides[k] = input.strides()[static_cast<std::size_t>(perm[k])];
  }
  // The permuted view, copied contiguous (Tensor::copy_ walks it in the output's order).
  Tensor output = empty(sizes, input.dtype());
  output.copy_(input.as_strided(sizes, strides, input.storage_offset()));
  return output;
}

Tensor depth_to_space(const Tensor& input, std::int64_t blocksize, bool dcr) {
  REFOLD_CHECK(input.defined(), "depth_to_space: input is undefined");
  REFOLD_CHECK(input.dim() == 4, "depth_to_space: input must be 4-d [N, C, H, W], got [{}]",
               fmt::join(input.sizes(), ", "));
  const std::int64_t b = blocksize;
  REFOLD_CHECK(b > 0, "depth_to_space: blocksize ({}) must be positive", b);
  const std::int64_t bb = checked_mul(b, b, "depth_to_space");
  REFOLD_CHECK(input.size(1) % bb == 0,
               "depth_to_space: channels ({}) must be divisible by blocksize² ({})", input.size(1),
               bb);
  const std::int64_t c_out = input.size(1) / bb;
  const Shape sizes = {input.size(0), c_out, checked_mul(input.size(2), b, "depth_to_space"),
                       checked_mul(input.size(3), b, "depth_to_space")};
  Tensor output =
      empty(sizes, {input.dtype(), suggests_channels_last(input) ? MemoryFormat::ChannelsLast
                                                                 : MemoryFormat::Contiguous});
  // As 6-d views: out[n, c, h, i, w, j] (= out[n, c, h·b + i, w·b + j]) copies
  // in[n, c, h, i, w, j], whose channel is (i·b + j)·C + c (DCR) or c·b² + i·b + j (CRD).
  const Shape& is = input.strides();
  const Shape& os = output.strides();
  const Shape sizes6 = {sizes[0], c_out, input.size(2), b, input.size(3), b};
  const Shape out6 = {os[0], os[1], b * os[2], os[2], b * os[3], os[3]};
  const Shape in6 = dcr ? Shape{is[0], is[1], is[2], b * c_out * is[1], is[3], c_out * is[1]}
                        : Shape{is[0], bb * is[1], is[2], b * is[1], is[3], is[1]};
  output.as_strided(sizes6, out6, output.storage_offset())
      .copy_(input.as_strided(sizes6, in6, input.storage_offset()));
  return output;
}

namespace {

// A 4-d output of `sizes` in the format `like` suggests (channels_last exists only for 4-d).
Tensor empty_like_format(const Tensor& like, const Shape& sizes) {
  return empty(sizes, {like.dtype(), suggests_channels_last(like) && sizes.size() == 4
                                         ? MemoryFormat::ChannelsLast
                                         : MemoryFormat::Contiguous});
}

}  // namespace

Tensor space_to_depth(const Tensor& input, std::int64_t blocksize) {
  REFOLD_CHECK(input.defined(), "space_to_depth: input is undefined");
  REFOLD_CHECK(input.dim() == 4, "space_to_depth: input must be 4-d [N, C, H, W], got [{}]",
               fmt::join(input.sizes(), ", "));
  const std::int64_t b = blocksize;
  REFOLD_CHECK(b > 0, "space_to_depth: blocksize ({}) must be positive", b);
  REFOLD_CHECK(input.size(2) % b == 0 && input.size(3) % b == 0,
               "space_to_depth: H ({}) and W ({}) must be divisible by blocksize ({})",
               input.size(2), input.size(3), b);
  const std::int64_t c = input.size(1);
  const Shape sizes = {input.size(0),
                       checked_mul(c, checked_mul(b, b, "space_to_depth"), "space_to_depth"),
                       input.size(2) / b, input.size(3) / b};
  Tensor output = empty_like_format(input, sizes);
  // As 6-d views: out[n, i, j, c, h, w] (channel (i·b + j)·C + c) copies
  // in[n, c, h·b + i, w·b + j].
  const Shape& is = input.strides();
  const Shape& os = output.strides();
  const Shape sizes6 = {sizes[0], b, b, c, sizes[2], sizes[3]};
  const Shape out6 = {os[0], b * c * os[1], c * os[1], os[1], os[2], os[3]};
  const Shape in6 = {is[0], is[2], is[3], is[1], b * is[2], b * is[3]};
  output.as_strided(sizes6, out6, output.storage_offset())
      .copy_(input.as_strided(sizes6, in6, input.storage_offset()));
  return output;
}

Tensor tile(const Tensor& input, const std::vector<std::int64_t>& repeats) {
  REFOLD_CHECK(input.defined(), "tile: input is undefined");
  REFOLD_CHECK(static_cast<std::int64_t>(repeats.size()) == input.dim(),
               "tile: repeats [{}] has {} values for a {}-d input", fmt::join(repeats, ", "),
               repeats.size(), input.dim());
  Shape sizes = input.sizes();
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    REFOLD_CHECK(repeats[d] >= 0, "tile: repeats [{}] has a negative value",
                 fmt::join(repeats, ", "));
    sizes[d] = checked_mul(sizes[d], repeats[d], "tile");
  }
  checked_mul(checked_numel(sizes, "tile"), static_cast<std::int64_t>(input.element_size()),
              "tile");
  Tensor output = empty_like_format(input, sizes);
  if (output.numel() == 0) return output;
  // The input as a [r_0, s_0, r_1, s_1, …] view with stride 0 on each repeat, written into the
  // output seen the same way (a copy of a broadcast view).
  Shape view_sizes, in_strides, out_strides;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    const std::int64_t s = input.sizes()[d];
    view_sizes.insert(view_sizes.end(), {repeats[d], s});
    in_strides.insert(in_strides.end(), {0, input.strides()[d]});
    out_strides.insert(out_strides.end(), {s * output.strides()[d], output.strides()[d]});
  }
  output.as_strided(view_sizes, out_strides, output.storage_offset())
      .copy_(input.as_strided(view_sizes, in_strides, input.storage_offset()));
  return output;
}

namespace {

const char* pad_mode_name(PadMode mode) {
  switch (mode) {
    case PadMode::Constant:
      return "constant";
    case PadMode::Reflect:
      return "reflect";
    case PadMode::Edge:
      return "edge";
    case PadMode::Wrap:
      return "wrap";
  }
  return "?";
}

}  // namespace

std::int64_t pad_source(std::int64_t p, std::int64_t m, PadMode mode) {
  if (p >= 0 && p < m) return p;
  switch (mode) {
    case PadMode::Edge:
      return p < 0 ? 0 : m - 1;
    case PadMode::Wrap:
      return ((p % m) + m) % m;
    case PadMode::Reflect: {
      if (m == 1) return 0;
      // Mirror about 0 and m − 1: period 2(m − 1).
      const std::int64_t period = 2 * (m - 1);
      const std::int64_t q = ((p % period) + period) % period;
      return q < m ? q : period - q;
    }
    case PadMode::Constant:
      break;
  }
  return -1;
}

Tensor onnx_pad(const Tensor& input, const std::vector<std::int64_t>& begin,
                const std::vector<std::int64_t>& end, PadMode mode, double value) {
  REFOLD_CHECK(input.defined(), "pad: input is undefined");
  const auto rank = static_cast<std::size_t>(input.dim());
  REFOLD_CHECK(begin.size() == rank && end.size() == rank,
               "pad: {} begin and {} end pads for a {}-d input", begin.size(), end.size(), rank);
  // Per dimension: crop (negative pads) first, then pad the `kept` elements from `first` on.
  Shape sizes(rank), first(rank), kept(rank), before(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    const std::int64_t n = input.sizes()[d];
    const std::int64_t crop_begin = std::max<std::int64_t>(-begin[d], 0);
    const std::int64_t crop_end = std::max<std::int64_t>(-end[d], 0);
    REFOLD_CHECK(checked_add(crop_begin, crop_end, "pad") <= n,
                 "pad: pads ({}, {}) crop dimension {} (size {}) below zero", begin[d], end[d], d,
                 n);
    first[d] = crop_begin;
    kept[d] = n - crop_begin - crop_end;
    before[d] = std::max<std::int64_t>(begin[d], 0);
    sizes[d] = checked_add(checked_add(kept[d], before[d], "pad"),
                           std::max<std::int64_t>(end[d], 0), "pad");
    REFOLD_CHECK(mode == PadMode::Constant || kept[d] > 0 || sizes[d] == 0,
                 "pad: mode '{}' cannot pad dimension {}, which has no elements",
                 pad_mode_name(mode), d);
  }
  checked_mul(checked_numel(sizes, "pad"), static_cast<std::int64_t>(input.element_size()), "pad");
  Tensor output = empty_like_format(input, sizes);
  detail::visit_storage_type(input.dtype(), [&]<typename T>(T) {
    const T fill = detail::storage_from_double<T>(value);
    const T* in = static_cast<const T*>(input.data_ptr());
    T* out = static_cast<T*>(output.data_ptr());
    const Shape& is = input.strides();
    const Shape& os = output.strides();
    for_each_index(sizes, [&](const Shape& idx) {
      std::int64_t src = 0;
      bool inside = true;
      for (std::size_t d = 0; d < rank && inside; ++d) {
        std::int64_t p = idx[d] - before[d];
        if (p < 0 || p >= kept[d]) {
          if (mode == PadMode::Constant) inside = false;
          p = pad_source(p, kept[d], mode);
        }
        src += (p + first[d]) * is[d];
      }
      out[detail::offset_in(idx, os)] = inside ? in[src] : fill;
    });
  });
  return output;
}

Tensor trilu(const Tensor& input, std::int64_t k, bool upper) {
  REFOLD_CHECK(input.defined(), "trilu: input is undefined");
  REFOLD_CHECK(input.dim() >= 2, "trilu: input must have at least 2 dimensions, got [{}]",
               fmt::join(input.sizes(), ", "));
  Tensor output = empty_like_format(input, input.sizes());
  const auto rank = static_cast<std::size_t>(input.dim());
  detail::visit_storage_type(input.dtype(), [&]<typename T>(T) {
    const T* in = static_cast<const T*>(input.data_ptr());
    T* out = static_cast<T*>(output.data_ptr());
    for_each_index(input.sizes(), [&](const Shape& idx) {
      // j − i without overflow: both are sizes, k is compared as a wider difference.
      const std::int64_t diff = idx[rank - 1] - idx[rank - 2];
      const bool keep = upper ? diff >= k : diff <= k;
      out[detail::offset_in(idx, output.strides())] =
          keep ? in[detail::offset_in(idx, input.strides())] : T{};
    });
  });
  return output;
}

Tensor eye(std::int64_t rows, std::int64_t cols, std::int64_t k, DType dtype) {
  REFOLD_CHECK(rows >= 0 && cols >= 0, "eye: negative size [{}, {}]", rows, cols);
  Tensor output = zeros({rows, cols}, dtype);
  detail::visit_storage_type(dtype, [&]<typename T>(T) {
    T* out = static_cast<T*>(output.data_ptr());
    // Row i holds its one at column i + k where that is in [0, cols).
    for (std::int64_t i = std::max<std::int64_t>(0, -k); i < rows && i < cols - k; ++i)
      out[i * cols + i + k] = detail::storage_from_double<T>(1.0);
  });
  return output;
}

}  // namespace refold::reference
