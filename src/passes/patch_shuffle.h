// A patch unfold or fold (MobileViT's, Swin-style window partitions over a 4-d map): a
// Reshape → Transpose → Reshape that never moves the batch or channel axis,
//   r = Reshape(x, [N, C, a₂ … a_k]);  t = Transpose(r, perm);  y = Reshape(t, [N, C, h, w])
// with x [N, C, H, W], k ≥ 5 (r at least 5-d), perm[0] = 0, perm[1] = 1, becomes one
// PatchShuffle node (domain "refold") whose parts are the three matched nodes; the exporter
// writes those back, so the file stays standard ONNX. canonicalize runs it.
//
// Why it keeps channels_last: the chain moves whole (n, c) planes' elements the same way for
// every n and c — y[n, c, q] = x[n, c, σ(q)] for one map σ of plane positions (row-major over
// H, W to row-major over a₂ … a_k, the permutation of those axes, row-major back over h, w).
// An NHWC x is the contiguous [N, H, W, C] tensor; reshaped to [N, a₂ … a_k, C] (the same
// row-major plane order, C innermost), transposed by perm' = [0, perm[2]−1 … perm[k−1]−1, k−1]
// (the spatial axes as perm moves them, C kept last) and reshaped to [N, h, w, C], it is y in
// NHWC: the same σ, applied to C-vectors. One copy either way (the Transpose's); the Reshapes
// it replaces wrote fresh NCHW tensors, so the layout pass permuted around them.
//
// Preconditions: the static shapes of x, r and y are known (passes/known_values.h), x and y
// 4-d; r and t each read once by the next node and not graph outputs.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "passes/known_values.h"
#include "refold/graph/graph.h"
#include "refold/graph/op.h"

namespace refold::passes::detail {

// Runs the matched chain for x of the sizes it was matched at, in x's memory format.
class PatchShuffle : public graph::Op {
 public:
  // `input` [N, C, H, W], `middle` r's sizes, `perm` the Transpose's, `output` [N, C, h, w].
  PatchShuffle(Shape input, Shape middle, std::vector<std::int64_t> perm, Shape output);
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;

 private:
  Shape input_, middle_, output_;
  std::vector<std::int64_t> perm_;
};

// The module of a PatchShuffle node, from its attributes input_shape, middle_shape, perm and
// output_shape (what fuse_patch_shuffle writes). Throws refold::Error naming what is wrong.
nn::ModulePtr build_patch_shuffle(const graph::Node& node);

struct PatchShuffleMatch {
  std::string x, y;
  Shape input, middle, output;
  std::vector<std::int64_t> perm;
  std::vector<std::size_t> parts;  // the Reshape, the Transpose, the Reshape
};

// The pattern ending at the Transpose node `index`, or nullopt.
std::optional<PatchShuffleMatch> match_patch_shuffle(const graph::Graph& graph, std::size_t index,
                                                     StaticShapes& shapes);

// Replaces the match by its PatchShuffle node; returns the note.
std::string fuse_patch_shuffle(graph::Graph& graph, const PatchShuffleMatch& m);

}  // namespace refold::passes::detail
