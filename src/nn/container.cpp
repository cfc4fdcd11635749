#include "refold/nn/container.h"

#include "core/check.h"

namespace refold::nn {

Sequential::Sequential(const std::vector<ModulePtr>& modules) : Sequential() {
  for (const ModulePtr& module : modules) push_back(module);
}

void Sequential::push_back(ModulePtr module) {
  REFOLD_CHECK(module != nullptr, "Sequential: push_back given a null module (index {})", size_);
  register_module(std::to_string(size_), std::move(module));
  ++size_;
}

ModulePtr Sequential::operator[](std::size_t index) const {
  REFOLD_CHECK(index < size_, "Sequential: index {} out of range (size {})", index, size_);
  return child(std::to_string(index));
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  for (const auto& [name, module] : named_children()) x = (*module)(x);
  return x;
}

}  // namespace refold::nn
