// refold::Session — an ONNX model loaded and optimized once, then run many times, from any
// number of threads at once (as ONNX Runtime promises for its sessions).
//
//   refold::Session session("model.onnx");                  // optimize = true
//   std::vector<refold::Tensor> y = session.run({x});         // inputs in the model's order
//   auto named = session.run({{"input", x}}, {"logits"});     // or by name, chosen outputs
//
// What runs is compiled from the optimized graph when the session is made: value names are
// resolved to slots once, so a call costs the kernels plus about a µs per node. run() is const
// and thread-safe: each call keeps its activations to itself and reads the shared weights.
// Each call runs with the session's `threads` (refold::ThreadCountScope), so sessions with
// different thread counts can run side by side.
//
// A model exported with symbolic dims (dynamic batch or size) optimizes once and then runs at
// any size the dims allow; `input_shapes` only say what verification feeds.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "refold/graph/graph.h"
#include "refold/graph/profile.h"
#include "refold/optimize.h"
#include "refold/tensor.h"

namespace refold {

struct SessionOptions {
  bool optimize = true;
  int threads = 0;  // each call's kernel threads; 0: refold's default (refold/threads.h)
  // How the model is loaded and optimized (refold/optimize.h): the load options, the passes
  // disabled, and whether to prove the optimized graph equals the imported one (off here by
  // default; verification's inputs come from input_shapes where dims are symbolic).
  OptimizeOptions optimizer = unverified();

  static OptimizeOptions unverified() {
    OptimizeOptions o;
    o.verify = false;
    return o;
  }
};

class Session {
 public:
  explicit Session(const std::filesystem::path& model, const SessionOptions& options = {});
  // A model held in memory; `name` stands for the file in messages.
  Session(std::span<const std::byte> model, const std::string& name,
          const SessionOptions& options = {});
  // A graph built or loaded by the caller, optimized here when options.optimize. The session
  // keeps it; the caller must not change it afterwards.
  Session(std::shared_ptr<graph::Graph> graph, const SessionOptions& options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::vector<graph::ValueInfo>& inputs() const;
  const std::vector<graph::ValueInfo>& outputs() const;
  std::vector<std::string> input_names() const;
  std::vector<std::string> output_names() const;
  int threads() const { return threads_; }

  // Inputs by position, all outputs in order. Errors name the input and the declared and given
  // type or shape (docs/reliability.md); a kernel's error names the node.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  // Inputs by name (every graph input exactly once); the outputs named in `outputs`, in that
  // order (empty: all of them).
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs,
                          const std::vector<std::string>& outputs = {}) const;
  // The checks run(inputs, outputs) makes, for callers that convert their own arguments (the
  // Python binding): `inputs` in the model's input order (each exactly once, no unknown name),
  // and where each named output is (empty: all, in order).
  std::vector<Tensor> inputs_by_position(const std::map<std::string, Tensor>& inputs) const;
  std::vector<std::size_t> output_positions(const std::vector<std::string>& names) const;

  // Runs once on `inputs` (by position), timing each node (refold/graph/profile.h).
  graph::RunProfile profile(const std::vector<Tensor>& inputs) const;

  // What optimization did (an empty pipeline when options.optimize was false).
  const OptimizeReport& report() const { return report_; }
  // The graph that runs. A session made from a file or bytes keeps the model's weights once, in
  // this graph's tensors: it loads with LoadOptions::keep_source_data false, so saving this
  // graph (onnx::save) writes every initializer from its tensor, equal in value and data type but
  // not byte for byte the file's TensorProto (refold::optimize_model keeps those).
  //
  // Weights held once (src/core/held_weights.h): such a session also frees the plain bytes of
  // each conv weight oneDNN has packed into its own format, as soon as its node has run in the
  // first call (which runs alone; later calls run side by side), so only the packed copy stays
  // resident (memory_stats().held_bytes counts them). Reading one of these tensors (saving the
  // graph, a kernel packing it anew) rebuilds its bytes exactly from the packed copy, once; a
  // tensor someone else holds a handle on is never freed. Read graph() while no call is in
  // flight, and keep a Tensor handle rather than a data pointer across calls. A session given a
  // graph holds nothing: the caller may still read that graph.
  const graph::Graph& graph() const { return *graph_; }

 private:
  // Takes the loaded (and optimized) model of a file or bytes, compiles it and hands the memory
  // loading freed back to the system.
  void adopt(OptimizedModel model);
  // owns_graph: made from a file or bytes, so nothing but this session reads the graph's
  // tensors and the weights can be held once.
  void compile(bool owns_graph);

  std::shared_ptr<graph::Graph> graph_;
  OptimizeReport report_;
  int threads_ = 0;
  struct Compiled;
  std::unique_ptr<const Compiled> compiled_;
};

}  // namespace refold
