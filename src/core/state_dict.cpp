#include "refold/state_dict.h"

#include "core/check.h"

namespace refold {

void StateDict::insert(std::string name, Tensor tensor) {
  REFOLD_CHECK(!index_.contains(name), "state_dict: duplicate key '{}'", name);
  index_.emplace(name, entries_.size());
  entries_.emplace_back(std::move(name), std::move(tensor));
}

const Tensor* StateDict::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

const Tensor& StateDict::at(const std::string& name) const {
  const Tensor* t = find(name);
  REFOLD_CHECK(t != nullptr, "state_dict: no key '{}'", name);
  return *t;
}

}  // namespace refold
