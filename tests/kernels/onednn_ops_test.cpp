// oneDNN element-wise activations, binary add/mul, batch norm and max/avg pooling against the
// reference kernels, over {NCHW, NHWC, other dense ranks and permutations, non-dense (declined)} ×
// {1, 2 threads} × {f32, bf16 (declined without avx512_bf16, then the reference through
// functional::)}, with odd channel counts 13/19; plus the expected-failure messages (the
// reference's), the primitive cache, and that functional:: really runs them on oneDNN.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kernels/native/cpu.h"
#include "kernels/onednn/batch_norm.h"
#include "kernels/onednn/binary.h"
#include "kernels/onednn/conv2d.h"
#include "kernels/onednn/eltwise.h"
#include "kernels/onednn/pooling.h"
#include "kernels/verbose.h"
#include "refold/error.h"
#include "refold/functional.h"
#include "refold/reference.h"
#include "refold/threads.h"
#include "testing/compare.h"
#include "testing/threads.h"

namespace refold {
namespace {

using onednn::EltwiseOp;
using ::testing::HasSubstr;
using testing::Tolerance;

// Restores the thread setting every test may change.
class OnednnOps : public ::testing::Test {
 private:
  testing::RestoreNumThreads restore_threads_;
};

// Normal values times `scale`, in logical order, contiguous.
Tensor normal(const Shape& sizes, double scale, Generator& gen) {
  std::vector<float> v(static_cast<std::size_t>(empty(sizes).numel()));
  for (float& x : v) x = static_cast<float>(gen.normal() * scale);
  return from_values(v, sizes);
}

// One activation: the oneDNN op, the reference and the functional entry point.
struct Activation {
  EltwiseOp op;
  double negative_slope = 0.0;
  std::function<Tensor(const Tensor&)> reference;
  std::function<Tensor(const Tensor&)> functional;
};

std::vector<Activation> activations() {
  return {
      {EltwiseOp::ReLU, 0.0, [](const Tensor& x) { return reference::relu(x); },
       [](const Tensor& x) { return functional::relu(x); }},
      {EltwiseOp::ReLU6, 0.0, [](const Tensor& x) { return reference::relu6(x); },
       [](const Tensor& x) { return functional::relu6(x); }},
      {EltwiseOp::LeakyReLU, 0.2, [](const Tensor& x) { return reference::leaky_relu(x, 0.2); },
       [](const Tensor& x) { return functional::leaky_relu(x, 0.2); }},
      {EltwiseOp::Sigmoid, 0.0, [](const Tensor& x) { return reference::sigmoid(x); },
       [](const Tensor& x) { return functional::sigmoid(x); }},
      {EltwiseOp::SiLU, 0.0, [](const Tensor& x) { return reference::silu(x); },
       [](const Tensor& x) { return functional::silu(x); }},
      {EltwiseOp::HardSwish, 0.0, [](const Tensor& x) { return reference::hardswish(x); },
       [](const Tensor& x) { return functional::hardswish(x); }},
      {EltwiseOp::HardSigmoid, 0.0, [](const Tensor& x) { return reference::hardsigmoid(x); },
       [](const Tensor& x) { return functional::hardsigmoid(x); }},
  };
}

// Dense inputs of several ranks and layouts; values ~N(0, 4²) reach every piece of relu6,
// hardswish and hardsigmoid (the bends at −3, 0, 3 and 6).
struct Input {
  std::string name;
  Tensor tensor;
};

std::vector<Input> dense_inputs() {
  Generator gen(0xE17);
  const Tensor nchw = normal({2, 13, 5, 7}, 4.0, gen);
  const Tensor wide = normal({1, 19, 3, 4}, 4.0, gen);
  return {
      {"nchw_13", nchw},
      {"nhwc_13", nchw.contiguous(MemoryFormat::ChannelsLast)},
      {"nhwc_19", wide.contiguous(MemoryFormat::ChannelsLast)},
      {"3d_permuted", normal({19, 3, 5}, 4.0, gen).permute({2, 0, 1})},
      {"2d", normal({13, 19}, 4.0, gen)},
      {"1d", normal({37}, 4.0, gen)},
  };
}

TEST_F(OnednnOps, EltwiseMatchesReferenceInTheInputsLayout) {
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const Input& in : dense_inputs()) {
      for (const Activation& a : activations()) {
        SCOPED_TRACE(fmt::format("{} {} threads {}", onednn::eltwise_name(a.op), in.name, threads));
        std::string declined;
        const Tensor out = onednn::eltwise(a.op, in.tensor, a.negative_slope, &declined);
        ASSERT_TRUE(out.defined()) << declined;
        EXPECT_EQ(out.strides(), in.tensor.strides());
        EXPECT_EQ(out.sizes(), in.tensor.sizes());
        EXPECT_TRUE(testing::all_close(out, a.reference(in.tensor), Tolerance::op_f32()));
        // functional:: gives the same values in the same layout.
        const Tensor f = a.functional(in.tensor);
        EXPECT_EQ(f.strides(), in.tensor.strides());
        EXPECT_TRUE(testing::all_close(f, a.reference(in.tensor), Tolerance::op_f32()));
      }
    }
  }
}

TEST_F(OnednnOps, EltwiseLeavesTheInputUntouched) {
  Generator gen(3);
  const Tensor x = normal({2, 13, 4, 4}, 4.0, gen).contiguous(MemoryFormat::ChannelsLast);
  const Tensor copy = x.clone();
  const std::uint64_t version = x.version();
  const Tensor y = onednn::eltwise(EltwiseOp::HardSigmoid, x);
  EXPECT_EQ(x.version(), version);
  EXPECT_TRUE(testing::all_close(x, copy, Tolerance::exact()));
  EXPECT_FALSE(y.shares_storage(x));
}

// A size-1 dim may have any stride, 0 included, and the tensor is still dense.
TEST_F(OnednnOps, SizeOneDimsWithOddStrides) {
  Generator gen(71);
  const Tensor base = normal({2, 3, 5}, 2.0, gen);
  for (std::int64_t odd : {0, 1, 1000}) {
    SCOPED_TRACE(odd);
    const Tensor x = base.as_strided({2, 1, 3, 5}, {15, odd, 5, 1}, 0);
    ASSERT_TRUE(x.is_non_overlapping_and_dense());
    std::string declined;
    const Tensor y = onednn::eltwise(EltwiseOp::SiLU, x, 0.0, &declined);
    ASSERT_TRUE(y.defined()) << declined;
    EXPECT_TRUE(testing::all_close(y, reference::silu(x), Tolerance::op_f32()));
    // oneDNN's binary has only its reference implementation for such strides, which it
    // declines; functional::add then runs refold's broadcast loop.
    const Tensor b = normal({1, 1, 3, 1}, 2.0, gen);
    const Tensor sum = functional::add(x, b);
    EXPECT_TRUE(testing::all_close(sum, reference::add(x, b), Tolerance::op_f32()));
    const Tensor one = ones({1});
    const Tensor bn = onednn::batch_norm(x, zeros({1}), one, one, zeros({1}), 1e-5, &declined);
    ASSERT_TRUE(bn.defined()) << declined;
    EXPECT_TRUE(testing::all_close(bn, reference::batch_norm(x, zeros({1}), one, one, zeros({1})),
                                   Tolerance::op_f32()));
  }
}

// Callers on several threads share the cached primitives (each thread runs on its own stream).
TEST_F(OnednnOps, ConcurrentCallersShareThePrimitives) {
  Generator gen(73);
  const Tensor x = normal({2, 13, 6, 6}, 2.0, gen).contiguous(MemoryFormat::ChannelsLast);
  const Tensor b = normal({1, 13, 1, 1}, 2.0, gen);
  const Tensor silu = reference::silu(x);
  const Tensor sum = reference::add(x, b);
  std::vector<int> ok(4, 0);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < ok.size(); ++t)
    threads.emplace_back([&, t] {
      bool all = true;
      for (int i = 0; i < 20; ++i) {
        all = all && testing::all_close(functional::silu(x), silu, Tolerance::op_f32());
        all = all && testing::all_close(functional::add(x, b), sum, Tolerance::op_f32());
      }
      ok[t] = all ? 1 : 0;
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok, std::vector<int>(4, 1));
}

TEST_F(OnednnOps, EltwiseOfAScalar) {
  const Tensor x = full({}, -2.0f);
  ASSERT_EQ(x.dim(), 0);
  const Tensor y = onednn::eltwise(EltwiseOp::HardSwish, x);
  EXPECT_TRUE(testing::all_close(y, reference::hardswish(x), Tolerance::op_f32()));
}

TEST_F(OnednnOps, EltwiseDeclinesNonDenseInputAndFunctionalFallsBack) {
  Generator gen(5);
  const Tensor base = normal({2, 13, 6, 8}, 4.0, gen);
  // Every other column: not dense.
  const Tensor strided = base.as_strided({2, 13, 6, 4}, {13 * 48, 48, 8, 2}, 0);
  ASSERT_FALSE(strided.is_non_overlapping_and_dense());
  for (const Activation& a : activations()) {
    SCOPED_TRACE(onednn::eltwise_name(a.op));
    std::string declined;
    EXPECT_FALSE(onednn::eltwise(a.op, strided, a.negative_slope, &declined).defined());
    EXPECT_THAT(declined, HasSubstr("not dense"));
    EXPECT_TRUE(
        testing::all_close(a.functional(strided), a.reference(strided), Tolerance::exact()));
  }
  // Without a place for the reason, a decline is an error naming the op.
  EXPECT_THAT([&] { onednn::eltwise(EltwiseOp::ReLU, strided); },
              ::testing::ThrowsMessage<Error>(HasSubstr("relu: oneDNN declined: input")));
}

TEST_F(OnednnOps, EltwiseDeclinesEmptyInput) {
  std::string declined;
  EXPECT_FALSE(onednn::eltwise(EltwiseOp::ReLU, empty({2, 0, 3}), 0.0, &declined).defined());
  EXPECT_THAT(declined, HasSubstr("zero-sized"));
  EXPECT_EQ(functional::relu(empty({2, 0, 3})).sizes(), (Shape{2, 0, 3}));
}

TEST_F(OnednnOps, EltwiseBfloat16RunsNativelyOrFallsBackToTheReference) {
  Generator gen(9);
  const Tensor x =
      normal({2, 19, 3, 5}, 4.0, gen).to(DType::BFloat16).contiguous(MemoryFormat::ChannelsLast);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const Activation& a : activations()) {
      SCOPED_TRACE(fmt::format("{} threads {}", onednn::eltwise_name(a.op), threads));
      std::string declined;
      const Tensor out = onednn::eltwise(a.op, x, a.negative_slope, &declined);
      const Tensor expected = a.reference(x);
      const Tensor f = a.functional(x);
      EXPECT_EQ(f.dtype(), DType::BFloat16);
      EXPECT_EQ(f.strides(), x.strides());
      if (onednn::bf16_supported()) {
        ASSERT_TRUE(out.defined()) << declined;
        EXPECT_TRUE(testing::all_close(out, expected, Tolerance::bf16()));
        EXPECT_TRUE(testing::all_close(f, expected, Tolerance::bf16()));
      } else {
        EXPECT_FALSE(out.defined());
        EXPECT_THAT(declined, HasSubstr("avx512_bf16"));
        // The fallback is the reference itself: identical values.
        EXPECT_TRUE(testing::all_close(f, expected, Tolerance::exact()));
      }
    }
  }
}

TEST_F(OnednnOps, FunctionalActivationsRunOnOnednnForFloat32) {
  Generator gen(11);
  const Tensor x = normal({1, 13, 4, 4}, 4.0, gen).contiguous(MemoryFormat::ChannelsLast);
  for (const Activation& a : activations()) {
    SCOPED_TRACE(onednn::eltwise_name(a.op));
    const std::uint64_t before = onednn::eltwise_stats().runs;
    a.functional(x);
    EXPECT_EQ(onednn::eltwise_stats().runs, before + 1);
  }
}

TEST_F(OnednnOps, EltwisePrimitivesAreCachedPerProblem) {
  onednn::clear_eltwise_cache();
  set_num_threads(1);
  Generator gen(13);
  const Tensor x = normal({2, 13, 3, 3}, 1.0, gen);
  onednn::eltwise(EltwiseOp::Sigmoid, x);
  onednn::eltwise(EltwiseOp::Sigmoid, normal({2, 13, 3, 3}, 1.0, gen));
  onednn::eltwise(EltwiseOp::Sigmoid, x.contiguous(MemoryFormat::ChannelsLast));  // new strides
  onednn::eltwise(EltwiseOp::LeakyReLU, x, 0.1);
  onednn::eltwise(EltwiseOp::LeakyReLU, x, 0.3);  // another slope, another primitive
  const onednn::PrimitiveStats s = onednn::eltwise_stats();
  EXPECT_EQ(s.runs, 5u);
  EXPECT_EQ(s.primitive_hits, 1u);
  EXPECT_EQ(s.primitive_misses, 4u);
  EXPECT_EQ(s.primitives, 4u);
  // A different slope really is a different function.
  EXPECT_TRUE(testing::all_close(onednn::eltwise(EltwiseOp::LeakyReLU, x, 0.3),
                                 reference::leaky_relu(x, 0.3), Tolerance::op_f32()));
}

// The reference's messages for invalid arguments, word for word.
TEST_F(OnednnOps, EltwiseRejectsWhatTheReferenceRejects) {
  const Tensor ints = zeros({2, 3}, DType::Int64);
  const auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  for (const Activation& a : activations()) {
    SCOPED_TRACE(onednn::eltwise_name(a.op));
    for (const Tensor& bad : {Tensor{}, ints}) {
      const std::string expected = message([&] { a.reference(bad); });
      EXPECT_NE(expected, "(no error)");
      std::string declined;
      EXPECT_EQ(message([&] { onednn::eltwise(a.op, bad, a.negative_slope, &declined); }),
                expected);
      EXPECT_EQ(message([&] { a.functional(bad); }), expected);
    }
  }
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor x = zeros({2, 3});
  const std::string expected = message([&] { reference::leaky_relu(x, inf); });
  EXPECT_THAT(expected, HasSubstr("leaky_relu: negative_slope (inf) must be finite"));
  EXPECT_EQ(message([&] { onednn::eltwise(EltwiseOp::LeakyReLU, x, inf); }), expected);
  EXPECT_EQ(message([&] { functional::leaky_relu(x, inf); }), expected);
}

// --- binary add / mul

using onednn::BinaryOp;

Tensor reference_binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  return op == BinaryOp::Add ? reference::add(a, b) : reference::mul(a, b);
}
Tensor functional_binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  return op == BinaryOp::Add ? functional::add(a, b) : functional::mul(a, b);
}

struct BinaryCase {
  std::string name;
  Tensor a, b;
};

// Operand pairs oneDNN takes: one operand has the output's shape.
std::vector<BinaryCase> binary_cases() {
  Generator gen(0xB1);
  constexpr auto NHWC = MemoryFormat::ChannelsLast;
  const Tensor x13 = normal({2, 13, 5, 7}, 2.0, gen);
  const Tensor y13 = normal({2, 13, 5, 7}, 2.0, gen);
  const Tensor x19 = normal({1, 19, 4, 3}, 2.0, gen);
  const Tensor y19 = normal({1, 19, 4, 3}, 2.0, gen);
  const Tensor per_channel = normal({1, 13, 1, 1}, 2.0, gen);
  return {
      {"same_nchw_13", x13, y13},
      {"same_nhwc_13", x13.contiguous(NHWC), y13.contiguous(NHWC)},
      {"same_nhwc_19", x19.contiguous(NHWC), y19.contiguous(NHWC)},
      {"nchw_plus_nhwc", x13, y13.contiguous(NHWC)},
      {"nhwc_plus_nchw", x13.contiguous(NHWC), y13},
      {"per_channel_nchw", x13, per_channel},
      {"per_channel_nhwc", x13.contiguous(NHWC), per_channel},
      {"per_channel_first_nhwc", per_channel, x13.contiguous(NHWC)},
      {"rank3_channel", x13.contiguous(NHWC), normal({13, 1, 1}, 2.0, gen)},
      {"last_dim", x19, normal({3}, 2.0, gen)},
      {"scalar", x19.contiguous(NHWC), full({}, 1.5f)},
      {"scalar_first", full({}, -0.5f), x13},
      {"spatial", x19.contiguous(NHWC), normal({1, 1, 4, 3}, 2.0, gen)},
      {"2d", normal({13, 19}, 2.0, gen), normal({13, 1}, 2.0, gen)},
  };
}

TEST_F(OnednnOps, BinaryMatchesReferenceInTheReferencesLayout) {
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const BinaryCase& c : binary_cases()) {
      for (BinaryOp op : {BinaryOp::Add, BinaryOp::Mul}) {
        SCOPED_TRACE(fmt::format("{} {} threads {}", onednn::binary_name(op), c.name, threads));
        const Tensor expected = reference_binary(op, c.a, c.b);
        std::string declined;
        const Tensor out = onednn::binary(op, c.a, c.b, &declined);
        ASSERT_TRUE(out.defined()) << declined;
        EXPECT_EQ(out.sizes(), expected.sizes());
        EXPECT_EQ(out.strides(), expected.strides());
        EXPECT_TRUE(testing::all_close(out, expected, Tolerance::op_f32()));
        const Tensor f = functional_binary(op, c.a, c.b);
        EXPECT_EQ(f.strides(), expected.strides());
        EXPECT_TRUE(testing::all_close(f, expected, Tolerance::op_f32()));
      }
    }
  }
}

TEST_F(OnednnOps, BinaryDeclinesWhatItCannotTakeAndFunctionalFallsBack) {
  Generator gen(17);
  const Tensor base = normal({2, 13, 6, 8}, 2.0, gen);
  const Tensor strided = base.as_strided({2, 13, 6, 4}, {13 * 48, 48, 8, 2}, 0);
  const Tensor dense = normal({2, 13, 6, 4}, 2.0, gen);
  const Tensor expanded =
      normal({1, 13, 1, 1}, 2.0, gen).as_strided({2, 13, 6, 4}, {0, 1, 0, 0}, 0);
  struct Declined {
    std::string name;
    Tensor a, b;
    std::string reason;
  };
  const std::vector<Declined> cases = {
      {"both_broadcast", normal({3, 1}, 2.0, gen), normal({1, 4}, 2.0, gen), "neither"},
      {"non_dense_a", strided, dense, "not dense"},
      {"non_dense_b", dense, strided, "not dense"},
      {"expanded_b", dense, expanded, "not dense"},
      {"empty", empty({2, 0, 3}), empty({2, 0, 3}), "zero-sized"},
  };
  for (const Declined& c : cases) {
    for (BinaryOp op : {BinaryOp::Add, BinaryOp::Mul}) {
      SCOPED_TRACE(fmt::format("{} {}", onednn::binary_name(op), c.name));
      std::string declined;
      EXPECT_FALSE(onednn::binary(op, c.a, c.b, &declined).defined());
      EXPECT_THAT(declined, HasSubstr(c.reason));
      const Tensor expected = reference_binary(op, c.a, c.b);
      const Tensor f = functional_binary(op, c.a, c.b);
      EXPECT_EQ(f.strides(), expected.strides());
      EXPECT_TRUE(testing::all_close(f, expected, Tolerance::exact()));
    }
  }
  EXPECT_THAT([&] { onednn::binary(BinaryOp::Add, dense, strided); },
              ::testing::ThrowsMessage<Error>(HasSubstr("add: oneDNN declined: operand")));
}

TEST_F(OnednnOps, BinaryBfloat16RunsNativelyOrFallsBackToTheReference) {
  Generator gen(19);
  const Tensor a =
      normal({2, 19, 3, 5}, 2.0, gen).to(DType::BFloat16).contiguous(MemoryFormat::ChannelsLast);
  const Tensor b = normal({1, 19, 1, 1}, 2.0, gen).to(DType::BFloat16);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (BinaryOp op : {BinaryOp::Add, BinaryOp::Mul}) {
      SCOPED_TRACE(fmt::format("{} threads {}", onednn::binary_name(op), threads));
      std::string declined;
      const Tensor out = onednn::binary(op, a, b, &declined);
      const Tensor expected = reference_binary(op, a, b);
      const Tensor f = functional_binary(op, a, b);
      EXPECT_EQ(f.dtype(), DType::BFloat16);
      EXPECT_EQ(f.strides(), a.strides());
      if (onednn::bf16_supported()) {
        ASSERT_TRUE(out.defined()) << declined;
        EXPECT_TRUE(testing::all_close(out, expected, Tolerance::bf16()));
        EXPECT_TRUE(testing::all_close(f, expected, Tolerance::bf16()));
      } else {
        EXPECT_FALSE(out.defined());
        EXPECT_THAT(declined, HasSubstr("avx512_bf16"));
        EXPECT_TRUE(testing::all_close(f, expected, Tolerance::exact()));
      }
    }
  }
}

// functional::add and mul run refold's kernels for float32 where the CPU has AVX2 — the
// channel kernel for an NHWC tensor and one value per channel, the broadcast loop for the rest,
// large same-shape pairs too — and oneDNN's binary otherwise, and for bfloat16.
TEST_F(OnednnOps, FunctionalAddAndMulRunOnOnednnWhereRefoldsLoopsDecline) {
  Generator gen(23);
  const Tensor a = normal({1, 13, 4, 4}, 2.0, gen).contiguous(MemoryFormat::ChannelsLast);
  const Tensor b = normal({1, 13, 1, 1}, 2.0, gen);
  const Tensor large = normal({1, 64, 32, 32}, 2.0, gen);
  const std::uint64_t before = onednn::binary_stats().runs;
  DispatchLog log;
  functional::add(a, b);
  functional::mul(b, a);
  functional::add(a, a);
  functional::mul(a.contiguous(), b);
  functional::add(large, large.contiguous(MemoryFormat::ChannelsLast));
  const std::vector<std::string> ran = log.take();
  ASSERT_EQ(ran.size(), 5u);
  if (native::cpu_has_avx2_fma()) {
    EXPECT_EQ(onednn::binary_stats().runs, before);
    EXPECT_EQ(ran[0].rfind("add: native", 0), 0u) << ran[0];
    for (std::size_t k = 2; k < ran.size(); ++k)
      EXPECT_NE(ran[k].find(": native broadcast"), std::string::npos) << ran[k];
  } else {
    EXPECT_EQ(onednn::binary_stats().runs, before + 5);
  }
  if (onednn::bf16_supported()) {
    functional::add(large.to(DType::BFloat16), large.to(DType::BFloat16));
    EXPECT_EQ(log.take().at(0).rfind("add: onednn", 0), 0u);
  }
}

TEST_F(OnednnOps, BinaryPrimitivesAreCachedPerProblem) {
  onednn::clear_binary_cache();
  set_num_threads(1);
  Generator gen(29);
  const Tensor a = normal({2, 13, 3, 3}, 1.0, gen);
  const Tensor b = normal({2, 13, 3, 3}, 1.0, gen);
  onednn::binary(BinaryOp::Add, a, b);
  onednn::binary(BinaryOp::Add, b, a);                                         // same problem
  onednn::binary(BinaryOp::Mul, a, b);                                         // another op
  onednn::binary(BinaryOp::Add, a, b.contiguous(MemoryFormat::ChannelsLast));  // other strides
  const onednn::PrimitiveStats s = onednn::binary_stats();
  EXPECT_EQ(s.runs, 4u);
  EXPECT_EQ(s.primitive_hits, 1u);
  EXPECT_EQ(s.primitive_misses, 3u);
  EXPECT_EQ(s.primitives, 3u);
}

TEST_F(OnednnOps, BinaryRejectsWhatTheReferenceRejects) {
  const auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const Tensor x = zeros({2, 3});
  const std::vector<std::pair<Tensor, Tensor>> bad = {
      {Tensor{}, x},
      {x, Tensor{}},
      {zeros({2, 3}, DType::Int64), x},
      {x, zeros({2, 3}, DType::Int64)},
      {x, zeros({2, 3}, DType::BFloat16)},
      {x, zeros({4, 3})},
      {zeros({2, 13, 4, 4}), zeros({1, 19, 1, 1})},
  };
  for (BinaryOp op : {BinaryOp::Add, BinaryOp::Mul}) {
    for (std::size_t i = 0; i < bad.size(); ++i) {
      SCOPED_TRACE(fmt::format("{} case {}", onednn::binary_name(op), i));
      const Tensor& a = bad[i].first;  // not a structured binding: clang 14 cannot capture those
      const Tensor& b = bad[i].second;
      const std::string expected = message([&] { reference_binary(op, a, b); });
      EXPECT_NE(expected, "(no error)");
      std::string declined;
      EXPECT_EQ(message([&] { onednn::binary(op, a, b, &declined); }), expected);
      EXPECT_EQ(message([&] { functional_binary(op, a, b); }), expected);
    }
  }
}

// --- batch norm (inference)

struct BatchNormParams {
  Tensor mean, var, weight, bias;
};

BatchNormParams bn_params(std::int64_t channels, Generator& gen, DType dtype = DType::Float32) {
  BatchNormParams p;
  p.mean = normal({channels}, 1.0, gen).to(dtype);
  std::vector<float> var(static_cast<std::size_t>(channels));
  for (float& v : var) v = static_cast<float>(0.1 + std::abs(gen.normal()));
  p.var = from_values(var, {channels}).to(dtype);
  p.weight = normal({channels}, 1.0, gen).to(dtype);
  p.bias = normal({channels}, 1.0, gen).to(dtype);
  return p;
}

TEST_F(OnednnOps, BatchNormMatchesReferenceInTheInputsLayout) {
  Generator gen(31);
  const Tensor x13 = normal({2, 13, 5, 7}, 2.0, gen);
  const Tensor x19 = normal({1, 19, 4, 3}, 2.0, gen);
  const std::vector<Input> inputs = {
      {"nchw_13", x13},
      {"nhwc_13", x13.contiguous(MemoryFormat::ChannelsLast)},
      {"nhwc_19", x19.contiguous(MemoryFormat::ChannelsLast)},
      {"2d_19", normal({3, 19}, 2.0, gen)},
      {"3d_13", normal({2, 13, 6}, 2.0, gen)},
      {"5d_13", normal({1, 13, 2, 3, 2}, 2.0, gen)},
  };
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const Input& in : inputs) {
      const BatchNormParams p = bn_params(in.tensor.size(1), gen);
      for (bool affine : {true, false}) {
        SCOPED_TRACE(fmt::format("{} affine {} threads {}", in.name, affine, threads));
        const Tensor w = affine ? p.weight : Tensor{};
        const Tensor b = affine ? p.bias : Tensor{};
        const Tensor expected = reference::batch_norm(in.tensor, p.mean, p.var, w, b, 1e-3);
        std::string declined;
        const Tensor out = onednn::batch_norm(in.tensor, p.mean, p.var, w, b, 1e-3, &declined);
        ASSERT_TRUE(out.defined()) << declined;
        EXPECT_EQ(out.strides(), in.tensor.strides());
        EXPECT_TRUE(testing::all_close(out, expected, Tolerance::op_f32()));
        const Tensor f = functional::batch_norm(in.tensor, p.mean, p.var, w, b, 1e-3);
        EXPECT_EQ(f.strides(), in.tensor.strides());
        EXPECT_TRUE(testing::all_close(f, expected, Tolerance::op_f32()));
      }
    }
  }
}

TEST_F(OnednnOps, BatchNormDeclinesAndFunctionalFallsBack) {
  Generator gen(37);
  const BatchNormParams p = bn_params(13, gen);
  const Tensor base = normal({2, 13, 6, 8}, 2.0, gen);
  const Tensor strided = base.as_strided({2, 13, 6, 4}, {13 * 48, 48, 8, 2}, 0);
  const Tensor six_d = normal({1, 13, 2, 2, 2, 2}, 2.0, gen);
  for (const auto& [x, reason] : std::vector<std::pair<Tensor, std::string>>{
           {strided, "not dense"}, {six_d, "2 to 5"}, {empty({2, 13, 0}), "zero-sized"}}) {
    SCOPED_TRACE(reason);
    std::string declined;
    EXPECT_FALSE(onednn::batch_norm(x, p.mean, p.var, p.weight, p.bias, 1e-5, &declined).defined());
    EXPECT_THAT(declined, HasSubstr(reason));
    EXPECT_TRUE(testing::all_close(functional::batch_norm(x, p.mean, p.var, p.weight, p.bias),
                                   reference::batch_norm(x, p.mean, p.var, p.weight, p.bias),
                                   Tolerance::exact()));
  }
}

TEST_F(OnednnOps, BatchNormBfloat16RunsNativelyOrFallsBackToTheReference) {
  Generator gen(41);
  const BatchNormParams p = bn_params(19, gen, DType::BFloat16);
  const Tensor x =
      normal({2, 19, 3, 5}, 2.0, gen).to(DType::BFloat16).contiguous(MemoryFormat::ChannelsLast);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    std::string declined;
    const Tensor out = onednn::batch_norm(x, p.mean, p.var, p.weight, p.bias, 1e-5, &declined);
    const Tensor expected = reference::batch_norm(x, p.mean, p.var, p.weight, p.bias);
    const Tensor f = functional::batch_norm(x, p.mean, p.var, p.weight, p.bias);
    EXPECT_EQ(f.dtype(), DType::BFloat16);
    EXPECT_EQ(f.strides(), x.strides());
    if (onednn::bf16_supported()) {
      ASSERT_TRUE(out.defined()) << declined;
      EXPECT_TRUE(testing::all_close(out, expected, Tolerance::bf16()));
      EXPECT_TRUE(testing::all_close(f, expected, Tolerance::bf16()));
    } else {
      EXPECT_FALSE(out.defined());
      EXPECT_THAT(declined, HasSubstr("avx512_bf16"));
      EXPECT_TRUE(testing::all_close(f, expected, Tolerance::exact()));
    }
  }
}

TEST_F(OnednnOps, FunctionalBatchNormRunsOnOnednnForFloat32AndCaches) {
  onednn::clear_batch_norm_cache();
  Generator gen(43);
  const BatchNormParams p = bn_params(13, gen);
  const Tensor x = normal({1, 13, 4, 4}, 2.0, gen).contiguous(MemoryFormat::ChannelsLast);
  functional::batch_norm(x, p.mean, p.var, p.weight, p.bias);
  // New statistics, same problem: the primitive is reused and the new values are used.
  const BatchNormParams q = bn_params(13, gen);
  const Tensor y = functional::batch_norm(x, q.mean, q.var, q.weight, q.bias);
  EXPECT_TRUE(testing::all_close(y, reference::batch_norm(x, q.mean, q.var, q.weight, q.bias),
                                 Tolerance::op_f32()));
  const onednn::PrimitiveStats s = onednn::batch_norm_stats();
  EXPECT_EQ(s.runs, 2u);
  EXPECT_EQ(s.primitive_misses, 1u);
  EXPECT_EQ(s.primitive_hits, 1u);
  EXPECT_EQ(s.primitives, 1u);
}

TEST_F(OnednnOps, BatchNormRejectsWhatTheReferenceRejects) {
  const auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  Generator gen(47);
  const BatchNormParams p = bn_params(3, gen);
  const Tensor x = normal({2, 3, 4, 4}, 1.0, gen);
  const Tensor negative_var = from_values(std::vector<float>{1.0f, -0.5f, 1.0f}, {3});
  const Tensor zero_var = zeros({3});
  struct Bad {
    Tensor input, mean, var, weight, bias;
    double eps;
  };
  const std::vector<Bad> bad = {
      {Tensor{}, p.mean, p.var, p.weight, p.bias, 1e-5},
      {zeros({2, 3}, DType::Int64), p.mean, p.var, p.weight, p.bias, 1e-5},
      {zeros({3}), p.mean, p.var, p.weight, p.bias, 1e-5},
      {x, p.mean, p.var, p.weight, p.bias, -1.0},
      {x, p.mean, p.var, p.weight, p.bias, std::nan("")},
      {x, Tensor{}, p.var, p.weight, p.bias, 1e-5},
      {x, p.mean, zeros({4}), p.weight, p.bias, 1e-5},
      {x, p.mean, p.var, p.weight.to(DType::BFloat16), p.bias, 1e-5},
      {x, p.mean, p.var, p.weight, zeros({3}, DType::Int64), 1e-5},
      {x, p.mean, negative_var, p.weight, p.bias, 1e-5},
      {x, p.mean, zero_var, p.weight, p.bias, 0.0},
  };
  for (std::size_t i = 0; i < bad.size(); ++i) {
    SCOPED_TRACE(fmt::format("case {}", i));
    const Bad& c = bad[i];
    const std::string expected =
        message([&] { reference::batch_norm(c.input, c.mean, c.var, c.weight, c.bias, c.eps); });
    EXPECT_NE(expected, "(no error)");
    std::string declined;
    EXPECT_EQ(message([&] {
                onednn::batch_norm(c.input, c.mean, c.var, c.weight, c.bias, c.eps, &declined);
              }),
              expected);
    EXPECT_EQ(
        message([&] { functional::batch_norm(c.input, c.mean, c.var, c.weight, c.bias, c.eps); }),
        expected);
  }
  EXPECT_THAT(message([&] { onednn::batch_norm(x, p.mean, negative_var, p.weight, p.bias, 1e-5); }),
              HasSubstr("batch_norm: running_var[1] = -0.5 is negative"));
}

// --- max / avg pooling

struct PoolCase {
  std::string name;
  Size2d kernel = 3;
  std::optional<Size2d> stride = Size2d{2};
  Size2d padding = 1;
  Size2d dilation = 1;  // max only
  bool ceil_mode = false;
};

std::vector<PoolCase> pool_cases() {
  return {
      {"k3_s2_p1"},
      {"k2_default_stride", 2, std::nullopt, 0},
      {"k3_s2_p1_ceil", 3, Size2d{2}, 1, 1, true},
      {"k2_s2_ceil", 2, Size2d{2}, 0, 1, true},
      {"asymmetric", Size2d{3, 2}, Size2d{1, 2}, Size2d{1, 0}},
      {"dilated", 3, Size2d{1}, 1, 2},
      {"dilated_ceil", 3, Size2d{2}, 1, Size2d{2, 1}, true},
  };
}

// 9×7 planes (odd, so ceil_mode adds a window), 13 and 19 channels, both formats and 3-d.
std::vector<Input> pool_inputs() {
  Generator gen(53);
  const Tensor x13 = normal({2, 13, 9, 7}, 2.0, gen);
  const Tensor x19 = normal({1, 19, 7, 9}, 2.0, gen);
  return {
      {"nchw_13", x13},
      {"nhwc_13", x13.contiguous(MemoryFormat::ChannelsLast)},
      {"nhwc_19", x19.contiguous(MemoryFormat::ChannelsLast)},
      {"chw_19", normal({19, 9, 7}, 2.0, gen)},
  };
}

TEST_F(OnednnOps, MaxPoolMatchesReferenceInTheReferencesLayout) {
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const Input& in : pool_inputs()) {
      for (const PoolCase& c : pool_cases()) {
        SCOPED_TRACE(fmt::format("{} {} threads {}", in.name, c.name, threads));
        const MaxPool2dOptions o{c.kernel, c.stride, c.padding, c.dilation, c.ceil_mode};
        const Tensor expected = reference::max_pool2d(in.tensor, o);
        std::string declined;
        const Tensor out = onednn::max_pool2d(in.tensor, o, &declined);
        ASSERT_TRUE(out.defined()) << declined;
        EXPECT_EQ(out.sizes(), expected.sizes());
        EXPECT_EQ(out.strides(), expected.strides());
        // A max picks an input value: exact.
        EXPECT_TRUE(testing::all_close(out, expected, Tolerance::exact()));
        const Tensor f = functional::max_pool2d(in.tensor, o);
        EXPECT_EQ(f.strides(), expected.strides());
        EXPECT_TRUE(testing::all_close(f, expected, Tolerance::exact()));
      }
    }
  }
}

TEST_F(OnednnOps, AvgPoolMatchesReferenceOrDeclinesTheOverhangingDivisor) {
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const Input& in : pool_inputs()) {
      for (const PoolCase& c : pool_cases()) {
        if (c.dilation != Size2d{1}) continue;
        for (bool include_pad : {true, false}) {
          SCOPED_TRACE(fmt::format("{} {} include_pad {} threads {}", in.name, c.name, include_pad,
                                   threads));
          AvgPool2dOptions o;
          o.kernel_size = c.kernel;
          o.stride = c.stride;
          o.padding = c.padding;
          o.ceil_mode = c.ceil_mode;
          o.count_include_pad = include_pad;
          const Tensor expected = reference::avg_pool2d(in.tensor, o);
          std::string declined;
          const Tensor out = onednn::avg_pool2d(in.tensor, o, &declined);
          if (include_pad && c.name == "k2_s2_ceil") {
            // ceil_mode adds a last window over the odd row/column: on 9 rows it starts at 8 and
            // covers [8, 10), past H + pad = 9. (k3_s2_p1_ceil adds no window on 9×7 or 7×9:
            // (9 + 2 − 3) / 2 and (7 + 2 − 3) / 2 are exact, so it runs on oneDNN.)
            EXPECT_FALSE(out.defined());
            EXPECT_THAT(declined, HasSubstr("ceil_mode"));
          } else {
            ASSERT_TRUE(out.defined()) << declined;
            EXPECT_EQ(out.strides(), expected.strides());
            EXPECT_TRUE(testing::all_close(out, expected, Tolerance::op_f32()));
          }
          const Tensor f = functional::avg_pool2d(in.tensor, o);
          EXPECT_EQ(f.strides(), expected.strides());
          EXPECT_TRUE(testing::all_close(f, expected, Tolerance::op_f32()));
        }
      }
    }
  }
}

TEST_F(OnednnOps, PoolingDeclinesAndFunctionalFallsBack) {
  Generator gen(59);
  const Tensor base = normal({2, 13, 8, 12}, 2.0, gen);
  const Tensor strided = base.as_strided({2, 13, 8, 6}, {13 * 96, 96, 12, 2}, 0);
  MaxPool2dOptions m;
  m.kernel_size = 2;
  std::string declined;
  EXPECT_FALSE(onednn::max_pool2d(strided, m, &declined).defined());
  EXPECT_THAT(declined, HasSubstr("not contiguous"));
  EXPECT_TRUE(testing::all_close(functional::max_pool2d(strided, m),
                                 reference::max_pool2d(strided, m), Tolerance::exact()));
  AvgPool2dOptions a;
  a.kernel_size = 2;
  a.divisor_override = 3;
  EXPECT_FALSE(onednn::avg_pool2d(base, a, &declined).defined());
  EXPECT_THAT(declined, HasSubstr("divisor_override"));
  EXPECT_TRUE(testing::all_close(functional::avg_pool2d(base, a), reference::avg_pool2d(base, a),
                                 Tolerance::exact()));
  EXPECT_FALSE(onednn::max_pool2d(empty({0, 13, 4, 4}), m, &declined).defined());
  EXPECT_THAT(declined, HasSubstr("zero-sized"));
  EXPECT_EQ(functional::max_pool2d(empty({0, 13, 4, 4}), m).sizes(), (Shape{0, 13, 2, 2}));
}

TEST_F(OnednnOps, PoolingBfloat16RunsNativelyOrFallsBackToTheReference) {
  Generator gen(61);
  const Tensor x =
      normal({2, 19, 7, 9}, 2.0, gen).to(DType::BFloat16).contiguous(MemoryFormat::ChannelsLast);
  MaxPool2dOptions m;
  m.kernel_size = 3;
  m.stride = Size2d{2};
  m.padding = 1;
  AvgPool2dOptions a;
  a.kernel_size = 3;
  a.stride = Size2d{2};
  a.padding = 1;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    std::string max_declined, avg_declined;
    const Tensor max_out = onednn::max_pool2d(x, m, &max_declined);
    const Tensor avg_out = onednn::avg_pool2d(x, a, &avg_declined);
    const Tensor max_f = functional::max_pool2d(x, m);
    const Tensor avg_f = functional::avg_pool2d(x, a);
    EXPECT_EQ(max_f.dtype(), DType::BFloat16);
    EXPECT_EQ(avg_f.strides(), reference::avg_pool2d(x, a).strides());
    if (onednn::bf16_supported()) {
      ASSERT_TRUE(max_out.defined()) << max_declined;
      EXPECT_TRUE(testing::all_close(max_f, reference::max_pool2d(x, m), Tolerance::exact()));
      EXPECT_TRUE(testing::all_close(avg_f, reference::avg_pool2d(x, a), Tolerance::bf16()));
    } else {
      EXPECT_FALSE(max_out.defined());
      EXPECT_FALSE(avg_out.defined());
      EXPECT_THAT(max_declined, HasSubstr("avx512_bf16"));
      EXPECT_THAT(avg_declined, HasSubstr("avx512_bf16"));
      EXPECT_TRUE(testing::all_close(max_f, reference::max_pool2d(x, m), Tolerance::exact()));
      EXPECT_TRUE(testing::all_close(avg_f, reference::avg_pool2d(x, a), Tolerance::exact()));
    }
  }
}

TEST_F(OnednnOps, FunctionalPoolsRunOnOnednnForFloat32AndCache) {
  onednn::clear_pooling_cache();
  Generator gen(67);
  const Tensor x = normal({1, 13, 6, 6}, 2.0, gen).contiguous(MemoryFormat::ChannelsLast);
  MaxPool2dOptions m;
  m.kernel_size = 2;
  AvgPool2dOptions a;
  a.kernel_size = 2;
  functional::max_pool2d(x, m);
  functional::max_pool2d(normal({1, 13, 6, 6}, 2.0, gen).contiguous(MemoryFormat::ChannelsLast), m);
  functional::avg_pool2d(x, a);
  const onednn::PrimitiveStats s = onednn::pooling_stats();
  EXPECT_EQ(s.runs, 3u);
  EXPECT_EQ(s.primitive_hits, 1u);
  EXPECT_EQ(s.primitive_misses, 2u);
  EXPECT_EQ(s.primitives, 2u);
}

TEST_F(OnednnOps, PoolingRejectsWhatTheReferenceRejects) {
  const auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const Tensor x = zeros({1, 3, 4, 4});
  const auto max_opts = [](Size2d k, std::optional<Size2d> s, Size2d p, Size2d d) {
    MaxPool2dOptions o;
    o.kernel_size = k;
    o.stride = s;
    o.padding = p;
    o.dilation = d;
    return o;
  };
  const std::vector<std::pair<Tensor, MaxPool2dOptions>> bad_max = {
      {Tensor{}, max_opts(2, std::nullopt, 0, 1)},
      {zeros({1, 3, 4, 4}, DType::Int64), max_opts(2, std::nullopt, 0, 1)},
      {zeros({4, 4}), max_opts(2, std::nullopt, 0, 1)},
      {zeros({1, 0, 4, 4}), max_opts(2, std::nullopt, 0, 1)},
      {x, max_opts(0, std::nullopt, 0, 1)},
      {x, max_opts(2, Size2d{0}, 0, 1)},
      {x, max_opts(2, std::nullopt, 2, 1)},
      {x, max_opts(2, std::nullopt, 0, 0)},
      {x, max_opts(5, std::nullopt, 0, 1)},
  };
  for (std::size_t i = 0; i < bad_max.size(); ++i) {
    SCOPED_TRACE(fmt::format("max case {}", i));
    const Tensor& in = bad_max[i].first;  // clang 14 cannot capture structured bindings
    const MaxPool2dOptions& o = bad_max[i].second;
    const std::string expected = message([&] { reference::max_pool2d(in, o); });
    EXPECT_NE(expected, "(no error)");
    std::string declined;
    EXPECT_EQ(message([&] { onednn::max_pool2d(in, o, &declined); }), expected);
    EXPECT_EQ(message([&] { functional::max_pool2d(in, o); }), expected);
  }
  AvgPool2dOptions a;
  a.kernel_size = 2;
  a.divisor_override = 0;
  AvgPool2dOptions too_big;
  too_big.kernel_size = 5;
  too_big.divisor_override = 2;  // valid, and still the window is checked: output size <= 0
  for (const AvgPool2dOptions& o : {a, too_big}) {
    const std::string expected = message([&] { reference::avg_pool2d(x, o); });
    EXPECT_NE(expected, "(no error)");
    std::string declined;
    EXPECT_EQ(message([&] { onednn::avg_pool2d(x, o, &declined); }), expected);
    EXPECT_EQ(message([&] { functional::avg_pool2d(x, o); }), expected);
  }
}

// --- NaN: where oneDNN differs from the reference (documented in eltwise.h and pooling.h).
// These pin today's behaviour: if oneDNN (or the dispatch) starts propagating NaN, they fail and
// the documentation must change with them.

Tensor with_nans() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  return from_values(std::vector<float>{nan, 1.0f, -1.0f, nan}, {1, 1, 2, 2});
}

TEST_F(OnednnOps, EltwiseNaN) {
  const Tensor x = with_nans();
  for (const Activation& a : activations()) {
    SCOPED_TRACE(onednn::eltwise_name(a.op));
    const std::vector<float> out = onednn::eltwise(a.op, x, a.negative_slope).to_vector();
    const std::vector<float> ref = a.reference(x).to_vector();
    EXPECT_TRUE(std::isnan(ref[0]) && std::isnan(ref[3]));  // the reference propagates
    const bool max_based =
        a.op == EltwiseOp::ReLU || a.op == EltwiseOp::ReLU6 || a.op == EltwiseOp::HardSigmoid;
    EXPECT_EQ(std::isnan(out[0]), !max_based);
    EXPECT_EQ(std::isnan(out[3]), !max_based);
    // The finite elements agree either way.
    EXPECT_NEAR(out[1], ref[1], 1e-4 + 1e-4 * std::abs(ref[1]));
    EXPECT_NEAR(out[2], ref[2], 1e-4 + 1e-4 * std::abs(ref[2]));
  }
  // add/mul propagate.
  EXPECT_TRUE(std::isnan(onednn::binary(BinaryOp::Add, x, x).to_vector()[0]));
  EXPECT_TRUE(std::isnan(onednn::binary(BinaryOp::Mul, x, x).to_vector()[3]));
}

TEST_F(OnednnOps, PoolingNaN) {
  const Tensor x = with_nans();
  MaxPool2dOptions m;
  m.kernel_size = 2;
  EXPECT_TRUE(std::isnan(reference::max_pool2d(x, m).to_vector()[0]));
  EXPECT_EQ(onednn::max_pool2d(x, m).to_vector()[0], 1.0f);
  AvgPool2dOptions a;
  a.kernel_size = 2;
  EXPECT_TRUE(std::isnan(onednn::avg_pool2d(x, a).to_vector()[0]));
}

}  // namespace
}  // namespace refold
