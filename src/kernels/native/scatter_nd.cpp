// native::scatter_nd (scatter_nd.h): the plan's copies, in order.
#include "kernels/native/scatter_nd.h"

#include <cstddef>
#include <cstring>

#include <fmt/ranges.h>

#include "core/check.h"
#include "kernels/native/decline.h"
#include "kernels/reference/tensor_ops.h"

namespace refold::native {

ScatterPlan scatter_plan(const Shape& data_sizes, const Tensor& indices) {
  ScatterPlan plan;
  plan.data_sizes = data_sizes;
  const auto k = static_cast<std::size_t>(indices.size(-1));
  std::int64_t block = 1;  // S
  for (std::size_t d = k; d < data_sizes.size(); ++d) block *= data_sizes[d];
  const std::vector<std::int64_t> offsets =
      reference::scatter_nd_offsets(data_sizes, contiguous_strides(data_sizes), indices);
  if (block == 0) return plan;
  std::int64_t src = 0;
  for (const std::int64_t dst : offsets) {
    ScatterPlan::Copy* last = plan.copies.empty() ? nullptr : &plan.copies.back();
    if (last != nullptr && last->dst + last->count == dst && last->src + last->count == src)
      last->count += block;
    else
      plan.copies.push_back({dst, src, block});
    src += block;
  }
  std::int64_t numel = 1;
  for (const std::int64_t s : data_sizes) numel *= s;
  plan.covers_data =
      plan.copies.size() == 1 && plan.copies[0].dst == 0 && plan.copies[0].count == numel;
  return plan;
}

Tensor scatter_nd(const Tensor& data, const Tensor& updates, const ScatterPlan& plan,
                  std::string* declined) {
  REFOLD_CHECK(data.sizes() == plan.data_sizes, "scatter_nd: a plan for data [{}] given data [{}]",
               fmt::join(plan.data_sizes, ", "), fmt::join(data.sizes(), ", "));
  if (data.dim() == 4 && !data.is_contiguous() &&
      data.suggest_memory_format() == MemoryFormat::ChannelsLast)
    return decline("scatter_nd", "data is channels_last (the reference keeps the format)",
                   declined);
  Tensor out =
      plan.covers_data ? empty(data.sizes(), data.dtype()) : data.clone(MemoryFormat::Contiguous);
  const Tensor source = updates.contiguous();
  const std::size_t element = data.element_size();
  auto* dst = static_cast<std::byte*>(out.data_ptr());
  const auto* src = static_cast<const std::byte*>(source.data_ptr());
  for (const ScatterPlan::Copy& c : plan.copies)
    std::memcpy(dst + static_cast<std::size_t>(c.dst) * element,
                src + static_cast<std::size_t>(c.src) * element,
                static_cast<std::size_t>(c.count) * element);
  return out;
}

}  // namespace refold::native
