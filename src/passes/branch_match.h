// The re-parameterization pass's matcher: Add trees and the branches at their leaves.
//
// An Add tree is a maximal set of Add nodes whose inner outputs each feed only the next Add
// of the set (and are not graph outputs); its leaves are the values the tree sums. A leaf is
// read as a branch of some input x, a chain of linear steps (optional ones in brackets):
//
//   Conv        x → [Pad | Slice] → Conv → [BatchNormalization] → leaf
//   AvgPool     x → [Pad | Slice] → AveragePool → [BatchNormalization] → leaf
//   Sequential  x → Conv 1×1 → [BN] → [Pad | Slice] → Conv | AveragePool → [BN] → leaf
//   Identity    x → [BatchNormalization] → leaf          (with no BN the leaf is x itself)
//
// (DBB's 1×1 → K×K and 1×1 → AvgPool branches are Sequential; the Pad is how PyTorch exports
// a padded AvgPool, the Slice how ACNet crops the input of its 1×3 / 3×1 convs at padding 0.) A
// leaf may read as branches of several inputs (BN(conv(x)) is a Conv branch of x and an Identity
// branch of conv(x)); the tree's input is the value most leaves agree on. Matching here is by op
// type only; the pass then checks modules, constants, single use and geometry.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "refold/graph/graph.h"

namespace refold::passes::detail {

enum class BranchKind { Conv, Sequential, AvgPool, Identity };

struct Branch {
  BranchKind kind = BranchKind::Identity;
  std::string input;               // x
  std::string leaf;                // the value the tree sums
  std::size_t add = 0;             // the Add node reading the leaf
  std::vector<std::size_t> chain;  // the branch's nodes from x to the leaf, in data order
  // Positions in `chain`, when present: the 1×1 head of a Sequential branch and its BN, the
  // border step (a zero Pad or a cropping Slice), the spatial core (a Conv or an AveragePool)
  // and the trailing BN.
  std::optional<std::size_t> first_conv, first_bn, pad, conv, pool, bn;
};

struct AddTree {
  std::size_t root = 0;           // the last Add
  std::vector<std::size_t> adds;  // every Add of the tree
  std::vector<std::string> leaves;
  std::vector<std::size_t> leaf_adds;  // the Add reading each leaf
};

// True when the Add at `index` is inside a larger tree (its output is summed on by one Add).
bool is_inner_add(const graph::Graph& graph, std::size_t index);
// The tree whose root is the Add at `index` (which must be an Add, not inner).
AddTree collect_add_tree(const graph::Graph& graph, std::size_t root);

// Every reading of `leaf` (read by the Add `add`) as a branch, the deepest first.
std::vector<Branch> interpret_leaf(const graph::Graph& graph, const std::string& leaf,
                                   std::size_t add);

// A binary Add node with one output.
bool is_binary_add(const graph::Node& node);

}  // namespace refold::passes::detail
