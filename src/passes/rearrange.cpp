// The composed data-movement chain (rearrange.h).
#include "passes/rearrange.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <deque>

#include "core/check.h"
#include "ops/transpose.h"
#include "passes/branch_nodes.h"

namespace refold::passes::detail {

Rearrange::Rearrange(Shape input, std::vector<MoveStep> steps)
    : ViewOp("Rearrange"), input_(std::move(input)) {
  REFOLD_CHECK(!steps.empty() && !steps.back().transpose,
               "Rearrange: the steps must end with a reshape");
  std::vector<std::vector<Factor>> dims;
  for (std::size_t d = 0; d < input_.size(); ++d) {
    REFOLD_CHECK(input_[d] >= 0, "Rearrange: input size {} of [{}]", input_[d],
                 fmt::join(input_, ", "));
    dims.push_back({});
    if (input_[d] != 1) dims.back().push_back({static_cast<std::int64_t>(d), input_[d], 1, 0});
  }
  for (const MoveStep& step : steps) {
    if (step.transpose) {
      ops::check_perm(step.values, static_cast<std::int64_t>(dims.size()));
      std::vector<std::vector<Factor>> permuted;
      for (std::int64_t p : step.values) permuted.push_back(dims[static_cast<std::size_t>(p)]);
      dims = std::move(permuted);
      continue;
    }
    // The factors in order, grouped into the new dims; a factor a dim ends inside is split into
    // its outer part (this dim's) and its inner part (the next's).
    std::deque<Factor> queue;
    for (const auto& dim : dims) queue.insert(queue.end(), dim.begin(), dim.end());
    std::vector<std::vector<Factor>> grouped;
    for (std::int64_t size : step.values) {
      REFOLD_CHECK(size >= 1, "Rearrange: reshape to [{}] (sizes must be at least 1)",
                   fmt::join(step.values, ", "));
      grouped.push_back({});
      for (std::int64_t need = size; need > 1;) {
        REFOLD_CHECK(!queue.empty(), "Rearrange: [{}] holds more elements than the input [{}]",
                     fmt::join(step.values, ", "), fmt::join(input_, ", "));
        const Factor f = queue.front();
        queue.pop_front();
        if (f.size <= need) {
          REFOLD_CHECK(need % f.size == 0, "Rearrange: a dim of {} cannot take a factor of {}",
                       size, f.size);
          grouped.back().push_back(f);
          need /= f.size;
        } else {
          REFOLD_CHECK(f.size % need == 0, "Rearrange: a factor of {} cannot end a dim of {}",
                       f.size, size);
          grouped.back().push_back({f.dim, need, f.step * (f.size / need), 0});
          queue.push_front({f.dim, f.size / need, f.step, 0});
          need = 1;
        }
      }
    }
    REFOLD_CHECK(queue.empty(), "Rearrange: [{}] holds fewer elements than the input [{}]",
                 fmt::join(step.values, ", "), fmt::join(input_, ", "));
    dims = std::move(grouped);
    output_ = step.values;
  }
  for (std::size_t d = 0; d < dims.size(); ++d) {
    for (Factor f : dims[d]) {
      f.out = d;
      factors_.push_back(f);
    }
  }
  // x's innermost dim of more than one element, and its step-1 factor's dim of y.
  auto innermost = static_cast<std::int64_t>(input_.size()) - 1;
  while (innermost > 0 && input_[static_cast<std::size_t>(innermost)] == 1) --innermost;
  for (const Factor& f : factors_)
    if (f.dim == innermost && f.step == 1) image_ = output_.size() == 4 && f.out == 1;
}

std::vector<Tensor> Rearrange::moved(const std::vector<Tensor>& inputs, bool views) const {
  REFOLD_CHECK(inputs.size() == 1 && inputs[0].defined(), "Rearrange: expects 1 input, got {}",
               inputs.size());
  const Tensor& x = inputs[0];
  REFOLD_CHECK(x.sizes() == input_, "Rearrange: input {} is not the [{}] it was composed for",
               x.description(), fmt::join(input_, ", "));
  Shape sizes, strides;
  for (const Factor& f : factors_) {
    sizes.push_back(f.size);
    strides.push_back(f.step * x.strides()[static_cast<std::size_t>(f.dim)]);
  }
  const Tensor read = x.as_strided(sizes, strides, x.storage_offset());
  const bool nhwc =
      image_ && (x.dim() != 4 || x.suggest_memory_format() == MemoryFormat::ChannelsLast);
  const MemoryFormat format = nhwc ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
  // A view where the executor takes one, or where it is already dense in y's layout (tokens
  // read as a channels_last image, or back): no copy.
  if (Tensor v = read.view(output_); v.defined() && (views || v.is_contiguous(format)))
    return {views ? v : ops::with_format_strides(v)};
  Tensor y = empty(output_, {x.dtype(), format});
  // y's memory seen as the factors: a factor's stride is its dim's stride times the sizes of
  // the factors after it in that dim.
  Shape y_strides(factors_.size());
  std::vector<std::int64_t> inner(output_.size(), 1);
  for (std::size_t k = factors_.size(); k-- > 0;) {
    const Factor& f = factors_[k];
    y_strides[k] = y.strides()[f.out] * inner[f.out];
    inner[f.out] *= f.size;
  }
  y.as_strided(sizes, y_strides, y.storage_offset()).copy_(read);
  return {y};
}

namespace {

bool moves_data(const graph::Node& n) {
  if (!n.parts.empty() || n.outputs.size() != 1 || n.inputs.empty() || n.inputs[0].empty())
    return false;
  for (const char* op : {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten"})
    if (is_op(n, op)) return true;
  return false;
}

// The node that continues the chain after `value`: its one reader, moving data.
std::optional<std::size_t> next_in_chain(const graph::Graph& graph, const std::string& value) {
  if (graph.is_graph_output(value)) return std::nullopt;
  const std::vector<std::size_t> readers = graph.consumers(value);
  if (readers.size() != 1) return std::nullopt;
  const graph::Node& n = graph.nodes()[readers[0]];
  if (!moves_data(n) || n.inputs[0] != value ||
      std::count(n.inputs.begin(), n.inputs.end(), value) != 1)
    return std::nullopt;
  return readers[0];
}

}  // namespace

std::optional<RearrangeMatch> match_rearrange(const graph::Graph& graph, std::size_t index,
                                              StaticShapes& shapes) {
  const graph::Node& first = graph.nodes()[index];
  if (!moves_data(first)) return std::nullopt;
  // Only where a chain starts: not after a node that would continue into this one.
  if (const auto producer = graph.producer(first.inputs[0]);
      producer && moves_data(graph.nodes()[*producer]) &&
      next_in_chain(graph, first.inputs[0]) == index)
    return std::nullopt;
  RearrangeMatch m;
  m.x = first.inputs[0];
  const auto input = shapes.shape(m.x);
  if (!input) return std::nullopt;
  m.input = *input;
  std::vector<std::size_t> chain = {index};
  while (const auto next = next_in_chain(graph, graph.nodes()[chain.back()].outputs[0]))
    chain.push_back(*next);
  const auto count_transposes = [&](const std::vector<std::size_t>& nodes) {
    return std::count_if(nodes.begin(), nodes.end(),
                         [&](std::size_t i) { return is_op(graph.nodes()[i], "Transpose"); });
  };
  // Tokens ↔ image: [N, L, C] to [N, C, H, W] through one Transpose, or back (PVT's and
  // SegFormer's MixFFN around their depthwise conv, conv position encodings, spatial-reduction
  // attention). As one Rearrange the image is planned channels_last — the tokens' own memory
  // order, so no copy either way (Rearrange::moved) — where the Reshape left it NCHW and its
  // conv ran NCHW behind a copy. Such a chain may end with its Transpose.
  const auto rank_of = [&](const std::string& value) {
    const auto s = shapes.shape(value);
    return s ? s->size() : std::size_t{0};
  };
  const std::size_t y_rank = rank_of(graph.nodes()[chain.back()].outputs[0]);
  const bool tokens_image = count_transposes(chain) == 1 && ((m.input.size() == 3 && y_rank == 4) ||
                                                             (m.input.size() == 4 && y_rank == 3));
  if (!tokens_image) {
    while (!chain.empty() && is_op(graph.nodes()[chain.back()], "Transpose")) chain.pop_back();
    // With one Transpose the chain copies at most once already, where views pass between its
    // ops (the Reshape before it views its input, the one after copies): nothing to save.
    if (count_transposes(chain) < 2) return std::nullopt;
  }
  for (std::size_t i : chain) {
    const graph::Node& n = graph.nodes()[i];
    if (is_op(n, "Transpose")) {
      const auto* op = dynamic_cast<const ops::Transpose*>(n.module.get());
      const auto rank = m.steps.empty() ? m.input.size() : m.steps.back().values.size();
      if (op == nullptr || (!op->perm().empty() && op->perm().size() != rank))
        return std::nullopt;  // (a perm of another rank: running the node reports it)
      m.steps.push_back({true, op->perm_for(static_cast<std::int64_t>(rank))});
      continue;
    }
    const auto out = shapes.shape(n.outputs[0]);
    if (!out) return std::nullopt;
    m.steps.push_back({false, *out});
  }
  if (m.steps.back().transpose) {  // the steps end with a reshape: to the transposed shape
    const auto out = shapes.shape(graph.nodes()[chain.back()].outputs[0]);
    if (!out) return std::nullopt;
    m.steps.push_back({false, *out});
  }
  try {
    Rearrange check(m.input, m.steps);  // composes, or the chain stays
  } catch (const Error&) {
    return std::nullopt;
  }
  m.parts = chain;
  m.y = graph.nodes()[chain.back()].outputs[0];
  return m;
}

std::string fuse_rearrange(graph::Graph& graph, const RearrangeMatch& m) {
  std::vector<std::int64_t> transposes, lengths, values;
  for (const MoveStep& step : m.steps) {
    transposes.push_back(step.transpose ? 1 : 0);
    lengths.push_back(static_cast<std::int64_t>(step.values.size()));
    values.insert(values.end(), step.values.begin(), step.values.end());
  }
  const graph::Node& last = graph.nodes()[m.parts.back()];
  graph::Node fused;
  fused.name = last.name;
  fused.op_type = "Rearrange";
  fused.domain = "refold";
  fused.inputs = {m.x};
  fused.outputs = {m.y};
  fused.origin = origin_of(graph, m.parts);
  fused.attributes.set("input_shape", m.input);
  fused.attributes.set("transposes", transposes);
  fused.attributes.set("step_lengths", lengths);
  fused.attributes.set("step_values", values);
  const std::string note =
      fmt::format("rewrote {} ({}) as one Rearrange: one copy instead of one per Reshape",
                  describe(last), fused.origin);
  replace_with_fused(graph, m.parts, std::move(fused));
  return note;
}

nn::ModulePtr build_rearrange(const graph::Node& node) {
  const graph::Attributes& a = node.attributes;
  REFOLD_CHECK(node.inputs.size() == 1 && node.outputs.size() == 1 && a.has("input_shape") &&
                   a.has("transposes") && a.has("step_lengths") && a.has("step_values"),
               "Rearrange '{}': expects 1 input, 1 output and the attributes input_shape, "
               "transposes, step_lengths and step_values",
               node.name);
  const auto transposes = a.get_ints("transposes");
  const auto lengths = a.get_ints("step_lengths");
  const auto values = a.get_ints("step_values");
  REFOLD_CHECK(transposes.size() == lengths.size(),
               "Rearrange '{}': {} transposes for {} step lengths", node.name, transposes.size(),
               lengths.size());
  std::vector<MoveStep> steps;
  std::size_t at = 0;
  for (std::size_t s = 0; s < lengths.size(); ++s) {
    REFOLD_CHECK(lengths[s] >= 0 && at + static_cast<std::size_t>(lengths[s]) <= values.size(),
                 "Rearrange '{}': step lengths [{}] overrun {} step values", node.name,
                 fmt::join(lengths, ", "), values.size());
    steps.push_back(
        {transposes[s] != 0,
         std::vector<std::int64_t>(values.begin() + static_cast<std::ptrdiff_t>(at),
                                   values.begin() + static_cast<std::ptrdiff_t>(at + lengths[s]))});
    at += static_cast<std::size_t>(lengths[s]);
  }
  try {
    return std::make_shared<Rearrange>(a.get_ints("input_shape"), std::move(steps));
  } catch (const Error& e) {
    throw e.with_context(fmt::format("Rearrange '{}'", node.name));
  }
}

}  // namespace refold::passes::detail
