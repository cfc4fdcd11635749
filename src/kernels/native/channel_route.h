// Channels routed from 4-d inputs of one batch and plane size to 4-d outputs of the same:
//
//   y_j[n][c][h][w] = x_k[n][ch][h][w],   (k, ch) = routes[j][c]
//
// — a Concat, a channel shuffle and the Slices or Split after it in one pass (ShuffleNetV2's
// unit: passes/channel_route.h). The route of each output is cut once, when the router is made,
// into segments: a run of consecutive channels of one input (a copy) or two such runs
// interleaved, y[c₀ + 2i + g] = x_{k_g}[ch_g + i] (a shuffle of two groups). On channels_last
// memory every pixel's channels are one row, so a segment is a copy, or an interleave that AVX2
// does 8 pairs at a time (unpack, then swap the 128-bit halves); on NCHW memory each output
// channel is one plane copy.
#pragma once

#include <cstdint>
#include <vector>

#include "refold/memory_format.h"
#include "refold/tensor.h"

namespace refold::native {

struct ChannelSource {
  std::int64_t input = 0, channel = 0;
  bool operator==(const ChannelSource&) const = default;
};
// Per output, per output channel: where it comes from.
using ChannelRoutes = std::vector<std::vector<ChannelSource>>;

class ChannelRouter {
 public:
  // Throws refold::Error on an output with no channels.
  explicit ChannelRouter(ChannelRoutes routes);

  // The outputs, dense in `format` (Contiguous or ChannelsLast). Inputs: float32, 4-d, one
  // batch and plane size, each with the channels its routes read (the caller checks); any
  // strides (an input not dense in `format` is made so first).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, MemoryFormat format) const;

  const ChannelRoutes& routes() const { return routes_; }

  // A run of `length` channels from one input (lanes 1), or `length` pairs from two (lanes 2).
  struct Segment {
    std::int64_t first = 0;  // the output channel it starts at
    std::int64_t length = 0;
    int lanes = 1;
    ChannelSource from[2];
  };
  // Output j's segments, in channel order.
  const std::vector<Segment>& segments(std::size_t j) const { return segments_[j]; }

 private:
  ChannelRoutes routes_;
  std::vector<std::vector<Segment>> segments_;
};

}  // namespace refold::native
