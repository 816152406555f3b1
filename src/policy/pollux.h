// Pollux (Qiao et al., OSDI'21): co-adaptive scheduling for goodput.
//
// Every round the whole cluster is re-allocated to maximise the power mean
// (exponent p, -1 by default) of the jobs' goodput speedups, where a job's
// speedup is its goodput on an allocation over its goodput on a fair share
// (ceil(GPUs / jobs) GPUs), and a speedup on an allocation other than the
// job's current one is scaled by the re-allocation factor
//   r_j = max(age_j - restarts_j * delta, 0) / (age_j + delta)
// (delta = restart_penalty, 30 s). Each job's agent then picks its batch
// size and accumulation for goodput on what it got (goodput/goodput.h).
//
// Search. Pollux searched allocations with a genetic algorithm (NSGA-II,
// 100 generations of 100). Here the objective is separable per job with one
// resource per GPU type, so we solve it as a multiple-choice knapsack
// (policy/goodput_alloc.h): GPUs go to the step, from a job's current count
// to a larger one, with the largest utility gain per GPU (steepest steps
// follow each job's upper concave hull; a lazy priority queue; a job keeps
// the type of its first step). On concave curves of one type this greedy is
// optimal; goodput_alloc_test.cc checks it against exhaustive search. A
// whole 160-job Pollux workload, about 1,400 decisions, simulates in about
// a second (bench/goodput_bench.cc, BM_PolluxWorkload's ms_per_decision).
// Placement then packs the counts
// onto nodes (policy/placement.h), keeping unchanged allocations in place,
// and, as Pollux does to avoid interference, never puts two jobs spread
// over nodes on one node (the artifact's Problem._repair: "at most one
// distributed job per node"; FreeMap::AvoidSpreadSharing). A grant that
// cannot be spread so gets fewer GPUs. The simulator's --interference
// slows jobs that do share (SimConfig::interference).
//
// Deviations from the paper/artifact:
//  - heterogeneity-unaware, as Pollux is: a job's model from its home type
//    stands for every type (GoodputOracle with type_aware = false);
//  - jobs without an agent are timed by the belief with efficiency 1.
//
// Options: p (power-mean exponent, default -1), restart_penalty (seconds,
// default 30), max_gpus (per job, default 64), avoid_interference (default
// true; false lets spread jobs share nodes).
#pragma once

#include "policy/policy.h"

namespace tessel {

class PolicyRegistry;
void RegisterPolluxPolicy(PolicyRegistry& registry);

}  // namespace tessel
