// What a graph run costs: FLOPs per node and in total, time per node, peak activation memory.
//
//   graph::RunProfile p = graph::profile(*g, {x});
//   fmt::print("{:.2f} GFLOP\n", p.flops * 1e-9);
//
// FLOPs follow refold's one convention (refold/reparam/block.h): 2 per multiply-add, counted
// for the ops that dominate a CNN — Conv, ConvTranspose (the fused ones too: a node keeps the
// op_type "Conv"), Gemm and MatMul; everything else counts 0. They come from the shapes the
// nodes actually read and wrote, so symbolic dims are resolved by the run.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "refold/graph/graph.h"
#include "refold/tensor.h"

namespace refold::graph {

struct NodeProfile {
  std::string name;
  std::string op_type;
  std::int64_t flops = 0;
  double milliseconds = 0;
  // Bytes the node read and wrote: every defined input (weights included) and output, once.
  std::int64_t bytes = 0;
  // The memory format of its first input and first output: "NCHW", "NHWC", or the rank for
  // a non-4-d value ("2-d"); "" when absent.
  std::string layout_in, layout_out;
  // Each kernel dispatch it made, "<op>: <implementation>" ("conv2d: winograd", "conv2d: onednn
  // brg:avx2", "relu: reference"); empty for ops that call no dispatched kernel (shape ops).
  std::vector<std::string> implementations;
};

struct RunProfile {
  std::int64_t flops = 0;
  std::vector<NodeProfile> nodes;
  std::vector<Tensor> outputs;
};

// Per op type, over a profile's nodes: how many, their time, FLOPs and bytes. Sorted by time,
// longest first.
struct OpTypeProfile {
  std::string op_type;
  int nodes = 0;
  double milliseconds = 0;
  std::int64_t flops = 0;
  std::int64_t bytes = 0;
};
std::vector<OpTypeProfile> by_op_type(const RunProfile& profile);

// Node by node, the median time of several profiles of the same graph (each node's time is the
// median of its times; everything else is the first profile's). Throws refold::Error when the
// profiles are empty or of different graphs.
RunProfile median_profile(const std::vector<RunProfile>& profiles);

// The multiply-add work of one node, from the tensors it read and wrote (0 for other ops).
std::int64_t node_flops(const Node& node, const std::vector<Tensor>& inputs,
                        const std::vector<Tensor>& outputs);

// Runs the graph once, timing each node.
RunProfile profile(Graph& graph, const std::vector<Tensor>& inputs);
// The same over any way of running a graph that reports each node (refold::Session::profile):
// `run` runs it once, calling the observer it is given after each node.
RunProfile profile(const std::function<std::vector<Tensor>(const Graph::NodeObserver&)>& run);

}  // namespace refold::graph
