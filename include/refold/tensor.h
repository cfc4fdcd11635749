// refold::Tensor — a strided view onto shared, 64-byte aligned storage.
//
// Invariants (checked where tensors are made):
//   sizes()[i] >= 0;  numel() = prod(sizes()) (1 for a 0-d tensor), computed overflow-checked;
//   element (i0, i1, …) lives at  data_ptr() + sum_k i_k · strides()[k]  elements;
//   a 4-d tensor's sizes are always logical (N, C, H, W) — its MemoryFormat lives in strides():
//     contiguous     strides = (C·H·W, H·W, W, 1)
//     channels_last  strides = (H·W·C, 1, W·C, C)
//
// A Tensor is a handle: copies share one TensorImpl (sizes, strides, storage), like at::Tensor.
// Views (permute, as_strided) make a new TensorImpl over the same storage. set_data() swaps
// what a handle's impl points to, so every holder of a parameter sees the new layout — this is
// how convert_conv2d_weight_memory_format converts "in place".
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "refold/dtype.h"
#include "refold/memory_format.h"

namespace refold {

using Shape = std::vector<std::int64_t>;

struct TensorOptions {
  DType dtype = DType::Float32;
  MemoryFormat memory_format = MemoryFormat::Contiguous;

  TensorOptions() = default;
  TensorOptions(DType d) : dtype(d) {}                 // NOLINT: implicit
  TensorOptions(MemoryFormat f) : memory_format(f) {}  // NOLINT: implicit
  TensorOptions(DType d, MemoryFormat f) : dtype(d), memory_format(f) {}
};

// Deterministic random numbers, identical on every platform (no std:: distributions).
class Generator {
 public:
  explicit Generator(std::uint64_t seed = 0x5EED) : state_(seed) {}
  std::uint64_t next_u64();  // splitmix64
  double uniform();          // [0, 1), 53 random bits
  double normal();           // standard normal, Box–Muller
 private:
  std::uint64_t state_;
};
Generator& default_generator();
void manual_seed(std::uint64_t seed);

struct TensorImpl;
namespace detail {
struct TensorAccess;  // core/tensor_impl.h: the impl behind a handle, for refold's own code
}  // namespace detail

class Tensor {
 public:
  Tensor() = default;  // undefined tensor
  bool defined() const { return impl_ != nullptr; }

  const Shape& sizes() const;
  const Shape& strides() const;
  std::int64_t size(std::int64_t dim) const;  // dim may be negative (counts from the end)
  std::int64_t stride(std::int64_t dim) const;
  std::int64_t dim() const;
  std::int64_t numel() const;
  std::int64_t storage_offset() const;  // in elements
  DType dtype() const;
  std::size_t element_size() const { return refold::element_size(dtype()); }

  // --- memory format (PyTorch semantics; see Note [Ambiguous memory formats] in tensor.cpp)
  bool is_contiguous(MemoryFormat format = MemoryFormat::Contiguous) const;
  MemoryFormat suggest_memory_format() const;
  bool is_non_overlapping_and_dense() const;
  // Returns *this when already contiguous in `format`, else a copy laid out that way.
  // A copy that changes the layout (a permute) is counted, see permute_count().
  Tensor contiguous(MemoryFormat format = MemoryFormat::Contiguous) const;
  // Converts dtype; Preserve keeps a dense tensor's strides exactly. Returns *this if nothing
  // would change.
  Tensor to(DType dtype, MemoryFormat format = MemoryFormat::Preserve) const;
  Tensor clone(MemoryFormat format = MemoryFormat::Preserve) const;

  // --- views (share storage)
  Tensor permute(const Shape& dims) const;
  Tensor as_strided(const Shape& sizes, const Shape& strides, std::int64_t storage_offset) const;
  Tensor reshape(const Shape& sizes) const;  // a view when contiguous, else a contiguous copy
  // A view with `sizes` (one may be −1) over the same elements in the same logical order, with
  // whatever strides express it (PyTorch's view: a permuted or sliced tensor often has them);
  // an undefined Tensor when none can. Unlike reshape, never copies, and the view may be dense
  // in no memory format.
  Tensor view(const Shape& sizes) const;

  // --- element access by logical index (bounds-checked; converts to/from float)
  float at(std::initializer_list<std::int64_t> index) const;
  void set(std::initializer_list<std::int64_t> index, float value);
  float item() const;                    // the only element of a 1-element tensor
  std::vector<float> to_vector() const;  // all elements in logical (row-major) order

  // --- raw data (pointer to element (0, …, 0); dtype-checked)
  void* data_ptr();
  const void* data_ptr() const;
  template <typename T>
  T* data() {
    check_dtype_for(sizeof(T), dtype_of<T>());
    return static_cast<T*>(data_ptr());
  }
  template <typename T>
  const T* data() const {
    check_dtype_for(sizeof(T), dtype_of<T>());
    return static_cast<const T*>(data_ptr());
  }

  // --- in-place
  Tensor& copy_(const Tensor& src);  // same sizes; converts dtype and layout
  Tensor& fill_(float value);
  // Makes this handle (and all its copies) refer to `other`'s storage, sizes, strides and dtype.
  void set_data(const Tensor& other);

  // The version of the storage: changes whenever any view of it hands out a writable pointer
  // (copy_, fill_, set, a non-const data_ptr()/data<T>()); unique across the process, so caches
  // of derived data (packed weights) key on (data_ptr(), version()).
  std::uint64_t version() const;

  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  bool shares_storage(const Tensor& other) const;
  std::string description() const;  // e.g. "float32[2, 8, 4, 4] channels_last"

 private:
  friend struct detail::TensorAccess;
  friend Tensor empty_strided(const Shape&, const Shape&, DType);
  friend Tensor from_blob(void*, const Shape&, const Shape&, DType, std::function<void()>);
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  const TensorImpl& impl() const;
  void check_dtype_for(std::size_t size, DType expected) const;
  template <typename T>
  static constexpr DType dtype_of() {
    if constexpr (std::is_same_v<T, float>)
      return DType::Float32;
    else if constexpr (std::is_same_v<T, BFloat16>)
      return DType::BFloat16;
    else {
      static_assert(std::is_same_v<T, std::int64_t>);
      return DType::Int64;
    }
  }
  std::shared_ptr<TensorImpl> impl_;
};

// --- factories. sizes are logical; options choose dtype and memory format.
// ChannelsLast requires a 4-d shape; Preserve is rejected (there is nothing to preserve).
Tensor empty(const Shape& sizes, TensorOptions options = {});
Tensor empty_strided(const Shape& sizes, const Shape& strides, DType dtype = DType::Float32);
Tensor empty_like(const Tensor& like, TensorOptions options);  // Preserve: like's layout
// A tensor over memory refold did not allocate (a NumPy array, a DLPack tensor), without a
// copy: element (i0, i1, …) at data + Σ i_k · strides[k] elements (strides ≥ 0). Not counted
// against the memory limit; `release` (may be empty) runs when the last view of it goes. The
// memory must stay valid until then; refold never writes into a tensor it is given as input.
Tensor from_blob(void* data, const Shape& sizes, const Shape& strides, DType dtype,
                 std::function<void()> release = {});
Tensor zeros(const Shape& sizes, TensorOptions options = {});
Tensor ones(const Shape& sizes, TensorOptions options = {});
Tensor full(const Shape& sizes, float value, TensorOptions options = {});
Tensor rand(const Shape& sizes, TensorOptions options = {}, Generator& gen = default_generator());
Tensor randn(const Shape& sizes, TensorOptions options = {}, Generator& gen = default_generator());
// `values` in logical row-major order.
Tensor from_values(std::span<const float> values, const Shape& sizes, TensorOptions options = {});

// Strides each format gives `sizes` (size-0 dims count as 1 so strides stay positive).
Shape contiguous_strides(const Shape& sizes);
Shape channels_last_strides(const Shape& sizes);  // requires 4-d

// Counts layout-changing copies made by Tensor::contiguous (the permutes of the memory-format
// seed): a copy counts when the target format differs from the source's
// suggest_memory_format(). Global, thread-safe.
std::uint64_t permute_count();
void reset_permute_count();

}  // namespace refold
