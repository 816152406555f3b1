// Goodput-driven cluster auto-scaling (Pollux, Qiao et al., OSDI 2021, §5),
// the rule of the Pollux artifact's simulator (petuum/adaptdl branch
// osdi21-artifact, simulator/simulator.py Cluster.step and
// Cluster.autoscale) with AdaptDL's utility band (sched/adaptdl_sched/
// policy/pollux.py, _min_util 0.35 and _max_util 0.65):
//
// - At each round the cluster's utility -- the sum of the active jobs'
//   speedups at their allocations over the powered GPUs
//   (Policy::TotalSpeedup) -- enters a window of the last `window` rounds.
//   A speedup counts goodput (Pollux) or, with `basis` kThroughput,
//   throughput alone at a fixed per-GPU batch (a throughput-based
//   auto-scaler in the manner of Or et al., MLSys 2020, for comparison:
//   the same rule, blind to statistical efficiency).
// - Once the window is full, when its mean is below `low` with more than
//   `min_nodes` nodes, or above `high` with fewer than `max_nodes`, the node
//   count moves to the one whose utility -- the policy's allocation of that
//   many nodes -- is nearest the band's middle, found by bisection over
//   [min_nodes, max_nodes] as the artifact does; the window starts again.
// - A round without active jobs counts as utility 0, so an idle cluster
//   shrinks to `min_nodes` (the artifact's rule only runs while jobs are
//   active).
//
// The backend carries the count out (Backend::PowerNodes): it powers nodes
// up (after a boot delay) and down, and powers down only nodes holding no
// job. Deterministic.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "hardware/cluster.h"
#include "policy/policy.h"

namespace tessel {

struct AutoscaleConfig {
  int min_nodes = 0;
  int max_nodes = 0;  // 0: auto-scaling off
  double low = 0.35;
  double high = 0.65;
  int window = 15;  // rounds (the artifact keeps 15 intervals of 60 s)
  double boot_delay_s = 0;
  SpeedupBasis basis = SpeedupBasis::kGoodput;  // --autoscale-by
  bool enabled() const { return max_nodes > 0; }
};

// "MIN:MAX" or "MIN:MAX:LOW,HIGH" for a cluster of `cluster_nodes` nodes:
// 1 <= MIN <= MAX <= cluster_nodes, 0 <= LOW < HIGH; `window` rounds, 1 to
// 10,000; `by` "goodput" or "throughput" (--autoscale-by). InvalidArgument
// naming the flag and what is accepted.
Result<AutoscaleConfig> ParseAutoscale(std::string_view text, int cluster_nodes, int window = 15,
                                       std::string_view by = "goodput");
// InvalidArgument unless `by` is "goodput" or "throughput" (--autoscale-by).
Status CheckSpeedupBasis(std::string_view by);

// InvalidArgument unless `policy` can be auto-scaled: it decides at rounds
// and prices a cluster size (PolicyTraits::prices_cluster_size).
Status CheckAutoscalePolicy(const Policy& policy);

class Autoscaler {
 public:
  // `cluster` must outlive the autoscaler.
  Autoscaler(AutoscaleConfig config, const Cluster& cluster);

  const AutoscaleConfig& config() const { return config_; }
  // The node count the cluster should have (starts at min_nodes).
  int target() const { return target_; }
  // One round: `powered` nodes are on, `snap` the cluster now. Updates and
  // returns target(). FailedPrecondition when the policy cannot price a
  // cluster size (Policy::TotalSpeedup is nullopt).
  Result<int> Round(const Snapshot& snap, Policy& policy, int powered);
  // The utility the policy gives a cluster of `nodes` nodes (the cluster's
  // first nodes by id), as the bisection sees it.
  Result<double> UtilityAt(const Snapshot& snap, Policy& policy, int nodes) const;

 private:
  AutoscaleConfig config_;
  const Cluster& cluster_;
  int target_;
  std::deque<double> window_;
};

}  // namespace tessel
