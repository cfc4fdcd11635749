// Seed 1 — PyTorch's torch.nn.utils.convert_conv2d_weight_memory_format, in refold.
//
// Convert only the convolution weights to channels_last. Then an NCHW input is permuted once,
// at the first conv; it stays channels_last through layers that accept it (BatchNorm, ReLU);
// it goes back to contiguous only at a layer that cannot take channels_last, and is permuted
// again at the next conv. This program builds such a model, counts the permutes actually
// performed, checks the result against the unconverted model, and exits non-zero if any check
// fails (so it is also a test).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "refold/refold.h"

using namespace refold;

namespace {

// A user's layer around an NCHW-only kernel: it walks the raw buffer as [N][C][H][W], so it
// declares accepts_channels_last() == false, and Module::operator() hands it a contiguous input.
// y = relu(x) · (1 + c/8) for channel c.
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

// Statistics far from the identity, so BatchNorm really computes something.
void randomize(nn::BatchNorm2d& bn, Generator& gen) {
  const Shape c{bn.options().num_features()};
  bn.running_mean().copy_(randn(c, {}, gen));
  bn.running_var().copy_(rand(c, {}, gen));
  bn.weight().copy_(randn(c, {}, gen));
  bn.bias().copy_(randn(c, {}, gen));
}

// The largest |a − b| and whether every element meets docs/testing.md's fp32 op policy
// |a − b| ≤ 1e-4 + 1e-4·|ref|.
bool within_f32_policy(const Tensor& actual, const Tensor& reference, double& max_diff) {
  const std::vector<float> a = actual.to_vector(), r = reference.to_vector();
  bool ok = a.size() == r.size();
  max_diff = 0;
  for (std::size_t i = 0; ok && i < a.size(); ++i) {
    const double diff = std::fabs(static_cast<double>(a[i]) - r[i]);
    max_diff = std::max(max_diff, diff);
    ok = diff <= 1e-4 + 1e-4 * std::fabs(static_cast<double>(r[i]));
  }
  return ok;
}

int failures = 0;
void check(bool ok, const std::string& what) {
  std::printf("  [%s] %s\n", ok ? " ok " : "FAIL", what.c_str());
  if (!ok) ++failures;
}

const char* format_name(const Tensor& t) {
  return t.suggest_memory_format() == MemoryFormat::ChannelsLast ? "channels_last" : "contiguous";
}

void scenario() {
  std::printf("conv -> BN -> ReLU -> LegacyNchwOp -> conv -> BN -> ReLU, NCHW input\n");
  manual_seed(1);
  Generator gen(2);
  auto bn1 = std::make_shared<nn::BatchNorm2d>(16);
  auto bn2 = std::make_shared<nn::BatchNorm2d>(16);
  randomize(*bn1, gen);
  randomize(*bn2, gen);
  auto model = std::make_shared<nn::Sequential>(
      std::make_shared<nn::Conv2d>(nn::Conv2dOptions(8, 16, 3).padding(1)), bn1,
      std::make_shared<nn::ReLU>(), std::make_shared<LegacyNchwOp>(),
      std::make_shared<nn::Conv2d>(nn::Conv2dOptions(16, 16, 3).padding(1)), bn2,
      std::make_shared<nn::ReLU>());
  const Tensor x = randn({2, 8, 10, 10}, {}, gen);

  const Tensor reference = (*model)(x);  // weights NCHW: everything stays NCHW
  nn::utils::convert_conv2d_weight_memory_format(*model, MemoryFormat::ChannelsLast);

  // Layer by layer, as Sequential::forward runs them.
  const std::vector<std::string> expected = {"channels_last", "channels_last", "channels_last",
                                             "contiguous",    "channels_last", "channels_last",
                                             "channels_last"};
  Tensor h = x;
  std::size_t i = 0;
  bool formats_ok = true;
  for (const auto& [name, layer] : model->named_children()) {
    reset_permute_count();
    h = (*layer)(h);
    std::printf("    %s %-13s permutes %llu  -> %s\n", name.c_str(), layer->type_name().c_str(),
                static_cast<unsigned long long>(permute_count()), h.description().c_str());
    formats_ok = formats_ok && format_name(h) == expected.at(i++);
  }
  check(formats_ok, "channels_last after each conv, BN and ReLU; contiguous after LegacyNchwOp");

  reset_permute_count();
  const Tensor y = (*model)(x);
  const auto permutes = permute_count();
  check(permutes == 3, "3 permutes (first conv, back at LegacyNchwOp, next conv), counted " +
                           std::to_string(permutes));
  check(y.is_contiguous(MemoryFormat::ChannelsLast), "output is channels_last");
  double diff = 0;
  const bool close = within_f32_policy(y, reference, diff);
  check(close, "matches the unconverted NCHW model: max |diff| " + std::to_string(diff));
}

void seed_example() {
  // input = torch.randint(1, 10, (2, 8, 4, 4)); model = nn.Sequential(nn.Conv2d(8, 4, 3))
  std::printf("the seed's example: Sequential(Conv2d(8, 4, 3)) on randint(1, 10, (2, 8, 4, 4))\n");
  Generator gen(3);
  std::vector<float> ints(2 * 8 * 4 * 4);
  for (float& v : ints) v = static_cast<float>(1 + static_cast<int>(gen.uniform() * 9));
  const Tensor input = from_values(ints, {2, 8, 4, 4});
  auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Conv2d>(8, 4, 3));
  const Tensor reference = (*model)(input);
  nn::Module& same =
      nn::utils::convert_conv2d_weight_memory_format(*model, MemoryFormat::ChannelsLast);
  check(&same == model.get(), "returns the module it was given");
  reset_permute_count();
  const Tensor out = (*model)(input);
  check(out.sizes() == Shape{2, 4, 2, 2} && out.is_contiguous(MemoryFormat::ChannelsLast),
        "output " + out.description());
  check(permute_count() == 1, "1 permute (the input, at the conv)");
  double diff = 0;
  const bool close = within_f32_policy(out, reference, diff);
  check(close, "matches the unconverted model: max |diff| " + std::to_string(diff));
}

}  // namespace

int main() {
  try {
    scenario();
    seed_example();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  if (failures == 0)
    std::printf("all checks passed\n");
  else
    std::printf("%d check(s) failed\n", failures);
  return failures == 0 ? 0 : 1;
}
