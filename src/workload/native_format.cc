// tessel's own trace format: one CSV row per JobSpec, every field, so a
// workload (e.g. a generated one) can be saved and loaded back unchanged.
// Times are seconds with microsecond precision; numbers are written in the
// shortest form that reads back to the same double.
#include <charconv>
#include <cstdlib>

#include "core/strings.h"
#include "hardware/gpu.h"
#include "model/catalog.h"
#include "model/profiled_model.h"
#include "workload/importers.h"

namespace tessel {

namespace {

std::string FormatShortest(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return ec == std::errc() ? std::string(buf, end) : FormatDouble(v, 17);
}

// Exact: "12.5" for 12'500'000 us, "3" for 3'000'000 us.
std::string FormatSeconds(SimTime t) {
  std::string out = t < 0 ? "-" : "";
  unsigned long long a = t < 0 ? 0ULL - static_cast<unsigned long long>(t)
                               : static_cast<unsigned long long>(t);
  out += std::to_string(a / kMicrosPerSecond);
  unsigned long long frac = a % kMicrosPerSecond;
  if (frac != 0) {
    std::string f = std::to_string(frac);
    f.insert(0, 6 - f.size(), '0');
    while (f.back() == '0') f.pop_back();
    out += "." + f;
  }
  return out;
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

Status WriteTraceCsv(const Workload& workload, std::ostream& out) {
  // `app` is optional on input (files written before it existed lack it).
  out << Join(workload_internal::TraceColumns(TraceFormat::kTessel), ",") << ",app\n";
  for (const JobSpec& j : workload.jobs) {
    if (j.iterations.has_value() == j.duration_s.has_value()) {
      return InvalidArgument("job '" + j.id +
                             "': expected exactly one of iterations and duration_s");
    }
    out << CsvField(j.id) << ',' << CsvField(j.user) << ',' << FormatSeconds(j.submit) << ','
        << CsvField(j.model) << ',' << j.global_batch << ','
        << (j.iterations ? FormatShortest(*j.iterations) : "") << ','
        << (j.duration_s ? FormatShortest(*j.duration_s) : "") << ',' << j.requested_gpus << ','
        << CsvField(j.requested_gpu_type) << ','
        << (j.deadline ? FormatSeconds(*j.deadline) : "") << ',' << j.priority << ','
        << j.min_gpus << ',' << j.max_gpus << ',' << (j.adaptive_batch ? "true" : "false") << ','
        << CsvField(j.app) << '\n';
  }
  if (!out) return InvalidArgument("writing the trace failed");
  return Status::Ok();
}

namespace workload_internal {

namespace {

Result<int> GetIntAtLeast(const CsvTable& t, const CsvRow& row, std::string_view column,
                          long long min) {
  auto v = t.GetInt(row, column);
  if (!v.ok() || *v < min || *v > INT32_MAX) {
    return InvalidArgument(t.Where(row, column) + ": expected an integer >= " +
                           std::to_string(min) + ", got '" + t.Get(row, column) + "'");
  }
  return static_cast<int>(*v);
}

// An optional number that must be > 0 when present.
Result<std::optional<double>> GetOptionalPositive(const CsvTable& t, const CsvRow& row,
                                                  std::string_view column) {
  auto v = t.GetOptionalDouble(row, column);
  if (!v.ok() || (*v && **v <= 0)) {
    return InvalidArgument(t.Where(row, column) + ": expected a number > 0 or nothing, got '" +
                           t.Get(row, column) + "'");
  }
  return *v;
}

}  // namespace

Status ImportTessel(const ImportFile& in, Workload& out) {
  const CsvTable& t = in.table;
  for (const CsvRow& row : t.rows()) {
    JobSpec j;
    j.id = t.Get(row, "job_id");
    if (j.id.empty()) return InvalidArgument(t.Where(row, "job_id") + ": expected a job id, got an empty value");
    j.user = t.Get(row, "user");
    j.origin = Origin(t, row);

    auto submit = GetNonNegative(t, row, "submit_s");
    if (!submit.ok()) return submit.status();
    j.submit = Seconds(*submit);

    // A catalog model, or a profiled one (known by measured times only).
    if (const ProfiledModel* profiled = FindProfiledModel(t.Get(row, "model"))) {
      j.model = profiled->name;
    } else {
      auto model = FindModel(t.Get(row, "model"));
      if (!model.ok()) {
        return InvalidArgument(t.Where(row, "model") + ": " + model.status().message() + "; profiled models: " +
                               Join(ProfiledModelNames(), ", "));
      }
      j.model = (*model)->name;
    }

    auto batch = GetIntAtLeast(t, row, "global_batch", 1);
    if (!batch.ok()) return batch.status();
    j.global_batch = *batch;

    auto iters = GetOptionalPositive(t, row, "iterations");
    if (!iters.ok()) return iters.status();
    auto duration = GetOptionalPositive(t, row, "duration_s");
    if (!duration.ok()) return duration.status();
    if (*iters && **iters > kMaxIterations) {
      return InvalidArgument(t.Where(row, "iterations") + ": " + t.Get(row, "iterations") +
                             " is beyond the largest amount of work a trace may give (1e15 iterations)");
    }
    if (*duration) {
      if (Status s = CheckTraceSeconds(t, row, "duration_s", **duration); !s.ok()) return s;
    }
    if (iters->has_value() == duration->has_value()) {
      return InvalidArgument(t.Where(row, "iterations") +
                             ": expected exactly one of iterations and duration_s");
    }
    j.iterations = *iters;
    j.duration_s = *duration;

    auto gpus = GetIntAtLeast(t, row, "requested_gpus", 1);
    if (!gpus.ok()) return gpus.status();
    j.requested_gpus = *gpus;

    std::string type = t.Get(row, "gpu_type");
    if (!type.empty()) {
      auto gpu = FindGpu(type);
      if (!gpu.ok()) return InvalidArgument(t.Where(row, "gpu_type") + ": " + gpu.status().message());
      j.requested_gpu_type = (*gpu)->name;
    }

    auto deadline = t.GetOptionalDouble(row, "deadline_s");
    if (!deadline.ok()) return deadline.status();
    if (*deadline) j.deadline = Seconds(**deadline);

    auto priority = t.GetInt(row, "priority");
    if (!priority.ok()) return priority.status();
    j.priority = static_cast<int>(*priority);

    auto min_gpus = GetIntAtLeast(t, row, "min_gpus", 1);
    if (!min_gpus.ok()) return min_gpus.status();
    auto max_gpus = GetIntAtLeast(t, row, "max_gpus", *min_gpus);
    if (!max_gpus.ok()) return max_gpus.status();
    j.min_gpus = *min_gpus;
    j.max_gpus = *max_gpus;

    std::string adaptive = ToLower(t.Get(row, "adaptive_batch"));
    if (adaptive == "true" || adaptive == "1") {
      j.adaptive_batch = true;
    } else if (adaptive == "false" || adaptive == "0" || adaptive.empty()) {
      j.adaptive_batch = false;
    } else {
      return InvalidArgument(t.Where(row, "adaptive_batch") + ": expected true or false, got '" +
                             t.Get(row, "adaptive_batch") + "'");
    }
    j.app = t.Get(row, "app");
    out.jobs.push_back(std::move(j));
  }
  return Status::Ok();
}

}  // namespace workload_internal

}  // namespace tessel
