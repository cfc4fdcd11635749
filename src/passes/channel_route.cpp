// A Concat, a channel shuffle and the Slices or Split after it as one ChannelRoute
// (channel_route.h has the pattern and why it is exact).
#include "passes/channel_route.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <utility>

#include "core/check.h"
#include "kernels/verbose.h"
#include "passes/branch_nodes.h"

namespace refold::passes::detail {

namespace {

// Indices of float32 values are exact up to 2^24.
constexpr std::int64_t kMaxIndexedElements = std::int64_t{1} << 24;

bool plain_node(const graph::Node& node, const char* op_type) {
  return is_op(node, op_type) && node.parts.empty() && !node.inputs.empty() &&
         !node.inputs[0].empty();
}

// A Concat along the channels of 4-d values.
bool channel_concat(const graph::Node& node) {
  if (!plain_node(node, "Concat") || node.outputs.size() != 1) return false;
  const std::int64_t axis = node.attributes.get_int("axis", 0);
  return axis == 1 || axis == -3;
}

// A Slice or Split reading `value` as its data, every other input a constant.
bool cuts(const graph::Graph& graph, const graph::Node& node, const std::string& value) {
  if (!plain_node(node, "Slice") && !plain_node(node, "Split")) return false;
  if (node.inputs[0] != value) return false;
  for (std::size_t i = 1; i < node.inputs.size(); ++i)
    if (!node.inputs[i].empty() && !constant_value(graph, node.inputs[i])) return false;
  return true;
}

// [N, C, H, W] holding the indices first, first + 1, … in row-major order.
Tensor indices(const Shape& shape, std::int64_t first) {
  Tensor t = empty(shape, DType::Float32);
  float* p = t.data<float>();
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(first + i);
  return t;
}

// Output `y` (an index tensor) read as channels of the inputs: one (input, channel) per output
// channel, the same at every (n, h, w); nullopt where it is not that.
std::optional<std::vector<native::ChannelSource>> route_of(
    const Tensor& y, const std::vector<Shape>& inputs, const std::vector<std::int64_t>& firsts) {
  if (y.dim() != 4) return std::nullopt;
  const Tensor dense = y.contiguous();
  const float* v = dense.data<float>();
  const std::int64_t batch = y.size(0), channels = y.size(1), height = y.size(2), width = y.size(3),
                     plane = height * width;
  std::vector<native::ChannelSource> route;
  for (std::int64_t c = 0; c < channels; ++c) {
    const auto first = static_cast<std::int64_t>(v[c * plane]);  // element (0, c, 0, 0)
    const auto k = static_cast<std::size_t>(std::upper_bound(firsts.begin(), firsts.end(), first) -
                                            firsts.begin() - 1);
    const Shape& x = inputs[k];
    if (x[0] != batch || x[2] != height || x[3] != width) return std::nullopt;
    const std::int64_t offset = first - firsts[k];
    if (offset % plane != 0 || offset / plane >= x[1]) return std::nullopt;
    const std::int64_t channel = offset / plane;
    for (std::int64_t n = 0; n < batch; ++n)
      for (std::int64_t p = 0; p < plane; ++p)
        if (static_cast<std::int64_t>(v[(n * channels + c) * plane + p]) !=
            firsts[k] + (n * x[1] + channel) * plane + p)
          return std::nullopt;
    route.push_back({static_cast<std::int64_t>(k), channel});
  }
  return route;
}

}  // namespace

ChannelRoute::ChannelRoute(std::vector<std::int64_t> input_channels, native::ChannelRoutes routes)
    : Op("ChannelRoute"), input_channels_(std::move(input_channels)), router_(std::move(routes)) {}

std::vector<Tensor> ChannelRoute::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(inputs.size() == input_channels_.size(), "ChannelRoute: expects {} inputs, got {}",
               input_channels_.size(), inputs.size());
  const Tensor& first = inputs[0];
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& x = inputs[k];
    REFOLD_CHECK(x.defined() && x.dim() == 4 && x.dtype() == DType::Float32,
                 "ChannelRoute: input {} must be a 4-d float32 tensor", k);
    REFOLD_CHECK(x.size(1) == input_channels_[k] && x.size(0) == first.size(0) &&
                     x.size(2) == first.size(2) && x.size(3) == first.size(3),
                 "ChannelRoute: input {} is [{}]; built for {} channels of input 0's batch and "
                 "plane [{}]",
                 k, fmt::join(x.sizes(), ", "), input_channels_[k], fmt::join(first.sizes(), ", "));
  }
  log_dispatch("ChannelRoute", "native");
  const MemoryFormat format = first.suggest_memory_format() == MemoryFormat::ChannelsLast
                                  ? MemoryFormat::ChannelsLast
                                  : MemoryFormat::Contiguous;
  return router_.run(inputs, format);
}

nn::ModulePtr build_channel_route(const graph::Node& node) {
  for (const char* name : {"input_channels", "output_channels", "sources"})
    REFOLD_CHECK(node.attributes.has(name), "{}: ChannelRoute needs the attribute '{}'",
                 describe(node), name);
  const auto& a = node.attributes;
  const std::vector<std::int64_t> outputs = a.get_ints("output_channels"),
                                  sources = a.get_ints("sources");
  std::int64_t total = 0;
  for (std::int64_t c : outputs) {
    REFOLD_CHECK(c > 0, "{}: ChannelRoute output_channels [{}] must be positive", describe(node),
                 fmt::join(outputs, ", "));
    total += c;
  }
  REFOLD_CHECK(static_cast<std::int64_t>(sources.size()) == 2 * total,
               "{}: ChannelRoute needs 2 sources per output channel ({}), got {}", describe(node),
               2 * total, sources.size());
  const std::vector<std::int64_t> inputs = a.get_ints("input_channels");
  native::ChannelRoutes routes;
  std::size_t at = 0;
  for (std::int64_t c : outputs) {
    auto& route = routes.emplace_back();
    for (std::int64_t i = 0; i < c; ++i, at += 2) {
      const native::ChannelSource s{sources[at], sources[at + 1]};
      REFOLD_CHECK(s.input >= 0 && s.input < static_cast<std::int64_t>(inputs.size()) &&
                       s.channel >= 0 && s.channel < inputs[static_cast<std::size_t>(s.input)],
                   "{}: ChannelRoute source (input {}, channel {}) is not one of the inputs' "
                   "channels [{}]",
                   describe(node), s.input, s.channel, fmt::join(inputs, ", "));
      route.push_back(s);
    }
  }
  return std::make_shared<ChannelRoute>(inputs, std::move(routes));
}

namespace {

// The match of the PatchShuffle `index` with the Concat `concat` before it (if any) and the
// cuts `cutters` after it (if any), when the route read off the nodes is one.
std::optional<ChannelRouteMatch> route_match(const graph::Graph& graph, std::size_t index,
                                             std::optional<std::size_t> concat,
                                             const std::vector<std::size_t>& cutters,
                                             StaticShapes& shapes) {
  const graph::Node& shuffle = graph.nodes()[index];
  ChannelRouteMatch m;
  if (concat) {
    for (const std::string& in : graph.nodes()[*concat].inputs)
      if (std::find(m.inputs.begin(), m.inputs.end(), in) == m.inputs.end()) m.inputs.push_back(in);
  } else {
    m.inputs = {shuffle.inputs[0]};
  }
  if (cutters.empty()) {
    m.outputs = {shuffle.outputs[0]};
  } else {
    for (std::size_t c : cutters)
      for (const std::string& out : graph.nodes()[c].outputs)
        if (!out.empty()) m.outputs.push_back(out);
  }
  // Every input 4-d float32 with a static shape, the indices within float32's exact range.
  std::vector<Shape> input_shapes;
  std::vector<std::int64_t> firsts;
  std::int64_t elements = 0;
  for (const std::string& in : m.inputs) {
    const auto shape = shapes.shape(in);
    const auto dtype = shapes.dtype(in);
    if (!shape || shape->size() != 4 || dtype != DType::Float32 || graph.is_constant(in))
      return std::nullopt;
    input_shapes.push_back(*shape);
    firsts.push_back(elements);
    std::int64_t numel = 1;
    for (std::int64_t d : *shape) numel *= d;
    elements += numel;
    if (elements >= kMaxIndexedElements) return std::nullopt;
    m.input_channels.push_back((*shape)[1]);
  }
  // The matched nodes run on the inputs' indices.
  std::map<std::string, Tensor> values;
  for (std::size_t k = 0; k < m.inputs.size(); ++k)
    values[m.inputs[k]] = indices(input_shapes[k], firsts[k]);
  auto value_of = [&](const std::string& name) -> Tensor {
    if (name.empty()) return {};
    if (const auto it = values.find(name); it != values.end()) return it->second;
    if (const auto c = constant_value(graph, name)) return *c;
    fail("ChannelRoute: no value for '{}'", name);
  };
  if (concat) m.parts.push_back(*concat);
  m.parts.push_back(index);
  m.parts.insert(m.parts.end(), cutters.begin(), cutters.end());
  try {
    for (std::size_t n : m.parts) {
      const graph::Node& node = graph.nodes()[n];
      const std::vector<Tensor> outs = run_node(node, value_of);
      for (std::size_t o = 0; o < node.outputs.size() && o < outs.size(); ++o)
        if (!node.outputs[o].empty()) values[node.outputs[o]] = outs[o];
    }
  } catch (const std::exception&) {
    return std::nullopt;
  }
  for (const std::string& out : m.outputs) {
    const auto it = values.find(out);
    if (it == values.end() || !it->second.defined()) return std::nullopt;
    auto route = route_of(it->second, input_shapes, firsts);
    if (!route || route->empty()) return std::nullopt;
    m.routes.push_back(std::move(*route));
  }
  m.shuffle = index;
  return m;
}

}  // namespace

std::optional<ChannelRouteMatch> match_channel_route(const graph::Graph& graph, std::size_t index,
                                                     StaticShapes& shapes) {
  const graph::Node& shuffle = graph.nodes()[index];
  if (shuffle.domain != "refold" || shuffle.op_type != "PatchShuffle" ||
      shuffle.inputs.size() != 1 || shuffle.outputs.size() != 1)
    return std::nullopt;
  const std::string &x = shuffle.inputs[0], &s = shuffle.outputs[0];
  // The Concat before, when only the shuffle reads it.
  std::optional<std::size_t> concat;
  if (const auto producer = graph.producer(x); producer &&
                                               channel_concat(graph.nodes()[*producer]) &&
                                               single_use_problem(graph, x, index).empty())
    concat = *producer;
  // The Slices and Splits after, when they are all that reads it.
  std::vector<std::size_t> cutters;
  if (!graph.is_graph_output(s)) {
    cutters = graph.consumers(s);
    for (std::size_t c : cutters)
      if (!cuts(graph, graph.nodes()[c], s)) cutters.clear();
  }
  if (!cutters.empty())
    if (auto m = route_match(graph, index, concat, cutters, shapes)) return m;
  // Cuts that are not channel ranges (a Slice along H) stay; the Concat may still join.
  if (concat) return route_match(graph, index, concat, {}, shapes);
  return std::nullopt;
}

std::string fuse_channel_route(graph::Graph& graph, const ChannelRouteMatch& m) {
  const graph::Node& shuffle = graph.nodes()[m.shuffle];
  graph::Node fused;
  fused.name = shuffle.name;
  fused.op_type = "ChannelRoute";
  fused.domain = "refold";
  fused.inputs = m.inputs;
  fused.outputs = m.outputs;
  fused.origin = origin_of(graph, m.parts);
  std::vector<std::int64_t> output_channels, sources;
  for (const auto& route : m.routes) {
    output_channels.push_back(static_cast<std::int64_t>(route.size()));
    for (const native::ChannelSource& s : route)
      sources.insert(sources.end(), {s.input, s.channel});
  }
  fused.attributes.set("input_channels", m.input_channels);
  fused.attributes.set("output_channels", output_channels);
  fused.attributes.set("sources", sources);
  const std::string note = fmt::format(
      "rewrote {} with the {} node(s) around it as one ChannelRoute: {} input(s) → {} output(s) "
      "in one pass",
      describe(shuffle), m.parts.size() - 1, m.inputs.size(), m.outputs.size());
  // At the first part's place, not the last's: a reader of one cut may come before the next
  // cut, and every input is defined before the first part, which read it.
  replace_with_fused(graph, m.parts, std::move(fused), FusedAt::FirstPart);
  return note;
}

}  // namespace refold::passes::detail
