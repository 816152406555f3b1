#include "policy/profiled_throughput.h"

#include <algorithm>
#include <cmath>

namespace tessel {

const ProfiledModel* ProfiledThroughput::Profile(const std::string& model) {
  auto it = profiles_.find(model);
  if (it == profiles_.end()) it = profiles_.emplace(model, FindProfiledModel(model)).first;
  return it->second;
}

const JobRate& ProfiledThroughput::Profiled(const ProfiledModel& p, const JobSpec& job, int type, int gpus,
                                            int nodes, double network_share) {
  gpus = std::max(1, gpus);
  nodes = std::clamp(nodes, 1, gpus);
  const int batch = std::max(1, job.global_batch);
  auto key = std::make_tuple(&p, batch, type, gpus, nodes, network_share);
  auto it = rates_.find(key);
  if (it != rates_.end()) return it->second;

  const double per_gpu_samples = static_cast<double>(batch) / gpus;
  const double compute_s = (p.forward_s + p.backward_s) * per_gpu_samples / p.per_gpu_batch;
  double allreduce_s = 0;
  if (nodes > 1) {
    const double nic_bytes_per_s = cluster_.types()[type].topology.network_gbps * 1e9 / 8;
    allreduce_s = p.size_bytes / (nic_bytes_per_s * kAllReduceEfficiency * network_share);
  }
  JobRate rate;
  rate.fits = true;
  rate.iteration_time_s = compute_s + allreduce_s;
  rate.samples_per_s = batch / rate.iteration_time_s;
  rate.tokens_per_s = 0;
  rate.network_s = allreduce_s;
  rate.network_exposed_s = allreduce_s;
  rate.plan.dp = gpus;
  rate.plan.micro_batch = (batch + gpus - 1) / gpus;
  rate.plan.num_micro_batches = 1;
  rate.plan.precision = Precision::kFp32;
  return rates_.emplace(key, std::move(rate)).first->second;
}

const JobRate& ProfiledThroughput::Rate(const JobSpec& job, int type, int gpus, int nodes) {
  const ProfiledModel* p = Profile(job.model);
  if (p == nullptr) return base_.Rate(job, type, gpus, nodes);
  return Profiled(*p, job, type, gpus, nodes, 1.0);
}

const JobRate& ProfiledThroughput::RateShared(const JobSpec& job, int type, int gpus, int nodes,
                                              double network_share) {
  const ProfiledModel* p = Profile(job.model);
  if (p == nullptr) return base_.RateShared(job, type, gpus, nodes, network_share);
  double share = std::isfinite(network_share) ? std::clamp(network_share, 1.0 / 64, 1.0) : 1.0;
  return Profiled(*p, job, type, gpus, nodes, nodes > 1 ? share : 1.0);
}

std::vector<RateQuery> ProfiledThroughput::Unprofiled(std::span<const RateQuery> queries) {
  std::vector<RateQuery> base;
  for (const RateQuery& q : queries)
    if (Profile(q.job->model) == nullptr) base.push_back(q);
  return base;
}

void ProfiledThroughput::Prefetch(std::span<const RateQuery> queries) { base_.Prefetch(Unprofiled(queries)); }

void ProfiledThroughput::Anticipate(std::span<const RateQuery> queries) { base_.Anticipate(Unprofiled(queries)); }

std::vector<PlanChoice> ProfiledThroughput::PlanSet(const JobSpec& job, int type, int gpus, int nodes,
                                                    int max_plans) {
  const ProfiledModel* p = Profile(job.model);
  if (p == nullptr) return base_.PlanSet(job, type, gpus, nodes, max_plans);
  const JobRate& r = Profiled(*p, job, type, gpus, nodes, 1.0);
  return {PlanChoice{r.plan, r.iteration_time_s, 0}};
}

}  // namespace tessel
