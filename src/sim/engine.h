// The discrete-event simulator: the scheduling loop (sched/loop.h) on a
// simulated clock driving the simulator backend (sim/sim_backend.h), which
// runs a policy against a simulated cluster. Events (arrival, completion,
// reconfiguration finished, round, wake-up, node failure and repair) are
// processed in time order with integer microsecond time; after each batch of
// simultaneous events the policy decides once on a snapshot, and the
// backend applies the decision the loop checked.
//
// A running job progresses at its *truth* rate for its allocation; the
// policy decides with its *belief*. Both are ThroughputModels; with
// `--truth estimator` they are the same object.
//
// Deterministic: the same inputs and seed give the same events, records and
// output byte for byte. Not thread-safe; one run per Simulator.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <vector>

#include "core/status.h"
#include "goodput/app_profile.h"
#include "hardware/cluster.h"
#include "policy/policy.h"
#include "sim/config.h"
#include "sim/metrics.h"
#include "sim/sim_backend.h"
#include "workload/job.h"

namespace tessel {

struct SimProgress {
  SimTime now = 0;
  int finished = 0;  // finished + rejected
  int total = 0;
};

class Simulator {
 public:
  // `truth` may be the same object as `belief`. All references must outlive
  // the simulator.
  Simulator(const Cluster& cluster, const Workload& workload, Policy& policy, ThroughputModel& belief,
            ThroughputModel& truth, SimConfig config);
  ~Simulator();

  // A line per event and decision ("   300.000000 start job=j1 ..."), for
  // golden tests and debugging. Optional; costs time when set.
  void set_event_log(std::ostream* log) { event_log_ = log; }
  // One CSV row per decision (wall time: not reproducible), without a
  // header: policy,time_s,at_round,active_jobs,changes,wall_ms.
  void set_decision_log(std::ostream* log, std::string policy) {
    decision_log_ = log;
    decision_log_policy_ = std::move(policy);
  }
  // Plays jobs whose JobSpec::app is in `apps` from its measured profile
  // (the `apps` truth source): progress is statistical (steps at the
  // application's initial batch size), the job's agent picks its batch for
  // goodput when the policy adapts batches, and it measures and fits its
  // own throughput model as it runs. Other jobs use `truth`. Optional.
  void set_apps(const goodput::AppCatalog* apps) { apps_ = apps; }
  // Called every `every` events.
  void set_progress(std::function<void(const SimProgress&)> fn, int every = 4096) {
    progress_ = std::move(fn);
    progress_every_ = every;
  }

  // Runs to completion (or the horizon). Errors: a policy that breaks its
  // contract (assigning GPUs that are not free) — a bug, reported as
  // Internal with the policy's name and the offending assignment. Call once.
  Result<SimResult> Run();

 private:
  const Cluster& cluster_;
  const Workload& workload_;
  Policy& policy_;
  ThroughputModel& belief_;
  ThroughputModel& truth_;
  SimConfig config_;
  std::ostream* event_log_ = nullptr;
  std::ostream* decision_log_ = nullptr;
  std::string decision_log_policy_;
  const goodput::AppCatalog* apps_ = nullptr;
  std::function<void(const SimProgress&)> progress_;
  int progress_every_ = 4096;
};

}  // namespace tessel
