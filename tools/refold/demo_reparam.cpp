// `refold demo`, seed 2: structural re-parameterization.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "demo.h"
#include "demo_util.h"
#include "refold/refold.h"

namespace refold::cli {

namespace {

// The seed's toy, as the blog writes it: 2 channels, 9×9 all-ones input, conv3x3 with padding
// "same" + conv1x1 + the input itself, against one 3×3 conv whose kernel is the 3×3 kernel +
// the 1×1 kernel padded to 3×3 + the identity as a 3×3 kernel (biases added).
OutputError seed_toy() {
  manual_seed(2023);
  nn::Conv2d conv3(nn::Conv2dOptions(2, 2, 3).padding(Padding2d::same()));
  nn::Conv2d conv1(2, 2, 1);
  const Tensor x = ones({1, 2, 9, 9});
  const Tensor branches = functional::add(functional::add(conv3(x), conv1(x)), x);

  namespace rp = reparam;
  const rp::ConvKernel fused =
      rp::sum_branches({rp::kernel_of(conv3), rp::pad_kernel_to(rp::kernel_of(conv1), 3),
                        rp::identity_kernel(2, 1, 3)});
  Conv2dOptions same;
  same.padding = Padding2d::same();
  const Tensor one_conv = functional::conv2d(x, fused.weight, fused.bias, same);

  struct Pair : nn::Module {
    Tensor value;
    explicit Pair(Tensor v) : Module("Value"), value(std::move(v)) {}
    Tensor forward(const Tensor&) override { return value; }
  };
  Pair a(branches), b(one_conv);
  return verify(a, b, {x}).outputs.front();
}

struct Timed {
  std::string name;
  nn::Module* model;
  std::vector<double> ms;
};

// Times every model `runs` times, interleaved (one call of each per round, so the machine's
// noise falls on all alike), after 3 warm-up calls each; returns the medians in order.
std::vector<double> interleaved_medians(std::vector<Timed>& models, const Tensor& x, int runs) {
  for (Timed& t : models)
    for (int i = 0; i < 3; ++i) (*t.model)(x);
  for (int r = 0; r < runs; ++r) {
    for (Timed& t : models) {
      const auto start = std::chrono::steady_clock::now();
      (*t.model)(x);
      t.ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
  }
  std::vector<double> medians;
  for (Timed& t : models) {
    std::nth_element(t.ms.begin(), t.ms.begin() + runs / 2, t.ms.end());
    medians.push_back(t.ms[static_cast<std::size_t>(runs / 2)]);
  }
  return medians;
}

}  // namespace

int run_reparam_demo(std::FILE* out) {
  auto print = [out](const std::string& s) { std::fputs(s.c_str(), out); };
  print(
      "refold demo: seed 2, structural re-parameterization\n"
      "A training-time block conv3x3(x) + conv1x1(x) + x, each branch with BatchNorm, is exactly\n"
      "one 3x3 conv: fold each BN, pad the 1x1 kernel to 3x3, write the identity as a kernel,\n"
      "add.\n\n");

  const OutputError toy = seed_toy();
  const bool toy_ok = toy.within();
  print(fmt::format(
      "the seed's toy (2 channels, 9x9 ones): branches vs one 3x3 conv, max |diff| {:g}  {}\n\n",
      toy.max_abs_error, toy_ok ? "OK" : "FAIL"));

  // RepVGG-A0 at real scale: 22 training-form blocks, 224x224, batch 1.
  const Shape input_shape{1, 3, 224, 224};
  auto training_nchw = models::repvgg_a0(0);
  auto training_nhwc = models::repvgg_a0(0);
  auto deployed_nchw = models::repvgg_a0(0);  // the same weights and statistics
  auto deployed_nhwc = models::repvgg_a0(0);
  const ReparamReport report = reparameterize(*deployed_nhwc, {.input_shape = input_shape});
  reparameterize(*deployed_nchw);
  print("RepVGG-A0, training form (deterministic weights, randomized BN statistics):\n");
  print(report.to_string());

  // Seed 1 on the result: channels_last conv weights, so every conv runs NHWC kernels.
  for (auto* model : {training_nhwc.get(), deployed_nhwc.get()})
    nn::utils::convert_conv2d_weight_memory_format(*model, MemoryFormat::ChannelsLast);
  Generator gen(11);
  const Tensor x = randn(input_shape, {}, gen);
  const VerifyResult check = verify(*training_nchw, *deployed_nhwc, {x});
  const bool model_ok = check.within();
  std::string lines = check.to_string();  // one line per output, newline-terminated
  lines.pop_back();
  print(fmt::format(
      "\nverify (training form NCHW vs re-parameterized NHWC, input [1, 3, 224, 224]):\n{}  {}\n",
      lines, model_ok ? "OK" : "FAIL"));

  constexpr int kRuns = 10;
  std::vector<Timed> timed{{"training form, NCHW", training_nchw.get(), {}},
                           {"training form, NHWC", training_nhwc.get(), {}},
                           {"re-parameterized, NCHW", deployed_nchw.get(), {}},
                           {"re-parameterized, NHWC", deployed_nhwc.get(), {}}};
  const std::vector<double> ms = interleaved_medians(timed, x, kRuns);
  const double flops = static_cast<double>(report.flops_after.value_or(0));
  print(fmt::format("\ntime, batch 1, {} threads, median of {} interleaved runs:\n",
                    get_num_threads(), kRuns));
  print(fmt::format("  {:<24} {:>9} {:>9}\n", "", "ms", "speed-up"));
  for (std::size_t i = 0; i < timed.size(); ++i) {
    print(fmt::format("  {:<24} {:>9.2f} {:>8.2f}x\n", timed[i].name, ms[i], ms[0] / ms[i]));
  }
  print(fmt::format("  (re-parameterized: {:.2f} GFLOP in the blocks, {:.1f} GFLOP/s NHWC)\n",
                    flops * 1e-9, flops / (ms[3] * 1e6)));
  print("(REFOLD_VERBOSE=1 shows which implementation ran each op)\n");
  return toy_ok && model_ok ? 0 : 1;
}

}  // namespace refold::cli
