// refold::reparameterize — converts every re-parameterizable block of a model in place.
//
//   auto model = build_repvgg_a0();               // RepVGGBlocks inside Sequentials
//   model->load_state_dict(io::load_safetensors("repvgg_a0_train.safetensors"));
//   ReparamReport report = refold::reparameterize(*model, {.input_shape = Shape{1, 3, 224, 224}});
//   std::cout << report.to_string();
//
// The walk visits the tree pre-order (a module shared by two parents once) and calls
// reparameterize() on every reparam::RepBlock it meets (RepVGGBlock, ACBlock,
// DiverseBranchBlock, MobileOneBlock, QARepVGGBlock, RepConv); it does not look inside a block.
// Each block replaces its own branches, so the block object stays where it is — in a Sequential
// or anywhere else — and its deployed parameters take the reference's names
// ("stage1.0.rbr_reparam.weight"). A block that fails a precondition is left exactly as it was
// and the report says why; a block already in its deployed form is left too. Nothing throws for
// a block; only a failed FLOP-counting run (below) throws, before anything has changed.
//
// FLOPs need shapes. With options.input_shape, the model first runs once, unchanged, on zeros of
// that shape (in the dtype of its first floating-point parameter), recording every block's
// input shape; the report then gives each block's FLOPs before and after (RepBlock::flops: 2 per
// multiply-add, BN 2 per element, sums, pools; activations not counted) and their totals. Only
// the blocks change, so the blocks' totals are the whole model's change. Without an input shape
// the FLOP fields are empty.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "refold/nn/module.h"
#include "refold/tensor.h"

namespace refold {

struct ReparamOptions {
  // The model input's sizes, e.g. {1, 3, 224, 224}; enables the FLOP counts.
  std::optional<Shape> input_shape;
};

struct ReparamReport {
  struct Converted {
    std::string path;  // dotted path in the model ("" for the model itself)
    std::string type;  // "RepVGGBlock", …
    std::int64_t parameters_before = 0;
    std::int64_t parameters_after = 0;
    // With an input shape, and when the block ran on it (summed over its calls).
    std::optional<std::int64_t> flops_before;
    std::optional<std::int64_t> flops_after;
  };
  struct Left {
    std::string path;
    std::string type;
    // "already re-parameterized", or the refold::Error of the failed precondition.
    std::string reason;
    std::optional<std::int64_t> flops;
  };

  std::vector<Converted> converted;
  std::vector<Left> left_as_is;
  // All parameters of the model (each tensor counted once).
  std::int64_t parameters_before = 0;
  std::int64_t parameters_after = 0;
  // Σ over every block found that ran on the input shape, converted or left as is.
  std::optional<std::int64_t> flops_before;
  std::optional<std::int64_t> flops_after;

  // A readable summary: one line per block, then the parameter and FLOP totals.
  std::string to_string() const;
};

ReparamReport reparameterize(nn::Module& model, const ReparamOptions& options = {});

// The number of parameter elements of `module` and everything under it, each tensor counted once
// (PyTorch's sum(p.numel() for p in module.parameters())).
std::int64_t count_parameters(const nn::Module& module);

}  // namespace refold
