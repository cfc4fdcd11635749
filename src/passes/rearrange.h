// A chain of the ops that only move data — Reshape, Flatten, Squeeze, Unsqueeze with a Transpose
// between them — is one rearrangement of x's elements. MobileViT's patch unfold
//   Reshape → Transpose → Reshape → Transpose → Reshape
// copies at each Reshape that cannot view its input (three times: a Reshape that merges dims a
// Transpose took apart must copy); as one Rearrange node it copies once.
//
// The composition: each dim of the current value is a list of factors of x's dims, a factor
// (d, size, step) adding i·step to the index along x's dim d for its index i (outer to inner).
// x starts as one factor per dim; a Transpose permutes the lists; a Reshape reads the factors
// in order and groups them into its output's dims, splitting a factor where a dim ends inside
// it (which its size must allow). So y is the factors read as a strided view of x — factor
// (d, size, step) has stride step·x.stride(d), whatever x's layout — copied once, or returned as
// a view where the executor takes views and the strides can express y (ops::ViewOp). The copy
// writes y's factors the same way into y's own layout, so a 4-d y can be channels_last (a patch
// fold's, read by a conv: no permute after it).
//
// It becomes one Rearrange node (domain "refold"), whose parts are the chain: the exporter
// writes those back, so the file stays standard ONNX. canonicalize runs it after its other
// patterns (a Reshape → Transpose → Reshape that keeps channels_last is a PatchShuffle first).
//
// Preconditions: x's and every output's shapes static (passes/known_values.h); at least two
// Transposes, each with a reshape after it (with one, the chain copies once already: the
// reshape before it is a view, graph::Op::reads_views); the chain ends with a reshape (its
// output contiguous, as the chain's was); each value inside read by the next node alone and
// not a graph output. Or tokens ↔ image: one Transpose between a 3-d and a 4-d value (either
// way round, the chain may end with the Transpose), where the image read as channels_last is
// the tokens' own memory: as a Rearrange neither direction copies (moved() returns a view that
// is already dense in y's layout), where the Reshape wrote an NCHW image and its conv ran NCHW.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ops/view_op.h"
#include "passes/known_values.h"
#include "refold/graph/graph.h"

namespace refold::passes::detail {

// One step of a chain: a reshape to `values` (sizes), or a transpose by `values` (a perm).
struct MoveStep {
  bool transpose = false;
  std::vector<std::int64_t> values;
};

// y's layout: a 4-d y whose channels (dim 1) hold x's innermost dim is an image going back to
// the convs (a patch fold's [N, C, H, W] from tokens [.., C]), written channels_last — unless x
// is a 4-d NCHW tensor, an NCHW-planned model's; any other y contiguous, as a 4-d y that keeps
// x's innermost dim last is (Swin's window reverse to [N, H, W, C], read by a LayerNorm over
// C). So the copy keeps x's contiguous runs contiguous. The layout plan models it so
// (passes/layout.cpp, Rule::Image).
class Rearrange : public ops::ViewOp {
 public:
  // Throws refold::Error when the steps do not compose for `input` (see above).
  Rearrange(Shape input, std::vector<MoveStep> steps);
  // y is 4-d and its dim 1 holds x's innermost dim (of more than one element): an image.
  bool writes_image() const { return image_; }

 protected:
  std::vector<Tensor> moved(const std::vector<Tensor>& inputs, bool views) const override;

 private:
  struct Factor {
    std::int64_t dim, size, step;  // x's dim, the factor's size, its step along that dim
    std::size_t out;               // the dim of y it is a factor of
  };
  Shape input_, output_;
  std::vector<Factor> factors_;  // y's elements in order: the strided view of x
  bool image_ = false;
};

struct RearrangeMatch {
  std::string x, y;
  Shape input;
  std::vector<MoveStep> steps;
  std::vector<std::size_t> parts;
};

std::optional<RearrangeMatch> match_rearrange(const graph::Graph& graph, std::size_t index,
                                              StaticShapes& shapes);
std::string fuse_rearrange(graph::Graph& graph, const RearrangeMatch& m);
// The module of a Rearrange node, from its attributes input_shape, transposes (1 per step that
// is a Transpose), step_lengths and step_values (what fuse_rearrange writes).
nn::ModulePtr build_rearrange(const graph::Node& node);

}  // namespace refold::passes::detail
