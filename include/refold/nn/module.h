// refold::nn::Module — the base of every layer, with torch.nn.Module's vocabulary.
//
//   auto net = std::make_shared<nn::Sequential>(...);
//   net->load_state_dict(io::load_safetensors("weights.safetensors"));
//   nn::utils::convert_conv2d_weight_memory_format(*net, MemoryFormat::ChannelsLast);
//   Tensor y = (*net)(x);
//
// Names follow PyTorch: a child registered as "features" whose child is "3" owns parameters
// "features.3.weight". named_modules() includes the module itself under "".
//
// Memory format: a module that cannot take a channels_last input (its result depends on the
// NCHW memory order, or it wraps an NCHW-only kernel) overrides accepts_channels_last() to
// return false; operator() then makes its input contiguous first. That is the only place an
// activation returns to NCHW — the seed's "permute back at an incompatible layer".
//
// Errors thrown inside forward() get the innermost module's type and dotted path prepended:
//   Conv2d 'features.3': input has 3 channels, weight expects 8
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "refold/dtype.h"
#include "refold/memory_format.h"
#include "refold/state_dict.h"
#include "refold/tensor.h"

namespace refold::nn {

class Module;
using ModulePtr = std::shared_ptr<Module>;
using NamedModule = std::pair<std::string, ModulePtr>;
using NamedTensor = std::pair<std::string, Tensor>;

// What a non-strict load_state_dict found (a strict load throws if either is non-empty).
struct LoadResult {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
};

class Module : public std::enable_shared_from_this<Module> {
 public:
  explicit Module(std::string type_name) : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // "Conv2d", "Sequential", … (the PyTorch class name).
  const std::string& type_name() const { return type_name_; }

  // Applies the memory-format rule above, then forward(); names the module in errors.
  Tensor operator()(const Tensor& input);
  virtual Tensor forward(const Tensor& input) = 0;
  virtual bool accepts_channels_last() const { return true; }

  std::vector<NamedModule> named_children() const { return children_; }
  // Pre-order, self first under `prefix` (PyTorch's named_modules; a module shared by two
  // parents is listed once). Needs *this to be owned by a std::shared_ptr (it hands out
  // ModulePtrs, itself included); throws refold::Error otherwise.
  std::vector<NamedModule> named_modules(const std::string& prefix = "");
  // Calls fn on every submodule, then on *this (PyTorch's Module.apply order: each child's
  // subtree first, recursively). A module shared by two parents is visited once. Works on any
  // module, owned by a shared_ptr or not. Returns *this.
  Module& apply(const std::function<void(Module&)>& fn);
  std::vector<NamedTensor> named_parameters(bool recurse = true) const;
  std::vector<NamedTensor> named_buffers(bool recurse = true) const;
  // Parameters then buffers of each module, pre-order (PyTorch's order). The tensors are the
  // module's own handles: changing one changes the module.
  StateDict state_dict() const;
  // Copies each tensor into the parameter/buffer of the same name, converting dtype and keeping
  // the parameter's layout. A shape mismatch always throws; missing or unexpected keys throw
  // when `strict`, else are returned. All keys are checked before anything is copied.
  LoadResult load_state_dict(const StateDict& state, bool strict = true);

  // Converts every 4-d parameter and buffer to `format` (the aggressive variant the seed
  // contrasts with convert_conv2d_weight_memory_format). Returns *this.
  Module& to(MemoryFormat format);
  // Converts every floating-point parameter and buffer to `dtype`. Returns *this. A graph also
  // converts its constants and the declared types of its inputs and outputs (graph::Graph).
  virtual Module& to(DType dtype);

  // The child registered under `name`, or nullptr.
  ModulePtr child(const std::string& name) const;
  // Replaces the child `name` (used by re-parameterization to swap a block for its fused form).
  void replace_child(const std::string& name, ModulePtr module);

 protected:
  template <typename M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    add_child(std::move(name), module);
    return module;
  }
  // Removes the child `name` and everything under it from this module (PyTorch's
  // `del self.name`): re-parameterization drops a block's training-time branches this way, so
  // named_children() and state_dict() read exactly as the fused PyTorch module's. Throws
  // refold::Error when there is no such child.
  void unregister_module(const std::string& name);
  // Returns the registered handle; keep a copy as a member (copies share the tensor).
  Tensor register_parameter(std::string name, Tensor tensor);
  Tensor register_buffer(std::string name, Tensor tensor);

 private:
  void add_child(std::string name, ModulePtr module);
  void collect(std::vector<NamedTensor>& out, const std::string& prefix, bool parameters,
               bool recurse) const;

  std::string type_name_;
  std::string name_;  // the name the parent registered this module under ("" for a root)
  std::vector<NamedModule> children_;  // in registration order
  // children_ by name: a graph registers one child per node, and looking one up must not cost a
  // scan of all of them (docs/architecture.md, "cost linear in the graph's size").
  std::unordered_map<std::string, ModulePtr> child_by_name_;
  std::vector<NamedTensor> parameters_;
  std::vector<NamedTensor> buffers_;
};

}  // namespace refold::nn
