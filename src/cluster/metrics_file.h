// Reading what a running job reports about itself: the JSON lines it
// appends to TESSEL_METRICS_FILE (examples/README.md): one per optimizer
// step, per checkpoint, at the end, and per profiling step. The daemon
// tails the file while the job runs; a line counts only once it is whole
// (ends in a newline), so a job caught mid-write is read on the next poll.
// Malformed lines are counted and skipped, never fatal: the file is the
// job's, not the daemon's. The daemon's memory does not grow with the file:
// each Read reads at most kMetricsReadBudget bytes, through a buffer of
// kMetricsChunkBytes, and a line longer than kMetricsMaxLineBytes (a metrics
// line is ~200 bytes) is skipped without being held; a file that grows
// faster than the budget per poll is read behind it (MetricsUpdate::more).
// Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessel {

struct MetricsStep {
  int64_t step = 0;
  double step_time_s = 0;
  int64_t samples = 0;
  double time_s = 0;  // Unix seconds when the job wrote it (0 if absent)
  bool profile = false;
  int micro_batch = 0;  // profiling steps
  int layers = 0;       // profiling steps
  std::optional<double> loss;  // the step's mean loss; absent, null or not finite: none
};

inline constexpr int64_t kMetricsChunkBytes = 1 << 20;
inline constexpr int64_t kMetricsReadBudget = 8 << 20;
inline constexpr int64_t kMetricsMaxLineBytes = 64 << 10;

struct MetricsUpdate {
  std::vector<MetricsStep> steps;          // new since the last read, in file order
  std::optional<int64_t> checkpoint_step;  // the latest checkpoint seen in this read
  bool done = false;                       // a "done" line was read
  int malformed = 0;                       // lines skipped
  bool more = false;                       // the read stopped at its budget: more is there
};

class MetricsTail {
 public:
  explicit MetricsTail(std::string path, int64_t offset = 0) : path_(std::move(path)), offset_(offset) {}
  // Reads what was appended since the last call, at most kMetricsReadBudget
  // bytes (the rest at the next calls).
  // A missing file is an empty update (the job has not written yet).
  // Unavailable on I/O errors.
  Result<MetricsUpdate> Read();
  // Bytes consumed so far (whole lines, and the part read of a line too
  // long to keep).
  int64_t offset() const { return offset_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int64_t offset_ = 0;
  bool skipping_ = false;  // inside a line too long to keep: dropped up to its newline
};

// Parses one line (without its newline) into `update`.
void ParseMetricsLine(const std::string& line, MetricsUpdate* update);

}  // namespace tessel
