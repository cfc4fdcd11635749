#pragma once

#include <string_view>

namespace refold {
std::string_view version();  // "MAJOR.MINOR.PATCH"
}  // namespace refold
