// Expected-failure tables (oneDNN's style): each row is a call that must throw refold::Error
// with a message containing a given substring.
//
//   testing::expect_errors({
//       {"stride 0", [&] { conv2d(x, w, {}, zero_stride); }, "stride (0, 1) must be positive"},
//       {"undefined input", [&] { conv2d(Tensor{}, w); }, "input is undefined"},
//   }, "conv2d: ");
//
// A row fails when the call returns, throws anything but refold::Error, or throws a message
// without the substring (or, with a prefix, not starting with it); the failure names the row,
// the expected text and what actually happened.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace refold::testing {

struct ErrorCase {
  std::string what;            // names the row in a failure
  std::function<void()> call;  // a callable returning a value is fine: the value is dropped
  std::string message;         // a substring the error's what() must contain
};

// Success when `call` throws refold::Error whose what() contains `message` and starts with
// `prefix` (empty: no prefix required).
::testing::AssertionResult throws_error(const std::function<void()>& call, std::string_view message,
                                        std::string_view prefix = {});

// One EXPECT per row, in order.
void expect_errors(const std::vector<ErrorCase>& table, std::string_view prefix = {});

}  // namespace refold::testing
