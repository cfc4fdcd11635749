// REFOLD_VERBOSE=1: which implementation ran each op, and why the others declined.
// The environment variable is read once, on first use; every line goes to stderr whole (one
// write under a lock), so lines from concurrent calls do not interleave.
//   refold: conv2d -> onednn (reference not tried)
//   refold: conv2d -> reference (onednn declined: bfloat16 needs avx512_bf16)
#pragma once

#include <string_view>

namespace refold {

// True when REFOLD_VERBOSE is set to anything but "" or "0".
bool verbose();

// "refold: <op> -> <impl>" plus " (<reason>)" when a reason is given. Prints only if verbose().
void log_dispatch(std::string_view op, std::string_view impl, std::string_view reason = {});

// "refold: <message>". Prints only if verbose().
void log_verbose(std::string_view message);

}  // namespace refold
