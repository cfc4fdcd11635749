// Tests of refold::reference::conv_transpose2d. The kernel computes the gather form; these tests
// check it against hand-computed values, against the scatter definition written out here, and
// against the defining property: it is the adjoint (transpose) of conv2d with the same weight.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "refold/reference.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"
#include "testing/layouts.h"

namespace refold {
namespace {

using reference::conv_transpose2d;
using testing::Tolerance;
using testing::values;
constexpr auto NCHW = MemoryFormat::Contiguous;
constexpr auto CL = MemoryFormat::ChannelsLast;

struct TransposeCase {
  std::string name;
  Shape input;   // [N, C_in, H, W]
  Shape weight;  // [C_in, C_out/groups, kh, kw]
  Size2d stride = 1;
  Size2d padding = 0;
  Size2d output_padding = 0;
  Size2d dilation = 1;
  std::int64_t groups = 1;

  ConvTranspose2dOptions options() const {
    ConvTranspose2dOptions o;
    o.stride = stride;
    o.padding = padding;
    o.output_padding = output_padding;
    o.dilation = dilation;
    o.groups = groups;
    return o;
  }
  Tensor make_weight(Generator& gen) const {
    return testing::pytorch_init(weight, weight[0] / groups * weight[2] * weight[3], gen);
  }
};

// Random operands for a case, drawn in the order input, weight, bias.
struct Operands {
  Tensor x, w, b;
};
Operands random_operands(const TransposeCase& k, Generator& gen,
                         MemoryFormat input_format = MemoryFormat::Contiguous) {
  Tensor x = randn(k.input, {DType::Float32, input_format}, gen);
  Tensor w = k.make_weight(gen);
  return {x, w, randn({k.weight[1] * k.groups}, {}, gen)};
}

// ---------------------------------------------------------------- hand-computed cases

TEST(ReferenceConvTranspose2d, HandComputedFullConvolution) {
  // Stride 1, no padding: every input pixel stamps in[y,x]·w onto out[y.., x..].
  // in = [[1,2],[3,4]], w = [[1,2],[3,4]]:
  //   out = [[1, 2+2, 4], [3+3, 4+6+6+4, 8+8], [9, 12+12, 16]] (+ bias 0.25)
  const Tensor x = values({1, 2, 3, 4}, {1, 1, 2, 2});
  const Tensor w = values({1, 2, 3, 4}, {1, 1, 2, 2});
  const Tensor out = conv_transpose2d(x, w, values({0.25f}, {1}));
  EXPECT_TRUE(testing::all_close(
      out,
      values({1.25f, 4.25f, 4.25f, 6.25f, 20.25f, 16.25f, 9.25f, 24.25f, 16.25f}, {1, 1, 3, 3}),
      Tolerance::exact()));
}

TEST(ReferenceConvTranspose2d, PaddingCropsTheFullResult) {
  // padding 1 removes one row/column of the 3×3 full result on each side: only 20 remains.
  const Tensor x = values({1, 2, 3, 4}, {1, 1, 2, 2});
  const Tensor w = values({1, 2, 3, 4}, {1, 1, 2, 2});
  ConvTranspose2dOptions o;
  o.padding = 1;
  EXPECT_TRUE(testing::all_close(conv_transpose2d(x, w, {}, o), values({20}, {1, 1, 1, 1}),
                                 Tolerance::exact()));
}

TEST(ReferenceConvTranspose2d, Stride2OnesKernelIsNearestUpsamplingAndOutputPaddingAddsAnEdge) {
  // Stride 2, 2×2 ones kernel: each input pixel becomes a 2×2 block. output_padding 1 adds one
  // row and column at the bottom/right that no input reaches: they hold only the bias.
  const Tensor x = values({1, 2, 3, 4}, {1, 1, 2, 2});
  ConvTranspose2dOptions o;
  o.stride = 2;
  const Tensor up = conv_transpose2d(x, ones({1, 1, 2, 2}), {}, o);
  EXPECT_TRUE(
      testing::all_close(up, values({1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, {1, 1, 4, 4}),
                         Tolerance::exact()));
  o.output_padding = 1;
  const Tensor padded = conv_transpose2d(x, ones({1, 1, 2, 2}), values({-1}, {1}), o);
  EXPECT_TRUE(testing::all_close(padded,
                                 values({0,  0,  1,  1,  -1,  //
                                         0,  0,  1,  1,  -1,  //
                                         2,  2,  3,  3,  -1,  //
                                         2,  2,  3,  3,  -1,  //
                                         -1, -1, -1, -1, -1},
                                        {1, 1, 5, 5}),
                                 Tolerance::exact()));
}

TEST(ReferenceConvTranspose2d, OutputPaddingBelowDilationIsAllowed) {
  // PyTorch accepts output_padding < stride OR < dilation: stride 1, dilation 2, output_padding
  // 1 gives (4−1)·1 + 2·(3−1) + 1 + 1 = 9.
  ConvTranspose2dOptions o;
  o.dilation = 2;
  o.output_padding = 1;
  const Tensor out = conv_transpose2d(ones({1, 2, 4, 4}), ones({2, 3, 3, 3}), {}, o);
  EXPECT_EQ(out.sizes(), (Shape{1, 3, 9, 9}));
}

// ---------------------------------------------------------------- the scatter definition

// out[n, g·Cog + o, y·sh − ph + i·dh, x·sw − pw + j·dw] += in[n, g·Cig + c, y, x]
//                                                          · w[g·Cig + c, o, i, j]
// accumulated in double, written exactly as the definition reads.
Tensor scatter_definition(const Tensor& x, const Tensor& w, const Tensor& b,
                          const TransposeCase& k) {
  const std::int64_t n_batch = x.size(0), c_in = x.size(1), h = x.size(2), wd = x.size(3);
  const std::int64_t cog = w.size(1), kh = w.size(2), kw = w.size(3);
  const std::int64_t cig = c_in / k.groups, c_out = cog * k.groups;
  const std::int64_t oh =
      (h - 1) * k.stride.h - 2 * k.padding.h + k.dilation.h * (kh - 1) + k.output_padding.h + 1;
  const std::int64_t ow =
      (wd - 1) * k.stride.w - 2 * k.padding.w + k.dilation.w * (kw - 1) + k.output_padding.w + 1;
  std::vector<double> acc(static_cast<std::size_t>(n_batch * c_out * oh * ow));
  const auto at = [&](std::int64_t n, std::int64_t c, std::int64_t y, std::int64_t xx) -> double& {
    return acc[static_cast<std::size_t>(((n * c_out + c) * oh + y) * ow + xx)];
  };
  for (std::int64_t n = 0; n < n_batch; ++n)
    for (std::int64_t c = 0; c < c_out; ++c)
      for (std::int64_t y = 0; y < oh; ++y)
        for (std::int64_t xx = 0; xx < ow; ++xx) at(n, c, y, xx) = b.at({c});
  for (std::int64_t n = 0; n < n_batch; ++n)
    for (std::int64_t ic = 0; ic < c_in; ++ic)
      for (std::int64_t y = 0; y < h; ++y)
        for (std::int64_t xx = 0; xx < wd; ++xx)
          for (std::int64_t o = 0; o < cog; ++o)
            for (std::int64_t i = 0; i < kh; ++i)
              for (std::int64_t j = 0; j < kw; ++j) {
                const std::int64_t oy = y * k.stride.h - k.padding.h + i * k.dilation.h;
                const std::int64_t ox = xx * k.stride.w - k.padding.w + j * k.dilation.w;
                if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;  // cropped by padding
                at(n, ic / cig * cog + o, oy, ox) +=
                    static_cast<double>(x.at({n, ic, y, xx})) * w.at({ic, o, i, j});
              }
  std::vector<float> out(acc.begin(), acc.end());
  return from_values(out, {n_batch, c_out, oh, ow});
}

const std::vector<TransposeCase>& matrix_cases() {
  static const std::vector<TransposeCase> cases = {
      {"odd_13_to_19_stride2_pad1_outpad1", {2, 13, 5, 4}, {13, 19, 3, 3}, 2, 1, 1},
      {"groups2_dilation2", {1, 26, 4, 5}, {26, 19, 3, 3}, 1, 2, 0, 2, 2},
      {"depthwise_stride2", {2, 13, 4, 4}, {13, 1, 4, 4}, 2, 1, 0, 1, 13},
      {"rect_stride3x2", {1, 4, 3, 5}, {4, 3, 3, 2}, {3, 2}, {1, 0}, {2, 1}, {1, 2}, 2},
      {"outpad_below_dilation", {1, 3, 4, 4}, {3, 2, 3, 3}, 1, 0, 1, 2},
  };
  return cases;
}

TEST(ReferenceConvTranspose2d, MatchesTheScatterDefinition) {
  Generator gen(21);
  for (const TransposeCase& k : matrix_cases()) {
    SCOPED_TRACE(k.name);
    const auto [x, w, b] = random_operands(k, gen);
    EXPECT_TRUE(testing::all_close(conv_transpose2d(x, w, b, k.options()),
                                   scatter_definition(x, w, b, k), Tolerance::op_f32()));
  }
}

// ---------------------------------------------------------------- adjoint of conv2d

double dot(const Tensor& a, const Tensor& b) {
  const std::vector<float> u = a.to_vector(), v = b.to_vector();
  double s = 0;
  for (std::size_t i = 0; i < u.size(); ++i) s += static_cast<double>(u[i]) * v[i];
  return s;
}

TEST(ReferenceConvTranspose2d, IsTheAdjointOfConv2d) {
  // conv_transpose2d(·, W) is the transpose of the linear map x ↦ conv2d(x, W), with the same
  // weight tensor read as [C_in', C_out'/groups, kh, kw]: <conv2d(x, W), y> = <x, convT(y, W)>
  // for all x, y, once output_padding restores x's size (the rows conv2d's stride skipped).
  struct Case {
    std::string name;
    Shape x, w;
    Size2d stride = 1, padding = 0, dilation = 1;
    std::int64_t groups = 1;
  };
  const std::vector<Case> cases = {
      {"plain", {2, 5, 7, 6}, {3, 5, 3, 3}, 1, 1},
      {"odd_13_to_19_stride2", {1, 13, 9, 8}, {19, 13, 3, 3}, 2, 1},
      {"groups2_stride2_dilation2", {1, 26, 11, 10}, {38, 13, 3, 3}, 2, 0, 2, 2},
      {"depthwise_stride2", {2, 13, 8, 7}, {13, 1, 3, 3}, 2, 1, 1, 13},
      {"rect", {1, 4, 11, 9}, {6, 2, 3, 2}, {3, 2}, {1, 0}, {1, 2}, 2},
  };
  Generator gen(22);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Tensor x = randn(c.x, {}, gen);
    const Tensor w = testing::pytorch_init(c.w, c.w[1] * c.w[2] * c.w[3], gen);
    Conv2dOptions co;
    co.stride = c.stride;
    co.padding = Padding2d(c.padding);
    co.dilation = c.dilation;
    co.groups = c.groups;
    const Tensor cx = reference::conv2d(x, w, {}, co);
    const Tensor y = randn(cx.sizes(), {}, gen);

    ConvTranspose2dOptions to;
    to.stride = c.stride;
    to.padding = c.padding;
    to.dilation = c.dilation;
    to.groups = c.groups;
    // The input rows conv2d's last window did not reach: (H + 2p − d·(k−1) − 1) mod s.
    to.output_padding =
        Size2d((c.x[2] + 2 * c.padding.h - c.dilation.h * (c.w[2] - 1) - 1) % c.stride.h,
               (c.x[3] + 2 * c.padding.w - c.dilation.w * (c.w[3] - 1) - 1) % c.stride.w);
    const Tensor ty = conv_transpose2d(y, w, {}, to);
    ASSERT_EQ(ty.sizes(), x.sizes());

    const double lhs = dot(cx, y), rhs = dot(x, ty);
    EXPECT_TRUE(testing::all_close(values({static_cast<float>(rhs)}, {1}),
                                   values({static_cast<float>(lhs)}, {1}), Tolerance::op_f32()))
        << "<conv2d(x, W), y> = " << lhs << ", <x, conv_transpose2d(y, W)> = " << rhs;
  }
}

// ---------------------------------------------------------------- layouts and dtypes

TEST(ReferenceConvTranspose2d, EveryLayoutGivesIdenticalValuesAndPyTorchsOutputFormat) {
  Generator gen(23);
  for (const TransposeCase& k : matrix_cases()) {
    if (k.weight[1] == 1) continue;  // a [C, 1, kh, kw] weight is ambiguous between formats
    const auto [x, w, b] = random_operands(k, gen);
    const Tensor expected = conv_transpose2d(x, w, b, k.options());
    const std::vector<testing::LayoutVariant> xs = testing::conv_layouts(x),
                                              ws = testing::conv_layouts(w);
    for (const testing::LayoutVariant& li : xs) {
      for (const testing::LayoutVariant& lw : ws) {
        SCOPED_TRACE(k.name + ", input " + li.name + ", weight " + lw.name);
        const Tensor &xv = li.tensor, &wv = lw.tensor;
        ASSERT_EQ(xv.suggest_memory_format(), li.suggests);
        ASSERT_EQ(wv.suggest_memory_format(), lw.suggests);
        const Tensor out = conv_transpose2d(xv, wv, b, k.options());
        EXPECT_TRUE(testing::all_close(out, expected, Tolerance::exact()));
        const bool cl = li.suggests == CL || lw.suggests == CL;
        EXPECT_TRUE(out.is_contiguous(cl ? CL : NCHW)) << out.description();
      }
    }
  }
}

TEST(ReferenceConvTranspose2d, BFloat16MatchesFloat32WithinBf16Tolerance) {
  // bf16 keeps 8 significant bits: each rounded input, weight and output costs ≈ 2^-8
  // relative, so the bf16 result is held to the bf16 policy against the fp32 one (docs/testing.md).
  Generator gen(24);
  for (const TransposeCase& k : matrix_cases()) {
    for (const MemoryFormat format : {NCHW, CL}) {
      SCOPED_TRACE(k.name + std::string(" ") + std::string(memory_format_name(format)));
      const auto [x, w, b] = random_operands(k, gen, format);
      const Tensor out = conv_transpose2d(x.to(DType::BFloat16), w.to(DType::BFloat16),
                                          b.to(DType::BFloat16), k.options());
      EXPECT_EQ(out.dtype(), DType::BFloat16);
      EXPECT_TRUE(out.is_contiguous(format));
      EXPECT_TRUE(
          testing::all_close(out, conv_transpose2d(x, w, b, k.options()), Tolerance::bf16()));
    }
  }
}

// ---------------------------------------------------------------- bad arguments

TEST(ReferenceConvTranspose2d, RejectsBadArgumentsWithMessagesNamingTheValue) {
  Generator gen(25);
  const Tensor x = randn({1, 8, 4, 4}, {}, gen);
  const Tensor w = randn({8, 3, 3, 3}, {}, gen);  // C_out = 3·groups
  const auto opt = [](auto&& edit) {
    ConvTranspose2dOptions o;
    edit(o);
    return o;
  };
  const auto run = [&](auto&& edit) { return conv_transpose2d(x, w, {}, opt(edit)); };
  const std::vector<testing::ErrorCase> rows = {
      {"stride 0", [&] { return run([](auto& o) {
                           o.stride = {1, 0};
                         }); },
       "stride (1, 0) must be positive"},
      {"negative stride", [&] { return run([](auto& o) { o.stride = -1; }); },
       "stride (-1, -1) must be positive"},
      {"dilation 0", [&] { return run([](auto& o) { o.dilation = 0; }); },
       "dilation (0, 0) must be positive"},
      {"negative padding", [&] { return run([](auto& o) {
                                   o.padding = {0, -1};
                                 }); },
       "padding (0, -1) must be non-negative"},
      {"groups 0", [&] { return run([](auto& o) { o.groups = 0; }); },
       "groups (0) must be positive"},
      {"groups not dividing in_channels", [&] { return run([](auto& o) { o.groups = 3; }); },
       "groups (3) must divide in_channels (8)"},
      {"weight in_channels mismatch",
       [&] {
         return conv_transpose2d(x, randn({6, 3, 3, 3}));
       },
       "input has 8 channels, weight expects 6"},
      {"3-d input",
       [&] {
         return conv_transpose2d(randn({8, 4, 4}), w);
       },
       "input must be 4-d"},
      {"3-d weight",
       [&] {
         return conv_transpose2d(x, randn({8, 3, 3}));
       },
       "weight must be 4-d"},
      {"bias wrong length", [&] { return conv_transpose2d(x, w, randn({4})); },
       "bias must be 1-d with out_channels (3) elements"},
      {"bias wrong length with groups",
       [&] { return conv_transpose2d(x, w, randn({3}), opt([](auto& o) { o.groups = 2; })); },
       "bias must be 1-d with out_channels (6) elements"},
      {"output_padding equal to stride",
       [&] {
         return run([](auto& o) {
           o.stride = 2;
           o.output_padding = 2;
         });
       },
       "output_padding (2) must be smaller than either stride (2) or dilation (1)"},
      {"output_padding with stride 1 and dilation 1",
       [&] { return run([](auto& o) {
               o.output_padding = {0, 1};
             }); },
       "width: output_padding (1) must be smaller than either stride (1) or dilation (1)"},
      {"output_padding at stride and dilation",
       [&] {
         return run([](auto& o) {
           o.stride = 2;
           o.dilation = 2;
           o.output_padding = 2;
         });
       },
       "output_padding (2) must be smaller than either stride (2) or dilation (2)"},
      {"negative output_padding", [&] { return run([](auto& o) { o.output_padding = -1; }); },
       "output_padding (-1)"},
      {"padding crops everything",
       [&] {
         return conv_transpose2d(randn({1, 8, 1, 1}), randn({8, 3, 1, 1}), {},
                                 opt([](auto& o) { o.padding = 1; }));
       },
       "output size would be <= 0"},
      {"weight bf16, input f32", [&] { return conv_transpose2d(x, w.to(DType::BFloat16)); },
       "weight dtype bfloat16 does not match input dtype float32"},
      {"bias bf16, input f32",
       [&] { return conv_transpose2d(x, w, randn({3}).to(DType::BFloat16)); },
       "bias dtype bfloat16 does not match input dtype float32"},
      {"int64 input",
       [&] {
         return conv_transpose2d(empty({1, 8, 4, 4}, DType::Int64),
                                 empty({8, 3, 3, 3}, DType::Int64));
       },
       "input dtype int64 is not supported"},
      {"undefined input", [&] { return conv_transpose2d(Tensor{}, w); }, "input is undefined"},
      {"undefined weight", [&] { return conv_transpose2d(x, Tensor{}); }, "weight is undefined"},
  };
  testing::expect_errors(rows, "conv_transpose2d: ");
}

}  // namespace
}  // namespace refold
