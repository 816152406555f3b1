#include "policy/corrected_throughput.h"

namespace tessel {

void CorrectedThroughput::SetFactor(const std::string& job_id, int type, double factor) {
  if (Factor(job_id, type) != (factor > 0 ? factor : 1.0)) ++changes_;
  if (!(factor > 0) || factor == 1.0) {
    factors_.erase({job_id, type});
  } else {
    factors_[{job_id, type}] = factor;
  }
}

double CorrectedThroughput::Factor(const std::string& job_id, int type) const {
  auto it = factors_.find({job_id, type});
  return it == factors_.end() ? 1.0 : it->second;
}

void CorrectedThroughput::Forget(const std::string& job_id) {
  ++changes_;
  for (auto it = factors_.lower_bound({job_id, INT32_MIN}); it != factors_.end() && it->first.first == job_id;)
    it = factors_.erase(it);
  for (auto it = memo_.lower_bound({job_id, INT32_MIN, 0, 0, 0.0, 0.0});
       it != memo_.end() && std::get<0>(it->first) == job_id;)
    it = memo_.erase(it);
}

const JobRate& CorrectedThroughput::Corrected(const JobSpec& job, int type, int gpus, int nodes,
                                              const JobRate& base) {
  double f = Factor(job.id, type);
  if (f == 1.0 || !base.fits) return base;
  auto key = std::make_tuple(job.id, type, gpus, nodes, f, base.iteration_time_s);
  auto it = memo_.find(key);
  if (it != memo_.end()) return it->second;
  JobRate r = base;
  r.iteration_time_s *= f;
  r.samples_per_s /= f;
  r.tokens_per_s /= f;
  return memo_.emplace(key, r).first->second;
}

const JobRate& CorrectedThroughput::Rate(const JobSpec& job, int type, int gpus, int nodes) {
  return Corrected(job, type, gpus, nodes, base_.Rate(job, type, gpus, nodes));
}

const JobRate& CorrectedThroughput::RateShared(const JobSpec& job, int type, int gpus, int nodes,
                                               double network_share) {
  return Corrected(job, type, gpus, nodes, base_.RateShared(job, type, gpus, nodes, network_share));
}

std::vector<PlanChoice> CorrectedThroughput::PlanSet(const JobSpec& job, int type, int gpus, int nodes,
                                                     int max_plans) {
  std::vector<PlanChoice> set = base_.PlanSet(job, type, gpus, nodes, max_plans);
  double f = Factor(job.id, type);
  for (PlanChoice& c : set) c.iteration_time_s *= f;
  return set;
}

}  // namespace tessel
