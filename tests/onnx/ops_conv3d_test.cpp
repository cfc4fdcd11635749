// 3-d Conv and ConvTranspose (src/ops/conv3d.cpp, reference::conv_nd / conv_transpose_nd, oneDNN's
// 3-d primitives): against independent naive loops (the conv as a gather, the transposed conv as
// its scatter definition) over stride, pads, dilations, groups, bias, every auto_pad,
// output_padding and output_shape, with constant and run-time weights; the reference alone and
// oneDNN alone against the same loops; the errors; and the passes leaving a 3-d conv (and the
// BatchNormalization after it) alone. The ONNX backend tests test_Conv3d* and
// test_convtranspose_3d run in conformance.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/onednn/conv_nd.h"
#include "kernels/reference/onnx_ops.h"
#include "kernels/verbose.h"
#include "onnx/ops_cnn_helpers.h"
#include "passes/passes.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"
#include "testing/graph_builder.h"
#include "testing/pass_checks.h"

namespace refold::testing {
namespace conv3d_ops {

using I = std::vector<std::int64_t>;

struct Geometry {
  I stride{1, 1, 1}, dilation{1, 1, 1}, pad_begin{0, 0, 0}, pad_end{0, 0, 0};
  I output_padding{0, 0, 0};  // transposed only
  std::int64_t groups = 1;
};

// Row-major flat index of a 5-d position.
std::int64_t flat(const Shape& s, std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d,
                  std::int64_t e) {
  return (((a * s[1] + b) * s[2] + c) * s[3] + d) * s[4] + e;
}

// y[n, m, o] = b[m] + Σ x[n, g·Cg + c, o·s − pb + k·d] · w[m, c, k], zero outside X.
Tensor naive_conv3d(const Tensor& x, const Tensor& w, const Tensor& b, const Geometry& g) {
  const Shape xs = x.sizes(), ws = w.sizes();
  Shape ys{xs[0], ws[0], 0, 0, 0};
  for (int a = 0; a < 3; ++a)
    ys[a + 2] = (xs[a + 2] + g.pad_begin[a] + g.pad_end[a] - g.dilation[a] * (ws[a + 2] - 1) - 1) /
                    g.stride[a] +
                1;
  const std::vector<float> xv = x.to_vector(), wv = w.to_vector();
  const std::vector<float> bv = b.defined() ? b.to_vector() : std::vector<float>(ys[1], 0.f);
  std::vector<float> yv(static_cast<std::size_t>(ys[0] * ys[1] * ys[2] * ys[3] * ys[4]));
  const std::int64_t cg = ws[1], mg = ws[0] / g.groups;
  for (std::int64_t n = 0; n < ys[0]; ++n)
    for (std::int64_t m = 0; m < ys[1]; ++m)
      for (std::int64_t z = 0; z < ys[2]; ++z)
        for (std::int64_t y = 0; y < ys[3]; ++y)
          for (std::int64_t q = 0; q < ys[4]; ++q) {
            double acc = bv[m];
            for (std::int64_t c = 0; c < cg; ++c)
              for (std::int64_t i = 0; i < ws[2]; ++i)
                for (std::int64_t j = 0; j < ws[3]; ++j)
                  for (std::int64_t l = 0; l < ws[4]; ++l) {
                    const std::int64_t iz = z * g.stride[0] - g.pad_begin[0] + i * g.dilation[0];
                    const std::int64_t iy = y * g.stride[1] - g.pad_begin[1] + j * g.dilation[1];
                    const std::int64_t ix = q * g.stride[2] - g.pad_begin[2] + l * g.dilation[2];
                    if (iz < 0 || iy < 0 || ix < 0 || iz >= xs[2] || iy >= xs[3] || ix >= xs[4])
                      continue;
                    acc += double{xv[flat(xs, n, m / mg * cg + c, iz, iy, ix)]} *
                           wv[flat(ws, m, c, i, j, l)];
                  }
            yv[flat(ys, n, m, z, y, q)] = static_cast<float>(acc);
          }
  return values(yv, ys);
}

// The scatter definition: every x[n, c, p] · w[c, m, k] adds to full[n, g·Mg + m, p·s + k·d];
// the output is full shifted by pad_begin (positions outside full read 0), then plus bias.
Tensor naive_conv_transpose3d(const Tensor& x, const Tensor& w, const Tensor& b,
                              const Geometry& g) {
  const Shape xs = x.sizes(), ws = w.sizes();
  const std::int64_t mg = ws[1], cg = xs[1] / g.groups;
  Shape full{xs[0], mg * g.groups, 0, 0, 0}, ys = full;
  for (int a = 0; a < 3; ++a) {
    full[a + 2] = g.stride[a] * (xs[a + 2] - 1) + g.dilation[a] * (ws[a + 2] - 1) + 1;
    ys[a + 2] = full[a + 2] + g.output_padding[a] - g.pad_begin[a] - g.pad_end[a];
  }
  const std::vector<float> xv = x.to_vector(), wv = w.to_vector();
  std::vector<double> fv(static_cast<std::size_t>(full[0] * full[1] * full[2] * full[3] * full[4]));
  for (std::int64_t n = 0; n < xs[0]; ++n)
    for (std::int64_t c = 0; c < xs[1]; ++c)
      for (std::int64_t z = 0; z < xs[2]; ++z)
        for (std::int64_t y = 0; y < xs[3]; ++y)
          for (std::int64_t q = 0; q < xs[4]; ++q)
            for (std::int64_t m = 0; m < mg; ++m)
              for (std::int64_t i = 0; i < ws[2]; ++i)
                for (std::int64_t j = 0; j < ws[3]; ++j)
                  for (std::int64_t l = 0; l < ws[4]; ++l)
                    fv[flat(full, n, c / cg * mg + m, z * g.stride[0] + i * g.dilation[0],
                            y * g.stride[1] + j * g.dilation[1],
                            q * g.stride[2] + l * g.dilation[2])] +=
                        double{xv[flat(xs, n, c, z, y, q)]} * wv[flat(ws, c, m, i, j, l)];
  const std::vector<float> bv = b.defined() ? b.to_vector() : std::vector<float>(ys[1], 0.f);
  std::vector<float> yv(static_cast<std::size_t>(ys[0] * ys[1] * ys[2] * ys[3] * ys[4]));
  for (std::int64_t n = 0; n < ys[0]; ++n)
    for (std::int64_t m = 0; m < ys[1]; ++m)
      for (std::int64_t z = 0; z < ys[2]; ++z)
        for (std::int64_t y = 0; y < ys[3]; ++y)
          for (std::int64_t q = 0; q < ys[4]; ++q) {
            const std::int64_t fz = z + g.pad_begin[0], fy = y + g.pad_begin[1],
                               fq = q + g.pad_begin[2];
            const bool inside =
                fz >= 0 && fy >= 0 && fq >= 0 && fz < full[2] && fy < full[3] && fq < full[4];
            yv[flat(ys, n, m, z, y, q)] =
                static_cast<float>(bv[m] + (inside ? fv[flat(full, n, m, fz, fy, fq)] : 0.0));
          }
  return values(yv, ys);
}

I pads_attribute(const Geometry& g) {
  I p = g.pad_begin;
  p.insert(p.end(), g.pad_end.begin(), g.pad_end.end());
  return p;
}

// A Conv / ConvTranspose node with the geometry's attributes (and kernel_shape from W).
OpCase node_of(const std::string& op_type, const Geometry& g, const Tensor& w, bool bias) {
  OpCase c(op_type,
           bias ? std::vector<std::string>{"x", "w", "b"} : std::vector<std::string>{"x", "w"});
  c.ints("kernel_shape", {w.size(2), w.size(3), w.size(4)}).ints("strides", g.stride);
  c.ints("dilations", g.dilation).ints("pads", pads_attribute(g)).integer("group", g.groups);
  if (op_type == "ConvTranspose") c.ints("output_padding", g.output_padding);
  return c;
}

// The node on (x, w, b) with W and B as constants, then as run-time inputs.
::testing::AssertionResult op_matches(const std::function<OpCase()>& make, const Tensor& x,
                                      const Tensor& w, const Tensor& b, const Tensor& expected) {
  for (const bool constant : {true, false}) {
    OpCase c = make();
    if (constant) {
      c.constant("w", w);
      if (b.defined()) c.constant("b", b);
    }
    const std::vector<Tensor> runtime =
        constant ? std::vector<Tensor>{x} : std::vector<Tensor>{x, w, b};
    auto close = all_close(c.run(runtime), expected, Tolerance::op_f32());
    if (!close) return close << (constant ? " (constant W)" : " (run-time W)");
  }
  return ::testing::AssertionSuccess();
}

struct Case {
  std::string name;
  Shape x, w;
  Geometry g;
  bool bias = true;
};

TEST(OnnxConv3d, MatchesTheNaiveLoops) {
  const std::vector<Case> cases = {
      {"plain", {1, 2, 4, 5, 6}, {3, 2, 3, 3, 3}, {}},
      {"no bias", {2, 2, 4, 4, 4}, {3, 2, 2, 3, 2}, {}, false},
      {"stride and pads",
       {1, 3, 6, 5, 7},
       {4, 3, 2, 2, 3},
       {.stride = {2, 1, 2}, .pad_begin = {1, 0, 2}, .pad_end = {0, 1, 1}}},
      {"dilation", {1, 2, 7, 6, 6}, {2, 2, 3, 2, 3}, {.dilation = {2, 3, 1}}},
      {"dilation and stride",
       {1, 2, 8, 7, 7},
       {2, 2, 3, 3, 2},
       {.stride = {2, 3, 1}, .dilation = {2, 1, 3}, .pad_begin = {1, 1, 1}, .pad_end = {1, 1, 1}}},
      {"groups", {1, 4, 4, 5, 4}, {6, 2, 3, 1, 2}, {.groups = 2}},
      {"depthwise",
       {1, 3, 4, 4, 4},
       {3, 1, 3, 3, 3},
       {.pad_begin = {1, 1, 1}, .pad_end = {1, 1, 1}, .groups = 3}},
      // Kernel 1 along an axis with stride 1 and no pads there: 2-d convs of the folded slices.
      {"lambda's position conv (9 x 9 x 1)",
       {1, 1, 10, 9, 6},
       {4, 1, 9, 9, 1},
       {.pad_begin = {4, 4, 0}, .pad_end = {4, 4, 0}}},
      {"kernel 1 on the first axis, strides and uneven pads on the others",
       {2, 3, 5, 6, 7},
       {4, 3, 1, 3, 2},
       {.stride = {1, 2, 2}, .dilation = {3, 1, 2}, .pad_begin = {0, 1, 0}, .pad_end = {0, 0, 2}}},
  };
  for (const Case& k : cases) {
    const Tensor x = random(k.x, 1), w = random(k.w, 2);
    const Tensor b = k.bias ? random({k.w[0]}, 3) : Tensor();
    const Tensor expected = naive_conv3d(x, w, b, k.g);
    EXPECT_TRUE(op_matches([&] { return node_of("Conv", k.g, w, k.bias); }, x, w, b, expected))
        << k.name;
    // The reference alone (the op may have run oneDNN).
    const reference::ConvNdParams p{k.g.stride,  k.g.dilation, k.g.pad_begin,
                                    k.g.pad_end, {},           k.g.groups};
    EXPECT_TRUE(all_close(reference::conv_nd(x, w, b, p), expected, Tolerance::op_f32())) << k.name;
    // And oneDNN alone, on a contiguous input (it declines only what it cannot take).
    std::string declined;
    const Tensor y = onednn::conv_nd(x, w, b, p, &declined);
    ASSERT_TRUE(y.defined()) << k.name << ": " << declined;
    EXPECT_TRUE(all_close(y, expected, Tolerance::op_f32())) << k.name;
  }
}

// Where an axis has kernel 1, stride 1 and no pads the op runs 2-d convs (the cases above check
// the numbers); elsewhere oneDNN's 3-d conv.
TEST(OnnxConv3d, AKernelOfOneAlongAnAxisFoldsItIntoTheBatch) {
  const Tensor x = random({1, 2, 6, 5, 4}, 1);
  const Tensor unit = random({3, 2, 3, 3, 1}, 2), full = random({3, 2, 3, 3, 2}, 2);
  DispatchLog log;
  node_of("Conv", {}, unit, false).run({x, unit});
  EXPECT_THAT(log.take(), ::testing::Contains("conv3d: conv2d over a folded axis"));
  node_of("Conv", {}, full, false).run({x, full});
  EXPECT_THAT(log.take(), ::testing::Contains(::testing::StartsWith("conv3d: onednn")));
}

TEST(OnnxConv3d, AutoPad) {
  const Tensor x = random({1, 2, 5, 6, 7}, 4), w = random({3, 2, 3, 2, 3}, 5), b = random({3}, 6);
  // SAME: out = ⌈in / stride⌉, total = max(0, (out − 1)·stride + k − in). Strides (2, 3, 2):
  // D 5 → 3 (total 2), H 6 → 2 (total 0), W 7 → 4 (total 2); strides (1, 2, 2): D total 2, H 6
  // → 3 (total 0), W total 2. Even totals split evenly in both modes.
  const Geometry upper{.stride = {2, 3, 2}, .pad_begin = {1, 0, 1}, .pad_end = {1, 0, 1}};
  const Geometry odd{.stride = {1, 2, 2}, .pad_begin = {1, 0, 1}, .pad_end = {1, 0, 1}};
  for (const auto& [mode, g] : std::vector<std::pair<std::string, Geometry>>{
           {"SAME_UPPER", upper}, {"SAME_LOWER", upper}, {"SAME_UPPER", odd}}) {
    auto make = [&, mode = mode, g = g] {
      OpCase c("Conv", {"x", "w", "b"});
      c.ints("strides", g.stride).text("auto_pad", mode);
      return c;
    };
    EXPECT_TRUE(op_matches(make, x, w, b, naive_conv3d(x, w, b, g))) << mode;
  }
  // An odd total: D 6 with k 2, stride 1: total 1, at the end (UPPER) or beginning (LOWER).
  const Tensor x6 = random({1, 2, 6, 3, 3}, 7), w2 = random({2, 2, 2, 1, 1}, 8);
  for (const std::string mode : {"SAME_UPPER", "SAME_LOWER"}) {
    Geometry g;
    (mode == "SAME_UPPER" ? g.pad_end : g.pad_begin)[0] = 1;
    auto make = [&] {
      OpCase c("Conv", {"x", "w"});
      c.text("auto_pad", mode);
      return c;
    };
    EXPECT_TRUE(op_matches(make, x6, w2, Tensor(), naive_conv3d(x6, w2, Tensor(), g))) << mode;
  }
  auto valid = [&] {
    OpCase c("Conv", {"x", "w", "b"});
    c.ints("strides", {2, 2, 2}).text("auto_pad", "VALID");
    return c;
  };
  EXPECT_TRUE(op_matches(valid, x, w, b, naive_conv3d(x, w, b, {.stride = {2, 2, 2}})));
}

TEST(OnnxConv3d, RankFromXWhenNothingElseTellsIt) {
  // No attribute and a run-time W (test_convtranspose_3d's form): the 5-d X decides.
  const Tensor x = random({1, 2, 3, 4, 5}, 9), w = random({4, 2, 2, 2, 2}, 10);
  OpCase conv("Conv", {"x", "w"});
  EXPECT_TRUE(all_close(conv.run({x, w}), naive_conv3d(x, w, Tensor(), {}), Tolerance::op_f32()));
  const Tensor wt = random({2, 3, 2, 2, 2}, 11);
  OpCase up("ConvTranspose", {"x", "w"});
  EXPECT_TRUE(
      all_close(up.run({x, wt}), naive_conv_transpose3d(x, wt, Tensor(), {}), Tolerance::op_f32()));
}

TEST(OnnxConvTranspose3d, MatchesTheScatterDefinition) {
  const std::vector<Case> cases = {
      {"plain", {1, 2, 3, 4, 3}, {2, 3, 3, 3, 3}, {}},
      {"no bias", {2, 2, 3, 3, 3}, {2, 2, 2, 3, 2}, {}, false},
      {"strides, pads, output_padding",
       {1, 3, 3, 4, 2},
       {3, 2, 3, 2, 3},
       {.stride = {2, 3, 2},
        .pad_begin = {1, 0, 2},
        .pad_end = {0, 1, 1},
        .output_padding = {1, 2, 0}}},
      {"dilation",
       {1, 2, 3, 3, 4},
       {2, 2, 2, 3, 2},
       {.stride = {1, 2, 1}, .dilation = {2, 1, 3}, .output_padding = {1, 1, 0}}},
      {"groups", {1, 4, 2, 3, 3}, {4, 3, 2, 2, 3}, {.stride = {2, 2, 1}, .groups = 2}},
  };
  for (const Case& k : cases) {
    const Tensor x = random(k.x, 12), w = random(k.w, 13);
    const Tensor b = k.bias ? random({k.w[1] * k.g.groups}, 14) : Tensor();
    const Tensor expected = naive_conv_transpose3d(x, w, b, k.g);
    EXPECT_TRUE(
        op_matches([&] { return node_of("ConvTranspose", k.g, w, k.bias); }, x, w, b, expected))
        << k.name;
    const reference::ConvNdParams p{k.g.stride,  k.g.dilation,       k.g.pad_begin,
                                    k.g.pad_end, k.g.output_padding, k.g.groups};
    EXPECT_TRUE(all_close(reference::conv_transpose_nd(x, w, b, p), expected, Tolerance::op_f32()))
        << k.name;
    // oneDNN 2.x has no dilated deconvolution here: declined, the op ran the reference.
    std::string declined;
    const Tensor y = onednn::conv_transpose_nd(x, w, b, p, &declined);
    if (k.name == "dilation" && !y.defined()) {
      EXPECT_NE(declined.find("no conv_transpose_nd primitive"), std::string::npos) << declined;
      continue;
    }
    ASSERT_TRUE(y.defined()) << k.name << ": " << declined;
    EXPECT_TRUE(all_close(y, expected, Tolerance::op_f32())) << k.name;
  }
}

TEST(OnnxConvTranspose3d, OutputShapeAndSame) {
  const Tensor x = random({1, 2, 3, 3, 2}, 15), w = random({2, 2, 3, 2, 3}, 16);
  const Tensor b = random({2}, 17);
  // Stride 2: full = 2·(in − 1) + k = (7, 6, 5). output_shape (8, 5, 6): total = full − out =
  // (−1, 1, −1); without SAME_UPPER the split is end = ⌊total/2⌋, begin the rest (the ONNX
  // reference), so pads (0, 1, 0) / (−1, 0, −1): the negative ends extend the output.
  auto shaped = [&] {
    OpCase c("ConvTranspose", {"x", "w", "b"});
    c.ints("strides", {2, 2, 2}).ints("output_shape", {8, 5, 6});
    return c;
  };
  const Geometry shape_g{.stride = {2, 2, 2}, .pad_begin = {0, 1, 0}, .pad_end = {-1, 0, -1}};
  EXPECT_TRUE(op_matches(shaped, x, w, b, naive_conv_transpose3d(x, w, b, shape_g)));
  // The whole [N, C, D, H, W] form reads the same.
  auto whole = [&] {
    OpCase c("ConvTranspose", {"x", "w", "b"});
    c.ints("strides", {2, 2, 2}).ints("output_shape", {1, 2, 8, 5, 6});
    return c;
  };
  EXPECT_TRUE(op_matches(whole, x, w, b, naive_conv_transpose3d(x, w, b, shape_g)));
  // SAME_UPPER: out = in·stride = (6, 6, 4), total = (1, 0, 1): begin ⌊1/2⌋ = 0, end 1.
  // SAME_LOWER: begin 1, end 0.
  const Geometry upper{.stride = {2, 2, 2}, .pad_begin = {0, 0, 0}, .pad_end = {1, 0, 1}};
  const Geometry lower{.stride = {2, 2, 2}, .pad_begin = {1, 0, 1}, .pad_end = {0, 0, 0}};
  for (const auto& [mode, g] : std::vector<std::pair<std::string, Geometry>>{
           {"SAME_UPPER", upper}, {"SAME_LOWER", lower}}) {
    auto make = [&, mode = mode] {
      OpCase c("ConvTranspose", {"x", "w", "b"});
      c.ints("strides", {2, 2, 2}).text("auto_pad", mode);
      return c;
    };
    EXPECT_TRUE(op_matches(make, x, w, b, naive_conv_transpose3d(x, w, b, g))) << mode;
  }
  // The reference takes a negative begin pad that oneDNN declines.
  const reference::ConvNdParams p{{1, 1, 1}, {1, 1, 1}, {-1, 0, 0}, {0, 0, 0}, {}, 1};
  std::string declined;
  EXPECT_FALSE(onednn::conv_transpose_nd(x, w, b, p, &declined).defined());
  EXPECT_NE(declined.find("negative begin pad"), std::string::npos) << declined;
  EXPECT_TRUE(all_close(reference::conv_transpose_nd(x, w, b, p),
                        naive_conv_transpose3d(x, w, b, {.pad_begin = {-1, 0, 0}}),
                        Tolerance::op_f32()));
}

// bfloat16 operands: the same double sums, rounded once to bfloat16.
TEST(OnnxConv3d, BFloat16ReferenceMatchesFloat32) {
  const Tensor x = random({1, 2, 4, 4, 4}, 18), w = random({3, 2, 2, 2, 2}, 19);
  const Tensor b = random({3}, 20);
  const reference::ConvNdParams p{{1, 2, 1}, {1, 1, 2}, {1, 0, 1}, {0, 1, 1}, {}, 1};
  const Tensor bf =
      reference::conv_nd(x.to(DType::BFloat16), w.to(DType::BFloat16), b.to(DType::BFloat16), p);
  EXPECT_EQ(bf.dtype(), DType::BFloat16);
  const Tensor f = reference::conv_nd(x.to(DType::BFloat16).to(DType::Float32),
                                      w.to(DType::BFloat16).to(DType::Float32),
                                      b.to(DType::BFloat16).to(DType::Float32), p);
  EXPECT_TRUE(all_close(bf.to(DType::Float32), f, Tolerance::bf16()));
}

TEST(OnnxConv3d, Errors) {
  const Tensor w = random({4, 2, 3, 3, 3}, 21);
  auto build = [&](auto edit) {
    return [=] {
      OpCase c("Conv", {"x", "w"});
      c.constant("w", w);
      edit(c);
      c.module();
    };
  };
  auto run_op = [&](const std::string& op_type, Tensor x, Tensor weight, Tensor bias,
                    std::int64_t group = 1) {
    return [=] {
      OpCase c(op_type, {"x", "w", "b"});
      c.integer("group", group);
      c.run({x, weight, bias});
    };
  };
  expect_errors({
      {"strides length", build([](OpCase& c) {
         c.ints("strides", {1, 1});
       }),
       "strides must have 3 values, got 2 ([1, 1])"},
      {"pads length", build([](OpCase& c) {
         c.ints("pads", {1, 1, 1, 1});
       }),
       "pads must have 6 values, got 4"},
      {"negative pads", build([](OpCase& c) {
         c.ints("pads", {0, 0, -1, 0, 0, 0});
       }),
       "pads must be non-negative (got [0, 0, -1, 0, 0, 0])"},
      {"zero dilation", build([](OpCase& c) {
         c.ints("dilations", {1, 0, 1});
       }),
       "dilations must be positive (got [1, 0, 1])"},
      {"auto_pad with pads", build([](OpCase& c) {
         c.text("auto_pad", "SAME_LOWER").ints("pads", {1, 1, 1, 1, 1, 1});
       }),
       "auto_pad SAME_LOWER cannot be used together with pads"},
      {"unknown auto_pad", build([](OpCase& c) { c.text("auto_pad", "FULL"); }),
       "unknown auto_pad 'FULL'"},
      {"kernel_shape vs W", build([](OpCase& c) {
         c.ints("kernel_shape", {3, 3, 2});
       }),
       "kernel_shape [3, 3, 2] does not match W's spatial dims [3, 3, 3]"},
      {"group vs M", build([](OpCase& c) { c.integer("group", 3); }),
       "group (3) must divide W's output channels (4"},
      {"group 0", build([](OpCase& c) { c.integer("group", 0); }), "group must be positive"},
      {"constant bias length",
       [&] {
         OpCase c("Conv", {"x", "w", "b"});
         c.constant("w", w).constant("b", random({5}, 1));
         c.module();
       },
       "bias B must be 1-d of length 4 (output channels), got [5]"},
      {"4 spatial axes",
       [] {
         OpCase("Conv", {"x", "w"}).ints("kernel_shape", {1, 1, 1, 1}).module();
       },
       "unsupported: 4-d Conv"},
      {"6-d W",
       [] {
         OpCase c("Conv", {"x", "w"});
         c.constant("w", random({1, 1, 1, 1, 1, 1}, 1));
         c.module();
       },
       "unsupported: 4-d Conv"},
      {"ConvTranspose output_padding = stride",
       [] {
         OpCase("ConvTranspose", {"x", "w"})
             .ints("strides", {2, 2, 2})
             .ints("output_padding", {0, 2, 0})
             .module();
       },
       "output_padding [0, 2, 0] must be smaller than strides [2, 2, 2]"},
      {"ConvTranspose output_shape length",
       [] {
         OpCase("ConvTranspose", {"x", "w"})
             .ints("kernel_shape", {2, 2, 2})
             .ints("output_shape", {4, 4})
             .module();
       },
       "output_shape must have 3 values, got [4, 4]"},
      {"ConvTranspose group vs C",
       [] {
         OpCase c("ConvTranspose", {"x", "w"});
         c.constant("w", random({3, 2, 2, 2, 2}, 1)).integer("group", 2);
         c.module();
       },
       "group (2) must divide W's input channels (3"},
      // Run time.
      {"channels vs W", run_op("Conv", random({1, 3, 4, 4, 4}, 1), w, Tensor()),
       "Conv: X has 3 channels but W [4, 2, 3, 3, 3] with group 1 expects 2"},
      {"kernel larger than the input", run_op("Conv", random({1, 2, 2, 4, 4}, 1), w, Tensor()),
       "Conv: output dim <= 0 (in 2, k 3, dilation 1, pads 0/0)"},
      {"bias length", run_op("Conv", random({1, 2, 4, 4, 4}, 1), w, random({3}, 2)),
       "Conv: bias must be 1-d of length 4"},
      {"5-d X, 4-d W",
       run_op("Conv", random({1, 2, 4, 4, 4}, 1), random({4, 2, 3, 3}, 2), Tensor()),
       "Conv: W must be 5-d, got [4, 2, 3, 3]"},
      {"6-d X", run_op("Conv", random({1, 2, 2, 2, 2, 2}, 1), w, Tensor()),
       "unsupported: 4-d Conv (X is 6-d"},
      {"int64 X", run_op("Conv", zeros({1, 2, 4, 4, 4}, DType::Int64), w, Tensor()),
       "Conv: X has dtype int64"},
      {"ConvTranspose channels",
       run_op("ConvTranspose", random({1, 3, 2, 2, 2}, 1), random({2, 2, 2, 2, 2}, 2), Tensor()),
       "ConvTranspose: X has 3 channels but W [2, 2, 2, 2, 2] expects 2"},
      {"ConvTranspose inconsistent output_shape",
       [] {
         OpCase c("ConvTranspose", {"x", "w"});
         c.ints("strides", {2, 2, 2}).ints("output_shape", {9, 2, 2});
         c.run({random({1, 1, 2, 2, 2}, 1), random({1, 1, 2, 2, 2}, 2)});
       },
       "ConvTranspose: output_shape [9, 2, 2] is inconsistent with input [2, 2, 2]"},
  });
}

// A 3-d Conv followed by BatchNormalization: bn-folding (nn::Conv2d only) and the other conv
// passes leave both alone, bit for bit; the layout pass keeps the 5-d values contiguous.
TEST(OnnxConv3d, PassesLeaveItAlone) {
  for (const auto pass : {passes::fold_batch_norms, passes::reparameterize_branches,
                          passes::fold_pads, passes::fuse_activations, passes::plan_layout}) {
    GraphBuilder b;
    const std::string x = b.input("x", {1, 2, 4, 5, 5});
    const std::string w = b.constant("w", random({4, 2, 3, 3, 3}, 22));
    const std::string bias = b.constant("b", random({4}, 23));
    const std::string c = b.node(
        "Conv", {x, w, bias}, attrs({{"kernel_shape", I{3, 3, 3}}, {"pads", I{1, 1, 1, 1, 1, 1}}}));
    b.output(b.relu(b.bn(c, 4)));
    const passes::PassReport r = expect_left_alone(b, pass);
    EXPECT_FALSE(r.changed) << r.pass;
  }
}

}  // namespace conv3d_ops
}  // namespace refold::testing
