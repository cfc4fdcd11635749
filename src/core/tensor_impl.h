// TensorImpl and Storage: what a Tensor handle points to. Internal.
#pragma once

#include <cstddef>
#include <memory>

#include "refold/tensor.h"

namespace refold {

// 64-byte aligned bytes; freed when the last tensor viewing them goes.
class Storage {
 public:
  explicit Storage(std::size_t nbytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  std::byte* data() const { return data_; }
  std::size_t nbytes() const { return nbytes_; }
  static constexpr std::size_t kAlignment = 64;

 private:
  std::byte* data_ = nullptr;
  std::size_t nbytes_ = 0;
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
