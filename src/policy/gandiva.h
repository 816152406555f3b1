// Gandiva (Xiao et al., "Gandiva: Introspective Cluster Scheduling for Deep
// Learning", OSDI'18): a scheduler that uses the predictability of training
// (iterations repeat) to time-slice, grow/shrink and migrate jobs instead of
// letting them queue. Each decision, in this order:
//  1. start: waiting jobs, longest waiting first, start on their requested
//     GPUs (type, or the fastest type with room) where they fit, placed by
//     the snapshot's placement rule (consolidated by default);
//  2. shrink: if jobs still wait for a GPU type, jobs grown beyond their
//     request on that type go back to their requested size (a subset of the
//     GPUs they hold, the nodes with most of their GPUs first), and step 1
//     is tried again;
//  3. time-slice (suspend-resume): a waiting job that does not fit swaps in
//     for running jobs that have had at least one round (Snapshot::
//     round_length; 300 s when unset) on one of its types, longest-running
//     first, preferring a job of the same size, then one of up to twice its
//     size, then several smaller ones; displaced jobs whose GPUs it did not
//     use keep them. Swapped-out jobs wait with a fresh wait time, so jobs
//     of similar size take turns round by round;
//  4. migrate: a job spread over more nodes than its size needs moves to
//     fewer nodes when there is room and the belief says it is not slower
//     (Gandiva's defragmentation/locality migration);
//  5. grow: when nobody waits, elastic jobs (max_gpus > current) double, up
//     to max_gpus, onto idle GPUs of their type when the belief expects at
//     least `grow_speedup` x their samples/s (default 1.5), one doubling per
//     job per pass, in job order, until nothing changes (jobs shrunk in this
//     decision excepted).
// Options: grow_speedup=X (default 1.5).
//
// Deviations:
//  - no packing/co-location: the simulator runs one job per GPU, so Gandiva's
//    GPU sharing and its profile of packed pairs are left out; suspend-resume
//    is a checkpoint restart (costed by the backend), not a GPU-memory swap,
//    and the quantum is a round rather than Gandiva's ~1 minute;
//  - introspection (measured speedups) is replaced by the belief
//    (ThroughputModel), asked about the allocation in question;
//  - Gandiva's affinity-based node sets are not modelled; placement is
//    FreeMap's rule (consolidated by default), so fragmentation never
//    blocks a start and migration only improves locality (it asks the rule
//    for fewer nodes than the job spans);
//  - waiting jobs that do not fit do not block others; time-slicing of a job
//    larger than twice every running job uses several smaller ones;
//  - jobs start at their requested size (never below it); a job that cannot
//    run at its requested size on any type is rejected.
#pragma once

#include "policy/policy.h"

namespace tessel {

void RegisterGandivaPolicy(PolicyRegistry& registry);

}  // namespace tessel
