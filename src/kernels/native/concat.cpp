// native::cat and native::split (concat.h): rows in memory order, each the pieces' rows side by
// side.
#include "kernels/native/concat.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <optional>
#include <type_traits>

#include "kernels/native/decline.h"
#include "kernels/native/row_threads.h"
#include "kernels/reference/tensor_ops.h"

namespace refold::native {

namespace {

// Per-dim values (sizes, strides) in memory order: logical for contiguous, (N, H, W, C) for
// channels_last.
Shape in_memory_order(const Shape& logical, MemoryFormat format) {
  if (format != MemoryFormat::ChannelsLast) return logical;
  return {logical[0], logical[2], logical[3], logical[1]};
}

// The distance in elements between t's rows as cat copies them, [outer][inner] over the
// physical axes before q and from q on: the axes from q on one dense run, those before q one
// arithmetic run of rows (size-1 axes aside). A dense t's rows are `inner` apart; a slice's
// further (a channel slice of an NHWC tensor, torch.roll's slice along W). nullopt when t's
// memory holds no such rows (a permuted view, an NCHW input beside NHWC ones).
std::optional<std::int64_t> row_stride(const Tensor& t, MemoryFormat format, std::int64_t q) {
  const Shape sizes = in_memory_order(t.sizes(), format),
              strides = in_memory_order(t.strides(), format);
  std::int64_t run = 1;  // the stride the next axis outward must have to continue the run
  for (auto a = static_cast<std::int64_t>(sizes.size()) - 1; a >= q; --a) {
    const auto u = static_cast<std::size_t>(a);
    if (sizes[u] == 1) continue;
    if (strides[u] != run) return std::nullopt;
    run *= sizes[u];
  }
  std::optional<std::int64_t> row;
  for (auto a = q - 1; a >= 0; --a) {
    const auto u = static_cast<std::size_t>(a);
    if (sizes[u] == 1) continue;
    if (row && strides[u] != run) return std::nullopt;
    if (!row) row = strides[u];
    run = strides[u] * sizes[u];
  }
  return row.value_or(run);
}

// memcpy for the short rows of a channel concat in NHWC (a GhostNet module's 8 + 8 channels
// are 32-byte rows): fixed-size moves the compiler inlines, the last one overlapping the one
// before it, instead of a library call per row. With the rows copied input by input in blocks
// (cat below), 2 × 8 channels at 112² took 0.024 ms on 2 threads instead of 0.061 (Xeon);
// GhostNet 0.95× and YOLOv8n 0.96× the time. Rows of 64 bytes and more take memcpy.
inline void copy_row(std::byte* dst, const std::byte* src, std::size_t bytes) {
  auto move = [&](std::size_t at, auto size) { std::memcpy(dst + at, src + at, size); };
  if (bytes >= 64) {
    std::memcpy(dst, src, bytes);
  } else if (bytes >= 32) {
    move(0, std::integral_constant<std::size_t, 32>{});
    move(bytes - 32, std::integral_constant<std::size_t, 32>{});
  } else if (bytes >= 16) {
    move(0, std::integral_constant<std::size_t, 16>{});
    move(bytes - 16, std::integral_constant<std::size_t, 16>{});
  } else if (bytes >= 8) {
    move(0, std::integral_constant<std::size_t, 8>{});
    move(bytes - 8, std::integral_constant<std::size_t, 8>{});
  } else {
    std::memcpy(dst, src, bytes);
  }
}

// The physical axis of logical dim d: channels_last's memory order is N, H, W, C.
std::int64_t physical_axis(std::int64_t d, MemoryFormat format) {
  constexpr std::int64_t kNhwcAxis[] = {0, 3, 1, 2};
  return format == MemoryFormat::ChannelsLast ? kNhwcAxis[d] : d;
}

// Rows o < outer of the whole tensor, each holding piece k's row of piece_bytes[k] at the offset
// of the pieces before it: copy(o, k, offset) moves one piece row, for every piece k with
// moved(k). Rows go in blocks, each block piece by piece: the row size stays the same through a
// block's inner loop (copy_row's branch settles), and each piece is read or written as one
// stream.
template <typename Moved, typename Copy>
void for_each_piece_row(std::int64_t outer, const std::vector<std::size_t>& piece_bytes,
                        int threads, Moved&& moved, Copy&& copy) {
  // 256 rows a block, fewer where that leaves a thread idle: torch.roll's slices of Swin's
  // [1, 56, 56, 96] tokens are 56 rows of 5–50 KiB.
  const std::int64_t block_rows =
      std::clamp<std::int64_t>((outer + 4 * threads - 1) / (4 * threads), 1, 256);
  const std::int64_t blocks = (outer + block_rows - 1) / block_rows;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t begin = b * block_rows, end = std::min(outer, begin + block_rows);
    std::size_t offset = 0;  // piece k's place in a row of the whole
    for (std::size_t k = 0; k < piece_bytes.size(); ++k) {
      if (piece_bytes[k] > 0 && moved(k))
        for (std::int64_t o = begin; o < end; ++o) copy(o, k, offset);
      offset += piece_bytes[k];
    }
  }
}

}  // namespace

Tensor cat(const std::vector<Tensor>& inputs, std::int64_t dim, std::string* declined,
           const PlaceInput& place) {
  constexpr std::string_view op = "cat";
  if (inputs.empty() || !inputs[0].defined() || inputs[0].dim() == 0)
    return decline(op, "inputs the reference reports", declined);
  const Tensor& first = inputs[0];
  const std::int64_t rank = first.dim();
  if (dim < -rank || dim >= rank) return decline(op, "a dim the reference reports", declined);
  const std::int64_t d = dim < 0 ? dim + rank : dim;
  const MemoryFormat format = reference::cat_output_format(inputs);
  const std::int64_t q = physical_axis(d, format);

  Shape out_sizes = first.sizes();
  out_sizes[static_cast<std::size_t>(d)] = 0;
  const Shape first_physical = in_memory_order(first.sizes(), format);
  std::int64_t outer = 1;
  for (std::int64_t a = 0; a < q; ++a) outer *= first_physical[static_cast<std::size_t>(a)];
  std::vector<std::int64_t> inner(inputs.size());
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& t = inputs[k];
    if (!t.defined() || t.dim() != rank || t.dtype() != first.dtype())
      return decline(op, "inputs the reference reports", declined);
    for (std::int64_t a = 0; a < rank; ++a) {
      if (a != d && t.size(a) != first.size(a))
        return decline(op, "sizes the reference reports", declined);
    }
    const Shape physical = in_memory_order(t.sizes(), format);
    inner[k] = 1;
    for (std::int64_t a = q; a < rank; ++a) inner[k] *= physical[static_cast<std::size_t>(a)];
    out_sizes[static_cast<std::size_t>(d)] += t.size(d);
  }
  Tensor output = empty(out_sizes, {first.dtype(), format});
  if (output.numel() == 0) return output;

  // Rows from the inputs whose memory holds them, in one pass over the output.
  std::vector<std::optional<std::int64_t>> rows(inputs.size());
  for (std::size_t k = 0; k < inputs.size(); ++k)
    if (inputs[k].numel() > 0) rows[k] = row_stride(inputs[k], format, q);
  const std::size_t element = first.element_size();
  const std::size_t row_bytes = static_cast<std::size_t>(output.numel() / outer) * element;
  std::vector<const std::byte*> sources(inputs.size());
  std::vector<std::size_t> bytes(inputs.size()), source_row_bytes(inputs.size());
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    sources[k] = static_cast<const std::byte*>(inputs[k].data_ptr());
    bytes[k] = static_cast<std::size_t>(inner[k]) * element;
    source_row_bytes[k] = static_cast<std::size_t>(rows[k].value_or(0)) * element;
  }
  auto* out = static_cast<std::byte*>(output.data_ptr());
  for_each_piece_row(
      outer, bytes, copy_kernel_threads(output.numel()),
      [&](std::size_t k) { return rows[k].has_value(); },
      [&](std::int64_t o, std::size_t k, std::size_t offset) {
        const auto r = static_cast<std::size_t>(o);
        copy_row(out + r * row_bytes + offset, sources[k] + r * source_row_bytes[k], bytes[k]);
      });
  // Then each other input straight into its place: the output's view at its offset along d.
  std::int64_t offset = output.storage_offset();
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& t = inputs[k];
    if (t.numel() > 0 && !rows[k]) {
      Tensor dst = output.as_strided(t.sizes(), output.strides(), offset);
      if (place)
        place(t, dst);
      else
        dst.copy_(t);
    }
    offset += t.size(d) * output.stride(d);
  }
  return output;
}

std::vector<Tensor> split(const Tensor& x, std::int64_t dim,
                          const std::vector<std::int64_t>& lengths, std::string* declined) {
  constexpr std::string_view op = "split";
  if (!x.defined() || x.dim() == 0 || dim < -x.dim() || dim >= x.dim())
    return {decline(op, "arguments the caller reports", declined)};
  const std::int64_t d = dim < 0 ? dim + x.dim() : dim;
  std::int64_t total = 0;
  for (const std::int64_t length : lengths) total += length;
  if (total != x.size(d) ||
      std::any_of(lengths.begin(), lengths.end(), [](std::int64_t l) { return l < 0; }))
    return {decline(op, "lengths the caller reports", declined)};
  const bool nhwc =
      !x.is_contiguous() && x.dim() == 4 && x.is_contiguous(MemoryFormat::ChannelsLast);
  if (!x.is_contiguous() && !nhwc) return {decline(op, "x is not dense", declined)};
  const MemoryFormat format = nhwc ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
  const std::int64_t q = physical_axis(d, format);
  const Shape physical = in_memory_order(x.sizes(), format);
  std::int64_t outer = 1, after = 1;  // ∏ physical sizes before q, and after it
  for (std::int64_t a = 0; a < x.dim(); ++a) {
    if (a < q) outer *= physical[static_cast<std::size_t>(a)];
    if (a > q) after *= physical[static_cast<std::size_t>(a)];
  }
  const std::size_t element = x.element_size();
  std::vector<Tensor> pieces;
  std::vector<std::byte*> targets;
  std::vector<std::size_t> bytes;
  for (const std::int64_t length : lengths) {
    Shape sizes = x.sizes();
    sizes[static_cast<std::size_t>(d)] = length;
    pieces.push_back(empty(sizes, {x.dtype(), format}));
    targets.push_back(static_cast<std::byte*>(pieces.back().data_ptr()));
    bytes.push_back(static_cast<std::size_t>(length * after) * element);
  }
  if (x.numel() == 0) return pieces;
  const std::size_t row_bytes = static_cast<std::size_t>(x.size(d) * after) * element;
  const auto* in = static_cast<const std::byte*>(x.data_ptr());
  for_each_piece_row(
      outer, bytes, copy_kernel_threads(x.numel()), [](std::size_t) { return true; },
      [&](std::int64_t o, std::size_t k, std::size_t offset) {
        const auto r = static_cast<std::size_t>(o);
        copy_row(targets[k] + r * bytes[k], in + r * row_bytes + offset, bytes[k]);
      });
  return pieces;
}

}  // namespace refold::native
