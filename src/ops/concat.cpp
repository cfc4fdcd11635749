#include "ops/concat.h"

#include <algorithm>

#include <fmt/ranges.h>

#include "core/check.h"
#include "kernels/native/concat.h"
#include "kernels/reference/tensor_ops.h"
#include "kernels/reference/typed_elements.h"
#include "kernels/verbose.h"
#include "ops/op.h"
#include "ops/reshape.h"
#include "ops/softmax.h"
#include "ops/tensor_values.h"
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

std::vector<std::int64_t> Split::lengths(std::int64_t size, const Tensor& split_input) const {
  if (lengths_) return *lengths_;
  if (split_input.defined()) return int64_vector(split_input, "Split", "split");
  const auto n = static_cast<std::int64_t>(outputs_);
  if (uneven_last_) {
    // ⌈size / n⌉ per piece, the rest last (num_outputs, opset 18).
    const std::int64_t chunk = (size + n - 1) / n;
    std::vector<std::int64_t> lengths(outputs_, chunk);
    lengths.back() = size - chunk * (n - 1);
    REFOLD_CHECK(lengths.back() >= 0,
                 "Split: an axis of size {} cannot be cut into {} pieces of {} and a last one",
                 size, n, chunk);
    return lengths;
  }
  REFOLD_CHECK(size % n == 0, "Split: an axis of size {} does not split evenly into {} outputs",
               size, n);
  return std::vector<std::int64_t>(outputs_, size / n);
}

std::vector<Tensor> Split::moved(const std::vector<Tensor>& inputs, bool views) const {
  REFOLD_CHECK(!inputs.empty() && inputs.size() <= 2 && inputs[0].defined(),
               "Split: expects input and optional split; got {} inputs", inputs.size());
  const Tensor& x = inputs[0];
  const auto axis = static_cast<std::size_t>(reference::detail::wrap_axis(axis_, x.dim(), "Split"));
  const std::int64_t size = x.sizes()[axis];
  const std::vector<std::int64_t> pieces = lengths(size, inputs.size() > 1 ? inputs[1] : Tensor());
  REFOLD_CHECK(pieces.size() == outputs_, "Split: {} lengths [{}] for {} outputs", pieces.size(),
               fmt::join(pieces, ", "), outputs_);
  std::int64_t total = 0;
  for (std::int64_t length : pieces) {
    REFOLD_CHECK(length >= 0, "Split: negative length in split [{}]", fmt::join(pieces, ", "));
    total += length;
  }
  REFOLD_CHECK(total == size, "Split: split [{}] sums to {}, but axis {} has size {}",
               fmt::join(pieces, ", "), total, axis_, size);
  std::vector<reference::SliceDim> dims;
  for (std::int64_t size_d : x.sizes()) dims.push_back({0, 1, size_d});
  auto each_piece = [&](auto&& slice) {
    std::vector<Tensor> outputs;
    std::int64_t start = 0;
    for (std::int64_t length : pieces) {
      dims[axis] = {start, 1, length};
      outputs.push_back(slice(x, dims));
      start += length;
    }
    return outputs;
  };
  if (views) return each_piece(reference::slice_view);
  // Else each piece is a copy, in standard strides of x's format: refold's row copy
  // (native::split) where x is dense, else Slice's reference. (A piece that kept its view's
  // strides — a size-1 batch dim with the whole input's stride — made a later Add of yolov8n
  // wrong; which kernel mishandles such strides is not yet found.)
  std::string declined;
  std::vector<Tensor> fast = native::split(x, static_cast<std::int64_t>(axis), pieces, &declined);
  if (fast.size() == pieces.size() && (fast.empty() || fast[0].defined())) {
    log_dispatch("split", "native");
    return fast;
  }
  log_dispatch("split", "reference", fmt::format("native declined: {}", declined));
  return each_piece(reference::slice);
}

nn::ModulePtr build_split(const BuildContext& context) {
  const graph::Node& node = context.node;
  const bool split_input = context.opset >= 13;  // v13: split became an input
  REFOLD_CHECK(!node.outputs.empty(), "Split has no outputs");
  check_arity(node, 1, split_input ? 2 : 1, node.outputs.size());
  const std::size_t outputs = node.outputs.size();
  std::optional<std::vector<std::int64_t>> lengths;
  if (split_input) {
    REFOLD_CHECK(!node.attributes.has("split"),
                 "split is an input from opset 13 on, not an attribute");
    if (auto constant = constant_ints(context, 1, "split")) lengths = std::move(*constant);
  } else if (node.attributes.has("split")) {
    lengths = node.attributes.get_ints("split");
  }
  if (lengths) {
    REFOLD_CHECK(lengths->size() == outputs, "split has {} lengths [{}] for {} outputs",
                 lengths->size(), fmt::join(*lengths, ", "), outputs);
    for (std::int64_t length : *lengths)
      REFOLD_CHECK(length >= 0, "split has a negative length: [{}]", fmt::join(*lengths, ", "));
  }
  const bool has_num_outputs = node.attributes.has("num_outputs");
  REFOLD_CHECK(!has_num_outputs || context.opset >= 18,
               "num_outputs is an attribute from opset 18 on");
  if (has_num_outputs) {
    const std::int64_t n = node.attributes.get_int("num_outputs", 0);
    REFOLD_CHECK(n == static_cast<std::int64_t>(outputs),
                 "num_outputs is {} but the node has {} outputs", n, outputs);
    REFOLD_CHECK(input_name(node, 1).empty(),
                 "give either the split input or num_outputs, not both");
  } else if (context.opset >= 18) {
    REFOLD_CHECK(!input_name(node, 1).empty(),
                 "from opset 18 on, Split needs the split input or num_outputs");
  }
  return std::make_shared<Split>(node.attributes.get_int("axis", 0), outputs, std::move(lengths),
                                 has_num_outputs);
}

const std::vector<OpDef>& concat_ops() {
  static const std::vector<OpDef> table = {
      {"Concat", 4, build_concat, LayoutRule::AllInputs},  // v4: axis became required
      // v2: split only as an attribute; v13: as an input; v18: num_outputs.
      {"Split", 2, build_split, LayoutRule::FirstInput},
  };
  return table;
}

}  // namespace refold::ops
