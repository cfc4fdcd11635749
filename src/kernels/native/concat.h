// refold's cat: the output contiguous, or 4-d channels_last when every input suggests it
// (reference::cat_output_format), of the inputs' one dtype (a byte copy, so any dtype). The
// inputs are copied as rows (below) wherever their memory holds those rows — dense in the
// output's layout, or a slice of such a tensor (a channel slice of an NHWC map, torch.roll's
// slices), its rows further apart; in memory order a cat along logical dim d is a cat along one
// physical axis q (d itself, or for channels_last N, H, W, C: C at q = 3, H at 1, W at 2). With
//
//   outer = ∏ physical sizes before q,   inner_k = ∏ input k's physical sizes from q on,
//
// input k is [outer][inner_k] and the output [outer][Σ inner_k]: output row o is input 0's row
// o, then input 1's, … — one memcpy each, rows split over threads for large outputs
// (row_threads.h). For NHWC along C (GhostNet's, YOLO's and DenseNet's channel concats) a row
// is one pixel's channels. Every other input — a permuted view (a detection head's NHWC maps
// read as [N, C, H·W]), or an NCHW input beside NHWC ones (a channel shuffle) — is copied once
// straight into its place: `place(input, dst)`, dst the
// view of the output with the input's sizes at its offset along dim (without `place`,
// Tensor::copy_), instead of being made dense first and then copied again. Same contract as
// the other native kernels: a problem the reference reports (mismatched sizes or dtypes, a bad
// dim) is declined (undefined result, `*declined` says why).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "refold/tensor.h"

namespace refold::native {

using PlaceInput = std::function<void(const Tensor& input, Tensor& dst)>;
Tensor cat(const std::vector<Tensor>& inputs, std::int64_t dim, std::string* declined,
           const PlaceInput& place = {});

// The inverse: x cut along `dim` into pieces of `lengths`, each dense in x's layout (x
// contiguous, or 4-d channels_last): x's row o holds piece 0's row o, then piece 1's, … (MixNet's
// mixed depthwise convs and YOLO's C2f blocks split channels in NHWC). Declined — a vector of
// one undefined tensor — where x is neither, or the arguments are ones the caller reports.
std::vector<Tensor> split(const Tensor& x, std::int64_t dim,
                          const std::vector<std::int64_t>& lengths, std::string* declined);

}  // namespace refold::native
