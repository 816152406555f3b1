// The simulator backend: a simulated cluster that the scheduling loop
// (sched/loop.h) drives. It owns the jobs' run-time state and a queue of
// timed events (arrival, completion, reconfiguration finished, epoch,
// profiling finished, node failure and repair) in integer microseconds; the
// loop owns rounds, wake-ups and decisions.
//
// A running job progresses at its *truth* rate for its allocation; the
// policy decides with its *belief*. A restart costs checkpoint save + load,
// the restart overhead and (for adaptive policies) the plan search, with
// the GPUs held and no progress. Jobs spread over nodes share the network's
// links (network/network_model.h): after allocations change, the groups of
// such jobs that share links are re-rated together.
//
// Deterministic: the same inputs and seed give the same events byte for
// byte. Not thread-safe.
#pragma once

#include <memory>
#include <ostream>
#include <string>

#include "goodput/app_profile.h"
#include "hardware/cluster.h"
#include "policy/policy.h"
#include "sched/backend.h"
#include "sim/config.h"
#include "sim/metrics.h"
#include "workload/job.h"

namespace tessel {

struct SimResult {
  Summary summary;
  std::vector<JobRecord> jobs;  // in workload order
  std::vector<TimelinePoint> timeline;
};

class SimBackend : public Backend {
 public:
  // All references must outlive the backend; `truth` may be `belief`.
  // `apps` (may be null): jobs naming one of its applications are played
  // from its profile (sim/app_player.h). `log` (may be null): a line per
  // event and decision.
  SimBackend(const Cluster& cluster, const Workload& workload, const Policy& policy, ThroughputModel& belief,
             ThroughputModel& truth, const SimConfig& config, const goodput::AppCatalog* apps, std::ostream* log);
  ~SimBackend() override;

  // Prepares the jobs and schedules the first failures. InvalidArgument
  // when the reference GPU is not in the cluster.
  Status Init();

  SimTime NextEvent() const override;
  Result<BackendEvents> Advance(SimTime now) override;
  void Observe(SimTime now, Snapshot* snapshot) override;
  Status Apply(const Decision& decision, SimTime now) override;
  void Settle(SimTime now) override;
  bool HasActiveJobs() const override;
  int PoweredNodes() const override;
  Status PowerNodes(int target, SimTime now) override;
  bool Finished() const override;
  bool Quiescent() const override;
  std::string Outstanding() const override;
  int64_t events() const override;

  int done_jobs() const;  // finished + rejected
  // When a run that stopped at `now` ends: the horizon when jobs remain
  // and one is set, else `now`.
  SimTime EndTime(SimTime now) const;
  int total_jobs() const;
  // Ends the run at `now` (at the horizon when jobs remain and one is set)
  // and returns the records; `decisions` and `timer_events` come from the
  // loop. Call once. Checks the end-of-run invariant: a job whose work is
  // done is completed, and every unfinished job gets its reason (the
  // horizon, or a policy that left it waiting while nothing ran); Internal
  // when a job did all its work but was left unfinished.
  Result<SimResult> Collect(SimTime now, int64_t decisions, int64_t timer_events);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessel
