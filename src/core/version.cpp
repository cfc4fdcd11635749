#include "refold/version.h"

namespace refold {
std::string_view version() { return REFOLD_VERSION; }
}  // namespace refold
