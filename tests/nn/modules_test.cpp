// Modules: PyTorch 1.13 parameter names, shapes and defaults; naming of nested modules;
// state_dict order and loading; error context; constructor validation.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "nn/nn_test_helpers.h"
#include "refold/refold.h"
#include "testing/compare.h"

namespace refold {
namespace {

using nn::ModulePtr;
using testing::throws_error;

std::vector<std::string> names(const std::vector<nn::NamedTensor>& list) {
  std::vector<std::string> out;
  for (const auto& [n, t] : list) out.push_back(n);
  return out;
}

std::vector<std::string> names(const StateDict& state) {
  std::vector<std::string> out;
  for (const auto& [n, t] : state) out.push_back(n);
  return out;
}

float max_abs(const Tensor& t) {
  float m = 0;
  for (float v : t.to_vector()) m = std::max(m, std::fabs(v));
  return m;
}

// ---------------------------------------------------------------------------------------------
// Names, shapes, defaults (torch.nn, PyTorch 1.13)

TEST(NnModules, Conv2dParameterShapesAndDefaults) {
  // torch.nn.Conv2d(8, 4, 3, groups=2).weight.shape == [4, 4, 3, 3]
  nn::Conv2d conv(nn::Conv2dOptions(8, 4, 3).groups(2));
  EXPECT_EQ(conv.type_name(), "Conv2d");
  EXPECT_EQ(names(conv.named_parameters()), (std::vector<std::string>{"weight", "bias"}));
  EXPECT_TRUE(conv.named_buffers().empty());
  EXPECT_EQ(conv.weight().sizes(), (Shape{4, 4, 3, 3}));
  EXPECT_EQ(conv.bias().sizes(), (Shape{4}));
  EXPECT_TRUE(conv.has_bias());
  EXPECT_TRUE(conv.weight().is_contiguous());
  EXPECT_EQ(conv.weight().dtype(), DType::Float32);
  EXPECT_TRUE(conv.accepts_channels_last());

  const nn::Conv2dOptions o =
      nn::Conv2d(3, 5, {1, 2}).options();  // a copy: the module is a temporary
  EXPECT_EQ(o.in_channels(), 3);
  EXPECT_EQ(o.out_channels(), 5);
  EXPECT_EQ(o.kernel_size(), Size2d(1, 2));
  EXPECT_EQ(o.stride(), Size2d(1));
  EXPECT_EQ(o.padding().mode(), Padding2d::Mode::Explicit);
  EXPECT_EQ(o.padding().explicit_pads(), Pads2d{});
  EXPECT_EQ(o.dilation(), Size2d(1));
  EXPECT_EQ(o.groups(), 1);
  EXPECT_TRUE(o.bias());

  nn::Conv2d no_bias(nn::Conv2dOptions(3, 6, {3, 1}).bias(false));
  EXPECT_FALSE(no_bias.has_bias());
  EXPECT_FALSE(no_bias.bias().defined());
  EXPECT_EQ(names(no_bias.named_parameters()), (std::vector<std::string>{"weight"}));
  EXPECT_EQ(no_bias.weight().sizes(), (Shape{6, 3, 3, 1}));

  // Depthwise: groups == in_channels.
  nn::Conv2d dw(nn::Conv2dOptions(13, 13, 3).groups(13));
  EXPECT_EQ(dw.weight().sizes(), (Shape{13, 1, 3, 3}));
}

TEST(NnModules, ConvTranspose2dWeightIsInByOutPerGroup) {
  // torch.nn.ConvTranspose2d(8, 4, 3, groups=2).weight.shape == [8, 2, 3, 3]
  nn::ConvTranspose2d up(nn::ConvTranspose2dOptions(8, 4, 3).groups(2));
  EXPECT_EQ(up.type_name(), "ConvTranspose2d");
  EXPECT_EQ(names(up.named_parameters()), (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(up.weight().sizes(), (Shape{8, 2, 3, 3}));
  EXPECT_EQ(up.bias().sizes(), (Shape{4}));
  const auto& o = up.options();
  EXPECT_EQ(o.stride(), Size2d(1));
  EXPECT_EQ(o.padding(), Size2d(0));
  EXPECT_EQ(o.output_padding(), Size2d(0));
  EXPECT_EQ(o.dilation(), Size2d(1));
  EXPECT_TRUE(o.bias());
  nn::ConvTranspose2d plain(4, 6, {2, 3});
  EXPECT_EQ(plain.weight().sizes(), (Shape{4, 6, 2, 3}));
}

TEST(NnModules, BatchNorm2dStateMatchesPyTorch) {
  nn::BatchNorm2d bn(5);
  EXPECT_EQ(bn.type_name(), "BatchNorm2d");
  EXPECT_EQ(names(bn.named_parameters()), (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(names(bn.named_buffers()),
            (std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"}));
  EXPECT_EQ(names(bn.state_dict()),
            (std::vector<std::string>{"weight", "bias", "running_mean", "running_var",
                                      "num_batches_tracked"}));
  EXPECT_EQ(bn.weight().to_vector(), std::vector<float>(5, 1.0f));
  EXPECT_EQ(bn.bias().to_vector(), std::vector<float>(5, 0.0f));
  EXPECT_EQ(bn.running_mean().to_vector(), std::vector<float>(5, 0.0f));
  EXPECT_EQ(bn.running_var().to_vector(), std::vector<float>(5, 1.0f));
  const Tensor tracked = bn.num_batches_tracked();
  EXPECT_EQ(tracked.dtype(), DType::Int64);
  EXPECT_EQ(tracked.dim(), 0);
  EXPECT_EQ(tracked.item(), 0.0f);
  EXPECT_EQ(bn.options().eps(), 1e-5);
  EXPECT_EQ(bn.options().momentum(), 0.1);
  EXPECT_TRUE(bn.options().affine());
  EXPECT_TRUE(bn.options().track_running_stats());

  nn::BatchNorm2d plain(nn::BatchNorm2dOptions(3).affine(false).eps(1e-3));
  EXPECT_TRUE(plain.named_parameters().empty());
  EXPECT_FALSE(plain.weight().defined());
  EXPECT_EQ(names(plain.state_dict()),
            (std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"}));
}

TEST(NnModules, LinearAndParameterFreeModules) {
  nn::Linear fc(5, 3);
  EXPECT_EQ(names(fc.named_parameters()), (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(fc.weight().sizes(), (Shape{3, 5}));
  EXPECT_EQ(fc.bias().sizes(), (Shape{3}));
  EXPECT_FALSE(nn::Linear(nn::LinearOptions(5, 3).bias(false)).has_bias());

  const std::vector<std::pair<ModulePtr, std::string>> free = {
      {std::make_shared<nn::ReLU>(), "ReLU"},
      {std::make_shared<nn::ReLU6>(), "ReLU6"},
      {std::make_shared<nn::LeakyReLU>(), "LeakyReLU"},
      {std::make_shared<nn::Sigmoid>(), "Sigmoid"},
      {std::make_shared<nn::SiLU>(), "SiLU"},
      {std::make_shared<nn::Hardswish>(), "Hardswish"},
      {std::make_shared<nn::Hardsigmoid>(), "Hardsigmoid"},
      {std::make_shared<nn::MaxPool2d>(2), "MaxPool2d"},
      {std::make_shared<nn::AvgPool2d>(2), "AvgPool2d"},
      {std::make_shared<nn::AdaptiveAvgPool2d>(1), "AdaptiveAvgPool2d"},
      {std::make_shared<nn::Flatten>(), "Flatten"},
      {std::make_shared<nn::Identity>(), "Identity"},
      {std::make_shared<nn::PixelShuffle>(2), "PixelShuffle"},
      {std::make_shared<nn::Sequential>(), "Sequential"},
  };
  for (const auto& [module, type] : free) {
    EXPECT_EQ(module->type_name(), type);
    EXPECT_TRUE(module->state_dict().empty()) << type;
    // Only Flatten is documented as NCHW-only (nn/basic.h).
    EXPECT_EQ(module->accepts_channels_last(), type != "Flatten") << type;
  }
}

TEST(NnModules, OptionDefaultsArePyTorchs) {
  EXPECT_EQ(nn::LeakyReLU().options().negative_slope(), 0.01);
  EXPECT_EQ(nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)).options().negative_slope(),
            0.2);

  const nn::MaxPool2dOptions mp = nn::MaxPool2d(3).options();
  EXPECT_EQ(mp.stride(), Size2d(3));  // stride defaults to kernel_size
  EXPECT_EQ(mp.padding(), Size2d(0));
  EXPECT_EQ(mp.dilation(), Size2d(1));
  EXPECT_FALSE(mp.ceil_mode());
  EXPECT_EQ(nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2)).options().stride(), Size2d(2));

  const nn::AvgPool2dOptions ap = nn::AvgPool2d({2, 3}).options();
  EXPECT_EQ(ap.stride(), Size2d(2, 3));
  EXPECT_EQ(ap.padding(), Size2d(0));
  EXPECT_FALSE(ap.ceil_mode());
  EXPECT_TRUE(ap.count_include_pad());
  EXPECT_FALSE(ap.divisor_override().has_value());

  EXPECT_EQ(nn::AdaptiveAvgPool2d({2, 3}).options().output_size(), Size2d(2, 3));
  EXPECT_EQ(nn::Flatten().options().start_dim(), 1);
  EXPECT_EQ(nn::Flatten().options().end_dim(), -1);
  EXPECT_EQ(nn::PixelShuffle(3).options().upscale_factor(), 3);
}

// reset_parameters(): kaiming_uniform_(a=√5) ⇒ U(−1/√fan_in, 1/√fan_in) for weight and bias.
TEST(NnModules, DefaultInitIsPyTorchsUniformBound) {
  struct Case {
    std::string what;
    Tensor weight, bias;
    double fan_in;
  };
  manual_seed(11);
  nn::Conv2d conv(nn::Conv2dOptions(8, 16, 3).groups(2));                  // fan_in 4·3·3
  nn::ConvTranspose2d up(nn::ConvTranspose2dOptions(8, 16, 3).groups(2));  // 8·3·3 (out/g)
  nn::Linear fc(64, 32);                                                   // fan_in 64
  const std::vector<Case> cases = {{"Conv2d", conv.weight(), conv.bias(), 36},
                                   {"ConvTranspose2d", up.weight(), up.bias(), 72},
                                   {"Linear", fc.weight(), fc.bias(), 64}};
  for (const Case& c : cases) {
    const double bound = 1.0 / std::sqrt(c.fan_in);
    // Every value inside the bound, and the largest close to it (≥ 0.9·bound: hundreds of
    // uniform draws), so a narrower or wider distribution fails.
    EXPECT_LE(max_abs(c.weight), bound) << c.what;
    EXPECT_GE(max_abs(c.weight), 0.9 * bound) << c.what;
    EXPECT_LE(max_abs(c.bias), bound) << c.what;
    EXPECT_GT(max_abs(c.bias), 0.0f) << c.what;
  }
}

TEST(NnModules, InitIsDeterministicUnderManualSeed) {
  manual_seed(3);
  nn::Conv2d a(4, 4, 3);
  manual_seed(3);
  nn::Conv2d b(4, 4, 3);
  nn::Conv2d c(4, 4, 3);
  EXPECT_EQ(a.weight().to_vector(), b.weight().to_vector());
  EXPECT_EQ(a.bias().to_vector(), b.bias().to_vector());
  EXPECT_NE(a.weight().to_vector(), c.weight().to_vector());
}

// ---------------------------------------------------------------------------------------------
// Nesting, naming, state_dict

std::shared_ptr<nn::Sequential> nested_model() {
  // Sequential(Conv2d(3, 8, 3, padding=1), Sequential(Conv2d(8, 4, 1), BatchNorm2d(4)), ReLU())
  auto inner = std::make_shared<nn::Sequential>(std::make_shared<nn::Conv2d>(8, 4, 1),
                                                std::make_shared<nn::BatchNorm2d>(4));
  return std::make_shared<nn::Sequential>(
      std::make_shared<nn::Conv2d>(nn::Conv2dOptions(3, 8, 3).padding(1)), inner,
      std::make_shared<nn::ReLU>());
}

TEST(NnModules, NamedModulesUseDottedNames) {
  auto model = nested_model();
  std::vector<std::string> got, types;
  for (const auto& [name, module] : model->named_modules()) {
    got.push_back(name);
    types.push_back(module->type_name());
  }
  EXPECT_EQ(got, (std::vector<std::string>{"", "0", "1", "1.0", "1.1", "2"}));
  EXPECT_EQ(types, (std::vector<std::string>{"Sequential", "Conv2d", "Sequential", "Conv2d",
                                             "BatchNorm2d", "ReLU"}));
  std::vector<std::string> prefixed;
  for (const auto& [name, module] : model->named_modules("net")) prefixed.push_back(name);
  EXPECT_EQ(prefixed.at(3), "net.1.0");

  std::vector<std::string> children;
  for (const auto& [name, module] : model->named_children()) children.push_back(name);
  EXPECT_EQ(children, (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ((*model)[1], model->child("1"));
  EXPECT_EQ(model->size(), 3u);
  EXPECT_EQ(model->at<nn::Sequential>(1)->at<nn::BatchNorm2d>(1)->options().num_features(), 4);
}

TEST(NnModules, StateDictOrderIsPyTorchs) {
  auto model = nested_model();
  const std::vector<std::string> expected = {
      "0.weight",         "0.bias",          "1.0.weight",
      "1.0.bias",         "1.1.weight",      "1.1.bias",
      "1.1.running_mean", "1.1.running_var", "1.1.num_batches_tracked"};
  EXPECT_EQ(names(model->state_dict()), expected);
  EXPECT_EQ(names(model->named_parameters()),
            (std::vector<std::string>{"0.weight", "0.bias", "1.0.weight", "1.0.bias", "1.1.weight",
                                      "1.1.bias"}));
  EXPECT_EQ(
      names(model->named_buffers()),
      (std::vector<std::string>{"1.1.running_mean", "1.1.running_var", "1.1.num_batches_tracked"}));
  EXPECT_EQ(names(model->named_parameters(/*recurse=*/false)), std::vector<std::string>{});
  // The state_dict holds the module's own handles.
  EXPECT_TRUE(model->state_dict()
                  .at("1.0.weight")
                  .is_same(model->at<nn::Sequential>(1)->at<nn::Conv2d>(0)->weight()));
}

TEST(NnModules, LoadStateDictStrictCopiesEveryTensor) {
  manual_seed(1);
  auto source = nested_model();
  Generator gen(5);
  testing::randomize(*source->at<nn::Sequential>(1)->at<nn::BatchNorm2d>(1), gen);
  manual_seed(2);
  auto target = nested_model();
  const Tensor target_weight = target->at<nn::Conv2d>(0)->weight();

  const nn::LoadResult result = target->load_state_dict(source->state_dict());
  EXPECT_TRUE(result.missing_keys.empty());
  EXPECT_TRUE(result.unexpected_keys.empty());
  for (const auto& [name, tensor] : source->state_dict())
    EXPECT_EQ(target->state_dict().at(name).to_vector(), tensor.to_vector()) << name;
  // Copied into the existing parameter, not replaced.
  EXPECT_TRUE(target->at<nn::Conv2d>(0)->weight().is_same(target_weight));
  EXPECT_FALSE(target_weight.shares_storage(source->at<nn::Conv2d>(0)->weight()));

  const Tensor x = randn({2, 3, 5, 5}, {}, gen);
  EXPECT_TRUE(testing::all_close((*target)(x), (*source)(x), testing::Tolerance::exact()));
}

TEST(NnModules, LoadStateDictKeepsAChannelsLastParameterLayout) {
  auto source = nested_model();
  auto target = nested_model();
  nn::utils::convert_conv2d_weight_memory_format(*target, MemoryFormat::ChannelsLast);
  target->load_state_dict(source->state_dict());
  const Tensor w = target->at<nn::Conv2d>(0)->weight();
  EXPECT_TRUE(w.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_EQ(w.to_vector(), source->at<nn::Conv2d>(0)->weight().to_vector());
}

TEST(NnModules, LoadStateDictNamesMissingUnexpectedAndMisShapedKeys) {
  auto model = nested_model();
  const StateDict all = model->state_dict();

  StateDict missing;  // everything but "1.0.bias"
  for (const auto& [n, t] : all)
    if (n != "1.0.bias") missing.insert(n, t);
  EXPECT_TRUE(throws_error([&] { model->load_state_dict(missing); },
                           "Sequential: load_state_dict: missing keys: 1.0.bias"));

  StateDict unexpected = all;
  unexpected.insert("1.2.weight", zeros({3}));
  EXPECT_TRUE(
      throws_error([&] { model->load_state_dict(unexpected); }, "unexpected keys: 1.2.weight"));

  StateDict misshaped;
  for (const auto& [n, t] : all) misshaped.insert(n, n == "0.weight" ? zeros({8, 3, 1, 1}) : t);
  EXPECT_TRUE(throws_error([&] { model->load_state_dict(misshaped); },
                           "'0.weight': checkpoint has [8, 3, 1, 1], module has [8, 3, 3, 3]"));
  // A size mismatch throws even when not strict, and nothing is copied before the check.
  const std::vector<float> before = model->at<nn::Conv2d>(0)->bias().to_vector();
  StateDict misshaped_changed;
  for (const auto& [n, t] : all)
    misshaped_changed.insert(n, n == "0.weight" ? zeros({8, 3, 1, 1}) : zeros(t.sizes()));
  EXPECT_TRUE(
      throws_error([&] { model->load_state_dict(misshaped_changed, false); }, "size mismatch"));
  EXPECT_EQ(model->at<nn::Conv2d>(0)->bias().to_vector(), before);
}

TEST(NnModules, LoadStateDictNonStrictReportsKeys) {
  auto model = nested_model();
  StateDict partial;
  partial.insert("0.bias", full({8}, 2.5f));
  partial.insert("head.weight", zeros({1}));
  const nn::LoadResult result = model->load_state_dict(partial, /*strict=*/false);
  EXPECT_EQ(result.unexpected_keys, (std::vector<std::string>{"head.weight"}));
  EXPECT_EQ(result.missing_keys.size(), model->state_dict().size() - 1);
  EXPECT_EQ(result.missing_keys.front(), "0.weight");
  EXPECT_EQ(model->at<nn::Conv2d>(0)->bias().to_vector(), std::vector<float>(8, 2.5f));
}

// ---------------------------------------------------------------------------------------------
// Error context: the innermost module's type and dotted path

TEST(NnModules, ErrorInsideNestedModuleNamesItsPath) {
  auto inner = std::make_shared<nn::Sequential>(std::make_shared<nn::Conv2d>(4, 4, 1),
                                                std::make_shared<nn::ReLU>());
  auto model = std::make_shared<nn::Sequential>(
      std::make_shared<nn::Conv2d>(nn::Conv2dOptions(3, 8, 3).padding(1)), inner);
  // "1.0" expects 4 channels and gets 8.
  try {
    (*model)(randn({1, 3, 6, 6}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("Conv2d '1.0': ", 0), 0u) << e.what();
    EXPECT_TRUE(e.has_context());
    EXPECT_EQ(std::string(e.what()), "Conv2d '1.0': " + e.message());
  }
  // The wrong input at the first layer names "0"; a module called on its own has no path.
  EXPECT_TRUE(throws_error([&] { (*model)(randn({1, 5, 6, 6})); }, "Conv2d '0': "));
  nn::Conv2d alone(3, 8, 3);
  try {
    alone(randn({1, 5, 6, 6}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("Conv2d: ", 0), 0u) << e.what();
  }
  // And the thread-local path is unwound: a later error elsewhere is not mislabelled.
  auto bn = std::make_shared<nn::Sequential>(std::make_shared<nn::BatchNorm2d>(4));
  EXPECT_TRUE(throws_error([&] { (*bn)(randn({1, 3, 2, 2})); }, "BatchNorm2d '0': "));
}

// ---------------------------------------------------------------------------------------------
// Constructor validation: one row per rule

TEST(NnModules, ConstructorsRejectBadOptions) {
  using nn::Conv2dOptions;
  using nn::ConvTranspose2dOptions;
  struct Row {
    std::function<void()> build;
    std::string message;
  };
  const std::vector<Row> rows = {
      {[] { nn::Conv2d(0, 4, 3); }, "Conv2d: in_channels (0) must be positive"},
      {[] { nn::Conv2d(8, -1, 3); }, "Conv2d: out_channels (-1) must be positive"},
      {[] {
         nn::Conv2d(8, 4, {3, 0});
       },
       "Conv2d: kernel_size (3, 0) must be positive"},
      {[] { nn::Conv2d(Conv2dOptions(8, 4, 3).groups(3)); },
       "Conv2d: groups (3) must divide in_channels (8)"},
      {[] { nn::Conv2d(Conv2dOptions(8, 6, 3).groups(4)); },
       "Conv2d: groups (4) must divide out_channels (6)"},
      {[] { nn::Conv2d(Conv2dOptions(8, 4, 3).groups(0)); }, "Conv2d: groups (0) must be positive"},
      {[] { nn::Conv2d(Conv2dOptions(8, 4, 3).stride(0)); },
       "Conv2d: stride (0, 0) must be positive"},
      {[] {
         nn::Conv2d(Conv2dOptions(8, 4, 3).stride({1, -2}));
       },
       "Conv2d: stride (1, -2) must be positive"},
      {[] { nn::Conv2d(Conv2dOptions(8, 4, 3).dilation(0)); },
       "Conv2d: dilation (0, 0) must be positive"},
      {[] { nn::Conv2d(Conv2dOptions(8, 4, 3).padding(-1)); },
       "Conv2d: padding (top -1, left -1, bottom -1, right -1) must be non-negative"},
      {[] { nn::Conv2d(Conv2dOptions(8, 4, 3).padding(Padding2d::asymmetric(0, 1, 0, -1))); },
       "Conv2d: padding (top 0, left 1, bottom 0, right -1) must be non-negative"},
      {[] { nn::Conv2d(Conv2dOptions(8, 4, 3).padding(Padding2d::same()).stride(2)); },
       "Conv2d: padding 'same' needs stride 1, got stride (2, 2)"},
      {[] { nn::ConvTranspose2d(0, 4, 3); }, "ConvTranspose2d: in_channels (0) must be positive"},
      {[] { nn::ConvTranspose2d(ConvTranspose2dOptions(8, 4, 3).groups(3)); },
       "ConvTranspose2d: groups (3) must divide in_channels (8)"},
      {[] { nn::ConvTranspose2d(ConvTranspose2dOptions(8, 4, 3).padding(-1)); },
       "ConvTranspose2d: padding (-1, -1) must be non-negative"},
      {[] { nn::ConvTranspose2d(ConvTranspose2dOptions(8, 4, 3).stride(0)); },
       "ConvTranspose2d: stride (0, 0) must be positive"},
      {[] { nn::ConvTranspose2d(ConvTranspose2dOptions(8, 4, 3).stride(2).output_padding(2)); },
       "ConvTranspose2d: output_padding (2, 2) must be smaller than either stride (2, 2) or "
       "dilation (1, 1)"},
      {[] {
         nn::ConvTranspose2d(ConvTranspose2dOptions(8, 4, 3).output_padding({0, 1}));
       },
       "ConvTranspose2d: output_padding (0, 1) must be smaller"},
      {[] { nn::ConvTranspose2d(ConvTranspose2dOptions(8, 4, 3).output_padding(-1)); },
       "ConvTranspose2d: output_padding (-1, -1) must be non-negative"},
      {[] { nn::BatchNorm2d(0); }, "BatchNorm2d: num_features (0) must be positive"},
      {[] { nn::BatchNorm2d(nn::BatchNorm2dOptions(4).eps(-1e-5)); },
       "BatchNorm2d: eps (-1e-05) must be finite and non-negative"},
      {[] { nn::BatchNorm2d(nn::BatchNorm2dOptions(4).track_running_stats(false)); },
       "BatchNorm2d: track_running_stats=false is not supported"},
      {[] { nn::Linear(0, 3); }, "Linear: in_features (0) must be positive"},
      {[] { nn::Linear(3, 0); }, "Linear: out_features (0) must be positive"},
      {[] { nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(NAN)); },
       "LeakyReLU: negative_slope (nan) must be finite"},
      {[] { nn::MaxPool2d(0); }, "MaxPool2d: kernel_size (0, 0) must be positive"},
      {[] { nn::MaxPool2d(nn::MaxPool2dOptions(2).stride(0)); },
       "MaxPool2d: stride (0, 0) must be positive"},
      {[] { nn::MaxPool2d(nn::MaxPool2dOptions(3).padding(2)); },
       "MaxPool2d: padding (2, 2) must be at most half of kernel_size (3, 3)"},
      {[] {
         nn::MaxPool2d(nn::MaxPool2dOptions(3).dilation({1, 0}));
       },
       "MaxPool2d: dilation (1, 0) must be positive"},
      {[] { nn::AvgPool2d(nn::AvgPool2dOptions(2).padding(-1)); },
       "AvgPool2d: padding (-1, -1) must be non-negative"},
      {[] { nn::AvgPool2d(nn::AvgPool2dOptions(2).divisor_override(0)); },
       "AvgPool2d: divisor_override must not be 0"},
      {[] {
         nn::AdaptiveAvgPool2d({0, 2});
       },
       "AdaptiveAvgPool2d: output_size (0, 2) must be positive"},
      {[] { nn::PixelShuffle(0); }, "PixelShuffle: upscale_factor (0) must be positive"},
      {[] { nn::Sequential().push_back(nullptr); }, "Sequential: push_back given a null module"},
      {[] { nn::Sequential()[0]; }, "Sequential: index 0 out of range (size 0)"},
      {[] {
         nn::Sequential s(std::make_shared<nn::ReLU>());
         s.at<nn::Conv2d>(0);
       },
       "Sequential: child 0 is a ReLU"},
  };
  for (const Row& row : rows) EXPECT_TRUE(throws_error(row.build, row.message));

  // The edges that are allowed.
  EXPECT_NO_THROW(nn::Conv2d(nn::Conv2dOptions(8, 4, 3).padding(Padding2d::same())));
  EXPECT_NO_THROW(nn::Conv2d(nn::Conv2dOptions(8, 4, 3).padding(Padding2d::valid()).stride(2)));
  EXPECT_NO_THROW(
      nn::ConvTranspose2d(ConvTranspose2dOptions(8, 4, 3).dilation(2).output_padding(1)));
  EXPECT_NO_THROW(nn::ConvTranspose2d(ConvTranspose2dOptions(8, 4, 3).stride(3).output_padding(2)));
  EXPECT_NO_THROW(nn::MaxPool2d(nn::MaxPool2dOptions(3).padding(1)));
  EXPECT_NO_THROW(nn::BatchNorm2d(nn::BatchNorm2dOptions(4).eps(0)));
}

// The constructors over given parameters (what an imported graph's nodes run): the very handles
// are registered, no initial values are drawn, and parameters that do not fit the options are
// refused naming the module and what was given.
TEST(NnModules, ConstructorsOverGivenParametersRegisterTheHandles) {
  manual_seed(7);
  const Tensor w = randn({4, 3, 3, 3}), b = randn({4});
  const Tensor tw = randn({3, 4, 2, 2}), fw = randn({5, 6}), fb = randn({5});
  const Tensor s = randn({4}), shift = randn({4}), mean = randn({4}), var = ones({4});
  const Generator before = default_generator();
  const nn::Conv2d conv(nn::Conv2dOptions(3, 4, 3), w, b);
  const nn::ConvTranspose2d up(nn::ConvTranspose2dOptions(3, 4, 2).bias(false), tw, Tensor());
  const nn::Linear fc(nn::LinearOptions(6, 5), fw, fb);
  const nn::BatchNorm2d bn(nn::BatchNorm2dOptions(4), s, shift, mean, var);
  Generator unmoved = before;
  EXPECT_TRUE(testing::all_close(randn({1}), randn({1}, {}, unmoved), testing::Tolerance::exact()))
      << "a constructor over given parameters drew from the generator";
  EXPECT_TRUE(conv.weight().is_same(w));
  EXPECT_TRUE(conv.bias().is_same(b));
  EXPECT_TRUE(up.weight().is_same(tw));
  EXPECT_FALSE(up.has_bias());
  EXPECT_TRUE(fc.weight().is_same(fw));
  EXPECT_TRUE(fc.bias().is_same(fb));
  EXPECT_TRUE(bn.weight().is_same(s));
  EXPECT_TRUE(bn.running_var().is_same(var));

  struct Row {
    std::function<void()> build;
    std::string message;
  };
  const std::vector<Row> rows = {
      {[&] {
         nn::Conv2d(nn::Conv2dOptions(3, 4, 3), randn({4, 3, 2, 2}), b);
       },
       "Conv2d: the weight given is float32[4, 3, 2, 2]"},
      {[&] { nn::Conv2d(nn::Conv2dOptions(3, 4, 3), w, Tensor()); },
       "Conv2d: the options say bias=true but a bias is not given"},
      {[&] { nn::Conv2d(nn::Conv2dOptions(3, 4, 3), w, randn({4}).to(DType::BFloat16)); },
       "Conv2d: the bias given is bfloat16[4]"},
      {[&] { nn::Conv2d(nn::Conv2dOptions(3, 4, 3), Tensor(), b); },
       "Conv2d: a bias is given without a weight"},
      {[&] { nn::ConvTranspose2d(nn::ConvTranspose2dOptions(3, 4, 2).bias(false), w, Tensor()); },
       "ConvTranspose2d: the weight given is float32[4, 3, 3, 3] contiguous; its options need a "
       "float [3, 4, 2, 2]"},
      {[&] { nn::Linear(nn::LinearOptions(6, 5), fw, randn({6})); },
       "Linear: the bias given is float32[6]; its options need a [5]"},
      {[&] { nn::BatchNorm2d(nn::BatchNorm2dOptions(4), s, shift, mean, randn({3})); },
       "BatchNorm2d: running_var is float32[3]"},
      {[&] { nn::BatchNorm2d(nn::BatchNorm2dOptions(4), Tensor(), Tensor(), mean, var); },
       "BatchNorm2d: affine=true but weight and bias are not given"},
  };
  for (const Row& row : rows) EXPECT_TRUE(throws_error(row.build, row.message));
}

// ---------------------------------------------------------------------------------------------
// Module plumbing

TEST(NnModules, ApplyVisitsChildrenFirstAndWorksWithoutSharedOwnership) {
  nn::Sequential model(std::make_shared<nn::Conv2d>(3, 3, 1),
                       std::make_shared<nn::Sequential>(std::make_shared<nn::ReLU>()));
  std::vector<std::string> order;
  model.apply([&](nn::Module& m) { order.push_back(m.type_name()); });
  EXPECT_EQ(order, (std::vector<std::string>{"Conv2d", "ReLU", "Sequential", "Sequential"}));
  // named_modules hands out ModulePtrs, so it needs shared ownership; it says so.
  EXPECT_TRUE(throws_error([&] { model.named_modules(); }, "owned by a std::shared_ptr"));
}

TEST(NnModules, SharedChildIsVisitedOnce) {
  auto relu = std::make_shared<nn::ReLU>();
  auto model = std::make_shared<nn::Sequential>(relu, relu);
  EXPECT_EQ(model->named_modules().size(), 2u);  // PyTorch lists a shared module once
  int visits = 0;
  model->apply([&](nn::Module&) { ++visits; });
  EXPECT_EQ(visits, 2);
}

TEST(NnModules, ReplaceChildSwapsTheModule) {
  auto model = nested_model();
  auto identity = std::make_shared<nn::Identity>();
  model->replace_child("2", identity);
  EXPECT_EQ((*model)[2], identity);
  EXPECT_TRUE(throws_error([&] { model->replace_child("7", identity); }, "no child module '7'"));
}

TEST(NnModules, ToDTypeConvertsFloatingTensorsOnly) {
  auto model = nested_model();
  model->to(DType::BFloat16);
  for (const auto& [name, t] : model->state_dict())
    EXPECT_EQ(t.dtype(), name.ends_with("num_batches_tracked") ? DType::Int64 : DType::BFloat16)
        << name;
  EXPECT_TRUE(throws_error([&] { model->to(DType::Int64); }, "int64 is not a floating-point"));
}

}  // namespace
}  // namespace refold
