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

thread_local DispatchLog* t_log = nullptr;
thread_local std::string t_detail;
thread_local std::uint64_t t_dispatches = 0;

}  // namespace

DispatchLog::DispatchLog() : previous_(t_log) { t_log = this; }
DispatchLog::~DispatchLog() { t_log = previous_; }

std::vector<std::string> DispatchLog::take() {
  std::vector<std::string> out;
  out.swap(entries_);
  return out;
}

void note_dispatch_detail(std::string_view detail) {
  if (verbose() || t_log != nullptr) t_detail.assign(detail);
}

bool verbose() {
  static const bool on = [] {
    const char* v = std::getenv("REFOLD_VERBOSE");
    return v != nullptr && *v != '\0' && std::string_view(v) != "0";
  }();
  return on;
}

std::uint64_t dispatch_count() { return t_dispatches; }

void log_dispatch(std::string_view op, std::string_view impl, std::string_view reason) {
  ++t_dispatches;
  if (!verbose() && t_log == nullptr) return;
  std::string chosen(impl);
  if (!t_detail.empty()) {
    chosen.append(" ").append(t_detail);
    t_detail.clear();
  }
  if (t_log != nullptr) t_log->record(std::string(op) + ": " + chosen);
  if (!verbose()) return;
  std::string line = "refold: ";
  line.append(op).append(" -> ").append(chosen);
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
