#include "passes/branch_match.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "passes/branch_nodes.h"

namespace refold::passes::detail {
namespace {

// The node writing `value` when it is an `op_type` with at least one input.
std::optional<std::size_t> producer_of(const graph::Graph& graph, const std::string& value,
                                       const char* op_type) {
  const auto p = graph.producer(value);
  if (!p) return std::nullopt;
  const graph::Node& n = graph.nodes()[*p];
  if (!is_op(n, op_type) || n.inputs.empty() || n.outputs.empty() || n.outputs[0] != value)
    return std::nullopt;
  return p;
}

// Depth first from the root, inputs in order: an inner Add is entered, anything else is a leaf.
// An explicit stack, not recursion: an Add chain is as deep as the model is long.
void collect(const graph::Graph& graph, std::size_t root, AddTree& tree) {
  std::vector<std::pair<std::size_t, std::size_t>> stack{{root, 0}};  // (Add, next input)
  tree.adds.push_back(root);
  while (!stack.empty()) {
    auto& [add, next] = stack.back();
    const std::vector<std::string>& inputs = graph.nodes()[add].inputs;
    if (next == inputs.size()) {
      stack.pop_back();
      continue;
    }
    const std::string& in = inputs[next++];
    const auto p = graph.producer(in);
    if (p && is_binary_add(graph.nodes()[*p]) && is_inner_add(graph, *p)) {
      tree.adds.push_back(*p);
      stack.emplace_back(*p, 0);
    } else {
      tree.leaves.push_back(in);
      tree.leaf_adds.push_back(add);
    }
  }
}

}  // namespace

bool is_binary_add(const graph::Node& node) {
  return is_op(node, "Add") && node.inputs.size() == 2 && node.outputs.size() == 1 &&
         node.parts.empty();
}

bool is_inner_add(const graph::Graph& graph, std::size_t index) {
  const std::string& out = graph.nodes()[index].outputs[0];
  const std::vector<std::size_t> users = graph.consumers(out);
  return users.size() == 1 && is_binary_add(graph.nodes()[users[0]]) &&
         single_use_problem(graph, out, users[0]).empty();
}

AddTree collect_add_tree(const graph::Graph& graph, std::size_t root) {
  AddTree tree;
  tree.root = root;
  collect(graph, root, tree);
  return tree;
}

std::vector<Branch> interpret_leaf(const graph::Graph& graph, const std::string& leaf,
                                   std::size_t add) {
  Branch base;
  base.leaf = leaf;
  base.add = add;
  // A trailing BN: the branch core is what it normalizes.
  std::string core = leaf;
  const auto bn = producer_of(graph, leaf, "BatchNormalization");
  if (bn) core = graph.nodes()[*bn].inputs[0];
  // Appends the trailing BN (if any) to a chain ending at the core.
  const auto finish = [&](Branch b) {
    if (bn) {
      b.bn = b.chain.size();
      b.chain.push_back(*bn);
    }
    return b;
  };

  std::vector<Branch> out;
  const auto conv = producer_of(graph, core, "Conv");
  const std::optional<std::size_t> pool =
      conv ? std::nullopt : producer_of(graph, core, "AveragePool");
  if (conv || pool) {
    const std::size_t spatial = conv ? *conv : *pool;
    // Appends the spatial core, then the trailing BN.
    const auto finish_core = [&](Branch b) {
      (conv ? b.conv : b.pool) = b.chain.size();
      b.chain.push_back(spatial);
      return finish(b);
    };
    const std::string& mid = graph.nodes()[spatial].inputs[0];
    // A zero Pad or a cropping Slice: a border step.
    auto pad = producer_of(graph, mid, "Pad");
    if (!pad) pad = producer_of(graph, mid, "Slice");
    const std::string& before_pad = pad ? graph.nodes()[*pad].inputs[0] : mid;
    // The 1×1 head of a Sequential branch, possibly behind a BN.
    const auto first_bn = producer_of(graph, before_pad, "BatchNormalization");
    const std::string& head_out = first_bn ? graph.nodes()[*first_bn].inputs[0] : before_pad;
    if (const auto first = producer_of(graph, head_out, "Conv")) {
      Branch b = base;
      b.kind = BranchKind::Sequential;
      b.input = graph.nodes()[*first].inputs[0];
      b.first_conv = 0;
      b.chain = {*first};
      if (first_bn) {
        b.first_bn = b.chain.size();
        b.chain.push_back(*first_bn);
      }
      if (pad) {
        b.pad = b.chain.size();
        b.chain.push_back(*pad);
      }
      out.push_back(finish_core(b));
    }
    Branch b = base;
    b.kind = conv ? BranchKind::Conv : BranchKind::AvgPool;
    if (pad) {
      Branch padded = b;
      padded.input = before_pad;
      padded.pad = 0;
      padded.chain = {*pad};
      out.push_back(finish_core(padded));
    }
    b.input = mid;
    out.push_back(finish_core(b));
  }
  Branch identity = base;
  identity.kind = BranchKind::Identity;
  identity.input = core;
  out.push_back(finish(identity));
  return out;
}

}  // namespace refold::passes::detail
