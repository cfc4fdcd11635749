// TensorImpl and Storage: what a Tensor handle points to. Internal.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "refold/memory.h"
#include "refold/tensor.h"

namespace refold {

// The next tensor version (see TensorImpl::version).
std::uint64_t next_tensor_version();

namespace detail {
// The live-bytes counters of refold/memory.h, updated by every Storage.
void count_allocation(std::size_t nbytes);
void count_free(std::size_t nbytes);
// Bytes of storages held packed (MemoryStats::held_bytes): freed, standing in a kernel's copy.
void count_held(std::size_t nbytes);
void count_unheld(std::size_t nbytes);
// One more layout-changing copy for permute_count(): Tensor::contiguous and the kernels' fast
// permute (functional::to_format) count each one here.
void count_permute();
}  // namespace detail

// A kernel's copy of a whole storage's bytes in its own layout (a conv weight reordered into
// oneDNN's blocked format), from which the bytes can be rebuilt exactly: weights held once,
// core/held_weights.h.
class PackedCopy {
 public:
  virtual ~PackedCopy() = default;
  // Writes the storage's nbytes() bytes, equal to those the copy was packed from.
  virtual void unpack(std::byte* to) const = 0;
};

// 64-byte aligned bytes; freed when the last tensor viewing them goes. Counted in
// memory_stats() (refold/memory.h) while alive.
//
// Held packed: a kernel that packed the bytes may offer its copy (offer_packed); hold_packed()
// then frees the bytes while the copy is kept alive here, and the next data() rebuilds them
// from it — once: a storage read after being held is never held again. Reading through a
// kernel's cache (keyed by version(), not by the data pointer) never calls data().
class Storage {
 public:
  explicit Storage(std::size_t nbytes);
  // Memory refold did not allocate (from_blob): not counted, not freed; `release` runs instead.
  Storage(std::byte* borrowed, std::size_t nbytes, std::function<void()> release);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  std::byte* data() const {
    std::byte* bytes = data_.load(std::memory_order_acquire);
    return bytes != nullptr ? bytes : unpacked();
  }
  std::size_t nbytes() const { return nbytes_; }
  bool borrowed() const { return borrowed_; }  // memory refold did not allocate (from_blob)
  // Unique across the process: drawn from a global counter when the storage is made and each
  // time any view hands out a writable pointer, so version() alone identifies content, even
  // when freed memory is reused. Caches of transformed weights key on it.
  std::uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.store(next_tensor_version(), std::memory_order_relaxed); }
  static constexpr std::size_t kAlignment = 64;

  // `copy`, packed from the bytes of `version`, may stand in for them (ignored for borrowed
  // memory and once the storage has been held and read). The last offer wins.
  void offer_packed(std::weak_ptr<const PackedCopy> copy, std::uint64_t version);
  // Whether hold_packed() would free the bytes now.
  bool can_hold() const;
  // Frees the bytes when an offered copy of the current version is still alive; returns the
  // bytes freed (0: kept). The caller guarantees nothing reads the bytes meanwhile.
  std::size_t hold_packed();

 private:
  std::byte* unpacked() const;
  bool holdable() const;  // can_hold() with packing_ held

  mutable std::atomic<std::byte*> data_{nullptr};  // null only while held packed
  std::size_t nbytes_ = 0;
  std::function<void()> release_;  // set only for borrowed memory
  bool borrowed_ = false;
  std::atomic<std::uint64_t> version_{next_tensor_version()};
  mutable std::mutex packing_;  // guards the fields below, an offer, a hold and a rebuild
  std::weak_ptr<const PackedCopy> offered_;
  std::uint64_t offered_version_ = 0;
  mutable std::shared_ptr<const PackedCopy> held_;  // rebuilds the bytes (null when not held)
  mutable bool rebuilt_ = false;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape sizes;
  Shape strides;
  std::int64_t storage_offset = 0;  // elements
  std::int64_t numel = 0;
  DType dtype = DType::Float32;
};

namespace detail {
// The impl behind a handle, for refold's own code (weights held once count its owners).
struct TensorAccess {
  static const std::shared_ptr<TensorImpl>& impl(const Tensor& t) { return t.impl_; }
};

// Whether `t` is the only handle on its memory: no other handle shares its impl, no other view
// shares its storage, and the storage is refold's own (never memory a caller lent, from_blob).
// Whoever gives up such a handle lets the callee write over it (graph::Op::run_consuming).
bool sole_handle(const Tensor& t);

// The strides that view the elements of (old_sizes, old_strides) as `sizes` in the same logical
// order, or nullopt when no strides can (PyTorch's view rule; Tensor::view). For the layout
// plan, which asks it of shapes it has no tensor for.
std::optional<Shape> view_strides(const Shape& old_sizes, const Shape& old_strides,
                                  const Shape& sizes);
}  // namespace detail

}  // namespace refold
