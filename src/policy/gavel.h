// Gavel: heterogeneity-aware scheduling policies stated as linear programs
// over time fractions (Narayanan et al., "Heterogeneity-Aware Cluster
// Scheduling Policies for Deep Learning Workloads", OSDI 2020).
//
// The allocation X[j][k] is the fraction of wall-clock time job j should run
// on GPU type k (on its requested GPU count, the "scale factor" s_j). With
// thr[j][k] the belief's iterations/s of job j on s_j GPUs of type k (0
// where it cannot run) and cap_k the GPUs of type k on nodes that are up:
//
//   norm_j = sum_k thr[j][k] * cap_k / sum_k cap_k     (Gavel's
//            "proportional" throughput: every type shared equally, row sum 1)
//   subject to  sum_k X[j][k] <= 1            for every job j
//               sum_j s_j * X[j][k] <= cap_k  for every type k
//               X[j][k] >= 0;  X[j][k] = 0 where thr[j][k] = 0
//
//   gavel            (§4.1 "LAS"/max_min_fairness with performance):
//                    maximize min_j  s_j * sum_k thr[j][k] * X[j][k] / norm_j
//   gavel-throughput (§4.2 max-sum throughput):
//                    maximize sum_j sum_k thr[j][k] * X[j][k] / norm_j
//
// The round-based mechanism (§5) turns X into allocations each round
// (snapshot.round_length; 300 s when unset): the priority of job j on type k is
// X[j][k] / received[j][k], received being the fraction of the time since
// submission the job has spent on type k (attained GPU-seconds on k / s_j /
// elapsed). (job, type) pairs are taken greedily by priority, a job at most
// once, while the type has s_j GPUs left; the chosen jobs are placed by
// the snapshot's placement rule (FreeMap; consolidated by default); jobs
// not chosen are suspended.
//
// Deviations from the paper and its code (github.com/stanford-futuredata/gavel):
//  - max-min is solved lexicographically: after the max-min value t* is
//    found, a second solve keeps every job at >= t* (1 - 1e-9) and maximizes
//    sum_j s_j * sum_k thr X / norm_j (normalized work per GPU), so the
//    allocation wastes no capacity the minimum does not need. Gavel solves
//    the max-min once (cvxpy), leaving non-bottleneck jobs arbitrary.
//  - gavel-throughput normalizes each job's throughput by norm_j (Gavel's
//    ThroughputSumWithPerf sums raw throughputs, which mixes units across
//    models); it has no scale factor in the objective, as in Gavel.
//  - One global queue of (job, type) entries ordered by priority, then
//    deficit (X * elapsed - received time), then X, then job index and type
//    index (Gavel's enable_global_queue option; its default walks the types
//    in a fixed order). Pairs with X = 0 still run when GPUs would idle,
//    as in Gavel (work-conserving); a job never served has priority
//    1e9 * X, as Gavel's.
//  - Received time counts from submission, not from the last time the LP
//    was re-solved (Gavel resets its counters on every reallocation); it
//    comes from JobView::attained_gpu_s_by_type, so the decision is a
//    function of the snapshot.
//  - Leases: a job holding GPUs keeps them until the first multiple of the
//    round length after its allocation began; before that, events (arrival,
//    completion) only hand out idle GPUs and never preempt. A job chosen
//    again on the type it runs on keeps its exact GPUs (no restart).
//  - The requested GPU type (JobSpec::requested_gpu_type) is ignored: Gavel
//    is heterogeneity-aware and uses every type where the job fits. Elastic
//    jobs run on requested_gpus. Priority weights are all 1 (JobSpec's
//    priority is not used). No space sharing (Gavel's packing variants).
//  - A job that fits on no GPU type of the cluster (by the belief, at its
//    requested count) is rejected.
//  - Identical jobs (same scale and throughputs) share one LP row weighted
//    by their number, so they get identical X (the LP is symmetric in them;
//    this is exact and keeps the LP small for traces drawn from a model
//    catalog). Gavel's solver returns some optimum, not necessarily equal
//    rows for equal jobs.
//  - The LP is solved at rounds only, as Gavel allocates at round
//    boundaries: between rounds (arrivals, completions) the last solution
//    stands, and a job it does not know has X = 0, so it gets only GPUs
//    that would otherwise idle until the next round. At a round it is
//    re-solved only when the set of active jobs or the capacity of a type
//    changed, and not at all when nothing can change (every holder leased,
//    no waiting job fits in the idle GPUs).
//  - The program is kept between solves and re-solved from its last
//    optimal basis (GavelLp): among several optimal time-fraction
//    matrices it may return another than a fresh solve would (both reach
//    the same objective; GavelLpKeptTest checks it over changing job sets).
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/status.h"
#include "policy/policy.h"

namespace tessel {

enum class GavelObjective {
  kMaxMinFairness,    // "gavel"
  kMaxSumThroughput,  // "gavel-throughput"
};

// One job's row of Gavel's LP.
struct GavelLpJob {
  int scale = 1;                   // GPUs it runs on (s_j), >= 1
  std::vector<double> throughput;  // per GPU type; <= 0: cannot run there
};

struct GavelLpSolution {
  std::vector<std::vector<double>> time_fraction;  // X[job][type], in [0, 1]
  // Per job: the objective's term, s_j * thr.X / norm_j (max-min) or
  // thr.X / norm_j (max-sum); 0 for a job that can run nowhere.
  std::vector<double> normalized_throughput;
  double objective = 0;  // min (max-min, over jobs that can run) or sum
  int iterations = 0;    // simplex iterations, both phases
};

// Solves Gavel's LP for `jobs` on `capacity` GPUs per type (every job's
// throughput has capacity.size() entries). A job whose every throughput is
// <= 0, or whose scale exceeds every capacity where it runs, gets a zero
// row and does not bound the max-min. Errors: Internal when GLPK fails (the
// LP itself always has the feasible point X = 0 and is bounded).
Result<GavelLpSolution> SolveGavelLp(GavelObjective objective, const std::vector<GavelLpJob>& jobs,
                                     const std::vector<int>& capacity);

// The same LP kept between solves (a policy keeps one): one set of
// variables and rows per class of identical jobs ever seen, weighted by the
// class's current number of jobs, re-solved from the last optimal basis.
// Among several optimal solutions it may return another than a fresh
// solve would (both optimal). A change of capacity, or many classes left
// without jobs, starts a fresh program.
class GavelLp {
 public:
  explicit GavelLp(GavelObjective objective);
  ~GavelLp();
  GavelLp(const GavelLp&) = delete;
  GavelLp& operator=(const GavelLp&) = delete;
  Result<GavelLpSolution> Solve(const std::vector<GavelLpJob>& jobs, const std::vector<int>& capacity);

 private:
  struct State;
  GavelObjective objective_;
  std::unique_ptr<State> state_;
};

// The LP's input for the active jobs of `snapshot`, in snapshot order:
// every job that fits on some GPU type of the cluster (by the belief, at
// its requested count, consolidated on the fewest nodes) gets a row; the
// others are listed in `reject` with a reason. Throughput is iterations/s;
// a type whose GPUs on nodes that are up cannot hold the job gets 0.
struct GavelProblem {
  std::vector<int> jobs;           // job index of each row
  std::vector<GavelLpJob> rows;
  std::vector<int> capacity;       // GPUs per type on nodes that are up
  std::vector<std::pair<int, std::string>> reject;
};
// What the belief said about each job (per type: iterations/s at its
// requested count, 0 where it does not fit), kept across decisions by a
// policy: the belief's answers never change, so a job's row is asked once.
struct GavelRowCache {
  struct Entry {
    const JobSpec* spec = nullptr;
    int batch = 0;
    int scale = 1;
    std::vector<double> throughput;  // per type, ignoring capacity
    std::string why;                 // the first type's refusal ("" when none)
  };
  std::unordered_map<int, Entry> jobs;  // by job index
};
GavelProblem BuildGavelProblem(const Snapshot& snapshot, GavelRowCache* cache = nullptr);
// The same into `out`, reusing its memory (a policy keeps one).
void BuildGavelProblem(const Snapshot& snapshot, GavelRowCache* cache, GavelProblem& out);

// Registers "gavel" (max-min fairness) and "gavel-throughput" (max-sum).
void RegisterGavelPolicies(PolicyRegistry& registry);

}  // namespace tessel
