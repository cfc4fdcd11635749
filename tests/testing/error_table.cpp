#include "testing/error_table.h"

#include <fmt/format.h>

#include <exception>

#include "refold/error.h"

namespace refold::testing {

::testing::AssertionResult throws_error(const std::function<void()>& call, std::string_view message,
                                        std::string_view prefix) {
  const std::string wanted =
      prefix.empty() ? fmt::format("refold::Error containing \"{}\"", message)
                     : fmt::format("refold::Error starting with \"{}\" and containing \"{}\"",
                                   prefix, message);
  try {
    call();
  } catch (const Error& e) {
    const std::string_view got = e.what();
    if (got.find(message) != std::string_view::npos && got.substr(0, prefix.size()) == prefix)
      return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << fmt::format("expected {}, got refold::Error \"{}\"", wanted, got);
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure()
           << fmt::format("expected {}, got another exception: \"{}\"", wanted, e.what());
  }
  return ::testing::AssertionFailure() << fmt::format("expected {}, got no exception", wanted);
}

void expect_errors(const std::vector<ErrorCase>& table, std::string_view prefix) {
  for (const ErrorCase& row : table)
    EXPECT_TRUE(throws_error(row.call, row.message, prefix)) << "row: " << row.what;
}

}  // namespace refold::testing
