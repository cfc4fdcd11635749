// Two implementations of one computation timed alternately in one benchmark loop, for a noisy
// host: each iteration runs both, the order swapped every iteration, and the counters report
// each side's median time and the median per-pair ratio first / second (< 1: first faster) —
// the ratio of neighbours, not of two separately measured medians.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

namespace refold::bench {

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// Counters `<first_name>_us`, `<second_name>_us` and `ratio`; the iteration time is the pair's.
template <typename First, typename Second>
void time_paired(benchmark::State& state, const std::string& first_name, First&& first,
                 const std::string& second_name, Second&& second) {
  using clock = std::chrono::steady_clock;
  std::vector<double> first_us, second_us, ratio;
  bool first_leads = true;
  for (auto _ : state) {
    double t_first = 0, t_second = 0;
    for (int k = 0; k < 2; ++k) {
      const bool is_first = (k == 0) == first_leads;
      const auto t0 = clock::now();
      if (is_first)
        first();
      else
        second();
      (is_first ? t_first : t_second) =
          std::chrono::duration<double, std::micro>(clock::now() - t0).count();
    }
    first_leads = !first_leads;
    first_us.push_back(t_first);
    second_us.push_back(t_second);
    ratio.push_back(t_first / t_second);
    state.SetIterationTime((t_first + t_second) * 1e-6);
  }
  state.counters[first_name + "_us"] = median(first_us);
  state.counters[second_name + "_us"] = median(second_us);
  state.counters["ratio"] = median(ratio);
}

}  // namespace refold::bench
