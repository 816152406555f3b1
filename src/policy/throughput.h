// How fast a job trains on an allocation: the one question every policy and
// the simulator ask. A ThroughputModel answers it from some source — the
// analytical estimator + planner (EstimatorThroughput), or measured tables
// (policy/table_throughput.h). The simulator's truth and the policies'
// belief are two ThroughputModels, possibly different ones.
//
// Not thread-safe: implementations memoise answers. Answers must be a pure
// function of (job model, global batch, GPU type, GPUs, nodes): the same
// question always gets the same answer. (EstimatorThroughput's Prefetch and
// Anticipate may compute answers on a second thread of its own; they are
// the same.)
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hardware/cluster.h"
#include "perf/params.h"
#include "perf/parallel_plan.h"
#include "workload/job.h"

namespace tessel {

struct JobRate {
  bool fits = false;
  double iteration_time_s = 0;  // one iteration at the job's global batch
  double samples_per_s = 0;
  double tokens_per_s = 0;      // 0 for models without tokens (CNNs)
  ParallelPlan plan;            // the plan this rate assumes
  std::string reason;           // why it does not fit, when !fits
  // Inter-node communication per iteration (0 on one node), for the
  // flow-level network model (network/network_model.h): how long the job's
  // traffic occupies each of its nodes' NICs alone at full bandwidth, and
  // how much of that is not hidden behind compute (exposed <= network).
  double network_s = 0;
  double network_exposed_s = 0;
};

// One plan of a grid's plan set, for the executor that launches the job:
// plans come fastest first, each later one using less memory per GPU (a
// Pareto set), so a launcher whose first plan runs out of memory on the
// real machine falls back to the next without a new search.
struct PlanChoice {
  ParallelPlan plan;
  double iteration_time_s = 0;
  double memory_gib_per_gpu = 0;  // 0 when the source does not model memory
};

// A RateShared question a caller is about to ask (ThroughputModel::Prefetch).
struct RateQuery {
  const JobSpec* job = nullptr;
  int type = 0, gpus = 0, nodes = 0;
  double network_share = 1.0;
};

// How a job chooses its parallelism plan on an allocation.
enum class PlanMode {
  // Static, as the classic schedulers assume: pure data parallelism when the
  // model fits it; otherwise the planner's best plan for the allocation
  // (the plan a user would have had to write by hand to run at all).
  kDataParallel,
  // Adaptive: the planner's best plan for every allocation.
  kBest,
};
Result<PlanMode> ParsePlanMode(std::string_view s);  // "dp" | "best"
const char* PlanModeName(PlanMode m);

class ThroughputModel {
 public:
  virtual ~ThroughputModel() = default;
  virtual std::string_view name() const = 0;
  // The rate of `job` on `gpus` GPUs of the cluster's GPU type `type`
  // spread over `nodes` nodes. The reference stays valid for the model's
  // lifetime.
  virtual const JobRate& Rate(const JobSpec& job, int type, int gpus, int nodes) = 0;
  // The same with only `network_share` (0, 1] of each node's network
  // bandwidth (arena's expected link share, network/network_model.h). Sources that
  // cannot model it (measured tables) answer Rate().
  virtual const JobRate& RateShared(const JobSpec& job, int type, int gpus, int nodes, double network_share) {
    (void)network_share;
    return Rate(job, type, gpus, nodes);
  }
  // The grid's plan set (at most `max_plans`): the planner's Arena-grid
  // search for every pipeline-stage count, merged into one Pareto set
  // (time up, memory down). Sources without a planner answer the rate's
  // plan alone; empty when nothing fits.
  virtual std::vector<PlanChoice> PlanSet(const JobSpec& job, int type, int gpus, int nodes, int max_plans) {
    (void)max_plans;
    const JobRate& r = Rate(job, type, gpus, nodes);
    if (!r.fits) return {};
    return {PlanChoice{r.plan, r.iteration_time_s, 0}};
  }
  // The fastest pure pipeline on `stages` GPUs of `type` over `nodes` nodes:
  // pp = stages, dp = tp = 1, plain 1F1B (virtual_stages 1). What one
  // profiled stage of a `stages`-stage pipeline is compared with (the
  // daemon's disaggregated profiles). nullopt when none fits or the source
  // cannot tell. The default looks for one in PlanSet (which may have left
  // it out as dominated); the estimator searches for it.
  virtual std::optional<PlanChoice> PipelinePlan(const JobSpec& job, int type, int stages, int nodes) {
    for (const PlanChoice& c : PlanSet(job, type, stages, nodes, 16)) {
      if (c.plan.pp == stages && c.plan.dp == 1 && c.plan.tp == 1 && c.plan.virtual_stages == 1) return c;
    }
    return std::nullopt;
  }
  // Changes whenever an answer for the same arguments may have changed
  // (a correction learnt from measurement), so callers may keep answers
  // across calls while it stays the same. Models whose answers never change
  // return 0; decorators include the model they wrap.
  virtual uint64_t version() const { return 0; }
  // The RateShared questions the caller is about to ask, all of them: a
  // model may compute the answers it does not hold at once (in parallel).
  // The answers, and the models' counts, are the same as asking one by one.
  // Default: nothing (each is computed when asked).
  virtual void Prefetch(std::span<const RateQuery> queries) { (void)queries; }
  // RateShared questions the caller will likely ask later (a simulator
  // knows its trace's jobs before they arrive): a model may answer them in
  // the background, in the order given, while the caller goes on. Nothing
  // changes but when the work is done: the answers, and the models' counts,
  // are the same as asking one by one; a question never asked costs only
  // the background's time. Default: nothing.
  virtual void Anticipate(std::span<const RateQuery> queries) { (void)queries; }
};

// The analytical estimator behind the planner (src/perf, src/plan).
class EstimatorThroughput : public ThroughputModel {
 public:
  EstimatorThroughput(const Cluster& cluster, PlanMode mode, PerfParams params = DefaultPerfParams());
  ~EstimatorThroughput() override;
  std::string_view name() const override { return "estimator"; }
  const JobRate& Rate(const JobSpec& job, int type, int gpus, int nodes) override;
  // Shares are rounded to 1/64 (memoised per step).
  const JobRate& RateShared(const JobSpec& job, int type, int gpus, int nodes, double network_share) override;
  std::vector<PlanChoice> PlanSet(const JobSpec& job, int type, int gpus, int nodes, int max_plans) override;
  // The planner's best plan with p, d, t and the interleaving fixed, at the
  // job's global batch (memoised).
  std::optional<PlanChoice> PipelinePlan(const JobSpec& job, int type, int stages, int nodes) override;
  // Searches the questions not yet answered on two threads (this one and a
  // helper with its own layer-cost memo) when there are two or more and
  // the machine has a second core: a new job's grids are many searches.
  void Prefetch(std::span<const RateQuery> queries) override;
  // Searches the questions on the helper thread, one after another, where
  // the machine has a second core (Prefetch and PlanSet pause it while they
  // use the helper). A question asked before its turn is searched by the
  // asker; one asked while the helper searches it waits for its answer.
  void Anticipate(std::span<const RateQuery> queries) override;
  // Estimates made so far (cache misses), for reports and benchmarks.
  int64_t estimates() const { return misses_; }

 private:
  // Rate and RateShared: the answer at `share64` 64ths of the network.
  const JobRate& Answer(const JobSpec& job, int type, int gpus, int nodes, int share64);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int64_t misses_ = 0;
};

}  // namespace tessel
