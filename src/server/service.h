// What the daemon's HTTP API (server/http_server.h) and the CLI clients
// talk about, and the interface the API calls into. The daemon
// (server/daemon.h) implements JobService over its store and scheduling
// loop; tests implement it with fakes. The API layer owns authentication
// (who the Caller is); the service owns authorisation (what a caller may
// see and do) and validation, and stores nothing for a refused request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessel {

// Who is asking (from a bearer token; server/auth.h).
struct Caller {
  std::string user;
  bool admin = false;
};

// Status codes the API maps: InvalidArgument 400, NotFound 404,
// PermissionDenied 403 (another user's job: a user may neither see nor
// cancel it), FailedPrecondition 409, Unavailable 503, Internal 500.

// A state change of a job.
struct JobTransitionInfo {
  int64_t time_us = 0;
  std::string from;  // "" for the submission
  std::string to;
  std::string reason;
};

// A measured step (or profiling step).
struct JobStepInfo {
  int64_t time_us = 0;
  int64_t step = 0;
  double step_time_s = 0;
  std::string gpu_type;
  int gpus = 0;
  bool profile = false;
  std::optional<double> loss;  // the step's mean loss, when the job reported one
};

// The estimator's correction for the job on one GPU type, within it for
// `scope`: "" (the type's: the latest measurement under any plan),
// "stages=<p>" (a profile of a p-stage pipeline's stage) or "plan=<plan>"
// (that plan measured); cluster/store.h.
struct JobCorrectionInfo {
  std::string gpu_type;
  double factor = 1;
  int64_t samples = 0;
  std::string scope;
};

// One job as `tessel jobs --json` shows it (field names are the JSON keys).
struct JobInfo {
  int64_t id = 0;
  std::string name;
  std::string user;
  std::string state;     // pending, profiling, starting, running, reconfiguring, completed, failed, cancelled
  std::string gpu_type;  // catalog GPU name; "" when none
  int gpus = 0;
  std::vector<std::string> nodes;
  std::string plan;  // "dp=2 tp=1 pp=1 mb=8 x2 ..." (human); "" when none
  int restarts = 0;
  int64_t submitted_us = 0;
  std::optional<int64_t> started_us;
  std::optional<int64_t> finished_us;
  std::string reason;  // of the latest transition
  std::optional<int64_t> deadline_us;  // submitted + the spec's deadline; none without one
  int64_t iterations = 0;              // the spec's optimizer steps (0: unknown)
};

// `tessel job ID --json`: the job plus its history, steps and corrections.
struct JobDetail {
  JobInfo job;
  std::string plan_json;  // the whole plan as JSON ("" when none)
  std::string spec_yaml;  // as submitted
  int failures = 0;
  int launches = 0;
  std::optional<std::string> slurm_job_id;
  std::vector<JobTransitionInfo> history;
  std::vector<JobStepInfo> steps;  // the latest ones, oldest first
  std::vector<JobCorrectionInfo> corrections;
};

// `tessel nodes --json`.
struct NodeInfo {
  std::string name;
  std::string gpu_type;  // catalog GPU name
  std::string gres_type;  // as Slurm names it
  int gpus = 0;
  int gpus_used = 0;  // by anything (tessel's jobs and others)
  std::string state;  // idle, mixed, allocated, drained, down, ...
};

// Daemon-wide figures for /metrics.
// Whether the daemon reaches Slurm (its last poll), for /healthz and /metrics.
struct ServiceHealth {
  bool slurm_reachable = true;
  int64_t unreachable_since_us = 0;  // the first failed poll in a row (Unix µs)
  std::string slurm_error;
};

struct ServiceMetrics {
  int64_t queue_length = 0;  // pending + profiling
  std::vector<std::pair<std::string, int64_t>> jobs_by_state;  // every state
  std::vector<std::pair<std::string, int64_t>> gpus_allocated_by_type;
  int64_t decisions = 0;
  double decision_seconds_sum = 0;
  double last_decision_seconds = 0;
  int64_t restarts = 0;
  int64_t failures = 0;
  ServiceHealth slurm;
};

// GPUs allocated per type over the last hours (GET /v1/cluster/history):
// the daemon samples them at its polls into a bounded ring
// (server/cluster_history.h).
struct ClusterHistorySample {
  int64_t time_us = 0;
  std::vector<int64_t> allocated;  // by ClusterHistoryInfo::gpu_types' index
};
struct ClusterHistoryInfo {
  std::vector<std::string> gpu_types;  // catalog names, sorted
  std::vector<int64_t> gpus;           // each type's GPUs on the current nodes
  int64_t interval_s = 0;              // between samples
  std::vector<ClusterHistorySample> samples;  // oldest first; the last one is now
};

// A request's query: GET /v1/jobs takes `?all=&limit=&after=` (a page),
// GET /v1/jobs/{id} `?steps=` (how many of its latest steps).
inline constexpr int kDefaultJobsPage = 100;  // jobs per page when `limit` is not given
inline constexpr int kMaxJobsPage = 1000;
inline constexpr int kDefaultJobSteps = 50;  // latest steps of a job when `steps` is not given
inline constexpr int kMaxJobSteps = 5000;
struct JobsPage {
  bool all = false;
  int64_t after = 0;
  int limit = kDefaultJobsPage;
  int steps = kDefaultJobSteps;
};

class JobService {
 public:
  virtual ~JobService() = default;
  // Validates `spec_yaml` (workload/job_spec.h; `file` names it in errors,
  // `base_dir` is its folder on this host) and stores the job; durable when
  // it returns. InvalidArgument with field-level errors otherwise, and
  // nothing stored.
  virtual Result<int64_t> Submit(const Caller& caller, const std::string& spec_yaml, const std::string& file,
                                 const std::string& base_dir) = 0;
  // Jobs the caller may see (an admin: everyone's), by id; terminal ones
  // only when `page.all`; at most `page.limit` of them with ids above
  // `page.after` (0: from the first).
  virtual Result<std::vector<JobInfo>> Jobs(const Caller& caller, const JobsPage& page) = 0;
  // One job with its history, corrections and its latest `steps` measured
  // steps (profiling steps among them), oldest first.
  virtual Result<JobDetail> Job(const Caller& caller, int64_t id, int steps) = 0;
  // Cancels a job that is not yet terminal (FailedPrecondition if it is).
  virtual Status Cancel(const Caller& caller, int64_t id) = 0;
  virtual Result<std::vector<NodeInfo>> Nodes(const Caller& caller) = 0;
  virtual ServiceMetrics Metrics() = 0;
  // GPUs allocated per type over time; every authenticated caller may see
  // it (like Nodes).
  virtual Result<ClusterHistoryInfo> ClusterHistory(const Caller& caller) = 0;
  // Cheap, no store access: what /healthz reports beside "the API answers".
  virtual ServiceHealth Health() { return {}; }
};

}  // namespace tessel
