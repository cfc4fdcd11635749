// The same logical tensor laid out in memory in different ways, for "every layout gives the same
// values" tests. Every function returns a new tensor with `t`'s sizes, dtype and values (in
// logical order); only the strides, the storage offset and what surrounds the view differ.
//
//   for (const auto& [name, input, suggests] : testing::layouts(x)) {
//     SCOPED_TRACE(name);
//     EXPECT_TRUE(testing::all_close(op(input), op(x), Tolerance::exact()));
//   }
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "refold/memory_format.h"
#include "refold/tensor.h"

namespace refold::testing {

// Dense, in `format` (Contiguous, or ChannelsLast for 4-d).
Tensor laid_out(const Tensor& t, MemoryFormat format);

// Dense but neither contiguous nor channels_last: the storage holds the dims in
// `storage_order` (outermost first), e.g. {3, 2, 1, 0} stores a 4-d tensor as W, H, C, N.
Tensor with_storage_order(const Tensor& t, const Shape& storage_order);

// Every other element of the last dim of a NaN-filled buffer twice as wide, starting at
// offset 1: not dense, and the innermost stride is 2. A kernel reading a skipped element
// produces a NaN.
Tensor every_other_element(const Tensor& t);

// A window inside a NaN-filled buffer laid out in `format`, larger by 3 in every dim (1 or 2
// before the window, the rest after): unit inner stride, gaps between rows. A kernel reading
// outside the window produces a NaN.
Tensor window_in_nan_buffer(const Tensor& t, MemoryFormat format = MemoryFormat::Contiguous);

struct LayoutVariant {
  std::string name;
  Tensor tensor;
  MemoryFormat suggests;  // what tensor.suggest_memory_format() is expected to say
};

// For element-wise and shape ops on 4-d tensors: contiguous, channels_last, a dense
// permutation (storage order W, H, C, N) and a non-dense strided view (every_other_element).
std::vector<LayoutVariant> layouts(const Tensor& t);

// For convolution operands (4-d): nchw, nhwc, a dense permutation with strides W < C < H < N,
// and windows of a NaN-filled nchw and nhwc buffer.
std::vector<LayoutVariant> conv_layouts(const Tensor& t);

// PyTorch's Preserve rule for an op whose output has its input's sizes: a dense input's
// strides are kept exactly; any other input gives an output contiguous in the format the input
// suggests.
::testing::AssertionResult preserves_format(const Tensor& output, const Tensor& input);

}  // namespace refold::testing
