#include "graph/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <unordered_map>

#include "core/check.h"
#include "kernels/subnormals.h"
#include "kernels/verbose.h"
#include "refold/functional.h"

namespace refold::graph {

namespace {

// The ONNX element type a refold dtype is declared as.
int elem_type_of(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return 1;
    case DType::Int64:
      return 7;
    case DType::BFloat16:
      return 16;
  }
  return 0;
}

void check_input(const ValueInfo& declared, const Tensor& given, std::size_t position) {
  REFOLD_CHECK(given.defined(), "Graph: input {} ('{}') is undefined", position, declared.name);
  // The element types refold holds in a wider one (refold/onnx/onnx.h, tensor files): every
  // integer type and bool as int64, float16 as float32.
  int declared_type = declared.elem_type;
  switch (declared_type) {
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
    case 9:
    case 12:
    case 13:  // (u)int8/16/32, bool, uint32/64
      declared_type = 7;
      break;
    case 10:  // float16
      declared_type = 1;
      break;
    default:
      break;
  }
  const int given_type = elem_type_of(given.dtype());
  REFOLD_CHECK(declared_type == given_type,
               "Graph: input '{}' is declared with element type {}, given {} ({})", declared.name,
               declared.elem_type, given_type, given.description());
  if (!declared.shape) return;
  const auto& dims = *declared.shape;
  const Shape& sizes = given.sizes();
  bool ok = dims.size() == sizes.size();
  for (std::size_t i = 0; ok && i < dims.size(); ++i) {
    ok = !dims[i].is_static() || dims[i].value == sizes[i];
  }
  if (ok) return;
  std::string want;
  for (const Dim& d : dims) {
    if (!want.empty()) want += ", ";
    want += d.is_static() ? std::to_string(d.value) : (d.param.empty() ? "?" : d.param);
  }
  fail("Graph: input '{}' is declared [{}], given {}", declared.name, want, given.description());
}

}  // namespace

Error error_in_node(const Node& node, const Error& e) {
  if (dynamic_cast<const Op*>(node.module.get()) != nullptr)
    return e.with_context(fmt::format("{} '{}'", node.op_type, node.name));
  const std::string type = node.module->type_name();
  const std::string own = fmt::format("{} '{}': ", type, module_child_name(node.name));
  std::string text = e.what();
  if (text.rfind(own, 0) == 0) text.erase(0, own.size());
  return Error(text).with_context(fmt::format("{} '{}' ({})", node.op_type, node.name, type));
}

namespace {
std::atomic<std::uint64_t> g_compiled{0};
}  // namespace

std::uint64_t ExecutionPlan::compiled_count() { return g_compiled.load(std::memory_order_relaxed); }

ExecutionPlan::ExecutionPlan(const Graph& graph) : graph_(graph) {
  g_compiled.fetch_add(1, std::memory_order_relaxed);
  std::unordered_map<std::string, int> slot_of;
  auto new_slot = [&](const std::string& name) {
    const int slot = static_cast<int>(slot_names_.size());
    slot_names_.push_back(name);
    constants_.emplace_back();
    slot_of[name] = slot;
    return slot;
  };
  // A value read by a node or the graph: a graph input, a node output written before, or a
  // constant (a graph input of the same name as an initializer wins, as ONNX says).
  auto read_slot = [&](const std::string& name) {
    if (name.empty()) return kAbsent;
    if (auto it = slot_of.find(name); it != slot_of.end()) return it->second;
    REFOLD_CHECK(graph.is_constant(name), "Graph: value '{}' is read before it is computed", name);
    const int slot = new_slot(name);
    constants_[slot] = graph.constant(name);
    return slot;
  };
  for (const ValueInfo& v : graph.inputs) input_slots_.push_back(new_slot(v.name));

  std::vector<int> last_reader;  // by slot: the last step reading it, -1 for none
  steps_.reserve(graph.nodes().size());
  for (const Node& n : graph.nodes()) {
    REFOLD_CHECK(n.module != nullptr, "Graph: node '{}' ({}) has no module", n.name, n.op_type);
    Step step{&n, dynamic_cast<Op*>(n.module.get()), {}, {}, {}, {}};
    REFOLD_CHECK(step.op != nullptr || !n.inputs.empty(), "Graph: node '{}' ({}) has no input",
                 n.name, n.op_type);
    for (const std::string& in : n.inputs) step.inputs.push_back(read_slot(in));
    for (const std::string& out : n.outputs) {
      step.outputs.push_back(out.empty() ? kAbsent : new_slot(out));
    }
    last_reader.resize(slot_names_.size(), -1);
    for (int slot : step.inputs) {
      if (slot != kAbsent) last_reader[slot] = static_cast<int>(steps_.size());
    }
    steps_.push_back(std::move(step));
  }
  for (const ValueInfo& v : graph.outputs) output_slots_.push_back(read_slot(v.name));
  last_reader.resize(slot_names_.size(), -1);

  // Each activation is dropped right after its last reader; one nobody reads, right after it is
  // written. Graph outputs and constants stay.
  std::vector<bool> keep(slot_names_.size(), false);
  for (int slot : output_slots_) keep[slot] = true;
  for (std::size_t s = 0; s < slot_names_.size(); ++s) {
    if (constants_[s].defined()) keep[s] = true;
  }
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    for (int slot : steps_[i].outputs) {
      if (slot != kAbsent && !keep[slot] && last_reader[slot] < 0)
        steps_[i].last_read_here.push_back(slot);
    }
  }
  for (std::size_t s = 0; s < slot_names_.size(); ++s) {
    if (!keep[s] && last_reader[s] >= 0)
      steps_[last_reader[s]].last_read_here.push_back(static_cast<int>(s));
  }

  // An output may stay a view dense in no format (Op::run_views) when only ops that read views
  // read it; a graph output never does.
  std::vector<bool> view_ok(slot_names_.size(), true);
  for (int slot : output_slots_) view_ok[slot] = false;
  for (const Step& step : steps_) {
    const bool reads_views = step.op != nullptr && step.op->reads_views();
    for (int slot : step.inputs)
      if (slot != kAbsent && !reads_views) view_ok[slot] = false;
  }
  for (Step& step : steps_) {
    step.views_out = step.op != nullptr &&
                     std::all_of(step.outputs.begin(), step.outputs.end(),
                                 [&](int slot) { return slot == kAbsent || view_ok[slot]; });
  }

  // An activation is handed over to its last reader (Op::run_consuming) at that reader's last
  // operand reading it; a graph input never is (the caller's tensor).
  for (int slot : input_slots_) keep[slot] = true;
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    Step& step = steps_[i];
    step.handed_over.assign(step.inputs.size(), false);
    for (std::size_t k = 0; k < step.inputs.size(); ++k) {
      const int slot = step.inputs[k];
      if (slot == kAbsent || keep[slot] || last_reader[slot] != static_cast<int>(i)) continue;
      const bool read_again = std::find(step.inputs.begin() + static_cast<std::ptrdiff_t>(k) + 1,
                                        step.inputs.end(), slot) != step.inputs.end();
      step.handed_over[k] = !read_again;
    }
  }
}

std::vector<Tensor> ExecutionPlan::run(const std::vector<Tensor>& feeds,
                                       const Graph::NodeObserver& observe) const {
  REFOLD_CHECK(feeds.size() == graph_.inputs.size(), "Graph: {} inputs given, the graph takes {}",
               feeds.size(), graph_.inputs.size());
  const kernels::FlushDenormalScope flush_denormal;
  std::vector<Tensor> values(slot_names_.size());
  for (std::size_t i = 0; i < feeds.size(); ++i) {
    check_input(graph_.inputs[i], feeds[i], i);
    values[input_slots_[i]] = feeds[i];
  }
  auto value = [&](int slot) -> const Tensor& {
    static const Tensor absent;
    if (slot == kAbsent) return absent;
    return constants_[slot].defined() ? constants_[slot] : values[slot];
  };

  std::vector<Tensor> args, results;
  std::vector<Tensor> read;  // what `observe` is shown: each input as the graph held it
  for (const Step& step : steps_) {
    const Node& n = *step.node;
    // REFOLD_VERBOSE=1: every node, then the dispatch lines of the kernels it calls.
    if (verbose())
      log_verbose(fmt::format("node '{}' ({}) runs {}", n.name, n.op_type, n.module->type_name()));
    results.clear();
    read.clear();
    if (step.op != nullptr) {
      args.clear();
      for (std::size_t k = 0; k < step.inputs.size(); ++k) {
        const int slot = step.inputs[k];
        // Handed over: moved out, so that the op may hold the only handle on it. (Not a
        // conditional expression: with value(slot) a const lvalue, `c ? std::move(v) : value(s)`
        // is a const lvalue too, and copies.)
        Tensor t;
        if (step.handed_over[k]) {
          t = std::move(values[slot]);
        } else {
          t = value(slot);
        }
        // The memory-format rule of Module::operator(), for every input of an Op (one that reads
        // views takes any strides).
        if (!step.op->accepts_channels_last() && !step.op->reads_views() && t.defined() &&
            !t.is_contiguous()) {
          if (observe) read.push_back(t);
          t = functional::to_format(t, MemoryFormat::Contiguous);
        } else if (observe) {
          read.emplace_back();  // args[k] after the run (it may be handed over)
        }
        args.push_back(std::move(t));
      }
    }
    const std::uint64_t dispatched = dispatch_count();
    try {
      if (step.op != nullptr)
        results = step.views_out ? step.op->run_views(args) : step.op->run_consuming(args);
      else
        results.push_back((*n.module)(value(step.inputs[0])));
    } catch (const Error& e) {
      throw error_in_node(n, e);
    }
    // An op that dispatched nothing ran its own code, which calls the reference kernels: it has
    // no other implementation (kernels/dispatch.h). Logged as such, so every node names what ran.
    if (dispatch_count() == dispatched)
      log_dispatch(n.op_type, "reference", "its only implementation");
    REFOLD_CHECK(results.size() >= n.outputs.size(),
                 "Graph: node '{}' ({}) gave {} outputs, expected {}", n.name, n.op_type,
                 results.size(), n.outputs.size());
    if (observe) {
      if (step.op == nullptr) {
        for (int slot : step.inputs) read.push_back(value(slot));
      } else {
        for (std::size_t k = 0; k < args.size(); ++k)
          if (!read[k].defined()) read[k] = args[k];
      }
      observe(n, read, results);
    }
    for (std::size_t k = 0; k < step.outputs.size(); ++k) {
      if (step.outputs[k] != kAbsent) values[step.outputs[k]] = std::move(results[k]);
    }
    for (int slot : step.last_read_here) values[slot] = Tensor();
  }

  std::vector<Tensor> result;
  result.reserve(output_slots_.size());
  for (int slot : output_slots_) result.push_back(value(slot));
  return result;
}

}  // namespace refold::graph
