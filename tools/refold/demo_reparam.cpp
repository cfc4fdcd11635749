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

// A RepVGG-style network (RepVGG-A0's pattern at a small scale): stride-2 blocks open each
// stage, every block in training form with randomized BatchNorm statistics.
std::shared_ptr<nn::Sequential> build_repvgg(std::uint64_t seed) {
  manual_seed(seed);
  auto model = std::make_shared<nn::Sequential>();
  const std::vector<std::pair<std::int64_t, std::int64_t>> stages{{3, 16}, {16, 32}, {32, 64}};
  for (auto [in, out] : stages) {
    model->push_back(
        std::make_shared<reparam::RepVGGBlock>(reparam::RepVGGBlockOptions(in, out).stride(2)));
    model->push_back(std::make_shared<reparam::RepVGGBlock>(reparam::RepVGGBlockOptions(out, out)));
  }
  Generator gen(seed + 1);
  for (auto& [name, module] : model->named_modules())
    if (auto* bn = dynamic_cast<nn::BatchNorm2d*>(module.get())) randomize(*bn, gen);
  return model;
}

// Median wall time of `runs` calls after 3 warm-up calls, in milliseconds.
double median_ms(nn::Module& model, const Tensor& x, int runs) {
  for (int i = 0; i < 3; ++i) model(x);
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    model(x);
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::nth_element(times.begin(), times.begin() + runs / 2, times.end());
  return times[runs / 2];
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

  const Shape input_shape{1, 3, 64, 64};
  auto training = build_repvgg(7);
  auto deployed = build_repvgg(7);  // the same weights and statistics
  const ReparamReport report = reparameterize(*deployed, {.input_shape = input_shape});
  print(report.to_string());

  for (auto* model : {training.get(), deployed.get()})
    nn::utils::convert_conv2d_weight_memory_format(*model, MemoryFormat::ChannelsLast);
  Generator gen(11);
  const Tensor x = randn(input_shape, {}, gen);
  const VerifyResult check = verify(*training, *deployed, {x});
  const bool model_ok = check.within();
  std::string lines = check.to_string();  // one line per output, newline-terminated
  lines.pop_back();
  print(
      fmt::format("\nverify (training form vs re-parameterized, channels_last weights):\n"
                  "{}  {}\n",
                  lines, model_ok ? "OK" : "FAIL"));

  constexpr int kRuns = 20;
  const double t_train = median_ms(*training, x, kRuns);
  const double t_deploy = median_ms(*deployed, x, kRuns);
  print(
      fmt::format("time, input [1, 3, 64, 64], median of {} runs: training form {:.3f} ms, "
                  "re-parameterized {:.3f} ms ({:.2f}x)\n",
                  kRuns, t_train, t_deploy, t_train / t_deploy));
  print("(REFOLD_VERBOSE=1 shows which implementation ran each op)\n");
  return toy_ok && model_ok ? 0 : 1;
}

}  // namespace refold::cli
