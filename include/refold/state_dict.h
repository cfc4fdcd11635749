// StateDict: named tensors in insertion order, as PyTorch's OrderedDict state_dict. Names are
// unique (insert rejects a duplicate).
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "refold/tensor.h"

namespace refold {

class StateDict {
 public:
  using Entry = std::pair<std::string, Tensor>;

  void insert(std::string name, Tensor tensor);       // throws refold::Error on a duplicate name
  const Tensor* find(const std::string& name) const;  // nullptr when absent
  const Tensor& at(const std::string& name) const;    // throws refold::Error when absent
  bool contains(const std::string& name) const { return find(name) != nullptr; }
  const std::vector<Entry>& entries() const { return entries_; }
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }

 private:
  std::vector<Entry> entries_;
  std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace refold
