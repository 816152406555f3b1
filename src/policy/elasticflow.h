// ElasticFlow (Gu et al., "ElasticFlow: An Elastic Serverless Training
// Platform for Distributed Deep Learning", ASPLOS'23; the authors' simulator
// github.com/pkusys/ElasticFlow, scheduler.py, ef-accessctrl). Jobs with a
// deadline (JobSpec::deadline) are admitted or refused when they arrive;
// jobs without one are best-effort. Each decision re-divides the GPUs:
//  0. admission control and minimum satisfactory shares, per GPU type: the
//     admitted jobs are planned earliest deadline first over the type's
//     free GPUs in time (a step function from now). A job's minimum
//     satisfactory share is the smallest size q such that running at
//     min(q, free GPUs) in every stretch finishes its remaining iterations
//     (at the belief's speed) by its deadline; its use is taken out before
//     the next job is planned. A new job with a deadline is admitted on the
//     first of its types (fastest first) where it and every admitted job of
//     that type still meet their deadlines, else rejected at once (counted
//     as rejected, and as a missed deadline). An admitted job is never
//     dropped: one that can no longer meet its deadline runs best-effort.
//     A job that already ran when this policy first sees it (the daemon
//     restarted) counts as admitted: admission happens once, at arrival.
//  1. shares: each admitted job gets its share for now; then, in submit
//     order (ties: job index), every other job (best-effort, late, or
//     planned to start later) gets its minimum size while GPUs of its type
//     remain; a job that gets nothing waits (a running one is suspended);
//  2. leftovers: repeatedly, the job whose next size step gains most per
//     added GPU gets that step, while GPUs of its type remain and up to its
//     max_gpus. The gain is ElasticFlow's marginal return: the reduction of
//     the job's remaining time, remaining iterations x (iteration time now -
//     iteration time at the next size) by the belief, divided by the GPUs the
//     step adds. Ties: job index.
// Sizes are powers of two as in ElasticFlow, bounded by the job's elasticity:
// min_gpus, then each next power of two above, then max_gpus (a rigid job
// has the one size requested_gpus; [3, 12] gives 3, 4, 8, 12).
//
// Churn control (not in the paper, which restarts whatever its plan changes):
// a running job whose GPU count is unchanged keeps its exact GPUs; a grown
// job keeps its GPUs and adds to them when that is as consolidated as a fresh
// placement; a shrunk one keeps a subset. Hysteresis: the steps a running job
// already holds count `hysteresis` (default 0.1, option hysteresis=) more,
// so a competing job must gain that much more to take GPUs away from it,
// which stops a pair of jobs trading a step back and forth every round.
//
// Deviations:
//  - planning is in continuous time from the decision, not in 60 s slots,
//    and a job's plan holds one target size q (the smallest that works)
//    rather than the paper's as-late-as-possible staircase; restart
//    overheads are not added to the plan;
//  - admission is per new job (one refused job does not refuse the others
//    that arrive with it), and a late admitted job does not block
//    admissions (in the authors' code any failing plan declines every
//    arrival of the event);
//  - the marginal return of step 2 is the reduction of remaining time per
//    added GPU (the paper's); the authors' code sorts by the change in
//    planned GPU-time instead;
//  - admission=false treats every job as best-effort (the Arena artifact's
//    "elasticflow-l", whose deadlines are pushed out by 1e9 s);
//  - ElasticFlow assumes one GPU type. Here a deadline job runs on the type
//    it was admitted on; a best-effort job runs on its requested type;
//    a job that names none runs on the type (of those where it fits, fastest
//    first on ties) with most GPUs not yet handed out when its turn comes in
//    step 1; a running job keeps its type while that has room;
//  - placement is FreeMap's rule (consolidated by default), not
//    ElasticFlow's buddy allocation; sizes are placed largest first;
//  - the belief (ThroughputModel) replaces ElasticFlow's profiled scaling
//    curves;
//  - a job that cannot run at its minimum size on any type is rejected.
#pragma once

#include "policy/policy.h"

namespace tessel {

void RegisterElasticFlowPolicy(PolicyRegistry& registry);

}  // namespace tessel
