#include "kernels/verbose.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace refold {
namespace {

std::mutex& stderr_mutex() {
  static std::mutex m;
  return m;
}

void write_line(const std::string& line) {
  const std::lock_guard<std::mutex> lock(stderr_mutex());
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace

bool verbose() {
  static const bool on = [] {
    const char* v = std::getenv("REFOLD_VERBOSE");
    return v != nullptr && *v != '\0' && std::string_view(v) != "0";
  }();
  return on;
}

void log_dispatch(std::string_view op, std::string_view impl, std::string_view reason) {
  if (!verbose()) return;
  std::string line = "refold: ";
  line.append(op).append(" -> ").append(impl);
  if (!reason.empty()) line.append(" (").append(reason).append(")");
  line += '\n';
  write_line(line);
}

void log_verbose(std::string_view message) {
  if (!verbose()) return;
  std::string line = "refold: ";
  line.append(message);
  line += '\n';
  write_line(line);
}

}  // namespace refold
