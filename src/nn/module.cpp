#include "refold/nn/module.h"

#include <algorithm>
#include <set>

#include "core/check.h"
#include "kernels/subnormals.h"
#include "nn/layout.h"
#include "refold/functional.h"

namespace refold::nn {

namespace {

// The dotted path of the modules currently inside operator(), innermost last. Each module
// knows only the name its parent gave it; the path is assembled from the call stack.
thread_local std::vector<const std::string*> t_call_path;

struct CallPathScope {
  explicit CallPathScope(const std::string* name) { t_call_path.push_back(name); }
  ~CallPathScope() { t_call_path.pop_back(); }
  CallPathScope(const CallPathScope&) = delete;
  CallPathScope& operator=(const CallPathScope&) = delete;
};

std::string current_path() {
  std::string path;
  for (const std::string* name : t_call_path) {
    if (name->empty()) continue;
    if (!path.empty()) path += '.';
    path += *name;
  }
  return path;
}

std::string join_name(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

}  // namespace

Tensor Module::operator()(const Tensor& input) {
  const CallPathScope scope(&name_);
  const kernels::FlushDenormalScope flush_denormal;
  try {
    // An activation leaves channels_last only here, where a module cannot take it.
    if (!accepts_channels_last() && input.defined() && !input.is_contiguous())
      return forward(functional::to_format(input, MemoryFormat::Contiguous));
    return forward(input);
  } catch (const Error& e) {
    const std::string path = current_path();
    throw e.with_context(path.empty() ? type_name_ : fmt::format("{} '{}'", type_name_, path));
  }
}

void Module::add_child(std::string name, ModulePtr module) {
  REFOLD_CHECK(module != nullptr, "{}: register_module('{}') given a null module", type_name_,
               name);
  REFOLD_CHECK(!name.empty() && name.find('.') == std::string::npos,
               "{}: invalid module name '{}' (non-empty, no '.')", type_name_, name);
  REFOLD_CHECK(child_by_name_.emplace(name, module).second, "{}: module '{}' registered twice",
               type_name_, name);
  module->name_ = name;
  children_.emplace_back(std::move(name), std::move(module));
}

ModulePtr Module::child(const std::string& name) const {
  const auto it = child_by_name_.find(name);
  return it == child_by_name_.end() ? nullptr : it->second;
}

void Module::replace_child(const std::string& name, ModulePtr module) {
  REFOLD_CHECK(module != nullptr, "{}: replace_child('{}') given a null module", type_name_, name);
  const auto it = child_by_name_.find(name);
  REFOLD_CHECK(it != child_by_name_.end(), "{}: no child module '{}' to replace", type_name_, name);
  for (auto& [n, m] : children_) {
    if (n != name) continue;
    module->name_ = name;
    m = it->second = std::move(module);
    return;
  }
}

void Module::unregister_module(const std::string& name) {
  const auto it = std::find_if(children_.begin(), children_.end(),
                               [&](const NamedModule& c) { return c.first == name; });
  REFOLD_CHECK(it != children_.end(), "{}: no child module '{}' to remove", type_name_, name);
  children_.erase(it);
  child_by_name_.erase(name);
}

Tensor Module::register_parameter(std::string name, Tensor tensor) {
  REFOLD_CHECK(tensor.defined(), "{}: parameter '{}' is undefined", type_name_, name);
  for (const auto& list : {&parameters_, &buffers_})
    for (const auto& [n, t] : *list)
      REFOLD_CHECK(n != name, "{}: '{}' registered twice", type_name_, name);
  parameters_.emplace_back(std::move(name), tensor);
  return tensor;
}

Tensor Module::register_buffer(std::string name, Tensor tensor) {
  REFOLD_CHECK(tensor.defined(), "{}: buffer '{}' is undefined", type_name_, name);
  for (const auto& list : {&parameters_, &buffers_})
    for (const auto& [n, t] : *list)
      REFOLD_CHECK(n != name, "{}: '{}' registered twice", type_name_, name);
  buffers_.emplace_back(std::move(name), tensor);
  return tensor;
}

std::vector<NamedModule> Module::named_modules(const std::string& prefix) {
  ModulePtr self = weak_from_this().lock();
  REFOLD_CHECK(self != nullptr,
               "{}: named_modules() needs the module to be owned by a std::shared_ptr "
               "(create it with std::make_shared)",
               type_name_);
  std::vector<NamedModule> out;
  std::set<const Module*> seen;
  // Explicit stack, pre-order: self, then each child subtree in registration order.
  std::vector<NamedModule> stack{{prefix, std::move(self)}};
  while (!stack.empty()) {
    NamedModule current = std::move(stack.back());
    stack.pop_back();
    if (!seen.insert(current.second.get()).second) continue;
    for (auto it = current.second->children_.rbegin(); it != current.second->children_.rend(); ++it)
      stack.emplace_back(join_name(current.first, it->first), it->second);
    out.push_back(std::move(current));
  }
  return out;
}

Module& Module::apply(const std::function<void(Module&)>& fn) {
  std::set<const Module*> seen;
  struct Walk {
    static void run(Module& m, const std::function<void(Module&)>& f,
                    std::set<const Module*>& visited) {
      if (!visited.insert(&m).second) return;
      for (auto& [name, child] : m.children_) run(*child, f, visited);
      f(m);
    }
  };
  Walk::run(*this, fn, seen);
  return *this;
}

void Module::collect(std::vector<NamedTensor>& out, const std::string& prefix, bool parameters,
                     bool recurse) const {
  for (const auto& [name, tensor] : parameters ? parameters_ : buffers_)
    out.emplace_back(join_name(prefix, name), tensor);
  if (!recurse) return;
  for (const auto& [name, module] : children_)
    module->collect(out, join_name(prefix, name), parameters, recurse);
}

std::vector<NamedTensor> Module::named_parameters(bool recurse) const {
  std::vector<NamedTensor> out;
  collect(out, "", /*parameters=*/true, recurse);
  return out;
}

std::vector<NamedTensor> Module::named_buffers(bool recurse) const {
  std::vector<NamedTensor> out;
  collect(out, "", /*parameters=*/false, recurse);
  return out;
}

StateDict Module::state_dict() const {
  // PyTorch order: a module's parameters, then its buffers, then each child's, recursively.
  StateDict state;
  struct Walk {
    static void run(const Module& m, const std::string& prefix, StateDict& out) {
      for (const auto& [n, t] : m.parameters_) out.insert(join_name(prefix, n), t);
      for (const auto& [n, t] : m.buffers_) out.insert(join_name(prefix, n), t);
      for (const auto& [n, c] : m.children_) run(*c, join_name(prefix, n), out);
    }
  };
  Walk::run(*this, "", state);
  return state;
}

LoadResult Module::load_state_dict(const StateDict& state, bool strict) {
  const StateDict own = state_dict();
  LoadResult result;
  std::vector<std::string> mismatched;
  for (const auto& [name, tensor] : own) {
    const Tensor* given = state.find(name);
    if (given == nullptr) {
      result.missing_keys.push_back(name);
    } else if (given->sizes() != tensor.sizes()) {
      mismatched.push_back(fmt::format("'{}': checkpoint has [{}], module has [{}]", name,
                                       fmt::join(given->sizes(), ", "),
                                       fmt::join(tensor.sizes(), ", ")));
    } else if (is_floating(given->dtype()) != is_floating(tensor.dtype())) {
      mismatched.push_back(fmt::format("'{}': checkpoint dtype {}, module dtype {}", name,
                                       dtype_name(given->dtype()), dtype_name(tensor.dtype())));
    }
  }
  for (const auto& [name, tensor] : state)
    if (!own.contains(name)) result.unexpected_keys.push_back(name);

  std::vector<std::string> problems;
  if (!mismatched.empty())
    problems.push_back(fmt::format("size mismatch for {}", fmt::join(mismatched, "; ")));
  if (strict && !result.missing_keys.empty())
    problems.push_back(fmt::format("missing keys: {}", fmt::join(result.missing_keys, ", ")));
  if (strict && !result.unexpected_keys.empty())
    problems.push_back(fmt::format("unexpected keys: {}", fmt::join(result.unexpected_keys, ", ")));
  REFOLD_CHECK(problems.empty(), "{}: load_state_dict: {}", type_name_, fmt::join(problems, "; "));

  for (const auto& [name, tensor] : own)
    if (const Tensor* given = state.find(name)) {
      Tensor target = tensor;
      target.copy_(*given);
    }
  return result;
}

Module& Module::to(MemoryFormat format) {
  REFOLD_CHECK(format != MemoryFormat::Preserve, "{}: to(): 'preserve' is not a target format",
               type_name_);
  // set_data keeps each handle (and its name), so every holder of the tensor sees the change.
  return apply([format](Module& module) {
    for (auto* list : {&module.parameters_, &module.buffers_})
      for (auto& [n, t] : *list)
        if (t.dim() == 4) {
          const Tensor converted = detail::to_memory_format(t, format);
          if (!converted.is_same(t)) t.set_data(converted);
        }
  });
}

Module& Module::to(DType dtype) {
  REFOLD_CHECK(is_floating(dtype), "{}: to(): {} is not a floating-point dtype", type_name_,
               dtype_name(dtype));
  return apply([dtype](Module& module) {
    for (auto* list : {&module.parameters_, &module.buffers_})
      for (auto& [n, t] : *list)
        if (is_floating(t.dtype())) t.set_data(t.to(dtype));
  });
}

}  // namespace refold::nn
