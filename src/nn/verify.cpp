// refold::verify; see refold/verify.h.
#include "refold/verify.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.h"

namespace refold {

bool OutputError::within(double tolerance) const {
  return max_abs_error <= tolerance * std::max(1.0, reference_max_abs);
}

double VerifyResult::max_abs_error() const {
  double worst = 0;
  for (const OutputError& e : outputs) worst = std::max(worst, e.max_abs_error);
  return worst;
}

double VerifyResult::max_rel_error() const {
  double worst = 0;
  for (const OutputError& e : outputs) worst = std::max(worst, e.max_rel_error);
  return worst;
}

bool VerifyResult::within(double tolerance) const {
  return std::all_of(outputs.begin(), outputs.end(),
                     [&](const OutputError& e) { return e.within(tolerance); });
}

std::string VerifyResult::to_string() const {
  std::string out;
  for (std::size_t i = 0; i < outputs.size(); ++i)
    out += fmt::format("output {}: max abs error {:.3g}, max rel error {:.3g} (max |ref| {:.3g})\n",
                       i, outputs[i].max_abs_error, outputs[i].max_rel_error,
                       outputs[i].reference_max_abs);
  return out;
}

VerifyResult verify(nn::Module& original, nn::Module& transformed,
                    const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(!inputs.empty(), "verify: no inputs to run");
  VerifyResult result;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    REFOLD_CHECK(inputs[i].defined(), "verify: input {} is undefined", i);
    const Tensor expected = original(inputs[i]);
    const Tensor actual = transformed(inputs[i]);
    REFOLD_CHECK(expected.sizes() == actual.sizes(),
                 "verify: input {}: the outputs differ in shape: original [{}], transformed [{}]",
                 i, fmt::join(expected.sizes(), ", "), fmt::join(actual.sizes(), ", "));
    // to_vector reads logical order, so the two layouts (NCHW, channels_last) compare directly.
    const std::vector<float> e = expected.to_vector(), a = actual.to_vector();
    OutputError error;
    for (std::size_t j = 0; j < e.size(); ++j) {
      const double ev = e[j], av = a[j];
      if (std::isnan(ev) || std::isnan(av)) {
        if (!(std::isnan(ev) && std::isnan(av)))
          error.max_abs_error = std::numeric_limits<double>::infinity();
        continue;
      }
      error.max_abs_error = std::max(error.max_abs_error, std::abs(av - ev));
      error.reference_max_abs = std::max(error.reference_max_abs, std::abs(ev));
    }
    error.max_rel_error = error.reference_max_abs > 0
                              ? error.max_abs_error / error.reference_max_abs
                          : error.max_abs_error > 0 ? std::numeric_limits<double>::infinity()
                                                    : 0.0;
    result.outputs.push_back(error);
  }
  return result;
}

}  // namespace refold
