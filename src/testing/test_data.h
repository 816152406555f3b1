// Where tests find ../shared/data: $TESSEL_DATA, else beside the checkout.
// Tests that need it call TESSEL_REQUIRE_DATA() and are skipped, with the
// path they looked at, when it is absent.
#pragma once

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace tessel::testing {

inline std::string DataDir() {
  if (const char* env = std::getenv("TESSEL_DATA"); env && *env) return env;
  return std::string(TESSEL_SOURCE_DIR) + "/../shared/data";
}

// A gtest parameter name from free text: non-alphanumerics become '_'.
inline std::string TestName(std::string s) {
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

}  // namespace tessel::testing

#define TESSEL_REQUIRE_DATA()                                                     \
  do {                                                                            \
    if (!std::filesystem::exists(::tessel::testing::DataDir() + "/README.md"))    \
      GTEST_SKIP() << "shared data not found at " << ::tessel::testing::DataDir() \
                   << " (set TESSEL_DATA)";                                      \
  } while (0)
