#include "testing/layouts.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstddef>

namespace refold::testing {
namespace {

std::size_t idx(std::int64_t i) { return static_cast<std::size_t>(i); }

Tensor copied_into(Tensor view, const Tensor& t) {
  view.copy_(t);
  return view;
}

// "float32[2, 5, 3, 4] channels_last, strides [60, 1, 20, 5]"
std::string describe(const Tensor& t) {
  return fmt::format("{}, strides [{}]", t.description(), fmt::join(t.strides(), ", "));
}

}  // namespace

Tensor laid_out(const Tensor& t, MemoryFormat format) {
  return copied_into(empty(t.sizes(), {t.dtype(), format}), t);
}

Tensor with_storage_order(const Tensor& t, const Shape& storage_order) {
  // Storage dim k holds logical dim storage_order[k]; permute(inverse) reads it back, since
  // permute's result dim j is its input's dim inverse[j], and inverse[storage_order[k]] = k.
  Shape stored(storage_order.size()), inverse(storage_order.size());
  for (std::size_t k = 0; k < storage_order.size(); ++k) {
    stored[k] = t.size(storage_order[k]);
    inverse[idx(storage_order[k])] = static_cast<std::int64_t>(k);
  }
  return copied_into(empty(stored, {t.dtype()}).permute(inverse), t);
}

Tensor every_other_element(const Tensor& t) {
  Shape wide = t.sizes();
  wide.back() *= 2;
  const Tensor buffer = full(wide, NAN, {t.dtype()});
  Shape strides = buffer.strides();
  strides.back() *= 2;
  return copied_into(buffer.as_strided(t.sizes(), strides, 1), t);
}

Tensor window_in_nan_buffer(const Tensor& t, MemoryFormat format) {
  Shape big = t.sizes();
  for (std::int64_t& s : big) s += 3;
  const Tensor buffer = full(big, NAN, {t.dtype(), format});
  std::int64_t offset = 0;  // the window starts at 1 in even dims, 2 in odd ones
  for (std::int64_t d = 0; d < t.dim(); ++d) offset += (1 + d % 2) * buffer.stride(d);
  return copied_into(buffer.as_strided(t.sizes(), buffer.strides(), offset), t);
}

std::vector<LayoutVariant> layouts(const Tensor& t) {
  constexpr auto NCHW = MemoryFormat::Contiguous;
  constexpr auto CL = MemoryFormat::ChannelsLast;
  return {{"contiguous", laid_out(t, NCHW), NCHW},
          {"channels_last", laid_out(t, CL), CL},
          {"permuted", with_storage_order(t, {3, 2, 1, 0}), NCHW},
          {"strided", every_other_element(t), NCHW}};
}

std::vector<LayoutVariant> conv_layouts(const Tensor& t) {
  constexpr auto NCHW = MemoryFormat::Contiguous;
  constexpr auto CL = MemoryFormat::ChannelsLast;
  return {{"nchw", laid_out(t, NCHW), NCHW},
          {"nhwc", laid_out(t, CL), CL},
          {"permuted (non-contiguous, strides W < C < H < N)", with_storage_order(t, {0, 2, 1, 3}),
           NCHW},
          {"sliced window of an nchw buffer", window_in_nan_buffer(t, NCHW), NCHW},
          {"sliced window of an nhwc buffer", window_in_nan_buffer(t, CL), CL}};
}

::testing::AssertionResult preserves_format(const Tensor& output, const Tensor& input) {
  if (input.is_non_overlapping_and_dense()) {
    if (output.strides() == input.strides()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "a dense input's strides must be kept: input "
                                         << describe(input) << "; output " << describe(output);
  }
  const MemoryFormat format = input.suggest_memory_format();
  if (output.is_contiguous(format)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "a non-dense input must give an output contiguous in the format it suggests ("
         << memory_format_name(format) << "): input " << describe(input) << "; output "
         << describe(output);
}

}  // namespace refold::testing
