// The refold command-line tool. Uses the public API only.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "refold/refold.h"

int main(int argc, char** argv) {
  CLI::App app{"refold: fast convolutional networks on CPUs"};
  app.set_version_flag("--version", std::string("refold ") + std::string(refold::version()));
  app.require_subcommand(0, 1);
  CLI11_PARSE(app, argc, argv);
  if (app.get_subcommands().empty()) {
    std::fputs(app.help().c_str(), stdout);
  }
  return 0;
}
