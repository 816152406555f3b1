// A training job as a workload states it: who submitted it when, what it
// trains (model, global batch), how much work it is, and what it asked for.
// Trace importers produce these; the scheduler and simulator never change
// them (run-time state lives in policy/snapshot.h's JobView).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/sim_time.h"

namespace tessel {

struct JobSpec {
  std::string id;    // as in the trace
  std::string user;  // "" when the trace has none
  SimTime submit = 0;

  std::string model;  // catalog model name (canonical)
  int global_batch = 1;

  // The amount of work, in one of two forms (exactly one is set):
  //  - iterations at `global_batch`;
  //  - duration_s: how long the job ran in the trace on what it requested
  //    (`requested_gpus` GPUs of `requested_gpu_type`, or of the
  //    simulation's reference GPU when the trace names none). The simulator
  //    turns it into iterations with its truth source.
  std::optional<double> iterations;
  std::optional<double> duration_s;

  int requested_gpus = 1;
  std::string requested_gpu_type;  // catalog GPU name; "" = any type
  // Whether the requested type is a constraint (a user's spec said so) or,
  // as in traces, only where the job ran: heterogeneity-aware policies
  // (arena) may move an unconstrained job to other types.
  bool gpu_type_required = false;
  // The GPU types a user's spec allows (catalog names); empty = any. Arena
  // and every policy placing through CandidateTypes never use another.
  std::vector<std::string> allowed_gpu_types;
  bool AllowsGpuType(const std::string& gpu) const {
    return allowed_gpu_types.empty() ||
           std::find(allowed_gpu_types.begin(), allowed_gpu_types.end(), gpu) != allowed_gpu_types.end();
  }
  std::optional<SimTime> deadline;  // absolute
  int priority = 0;                 // higher runs first where a policy uses it

  // Elasticity: a policy may run the job on any GPU count in
  // [min_gpus, max_gpus]; both equal requested_gpus for a rigid job.
  int min_gpus = 1;
  int max_gpus = 1;
  bool adaptive_batch = false;  // the batch size may change (goodput policies)
  // A measured application profile this job is (goodput/app_profile.h:
  // Pollux's and Sia's apps), or "" for none. With the `apps` truth source
  // the job is played from that profile and its work is statistical
  // progress, not iterations.
  std::string app;

  // Where the job came from, for error messages and reports ("file:line").
  std::string origin;

  bool operator==(const JobSpec&) const = default;
};

// A whole workload, jobs in submit order (ties keep the trace's order).
struct Workload {
  std::string name;  // e.g. the trace file's name
  std::vector<JobSpec> jobs;
  // What the importer had to decide (model mapping, skipped rows), for the
  // user to read; never silently dropped.
  std::vector<std::string> notes;
  // Where the jobs' application profiles live (the directory holding
  // <app>/), when the importer found one (Pollux/Sia workloads); "" else.
  std::string apps_dir;
};

// Sorts `jobs` by submit time, stably, and shifts times so the first
// submission is at 0 when `rebase` is set.
void SortBySubmit(Workload& workload, bool rebase);

}  // namespace tessel
