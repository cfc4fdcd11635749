// The refold CLI, run as a user runs it (REFOLD_CLI_PATH is the built executable).
#include <gtest/gtest.h>
#include <string>

#include "testing/run_cli.h"

namespace {

using refold::testing::CliRun;
using refold::testing::run_cli;

TEST(Cli, VersionPrintsTheVersion) {
  const CliRun run = run_cli("--version");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output.rfind("refold ", 0), 0u) << run.output;
  EXPECT_NE(run.output.find('.'), std::string::npos) << run.output;  // "refold 0.1.0"
}

TEST(Cli, DemoRunsTheSeedAndPasses) {
  const CliRun run = run_cli("demo");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  // The seed's claim, as counted: three permutes, and the same numbers as NCHW.
  EXPECT_NE(run.output.find("permutes: 3 (expected 3"), std::string::npos) << run.output;
  const auto at = run.output.find("max |diff| vs NCHW reference: ");
  ASSERT_NE(at, std::string::npos) << run.output;
  const std::string line = run.output.substr(at, run.output.find('\n', at) - at);
  EXPECT_TRUE(line.ends_with("OK")) << line;
  EXPECT_EQ(run.output.find("FAIL"), std::string::npos) << run.output;
  // The per-layer table names the incompatible layer and the formats around it.
  EXPECT_NE(run.output.find("LegacyNchwOp"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("no (NCHW only)"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("0.weight, 4.weight now channels_last"), std::string::npos)
      << run.output;
  // Seed 2: the toy and a re-parameterized model, both verified.
  EXPECT_NE(run.output.find("the seed's toy (2 channels, 9x9 ones)"), std::string::npos);
  EXPECT_NE(run.output.find("reparameterize: 22 blocks converted, 0 left"), std::string::npos)
      << run.output;
  const auto verified = run.output.find("verify (training form NCHW vs re-parameterized NHWC");
  ASSERT_NE(verified, std::string::npos) << run.output;
  const auto line_end = run.output.find('\n', run.output.find('\n', verified) + 1);
  EXPECT_EQ(run.output.substr(line_end - 2, 2), "OK") << run.output;
}

TEST(Cli, UnknownSubcommandFails) {
  const CliRun run = run_cli("no-such-command");
  EXPECT_NE(run.exit_code, 0) << run.output;
}

}  // namespace
