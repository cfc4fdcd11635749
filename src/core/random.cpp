#include <cmath>
#include <numbers>

#include "refold/tensor.h"

namespace refold {

std::uint64_t Generator::next_u64() {
  // splitmix64 (Steele, Lea, Flood 2014): a full-period 64-bit sequence, tiny state.
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Generator::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

double Generator::normal() {
  // Box–Muller: sqrt(-2 ln u1) · cos(2π u2) is N(0, 1) for independent u1, u2 in (0, 1].
  const double u1 = 1.0 - uniform();
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

Generator& default_generator() {
  thread_local Generator generator;
  return generator;
}

void manual_seed(std::uint64_t seed) { default_generator() = Generator(seed); }

}  // namespace refold
