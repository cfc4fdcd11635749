// RepVGG (Ding et al., 2021) in training form, built from refold's RepVGGBlocks as
// DingXiaoH/RepVGG's repvgg.py builds it, so a PyTorch checkpoint loads by name:
//   stage0  1 block   3 → min(64, 64a), stride 2
//   stage1  blocks[0] → 64a,  first stride 2
//   stage2  blocks[1] → 128a, first stride 2
//   stage3  blocks[2] → 256a, first stride 2
//   stage4  blocks[3] → 512b, first stride 2
//   gap (AdaptiveAvgPool2d(1)), flatten, linear (→ num_classes)
// RepVGG-A0: blocks {2, 4, 14, 1}, a = 0.75, b = 2.5 — 22 blocks, ≈ 1.4 GFLOP (deploy form, 224²,
// multiply-adds; 2.8 GFLOP counting 2 per multiply-add).
//
//   auto net = refold::models::repvgg_a0(/*seed=*/0);   // deterministic weights + BN statistics
//   refold::reparameterize(*net);                       // 22 blocks → 22 3×3 convs
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "refold/nn/module.h"

namespace refold::models {

struct RepVGGConfig {
  std::vector<std::int64_t> num_blocks{2, 4, 14, 1};
  double width_a = 0.75;
  double width_b = 2.5;
  std::int64_t num_classes = 1000;
};

class RepVGG : public nn::Module {
 public:
  explicit RepVGG(const RepVGGConfig& config = {});
  Tensor forward(const Tensor& input) override;

 private:
  std::vector<nn::ModulePtr> stages_;
};

// Every BatchNorm2d under `module` gets statistics far from the identity, as RepVGG's own
// equivalence check does: running_mean ~ N(0, 1), running_var ~ U(0.5, 1.5), γ ~ U(0.5, 1.5),
// β ~ N(0, 1), drawn in module order from Generator(seed). (Fresh BNs are nearly the identity,
// and fusing them would prove little.)
void randomize_batch_norms(nn::Module& module, std::uint64_t seed);

// RepVGG-A0 in training form: weights from manual_seed(seed), BN statistics randomized with
// seed + 1. Same seed, same model.
std::shared_ptr<RepVGG> repvgg_a0(std::uint64_t seed = 0);

}  // namespace refold::models
