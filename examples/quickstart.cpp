// The README's API example, compiled and run as a test: build a model in code, save and load
// its weights by PyTorch name, convert the conv weights to channels_last, run it.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "refold/refold.h"

using namespace refold;

int main() {
  auto model = std::make_shared<nn::Sequential>(
      std::make_shared<nn::Conv2d>(nn::Conv2dOptions(8, 16, 3).padding(1)),
      std::make_shared<nn::BatchNorm2d>(16), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Conv2d>(nn::Conv2dOptions(16, 4, 3)));

  // Weights by PyTorch name ("0.weight", "1.running_mean", ...), as
  // safetensors.torch.save_file(model.state_dict(), path) writes them.
  const auto path = std::filesystem::temp_directory_path() / "refold_quickstart.safetensors";
  io::save_safetensors(model->state_dict(), path);
  model->load_state_dict(io::load_safetensors(path));
  std::filesystem::remove(path);

  const Tensor x = randn({2, 8, 32, 32});  // NCHW
  const Tensor reference = (*model)(x);
  nn::utils::convert_conv2d_weight_memory_format(*model, MemoryFormat::ChannelsLast);
  reset_permute_count();
  const Tensor y = (*model)(x);  // one permute, at the first conv

  std::printf("output %s, permutes %llu\n", y.description().c_str(),
              static_cast<unsigned long long>(permute_count()));
  // Same values as the NCHW run within docs/testing.md's fp32 op policy |a − b| ≤ 1e-4 + 1e-4·|ref|
  // (oneDNN's NHWC and NCHW kernels sum in different orders).
  bool ok = y.is_contiguous(MemoryFormat::ChannelsLast) && permute_count() == 1;
  const std::vector<float> a = y.to_vector(), r = reference.to_vector();
  for (std::size_t i = 0; i < a.size(); ++i)
    ok = ok && std::fabs(a[i] - r[i]) <= 1e-4f + 1e-4f * std::fabs(r[i]);
  return ok ? 0 : 1;
}
