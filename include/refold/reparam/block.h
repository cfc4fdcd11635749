// RepBlock — the base of every re-parameterizable block (RepVGGBlock, ACBlock,
// DiverseBranchBlock, MobileOneBlock, QARepVGGBlock, RepConv).
//
// A block has two forms, as in the reference implementations:
//   training form   several branches (convs with BatchNorm, 1×1s, an identity, an average pool)
//                   whose outputs are summed, then an activation;
//   deployed form   ONE Conv2d with bias, registered under the reference's name
//                   (RepVGG "rbr_reparam", ACNet "fused_conv", DBB "dbb_reparam",
//                   MobileOne "reparam_conv", RepConv "conv"), then the same activation.
//
//   auto block = std::make_shared<reparam::RepVGGBlock>(reparam::RepVGGBlockOptions(64, 64));
//   block->load_state_dict(io::load_safetensors("block.safetensors"));  // PyTorch names
//   block->reparameterize();          // the branches are gone; "rbr_reparam.weight" is there
//   block->is_reparameterized();      // true; a second reparameterize() does nothing
//
// reparameterize() computes the fused kernel with the kernel algebra
// (refold/reparam/kernel_algebra.h) in double, then swaps the branches for the fused conv. Its
// weight keeps the layout of the block's main conv, so a channels_last model stays
// channels_last. Every precondition is checked BEFORE anything changes; a failure throws
// refold::Error naming the block and the value and leaves the block as it was:
//   - the branches agree with the main conv on in/out channels, groups, stride and dilation
//     ("RepVGGBlock: branch mismatch: rbr_1x1.conv has stride (2, 2) but rbr_dense.conv has
//     (1, 1)");
//   - every kernel centers in the main conv's window (paddings aligned, see
//     check_branch_alignment; "branch mismatch: a 1x1 branch with padding …");
//   - an identity branch needs in_channels == out_channels and stride 1;
//   - BatchNorm statistics are valid (σ² ≥ 0, σ² + ε ≠ 0).
// Padding mode is always zeros (refold's Conv2d has no other) and BatchNorm always runs on its
// running statistics (refold does not train), the two remaining preconditions of the issue.
//
// Children are looked up by name on every use, so a branch swapped in with replace_child (for
// instance from another checkpoint) is what forward() runs and what reparameterize() fuses.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "refold/error.h"
#include "refold/nn/conv.h"
#include "refold/nn/module.h"
#include "refold/reparam/kernel_algebra.h"

namespace refold::reparam {

class RepBlock : public nn::Module {
 public:
  // True once the branches have been replaced by the deployed conv (or the block was built in
  // its deployed form).
  bool is_reparameterized() const { return child(deploy_name_) != nullptr; }
  // The name the deployed conv is registered under.
  const std::string& deploy_name() const { return deploy_name_; }
  // The deployed conv; nullptr in the training form.
  std::shared_ptr<nn::Conv2d> deployed_conv() const;

  // The one convolution (kernel, bias, groups) equivalent to the branches — the reference's
  // get_equivalent_kernel_bias(). In the deployed form, the deployed conv's own kernel. Checks
  // every precondition and throws refold::Error when one fails; never changes the block.
  ConvKernel equivalent_kernel() const;
  // Replaces the branches by one Conv2d holding equivalent_kernel(), registered under
  // deploy_name() with the main branch's stride, padding and dilation. Idempotent: does nothing
  // when already re-parameterized. On a failed precondition throws and changes nothing.
  void reparameterize();

  // The floating-point operations of one forward() of the current form on an input of `input`
  // sizes [N, C, H, W]: 2 per multiply-add and 1 per bias add of a convolution, 2 per element of
  // BatchNorm, 1 per element of each branch sum, K_h·K_w per output of an average pool.
  // Activations are not counted (the same before and after re-parameterization).
  std::int64_t flops(const Shape& input) const;

  // Runs the training-form branches or the deployed conv; see each block for the math.
  Tensor forward(const Tensor& input) final;

 protected:
  RepBlock(std::string type_name, std::string deploy_name)
      : Module(std::move(type_name)), deploy_name_(std::move(deploy_name)) {}

  // --- what each block defines
  // The training form as one kernel: every branch folded with the kernel algebra, after
  // checking the preconditions. Only called in the training form.
  virtual ConvKernel fuse_branches() const = 0;
  // The dotted path of the main branch's conv ("rbr_dense.conv"): the fused conv takes its
  // stride, padding, dilation and weight layout, and the other branches are checked against it.
  virtual std::string main_conv_path() const = 0;
  // The children that exist only in the training form (removed by reparameterize()).
  virtual std::vector<std::string> branch_names() const = 0;
  virtual Tensor forward_branches(const Tensor& input) = 0;
  // What follows the deployed conv (the activation); `conv_output` is the deployed conv's output.
  virtual Tensor forward_deployed(const Tensor& conv_output) = 0;
  virtual std::int64_t branch_flops(const Shape& input) const = 0;

  // Builds the deployed conv in a block constructed with deploy(true).
  void register_deployed(const nn::Conv2dOptions& options);

  // --- helpers for the blocks
  std::shared_ptr<nn::Conv2d> main_conv() const { return get<nn::Conv2d>(main_conv_path()); }
  // The module at dotted `path` below this block ("rbr_dense.conv"), as an M; nullptr when a
  // part of the path is absent; throws refold::Error naming the path when it has another type.
  template <typename M>
  std::shared_ptr<M> find(const std::string& path) const {
    nn::ModulePtr module = find_module(path);
    if (!module) return nullptr;
    auto typed = std::dynamic_pointer_cast<M>(module);
    if (!typed) throw_wrong_type(path, *module);
    return typed;
  }
  // Like find, but an absent module is an error.
  template <typename M>
  std::shared_ptr<M> get(const std::string& path) const {
    auto typed = find<M>(path);
    if (!typed) throw_missing(path);
    return typed;
  }
  // Runs `fold` (a kernel algebra call on branch `branch`) and prefixes any refold::Error with
  // "<type>: <branch>: ", so an algebra message names the block and the branch it came from.
  template <typename F>
  auto in_branch(const std::string& branch, F&& fold) const -> decltype(fold()) {
    try {
      return fold();
    } catch (const Error& e) {
      throw Error(type_name() + ": " + branch + ": " + e.message());
    }
  }

  // Preconditions shared by the blocks; each throws refold::Error naming the block.
  // The child at `path` must be a NamedSequential whose children are exactly `names`, in order
  // (so that running it is exactly the chain the fold assumes). A trailing child "act" that is an
  // nn::Identity is allowed as well (ultralytics' Conv with act=False).
  void check_sequence(const std::string& path, const std::vector<std::string>& names) const;
  // A parallel conv branch: same in/out channels, groups, stride and dilation as the main conv,
  // and a kernel that centers in the main conv's window. `crop` is ACNet's cropping of the input
  // (rows, columns) before the branch: a negative padding.
  void check_parallel(const std::string& name, const nn::Conv2d& branch,
                      Size2d crop = {0, 0}) const;
  // The comparisons of check_parallel without the window: out_channels, groups, stride,
  // dilation, and in_channels when `compare_in_channels` (not for the second conv of a chain).
  void check_like_main(const std::string& name, const nn::Conv2d& conv,
                       bool compare_in_channels = true) const;
  // A branch that computes `kernel` with `padding` at the main conv's stride and `dilation`:
  // its window must center in the main conv's.
  void check_window(const std::string& name, Size2d kernel, const Padding2d& padding,
                    Size2d dilation, Size2d crop = {0, 0}) const;
  // An identity branch (x ↦ x, perhaps through a BN): in == out, stride 1, and the main conv's
  // padding keeps the size (the identity is a 1×1 window with padding 0).
  void check_identity(const std::string& name) const;

 private:
  nn::ModulePtr find_module(const std::string& path) const;
  [[noreturn]] void throw_wrong_type(const std::string& path, const nn::Module& found) const;
  [[noreturn]] void throw_missing(const std::string& path) const;

  std::string deploy_name_;
};

}  // namespace refold::reparam
