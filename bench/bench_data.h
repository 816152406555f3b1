// Where benchmarks find ../shared/data ($TESSEL_DATA, else ../shared/data
// from the working directory), and skipping a benchmark when it is absent.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace tessel::bench {

inline std::string DataDir() {
  const char* env = std::getenv("TESSEL_DATA");
  return env ? env : "../shared/data";
}

inline bool HaveData(benchmark::State& state, const std::string& path) {
  if (std::filesystem::exists(path)) return true;
  state.SkipWithError(("data not found: " + path + " (set TESSEL_DATA)").c_str());
  return false;
}

}  // namespace tessel::bench
