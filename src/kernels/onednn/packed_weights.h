// Weights packed once into a primitive's own format, shared by every oneDNN op that lets the
// primitive choose its weight format (format_tag::any): convolutions and linear.
//
//   * weight_memory() hands the primitive its weight: the user's bytes when the primitive's
//     format is the weight's own, else a reorder into that format, made once per (primitive,
//     weight version, view) and cached, least recently used, up to a byte budget;
//   * the key never reads the weight's bytes, so a weight held only in its packed copy
//     (core/held_weights.h) is found without being rebuilt; a packed copy of a whole storage is
//     offered to it (the reverse reorder rebuilds the plain bytes exactly).
// Only src/kernels/onednn/ includes this header (and with it dnnl.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <oneapi/dnnl/dnnl.hpp>

#include "refold/tensor.h"

namespace refold::onednn::detail {

// A process-wide unique id for a new primitive, naming it in the packed-weight keys.
std::uint64_t new_primitive_id();

// Whether `weight` (this version of its bytes, this view) was asked about before: a constant
// read on every run is packed from its second run on, while an operand another op computes anew
// on every run (a MatMul by an activation) is never packed: one reorder per run and a cache
// full of dead versions would cost more than the product saves.
bool seen_before(const Tensor& weight);

// The weight memory for the primitive `primitive_id`, whose weights format is `packed`.
// `weight` is the caller's tensor (the cache key and where a packed copy is offered); `bytes`
// holds the same elements in the layout `user` describes (weight itself, or a dense copy).
dnnl::memory weight_memory(std::string_view op, std::uint64_t primitive_id, const Tensor& weight,
                           const Tensor& bytes, const dnnl::memory::desc& user,
                           const dnnl::memory::desc& packed);

struct PackedWeightStats {
  std::uint64_t hits = 0;
  std::uint64_t packs = 0;   // reorders of a weight into a primitive's format
  std::uint64_t direct = 0;  // calls whose weight was already in the primitive's format
  std::size_t weights = 0;   // packed copies now cached
  std::size_t bytes = 0;
};
PackedWeightStats packed_weight_stats();
// Drops every packed copy and zeroes the counters.
void clear_packed_weights();
// Default: 1 GiB.
void set_packed_weight_capacity(std::size_t bytes);

}  // namespace refold::onednn::detail
