// Runs the refold executable as a user runs it (REFOLD_CLI_PATH, set by tests/CMakeLists.txt).
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace refold::testing {

struct CliRun {
  std::string output;  // stdout and stderr together
  int exit_code = -1;
};

inline CliRun run_cli(const std::string& arguments) {
  const std::string command = std::string("'") + REFOLD_CLI_PATH + "' " + arguments + " 2>&1";
  CliRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), static_cast<int>(buffer.size()), pipe) != nullptr)
    run.output += buffer.data();
  const int status = pclose(pipe);
  if (status != -1 && WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  return run;
}

}  // namespace refold::testing
