// Preemptive shortest-remaining-time-first (SRTF), the classic size-based
// baseline (Schrage 1968; the "shortest" schedule of the Tiresias authors'
// simulator, Gu et al., NSDI'19). At every decision, pending and running
// jobs are ordered by remaining time = remaining iterations x the belief's
// iteration time on the requested GPU count (of the requested type, or of the
// fastest type when the job names none), ties by job index; each gets its
// requested GPUs in that order, and running jobs that lose their place are
// suspended.
//
// Deviations: remaining time is the belief's estimate (the classic policy
// assumes it is known exactly); a job keeps the GPUs it holds while it stays
// among the winners, and a job displaced by a higher-priority one gets its
// old GPUs back when they end up unused (so nobody restarts in place); a job
// that cannot be placed does not block lower-priority jobs (work-conserving).
//
// This header also holds the preemptive allocator SRTF and Tiresias share.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "policy/policy.h"

namespace tessel {

void RegisterSrtfPolicy(PolicyRegistry& registry);

// One job of a priority order for AllocateByPriority.
struct PriorityEntry {
  const JobView* job = nullptr;
  int gpus = 0;            // GPUs it runs on
  std::vector<int> types;  // GPU types it may run on, preferred first
};

// Strict-priority preemptive allocation. Walks `order` (highest priority
// first):
//  - a job holding GPUs that no higher-priority job took keeps them;
//  - a waiting job goes, consolidated (FreeMap), to free GPUs of its first
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

// Helpers the baseline policies (srtf, tiresias, gandiva, elasticflow) share.
//
// The GPU types `job` can run on with its requested GPU count, preferred
// first: CandidateTypes less the types with fewer GPUs than that in all.
// Empty: the job can never run at its requested size.
std::vector<int> RunnableTypes(const JobView& job, const Snapshot& snapshot);
// Why `job` can never run on `gpus` GPUs, for Decision::reject.
std::string NeverRunsReason(const JobView& job, const Snapshot& snapshot, int gpus);
// Nodes a consolidated allocation of `gpus` GPUs of `type` spans at least.
int MinNodes(const Cluster& cluster, int type, int gpus);

}  // namespace tessel
