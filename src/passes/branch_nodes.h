// What the BN-folding and re-parameterization passes need to know about a node before they
// may rewrite it, and the graph edits they share. A "problem" function returns the empty
// string when the node qualifies, else the reason, naming the node and the value, ready to go
// into a PassReport note.
//
// The preconditions (docs/reliability.md F20–F24, after ONNX Runtime's conv/BN fusion):
//   - a Conv / ConvTranspose is run by a plain nn::Conv2d / nn::ConvTranspose2d (not a fused
//     node, not a runtime-weight Op) whose weight and bias are graph constants;
//   - a BatchNormalization is run by an nn::BatchNorm2d over constant parameters, in inference
//     mode, with no optional output (running mean/var) in use;
//   - every value inside a rewritten pattern has exactly one consumer (the next node of the
//     pattern, reading it once) and is not a graph output, so removing it loses nothing.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "refold/graph/graph.h"
#include "refold/nn/batchnorm.h"
#include "refold/nn/conv.h"
#include "refold/nn/pooling.h"
#include "refold/op_options.h"
#include "refold/reparam/kernel_algebra.h"

namespace refold::passes::detail {

// "Conv 'conv1'" — how notes name a node.
std::string describe(const graph::Node& node);

// A fused node's origin: the op types of `parts` (indices, any order) in graph order, joined by
// "+" ("Conv+Add+Relu").
std::string origin_of(const graph::Graph& graph, std::vector<std::size_t> parts);

bool is_op(const graph::Node& node, const char* op_type);
// A plain Flatten, Reshape, Squeeze or Unsqueeze: each reads its input in row-major order and
// writes the same sequence under another shape.
bool is_reshape(const graph::Node& node);

// Replaces the nodes `parts` (indices, any order) by `fused`, which then holds them, in graph
// order, as its parts (the exporter writes them back as standard ONNX); a `fused` without a
// module gets the one its data says (module_for). By default it goes where the last
// part was, so every value its parts read is defined before it; its outputs must be the ones
// of the parts that anything else reads. FusedAt::FirstPart puts it where the first part was
// instead — right when every input of `fused` was read by that first part (so is defined
// before it) and a reader of one part's output may sit between the parts (ChannelRoute's cuts).
enum class FusedAt { LastPart, FirstPart };
void replace_with_fused(graph::Graph& graph, std::vector<std::size_t> parts, graph::Node fused,
                        FusedAt at = FusedAt::LastPart);

// The modules, or nullptr when the node is not run by exactly that module type.
std::shared_ptr<nn::Conv2d> conv_module(const graph::Node& node);
std::shared_ptr<nn::ConvTranspose2d> conv_transpose_module(const graph::Node& node);
std::shared_ptr<nn::BatchNorm2d> batch_norm_module(const graph::Node& node);
std::shared_ptr<nn::AvgPool2d> avg_pool_module(const graph::Node& node);

// A Conv or ConvTranspose node with constant weights run by the plain module.
std::string conv_problem(const graph::Graph& graph, const graph::Node& node);
// A BatchNormalization with constant parameters in inference mode, no optional output used.
std::string batch_norm_problem(const graph::Graph& graph, const graph::Node& node);
// The one node reading `value` when exactly one does (in any number of its inputs) and `value`
// is not a graph output, or nullopt.
std::optional<std::size_t> sole_reader(const graph::Graph& graph, const std::string& value);
// sole_reader(), when it is a plain `op_type` node (no parts) with one output.
std::optional<std::size_t> sole_plain_reader(const graph::Graph& graph, const std::string& value,
                                             const char* op_type);
// `value` is read once, by node `consumer` only, and is not a graph output.
std::string single_use_problem(const graph::Graph& graph, const std::string& value,
                               std::size_t consumer);

// The value of `name` when it is known at this point: a graph constant, or the `value` of the
// Constant node writing it (Constant nodes stay nodes until constant folding).
std::optional<Tensor> constant_value(const graph::Graph& graph, const std::string& name);

// A Reduce* node's axes (the attribute, opset < 18, or a constant input), or nullopt when they
// are not known here or the node reduces every axis (no axes given).
std::optional<std::vector<std::int64_t>> reduce_axes(const graph::Graph& graph,
                                                     const graph::Node& node);

// The values of a constant that broadcasts along one axis of a value of rank `rank` without
// enlarging it: float32, at most `rank` dims, every dim 1 but the one `from_end` places from the
// end (1: the last axis, a Gemm's features; 3: the channels of NCHW) — a scalar, [1], [C],
// [C, 1, 1], [1, C, 1, 1], … Its 1 or C values, or nullopt.
std::optional<std::vector<double>> axis_values(const Tensor& t, std::int64_t from_end,
                                               std::int64_t rank);

// A node that maps one value x along that axis as y = x·scale + shift: Add, Sub, Mul, Div with
// one constant operand (axis_values), Neg, or a BatchNormalization (batch_norm_problem) when
// the axis is BN's channel axis 1 (rank − from_end == 1). `operand` is x.
struct AxisAffine {
  std::string operand;
  reparam::ChannelAffine affine;
};
std::variant<AxisAffine, std::string> axis_affine(const graph::Graph& graph,
                                                  const graph::Node& node, std::int64_t from_end,
                                                  std::int64_t rank);

// Node `index` between two Reshapes, as exporters write GroupNorm and patch or channel shuffles:
// r = Reshape(x, …) read by node `index` alone, y = Reshape(its output, …) that output's only
// reader, neither intermediate a graph output, x computed at run time. The Reshapes' indices and
// x, y; nullopt otherwise. The caller checks node `index` itself.
struct BetweenReshapes {
  std::size_t first = 0, last = 0;  // the Reshape before and the Reshape after
  std::string x, y;
};
std::optional<BetweenReshapes> between_reshapes(const graph::Graph& graph, std::size_t index);

// A Pad of a 4-d NCHW tensor in constant mode, by constant non-negative amounts on H and W
// only, with a constant scalar value: its spatial pads and value, or why it is not one.
struct ConstantPad {
  Pads2d pads;
  double value = 0;
};
std::variant<ConstantPad, std::string> constant_pad_of(const graph::Graph& graph,
                                                       const graph::Node& node);

// A Slice of a 4-d NCHW tensor that crops H and W by constant amounts from each border
// (starts ≥ 0, ends < 0 or "to the end", steps 1): the crop as negative pads, or why not.
std::variant<Pads2d, std::string> crop_of(const graph::Graph& graph, const graph::Node& node);

// ONNX Conv attributes for a kernel of this size with `geometry`'s stride, padding, dilation
// and groups, the padding resolved to explicit pads [top, left, bottom, right] (ONNX's
// [x1_begin, x2_begin, x1_end, x2_end]).
graph::Attributes conv_attributes(Size2d kernel, const nn::Conv2dOptions& geometry);

// A kernel tensor from the algebra laid out in `format`, to become a constant: a 4-d one through
// nn::detail::to_memory_format (copied only when it is not dense in `format`, as a view of a
// weight's live taps is not; an ambiguous 1×1 kernel restrided), anything else as it is.
Tensor in_format(const Tensor& t, MemoryFormat format);

// Makes `node` (its name and outputs set) the Conv over `input` that computes `kernel` with
// `geometry`'s stride, padding and dilation: op type and attributes, the kernel's weight (in
// `format`) and bias as new constants `<constant_base>.weight` / `.bias`, and the module made
// from that data (module_for).
void set_conv(graph::Graph& graph, graph::Node& node, const std::string& input,
              const std::string& constant_base, const reparam::ConvKernel& kernel,
              const nn::Conv2dOptions& geometry, MemoryFormat format);

// Registers the module's weight (and bias) as new constants named `<base>.weight` /
// `<base>.bias` (made unique), the same tensor handles the module holds, and returns the node
// inputs [x, weight, bias?].
std::vector<std::string> add_parameter_constants(graph::Graph& graph, const std::string& input,
                                                 const std::string& base, const Tensor& weight,
                                                 const Tensor& bias);

// Replaces the nodes `erase` (indices, any order) by `nodes`, in their order, the last where
// `anchor` (one of them, the last of the pattern) was and the others right before it; then drops
// the constants the erased nodes read that no node reads any more, and the value_info of values
// that no longer exist. A Constant node the new nodes read that came after the anchor moves to
// just before them. Returns the last new node's index.
std::size_t replace_nodes(graph::Graph& graph, std::vector<std::size_t> erase, std::size_t anchor,
                          std::vector<graph::Node> nodes);
std::size_t replace_nodes(graph::Graph& graph, std::vector<std::size_t> erase, std::size_t anchor,
                          graph::Node node);

// Replaces the nodes `erase` by `nodes`, in their order, placed where the first erased node was
// (replace_nodes with that node as the anchor): right where the new nodes read only what that
// node read, or each other, and every reader of what they write comes after it. Returns the last
// new node's index.
std::size_t replace_nodes_at_first(graph::Graph& graph, const std::vector<std::size_t>& erase,
                                   std::vector<graph::Node> nodes);

}  // namespace refold::passes::detail
