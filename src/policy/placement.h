// Placement on a scratch copy of the free GPUs, for policies to plan a
// decision with: take GPUs for one job after another, release what a
// decision frees, without touching the snapshot.
//
// Where a job's GPUs go follows the snapshot's PlacementRule
// (policy/placement_rule.h); `max_nodes` (0 = unbounded) bounds the spread
// under every rule. Ties break on node id, so placement is deterministic.
//  - consolidate (the default; Tiresias/Gavel place the same way): a job
//    that fits on one node goes to the node whose free GPUs fit it most
//    tightly (best fit, lowest node id on ties); a larger job takes the
//    fewest nodes, fullest-free first, inside one rack when a rack can hold
//    it (the rack needing fewest nodes, then the tightest).
//  - first-fit (the classic baseline of Wang et al., "bp" in their
//    simulator HKBU-HPML/dl-scheduling): free GPUs from nodes in ascending
//    id, as many from each as it has, until the job has its count; no
//    consolidation, no rack preference. When that spans more than
//    `max_nodes`, the job is placed as consolidate would (or not at all).
//  - lwf-kappa (LWF-κ of Wang, Shi, Wang, Chu, "Communication Contention
//    Aware Scheduling of Multiple Deep Learning Training Jobs", arXiv
//    2002.10105): least-loaded GPUs first, each job on few nodes. The paper
//    shares GPUs and a GPU's load is the work queued on it; here GPUs are
//    exclusive, so a node's load is its busy fraction (1 - free / GPUs,
//    i.e. GPUs held / GPUs on an up node) plus the number of allocations
//    spanning >= 2 nodes that use it (their traffic crosses its NIC),
//    counted from the snapshot's jobs and kept current by Place, Take and
//    Release. Nodes with free GPUs of the type are ordered by (load
//    ascending, free descending, id) and GPUs taken greedily in that
//    order; if that uses at most min(κ, max_nodes) nodes it is the
//    placement. Otherwise the job takes the fewest nodes that can hold it
//    (m0), chosen least-loaded first while the count stays reachable (a
//    node is accepted in load order when it, the nodes chosen before and
//    the largest free counts among the nodes not yet considered can still
//    hold the job); it fails only when m0 > max_nodes. So a job never
//    spreads over more than κ nodes when κ nodes can hold it. No rack
//    preference. (The reference simulator applies κ to the job's GPU count
//    -- jobs of at most κ GPUs go GPU-level least-loaded, larger ones to
//    whole least-loaded nodes; bounding the spread instead keeps the small
//    jobs' behaviour, since a job of at most κ GPUs spans at most κ nodes,
//    and lets larger ones spread when κ nodes suffice.)
// Whether a placement is possible (CanPlace) does not depend on the rule.
#pragma once

#include <algorithm>
#include <cstdint>
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
  const PlacementRule& rule() const { return rule_; }
  // lwf-kappa's load of `node` (busy fraction + multi-node allocations on
  // it; the latter counted only under lwf-kappa).
  double Load(int node) const;
  // From now on a job spread over nodes never shares a node with another
  // spread job (Pollux's interference avoidance: "at most one distributed
  // job per node", its artifact's pollux.py Problem._repair): consolidated
  // placement fills a spread only from nodes no other spread job uses, and
  // any other rule's spread over such a node is refused. A job on one node
  // may still share. The snapshot's spread jobs count until released.
  void AvoidSpreadSharing(const Snapshot& snapshot);
  // Under AvoidSpreadSharing: whether `alloc` spans nodes and one of them
  // holds another spread job.
  bool SharesSpreadNode(const Allocation& alloc) const;

 private:
  // Each rule's choice for a job on the current free GPUs (not taken yet);
  // nullopt when it cannot be placed within max_nodes.
  std::optional<Allocation> Consolidated(int type, int gpus, int max_nodes) const;
  std::optional<Allocation> FirstFit(int type, int gpus, int max_nodes) const;
  std::optional<Allocation> LeastLoaded(int type, int gpus, int max_nodes) const;
  // GPUs of `type` from `nodes` in that order, as many from each as it has
  // free, until the job has `gpus` (sorted by node); nullopt when short.
  std::optional<Allocation> FillInOrder(int type, int gpus, const std::vector<int>& nodes) const;
  static void SortByNode(Allocation& alloc);
  // Adds `delta` to the multi-node count of alloc's nodes if it spans >= 2.
  void CountMultiNode(const Allocation& alloc, int delta);

  // Sets a node's free GPUs, keeping its bucket current once built.
  void SetFree(int node, int gpus);
  // Builds the buckets from free_ (on the first consolidated placement: a
  // FreeMap that never places that way, or is copied as scratch, pays nothing).
  void BuildBuckets() const;
  // The bucket of `type` holding nodes with `free` free GPUs (clamped to
  // [0, the type's largest node]), as words of bits over the type's node order.
  uint64_t* Bucket(int type, int free) const {
    return &buckets_[static_cast<size_t>(bucket_base_[type]) +
                     static_cast<size_t>(std::clamp(free, 0, cluster_->types()[type].max_gpus_per_node)) *
                         static_cast<size_t>(words_[type])];
  }

  const Cluster* cluster_;
  PlacementRule rule_;
  std::vector<int> free_;
  std::vector<int> free_by_type_;
  // Each type's nodes by free GPUs, so that consolidated placement finds
  // the best-fitting node, and the nodes in order of free GPUs, without
  // scanning the type's nodes: bit i of bucket (t, f) is set when the i-th
  // node of t (ClusterNode::index_in_type) has f free GPUs; f runs to the
  // type's largest node.
  // Empty until BuildBuckets.
  mutable std::vector<int> words_;        // type -> 64-bit words per bucket
  mutable std::vector<int> bucket_base_;  // type -> index of its bucket 0 in buckets_
  mutable std::vector<uint64_t> buckets_;
  // lwf-kappa and AvoidSpreadSharing only (empty otherwise): per node, the
  // allocations spanning >= 2 nodes that use it.
  std::vector<int> multi_node_jobs_;
  bool avoid_spread_sharing_ = false;
};

// The job's GPU types in the order a heterogeneity-unaware policy tries
// them: the requested type alone when the job names one present in the
// cluster; otherwise every type, fastest first by `belief` at the requested
// GPU count (ties by type index). Types where the job cannot fit are left out.
std::vector<int> CandidateTypes(const JobView& job, const Snapshot& snapshot);
// The same for `gpus` GPUs instead of the requested count (elastic sizes).
std::vector<int> CandidateTypes(const JobView& job, const Snapshot& snapshot, int gpus);
// The belief's questions CandidateTypes asks for `gpus` GPUs: the job's rate
// on the fewest nodes of each type it may run on that has that many (what a
// policy asking them declares in Policy::LikelyQuestions).
std::vector<RateQuery> CandidateTypeQuestions(const JobSpec& job, const Cluster& cluster, int gpus);

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
