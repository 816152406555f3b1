#include "workload/importers.h"

#include <climits>
#include <cmath>

#include "core/strings.h"
#include "workload/model_mapping.h"

namespace tessel::workload_internal {

const std::vector<std::string>& TraceColumns(TraceFormat f) {
  static const std::vector<std::string> kNone;
  static const std::vector<std::string> kArena = {
      "job_id", "submission_time", "num_iteration", "model_name",
      "deadline", "batch_size", "num_gpu", "gpu_type"};
  static const std::vector<std::string> kPollux = {"name", "time", "application",
                                                   "num_replicas", "batch_size"};
  static const std::vector<std::string> kItp = {"job_id", "submission_time", "duration",
                                                "num_gpu"};
  static const std::vector<std::string> kPhilly = {"timestamp", "duration", "num_gpus",
                                                   "gpu_time", "cluster"};
  static const std::vector<std::string> kAlibaba = {
      "name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec",
      "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time"};
  static const std::vector<std::string> kTessel = {
      "job_id", "user", "submit_s", "model", "global_batch", "iterations", "duration_s",
      "requested_gpus", "gpu_type", "deadline_s", "priority", "min_gpus", "max_gpus",
      "adaptive_batch"};
  switch (f) {
    case TraceFormat::kAuto: return kNone;
    case TraceFormat::kArena: return kArena;
    case TraceFormat::kPollux: return kPollux;
    case TraceFormat::kItp: return kItp;
    case TraceFormat::kPhilly: return kPhilly;
    case TraceFormat::kAlibaba: return kAlibaba;
    case TraceFormat::kTessel: return kTessel;
  }
  return kNone;
}

std::string Origin(const CsvTable& t, const CsvRow& row) {
  return t.source() + ":" + std::to_string(row.line);
}

Result<long long> GetCount(const CsvTable& t, const CsvRow& row, std::string_view column) {
  std::string s = t.Get(row, column);
  auto v = ParseInt(s, t.Where(row, column));
  // Counts become ints (GPUs, batch): 4294967297 must not read as 1.
  if (!v.ok() || *v < 0 || *v > INT32_MAX) {
    return InvalidArgument(t.Where(row, column) + ": expected an integer from 0 to " + std::to_string(INT32_MAX) +
                           ", got '" + s + "'");
  }
  return *v;
}

Result<double> GetNonNegative(const CsvTable& t, const CsvRow& row, std::string_view column) {
  std::string s = t.Get(row, column);
  auto v = ParseDouble(s, t.Where(row, column));
  if (!v.ok() || !(*v >= 0 && *v <= kMaxInputSeconds)) {
    return InvalidArgument(t.Where(row, column) + ": expected a number of seconds from 0 to " +
                           FormatDouble(kMaxInputSeconds, 3) + ", got '" + s + "'");
  }
  return *v;
}

Status CheckTraceSeconds(const CsvTable& t, const CsvRow& row, std::string_view column, double v) {
  if (std::isfinite(v) && v <= kMaxInputSeconds) return Status::Ok();
  return InvalidArgument(t.Where(row, column) + ": " + t.Get(row, column) + " s is beyond the largest time a trace "
                         "may give (" + FormatDouble(kMaxInputSeconds, 3) + " s, about 300 years)");
}

Result<double> GetNumber(const CsvTable& t, const CsvRow& row, std::string_view column) {
  return t.GetDouble(row, column);
}

JobSpec RigidMappedJob(std::string id, SimTime submit, double duration_s, int gpus,
                       uint64_t seed) {
  JobSpec j;
  MappedModel m = MapModel(seed, id, gpus, duration_s);
  j.id = std::move(id);
  j.submit = submit;
  j.model = std::move(m.model);
  j.global_batch = m.global_batch;
  j.duration_s = duration_s;
  j.requested_gpus = gpus;
  j.min_gpus = gpus;
  j.max_gpus = gpus;
  return j;
}

void SkipCounter::Add(const std::string& reason, std::string where) {
  Entry& e = by_reason_[reason];
  if (e.count++ == 0) e.first = std::move(where);
}

void SkipCounter::AppendNotes(const std::string& stem, std::vector<std::string>& notes) const {
  for (const auto& [reason, e] : by_reason_) {
    notes.push_back(stem + ": skipped " + std::to_string(e.count) + " row" +
                    (e.count == 1 ? "" : "s") + " with " + reason + " (first at " + e.first +
                    ")");
  }
}

size_t SkipCounter::total() const {
  size_t n = 0;
  for (const auto& [reason, e] : by_reason_) n += e.count;
  return n;
}

}  // namespace tessel::workload_internal
