// Test helpers for the tensor op builders (ops_tensor_*_test.cpp), on top of OpCase
// (ops_cnn_helpers.h): int64 tensors written and read exactly, and layouts.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "onnx/ops_cnn_helpers.h"
#include "refold/tensor.h"

namespace refold::testing {

// An int64 tensor holding `v` in row-major order; sizes default to 1-d [v.size()].
inline Tensor i64(std::vector<std::int64_t> v, Shape sizes = {-1}) {
  if (sizes == Shape{-1}) sizes = {static_cast<std::int64_t>(v.size())};
  Tensor t = empty(sizes, DType::Int64);
  EXPECT_EQ(static_cast<std::size_t>(t.numel()), v.size());
  std::copy(v.begin(), v.end(), t.data<std::int64_t>());
  return t;
}

// The elements of an int64 tensor in logical order, exactly (any strides).
inline std::vector<std::int64_t> i64_values(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::Int64);
  std::vector<std::int64_t> out;
  const auto* base = static_cast<const std::int64_t*>(t.data_ptr());
  Shape idx(t.sizes().size(), 0);
  for (std::int64_t n = 0; n < t.numel(); ++n) {
    std::int64_t off = 0;
    for (std::size_t d = 0; d < idx.size(); ++d) off += idx[d] * t.strides()[d];
    out.push_back(base[off]);
    for (std::size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < t.sizes()[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

inline Tensor to_channels_last(const Tensor& t) {
  Tensor out = empty(t.sizes(), {t.dtype(), MemoryFormat::ChannelsLast});
  out.copy_(t);
  return out;
}

inline bool is_channels_last(const Tensor& t) {
  return t.dim() == 4 && t.suggest_memory_format() == MemoryFormat::ChannelsLast;
}

}  // namespace refold::testing
