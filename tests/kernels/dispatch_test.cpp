// The one dispatch (kernels/dispatch.h): implementations in order, the first that does not
// decline runs, the reference when all decline or none exists; every choice recorded.
#include "kernels/dispatch.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/verbose.h"
#include "refold/tensor.h"

namespace refold {
namespace {

Tensor filled(float value) { return full({1}, value); }

TEST(Dispatch, RunsTheFirstImplementationThatDoesNotDecline) {
  std::vector<std::string> tried;
  DispatchLog log;
  const Tensor y = dispatch("op",
                            {{"a",
                              [&](std::string* declined) {
                                tried.push_back("a");
                                *declined = "not a";
                                return Tensor();
                              }},
                             {"b",
                              [&](std::string*) {
                                tried.push_back("b");
                                return filled(2);
                              }},
                             {"c",
                              [&](std::string*) {
                                tried.push_back("c");
                                return filled(3);
                              }}},
                            [&] {
                              tried.push_back("reference");
                              return filled(4);
                            });
  EXPECT_EQ(y.at({0}), 2.0f);
  EXPECT_EQ(tried, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(log.take(), std::vector<std::string>{"op: b"});
}

TEST(Dispatch, FallsBackToTheReferenceWhenEveryImplementationDeclines) {
  DispatchLog log;
  const std::uint64_t before = dispatch_count();
  const Tensor y = dispatch("op",
                            {{"a",
                              [](std::string* declined) {
                                *declined = "no";
                                return Tensor();
                              }}},
                            [] { return filled(4); });
  EXPECT_EQ(y.at({0}), 4.0f);
  EXPECT_EQ(log.take(), std::vector<std::string>{"op: reference"});
  EXPECT_EQ(dispatch_count(), before + 1);
}

TEST(Dispatch, AnOpWithTheReferenceAloneIsRecordedToo) {
  DispatchLog log;
  EXPECT_EQ(dispatch("op", {}, [] { return filled(5); }).at({0}), 5.0f);
  EXPECT_EQ(log.take(), std::vector<std::string>{"op: reference"});
}

}  // namespace
}  // namespace refold
