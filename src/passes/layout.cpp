// layout: the memory-format plan (include/refold/passes/layout.h has the model and the rule).
//
// Implementation: every value gets an integer id; a node's format rule is looked up once
// (table below); evaluate() walks the nodes in order and applies the rules for one choice of
// conv weight formats, counting permutes as Tensor::contiguous would. The search splits the
// decisions into independent regions (union-find over the values that pass a format along) and
// minimises each region's share of the cost with the others fixed — the cost is a sum over
// regions, so that is the global minimum.
#include "refold/passes/layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

#include "core/check.h"
#include "core/tensor_impl.h"
#include "ops/op.h"
#include "ops/transpose.h"
#include "ops/view_op.h"
#include "passes/fused_chain.h"
#include "passes/fused_conv.h"
#include "passes/known_values.h"
#include "passes/layout_model.h"
#include "passes/passes.h"
#include "passes/rearrange.h"
#include "refold/graph/op.h"
#include "refold/nn/conv.h"
#include "refold/nn/utils.h"

namespace refold::passes {
namespace {

constexpr MemoryFormat kNchw = MemoryFormat::Contiguous;
constexpr MemoryFormat kNhwc = MemoryFormat::ChannelsLast;

const char* format_name(MemoryFormat f) { return f == kNhwc ? "NHWC" : "NCHW"; }

// The conv weight a node's module computes with, or undefined when the node is not a conv.
Tensor conv_weight(const nn::ModulePtr& module) {
  if (auto* c = dynamic_cast<nn::Conv2d*>(module.get())) return c->weight();
  if (auto* t = dynamic_cast<nn::ConvTranspose2d*>(module.get())) return t->weight();
  if (auto* f = dynamic_cast<FusedConvAdd*>(module.get())) return f->conv()->weight();
  return {};
}

// A node's rule: a conv's follows its weight; a module that does not accept channels_last
// gets NCHW inputs; any other node follows its op's LayoutRule (src/ops/op.h), and a node the
// op tables do not define (a module built in C++) keeps its first input's format.
enum class Rule {
  Conv,          // NHWC if input 0 or the weight is NHWC
  NchwOnly,      // accepts_channels_last() == false: NHWC inputs permuted, output NCHW
  AllInputs,     // LayoutRule::AllInputs
  Broadcasting,  // LayoutRule::Broadcasting, and a fused element-wise chain (x, residual)
  Fresh,         // LayoutRule::Fresh
  FirstInput,    // LayoutRule::FirstInput
  Permutation,   // LayoutRule::Permutation (ops::transposed_format)
  Image,         // a Rearrange: a 4-d output that is an image (Rearrange::writes_image) is NHWC
                 // unless its input is 4-d NCHW
};

Rule rule_of(const graph::Node& node) {
  if (conv_weight(node.module).defined()) return Rule::Conv;
  if (dynamic_cast<const detail::Rearrange*>(node.module.get()) != nullptr) return Rule::Image;
  if (!node.module->accepts_channels_last()) return Rule::NchwOnly;
  if (dynamic_cast<const ElementwiseChain*>(node.module.get()) != nullptr)
    return Rule::Broadcasting;
  const ops::OpDef* def = ops::find_op(node);
  switch (def != nullptr ? def->layout : ops::LayoutRule::FirstInput) {
    case ops::LayoutRule::AllInputs:
      return Rule::AllInputs;
    case ops::LayoutRule::Broadcasting:
      return Rule::Broadcasting;
    case ops::LayoutRule::Fresh:
      return Rule::Fresh;
    case ops::LayoutRule::Permutation:
      return dynamic_cast<const ops::Transpose*>(node.module.get()) != nullptr ? Rule::Permutation
                                                                               : Rule::Fresh;
    case ops::LayoutRule::FirstInput:
      break;
  }
  return Rule::FirstInput;
}

// What converting a value costs: a 4-d value with C == 1 or H == W == 1 is contiguous in both
// formats (Note [Ambiguous memory formats]), a non-4-d value has no channels_last form.
enum class Kind { FourD, Ambiguous, NotFourD };

Kind kind_of_sizes(const std::vector<std::int64_t>& sizes) {
  if (sizes.size() != 4) return Kind::NotFourD;
  if (sizes[1] == 1 || (sizes[2] == 1 && sizes[3] == 1)) return Kind::Ambiguous;
  return Kind::FourD;
}

Kind kind_of_info(const graph::ValueInfo& info) {
  if (!info.shape) return Kind::FourD;
  const auto& dims = *info.shape;
  if (dims.size() != 4) return Kind::NotFourD;
  auto is = [](const graph::Dim& d, std::int64_t v) { return d.is_static() && d.value == v; };
  if (is(dims[1], 1) || (is(dims[2], 1) && is(dims[3], 1))) return Kind::Ambiguous;
  return Kind::FourD;
}

// Whether `node`, a Reshape, Flatten, Squeeze or Unsqueeze, would read an NHWC input as a view,
// copying nothing: ExecutionPlan hands views on (Op::run_views) when every reader of its outputs
// reads views (MatMul, the other ViewOps) and none is a graph output, and ops::reshaped then
// views the NHWC memory where its strides can express the new shape (detail::view_strides:
// [N, C, H, W] → [N, C, H·W], or [N, heads, C / heads, H·W], are views; [N, C·H, W] is not).
// Needs both static shapes. The model then takes the output as NCHW, as the rule has it: a view
// that is dense in no format goes only to view readers, which copy nothing either where their
// own view is expressible (a later Reshape is asked the same question with an NCHW input).
bool views_nhwc(const graph::Graph& graph, const graph::Node& node, detail::StaticShapes& shapes) {
  if (dynamic_cast<const ops::ViewOp*>(node.module.get()) == nullptr || node.inputs.empty() ||
      node.inputs[0].empty() || node.outputs.size() != 1 || node.outputs[0].empty())
    return false;
  const std::string& output = node.outputs[0];
  if (graph.is_graph_output(output)) return false;
  for (std::size_t c : graph.consumers(output)) {
    const auto* op = dynamic_cast<const graph::Op*>(graph.nodes()[c].module.get());
    if (op == nullptr || !op->reads_views()) return false;
  }
  const std::optional<Shape> in = shapes.shape(node.inputs[0]);
  const std::optional<Shape> out = shapes.shape(output);
  if (!in || !out || in->size() != 4) return false;
  return refold::detail::view_strides(*in, channels_last_strides(*in), *out).has_value();
}

struct Score {
  int cost = 0, nchw_convs = 0, nchw_weights = 0;
  bool operator<(const Score& o) const {
    return std::tie(cost, nchw_convs, nchw_weights) <
           std::tie(o.cost, o.nchw_convs, o.nchw_weights);
  }
};

class Model {
 public:
  explicit Model(const graph::Graph& graph) : graph_(graph) {
    auto id_of = [&](const std::string& name) {
      auto [it, added] = ids_.emplace(name, static_cast<int>(names_.size()));
      if (added) names_.push_back(name);
      return it->second;
    };
    for (const graph::ValueInfo& v : graph.inputs) id_of(v.name);
    for (const std::string& c : graph.constant_names()) id_of(c);
    for (const graph::Node& n : graph.nodes()) {
      for (const std::string& s : n.inputs)
        if (!s.empty()) id_of(s);
      for (const std::string& s : n.outputs)
        if (!s.empty()) id_of(s);
    }
    const int count = static_cast<int>(names_.size());
    kind_.assign(count, Kind::FourD);
    initial_.assign(count, kNchw);
    constant_.assign(count, false);
    auto declare = [&](const graph::ValueInfo& v) {
      if (auto it = ids_.find(v.name); it != ids_.end()) kind_[it->second] = kind_of_info(v);
    };
    for (const auto& v : graph.inputs) declare(v);
    for (const auto& v : graph.value_info) declare(v);
    for (const auto& v : graph.outputs) declare(v);
    for (const std::string& c : graph.constant_names()) {
      const int id = ids_.at(c);
      const Tensor& t = graph.constant(c);
      constant_[id] = true;
      kind_[id] = kind_of_sizes(t.sizes());
      initial_[id] = t.suggest_memory_format();
    }
    // A global pool writes [N, C, 1, 1], free to convert whatever its declared shape says.
    for (const graph::Node& n : graph.nodes()) {
      if (n.op_type != "GlobalAveragePool" && n.op_type != "GlobalMaxPool") continue;
      for (const std::string& o : n.outputs)
        if (!o.empty()) kind_[ids_.at(o)] = Kind::Ambiguous;
    }
    // Nodes, their rules and the weight variables (one per distinct weight tensor).
    std::vector<Tensor> weights;
    detail::StaticShapes shapes(graph);
    for (std::size_t i = 0; i < graph.nodes().size(); ++i) {
      const graph::Node& n = graph.nodes()[i];
      NodeInfo info;
      info.rule = rule_of(n);
      if (info.rule == Rule::Permutation)
        info.perm = dynamic_cast<const ops::Transpose&>(*n.module).perm();
      if (info.rule == Rule::Image)
        info.image = dynamic_cast<const detail::Rearrange&>(*n.module).writes_image();
      info.op = dynamic_cast<const graph::Op*>(n.module.get()) != nullptr;
      info.residual = dynamic_cast<const FusedConvAdd*>(n.module.get()) != nullptr;
      info.chain = dynamic_cast<const ElementwiseChain*>(n.module.get()) != nullptr;
      info.nhwc_view = info.rule == Rule::NchwOnly && views_nhwc(graph, n, shapes);
      for (const std::string& s : n.inputs) info.inputs.push_back(s.empty() ? -1 : ids_.at(s));
      for (const std::string& s : n.outputs) info.outputs.push_back(s.empty() ? -1 : ids_.at(s));
      if (info.rule == Rule::Conv) {
        const Tensor w = conv_weight(n.module);
        auto same = std::find_if(weights.begin(), weights.end(),
                                 [&](const Tensor& t) { return t.is_same(w); });
        info.var = static_cast<int>(same - weights.begin());
        if (same == weights.end()) {
          weights.push_back(w);
          var_nodes_.emplace_back();
        }
        var_nodes_[info.var].push_back(i);
      }
      nodes_.push_back(std::move(info));
    }
  }

  int variables() const { return static_cast<int>(var_nodes_.size()); }
  const std::vector<std::size_t>& var_nodes(int var) const { return var_nodes_[var]; }

  // Groups of variables whose choices interact (see the file comment), with the nodes whose
  // cost they can change.
  struct Region {
    std::vector<int> vars;
    std::vector<std::size_t> nodes;  // ascending
  };
  std::vector<Region> regions() const {
    std::vector<int> parent(names_.size());
    std::iota(parent.begin(), parent.end(), 0);
    auto find = [&](int x) {
      while (parent[x] != x) x = parent[x] = parent[parent[x]];
      return x;
    };
    auto unite = [&](int a, int b) { parent[find(a)] = find(b); };
    for (const NodeInfo& n : nodes_) {
      if (n.rule == Rule::NchwOnly || n.rule == Rule::Fresh) continue;
      for (int out : n.outputs) {
        if (out < 0) continue;
        for (int in : n.inputs)
          if (in >= 0 && !constant_[in]) unite(in, out);
      }
    }
    // Convs sharing a weight decide together: unite their outputs.
    std::vector<int> root_of_var(var_nodes_.size(), -1);
    for (std::size_t v = 0; v < var_nodes_.size(); ++v) {
      for (std::size_t i : var_nodes_[v]) {
        const int out = first_output(nodes_[i]);
        if (out < 0) continue;
        if (root_of_var[v] < 0) root_of_var[v] = out;
        unite(out, root_of_var[v]);
      }
    }
    std::map<int, Region> by_root;
    for (std::size_t v = 0; v < var_nodes_.size(); ++v) {
      const int r = root_of_var[v] < 0 ? -1 - static_cast<int>(v) : find(root_of_var[v]);
      by_root[r].vars.push_back(static_cast<int>(v));
    }
    // A region's nodes: those touching one of its values. Every other node's terms do not
    // depend on the region's choices (a value outside it never takes its format from inside).
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      std::set<int> roots;
      for (int id : nodes_[i].inputs)
        if (id >= 0) roots.insert(find(id));
      for (int id : nodes_[i].outputs)
        if (id >= 0) roots.insert(find(id));
      for (int r : roots) {
        if (auto it = by_root.find(r); it != by_root.end()) it->second.nodes.push_back(i);
      }
    }
    std::vector<Region> out;
    for (auto& [root, region] : by_root) out.push_back(std::move(region));
    return out;
  }

  // The formats and permutes that follow from `nhwc[v]` (variable v's weights channels_last).
  // With `only`, just those nodes (ascending, a region's): the score then differs from the
  // whole graph's by terms its choices cannot change, so comparisons within the region hold.
  Score evaluate(const std::vector<bool>& nhwc, LayoutPlan* plan,
                 const std::vector<std::size_t>* only = nullptr) const {
    std::vector<MemoryFormat> format = initial_;
    Score score;
    for (bool b : nhwc) score.nchw_weights += b ? 0 : 1;
    int permutes = 0;
    auto of = [&](int id) { return id < 0 ? kNchw : format[id]; };
    auto free_to_convert = [&](int id) { return kind_[id] != Kind::FourD; };
    const std::size_t steps = only != nullptr ? only->size() : nodes_.size();
    for (std::size_t step = 0; step < steps; ++step) {
      const std::size_t i = only != nullptr ? (*only)[step] : step;
      const NodeInfo& n = nodes_[i];
      NodeLayout* nl = nullptr;
      if (plan != nullptr) {
        const graph::Node& node = graph_.nodes()[i];
        plan->nodes.emplace_back();
        nl = &plan->nodes.back();
        nl->node = node.name;
        nl->op_type = node.op_type;
        nl->input_values = node.inputs;
        nl->output_values = node.outputs;
        for (int in : n.inputs) nl->inputs.push_back(of(in));
      }
      auto permute = [&](std::size_t slot, MemoryFormat to) {
        const int in = n.inputs[slot];
        if (nl != nullptr) nl->inputs[slot] = to;
        if (free_to_convert(in)) return;
        ++permutes;
        if (plan != nullptr) {
          plan->permutes.push_back({names_[in], of(in), to, graph_.nodes()[i].name});
        }
      };
      MemoryFormat out = kNchw;
      switch (n.rule) {
        case Rule::Conv: {
          const int x = n.inputs.empty() ? -1 : n.inputs[0];
          const MemoryFormat w = nhwc[n.var] ? kNhwc : kNchw;
          out = (of(x) == kNhwc || w == kNhwc) ? kNhwc : kNchw;
          if (x >= 0 && out == kNhwc && of(x) == kNchw) permute(0, kNhwc);
          // A fused residual (FusedConvAdd's inputs [x, W, B, r, …]) in the other format is
          // permuted into the output's (onednn::detail::run_conv: contiguous(layout)).
          if (n.residual && n.inputs.size() > 3 && n.inputs[3] >= 0 && of(n.inputs[3]) != out)
            permute(3, out);
          if (out == kNchw) ++score.nchw_convs;
          if (nl != nullptr) {
            nl->is_conv = true;
            nl->weights = w;
          }
          break;
        }
        case Rule::NchwOnly: {
          // Graph::run: a graph::Op gets every input made contiguous; a plain module only the
          // one it runs on (inputs[0]; the others are its parameters). A reshape that views
          // its NHWC input (views_nhwc) copies nothing.
          const std::size_t slots =
              n.op ? n.inputs.size() : std::min<std::size_t>(1, n.inputs.size());
          for (std::size_t k = n.nhwc_view ? 1 : 0; k < slots; ++k) {
            if (n.inputs[k] >= 0 && of(n.inputs[k]) == kNhwc) permute(k, kNchw);
          }
          break;
        }
        case Rule::AllInputs: {
          bool all = false;
          for (int in : n.inputs) {
            // A value that is not 4-d has no layout (a fused ConcatChain's chain constants).
            if (in < 0 || kind_[in] == Kind::NotFourD) continue;
            if (of(in) != kNhwc) {
              all = false;
              break;
            }
            all = true;
          }
          out = all ? kNhwc : kNchw;
          // Mixed: functional::cat permutes each NHWC input into the NCHW output's layout.
          if (!all) {
            for (std::size_t k = 0; k < n.inputs.size(); ++k) {
              if (n.inputs[k] >= 0 && of(n.inputs[k]) == kNhwc) permute(k, kNchw);
            }
          }
          break;
        }
        case Rule::Broadcasting: {
          // reference::detail::layout_operand: the first operand with the output's shape. That
          // shape is taken to be a 4-d non-constant operand's (a constant is the broadcast bias
          // or scale; an ambiguous [N, C, 1, 1] an SE gate's scale); without one, the first
          // non-constant operand's format.
          int full = -1, first = -1;
          for (int in : n.inputs) {
            if (in < 0 || constant_[in]) continue;
            if (first < 0) first = in;
            if (full < 0 && kind_[in] == Kind::FourD) full = in;
          }
          if (first < 0 && !n.inputs.empty()) first = n.inputs[0];
          out = of(full >= 0 ? full : first);
          // A fused chain (inputs [x, r, K…]) runs in one layout: ElementwiseChain::run
          // permutes the one of x and r that is not in the output's.
          for (std::size_t k = 0; n.chain && k < std::min<std::size_t>(2, n.inputs.size()); ++k)
            if (n.inputs[k] >= 0 && of(n.inputs[k]) != out) permute(k, out);
          break;
        }
        case Rule::Fresh:
          break;
        case Rule::Permutation:
          out = ops::transposed_format(n.perm, of(n.inputs.empty() ? -1 : n.inputs[0]));
          break;
        case Rule::FirstInput:
          out = of(n.inputs.empty() ? -1 : n.inputs[0]);
          break;
        case Rule::Image: {
          const int in = n.inputs.empty() ? -1 : n.inputs[0];
          out =
              n.image && (in < 0 || kind_[in] == Kind::NotFourD || of(in) == kNhwc) ? kNhwc : kNchw;
          break;
        }
      }
      for (int o : n.outputs) {
        if (o < 0) {
          if (nl != nullptr) nl->outputs.push_back(kNchw);
          continue;
        }
        format[o] = kind_[o] == Kind::NotFourD ? kNchw : out;
        if (nl != nullptr) nl->outputs.push_back(format[o]);
      }
    }
    score.cost = permutes + score.nchw_convs;
    if (plan != nullptr) {
      plan->nchw_convs = score.nchw_convs;
      for (const NodeLayout& nl : plan->nodes) {
        plan->convs += nl.is_conv ? 1 : 0;
        plan->channels_last_weights += nl.is_conv && nl.weights == kNhwc ? 1 : 0;
      }
    }
    return score;
  }

 private:
  struct NodeInfo {
    Rule rule = Rule::FirstInput;
    bool op = false;
    bool residual = false;   // a conv with a fused residual (FusedConvAdd)
    bool chain = false;      // a fused element-wise chain (ElementwiseChain)
    bool nhwc_view = false;  // an NHWC input 0 is read as a view (views_nhwc)
    bool image = false;      // Rule::Image: the Rearrange writes an image
    int var = -1;
    std::vector<int> inputs, outputs;
    std::vector<std::int64_t> perm;  // Rule::Permutation
  };
  static int first_output(const NodeInfo& n) { return n.outputs.empty() ? -1 : n.outputs[0]; }

  const graph::Graph& graph_;
  std::map<std::string, int> ids_;
  std::vector<std::string> names_;
  std::vector<Kind> kind_;
  std::vector<MemoryFormat> initial_;
  std::vector<bool> constant_;
  std::vector<NodeInfo> nodes_;
  std::vector<std::vector<std::size_t>> var_nodes_;
};

constexpr int kMaxEnumerated = 12;  // 2^12 evaluations of the graph per region at most

// The choice for one region, the others held at `nhwc`.
void solve_region(const Model& model, const Model::Region& region, std::vector<bool>& nhwc) {
  const std::vector<int>& vars = region.vars;
  if (static_cast<int>(vars.size()) <= kMaxEnumerated) {
    // Enumerate from all-NHWC (mask 0) so that ties keep the seed's choice.
    std::optional<Score> best;
    std::uint32_t best_mask = 0;
    for (std::uint32_t mask = 0; mask < (1u << vars.size()); ++mask) {
      for (std::size_t k = 0; k < vars.size(); ++k) nhwc[vars[k]] = ((mask >> k) & 1u) == 0;
      const Score s = model.evaluate(nhwc, nullptr, &region.nodes);
      if (!best || s < *best) best = s, best_mask = mask;
    }
    for (std::size_t k = 0; k < vars.size(); ++k) nhwc[vars[k]] = ((best_mask >> k) & 1u) == 0;
    return;
  }
  // Large region: from the seed's plan, flip one conv at a time while the score improves.
  for (int v : vars) nhwc[v] = true;
  Score current = model.evaluate(nhwc, nullptr, &region.nodes);
  for (int round = 0; round < 8; ++round) {
    bool improved = false;
    for (int v : vars) {
      nhwc[v] = !nhwc[v];
      const Score s = model.evaluate(nhwc, nullptr, &region.nodes);
      if (s < current) {
        current = s;
        improved = true;
      } else {
        nhwc[v] = !nhwc[v];
      }
    }
    if (!improved) break;
  }
}

}  // namespace

LayoutPlan evaluate_layout(const graph::Graph& graph, const std::set<std::string>& channels_last) {
  const Model model(graph);
  std::vector<bool> nhwc(model.variables(), false);
  std::set<std::string> found;
  for (int v = 0; v < model.variables(); ++v) {
    for (std::size_t i : model.var_nodes(v)) {
      const std::string& name = graph.nodes()[i].name;
      if (channels_last.count(name) != 0) {
        nhwc[v] = true;
        found.insert(name);
      }
    }
  }
  for (const std::string& name : channels_last) {
    REFOLD_CHECK(found.count(name) != 0, "layout: '{}' is not a conv node of the graph", name);
  }
  LayoutPlan plan;
  model.evaluate(nhwc, &plan);
  return plan;
}

LayoutPlan make_layout_plan(const graph::Graph& graph) {
  const Model model(graph);
  std::vector<bool> nhwc(model.variables(), true);
  for (const Model::Region& region : model.regions()) solve_region(model, region, nhwc);
  LayoutPlan plan;
  model.evaluate(nhwc, &plan);
  return plan;
}

int apply_layout_plan(graph::Graph& graph, const LayoutPlan& plan) {
  int changed = 0;
  for (const NodeLayout& nl : plan.nodes) {
    if (!nl.is_conv) continue;
    const auto index = graph.find_node(nl.node);
    REFOLD_CHECK(index.has_value(), "layout: the plan names node '{}', which the graph lacks",
                 nl.node);
    const nn::ModulePtr& module = graph.nodes()[*index].module;
    const Tensor w = conv_weight(module);
    REFOLD_CHECK(w.defined(), "layout: the plan names '{}' as a conv, but it is a {}", nl.node,
                 module->type_name());
    const Shape strides_before = w.strides();
    // The importer's modules share the initializer's storage through their own handle
    // (set_data), so converting the module alone would leave the graph's constant on the old
    // storage: two copies of the weight, and a constant whose layout says nothing of the plan.
    // Point the constant at the converted storage too (same values; its source index stays,
    // so export still writes the unchanged initializer).
    const graph::Node& node = graph.nodes()[*index];
    const std::string weight_name = node.inputs.size() > 1 ? node.inputs[1] : "";
    const bool shared = !weight_name.empty() && graph.is_constant(weight_name) &&
                        graph.constant(weight_name).shares_storage(w);
    nn::utils::convert_conv2d_weight_memory_format(*module, nl.weights);
    const Tensor converted = conv_weight(module);
    if (shared) {
      Tensor constant = graph.constant(weight_name);  // a handle: set_data reaches the graph's
      constant.set_data(converted);
    }
    if (converted.strides() != strides_before) ++changed;
  }
  return changed;
}

std::string LayoutPlan::to_string() const {
  std::string out = fmt::format(
      "layout plan: {} of {} convs with channels_last weights, {} permute{}, {} conv{} "
      "computing NCHW (cost {})\n",
      channels_last_weights, convs, permutes.size(), permutes.size() == 1 ? "" : "s", nchw_convs,
      nchw_convs == 1 ? "" : "s", cost());
  // Which input of which node is permuted where.
  std::map<std::pair<std::string, std::string>, const LayoutPermute*> at;
  for (const LayoutPermute& p : permutes) at[{p.node, p.value}] = &p;
  for (const NodeLayout& nl : nodes) {
    std::vector<std::string> ins, outs;
    for (std::size_t k = 0; k < nl.inputs.size(); ++k) {
      const std::string& v = k < nl.input_values.size() ? nl.input_values[k] : "";
      // A conv's weight and bias: its weight format is printed after the node.
      if (v.empty() || (nl.is_conv && (k == 1 || k == 2))) continue;
      auto it = at.find({nl.node, v});
      ins.push_back(it != at.end() ? fmt::format("{} {}→{}", v, format_name(it->second->from),
                                                 format_name(it->second->to))
                                   : fmt::format("{} {}", v, format_name(nl.inputs[k])));
    }
    for (std::size_t k = 0; k < nl.outputs.size() && k < nl.output_values.size(); ++k) {
      outs.push_back(fmt::format("{} {}", nl.output_values[k], format_name(nl.outputs[k])));
    }
    std::string line = fmt::format("  {}: {}  {} -> {}", nl.node, nl.op_type, fmt::join(ins, ", "),
                                   fmt::join(outs, ", "));
    if (nl.is_conv) line += fmt::format("  weights {}", format_name(nl.weights));
    out += line + "\n";
  }
  for (const LayoutPermute& p : permutes) {
    out += fmt::format("  permute {} {}→{} at {}\n", p.value, format_name(p.from),
                       format_name(p.to), p.node);
  }
  return out;
}

PassReport plan_layout(graph::Graph& graph) {
  PassReport report;
  report.pass = "layout";
  const LayoutPlan plan = make_layout_plan(graph);
  const int changed = apply_layout_plan(graph, plan);
  report.changed = changed > 0;
  std::string text = plan.to_string();
  if (!text.empty() && text.back() == '\n') text.pop_back();
  report.notes.push_back(std::move(text));
  return report;
}

LayoutPlan current_layout(const graph::Graph& graph) {
  std::set<std::string> channels_last;
  for (const graph::Node& n : graph.nodes()) {
    const Tensor w = conv_weight(n.module);
    if (w.defined() && w.dim() == 4 && w.suggest_memory_format() == kNhwc)
      channels_last.insert(n.name);
  }
  return evaluate_layout(graph, channels_last);
}

}  // namespace refold::passes
