// Sia (Jayaram Subramanya et al., SOSP'23): heterogeneity-aware goodput-
// optimised scheduling with adaptive jobs.
//
// Every round, an integer program picks for each job at most one
// configuration (GPU type, nodes, GPUs) out of a small set per type: 1, 2,
// 4, ... GPUs on one node up to a node's GPUs, then 2, 3, ... whole nodes.
// A configuration's value is the job's goodput there (GoodputOracle,
// type-aware: each type's own model, bootstrapped from a single-GPU profile
// of every type taken when the job arrives, with multi-GPU scaling borrowed
// from the type the job ran widest on), normalised by the job's smallest
// goodput over its configurations, times the re-allocation factor
// max(age - restarts * delta, 0) / (age + delta) when it differs from the
// job's current one. The program (as Sia's artifact, for p < 0) minimises
//   sum_jc x_jc * value_jc^p  +  lambda_n * sum_j (1 - sum_c x_jc)
//                             +  lambda_a * sum_jc |x_jc - current_jc|
// subject to one configuration per job and each type's GPU count; solved
// with GLPK's branch-and-cut (policy/lp.h) to a 0.1% gap. Rounds with more
// than 4,000 variables (hundreds of jobs) solve the LP relaxation instead
// and round its few fractional jobs (each takes its best configuration
// that still fits), which keeps a round under a second. Configurations no
// better than a smaller one of the same type are left out (dominated). A
// round where no type is contended (each job's best option fits beside the
// others') needs no solver: those options are the program's unique
// optimum, and are taken directly, unless a job's best two are a near tie.
// Placement packs the chosen configurations (policy/goodput_alloc.h).
//
// Defaults are Sia's published parameters: p = -0.5, lambda_n = 1.1 (no-
// allocation penalty), lambda_a = 0.01 (allocation-change penalty), restart
// penalty delta = 30 s. Options: p, lambda_n, lambda_a, restart_penalty,
// max_gpus (per job, default 64).
//
// Deviations: the re-allocation factor also applies to moves across types
// (the artifact's migrate factor is 1); profiling on arrival is free here;
// jobs without an agent are timed by the belief with efficiency 1.
#pragma once

#include "policy/policy.h"

namespace tessel {

class GoodputCache;
class PolicyRegistry;
void RegisterSiaPolicy(PolicyRegistry& registry);

// One round's integer program, exposed for benchmarks and tests: the
// configurations of `snap`'s jobs, solved. Returns the chosen
// (job, type, GPUs) before placement.
struct SiaParams {
  double p = -0.5;
  double lambda_n = 1.1;
  double lambda_a = 0.01;
  double restart_penalty_s = 30;
  int max_gpus = 64;
  // When no GPU type is contended (each job's best configuration fits
  // beside the others') and no job's choice is a near tie, the optimum is
  // taken directly instead of from the solver: the same answer, as the
  // solver's optimum is then unique. false always runs the solver (tests).
  bool shortcut_uncontended = true;
};
struct SiaRoundStats {
  int variables = 0;
  int jobs = 0;
  bool hit_time_limit = false;
  int rounded_jobs = 0;  // jobs the LP relaxation left fractional (large rounds)
  bool solved = false;   // the solver ran (false: the uncontended shortcut answered)
};
// `cache` (optional): goodputs kept across rounds (policy/goodput_oracle.h).
Result<Decision> SiaDecide(const Snapshot& snap, const SiaParams& params, SiaRoundStats* stats = nullptr,
                           GoodputCache* cache = nullptr);

}  // namespace tessel
