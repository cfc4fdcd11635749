// RepBlock: the form switch, the shared preconditions and the shape trace; see
// refold/reparam/block.h.
#include "refold/reparam/block.h"

#include <utility>

#include "core/check.h"
#include "refold/nn/basic.h"
#include "refold/reparam/layers.h"
#include "refold/reparam/module_kernels.h"
#include "reparam/flops.h"
#include "reparam/shape_trace.h"

namespace refold::reparam {

// ---- the shape trace -----------------------------------------------------------------------

namespace detail {
namespace {
thread_local ShapeTrace* t_active_trace = nullptr;
}  // namespace

ShapeTrace::ShapeTrace() : previous_(t_active_trace) { t_active_trace = this; }
ShapeTrace::~ShapeTrace() { t_active_trace = previous_; }

const std::vector<Shape>& ShapeTrace::shapes(const RepBlock* block) const {
  static const std::vector<Shape> none;
  const auto it = shapes_.find(block);
  return it == shapes_.end() ? none : it->second;
}

void ShapeTrace::record(const RepBlock* block, const Shape& input) {
  if (t_active_trace != nullptr) t_active_trace->shapes_[block].push_back(input);
}

}  // namespace detail

// ---- forms ---------------------------------------------------------------------------------

std::shared_ptr<nn::Conv2d> RepBlock::deployed_conv() const {
  return find<nn::Conv2d>(deploy_name_);
}

void RepBlock::register_deployed(const nn::Conv2dOptions& options) {
  nn::Conv2dOptions with_bias = options;
  with_bias.bias(true);
  register_module(deploy_name_, std::make_shared<nn::Conv2d>(with_bias));
}

ConvKernel RepBlock::equivalent_kernel() const {
  if (const auto conv = deployed_conv()) return kernel_of(*conv);
  return fuse_branches();
}

void RepBlock::reparameterize() {
  if (is_reparameterized()) return;
  // Everything that can fail happens before the first change: the fused kernel (with all the
  // preconditions) and the module that will hold it.
  const ConvKernel fused = equivalent_kernel();
  const auto main = main_conv();
  auto conv = make_conv2d(fused, main->options(), main->weight().suggest_memory_format());
  for (const std::string& name : branch_names())
    if (child(name)) unregister_module(name);
  register_module(deploy_name_, std::move(conv));
}

Tensor RepBlock::forward(const Tensor& input) {
  REFOLD_CHECK(input.defined(), "{}: input is undefined", type_name());
  detail::ShapeTrace::record(this, input.sizes());
  if (const auto conv = deployed_conv()) return forward_deployed((*conv)(input));
  return forward_branches(input);
}

std::int64_t RepBlock::flops(const Shape& input) const {
  if (const auto conv = deployed_conv()) return detail::conv_flops(type_name(), *conv, input).flops;
  return branch_flops(input);
}

// ---- children ------------------------------------------------------------------------------

nn::ModulePtr RepBlock::find_module(const std::string& path) const {
  nn::ModulePtr module;
  const nn::Module* parent = this;
  std::size_t begin = 0;
  while (true) {
    const std::size_t dot = path.find('.', begin);
    module = parent->child(path.substr(begin, dot == std::string::npos ? dot : dot - begin));
    if (!module || dot == std::string::npos) return module;
    parent = module.get();
    begin = dot + 1;
  }
}

void RepBlock::throw_wrong_type(const std::string& path, const nn::Module& found) const {
  fail("{}: child '{}' is a {}, not the layer the block expects there", type_name(), path,
       found.type_name());
}

void RepBlock::throw_missing(const std::string& path) const {
  fail("{}: has no child '{}' (a training-form branch it needs)", type_name(), path);
}

// ---- preconditions -------------------------------------------------------------------------

void RepBlock::check_sequence(const std::string& path,
                              const std::vector<std::string>& names) const {
  const auto sequence = get<NamedSequential>(path);
  std::vector<std::string> found;
  std::vector<std::string> described;
  for (const auto& [name, module] : sequence->named_children()) {
    // An identity activation (ultralytics' Conv with act=False) changes nothing.
    if (name == "act" && dynamic_cast<const nn::Identity*>(module.get()) != nullptr &&
        found.size() == names.size())
      continue;
    found.push_back(name);
    described.push_back(fmt::format("'{}' ({})", name, module->type_name()));
  }
  REFOLD_CHECK(found == names, "{}: {} must hold exactly {} to be fused, found {}", type_name(),
               path, fmt::format("'{}'", fmt::join(names, "', '")), fmt::join(described, ", "));
}

void RepBlock::check_like_main(const std::string& name, const nn::Conv2d& conv,
                               bool compare_in_channels) const {
  const auto main = main_conv();
  const nn::Conv2dOptions &b = conv.options(), &m = main->options();
  const std::string main_name = main_conv_path();
  const auto check = [&](bool same, std::string_view what, const std::string& value,
                         const std::string& main_value) {
    REFOLD_CHECK(same, "{}: branch mismatch: {} has {} {} but {} has {}", type_name(), name, what,
                 value, main_name, main_value);
  };
  const auto pair = [](Size2d s) { return fmt::format("({}, {})", s.h, s.w); };
  if (compare_in_channels)
    check(b.in_channels() == m.in_channels(), "in_channels", std::to_string(b.in_channels()),
          std::to_string(m.in_channels()));
  check(b.out_channels() == m.out_channels(), "out_channels", std::to_string(b.out_channels()),
        std::to_string(m.out_channels()));
  check(b.groups() == m.groups(), "groups", std::to_string(b.groups()), std::to_string(m.groups()));
  check(b.stride() == m.stride(), "stride", pair(b.stride()), pair(m.stride()));
  check(b.dilation() == m.dilation(), "dilation", pair(b.dilation()), pair(m.dilation()));
}

void RepBlock::check_parallel(const std::string& name, const nn::Conv2d& branch,
                              Size2d crop) const {
  check_like_main(name, branch);
  const nn::Conv2dOptions& b = branch.options();
  check_window(name, b.kernel_size(), b.padding(), b.dilation(), crop);
}

// The windows coincide iff P − p = d·(K − k)/2 on every side (check_branch_alignment). A crop of
// c input rows before the branch acts as a padding of p − c; adding c to both sides of the
// condition keeps every padding non-negative for the check.
void RepBlock::check_window(const std::string& name, Size2d kernel, const Padding2d& padding,
                            Size2d dilation, Size2d crop) const {
  const auto main = main_conv();
  const nn::Conv2dOptions& m = main->options();
  REFOLD_CHECK(dilation == m.dilation(),
               "{}: branch mismatch: {} has dilation ({}, {}) but {} has ({}, {})", type_name(),
               name, dilation.h, dilation.w, main_conv_path(), m.dilation().h, m.dilation().w);
  in_branch(name, [&] {
    const Pads2d big = m.padding().resolve(m.kernel_size(), m.dilation());
    const Padding2d shifted = Padding2d::asymmetric(big.top + crop.h, big.left + crop.w,
                                                    big.bottom + crop.h, big.right + crop.w);
    check_branch_alignment(kernel, padding, m.kernel_size(), shifted, m.dilation());
  });
}

void RepBlock::check_identity(const std::string& name) const {
  const auto main = main_conv();
  const nn::Conv2dOptions& m = main->options();
  REFOLD_CHECK(m.in_channels() == m.out_channels(),
               "{}: identity branch {} needs in_channels == out_channels, the block has {} and {}",
               type_name(), name, m.in_channels(), m.out_channels());
  REFOLD_CHECK(m.stride() == Size2d(1),
               "{}: identity branch {} needs stride 1, the block has stride ({}, {})", type_name(),
               name, m.stride().h, m.stride().w);
  // x ↦ x reads one pixel with no padding: a 1×1 window, padding 0.
  in_branch(name,
            [&] { check_branch_alignment(1, 0, m.kernel_size(), m.padding(), m.dilation()); });
}

}  // namespace refold::reparam
