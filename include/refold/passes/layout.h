// refold::passes layout planning — the memory-format seed, said in its own terms, on a graph:
// which convs get channels_last weights, and where an activation changes format.
//
//   LayoutPlan plan = passes::make_layout_plan(graph);   // decides, changes nothing
//   std::puts(plan.to_string().c_str());
//   passes::apply_layout_plan(graph, plan);              // converts those conv weights
//
// The model (static: from the graph alone, as Graph::run will behave). A value's format is
//   graph input               NCHW (callers feed NCHW; a channels_last feed only helps)
//   constant                  its tensor's suggest_memory_format()
//   Conv / ConvTranspose      NHWC if its input or its weight is NHWC, else NCHW
//                             (functional::conv_memory_format); an NCHW input of an NHWC conv
//                             is permuted at the conv
//   accepts_channels_last()   NCHW; every NHWC input the executor hands it is permuted there
//     == false                (a plain module gets inputs[0]; a graph::Op gets every input) —
//                             except a Reshape, Flatten, Squeeze or Unsqueeze whose readers all
//                             read views and whose new shape the NHWC strides express (static
//                             shapes): the executor hands it a view, no permute
//   Concat                    NHWC iff every input is NHWC (functional::cat)
//   Add / Sub / Mul / Div,    the first non-constant 4-d operand's (the one with the output's
//     a fused element-wise    shape; a constant is the broadcast bias or scale, an ambiguous
//     chain                   [N, C, 1, 1] an SE gate), else the first non-constant one's. A
//                             fused chain permutes its other operand (one counted permute)
//   a conv with a fused       the residual permuted into the conv's output format where it
//     residual                differs (one counted permute)
//   Transpose, Gemm, MatMul,  NCHW (they write a fresh contiguous or non-4-d result)
//     Gather, Expand, Shape and the shape arithmetic
//   anything else             its first input's (BatchNorm, activations, pools, Pad, Resize,
//                             per-axis Softmax, GroupNormalization, canonicalize's PatchShuffle
//                             (domain refold), …: they keep their input's layout)
// A permute is counted as Tensor::contiguous counts it (permute_count()); a value whose declared
// shape is 4-d with C = 1 or H = W = 1 (or a global pool's output) is contiguous in both
// formats, so converting it is free, and a value declared with another rank never permutes.
//
// The rule the planner implements. Each conv either gets channels_last weights or keeps NCHW
// ones; the plan minimises, in this order,
//   1. cost = permutes + convs that compute in NCHW  (a permute copies one activation, an NCHW
//      conv forgoes the NHWC kernel's speed-up; a deliberately simple exchange rate of 1:1),
//   2. the number of convs that compute in NCHW,
//   3. the number of convs left with NCHW weights (seed default: channels_last).
// So it is the seed's rule (NHWC from the first conv, kept through layers that accept it,
// NCHW only where a layer requires it, NHWC again at the next conv) except where a conv would
// pay a permute in and a permute out for itself alone — e.g. a conv reading an NCHW graph input
// whose only readers are NCHW-only layers stays NCHW (1 instead of 2). Convs that share one
// weight tensor (one Tensor handle, e.g. one module running two nodes) decide together.
// Search: the convs split into independent regions (cut where a layer that requires NCHW, or
// one that writes a fresh tensor, starts a value over). A region with at most 12 decisions is
// solved exactly by enumeration; a larger one by flipping one conv at a time, from the seed's
// plan, while the cost drops (so never worse than the seed's plan, not proven minimal).
//
// Sizes stay logical NCHW whatever the strides, so axis-bearing ops (Concat axis 1, Softmax,
// Flatten, Reshape, Transpose) compute the same values under any plan.
#pragma once

#include <string>
#include <vector>

#include "refold/graph/graph.h"
#include "refold/memory_format.h"

namespace refold::passes {

// One layout change at run time: `value` goes from `from` to `to` where `node` reads it.
struct LayoutPermute {
  std::string value;
  MemoryFormat from = MemoryFormat::Contiguous;
  MemoryFormat to = MemoryFormat::Contiguous;
  std::string node;
};

struct NodeLayout {
  std::string node;
  std::string op_type;
  std::vector<std::string> input_values, output_values;  // the node's inputs and outputs
  std::vector<MemoryFormat> inputs;  // as the node reads them (after its permutes); "" → NCHW
  std::vector<MemoryFormat> outputs;
  bool is_conv = false;
  MemoryFormat weights = MemoryFormat::Contiguous;  // a conv's weight format in the plan
};

struct LayoutPlan {
  std::vector<NodeLayout> nodes;  // graph order
  std::vector<LayoutPermute> permutes;
  int convs = 0;
  int nchw_convs = 0;  // convs computing in NCHW
  int channels_last_weights = 0;
  int cost() const { return static_cast<int>(permutes.size()) + nchw_convs; }
  // A summary line, then one line per node, e.g.
  //   conv1: Conv  x NCHW→NHWC, W NCHW -> c1 NHWC  weights NHWC
  // (an arrow marks a permute at that node), then the permutes.
  std::string to_string() const;
};

// The planner's choice for `graph` (the rule above). Changes nothing.
LayoutPlan make_layout_plan(const graph::Graph& graph);

// The formats and permutes `graph` runs with as it stands: each conv with its weight's current
// format (after optimize() or convert_conv2d_weight_memory_format). Changes nothing.
LayoutPlan current_layout(const graph::Graph& graph);

// Lays out every conv node's weight as the plan says (nn::utils::
// convert_conv2d_weight_memory_format on the node's module, which reaches a fused node's conv),
// and points the graph's constant for that weight at the converted storage (no second copy;
// its source index is kept, so export still writes the original initializer). Returns the
// number of weights whose format changed.
int apply_layout_plan(graph::Graph& graph, const LayoutPlan& plan);

}  // namespace refold::passes
