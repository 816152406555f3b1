// What the Slurm backend knows about the cluster's nodes and jobs: plain
// values, parsed from Slurm's output by slurm_json.h and returned by
// SlurmClient. Times are Unix seconds (Slurm's clock); 0 means "not set".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessel {

using SlurmJobId = int64_t;

// A node's base state, as sinfo reports it. Flags (DRAIN, NOT_RESPONDING,
// COMPLETING, ...) come separately: "draining" is kMixed/kAllocated + DRAIN,
// "drained" kIdle + DRAIN.
enum class SlurmNodeState {
  kIdle,
  kMixed,
  kAllocated,
  kDown,
  kError,
  kFuture,
  kUnknown,
};

// "idle", "mixed", ...; the inverse accepts any case and maps unknown words
// to kUnknown.
const char* SlurmNodeStateName(SlurmNodeState state);
SlurmNodeState ParseSlurmNodeState(std::string_view word);

// GPUs of one type on a node. type is "" for GPUs declared without a type.
struct SlurmGpus {
  std::string type;
  int total = 0;
  int used = 0;

  bool operator==(const SlurmGpus&) const = default;
};

struct SlurmNode {
  std::string name;
  SlurmNodeState state = SlurmNodeState::kUnknown;
  // Upper-case flags as Slurm names them: DRAIN, NOT_RESPONDING, COMPLETING,
  // FAIL, MAINTENANCE, RESERVED, POWER_DOWN, ...
  std::vector<std::string> flags;
  int cpus = 0;
  int alloc_cpus = 0;
  std::vector<SlurmGpus> gpus;  // sorted by type
  std::string reason;           // why drained/down; "" when none

  bool HasFlag(std::string_view flag) const;
  bool Drain() const { return HasFlag("DRAIN"); }
  bool NotResponding() const { return HasFlag("NOT_RESPONDING"); }
  // Whether Slurm may start new work here: up (idle/mixed/allocated) and not
  // drained, failing, in maintenance or unreachable.
  bool Usable() const;
  // Whether the work on it must move: down, failed or future, or drained,
  // failing, in maintenance, powered down, rebooting or invalid. Not lost:
  // a node up but not responding (its slurmd missed a ping: its jobs may
  // well run on; Slurm declares it down after SlurmdTimeout), nor one whose
  // state Slurm does not know (yet: just after slurmctld restarted). Such a
  // node is not Usable either: no new work goes there meanwhile.
  bool Lost() const;
  // "ALLOCATED+DRAIN", the way scontrol prints state and flags.
  std::string StateString() const;
  int TotalGpus() const;
  int FreeGpus() const;
};

// Job states (squeue's job_state).
enum class SlurmJobState {
  kPending,
  kRunning,
  kSuspended,
  kCompleting,
  kCompleted,
  kCancelled,
  kFailed,
  kTimeout,
  kNodeFail,
  kPreempted,
  kBootFail,
  kDeadline,
  kOutOfMemory,
  kUnknown,
};

// "PENDING", "RUNNING", ...; the inverse maps unknown words to kUnknown.
const char* SlurmJobStateName(SlurmJobState state);
SlurmJobState ParseSlurmJobState(std::string_view word);
// Completed, cancelled, failed, timed out, ...: the job will not run again
// unless it is requeued.
bool IsFinished(SlurmJobState state);

struct SlurmJob {
  SlurmJobId id = 0;
  std::string name;
  SlurmJobState state = SlurmJobState::kUnknown;
  std::string state_text;  // as Slurm wrote it
  std::string reason;      // state_reason: "None", "Resources", "NonZeroExitCode", ...
  // Expanded; empty while pending. For a heterogeneous job, the nodes of
  // its components in component order (= rank order of a Submit request).
  std::vector<std::string> nodes;
  // squeue lists a heterogeneous job once per component (ids J, J+1, ...);
  // they are merged into one SlurmJob with the leader's id J, state, reason,
  // times and exit status. 1 for an ordinary job.
  int components = 1;
  // How the batch script ended, once the job finished: its exit code, or the
  // signal that killed it (cancelled jobs: SIGTERM or SIGKILL).
  int exit_code = 0;
  int exit_signal = 0;
  int64_t submit_time = 0;
  int64_t start_time = 0;  // 0 while pending
  int64_t end_time = 0;    // 0 until finished
  std::string working_dir;
  std::string stdout_path;
};

}  // namespace tessel
