// What the tests of refold's own conv kernels (kernels/native: Winograd, direct) share: a conv
// case, its operands at unit scale, and the check of a kernel against the reference conv2d
// followed by the unfused post-ops, with 1 and 2 threads and each vector ISA the CPU has
// (cpu.h: AVX2, and AVX-512 where it runs at full rate).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/conv2d_call.h"
#include "kernels/native/cpu.h"
#include "kernels/post_ops.h"
#include "refold/conv_algorithm.h"
#include "refold/reference.h"
#include "refold/threads.h"
#include "testing/compare.h"
#include "testing/post_chains.h"
#include "testing/threads.h"

namespace refold::testing::native_conv {

inline constexpr auto NHWC = MemoryFormat::ChannelsLast;

// The vector ISAs refold's kernels can run with on this CPU: AVX2, and AVX-512 where
// vector_isa() can be it.
inline std::vector<native::VectorIsa> runnable_isas() {
  std::vector<native::VectorIsa> isas = {native::VectorIsa::Avx2};
  if (native::cpu_has_full_rate_avx512()) isas.push_back(native::VectorIsa::Avx512);
  return isas;
}

// Caps vector_isa() at `isa` for its lifetime.
class ScopedVectorIsa {
 public:
  explicit ScopedVectorIsa(native::VectorIsa isa) : saved_(native::max_vector_isa()) {
    native::set_max_vector_isa(isa);
  }
  ~ScopedVectorIsa() { native::set_max_vector_isa(saved_); }
  ScopedVectorIsa(const ScopedVectorIsa&) = delete;
  ScopedVectorIsa& operator=(const ScopedVectorIsa&) = delete;

 private:
  native::VectorIsa saved_;
};

// Sets the conv algorithm for its lifetime.
class ScopedConvAlgorithm {
 public:
  explicit ScopedConvAlgorithm(ConvAlgorithm algorithm) : saved_(get_conv_algorithm()) {
    set_conv_algorithm(algorithm);
  }
  ~ScopedConvAlgorithm() { set_conv_algorithm(saved_); }
  ScopedConvAlgorithm(const ScopedConvAlgorithm&) = delete;
  ScopedConvAlgorithm& operator=(const ScopedConvAlgorithm&) = delete;

 private:
  ConvAlgorithm saved_;
};

// Skips on CPUs without AVX2/FMA; runs with vector_isa() capped at AVX2, so that a test's
// expected declines and dispatch are those of VectorIsa::Avx2's rules on every CPU (a test of
// the AVX-512 rules or form sets its own cap); restores the settings a test may change.
class NativeConvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!native::cpu_has_avx2_fma()) GTEST_SKIP() << "this CPU has no AVX2/FMA";
    algorithm_ = get_conv_algorithm();
  }
  void TearDown() override { set_conv_algorithm(algorithm_); }

 private:
  testing::RestoreNumThreads restore_threads_;
  ScopedVectorIsa avx2_{native::VectorIsa::Avx2};
  ConvAlgorithm algorithm_ = ConvAlgorithm::Auto;
};

struct Case {
  std::string name = "case";
  std::int64_t n = 1, c_in = 40, c_out = 40, h = 8, w = 8, kh = 3, kw = 3;
  Padding2d padding = 1;
  Size2d stride = 1;
  Size2d dilation = 1;
  std::int64_t groups = 1;
  bool bias = true;
  Activation activation = Activation::None;
  bool residual = false;

  Conv2dOptions options() const {
    Conv2dOptions o;
    o.padding = padding;
    o.stride = stride;
    o.dilation = dilation;
    o.groups = groups;
    return o;
  }
};

struct Operands {
  Tensor input, weight, bias;
};

// t *= factor, in place (t contiguous); a write, so it bumps t's version.
inline void scale(Tensor& t, float factor) {
  float* p = t.data<float>();
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] *= factor;
}

// Unit-variance input; weights scaled by 1/sqrt(fan-in) keep outputs near unit scale, the range
// the fp32 tolerance is written for.
inline Operands make_operands(const Case& c, std::uint64_t seed = 7) {
  Generator gen(seed);
  Operands o;
  o.input = randn({c.n, c.c_in, c.h, c.w}, {}, gen).contiguous(NHWC);
  const std::int64_t group_ins = c.c_in / c.groups;
  o.weight = randn({c.c_out, group_ins, c.kh, c.kw}, {}, gen);
  scale(o.weight,
        static_cast<float>(1.0 / std::sqrt(static_cast<double>(group_ins * c.kh * c.kw))));
  if (c.bias) o.bias = randn({c.c_out}, {}, gen);
  return o;
}

inline PostOps post_ops_for(const Case& c, const Shape& out_sizes) {
  PostOps post;
  post.activation = c.activation;
  post.negative_slope = 0.1;
  if (c.residual) {
    Generator gen(99);
    post.residual = randn(out_sizes, {}, gen).contiguous(NHWC);
  }
  return post;
}

// A native kernel's signature (winograd_conv2d, direct_conv2d): a validated call.
using Kernel = Tensor (*)(const Conv2dCall& call, std::string* declined);

// Runs check(isa, threads) with the conv algorithm Native (the math is tested also where an
// ISA's rules would leave the case to oneDNN), for each runnable ISA and 1 and 2 threads.
template <typename Check>
void across_isas_and_threads(Check check) {
  const ScopedConvAlgorithm native(ConvAlgorithm::Native);
  for (native::VectorIsa isa : runnable_isas()) {
    const ScopedVectorIsa capped(isa);
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      check(isa, threads);
    }
  }
}

// kernel(case) == activation(reference conv2d + bias + residual) within the fp32 tolerance,
// channels_last, across_isas_and_threads.
inline void expect_matches_reference(const Kernel& kernel, const Case& c) {
  const Operands o = make_operands(c);
  const Tensor plain = reference::conv2d(o.input, o.weight, o.bias, c.options());
  const PostOps post = post_ops_for(c, plain.sizes());
  const Tensor expected = post.empty() ? plain : reference::apply_post_ops(plain, post);
  across_isas_and_threads([&](native::VectorIsa isa, int threads) {
    std::string declined;
    const Tensor y =
        kernel(validate_conv2d(o.input, o.weight, o.bias, c.options(), post), &declined);
    ASSERT_TRUE(y.defined()) << c.name << ": declined: " << declined;
    EXPECT_TRUE(y.is_contiguous(NHWC)) << c.name;
    EXPECT_TRUE(all_close(y, expected, Tolerance::op_f32()))
        << c.name << ", threads " << threads << ", " << native::vector_isa_name(isa);
  });
}

// Every fused activation, with and without the residual, on `base`.
inline void expect_every_epilogue_matches(const Kernel& kernel, Case base) {
  for (Activation a : {Activation::None, Activation::ReLU, Activation::ReLU6, Activation::LeakyReLU,
                       Activation::Sigmoid, Activation::SiLU, Activation::HardSwish,
                       Activation::HardSigmoid, Activation::GELU, Activation::GELUTanh}) {
    for (bool residual : {false, true}) {
      base.name = std::string(activation_name(a)) + (residual ? " + residual" : "");
      base.activation = a;
      base.residual = residual;
      expect_matches_reference(kernel, base);
    }
  }
}

// Every chain of testing::post_chain_cases (steps after the activation: Mul/Add per tensor and
// per channel, the residual after the activation) on `base`, as expect_matches_reference runs.
inline void expect_every_chain_matches(const Kernel& kernel, const Case& base) {
  const Operands o = make_operands(base);
  const Tensor plain = reference::conv2d(o.input, o.weight, o.bias, base.options());
  for (PostChainCase& k : post_chain_cases(plain.sizes())) {
    SCOPED_TRACE(k.name);
    const Tensor expected = reference::apply_post_ops(plain, k.post);
    if (k.post.residual.defined()) k.post.residual = k.post.residual.contiguous(NHWC);
    across_isas_and_threads([&](native::VectorIsa isa, int threads) {
      std::string declined;
      const Tensor y =
          kernel(validate_conv2d(o.input, o.weight, o.bias, base.options(), k.post), &declined);
      ASSERT_TRUE(y.defined()) << "declined: " << declined;
      EXPECT_TRUE(all_close(y, expected, Tolerance::op_f32()))
          << "threads " << threads << ", " << native::vector_isa_name(isa);
    });
  }
}

// PostOps::overwrite_residual: the result is written over the residual (the same tensor comes
// back) and still equals the reference, with the residual added before the activation (the
// head) and by a step after it, as expect_matches_reference runs.
inline void expect_overwrites_the_residual(const Kernel& kernel, Case c) {
  c.residual = true;
  c.activation = Activation::SiLU;
  const Operands o = make_operands(c);
  const Tensor plain = reference::conv2d(o.input, o.weight, o.bias, c.options());
  for (const bool in_step : {false, true}) {
    SCOPED_TRACE(in_step ? "residual in a step" : "residual in the head");
    PostOps post = post_ops_for(c, plain.sizes());
    if (in_step) post.then.push_back({.scale = {0.5f}, .add_residual = true});
    const Tensor expected = reference::apply_post_ops(plain, post);
    across_isas_and_threads([&](native::VectorIsa isa, int threads) {
      PostOps given = post;
      given.residual = post.residual.clone();
      given.overwrite_residual = true;
      std::string declined;
      const Tensor y =
          kernel(validate_conv2d(o.input, o.weight, o.bias, c.options(), given), &declined);
      ASSERT_TRUE(y.defined()) << "declined: " << declined;
      EXPECT_TRUE(y.is_same(given.residual));
      EXPECT_TRUE(all_close(y, expected, Tolerance::op_f32()))
          << "threads " << threads << ", " << native::vector_isa_name(isa);
    });
  }
}

}  // namespace refold::testing::native_conv
