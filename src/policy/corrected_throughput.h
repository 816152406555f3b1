// A belief corrected by measurement: another ThroughputModel's answers with
// each job's iteration time scaled by a factor measured for that job on that
// GPU type (measured step time / the base model's estimate). The daemon sets
// factors from the step times jobs report and from profiles, so later
// decisions use what was measured; types a job has not run on keep the base
// estimate. Deterministic; not thread-safe (the scheduling loop owns it).
#pragma once

#include <map>
#include <string>
#include <tuple>

#include "policy/throughput.h"

namespace tessel {

class CorrectedThroughput : public ThroughputModel {
 public:
  explicit CorrectedThroughput(ThroughputModel& base) : base_(base) {}
  std::string_view name() const override { return base_.name(); }
  uint64_t version() const override { return base_.version() + changes_; }

  // Factor > 0 for job `job_id` on cluster type `type` (1 = the estimate).
  void SetFactor(const std::string& job_id, int type, double factor);
  // 1 when none was set.
  double Factor(const std::string& job_id, int type) const;
  // Forgets a job's factors (it left the system).
  void Forget(const std::string& job_id);

  const JobRate& Rate(const JobSpec& job, int type, int gpus, int nodes) override;
  const JobRate& RateShared(const JobSpec& job, int type, int gpus, int nodes, double network_share) override;
  std::vector<PlanChoice> PlanSet(const JobSpec& job, int type, int gpus, int nodes, int max_plans) override;

 private:
  const JobRate& Corrected(const JobSpec& job, int type, int gpus, int nodes, const JobRate& base);

  ThroughputModel& base_;
  uint64_t changes_ = 0;  // factors set or forgotten so far
  std::map<std::pair<std::string, int>, double> factors_;
  // Corrected answers, keyed by job, shape and factor (a new factor is a new key).
  std::map<std::tuple<std::string, int, int, int, double, double>, JobRate> memo_;
};

}  // namespace tessel
