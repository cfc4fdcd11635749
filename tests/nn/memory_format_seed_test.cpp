// The first seed (PyTorch's convert_conv2d_weight_memory_format) as tests:
//  * converting only the conv weights makes the activation permute once at the first conv, stay
//    channels_last through compatible layers, go back to contiguous only at a layer that cannot
//    take channels_last, and permute again at the next conv — 3 permutes, nothing else;
//  * the seed's own example (N=2, C=8, 4×4 ints in [1, 10), Sequential(Conv2d(8, 4, 3)));
//  * Module::to(format), the aggressive variant, converts every 4-d parameter and buffer while
//    convert_conv2d_weight_memory_format touches conv weights only, in place, same handle.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "nn/nn_test_helpers.h"
#include "refold/refold.h"
#include "testing/compare.h"

namespace refold {
namespace {

constexpr auto CL = MemoryFormat::ChannelsLast;
constexpr auto NCHW = MemoryFormat::Contiguous;
using nn::utils::convert_conv2d_weight_memory_format;
using testing::Tolerance;

// A user's layer wrapping an NCHW-only kernel: it walks the raw buffer as [N][C][H][W], so it
// declares that it cannot take channels_last. y = relu(x) · (1 + c/8) per channel c.
class LegacyNchwOp : public nn::Module {
 public:
  LegacyNchwOp() : Module("LegacyNchwOp") {}
  bool accepts_channels_last() const override { return false; }
  Tensor forward(const Tensor& x) override {
    if (x.dim() != 4 || x.dtype() != DType::Float32 || !x.is_contiguous())
      throw Error("needs a contiguous float32 NCHW input, got " + x.description());
    Tensor y = empty(x.sizes());
    const float* in = x.data<float>();
    float* out = y.data<float>();
    const std::int64_t channels = x.size(1), plane = x.size(2) * x.size(3);
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      const auto c = static_cast<float>((i / plane) % channels);
      out[i] = std::max(in[i], 0.0f) * (1.0f + c / 8.0f);
    }
    return y;
  }
};

// conv → BN → ReLU → (NCHW-only) → conv → BN → SiLU → MaxPool: the seed's
// "incompatible layer between convolutions".
std::shared_ptr<nn::Sequential> seed_model() {
  Generator gen(99);
  auto bn1 = std::make_shared<nn::BatchNorm2d>(16);
  auto bn2 = std::make_shared<nn::BatchNorm2d>(8);
  testing::randomize(*bn1, gen);
  testing::randomize(*bn2, gen);
  return std::make_shared<nn::Sequential>(
      std::make_shared<nn::Conv2d>(nn::Conv2dOptions(8, 16, 3).padding(1)), bn1,
      std::make_shared<nn::ReLU>(), std::make_shared<LegacyNchwOp>(),
      std::make_shared<nn::Conv2d>(nn::Conv2dOptions(16, 8, 3).padding(1).groups(2)), bn2,
      std::make_shared<nn::SiLU>(), std::make_shared<nn::MaxPool2d>(2));
}

TEST(MemoryFormatSeed, PermutesAtFirstConvAtIncompatibleLayerAndAtNextConvOnly) {
  manual_seed(2024);
  auto model = seed_model();
  const Tensor x = randn({2, 8, 6, 6});  // NCHW, as a user hands it in

  // Without conversion everything stays NCHW and nothing is permuted.
  reset_permute_count();
  const Tensor reference = (*model)(x);
  EXPECT_EQ(permute_count(), 0u);
  EXPECT_EQ(reference.suggest_memory_format(), NCHW);

  nn::Module& returned = convert_conv2d_weight_memory_format(*model, CL);
  EXPECT_EQ(&returned, model.get());

  for (int run = 0; run < 2; ++run) {  // the weights are converted once, not per call
    reset_permute_count();
    const Tensor y = (*model)(x);
    EXPECT_EQ(permute_count(), 3u) << "run " << run;
    EXPECT_EQ(y.sizes(), (Shape{2, 8, 3, 3}));
    EXPECT_TRUE(y.is_contiguous(CL));
    EXPECT_EQ(y.suggest_memory_format(), CL);
    // oneDNN's NHWC and NCHW kernels sum in different orders: the fp32 op policy applies.
    EXPECT_TRUE(testing::all_close(y, reference, Tolerance::op_f32()));
  }
  EXPECT_TRUE(x.is_contiguous());  // the caller's input is never modified
}

TEST(MemoryFormatSeed, IntermediateFormatsFollowTheSeed) {
  manual_seed(2024);
  auto model = seed_model();
  convert_conv2d_weight_memory_format(*model, CL);
  Tensor x = randn({2, 8, 6, 6});

  // Step through the children as Sequential::forward does, recording each output's format and
  // the permutes each layer performed.
  std::vector<MemoryFormat> formats;
  std::vector<std::uint64_t> permutes;
  for (const auto& [name, layer] : model->named_children()) {
    reset_permute_count();
    x = (*layer)(x);
    permutes.push_back(permute_count());
    formats.push_back(x.suggest_memory_format());
    EXPECT_TRUE(x.is_contiguous(formats.back())) << name;
  }
  //                        conv BN  ReLU legacy conv BN  SiLU pool
  EXPECT_EQ(permutes, (std::vector<std::uint64_t>{1, 0, 0, 1, 1, 0, 0, 0}));
  EXPECT_EQ(formats, (std::vector<MemoryFormat>{CL, CL, CL, NCHW, CL, CL, CL, CL}));
}

TEST(MemoryFormatSeed, ChannelsLastInputNeedsOnlyThePermuteAroundTheIncompatibleLayer) {
  manual_seed(2024);
  auto model = seed_model();
  const Tensor x = randn({2, 8, 6, 6});
  const Tensor reference = (*model)(x);
  convert_conv2d_weight_memory_format(*model, CL);
  const Tensor x_cl = x.contiguous(CL);
  reset_permute_count();
  // oneDNN runs the conv (its own summation order): the fp32 op policy, not bit-identity.
  EXPECT_TRUE(testing::all_close((*model)(x_cl), reference, Tolerance::op_f32()));
  EXPECT_EQ(permute_count(), 2u);  // back at the legacy layer, again at the next conv
}

TEST(MemoryFormatSeed, WithoutTheDeclarationTheLegacyLayerWouldSeeChannelsLast) {
  // The counter-test: the NCHW-only layer relies on Module::operator() honouring
  // accepts_channels_last(); called on a channels_last tensor directly it refuses.
  LegacyNchwOp legacy;
  const Tensor x_cl = randn({1, 4, 3, 3}).contiguous(CL);
  EXPECT_TRUE(testing::throws_error([&] { legacy.forward(x_cl); }, "needs a contiguous"));
  reset_permute_count();
  EXPECT_TRUE(legacy(x_cl).is_contiguous());
  EXPECT_EQ(permute_count(), 1u);
}

// The seed's example: input = torch.randint(1, 10, (2, 8, 4, 4)); model =
// nn.Sequential(nn.Conv2d(8, 4, 3)); convert_conv2d_weight_memory_format(model, channels_last).
TEST(MemoryFormatSeed, SeedsOwnExample) {
  Generator gen(8);
  std::vector<float> ints(2 * 8 * 4 * 4);
  for (float& v : ints) v = static_cast<float>(1 + static_cast<int>(gen.uniform() * 9));  // [1, 10)
  const Tensor input = from_values(ints, {2, 8, 4, 4});
  EXPECT_EQ(*std::min_element(ints.begin(), ints.end()), 1.0f);
  EXPECT_EQ(*std::max_element(ints.begin(), ints.end()), 9.0f);

  manual_seed(0);
  auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Conv2d>(8, 4, 3));
  const Tensor reference = (*model)(input);

  nn::Module& same = convert_conv2d_weight_memory_format(*model, CL);
  EXPECT_EQ(&same, model.get());
  EXPECT_TRUE(model->at<nn::Conv2d>(0)->weight().is_contiguous(CL));
  reset_permute_count();
  const Tensor out = (*model)(input);
  EXPECT_EQ(permute_count(), 1u);
  EXPECT_EQ(out.sizes(), (Shape{2, 4, 2, 2}));
  EXPECT_TRUE(out.is_contiguous(CL));
  EXPECT_EQ(out.suggest_memory_format(), CL);
  // oneDNN runs the conv (its own summation order): the fp32 op policy, not bit-identity.
  EXPECT_TRUE(testing::all_close(out, reference, Tolerance::op_f32()));

  // The seed runs it in half precision; refold's 16-bit type is bfloat16. Weights and output
  // are rounded to 8 mantissa bits, hence the bf16 policy against the fp32 result.
  model->to(DType::BFloat16);
  EXPECT_TRUE(model->at<nn::Conv2d>(0)->weight().is_contiguous(CL));  // to(dtype) keeps layout
  const Tensor out_bf16 = (*model)(input.to(DType::BFloat16));
  EXPECT_EQ(out_bf16.dtype(), DType::BFloat16);
  EXPECT_TRUE(out_bf16.is_contiguous(CL));
  EXPECT_TRUE(testing::all_close(out_bf16, reference, Tolerance::bf16()));
}

// ---------------------------------------------------------------------------------------------
// What is converted, and how

// A non-conv layer with a 4-d parameter and a 4-d buffer (a learned positional scale).
class PositionalScale : public nn::Module {
 public:
  PositionalScale() : Module("PositionalScale") {
    scale_ = register_parameter("scale", randn({1, 4, 3, 3}));
    mask_ = register_buffer("mask", ones({2, 4, 3, 3}));
  }
  Tensor forward(const Tensor& x) override {
    return functional::mul(functional::mul(x, scale_), mask_);
  }
  Tensor scale_, mask_;
};

class MyConv : public nn::Conv2d {
 public:
  MyConv() : Conv2d("MyConv", nn::Conv2dOptions(3, 4, 3).padding(1)) {}
};
class Upsampler : public nn::ConvTranspose2d {
 public:
  Upsampler() : ConvTranspose2d("Upsampler", nn::ConvTranspose2dOptions(4, 2, 2).stride(2)) {}
};

struct Parts {
  std::shared_ptr<nn::Sequential> model;
  std::shared_ptr<MyConv> conv;
  std::shared_ptr<nn::BatchNorm2d> bn;
  std::shared_ptr<PositionalScale> pos;
  std::shared_ptr<Upsampler> up;
};

Parts mixed_model() {
  Parts p{nullptr, std::make_shared<MyConv>(), std::make_shared<nn::BatchNorm2d>(4),
          std::make_shared<PositionalScale>(), std::make_shared<Upsampler>()};
  // The deconv sits one level down, so the recursion has to reach it.
  p.model =
      std::make_shared<nn::Sequential>(p.conv, p.bn, p.pos, std::make_shared<nn::Sequential>(p.up));
  return p;
}

TEST(MemoryFormatSeed, ConvertTouchesConvWeightsOnlyIncludingSubclasses) {
  Parts p = mixed_model();
  const Tensor x = randn({2, 3, 3, 3});
  const Tensor reference = (*p.model)(x);
  convert_conv2d_weight_memory_format(*p.model, CL);
  EXPECT_TRUE(p.conv->weight().is_contiguous(CL));  // Conv2d subclass
  EXPECT_TRUE(p.up->weight().is_contiguous(CL));    // ConvTranspose2d subclass, nested
  EXPECT_EQ(p.up->weight().suggest_memory_format(), CL);
  EXPECT_TRUE(p.pos->scale_.is_contiguous());  // a 4-d non-conv parameter: untouched
  EXPECT_FALSE(p.pos->scale_.is_contiguous(CL));
  EXPECT_TRUE(p.pos->mask_.is_contiguous());  // a 4-d buffer: untouched
  EXPECT_FALSE(p.pos->mask_.is_contiguous(CL));
  EXPECT_TRUE(p.conv->bias().is_contiguous());
  // oneDNN runs the conv (its own summation order): the fp32 op policy, not bit-identity.
  EXPECT_TRUE(testing::all_close((*p.model)(x), reference, Tolerance::op_f32()));
}

TEST(MemoryFormatSeed, ModuleToConvertsEvery4dParameterAndBuffer) {
  Parts p = mixed_model();
  const Tensor x = randn({2, 3, 3, 3});
  const Tensor reference = (*p.model)(x);
  const Tensor bn_weight = p.bn->weight();
  const void* bn_data = bn_weight.data_ptr();
  EXPECT_EQ(&p.model->to(CL), p.model.get());
  for (const Tensor& t : {p.conv->weight(), p.up->weight(), p.pos->scale_, p.pos->mask_}) {
    EXPECT_TRUE(t.is_contiguous(CL)) << t.description();
    EXPECT_FALSE(t.is_contiguous()) << t.description();
  }
  // BN's tensors are 1-d (and num_batches_tracked 0-d): nothing to convert.
  EXPECT_TRUE(p.bn->weight().is_same(bn_weight));
  EXPECT_EQ(p.bn->weight().data_ptr(), bn_data);
  // oneDNN runs the conv (its own summation order): the fp32 op policy, not bit-identity.
  EXPECT_TRUE(testing::all_close((*p.model)(x), reference, Tolerance::op_f32()));

  p.model->to(NCHW);
  for (const Tensor& t : {p.conv->weight(), p.up->weight(), p.pos->scale_, p.pos->mask_})
    EXPECT_TRUE(t.is_contiguous()) << t.description();
}

TEST(MemoryFormatSeed, ConvertedWeightIsTheSameParameterUnderTheSameName) {
  Parts p = mixed_model();
  const Tensor weight = p.conv->weight();
  const std::vector<float> values = weight.to_vector();
  const Tensor bias = p.conv->bias();
  const void* bias_data = bias.data_ptr();
  const auto before = p.model->named_parameters();

  convert_conv2d_weight_memory_format(*p.model, CL);

  EXPECT_TRUE(p.conv->weight().is_same(weight));
  EXPECT_TRUE(weight.is_contiguous(CL));  // every copy of the handle sees the new layout
  EXPECT_EQ(weight.to_vector(), values);  // logical values unchanged
  const auto after = p.model->named_parameters();
  ASSERT_EQ(after.size(), before.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].first, before[i].first);
    EXPECT_TRUE(after[i].second.is_same(before[i].second)) << after[i].first;
  }
  EXPECT_TRUE(p.model->state_dict().at("0.weight").is_same(weight));
  EXPECT_EQ(p.conv->bias().data_ptr(), bias_data);  // bias untouched

  // And back.
  convert_conv2d_weight_memory_format(*p.model, NCHW);
  EXPECT_TRUE(p.conv->weight().is_same(weight));
  EXPECT_TRUE(weight.is_contiguous());
  EXPECT_EQ(weight.to_vector(), values);
}

TEST(MemoryFormatSeed, ConvertIncludesTheModuleItselfAndNeedsNoSharedOwnership) {
  nn::Conv2d conv(8, 4, 3);  // a bare conv, on the stack
  convert_conv2d_weight_memory_format(conv, CL);
  EXPECT_TRUE(conv.weight().is_contiguous(CL));
  nn::ConvTranspose2d up(4, 8, 3);
  convert_conv2d_weight_memory_format(up, CL);
  EXPECT_TRUE(up.weight().is_contiguous(CL));
}

TEST(MemoryFormatSeed, PointwiseConvWeightIsRestridedLikePyTorch) {
  // A 1×1 kernel [4, 8, 1, 1] is contiguous in both formats (size-1 dims), yet PyTorch's
  // convert restrides it (resize_(memory_format=…)), so its conv runs channels_last.
  nn::Conv2d pointwise(8, 4, 1);
  const Tensor weight = pointwise.weight();
  const void* data = weight.data_ptr();
  reset_permute_count();
  convert_conv2d_weight_memory_format(pointwise, CL);
  EXPECT_EQ(permute_count(), 0u);  // no data moved
  EXPECT_EQ(weight.data_ptr(), data);
  EXPECT_EQ(weight.strides(), (Shape{8, 1, 8, 8}));
  EXPECT_EQ(weight.suggest_memory_format(), CL);
  const Tensor x = randn({1, 8, 3, 3});
  EXPECT_EQ(pointwise(x).suggest_memory_format(), CL);
  convert_conv2d_weight_memory_format(pointwise, NCHW);
  EXPECT_EQ(weight.strides(), (Shape{8, 1, 1, 1}));
  EXPECT_EQ(pointwise(x).suggest_memory_format(), NCHW);
}

TEST(MemoryFormatSeed, PreserveIsNotATargetFormat) {
  auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Conv2d>(3, 3, 3));
  EXPECT_TRUE(testing::throws_error(
      [&] { convert_conv2d_weight_memory_format(*model, MemoryFormat::Preserve); },
      "convert_conv2d_weight_memory_format: 'preserve' is not a target format"));
  EXPECT_TRUE(testing::throws_error([&] { model->to(MemoryFormat::Preserve); },
                                    "Sequential: to(): 'preserve' is not a target format"));
}

}  // namespace
}  // namespace refold
