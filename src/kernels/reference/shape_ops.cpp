// Reference shape operators: flatten, cat, constant pad, pixel_shuffle. They move elements
// without arithmetic, so every output element is an exact copy of an input element (or the pad
// value).
#include <algorithm>
#include <span>
#include <string>

#include "core/check.h"
#include "core/checked_math.h"
#include "core/element_access.h"
#include "refold/reference.h"

namespace refold::reference {
namespace {

void check_float(const Tensor& t, const char* op, const std::string& name) {
  REFOLD_CHECK(t.defined(), "{}: {} is undefined", op, name);
  REFOLD_CHECK(t.dtype() == DType::Float32 || t.dtype() == DType::BFloat16,
               "{}: {} has dtype {}; only float32 and bfloat16 are supported", op, name,
               dtype_name(t.dtype()));
}

// A dimension index in [−rank, rank) → [0, rank). A 0-d tensor accepts 0 and −1, as in PyTorch.
std::int64_t wrap_dim(std::int64_t dim, std::int64_t rank, const char* op, const char* name) {
  const std::int64_t bound = std::max<std::int64_t>(rank, 1);
  REFOLD_CHECK(dim >= -bound && dim < bound, "{}: {} ({}) out of range for a {}-d tensor", op, name,
               dim, rank);
  return dim < 0 ? dim + bound : dim;
}

// 4-d outputs keep the format the input suggests; channels_last exists only for 4-d.
Tensor empty_in_format_of(const Tensor& input, const Shape& sizes) {
  const MemoryFormat format =
      sizes.size() == 4 ? input.suggest_memory_format() : MemoryFormat::Contiguous;
  return empty(sizes, {input.dtype(), format});
}

}  // namespace

// flatten(start, end): dims start..end become one of their product. The data is read in
// logical (row-major) order, so a channels_last input is copied to contiguous first; a
// contiguous input gives a view. Nothing to merge (start == end) returns the input, as PyTorch.
Tensor flatten(const Tensor& input, std::int64_t start_dim, std::int64_t end_dim) {
  check_float(input, "flatten", "input");
  const std::int64_t rank = input.dim();
  const std::int64_t start = wrap_dim(start_dim, rank, "flatten", "start_dim");
  const std::int64_t end = wrap_dim(end_dim, rank, "flatten", "end_dim");
  REFOLD_CHECK(start <= end, "flatten: start_dim ({}) cannot come after end_dim ({})", start_dim,
               end_dim);
  if (rank == 0) return input.reshape({1});
  if (start == end) return input;
  const Shape& sizes = input.sizes();
  Shape out(sizes.begin(), sizes.begin() + start);
  out.push_back(checked_numel(std::span(sizes).subspan(static_cast<std::size_t>(start),
                                                       static_cast<std::size_t>(end - start + 1)),
                              "flatten"));
  out.insert(out.end(), sizes.begin() + end + 1, sizes.end());
  return input.reshape(out);
}

MemoryFormat cat_output_format(const std::vector<Tensor>& inputs) {
  const bool channels_last =
      !inputs.empty() && std::all_of(inputs.begin(), inputs.end(), [](const Tensor& t) {
        return t.defined() && t.dim() == 4 &&
               t.suggest_memory_format() == MemoryFormat::ChannelsLast;
      });
  return channels_last ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
}

// cat along `dim`: inputs agree in every other dimension; input k lands at an offset of the
// sizes of inputs 0..k−1 along `dim`. The output is channels_last only when every input
// suggests channels_last (PyTorch's cat_compute_output_memory_format), else contiguous.
Tensor cat(const std::vector<Tensor>& inputs, std::int64_t dim) {
  REFOLD_CHECK(!inputs.empty(), "cat: expected a non-empty list of tensors");
  for (std::size_t k = 0; k < inputs.size(); ++k)
    check_float(inputs[k], "cat", fmt::format("input {}", k));
  const Tensor& first = inputs[0];
  REFOLD_CHECK(first.dim() > 0, "cat: input 0 is 0-d; zero-dimensional tensors cannot be joined");
  const std::int64_t d = wrap_dim(dim, first.dim(), "cat", "dim");
  Shape sizes = first.sizes();
  sizes[d] = 0;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& t = inputs[k];
    REFOLD_CHECK(t.dtype() == first.dtype(), "cat: input {} has dtype {} but input 0 has {}", k,
                 dtype_name(t.dtype()), dtype_name(first.dtype()));
    bool same = t.dim() == first.dim();
    for (std::int64_t i = 0; same && i < t.dim(); ++i) same = i == d || t.size(i) == first.size(i);
    REFOLD_CHECK(same,
                 "cat: input {} has shape [{}] but input 0 has [{}]; they must match in every "
                 "dimension except {}",
                 k, fmt::join(t.sizes(), ", "), fmt::join(first.sizes(), ", "), d);
    sizes[d] = checked_add(sizes[d], t.size(d), "cat");
  }
  Tensor output = empty(sizes, {first.dtype(), cat_output_format(inputs)});
  const FloatWriter out(output);
  std::int64_t offset = 0;
  for (const Tensor& t : inputs) {
    const FloatReader in(t);
    for_each_index(t.sizes(), [&](const Shape& idx) {
      Shape o = idx;
      o[d] += offset;
      out.set_offset(offset_of(o, out.strides()), in.at_offset(offset_of(idx, in.strides())));
    });
    offset += t.size(d);
  }
  return output;
}

// Constant pad: pads = (last_begin, last_end, second_last_begin, ...). Along a padded dim
//   out[i] = in[i − begin]  where 0 ≤ i − begin < size, else value;  out size = size + begin + end.
// A negative begin/end crops instead; cropping more than the dim holds is an error.
Tensor pad(const Tensor& input, const std::vector<std::int64_t>& pads, float value) {
  check_float(input, "pad", "input");
  const auto rank = static_cast<std::size_t>(input.dim());
  REFOLD_CHECK(pads.size() % 2 == 0,
               "pad: pads must have an even length (begin, end pairs), got {}", pads.size());
  REFOLD_CHECK(pads.size() <= 2 * rank, "pad: {} pads given for a {}-d tensor (at most {})",
               pads.size(), rank, 2 * rank);
  Shape begin(rank, 0), sizes = input.sizes();
  for (std::size_t k = 0; k < pads.size() / 2; ++k) {
    const std::size_t dim = rank - 1 - k;
    const std::int64_t before = pads[2 * k], after = pads[2 * k + 1];
    // The crops must fit in the dimension before any padding is added: PyTorch crops first,
    // so (-3, 5) on a size-2 dimension is an error although 2 - 3 + 5 >= 0.
    const std::int64_t crop =
        checked_add(std::min<std::int64_t>(before, 0), std::min<std::int64_t>(after, 0), "pad");
    REFOLD_CHECK(checked_add(input.size(dim), crop, "pad") >= 0,
                 "pad: pads ({}, {}) crop dimension {} (size {}) below zero", before, after, dim,
                 input.size(dim));
    begin[dim] = before;
    sizes[dim] = checked_add(checked_add(input.size(dim), before, "pad"), after, "pad");
  }
  Tensor output = empty_in_format_of(input, sizes);
  const FloatReader in(input);
  const FloatWriter out(output);
  const float stored = round_to_dtype(value, input.dtype());
  Shape src(rank);
  for_each_index(sizes, [&](const Shape& idx) {
    bool inside = true;
    for (std::size_t i = 0; i < rank; ++i) {
      src[i] = idx[i] - begin[i];
      inside = inside && src[i] >= 0 && src[i] < input.sizes()[i];
    }
    out.set_offset(offset_of(idx, out.strides()),
                   inside ? in.at_offset(offset_of(src, in.strides())) : stored);
  });
  return output;
}

// pixel_shuffle(r): [*, C·r², H, W] → [*, C, H·r, W·r],
//   out[..., c, h·r + i, w·r + j] = in[..., c·r² + i·r + j, h, w].
Tensor pixel_shuffle(const Tensor& input, std::int64_t upscale_factor) {
  check_float(input, "pixel_shuffle", "input");
  const std::int64_t r = upscale_factor;
  REFOLD_CHECK(r > 0, "pixel_shuffle: upscale_factor ({}) must be positive", r);
  REFOLD_CHECK(input.dim() >= 3, "pixel_shuffle: input must have at least 3 dimensions, got [{}]",
               fmt::join(input.sizes(), ", "));
  const std::int64_t rr = checked_mul(r, r, "pixel_shuffle");
  const std::int64_t channels = input.size(-3);
  REFOLD_CHECK(channels % rr == 0,
               "pixel_shuffle: input channels ({}) must be divisible by upscale_factor² ({})",
               channels, rr);
  const auto rank = static_cast<std::size_t>(input.dim());
  Shape sizes = input.sizes();
  sizes[rank - 3] = channels / rr;
  sizes[rank - 2] = checked_mul(sizes[rank - 2], r, "pixel_shuffle");
  sizes[rank - 1] = checked_mul(sizes[rank - 1], r, "pixel_shuffle");
  Tensor output = empty_in_format_of(input, sizes);
  const FloatReader in(input);
  const FloatWriter out(output);
  Shape src(rank);
  for_each_index(sizes, [&](const Shape& idx) {
    std::copy(idx.begin(), idx.end(), src.begin());
    const std::int64_t c = idx[rank - 3], oh = idx[rank - 2], ow = idx[rank - 1];
    src[rank - 3] = c * rr + (oh % r) * r + (ow % r);
    src[rank - 2] = oh / r;
    src[rank - 1] = ow / r;
    out.set_offset(offset_of(idx, out.strides()), in.at_offset(offset_of(src, in.strides())));
  });
  return output;
}

}  // namespace refold::reference
