// `refold bench --profile`: a graph's time per node and per op type, as text and as JSON.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "refold/graph/profile.h"

namespace refold::cli {

// Per op type (longest first), then per node in graph order: time, share of the total,
// GFLOP/s, GB/s, the layout in → out and the implementations that ran.
void print_profile(std::FILE* out, const std::string& title, const graph::RunProfile& profile);
nlohmann::json profile_json(const graph::RunProfile& profile);

}  // namespace refold::cli
