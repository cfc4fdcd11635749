// A channel shuffle with the Concat before it and the Slices or Split after it, as ShuffleNetV2
// writes its unit:
//   c = Concat(a, b, axis 1);  s = PatchShuffle(c);  y₀ = Slice(s, channels [0, C/2));  y₁ = …
// (the PatchShuffle is canonicalize's Reshape → Transpose → Reshape, patch_shuffle.h) — three
// copies of every value, and on channels_last memory the Slice for the next conv a fourth. Each
// y is a choice of channels of the inputs, the same at every pixel: y_j[n][c] = x_k[n][ch]. As
// one ChannelRoute node (domain "refold", its parts the matched nodes, which the exporter writes
// back) it is one pass that writes every y dense (kernels/native/channel_route.h).
//
// Pattern: a PatchShuffle node; before it a Concat along the channels whose output only it
// reads, and/or after it only Slices and Splits (whose other inputs are constants), its output
// not a graph output — at least one of the two. Every value 4-d, float32, with static shapes
// (passes/known_values.h), one batch and plane size.
//
// Why exact: the route is not derived from the ops' attributes but read off the ops themselves,
// run on the inputs' element indices (exact in float32 below 2²⁴ elements): each output element
// must hold the index of the same (n, h, w) of one input, at one input channel per output
// channel — else no match. The node copies values, so it computes what the parts computed.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "kernels/native/channel_route.h"
#include "passes/known_values.h"
#include "refold/graph/graph.h"
#include "refold/graph/op.h"

namespace refold::passes::detail {

// Runs a route on inputs of the channels it was built for, in input 0's memory format.
class ChannelRoute : public graph::Op {
 public:
  ChannelRoute(std::vector<std::int64_t> input_channels, native::ChannelRoutes routes);
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;

 private:
  std::vector<std::int64_t> input_channels_;
  native::ChannelRouter router_;
};

// The module of a ChannelRoute node, from its attributes input_channels, output_channels and
// sources ((input, channel) pairs of every output channel, output after output), as
// fuse_channel_route writes them. Throws refold::Error naming what is wrong.
nn::ModulePtr build_channel_route(const graph::Node& node);

struct ChannelRouteMatch {
  std::vector<std::string> inputs, outputs;
  std::vector<std::int64_t> input_channels;
  native::ChannelRoutes routes;
  std::vector<std::size_t> parts;  // the Concat, the PatchShuffle, the Slices and Splits
  std::size_t shuffle = 0;         // the PatchShuffle
};

// The pattern around the PatchShuffle node `index`, or nullopt.
std::optional<ChannelRouteMatch> match_channel_route(const graph::Graph& graph, std::size_t index,
                                                     StaticShapes& shapes);

// Replaces the match by its ChannelRoute node; returns the note.
std::string fuse_channel_route(graph::Graph& graph, const ChannelRouteMatch& m);

}  // namespace refold::passes::detail
