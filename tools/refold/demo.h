// `refold demo`: runs the seeds' claims and shows them to a person.
#pragma once

#include <cstdio>

namespace refold::cli {

// Seed 1 (PyTorch's convert_conv2d_weight_memory_format): builds a deterministic
// conv → BN → ReLU → NCHW-only layer → conv → BN → ReLU model, runs it unconverted (the NCHW
// reference) and with channels_last conv weights, and prints a per-layer table of memory
// formats and permutes, the total permute count (expected 3) and the max |diff| to the
// reference. Returns the exit code: 0 only when both checks pass.
int run_memory_format_demo(std::FILE* out);

// Seed 2 (RepVGG): the seed's toy (conv3x3 + conv1x1 + identity == one 3×3 conv), then
// RepVGG-A0 at real scale (224², deterministic weights, randomized BatchNorm statistics)
// re-parameterized by refold::reparameterize and laid out NHWC by seed 1's utility: the report,
// refold::verify against the training form, and both forms timed in NCHW and NHWC. Returns 0 only
// when both equivalences hold within docs/testing.md's tolerance.
int run_reparam_demo(std::FILE* out);

// Both sections; 0 only when every check passes.
int run_demo(std::FILE* out);

}  // namespace refold::cli
