// Jobs played from their applications' measured profiles (the `apps` truth
// source: Pollux's and Sia's workloads), and each such job's agent. Progress
// is statistical (steps at the application's initial batch size); the
// agent picks its batch for goodput when the policy adapts batches, and it
// measures and refits its own throughput model as it runs (Pollux §4.1).
// Used by the simulator backend only. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <tuple>
#include <vector>

#include "goodput/app_profile.h"
#include "goodput/goodput.h"
#include "hardware/cluster.h"
#include "policy/policy.h"
#include "workload/job.h"

namespace tessel {

// A job played from its application profile, and its agent.
struct AppJob {
  const goodput::AppProfile* profile = nullptr;
  AgentReport report;
  // Per cluster type: what the job has measured, keyed by (nodes, replicas,
  // atomic batch); the agent refits that type's model on each new entry.
  std::vector<std::map<std::tuple<int, int, int>, goodput::StepObservation>> seen;
  int epoch = 0;
  goodput::BatchChoice choice;  // of the current segment
  struct PendingObservation {
    int type, nodes, replicas, atomic;
    goodput::StepTime step;
  };
  std::optional<PendingObservation> pending;  // the step of the current segment, not yet measured
};

// A job's truth rate on an allocation at its current epoch.
struct AppRate {
  double iteration_time_s = 0;  // per unit of progress
  double samples_per_iter = 0;
};

class AppPlayer {
 public:
  AppPlayer(const Cluster& cluster, goodput::ScalingRule rule) : cluster_(cluster), rule_(rule) {}

  // The job's agent when `spec` names an application of `apps`; null else.
  std::unique_ptr<AppJob> Make(const JobSpec& spec, const PolicyTraits& traits,
                               const goodput::AppCatalog& apps) const;

  // Measures the step the job ran since its rate was set (when it starts
  // progressing on an allocation).
  void ObservePending(AppJob& a);
  // Re-picks the batch for `alloc` and returns the rate there; the step is
  // measured once the job runs (ObservePending).
  AppRate SetRate(AppJob& a, const Allocation& alloc);
  // Seconds the job would take alone on `gpus` GPUs of `type` (for
  // finish-time fairness): epoch by epoch at its trace batch.
  double Isolated(AppJob& a, int type, int gpus);
  // Sia's bootstrapping: one GPU of every type the cluster has, at the
  // smallest, initial and largest per-GPU batch.
  void ProfileAllTypes(AppJob& a);

  // Steps run on a GPU type the profile lacks (projected from another).
  int64_t projections() const { return projections_; }

 private:
  goodput::StepTime Step(const AppJob& a, int type, std::span<const int> placement, double atomic,
                         bool count = false);
  void Observe(AppJob& a, int type, int nodes, int replicas, int atomic, const goodput::StepTime& st);
  static bool Record(AppJob& a, int type, int nodes, int replicas, int atomic, const goodput::StepTime& st);
  static void Refit(AppJob& a, int type);
  goodput::BatchChoice ChooseBatch(const AppJob& a, int type, int nodes, int replicas) const;

  const Cluster& cluster_;
  goodput::ScalingRule rule_;
  int64_t projections_ = 0;
};

}  // namespace tessel
