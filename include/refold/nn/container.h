// torch.nn.Sequential: calls its children in order, each on the previous one's output.
//
//   auto net = std::make_shared<nn::Sequential>(
//       std::make_shared<nn::Conv2d>(8, 4, 3), std::make_shared<nn::ReLU>());
//   net->push_back(std::make_shared<nn::Flatten>());
//   (*net)[0];                  // the Conv2d, as a ModulePtr
//   net->at<nn::Conv2d>(0);     // typed; throws refold::Error if it is not a Conv2d
//
// Children are named "0", "1", … as in PyTorch, so parameters read "0.weight", "1.0.bias".
// Each child runs through Module::operator(), so a child that does not accept channels_last
// gets a contiguous input, and an error names the innermost child's path.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "refold/error.h"
#include "refold/nn/module.h"

namespace refold::nn {

class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}
  explicit Sequential(const std::vector<ModulePtr>& modules);
  template <typename First, typename... Rest>
  explicit Sequential(std::shared_ptr<First> first, std::shared_ptr<Rest>... rest)
      : Sequential(std::vector<ModulePtr>{std::move(first), std::move(rest)...}) {}

  // Appends `module` under the name std::to_string(size()).
  void push_back(ModulePtr module);
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // The child at `index`; throws refold::Error when out of range.
  ModulePtr operator[](std::size_t index) const;
  template <typename M>
  std::shared_ptr<M> at(std::size_t index) const {
    ModulePtr module = (*this)[index];
    auto typed = std::dynamic_pointer_cast<M>(module);
    if (!typed)
      throw Error("Sequential: child " + std::to_string(index) + " is a " + module->type_name() +
                  ", not the requested type");
    return typed;
  }

  // An empty Sequential returns its input, like PyTorch's.
  Tensor forward(const Tensor& input) override;

 private:
  std::size_t size_ = 0;
};

}  // namespace refold::nn
