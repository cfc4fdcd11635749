// libFuzzer target: arbitrary bytes through io::parse_safetensors_file (fuzz/targets.h).
// Refusing with refold::Error is fine; a crash, a sanitizer report, a hang or an allocation over
// the budget is a bug.
#include <cstddef>
#include <cstdint>
#include <span>

#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  refold::fuzz::safetensors_one(
      std::span<const std::byte>(reinterpret_cast<const std::byte*>(data), size));
  return 0;
}
