// The refold command-line tool. Uses the public API only.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "demo.h"
#include "refold/refold.h"

int main(int argc, char** argv) {
  CLI::App app{"refold: fast convolutional networks on CPUs"};
  app.set_version_flag("--version", std::string("refold ") + std::string(refold::version()));
  app.require_subcommand(0, 1);
  CLI::App* demo = app.add_subcommand(
      "demo", "Run seed 1 (convert_conv2d_weight_memory_format): permute count and max diff");
  CLI11_PARSE(app, argc, argv);

  try {
    if (demo->parsed()) return refold::cli::run_demo(stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "refold: error: %s\n", e.what());
    return 1;
  }
  std::fputs(app.help().c_str(), stdout);
  return 0;
}
