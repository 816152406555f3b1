#include "workload/trace.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <unordered_map>

#include "core/csv.h"
#include "core/strings.h"
#include "workload/importers.h"

namespace tessel {

namespace fs = std::filesystem;
using workload_internal::ImportFile;
using workload_internal::TraceColumns;

namespace {

constexpr TraceFormat kAllFormats[] = {TraceFormat::kAuto,    TraceFormat::kArena,
                                       TraceFormat::kPollux,  TraceFormat::kItp,
                                       TraceFormat::kPhilly,  TraceFormat::kAlibaba,
                                       TraceFormat::kTessel};

// A file to load, with the name its ids are prefixed by when merging.
struct TraceFile {
  std::string path;
  std::string stem;
  std::string dir;  // the directory argument it was found in; "" for a file
};

// Expands `path` into files: itself, or a directory's *.csv sorted by name.
Status ExpandPath(const std::string& path, std::vector<TraceFile>& files) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<fs::path> found;
    for (const auto& e : fs::directory_iterator(path, ec)) {
      if (e.is_regular_file() && e.path().extension() == ".csv") found.push_back(e.path());
    }
    if (ec) return NotFound("cannot list directory '" + path + "': " + ec.message());
    if (found.empty()) return NotFound("no *.csv files in directory '" + path + "'");
    std::sort(found.begin(), found.end());
    for (const fs::path& p : found) files.push_back({p.string(), p.stem().string(), path});
    return Status::Ok();
  }
  if (!fs::exists(path, ec)) return NotFound("trace '" + path + "' does not exist");
  files.push_back({path, fs::path(path).stem().string(), ""});
  return Status::Ok();
}

Status ImportOne(const ImportFile& in, TraceFormat format, Workload& out) {
  switch (format) {
    case TraceFormat::kArena: return workload_internal::ImportArena(in, out);
    case TraceFormat::kPollux: return workload_internal::ImportPollux(in, out);
    case TraceFormat::kItp: return workload_internal::ImportItp(in, out);
    case TraceFormat::kPhilly: return workload_internal::ImportPhilly(in, out);
    case TraceFormat::kAlibaba: return workload_internal::ImportAlibaba(in, out);
    case TraceFormat::kTessel: return workload_internal::ImportTessel(in, out);
    case TraceFormat::kAuto: break;
  }
  return Internal("ImportOne: format not resolved");
}

// The format of `table`: detected, or `format` after checking its columns.
Result<TraceFormat> ResolveFormat(const CsvTable& table, TraceFormat format) {
  if (format == TraceFormat::kAuto) return DetectTraceFormat(table.header(), table.source());
  for (const std::string& c : TraceColumns(format)) {
    if (!table.HasColumn(c)) {
      return InvalidArgument(table.source() + ":1: missing column '" + c + "' of the " +
                             TraceFormatName(format) + " format (expected header " +
                             Join(TraceColumns(format), ",") + ")");
    }
  }
  return format;
}

}  // namespace

const char* TraceFormatName(TraceFormat f) {
  switch (f) {
    case TraceFormat::kAuto: return "auto";
    case TraceFormat::kArena: return "arena";
    case TraceFormat::kPollux: return "pollux";
    case TraceFormat::kItp: return "itp";
    case TraceFormat::kPhilly: return "philly";
    case TraceFormat::kAlibaba: return "alibaba";
    case TraceFormat::kTessel: return "tessel";
  }
  return "?";
}

std::vector<std::string> TraceFormatNames() {
  std::vector<std::string> out;
  for (TraceFormat f : kAllFormats) out.push_back(TraceFormatName(f));
  return out;
}

Result<TraceFormat> ParseTraceFormat(std::string_view name) {
  std::string l = ToLower(Trim(name));
  for (TraceFormat f : kAllFormats)
    if (l == TraceFormatName(f)) return f;
  return InvalidArgument(UnknownNameMessage("trace format", name, TraceFormatNames()));
}

Result<TraceFormat> DetectTraceFormat(const std::vector<std::string>& header,
                                      const std::string& source) {
  TraceFormat best = TraceFormat::kAuto;
  size_t best_columns = 0;
  for (TraceFormat f : kAllFormats) {
    const auto& cols = TraceColumns(f);
    if (cols.empty()) continue;
    bool all = std::all_of(cols.begin(), cols.end(), [&](const std::string& c) {
      return std::find(header.begin(), header.end(), c) != header.end();
    });
    // The most specific format wins should one's columns contain another's.
    if (all && cols.size() > best_columns) {
      best = f;
      best_columns = cols.size();
    }
  }
  if (best != TraceFormat::kAuto) return best;
  std::string msg = source + ":1: header '" + Join(header, ",") +
                    "' matches no trace format; accepted headers:";
  for (TraceFormat f : kAllFormats) {
    if (f == TraceFormat::kAuto) continue;
    msg += std::string("\n  ") + TraceFormatName(f) + ": " + Join(TraceColumns(f), ",");
  }
  return InvalidArgument(msg);
}

Result<std::vector<std::string>> ListTraceFiles(const std::string& path) {
  std::vector<TraceFile> files;
  TESSEL_RETURN_IF_ERROR(ExpandPath(path, files));
  std::vector<std::string> out;
  out.reserve(files.size());
  for (const TraceFile& f : files) out.push_back(f.path);
  return out;
}

Result<Workload> LoadTraces(const std::vector<std::string>& paths, TraceFormat format,
                            const TraceOptions& opts) {
  if (!(opts.time_scale > 0) || !std::isfinite(opts.time_scale)) {
    return InvalidArgument("time scale: expected a number > 0, got " +
                           FormatDouble(opts.time_scale));
  }
  if (paths.empty()) return InvalidArgument("no trace given");
  std::vector<TraceFile> files;
  for (const std::string& p : paths) {
    std::vector<TraceFile> expanded;
    TESSEL_RETURN_IF_ERROR(ExpandPath(p, expanded));
    files.insert(files.end(), expanded.begin(), expanded.end());
  }
  const bool prefix_ids = files.size() > 1;

  Workload out;
  std::vector<std::string> names;
  for (const std::string& p : paths) names.push_back(fs::path(p).filename().string());
  out.name = Join(names, "+");

  // The files of one directory argument must share a format.
  std::unordered_map<std::string, std::pair<TraceFormat, std::string>> dir_format;
  for (const TraceFile& file : files) {
    auto table = CsvTable::ReadFile(file.path);
    if (!table.ok()) return table.status();
    auto resolved = ResolveFormat(*table, format);
    if (!resolved.ok()) return resolved.status();
    auto [it, inserted] = dir_format.try_emplace(file.dir, *resolved, file.path);
    if (!file.dir.empty() && !inserted && it->second.first != *resolved) {
      return InvalidArgument(file.path + ": " + TraceFormatName(*resolved) + " format, but " +
                             it->second.second + " in the same directory is " +
                             TraceFormatName(it->second.first) +
                             "; a directory must hold one format");
    }
    Workload part;
    ImportFile in{*table, file.path, file.stem, opts};
    TESSEL_RETURN_IF_ERROR(ImportOne(in, *resolved, part));
    for (JobSpec& j : part.jobs) {
      if (prefix_ids) j.id = file.stem + "/" + j.id;
      out.jobs.push_back(std::move(j));
    }
    for (std::string& n : part.notes) out.notes.push_back(std::move(n));
    if (out.apps_dir.empty()) out.apps_dir = part.apps_dir;
  }

  std::unordered_map<std::string_view, const JobSpec*> seen;
  seen.reserve(out.jobs.size());
  for (const JobSpec& j : out.jobs) {
    auto [it, inserted] = seen.emplace(j.id, &j);
    if (!inserted) {
      return InvalidArgument(j.origin + ": job_id: duplicate job id '" + j.id +
                             "' (first at " + it->second->origin + ")");
    }
  }

  SortBySubmit(out, /*rebase=*/true);
  // Each format bounds its own fields; after rebasing, the span of arrivals
  // (absolute timestamps years apart) is bounded too.
  for (const JobSpec& j : out.jobs) {
    if (ToSeconds(j.submit) > kMaxInputSeconds) {
      return InvalidArgument(j.origin + ": arrives " + FormatDouble(ToSeconds(j.submit)) +
                             " s after the first job; a trace may span at most 1e10 s");
    }
  }
  if (opts.time_scale != 1.0) {
    for (JobSpec& j : out.jobs) {
      SimTime slack = j.deadline ? *j.deadline - j.submit : 0;
      double scaled = ToSeconds(j.submit) * opts.time_scale;
      if (!(scaled <= kMaxInputSeconds)) {
        return InvalidArgument("--time-scale " + FormatDouble(opts.time_scale) + ": job " + j.id + " would arrive at " +
                               FormatDouble(scaled) + " s, beyond the largest time a trace may give (1e10 s)");
      }
      j.submit = Seconds(scaled);
      if (j.deadline) *j.deadline = j.submit + slack;
    }
    out.notes.push_back("submit times scaled by " + FormatDouble(opts.time_scale));
  }
  if (opts.limit > 0 && out.jobs.size() > opts.limit) {
    out.notes.push_back("kept the first " + std::to_string(opts.limit) + " of " +
                        std::to_string(out.jobs.size()) + " jobs by submit time");
    out.jobs.resize(opts.limit);
  }
  return out;
}

Result<Workload> LoadTrace(const std::string& path, TraceFormat format,
                           const TraceOptions& opts) {
  return LoadTraces({path}, format, opts);
}

}  // namespace tessel
