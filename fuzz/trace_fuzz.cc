// Every trace format through the real loader (a file, as `--trace` reads
// it): the first byte picks the format (auto, arena, pollux, itp, philly,
// alibaba, tessel), the rest is the file. A loaded workload must be sane
// (submit order from 0, times within the simulator's range, positive GPU
// counts and work) and survive tessel's own format: written and read back,
// the same jobs.
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/sim_time.h"
#include "fuzz/fuzz_util.h"
#include "workload/trace.h"

namespace {

const std::string& TempDir() {
  static const std::string dir = [] {
    std::string d = (std::filesystem::temp_directory_path() / ("tessel-fuzz-trace-" + std::to_string(getpid()))).string();
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

void Write(const std::string& path, std::string_view text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessel;
  static const TraceFormat kFormats[] = {TraceFormat::kAuto,   TraceFormat::kArena,   TraceFormat::kPollux,
                                         TraceFormat::kItp,    TraceFormat::kPhilly,  TraceFormat::kAlibaba,
                                         TraceFormat::kTessel};
  auto in = fuzz::Split(data, size, std::size(kFormats));
  const std::string path = TempDir() + "/trace.csv";
  Write(path, in.text);
  TraceOptions opts;
  if (const char* d = std::getenv("TESSEL_DATA"); d && *d) opts.apps_dir = std::string(d) + "/pollux/apps";
  auto w = LoadTrace(path, kFormats[in.choice], opts);
  if (!w.ok()) {
    FUZZ_CHECK(!w.status().message().empty(), "an error without a message");
    return 0;
  }
  SimTime last = 0;
  for (size_t i = 0; i < w->jobs.size(); ++i) {
    const JobSpec& j = w->jobs[i];
    FUZZ_CHECK(j.submit >= last, "jobs out of submit order: " + j.id);
    FUZZ_CHECK(i > 0 || j.submit == 0, "the first job is not at t = 0");
    FUZZ_CHECK(ToSeconds(j.submit) <= kMaxInputSeconds, "submit beyond the input range: " + j.id);
    last = j.submit;
    FUZZ_CHECK(j.requested_gpus >= 1, "requested_gpus < 1: " + j.id);
    FUZZ_CHECK(j.min_gpus >= 1 && j.min_gpus <= j.max_gpus, "min/max GPUs: " + j.id);
    FUZZ_CHECK(j.global_batch >= 1, "global_batch < 1: " + j.id);
    FUZZ_CHECK(j.iterations.has_value() != j.duration_s.has_value(), "neither or both of iterations and duration: " + j.id);
    if (j.iterations) FUZZ_CHECK(std::isfinite(*j.iterations) && *j.iterations > 0, "iterations: " + j.id);
    if (j.duration_s)
      FUZZ_CHECK(std::isfinite(*j.duration_s) && *j.duration_s > 0 && *j.duration_s <= kMaxInputSeconds,
                 "duration: " + j.id);
    if (j.deadline) FUZZ_CHECK(*j.deadline >= 0, "negative deadline: " + j.id);
  }
  // Round trip through tessel's own format.
  std::ostringstream csv;
  if (!WriteTraceCsv(*w, csv).ok()) return 0;
  const std::string again = TempDir() + "/again.csv";
  Write(again, csv.str());
  auto back = LoadTrace(again, TraceFormat::kTessel, TraceOptions{});
  FUZZ_CHECK(back.ok(), "tessel's own output does not load: " + back.status().message());
  FUZZ_CHECK(back->jobs.size() == w->jobs.size(), "the round trip changed the number of jobs");
  for (size_t i = 0; i < w->jobs.size(); ++i) {
    FUZZ_CHECK(back->jobs[i].id == w->jobs[i].id, "the round trip changed job " + w->jobs[i].id);
    FUZZ_CHECK(back->jobs[i].requested_gpus == w->jobs[i].requested_gpus, "round trip GPUs: " + w->jobs[i].id);
  }
  return 0;
}
