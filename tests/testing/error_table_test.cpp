// The expected-failure table must itself be able to fail: every way a row can go wrong is
// reported, and its message says what was expected and what happened.
#include "testing/error_table.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "core/check.h"
#include "refold/error.h"

namespace refold {
namespace {

void throws_conv_error() { fail("conv2d: groups ({}) must divide in_channels ({})", 3, 8); }

TEST(ErrorTable, PassesWhenTheErrorContainsTheSubstringAndStartsWithThePrefix) {
  EXPECT_TRUE(testing::throws_error(throws_conv_error, "groups (3) must divide"));
  EXPECT_TRUE(testing::throws_error(throws_conv_error, "in_channels (8)", "conv2d: "));
  testing::expect_errors({{"groups", throws_conv_error, "must divide in_channels (8)"}},
                         "conv2d: ");
}

TEST(ErrorTable, FailsAndSaysWhy) {
  EXPECT_FALSE(testing::throws_error([] {}, "anything"));
  EXPECT_FALSE(testing::throws_error(throws_conv_error, "groups (4)"));
  EXPECT_FALSE(testing::throws_error(throws_conv_error, "groups (3)", "linear: "));
  EXPECT_FALSE(testing::throws_error([] { throw std::runtime_error("groups (3)"); }, "groups (3)"));

  EXPECT_NONFATAL_FAILURE(testing::expect_errors({{"silent call", [] {}, "x"}}),
                          "expected refold::Error containing \"x\", got no exception");
  EXPECT_NONFATAL_FAILURE(testing::expect_errors({{"wrong text", throws_conv_error, "groups (4)"}}),
                          "got refold::Error \"conv2d: groups (3) must divide in_channels (8)\"");
  EXPECT_NONFATAL_FAILURE(
      testing::expect_errors({{"wrong op", throws_conv_error, "groups (3)"}}, "linear: "),
      "starting with \"linear: \"");
  EXPECT_NONFATAL_FAILURE(
      testing::expect_errors({{"std error", [] { throw std::runtime_error("boom"); }, "boom"}}),
      "got another exception: \"boom\"");
  // The row's name is in the message, so a table failure points at its row.
  EXPECT_NONFATAL_FAILURE(testing::expect_errors({{"row seven", [] {}, "x"}}), "row: row seven");
}

}  // namespace
}  // namespace refold
