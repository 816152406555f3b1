// The JSON shapes of the daemon's HTTP API (what `tessel jobs --json` and
// friends print; scripts depend on the field names):
//
//   JobInfo:    {"id", "name", "user", "state", "gpu_type", "gpus", "nodes",
//                "plan", "restarts", "submitted", "started", "finished",
//                "reason", "deadline", "iterations"}
//   JobDetail:  JobInfo's fields plus "history" [{"time", "from", "to",
//                "reason"}], "steps" [{"time", "step", "step_time_s",
//                "gpu_type", "gpus", "profile"}], "corrections"
//                [{"gpu_type", "scope", "factor", "samples"}] (scope: "" for
//                the type's, "stages=<p>", "plan=<plan>"), "plan_json", "spec_yaml",
//                "failures", "launches", "slurm_job_id"
//   NodeInfo:   {"name", "gpu_type", "gres_type", "gpus", "gpus_used",
//                "gpus_free", "state"}
//   ClusterHistoryInfo: {"interval_s", "gpu_types" [{"name", "gpus"}],
//                "samples" [{"time", "allocated" [GPUs by gpu_types' index]}]}
//
// Times are ISO-8601 UTC strings to the second ("2024-05-01T12:00:03Z");
// absent times are null (a job's "deadline" when it has none). Absent values are null rather than "": gpu_type and
// plan when the job has no allocation, history's "from" for the submission,
// plan_json (a JSON object, parsed) when there is no plan, slurm_job_id
// before the first launch. Keys appear in the order above.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "core/status.h"
#include "server/service.h"

namespace tessel {

// Microseconds since the Unix epoch -> "YYYY-MM-DDTHH:MM:SSZ" (truncated to
// the second).
std::string FormatUtc(int64_t time_us);

nlohmann::ordered_json ToJson(const JobInfo& job);
nlohmann::ordered_json ToJson(const JobDetail& detail);
nlohmann::ordered_json ToJson(const NodeInfo& node);
nlohmann::ordered_json ToJson(const ClusterHistoryInfo& history);

// Serialises compactly; invalid UTF-8 (e.g. from a decoded URL) is replaced
// with U+FFFD instead of throwing.
std::string DumpJson(const nlohmann::ordered_json& j);

// `{"error": message}`.
std::string ErrorJson(std::string_view message);

// The body of POST /v1/jobs.
struct JobSubmission {
  std::string spec_yaml;  // the job spec's text
  std::string file;       // its name as the user gave it (for messages)
  std::string base_dir;   // absolute path of its folder on the client's host
};

// Parses and checks a POST /v1/jobs body: a JSON object with exactly the
// string fields spec_yaml, file and base_dir (absolute). InvalidArgument
// naming every bad field, one per line, otherwise.
Result<JobSubmission> ParseSubmitRequest(std::string_view body);

}  // namespace tessel
