#include "policy/corrected_throughput.h"

#include <algorithm>
#include <climits>

namespace tessel {

template <typename Map, typename Key>
void CorrectedThroughput::Set(const std::string& job_id, Map JobFactors::*level, const Key& key, double factor) {
  const bool unset = !(factor > 0) || factor == 1.0;
  auto job = factors_.find(job_id);
  if (job == factors_.end()) {
    if (unset) return;
    job = factors_.emplace(job_id, JobFactors{}).first;
  }
  Map& m = job->second.*level;
  auto it = m.find(key);
  if (unset) {
    if (it == m.end()) return;
    m.erase(it);
    if (job->second.empty()) factors_.erase(job);
  } else if (it == m.end()) {
    m.emplace(key, factor);
  } else if (it->second != factor) {
    it->second = factor;
  } else {
    return;
  }
  ++changes_;
}

void CorrectedThroughput::SetFactor(const std::string& job_id, int type, double factor) {
  Set(job_id, &JobFactors::type, type, factor);
}

void CorrectedThroughput::SetStageFactor(const std::string& job_id, int type, int stages, double factor) {
  Set(job_id, &JobFactors::stages, std::make_pair(type, stages), factor);
}

void CorrectedThroughput::SetPlanFactor(const std::string& job_id, int type, const ParallelPlan& plan,
                                        double factor) {
  SetPlanFactor(job_id, type, plan.ToString(), factor);
}

void CorrectedThroughput::SetPlanFactor(const std::string& job_id, int type, std::string_view plan_key,
                                        double factor) {
  Set(job_id, &JobFactors::plans, std::make_pair(type, std::string(plan_key)), factor);
}

double CorrectedThroughput::Factor(const std::string& job_id, int type, const ParallelPlan* plan) const {
  auto job = factors_.find(job_id);
  if (job == factors_.end()) return 1.0;
  const JobFactors& f = job->second;
  if (plan != nullptr) {
    if (!f.plans.empty()) {
      auto it = f.plans.find({type, plan->ToString()});
      if (it != f.plans.end()) return it->second;
    }
    auto it = f.stages.find({type, plan->pp});
    if (it != f.stages.end()) return it->second;
  }
  auto it = f.type.find(type);
  return it == f.type.end() ? 1.0 : it->second;
}

void CorrectedThroughput::Forget(const std::string& job_id) {
  ++changes_;
  factors_.erase(job_id);
  for (auto it = memo_.lower_bound({job_id, INT_MIN, 0, 0, 0.0, 0.0});
       it != memo_.end() && std::get<0>(it->first) == job_id;)
    it = memo_.erase(it);
}

const JobRate& CorrectedThroughput::Corrected(const JobSpec& job, int type, int gpus, int nodes,
                                              const JobRate& base) {
  if (!base.fits) return base;
  double f = Factor(job.id, type, &base.plan);
  if (f == 1.0) return base;
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
  if (factors_.find(job.id) == factors_.end()) return set;
  for (PlanChoice& c : set) c.iteration_time_s *= Factor(job.id, type, &c.plan);
  std::stable_sort(set.begin(), set.end(), [](const PlanChoice& a, const PlanChoice& b) {
    if (a.iteration_time_s != b.iteration_time_s) return a.iteration_time_s < b.iteration_time_s;
    return a.memory_gib_per_gpu < b.memory_gib_per_gpu;
  });
  // Pareto again (as EstimatorThroughput builds it): a plan no leaner than
  // a faster one is dropped.
  std::vector<PlanChoice> out;
  for (PlanChoice& c : set) {
    if (!out.empty() && c.memory_gib_per_gpu >= out.back().memory_gib_per_gpu - 1e-9) continue;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace tessel
