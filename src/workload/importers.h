// Internal to tessel_workload: the per-format importers LoadTrace dispatches
// to (one file each, import_<format>.cc) and the field readers they share,
// so every importer reports errors the same way: "file:line: column:
// expected ..., got '...'".
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/csv.h"
#include "core/status.h"
#include "workload/job.h"
#include "workload/trace.h"

namespace tessel::workload_internal {

// One parsed trace file handed to an importer.
struct ImportFile {
  const CsvTable& table;
  std::string path;  // as given (directories joined with the file name)
  std::string stem;  // file name without directory and extension
  const TraceOptions& opts;
};

// Each importer appends the file's jobs to `out.jobs` (submit times as in
// the file, rows in file order, ids as in the trace, origin "file:line")
// and what it decided to `out.notes`. The caller has checked the header
// (TraceColumns) and sorts, rebases and merges afterwards.
Status ImportArena(const ImportFile& in, Workload& out);
Status ImportPollux(const ImportFile& in, Workload& out);
Status ImportItp(const ImportFile& in, Workload& out);
Status ImportPhilly(const ImportFile& in, Workload& out);
Status ImportAlibaba(const ImportFile& in, Workload& out);
Status ImportTessel(const ImportFile& in, Workload& out);

// The columns a format requires (its documented header, in order).
const std::vector<std::string>& TraceColumns(TraceFormat f);

// "file:line" of a row.
std::string Origin(const CsvTable& t, const CsvRow& row);

// A whole number >= 0 ("expected an integer >= 0, got '-2'").
Result<long long> GetCount(const CsvTable& t, const CsvRow& row, std::string_view column);
// A time in seconds from 0 to kMaxInputSeconds (core/sim_time.h; submit and
// creation times).
Result<double> GetNonNegative(const CsvTable& t, const CsvRow& row, std::string_view column);
// The most iterations a trace may give a job.
inline constexpr double kMaxIterations = 1e15;
// InvalidArgument naming file:line: column when `v` (read from `column`) is
// not a finite time within kMaxInputSeconds.
Status CheckTraceSeconds(const CsvTable& t, const CsvRow& row, std::string_view column, double v);
// Any finite number (durations may be <= 0 in real traces; callers skip).
Result<double> GetNumber(const CsvTable& t, const CsvRow& row, std::string_view column);

// Seconds since 1970-01-01 UTC of "YYYY-MM-DD HH:MM:SS" (or with 'T'
// between date and time); `what` names the field in the error.
Result<double> ParseUtcTimestamp(std::string_view text, std::string_view what);

// A rigid job (min = max = requested GPUs) measured by duration_s, with the
// model and batch of the model mapping keyed on `id`.
JobSpec RigidMappedJob(std::string id, SimTime submit, double duration_s, int gpus,
                       uint64_t seed);

// Counts skipped rows per reason, remembering where the first one was, and
// writes one note per reason.
class SkipCounter {
 public:
  void Add(const std::string& reason, std::string where);
  // "<stem>: skipped <n> rows with <reason> (first at <where>)".
  void AppendNotes(const std::string& stem, std::vector<std::string>& notes) const;
  size_t total() const;

 private:
  struct Entry {
    size_t count = 0;
    std::string first;
  };
  std::map<std::string, Entry> by_reason_;
};

}  // namespace tessel::workload_internal
