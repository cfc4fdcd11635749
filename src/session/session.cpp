#include "refold/session.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <shared_mutex>

#include "core/block_cache.h"
#include "core/check.h"
#include "core/held_weights.h"
#include "graph/plan.h"
#include "refold/threads.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace refold {

// The plan, and the weights held once (core/held_weights.h) by a session that owns its graph.
// Runs share `runs`; weights are held only under it alone. The first runs, which pack the
// weights, run alone and hold each weight as soon as its node has packed it, so the plain and
// the packed copies of all weights are never resident at once: a conv packs its weight on the
// first run, a linear on the second (kernels/onednn/packed_weights.h), so runs hold node by
// node until one packs nothing new (at most kPackingRuns of them). Later runs share the lock
// and hold what a new input size packed when no other run is in flight.
struct Session::Compiled {
  Compiled(const graph::Graph& graph, bool hold_weights)
      : plan(graph),
        held(hold_weights ? detail::HeldWeights(weights(graph)) : detail::HeldWeights()),
        packing_done(!hold_weights) {}

  static constexpr int kPackingRuns = 3;

  // `run(observe)` runs the plan, calling `observe` after each node.
  template <typename Run>
  auto run(const Run& run) const {
    if (!packing_done.load(std::memory_order_acquire)) {
      const std::unique_lock alone(runs);
      if (!packing_done.load(std::memory_order_relaxed)) {
        const std::uint64_t offers = detail::packed_offers();
        auto result = run([this](const graph::Node&, const std::vector<Tensor>&,
                                 const std::vector<Tensor>&) { held.hold(); });
        held.hold();
        packing_done.store(detail::packed_offers() == offers || ++packing_runs >= kPackingRuns,
                           std::memory_order_release);
        trim();
        return result;
      }
    }
    auto result = [&] {
      const std::shared_lock lock(runs);
      return run(graph::Graph::NodeObserver{});
    }();
    const std::unique_lock alone(runs, std::try_to_lock);
    if (alone.owns_lock() && held.hold() > 0) trim();
    return result;
  }

  // The freed weights were in the C heap.
  static void trim() {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
  }

  // Every tensor the graph holds: its constants and its modules' parameters and buffers.
  static std::vector<Tensor> weights(const graph::Graph& graph) {
    std::vector<Tensor> all;
    for (const std::string& name : graph.constant_names()) all.push_back(graph.constant(name));
    for (const auto& named : graph.named_parameters()) all.push_back(named.second);
    for (const auto& named : graph.named_buffers()) all.push_back(named.second);
    return all;
  }

  graph::ExecutionPlan plan;
  mutable std::shared_mutex runs;
  mutable detail::HeldWeights held;
  mutable std::atomic<bool> packing_done;
  mutable int packing_runs = 0;  // runs that held node by node (under `runs` alone)
};

namespace {

void check_threads(int threads) {
  REFOLD_CHECK(threads >= 0, "Session: threads ({}) must be >= 1, or 0 for refold's default",
               threads);
}

// The model a session made from a file or bytes runs: `load` or `optimize` (onnx::load or
// optimize_model on that file or those bytes), per options.optimize. Its graph only runs, so the
// file's weights are kept once, in the graph's tensors, not also in the parsed file
// (onnx::LoadOptions::keep_source_data).
template <typename Load, typename Optimize>
OptimizedModel session_model(SessionOptions options, const std::string& input, const Load& load,
                             const Optimize& optimize) {
  options.optimizer.load.keep_source_data = false;
  if (options.optimize) return optimize(options.optimizer);
  OptimizedModel m{load(options.optimizer.load), {}};
  m.report.input = input;
  return m;
}

}  // namespace

Session::Session(const std::filesystem::path& model, const SessionOptions& options)
    : threads_(options.threads) {
  check_threads(threads_);
  adopt(session_model(
      options, model.string(), [&](const onnx::LoadOptions& o) { return onnx::load(model, o); },
      [&](const OptimizeOptions& o) { return optimize_model(model, {}, o); }));
}

Session::Session(std::span<const std::byte> model, const std::string& name,
                 const SessionOptions& options)
    : threads_(options.threads) {
  check_threads(threads_);
  adopt(session_model(
      options, name,
      [&](const onnx::LoadOptions& o) { return onnx::load_from_memory(model, name, {}, o); },
      [&](const OptimizeOptions& o) { return optimize_model(model, name, {}, o); }));
}

Session::Session(std::shared_ptr<graph::Graph> graph, const SessionOptions& options)
    : graph_(std::move(graph)), threads_(options.threads) {
  check_threads(threads_);
  REFOLD_CHECK(graph_ != nullptr, "Session: no graph given");
  REFOLD_CHECK(!options.optimizer.verify,
               "Session: verify needs the model as a file or bytes (the graph given has no "
               "unoptimized copy to compare with)");
  if (options.optimize) {
    passes::PipelineOptions pipeline;
    pipeline.disabled = options.optimizer.disabled;
    report_.pipeline = passes::optimize(*graph_, pipeline);
    report_.layout = passes::current_layout(*graph_);
  }
  compile(/*owns_graph=*/false);
}

Session::~Session() = default;

void Session::adopt(OptimizedModel model) {
  graph_ = std::move(model.graph);
  report_ = std::move(model.report);
  compile(/*owns_graph=*/true);
  // What loading and optimizing allocated and freed goes back to the system: glibc keeps freed
  // heap memory mapped until asked, and the block cache keeps what constant folding's runs
  // freed (core/block_cache.h; stand-in runs keep nothing), so the process would otherwise stay
  // at the optimizer's high-water mark while it serves.
  detail::release_cached_blocks();
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

void Session::compile(bool owns_graph) {
  graph_->verify();
  compiled_ = std::make_unique<const Compiled>(*graph_, owns_graph);
}

const std::vector<graph::ValueInfo>& Session::inputs() const { return graph_->inputs; }
const std::vector<graph::ValueInfo>& Session::outputs() const { return graph_->outputs; }

std::vector<Tensor> Session::run(const std::vector<Tensor>& inputs) const {
  const ThreadCountScope threads(threads_);
  return compiled_->run([&](const graph::Graph::NodeObserver& observe) {
    return compiled_->plan.run(inputs, observe);
  });
}

graph::RunProfile Session::profile(const std::vector<Tensor>& inputs) const {
  const ThreadCountScope threads(threads_);
  // Timed without the first run's holding after each node.
  return compiled_->run([&](const graph::Graph::NodeObserver&) {
    return graph::profile([&](const graph::Graph::NodeObserver& observe) {
      return compiled_->plan.run(inputs, observe);
    });
  });
}

std::vector<Tensor> Session::inputs_by_position(const std::map<std::string, Tensor>& inputs) const {
  std::vector<Tensor> feeds;
  feeds.reserve(graph_->inputs.size());
  for (const graph::ValueInfo& v : graph_->inputs) {
    const auto it = inputs.find(v.name);
    REFOLD_CHECK(it != inputs.end(), "Session: input '{}' is not given", v.name);
    feeds.push_back(it->second);
  }
  for (const auto& [name, tensor] : inputs) {
    REFOLD_CHECK(graph_->is_graph_input(name), "Session: {}", no_such_input(*graph_, name));
  }
  return feeds;
}

std::vector<std::size_t> Session::output_positions(const std::vector<std::string>& names) const {
  std::vector<std::size_t> picked;
  if (names.empty()) {
    for (std::size_t i = 0; i < graph_->outputs.size(); ++i) picked.push_back(i);
    return picked;
  }
  for (const std::string& name : names) {
    const auto it = std::find_if(graph_->outputs.begin(), graph_->outputs.end(),
                                 [&](const graph::ValueInfo& v) { return v.name == name; });
    REFOLD_CHECK(it != graph_->outputs.end(), "Session: the model has no output '{}' (outputs: {})",
                 name, fmt::join(output_names(), ", "));
    picked.push_back(static_cast<std::size_t>(it - graph_->outputs.begin()));
  }
  return picked;
}

std::vector<Tensor> Session::run(const std::map<std::string, Tensor>& inputs,
                                 const std::vector<std::string>& outputs) const {
  const std::vector<Tensor> feeds = inputs_by_position(inputs);
  const std::vector<std::size_t> picked = output_positions(outputs);  // checked before running
  std::vector<Tensor> all = run(feeds);
  std::vector<Tensor> result;
  for (std::size_t i : picked) result.push_back(std::move(all[i]));
  return result;
}

std::vector<std::string> Session::input_names() const {
  std::vector<std::string> names;
  for (const graph::ValueInfo& v : graph_->inputs) names.push_back(v.name);
  return names;
}

std::vector<std::string> Session::output_names() const {
  std::vector<std::string> names;
  for (const graph::ValueInfo& v : graph_->outputs) names.push_back(v.name);
  return names;
}

}  // namespace refold
