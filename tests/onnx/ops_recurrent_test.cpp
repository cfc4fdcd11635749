// RNN, GRU and LSTM (src/ops/recurrent.cpp) built from ONNX nodes and run: hand-computed cells,
// the native kernel against the reference on every variant (directions, biases, initial states,
// sequence lengths, batch-first layout, clip, other activations, peepholes, input_forget,
// linear_before_reset), sequence lengths' semantics, and every error message. The ONNX backend
// tests test_rnn_*, test_simple_rnn_*, test_gru_* and test_lstm_* run in conformance.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/native_conv_testing.h"
#include "kernels/reference/recurrent.h"
#include "kernels/verbose.h"
#include "onnx/ops_cnn_helpers.h"
#include "onnx/ops_tensor_helpers.h"
#include "refold/threads.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"

namespace refold::testing {
namespace {

using reference::RecurrentCell;

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// x [T, B, I] = [2, 1, 1] through an RNN of one unit: h_t = tanh(0.5·x_t + 0.25·h_{t−1} + 0.3).
TEST(OnnxRecurrent, AHandComputedRnn) {
  OpCase c("RNN", {"x", "w", "r", "b"}, {"y", "y_h"});
  c.constant("w", values({0.5f}, {1, 1, 1}))
      .constant("r", values({0.25f}, {1, 1, 1}))
      .constant("b", values({0.1f, 0.2f}, {1, 2}))
      .integer("hidden_size", 1);
  const std::vector<Tensor> out = c.run_all({values({1.0f, 2.0f}, {2, 1, 1})});
  const double h1 = std::tanh(0.5 + 0.3), h2 = std::tanh(1.0 + 0.25 * h1 + 0.3);
  ASSERT_EQ(out[0].sizes(), (Shape{2, 1, 1, 1}));
  EXPECT_NEAR(out[0].to_vector()[0], h1, 1e-6);
  EXPECT_NEAR(out[0].to_vector()[1], h2, 1e-6);
  EXPECT_NEAR(out[1].to_vector()[0], h2, 1e-6);
}

// One LSTM step of one unit from zero state: W's rows are the gates i, o, f, c in that order.
TEST(OnnxRecurrent, AHandComputedLstmStepInGateOrderIofc) {
  OpCase c("LSTM", {"x", "w", "r"}, {"y", "y_h", "y_c"});
  c.constant("w", values({0.1f, 0.2f, 0.3f, 0.4f}, {1, 4, 1}))
      .constant("r", values({0.0f, 0.0f, 0.0f, 0.0f}, {1, 4, 1}));
  const std::vector<Tensor> out = c.run_all({values({1.0f}, {1, 1, 1})});
  const double i = sigmoid(0.1), o = sigmoid(0.2), cell = i * std::tanh(0.4);
  EXPECT_NEAR(out[2].to_vector()[0], cell, 1e-6);                 // f · 0 + i · c̃
  EXPECT_NEAR(out[1].to_vector()[0], o * std::tanh(cell), 1e-6);  // o · tanh(C)
  EXPECT_NEAR(out[0].to_vector()[0], o * std::tanh(cell), 1e-6);
}

struct Variant {
  std::string name;
  RecurrentCell cell;
  std::string direction = "forward";
  bool bias = false, states = false, lengths = false, batch_first = false, clip = false;
  bool activations = false, peepholes = false, input_forget = false, before_reset = false;
};

std::vector<Variant> variants() {
  std::vector<Variant> v;
  for (const RecurrentCell cell : {RecurrentCell::RNN, RecurrentCell::GRU, RecurrentCell::LSTM}) {
    const std::string op = cell == RecurrentCell::RNN   ? "RNN"
                           : cell == RecurrentCell::GRU ? "GRU"
                                                        : "LSTM";
    for (const std::string dir : {"forward", "reverse", "bidirectional"}) {
      v.push_back({op + " " + dir, cell, dir});
      v.push_back(
          {op + " " + dir + " biased, initial states, lengths", cell, dir, true, true, true});
    }
    v.push_back({op + " batch first", cell, "bidirectional", true, true, true, true});
    Variant a{op + " clip and other activations", cell, "bidirectional", true};
    a.clip = a.activations = true;
    v.push_back(a);
  }
  Variant peep{"LSTM peepholes, input_forget", RecurrentCell::LSTM, "bidirectional", true, true};
  peep.peepholes = peep.input_forget = true;
  v.push_back(peep);
  Variant reset{"GRU linear_before_reset", RecurrentCell::GRU, "bidirectional", true, true, true};
  reset.before_reset = true;
  v.push_back(reset);
  return v;
}

// The op, run through its dispatch, against reference::recurrent on the same inputs.
TEST(OnnxRecurrent, NativeMatchesTheReferenceOnEveryVariant) {
  std::uint64_t seed = 1;
  for (const Variant& v : variants()) {
    SCOPED_TRACE(v.name);
    const bool lstm = v.cell == RecurrentCell::LSTM;
    const std::string op = v.name.substr(0, v.name.find(' '));
    const std::int64_t T = 5, B = 3, I = 6, H = 4, D = v.direction == "bidirectional" ? 2 : 1;
    const std::int64_t G = v.cell == RecurrentCell::RNN ? 1 : v.cell == RecurrentCell::GRU ? 3 : 4;
    std::vector<std::string> inputs = {
        "x", "w", "r", v.bias ? "b" : "", v.lengths ? "len" : "", v.states ? "h0" : ""};
    if (lstm) inputs.insert(inputs.end(), {v.states ? "c0" : "", v.peepholes ? "p" : ""});
    std::vector<std::string> outputs = {"y", "y_h"};
    if (lstm) outputs.push_back("y_c");
    OpCase c(op, inputs, outputs);
    reference::RecurrentInputs in;
    in.w = random({D, G * H, I}, seed++);
    in.r = random({D, G * H, H}, seed++);
    c.constant("w", in.w).constant("r", in.r).text("direction", v.direction);
    if (v.bias) c.constant("b", in.b = random({D, 2 * G * H}, seed++));
    const Shape state = v.batch_first ? Shape{B, D, H} : Shape{D, B, H};
    if (v.states) c.constant("h0", in.initial_h = random(state, seed++));
    if (v.states && lstm) c.constant("c0", in.initial_c = random(state, seed++));
    if (v.lengths) c.constant("len", in.sequence_lens = i64({5, 2, 0}));
    if (v.peepholes) c.constant("p", in.p = random({D, 3 * H}, seed++));
    if (v.batch_first) c.integer("layout", 1);
    if (v.clip) c.real("clip", 0.7f);
    if (v.input_forget) c.integer("input_forget", 1);
    if (v.before_reset) c.integer("linear_before_reset", 1);
    reference::RecurrentParams p;
    p.cell = v.cell;
    p.direction = v.direction == "forward"   ? reference::RecurrentDirection::Forward
                  : v.direction == "reverse" ? reference::RecurrentDirection::Reverse
                                             : reference::RecurrentDirection::Bidirectional;
    p.activations = reference::RecurrentParams::default_activations(v.cell, p.directions());
    if (v.activations) {
      // Per direction: HardSigmoid (α 0.3, β 0.4) for the gates, then Softsign / ScaledTanh.
      const std::vector<std::string> one =
          v.cell == RecurrentCell::RNN ? std::vector<std::string>{"Relu"}
          : v.cell == RecurrentCell::GRU
              ? std::vector<std::string>{"HardSigmoid", "Softsign"}
              : std::vector<std::string>{"HardSigmoid", "ScaledTanh", "LeakyRelu"};
      std::vector<std::string> names;
      for (std::int64_t d = 0; d < D; ++d) names.insert(names.end(), one.begin(), one.end());
      const std::vector<float> alphas = {0.3f, 0.9f, 0.05f, 0.3f, 0.9f, 0.05f};
      const std::vector<float> betas = {0.4f, 1.1f, 0.4f, 1.1f};
      c.node().attributes.set("activations", names);
      c.node().attributes.set("activation_alpha", alphas);
      c.node().attributes.set("activation_beta", betas);
      p.activations = reference::recurrent_activations(names, alphas, betas);
    }
    if (v.clip) p.clip = 0.7;
    p.input_forget = v.input_forget;
    p.linear_before_reset = v.before_reset;
    p.batch_first = v.batch_first;
    in.x = random(v.batch_first ? Shape{B, T, I} : Shape{T, B, I}, seed++);
    const reference::RecurrentOutputs want = reference::recurrent(in, p);
    // 8- and 16-lane gates; 2 threads run a bidirectional node's directions side by side.
    for (const native::VectorIsa isa : native_conv::runnable_isas()) {
      for (const int threads : {1, 2}) {
        SCOPED_TRACE(fmt::format("{}, {} threads", native::vector_isa_name(isa), threads));
        native_conv::ScopedVectorIsa scoped(isa);
        const ThreadCountScope thread_count(threads);
        DispatchLog log;
        const std::vector<Tensor> got = c.run_all({in.x});
        EXPECT_THAT(log.take(), ::testing::Contains(::testing::HasSubstr("native")));
        ASSERT_EQ(got.size(), outputs.size());
        EXPECT_TRUE(all_close(got[0], want.y, Tolerance::op_f32()));
        EXPECT_TRUE(all_close(got[1], want.y_h, Tolerance::op_f32()));
        if (lstm) {
          EXPECT_TRUE(all_close(got[2], want.y_c, Tolerance::op_f32()));
        }
      }
    }
  }
}

// Entry b is active for its first sequence_lens[b] steps: later ones write zeros; the forward
// direction's Y_h is its Y at step len − 1, the reverse direction's its Y at step 0.
TEST(OnnxRecurrent, SequenceLengthsStopEachEntry) {
  const std::int64_t T = 4, B = 2, I = 3, H = 2;
  OpCase c("LSTM", {"x", "w", "r", "", "len"}, {"y", "y_h"});
  c.constant("w", random({2, 4 * H, I}, 1))
      .constant("r", random({2, 4 * H, H}, 2))
      .constant("len", i64({4, 2}))
      .text("direction", "bidirectional");
  const std::vector<Tensor> out = c.run_all({random({T, B, I}, 3)});
  const Tensor& y = out[0];  // [T, 2, B, H]
  for (std::int64_t d = 0; d < 2; ++d)
    for (std::int64_t t = 2; t < T; ++t)
      for (std::int64_t j = 0; j < H; ++j) EXPECT_EQ(y.at({t, d, 1, j}), 0.0f);
  for (std::int64_t j = 0; j < H; ++j) {
    EXPECT_EQ(out[1].at({0, 0, j}), y.at({3, 0, 0, j}));
    EXPECT_EQ(out[1].at({0, 1, j}), y.at({1, 0, 1, j}));
    EXPECT_EQ(out[1].at({1, 0, j}), y.at({0, 1, 0, j}));
    EXPECT_EQ(out[1].at({1, 1, j}), y.at({0, 1, 1, j}));
  }
  // Only Y_h used: the first output may be empty.
  OpCase last("GRU", {"x", "w", "r"}, {"", "y_h"});
  last.constant("w", random({1, 3 * H, I}, 4)).constant("r", random({1, 3 * H, H}, 5));
  EXPECT_EQ(last.run_all({random({T, B, I}, 6)})[1].sizes(), (Shape{1, B, H}));
}

TEST(OnnxRecurrent, Errors) {
  const auto lstm = [] {
    OpCase c("LSTM", {"x", "w", "r", "", "len"}, {"y"});
    c.constant("w", zeros({1, 8, 3})).constant("r", zeros({1, 8, 2}));
    return c;
  };
  expect_errors({
      {"direction", [&] { lstm().text("direction", "sideways").module(); },
       "direction must be forward, reverse or bidirectional (got 'sideways')"},
      {"activation count",
       [&] {
         OpCase c = lstm();
         c.node().attributes.set("activations", std::vector<std::string>{"Sigmoid", "Tanh"});
         c.module();
       },
       "activations has 2 functions; 1 direction(s) of LSTM need 3"},
      {"unknown activation",
       [&] {
         OpCase c = lstm();
         c.node().attributes.set("activations",
                                 std::vector<std::string>{"Sigmoid", "Swish", "Tanh"});
         c.module();
       },
       "unsupported: activation 'Swish'"},
      {"clip", [&] { lstm().real("clip", 0.0f).module(); }, "clip must be positive (got 0)"},
      {"layout", [&] { lstm().integer("layout", 2).module(); }, "layout must be 0 or 1 (got 2)"},
      {"outputs",
       [] {
         OpCase("GRU", {"x", "w", "r"}, {"y", "y_h", "y_c"}).module();
       },
       "unsupported: output 2 ('y_c') is not implemented"},
      {"W shape",
       [&] {
         lstm().run_all({zeros({2, 1, 4}), i64({1})});
       },
       "W must have shape [1, 8, 4], got [1, 8, 3]"},
      {"lengths",
       [&] {
         lstm().run_all({zeros({2, 1, 3}), i64({3})});
       },
       "sequence_lens[0] = 3 is outside [0, 2] (seq_length)"},
      {"rank",
       [&] {
         lstm().run_all({zeros({2, 3}), i64({1})});
       },
       "X must be 3-d ([seq_length, batch, input_size]), got [2, 3]"},
  });
}

}  // namespace
}  // namespace refold::testing
