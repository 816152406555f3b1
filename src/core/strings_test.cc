#include "core/strings.h"

#include <gtest/gtest.h>

namespace tessel {
namespace {

TEST(Strings, SplitKeepsEmptyFields) {
  EXPECT_EQ(Split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
}

TEST(Strings, ParseDoubleRejectsTrailingGarbage) {
  EXPECT_TRUE(ParseDouble("1.5", "x").ok());
  auto r = ParseDouble("1.5x", "--gpus");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "--gpus: expected a number, got '1.5x'");
}

TEST(Strings, UnknownNameSuggestsCloseNames) {
  std::string m = UnknownNameMessage("gpu", "a1000", {"a100-40g", "a100", "v100"});
  EXPECT_NE(m.find("did you mean a100"), std::string::npos) << m;
  EXPECT_NE(m.find("known: a100-40g, a100, v100"), std::string::npos) << m;
}

}  // namespace
}  // namespace tessel
