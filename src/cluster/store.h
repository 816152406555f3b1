// The daemon's durable state (`tessel serve`): jobs and every change of
// their state, measured step times, the estimator's per-job corrections,
// per-model profiles and a little metadata, in one SQLite database.
//
// Durability: WAL journal with synchronous=FULL, so a write is on disk when
// the call that made it returns; a process killed at any moment (SIGKILL)
// leaves every returned write intact and the database consistent. A power
// loss is as safe as the disk's fsync.
//
// Thread-safety: every method may be called from any thread; one connection
// serialises them behind a mutex. Several processes may open the same file
// (SQLite's locks and the busy timeout arbitrate), but the daemon is meant to
// be its only writer.
//
// Errors: NotFound for an unknown job id; FailedPrecondition for a refused
// state change (resync, then retry) or a database this code cannot use;
// Unavailable when the database stays locked past the busy timeout or the
// disk fails (retry with backoff); InvalidArgument for bad arguments or a
// file that is not a SQLite database.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace tessel {

// A job's life: pending -> profiling -> starting -> running, with
// reconfiguring (changing allocation or plan) and back to pending (requeued)
// on the way, ending in one of the terminal states.
enum class JobState {
  kPending,
  kProfiling,
  kStarting,
  kRunning,
  kReconfiguring,
  kCompleted,
  kFailed,
  kCancelled,
};

// "pending", "profiling", ..., as stored and shown to users.
const char* JobStateName(JobState state);
// Inverse of JobStateName; InvalidArgument lists the names.
Result<JobState> ParseJobState(std::string_view name);
// Every state, in declaration order.
const std::vector<JobState>& AllJobStates();
// completed, failed, cancelled: no way out.
bool IsTerminal(JobState state);

// What a submission records; AddJob puts it in state pending.
struct NewJob {
  std::string name;
  std::string user;
  std::string spec_yaml;  // the submitted text, verbatim
  std::string spec_json;  // the normalised spec (job_spec.h DaemonJobSpecToJson)
  std::string file;       // the spec's file name as submitted
  int priority = 0;
  int64_t submitted_us = 0;
  std::string checkpoint_dir;  // "" = none
  std::string reason = "submitted";  // of the first transition
};

// Where a job runs and how, as the store keeps it (the policies' own
// Allocation, policy/snapshot.h, goes into alloc_json); gpus == 0 with
// empty fields means none.
struct StoredAllocation {
  std::string gpu_type;
  int gpus = 0;
  std::vector<std::string> nodes;
  std::string alloc_json;  // opaque to the store: the allocation in full
  std::string plan_json;   // opaque to the store: the parallelism plan
  bool operator==(const StoredAllocation&) const = default;
};

// One row of `jobs`. Times are microseconds since the Unix epoch.
struct StoredJob {
  int64_t id = 0;  // AUTOINCREMENT: never reused, even after deletions
  std::string name;
  std::string user;
  JobState state = JobState::kPending;
  std::string spec_yaml;
  std::string spec_json;
  std::string file;
  int priority = 0;
  int64_t submitted_us = 0;
  std::optional<int64_t> started_us;   // first entry into running
  std::optional<int64_t> finished_us;  // entry into a terminal state
  StoredAllocation allocation;
  std::optional<int64_t> allocated_us;  // when `allocation` was set; none when cleared
  int restarts = 0;
  int failures = 0;
  int launch_count = 0;
  std::optional<std::string> slurm_job_id;
  std::string reason;  // of the latest transition
  std::string checkpoint_dir;
  bool operator==(const StoredJob&) const = default;
};

// One state change; `from` is empty for the submission.
struct TransitionRecord {
  int64_t job_id = 0;
  int64_t time_us = 0;
  std::optional<JobState> from;
  JobState to = JobState::kPending;
  std::string reason;
  bool operator==(const TransitionRecord&) const = default;
};

// One measured optimizer step (or a profiling step when `profile`).
struct StepSample {
  int64_t time_us = 0;
  std::string gpu_type;
  int gpus = 0;
  int64_t step = 0;
  double step_time_s = 0;
  int64_t samples = 0;  // samples (global batch) the step processed
  bool profile = false;
  std::optional<double> loss;  // the mean loss the job reported for the step, if any
  bool operator==(const StepSample&) const = default;
};

// The estimator's multiplicative correction for one job on one GPU type:
// measured step time / estimated, from `samples` measurements (0: from a
// profile). `scope` narrows it within the type; the store keeps it as text
// and the daemon writes '' (the type's: the job's latest measurement there
// under any plan), 'stages=<p>' (a profile of one stage of a p-stage
// pipeline) or 'plan=<ParallelPlan::ToString()>' (that plan measured)
// (policy/corrected_throughput.h has the precedence).
struct Correction {
  std::string gpu_type;
  double factor = 1;
  int64_t samples = 0;
  std::string scope;
  bool operator==(const Correction&) const = default;
};

// A measured stage time, reused by every job of the same model (Arena's
// disaggregated profiles). Keyed by (key, gpu_type, stage_layers, micro_batch).
// A Slurm job tessel starts besides a job's launches (today: a profiling
// run), recorded under its Slurm job name before sbatch, its Slurm id added
// after, removed once its end is processed. A restart reconciles each with
// what Slurm has under that name (adopt, process its end, or start again).
struct SlurmRun {
  std::string name;  // the Slurm job name: tessel-<job id>-<kind>-... (cluster/slurm_backend_impl.h)
  int64_t job_id = 0;
  std::string kind;  // "profile"
  std::string gpu_type;
  int stages = 0;    // profile: the pipeline depth whose stage it measures
  std::optional<std::string> slurm_job_id;
  int64_t created_us = 0;
  bool operator==(const SlurmRun&) const = default;
};

struct ProfileRecord {
  std::string key;  // the model's identity, e.g. its name and shape
  std::string gpu_type;
  int stage_layers = 0;
  int micro_batch = 0;
  double step_time_s = 0;
  int64_t time_us = 0;  // when it was measured
  bool operator==(const ProfileRecord&) const = default;
};

// Additions to a job's counters (each may be 0).
struct CounterDelta {
  int restarts = 0;
  int failures = 0;
  int launches = 0;
};

struct JobFilter {
  std::optional<std::string> user;  // empty: every user
  bool include_terminal = true;
  int64_t after = 0;  // ids above this one only
  int limit = 0;      // at most this many (0: all)
};

class Store {
 public:
  // The schema version this code writes (PRAGMA user_version).
  static int SchemaVersion();

  // Opens or creates the database at `path` and brings its schema up to
  // SchemaVersion(), all pending migrations in one transaction. Errors:
  // a newer schema than this code knows is FailedPrecondition; a file that
  // is not a SQLite database is InvalidArgument; both name `path`.
  static Result<std::unique_ptr<Store>> Open(const std::string& path);
  // A second, read-only connection to a database Open() has created and
  // migrated: in WAL mode its reads see the latest committed state and never
  // wait on the writer's transactions or fsyncs (the daemon's API reads
  // through one). Writes through it fail.
  static Result<std::unique_ptr<Store>> OpenReader(const std::string& path);

  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::string& path() const { return path_; }

  // Inserts a job in state pending together with its first transition
  // (from nothing, at submitted_us, with `job.reason`). Durable when it
  // returns: an acknowledged submission survives a crash. Returns the id.
  Result<int64_t> AddJob(const NewJob& job);
  // AddJob for several jobs in one transaction (one fsync): all are stored,
  // with ids in the order given, or none (the error says why).
  Result<std::vector<int64_t>> AddJobs(std::span<const NewJob* const> jobs);

  // The one way a job's state changes: writes the new state, the reason and
  // a transitions row in one transaction; entering running sets started_us
  // the first time, entering a terminal state sets finished_us. Refused with
  // FailedPrecondition when the job is in a terminal state, already in `to`,
  // or (compare-and-set) not in `expected_from` when that is given.
  Status Transition(int64_t id, JobState to, int64_t now_us, std::string_view reason,
                    std::optional<JobState> expected_from = std::nullopt);

  // Replaces the job's allocation and sets allocated_us to `now_us`; one
  // with gpus == 0 clears it (and allocated_us). Any state; the state itself
  // is unchanged. gpus must be >= 0.
  Status SetAllocation(int64_t id, const StoredAllocation& allocation, int64_t now_us);
  // The job's Slurm job id, or none.
  Status SetSlurmJob(int64_t id, const std::optional<std::string>& slurm_job_id);

  // Slurm runs besides launches (SlurmRun): recorded before sbatch (a run
  // of the same name is replaced), given their Slurm id after it, removed
  // once their end is processed; all of them, by job then name.
  Status AddSlurmRun(const SlurmRun& run);
  Status SetSlurmRunJob(const std::string& name, const std::string& slurm_job_id);
  Status RemoveSlurmRun(const std::string& name);
  Result<std::vector<SlurmRun>> SlurmRuns();
  // Adds to restarts, failures and launch_count (deltas must be >= 0).
  Status AddCounters(int64_t id, const CounterDelta& delta);

  // Records samples in one transaction. A sample whose (job, step, profile)
  // is already stored is skipped, so re-reading a metrics file is
  // idempotent. Returns how many were new. Rejects non-finite or negative
  // step times (nothing is written then).
  Result<int> AddStepTimes(int64_t id, std::span<const StepSample> samples);

  Result<StoredJob> Job(int64_t id);
  // Matching jobs by id.
  Result<std::vector<StoredJob>> Jobs(const JobFilter& filter);
  // The query Jobs runs for `filter` (?1 user, ?2 after, ?3 limit); tests
  // check that SQLite answers it from an index (migration 4).
  static const char* JobsSql(const JobFilter& filter);
  // The job's transitions, oldest first (the submission first).
  Result<std::vector<TransitionRecord>> History(int64_t id);
  // The job's latest `limit` samples (by time, then step), oldest first.
  Result<std::vector<StepSample>> Steps(int64_t id, int limit);

  // Inserts or replaces the correction for (job, gpu_type, scope); factor
  // must be finite and > 0.
  Status SetCorrection(int64_t id, const Correction& correction);
  // By GPU type, then scope.
  Result<std::vector<Correction>> Corrections(int64_t id);

  // Inserts or replaces the profile for its key fields.
  Status PutProfile(const ProfileRecord& profile);
  // Every profile with `key`, by (gpu_type, stage_layers, micro_batch).
  Result<std::vector<ProfileRecord>> Profiles(std::string_view key);

  // Jobs per state; every state present (0 when none).
  Result<std::map<JobState, int64_t>> CountByState();
  // Sums over every job: (restarts, failures), for /metrics.
  Result<std::pair<int64_t, int64_t>> RestartAndFailureTotals();

  // Small daemon-wide values (e.g. the policy in use); nullopt when unset.
  Result<std::optional<std::string>> GetMeta(std::string_view key);
  Status SetMeta(std::string_view key, std::string_view value);

  // PRAGMA integrity_check: Ok, or Internal with SQLite's findings.
  Status CheckIntegrity();

 private:
  // A connection to `path` opened with sqlite3_open_v2 `flags` (busy timeout
  // set); `what` names the failure. The schema version (PRAGMA user_version).
  static Result<std::unique_ptr<Store>> Connect(const std::string& path, int flags, std::string_view what);
  Result<int> UserVersion();
  class Stmt;
  class Txn;

  Store(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  Status Migrate();
  // A cached prepared statement for `sql` (a string literal), reset.
  Result<Stmt> Prepare(const char* sql);
  Status Exec(const char* sql);
  Status Error(int rc, std::string_view what) const;
  Status CheckJobExists(int64_t id);
  Result<StoredJob> JobLocked(int64_t id);

  const std::string path_;
  std::mutex mu_;
  sqlite3* db_;
  std::map<const char*, sqlite3_stmt*> statements_;  // guarded by mu_
};

}  // namespace tessel
