// Structural re-parameterization on a model built from blocks (issue 4): a small network of
// RepVGG, DBB and MobileOne blocks is trained-form (BN statistics randomized, as a trained
// network has them), copied through its state_dict — the PyTorch names, so the same would load
// a checkpoint — then converted by refold::reparameterize, laid out channels_last, and checked
// against the original with refold::verify. Prints the report and the errors; exits non-zero
// when the converted model leaves docs/testing.md's tolerance
// (max|a − b| ≤ 1e-4 · max(1, max|ref|)).
#include <cstdio>
#include <exception>
#include <memory>

#include "refold/refold.h"

namespace {

using namespace refold;

std::shared_ptr<nn::Sequential> make_model() {
  using namespace reparam;
  return std::make_shared<nn::Sequential>(
      std::make_shared<RepVGGBlock>(RepVGGBlockOptions(3, 16).stride(2)),
      std::make_shared<RepVGGBlock>(RepVGGBlockOptions(16, 16)),
      std::make_shared<DiverseBranchBlock>(
          DiverseBranchBlockOptions(16, 16, 3).nonlinear(std::make_shared<nn::ReLU>())),
      // MobileOne's unit: depthwise 3×3, then pointwise 1×1, each with 2 branches.
      std::make_shared<MobileOneBlock>(
          MobileOneBlockOptions(16, 16, 3).groups(16).num_conv_branches(2)),
      std::make_shared<MobileOneBlock>(MobileOneBlockOptions(16, 32, 1).num_conv_branches(2)),
      std::make_shared<nn::AdaptiveAvgPool2d>(1), std::make_shared<nn::Flatten>());
}

void randomize_batch_norms(nn::Module& model, Generator& gen) {
  model.apply([&](nn::Module& m) {
    auto* bn = dynamic_cast<nn::BatchNorm2d*>(&m);
    if (bn == nullptr) return;
    const std::int64_t c = bn->options().num_features();
    for (std::int64_t i = 0; i < c; ++i) {
      bn->running_mean().set({i}, static_cast<float>(2 * gen.uniform() - 1));
      bn->running_var().set({i}, static_cast<float>(0.5 + 1.5 * gen.uniform()));
      bn->weight().set({i}, static_cast<float>(0.5 + gen.uniform()));
      bn->bias().set({i}, static_cast<float>(2 * gen.uniform() - 1));
    }
  });
}

int run() {
  manual_seed(4);
  Generator gen(4);
  const auto original = make_model();
  randomize_batch_norms(*original, gen);

  const auto fast = make_model();
  fast->load_state_dict(original->state_dict());
  const ReparamReport report = reparameterize(*fast, {Shape{1, 3, 32, 32}});
  nn::utils::convert_conv2d_weight_memory_format(*fast, MemoryFormat::ChannelsLast);
  std::printf("%s", report.to_string().c_str());

  const VerifyResult check =
      verify(*original, *fast, {randn({1, 3, 32, 32}, {}, gen), randn({2, 3, 24, 20}, {}, gen)});
  std::printf("%s", check.to_string().c_str());
  const bool ok = check.within() && report.converted.size() == 5 && report.left_as_is.empty();
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
