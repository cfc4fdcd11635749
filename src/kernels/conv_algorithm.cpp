// refold/conv_algorithm.h: the process-wide choice between refold's own conv kernels where they
// pay off, oneDNN's direct conv everywhere, and refold's own wherever they run.
#include "refold/conv_algorithm.h"

#include <atomic>
#include <cstdlib>

#include "core/check.h"

namespace refold {

namespace {

// -1: not set by set_conv_algorithm, so the environment (or Auto) decides.
std::atomic<int> g_requested{-1};

// REFOLD_CONV_ALGORITHM if set (validated), else Auto. A throwing initializer of a
// function-local static is retried on the next call, so a bad value errors on every call.
ConvAlgorithm default_conv_algorithm() {
  static const ConvAlgorithm algorithm = [] {
    const char* env = std::getenv("REFOLD_CONV_ALGORITHM");
    if (env == nullptr || *env == '\0') return ConvAlgorithm::Auto;
    return parse_conv_algorithm(env);
  }();
  return algorithm;
}

}  // namespace

void set_conv_algorithm(ConvAlgorithm algorithm) {
  g_requested.store(static_cast<int>(algorithm), std::memory_order_relaxed);
}

ConvAlgorithm get_conv_algorithm() {
  const int requested = g_requested.load(std::memory_order_relaxed);
  return requested >= 0 ? static_cast<ConvAlgorithm>(requested) : default_conv_algorithm();
}

std::string_view conv_algorithm_name(ConvAlgorithm algorithm) {
  switch (algorithm) {
    case ConvAlgorithm::Auto:
      return "auto";
    case ConvAlgorithm::Direct:
      return "direct";
    case ConvAlgorithm::Native:
      return "native";
  }
  return "auto";
}

ConvAlgorithm parse_conv_algorithm(std::string_view text) {
  if (text == "auto") return ConvAlgorithm::Auto;
  if (text == "direct") return ConvAlgorithm::Direct;
  if (text == "native") return ConvAlgorithm::Native;
  fail("conv algorithm '{}' is not one of: auto, direct, native (REFOLD_CONV_ALGORITHM)", text);
}

}  // namespace refold
