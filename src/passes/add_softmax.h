// An Add before a softmax along the last axis, as attention adds its relative-position bias or
// its mask to the scores:
//   LeViT, TinyViT, GCViT, Swin:  Softmax(Add(scores, B), axis = −1)    B: [heads, N, N] or a mask
// is one AddSoftmax node (domain "refold", attribute axis = −1, inputs x, c) whose parts are the
// Add and the Softmax: the exporter writes those back, so the file stays standard ONNX. Its
// module is ops::Softmax with an addend, which native::softmax adds row by row as it reads the
// scores: no pass over the scores for the Add, and no sum tensor. canonicalize runs it.
//
// Why exact: the kernel computes softmax(x + c) from the float32 sums x + c, as the Add wrote
// them (an addend the kernel does not take is added first, as Add broadcasts it).
//
// Reshapes between the Add and the Softmax that keep the last dim (Swin's shifted windows add
// the mask to the scores viewed as [B, windows, heads, N, N] and view them back before the
// softmax) move after it: Softmax(Reshape(s)) = Reshape(Softmax(s)) along the last axis, the same
// rows in the same row-major order. Then AddSoftmax writes what the Add wrote, and the reshapes
// read it.
//
// Preconditions: the Softmax along the last axis (axis −1, or rank − 1 of a static rank; both
// opsets agree there), the Add and each reshape read by the next node alone and not graph
// outputs; with reshapes, static shapes whose last dims all agree. x is the operand of the sum's
// shape where static shapes say which.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "passes/known_values.h"
#include "refold/graph/graph.h"
#include "refold/nn/module.h"

namespace refold::passes::detail {

struct AddSoftmaxMatch {
  std::string x, c, y;                // softmax(x + c), reshaped by `reshapes`, = y
  std::vector<std::size_t> parts;     // the Add and the Softmax
  std::vector<std::size_t> reshapes;  // between them, in graph order
};

// The match at node `index` (a Softmax), or nullopt.
std::optional<AddSoftmaxMatch> match_add_softmax(const graph::Graph& graph, std::size_t index,
                                                 StaticShapes& shapes);
// Rewrites it; returns the pass's note.
std::string fuse_add_softmax(graph::Graph& graph, const AddSoftmaxMatch& m);
// The module of an AddSoftmax node.
nn::ModulePtr build_add_softmax(const graph::Node& node);

}  // namespace refold::passes::detail
