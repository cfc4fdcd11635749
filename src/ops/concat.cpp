#include "ops/concat.h"

#include <algorithm>

#include "core/check.h"
#include "kernels/reference/tensor_ops.h"
#include "ops/op.h"
#include "ops/reshape.h"
#include "ops/softmax.h"
#include "ops/transpose.h"
#include "ops/window.h"
#include "refold/functional.h"
#include "refold/nn/basic.h"

namespace refold::ops {

std::vector<Tensor> Concat::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(!inputs.empty(), "Concat: expects at least 1 input");
  bool floating = true;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    REFOLD_CHECK(inputs[k].defined(), "Concat: input {} is missing", k);
    floating = floating && is_floating(inputs[k].dtype());
  }
  // Same validation either way; functional::cat is the path a faster kernel will take.
  if (floating && inputs[0].dim() > 0) return {functional::cat(inputs, axis_)};
  return {reference::concat(inputs, axis_)};
}

nn::ModulePtr build_concat(const BuildContext& context) {
  const graph::Node& node = context.node;
  REFOLD_CHECK(!node.inputs.empty(), "expects at least 1 input, got 0");
  for (std::size_t i = 0; i < node.inputs.size(); ++i)
    REFOLD_CHECK(!node.inputs[i].empty(), "input {} is empty", i);
  check_arity(node, node.inputs.size(), node.inputs.size(), 1);
  REFOLD_CHECK(node.attributes.has("axis"), "the axis attribute is required");
  return std::make_shared<Concat>(node.attributes.get_int("axis", 0));
}

// DepthToSpace: CRD is PixelShuffle (torch's layer); DCR (the default, and the only mode
// before opset 11) is the general op.

const std::vector<OpDef>& concat_ops() {
  static const std::vector<OpDef> table = {
      {"Concat", 4, build_concat, LayoutRule::AllInputs},  // v4: axis became required
  };
  return table;
}

}  // namespace refold::ops
