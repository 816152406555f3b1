// What a policy sees: a read-only snapshot of the cluster and of the active
// jobs (pending and running), and what it returns: a Decision. The same
// types serve the simulator and the Slurm daemon; a policy cannot tell them
// apart (SYSTEM.md, "the shape of the system").
#pragma once

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/sim_time.h"
#include "core/status.h"
#include "goodput/goodput.h"
#include "hardware/allocation.h"
#include "hardware/cluster.h"
#include "policy/placement_rule.h"
#include "policy/throughput.h"
#include "workload/job.h"

namespace tessel {

enum class JobPhase {
  kPending,      // waiting for GPUs (never started, or suspended)
  kStarting,     // holds GPUs, loading/reconfiguring: no progress yet
  kRunning,      // holds GPUs and makes progress
};
const char* JobPhaseName(JobPhase p);

// What a job's agent tells the scheduler (Pollux §4.1: the job-level half
// of co-adaptive scheduling). Only jobs played from an application profile
// (JobSpec::app) have an agent; the scheduler never sees the profile, only
// what the job has measured about itself while it ran.
struct AgentReport {
  goodput::GradStats grad;  // latest gradient statistics
  goodput::BatchLimits limits;
  goodput::ScalingRule rule = goodput::ScalingRule::kAdaScale;
  bool adaptive = false;  // the agent may change the batch (under this policy)
  int fixed_batch = 1;    // the batch when !adaptive
  int max_gpus = 0;       // the application's own cap (0 = none)
  // Per Cluster type: the step-time model fitted to the steps the job has
  // run (or been profiled) on that type, nullopt before any; and the most
  // replicas it has run with there (0 = none; 1 = single-GPU profile only).
  std::vector<std::optional<goodput::ThroughputParams>> params;
  std::vector<int> max_replicas;
  int observations = 0;  // configurations measured so far
};

// A job's run-time state. Owned by the backend; policies read it only.
struct JobView {
  int index = 0;                 // position in the workload (stable id)
  const JobSpec* spec = nullptr;
  JobPhase phase = JobPhase::kPending;
  Allocation alloc;              // empty while pending
  double total_iterations = 0;
  double done_iterations = 0;    // as of the snapshot time
  SimTime first_start = kNever;  // kNever: not started yet
  SimTime alloc_since = 0;       // when the current allocation (or wait) began
  double attained_gpu_s = 0;     // GPU-seconds held so far (Tiresias' service)
  std::vector<double> attained_gpu_s_by_type;  // per Cluster type
  int restarts = 0;              // allocation changes after the first start
  int preemptions = 0;           // times suspended back to pending
  const AgentReport* agent = nullptr;  // goodput agent; null for jobs without one

  double remaining_iterations() const { return total_iterations - done_iterations; }
  bool started() const { return first_start != kNever; }
};

struct Snapshot {
  SimTime now = 0;
  const Cluster* cluster = nullptr;
  std::span<const int> free_gpus;      // per node id; 0 on failed nodes
  std::span<const uint8_t> node_up;    // per node id
  std::span<const JobView* const> jobs;  // active jobs, in submit order
  // The policy's belief about speeds. Non-const only because it memoises;
  // asking it questions never changes an answer.
  ThroughputModel* belief = nullptr;
  SimTime round_length = 0;
  // Whether this decision is a scheduling round (policies that re-plan only
  // at rounds, like pollux and sia, ignore the others) or an event
  // (arrival, completion, failure, wake-up).
  bool at_round = true;
  // How FreeMap chooses GPUs for a job (policy/placement.h): the backend's
  // setting (the simulator's --placement; the daemon consolidates).
  PlacementRule placement;
};

// What a policy wants changed. Jobs not named keep their allocation.
// Naming a job with its current allocation is a no-op.
struct Decision {
  // job index -> its new allocation (empty = suspend / keep waiting).
  std::vector<std::pair<int, Allocation>> assign;
  // job index -> why it can never run; the job leaves the system.
  std::vector<std::pair<int, std::string>> reject;
  // Ask to be called again at this time even if nothing happens (e.g. when a
  // running job will cross a priority threshold). kNever = not needed.
  SimTime wake_at = kNever;
  // Optional, for the executor: job index -> the plan set (fastest first,
  // less memory after) for its new allocation in `assign`. Jobs not named
  // here run the backend's own best plan.
  std::vector<std::pair<int, std::vector<PlanChoice>>> plans;
  // Set by a policy that could not decide (a Python policy whose decide
  // raised or returned something that is not a decision): the scheduling
  // loop stops the run with it, naming the policy.
  Status error;
};

}  // namespace tessel
