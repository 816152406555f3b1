// Tiresias (Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep
// Learning", NSDI'19), its Discretized Two-Dimensional Least-Attained-Service
// scheduler (2D-LAS): a job's service is GPU count x time it has held GPUs
// (JobView::attained_gpu_s); K priority queues split by service thresholds;
// a job starts in the top queue and is demoted when its service crosses the
// next threshold; queues are served top first, FIFO by submit inside a queue;
// a higher queue preempts a lower one. Jobs run on their requested GPUs,
// placed by the snapshot's placement rule (consolidated by default).
//
// Options and defaults:
//  - queues=K (default 2);
//  - threshold=T[,T2,...] the service at which a job leaves queue k, in
//    GPU-seconds (durations like "1h" accepted); default 3250, the first
//    limit of the authors' simulator (SymbioticLab/Tiresias, simulator/
//    jobs.py: queue_limit = [3250, 7200, 18000]). One value with K > 2 queues
//    means T, 2T, 4T, ...; a list must give K - 1 values;
//  - starvation=S, the PromoteKnob's STARVELIMIT (default 0 = off, as in the
//    authors' "dlas-gpu" runs): a job that has run before and whose waiting
//    since then reaches S x its run time goes back to the top queue, where its
//    service counts from the start of that run (the simulator resets its
//    service to 0 on promotion and demotes it again by the same thresholds).
//
// The decision asks to be woken (Decision::wake_at) when the next running job
// will cross a threshold or the next waiting job will be promoted, so both
// happen on time rather than at the next round.
//
// Deviations:
//  - no profile-guided placement: Tiresias consolidates only models whose
//    tensors are skewed and spreads the rest; here every job is placed by
//    one rule (FreeMap; consolidated by default), and the belief prices
//    spreading instead;
//  - inside a queue, jobs that hold GPUs come before waiting ones (as in the
//    authors' simulator, which moves waiting jobs to the back of their queue),
//    so a queue never preempts itself; a waiting job that does not fit does
//    not block later ones;
//  - promotion is derived from the snapshot instead of kept as state: a
//    job's run time is attained_gpu_s / requested GPUs and its waiting since
//    it first started is (now - first_start) - run time; it is promoted when
//    waiting >= S x run time, which equals the simulator's rule with its
//    resets as long as promotions happen on time (wake_at sees to that). With
//    K > 2 a promoted job that is suspended again returns to the queue of its
//    total service, where the simulator would count service since promotion;
//  - a job that does not name a GPU type goes to the fastest type with room.
#pragma once

#include "policy/policy.h"

namespace tessel {

void RegisterTiresiasPolicy(PolicyRegistry& registry);

}  // namespace tessel
