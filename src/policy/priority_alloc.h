// Strict-priority preemptive allocation, shared by the policies that order
// jobs by a priority and let higher ones take GPUs from lower ones (SRTF,
// Tiresias).
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "policy/job_facts_cache.h"
#include "policy/policy.h"

namespace tessel {

// One job of a priority order for AllocateByPriority.
struct PriorityEntry {
  const JobView* job = nullptr;
  int gpus = 0;                 // GPUs it runs on
  std::span<const int> types;   // GPU types it may run on, preferred first
};

// Strict-priority preemptive allocation. Walks `order` (highest priority
// first):
//  - a job holding GPUs that no higher-priority job took keeps them;
//  - a waiting job goes, placed by FreeMap's rule, to free GPUs of its first
//    type with room; failing that, to GPUs of running jobs below it in
//    `order` on one of its types, taken from the lowest-priority one up
//    until it fits; displaced jobs whose GPUs it did not use keep them;
//  - a displaced job reached later gets its old GPUs back when they are
//    still free, else any that fit (a restart), else it is suspended;
//  - a job that cannot be placed is skipped (it never blocks later jobs).
// Appends the changes to decision.assign, by ascending job index. Jobs not in
// `order` keep their GPUs and are never displaced.
void AllocateByPriority(const Snapshot& snapshot, std::span<const PriorityEntry> order,
                        Decision& decision);

// The GPU types `job` may take in a priority order, given its CandidateTypes
// `candidates` (at its requested GPU count). When there are none, it can
// never run at its requested size: a job holding GPUs keeps its own type (a
// span over job.alloc.type, valid as long as the snapshot); a waiting one is
// rejected into `decision` and nullopt comes back.
std::optional<std::span<const int>> PriorityTypesOrReject(const JobView& job, std::span<const int> candidates,
                                                          const Snapshot& snapshot, Decision& decision);

}  // namespace tessel
