// Shared by the libFuzzer targets (fuzz/*_fuzz.cc): an invariant check that
// is a finding when it fails (it aborts with the message, and libFuzzer
// keeps the input), and the fuzzer's input split into parts.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#define FUZZ_CHECK(cond, what)                                                   \
  do {                                                                           \
    if (!(cond)) {                                                               \
      std::fprintf(stderr, "fuzz invariant failed: %s (%s:%d): %s\n", #cond,     \
                   __FILE__, __LINE__, std::string(what).c_str());               \
      std::abort();                                                              \
    }                                                                            \
  } while (0)

namespace tessel::fuzz {

// The first byte picks what is fuzzed (modulo `choices`), the rest is the
// input text.
struct Input {
  unsigned choice = 0;
  std::string_view text;
};

inline Input Split(const uint8_t* data, size_t size, unsigned choices) {
  if (size == 0) return {0, {}};
  return {static_cast<unsigned>(data[0]) % choices,
          std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1)};
}

// The text up to the first newline, and what follows it.
inline std::pair<std::string_view, std::string_view> FirstLine(std::string_view text) {
  size_t nl = text.find('\n');
  if (nl == std::string_view::npos) return {text, {}};
  return {text.substr(0, nl), text.substr(nl + 1)};
}

}  // namespace tessel::fuzz
