// A rearrangement within each sample written as Reshape → Transpose → Reshape: MobileViT's patch
// unfold and fold, Swin-style window partitions, ShuffleNet's channel shuffle, space-to-depth,
//   r = Reshape(x, [N, a₁ … a_k]);  t = Transpose(r, perm);  y = Reshape(t, [N, C', H', W'])
// with x [N, C, H, W], k ≥ 4 (r at least 5-d), perm[0] = 0, and one of
//   (factors)   a₁ … a_k split C, H and W into factors (consecutive dims with products C, H, W:
//               no two axes merged) and t's dims split C', H', W' likewise;
//   (planes)    a₁ = C, perm[1] = 1 and C' = C: the channels stay whole, the plane positions
//               move any way (MobileViT's unfold to [N, C, patch area, patches]).
// It becomes one PatchShuffle node (domain "refold") whose parts are the three matched nodes;
// the exporter writes those back, so the file stays standard ONNX. canonicalize runs it.
//
// Why it keeps channels_last: in NHWC memory x is [N, H, W, C].
//   (factors) That is r's dims in the order N, (H's factors), (W's factors), (C's factors) — the
//             same elements, since each factor group is row-major within its axis. Transposing
//             them so that they come out as N, (H''s factors), (W''s factors), (C''s factors) —
//             perm read through that reordering — gives y's NHWC memory.
//   (planes)  The chain maps plane positions the same way for every (n, c): [N, a₂ … a_k, C]
//             transposed by [0, perm[2]−1 … perm[k−1]−1, k−1] and read as [N, H', W', C] is y
//             in NHWC, the same map applied to C-vectors.
// One copy either way (the Transpose's); the Reshapes it replaces wrote fresh NCHW tensors, so
// the layout pass permuted around them (MobileViTv2's GroupNorm and unfold, ShuffleNetV2's
// shuffles: bench/RESULTS.md).
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
  Shape nhwc_middle_;                    // the middle's dims in NHWC memory order
  std::vector<std::int64_t> nhwc_perm_;  // the transpose of those into y's NHWC order
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
