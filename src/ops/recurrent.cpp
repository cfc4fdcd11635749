// RNN, GRU and LSTM (opset 7; `layout` from opset 14): torch.nn.RNN/GRU/LSTM as torch.onnx writes
// them (Sequencer's bidirectional LSTMs over image rows and columns). kernels/reference/
// recurrent.h has the math; native::recurrent runs float32, the reference anything else.
#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "kernels/dispatch.h"
#include "kernels/native/recurrent.h"
#include "kernels/reference/recurrent.h"
#include "ops/op.h"
#include "refold/graph/op.h"

namespace refold::ops {
namespace {

using reference::RecurrentCell;
using reference::RecurrentParams;

class Recurrent : public graph::Op {
 public:
  Recurrent(RecurrentParams params, std::size_t outputs)
      : Op(reference::recurrent_op_name(params.cell)), p_(std::move(params)), outputs_(outputs) {}

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    const auto input = [&](std::size_t i) { return i < inputs.size() ? inputs[i] : Tensor(); };
    reference::RecurrentInputs in{input(0), input(1), input(2), input(3),
                                  input(4), input(5), input(6), input(7)};
    const reference::RecurrentExtent e = reference::check_recurrent(in, p_);
    reference::RecurrentOutputs out;
    const std::string op = type_name();
    dispatch(op,
             {{"native",
               [&](std::string* declined) {
                 out = native::recurrent(in, p_, e, declined);
                 return out.y;
               }}},
             [&] {
               out = reference::recurrent(in, p_);
               return out.y;
             });
    std::vector<Tensor> result = {out.y, out.y_h, out.y_c};
    result.resize(outputs_);
    return result;
  }

 private:
  RecurrentParams p_;
  std::size_t outputs_;  // the node's: Y, Y_h (, Y_c)
};

nn::ModulePtr build_recurrent(const BuildContext& context, RecurrentCell cell) {
  const graph::Node& node = context.node;
  const bool lstm = cell == RecurrentCell::LSTM;
  check_arity(node, 3, lstm ? 8 : 6, lstm ? 3 : 2, true);
  const graph::Attributes& a = node.attributes;
  RecurrentParams p;
  p.cell = cell;
  const std::string direction = a.get_string("direction", "forward");
  REFOLD_CHECK(direction == "forward" || direction == "reverse" || direction == "bidirectional",
               "direction must be forward, reverse or bidirectional (got '{}')", direction);
  p.direction = direction == "forward"   ? reference::RecurrentDirection::Forward
                : direction == "reverse" ? reference::RecurrentDirection::Reverse
                                         : reference::RecurrentDirection::Bidirectional;
  p.hidden = a.get_int("hidden_size", 0);
  REFOLD_CHECK(p.hidden >= 0, "hidden_size must be positive (got {})", p.hidden);
  const std::vector<std::string> names = a.get_strings("activations");
  if (names.empty()) {
    p.activations = RecurrentParams::default_activations(cell, p.directions());
  } else {
    p.activations = reference::recurrent_activations(names, a.get_floats("activation_alpha"),
                                                     a.get_floats("activation_beta"));
  }
  if (a.has("clip")) p.clip = a.get_float("clip", 0.0f);
  const std::int64_t input_forget = a.get_int("input_forget", 0);
  const std::int64_t before_reset = a.get_int("linear_before_reset", 0);
  const std::int64_t layout = a.get_int("layout", 0);
  for (const auto& [name, v] : {std::pair{"input_forget", input_forget},
                                {"linear_before_reset", before_reset},
                                {"layout", layout}})
    REFOLD_CHECK(v == 0 || v == 1, "{} must be 0 or 1 (got {})", name, v);
  p.input_forget = input_forget == 1;
  p.linear_before_reset = before_reset == 1;
  p.batch_first = layout == 1;
  reference::check_recurrent_params(p);
  return std::make_shared<Recurrent>(std::move(p), node.outputs.size());
}

}  // namespace

const std::vector<OpDef>& recurrent_ops() {
  static const std::vector<OpDef> table = {
      {"RNN", 7, [](const BuildContext& c) { return build_recurrent(c, RecurrentCell::RNN); },
       LayoutRule::Fresh},
      {"GRU", 7, [](const BuildContext& c) { return build_recurrent(c, RecurrentCell::GRU); },
       LayoutRule::Fresh},
      {"LSTM", 7, [](const BuildContext& c) { return build_recurrent(c, RecurrentCell::LSTM); },
       LayoutRule::Fresh},
  };
  return table;
}

}  // namespace refold::ops
