// refold::Session: optimize-once-run-many, by position and by name, the weights kept once, its
// errors, and one session run from several threads at once (each output checked against a
// one-thread run).
#include "refold/session.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "kernels/onednn/packed_weights.h"
#include "onnx/source_model.h"
#include "refold/memory.h"
#include "refold/onnx/onnx.h"
#include "refold/threads.h"
#include "testing/compare.h"
#include "testing/error_table.h"
#include "testing/graph_builder.h"

namespace refold {
namespace {

using testing::ConvSpec;
using testing::GraphBuilder;
using testing::kPad1;

// A RepVGG block (3×3 + 1×1 + identity, each with BN) then a ReLU and a second output: a model
// the optimizer re-parameterizes into one conv.
std::string repvgg_model(std::vector<Tensor>* reference_inputs = nullptr,
                         std::vector<Tensor>* reference_outputs = nullptr) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 8, 10, 10});
  const std::string c3 = b.bn(b.conv(x, 8, 8, 3, {.pads = kPad1}), 8);
  const std::string c1 = b.bn(b.conv(x, 8, 8, 1), 8);
  const std::string y = b.relu(b.add(b.add(c3, c1), b.bn(x, 8)));
  b.output(y);
  b.output(b.sigmoid(y));
  if (reference_inputs != nullptr) {
    *reference_inputs = b.random_inputs();
    *reference_outputs = b.run(*reference_inputs);
  }
  return onnx::save_to_bytes(b.graph());
}

std::span<const std::byte> as_bytes(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

TEST(Session, OptimizesOnceAndRunsByPositionAndByName) {
  std::vector<Tensor> in, expected;
  const std::string bytes = repvgg_model(&in, &expected);
  SessionOptions options;
  options.optimizer.verify = true;
  const Session session(as_bytes(bytes), "repvgg.onnx", options);
  EXPECT_EQ(session.report().pipeline.op_counts_after.at("Conv"), 1);
  EXPECT_EQ(session.report().pipeline.op_counts_after.count("BatchNormalization"), 0u);
  ASSERT_TRUE(session.report().verification.has_value());
  EXPECT_LE(session.report().verification->max_abs_error, 1e-4);
  EXPECT_EQ(session.input_names(), std::vector<std::string>{"x"});
  ASSERT_EQ(session.outputs().size(), 2u);

  const std::vector<Tensor> y = session.run(in);
  ASSERT_EQ(y.size(), 2u);
  EXPECT_TRUE(testing::model_close(y[0], expected[0]));
  EXPECT_TRUE(testing::model_close(y[1], expected[1]));
  // By name, one chosen output.
  const std::vector<Tensor> second = session.run({{"x", in[0]}}, {session.output_names()[1]});
  ASSERT_EQ(second.size(), 1u);
  EXPECT_TRUE(testing::all_close(second[0], y[1], testing::Tolerance::exact()));
}

TEST(Session, RunsAsImportedWithoutOptimize) {
  std::vector<Tensor> in, expected;
  const std::string bytes = repvgg_model(&in, &expected);
  SessionOptions options;
  options.optimize = false;
  const Session session(as_bytes(bytes), "repvgg.onnx", options);
  EXPECT_TRUE(session.report().pipeline.passes.empty());
  EXPECT_EQ(session.graph().nodes().size(), 9u);  // 2 Conv, 3 BN, 2 Add, Relu, Sigmoid
  EXPECT_TRUE(testing::all_close(session.run(in)[0], expected[0], testing::Tolerance::exact()));
}

// A session keeps the weights once: the parsed file's initializers keep their name, dims and data
// type but no data, and its graph still saves to a model that computes the same.
TEST(Session, KeepsTheWeightsOnceAndItsGraphStillSaves) {
  std::vector<Tensor> in, expected;
  const std::string bytes = repvgg_model(&in, &expected);
  for (const bool optimize : {false, true}) {
    SCOPED_TRACE(optimize ? "optimized" : "as imported");
    SessionOptions options;
    options.optimize = optimize;
    const Session session(as_bytes(bytes), "repvgg.onnx", options);
    ASSERT_NE(session.graph().source, nullptr);
    const auto& initializers = session.graph().source->model.graph().initializer();
    ASSERT_GT(initializers.size(), 0);
    for (const ::onnx::TensorProto& t : initializers) {
      EXPECT_TRUE(t.raw_data().empty() && t.float_data().empty()) << t.name();
      EXPECT_EQ(t.data_type(), ::onnx::TensorProto::FLOAT) << t.name();
    }
    const auto reloaded =
        onnx::load_from_memory(as_bytes(onnx::save_to_bytes(session.graph())), "saved.onnx");
    EXPECT_TRUE(testing::model_close(reloaded->run(in)[0], expected[0]));
    EXPECT_TRUE(testing::model_close(session.run(in)[0], expected[0]));
  }
}

// Two 1×1 convs wide enough for oneDNN, which packs their weights into its blocked format.
std::string packed_conv_model(std::vector<Tensor>* inputs, std::vector<Tensor>* outputs) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 32, 12, 12});
  b.output(b.conv(b.relu(b.conv(x, 32, 64, 1)), 64, 64, 1));
  *inputs = b.random_inputs();
  *outputs = b.run(*inputs);
  return onnx::save_to_bytes(b.graph());
}

// Weights held once (core/held_weights.h): after a run, a conv weight oneDNN packed keeps only
// the packed copy; reading it (saving the graph) rebuilds the plain bytes exactly.
TEST(Session, HoldsPackedConvWeightsOnceAndRebuildsThemWhenRead) {
  std::vector<Tensor> in, expected;
  const std::string bytes = packed_conv_model(&in, &expected);
  const std::size_t held_before = memory_stats().held_bytes;
  std::vector<Tensor> first;
  {
    const Session session(as_bytes(bytes), "convs.onnx");
    first = session.run(in);
    EXPECT_TRUE(testing::model_close(first[0], expected[0]));
    const std::size_t held = memory_stats().held_bytes - held_before;
    EXPECT_GE(held, (32 * 64 + 64 * 64) * sizeof(float)) << "the two conv weights";
    // Later runs find the packed copies: same output, nothing rebuilt.
    EXPECT_TRUE(testing::all_close(session.run(in)[0], first[0], testing::Tolerance::exact()));
    EXPECT_EQ(memory_stats().held_bytes - held_before, held);
    // Saving reads every weight: each is rebuilt, and the saved model computes the same.
    const auto reloaded =
        onnx::load_from_memory(as_bytes(onnx::save_to_bytes(session.graph())), "saved.onnx");
    EXPECT_EQ(memory_stats().held_bytes, held_before);
    // The reloaded file is the model as built (the fused Relu written back), run as imported
    // (NCHW): bit for bit the builder's own run when every weight came back exactly. (Not the
    // session's NHWC run: with AVX2, oneDNN's NCHW and NHWC kernels round apart.)
    EXPECT_TRUE(testing::all_close(reloaded->run(in)[0], expected[0], testing::Tolerance::exact()));
    EXPECT_TRUE(testing::all_close(session.run(in)[0], first[0], testing::Tolerance::exact()));
    EXPECT_EQ(memory_stats().held_bytes, held_before) << "a rebuilt weight is never held again";
  }
  EXPECT_EQ(memory_stats().held_bytes, held_before);
}

// A transformer's two linear products by constants, which oneDNN's matmul packs (from the
// second run on, kernels/onednn/packed_weights.h): held once as well, rebuilt exactly when read.
TEST(Session, HoldsPackedLinearWeightsOnceAndRebuildsThemWhenRead) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 10, 64});
  const std::string h = b.relu(b.node("MatMul", {x, b.constant("w1", randn({64, 96}))}));
  b.output(b.node("MatMul", {h, b.constant("w2", randn({96, 64}))}));
  const std::vector<Tensor> in = b.random_inputs();
  const std::vector<Tensor> expected = b.run(in);
  const std::string bytes = onnx::save_to_bytes(b.graph());
  const std::size_t held_before = memory_stats().held_bytes;
  const std::uint64_t packs_before = onednn::detail::packed_weight_stats().packs;
  {
    const Session session(as_bytes(bytes), "linears.onnx");
    const Tensor first = session.run(in)[0];
    EXPECT_TRUE(testing::model_close(first, expected[0]));
    EXPECT_TRUE(testing::model_close(session.run(in)[0], expected[0]));
    // Packed where the matmul's own format is not the weight's layout (AVX-512's brgemm panels);
    // with AVX2 gemm:jit reads each [K, O] weight as it lies, so none is packed or held.
    if (onednn::detail::packed_weight_stats().packs - packs_before == 2) {
      EXPECT_GE(memory_stats().held_bytes - held_before, (64 * 96 + 96 * 64) * sizeof(float))
          << "the two weights";
    } else {
      EXPECT_EQ(onednn::detail::packed_weight_stats().packs, packs_before);
      EXPECT_EQ(memory_stats().held_bytes, held_before);
    }
    const auto reloaded =
        onnx::load_from_memory(as_bytes(onnx::save_to_bytes(session.graph())), "saved.onnx");
    EXPECT_EQ(memory_stats().held_bytes, held_before);
    EXPECT_TRUE(testing::all_close(reloaded->run(in)[0], expected[0], testing::Tolerance::exact()));
  }
  EXPECT_EQ(memory_stats().held_bytes, held_before);
}

// A weight someone else holds a handle on keeps its bytes: a pointer from that handle stays valid.
TEST(Session, DoesNotHoldAWeightOthersHoldAHandleOn) {
  std::vector<Tensor> in, expected;
  const std::string bytes = packed_conv_model(&in, &expected);
  const Session session(as_bytes(bytes), "convs.onnx");
  std::vector<Tensor> handles;
  for (const std::string& name : session.graph().constant_names())
    handles.push_back(session.graph().constant(name));
  for (const auto& [name, tensor] : session.graph().named_parameters()) handles.push_back(tensor);
  const std::size_t held_before = memory_stats().held_bytes;
  EXPECT_TRUE(testing::model_close(session.run(in)[0], expected[0]));
  EXPECT_EQ(memory_stats().held_bytes, held_before);
  handles.clear();
}

// A session given a graph does not own it (the caller may read it), so it holds nothing.
TEST(Session, GivenAGraphHoldsNoWeights) {
  std::vector<Tensor> in, expected;
  const std::string bytes = packed_conv_model(&in, &expected);
  const Session session(onnx::load_from_memory(as_bytes(bytes), "convs.onnx"));
  const std::size_t held_before = memory_stats().held_bytes;
  EXPECT_TRUE(testing::model_close(session.run(in)[0], expected[0]));
  EXPECT_EQ(memory_stats().held_bytes, held_before);
}

TEST(Session, ErrorsNameTheInputOutputAndValue) {
  const std::string bytes = repvgg_model();
  const Session session(as_bytes(bytes), "repvgg.onnx");
  const Tensor good = randn({1, 8, 10, 10});
  testing::expect_errors({
      {"missing input", [&] { session.run(std::map<std::string, Tensor>{}); },
       "Session: input 'x' is not given"},
      {"unknown input",
       [&] {
         session.run({{"x", good}, {"y", good}});
       },
       "Session: the model has no input 'y' (inputs: x)"},
      {"unknown output",
       [&] {
         session.run({{"x", good}}, {"logits"});
       },
       "Session: the model has no output 'logits'"},
      {"wrong shape",
       [&] {
         session.run({randn({1, 8, 10, 11})});
       },
       "Graph: input 'x' is declared [1, 8, 10, 10], given float32[1, 8, 10, 11]"},
      {"wrong dtype",
       [&] {
         session.run({zeros({1, 8, 10, 10}, DType::Int64)});
       },
       "Graph: input 'x' is declared with element type 1, given 7"},
      {"wrong count", [&] { session.run(std::vector<Tensor>{}); },
       "Graph: 0 inputs given, the graph takes 1"},
      {"negative threads",
       [&] {
         SessionOptions o;
         o.threads = -1;
         Session(as_bytes(bytes), "repvgg.onnx", o);
       },
       "Session: threads (-1) must be >= 1, or 0 for refold's default"},
      {"bad bytes", [&] { Session(as_bytes(std::string("not onnx")), "junk.onnx"); }, "junk.onnx"},
  });
}

// One session, four threads, each on its own inputs, many times: every output equals the
// one-thread run of the same input. Run under the sanitizer build too (scripts/sanitize.sh).
TEST(Session, RunsFromSeveralThreadsAtOnce) {
  const std::string bytes = repvgg_model();
  SessionOptions options;
  options.threads = 1;
  const Session session(as_bytes(bytes), "repvgg.onnx", options);
  constexpr int kThreads = 4, kRuns = 10;
  std::vector<Tensor> inputs, expected;
  for (int t = 0; t < kThreads; ++t) {
    Generator gen(100 + t);
    inputs.push_back(randn({1, 8, 10, 10}, {}, gen));
    expected.push_back(session.run({inputs.back()})[0]);
  }
  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (int r = 0; r < kRuns; ++r) {
          const Tensor y = session.run({inputs[t]})[0];
          if (testing::max_abs_diff(y, expected[t]) != 0) ++mismatches;
        }
      } catch (const std::exception&) {
        ++failures;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(Session, ThreadCountScopeOverridesOnThisThreadOnly) {
  set_num_threads(2);
  {
    const ThreadCountScope scope(1);
    EXPECT_EQ(get_num_threads(), 1);
    int seen_elsewhere = 0;
    std::thread([&] { seen_elsewhere = get_num_threads(); }).join();
    EXPECT_EQ(seen_elsewhere, 2);
    {
      const ThreadCountScope inner(0);  // keeps what is in force
      EXPECT_EQ(get_num_threads(), 1);
    }
  }
  EXPECT_EQ(get_num_threads(), 2);
}

}  // namespace
}  // namespace refold
