// Seed 004 (the RepVGG blog post) in refold: on a 2-channel 9×9 all-ones input,
//   conv3x3(x, padding "same") + conv1x1(x) + x
// equals ONE 3×3 conv whose kernel is the 3×3 kernel + the 1×1 kernel zero-padded to 3×3 +
// the identity written as a 3×3 kernel, and whose bias is the sum of the two biases.
// Prints the max difference and exits non-zero when it exceeds the re-parameterization
// tolerance of docs/testing.md: max|a − b| ≤ 1e-4 · max(1, max|ref|).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <vector>

#include "refold/error.h"
#include "refold/reference.h"
#include "refold/reparam/kernel_algebra.h"
#include "refold/tensor.h"

namespace {

using refold::Tensor;
using refold::reparam::ConvKernel;

// nn.Conv2d's default init: uniform in ±1/√fan_in for the weight and the bias.
ConvKernel make_conv(std::int64_t channels, std::int64_t k, refold::Generator& gen) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(channels * k * k));
  const auto uniform = [&](const refold::Shape& sizes) {
    Tensor t = refold::empty(sizes);
    std::vector<float> v(static_cast<std::size_t>(t.numel()));
    for (float& x : v) x = static_cast<float>((2 * gen.uniform() - 1) * bound);
    return refold::from_values(v, sizes);
  };
  return {uniform({channels, channels, k, k}), uniform({channels}), 1};
}

refold::Conv2dOptions same_padding() {
  refold::Conv2dOptions o;
  o.padding = refold::Padding2d::same();
  return o;
}

int run() {
  refold::Generator gen(2023);
  const std::int64_t c = 2;
  const Tensor x = refold::ones({1, c, 9, 9});
  const ConvKernel conv3 = make_conv(c, 3, gen);  // conv_2d
  const ConvKernel conv1 = make_conv(c, 1, gen);  // conv_2d_pointwise

  // result1 = conv_2d(x) + conv_2d_pointwise(x) + x
  namespace ref = refold::reference;
  const Tensor result1 = ref::add(ref::add(ref::conv2d(x, conv3.weight, conv3.bias, same_padding()),
                                           ref::conv2d(x, conv1.weight, conv1.bias)),
                                  x);

  // The fusion: F.pad(1×1 weight, [1, 1, 1, 1]), the identity as "stars" on the diagonal,
  // then every weight and bias added.
  namespace rp = refold::reparam;
  rp::check_branch_alignment(1, 0, 3, refold::Padding2d::same());
  const ConvKernel fused =
      rp::sum_branches({conv3, rp::pad_kernel_to(conv1, 3), rp::identity_kernel(c, 1, 3)});
  const Tensor result3 = ref::conv2d(x, fused.weight, fused.bias, same_padding());

  const std::vector<float> a = result3.to_vector(), b = result1.to_vector();
  double diff = 0, ref_max = 1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    ref_max = std::max(ref_max, std::fabs(static_cast<double>(b[i])));
  }
  const double tolerance = 1e-4 * ref_max;
  std::printf("conv3x3(x) + conv1x1(x) + x  vs  one fused 3x3 conv (2 channels, 9x9 ones)\n");
  std::printf("max |difference| = %.3g (tolerance %.3g): %s\n", diff, tolerance,
              diff <= tolerance ? "equal" : "DIFFERENT");
  return diff <= tolerance ? 0 : 1;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "reparam_seed: %s\n", e.what());
    return 2;
  }
}
