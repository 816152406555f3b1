// Placement on a scratch copy of the free GPUs, for policies to plan a
// decision with: take GPUs for one job after another, release what a
// decision frees, without touching the snapshot.
//
// Consolidation rule (LWF-κ's consolidation; Tiresias/Gavel place the same
// way): a job that fits on one node goes to the node whose free GPUs fit it
// most tightly (best fit, lowest node id on ties); a larger job takes the
// fewest nodes, fullest-free first, inside one rack when a rack can hold it
// (the rack needing fewest nodes, then the tightest). `max_nodes` bounds
// the spread (κ).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "policy/snapshot.h"

namespace tessel {

class FreeMap {
 public:
  explicit FreeMap(const Snapshot& snapshot);

  int free_of_type(int type) const { return free_by_type_[type]; }
  int free_on(int node) const { return free_[node]; }
  // Whether `gpus` GPUs of `type` could be placed now (within max_nodes
  // nodes; 0 = unbounded).
  bool CanPlace(int type, int gpus, int max_nodes = 0) const;
  // Takes the GPUs and returns where; nullopt when they do not fit.
  std::optional<Allocation> Place(int type, int gpus, int max_nodes = 0);
  void Release(const Allocation& alloc);
  // Takes exactly `alloc` (which must be free).
  void Take(const Allocation& alloc);
  // Whether every GPU of `alloc` is free here.
  bool IsFree(const Allocation& alloc) const;

 private:
  const Cluster* cluster_;
  std::vector<int> free_;
  std::vector<int> free_by_type_;
  std::vector<int> max_free_by_type_;  // upper bound, refreshed lazily
};

// The job's GPU types in the order a heterogeneity-unaware policy tries
// them: the requested type alone when the job names one present in the
// cluster; otherwise every type, fastest first by `belief` at the requested
// GPU count (ties by type index). Types where the job cannot fit are left out.
std::vector<int> CandidateTypes(const JobView& job, const Snapshot& snapshot);
// The same for `gpus` GPUs instead of the requested count (elastic sizes).
std::vector<int> CandidateTypes(const JobView& job, const Snapshot& snapshot, int gpus);

// Why `job` can never run on `gpus` GPUs, for Decision::reject.
std::string NeverRunsReason(const JobView& job, const Snapshot& snapshot, int gpus);

// GPUs on up nodes per type (a node missing from node_up counts as down):
// what a policy that re-plans the whole cluster can hand out.
std::vector<int> UpGpusByType(const Snapshot& snapshot);

// Nodes a consolidated allocation of `gpus` GPUs of `type` spans at least:
// the node count rates are asked for before a job is placed.
int MinNodes(const Cluster& cluster, int type, int gpus);

// `gpus` of the GPUs of `alloc`, from the nodes holding most of them first
// (ties: lower node id): how a job shrinks in place.
Allocation Subset(const Allocation& alloc, int gpus);
// `a` and `b` (same type) as one allocation: how a job grows in place.
Allocation Merge(const Allocation& a, const Allocation& b);

}  // namespace tessel
