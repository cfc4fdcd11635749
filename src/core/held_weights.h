// Weights held once. A conv kernel reorders each weight into its own layout (oneDNN's blocked
// formats) and caches that copy; the plain weight then sits beside it unread, so a model's
// weights would take their memory twice. Here the plain bytes go and the packed copy stands in
// for them, as ONNX Runtime frees an initializer once its kernel has prepacked it:
//
//   * a kernel that packed a whole storage offers its copy (offer_packed), with a way back:
//     PackedCopy::unpack rebuilds the plain bytes exactly (a oneDNN reorder is a permutation);
//   * an owner that knows nothing else reads its weights (a Session made from a file or bytes)
//     keeps a HeldWeights over them and calls hold() when no run is in flight: each weight with
//     an offered copy alive and no handle beyond those the owner had frees its plain bytes;
//   * reading such a weight (Tensor::data_ptr: an export, a kernel that packs it anew, another
//     op) rebuilds the bytes from the copy once, and the weight stays plain from then on.
//
// Kernels' caches key packed weights on (version, offset, sizes, strides), never the data
// pointer, so finding a packed weight reads nothing of the plain one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/tensor_impl.h"
#include "refold/tensor.h"

namespace refold::detail {

// Offers `copy` for `weight`'s storage when `weight` views all of it densely (else nothing):
// `copy` was packed from `weight`'s bytes now, and unpack rebuilds the whole storage.
void offer_packed(const Tensor& weight, const std::shared_ptr<const PackedCopy>& copy);

// How many copies have been offered so far, process-wide (HeldWeights::hold skips its scan
// while none is new).
std::uint64_t packed_offers();

class HeldWeights {
 public:
  HeldWeights() = default;
  // `weights`: every handle the owner keeps. Their owners now (handles, views) are the baseline;
  // a weight with any more later (a caller's handle, an output) is not held.
  explicit HeldWeights(const std::vector<Tensor>& weights);

  // Frees the plain bytes of each weight that can be held now; returns the bytes freed. The
  // caller guarantees nothing reads these weights meanwhile (no other run in flight; within a
  // run, between nodes). Scans only after a new offer, or when a weight was kept for another
  // owner last time.
  std::size_t hold();

 private:
  struct View {
    std::weak_ptr<TensorImpl> impl;
    long owners = 0;  // handles on the impl at construction, the list's own not counted
  };
  struct Weight {
    std::weak_ptr<Storage> storage;
    long owners = 0;  // impls on the storage at construction
    std::vector<View> views;
  };
  std::vector<Weight> weights_;
  std::uint64_t offers_seen_ = 0;
  bool blocked_ = false;  // a weight that could be held had another owner at the last scan
};

}  // namespace refold::detail
