// TensorImpl and Storage: what a Tensor handle points to. Internal.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "refold/memory.h"
#include "refold/tensor.h"

namespace refold {

// The next tensor version (see TensorImpl::version).
std::uint64_t next_tensor_version();

namespace detail {
// The live-bytes counters of refold/memory.h, updated by every Storage.
void count_allocation(std::size_t nbytes);
void count_free(std::size_t nbytes);
// One more layout-changing copy for permute_count(): Tensor::contiguous and the kernels' fast
// permute (functional::to_format) count each one here.
void count_permute();
}  // namespace detail

// 64-byte aligned bytes; freed when the last tensor viewing them goes. Counted in
// memory_stats() (refold/memory.h) while alive.
class Storage {
 public:
  explicit Storage(std::size_t nbytes);
  // Memory refold did not allocate (from_blob): not counted, not freed; `release` runs instead.
  Storage(std::byte* borrowed, std::size_t nbytes, std::function<void()> release);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  std::byte* data() const { return data_; }
  std::size_t nbytes() const { return nbytes_; }
  // Unique across the process: drawn from a global counter when the storage is made and each
  // time any view hands out a writable pointer, so (data pointer, version) identifies content
  // even when freed memory is reused. Caches of transformed weights key on it.
  std::uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.store(next_tensor_version(), std::memory_order_relaxed); }
  static constexpr std::size_t kAlignment = 64;

 private:
  std::byte* data_ = nullptr;
  std::size_t nbytes_ = 0;
  std::function<void()> release_;  // set only for borrowed memory
  bool borrowed_ = false;
  std::atomic<std::uint64_t> version_{next_tensor_version()};
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape sizes;
  Shape strides;
  std::int64_t storage_offset = 0;  // elements
  std::int64_t numel = 0;
  DType dtype = DType::Float32;
};

}  // namespace refold
