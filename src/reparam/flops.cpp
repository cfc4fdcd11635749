// FLOP counting for the blocks; the convention is in flops.h.
#include "reparam/flops.h"

#include "core/check.h"
#include "core/checked_math.h"

namespace refold::reparam::detail {
namespace {

void check_input(std::string_view what, const Shape& input, std::int64_t channels,
                 std::string_view layer) {
  REFOLD_CHECK(input.size() == 4, "{}: flops: the input shape must be 4-d [N, C, H, W], got [{}]",
               what, fmt::join(input, ", "));
  for (std::int64_t s : input)
    REFOLD_CHECK(s > 0, "{}: flops: input shape [{}] has a non-positive size", what,
                 fmt::join(input, ", "));
  REFOLD_CHECK(input[1] == channels, "{}: flops: input has {} channels, {} expects {}", what,
               input[1], layer, channels);
}

}  // namespace

// Output [N, O, H_o, W_o]; each output element is a dot product of (C/g)·kh·kw multiply-adds.
Counted conv_flops(std::string_view what, const nn::Conv2d& conv, const Shape& input) {
  const nn::Conv2dOptions& o = conv.options();
  check_input(what, input, o.in_channels(), conv.type_name());
  const Size2d k = o.kernel_size(), s = o.stride(), d = o.dilation();
  const Pads2d p = o.padding().resolve(k, d);
  const Shape out{input[0], o.out_channels(),
                  conv_output_size(input[2], k.h, s.h, p.top, p.bottom, d.h),
                  conv_output_size(input[3], k.w, s.w, p.left, p.right, d.w)};
  const std::int64_t outputs = checked_numel(out, what);
  const std::int64_t taps =
      checked_mul(checked_mul(o.in_channels() / o.groups(), k.h, what), k.w, what);
  std::int64_t flops = checked_mul(checked_mul(outputs, taps, what), 2, what);
  if (conv.has_bias()) flops = checked_add(flops, outputs, what);
  return {flops, out};
}

Counted avg_pool_flops(std::string_view what, const nn::AvgPool2d& pool, const Shape& input) {
  const nn::AvgPool2dOptions& o = pool.options();
  REFOLD_CHECK(input.size() == 4, "{}: flops: the input shape must be 4-d, got [{}]", what,
               fmt::join(input, ", "));
  const Size2d k = o.kernel_size(), s = o.stride(), p = o.padding();
  const Shape out{input[0], input[1], pool_output_size(input[2], k.h, s.h, p.h, 1, o.ceil_mode()),
                  pool_output_size(input[3], k.w, s.w, p.w, 1, o.ceil_mode())};
  return {checked_mul(checked_numel(out, what), checked_mul(k.h, k.w, what), what), out};
}

std::int64_t batch_norm_flops(std::string_view what, const Shape& shape) {
  return checked_mul(checked_numel(shape, what), 2, what);
}

std::int64_t sum_flops(std::string_view what, const Shape& shape, std::int64_t terms) {
  return terms < 2 ? 0 : checked_mul(checked_numel(shape, what), terms - 1, what);
}

Shape padded(const Shape& shape, std::int64_t pad) {
  return {shape[0], shape[1], shape[2] + 2 * pad, shape[3] + 2 * pad};
}

std::int64_t total(std::string_view what, std::initializer_list<std::int64_t> values) {
  std::int64_t sum = 0;
  for (std::int64_t v : values) sum = checked_add(sum, v, what);
  return sum;
}

}  // namespace refold::reparam::detail
