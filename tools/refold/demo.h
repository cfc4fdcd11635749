// `refold demo`: runs the seeds' claims and shows them to a person.
#pragma once

#include <cstdio>

namespace refold::cli {

// Seed 1 (PyTorch's convert_conv2d_weight_memory_format): builds a deterministic
// conv → BN → ReLU → NCHW-only layer → conv → BN → ReLU model, runs it unconverted (the NCHW
// reference) and with channels_last conv weights, and prints a per-layer table of memory
// formats and permutes, the total permute count (expected 3) and the max |diff| to the
// reference. Returns the exit code: 0 only when both checks pass.
int run_demo(std::FILE* out);

}  // namespace refold::cli
