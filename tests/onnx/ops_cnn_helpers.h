// Test helpers for the CNN op builders: one node in a graph holding its constants, built with
// ops::build_module and run by the executor's rule (graph::Op → run(all inputs); a plain
// module → (*module)(input 0)).
//
//   OpCase c("Conv", {"x", "W", "B"});
//   c.constant("W", w).constant("B", b).ints("pads", {1, 1, 1, 1});
//   Tensor y = c.run({x});            // runtime inputs, in the order of the node's non-constants
//   EXPECT_TRUE(c.close_in_both_layouts(x, expected));  // x as given and channels_last
//
// Plus the inputs the CNN op tests feed: random(sizes, seed) tensors. (int64 tensors and
// channels_last copies: i64, i64_values and to_channels_last in ops_tensor_helpers.h.)
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "ops/op.h"
#include "refold/graph/graph.h"
#include "refold/graph/op.h"
#include "refold/memory_format.h"
#include "testing/builders.h"
#include "testing/compare.h"

namespace refold::testing {

// Uniform in [−bound, bound) from a generator of its own, so each tensor of a test is fixed by
// its seed alone.
inline Tensor random(const Shape& sizes, std::uint64_t seed, double bound = 1.0) {
  Generator gen(seed);
  return uniform(sizes, bound, gen);
}

class OpCase {
 public:
  OpCase(std::string op_type, std::vector<std::string> inputs,
         std::vector<std::string> outputs = {"y"})
      : graph_(std::make_shared<graph::Graph>()) {
    node_.name = "n0";
    node_.op_type = std::move(op_type);
    node_.inputs = std::move(inputs);
    node_.outputs = std::move(outputs);
  }

  OpCase& constant(const std::string& name, const Tensor& t) {
    graph_->set_constant(name, t);
    return *this;
  }
  OpCase& ints(const std::string& name, std::vector<std::int64_t> v) {
    node_.attributes.set(name, std::move(v));
    return *this;
  }
  OpCase& integer(const std::string& name, std::int64_t v) {
    node_.attributes.set(name, v);
    return *this;
  }
  OpCase& real(const std::string& name, float v) {
    node_.attributes.set(name, v);
    return *this;
  }
  OpCase& text(const std::string& name, std::string v) {
    node_.attributes.set(name, std::move(v));
    return *this;
  }
  OpCase& opset(int v) {
    opset_ = v;
    return *this;
  }

  const graph::Graph& graph() const { return *graph_; }
  graph::Node& node() { return node_; }

  // Builds the module (once) and binds the constants to its parameter handles.
  nn::ModulePtr module() {
    if (!module_) {
      module_ = ops::build_module({node_, *graph_, opset_});
      node_.module = module_;
    }
    return module_;
  }

  // Runs with `runtime` bound to the node's inputs that are not constants, in order.
  std::vector<Tensor> run_all(const std::vector<Tensor>& runtime) {
    nn::ModulePtr m = module();
    std::vector<Tensor> values;
    std::size_t next = 0;
    for (const std::string& name : node_.inputs) {
      if (name.empty()) {
        values.emplace_back();
      } else if (graph_->is_constant(name)) {
        values.push_back(graph_->constant(name));
      } else {
        EXPECT_LT(next, runtime.size()) << "missing a runtime input for " << name;
        values.push_back(next < runtime.size() ? runtime[next] : Tensor());
        ++next;
      }
    }
    if (auto* op = dynamic_cast<graph::Op*>(m.get())) {
      // The executor's rule: an op that refuses channels_last gets contiguous inputs.
      if (!op->accepts_channels_last())
        for (Tensor& v : values)
          if (v.defined()) v = v.contiguous();
      return op->run(values);
    }
    return {(*m)(values.at(0))};
  }
  Tensor run(const std::vector<Tensor>& runtime) { return run_all(runtime).at(0); }

  // Runs on the one runtime input `x` as given and as a channels_last copy: both results must
  // be within Tolerance::op_f32() of `expected`.
  ::testing::AssertionResult close_in_both_layouts(const Tensor& x, const Tensor& expected) {
    for (const MemoryFormat format : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
      ::testing::AssertionResult close =
          all_close(run({x.contiguous(format)}), expected, Tolerance::op_f32());
      if (!close)
        return close << (format == MemoryFormat::ChannelsLast ? " (channels_last input)"
                                                              : " (input as given)");
    }
    return ::testing::AssertionSuccess();
  }

 private:
  std::shared_ptr<graph::Graph> graph_;
  graph::Node node_;
  int opset_ = 17;
  nn::ModulePtr module_;
};

}  // namespace refold::testing
