// ElasticFlow (Gu et al., "ElasticFlow: An Elastic Serverless Training
// Platform for Distributed Deep Learning", ASPLOS'23), in its form without
// deadlines: every job is admitted as best-effort, and each decision
// re-divides the GPUs elastically:
//  1. minimum shares: in submit order (ties: job index), each job gets its
//     minimum size while GPUs of its type remain; a job that gets nothing
//     waits (a running one is suspended);
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
//  - no deadlines, admission control or the minimum-satisfactory-share
//    search; deadline jobs are treated as best-effort;
//  - ElasticFlow assumes one GPU type. Here a job runs on its requested type;
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
