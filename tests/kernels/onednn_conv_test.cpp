// oneDNN conv2d / conv_transpose2d against the reference kernels, over the matrix
// {NCHW, NHWC} × {1, 2 threads} × {f32, bf16} × shapes (odd channel counts 13/19, groups
// 1/2/depthwise, stride 2, dilation 2, asymmetric padding, 1×1 and 3×3, with and without bias)
// × post-ops (every activation, residual sum); plus the weight cache, declines, and the
// expected-failure table (the same messages as the reference).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "kernels/onednn/conv2d.h"
#include "kernels/onednn/conv_primitive.h"
#include "kernels/onednn/threads.h"
#include "kernels/post_ops.h"
#include "kernels/reference/conv_common.h"
#include "kernels/verbose.h"
#include "refold/error.h"
#include "refold/functional.h"
#include "refold/reference.h"
#include "refold/threads.h"
#include "testing/compare.h"
#include "testing/post_chains.h"
#include "testing/threads.h"

namespace refold {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::Tolerance;
constexpr auto NCHW = MemoryFormat::Contiguous;
constexpr auto NHWC = MemoryFormat::ChannelsLast;

// Restores the thread setting every test may change.
class OnednnConv : public ::testing::Test {
 private:
  testing::RestoreNumThreads restore_threads_;
};

// One conv (or transposed conv) problem. `padding` is used by conv2d, `tpadding` and
// `output_padding` by conv_transpose2d.
struct ConvCase {
  std::string name;
  bool transposed = false;
  std::int64_t n = 2, c_in = 13, c_out = 19, h = 9, w = 9, kh = 3, kw = 3;
  Size2d stride = 1;
  Padding2d padding = 1;
  Size2d tpadding = 0;
  Size2d output_padding = 0;
  Size2d dilation = 1;
  std::int64_t groups = 1;
  bool bias = true;
  Activation activation = Activation::None;
  bool residual = false;
};

// Normal values times `scale`, in logical order.
Tensor normal(const Shape& sizes, double scale, Generator& gen) {
  std::vector<float> v(static_cast<std::size_t>(empty(sizes).numel()));
  for (float& x : v) x = static_cast<float>(gen.normal() * scale);
  return from_values(v, sizes);
}

struct Operands {
  Tensor input, weight, bias, residual;
};

Operands make_operands(const ConvCase& c) {
  Generator gen(0xC0FFEE);
  Operands o;
  o.input = normal({c.n, c.c_in, c.h, c.w}, 1.0, gen);
  const Shape wsizes = c.transposed ? Shape{c.c_in, c.c_out / c.groups, c.kh, c.kw}
                                    : Shape{c.c_out, c.c_in / c.groups, c.kh, c.kw};
  // Weights scaled by 1/sqrt(fan-in) (Kaiming's rule) keep outputs near unit variance, the
  // range docs/testing.md's bf16 tolerance is written for.
  o.weight =
      normal(wsizes, 1.0 / std::sqrt(static_cast<double>(c.c_in / c.groups * c.kh * c.kw)), gen);
  if (c.bias) o.bias = normal({c.c_out}, 0.5, gen);
  return o;
}

Conv2dOptions conv_options(const ConvCase& c) {
  Conv2dOptions o;
  o.stride = c.stride;
  o.padding = c.padding;
  o.dilation = c.dilation;
  o.groups = c.groups;
  return o;
}

ConvTranspose2dOptions transpose_options(const ConvCase& c) {
  ConvTranspose2dOptions o;
  o.stride = c.stride;
  o.padding = c.tpadding;
  o.output_padding = c.output_padding;
  o.dilation = c.dilation;
  o.groups = c.groups;
  return o;
}

Tensor reference_conv(const ConvCase& c, const Tensor& x, const Tensor& w, const Tensor& b) {
  return c.transposed ? reference::conv_transpose2d(x, w, b, transpose_options(c))
                      : reference::conv2d(x, w, b, conv_options(c));
}

Tensor onednn_conv(const ConvCase& c, const Tensor& x, const Tensor& w, const Tensor& b,
                   const PostOps& post, std::string* declined) {
  return c.transposed ? onednn::conv_transpose2d(x, w, b, transpose_options(c), post, declined)
                      : onednn::conv2d(x, w, b, conv_options(c), post, declined);
}

// Runs `c` through oneDNN in every layout × threads × dtype and compares with the fp32
// reference conv followed by the reference post-ops.
void check_case(const ConvCase& c) {
  SCOPED_TRACE(c.name);
  Operands o = make_operands(c);
  const Tensor conv = reference_conv(c, o.input, o.weight, o.bias);
  Generator gen(0xADD);
  if (c.residual) o.residual = normal(conv.sizes(), 1.0, gen);  // the output's sizes
  PostOps post_f32;
  post_f32.activation = c.activation;
  post_f32.negative_slope = 0.1;
  post_f32.residual = o.residual;
  const Tensor expected = reference::apply_post_ops(conv, post_f32);

  for (MemoryFormat layout : {NCHW, NHWC}) {
    for (int threads : {1, 2}) {
      for (DType dtype : {DType::Float32, DType::BFloat16}) {
        SCOPED_TRACE(fmt::format("{}, {} threads, {}", memory_format_name(layout), threads,
                                 dtype_name(dtype)));
        set_num_threads(threads);
        const Tensor x = o.input.to(dtype).contiguous(layout);
        // Weights follow the activation's layout, as convert_conv2d_weight_memory_format makes
        // them; the packed weight must not depend on it.
        const Tensor w = o.weight.to(dtype).contiguous(layout);
        const Tensor b = o.bias.defined() ? o.bias.to(dtype) : Tensor{};
        PostOps post = post_f32;
        // The residual in the other layout than the output: its copy into dst must permute.
        if (c.residual)
          post.residual = o.residual.to(dtype).contiguous(layout == NCHW ? NHWC : NCHW);
        const std::vector<float> residual_before =
            c.residual ? post.residual.to_vector() : std::vector<float>{};
        std::string declined;
        const Tensor y = onednn_conv(c, x, w, b, post, &declined);
        // Summed (copied into dst) or a binary operand (1×1), the residual is only read.
        if (c.residual) {
          EXPECT_EQ(post.residual.to_vector(), residual_before);
        }
        if (dtype == DType::BFloat16 && !onednn::bf16_supported()) {
          // No avx512_bf16 here: the decline, with its reason, is what is tested.
          EXPECT_FALSE(y.defined());
          EXPECT_THAT(declined, HasSubstr("needs avx512_bf16"));
          continue;
        }
        ASSERT_TRUE(y.defined()) << declined;
        EXPECT_EQ(y.dtype(), dtype);
        // The conv's layout (PyTorch's rule) is `layout`, except for inputs whose strides
        // cannot say (a single channel, see Note [Ambiguous memory formats]).
        EXPECT_TRUE(y.is_contiguous(reference::detail::conv_output_format(x, w)))
            << y.description();
        if (c.c_in > 1) {
          EXPECT_TRUE(y.is_contiguous(layout)) << y.description();
        }
        // f32: the op tolerance. bf16: against the fp32 reference with the bf16 policy —
        // input, weight and residual are rounded to 8 significant bits (≈ 2^-9 relative each)
        // before oneDNN accumulates in f32, and the output is rounded once more.
        const Tolerance tol = dtype == DType::Float32 ? Tolerance::op_f32() : Tolerance::bf16();
        EXPECT_TRUE(testing::all_close(y, expected, tol));
      }
    }
  }
}

TEST_F(OnednnConv, ShapesMatchReference) {
  if (!onednn::bf16_supported())
    std::printf("note: this CPU has no avx512_bf16; bfloat16 is tested as declined only\n");
  const std::vector<ConvCase> cases = {
      {.name = "3x3 s1 p1 13->19"},
      {.name = "3x3 s2 p1 19->13 no bias",
       .c_in = 19,
       .c_out = 13,
       .h = 10,
       .w = 11,
       .stride = 2,
       .bias = false},
      {.name = "1x1 13->19", .kh = 1, .kw = 1, .padding = 0},
      {.name = "1x1 s2 no bias", .kh = 1, .kw = 1, .stride = 2, .padding = 0, .bias = false},
      {.name = "groups 2 26->38", .c_in = 26, .c_out = 38, .groups = 2},
      {.name = "depthwise 19", .c_in = 19, .c_out = 19, .groups = 19},
      {.name = "depthwise 19 s2 no bias",
       .c_in = 19,
       .c_out = 19,
       .stride = 2,
       .groups = 19,
       .bias = false},
      {.name = "depthwise multiplier 2 (13->26)", .c_in = 13, .c_out = 26, .groups = 13},
      {.name = "depthwise multiplier 3 s2 dilation 2 no bias",
       .c_in = 5,
       .c_out = 15,
       .h = 12,
       .w = 11,
       .stride = 2,
       .padding = 2,
       .dilation = 2,
       .groups = 5,
       .bias = false},
      {.name = "depthwise multiplier 8, 7x7",
       .c_in = 3,
       .c_out = 24,
       .kh = 7,
       .kw = 7,
       .padding = 3,
       .groups = 3},
      {.name = "depthwise multiplier 17 (grouped kernel)", .c_in = 2, .c_out = 34, .groups = 2},
      {.name = "dilation 2", .h = 11, .w = 10, .padding = 2, .dilation = 2},
      {.name = "asymmetric padding", .padding = Padding2d::asymmetric(0, 1, 2, 0)},
      {.name = "asymmetric padding s2", .stride = 2, .padding = Padding2d::asymmetric(1, 0, 0, 2)},
      {.name = "5x3 'same' dilation (2,1)",
       .kh = 5,
       .kw = 3,
       .padding = Padding2d::same(),
       .dilation = Size2d(2, 1)},
      {.name = "stride (2,1) valid", .stride = Size2d(2, 1), .padding = Padding2d::valid()},
      {.name = "batch 1, 1 channel", .n = 1, .c_in = 1, .c_out = 19},
  };
  for (const ConvCase& c : cases) check_case(c);
}

TEST_F(OnednnConv, PostOpsMatchReference) {
  for (Activation a : {Activation::None, Activation::ReLU, Activation::ReLU6, Activation::LeakyReLU,
                       Activation::Sigmoid, Activation::SiLU, Activation::HardSwish,
                       Activation::HardSigmoid, Activation::GELU, Activation::GELUTanh}) {
    for (bool residual : {false, true}) {
      if (a == Activation::None && !residual) continue;  // covered above
      const std::string what =
          fmt::format("{}{}", residual ? "sum+" : "", std::string(activation_name(a)));
      // Activations are steep around 0 and -3..3: keep the outputs there (unit variance).
      check_case({.name = "3x3 " + what, .activation = a, .residual = residual});
      // A 1×1 conv takes the residual as a binary_add operand, not as a sum (conv_primitive.cpp).
      check_case({.name = "1x1 " + what,
                  .kh = 1,
                  .kw = 1,
                  .padding = 0,
                  .activation = a,
                  .residual = residual});
      check_case({.name = "depthwise multiplier 2 " + what,
                  .c_in = 7,
                  .c_out = 14,
                  .groups = 7,
                  .activation = a,
                  .residual = residual});
      check_case({.name = "depthwise s2 " + what,
                  .c_in = 19,
                  .c_out = 19,
                  .stride = 2,
                  .groups = 19,
                  .activation = a,
                  .residual = residual});
    }
  }
}

// The residual before the activation: a sum post-op (dst starts as the residual) for a spatial
// kernel, a binary_add operand for a 1×1 one, where oneDNN's 1×1 kernels run it faster; a
// deconvolution keeps the sum; and the sum wherever dst is the residual itself. After the
// activation, the same (run_conv builds an operand instead where the kernel would be ref:any).
TEST(OnednnPostOpChain, TheResidualIsABinaryOperandOfA1x1Conv) {
  PostOps post;
  post.residual = zeros({1, 8, 4, 4});
  post.activation = Activation::ReLU;
  onednn::detail::ConvProblem p;
  p.src_dims = {1, 8, 4, 4};
  p.dst_dims = {1, 8, 4, 4};
  p.weight_dims = {8, 8, 1, 1};
  EXPECT_EQ(onednn::detail::post_op_chain_text(post, p), "binary_add+eltwise_relu");
  p.weight_dims = {8, 8, 3, 3};
  EXPECT_EQ(onednn::detail::post_op_chain_text(post, p), "sum+eltwise_relu");
  p.weight_dims = {8, 8, 1, 1};
  p.transposed = true;
  EXPECT_EQ(onednn::detail::post_op_chain_text(post, p), "sum+eltwise_relu");
  EXPECT_EQ(onednn::detail::post_op_chain_text(PostOps{}, p), "none");
  p.transposed = false;
  EXPECT_EQ(onednn::detail::post_op_chain_text(post, p, /*in_place=*/true), "sum+eltwise_relu");
  // After the activation, by the same rule.
  post.then = {PostStep{.add_residual = true}};
  EXPECT_EQ(onednn::detail::post_op_chain_text(post, p), "eltwise_relu+binary_add");
  EXPECT_EQ(onednn::detail::post_op_chain_text(post, p, /*in_place=*/true), "eltwise_relu+sum");
  p.weight_dims = {8, 8, 3, 3};
  EXPECT_EQ(onednn::detail::post_op_chain_text(post, p), "eltwise_relu+sum");
}

// PostOps::overwrite_residual: where the residual is dense in the output's layout, the result is
// written over it (1×1 and spatial kernels, both layouts) and equals the reference; a residual
// in another layout is left alone and the result is new memory; without the flag, the residual
// is never written. The same for a residual added after the activation (a step's, HRNet's
// relu(conv) + branch), which is a sum post-op where the kernel takes a sum after other
// post-ops (AVX-512's brgconv in NHWC) and else a binary operand, never oneDNN's reference.
TEST_F(OnednnConv, OverwritesAResidualItMayWhereItsLayoutIsTheOutputs) {
  for (const bool late : {false, true}) {
    for (const std::int64_t k : {1, 3}) {
      for (const MemoryFormat layout : {NCHW, NHWC}) {
        const ConvCase c{.name = fmt::format("{}x{} {}{}", k, k, memory_format_name(layout),
                                             late ? ", residual after the activation" : ""),
                         .kh = k,
                         .kw = k,
                         .padding = k / 2,
                         .activation = Activation::ReLU,
                         .residual = true};
        SCOPED_TRACE(c.name);
        const Operands o = make_operands(c);
        Generator gen(7);
        const Tensor residual = normal({c.n, c.c_out, c.h, c.w}, 1.0, gen);
        PostOps ref_post;
        ref_post.activation = c.activation;
        ref_post.residual = residual;
        if (late) ref_post.then = {PostStep{.add_residual = true}};
        const Tensor expected =
            reference::apply_post_ops(reference_conv(c, o.input, o.weight, o.bias), ref_post);
        const Tensor x = o.input.contiguous(layout);
        for (const MemoryFormat residual_layout : {NCHW, NHWC}) {
          for (const bool overwrite : {false, true}) {
            SCOPED_TRACE(fmt::format("residual {}, overwrite {}",
                                     memory_format_name(residual_layout), overwrite));
            PostOps post = ref_post;
            post.residual = residual.clone(residual_layout);
            post.overwrite_residual = overwrite;
            const std::vector<float> before = post.residual.to_vector();
            std::string declined;
            DispatchLog log;
            const Tensor y = onednn::conv2d(x, o.weight, o.bias, conv_options(c), post, &declined);
            ASSERT_TRUE(y.defined()) << declined;
            log_dispatch("conv2d", "onednn");  // records the implementation run_conv noted
            const std::vector<std::string> ran = log.take();
            ASSERT_EQ(ran.size(), 1u);
            EXPECT_THAT(ran[0], Not(HasSubstr(" ref"))) << ran[0];
            EXPECT_TRUE(testing::all_close(y, expected, Tolerance::op_f32()));
            const bool may = overwrite && residual_layout == layout;
            if (!late || (layout == NHWC && onednn::detail::has_avx512_core())) {
              EXPECT_EQ(y.is_same(post.residual), may);
            } else if (!may) {
              EXPECT_FALSE(y.is_same(post.residual));
            }
            if (!y.is_same(post.residual)) {
              EXPECT_EQ(post.residual.to_vector(), before);
            }
          }
        }
      }
    }
  }
}

// The chains after the activation (testing::post_chain_cases): eltwise_linear for per-tensor
// values, binary post-ops for per-channel ones, the sum where a step adds the residual; in
// both layouts, a grouped and a transposed conv too.
TEST_F(OnednnConv, PostOpChainsMatchReference) {
  const std::vector<ConvCase> convs = {
      {.name = "3x3"},
      {.name = "1x1", .kh = 1, .kw = 1, .padding = 0},
      {.name = "depthwise s2", .c_in = 19, .c_out = 19, .stride = 2, .groups = 19},
      {.name = "transposed s2",
       .transposed = true,
       .stride = 2,
       .tpadding = 1,
       .output_padding = 1},
  };
  for (const ConvCase& c : convs) {
    const Operands o = make_operands(c);
    const Tensor conv = reference_conv(c, o.input, o.weight, o.bias);
    for (testing::PostChainCase& k : testing::post_chain_cases(conv.sizes())) {
      SCOPED_TRACE(fmt::format("{}, {}", c.name, k.name));
      const Tensor expected = reference::apply_post_ops(conv, k.post);
      for (MemoryFormat layout : {NCHW, NHWC}) {
        PostOps post = k.post;
        if (post.residual.defined()) post.residual = post.residual.contiguous(layout);
        std::string declined;
        DispatchLog log;
        const Tensor y = onednn_conv(c, o.input.contiguous(layout), o.weight.contiguous(layout),
                                     o.bias, post, &declined);
        ASSERT_TRUE(y.defined()) << declined;
        // A JIT kernel, not oneDNN's reference (which it picks for a chain its JIT kernels
        // cannot take, such as a sum after other post-ops).
        log_dispatch("conv2d", "onednn");  // records the implementation run_conv noted
        const std::vector<std::string> ran = log.take();
        ASSERT_EQ(ran.size(), 1u);
        EXPECT_THAT(ran[0], Not(HasSubstr(" ref"))) << ran[0];
        EXPECT_TRUE(testing::all_close(y, expected, Tolerance::op_f32()))
            << memory_format_name(layout);
      }
    }
  }
}

// A depthwise conv with k output channels per input channel runs oneDNN's depthwise kernel
// over the input with each channel repeated k times, not its grouped kernel, which pads each
// group to the SIMD block.
TEST_F(OnednnConv, AChannelMultiplierRunsTheDepthwiseKernel) {
  Generator gen(7);
  for (MemoryFormat layout : {NCHW, NHWC}) {
    SCOPED_TRACE(memory_format_name(layout));
    const Tensor x = normal({1, 16, 20, 20}, 1.0, gen).contiguous(layout);
    const Tensor w = normal({32, 1, 7, 7}, 0.1, gen).contiguous(layout);
    Conv2dOptions o;
    o.stride = 2;
    o.padding = 3;
    o.groups = 16;
    std::string declined;
    const Tensor y = onednn::conv2d(x, w, Tensor{}, o, {}, &declined);
    ASSERT_TRUE(y.defined()) << declined;
    EXPECT_TRUE(testing::all_close(y, reference::conv2d(x, w, Tensor{}, o), Tolerance::op_f32()));
    o.groups = 32;  // the same conv over x repeated: oneDNN's depthwise primitive for it ran
    const onednn::CacheStats before = onednn::cache_stats();
    const Tensor repeated =
        x.as_strided({1, 16, 2, 20, 20}, {x.stride(0), x.stride(1), 0, x.stride(2), x.stride(3)}, 0)
            .reshape({1, 32, 20, 20})
            .contiguous(layout);
    (void)onednn::conv2d(repeated, w, Tensor{}, o, {}, &declined);
    EXPECT_EQ(onednn::cache_stats().primitive_hits, before.primitive_hits + 1);
  }
}

// functional::conv2d runs a depthwise conv over NCHW memory on the NHWC kernel (oneDNN has none
// for plain NCHW) and gives its output back in NCHW; channels_last input, a residual or a
// grouped conv that is not depthwise keep the plain oneDNN call.
TEST_F(OnednnConv, ADepthwiseConvOverNchwRunsTheNhwcKernel) {
  Generator gen(8);
  const Tensor x = normal({1, 24, 20, 20}, 1.0, gen);
  const Tensor w = normal({24, 1, 7, 7}, 0.1, gen), bias = normal({24}, 1.0, gen);
  Conv2dOptions o;
  o.padding = 3;
  o.groups = 24;
  struct Row {
    const char* name;
    Tensor input;
    std::int64_t groups;
    bool residual;
    bool via_nhwc;
    Activation activation = Activation::ReLU;
  };
  // GELU: refold's activation pass would finish it after oneDNN's conv — the NHWC detour must
  // still come first.
  const Row rows[] = {{"NCHW depthwise", x, 24, false, true},
                      {"NCHW depthwise, GELU", x, 24, false, true, Activation::GELU},
                      {"NHWC depthwise", x.contiguous(NHWC), 24, false, false},
                      {"NCHW depthwise with a residual", x, 24, true, false},
                      {"NCHW grouped, 3 channels a group", x, 8, false, false}};
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    o.groups = row.groups;
    const Tensor weight = row.groups == 24 ? w : normal({24, 3, 7, 7}, 0.1, gen);
    PostOps post;
    post.activation = row.activation;
    if (row.residual) post.residual = normal({1, 24, 20, 20}, 1.0, gen);
    DispatchLog log;
    const Tensor y = functional::conv2d(row.input, weight, bias, o, post);
    const std::vector<std::string> ran = log.take();
    EXPECT_EQ(std::count_if(ran.begin(), ran.end(),
                            [](const std::string& r) {
                              return r.find("conv2d: onednn depthwise via NHWC") == 0;
                            }),
              row.via_nhwc ? 1 : 0)
        << fmt::format("{}", fmt::join(ran, "; "));
    EXPECT_EQ(y.suggest_memory_format(), row.input.suggest_memory_format());
    EXPECT_TRUE(y.is_contiguous(y.suggest_memory_format()));
    const Tensor expected =
        reference::apply_post_ops(reference::conv2d(row.input, weight, bias, o), post);
    EXPECT_TRUE(testing::all_close(y, expected, Tolerance::op_f32()));
  }
}

TEST_F(OnednnConv, TransposedMatchesReference) {
  const std::vector<ConvCase> cases = {
      {.name = "3x3 s2 p1 op1 13->19",
       .transposed = true,
       .stride = 2,
       .tpadding = 1,
       .output_padding = 1},
      // Non-square stride [3, 2], groups 2, output_padding beyond the padding (negative
      // oneDNN right padding) — docs/reliability.md F15.
      {.name = "groups 2 stride (3,2) op (2,1) k 3x4",
       .transposed = true,
       .c_in = 26,
       .c_out = 38,
       .h = 5,
       .w = 6,
       .kw = 4,
       .stride = Size2d(3, 2),
       .tpadding = Size2d(1, 0),
       .output_padding = Size2d(2, 1),
       .groups = 2},
      {.name = "dilation 2 no bias",
       .transposed = true,
       .tpadding = 2,
       .dilation = 2,
       .bias = false},
      {.name = "depthwise s2",
       .transposed = true,
       .c_in = 19,
       .c_out = 19,
       .stride = 2,
       .tpadding = 1,
       .groups = 19},
      {.name = "1x1 13->19", .transposed = true, .kh = 1, .kw = 1},
      {.name = "s2 sum+relu",
       .transposed = true,
       .stride = 2,
       .tpadding = 1,
       .output_padding = 1,
       .activation = Activation::ReLU,
       .residual = true},
      {.name = "hardswish", .transposed = true, .activation = Activation::HardSwish},
  };
  for (const ConvCase& c : cases) check_case(c);
}

// A weight view with unusual strides (a transposed view) is read through its strides.
TEST_F(OnednnConv, WeightWithAnyStrides) {
  Generator gen(7);
  const Tensor x = normal({1, 13, 8, 8}, 1.0, gen).contiguous(NHWC);
  const Tensor storage = normal({3, 3, 13, 19}, 0.1, gen);  // [kh, kw, C_in, C_out]
  const Tensor w = storage.permute({3, 2, 0, 1});           // [C_out, C_in, kh, kw] view
  Conv2dOptions opt;
  opt.padding = 1;
  const Tensor y = onednn::conv2d(x, w, {}, opt);
  EXPECT_TRUE(testing::all_close(y, reference::conv2d(x, w, {}, opt), Tolerance::op_f32()));
}

TEST_F(OnednnConv, SecondCallHitsTheCaches) {
  onednn::clear_cache();
  Generator gen(1);
  const Tensor x = normal({1, 19, 12, 12}, 1.0, gen).contiguous(NHWC);
  const Tensor w = normal({24, 19, 3, 3}, 0.1, gen).contiguous(NHWC);
  Conv2dOptions opt;
  opt.padding = 1;
  const Tensor y1 = onednn::conv2d(x, w, {}, opt);
  const onednn::CacheStats s1 = onednn::cache_stats();
  EXPECT_EQ(s1.primitive_misses, 1u);
  EXPECT_EQ(s1.primitive_hits, 0u);
  const Tensor y2 = onednn::conv2d(x, w, {}, opt);
  const onednn::CacheStats s2 = onednn::cache_stats();
  EXPECT_EQ(s2.primitive_misses, 1u);
  EXPECT_EQ(s2.primitive_hits, 1u);
  // The weight was either packed on the first call and found on the second, or used in place.
  EXPECT_EQ(s2.weight_packs, s1.weight_packs);
  EXPECT_EQ(s2.weight_hits + s2.weight_direct, s1.weight_hits + s1.weight_direct + 1);
  EXPECT_TRUE(testing::all_close(y2, y1, Tolerance::exact()));
  // oneDNN's NHWC f32 kernels want blocked weights here: the packed path is the one tested.
  EXPECT_EQ(s2.weight_packs, 1u);
  EXPECT_EQ(s2.weight_hits, 1u);
}

// A primitive's memory objects are made once per thread and pointed at each call's data
// (onednn::BoundArgs): a second call with other input, bias, residual and per-channel post-op
// values computes from those, and writes its own output, the first call's left as it was.
TEST_F(OnednnConv, EachCallReadsAndWritesItsOwnData) {
  Generator gen(4);
  const Tensor w = normal({16, 13, 3, 3}, 0.1, gen).contiguous(NHWC);
  Conv2dOptions opt;
  opt.padding = 1;
  const auto run = [&](int seed) {
    Generator g(static_cast<std::uint64_t>(seed));
    const Tensor x = normal({1, 13, 9, 9}, 1.0, g).contiguous(NHWC);
    const Tensor b = normal({16}, 1.0, g);
    PostOps post;
    post.residual = normal({1, 16, 9, 9}, 1.0, g).contiguous(NHWC);
    post.activation = Activation::ReLU;
    std::vector<float> scale(16), shift(16);
    for (float& v : scale) v = static_cast<float>(g.uniform());
    for (float& v : shift) v = static_cast<float>(g.uniform() - 0.5);
    post.then = {PostStep{.scale = scale, .shift = shift}};
    const Tensor y = onednn::conv2d(x, w, b, opt, post);
    const Tensor expected = reference::apply_post_ops(reference::conv2d(x, w, b, opt), post);
    return std::pair{y, expected};
  };
  const auto [first, first_expected] = run(10);
  const Tensor first_copy = first.clone();
  const auto [second, second_expected] = run(11);
  EXPECT_NE(first.data_ptr(), second.data_ptr());
  EXPECT_TRUE(testing::all_close(first, first_expected, Tolerance::op_f32()));
  EXPECT_TRUE(testing::all_close(second, second_expected, Tolerance::op_f32()));
  EXPECT_TRUE(testing::all_close(first, first_copy, Tolerance::exact()));
}

TEST_F(OnednnConv, WritingTheWeightRepacks) {
  Generator gen(2);
  const Tensor x = normal({1, 13, 10, 10}, 1.0, gen).contiguous(NHWC);
  Tensor w = normal({19, 13, 3, 3}, 0.1, gen).contiguous(NHWC);
  Conv2dOptions opt;
  opt.padding = 1;
  (void)onednn::conv2d(x, w, {}, opt);
  const auto packs = onednn::cache_stats().weight_packs;

  w.fill_(0.25f);
  EXPECT_TRUE(testing::all_close(onednn::conv2d(x, w, {}, opt), reference::conv2d(x, w, {}, opt),
                                 Tolerance::op_f32()));
  EXPECT_EQ(onednn::cache_stats().weight_packs, packs + 1);

  w.copy_(normal({19, 13, 3, 3}, 0.1, gen));
  EXPECT_TRUE(testing::all_close(onednn::conv2d(x, w, {}, opt), reference::conv2d(x, w, {}, opt),
                                 Tolerance::op_f32()));
  EXPECT_EQ(onednn::cache_stats().weight_packs, packs + 2);
}

TEST_F(OnednnConv, SameShapeWeightsShareOnePrimitive) {
  onednn::clear_cache();
  Generator gen(3);
  const Tensor x = normal({1, 16, 8, 8}, 1.0, gen).contiguous(NHWC);
  const Tensor w1 = normal({16, 16, 3, 3}, 0.1, gen), w2 = normal({16, 16, 3, 3}, 0.1, gen);
  Conv2dOptions opt;
  opt.padding = 1;
  const Tensor y1 = onednn::conv2d(x, w1, {}, opt), y2 = onednn::conv2d(x, w2, {}, opt);
  EXPECT_EQ(onednn::cache_stats().primitives, 1u);
  EXPECT_TRUE(testing::all_close(y1, reference::conv2d(x, w1, {}, opt), Tolerance::op_f32()));
  EXPECT_TRUE(testing::all_close(y2, reference::conv2d(x, w2, {}, opt), Tolerance::op_f32()));
}

TEST_F(OnednnConv, ThreadCountIsPartOfTheKey) {
  onednn::clear_cache();
  Generator gen(4);
  const Tensor x = normal({1, 16, 8, 8}, 1.0, gen).contiguous(NHWC);
  const Tensor w = normal({16, 16, 3, 3}, 0.1, gen);
  set_num_threads(1);
  (void)onednn::conv2d(x, w, {}, {});
  set_num_threads(2);
  (void)onednn::conv2d(x, w, {}, {});
  EXPECT_EQ(onednn::cache_stats().primitive_misses, 2u);
}

TEST_F(OnednnConv, CacheIsBounded) {
  onednn::clear_cache();
  onednn::set_cache_capacity(2, std::size_t{1} << 30);
  Generator gen(5);
  const Tensor w = normal({8, 8, 3, 3}, 0.1, gen);
  for (std::int64_t hw = 5; hw < 10; ++hw)
    (void)onednn::conv2d(normal({1, 8, hw, hw}, 1.0, gen), w, {}, {});
  EXPECT_EQ(onednn::cache_stats().primitives, 2u);
  onednn::set_cache_capacity(2, 1);  // smaller than any packed weight: nothing is kept
  EXPECT_EQ(onednn::cache_stats().packed_weights, 0u);
  (void)onednn::conv2d(normal({1, 8, 9, 9}, 1.0, gen), w, {}, {});
  EXPECT_EQ(onednn::cache_stats().packed_weights, 0u);
  onednn::set_cache_capacity(1024, std::size_t{1} << 30);
}

TEST_F(OnednnConv, DeclinesWhatItCannotTake) {
  Generator gen(6);
  const Tensor w = normal({8, 8, 3, 3}, 0.1, gen);
  // A strided (not dense) input: the caller must make it dense in the conv's format first.
  const Tensor wide = normal({1, 8, 6, 12}, 1.0, gen);
  const Tensor strided = wide.as_strided({1, 8, 6, 6}, {8 * 6 * 12, 6 * 12, 12, 2}, 0);
  std::string why;
  EXPECT_FALSE(onednn::conv2d(strided, w, {}, {}, {}, &why).defined());
  EXPECT_THAT(why, HasSubstr("is not contiguous in contiguous, the conv's format"));
  // An NCHW input with channels_last weights: PyTorch's rule makes the conv channels_last.
  why.clear();
  EXPECT_FALSE(onednn::conv2d(normal({1, 8, 6, 6}, 1.0, gen), w.contiguous(NHWC), {}, {}, {}, &why)
                   .defined());
  EXPECT_THAT(why, HasSubstr("is not contiguous in channels_last"));
  // Without a `declined` out-parameter a decline is an error naming the op.
  try {
    (void)onednn::conv2d(strided, w, {}, {});
    ADD_FAILURE() << "expected a refold::Error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("conv2d: oneDNN declined: input"));
  }
  // A zero-sized batch.
  why.clear();
  EXPECT_FALSE(onednn::conv2d(empty({0, 8, 6, 6}), w, {}, {}, {}, &why).defined());
  EXPECT_THAT(why, HasSubstr("zero-sized"));
}

// Invalid arguments: oneDNN's entry points throw exactly the reference's messages.
TEST_F(OnednnConv, RejectsWhatTheReferenceRejects) {
  const Tensor x = zeros({1, 4, 6, 6}), w = zeros({8, 4, 3, 3});
  struct Bad {
    std::string name;
    std::function<Tensor()> reference, onednn;
    std::string message;
  };
  auto conv = [](Tensor in, Tensor wt, Tensor b, Conv2dOptions o) {
    return Bad{"", [=] { return reference::conv2d(in, wt, b, o); },
               [=] { return onednn::conv2d(in, wt, b, o); }, ""};
  };
  auto tconv = [](Tensor in, Tensor wt, Tensor b, ConvTranspose2dOptions o) {
    return Bad{"", [=] { return reference::conv_transpose2d(in, wt, b, o); },
               [=] { return onednn::conv_transpose2d(in, wt, b, o); }, ""};
  };
  auto with = [](Bad b, std::string name, std::string message) {
    b.name = std::move(name);
    b.message = std::move(message);
    return b;
  };
  Conv2dOptions stride0, groups3, pad_neg, same_s2, dil0;
  stride0.stride = 0;
  groups3.groups = 3;
  pad_neg.padding = -1;
  same_s2.padding = Padding2d::same();
  same_s2.stride = 2;
  dil0.dilation = Size2d(1, 0);
  ConvTranspose2dOptions op_big, t_groups3;
  op_big.stride = 2;
  op_big.output_padding = 2;
  t_groups3.groups = 3;
  const std::vector<Bad> table = {
      with(conv(zeros({1, 4, 6, 6}, DType::Int64), w, {}, {}), "int64 input", "int64"),
      with(conv(x, w.to(DType::BFloat16), {}, {}), "mixed dtypes", "does not match"),
      with(conv(x, Tensor{}, {}, {}), "undefined weight", "weight is undefined"),
      with(conv(zeros({4, 6, 6}), w, {}, {}), "3-d input", "must be 4-d"),
      with(conv(x, zeros({8, 3, 3, 3}), {}, {}), "channel mismatch", "weight expects 3"),
      with(conv(x, w, zeros({7}), {}), "bias length", "bias must be 1-d"),
      with(conv(x, w, {}, stride0), "stride 0", "stride (0, 0) must be positive"),
      with(conv(x, w, {}, dil0), "dilation 0", "dilation (1, 0) must be positive"),
      with(conv(x, w, {}, groups3), "groups 3", "groups (3) must divide in_channels (4)"),
      with(conv(x, w, {}, pad_neg), "negative padding", "non-negative"),
      with(conv(x, w, {}, same_s2), "'same' with stride 2", "requires stride 1"),
      with(conv(zeros({1, 4, 2, 2}), w, {}, {}), "kernel larger than input", "<= 0"),
      with(tconv(x, zeros({4, 2, 3, 3}), {}, op_big), "output_padding >= stride",
           "output_padding (2)"),
      with(tconv(x, zeros({5, 2, 3, 3}), {}, {}), "transposed channel mismatch",
           "weight expects 5"),
      with(tconv(x, zeros({4, 2, 3, 3}), {}, t_groups3), "transposed groups 3",
           "groups (3) must divide in_channels (4)"),
  };
  for (const Bad& b : table) {
    SCOPED_TRACE(b.name);
    std::string ref_message, onednn_message;
    try {
      (void)b.reference();
    } catch (const Error& e) {
      ref_message = e.what();
    }
    try {
      (void)b.onednn();
    } catch (const Error& e) {
      onednn_message = e.what();
    }
    EXPECT_THAT(onednn_message, HasSubstr(b.message));
    EXPECT_EQ(onednn_message, ref_message);
  }
}

TEST_F(OnednnConv, RejectsABadResidual) {
  const Tensor x = zeros({1, 4, 6, 6}), w = zeros({8, 4, 3, 3});
  PostOps post;
  post.residual = zeros({1, 8, 4, 5});
  EXPECT_THAT([&] { (void)onednn::conv2d(x, w, {}, {}, post); },
              ::testing::ThrowsMessage<Error>(HasSubstr(
                  "conv2d: residual must have the output's sizes [1, 8, 4, 4], got float32")));
  post.residual = zeros({1, 8, 4, 4}, DType::BFloat16);
  EXPECT_THAT([&] { (void)onednn::conv2d(x, w, {}, {}, post); },
              ::testing::ThrowsMessage<Error>(
                  HasSubstr("conv2d: residual dtype bfloat16 does not match input dtype float32")));
}

TEST_F(OnednnConv, NumThreadsSetting) {
  EXPECT_GE(get_num_threads(), 1);
  set_num_threads(3);
  EXPECT_EQ(get_num_threads(), 3);
  EXPECT_THAT([] { set_num_threads(0); },
              ::testing::ThrowsMessage<Error>(HasSubstr("set_num_threads: n (0) must be >= 1")));
  EXPECT_EQ(get_num_threads(), 3);
}

// Calls from several threads at once share the caches and get their own results.
TEST_F(OnednnConv, ConcurrentCalls) {
  Generator gen(8);
  const Tensor w = normal({19, 13, 3, 3}, 0.1, gen).contiguous(NHWC);
  std::vector<Tensor> inputs, outputs(4);
  for (int i = 0; i < 4; ++i) inputs.push_back(normal({1, 13, 7, 7}, 1.0, gen).contiguous(NHWC));
  set_num_threads(1);
  std::vector<std::thread> workers;
  for (std::size_t i = 0; i < 4; ++i)
    workers.emplace_back([&, i] {
      for (int k = 0; k < 20; ++k) outputs[i] = onednn::conv2d(inputs[i], w, {}, {});
    });
  for (auto& t : workers) t.join();
  for (std::size_t i = 0; i < 4; ++i)
    EXPECT_TRUE(testing::all_close(outputs[i], reference::conv2d(inputs[i], w, {}, {}),
                                   Tolerance::op_f32()));
}

TEST_F(OnednnConv, ParsesRefoldNumThreads) {
  EXPECT_EQ(onednn::parse_num_threads("1"), 1);
  EXPECT_EQ(onednn::parse_num_threads("16"), 16);
  for (const char* bad : {"0", "-2", "two", "2 ", "", "1.5", "99999999999"}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT([&] { (void)onednn::parse_num_threads(bad); },
                ::testing::ThrowsMessage<Error>(HasSubstr(
                    fmt::format("REFOLD_NUM_THREADS ('{}') must be a positive integer", bad))));
  }
}

TEST_F(OnednnConv, DefaultThreadsArePhysicalCores) {
  const int cores = onednn::physical_core_count();
  EXPECT_GE(cores, 1);
  const unsigned logical = std::thread::hardware_concurrency();
  if (logical > 0) {
    EXPECT_LE(cores, static_cast<int>(logical));
  }
}

}  // namespace
}  // namespace refold
