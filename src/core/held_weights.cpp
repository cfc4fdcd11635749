// core/held_weights.h.
#include "core/held_weights.h"

#include <atomic>
#include <map>

namespace refold::detail {
namespace {
std::atomic<std::uint64_t> g_offers{0};
}  // namespace

void offer_packed(const Tensor& weight, const std::shared_ptr<const PackedCopy>& copy) {
  const std::shared_ptr<TensorImpl>& impl = TensorAccess::impl(weight);
  if (impl == nullptr || impl->storage_offset != 0 || !weight.is_non_overlapping_and_dense())
    return;
  Storage& storage = *impl->storage;
  if (static_cast<std::size_t>(weight.numel()) * weight.element_size() != storage.nbytes()) return;
  storage.offer_packed(copy, storage.version());
  g_offers.fetch_add(1, std::memory_order_relaxed);
}

std::uint64_t packed_offers() { return g_offers.load(std::memory_order_relaxed); }

HeldWeights::HeldWeights(const std::vector<Tensor>& weights) {
  // The list's own handles on each impl, which the baseline leaves out.
  std::map<const TensorImpl*, long> listed;
  for (const Tensor& t : weights)
    if (const auto& impl = TensorAccess::impl(t); impl != nullptr) ++listed[impl.get()];
  std::map<const Storage*, std::size_t> index;
  for (const Tensor& t : weights) {
    const std::shared_ptr<TensorImpl>& impl = TensorAccess::impl(t);
    if (impl == nullptr) continue;
    const auto [at, added] = index.emplace(impl->storage.get(), weights_.size());
    if (added) weights_.push_back({impl->storage, impl->storage.use_count(), {}});
    std::vector<View>& views = weights_[at->second].views;
    const auto seen = listed.find(impl.get());
    if (seen->second == 0) continue;  // this impl is in `views` already
    views.push_back({impl, impl.use_count() - seen->second});
    seen->second = 0;
  }
}

std::size_t HeldWeights::hold() {
  const std::uint64_t offers = packed_offers();
  if (offers == offers_seen_ && !blocked_) return 0;
  offers_seen_ = offers;
  blocked_ = false;
  std::size_t freed = 0;
  for (const Weight& w : weights_) {
    const std::shared_ptr<Storage> storage = w.storage.lock();
    if (storage == nullptr || !storage->can_hold()) continue;
    bool owned = storage.use_count() - 1 <= w.owners;
    for (const View& v : w.views) {
      const std::shared_ptr<TensorImpl> impl = v.impl.lock();
      if (impl != nullptr && impl.use_count() - 1 > v.owners) owned = false;
    }
    // Another handle (a node's arguments while it runs, a caller's): looked at again next time.
    if (!owned) {
      blocked_ = true;
      continue;
    }
    freed += storage->hold_packed();
  }
  return freed;
}

}  // namespace refold::detail
