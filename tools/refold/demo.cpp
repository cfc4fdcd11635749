#include "demo.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "demo_util.h"
#include "refold/refold.h"

namespace refold::cli {

namespace {

// The layer the seed calls "incompatible with channels last": it wraps an NCHW-only kernel
// (it walks the raw buffer as [N][C][H][W]), so it declares accepts_channels_last() == false
// and Module::operator() hands it a contiguous input. y = relu(x) · (1 + c/8) for channel c.
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

std::shared_ptr<nn::Sequential> build_model() {
  manual_seed(1);  // conv weights: PyTorch's default init from refold's deterministic generator
  Generator gen(2);
  auto bn1 = std::make_shared<nn::BatchNorm2d>(32);
  auto bn2 = std::make_shared<nn::BatchNorm2d>(32);
  randomize(*bn1, gen);
  randomize(*bn2, gen);
  return std::make_shared<nn::Sequential>(
      std::make_shared<nn::Conv2d>(nn::Conv2dOptions(16, 32, 3).padding(1)), bn1,
      std::make_shared<nn::ReLU>(), std::make_shared<LegacyNchwOp>(),
      std::make_shared<nn::Conv2d>(nn::Conv2dOptions(32, 32, 3).padding(1)), bn2,
      std::make_shared<nn::ReLU>());
}

std::string format_of(const Tensor& t) {
  return std::string(memory_format_name(t.suggest_memory_format()));
}

std::string shape_of(const Tensor& t) { return fmt::format("[{}]", fmt::join(t.sizes(), ", ")); }

// docs/testing.md's fp32 policy, |a − b| ≤ 1e-4 + 1e-4·|ref|, and the largest |a − b|.
struct Diff {
  double max_abs = 0;
  bool within_policy = true;
};
Diff compare(const Tensor& actual, const Tensor& reference) {
  Diff d;
  const std::vector<float> a = actual.to_vector(), r = reference.to_vector();
  d.within_policy = a.size() == r.size();
  for (std::size_t i = 0; i < a.size() && i < r.size(); ++i) {
    const double diff = std::fabs(static_cast<double>(a[i]) - r[i]);
    d.max_abs = std::max(d.max_abs, diff);
    if (!(diff <= 1e-4 + 1e-4 * std::fabs(static_cast<double>(r[i])))) d.within_policy = false;
  }
  return d;
}

}  // namespace

int run_memory_format_demo(std::FILE* out) {
  auto print = [out](const std::string& s) { std::fputs(s.c_str(), out); };
  print(
      "refold demo: seed 1, convert_conv2d_weight_memory_format\n"
      "Only the conv weights become channels_last. An NCHW input is permuted at the first conv,\n"
      "stays channels_last through layers that accept it, goes back to contiguous at a layer\n"
      "that cannot take it, and is permuted again at the next conv.\n\n");

  auto model = build_model();
  Generator gen(3);
  const Tensor x = randn({1, 16, 28, 28}, {}, gen);
  print(fmt::format("input  {} {}\n", shape_of(x), format_of(x)));

  // The reference: the same model before conversion, all NCHW.
  reset_permute_count();
  const Tensor reference = (*model)(x);
  const std::uint64_t reference_permutes = permute_count();

  nn::utils::convert_conv2d_weight_memory_format(*model, MemoryFormat::ChannelsLast);
  std::vector<std::string> converted;
  for (const auto& [name, tensor] : model->named_parameters())
    if (tensor.dim() == 4 && tensor.suggest_memory_format() == MemoryFormat::ChannelsLast)
      converted.push_back(name);
  print(
      fmt::format("convert_conv2d_weight_memory_format(model, channels_last): {} now "
                  "channels_last\n\n",
                  fmt::join(converted, ", ")));

  // Layer by layer, as Sequential::forward runs them.
  print(fmt::format("  {:<5} {:<14} {:<14} {:>8}  {:<16} {}\n", "layer", "module", "channels_last?",
                    "permutes", "output", "format"));
  Tensor h = x;
  for (const auto& [name, layer] : model->named_children()) {
    reset_permute_count();
    h = (*layer)(h);
    print(fmt::format("  {:<5} {:<14} {:<14} {:>8}  {:<16} {}\n", name, layer->type_name(),
                      layer->accepts_channels_last() ? "accepts" : "no (NCHW only)",
                      permute_count(), shape_of(h), format_of(h)));
  }

  // The whole model in one call: this is the count the seed predicts.
  reset_permute_count();
  const Tensor y = (*model)(x);
  const std::uint64_t permutes = permute_count();
  const Diff diff = compare(y, reference);
  const bool permutes_ok = permutes == 3;
  const bool diff_ok = diff.within_policy;

  print("\n");
  print(fmt::format("output {} {} (reference: {}, {} permutes)\n", shape_of(y), format_of(y),
                    format_of(reference), reference_permutes));
  print(
      fmt::format("permutes: {} (expected 3: first conv, back at LegacyNchwOp, next conv)  "
                  "{}\n",
                  permutes, permutes_ok ? "OK" : "FAIL"));
  print(
      fmt::format("max |diff| vs NCHW reference: {:g} (policy |diff| <= 1e-4 + 1e-4*|ref|)  "
                  "{}\n",
                  diff.max_abs, diff_ok ? "OK" : "FAIL"));
  return permutes_ok && diff_ok ? 0 : 1;
}

int run_demo(std::FILE* out) {
  const int memory_format = run_memory_format_demo(out);
  std::fputs("\n", out);
  const int reparam = run_reparam_demo(out);
  return memory_format == 0 && reparam == 0 ? 0 : 1;
}

}  // namespace refold::cli
