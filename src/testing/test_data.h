// Where tests find ../shared/data: $TESSEL_DATA, else beside the checkout.
// Tests that need it call TESSEL_REQUIRE_DATA() and are skipped, with the
// path they looked at, when it is absent.
#pragma once

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

namespace tessel::testing {

// A temporary directory private to this test process. CTest runs tests in
// parallel processes that share ::testing::TempDir(), so fixed file names
// there would race; every test writes here instead. A directory left by an
// earlier process with the same pid is stale (pids are reused over
// thousands of test processes): it is emptied first, so no test reads
// another run's files.
inline std::string ProcessTempDir() {
  static const std::string dir = [] {
    std::string base = std::getenv("TMPDIR") && *std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
    std::string d = base + "/tessel-test-" + std::to_string(::getpid());
    std::error_code ec;
    std::filesystem::remove_all(d, ec);
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

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
