// A belief corrected by measurement: another ThroughputModel's answers with
// each job's iteration time scaled by a factor measured for that job on that
// GPU type and, finer, for one plan or one pipeline depth there (measured
// step time / the base model's estimate). The daemon sets factors from the
// step times jobs report and from disaggregated profiles, so later decisions
// use what was measured; types a job has not run on keep the base estimate.
//
// Which factor a plan gets on a type, first that is set (Factor):
//  1. the plan's own: exactly this plan measured on this type (SetPlanFactor;
//     the daemon's running jobs);
//  2. its pipeline depth's: a profile of one stage of a pipeline of
//     plan.pp stages on this type (SetStageFactor; the daemon's profiles);
//  3. the type's: the job's latest measurement on this type under any plan
//     (SetFactor);
//  4. 1: the base estimate.
// So measuring plan A sets A's factor and the type's fallback, and leaves
// every depth's profile factor, hence other plans of a profiled depth, alone.
//
// Rate and RateShared scale the base answer by the factor of the base
// answer's own plan (they do not re-pick the plan under the factors: a
// plan the base ranks second stays second there); PlanSet scales each plan
// by its own factor and re-sorts, keeping ThroughputModel's contract
// (fastest first, each later plan leaner: plans a correction made slower
// and no leaner than a faster one are dropped).
//
// Deterministic; not thread-safe (the scheduling loop owns it).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "policy/throughput.h"

namespace tessel {

class CorrectedThroughput : public ThroughputModel {
 public:
  explicit CorrectedThroughput(ThroughputModel& base) : base_(base) {}
  std::string_view name() const override { return base_.name(); }
  // Changes when the base's answers or any factor changes.
  uint64_t version() const override { return base_.version() + changes_; }

  // The model it corrects: uncorrected answers (the estimates factors are
  // measured against).
  ThroughputModel& base() const { return base_; }

  // Factors > 0 for job `job_id` on cluster type `type` (1 or <= 0: unset,
  // the next level of the precedence applies).
  // Level 3: the job's latest measurement on `type` under any plan.
  void SetFactor(const std::string& job_id, int type, double factor);
  // Level 2: plans of `stages` pipeline stages (ParallelPlan::pp).
  void SetStageFactor(const std::string& job_id, int type, int stages, double factor);
  // Level 1: exactly `plan`. `plan_key` is ParallelPlan::ToString() (the
  // form the daemon's store keeps).
  void SetPlanFactor(const std::string& job_id, int type, const ParallelPlan& plan, double factor);
  void SetPlanFactor(const std::string& job_id, int type, std::string_view plan_key, double factor);

  // The factor `plan` gets on `type` by the precedence above; with no plan,
  // the type's (level 3) or 1.
  double Factor(const std::string& job_id, int type, const ParallelPlan* plan = nullptr) const;
  // Forgets a job's factors (it left the system).
  void Forget(const std::string& job_id);

  const JobRate& Rate(const JobSpec& job, int type, int gpus, int nodes) override;
  const JobRate& RateShared(const JobSpec& job, int type, int gpus, int nodes, double network_share) override;
  std::vector<PlanChoice> PlanSet(const JobSpec& job, int type, int gpus, int nodes, int max_plans) override;
  // Corrections apply when asked: the base's answers are what it prefetches.
  void Prefetch(std::span<const RateQuery> queries) override { base_.Prefetch(queries); }
  void Anticipate(std::span<const RateQuery> queries) override { base_.Anticipate(queries); }

 private:
  // One job's factors by level.
  struct JobFactors {
    std::map<int, double> type;                           // type
    std::map<std::pair<int, int>, double> stages;         // (type, pp)
    std::map<std::pair<int, std::string>, double> plans;  // (type, plan's ToString())
    bool empty() const { return type.empty() && stages.empty() && plans.empty(); }
  };
  // Sets or (factor 1 or <= 0) erases `key` in `m`; counts a change.
  template <typename Map, typename Key>
  void Set(const std::string& job_id, Map JobFactors::*level, const Key& key, double factor);
  const JobRate& Corrected(const JobSpec& job, int type, int gpus, int nodes, const JobRate& base);

  ThroughputModel& base_;
  uint64_t changes_ = 0;  // factors set or forgotten so far
  std::map<std::string, JobFactors> factors_;  // by job id; no empty entries
  // Corrected answers, keyed by job, shape, factor and the base answer's
  // time (a new factor is a new key).
  std::map<std::tuple<std::string, int, int, int, double, double>, JobRate> memo_;
};

}  // namespace tessel
