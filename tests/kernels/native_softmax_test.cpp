// native::softmax (src/kernels/native/softmax.cpp) against the reference: Softmax and
// LogSoftmax along every axis (positive and negative) of tensors of rank 1 to 4, contiguous and
// channels_last, lengths off the vector width and size-1 dims; the opset < 13 form over every
// axis; large and −inf inputs; the vectorized exp against std::exp; an addend (softmax(x + c));
// the declines; and that Softmax/LogSoftmax nodes run it.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <limits>

#include "kernels/native/cpu.h"
#include "kernels/native/softmax.h"
#include "kernels/native/vector_math.h"
#include "kernels/reference/onnx_ops.h"
#include "kernels/verbose.h"
#include "onnx/ops_tensor_helpers.h"
#include "ops/softmax.h"
#include "refold/threads.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/layouts.h"
#include "testing/threads.h"

namespace refold::testing {
namespace {

using reference::SoftmaxKind;

class NativeSoftmax : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!native::cpu_has_avx2_fma()) GTEST_SKIP() << "needs AVX2 and FMA";
  }
};

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> all = {{13},         {3, 1000},      {5, 1},       {2, 9, 33},
                                         {2, 3, 5, 7}, {1, 16, 4, 37}, {1, 7, 1, 9}, {2, 24, 3, 3}};
  return all;
}

TEST_F(NativeSoftmax, EveryAxisMatchesTheReference) {
  Generator gen(13);
  for (const Shape& sizes : shapes()) {
    const Tensor x = uniform(sizes, 8.0, gen);
    const auto rank = static_cast<std::int64_t>(sizes.size());
    std::vector<MemoryFormat> formats = {MemoryFormat::Contiguous};
    if (rank == 4) formats.push_back(MemoryFormat::ChannelsLast);
    for (const MemoryFormat format : formats) {
      const Tensor input = laid_out(x, format);
      for (std::int64_t axis = -rank; axis < rank; ++axis) {
        for (const SoftmaxKind kind : {SoftmaxKind::Softmax, SoftmaxKind::LogSoftmax}) {
          SCOPED_TRACE(fmt::format("[{}] {} axis {} {}", fmt::join(sizes, ", "),
                                   memory_format_name(format), axis,
                                   kind == SoftmaxKind::Softmax ? "Softmax" : "LogSoftmax"));
          std::string declined;
          const Tensor y = native::softmax(input, {}, axis, kind, false, &declined);
          ASSERT_TRUE(y.defined()) << declined;
          const Tensor expected = reference::softmax(input, axis, kind);
          EXPECT_EQ(y.strides(), expected.strides());
          EXPECT_TRUE(all_close(y, expected, Tolerance::op_f32()));
        }
      }
    }
  }
}

TEST_F(NativeSoftmax, TheOpset1FormMatchesTheReference) {
  Generator gen(17);
  for (const Shape& sizes : shapes()) {
    const Tensor x = uniform(sizes, 8.0, gen);
    const auto rank = static_cast<std::int64_t>(sizes.size());
    for (std::int64_t axis = -rank; axis <= rank; ++axis) {
      for (const SoftmaxKind kind : {SoftmaxKind::Softmax, SoftmaxKind::LogSoftmax}) {
        SCOPED_TRACE(fmt::format("[{}] axis {}", fmt::join(sizes, ", "), axis));
        const Tensor y = native::softmax(x, {}, axis, kind, true, nullptr);
        EXPECT_TRUE(
            all_close(y, reference::softmax_coerced_2d(x, axis, kind), Tolerance::op_f32()));
      }
    }
  }
}

// Tensors past kernels/native/row_threads.h's threshold run on 2 threads: rows, chunks of
// columns of a strided axis, and slabs of fewer columns than a vector, transposed into rows.
TEST_F(NativeSoftmax, LargeTensorsOnTwoThreads) {
  const ThreadCountScope scope(2);
  Generator gen(43);
  for (const auto& [sizes, axis] : std::vector<std::pair<Shape, std::int64_t>>{
           {{1, 16, 4, 1100}, 1}, {{80, 1000}, 1}, {{2, 30, 40, 41}, -1}, {{64, 300, 4}, 1}}) {
    const Tensor x = uniform(sizes, 6.0, gen);
    for (const SoftmaxKind kind : {SoftmaxKind::Softmax, SoftmaxKind::LogSoftmax}) {
      const Tensor y = native::softmax(x, {}, axis, kind, false, nullptr);
      EXPECT_TRUE(all_close(y, reference::softmax(x, axis, kind), Tolerance::op_f32()))
          << fmt::format("[{}] axis {}", fmt::join(sizes, ", "), axis);
    }
  }
}

// Inputs of 1e4 (e^x overflows without the max subtracted), −inf (e^−inf = 0), and a row that
// is all −inf (NaN, as in the reference).
TEST_F(NativeSoftmax, ExtremeInputs) {
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x = values({1e4f, 1e4f - 1, -inf, 3,    2,    -inf, 0,    1,    2,    -1e4f,  //
                           -inf, -inf,     -inf, -inf, -inf, -inf, -inf, -inf, -inf, -inf},
                          {2, 10});
  for (const std::int64_t axis : {0, 1}) {
    for (const SoftmaxKind kind : {SoftmaxKind::Softmax, SoftmaxKind::LogSoftmax}) {
      const Tensor y = native::softmax(x, {}, axis, kind, false, nullptr);
      EXPECT_TRUE(all_close(y, reference::softmax(x, axis, kind), Tolerance::op_f32()))
          << "axis " << axis;
    }
  }
}

REFOLD_TARGET_AVX2 void vector_exp(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, native::exp(_mm256_loadu_ps(x + i)));
}

// Within 2 ulp of std::exp over [−87.3, 88.3], in steps that hit every part of the reduction.
TEST_F(NativeSoftmax, VectorExpIsWithinTwoUlp) {
  std::vector<float> x;
  for (float v = -87.3f; v < 88.3f; v += 0.0137f) x.push_back(v);
  for (const float v : {0.0f, -0.0f, 1e-8f, -1e-8f, 0.5f, -0.34657359f, 0.34657359f})
    x.push_back(v);
  x.resize((x.size() + 7) / 8 * 8, 0.0f);
  std::vector<float> y(x.size());
  vector_exp(x.data(), y.data(), x.size());
  float worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const auto expected = static_cast<float>(std::exp(static_cast<double>(x[i])));
    const float ulp = std::nextafter(expected, std::numeric_limits<float>::infinity()) - expected;
    worst = std::max(worst, std::abs(y[i] - expected) / ulp);
  }
  EXPECT_LE(worst, 2.0f);
  float nan_out[8];
  const float nan_in[8] = {NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
  vector_exp(nan_in, nan_out, 8);
  EXPECT_TRUE(std::isnan(nan_out[0]));
}

TEST_F(NativeSoftmax, DeclinesWhatItDoesNotTake) {
  Generator gen(2);
  const Tensor x = uniform({2, 3, 4, 5}, 1.0, gen);
  const auto reason = [](const Tensor& input, SoftmaxKind kind) {
    std::string declined;
    EXPECT_FALSE(native::softmax(input, {}, 1, kind, false, &declined).defined());
    return declined;
  };
  EXPECT_EQ(reason(x, SoftmaxKind::Hardmax), "no native Hardmax");
  EXPECT_EQ(reason(x.to(DType::BFloat16), SoftmaxKind::Softmax), "X is not float32");
  EXPECT_EQ(reason(with_storage_order(x, {3, 2, 1, 0}), SoftmaxKind::Softmax),
            "X is neither contiguous nor 4-d channels_last");
  EXPECT_EQ(reason(every_other_element(x), SoftmaxKind::LogSoftmax),
            "X is neither contiguous nor 4-d channels_last");
}

// softmax(x + c) along the last axis, c read per row of X: attention's position bias
// [heads, N, N] over windows, a row [N], a bias over a middle dim, a full-size addend; rows in
// blocks of 32 with a partial last one, 1 and 2 threads; against the reference's sum and softmax.
TEST_F(NativeSoftmax, AnAddendIsAddedRowByRow) {
  const RestoreNumThreads restore_threads;
  Generator gen(21);
  const Shape x_sizes = {2, 3, 17, 49};
  for (const Shape& c_sizes :
       std::vector<Shape>{{3, 17, 49}, {49}, {2, 1, 17, 49}, {2, 3, 17, 49}, {1, 3, 1, 49}}) {
    for (const int threads : {1, 2}) {
      for (const SoftmaxKind kind : {SoftmaxKind::Softmax, SoftmaxKind::LogSoftmax}) {
        SCOPED_TRACE(fmt::format("[{}] + [{}], {} threads, {}", fmt::join(x_sizes, ", "),
                                 fmt::join(c_sizes, ", "), threads,
                                 kind == SoftmaxKind::Softmax ? "Softmax" : "LogSoftmax"));
        set_num_threads(threads);
        const Tensor x = uniform(x_sizes, 6.0, gen), c = uniform(c_sizes, 6.0, gen);
        std::string declined;
        const Tensor y = native::softmax(x, c, -1, kind, false, &declined);
        ASSERT_TRUE(y.defined()) << declined;
        const Tensor expected =
            reference::softmax(reference::arith(x, c, reference::ArithOp::Add), -1, kind);
        EXPECT_TRUE(all_close(y, expected, Tolerance::op_f32()));
      }
    }
  }
}

// An addend the row kernel does not take is declined; the Softmax op then adds it first, as Add
// broadcasts it (one more dispatch), and runs the softmax of the sum.
TEST_F(NativeSoftmax, AnAddendItDoesNotTakeIsAddedFirst) {
  Generator gen(22);
  const Tensor x = uniform({2, 3, 4, 5}, 3.0, gen);
  const auto reason = [&](const Tensor& input, const Tensor& c, std::int64_t axis) {
    std::string declined;
    EXPECT_FALSE(native::softmax(input, c, axis, SoftmaxKind::Softmax, false, &declined).defined());
    return declined;
  };
  EXPECT_EQ(reason(x, uniform({4, 5}, 1.0, gen), 2),
            "an addend where the softmax axis is not X's innermost");
  EXPECT_EQ(reason(to_channels_last(x), uniform({4, 5}, 1.0, gen), -1),
            "an addend where the softmax axis is not X's innermost");
  EXPECT_EQ(reason(x, uniform({5, 4}, 1.0, gen).permute({1, 0}), -1),
            "an addend that is not row-major float32");
  EXPECT_EQ(reason(x, uniform({7, 2, 3, 4, 5}, 1.0, gen), -1), "an addend of more dims than X");
  EXPECT_EQ(reason(x, uniform({3, 3, 5}, 1.0, gen), -1), "an addend that does not broadcast to X");
  EXPECT_EQ(reason(x, uniform({4, 1}, 1.0, gen), -1), "an addend broadcast along the softmax axis");

  ops::Softmax op("Softmax", SoftmaxKind::Softmax, -1, false);
  for (const auto& [c, fused] :
       std::vector<std::pair<Tensor, bool>>{{uniform({3, 4, 5}, 1.0, gen), true},
                                            {uniform({4, 1}, 1.0, gen), false},
                                            {uniform({7, 2, 3, 4, 5}, 1.0, gen), false}}) {
    SCOPED_TRACE(fmt::format("addend [{}]", fmt::join(c.sizes(), ", ")));
    DispatchLog log;
    const Tensor y = op.run({x, c})[0];
    const std::vector<std::string> dispatched = log.take();
    EXPECT_EQ(dispatched.size() == 1, fused) << fmt::format("{}", fmt::join(dispatched, "; "));
    EXPECT_EQ(dispatched.back(), "Softmax: native");
    const Tensor expected = reference::softmax(reference::arith(x, c, reference::ArithOp::Add), -1,
                                               SoftmaxKind::Softmax);
    EXPECT_EQ(y.sizes(), expected.sizes());
    EXPECT_TRUE(all_close(y, expected, Tolerance::op_f32()));
  }
}

// Softmax and LogSoftmax nodes dispatch to it: the DFL head's strided axis of an NCHW tensor, an
// NHWC channel softmax, and the opset 11 form.
TEST_F(NativeSoftmax, NodesRunIt) {
  Generator gen(4);
  const Tensor x = uniform({1, 16, 4, 21}, 3.0, gen);
  OpCase softmax("Softmax", {"x"});
  softmax.opset(13).integer("axis", 1);
  OpCase log_softmax("LogSoftmax", {"x"});
  log_softmax.opset(13).integer("axis", 1);
  OpCase coerced("Softmax", {"x"});
  coerced.opset(11).integer("axis", 2);
  for (const auto& [name, c, input] : {std::tuple{"Softmax", &softmax, x},
                                       std::tuple{"LogSoftmax", &log_softmax, to_channels_last(x)},
                                       std::tuple{"Softmax", &coerced, x}}) {
    DispatchLog log;
    c->run({input});
    EXPECT_EQ(log.take(), (std::vector<std::string>{std::string(name) + ": native"}));
  }
}

}  // namespace
}  // namespace refold::testing
