// Reference concat, transpose and depth_to_space for any dtype: each output element is a bit
// copy of one input element (see tensor_ops.h).
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

}  // namespace refold::reference
